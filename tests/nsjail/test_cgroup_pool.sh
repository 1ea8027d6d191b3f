#!/usr/bin/env bash
# The pool of cgroups made ahead (nsjail-lite/cgroup_pool.c, issue 40), on whichever
# hierarchy the host has (v1 here, v2 in the VM test). Every jail of this test goes
# under a cgroup parent of its own (/itest-cgpool-PID), so its pool is its own and
# everything is removed at the end:
#   - the first start makes its cgroup and leaves the pool filled (4 by default), each
#     slot limited and empty; the next start claims one (one rename), the slot is used
#     once and removed after the jail, and the pool is refilled with new ones;
#   - the limits hold in a claimed slot, from the attacker's side: a memfd hog is
#     OOM-killed at 64 MiB (reason memory), a crowd is refused forks at 16 pids; the
#     ready slots never show one jail's counters to the next;
#   - 64 jails started at once from a pool of 64 each claim their own slot, and each
#     one's pids limit holds;
#   - a slot left by a killed nsjail-lite (and a fake one of a dead pid) is reclaimed
#     by the next refill, not while a process is still in it, and never claimed;
#   - the pool's bound: never more ready slots than asked for, a smaller size trims it,
#     --no-cgroup-pool neither claims nor refills, a pool idle for 10 minutes is drained.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/lib-nsjail.sh"
require_root
MEMHOG=$BIN/tests/nsjail/memhog
MIB=$((1024 * 1024))
POOLS=/run/nsjail-lite/cgpool

CGP=/itest-cgpool-$$
LIMITS=(--memory-mb 64 --pids 16 --cpu-percent 50 --cgroup-parent "$CGP")
# The parent's directory in each hierarchy, as nsjail-lite makes it (v1: one per
# controller's mount; v2: the one under the cgroup2 mount).
parents() { ls -d /sys/fs/cgroup"$CGP" /sys/fs/cgroup/*"$CGP" 2>/dev/null; }
KEYS=()
remove_everything() {
    local p k d
    for p in $(parents); do
        for d in "$p"/*/; do [ -d "$d" ] && rmdir "$d"; done
        rmdir "$p"
    done
    for k in "${KEYS[@]}"; do [[ "$k" =~ ^[0-9a-f]{16}$ ]] && rm -rf "${POOLS:?}/$k"; done
    return 0
}
at_exit remove_everything

# jail ERR_FILE NSJAIL_OPTIONS... -- PROGRAM...: one jail with -v and the test's limits.
jail() {
    local err=$1; shift
    "$NSJ" -v --host-ids "$HOST_IDS" "${LIMITS[@]}" "$@" 2>"$err" </dev/null
}
key_of() { sed -n 's/.*cgroup pool \([0-9a-f]\{16\}\): .*/\1/p' "$1" | head -n 1; }
claimed_of() { sed -n 's/.*cgroup pool [0-9a-f]*: claimed slot \([0-9a-f]\{8\}\).*/\1/p' "$1"; }
ready() { ls "$POOLS/$KEY" 2>/dev/null | grep -c '\.ready$'; }
busy_tokens() { ls "$POOLS/$KEY" 2>/dev/null | grep -c -E '^[0-9a-f]{8}\.(prep|taken)\.'; }
slot_dirs() { for p in $(parents); do ls -d "$p"/nsjail-pool-"$KEY"-* 2>/dev/null; done; }
# settle N: waits (10 s at most) until the helpers are done: N ready slots, no other
# token (the ones a test planted itself excepted: EXTRA).
EXTRA=0
settle() {
    local i
    for i in $(seq 200); do
        [ "$(ready)" = "$1" ] && [ "$(busy_tokens)" = "$EXTRA" ] && return 0
        sleep 0.05
    done
    diag "pool $KEY: $(ls "$POOLS/$KEY" 2>/dev/null | tr '\n' ' ')"
    return 1
}
NPARENTS=$(jail "$TMP/first.err" -- /bin/true; parents | wc -l)

# --- the first start: no pool yet; it makes its own cgroup and fills the pool ---
KEY=$(key_of "$TMP/first.err")
KEYS+=("$KEY")
like "the first start under $CGP has a pool key" "$KEY" '^[0-9a-f]{16}$'
like "  and no ready slot: it makes its own cgroup" "$(cat "$TMP/first.err")" \
    "(no ready slot|none yet): making the cgroup"
