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

# standin_start SCRIPT_PY: writes the script (a Python expression over the helpers
# below giving the list of responses) and starts a stand-in; sets LLM_URL, STANDIN_LOG.
#   plan(("app__tool", {args}), ...)   a tool-call answer (non-streamed)
#   text("...")                        a plain answer (non-streamed)
#   sse("...")                         a streamed plain answer
#   sse_tools(("app__tool", {args}))   a streamed tool-call answer
#   status(N, times=1, delay_ms=0)     an HTTP error answer
#   raw("...")                         a 200 with this body (malformed JSON)
#   cut_text("...")                    a plain answer cut by the token limit
#                                      (finish_reason "length")
#   cut_plan(("app__tool", "ARGS TEXT"), ...)  tool calls whose arguments are given as
#                                      text (cut JSON), finish_reason "length"
#   sse_cut("...")                     a streamed answer cut by the token limit
standin_start() {
    local n=${STANDIN_N:-0}
    STANDIN_N=$((n + 1))
    local script=$TMP/standin$n.json
    STANDIN_LOG=$TMP/standin$n.log
    $PY - "$1" "$script" <<'EOF'
import json, sys
def completion(msg, finish):
    return {"id": "c", "object": "chat.completion", "model": "standin-model",
            "choices": [{"index": 0, "message": msg, "finish_reason": finish}],
            "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18}}
def calls(tcs):
    return [{"id": "call_%d" % i, "type": "function",
             "function": {"name": n, "arguments": json.dumps(a)}} for i, (n, a) in enumerate(tcs)]
def plan(*tcs, **kw):
    r = {"json": completion({"role": "assistant", "content": None, "tool_calls": calls(tcs)},
                            "tool_calls")}
    r.update(kw); return r
def text(t, **kw):
    r = {"json": completion({"role": "assistant", "content": t}, "stop")}
    r.update(kw); return r
def sse(t, **kw):
    words = [t[i:i + 7] for i in range(0, len(t), 7)]
    items = [{"choices": [{"index": 0, "delta": {"role": "assistant", "content": w}}]} for w in words]
    items.append({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    items.append("[DONE]")
    r = {"sse": items}
    r.update(kw); return r
def sse_tools(*tcs, **kw):
    items = [{"choices": [{"index": 0, "delta": {"role": "assistant", "tool_calls": [
        dict(index=i, **c) for i, c in enumerate(calls(tcs))]}}]},
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}, "[DONE]"]
    r = {"sse": items}
    r.update(kw); return r
def status(n, **kw):
    r = {"status": n, "json": {"error": {"message": "stand-in error %d" % n}}}
    r.update(kw); return r
def cut_text(t, **kw):
    r = {"json": completion({"role": "assistant", "content": t}, "length")}
    r.update(kw); return r
def cut_plan(*tcs, **kw):
    cs = [{"id": "call_%d" % i, "type": "function", "function": {"name": n, "arguments": a}}
          for i, (n, a) in enumerate(tcs)]
    r = {"json": completion({"role": "assistant", "content": None, "tool_calls": cs}, "length")}
    r.update(kw); return r
def sse_cut(t, **kw):
    r = sse(t, **kw)
    r["sse"][-2]["choices"][0]["finish_reason"] = "length"
    return r
def raw(body, **kw):
    r = {"status": 200, "headers": {"Content-Type": "application/json"}, "body": body}
    r.update(kw); return r
responses = eval(sys.argv[1])
json.dump({"responses": responses}, open(sys.argv[2], "w"))
EOF
    "$BIN/tests/llm/openai_standin" --script "$script" --log "$STANDIN_LOG" >"$TMP/standin$n.port" &
    local pid=$!
    at_exit "kill $pid; wait $pid"
    wait_for "the stand-in's port" 5 test -s "$TMP/standin$n.port"
    LLM_URL="http://127.0.0.1:$(head -n1 "$TMP/standin$n.port")/v1"
}

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

# requests_to_standin [FILTER]: how many requests the stand-in got (FILTER: Python over
# b, the request body).
standin_requests() {
    $PY -c 'import json,sys
n = 0
for line in open(sys.argv[1]):
    r = json.loads(line)
    b = r.get("body")
    if isinstance(b, str):
        try: b = json.loads(b)
        except Exception: pass
    if eval(sys.argv[2], {"b": b, "r": r}):
        n += 1
print(n)' "$STANDIN_LOG" "${1:-True}"
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
