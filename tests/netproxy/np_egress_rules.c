/* Installs the hub's transparent-egress rules (hub/net/net_egress.c) in the network
 * namespace it runs in: `ip netns exec GW np_egress_rules PORT`, so that the netproxy
 * tests get the same gateway the hub builds. Prints the rule set with --print. */
#include "net/net.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    if (argc != 2 && !(argc == 3 && strcmp(argv[1], "--print") == 0)) {
        fprintf(stderr, "usage: np_egress_rules [--print] PROXY_PORT\n");
        return 2;
    }
    long port = strtol(argv[argc - 1], NULL, 10);
    if (port < 1 || port > 65535) {
        fprintf(stderr, "np_egress_rules: bad port %s\n", argv[argc - 1]);
        return 2;
    }
    if (argc == 3) {
        char *rules = egress_ruleset((uint16_t)port);
        fputs(rules, stdout);
        free(rules);
        return 0;
    }
    char err[512];
    if (egress_install((uint16_t)port, err, sizeof(err)) < 0) {
        fprintf(stderr, "np_egress_rules: %s\n", err);
        return 1;
    }
    return 0;
}
