#!/usr/bin/env bash
# The escape matrix (scripts/escape-matrix) as a test: the hostile spoke's attempts
# through the real hub in all three isolation modes, and the same attack written for
# Node under the node runtime. It must fail both ways:
#   - namespace mode blocks every attempt, each for its reason (the layer the
#     script infers from what it saw outside and from the errno), and so do the
#     `node` column and `node-exec` (each attempt made by a host program the Node
#     spoke may run, --exec: processes allowed, nothing else loosened);
#   - none mode lets the controls through (seen from outside: the file changed, the
#     bytes arrived, the process died...), for the C spoke and the Node spoke
#     (`node-none`), so a broken attack or harness cannot pass as "blocked";
#   - process mode: seccomp and the rlimits stop what they claim to, and no more.
# And the script leaves nothing behind.
# test-run: alone (its none-mode controls count spinning processes, which a busy CPU starves)
. "$(dirname "$0")/../lib.sh"
require_root
case "$BUILD" in
*san* | *fuzz*)
    # The hostile spoke's limits (RLIMIT_AS 256 MiB, the memory bomb) cannot hold
    # ASan's shadow memory; the plain build runs the matrix.
    skip "escape matrix" "not in a sanitizer build"
    exit 0
    ;;
esac

out=$TMP/matrix.json
"$ROOT/scripts/escape-matrix" --build "$BUILD" --json "$out" >"$TMP/table.md" 2>"$TMP/err"
rc=$?
is "escape-matrix ran without harness errors or mismatches" "$rc" 0
[ "$rc" -ne 0 ] && diag "$(tail -20 "$TMP/err")"
if [ ! -s "$out" ]; then
    not_ok "escape-matrix wrote its JSON"
    done_testing
    exit
fi

# verdict MODE ATTEMPT / cell MODE ATTEMPT
verdict() { /usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["modes"][sys.argv[2]][sys.argv[3]]["verdict"])' "$out" "$1" "$2"; }
cell() { /usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["modes"][sys.argv[2]][sys.argv[3]]["cell"])' "$out" "$1" "$2"; }
mapfile -t attempts < <(/usr/bin/python3 -c 'import json,sys; print("\n".join(json.load(open(sys.argv[1]))["modes"]["namespace"]))' "$out")
check "at least 25 attempts" test "${#attempts[@]}" -ge 25

# --- namespace: everything blocked ---
for a in "${attempts[@]}"; do
    is "namespace: $a blocked ($(cell namespace "$a"))" "$(verdict namespace "$a")" blocked
done
like "namespace: host files hidden by the mount namespace" "$(cell namespace read_host_file)" 'mount namespace'
like "namespace: other spokes invisible (pid namespace)" "$(cell namespace spoke_procmem)" 'pid namespace'
like "namespace: host loopback unreachable (net namespace)" "$(cell namespace tcp_loopback)" 'net namespace'
like "namespace: straight to a remote host: the gateway takes it, netproxy refuses it" \
    "$(cell namespace tcp_remote)" 'netproxy refused it \(ip-literal-not-allowed'
like "namespace: UDP to 127.0.0.1 stays on the jail's own loopback" \
    "$(cell namespace udp_loopback)" "jail's own loopback"
like "namespace: an unlisted domain refused by netproxy" "$(cell namespace proxy_unlisted)" 'netproxy \(domain-not-allowed\)'
like "namespace: an allowed domain on a private address refused by netproxy" \
    "$(cell namespace proxy_private)" 'netproxy \(forbidden-address\)'
like "namespace: the metadata address refused by netproxy" "$(cell namespace proxy_metadata)" 'netproxy'
like "namespace: the jail's init (a copy of the hub) cannot be read" \
    "$(cell namespace hub_memory_data)" 'ptrace access check'
like "namespace: the fork bomb stopped by RLIMIT_NPROC" "$(cell namespace fork_bomb)" 'rlimit nproc'
# issue 14: what no rlimit bounds for the spoke as a whole, measured on the host
like "namespace: System V shm refused by the c preset" "$(cell namespace shm_detached)" 'seccomp'
like "namespace: memfds written beyond the limit end at the cgroup's memory limit" \
    "$(cell namespace memfd_written)" 'cgroup memory limit.*host Shmem'
like "namespace: /tmp filled stops at its tmpfs size" "$(cell namespace tmpfs_fill)" 'tmpfs size'
like "namespace: the crowd left spinning stops at RLIMIT_NPROC" "$(cell namespace fork_crowd)" \
    'rlimit nproc.*host: [0-9]+ spinners'

# --- none and node-none: the controls succeed (seen from outside where the script can),
# for the C spoke and for the Node spoke's JavaScript and native-addon attacks alike ---
for column in none node-none; do
for a in read_host_file read_shadow read_checkout write_host_file spoke_data_read \
    spoke_data_write spoke_ptrace spoke_procmem kill_process llm_key_memory hub_memory_data \
    redis_read tcp_loopback tcp_remote udp_loopback abstract_unix proxy_unlisted mount \
    unshare_user setns bpf perf_event_open keyctl proc_sys_write dev_disk capabilities fork_bomb memory_bomb disk_bomb \
    shm_detached memfd_written tmpfs_fill fork_crowd; do
    is "$column: control $a succeeds" "$(verdict "$column" "$a")" succeeded
