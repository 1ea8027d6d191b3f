"""Hub mode with a test hub (see test_np_hub.sh)."""
import ctypes

from nptest import *

NS = os.environ["NETNS"]
libc = ctypes.CDLL(None, use_errno=True)
CLONE_NEWNET = 0x40000000

srv = Servers([{"name": "echo", "kind": "echo", "addr": "127.0.0.1"},
               {"name": "dns", "kind": "dns", "addr": "127.0.0.1", "table": {}}])
echo, dns = srv.ports["echo"], srv.ports["dns"]
T = "e.allowed.example:%d" % echo

hub, proxy_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
px = Proxy(["--control", str(proxy_end.fileno()), "--dns-server", "127.0.0.1:%d" % dns,
            "--upstream-allow-cidr", "127.0.0.1/32", "--max-tunnels", "3",
            "--resolve", "e.allowed.example:%d:127.0.0.1" % echo],
           listen=False, pass_fds=(proxy_end.fileno(),))
proxy_end.close()
hub.settimeout(5)


def ctl(msg, fd=None, raw=None):
    data = raw if raw is not None else json.dumps(msg).encode()
    if fd is None:
        hub.send(data)
    else:
        socket.send_fds(hub, [data], [fd])
    return json.loads(hub.recv(70000))


def tcp_listener(addr="127.0.0.1", port=0):
    s = socket.socket()
    s.bind((addr, port))
    s.listen(64)
    return s


def listener_in_netns(ns, port):
    own = os.open("/proc/self/ns/net", os.O_RDONLY)
    target = os.open("/run/netns/" + ns, os.O_RDONLY)
    if libc.setns(target, CLONE_NEWNET) != 0:
        raise OSError(ctypes.get_errno(), "setns")
    try:
        return tcp_listener("127.0.0.1", port)
    finally:
        libc.setns(own, CLONE_NEWNET)
        os.close(own)
        os.close(target)


def nfds():
    return len(os.listdir("/proc/%d/fd" % px.pid))


def add(name, sock, **kw):
    msg = {"op": "add", "spoke": name, "allow": ["allowed.example"], "ports": [echo],
           "listen": "%s:%d" % sock.getsockname()}
    msg.update(kw)
    return ctl(msg, sock.fileno())


r = ctl({"op": "ping"})
check(r.get("ok") is True and r.get("spokes") == 0, "ping answers ok with no spokes", r)

la = tcp_listener()
pa = la.getsockname()[1]
r = ctl({"op": "add", "spoke": "alpha", "allow": ["allowed.example"], "ports": [echo]})
check(r.get("ok") is False and "listening socket" in r.get("error", ""),
      "add without a socket is refused", r)
r = add("alpha", la, user="alice")
is_(r, {"ok": True}, "add spoke alpha with its listening socket")
la.close()  # the hub keeps no copy, as the real one does

s, st, hd, rest = open_tunnel(pa, T)
s.sendall(b"hi")
got = rest
while len(got) < 2:
    got += s.recv(10)
check(st == 200 and got == b"hi", "a tunnel through the passed socket works")
alpha_tunnel = s
rec = px.record_for(lambda r: r.get("event.action") == "connect" and r.get("isolate.spoke") == "alpha")
check(rec and rec.get("isolate.user") == "alice" and rec.get("rule.ruleset") == "alpha",
      "records carry the spoke and the user the hub named")
st, hd, body = exchange(pa, b"CONNECT evil.example:%d HTTP/1.1\r\n\r\n" % echo)
check(st == 403 and b"spoke alpha" in body, "alpha's policy applies on its socket", body)
rec = px.record_for(lambda r: r.get("event.action") == "spoke-add")
check(rec and rec.get("isolate.spoke") == "alpha" and rec.get("event.outcome") == "success",
      "spoke-add is audited")

