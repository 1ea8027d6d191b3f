# The OpenAI-compatible stand-in (tests/llm/openai_standin) for the tests of whatever
# calls the hub's LLM (the assistant, hub serve's sampling): source after tests/lib.sh;
# the stand-in's files go to $TMP, and it is stopped at exit.

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

# standin_requests [FILTER]: how many requests the stand-in got (FILTER: Python over
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

