#!/usr/bin/env bash
# What a new user ran into with the assistant against a live OpenAI-compatible server
# (issue 18), from a pipe against the stand-in: --model and --api-key-env instead of
# editing hub.json; answers cut by the token limit (finish_reason "length") said to be
# cut and cut tool calls never run; a failed step in --json and the exit status;
# alternating roles in none mode; a server's error text kept apart from the hub's words.
. "$(dirname "$0")/../lib.sh"
require_root
MODE=process
. "$ROOT/tests/agent/agent_lib.sh"
agent_setup

# conf_without KEY...: $CONF with these keys of its "llm" object removed.
conf_without() {
    $PY - "$CONF" "$@" <<'EOF'
import json, sys
c = json.load(open(sys.argv[1]))
for k in sys.argv[2:]:
    c["llm"].pop(k, None)
json.dump(c, open(sys.argv[1], "w"))
EOF
}
spoke_started() { audit_count "g(r,'event.action')=='spoke-start' and g(r,'isolate.app')=='$1'"; }

# ---- 1. --model and --api-key-env ----
conf_without model api_key_env
standin_start '[text("Hello.")]'
echo hi | "$BIN/hub" --config "$CONF" --llm "$LLM_URL" --memory none --answers allow --json \
    >"$TMP/out" 2>"$TMP/err"
is "no model anywhere: the hub stops (exit 2)" "$?" 2
like "... saying to pass --model" "$(cat "$TMP/err")" "pass --model NAME"
like "... and --api-key-env for a server that needs a key" "$(cat "$TMP/err")" "--api-key-env VAR"
is "... without asking the server anything" "$(standin_requests)" 0
key="sk-itest-$$"
echo hi | env ITEST_LIVE_KEY_$$=$key "$BIN/hub" --config "$CONF" --llm "$LLM_URL" --model standin-model \
    --api-key-env ITEST_LIVE_KEY_$$ --memory none --answers allow --json >"$TMP/out" 2>"$TMP/err"
is "with --model and --api-key-env the request is answered (no config edited)" \
    "$(jget 'd["answer"]' <"$TMP/out")" "Hello."
is "... the server was asked for that model" "$(standin_requests 'b["model"] == "standin-model"')" 1
is "... with the key from that variable" \
    "$(standin_requests "r['headers'].get('authorization') == 'Bearer $key'")" 1
"$BIN/hub" --config "$CONF" --llm "http://127.0.0.1:1/v1" --model "" </dev/null >/dev/null 2>"$TMP/err"
is "an empty --model is a usage error (exit 2)" "$?" 2
agent_config '{}'
"$BIN/hub" --config "$CONF" </dev/null >/dev/null 2>"$TMP/err"
like "with no LLM at all the hint names --model and --api-key-env" "$(cat "$TMP/err")" \
    "--model NAME \(and --api-key-env VAR"

# ---- 2. finish_reason "length" ----
standin_start '[cut_text("Hello! I can estimate fares and re")]'
out=$(echo "hi" | ask --memory none --answers allow)
is "a direct answer cut by the token limit is shown" "$(echo "$out" | jget 'd["answer"]')" \
    "Hello! I can estimate fares and re"
is "... marked truncated" "$(echo "$out" | jget 'd["truncated"]')" true
like "... with a warning that says so" "$(echo "$out" | jget 'd["warnings"][0]')" \
    'token limit \(finish_reason "length"\): the answer is cut off; raise llm.max_tokens'

rm -f "$AUDIT"
standin_start '[cut_plan(("fare__estimate", "{\"from\": \"Main Street\", \"to\": \"Elm Av")), text("never asked")]'
out=$(echo "a fare" | ask --memory none --answers allow)
is "a tool call whose arguments were cut is not run" "$(echo "$out" | jget 'len(d["calls"])')" 0
is "... its spoke never started" "$(spoke_started fare)" 0
is "... the request failed, marked truncated" "$(echo "$out" | jget '[d["status"], d["truncated"]]')" \
    '["llm-failed", true]'
like "... saying the model hit its token limit (not \"not valid JSON\")" \
    "$(echo "$out" | jget 'd["error"]')" '\(truncated\): the model hit its token limit .*arguments of tool_calls\[0\] \(fare__estimate\): they are cut off'
unlike "... without calling it malformed" "$(echo "$out" | jget 'd["error"]')" "not valid JSON"

standin_start '[cut_plan(("fare__estimate", "{\"from\": \"A\", \"to\": \"B\"}"), ("mail__send", "{\"to\": \"boss@")), text("never asked")]'
out=$(echo "a fare" | ask --memory none --answers allow)
is "a cut plan is not run, not even its whole first step" "$(echo "$out" | jget 'len(d["calls"])')" 0
is "... marked truncated" "$(echo "$out" | jget 'd["truncated"]')" true
standin_start '[cut_plan(("fare__estimate", "{\"from\": \"A\", \"to\": \"B\"}")), text("never asked")]'
out=$(echo "a fare" | ask --memory none --answers allow)
is "a plan cut after whole arguments is not run either" "$(echo "$out" | jget '[len(d["calls"]), d["status"], d["truncated"]]')" \
    '[0, "plan-refused", true]'
like "... saying why" "$(echo "$out" | jget 'd["error"]')" "token limit .* while writing the plan, so none of it is run"
is "... and the model was not asked to compose anything" "$(standin_requests)" 1

standin_start '[plan(("fare__estimate", {"from": "A", "to": "B"})), cut_text("The fare is 2")]'
out=$(echo "a fare" | ask --memory none --answers allow)
is "a composed answer cut by the token limit: shown, truncated" \
    "$(echo "$out" | jget '[d["status"], d["answer"], d["truncated"]]')" '["ok", "The fare is 2", true]'
