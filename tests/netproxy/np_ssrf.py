"""SSRF and DNS rebinding, inside the test namespace $NETNS (see test_np_ssrf.sh)."""
from nptest import *

NS = os.environ["NETNS"]
TRAP_PORT = 4443
ECHO_PORT = 5443
table = {
    "loop.allowed.example": {"A": [["127.0.0.1"]]},
    "loop8.allowed.example": {"A": [["127.8.9.10"]]},
    "zero.allowed.example": {"A": [["0.0.0.0"]]},
    "v6loop.allowed.example": {"AAAA": [["::1"]]},
    "v6zero.allowed.example": {"AAAA": [["::"]]},
    "private.allowed.example": {"A": [["10.1.2.3"]]},
    "private2.allowed.example": {"A": [["192.168.7.7"]]},
    "private3.allowed.example": {"A": [["172.16.0.5"]]},
    "meta.allowed.example": {"A": [["169.254.169.254"]]},
    "cgnat.allowed.example": {"A": [["100.64.0.9"]]},
    "bench.allowed.example": {"A": [["198.18.0.1"]]},
    "ula.allowed.example": {"AAAA": [["fd00::5"]]},
    "linklocal6.allowed.example": {"AAAA": [["fe80::1"]]},
    "mapped.allowed.example": {"AAAA": [["::ffff:127.0.0.1"]]},
    "mapped10.allowed.example": {"AAAA": [["::ffff:10.1.2.3"]]},
    "nat64.allowed.example": {"AAAA": [["64:ff9b::a01:203"]]},
    "sixtofour.allowed.example": {"AAAA": [["2002:a01:203::1"]]},
    "teredo.allowed.example": {"AAAA": [["2001:0:a01:203::1"]]},
    "multicast.allowed.example": {"A": [["224.0.0.1"]]},
    "broadcast.allowed.example": {"A": [["255.255.255.255"]]},
    "mixed.allowed.example": {"A": [["1.1.1.1", "10.1.2.3"]]},
    "mixed6.allowed.example": {"A": [["1.1.1.1"]], "AAAA": [["::1"]]},
    "rebind.allowed.example": {"A": [["10.1.2.3"], ["192.168.7.7"]]},
    "rebind2.allowed.example": {"A": [["10.1.2.3"], ["127.0.0.1"]]},
    "self.allowed.example": {"A": [["127.0.0.1"]]},
}
srv = Servers([
    {"name": "trap", "kind": "count", "addr": "::", "port": TRAP_PORT},
    {"name": "echo-a", "kind": "echo", "addr": "10.1.2.3", "port": ECHO_PORT},
    {"name": "echo-b", "kind": "echo", "addr": "192.168.7.7", "port": ECHO_PORT},
    {"name": "dns", "kind": "dns", "addr": "127.0.0.1", "table": table},
], netns=NS)
dns = srv.ports["dns"]
common = ["--allow", "allowed.example,10.1.2.3", "--ports", "%d,%d" % (TRAP_PORT, ECHO_PORT),
          "--dns-server", "127.0.0.1:%d" % dns]
strict = Proxy(common + ["--resolve", "override.allowed.example:%d:127.0.0.1" % TRAP_PORT],
               netns=NS, tag="strict")


def connect_in_ns(port, target, extra=b""):
    """A CONNECT from inside the namespace; returns (status, reason, body)."""
    code = ("import socket,sys\n"
            "s=socket.create_connection(('127.0.0.1',%d),timeout=5)\n"
            "s.sendall(b'CONNECT %s HTTP/1.1\\r\\n\\r\\n'+%r)\n"
            "if %r: s.shutdown(socket.SHUT_WR)\n"
            "d=b''\n"
            "s.settimeout(5)\n"
            "try:\n"
            "  while True:\n"
            "    x=s.recv(65536)\n"
            "    if not x: break\n"
            "    d+=x\n"
            "    if b'BYE:' in d: break\n"
            "except Exception: pass\n"
            "sys.stdout.buffer.write(d)\n") % (port, target, extra, bool(extra))
    out = subprocess.run(["ip", "netns", "exec", NS, PY, "-c", code], capture_output=True,
                         timeout=20).stdout
    st, hd, body = parse_response(out)
    return st, hd.get("x-proxy-error"), body


