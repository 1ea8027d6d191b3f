"""netproxy --audit-key (see test_audit_netproxy.sh): its records chained and signed
across a logrotate rename and SIGHUP, sealed at SIGTERM, checked by hub audit verify."""
import sys
from nptest import *

HUB = os.path.join(BIN, "hub")
srv = Servers([{"name": "echo", "kind": "echo", "addr": "127.0.0.1"},
               {"name": "dns", "kind": "dns", "addr": "127.0.0.1", "table": {}}])
echo, dns = srv.ports["echo"], srv.ports["dns"]
key = os.path.join(TMP, "state", "netproxy-audit.key")
os.makedirs(os.path.dirname(key), mode=0o700)
base = ["--allow", "allowed.example", "--ports", str(echo), "--dns-server", "127.0.0.1:%d" % dns,
        "--upstream-allow-cidr", "127.0.0.1/32",
        "--resolve", "e.allowed.example:%d:127.0.0.1" % echo, "--audit-key", key]
T = "e.allowed.example:%d" % echo


def roundtrip(port, target=T):
    s, st, hd, rest = open_tunnel(port, target)
    if st == 200:
        s.sendall(b"x")
        s.shutdown(socket.SHUT_WR)
        recv_all(s)
    s.close()
    return st


def verify(*files):
    p = subprocess.run([HUB, "audit", "verify", "--key", key] + list(files),
                       capture_output=True, text=True)
    return p.returncode, p.stdout + p.stderr


def actions(path):
    return [json.loads(l)["event"]["action"] for l in open(path)]


logdir = os.path.join(TMP, "logs")
os.makedirs(logdir)
os.chmod(logdir, 0o700)
audit = os.path.join(logdir, "netproxy.jsonl")
px = Proxy(base, tag="chain", audit=audit)
check(os.path.exists(key) and (os.stat(key).st_mode & 0o777) == 0o600,
      "the key is made (0600) before privileges drop")
is_(roundtrip(px.port), 200, "a tunnel before rotation")
is_(open_tunnel(px.port, "refused.example:%d" % echo)[1], 403, "a refused request")
check(wait_until(lambda: actions(audit).count("connect") == 2 and "close" in actions(audit)),
      "its records written")
os.rename(audit, audit + ".1")
px.signal(signal.SIGHUP)
check(wait_until(lambda: os.path.exists(audit)), "SIGHUP: a new file")
is_(roundtrip(px.port), 200, "a tunnel after rotation")
check(wait_until(lambda: "close" in actions(audit)), "its records in the new file")
is_(px.stop(), 0, "SIGTERM: exit 0")

old, new = actions(audit + ".1"), actions(audit)
is_(old[0], "audit-link", "the first file starts a chain")
is_(old[-1], "audit-checkpoint", "the rotated file was sealed before the reopen")
is_(new[0], "audit-link", "the new file starts with a link to the old one")
is_(new[-1], "audit-checkpoint", "the proxy sealed its log when it stopped")
rc, out = verify(audit + ".1", audit)
is_(rc, 0, "hub audit verify: intact")
if rc:
    print("# " + out)

# The attacker's move: the refused request's record taken out of the rotated file.
lines = open(audit + ".1").read().splitlines(True)
gone = [l for l in lines if '"outcome":"failure"' in l]
check(len(gone) == 1, "the refusal's record is in the rotated file")
open(audit + ".1", "w").write("".join(l for l in lines if l not in gone))
rc, out = verify(audit + ".1", audit)
is_(rc, 1, "its deletion is found: exit 1")
check(re.search(r"netproxy\.jsonl\.1:\d+: 1 record\(s\) missing", out), "... and named", out)
done()
