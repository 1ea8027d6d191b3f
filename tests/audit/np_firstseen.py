"""netproxy --first-seen (see test_audit_firstseen.sh)."""
from nptest import *

srv = Servers([{"name": "echo", "kind": "echo", "addr": "127.0.0.1"},
               {"name": "dns", "kind": "dns", "addr": "127.0.0.1", "table": {}}])
echo, dns = srv.ports["echo"], srv.ports["dns"]
store = os.path.join(TMP, "state", "netproxy-first-seen.tsv")
os.makedirs(os.path.dirname(store), mode=0o700)
base = ["--allow", "allowed.example,other.example", "--ports", str(echo),
        "--dns-server", "127.0.0.1:%d" % dns, "--upstream-allow-cidr", "127.0.0.1/32",
        "--resolve", "a.allowed.example:%d:127.0.0.1" % echo,
        "--resolve", "b.allowed.example:%d:127.0.0.1" % echo,
        "--resolve", "x.other.example:%d:127.0.0.1" % echo, "--first-seen", store]


def roundtrip(port, target):
    s, st, hd, rest = open_tunnel(port, "%s:%d" % (target, echo))
    if st == 200:
        s.sendall(b"x")
        s.shutdown(socket.SHUT_WR)
        recv_all(s)
    s.close()
    return st


def connects(px, n):
    check(wait_until(lambda: len([r for r in px.records() if r.get("event.action") == "connect"]) >= n),
          "%d connect records" % n)
    return [r for r in px.records() if r.get("event.action") == "connect"]


px = Proxy(base, tag="fs1")
is_(roundtrip(px.port, "a.allowed.example"), 200, "a first tunnel to allowed.example")
is_(roundtrip(px.port, "b.allowed.example"), 200, "another name under the same registrable domain")
is_(roundtrip(px.port, "x.other.example"), 200, "a first tunnel to other.example")
is_(open_tunnel(px.port, "refused.example:%d" % echo)[1], 403, "a refused one")
recs = connects(px, 4)
is_([r.get("isolate.first_seen") for r in recs], [True, False, True, None],
    "first_seen: new, the same eTLD+1 again, new, and none on a refusal")
px.stop()
check((os.stat(store).st_mode & 0o777) == 0o600, "the store is 0600")
is_(len(open(store).read().splitlines()), 2, "... two triples")

px = Proxy(base, tag="fs2")
is_(roundtrip(px.port, "a.allowed.example"), 200, "after a restart")
recs = connects(px, 1)
is_(recs[0].get("isolate.first_seen"), False, "... the store remembers: not first")
px.stop()

# A store someone filled with junk: skipped lines are said, never a crash.
with open(store, "a") as f:
    f.write("x" * 5000 + "\n" + "cut-short-without-newline")
px = Proxy(base, tag="fs3")
is_(roundtrip(px.port, "x.other.example"), 200, "a junk-filled store still loads")
check("lines skipped" in px.stderr(), "... and says what it skipped", px.stderr())
px.stop()
done()
