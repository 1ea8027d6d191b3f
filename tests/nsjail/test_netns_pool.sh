#!/usr/bin/env bash
# The pool of network namespaces made ahead for --net none (nsjail-lite/netns_pool.c).
# The test runs in a mount namespace of its own (the pool is kept per mount namespace),
# so its pool is its own, whatever else runs beside it, and dies with it:
#   - after a jail the pool holds 4 ready namespaces; the next jail claims one, which
#     leaves the pool for good, and the pool is refilled;
#   - from inside: only loopback, and it is up; none of the pool's mounts is seen; the
#     namespace is not the host's, and it belongs to the host's user namespace (nothing
#     in the jail ever holds CAP_NET_ADMIN over it; --no-netns-pool: the jail's own);
#   - two jails at once never share one: a listener in one is not reached from the other;
#   - what the pool directory might hold besides its own making (a plain file, the host's
#     own namespace bound there) is dropped, never entered, and the jail gets a fresh
#     namespace all the same; an entry whose maker died is swept by the next refill;
#   - --no-netns-pool neither claims nor touches the pool.
if [ -z "${NETNS_POOL_TEST_NS:-}" ] && [ "$(id -u)" = 0 ]; then
    exec env NETNS_POOL_TEST_NS=1 unshare -m --propagation private bash "$0" "$@"
fi
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/lib-nsjail.sh"
require_root

