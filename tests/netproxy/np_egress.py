"""Transparent egress and the jail's resolver, from the attacker's side (see
test_np_egress.sh for the namespaces). Each attempt is made from inside a spoke's
namespace, as a server in a jail would, and judged from outside: what the upstreams
saw and what the audit log says."""
import base64
import ctypes
import socket
import struct

from nptest import *

NSH, GW, SA, SB = (os.environ[k] for k in ("NSH", "GW", "SA", "SB"))
GW_A, SPOKE_A, GW_B = "169.254.200.1", "169.254.200.2", "169.254.200.5"
libc = ctypes.CDLL(None, use_errno=True)
IP_TRANSPARENT, IP_FREEBIND = 19, 15

names = ["api.allowed.example", "other.allowed.example", "evil.example"]
pki = make_ca(names)
srv = Servers([{"name": "https", "kind": "https", "addr": "0.0.0.0", "cert": pki["cert"],
                "key": pki["key"]},
               {"name": "echo", "kind": "echo", "addr": "0.0.0.0"},
               {"name": "count", "kind": "count", "addr": "0.0.0.0"}], netns=NSH)
HTTPS, ECHO, COUNT = srv.ports["https"], srv.ports["echo"], srv.ports["count"]


def in_netns(ns, fn):
    own = os.open("/proc/self/ns/net", os.O_RDONLY)
    target = os.open("/run/netns/" + ns, os.O_RDONLY)
    if libc.setns(target, 0x40000000) != 0:
        raise OSError(ctypes.get_errno(), "setns")
    try:
        return fn()
    finally:
        libc.setns(own, 0x40000000)
        os.close(own)
        os.close(target)


def gw_socket(kind, addr, port):
    def make():
        s = socket.socket(socket.AF_INET, kind)
        for opt in (IP_FREEBIND, IP_TRANSPARENT):
            s.setsockopt(socket.SOL_IP, opt, 1)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind((addr, port))
        if kind == socket.SOCK_STREAM:
            s.listen(64)
        return s
    return in_netns(GW, make)


hub, proxy_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
resolve = ["--resolve", "api.allowed.example:%d:127.0.0.1" % HTTPS,
           "--resolve", "other.allowed.example:%d:127.0.0.1" % HTTPS,
           "--resolve", "api.allowed.example:%d:127.0.0.1" % ECHO,
           "--resolve", "api.allowed.example:%d:127.0.0.1" % COUNT,
           "--resolve", "db.internal.example:%d:10.77.0.1" % ECHO]
# NP_EGRESS_VALGRIND=1 (test_np_egress_valgrind.sh): the same attacks with the proxy
# under memcheck (which cannot run a program that loads a seccomp filter).
VG_LOG = os.path.join(TMP, "valgrind.log") if os.environ.get("NP_EGRESS_VALGRIND") else None
px = Proxy(["--control", str(proxy_end.fileno()), "--upstream-allow-cidr", "127.0.0.1/32",
            "--dns-rate", "50", "--dns-burst", "100"] + resolve +
           (["--no-seccomp"] if VG_LOG else []),
           netns=NSH, listen=False, pass_fds=(proxy_end.fileno(),),
           wrapper=["valgrind", "--error-exitcode=99", "--leak-check=full",
                    "--errors-for-leak-kinds=definite,indirect",
                    "--show-leak-kinds=definite,indirect", "--log-file=" + VG_LOG]
           if VG_LOG else None)
proxy_end.close()
hub.settimeout(5)
events = []


def ctl(msg, fds=()):
    data = json.dumps(msg).encode()
    if fds:
        socket.send_fds(hub, [data], list(fds))
    else:
        hub.send(data)
    while True:
        r = json.loads(hub.recv(70000))
        if "event" in r:
            events.append(r)
            continue
        return r


def drain_events():
    hub.setblocking(False)
    try:
        while True:
            events.append(json.loads(hub.recv(70000)))
    except BlockingIOError:
        pass
    finally:
        hub.settimeout(5)


def add_spoke(name, gw, **kw):
    tcp = gw_socket(socket.SOCK_STREAM, gw, 3128)
    udp = gw_socket(socket.SOCK_DGRAM, gw, 53)
    msg = {"op": "add", "spoke": name, "user": "alice", "allow": ["allowed.example"],
           "ports": [HTTPS, ECHO], "listen": "%s:3128" % gw, "dns_listen": "%s:53" % gw,
           "tcp": ["db.internal.example:%d" % ECHO, "10.77.0.2:%d" % ECHO,
                   "127.0.0.1:%d" % ECHO]}
    msg.update(kw)
    r = ctl(msg, (tcp.fileno(), udp.fileno()))
    tcp.close()
    udp.close()
    return r


