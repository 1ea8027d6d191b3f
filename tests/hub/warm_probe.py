"""A node spoke restarted from a held node (a manifest's "warm": true), through `hub
serve --stdio` (argv), from the attacker's side: the spoke (tests/hub/warm_spoke.mjs)
plants a file and a detached process, goes idle, and the instance that answers next
must be a fresh jail that had booted node before it was needed but loaded none of the
server's code until the call, and sees nothing of the one before. Reads the hub's audit
log (AUDIT) and the spoke's /data/loads on the host (LOADS); ENTRY is the server's entry
as the jail sees it (its manifest's command[1]: a tree under /tmp is bound elsewhere).
Prints TAP lines (tests/hub/test_warm.sh).
  warm_probe.py AUDIT LOADS ENTRY HUB-ARGV..."""
import json
import os
import signal
import sys
import time
import uuid

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "../serve"))
from mcp_stdio import StdioClient, field as g, reading_stdin, wait_until as wait  # noqa: E402

audit, loads_path, SCRIPT = sys.argv[1:4]


def ok(cond, what, why=""):
    print(("ok - " if cond else "not ok - ") + "warm: " + what +
          ("" if cond or not why else ": %s" % (why if isinstance(why, str) else json.dumps(why))[:600]),
          flush=True)


def records(action, **eq):
    try:
        rs = [json.loads(line) for line in open(audit) if line.strip()]
    except FileNotFoundError:
        return []
    return [r for r in rs if g(r, "event.action") == action and g(r, "isolate.app") == "warm"
            and all(g(r, k.replace("__", ".")) == v for k, v in eq.items())]


def loads():
    try:
        return len(open(loads_path).read().split())
    except FileNotFoundError:
        return 0


def host_cmdlines(needle):
    """Host processes whose command line contains needle (this test's own markers), this
    probe (whose argv names the entry) aside."""
    out = []
    for p in os.listdir("/proc"):
        if p.isdigit() and int(p) != os.getpid():
            try:
                cmd = open("/proc/%s/cmdline" % p, "rb").read().decode(errors="replace")
            except OSError:
                continue
            if needle in cmd:
                out.append(cmd.split("\0"))
    return out


def held_waiting():
    """True once a held node has booted and waits for its go."""
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            cmd = open("/proc/%s/cmdline" % p, "rb").read().decode(errors="replace")
        except OSError:
            continue
        if "/etc/isolategpt/held-node.cjs" in cmd and reading_stdin(int(p)):
            return True
    return False


cl = StdioClient(sys.argv[4:], stderr=None)
cl.initialize("warm-probe")
names = [t["name"] for t in cl.request("tools/list", {})["result"]["tools"]]
tool = {n.split("__")[-1]: n for n in names if n.startswith("warm")}


def call(name, args=None):
    r = cl.request("tools/call", {"name": tool[name], "arguments": args or {}}, timeout=60)
    try:
        return json.loads(r["result"]["content"][0]["text"])
    except (KeyError, TypeError, IndexError, ValueError):
        return {"no answer": r}


BEFORE = None  # the starts on record before this hub (hub spokes add's own run)


def started():
    return records("spoke-start", event__outcome="success")[BEFORE:]


BEFORE = len(started())
# The session opened: the app's spoke is held before any call.
ok(wait(lambda: records("spoke-hold")), "the session opens: the warm app's spoke is held")
ok(wait(lambda: host_cmdlines("/etc/isolategpt/held-node.cjs"), 20),
   "... node running the hub's loader, before the server's entry", host_cmdlines("node"))
held_cmd = (host_cmdlines("/etc/isolategpt/held-node.cjs") or [[]])[0]
ok(held_cmd[2:3] == [SCRIPT], "... whose next argument is the server's entry", held_cmd)
ok(wait(held_waiting, 30), "... booted, and waiting for its go in read(0)")
time.sleep(1.0)
ok(loads() == 0, "while held (a second), none of the server's code has loaded", loads())
first = call("whoami")
ok(first.get("loads") == 1 and len(started()) == 1, "the first call is answered", first)
ok(g(started()[-1], "isolate.spoke.warm") is True, "... by the held node", started()[-1:])
ok(len(records("spoke-hold")) == 1, "... and nothing else is held while it runs")
token = "warm-planted-" + uuid.uuid4().hex
planted = call("plant", {"token": token})
ok(isinstance(planted.get("pid"), int), "the spoke plants a file in /tmp and a detached child", planted)

