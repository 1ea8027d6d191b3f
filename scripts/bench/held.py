"""A node spoke from a held node (a manifest's "warm": true, hub/runtime/held.h) against
node's own start, for scripts/bench/serve's cold section. Prints one JSON object of
medians (ms), p10/p90 and failures; the caller makes the table. Timing never fails.

  held.py jail ROUNDS NSJAIL PROFILE LOADER NODE HOST_IDS
      nsjail-lite with the node profile, held: the jail made and node booted on the
      hub's loader, waiting for its go; timed from the go (a newline on stdin) to the
      jail's exit, for an empty entry file. Beside it in the same rounds, each started
      the same way (fork and exec from Python): bare `node -e 0`, bare `node EMPTY.js`,
      and the same jail cold (`node -e 0` in it).
  held.py hub ROUNDS AUDIT HUB-ARGV...
      `hub serve --stdio` (HUB-ARGV) with the minimal node server (scripts/bench/
      node-minimal-spoke.js) as two apps, both stopped after idle_s 1: minwarm (warm:
      its next instance held) and mincold (started by the call). Timed from the client's
      tools/call to its answer, each after its app's spoke stopped; beside them, bare
      node running the same server, from spawn to the answer of its first tools/call.
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../tests/serve"))
from mcp_stdio import StdioClient, reading_stdin, wait_until  # noqa: E402  tests/serve's

HELD_JAIL_PATH = "/etc/isolategpt/held-node.cjs"
BARE_ENV = {"PATH": "/usr/bin:/bin", "HOME": "/nonexistent"}


def summary(times, failed):
    t = sorted(times)
    q = statistics.quantiles(t, n=10, method="inclusive") if len(t) >= 2 else t * 9 or [0] * 9
    return {"median_ms": statistics.median(t) if t else None, "p10_ms": q[0], "p90_ms": q[-1],
            "runs": len(t), "failed": failed}


def children(pid):
    try:
        with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
            return [int(c) for c in f.read().split()]
    except OSError:
        return []


def descendants(pid):
    out, todo = [], [pid]
    while todo:
        for c in children(todo.pop()):
            out.append(c)
            todo.append(c)
    return out


def held_waiting(root):
    """True when a node process under root (a jail's monitor) waits for its go."""
    for p in descendants(root):
        try:
            exe = os.readlink("/proc/%d/exe" % p)
        except OSError:
            continue
        if os.path.basename(exe) in ("node", "nodejs") and reading_stdin(p):
            return True
    return False


def held_ready(root, limit=10.0):
    """Waits until a node process under root waits for its go; whether it came to."""
    return wait_until(lambda: held_waiting(root), limit, step=0.01)


def run_timed(argv):
    t0 = time.perf_counter_ns()
    rc = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                        stderr=subprocess.DEVNULL, env=BARE_ENV).returncode
    return (time.perf_counter_ns() - t0) / 1e6, rc


def jail(rounds, nsj, profile, loader, node, ids):
    tmp = tempfile.mkdtemp(prefix="isolate-bench-held.")
    os.chmod(tmp, 0o755)
    empty = os.path.join(tmp, "empty.js")
    open(empty, "w").close()
    os.chmod(empty, 0o644)
    jail_argv = [nsj, "--host-ids", ids, "--profile", profile]
    cmds = {
        "bare node -e 0": [node, "-e", "0"],
        "bare node empty.js": [node, empty],
        "nsjail-lite (node profile) node -e 0, cold": jail_argv + ["--", node, "-e", "0"],
    }
    held_argv = jail_argv + ["--bind-ro", "%s:%s" % (loader, HELD_JAIL_PATH), "--bind-ro", tmp,
                             "--", node, HELD_JAIL_PATH, empty]
    names = list(cmds) + ["held"]
    times = {n: [] for n in names}
    failed = {n: 0 for n in names}
    for r in range(rounds + 2):  # two rounds of warm-up
        k = r % len(names)
        for name in names[k:] + names[:k]:
            if name == "held":
                p = subprocess.Popen(held_argv, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL, env=BARE_ENV)
                ready = held_ready(p.pid)
                time.sleep(0.05)  # what setting it up left to do, not timed
                t0 = time.perf_counter_ns()
                try:
                    p.stdin.write(b"\n")
                    p.stdin.close()
                except BrokenPipeError:
                    pass
                rc = p.wait()
                ms = (time.perf_counter_ns() - t0) / 1e6
                if not ready:
                    rc = rc or 1
            else:
                ms, rc = run_timed(cmds[name])
            if r < 2:
                continue
            if rc != 0:
                failed[name] += 1
            else:
                times[name].append(ms)
    os.unlink(empty)
    os.rmdir(tmp)
    out = {n: summary(times[n], failed[n]) for n in names}
    out["nsjail-lite (node profile), held node: go to exit of empty.js"] = out.pop("held")
    return out