check "  after it, the pool has 4 ready slots (the default size)" settle 4
is "  each with a directory in each of the $NPARENTS hierarchies" "$(slot_dirs | wc -l)" \
    $((4 * NPARENTS))
is "  and its own cgroup is gone" "$(for p in $(parents); do ls -d "$p"/nsjail-lite-* 2>/dev/null; done)" ""
# The limits are written, and each slot is empty and unused.
bad=""
for d in $(slot_dirs); do
    case $d in
    */memory/*) [ "$(cat "$d/memory.limit_in_bytes")" = $((64 * MIB)) ] || bad+=" $d:limit"
        [ "$(cat "$d/memory.max_usage_in_bytes")" = 0 ] || bad+=" $d:usage" ;;
    */pids/*) [ "$(cat "$d/pids.max")" = 16 ] || bad+=" $d:pids" ;;
    */cpu/*) [ "$(cat "$d/cpu.cfs_quota_us")" = 50000 ] || bad+=" $d:cpu" ;;
    *) # v2: one directory for every controller
        [ "$(cat "$d/memory.max")" = $((64 * MIB)) ] || bad+=" $d:limit"
        [ "$(cat "$d/pids.max")" = 16 ] || bad+=" $d:pids"
        [ "$(cat "$d/cpu.max")" = "50000 100000" ] || bad+=" $d:cpu" ;;
    esac
    [ -z "$(cat "$d/cgroup.procs")" ] || bad+=" $d:procs"
done
is "  every slot has the limits written, and no process" "$bad" ""

# --- the next start claims a slot: the jail's processes are in it, its token names
# the monitor, and after the jail it is gone for good (used once) ---
before=$(ls "$POOLS/$KEY" | sed -n 's/\.ready$//p' | sort | tr '\n' ' ')
"$NSJ" -v --host-ids "$HOST_IDS" "${LIMITS[@]}" -- /bin/sleep 5 2>"$TMP/claim.err" </dev/null &
launcher=$!
at_exit "kill $launcher"
init=""
for _ in $(seq 100); do
    init=$(awk '{print $1}' "/proc/$launcher/task/$launcher/children" 2>/dev/null)
    [ -n "$init" ] && grep -q 'moves itself\|cloned into' "$TMP/claim.err" && break
    sleep 0.05
done
id=$(claimed_of "$TMP/claim.err")
like "the second start claims a ready slot" "$id" '^[0-9a-f]{8}$'
like "  one of those that were ready" "$before" "(^| )$id( |$)"
check "  its token names the monitor ($launcher)" test -e "$POOLS/$KEY/$id.taken.$launcher"
# On v1 the monitor logs "moves itself" before init has written itself into the slot
# (init.c, cgroup_enter): wait for the move, not for the line.
in_slot() { grep -c "nsjail-pool-$KEY-$id\$" "/proc/$init/cgroup" 2>/dev/null; }
wait_for "init in the slot" 5 eval '[ "$(in_slot)" = "$NPARENTS" ]'
is "  init is in the slot in each hierarchy" "$(in_slot)" "$NPARENTS"
kill "$launcher"
wait "$launcher" 2>/dev/null
check "  after the jail, the pool is refilled to 4" settle 4
is "  and the used slot is removed, token and directories" \
    "$(ls "$POOLS/$KEY" | grep -c "^$id\."; slot_dirs | grep -c -- "-$id\$")" "0
0"

# --- inside, a claimed slot is "/" (the cgroup namespace) and its name is not seen ---
out=$(jail "$TMP/inside.err" -- /bin/cat /proc/self/cgroup)
like "a jail in a claimed slot" "$(claimed_of "$TMP/inside.err")" '^[0-9a-f]{8}$'
is "  sees no pool name or key in its /proc/self/cgroup" \
    "$(grep -c -e nsjail-pool -e "$KEY" <<<"$out")" 0
settle 4 >/dev/null

# --- the limits hold in a claimed slot (memhog, as test_cgroup.sh runs it) ---
jail "$TMP/memfd.err" --status-fd 3 --bind-ro "$MEMHOG:/memhog" -- /memhog memfd 256 300 \
    3>"$TMP/memfd.status" >"$TMP/memfd.out"
like "memfd hog in a claimed slot" "$(claimed_of "$TMP/memfd.err")" '^[0-9a-f]{8}$'
is "  is ended by the cgroup's OOM kill (reason memory)" "$(cat "$TMP/memfd.status")" \
    '{"exit_code":137,"signal":9,"reason":"memory"}'
unlike "  and never holds 256 MiB" "$(awk '$1 == "holding" {print $2}' "$TMP/memfd.out")" '^256$'
jail "$TMP/crowd.err" --status-fd 3 --bind-ro "$MEMHOG:/memhog" -- /memhog crowd 40 300 \
    3>"$TMP/crowd.status" >"$TMP/crowd.out"
like "a crowd of 40 in a claimed slot" "$(claimed_of "$TMP/crowd.err")" '^[0-9a-f]{8}$'
like "  is refused forks at the pids limit" "$(cat "$TMP/crowd.out")" \
    "stopped fork Resource temporarily unavailable"
got=$(awk '$1 == "got" {print $2}' "$TMP/crowd.out")
if [ -n "$got" ] && [ "$got" -lt 16 ]; then ok "  and got $got spinners (< 16)"; else
    not_ok "  got '$got' spinners"; fi
check "  the pool is refilled to 4" settle 4
dirty=""
for d in $(slot_dirs); do
    for f in memory.max_usage_in_bytes memory.failcnt memory.peak pids.current; do
        [ -e "$d/$f" ] && [ "$(cat "$d/$f")" != 0 ] && dirty+=" $d/$f=$(cat "$d/$f")"
    done
    [ -e "$d/pids.events" ] && grep -qv ' 0$' "$d/pids.events" && dirty+=" $d/pids.events"
    [ -e "$d/memory.events" ] && grep -q '^oom_kill [1-9]' "$d/memory.events" && dirty+=" $d/oom"
done
is "  and no ready slot shows the hogs' counters (peaks, failures, pids, events)" "$dirty" ""

# --- 64 jails at once from a pool of 64: each claims its own slot, each limit holds
# (a shell forking 20 sleeps against --pids 8 fails: reason pids) ---
jail "$TMP/fill.err" --cgroup-pool 64 --pids 8 -- /bin/true
OLDKEY=$KEY KEY=$(key_of "$TMP/fill.err")
KEYS+=("$KEY")
check "a pool of 64 is filled" settle 64
pids=()
for i in $(seq 64); do
    jail "$TMP/j$i.err" --cgroup-pool 64 --pids 8 --status-fd 3 -- /bin/sh -c \
        'i=0; while [ $i -lt 20 ]; do sleep 1 & i=$((i+1)); done; wait' \
        3>"$TMP/j$i.status" >/dev/null &
    pids+=($!)
done
for p in "${pids[@]}"; do wait "$p"; done
cat "$TMP"/j*.err | sed -n 's/.*cgroup pool \([0-9a-f]*\): claimed slot \([0-9a-f]\{8\}\).*/\1 \2/p' \
    >"$TMP/claims"
