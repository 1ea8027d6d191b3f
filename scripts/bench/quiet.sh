# Sourced by benchmarks: wait_quiet LABEL [MAX_S] waits until the CPUs are idle before a
# timed section, so that what the section before it left behind (servers shutting down,
# a daemon's teardown, the kernel's deferred cleanup of namespaces and cgroups) is not
# billed to the first commands timed. Quiet is two 0.5 s windows in a row with the CPUs
# at least 90% idle (from /proc/stat); after MAX_S (default 30) seconds it goes on
# anyway. Either way it prints, on stderr, how busy the CPUs were when it went on: a
# table's reader sees the load the section started under.
wait_quiet() {
    local label=$1 max=${2:-30}
    /usr/bin/python3 - "$label" "$max" <<'PYEOF' >&2
import sys, time
label, max_s = sys.argv[1], float(sys.argv[2])
def sample():
    with open("/proc/stat") as f:
        cols = [int(x) for x in f.readline().split()[1:]]
    return sum(cols), cols[3] + cols[4]  # all ticks, idle + iowait
start = time.monotonic()
calm, busy = 0, 100.0
t0, i0 = sample()
while calm < 2 and time.monotonic() - start < max_s:
    time.sleep(0.5)
    t1, i1 = sample()
    busy = 100.0 * (1 - (i1 - i0) / max(t1 - t0, 1))
    calm = calm + 1 if busy <= 10 else 0
    t0, i0 = t1, i1
waited = time.monotonic() - start
state = "quiet" if calm >= 2 else "still busy"
print("  %s: CPUs %.0f%% busy, %s after %.1f s" % (label, busy, state, waited))
PYEOF
}