is_(add_spoke("sa", GW_A), {"ok": True}, "add spoke sa with its transparent listener and resolver")
is_(add_spoke("sb", GW_B, allow=["elsewhere.example"]), {"ok": True}, "add spoke sb")


class Jail:
    def __init__(self, ns):
        self.p = spawn([PY, os.path.join(HERE, "np_jailclient.py")], netns=ns,
                       stdin=subprocess.PIPE, stdout=subprocess.PIPE)

    def __call__(self, op, **kw):
        kw["op"] = op
        self.p.stdin.write((json.dumps(kw) + "\n").encode())
        self.p.stdin.flush()
        r, _, _ = select.select([self.p.stdout], [], [], 60)
        line = self.p.stdout.readline() if r else b""
        return json.loads(line) if line else {"exception": "no answer"}


ja, jb = Jail(SA), Jail(SB)
b64 = lambda b: base64.b64encode(b).decode()
unb64 = lambda s: base64.b64decode(s or "")


def reset(r):
    """The attempt ended in a reset (at connect() already, or at the first read)."""
    return bool(r.get("error") or r.get("connect_error")) and b"hello" not in unb64(r.get("data"))


def rec(pred, timeout=3.0):
    return px.record_for(pred, timeout)


def decision(pred):
    return rec(lambda r: r.get("event.action") == "connect" and pred(r))


# --- the resolver ---
r = ja("dns", server=GW_A, name="api.allowed.example")
synth_api = (r.get("answers") or [None])[0]
check(r.get("rcode") == 0 and r.get("aa") and synth_api and synth_api.startswith("240.240."),
      "an allowed name resolves to a synthetic address (240.240.0.0/16)", r)
r2 = ja("dns", server=GW_A, name="api.allowed.example")
is_(r2.get("answers"), [synth_api], "the same name gets the same address again")
r = ja("dns", server=GW_A, name="other.allowed.example")
synth_other = (r.get("answers") or [None])[0]
check(synth_other and synth_other != synth_api, "another name gets another address", r)
r = ja("dns", server=GW_A, name="ApI.AlLoWeD.ExAmPlE")
check(r.get("answers") == [synth_api] and r.get("qname") == "ApI.AlLoWeD.ExAmPlE",
      "a name in mixed case: the same address, the question echoed as asked (0x20)", r)
r = ja("dns", server=GW_A, name="api.allowed.example", qtype=28)
check(r.get("rcode") == 0 and r.get("answers") == [], "AAAA: NOERROR with no record (NODATA)", r)
r = ja("dns", server=GW_A, name="api.allowed.example", qtype=65)
check(r.get("rcode") == 0 and r.get("answers") == [], "HTTPS (type 65): NODATA", r)
r = ja("dns", server=GW_A, name="evil.example")
check(r.get("rcode") == 3 and r.get("answers") == [] and (r.get("ede") or {}).get("code") == 18,
      "a name outside the allowlist: NXDOMAIN with extended error 18 (Prohibited)", r)
d = rec(lambda r: r.get("event.action") == "dns-query" and
        r.get("dns.question.name") == "evil.example")
check(d and d.get("event.reason") == "domain-not-allowed" and d.get("isolate.spoke") == "sa" and
      d.get("dns.response_code") == "NXDOMAIN" and d.get("source.ip") == SPOKE_A and
      d.get("dns.question.type") == "A",
      "the refused query is audited (reason, spoke, question, response code, source)", d)
r = ja("dns", server=GW_A, name="evil.example", edns=False)
check(r.get("rcode") == 3 and r.get("ede") is None, "without EDNS: NXDOMAIN, no OPT record", r)
r = ja("dns", server=GW_A, name="co.uk")
check(r.get("rcode") == 3, "a public suffix: NXDOMAIN", r)
r = ja("dns", server=GW_A, name="db.internal.example")
check(r.get("rcode") == 0 and (r.get("answers") or ["x"])[0].startswith("240.240."),
      "a tcp grant's name resolves too", r)
synth_db = (r.get("answers") or [None])[0]
r = ja("dns", server=GW_A, name="api.allowed.example", tcp=True)
is_(r.get("answers"), [synth_api], "DNS over TCP: the same answer")
r = ja("dns", server=GW_A, raw=b64(b"\x12\x34\x01\x00\x00\x02\x00\x00\x00\x00\x00\x00" +
                                    b"\x01a\x00\x00\x01\x00\x01"))
