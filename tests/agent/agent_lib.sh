# Helpers for the assistant's end-to-end tests; source after tests/lib.sh.
#
# Each test gets its own spokes directory (tests/agent/manifests), a copy of the test
# spoke, data root, run directory and audit log under $TMP, and a hub.json naming
# them (agent_config). The LLM is tests/llm/openai_standin on loopback, scripted per
# run (standin_start); the memory a private redis-server (redis_start) or none.
# Network names use the itest-agent- prefix and the veth pool 169.254.112.0/22,
# which no other component's tests use.

PY=/usr/bin/python3
SPOKES=$TMP/spokes
BINDIR=$TMP/bin
DATA=$TMP/data
RUN=$TMP/run
AUDIT=$TMP/audit.jsonl
CONF=$TMP/hub.json
MODE=${MODE:-process}
REDIS_DIR=/tmp/itest-agent-redis-$$
HOST_ID_BASE=$((900000 + ($$ % 4000) * 64))
AUSER=tester

agent_setup() {
    mkdir -p "$SPOKES" "$BINDIR" "$DATA" "$RUN"
    cp "$ROOT"/tests/agent/manifests/*.json "$SPOKES"/
    cp "$BIN"/tests/agent/agentspoke "$BINDIR"/
    PROFILE=$ROOT/config/profiles/spoke.json
    case "$BUILD" in
    *san*)
        # As in tests/hub/hub_lib.sh: ASan's shadow memory needs no RLIMIT_AS.
        $PY -c 'import json,sys
p = json.load(open(sys.argv[1])); p["limits"]["as_mb"] = 0; json.dump(p, open(sys.argv[2], "w"))
for f in sys.argv[3:]:
    m = json.load(open(f)); m.get("limits", {}).pop("as_mb", None)
    m.setdefault("env", {})["ASAN_OPTIONS"] = "detect_leaks=0"; json.dump(m, open(f, "w"))' \
            "$ROOT/config/profiles/spoke.json" "$TMP/profile.json" "$SPOKES"/*.json
        PROFILE=$TMP/profile.json ;;
    esac
    agent_config "${1:-{\}}"
}

# agent_config EXTRA_JSON: writes $CONF; EXTRA_JSON's top-level keys replace, and its
# "llm" object is merged into the default one.
agent_config() {
    $PY - "$1" <<EOF
import json, sys
conf = {
    "isolation": "$MODE",
    "user": "$AUSER",
    "spokes_dir": "$SPOKES",
    "spoke_bin_dir": "$BINDIR",
    "profile": "$PROFILE",
    "data_root": "$DATA",
    "run_dir": "$RUN",
    "audit": "$AUDIT",
    "call_timeout_ms": 20000,
    "network": {"veth_pool": "169.254.112.0/22", "gateway_netns": "itest-agent-$$",
                "proxy_port": 3128, "host_id_base": $HOST_ID_BASE, "host_id_count": 64},
    "netproxy": {"binary": "$BIN/netproxy", "audit": "$TMP/netproxy.jsonl"},
    "llm": {"api_key_env": "OPENAI_API_KEY", "model": "standin-model", "timeout_ms": 5000,
            "max_attempts": 3, "backoff_ms": 20, "backoff_max_ms": 50},
}
extra = json.loads(sys.argv[1])
conf["llm"].update(extra.pop("llm", {}))
conf.update(extra)
json.dump(conf, open("$CONF", "w"), indent=1)
EOF
}

. "$ROOT/tests/llm/standin_lib.sh"

# redis_start: a private redis-server for this test; sets MEM.
redis_start() {
    MEM="unix:$("$ROOT/scripts/redis-private" start "$REDIS_DIR")"
    at_exit "'$ROOT/scripts/redis-private' stop '$REDIS_DIR'; rm -rf '$REDIS_DIR'"
}

# ask ARGS... : the assistant from a pipe with --json; the request lines on stdin.
# Prints one JSON result per line.
ask() {
    "$BIN/hub" --config "$CONF" --llm "$LLM_URL" --json "$@"
}

# jlines EXPR: EXPR over each JSON line on stdin (d), the results space-separated.
jlines() {
    $PY -c 'import json,sys
out = []
for line in sys.stdin:
    if line.strip():
        d = json.loads(line)
        v = eval(sys.argv[1], {"d": d})
        out.append(json.dumps(v) if isinstance(v, (dict, list, bool)) or v is None else str(v))
print(" ".join(out))' "$1"
}

# tmux_start COMMAND: a 150x50 terminal (its own tmux server) running COMMAND, then
# "hub-exited-STATUS"; pane (the screen and scrollback), pane_has TEXT,
# wait_pane TEXT [SECONDS] (shows the screen when it fails), keys KEYS...
tmux_start() {
    exec 3>&1 # where wait_pane shows the screen when it fails (check hides the rest)
    T="tmux -L itest-agent-$$"
    at_exit "$T kill-server"
    $T -f /dev/null new-session -d -s s -x 150 -y 50 "$1; echo hub-exited-\$?; sleep 30"
}
pane() { $T capture-pane -p -J -t s -S -400; }
pane_has() { pane | grep -qF -- "$1"; }
wait_pane() {
    if ! wait_for "\"$1\" on the terminal" "${2:-10}" pane_has "$1"; then
        pane | sed 's/^/#   | /' >&3
        return 1
    fi
}
keys() { $T send-keys -t s "$@"; }
# prompt_ready: the last line on the screen is an empty prompt (the request is done;
# keys typed before it are type-ahead, which the hub discards).
prompt_ready() { pane | grep -v '^ *$' | tail -n 1 | grep -qx 'you› *'; }
wait_prompt() { wait_pane "you›" && wait_for "the prompt" 10 prompt_ready; }
