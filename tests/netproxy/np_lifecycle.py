"""SIGHUP, SIGTERM, disk full, report-only, stdout audit (see test_np_lifecycle.sh)."""
from nptest import *

srv = Servers([{"name": "echo", "kind": "echo", "addr": "127.0.0.1"},
               {"name": "dns", "kind": "dns", "addr": "127.0.0.1", "table": {}}])
echo, dns = srv.ports["echo"], srv.ports["dns"]
base = ["--allow", "allowed.example", "--ports", str(echo), "--dns-server", "127.0.0.1:%d" % dns,
        "--upstream-allow-cidr", "127.0.0.1/32",
        "--resolve", "e.allowed.example:%d:127.0.0.1" % echo,
        "--resolve", "other.example:%d:127.0.0.1" % echo,
        "--resolve", "loop.allowed.example:%d:127.0.0.2" % echo]
T = "e.allowed.example:%d" % echo


def roundtrip(port, target=T):
    s, st, hd, rest = open_tunnel(port, target)
    if st == 200:
        s.sendall(b"x")
        s.shutdown(socket.SHUT_WR)
        recv_all(s)
    s.close()
    return st


# --- SIGHUP: logrotate renames the file, the proxy writes to a new one ------------------
logdir = os.path.join(TMP, "logs")
os.makedirs(logdir)
os.chmod(logdir, 0o700)  # root only: the proxy (nobody) could not create a file here itself
audit = os.path.join(logdir, "netproxy.jsonl")
px = Proxy(base, tag="hup", audit=audit)
is_(roundtrip(px.port), 200, "tunnel before rotation")
check(wait_until(lambda: len(px.records()) == 2), "two records before rotation")
os.rename(audit, audit + ".1")
px.signal(signal.SIGHUP)
check(wait_until(lambda: os.path.exists(audit)), "SIGHUP: a new audit file is created")
is_(roundtrip(px.port), 200, "tunnel after rotation")
check(wait_until(lambda: len(px.records()) == 2), "the new file gets the next records")
old = [json.loads(l) for l in open(audit + ".1")]
is_(len(old), 2, "the rotated file keeps exactly the old records")
new_ids = {r["event.id"] for r in px.records()}
check(not new_ids & {r["event"]["id"] for r in old}, "no record is duplicated across the files")
st = os.stat(audit)
check(st.st_uid == 0 and (st.st_mode & 0o777) == 0o640,
      "the new file was opened by the privileged helper (root-owned, 0640)", oct(st.st_mode))
check("audit log %s reopened" % audit in px.stderr(), "SIGHUP is logged")
check(px.alive(), "alive after SIGHUP")
px.stop()

# --- SIGTERM drains: open tunnels finish, new connections are refused -------------------
px = Proxy(base, tag="term")
s, st, hd, rest = open_tunnel(px.port, T)
is_(st, 200, "tunnel open before SIGTERM")
px.signal(signal.SIGTERM)
time.sleep(0.3)
check(px.alive(), "SIGTERM with a tunnel open: still running (draining)")
try:
    socket.create_connection(("127.0.0.1", px.port), timeout=2).close()
    not_ok("draining: new connections are refused")
except ConnectionRefusedError:
    ok("draining: new connections are refused")
s.sendall(b"during-drain")
s.shutdown(socket.SHUT_WR)
data = recv_all(s)
s.close()
is_(data, b"during-drainBYE:127.0.0.1", "draining: the open tunnel runs to its end")
try:
    rc = px.proc.wait(timeout=5)
except subprocess.TimeoutExpired:
    rc = None
is_(rc, 0, "the last tunnel closed: exit 0")
rec = px.record_for(lambda r: r.get("event.action") == "close")
check(rec and rec.get("event.reason") == "closed" and rec.get("source.bytes") == 12,
      "its close record was written before exit")