refused = [
    ("loop", "127.0.0.1", "loopback"),
    ("loop8", "127.8.9.10", "loopback"),
    ("zero", "0.0.0.0", "unspecified"),
    ("v6loop", "::1", "loopback"),
    ("v6zero", "::", "unspecified"),
    ("private", "10.1.2.3", "private"),
    ("private2", "192.168.7.7", "private"),
    ("private3", "172.16.0.5", "private"),
    ("meta", "169.254.169.254", "link-local"),
    ("cgnat", "100.64.0.9", "cgnat"),
    ("bench", "198.18.0.1", "benchmark"),
    ("ula", "fd00::5", "ula"),
    ("linklocal6", "fe80::1", "link-local"),
    ("mapped", "::ffff:127.0.0.1", "loopback"),
    ("mapped10", "::ffff:10.1.2.3", "private"),
    ("nat64", "64:ff9b::a01:203", "nat64"),
    ("sixtofour", "2002:a01:203::1", "6to4"),
    ("teredo", "2001:0:a01:203::1", "teredo"),
    ("multicast", "224.0.0.1", "multicast"),
    ("broadcast", "255.255.255.255", "broadcast"),
    ("mixed", "10.1.2.3", "private"),
    ("mixed6", "::1", "loopback"),
    ("override", "127.0.0.1", "loopback"),
]
for name, ip, cls in refused:
    host = "%s.allowed.example" % name
    st, reason, body = connect_in_ns(strict.port, "%s:%d" % (host, TRAP_PORT))
    check(st == 403 and reason == "forbidden-address",
          "%s -> %s (%s): 403 forbidden-address" % (host, ip, cls), "%s %s" % (st, reason))
    rec = strict.record_for(lambda r: r.get("destination.domain") == host)
    check(rec and rec.get("destination.ip") == ip and rec.get("isolate.address_class") == cls and
          rec.get("event.reason") == "forbidden-address",
          "%s: the record names the refused address and its class" % host,
          str(rec and (rec.get("destination.ip"), rec.get("isolate.address_class"))))
# The IP literal is on the allowlist, but the guard still refuses it.
st, reason, body = connect_in_ns(strict.port, "10.1.2.3:%d" % TRAP_PORT)
check(st == 403 and reason == "forbidden-address",
      "a listed private IP literal passes the policy but not the guard", "%s %s" % (st, reason))
st, reason, body = connect_in_ns(strict.port, "[::ffff:10.1.2.3]:%d" % TRAP_PORT)
check(st == 403 and reason == "forbidden-address", "the same literal as IPv4-mapped IPv6")
is_(srv.accepts("trap"), 0, "no dial happened: the listener on every local address counted 0")
check(strict.alive(), "strict proxy alive")

# Control: allowing the range makes the same dial happen, so the trap can count.
CTL_PORT = 3128  # fixed: the namespace is ours alone
ctl = Proxy(["--allow", "allowed.example", "--ports", "%d,%d,%d" % (TRAP_PORT, ECHO_PORT, CTL_PORT),
             "--dns-server", "127.0.0.1:%d" % dns, "--listen", "127.0.0.1:%d" % CTL_PORT,
             "--upstream-allow-cidr", "10.1.2.3/32", "--upstream-allow-cidr", "192.168.7.7/32",
             "--upstream-allow-cidr", "127.0.0.0/8"], netns=NS, tag="control", listen=False)
ctl.port = CTL_PORT
st, reason, body = connect_in_ns(ctl.port, "private.allowed.example:%d" % TRAP_PORT)
is_(st, 200, "control: with --upstream-allow-cidr 10.1.2.3/32 the tunnel opens")
check(wait_until(lambda: srv.accepts("trap") == 1), "control: the listener counted that dial",
      str(srv.accepts("trap")))
st, reason, body = connect_in_ns(ctl.port, "self.allowed.example:%d" % ctl.port)
check(st == 403 and reason == "proxy-loop", "a tunnel into the proxy's own listener is refused",
      "%s %s" % (st, reason))

# DNS rebinding: the answer that was checked is the one dialled, and asked for once.
st, reason, body = connect_in_ns(ctl.port, "rebind.allowed.example:%d" % ECHO_PORT, b"x")
check(st == 200 and body.endswith(b"BYE:10.1.2.3"), "rebinding: the first answer (10.1.2.3) was dialled",
      repr(body[-40:]))
is_(srv.dns_queries("rebind.allowed.example/A"), 1, "rebinding: the name was resolved once")
is_((srv.accepts("echo-a"), srv.accepts("echo-b")), (1, 0), "rebinding: nothing reached the second address")
rec = ctl.record_for(lambda r: r.get("destination.domain") == "rebind.allowed.example" and
                     r.get("event.action") == "close")
is_(rec and rec.get("destination.ip"), "10.1.2.3", "rebinding: the pinned address is in the close record")
st, reason, body = connect_in_ns(ctl.port, "rebind2.allowed.example:%d" % ECHO_PORT, b"x")
check(st == 200 and body.endswith(b"BYE:10.1.2.3"),
      "rebinding to loopback: the first, checked answer was dialled", repr(body[-40:]))
is_(srv.dns_queries("rebind2.allowed.example/A"), 1, "rebinding to loopback: resolved once")
# A new request is a new decision: it resolves again and gets the second answer.
st, reason, body = connect_in_ns(ctl.port, "rebind.allowed.example:%d" % ECHO_PORT, b"x")
check(st == 200 and body.endswith(b"BYE:192.168.7.7"), "a second request resolves afresh")
st, reason, body = connect_in_ns(strict.port, "rebind2.allowed.example:%d" % ECHO_PORT, b"x")
check(st == 403, "the strict proxy refuses rebind2's loopback answer (its second answer)")
check(strict.alive() and ctl.alive(), "proxies alive")
is_(strict.stop(), 0, "strict proxy exits cleanly")
is_(ctl.stop(), 0, "control proxy exits cleanly")
done()
