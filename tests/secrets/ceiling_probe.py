"""netproxy at its memory ceiling (test_secrets_inject.sh): one `hub serve --stdio`
runs the probe spoke; the test lowers the running netproxy's cgroup limit to a few MiB
above what it uses, the spoke opens tunnels whose large answers it never reads, and the
OOM killer ends netproxy there. Prints one JSON object: whether it ended, the hub's
record of why, whether the hub restarted it (with the configured limit again) and
whether the spoke's next request works."""
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.environ["ROOT"], "tests", "serve"))
from mcp_stdio import StdioClient  # noqa: E402

hub, conf, audit = sys.argv[1:4]
c = StdioClient([hub, "serve", "--stdio", "--standalone", "--config", conf, "--answers", "allow"],
                stderr=open(os.path.join(os.environ["TMP"], "ceiling.err"), "w"))
c.initialize("ceiling-probe")


def call(tool, args, timeout=30):
    r = c.request("tools/call", {"name": tool, "arguments": args}, timeout=timeout)
    return (r or {}).get("result", {}).get("structuredContent")


def netproxy():
    """The running hub's netproxy: (pid, its memory cgroup's directory) or (None, None)."""
    kids = []
    for t in os.listdir("/proc/%d/task" % c.p.pid):
        with open("/proc/%d/task/%s/children" % (c.p.pid, t)) as f:
            kids += f.read().split()
    for k in kids:
        try:
            if not os.readlink("/proc/%s/exe" % k).endswith("/netproxy"):
                continue
            with open("/proc/%s/cgroup" % k) as f:
                lines = [l.strip().split(":", 2) for l in f]
        except OSError:
            continue
        v1 = next((l[2] for l in lines if l[1] == "memory"), None)
        if v1 is not None:
            return int(k), "/sys/fs/cgroup/memory" + v1
        return int(k), "/sys/fs/cgroup" + next(l[2] for l in lines if l[0] == "0")
    return None, None


def limit_file(d):
    return os.path.join(d, "memory.limit_in_bytes" if os.path.exists(d + "/memory.limit_in_bytes")
                        else "memory.max")


def usage(d):
    for f in ("memory.usage_in_bytes", "memory.current"):
        if os.path.exists(os.path.join(d, f)):
            return int(open(os.path.join(d, f)).read())
    return 0


out = {}
call("probe__env", {})
pid, cg = netproxy()
out["cgroup"] = cg
if pid:
    with open(limit_file(cg), "w") as f:
        f.write(str(usage(cg) + (8 << 20)))
    r = call("probe__hold", {"url": "https://api.github.com/big?n=1048576", "n": 96}, timeout=15)
    out["opened"] = (r or {}).get("opened")
    t0 = time.monotonic()
    while time.monotonic() - t0 < 20 and os.path.exists("/proc/%d" % pid) and \
            not open("/proc/%d/stat" % pid).read().split(") ")[1].startswith("Z"):
        time.sleep(0.05)
    out["ended"] = not os.path.exists("/proc/%d" % pid) or \
        open("/proc/%d/stat" % pid).read().split(") ")[1].startswith("Z")
    exits = [json.loads(l) for l in open(audit) if '"netproxy-exit"' in l]
    out["reason"] = exits[-1].get("event", {}).get("reason") if exits else None
    t0 = time.monotonic()
    new = None
    while time.monotonic() - t0 < 15:
        new, ncg = netproxy()
        if new and new != pid:
            break
        time.sleep(0.1)
    out["restarted"] = bool(new and new != pid)
    out["limit_after"] = int(open(limit_file(cg)).read()) if out["restarted"] else None
    r = call("probe__get", {"url": "https://api.github.com/after-ceiling",
                            "headers": {"Authorization": "Bearer ${GITHUB_TOKEN}"}})
    out["after"] = (r or {}).get("status")
c.close()
print(json.dumps(out))
