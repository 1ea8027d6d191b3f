# Helpers for the repl-server's end-to-end tests; source after tests/lib.sh.
#
# Each test gets its own copies of the code app's manifest (with absolute paths), of
# the pyexec spoke (so that "is any of its processes left?" has an unambiguous
# answer: the interpreter's command line names this copy), its own data root, run
# directory, audit log and a hub.json naming them, and a host id range of its own.

PY=/usr/bin/python3
SPOKES=$TMP/spokes
BINDIR=$TMP/bin
DATA=$TMP/data
RUN=$TMP/run
AUDIT=$TMP/audit.jsonl
CONF=$TMP/hub.json
HOST_ID_BASE=$((900000 + ($$ % 4000) * 64))
CASES=$ROOT/tests/pyexec/cases.py

pyexec_setup() { # [ISOLATION]
    mkdir -p "$SPOKES" "$BINDIR"
    cp "$BIN/spokes/pyexec" "$BINDIR/"
    $PY - "$ROOT/config/spokes/code.json" "$SPOKES/code.json" "$ROOT/config/profiles/python.json" <<'EOF'
import json, sys
m = json.load(open(sys.argv[1]))
m["profile"] = sys.argv[3]
json.dump(m, open(sys.argv[2], "w"), indent=1)
EOF
    $PY - <<EOF
import json
json.dump({
    "isolation": "${1:-namespace}",
    "user": "tester",
    "spokes_dir": "$SPOKES",
    "spoke_bin_dir": "$BINDIR",
    "data_root": "$DATA",
    "run_dir": "$RUN",
    "audit": "$AUDIT",
    "start_timeout_ms": 20000,
    "network": {"host_id_base": $HOST_ID_BASE, "host_id_count": 64},
}, open("$CONF", "w"), indent=1)
EOF
}

# start_server ARGS...: starts `hub repl-server` on a free loopback port; sets SRV_PID,
# PORT. Stopped (SIGKILL) at exit if still running.
start_server() {
    local out=$TMP/server.$RANDOM.out
    "$BIN/hub" repl-server --config "$CONF" --listen 127.0.0.1:0 "$@" >"$out" 2>>"$TMP/server.err" &
    SRV_PID=$!
    at_exit "kill -9 $SRV_PID; wait $SRV_PID"
    PORT=
    local i
    for i in $(seq 1 200); do
        PORT=$(sed -n 's/^repl-server: listening on 127.0.0.1:\([0-9]*\) .*/\1/p' "$out")
        [ -n "$PORT" ] && break
        kill -0 "$SRV_PID" 2>/dev/null || break
        sleep 0.05
    done
    [ -n "$PORT" ]
}

# stop_server: SIGTERM, then the exit status in SRV_RC (124 when it did not end in 20 s).
stop_server() {
    SRV_RC=
    kill -TERM "$SRV_PID"
    local i rc
    for i in $(seq 1 400); do
        kill -0 "$SRV_PID" 2>/dev/null || break
        sleep 0.05
    done
    if kill -0 "$SRV_PID" 2>/dev/null; then
        SRV_RC=124
        kill -9 "$SRV_PID"
    fi
    wait "$SRV_PID"
    rc=$?
    [ "$SRV_RC" = 124 ] || SRV_RC=$rc
}

# Interpreters still running this test's copy of the spoke.
leftover_sessions() {
    local n=0 p
    for p in /proc/[0-9]*; do
        tr '\0' ' ' 2>/dev/null <"$p/cmdline" | grep -q "$BINDIR/pyexec" && n=$((n + 1))
    done
    echo "$n"
}

# Session data directories on the host (<data_root>/<user>/code.<tag>, beside the app's
# own code/; see datadir_path in hub/runtime/spoke_env.c).
session_dirs() {
    local n=0 d
    for d in "$DATA"/tester/code.*; do [ -d "$d" ] && n=$((n + 1)); done
    echo "$n"
}

# cases GROUP ARGS...: runs a group of protocol cases (tests/pyexec/cases.py).
cases() {
    $PY "$CASES" "$@"
}