# Hostile or broken control messages: refused with a reason, no descriptor leaked.
time.sleep(0.2)  # let the refused connection above finish lingering
before = nfds()
bad = [
    ("duplicate name", {"op": "add", "spoke": "alpha", "allow": ["allowed.example"]}, "already exists"),
    ("public suffix entry", {"op": "add", "spoke": "b1", "allow": ["co.uk"]}, "public suffix"),
    ("subdomain entry", {"op": "add", "spoke": "b2", "allow": ["api.allowed.example"]}, "registrable"),
    ("unknown key", {"op": "add", "spoke": "b3", "allow": [], "colour": "red"}, "colour"),
    ("bad spoke name", {"op": "add", "spoke": "../etc", "allow": []}, "spoke"),
    ("allow not a list", {"op": "add", "spoke": "b4", "allow": "allowed.example"}, "allow"),
    ("port out of range", {"op": "add", "spoke": "b5", "allow": [], "ports": [70000]}, "port"),
    ("listen mismatch", {"op": "add", "spoke": "b6", "allow": [], "listen": "127.0.0.1:1"}, "bound to"),
    ("max_tunnels zero", {"op": "add", "spoke": "b7", "allow": [], "max_tunnels": 0}, "max_tunnels"),
]
for what, msg, want in bad:
    ls = tcp_listener()
    r = ctl(msg, ls.fileno())
    ls.close()
    check(r.get("ok") is False and want in r.get("error", ""), "add refused: %s" % what, r)
dn = os.open("/dev/null", os.O_RDONLY)
r = ctl({"op": "add", "spoke": "b8", "allow": []}, dn)
check(r.get("ok") is False and "not a TCP socket" in r.get("error", ""), "add refused: a file, not a socket", r)
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
u.bind(("127.0.0.1", 0))
r = ctl({"op": "add", "spoke": "b9", "allow": []}, u.fileno())
check(r.get("ok") is False, "add refused: a UDP socket", r)
unbound = socket.socket()
r = ctl({"op": "add", "spoke": "b10", "allow": []}, unbound.fileno())
check(r.get("ok") is False and "not bound" in r.get("error", ""), "add refused: an unbound socket", r)
r = ctl({"op": "ping"}, dn)
check(r.get("ok") is True, "a descriptor sent with ping is ignored (and closed)")
os.close(dn)
for what, raw, want in [("broken JSON", b"{bad", "JSON"), ("a JSON array", b"[1]", "JSON"),
                        ("no op", b"{}", "op"), ("unknown op", b'{"op":"fly"}', "unknown"),
                        ("op not a string", b'{"op":1}', "op"),
                        ("oversized message", b'{"op":"ping","x":"' + b"a" * 70000 + b'"}', "too large")]:
    if what == "oversized message":
        hub.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 20)
    r = ctl(None, raw=raw)
    check(r.get("ok") is False and want in r.get("error", ""), "control message refused: %s" % what, r)
check(wait_until(lambda: nfds() <= before, 2), "no descriptor leaked by refused messages",
      "%d -> %d" % (before, nfds()))
check(px.alive(), "proxy alive after hostile control messages")

# A spoke whose socket lives in another network namespace.
pb = free_port()
lb = listener_in_netns(NS, pb)
r = add("beta", lb)
lb.close()
is_(r, {"ok": True}, "add spoke beta with a socket from namespace %s" % NS)
code = ("import socket\n"
        "s=socket.create_connection(('127.0.0.1',%d),timeout=5)\n"
        "s.sendall(b'CONNECT %s HTTP/1.1\\r\\n\\r\\nfrom-ns')\n"
        "s.shutdown(socket.SHUT_WR)\n"
        "d=b''\n"
        "while True:\n"
        "  x=s.recv(65536)\n"
        "  if not x: break\n"
        "  d+=x\n"
        "print(d)\n") % (pb, T)
out = subprocess.run(["ip", "netns", "exec", NS, PY, "-c", code], capture_output=True, text=True,
                     timeout=20).stdout
check("200 Connection established" in out and "from-nsBYE:127.0.0.1" in out,
      "a client in the namespace is served; the upstream is dialled from the proxy's namespace",
      out.strip())
try:
    socket.create_connection(("127.0.0.1", pb), timeout=2).close()
    not_ok("the proxy did not bind the spoke's port in its own namespace")
