"""The hub keeps a spoke's synthetic addresses across a netproxy restart: through `hub
serve --stdio` (argv), the egress spoke resolves a name, netproxy is killed, the hub
starts it again, and the name still has its address while a new name gets a new one.
Prints TAP lines (tests/hub/test_hub_egress.sh)."""
import json
import os
import signal
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "../serve"))
from mcp_stdio import StdioClient  # noqa: E402

failures = 0


def ok(cond, what, why=""):
    global failures
    failures += 0 if cond else 1
    print(("ok - " if cond else "not ok - ") + "restart: " + what +
          ("" if cond or not why else ": %s" % why), flush=True)


def netproxy_pids(hub_pid):
    out = []
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            stat = open("/proc/%s/stat" % p).read()
            exe = os.readlink("/proc/%s/exe" % p)
        except OSError:
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == hub_pid and exe.endswith("/netproxy"):
            out.append(int(p))
    return out


cl = StdioClient(sys.argv[1:], stderr=None)
cl.initialize("egress-restart")
tools = [t["name"] for t in cl.request("tools/list", {})["result"]["tools"]]
lookup = next((t for t in tools if t.endswith("lookup")), None)
ok(lookup is not None, "the egress spoke's lookup is offered", str(tools))


def resolve(name):
    r = cl.request("tools/call", {"name": lookup, "arguments": {"name": name}}, timeout=30)
    try:
        return json.loads(r["result"]["content"][0]["text"]).get("addresses", [None])[0]
    except (KeyError, TypeError, IndexError, ValueError):
        return "no answer: %s" % json.dumps(r)[:300]


first = resolve("www.allowed.example")
ok(first and first.startswith("240.240."), "a name gets a synthetic address", first)
pids = netproxy_pids(cl.p.pid)
ok(len(pids) == 1, "the hub runs one netproxy", pids)
for p in pids:
    os.kill(p, signal.SIGKILL)
deadline = time.monotonic() + 20
new = []
while time.monotonic() < deadline:
    new = [p for p in netproxy_pids(cl.p.pid) if p not in pids]
    if new:
        break
    time.sleep(0.05)
ok(new, "the hub starts netproxy again")
# The restarted proxy takes the spoke's sockets from the hub; until then the query
# waits in the resolver socket's queue (or is retried by glibc).
again = resolve("www.allowed.example")
ok(again == first, "after the restart the name has the same address", "%s then %s" % (first, again))
other = resolve("api.allowed.example")
ok(other and other.startswith("240.240.") and other != first,
   "a new name gets an address no earlier name had", other)
cl.close()
sys.exit(1 if failures else 0)