def records(audit, action, app):
    try:
        rs = [json.loads(line) for line in open(audit) if line.strip()]
    except FileNotFoundError:
        return []
    return [r for r in rs if r.get("event", {}).get("action") == action and
            r.get("isolate", {}).get("app") == app]


def bare_first_call(node, server):
    """bare node running the server: spawn to the answer of its first tools/call."""
    t0 = time.perf_counter_ns()
    p = subprocess.Popen([node, server], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, env=BARE_ENV)
    msgs = [{"jsonrpc": "2.0", "id": 1, "method": "initialize",
             "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                        "clientInfo": {"name": "bench", "version": "1"}}},
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
             "params": {"name": "echo", "arguments": {"message": "ping"}}}]
    p.stdin.write(json.dumps(msgs[0]).encode() + b"\n")
    p.stdin.flush()
    ok = b'"id":1' in p.stdout.readline()
    p.stdin.write(b"".join(json.dumps(m).encode() + b"\n" for m in msgs[1:]))
    p.stdin.flush()
    ok = ok and b'"id":2' in p.stdout.readline()
    ms = (time.perf_counter_ns() - t0) / 1e6
    p.stdin.close()
    p.wait()
    return ms, ok


def hub(rounds, audit, argv):
    node = "/usr/bin/node"
    server = os.path.join(os.path.dirname(os.path.abspath(__file__)), "node-minimal-spoke.js")
    cl = StdioClient(argv)
    cl.initialize("bench-held")
    names = {"warm": "minwarm", "cold": "mincold"}
    times = {k: [] for k in ("warm", "cold", "bare")}
    failed = {k: 0 for k in times}

    def call(app):
        t0 = time.perf_counter_ns()
        r = cl.request("tools/call", {"name": app + "__echo", "arguments": {"message": "ping"}},
                       timeout=60)
        ms = (time.perf_counter_ns() - t0) / 1e6
        return ms, bool(r and "result" in r and not r["result"].get("isError"))

    for app in names.values():  # each spoke's first start, untimed
        call(app)
    for r in range(rounds):
        for kind in (("warm", "cold", "bare") if r % 2 == 0 else ("bare", "cold", "warm")):
            if kind == "bare":
                ms, ok = bare_first_call(node, server)
            else:
                app = names[kind]
                # Its spoke stopped for idleness (idle_s 1), and for warm the next held.
                stopped = wait_until(lambda: len(records(audit, "spoke-kill", app)) > r, step=0.01)
                ready = True
                if kind == "warm":
                    # The newest hold on record, once its node waits (the session's own
                    # hold, taken by the first call, is older and gone).
                    def newest_waits():
                        holds = records(audit, "spoke-hold", app)
                        pid = holds[-1].get("process", {}).get("pid") if holds else None
                        return bool(pid) and held_waiting(pid)
                    ready = wait_until(newest_waits, step=0.01)
                time.sleep(0.05)
                ms, ok = call(app)
                ok = ok and stopped and ready
            if ok:
                times[kind].append(ms)
            else:
                failed[kind] += 1
    cl.close()
    warm_starts = [r for r in records(audit, "spoke-start", "minwarm")
                   if r.get("isolate", {}).get("spoke", {}).get("warm")]
    return {
        "hub serve: first tools/call after an idle stop, warm (held node)":
            dict(summary(times["warm"], failed["warm"]), taken_from_held=len(warm_starts)),
        "hub serve: first tools/call after an idle stop, cold": summary(times["cold"], failed["cold"]),
        "bare node, the same server: spawn to its first tools/call answered":
            summary(times["bare"], failed["bare"]),
    }


def main():
    what, rounds = sys.argv[1], int(sys.argv[2])
    if what == "jail":
        print(json.dumps(jail(rounds, *sys.argv[3:8])))
    elif what == "hub":
        print(json.dumps(hub(rounds, sys.argv[3], sys.argv[4:])))
    else:
        sys.exit("usage: held.py jail|hub ROUNDS ...")


if __name__ == "__main__":
    main()