check(r.get("rcode") == 1 and r.get("id") == 0x1234, "two questions: FORMERR", r)
r = ja("dns", server=GW_A, raw=b64(b"\x12\x35\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00" +
                                    b"\xc0\x0c\x00\x01\x00\x01"))
check(r.get("rcode") == 1, "a compression pointer in the question: FORMERR", r)
r = ja("dns", server=GW_A, raw=b64(b"\x12\x36\x81\x80" + b"\0" * 8), timeout=0.5)
is_(r.get("error"), "timeout", "a response sent to the resolver is dropped, not answered")
r = ja("dns", server=GW_A, raw=b64(b"\x12\x37\x28\x00\x00\x01\x00\x00\x00\x00\x00\x00" +
                                    b"\x01a\x00\x00\x01\x00\x01"))
is_(r.get("rcode"), 4, "opcode UPDATE: NOTIMP")
d = rec(lambda r: r.get("event.reason") == "dns-malformed")
check(d and d.get("dns.response_code") == "FORMERR", "malformed queries are audited", d)

# glibc's stub resolver through the jail's resolv.conf
r = ja("lookup", name="api.allowed.example")
is_(r.get("addrs"), [synth_api], "getaddrinfo (glibc) in the jail gets the synthetic address")
r = ja("lookup", name="evil.example")
is_(r.get("gaierror"), socket.EAI_NONAME, "getaddrinfo of a refused name: EAI_NONAME at once")
r = ja("lookup", name="localhost")
check("127.0.0.1" in r.get("addrs", []) and not rec(lambda r: r.get("dns.question.name") ==
                                                    "localhost", timeout=0.3),
      "localhost comes from the hosts file, never from the resolver", r)

# --- transparent connections ---
before = srv.accepts("https")
r = ja("connect", host=synth_api, port=HTTPS, tls={"sni": "api.allowed.example"}, ca=pki["ca"])
check(b"hello from https" in unb64(r.get("data")),
      "TLS to the synthetic address with the right SNI reaches the upstream", r)
d = decision(lambda r: r.get("isolate.egress") == "transparent" and
             r.get("tls.client.server_name") == "api.allowed.example")
check(d and d.get("event.outcome") == "success" and d.get("destination.domain") ==
      "api.allowed.example" and d.get("destination.port") == HTTPS and
      d.get("isolate.synthetic.ip") == synth_api and d.get("destination.ip") == "127.0.0.1" and
      d.get("network.protocol") == "tls" and d.get("url.original") ==
      "api.allowed.example:%d" % HTTPS and d.get("rule.name") == "allowed.example" and
      "http.request.method" not in d,
      "its decision record: the name, the synthetic and the real address, SNI, the rule", d)
c = rec(lambda r: r.get("event.action") == "close" and d and r.get("event.id") == d.get("event.id"))
check(c and c.get("source.bytes", 0) > 200 and c.get("destination.bytes", 0) > 200,
      "and a close record with the bytes each way", c)

# The same through CONNECT on the same listener: the same kind of records.
r = ja("run", argv=["curl", "-sS", "--max-time", "10", "--cacert", pki["ca"], "--proxy",
                    "http://%s:3128" % GW_A, "https://api.allowed.example:%d/" % HTTPS])
check(r.get("status") == 0 and "hello from https" in r.get("stdout", ""),
      "HTTPS_PROXY (CONNECT) still works on the same listener", r)
dc = decision(lambda r: r.get("isolate.egress") == "connect")
check(dc and d and set(k for k in dc if not k.startswith(("http.", "user_agent."))) -
      set(d) <= {"isolate.would_deny"} and dc.get("http.request.method") == "CONNECT",
      "a CONNECT record has the fields of a transparent one (plus its HTTP ones)",
      sorted(set(dc or {}) ^ set(d or {})))

# Any HTTP client, no proxy variables: curl, Python, Node's built-in fetch.
r = ja("run", argv=["curl", "-sS", "--max-time", "10", "--cacert", pki["ca"],
                    "https://api.allowed.example:%d/" % HTTPS])
check(r.get("status") == 0 and "hello from https" in r.get("stdout", ""),
      "curl without a proxy reaches the upstream", r)
