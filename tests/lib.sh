# Shared helpers for shell tests. Source it first: `. "$(dirname "$0")/../lib.sh"`.
#
# Assertions print TAP-style lines that tests/run counts. Everything a test starts is
# registered for cleanup (processes by pid, namespaces, links, temp dirs), which runs
# on every exit, also when the test fails or is interrupted.
set -u
ROOT=${ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
BUILD=${BUILD:-build}
BIN=${BIN:-$ROOT/$BUILD}
TEST_NAME=$(basename "$0" .sh)
TMP=$(mktemp -d "/tmp/isolate-${TEST_NAME}.XXXXXX")
_cleanups=()
_failures=0

ok() { echo "ok - $*"; }
# not_ok fails (status 1), so is, like, check and the others fail with it and
# `is ... || diag "$(cat log)"` shows the log on failure only.
not_ok() { echo "not ok - $*"; _failures=$((_failures + 1)); return 1; }
skip() { echo "ok - $1 # SKIP ${2:-}"; }
diag() { echo "# $*"; }

# check DESC CMD...: passes when CMD succeeds.
check() {
    local desc=$1; shift
    if "$@" >/dev/null 2>&1; then ok "$desc"; else not_ok "$desc (command failed: $*)"; fi
}
# refute DESC CMD...: passes when CMD fails.
refute() {
    local desc=$1; shift
    if "$@" >/dev/null 2>&1; then not_ok "$desc (command succeeded: $*)"; else ok "$desc"; fi
}
# is DESC GOT EXPECTED
is() {
    if [ "$2" == "$3" ]; then ok "$1"; else not_ok "$1: got '$2', expected '$3'"; fi
}
# like DESC GOT REGEX
like() {
    if [[ "$2" =~ $3 ]]; then ok "$1"; else not_ok "$1: '$2' does not match /$3/"; fi
}
unlike() {
    if [[ "$2" =~ $3 ]]; then not_ok "$1: '$2' matches /$3/"; else ok "$1"; fi
}

# at_exit CMD: run CMD (a string for eval) at exit, last registered first.
at_exit() { _cleanups+=("$1"); }
_run_cleanups() {
    local i
    for ((i = ${#_cleanups[@]} - 1; i >= 0; i--)); do
        eval "${_cleanups[$i]}" >/dev/null 2>&1 || true
    done
    rm -rf "$TMP"
}
trap _run_cleanups EXIT
trap 'exit 130' INT TERM

# bg CMD...: start CMD in the background, register it for killing, set BG_PID.
bg() {
    "$@" &
    BG_PID=$!
    at_exit "kill -9 $BG_PID; wait $BG_PID"
}

# wait_for DESC TIMEOUT_S CMD...: poll CMD every 50 ms until it succeeds.
wait_for() {
    local desc=$1 limit=$2; shift 2
    local deadline=$(( $(date +%s%N) + limit * 1000000000 ))
    until "$@" >/dev/null 2>&1; do
        if [ "$(date +%s%N)" -gt "$deadline" ]; then
            diag "timed out waiting for $desc"
            return 1
        fi
        sleep 0.05
    done
}

# pids_by_exe PATTERN: the pids of processes whose executable's path matches the shell
# pattern. One find for the whole scan: a readlink per process takes seconds on a loaded
# machine, long enough for a test's window (a call's deadline) to close meanwhile.
pids_by_exe() {
    find /proc -mindepth 2 -maxdepth 2 -name exe -lname "$1" 2>/dev/null | cut -d/ -f3
}

# free_port: a TCP port on loopback that nobody listens on right now.
free_port() {
    /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# test_netns NAME: create a network namespace removed at exit and set NETNS to its
# name. Call it directly, not as $(test_netns ...): a subshell would register the
# cleanup in the subshell, where it never runs.
test_netns() {
    NETNS="itest-$1-$$"
    ip netns add "$NETNS" && at_exit "ip netns del $NETNS"
    ip -n "$NETNS" link set lo up
}

# test_cert NAME...: a test CA made now ($TMP/ca.pem) and a server certificate it signed
# for the DNS names given ($TMP/srv.pem, key $TMP/srv.key), for stand-in HTTPS upstreams.
test_cert() {
    local san
    san=$(printf 'DNS:%s,' "$@")
    openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj "/CN=itest $TEST_NAME CA" \
        -keyout "$TMP/ca.key" -out "$TMP/ca.pem" >/dev/null 2>&1
    openssl req -newkey rsa:2048 -nodes -subj "/CN=$1" \
        -keyout "$TMP/srv.key" -out "$TMP/srv.csr" >/dev/null 2>&1
    printf 'subjectAltName=%s\n' "${san%,}" >"$TMP/san.ext"
    openssl x509 -req -in "$TMP/srv.csr" -CA "$TMP/ca.pem" -CAkey "$TMP/ca.key" \
        -CAcreateserial -days 1 -extfile "$TMP/san.ext" -out "$TMP/srv.pem" >/dev/null 2>&1
}

# jget EXPR: a Python expression over d (the JSON on stdin); objects, lists, booleans
# and null are printed as JSON, anything else as is.
jget() {
    /usr/bin/python3 -c 'import json,sys
d = json.loads(sys.stdin.read())
v = eval(sys.argv[1], {"d": d})
print(json.dumps(v) if isinstance(v, (dict, list, bool)) or v is None else v)' "$1"
}

# audit_count FILTER [FILE]: the records of a JSON-lines audit log (FILE, default
# $AUDIT) for which FILTER, a Python expression over r, is true; g(r, "a.b") reads a
# dotted field (None when absent).
audit_count() {
    /usr/bin/python3 -c 'import json,sys
sys.path.insert(0, sys.argv[3])
from mcp_stdio import field as g
print(sum(1 for line in open(sys.argv[2]) if eval(sys.argv[1], {"r": json.loads(line), "g": g})))' \
        "$1" "${2:-$AUDIT}" "$ROOT/tests/serve"
}

# audit_at_least N FILTER [FILE]: true when at least N records match FILTER (as
# audit_count). For wait_for, which runs its command anew each time: a "$(audit_count
# ...)" argument would be counted once, when wait_for is called, and never again.
audit_at_least() {
    [ "$(audit_count "$2" "${3:-$AUDIT}")" -ge "$1" ]
}

# require_cmds PROG...: the test is skipped, not failed, when a program it needs is not
# installed (make deps installs them all).
require_cmds() {
    local p
    for p in "$@"; do
        if ! command -v "$p" >/dev/null; then
            skip "$TEST_NAME" "$p is missing (make deps)"
            exit 0
        fi
    done
}

require_root() {
    if [ "$(id -u)" -ne 0 ]; then
        skip "$TEST_NAME" "needs root"
        exit 0
    fi
}

# done_testing: exit status reflects the assertions.
done_testing() {
    [ "$_failures" -eq 0 ]
}