POOL=/run/nsjail-lite/netns/$(stat -Lc %i /proc/self/ns/mnt)
# A pools' helper (nsjail-cgpool) still running in this mount namespace: the last
# jail's may still be refilling after the jail has ended.
helpers_here() {
    local p own
    own=$(readlink /proc/self/ns/mnt)
    for p in $(pgrep -x nsjail-cgpool); do
        [ "$(readlink "/proc/$p/ns/mnt" 2>/dev/null)" = "$own" ] && return 0
    done
    return 1
}
drop_pool() { # everything of this test's pool: its mounts (in this namespace), its files
    local f
    wait_for "the last refill of this test's pool" 10 eval '! helpers_here'
    for f in "$POOL"/*.ns; do [ -e "$f" ] && umount -l "$f" 2>/dev/null; done
    rm -rf "$POOL"
}
at_exit drop_pool
# A directory under this new namespace's inode can only be a dead namespace's that had
# the same inode (the kernel reuses them): its files are no pool of ours.
rm -rf "$POOL"
HOST_NET=$(readlink /proc/self/ns/net)
ready() { ls "$POOL" 2>/dev/null | grep -c '\.ready$'; }
jail() { "$NSJ" --host-ids "$HOST_IDS" --bind-ro "$HOSTILE:/hostile" "$@"; }
# The user namespace that owns PID's network namespace, as "host", "jail" or its inode.
net_owner() {
    /usr/bin/python3 - "$1" <<'PY'
import fcntl, os, sys
NS_GET_USERNS = 0xB701
fd = os.open(f"/proc/{sys.argv[1]}/ns/net", os.O_RDONLY)
owner = os.fstat(fcntl.ioctl(fd, NS_GET_USERNS)).st_ino
own = os.stat(f"/proc/{sys.argv[1]}/ns/user").st_ino
print("host" if owner == os.stat("/proc/self/ns/user").st_ino else "jail" if owner == own else owner)
PY
}
# init_of LAUNCHER: the jail's init, once the launcher has cloned it.
init_of() {
    local i
    for i in $(seq 100); do
        init=$(awk '{print $1}' "/proc/$1/task/$1/children" 2>/dev/null)
        [ -n "$init" ] && { echo "$init"; return; }
        sleep 0.05
    done
}

# --- the first jail: no pool yet; after it, 4 ready namespaces ---
jail -v -- /bin/true 2>"$TMP/first.err"
like "the first jail finds no pool and makes its namespace in clone()" "$(cat "$TMP/first.err")" \
    'network namespace pool: none yet'
wait_for "the refill" 10 eval '[ "$(ready)" = 4 ]'
is "after it, 4 ready namespaces" "$(ready)" 4
mounted=0
for f in "$POOL"/*.ns; do [ "$(stat -fc %T "$f")" = nsfs ] && mounted=$((mounted + 1)); done
is "  each an nsfs mount" "$mounted" 4

# --- a claim: the namespace leaves the pool; inside, loopback only, and up ---
# (--net none refuses inet sockets: loopback's state shows as its IPv6 address, which
# the kernel gives it once it is up; in the same jail, a listener on an abstract socket
# answers, the control for the check between two jails below.)
out=$(jail -v -- /bin/sh -c '/hostile serve-unix @pool-$$ >/dev/null & sleep 0.3
/hostile --abstract pool-$$ run abstract_unix; readlink /proc/self/ns/net
echo "ifaces $(tail -n +3 /proc/net/dev | wc -l)"
echo "lo6 $(grep -c " lo$" /proc/net/if_inet6 2>/dev/null)"
echo "pool mounts $(grep -c -e nsjail-lite/netns -e " nsfs " /proc/self/mountinfo)"' 2>"$TMP/claim.err")
id=$(sed -n 's/.*network namespace pool: claimed \([0-9a-f]\{8\}\).*/\1/p' "$TMP/claim.err")
like "the next jail claims a ready namespace" "$id" '^[0-9a-f]{8}$'
like "  a listener on an abstract socket answers inside it" "$out" 'abstract_unix ok'
like "  loopback is its only interface" "$out" 'ifaces 1'
like "  none of the pool's mounts is seen inside" "$out" 'pool mounts 0'
if [ -e /proc/net/if_inet6 ]; then
    like "  loopback is up (it has ::1)" "$out" 'lo6 1'
else
    skip "  loopback is up (it has ::1)" "no IPv6 in this kernel"
fi
inside=$(grep '^net:' <<<"$out")
like "  it is a network namespace" "$inside" '^net:\[[0-9]+\]$'
isnt() { if [ "$2" != "$3" ]; then ok "$1"; else not_ok "$1: both '$2'"; fi; }
isnt "  and not the host's" "$inside" "$HOST_NET"
is "  the claimed one has left the pool (token and mount)" "$(ls "$POOL" | grep -c "^$id\.")" 0
wait_for "the refill" 10 eval '[ "$(ready)" = 4 ]'
is "  and the pool is refilled to 4" "$(ready)" 4

# --- whose namespace it is: the host's user namespace owns a pooled one ---
"$NSJ" --host-ids "$HOST_IDS" -- /bin/sleep 3 </dev/null >/dev/null 2>&1 &
launcher=$!
at_exit "kill $launcher 2>/dev/null"
init=$(init_of "$launcher")
is "a pooled namespace belongs to the host's user namespace" "$(net_owner "$init")" host
wait "$launcher"
"$NSJ" --host-ids "$HOST_IDS" --no-netns-pool -- /bin/sleep 3 </dev/null >/dev/null 2>&1 &
launcher=$!
init=$(init_of "$launcher")
is "  (--no-netns-pool: the jail's own user namespace owns it)" "$(net_owner "$init")" jail
wait "$launcher"

# --- two jails at once: two namespaces ---
"$NSJ" --host-ids "$HOST_IDS" --bind-ro "$HOSTILE:/hostile" -- /bin/sh -c \
    "readlink /proc/self/ns/net; exec /hostile serve-unix @pool-a-$$" >"$TMP/a.out" 2>/dev/null &
a=$!
at_exit "kill $a 2>/dev/null"
wait_for "jail a listening" 5 grep -q ready "$TMP/a.out"
b=$(jail -- /bin/sh -c "readlink /proc/self/ns/net; /hostile --abstract pool-a-$$ run abstract_unix" \
    2>/dev/null)
like "a jail beside one listening on an abstract socket cannot reach it" "$b" \
    'abstract_unix errno:ECONNREFUSED'
isnt "  their namespaces differ" "$(head -n 1 "$TMP/a.out")" "$(head -n 1 <<<"$b")"
kill "$a"
wait "$a" 2>/dev/null

# --- planted entries: never entered; the jail gets a fresh namespace all the same ---
wait_for "the refill" 10 eval '[ "$(ready)" = 4 ]'
# Set the pool's own ready ones aside (taken by this live shell: not swept, not claimed).
for t in "$POOL"/*.ready; do mv "$t" "${t%.ready}.taken.$$"; done
touch "$POOL/0badc0de.ns" "$POOL/0badc0de.ready"        # a plain file
touch "$POOL/0badf00d.ns"
mount --bind /proc/self/ns/net "$POOL/0badf00d.ns"       # the host's own namespace
touch "$POOL/0badf00d.ready"
out=$(jail -v -- /bin/sh -c 'readlink /proc/self/ns/net' 2>"$TMP/planted.err")
is "two planted entries are both dropped" \
    "$(grep -c 'is not a fresh network namespace: dropped' "$TMP/planted.err")" 2
like "  and the jail makes its own in clone()" "$(cat "$TMP/planted.err")" 'no ready namespace'
like "  it runs in a network namespace" "$out" '^net:\[[0-9]+\]$'
isnt "  never the host's" "$out" "$HOST_NET"
is "  the planted entries are gone, mount and all" \
    "$(ls "$POOL" | grep -c '^0bad'; grep -c 0badf00d /proc/self/mountinfo)" "0
0"

# The host's namespace alone as the one ready entry: the claim's check is all that
# stands between the jail and the host's network.
for t in "$POOL"/*.ready; do mv "$t" "${t%.ready}.taken.$$"; done
touch "$POOL/0badf00e.ns"
mount --bind /proc/self/ns/net "$POOL/0badf00e.ns"
touch "$POOL/0badf00e.ready"
out=$(jail -v -- /bin/sh -c 'readlink /proc/self/ns/net' 2>"$TMP/hostns.err")
like "the host's namespace as the only ready entry is dropped" "$(cat "$TMP/hostns.err")" \
    'is not a fresh network namespace: dropped'
isnt "  and the jail does not run in it" "$out" "$HOST_NET"

# --- an entry whose maker is gone is swept by the next refill ---
sh -c 'exit 0' &
dead=$!
wait "$dead"
touch "$POOL/0badbeef.prep.$dead" "$POOL/0badbeef.ns"
jail -- /bin/true
wait_for "the sweep" 10 eval '! ls "$POOL" | grep -q ^0badbeef'
is "a dead maker's entry is swept by the next refill" "$(ls "$POOL" | grep -c '^0badbeef')" 0

# --- --no-netns-pool: no claim, and the pool as it was ---
wait_for "the refill" 10 eval '[ "$(ready)" = 4 ]'
before=$(ls "$POOL" | sort | tr '\n' ' ')
jail -v --no-netns-pool -- /bin/true 2>"$TMP/nopool.err"
unlike "--no-netns-pool: no claim" "$(cat "$TMP/nopool.err")" 'network namespace pool'
sleep 0.3
is "  and the pool as it was" "$(ls "$POOL" | sort | tr '\n' ' ')" "$before"
done_testing
