#!/usr/bin/env bash
# A cgroup per jail, from the attacker's side (issue 14, item 1). Each attack of
# tests/nsjail/memhog.c takes what RLIMIT_AS and RLIMIT_NPROC do not bound for the jail
# as a whole: System V shared memory created, touched and detached; memfds written and
# never mapped; a tmpfs filled; a crowd of spinning processes that stays after the
# program has answered. Each runs twice:
#   - with the jail's cgroup (--memory-mb 64, --pids 16, --cpu-percent 20): stopped,
#     and the host's own figures say so (host Shmem from /proc/meminfo, the cgroup's
#     memory peak and pids peak, the CPU time of the jail's processes);
#   - as a control with the cgroup off (and no shm limits in the ipc namespace): the
#     same attack takes what it asked for, so each assertion above can fail.
# Also: the status reason "memory", the jail's ipc namespace limits, SysV shm refused
# by the c preset unless a profile allows it, no cgroup directory left behind (nor one
# a killed monitor left, once the next jail has run), and
# where the jails' cgroups go (nsjail-lite/cgroup_base.c): many starts from this shell,
# one after another and at once, never move it or the jails one level deeper. Every
# check holds on cgroup v2 (a systemd host: tests/host runs this there) and on v1.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/lib-nsjail.sh"
require_root
MEMHOG=$BIN/tests/nsjail/memhog
# The cgroup made at each start and removed before the status (--no-cgroup-pool): the
# names and the leftovers checked below are that path's; test_cgroup_pool.sh runs the
# same attacks in cgroups of the pool.
printf '#!/bin/sh\nexec %q --no-cgroup-pool "$@"\n' "$NSJ" >"$TMP/nsjail-lite"
chmod +x "$TMP/nsjail-lite"
NSJ=$TMP/nsjail-lite
MIB=$((1024 * 1024))

# The shm syscalls, which the c preset no longer allows without a profile's say-so.
cat >"$TMP/shm.json" <<'EOF'
{"preset": "c", "allow": ["shmget", "shmat", "shmdt", "shmctl"]}
EOF

