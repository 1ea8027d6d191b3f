#include "net_egress.h"
#include "util.h"

#include <errno.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <netlink/netlink.h>
#include <netlink/route/route.h>
#include <netlink/route/rule.h>
#include <nftables/libnftables.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#define DNS_PORT 53

char *egress_ruleset(uint16_t proxy_port)
{
    /* "tproxy to :PORT" without an address looks the listener up on the address of
     * the interface the packet came in on: each veth's own. */
    return xasprintf("table ip isolategpt {\n"
                     "  chain prerouting {\n"
                     "    type filter hook prerouting priority mangle; policy accept;\n"
                     "    iifname \"lo\" accept\n"
                     "    meta l4proto tcp tproxy to :%u meta mark set 0x%x accept\n"
                     "    meta l4proto udp tproxy to :%u meta mark set 0x%x accept\n"
                     "    drop\n"
                     "  }\n"
                     "}\n"
                     "table ip6 isolategpt {\n"
                     "  chain prerouting {\n"
                     "    type filter hook prerouting priority mangle; policy accept;\n"
                     "    iifname \"lo\" accept\n"
                     "    drop\n"
                     "  }\n"
                     "}\n",
                     proxy_port, EGRESS_MARK, DNS_PORT, EGRESS_MARK);
}

static int install_rules(uint16_t proxy_port, char *err, size_t errlen)
{
    struct nft_ctx *nft = nft_ctx_new(NFT_CTX_DEFAULT);
    if (!nft) {
        snprintf(err, errlen, "nftables: cannot create a context");
        return -1;
    }
    nft_ctx_buffer_output(nft);
    nft_ctx_buffer_error(nft);
    char *rules = egress_ruleset(proxy_port);
    int rc = nft_run_cmd_from_buffer(nft, rules);
    if (rc != 0) {
        const char *e = nft_ctx_get_error_buffer(nft);
        /* nft's message ends with the rule text and a caret line: the first line says it. */
        size_t n = e ? strcspn(e, "\n") : 0;
        snprintf(err, errlen, "nftables: %.*s (the kernel needs nf_tables and nft_tproxy)",
                 (int)(n < 300 ? n : 300), n ? e : "the rule set was refused");
    }
    free(rules);
    nft_ctx_free(nft);
    return rc == 0 ? 0 : -1;
}

#define NLFAIL(what, rc)                                                                           \
    do {                                                                                           \
        snprintf(err, errlen, "%s: %s", what, nl_geterror(rc));                                    \
        goto out;                                                                                  \
    } while (0)

/* ip rule add fwmark MARK lookup TABLE; ip route add local 0.0.0.0/0 dev lo table TABLE */
static int install_route(char *err, size_t errlen)
{
    int ret = -1, rc;
    struct nl_sock *sk = nl_socket_alloc();
    struct rtnl_rule *rule = rtnl_rule_alloc();
    struct rtnl_route *route = rtnl_route_alloc();
    struct rtnl_nexthop *nh = rtnl_route_nh_alloc();
    struct nl_addr *any = nl_addr_build(AF_INET, (uint8_t[4]){0}, 4);
    if (!sk || !rule || !route || !nh || !any) {
        snprintf(err, errlen, "libnl: out of memory");
        goto out;
    }
    if ((rc = nl_connect(sk, NETLINK_ROUTE)) < 0)
        NLFAIL("netlink", rc);
    rtnl_rule_set_family(rule, AF_INET);
    rtnl_rule_set_mark(rule, EGRESS_MARK);
    rtnl_rule_set_table(rule, EGRESS_TABLE);
    rtnl_rule_set_action(rule, FR_ACT_TO_TBL);
    if ((rc = rtnl_rule_add(sk, rule, NLM_F_CREATE | NLM_F_EXCL)) < 0)
        NLFAIL("egress: the policy rule", rc);
    nl_addr_set_prefixlen(any, 0);
    rtnl_route_set_family(route, AF_INET);
    rtnl_route_set_table(route, EGRESS_TABLE);
    rtnl_route_set_type(route, RTN_LOCAL);
    rtnl_route_set_scope(route, RT_SCOPE_HOST);
    if ((rc = rtnl_route_set_dst(route, any)) < 0)
        NLFAIL("egress: the local route", rc);
    rtnl_route_nh_set_ifindex(nh, (int)if_nametoindex("lo"));
    rtnl_route_add_nexthop(route, nh);
    nh = NULL; /* the route owns it */
    if ((rc = rtnl_route_add(sk, route, NLM_F_CREATE | NLM_F_EXCL)) < 0)
        NLFAIL("egress: the local route", rc);
    ret = 0;
out:
    if (any)
        nl_addr_put(any);
    if (nh)
        rtnl_route_nh_free(nh);
    if (route)
        rtnl_route_put(route);
    if (rule)
        rtnl_rule_put(rule);
    if (sk)
        nl_socket_free(sk);
    return ret;
}

int egress_install(uint16_t proxy_port, char *err, size_t errlen)
{
    if (install_route(err, errlen) < 0)
        return -1;
    return install_rules(proxy_port, err, errlen);
}
