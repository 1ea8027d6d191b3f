"""Fault: the disk holding netproxy's audit log fills up (test_fault_diskfull.sh).

The proxy runs in a mount namespace of its own with its audit log on a 64 KiB tmpfs
(gone with the proxy). The test fills that tmpfs through /proc/PID/root, which reaches
the proxy's mounts from outside. While the log cannot be written, a tunnel must be
refused (503 audit-unavailable, and the proxy says why) rather than run unlogged;
refusals are still answered; the proxy stays up; a record that could not be written
(also the close record of a tunnel that was open when the disk filled) is said on
stderr and counted in the metrics, one for one. Once space is back, tunnels work
again and the log is still one whole JSON record per line (a record cut by the full
disk must not corrupt what follows), with a decision record for every tunnel that
ran."""
import sys
import os
import urllib.request
sys.path.insert(0, os.path.join(os.environ["ROOT"], "tests", "netproxy"))
from nptest import *

srv = Servers([{"name": "echo", "kind": "echo", "addr": "127.0.0.1"},
               {"name": "dns", "kind": "dns", "addr": "127.0.0.1", "table": {}}])
echo, dns = srv.ports["echo"], srv.ports["dns"]
T = "e.allowed.example:%d" % echo
mnt = os.path.join(TMP, "logdisk")
os.makedirs(mnt)
# unshare: a private mount namespace; the tmpfs exists only there, and only while the
# proxy (which the shell execs) lives.
wrapper = ["unshare", "--mount", "--propagation", "private", "sh", "-c",
           'mount -t tmpfs -o size=64k,mode=0755 itest-faults-logdisk "$0" && exec "$@"', mnt]
metrics_port = free_port()
px = Proxy(["--allow", "allowed.example", "--ports", str(echo), "--metrics", "127.0.0.1:%d" % metrics_port,
            "--dns-server", "127.0.0.1:%d" % dns, "--upstream-allow-cidr", "127.0.0.1/32",
            "--resolve", "e.allowed.example:%d:127.0.0.1" % echo],
           tag="full", audit=os.path.join(mnt, "audit.jsonl"), wrapper=wrapper)
inside = "/proc/%d/root%s" % (px.pid, mnt)  # the proxy's view of the tmpfs
px.audit = os.path.join(inside, "audit.jsonl")
check(os.path.ismount(mnt) is False and os.path.exists(px.audit),
      "the audit log lives on the proxy's private tmpfs (not mounted on the host)")


def roundtrip():
    s, st, hd, rest = open_tunnel(px.port, T)
    if st == 200:
        s.sendall(b"ping")
        s.shutdown(socket.SHUT_WR)
        rest += recv_all(s)
    else:
        rest += recv_all(s)
    s.close()
    return st, hd, rest


def lines():
    with open(px.audit, "rb") as f:
        return f.read().split(b"\n")


def whole_lines():
    """(records, malformed lines) of the log; the last element after the final newline is
    '' when the file ends with a whole line."""
    ls = lines()
    recs, bad = [], []
    for i, l in enumerate(ls):
        if i == len(ls) - 1 and l == b"":
            continue
        try:
            recs.append(flatten(json.loads(l)))
        except ValueError:
            bad.append(l[:120])
    return recs, bad


def failures_metric():
    text = urllib.request.urlopen("http://127.0.0.1:%d/metrics" % metrics_port, timeout=5).read().decode()
    for line in text.splitlines():
        if line.startswith("netproxy_audit_write_failures_total "):
            return int(float(line.split()[1]))
    return None


def failures_said():
    return px.stderr().count("audit: cannot write the ")


st, hd, rest = roundtrip()
is_(st, 200, "a tunnel while the disk has room")
# A tunnel that stays open while the disk fills: its close record will not fit.
held, st, hd, rest = open_tunnel(px.port, T)
is_(st, 200, "a second tunnel, held open")
# Leave a little room: the next few records fit, then the disk is full.
filler = os.path.join(inside, "filler")
with open(filler, "wb") as f:
    try:
        f.write(b"\0" * (60 * 1024))
    except OSError:
        pass
statuses = []
refused = None
for i in range(400):
    st, hd, body = roundtrip()
    statuses.append(st)
    if st != 200:
        refused = (st, hd, body)
        break
n_ok = statuses.count(200) + 1
check(refused is not None, "the disk fills up within 400 tunnels (%d ran)" % n_ok)
if refused:
    st, hd, body = refused
    check(st == 503 and hd.get("x-proxy-error") == "audit-unavailable",
          "disk full: the next tunnel is refused 503 audit-unavailable", "%s %s" % (st, hd))
    check(b"audit log cannot be written" in body and b"No space left on device" in body,
          "disk full: the answer says why", body[:300])
for k in range(3):
    st, hd, body = roundtrip()
    is_(st, 503, "disk full: tunnel %d after the first refusal is refused too" % (k + 1))
st, hd, body = exchange(px.port, b"CONNECT evil.example:443 HTTP/1.1\r\n\r\n")
is_(st, 403, "disk full: a policy refusal is still answered")
check("cannot write" in px.stderr() and "No space left on device" in px.stderr(),
      "disk full: the proxy says so on stderr")
check(px.alive(), "disk full: the proxy stays up")
held.close()
check(wait_until(lambda: "cannot write the close record" in px.stderr()),
      "disk full: the lost close record of the tunnel held open is said on stderr")
check(wait_until(lambda: failures_metric() == failures_said()),
      "disk full: every record that could not be written is counted in the metrics, one per "
      "warning (%s counted, %d said)" % (failures_metric(), failures_said()))
check(failures_said() >= 4 + 1 + 1, "... at least the 4 refusals, the 403 and the held tunnel's "
      "close (%d)" % failures_said())
recs, bad = whole_lines()
allowed = [r for r in recs if r.get("event.action") == "connect" and r.get("event.outcome") == "success"]
is_(len(allowed), n_ok + 1, "every tunnel that ran has its decision record (none ran unlogged)")

# Space again (an operator deleted something): tunnels are logged and run again.
os.unlink(filler)
st, hd, rest = roundtrip()
is_(st, 200, "after space is freed, tunnels run again")
check(wait_until(lambda: len([r for r in whole_lines()[0] if r.get("event.action") == "close"]) >= 1),
      "close records are written again")
recs, bad = whole_lines()
is_(bad, [], "the log is whole JSON lines: no record cut by the full disk corrupts the next")
allowed = [r for r in recs if r.get("event.action") == "connect" and r.get("event.outcome") == "success"]
is_(len(allowed), n_ok + 2, "and holds a decision record for each of the %d tunnels" % (n_ok + 2))
ids = [r.get("event.id") for r in allowed]
is_(len(set(ids)), len(ids), "each with its own event.id")
check(px.alive(), "the proxy is up at the end")
px.stop()
done()