# idle_s 1: stopped, then the next instance is held.
ok(wait(lambda: records("spoke-kill", event__reason="idle")), "the idle spoke is stopped")
ok(wait(lambda: len(records("spoke-hold")) == 2),
   "... and the next instance is held (spoke-hold on record)")
hold = records("spoke-hold")[-1] if records("spoke-hold") else {}
ok(wait(lambda: host_cmdlines("/etc/isolategpt/held-node.cjs"), 20), "the held node runs")
ok(wait(held_waiting, 30), "... booted, and waiting for its go")
time.sleep(1.0)
ok(loads() == 1, "while held (a second), none of the server's code has loaded", loads())
ok(wait(lambda: not host_cmdlines(token), 10),
   "the planted child did not outlive its jail", host_cmdlines(token))

second = call("whoami")
start = started()[-1] if started() else {}
ok(second.get("loads") == 2, "the next call is answered by a new instance", second)
ok(g(start, "isolate.spoke.warm") is True, "... taken from the held node (spoke-start warm)", start)
ok(g(start, "isolate.spoke.id") == g(hold, "isolate.spoke.id") and g(hold, "isolate.spoke.id"),
   "... the instance the hold record named", [g(start, "isolate.spoke.id"), g(hold, "isolate.spoke.id")])
ok(second.get("argv") == first.get("argv") and second.get("exec_argv") == [] and second.get("main"),
   "the server sees the argv of a plain start, no node options, and is node's main module",
   [first.get("argv"), second.get("argv"), second.get("exec_argv"), second.get("main")])
ok(second.get("tmp") == [] and second.get("planted") is None,
   "nothing planted before reaches it: /tmp is empty, no state carried over", second.get("tmp"))
ok(len(second.get("cmdlines", [])) == len(first.get("cmdlines", [])) and
   not any(token in " ".join(c) for c in second.get("cmdlines", [])),
   "its pid namespace holds what the first one's did, and no planted process",
   second.get("cmdlines"))
ok(second.get("env_keys") == first.get("env_keys"), "its environment has the same names",
   [first.get("env_keys"), second.get("env_keys")])

# A crash of a spoke that had started is followed by a hold, too.
call("exit")
ok(wait(lambda: len(records("spoke-hold")) == 3), "a spoke that exits after starting is held again")
# A held node that dies is not replaced (no loop of holds), and the next call starts cold.
hold2 = records("spoke-hold")[-1] if len(records("spoke-hold")) == 3 else {}
pid = g(hold2, "process.pid")
if isinstance(pid, int):
    os.kill(pid, signal.SIGKILL)
ok(wait(lambda: not host_cmdlines("/etc/isolategpt/held-node.cjs"), 20), "the held node is killed")
time.sleep(1.0)
ok(len(records("spoke-hold")) == 3, "... and no other is held in its place", len(records("spoke-hold")))
third = call("whoami")
start = started()[-1] if started() else {}
ok(third.get("loads") == 3 and g(start, "isolate.spoke.warm") is None,
   "the next call starts the spoke cold, and is answered", [third.get("loads"), start])
ok(third.get("argv") == second.get("argv") and third.get("exec_argv") == [] and
   third.get("env_keys") == second.get("env_keys") and third.get("main"),
   "a held node's server saw the argv, options and environment names of this plain start",
   [third.get("argv"), second.get("argv"), third.get("env_keys")])
# Held a second after it had booted: node was up about that much longer when the
# server loaded than in a cold start (whatever node's own boot takes on this machine).
ok(second.get("uptime_at_load", 0) - third.get("uptime_at_load", 9) >= 0.5,
   "the held node had booted well before its server loaded (against the cold start)",
   [second.get("uptime_at_load"), third.get("uptime_at_load")])
ok(len(third.get("cmdlines", [])) == len(second.get("cmdlines", [])),
   "... and as many processes in its pid namespace", [third.get("cmdlines"), second.get("cmdlines")])
cl.close()
ok(wait(lambda: not host_cmdlines(SCRIPT), 10), "no process of the spoke outlives the hub",
   host_cmdlines(SCRIPT))
