"""Runs commands side by side, interleaved: each round runs every command once, in an
order shuffled anew each round, so that a busy moment of a shared machine, or the
teardown a command leaves behind it, falls on all of them alike. Prints one JSON object: per command its median, p10 and p90 wall
time in ms and how many runs failed; the caller makes the table and the ratios.

  interleave.py SPEC.json ROUNDS WARMUP

SPEC.json: [{"name": "...", "argv": ["prog", "arg", ...], "env": {...}, "settle_ms": N,
"fds": {"9": "FILE"}}, ...] (env is added to this process's environment; fds: FILE open
for reading at descriptor 9 in the command, read from its start each time, as a shell's
`9<FILE` would give it but without a shell in the timing; settle_ms, default 0, is a pause after
that command, outside every timing: a command whose daemon goes on working after it exits,
as dockerd tearing a container down, would otherwise bill that work to whichever command
the order puts next). Every command is started the same way (fork and
exec from Python, its output discarded), so the cost of starting it is in every figure
alike. Timing never fails anything: a command that exits non-zero is counted, and its
time is left out."""
import json
import random
import os
import statistics
import subprocess
import sys
import time


def pass_files(cmd):
    """The command's fds, open here at the same numbers and rewound (untimed)."""
    fds = []
    for num, path in cmd.get("fds", {}).items():
        n = int(num)
        fd = os.open(path, os.O_RDONLY)
        if fd != n:
            os.dup2(fd, n, inheritable=True)
            os.close(fd)
        os.set_inheritable(n, True)
        fds.append(n)
    return tuple(fds)


def run(cmd):
    env = dict(os.environ, **cmd.get("env", {}))
    fds = pass_files(cmd)
    t0 = time.perf_counter_ns()
    rc = subprocess.run(cmd["argv"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                        stderr=subprocess.DEVNULL, env=env, pass_fds=fds).returncode
    for n in fds:
        os.close(n)
    return (time.perf_counter_ns() - t0) / 1e6, rc


def main():
    spec = json.load(open(sys.argv[1]))
    rounds, warmup = int(sys.argv[2]), int(sys.argv[3])
    times = {c["name"]: [] for c in spec}
    failed = {c["name"]: 0 for c in spec}
    for r in range(warmup + rounds):
        # A fresh order each round (seeded by the round: the same run orders alike).
        # A rotation kept each command's predecessor fixed: the one after the slowest
        # (bwrap's node, whose teardown goes on after it exits) paid for it every round.
        order = list(spec)
        random.Random(r).shuffle(order)
        for cmd in order:
            ms, rc = run(cmd)
            time.sleep(cmd.get("settle_ms", 0) / 1000)
            if r < warmup:
                continue
            if rc != 0:
                failed[cmd["name"]] += 1
            else:
                times[cmd["name"]].append(ms)
    out = {}
    for c in spec:
        t = sorted(times[c["name"]])
        q = statistics.quantiles(t, n=10, method="inclusive") if len(t) >= 2 else t * 9 or [0] * 9
        out[c["name"]] = {"median_ms": statistics.median(t) if t else None,
                          "p10_ms": q[0], "p90_ms": q[-1], "runs": len(t),
                          "failed": failed[c["name"]]}
    print(json.dumps(out))


if __name__ == "__main__":
    main()