except ConnectionRefusedError:
    ok("the proxy did not bind the spoke's port in its own namespace")

# Per-spoke limit from the add message, then the global limit (--max-tunnels 3).
lc = tcp_listener()
pc = lc.getsockname()[1]
is_(add("gamma", lc, max_tunnels=1), {"ok": True}, "add spoke gamma with max_tunnels 1")
lc.close()
g1, st, hd, rest = open_tunnel(pc, T)
is_(st, 200, "gamma: first tunnel")
st, hd, body = exchange(pc, b"CONNECT %s HTTP/1.1\r\n\r\n" % T.encode())
check(st == 429 and hd.get("x-proxy-error") == "spoke-tunnel-limit" and "retry-after" in hd,
      "gamma: second tunnel is 429 with Retry-After", "%s %s" % (st, hd))
a2, st, hd, rest = open_tunnel(pa, T)
is_(st, 200, "alpha: second tunnel (3 in total now)")
st, hd, body = exchange(pa, b"CONNECT %s HTTP/1.1\r\n\r\n" % T.encode())
check(st == 503 and hd.get("x-proxy-error") == "tunnel-limit", "alpha: fourth tunnel in total is 503",
      "%s %s" % (st, hd))
a2.close()

# The proxy holds exactly the listening sockets it was given, nothing it bound itself.
ss = subprocess.run(["ss", "-ltnpH"], capture_output=True, text=True).stdout
mine = sorted(l.split()[3] for l in ss.splitlines() if "pid=%d," % px.pid in l)
is_(mine, sorted(["127.0.0.1:%d" % pa, "127.0.0.1:%d" % pc]),
    "in its own namespace the proxy listens only on the sockets the hub passed")

# Remove: the listener goes, the open tunnel finishes.
is_(ctl({"op": "remove", "spoke": "alpha"}), {"ok": True}, "remove alpha")
try:
    socket.create_connection(("127.0.0.1", pa), timeout=2).close()
    not_ok("after remove, alpha's socket is closed")
except ConnectionRefusedError:
    ok("after remove, alpha's socket is closed")
alpha_tunnel.sendall(b"still")
got = b""
alpha_tunnel.settimeout(3)
while len(got) < 5:
    got += alpha_tunnel.recv(10)
is_(got, b"still", "a tunnel opened before the remove keeps working")
alpha_tunnel.close()
rec = px.record_for(lambda r: r.get("event.action") == "close" and r.get("isolate.spoke") == "alpha"
                    and r.get("source.bytes") == 7)
check(rec is not None, "its close record still names spoke alpha")
r = ctl({"op": "remove", "spoke": "alpha"})
check(r.get("ok") is False and "no spoke" in r.get("error", ""), "removing an unknown spoke is refused")
check(px.record_for(lambda r: r.get("event.action") == "spoke-remove"), "spoke-remove is audited")
# alpha's closed tunnel leaves the count a moment after its close record is written.
r = wait_until(lambda: (lambda r: r if r.get("tunnels") == 1 else None)(ctl({"op": "ping"}))) \
    or ctl({"op": "ping"})
check(r.get("spokes") == 2 and r.get("tunnels") == 1, "ping counts spokes and tunnels", r)

# The hub goes away: the proxy stops accepting, lets gamma's tunnel finish, exits 0.
hub.close()
time.sleep(0.3)
check(px.alive(), "with a tunnel open the proxy drains instead of dying")
try:
    socket.create_connection(("127.0.0.1", pc), timeout=2).close()
    not_ok("draining: listeners closed")
except ConnectionRefusedError:
    ok("draining: listeners closed")
g1.sendall(b"z")
is_(g1.recv(1), b"z", "draining: the open tunnel still relays")
g1.close()
try:
    rc = px.proc.wait(timeout=5)
except subprocess.TimeoutExpired:
    rc = None
is_(rc, 0, "the last tunnel closed: the proxy exits 0")
check("hub closed the control channel" in px.stderr(), "and says why on stderr")
done()
