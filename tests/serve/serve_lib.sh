# Helpers for the hub serve tests; source after tests/lib.sh with MODE set. The hub
# is set up as tests/hub does (its own copies of the spokes, data, audit), with this
# directory's own network names: veth pool 169.254.124.0/22, gateway namespace
# itest-srv-PID, host ids from 2600000, which no other tests use.
. "$ROOT/tests/hub/hub_lib.sh"
GW_NS=itest-srv-$$
HOST_ID_BASE=$((2600000 + ($$ % 4000) * 64))
SDK_DIR=$ROOT/tests/serve

# serve_setup [MANIFEST...]: the hub of tests/hub plus these manifests (in place before
# hub_setup, which adapts every manifest to a sanitizer build).
serve_setup() {
    mkdir -p "$SPOKES"
    [ $# -gt 0 ] && cp "$@" "$SPOKES"/
    # A hub serve --stdio without --standalone starts a background hub that outlives it.
    at_exit stop_background
    hub_setup "$(printf '{"network": {"veth_pool": "169.254.124.0/22", "gateway_netns": "%s", "proxy_port": 3128, "host_id_base": %d, "host_id_count": 64}}' "$GW_NS" "$HOST_ID_BASE")"
    # delta: beta's tools with echo marked irreversible ("always" is never offered).
    $PY -c 'import json,sys
m = json.load(open(sys.argv[1])); m["name"] = "delta"
for t in m["tools"]:
    if t["name"] == "echo": t["irreversible"] = True
json.dump(m, open(sys.argv[2], "w"))' "$SPOKES/beta.json" "$SPOKES/delta.json"
    # Only the probe apps (and $SERVE_KEEP's): the example spokes have nothing to add here.
    for f in "$SPOKES"/*.json; do
        case " alpha beta gamma delta conformance ${SERVE_KEEP:-} " in
        *" $(basename "$f" .json) "*) ;;
        *) rm -f "$f" ;;
        esac
    done
}

# The background hub a hub serve --stdio of this test started (RUN/serve.sock.lock
# holds the owner's pid): its pid, when it is one of this test's (its command line
# names $CONF), else nothing.
background_pid() {
    local pid
    pid=$(cat "$RUN/serve.sock.lock" 2>/dev/null) || return 0
    [ -n "$pid" ] && tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q -- "--background .*$CONF" &&
        echo "$pid"
    return 0
}
# stop_background: ends it (SIGTERM, then SIGKILL after 10 s), and waits until it is gone.
stop_background() {
    local pid i
    pid=$(background_pid)
    [ -n "$pid" ] || return 0
    kill "$pid" 2>/dev/null
    for i in $(seq 200); do
        kill -0 "$pid" 2>/dev/null || return 0
        sleep 0.05
    done
    kill -9 "$pid" 2>/dev/null
}

# conf_merge JSON: merges these top-level keys into $CONF.
conf_merge() {
    $PY -c 'import json, sys
c = json.load(open(sys.argv[1])); c.update(json.loads(sys.argv[2]))
json.dump(c, open(sys.argv[1], "w"))' "$CONF" "$1"
}

have_sdk() {
    [ -d "$SDK_DIR/node_modules/@modelcontextprotocol/sdk" ] && command -v node >/dev/null
}

# serve_http_start ARGS...: starts hub serve --http on a free loopback port; sets
# SERVE_PID and URL (http://127.0.0.1:PORT/mcp). Waits until it answers.
serve_http_start() {
    local port
    port=$(free_port)
    URL=http://127.0.0.1:$port/mcp
    PORT=$port
    bg "$BIN/hub" serve --http "127.0.0.1:$port" --config "$CONF" "$@" 2>>"$TMP/serve.err"
    SERVE_PID=$BG_PID
    # A connection is enough (with TLS a plain HTTP request gets no answer).
    wait_for "hub serve on port $port" 10 bash -c "exec 3<>/dev/tcp/127.0.0.1/$port"
}
