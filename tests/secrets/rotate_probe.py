"""Rotation without restarting the spoke (test_secrets_inject.sh): one `hub serve
--stdio` keeps the probe spoke running while `hub secrets set` replaces the value; the
spoke's stand-in stays, and its next request carries the new value; and where the
running hub's netproxy is (its memory cgroup). Prints one JSON object with what it saw."""
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.environ["ROOT"], "tests", "serve"))
from mcp_stdio import StdioClient  # noqa: E402

hub, conf, records, new_value = sys.argv[1:5]
c = StdioClient([hub, "serve", "--stdio", "--standalone", "--config", conf, "--answers", "allow"],
                stderr=open(os.path.join(os.environ["TMP"], "serve.err"), "w"))
c.initialize("rotate-probe")


def call(tool, args):
    r = c.request("tools/call", {"name": tool, "arguments": args}, timeout=30)
    return (r or {}).get("result", {}).get("structuredContent")


def last_auth():
    with open(records) as f:
        lines = f.read().splitlines()
    return json.loads(lines[-1])["headers"].get("authorization") if lines else None


def netproxy_cgroup():
    """The memory cgroup of the running hub's netproxy (its child) and that cgroup's limit."""
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
        cg = next((l[2] for l in lines if l[1] == "memory"), None) or \
            next((l[2] for l in lines if l[0] == "0"), None)
        for path in ("/sys/fs/cgroup/memory%s/memory.limit_in_bytes" % cg, "/sys/fs/cgroup%s/memory.max" % cg):
            if os.path.exists(path):
                return cg, open(path).read().strip()
        return cg, None
    return None, None


out = {}
env1 = call("probe__env", {})
out["netproxy_cgroup"], out["netproxy_memory_limit"] = netproxy_cgroup()
get = {"url": "https://api.github.com/before", "headers": {"Authorization": "Bearer ${GITHUB_TOKEN}"}}
call("probe__get", get)
out["before"] = last_auth()
subprocess.run([hub, "secrets", "set", "github", "--config", conf], input=new_value.encode(),
               check=True, stdout=subprocess.DEVNULL)
# The hub hears of the change (inotify) and tells netproxy: a bounded wait for the first
# request that carries it, each a whole request through the running spoke.
t0 = time.monotonic()
get["url"] = "https://api.github.com/after"
for i in range(100):
    call("probe__get", get)
    if last_auth() != out["before"]:
        break
    time.sleep(0.05)
out["after"] = last_auth()
out["requests_until_new"] = i + 1
out["seconds"] = round(time.monotonic() - t0, 3)
env2 = call("probe__env", {})
out["same_spoke"] = bool(env1 and env2 and env1["env"]["SPOKE_ID"] == env2["env"]["SPOKE_ID"])
out["same_standin"] = bool(env1 and env2 and env1["env"]["GITHUB_TOKEN"] == env2["env"]["GITHUB_TOKEN"])
c.close()
print(json.dumps(out))