# watch LAUNCHER_PID OUT GATE: samples from the host, every 10 ms until the launcher
# exits, the host's Shmem and what the jail's cgroup (found through /proc/INIT/cgroup,
# INIT being the launcher's child) reports; writes one JSON object to OUT. The
# launcher waits on the fifo GATE until the watcher is ready: on a loaded machine
# python's start can outlast a jail's whole life.
# It runs at a higher priority than the jail: the control's crowd (40 spinners, no CPU
# quota) starved it on a 2-CPU machine under TCG, which then saw no process at all.
watch_jail() {
    nice -n -19 /usr/bin/python3 - "$1" "$2" "$3" <<'EOF'
import json, os, sys, time
launcher, out, gate = int(sys.argv[1]), sys.argv[2], sys.argv[3]
def read(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return None
def shmem_kb():
    for line in read("/proc/meminfo").splitlines():
        if line.startswith("Shmem:"):
            return int(line.split()[1])
mounts = {}
for line in read("/proc/self/mountinfo").splitlines():
    pre, post = line.split(" - ")
    f, (fstype, _src, sup) = pre.split(), post.split()[:3]
    if fstype == "cgroup2":
        mounts["v2"] = (f[4], f[3])
    elif fstype == "cgroup":
        for c in sup.split(","):
            mounts[c] = (f[4], f[3])
def cg_dirs(pid):
    dirs = {}
    for line in (read("/proc/%d/cgroup" % pid) or "").splitlines():
        _, ctls, path = line.split(":", 2)
        for c in (ctls.split(",") if ctls else ["v2"]):
            if c in mounts:
                mnt, root = mounts[c]
                dirs[c] = mnt + (path[len(root):] if root != "/" else path)
    return dirs
def ticks(pids):
    t = {}
    for p in pids:
        s = read("/proc/%s/stat" % p)
        if s:
            f = s[s.rindex(")") + 2:].split()
            t[p] = int(f[11]) + int(f[12])
    return t
def descendants(root):
    kids, found, todo = {}, [], [root]
    for p in os.listdir("/proc"):
        if p.isdigit():
            s = read("/proc/%s/stat" % p)
            if s:
                kids.setdefault(int(s[s.rindex(")") + 2:].split()[1]), []).append(int(p))
    while todo:
        for k in kids.get(todo.pop(), []):
            found.append(k)
            todo.append(k)
    return found
def jail_dir(d, ctl):
    for key in (ctl, "v2"):
        if "nsjail-lite-" in d.get(key, ""):
            return d[key]
res = {"shmem_peak_kb": shmem_kb(), "procs_peak": 0, "cg_mem_peak": 0, "cg_pids_peak": 0,
       "cpu": []}
with open(gate, "w") as g:
    g.write("go\n")
dirs, t0 = None, time.monotonic()
while os.path.exists("/proc/%d" % launcher) and time.monotonic() - t0 < 30:
    st = read("/proc/%d/stat" % launcher)
    if st and st[st.rindex(")") + 2] == "Z":
        break
    procs = descendants(launcher)
    # Until one of them is seen in the jail's cgroup: the first process seen may be
    # init before the monitor has moved it there.
    for p in procs if dirs is None else ():
        found = {c: jail_dir(cg_dirs(p), c) for c in ("memory", "pids", "cpu")}
        if any(found.values()):
            dirs = found
            res["dirs"] = found
            break
    res["shmem_peak_kb"] = max(res["shmem_peak_kb"], shmem_kb())
    res["procs_peak"] = max(res["procs_peak"], len(procs))
    res["cpu"].append((time.monotonic(), ticks(procs)))
    mem, pid = res.get("dirs", {}).get("memory"), res.get("dirs", {}).get("pids")
    v = mem and (read(mem + "/memory.max_usage_in_bytes") or read(mem + "/memory.peak"))
    if v:
        res["cg_mem_peak"] = max(res["cg_mem_peak"], int(v))
    v = pid and (read(pid + "/pids.peak") or read(pid + "/pids.current"))
    if v:
        res["cg_pids_peak"] = max(res["cg_pids_peak"], int(v))
    time.sleep(0.01)
# CPU: the jail's share of one CPU while its crowd was complete (from the first sample
# with the most processes to the last one), over the processes seen at both ends.
c = res.pop("cpu")
full = [x for x in c if len(x[1]) == res["procs_peak"]]
if len(full) > 4:
    a, b = full[0], full[-1]
    used = sum(b[1][p] - a[1][p] for p in b[1] if p in a[1])
    res["cpu_percent"] = round(100.0 * used / os.sysconf("SC_CLK_TCK") / max(b[0] - a[0], 0.01))
    res["cpu_window_ms"] = round(1000 * (b[0] - a[0]))
with open(out, "w") as f:
    json.dump(res, f)
EOF
}

# attack NAME NSJAIL_OPTIONS... -- MEMHOG_ARGS...: runs memhog in a jail under the
# watcher; sets RC, OUT (memhog's lines), STATUS (the status line), SHMEM_BASE_KB and
# W (the watcher's JSON).
attack() {
    local name=$1; shift
    local opts=()
    while [ "$1" != "--" ]; do opts+=("$1"); shift; done
    shift
    SHMEM_BASE_KB=$(awk '/^Shmem:/ {print $2}' /proc/meminfo)
    local gate=$TMP/$name.gate
    mkfifo "$gate"
    (
        read -r _ <"$gate"
        exec "$NSJ" --host-ids "$HOST_IDS" --status-fd 3 "${opts[@]}" --bind-ro "$MEMHOG:/memhog" \
            -- /memhog "$@" 3>"$TMP/$name.status" >"$TMP/$name.out" 2>"$TMP/$name.err" </dev/null
    ) &
    local pid=$!
    watch_jail "$pid" "$TMP/$name.watch" "$gate"
    wait "$pid"
    RC=$?
    OUT=$(cat "$TMP/$name.out")
    STATUS=$(cat "$TMP/$name.status")
    W=$(cat "$TMP/$name.watch")
    [ -s "$TMP/$name.err" ] && diag "$name stderr: $(head -c 300 "$TMP/$name.err")"
    diag "$name: $(tail -n 2 "$TMP/$name.out" | tr '\n' ' ')| status $STATUS | host: $W"
}
w() { jget "$1" <<<"$W"; }
shmem_grew_mb() { echo $(( ($(w 'd["shmem_peak_kb"]') - SHMEM_BASE_KB) / 1024 )); }
held() { awk '$1 == "holding" { print $2 }' <<<"$OUT"; }
shmem_right() { if [ "$1" = below ]; then [ "$3" -lt "$2" ]; else [ "$3" -ge "$2" ]; fi; }
# shmem_growth LABEL below|atleast MIB NAME ATTACK_ARGS...: ok when the host's Shmem grew
# by less than (below) or at least (atleast) MIB over the attack just run as NAME.
# Shmem is the whole host's: a test beside this one (make check beside make check) can
# add or free its own during one run, so a run on the wrong side is repeated, twice at
# most, and a run on the right side counts; what the jail itself keeps (or fails to
# keep) is there every time.
shmem_growth() {
    local label=$1 way=$2 mib=$3 name=$4 grew g try
    shift 4
    grew=$(shmem_grew_mb)
    for try in 2 3; do
        shmem_right "$way" "$mib" "$grew" && break
        diag "$label: host Shmem grew by $grew MiB; run $try (another process may hold or free some)"
        attack "$name-$try" "$@"
        g=$(shmem_grew_mb)
        shmem_right "$way" "$mib" "$g" && grew=$g
    done
    if shmem_right "$way" "$mib" "$grew"; then ok "$label: host Shmem grew by $grew MiB (${way/atleast/at least} $mib)"; else
        not_ok "$label: host Shmem grew by $grew MiB (wanted ${way/atleast/at least} $mib)"; fi
}

LIMITS=(--memory-mb 64 --pids 16 --cpu-percent 20)
OFF=(--memory-mb 0 --pids 0 --cpu-percent 0 --rlimit-as 0)

# Which hierarchy the jails' cgroups are in, as nsjail-lite says (-v), and whether that
# is the host's: v2 when the cgroup2 mount's root offers the memory controller.
v2_mnt=$(awk '$0 ~ / - cgroup2 / {print $5; exit}' /proc/self/mountinfo)
if [ -n "$v2_mnt" ] && grep -qw memory "$v2_mnt/cgroup.controllers" 2>/dev/null; then
    host_v=2
else
    host_v=1
fi
"$NSJ" -v --host-ids "$HOST_IDS" "${LIMITS[@]}" -- /bin/true 2>"$TMP/v.err" </dev/null
CGV=$(sed -n 's/.*cgroup v\([12]\) under .*/\1/p' "$TMP/v.err" | head -n 1)
is "the jails' cgroups are in the host's cgroup v$host_v hierarchy" "$CGV" "$host_v"
diag "$(grep -m1 'cgroup v' "$TMP/v.err")"

# cg_path PID CONTROLLER: PID's cgroup path in the hierarchy the jails use for CONTROLLER
# (v2: the one "0::" line; v1: the line that lists the controller).
cg_path() {
    if [ "$CGV" = 2 ]; then
        sed -n 's/^0:://p' "/proc/$1/cgroup"
    else
        grep -E "^[0-9]+:([a-z_,]*,)?$2(,[a-z_,]*)?:" "/proc/$1/cgroup" | cut -d: -f3-
    fi
}

# --- the ipc namespace's own limits, and the preset ---
host_shmmax=$(cat /proc/sys/kernel/shmmax)
out=$("$NSJ" --host-ids "$HOST_IDS" --memory-mb 64 -- /bin/sh -c \
    'echo $(cat /proc/sys/kernel/shmmax /proc/sys/kernel/shmall /proc/sys/kernel/shmmni)' 2>&1)
is "the jail's ipc namespace: shmmax, shmall and shmmni from the memory limit" "$out" \
    "$((64 * MIB)) $((64 * MIB / $(getconf PAGESIZE))) 64"
is "the host's shmmax is left alone" "$(cat /proc/sys/kernel/shmmax)" "$host_shmmax"
"$NSJ" --host-ids "$HOST_IDS" "${LIMITS[@]}" --bind-ro "$MEMHOG:/memhog" -- /memhog shm 8 0 \
    >"$TMP/preset.out" 2>&1 </dev/null
like "the c preset refuses System V shared memory (shmget: EPERM)" "$(cat "$TMP/preset.out")" \
    "stopped shmget Operation not permitted"

out=$("$NSJ" --host-ids "$HOST_IDS" "${LIMITS[@]}" -- /bin/cat /proc/self/cgroup 2>&1)
if [ "$CGV" = 2 ]; then
    is "the jail sees its own cgroup as / (a cgroup namespace), not the host's paths" "$out" "0::/"
else
    like "the jail sees its own cgroup as / (a cgroup namespace), not the host's paths" \
        "$(grep -E '^[0-9]+:memory:' <<<"$out")" '^[0-9]+:memory:/$'
fi
is "  and no jail's cgroup name in it" "$(grep -c 'nsjail-lite-' <<<"$out")" 0
own=$(cg_path $$ memory)
if [ "$own" = / ]; then
    skip "  and no host path of the caller's cgroup" "this shell is in the root cgroup"
else
    is "  and no host path of the caller's cgroup ($own)" "$(grep -cF -- "$own" <<<"$out")" 0
fi

# --- System V shm: created, touched and detached, 256 MiB against a 64 MiB limit ---
attack shm "${LIMITS[@]}" --seccomp "$TMP/shm.json" -- shm 256 300
unlike "shm: the jail never holds 256 MiB" "$(held)" "^256$"
is "shm: the jail is ended by the cgroup's OOM kill (reason memory)" "$STATUS" \
    '{"exit_code":137,"signal":9,"reason":"memory"}'
peak=$(( $(w 'd["cg_mem_peak"]') / MIB ))
if [ "$peak" -le 64 ] && [ "$peak" -gt 0 ]; then ok "shm: the cgroup's memory peak is $peak MiB (<= 64)"
else not_ok "shm: the cgroup's memory peak is $peak MiB"; fi
shmem_growth shm below 96 shm "${LIMITS[@]}" --seccomp "$TMP/shm.json" -- shm 256 300
attack shm-off "${OFF[@]}" --seccomp "$TMP/shm.json" -- shm 256 300
is "shm control (no cgroup): the jail holds all 256 MiB" "$(held)" 256
shmem_growth "shm control" atleast 240 shm-off "${OFF[@]}" --seccomp "$TMP/shm.json" -- shm 256 300

# --- memfd written with write(2), never mapped ---
attack memfd "${LIMITS[@]}" -- memfd 256 300
unlike "memfd: the jail never holds 256 MiB" "$(held)" "^256$"
is "memfd: reason memory" "$STATUS" '{"exit_code":137,"signal":9,"reason":"memory"}'
peak=$(( $(w 'd["cg_mem_peak"]') / MIB ))
if [ "$peak" -le 64 ] && [ "$peak" -gt 0 ]; then ok "memfd: the cgroup's memory peak is $peak MiB (<= 64)"
else not_ok "memfd: the cgroup's memory peak is $peak MiB"; fi
shmem_growth memfd below 96 memfd "${LIMITS[@]}" -- memfd 256 300
attack memfd-off "${OFF[@]}" -- memfd 256 300
is "memfd control (no cgroup): the jail holds all 256 MiB" "$(held)" 256

# --- a tmpfs filled (its own size allows 256 MiB; the jail's memory does not) ---
attack fill "${LIMITS[@]}" --tmpfs /big:256 -- fill /big 200 300
unlike "tmpfs: the jail never holds 200 MiB" "$(held)" "^200$"
is "tmpfs: reason memory" "$STATUS" '{"exit_code":137,"signal":9,"reason":"memory"}'
shmem_growth tmpfs below 96 fill "${LIMITS[@]}" --tmpfs /big:256 -- fill /big 200 300
attack fill-off "${OFF[@]}" --tmpfs /big:256 -- fill /big 200 300
is "tmpfs control (no cgroup): the jail holds all 200 MiB" "$(held)" 200

# --- a crowd of 40 spinning processes, kept after the program has answered ---
attack crowd "${LIMITS[@]}" -- crowd 40 800
got=$(awk '$1 == "got" { print $2 }' <<<"$OUT")
like "crowd: fork is refused at the cgroup's pids limit" "$OUT" "stopped fork Resource temporarily unavailable"
pk=$(w 'd["procs_peak"]')
if [ "$pk" -le 16 ]; then ok "crowd: at most $pk processes in the jail at once (<= 16; $got spinners)"
else not_ok "crowd: $pk processes in the jail at once"; fi
pk=$(w 'd["cg_pids_peak"]')
if [ "$pk" -le 16 ] && [ "$pk" -gt 0 ]; then ok "crowd: the cgroup's pids peak is $pk (<= 16)"; else
    not_ok "crowd: the cgroup's pids peak is $pk"; fi
cpu=$(w 'd.get("cpu_percent", -1)')
if [ "$cpu" -ge 0 ] && [ "$cpu" -le 35 ]; then ok "crowd: the jail's CPU is $cpu% of one CPU (quota 20%)"
else not_ok "crowd: the jail's CPU is $cpu% of one CPU (quota 20%)"; fi
attack crowd-off "${OFF[@]}" -- crowd 40 800
pk=$(w 'd["procs_peak"]')
if [ "$pk" -ge 40 ]; then ok "crowd control (no cgroup): $pk processes"; else
    not_ok "crowd control (no cgroup): only $pk processes"; fi
# (On a machine loaded by others the crowd may get little CPU without any quota: then
# the control cannot show anything, which is not the jail's fault.)
cpu=$(w 'd.get("cpu_percent", -1)')
if [ "$cpu" -ge 30 ]; then ok "crowd control (no cgroup): the jail's CPU is $cpu% of one CPU"
else skip "crowd control (no cgroup): CPU above the quota" "the machine is too loaded ($cpu%)"; fi

# --- a program that fails because the cgroup refused it a process: reason pids ---
"$NSJ" --host-ids "$HOST_IDS" --pids 8 --status-fd 3 -- /bin/sh -c \
    'i=0; while [ $i -lt 20 ]; do sleep 1 & i=$((i+1)); done; wait' 3>"$TMP/pids.status" \
    >/dev/null 2>&1 </dev/null
is "a shell that cannot fork beyond --pids 8 fails with reason pids" "$(cat "$TMP/pids.status")" \
    '{"exit_code":2,"signal":null,"reason":"pids"}'
"$NSJ" --host-ids "$HOST_IDS" --pids 8 --status-fd 3 -- /bin/sh -c 'exit 3' 3>"$TMP/pids.status" \
    >/dev/null 2>&1 </dev/null
is "  a program that fails on its own keeps an empty reason" "$(cat "$TMP/pids.status")" \
    '{"exit_code":3,"signal":null,"reason":""}'

# --- who is in the jail's cgroup: init and the program, from the host's side (v1: init
# moves itself in, nsjail-lite/cgroup.c); the launcher, which is the monitor, is not ---
"$NSJ" --host-ids "$HOST_IDS" --memory-mb 64 --pids 16 --cpu-percent 50 -- /bin/sleep 5 \
    >/dev/null 2>&1 </dev/null &
launcher=$!
at_exit "kill $launcher 2>/dev/null"
init=""
for _ in $(seq 100); do
    init=$(cat "/proc/$launcher/task/$launcher/children" 2>/dev/null | awk '{print $1}')
    prog=$([ -n "$init" ] && awk '{print $1}' "/proc/$init/task/$init/children" 2>/dev/null)
    [ -n "$prog" ] && break
    sleep 0.05
done
# (Not in it means neither the jail's cgroup nor below it: on a systemd host the monitor
# runs in a scope of its own, nsjail-lite-PID-*.scope, whose name alone says nothing.)
for c in memory pids cpu; do
    jail_cg=$(cg_path "$init" $c)
    like "init is in the jail's $c cgroup" "$jail_cg" "/nsjail-lite-$launcher-[0-9a-f]+\$"
    like "  and so is the program it started" "$(cg_path "$prog" $c)" "/nsjail-lite-$launcher-[0-9a-f]+\$"
    mon_cg=$(cg_path "$launcher" $c)
    if [ -n "$mon_cg" ] && [[ "$jail_cg" == */nsjail-lite-$launcher-* ]] &&
        [ "$mon_cg" != "$jail_cg" ] && [[ "$mon_cg" != "$jail_cg"/* ]]; then
        ok "  but not the monitor (the launcher, in $mon_cg)"
    else
        not_ok "  but not the monitor (the launcher): '$mon_cg' is the jail's '$jail_cg' or in it"
    fi
done
kill "$launcher" 2>/dev/null
wait "$launcher" 2>/dev/null

# --- where the jails' cgroups go, over many starts from this shell: one after another
# and 20 at once. The bug: on v2 each start moved the caller one cgroup deeper
# (leaf/leaf/...), and after about 58 no jail started. The shell is moved at most
# once (into its cgroup's nsjail-lite.leaf, where that cgroup is delegated to it),
# and every jail's cgroup is at the same depth. ---
shell_cg=$(cg_path $$ memory)
fails=0
: >"$TMP/bases"
for _ in $(seq 60); do
    "$NSJ" -v --host-ids "$HOST_IDS" "${LIMITS[@]}" -- /bin/true 2>"$TMP/seq.err" </dev/null ||
        { fails=$((fails + 1)); diag "$(grep -v '^nsjail-lite: \[' "$TMP/seq.err" | head -c 300)"; }
    sed -n 's/.*cgroup v[12] under //p' "$TMP/seq.err" | head -n 1 >>"$TMP/bases"
done
is "60 jails one after another from this shell: all ran" "$fails" 0
is "  every jail's cgroup at the same depth" "$(awk -F/ '{print NF}' "$TMP/bases" | sort -u | wc -l)" 1
diag "the last one's parent: $(tail -n 1 "$TMP/bases")"
after=$(cg_path $$ memory)
if [ "$after" = "$shell_cg" ] || [ "$after" = "${shell_cg%/}/nsjail-lite.leaf" ]; then
    ok "  and this shell is where it was, or in its cgroup's leaf ($after)"
else
    not_ok "  this shell moved from $shell_cg to $after"
fi
pids=()
for i in $(seq 20); do
    "$NSJ" --host-ids "$HOST_IDS" "${LIMITS[@]}" -- /bin/true 2>"$TMP/par-$i.err" </dev/null &
    pids+=($!)
done
good=0
for p in "${pids[@]}"; do wait "$p" && good=$((good + 1)); done
is "20 jails at once from this shell: all ran" "$good" 20
is "  no cgroup error from any" "$(cat "$TMP"/par-*.err | grep -c cgroup)" 0
is "  and this shell has not moved since" "$(cg_path $$ memory)" "$after"

# --- nothing left behind (under a scope systemd made for one launcher, the scope too) ---
mem_parent=$(jget 'd["dirs"]["memory"].rsplit("/", 1)[0]' <"$TMP/shm.watch")
left=$(find "$mem_parent" -maxdepth 1 -name "nsjail-lite-*" 2>/dev/null | while read -r d; do
    pid=${d##*/nsjail-lite-}; pid=${pid%%[-.]*}; [ -d "/proc/$pid" ] || echo "$d"; done)
is "no cgroup of an ended jail is left under $mem_parent" "$left" ""
if [[ "$mem_parent" == *.scope ]]; then
    refute "  and systemd removed the launcher's scope with its last process" test -d "$mem_parent"
fi

# --- a cgroup its monitor left (killed outright) is removed by the next jail under the
# same parent (cgroup_sweep, which runs while init builds the jail's root) ---
"$NSJ" -v --host-ids "$HOST_IDS" --memory-mb 64 -- /bin/true </dev/null 2>"$TMP/sweep.err"
sweep_parent=$(sed -n 's/.*cgroup v[12] under \(.*\)$/\1/p' "$TMP/sweep.err" | head -n1)
if [ -z "$sweep_parent" ] || [[ "$sweep_parent" == *.scope ]]; then
    skip "a stale cgroup is swept" "each launcher has a scope of its own ('$sweep_parent')"
else
    sh -c 'exit 0' &
    dead=$!
    wait "$dead"
    stale=$sweep_parent/nsjail-lite-$dead-0badc0de
    busy=$sweep_parent/nsjail-lite-$$-0badc0de # this shell is alive: its name is in use
    mkdir "$stale" "$busy"
    at_exit "rmdir '$stale' '$busy' 2>/dev/null"
    "$NSJ" --host-ids "$HOST_IDS" --memory-mb 64 -- /bin/true </dev/null
    is "a jail's start: exits 0" "$?" 0
    refute "  and the cgroup of a gone monitor (pid $dead) under its parent is removed" \
        test -d "$stale"
    check "  but not one whose monitor pid is alive" test -d "$busy"
fi

# --- a configured parent: the jail's cgroup goes there, and only there ---
cgp=/itest-cgroup-$$
at_exit "for d in /sys/fs/cgroup$cgp /sys/fs/cgroup/*$cgp; do rmdir \$d/nsjail-lite-* \$d; done"
"$NSJ" -v --host-ids "$HOST_IDS" --memory-mb 64 --pids 16 --cgroup-parent "$cgp" -- \
    /bin/cat /proc/self/cgroup >"$TMP/parent.out" 2>"$TMP/parent.err" </dev/null
like "--cgroup-parent $cgp: the jail's cgroup is made under it" "$(cat "$TMP/parent.err")" \
    "cgroup [^ ]*$cgp/nsjail-lite-[0-9]+-[0-9a-f]+: memory 64 MiB"
is "  and removed with the jail" \
    "$(find /sys/fs/cgroup"$cgp" /sys/fs/cgroup/*"$cgp" -mindepth 1 -maxdepth 1 -type d 2>/dev/null | wc -l)" 0

# --- a bad parent path is refused ---
"$NSJ" --host-ids "$HOST_IDS" --memory-mb 64 --cgroup-parent ../x -- /bin/true 2>"$TMP/err"
is "--cgroup-parent ../x: exit 125" "$?" 125
like "  and it says why" "$(cat "$TMP/err")" "cgroup parent"

done_testing