# Drain timeout ends what is left, with close records.
px = Proxy(base + ["--drain-timeout", "300ms"], tag="drain")
s, st, hd, rest = open_tunnel(px.port, T)
t0 = time.time()
px.signal(signal.SIGTERM)
rc = px.proc.wait(timeout=5)
took = time.time() - t0
check(rc == 0 and 0.25 < took < 3, "--drain-timeout 300ms: exit 0 after the timeout", "%.2fs" % took)
rec = px.record_for(lambda r: r.get("event.action") == "close")
check(rec and rec.get("event.reason") == "shutdown", "the cut tunnel's close record says shutdown")
is_(recv_all(s, 2), b"", "the client sees the tunnel closed")
s.close()

# A second SIGTERM does not wait.
px = Proxy(base, tag="twice")
s, st, hd, rest = open_tunnel(px.port, T)
px.signal(signal.SIGTERM)
time.sleep(0.2)
px.signal(signal.SIGTERM)
try:
    rc = px.proc.wait(timeout=3)
except subprocess.TimeoutExpired:
    rc = None
is_(rc, 0, "a second SIGTERM ends the drain at once")
s.close()

# --- the audit log cannot be written: refuse, say so, stay up -----------------------------
px = Proxy(base, tag="full", audit="/dev/full")
s = socket.create_connection(("127.0.0.1", px.port), timeout=5)
s.sendall(b"CONNECT %s HTTP/1.1\r\n\r\nsecret" % T.encode())
stt, hd, body = parse_response(recv_all(s))
s.close()
check(stt == 503 and hd.get("x-proxy-error") == "audit-unavailable",
      "disk full: the tunnel is refused with 503 audit-unavailable", "%s %s" % (stt, hd))
check(b"audit log cannot be written" in body and b"No space left on device" in body,
      "the 503 body says why", body)
check("cannot write the decision record" in px.stderr() and "No space left on device" in px.stderr(),
      "stderr says so too")
st2, hd, body = exchange(px.port, b"CONNECT evil.example:%d HTTP/1.1\r\n\r\n" % echo)
is_(st2, 403, "disk full: refusals are still answered")
check(px.alive(), "disk full: the proxy stays up")
px.stop()

# --- report-only ---------------------------------------------------------------------------
px = Proxy(base + ["--report-only"], tag="report")
is_(roundtrip(px.port, "other.example:%d" % echo), 200, "report-only: a name outside the allowlist passes")
rec = px.record_for(lambda r: r.get("destination.domain") == "other.example" and r.get("event.action") == "connect")
check(rec and rec.get("event.outcome") == "success" and rec.get("event.reason") == "domain-not-allowed"
      and rec.get("isolate.would_deny") == "domain-not-allowed" and rec.get("isolate.report_only") is True,
      "report-only: the record says what would have been refused", str(rec))
st, hd, body = exchange(px.port, b"CONNECT loop.allowed.example:%d HTTP/1.1\r\n\r\n" % echo)
check(st == 403 and hd.get("x-proxy-error") == "forbidden-address",
      "report-only: the address guard is still enforced", "%s %s" % (st, hd))
st, hd, body = exchange(px.port, b"GET / HTTP/1.1\r\n\r\n")
is_(st, 405, "report-only: malformed or wrong requests are still refused")
import urllib.request
px.stop()

# --- audit to stdout -------------------------------------------------------------------------
out_path = os.path.join(TMP, "stdout.jsonl")
with open(out_path, "w") as out:
    p = subprocess.Popen([NETPROXY, "--listen", "127.0.0.1:%d" % (port := free_port()), "--audit", "-"]
                         + base, stdout=out, stderr=subprocess.DEVNULL)
    wait_until(lambda: socket.socket().connect_ex(("127.0.0.1", port)) == 0)
    st = roundtrip(port)
    p.terminate()
    p.wait(5)
lines = [json.loads(l) for l in open(out_path)]
tun = [l for l in lines if l.get("destination", {}).get("domain") == "e.allowed.example"]
check(st == 200 and [l["event"]["action"] for l in tun] == ["connect", "close"],
      "--audit - writes the records to stdout", str(lines))
probe = [l for l in lines if l["event"].get("reason") == "incomplete-request"]
is_(len(probe), 1, "even the readiness probe (connect, close) left a record")
done()