is "64 jails at once: each claimed a slot" "$(awk -v k="$KEY" '$1 == k' "$TMP/claims" | wc -l)" 64
is "  no two the same slot" "$(sort -u "$TMP/claims" | wc -l)" 64
is "  each with its pids limit in force (reason pids, 64 times)" \
    "$(cat "$TMP"/j*.status | grep -c '"reason":"pids"')" 64
check "  then their pool is refilled to 64" settle 64
KEY64=$KEY
KEY=$OLDKEY

# --- a pool idle for more than 10 minutes (its token directory unchanged) is drained by
# the next helper of another key ---
touch -d '-11 minutes' "$POOLS/$KEY64"
jail "$TMP/expire.err" -- /bin/true
for _ in $(seq 200); do
    [ -d "$POOLS/$KEY64" ] || break
    sleep 0.05
done
refute "a pool idle for 11 minutes is drained at another key's next exit: its tokens" \
    test -d "$POOLS/$KEY64"
is "  and its 64 slots' directories" "$(KEY=$KEY64 slot_dirs | wc -l)" 0
check "  while the pool in use stays (4)" settle 4

# --- the bound: a smaller size trims the pool; --no-cgroup-pool neither claims nor
# refills, and removes its cgroup before exiting ---
jail "$TMP/trim.err" --cgroup-pool 2 -- /bin/true
check "the next start asking for 2 trims the pool to 2" settle 2
is "  and leaves 2 slots' directories" "$(slot_dirs | wc -l)" $((2 * NPARENTS))
jail "$TMP/nopool.err" --no-cgroup-pool -- /bin/true
unlike "--no-cgroup-pool: no claim" "$(cat "$TMP/nopool.err")" "cgroup pool"
sleep 0.3
is "  the pool as it was (2)" "$(ready)" 2
is "  and no cgroup of its own left" \
    "$(for p in $(parents); do ls -d "$p"/nsjail-lite-* 2>/dev/null; done)" ""