if shutil_which := __import__("shutil").which("node"):
    js = ("fetch('https://api.allowed.example:%d/').then(r => r.text())"
          ".then(t => { process.stdout.write(t); }, e => { console.error(String(e.cause || e));"
          " process.exit(3); })" % HTTPS)
    r = ja("run", argv=["node", "-e", js], env={"NODE_EXTRA_CA_CERTS": pki["ca"]})
    check(r.get("status") == 0 and "hello from https" in r.get("stdout", ""),
          "Node's built-in fetch (undici, ignores HTTPS_PROXY) reaches the upstream", r)
else:
    print("ok - Node's built-in fetch # SKIP no node")

# --- attempts that must fail, each for its reason ---
before = srv.accepts("https")
r = ja("connect", host=synth_api, port=HTTPS, tls={"sni": "evil.example", "host": "evil.example"},
       ca=pki["ca"])
check(reset(r), "an SNI other than the resolved name: the connection is reset", r)
d = decision(lambda r: r.get("event.reason") == "sni-mismatch")
check(d and d.get("tls.client.server_name") == "evil.example" and
      d.get("destination.domain") == "api.allowed.example" and "evil.example" in d.get("message", ""),
      "... audited as sni-mismatch, naming both names", d)
r = ja("connect", host=synth_api, port=HTTPS, tls={"sni": None}, ca=pki["ca"])
check(reset(r), "a ClientHello without SNI: reset", r)
check(decision(lambda r: r.get("event.reason") == "sni-missing"), "... audited as sni-missing")
is_(srv.accepts("https"), before, "none of them reached the upstream")
r = ja("connect", host=synth_api, port=ECHO,
       send=b64(b"GET / HTTP/1.1\r\nHost: api.allowed.example\r\n\r\n"), shut=True)
check(unb64(r.get("data")).startswith(b"GET / HTTP/1.1"),
      "plain HTTP with the right Host is relayed", r)
before = srv.accepts("echo")
r = ja("connect", host=synth_api, port=ECHO,
       send=b64(b"GET / HTTP/1.1\r\nHost: evil.example\r\n\r\n"), shut=True)
check(not unb64(r.get("data")), "plain HTTP with another Host: reset", r)
check(decision(lambda r: r.get("event.reason") == "sni-mismatch" and
               r.get("network.protocol") == "http"), "... audited (sni-mismatch, protocol http)")
# An absolute-form target wins over Host at an RFC 9112 server (issue 34, finding 9).
r = ja("connect", host=synth_api, port=ECHO,
       send=b64(b"GET http://evil.example/secret HTTP/1.1\r\nHost: api.allowed.example\r\n\r\n"),
       shut=True)
check(not unb64(r.get("data")), "plain HTTP whose absolute-form target names another host: reset", r)
d = decision(lambda r: r.get("event.reason") == "sni-mismatch" and
             "target names evil.example" in r.get("message", "") and
             r.get("network.protocol") == "http")
check(d and d.get("destination.domain") == "api.allowed.example",
      "... audited (sni-mismatch), naming the target's host", d)
r = ja("connect", host=synth_api, port=ECHO,
       send=b64(b"GET https://api.allowed.example/ HTTP/1.1\r\nHost: api.allowed.example\r\n\r\n"),
       shut=True)
check(not unb64(r.get("data")), "plain HTTP with an https:// target: reset", r)
is_(srv.accepts("echo"), before, "none of these reached the upstream")
# Every request of a kept-alive connection is checked, not only the first.
kept_alive_from = srv.accepts("echo")
r = ja("connect", host=synth_api, port=ECHO,
       send=b64(b"GET /one HTTP/1.1\r\nHost: api.allowed.example\r\n\r\n"
                b"GET /two HTTP/1.1\r\nHost: evil.example\r\n\r\n"), shut=True)
data = unb64(r.get("data"))
check(b"GET /two" not in data and b"Host: evil.example" not in data and
      b"421 Misdirected Request" in data,
      "a second request naming another host on the same connection never reaches the upstream "
      "(the echo upstream sends back none of it; the client gets 421)", r)
d = rec(lambda r: r.get("event.action") == "request" and r.get("event.reason") == "host-mismatch")
check(d and "evil.example" in d.get("message", "") and d.get("url.path") == "/two",
      "... refused 421 host-mismatch, on record with its path", d)
r = ja("connect", host=synth_api, port=ECHO,
       send=b64(b"GET /one HTTP/1.1\r\nHost: api.allowed.example\r\n\r\n"
                b"GET http://evil.example/two HTTP/1.1\r\nHost: api.allowed.example\r\n\r\n"),
       shut=True)
