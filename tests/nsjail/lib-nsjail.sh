# Helpers shared by the nsjail-lite test scripts. Source after tests/lib.sh.
NSJ=$BIN/nsjail-lite
HOSTILE=$BIN/tests/nsjail/hostile

# The host's namespace inodes, for the hostile program's mutating-attempt guard.
host_ns_list() {
    local t out=""
    for t in mnt uts pid net user ipc; do
        out+="$t:$(readlink "/proc/$$/ns/$t" | tr -dc 0-9),"
    done
    echo "${out%,}"
}

# veth_pair N: a /30 inside 169.254.100.0/22 (the part of the link-local pool these
# tests own), chosen from the test's pid so that concurrent runs do not collide.
# Sets VETH_HOST (address), VETH_SPOKE, VETH_ARG (for --net).
veth_pair() {
    local slot=$(( ($$ * 7 + $1) % 256 ))
    local third=$(( 100 + slot / 64 )) fourth=$(( (slot % 64) * 4 ))
    VETH_HOST=169.254.$third.$((fourth + 1))
    VETH_SPOKE=169.254.$third.$((fourth + 2))
    VETH_ARG="veth:$VETH_HOST/30,$VETH_SPOKE/30"
}

# A host id range of the test's own, so its lock files can be checked afterwards; they
# are removed at exit (a lock file still held by someone is left alone).
HOST_IDS_BASE=$(( 3000000 + ($$ % 4096) * 64 ))
HOST_IDS="$HOST_IDS_BASE:64"
remove_id_locks() {
    local i
    for ((i = 0; i < 64; i++)); do
        local f=/run/nsjail-lite/id-$((HOST_IDS_BASE + i)).lock
        [ -e "$f" ] && flock -n -x "$f" rm -f "$f"
    done
    return 0
}
at_exit remove_id_locks

# start_server OUT CMD...: run a hostile helper server in the background and wait
# until it prints "ready".
start_server() {
    local out=$1; shift
    bg "$@" >"$out" 2>&1
    wait_for "server $*" 10 grep -q ready "$out"
}