standin_start '[plan(("fare__estimate", {"from": "A", "to": "B"})), sse_cut("The fare is 2")]'
out=$(echo "a fare" | "$BIN/hub" --config "$CONF" --llm "$LLM_URL" --memory none --answers allow 2>"$TMP/err")
is "... streamed to a pipe: the text as it came" "$out" "The fare is 2"
like "... and a warning on stderr" "$(cat "$TMP/err")" "hub: warning: the model hit its token limit"
standin_start '[plan(("fare__estimate", {"from": "A", "to": "B"})), text("ok")]'
out=$(echo "a fare" | ask --memory none --answers allow)
is "a whole answer is not marked" "$(echo "$out" | jget '[d["truncated"], d["warnings"]]')" '[false, []]'

# ---- 14. a failed step: --json and the exit status ----
mkdir -p "$DATA/$AUSER/mail/sent.jsonl" # the app cannot record the mail: a tool error
standin_start '[plan(("mail__send", {"to": "boss@example.org", "body": "hi"})), text("I could not send it.")]'
out=$(echo "mail my boss" | ask --memory none --answers allow)
is "the only step failed: the exit status is 1" "$?" 1
is "... --json says steps-failed" "$(echo "$out" | jget '[d["status"], [c["outcome"] for c in d["calls"]]]')" \
    '["steps-failed", ["tool-error"]]'
is "... and the answer is still there" "$(echo "$out" | jget 'd["answer"]')" "I could not send it."
standin_start '[plan(("mail__send", {"to": "boss@example.org", "body": "hi"})), text("I could not send it.")]'
echo "mail my boss" | "$BIN/hub" --config "$CONF" --llm "$LLM_URL" --memory none --answers allow \
    >/dev/null 2>"$TMP/err"
is "... plain output: exit 1 too" "$?" 1
like "... with a line on stderr" "$(cat "$TMP/err")" "hub: 1 step failed"
rmdir "$DATA/$AUSER/mail/sent.jsonl"
standin_start '[plan(("mail__send", {"to": "boss@example.org", "body": "hi"})), text("Not sent: you said no.")]'
out=$(echo "mail my boss" | ask --memory none --answers deny)
is "a step the user denied is not a failure (exit 0, status ok)" "$?/$(echo "$out" | jget 'd["status"]')" 0/ok

# ---- 8, 9, 10 from a pipe (the terminal's are in test_agent_tmux_live.sh) ----
standin_start '[plan(("fare__estimate", {"from": "A", "to": "B"})), raw("{\"choices\": [{\"message\": ")]'
out=$(echo "a fare" | "$BIN/hub" --config "$CONF" --llm "$LLM_URL" --memory none --answers allow 2>"$TMP/err")
is "a malformed answer at the answer step: the step's result still printed" "$out" 's1 fare.estimate: {"fare":"23 USD"}'
like "... saying so on stderr" "$(cat "$TMP/err")" "no answer was composed; what the steps returned is on stdout"
standin_start '[plan(("fare__estimate", {"from": "A", "to": "B"})), plan(("mail__send", {"to": "x@example.org", "body": "leak"}))]'
echo "a fare" | "$BIN/hub" --config "$CONF" --llm "$LLM_URL" --memory none --answers allow >/dev/null 2>"$TMP/err"
like "a tool call at the answer step is reported on stderr, quoted" "$(cat "$TMP/err" | tr '\n' '|')" \
    'hub: the model asked to call a tool while composing the answer; it was not run \(that step has no tools\):\|  ┊ mail__send \{"to":"x@example.org","body":"leak"\}'
standin_start '[{"status": 400, "json": {"error": {"message": "max_tokens is too large"}}}]'
echo "a fare" | "$BIN/hub" --config "$CONF" --llm "$LLM_URL" --memory none --answers allow >/dev/null 2>"$TMP/err"
is "a server's 400: its words on a quoted line after the hub's" "$(grep -v '^hub: warning' "$TMP/err" | sed 's/127.0.0.1:[0-9]*/HOST/')" \
    "hub: the planner's LLM call failed (bad-request): http://HOST/v1/chat/completions rejected the request: HTTP 400 Bad Request; the server said:
  ┊ max_tokens is too large"

# ---- 13. none mode: roles alternate ----
MODE=none agent_config '{}'
standin_start '[text("Answer one."), status(500, times=3), text("Answer three.")]'
printf 'request one\nrequest two\nrequest three\n' | ask --memory none --answers allow >"$TMP/out"
is "none mode: the second request failed" "$(jlines 'd["status"]' <"$TMP/out")" "ok llm-failed ok"
roles='[m["role"] for m in b["messages"]]'
is "... the third's conversation alternates: the unanswered request is left out" \
    "$(standin_requests "$roles == ['system', 'user', 'assistant', 'user'] and b['messages'][1]['content'] == 'request one' and b['messages'][3]['content'] == 'request three'")" 1
MODE=none agent_config '{"llm": {"history_entries": 1}}'
standin_start '[text("Answer one."), status(500, times=3), text("Answer three.")]'
printf 'request one\nrequest two\nrequest three\n' | ask --memory none --answers allow >"$TMP/out"
is "... and with a history cut after a request, no answer follows the system prompt" \
    "$(standin_requests "$roles == ['system', 'user'] and b['messages'][1]['content'] == 'request three'")" 1
is "... no request of the three had two user messages in a row" \
    "$(standin_requests "any(x == y == 'user' for x, y in zip($roles, $roles[1:]))")" 0
done_testing