check(b"GET http://evil.example" not in unb64(r.get("data")),
      "... and so is a later request's absolute-form target", r)
# The two kept-alive connections above did reach the upstream: their accepts are
# counted first (the upstream may count one after the client is answered, in a slow
# build), so that only the raw bytes' connection is judged below.
settle = time.time() + 5
while srv.accepts("echo") < kept_alive_from + 2 and time.time() < settle:
    time.sleep(0.05)
before = srv.accepts("echo")
r = ja("connect", host=synth_api, port=ECHO, send=b64(b"\x00\x01raw bytes"), shut=True)
check(not unb64(r.get("data")), "raw bytes to a name-based grant: reset", r)
check(decision(lambda r: r.get("event.reason") == "protocol-not-allowed"),
      "... audited as protocol-not-allowed")
is_(srv.accepts("echo"), before, "neither reached the upstream")
before = srv.accepts("count")
r = ja("connect", host=synth_api, port=COUNT, tls={"sni": "api.allowed.example"}, ca=pki["ca"])
check(reset(r), "a port the spoke may not use on an allowed name: reset", r)
d = decision(lambda r: r.get("event.reason") == "port-not-allowed")
check(d and d.get("destination.port") == COUNT, "... audited as port-not-allowed", d)
is_(srv.accepts("count"), before, "... and the upstream never saw it")
r = ja("connect", host="240.240.77.77", port=HTTPS, tls={"sni": "api.allowed.example"},
       ca=pki["ca"])
check(reset(r), "a synthetic address the resolver never handed out: reset", r)
d = decision(lambda r: r.get("event.reason") == "synthetic-address-unknown")
check(d and d.get("url.original") == "240.240.77.77:%d" % HTTPS, "... audited", d)
r = ja("connect", host="10.77.0.1", port=ECHO, send=b64(b"exfil"), shut=True)
check(not unb64(r.get("data")), "a direct connection to a real address: reset", r)
d = decision(lambda r: r.get("event.reason") == "ip-literal-not-allowed" and
             r.get("destination.ip") is None and r.get("destination.address") == "10.77.0.1")
check(d and "resolver" in d.get("message", ""), "... audited as ip-literal-not-allowed", d)
r = jb("dns", server=GW_B, name="api.allowed.example")
check(r.get("rcode") == 3, "spoke sb's resolver answers from sb's allowlist", r)
r = jb("connect", host=synth_api, port=HTTPS, tls={"sni": "api.allowed.example"}, ca=pki["ca"])
d = decision(lambda r: r.get("isolate.spoke") == "sb" and
             r.get("event.reason") == "synthetic-address-unknown")
check(reset(r) and d, "sa's synthetic address means nothing to sb (its own map)", r)
r = jb("connect", host=GW_A, port=3128, send=b64(b"CONNECT api.allowed.example:%d HTTP/1.1\r\n\r\n"
                                                  % HTTPS), shut=True)
d = decision(lambda r: r.get("isolate.spoke") == "sb" and r.get("destination.address") == GW_A)
check(not unb64(r.get("data")).startswith(b"HTTP/1.1 200") and d and
      d.get("event.reason") == "ip-literal-not-allowed",
      "sb aiming at sa's proxy listener lands on its own, which refuses it", d)
r = ja("connect", host=GW_A, port=22, send=b64(b"x"), shut=True)
check(decision(lambda r: r.get("destination.address") == GW_A and r.get("destination.port") == 22),
      "another port of the spoke's own gateway: refused and audited")

# --- raw TCP grants ---
r = ja("connect", host=synth_db, port=ECHO, send=b64(b"\x00raw redis bytes"), shut=True)
check(unb64(r.get("data")).startswith(b"\x00raw redis bytes"),
      "a tcp grant by name: relayed unread (to 10.77.0.1)", r)
d = decision(lambda r: r.get("rule.name") == "db.internal.example:%d" % ECHO)
check(d and d.get("isolate.tcp_grant") is True and d.get("destination.ip") == "10.77.0.1" and
      d.get("isolate.address_class") == "private",
      "... its record: the grant, the private address the operator named", d)
r = ja("connect", host="10.77.0.2", port=ECHO, send=b64(b"by address"), shut=True)
check(unb64(r.get("data")).startswith(b"by address"), "a tcp grant by address: relayed", r)
r = ja("connect", host="10.77.0.2", port=COUNT, send=b64(b"x"), shut=True)
check(decision(lambda r: r.get("destination.address") == "10.77.0.2" and
               r.get("event.reason") == "ip-literal-not-allowed"),
      "the granted address on another port: refused")