# --- stale slots: a killed nsjail-lite's, and fake ones of a dead pid (one being made,
# one taken, with a process still in the taken one) ---
"$NSJ" -v --host-ids "$HOST_IDS" "${LIMITS[@]}" --cgroup-pool 2 -- /bin/sleep 30 \
    2>"$TMP/killed.err" </dev/null &
victim=$!
for _ in $(seq 100); do
    grep -q 'program started' "$TMP/killed.err" && break
    sleep 0.05
done
vid=$(claimed_of "$TMP/killed.err")
kill -9 "$victim"
wait "$victim" 2>/dev/null
like "a jail killed with its monitor had claimed a slot" "$vid" '^[0-9a-f]{8}$'
for _ in $(seq 100); do # its init follows the monitor (death signal)
    [ -z "$(for d in $(slot_dirs | grep -- "-$vid\$"); do cat "$d/cgroup.procs"; done)" ] && break
    sleep 0.05
done
check "  its token stays, naming the dead monitor" test -e "$POOLS/$KEY/$vid.taken.$victim"
sh -c 'exit 0' &
dead=$!
wait "$dead"
for p in $(parents); do mkdir "$p/nsjail-pool-$KEY-0badc0de" "$p/nsjail-pool-$KEY-0badf00d"; done
touch "$POOLS/$KEY/0badc0de.prep.$dead" "$POOLS/$KEY/0badf00d.taken.$dead"
sleep 60 &
squatter=$!
at_exit "kill $squatter"
first=$(parents | head -n 1)
echo "$squatter" >"$first/nsjail-pool-$KEY-0badf00d/cgroup.procs"
EXTRA=1 # the occupied fake stays
claims=""
for i in 1 2 3; do
    jail "$TMP/after$i.err" --cgroup-pool 2 -- /bin/true
    claims+=" $(claimed_of "$TMP/after$i.err")"
    settle 2 >/dev/null
done
unlike "the next starts never claim a stale slot" "$claims" "$vid|0badc0de|0badf00d"
is "  the killed jail's slot is reclaimed (token, directories)" \
    "$(ls "$POOLS/$KEY" | grep -c "^$vid\."; slot_dirs | grep -c -- "-$vid\$")" "0
0"
is "  so is a dead process's slot in the making" \
    "$(ls "$POOLS/$KEY" | grep -c '^0badc0de\.'; slot_dirs | grep -c -- '-0badc0de$')" "0
0"
check "  but not a dead process's slot with a process still in it" \
    test -e "$POOLS/$KEY/0badf00d.taken.$dead" -a -d "$first/nsjail-pool-$KEY-0badf00d"
kill "$squatter"
wait "$squatter" 2>/dev/null
EXTRA=0
jail "$TMP/after4.err" --cgroup-pool 2 -- /bin/true
check "  which the next refill reclaims once it is empty" settle 2
is "  (its directories too)" "$(slot_dirs | grep -c -- '-0badf00d$')" 0

# --- nothing left: the test's pools, then its parent ---
remove_everything
is "after the test: no directory of its pools or parent left" "$(parents | wc -l)" 0
is "  and no token directory" "$(for k in "${KEYS[@]}"; do ls -d "$POOLS/$k" 2>/dev/null; done)" ""

done_testing
