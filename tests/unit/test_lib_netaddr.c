/* lib/netaddr: the classification that decides which addresses netproxy may dial. */
#include "netaddr.h"
#include "test.h"

#include <arpa/inet.h>

static enum addr_class classify(const char *ip)
{
    struct sockaddr_storage ss = {0};
    if (inet_pton(AF_INET, ip, &((struct sockaddr_in *)&ss)->sin_addr) == 1) {
        ss.ss_family = AF_INET;
    } else if (inet_pton(AF_INET6, ip, &((struct sockaddr_in6 *)&ss)->sin6_addr) == 1) {
        ss.ss_family = AF_INET6;
    } else {
        return (enum addr_class) - 1;
    }
    return addr_classify((struct sockaddr *)&ss);
}

int main(void)
{
    static const struct {
        const char *ip;
        const char *cls;
    } cases[] = {
        {"93.184.216.34", "public"},
        {"1.1.1.1", "public"},
        {"127.0.0.1", "loopback"},
        {"127.255.255.254", "loopback"},
        {"0.0.0.0", "unspecified"},
        {"0.1.2.3", "unspecified"},
        {"10.1.2.3", "private"},
        {"172.16.0.1", "private"},
        {"172.31.255.255", "private"},
        {"172.32.0.1", "public"},
        {"192.168.1.1", "private"},
        {"169.254.169.254", "link-local"},
        {"169.254.64.1", "link-local"},
        {"100.64.0.1", "cgnat"},
        {"100.127.255.255", "cgnat"},
        {"100.128.0.1", "public"},
        {"224.0.0.1", "multicast"},
        {"239.255.255.250", "multicast"},
        {"255.255.255.255", "broadcast"},
        {"240.0.0.1", "reserved"},
        {"192.0.2.10", "documentation"},
        {"198.51.100.7", "documentation"},
        {"203.0.113.9", "documentation"},
        {"198.18.0.1", "benchmark"},
        {"198.19.255.255", "benchmark"},
        {"198.20.0.1", "public"},
        {"::", "unspecified"},
        {"::1", "loopback"},
        {"::ffff:127.0.0.1", "loopback"},
        {"::ffff:169.254.169.254", "link-local"},
        {"::ffff:8.8.8.8", "public"},
        {"fe80::1", "link-local"},
        {"fc00::1", "ula"},
        {"fd12:3456::1", "ula"},
        {"ff02::1", "multicast"},
        {"64:ff9b::7f00:1", "nat64"},
        {"2002:7f00:1::", "6to4"},
        {"2001:0:4136:e378::1", "teredo"},
        {"2001:db8::1", "documentation"},
        {"::127.0.0.1", "reserved"},
        {"2606:4700::6810:84e5", "public"},
        /* added with netproxy: the rest of 2001::/23, SIIT, SRv6, and the edges */
        {"2001:2::1", "benchmark"},
        {"2001:3::1", "reserved"},
        {"2001:4:112::1", "reserved"},
        {"2001:1ff:ffff::1", "reserved"},
        {"2001:200::1", "public"},
        {"::ffff:0:7f00:1", "reserved"},
        {"5f00::1", "reserved"},
        {"3fff::1", "documentation"},
        {"64:ff9b:1::a9fe:a9fe", "nat64"},
        {"100::1", "reserved"},
        {"fec0::1", "private"},
        {"192.0.0.8", "reserved"},
        {"192.88.99.1", "reserved"},
        {"100.63.255.255", "public"},
        {"9.255.255.255", "public"},
        {"11.0.0.0", "public"},
        {"169.253.255.255", "public"},
        {"169.255.0.0", "public"},
        {"223.255.255.255", "public"},
        {"::ffff:0.0.0.0", "unspecified"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        CHECK_STR(addr_class_name(classify(cases[i].ip)), cases[i].cls, "%s is %s", cases[i].ip,
                  cases[i].cls);

    struct cidr c;
    CHECK(cidr_parse("10.0.0.0/8", &c) && c.prefix == 8, "parse 10.0.0.0/8");
    CHECK(!cidr_parse("10.0.0.1/8", &c), "host bits set are refused");
    CHECK(!cidr_parse("10.0.0.0/33", &c), "v4 prefix over 32 refused");
    CHECK(!cidr_parse("010.0.0.0/8", &c), "octal-looking spelling refused");
    CHECK(!cidr_parse("10.0.0.0/", &c), "empty prefix refused");
    CHECK(cidr_parse("fd00::/8", &c) && c.family == AF_INET6, "parse fd00::/8");
    CHECK(cidr_parse("127.0.0.1", &c) && c.prefix == 32, "bare address is a /32");

    struct sockaddr_storage ss;
    socklen_t len;
    CHECK(sockaddr_parse_hostport("127.0.0.1:3128", &ss, &len) &&
              sockaddr_port((struct sockaddr *)&ss) == 3128,
          "parse 127.0.0.1:3128");
    CHECK(sockaddr_parse_hostport("[::1]:443", &ss, &len) && ss.ss_family == AF_INET6,
          "parse [::1]:443");
    CHECK(!sockaddr_parse_hostport("::1:443", &ss, &len), "unbracketed v6 refused");
    CHECK(!sockaddr_parse_hostport("127.0.0.1:65536", &ss, &len), "port over 65535 refused");
    CHECK(!sockaddr_parse_hostport("localhost:80", &ss, &len), "names refused");

    cidr_parse("127.0.0.0/8", &c);
    sockaddr_parse_hostport("[::ffff:127.0.0.9]:1", &ss, &len);
    CHECK(cidr_contains(&c, (struct sockaddr *)&ss), "v4-mapped address is inside a v4 range");
    struct cidr a, b;
    cidr_parse("169.254.64.0/18", &a);
    cidr_parse("169.254.169.254/32", &b);
    CHECK(!cidr_overlaps(&a, &b), "the veth pool does not hold the metadata address");
    cidr_parse("169.254.0.0/16", &a);
    CHECK(cidr_overlaps(&a, &b), "169.254/16 holds the metadata address");
    return test_done();
}