done
done
like "none: the outside check saw the file change" "$(cell none write_host_file)" 'seen outside'
like "none: the outside check saw the bytes arrive" "$(cell none tcp_remote)" 'seen outside'
if [ -e /proc/modules ]; then
    is "none: control kernel_module succeeds" "$(verdict none kernel_module)" succeeded
else
    is "none: kernel_module not applicable (no module support here)" "$(verdict none kernel_module)" "n/a"
fi
# The hub keeps the key out of every environment in every mode.
is "none: the LLM key in no environment" "$(verdict none llm_key_environ)" blocked

# --- node: the Node spoke under the node runtime in namespace mode, every attempt
# blocked, each for its reason (issue 15: a hostile Node program is contained) ---
for a in "${attempts[@]}"; do
    is "node: $a blocked ($(cell node "$a"))" "$(verdict node "$a")" blocked
done
for a in mount unshare_user setns bpf perf_event_open keyctl kernel_module shm_detached \
    memfd_written fork_bomb fork_crowd setuid_exec; do
    like "node: $a refused by the node preset" "$(cell node "$a")" 'seccomp \(EPERM\)'
done
like "node: host files hidden by the mount namespace" "$(cell node read_host_file)" 'mount namespace'
like "node: other spokes invisible (pid namespace)" "$(cell node spoke_ptrace)" 'pid namespace'
like "node: straight to a remote host: the gateway takes it, netproxy refuses it" \
    "$(cell node tcp_remote)" 'netproxy refused it \(ip-literal-not-allowed'
like "node: UDP to 127.0.0.1 stays on the jail's own loopback" "$(cell node udp_loopback)" \
    "jail's own loopback"
like "node: an unlisted domain refused by netproxy" "$(cell node proxy_unlisted)" \
    'netproxy \(domain-not-allowed\)'
like "node: the hub's memory behind the ptrace access check" "$(cell node hub_memory_data)" \
    'ptrace access check'
like "node: the memory bomb ends at the jail's cgroup" "$(cell node memory_bomb)" 'cgroup memory limit'
like "node: the disk bomb stopped by RLIMIT_FSIZE" "$(cell node disk_bomb)" 'rlimit fsize'
like "node: /tmp filled stops at its tmpfs size" "$(cell node tmpfs_fill)" 'tmpfs size'

# --- node-exec: every attempt made by a host program the Node spoke may run (--exec),
# under the node preset's +exec variant: processes allowed, nothing else loosened ---
for a in "${attempts[@]}"; do
    is "node-exec: $a blocked ($(cell node-exec "$a"))" "$(verdict node-exec "$a")" blocked
done
for a in mount unshare_user setns bpf perf_event_open keyctl kernel_module shm_detached; do
    like "node-exec: $a still refused by seccomp" "$(cell node-exec "$a")" 'seccomp \(EPERM\)'
done
like "node-exec: the fork bomb, which the preset now allows, ends at RLIMIT_NPROC" \
    "$(cell node-exec fork_bomb)" 'rlimit nproc'
like "node-exec: the setuid binary gains nothing" "$(cell node-exec setuid_exec)" 'no_new_privs'
like "node-exec: host files hidden by the mount namespace" "$(cell node-exec read_host_file)" \
    'mount namespace'
like "node-exec: straight out: the gateway takes it, netproxy refuses it" \
    "$(cell node-exec tcp_remote)" 'netproxy refused it'

# --- process: seccomp and rlimits, as claimed ---
for a in spoke_ptrace mount unshare_user setns bpf perf_event_open keyctl kernel_module; do
    like "process: $a blocked by seccomp" "$(cell process "$a")" 'seccomp'
done
like "process: memory bomb stopped by RLIMIT_AS" "$(cell process memory_bomb)" 'rlimit as'
is "process: memfds written are not stopped by RLIMIT_AS (no cgroup in process mode)" \
    "$(verdict process memfd_written)" succeeded
like "process: System V shm refused by the c preset" "$(cell process shm_detached)" 'seccomp'
like "process: disk bomb stopped by RLIMIT_FSIZE" "$(cell process disk_bomb)" 'rlimit fsize'
is "process: host files still readable (no mount namespace, as designed)" \
    "$(verdict process read_host_file)" succeeded

# --- the table, and nothing left behind ---
like "the table has a row per attempt and a column per mode" \
    "$(grep -c '^| [0-9]* | `' "$TMP/table.md")" "^${#attempts[@]}$"
like "a summary line per column" \
    "$(grep -c '^- \(none\|process\|namespace\|node\|node-none\|node-exec\): ' "$TMP/table.md")" '^6$'
prefix=$(/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["prefix"])' "$out")
id_base=$(/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["id_base"])' "$out")
pid=${prefix##*-}
is "no network namespace left" "$(ip netns list | grep -c "$prefix")" 0
is "no veth left (the test namespace's)" "$(ip -o link | grep -c "imx$pid")" 0
is "no mount left" "$(grep -c "$prefix" /proc/mounts)" 0
is "no work directory left" "$(ls -d /tmp/"$prefix".* 2>/dev/null | wc -l)" 0
is "no process left" "$(ps -eo args | grep -c "[/]$prefix")" 0
leftover_locks=0
for ((i = 0; i < 64; i++)); do
    [ -e "/run/nsjail-lite/id-$((id_base + i)).lock" ] && leftover_locks=$((leftover_locks + 1))
done
is "no host-id lock file left" "$leftover_locks" 0
done_testing