# A forward listener on the jail's own loopback, for a loopback grant.
fwd = in_netns(SA, lambda: socket.create_server(("127.0.0.1", ECHO)))
r = ctl({"op": "forward", "spoke": "sa", "to": "127.0.0.1:%d" % ECHO}, (fwd.fileno(),))
is_(r, {"ok": True}, "forward: a listener on the jail's loopback for the grant 127.0.0.1:PORT")
fwd.close()
r = ja("connect", host="127.0.0.1", port=ECHO, send=b64(b"to the host's loopback"), shut=True)
check(unb64(r.get("data")).startswith(b"to the host's loopback"),
      "the jail's 127.0.0.1:PORT reaches the host's 127.0.0.1:PORT", r)
bad = in_netns(SA, lambda: socket.create_server(("127.0.0.1", 0)))
r = ctl({"op": "forward", "spoke": "sa", "to": "127.0.0.1:1"}, (bad.fileno(),))
check(r.get("ok") is False and "tcp grants" in r.get("error", ""),
      "forward to something that is not a grant is refused", r)
bad.close()

# --- UDP and floods ---
r = ja("udp", host=synth_api, port=443, data=b64(b"QUIC initial"))
d = rec(lambda r: r.get("event.action") == "udp")
check(d and d.get("event.reason") == "udp-not-allowed" and d.get("destination.port") == 443 and
      "api.allowed.example" in d.get("message", ""),
      "a UDP datagram to a synthetic address (QUIC) is dropped and audited", d)
r = ja("flood", server=GW_A, name="api.allowed.example", n=2000)
check(0 < r.get("answered", 0) < 400, "a flood of 2000 queries: most are dropped (budget 50/s, 100 at once)", r)
time.sleep(0.5)
limited = [x for x in px.records() if x.get("event.reason") == "dns-rate-limited"]
is_(len(limited), 1, "the whole burst leaves one record")
check(limited and limited[0].get("isolate.spoke") == "sa", "... naming the spoke", limited)
time.sleep(2.2)
r = ja("dns", server=GW_A, name="api.allowed.example")
is_(r.get("answers"), [synth_api], "once the flood stops the resolver answers again")
r = jb("dns", server=GW_B, name="x.elsewhere.example")
check(r.get("rcode") == 0, "another spoke's budget is its own", r)

# --- the hub keeps the addresses across a proxy restart ---
drain_events()
got = {(e.get("spoke"), e.get("name")): e.get("ip") for e in events if e.get("event") == "synthetic"}
check(got.get(("sa", "api.allowed.example")) == synth_api and
      got.get(("sa", "db.internal.example")) == synth_db,
      "the proxy told the hub each new synthetic address", got)
new = dict((n, ip) for (s, n), ip in got.items() if s == "sa")
is_(ctl({"op": "remove", "spoke": "sa"}), {"ok": True}, "remove sa")
r = add_spoke("sa", GW_A, synthetic=dict(new, **{"zzz.allowed.example": synth_api}))
check(r.get("ok") is False and "synthetic" in r.get("error", ""),
      "handing the same address to two names is refused", r)
r = add_spoke("sa", GW_A, synthetic=new)
is_(r, {"ok": True}, "add sa again with its synthetic addresses")
r = ja("dns", server=GW_A, name="db.internal.example")
is_(r.get("answers"), [synth_db], "a name keeps its address")
r = ja("dns", server=GW_A, name="third.allowed.example")
check(r.get("answers") and r["answers"][0] not in new.values(),
      "a new name gets an address no earlier name had", r)
r = ja("connect", host=synth_api, port=HTTPS, tls={"sni": "api.allowed.example"}, ca=pki["ca"])
check(b"hello from https" in unb64(r.get("data")), "the old address still reaches its name", r)

check(px.alive(), "the proxy survived all of it")
if VG_LOG:
    hub.close()  # the proxy drains and exits
    rc = px.stop()
    report = open(VG_LOG).read()
    is_(rc, 0, "valgrind: exit 0 (no errors, no definite or indirect leaks)")
    check(report.count("ERROR SUMMARY: 0 errors") == report.count("ERROR SUMMARY") > 0,
          "valgrind: 0 errors in every process (the proxy and its log opener)",
          report[-3000:])
done()
