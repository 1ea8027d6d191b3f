#!/usr/bin/env bash
# The planner end to end in process mode against the stand-in LLM: a tool-call plan,
# a JSON plan passing data between apps, plans refused before any spoke runs, the
# LLM's failures (malformed answer, 429 then success, a 500 storm, a slow answer),
# a denied step, re-planning, and what the audit log holds.
. "$(dirname "$0")/../lib.sh"
require_root
MODE=process
. "$ROOT/tests/agent/agent_lib.sh"
agent_setup

# spoke_started APP: spoke-start records for APP in the audit log.
spoke_started() { audit_count "g(r,'event.action')=='spoke-start' and g(r,'isolate.app')=='$1'"; }

# ---- a tool-call plan ----
standin_start '[plan(("fare__estimate", {"from": "Main Street", "to": "Elm Avenue"})), text("The fare is 23 USD.")]'
out=$(echo "How much is a ride from Main Street to Elm Avenue?" | ask --memory none --answers allow)
is "a tool-call plan is answered" "$(echo "$out" | jget 'd["status"]')" ok
is "... with the merge context's words" "$(echo "$out" | jget 'd["answer"]')" "The fare is 23 USD."
is "... after the step ran in its spoke" "$(echo "$out" | jget '[c["tool"]+":"+c["outcome"] for c in d["calls"]]')" '["fare.estimate:ok"]'
is "... with the exec permission asked, in the plan" \
    "$(audit_count "g(r,'event.action')=='permission-question' and g(r,'isolate.permission.category')=='exec' and g(r,'isolate.in_plan')")" 1
is "the planner's request offers the tools" "$(standin_requests '"tools" in b and b["messages"][0]["content"].startswith("You are the planner")')" 1
is "the merge request offers none" "$(standin_requests '"tools" not in b and "What the apps returned" in b["messages"][-1]["content"]')" 1
is "the audit has the user's request" "$(audit_count "g(r,'event.action')=='user-request'")" 1
is "... the plan" "$(audit_count "g(r,'event.action')=='plan' and g(r,'isolate.plan.tools')==['fare.estimate']")" 1
is "... each LLM call with model, tokens and duration" \
    "$(audit_count "g(r,'event.action')=='llm-call' and g(r,'isolate.llm.model')=='standin-model' and g(r,'isolate.llm.tokens.total')==18 and g(r,'event.duration')>0")" 2
is "... and the answer" "$(audit_count "g(r,'event.action')=='agent-answer' and g(r,'isolate.agent.status')=='ok'")" 1
is "without --debug no content is audited" "$(grep -c 'Elm Avenue' "$AUDIT")" 0

standin_start '[plan(("fare__estimate", {"from": "Main Street", "to": "Elm Avenue"})), text("23 USD.")]'
echo "How much is a ride from Main Street to Elm Avenue?" | ask --memory none --answers allow --debug >/dev/null 2>&1
check "with --debug the request and the plan are audited" grep -q 'Elm Avenue' "$AUDIT"

# ---- a JSON plan that passes one app's result to another: the data permission ----
standin_start '[text(json.dumps({"steps": [
    {"id": "s1", "tool": "fare.estimate", "arguments": {"from": "A", "to": "B"}},
    {"id": "s2", "tool": "mail.send", "arguments": {"to": "me@example.org", "body": {"$ref": "s1.fare"}}}]})),
  text("Sent you the fare.")]'
out=$(echo "mail me the fare from A to B" | ask --memory none --answers allow)
is "a JSON plan with a reference runs both steps" "$(echo "$out" | jget '[c["outcome"] for c in d["calls"]]')" '["ok", "ok"]'
is "... the referenced value reached the second app" "$(echo "$out" | jget 'd["calls"][1]["arguments"]["body"]')" "23 USD"
check "... which really sent it" grep -q '"body":"23 USD"' "$DATA/$AUSER/mail/sent.jsonl"
is "... after the data permission was asked (fare -> mail.send)" \
    "$(audit_count "g(r,'event.action')=='permission-question' and g(r,'isolate.permission.category')=='data' and g(r,'isolate.caller.app')=='fare' and g(r,'isolate.app')=='mail'")" 1
rm -f "$DATA/$AUSER/mail/sent.jsonl"
standin_start '[text(json.dumps({"steps": [
    {"id": "s1", "tool": "fare.estimate", "arguments": {"from": "A", "to": "B"}},
    {"id": "s2", "tool": "mail.send", "arguments": {"to": "me@example.org", "body": {"$ref": "s1.fare"}}}]})),
  text("I could not send it.")]'
cat >"$TMP/nodata.json" <<'EOF'
{"default": "allow", "rules": [{"category": "data", "decision": "deny"}]}
EOF
out=$(echo "mail me the fare from A to B" | ask --memory none --answers "$TMP/nodata.json")
is "data denied: the second step does not run" "$(echo "$out" | jget '[c["outcome"] for c in d["calls"]]')" '["ok", "denied"]'
check "... and nothing was sent" test ! -e "$DATA/$AUSER/mail/sent.jsonl"

# ---- plans refused before any spoke runs ----
rm -rf "$DATA" "$AUDIT"
standin_start '[plan(("mail__delete", {"id": 1})), text("never asked")]'
out=$(echo "delete my mail" | ask --memory none --answers allow)
is "a plan naming a tool that does not exist is refused" "$(echo "$out" | jget 'd["status"]')" plan-refused
like "... saying which step and why" "$(echo "$out" | jget 'd["error"]')" 'step 1: "mail__delete" is not an installed tool'
is "... no spoke started" "$(audit_count "g(r,'event.action')=='spoke-start'")" 0
check "... no app got a data directory" test ! -e "$DATA/$AUSER"
is "... and the LLM was not asked to compose anything" "$(standin_requests)" 1
standin_start '[plan(("fare__estimate", {"from": "Main Street"}), ("mail__send", {"to": "x", "body": "y"})), text("never asked")]'
out=$(echo "a fare" | ask --memory none --answers allow)
is "a plan whose arguments break the schema is refused" "$(echo "$out" | jget 'd["status"]')" plan-refused
like "... naming the step, tool and field" "$(echo "$out" | jget 'd["error"]')" 'step 1 \(fare.estimate\): arguments: .*to'
is "... before any spoke ran (not even the valid second step)" "$(audit_count "g(r,'event.action') in ('spoke-start','tool-call')")" 0
is "... with a plan record that says so" "$(audit_count "g(r,'event.action')=='plan' and g(r,'event.outcome')=='failure'")" 2

# ---- the LLM failing ----
standin_start '[raw("{\"choices\": [{\"message\": ")]'
out=$(echo "a fare" | ask --memory none --answers allow)
is "a malformed answer fails the request" "$(echo "$out" | jget 'd["status"]')" llm-failed
like "... as malformed" "$(echo "$out" | jget 'd["error"]')" '\(malformed\)'
is "... and nothing ran" "$(echo "$out" | jget 'len(d["calls"])')" 0

standin_start '[status(429, headers={"Retry-After": "0"}), plan(("fare__estimate", {"from": "A", "to": "B"})), text("23 USD")]'
out=$(echo "a fare" | ask --memory none --answers allow)
is "429 then success: answered" "$(echo "$out" | jget 'd["status"]')" ok
is "... after a retry" "$(standin_requests)" 3
is "... which the audit counts" "$(audit_count "g(r,'event.action')=='llm-call' and g(r,'isolate.llm.attempts')==2")" 1

standin_start '[status(500, times=3), text("too late")]'
out=$(echo "a fare" | ask --memory none --answers allow)
is "a 500 storm fails the request" "$(echo "$out" | jget 'd["status"]')" llm-failed
like "... as a server error" "$(echo "$out" | jget 'd["error"]')" 'server-error'
is "... after max_attempts (3) tries" "$(standin_requests)" 3

agent_config '{"llm": {"timeout_ms": 700, "max_attempts": 1}}'
standin_start '[text("slow", delay_ms=3000)]'
t0=$(date +%s%N)
out=$(echo "a fare" | ask --memory none --answers allow)
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
is "an answer slower than timeout_ms fails the request" "$(echo "$out" | jget 'd["status"]')" llm-failed
like "... as a timeout" "$(echo "$out" | jget 'd["error"]')" '\(timeout\)'
check "... without waiting for it (${ms} ms)" test "$ms" -lt 2900
agent_config '{}'

# ---- a denied step, then re-planning ----
rm -rf "$DATA" "$AUDIT"
standin_start '[plan(("mail__send", {"to": "boss@example.org", "body": "hi"})), text("Not sent: you said no.")]'
out=$(echo "mail my boss" | ask --memory none --answers deny)
is "a denied step is not run" "$(echo "$out" | jget '[c["outcome"]+"/"+c["layer"] for c in d["calls"]]')" '["denied/permission"]'
is "... its spoke never started" "$(spoke_started mail)" 0
is "... and the answer is still composed (saying so)" "$(echo "$out" | jget 'd["answer"]')" "Not sent: you said no."
cat >"$TMP/replan.json" <<'EOF'
{"default": "allow", "replan": true, "rules": [{"app": "mail", "tool": "send", "decision": "deny"}]}
EOF
standin_start '[plan(("mail__send", {"to": "boss@example.org", "body": "fare?"})),
               plan(("fare__estimate", {"from": "A", "to": "B"})), text("The fare is 23 USD; nothing was mailed.")]'
out=$(echo "tell my boss the fare" | ask --memory none --answers "$TMP/replan.json")
is "after a denial the hub re-plans when the user agrees" "$(echo "$out" | jget 'd["replans"]')" 1
is "... both plans are reported" "$(echo "$out" | jget '[p["steps"][0]["tool"] for p in d["plans"]]')" '["mail.send", "fare.estimate"]'
is "... the new plan's step is numbered after the old one" "$(echo "$out" | jget 'd["plans"][1]["steps"][0]["id"]')" s2
is "... and ran" "$(echo "$out" | jget '[c["outcome"] for c in d["calls"]]')" '["denied", "ok"]'
like "... the planner was told what was denied" "$(standin_requests '"tools" in b and "The user denied mail.send" in b["messages"][-1]["content"]')" 1

# ---- a direct answer: no app needed ----
standin_start '[text("Hello! I can estimate fares and read your mail.")]'
out=$(echo "hi" | ask --memory none --answers allow)
is "a plan without steps is the planner's direct answer" "$(echo "$out" | jget 'd["answer"]')" "Hello! I can estimate fares and read your mail."
is "... with a single LLM call" "$(standin_requests)" 1

# ---- several requests from a pipe ----
standin_start '[text("one"), text("two")]'
out=$(printf 'first\n\n/help\nsecond\n' | "$BIN/hub" --config "$CONF" --llm "$LLM_URL" --memory none --answers allow)
like "plain output from a pipe: one answer per request, commands answered" "$(echo "$out" | tr '\n' '|')" '^one\|hub: type a request, or:.*\|two\|$'

# ---- memory: a private redis-server when none is configured ----
standin_start '[text("one"), text("two")]'
echo "remember me" | ask --answers allow >/dev/null 2>"$TMP/err"
check "with no memory configured the hub starts a private redis-server in its run directory" \
    test -s "$RUN/redis/redis.log"
check "... and stops it when it ends" bash -c "! redis-cli -s '$RUN/redis/redis.sock' ping"
check "... keeping what was written (AOF)" grep -q "remember me" "$RUN/redis/appendonlydir/"*.aof
echo "again" | ask --answers allow >/dev/null 2>>"$TMP/err"
is "... which the next hub finds again" \
    "$(standin_requests '"tools" in b and "- remember me" in str(b["messages"])')" 1
# Two hubs of one configuration share the private Redis: the one that started it ends
# first and leaves it to the other; the last one out stops it.
standin_start '[text("one"), text("two"), text("three"), text("four")]'
mkfifo "$TMP/first.in" "$TMP/second.in"
ask --answers allow <"$TMP/first.in" >"$TMP/first.out" 2>&1 &
first=$!
at_exit "kill -9 $first"
exec 4>"$TMP/first.in"
echo "from the first hub" >&4
wait_for "the first hub's answer" 10 test -s "$TMP/first.out"
ask --answers allow <"$TMP/second.in" >"$TMP/second.out" 2>&1 4>&- &
second=$!
at_exit "kill -9 $second"
exec 5>"$TMP/second.in"
echo "from the second hub" >&5
wait_for "the second hub's answer" 10 test -s "$TMP/second.out"
exec 4>&-
wait "$first"
is "the hub that started the private Redis ends (exit 0)" "$?" 0
check "... leaving it running for the second hub of the same configuration" \
    redis-cli -s "$RUN/redis/redis.sock" ping
echo "second again" >&5
exec 5>&-
wait "$second"
is "... which goes on using it (exit 0)" "$?" 0
check "... and, the last one out, stops it" bash -c "! redis-cli -s '$RUN/redis/redis.sock' ping"
check "... keeping what both wrote" bash -c "grep -q 'from the first hub' $RUN/redis/appendonlydir/*.aof && grep -q 'second again' $RUN/redis/appendonlydir/*.aof"

# ---- a step that could not run makes the request fail (exit 1), whatever the answer ----
$PY - <<EOF
import json
m = json.load(open("$SPOKES/fare.json"))
m["name"] = "broken"
m["command"] = ["/nonexistent/broken-spoke"]
json.dump(m, open("$SPOKES/broken.json", "w"))
EOF
standin_start '[plan(("broken__estimate", {"from": "A", "to": "B"})), text("The fare is 23 USD.")]'
out=$(echo "a fare from A to B" | ask --memory none --answers allow 2>/dev/null)
is "--json: a step whose only call failed makes the exit status 1" "$?" 1
is "... the call is reported failed" "$(echo "$out" | jget '[c["outcome"] for c in d["calls"]]')" '["failed"]'
standin_start '[plan(("fare__estimate", {"from": "A", "to": "B"})), text("The fare is 23 USD.")]'
echo "a fare from A to B" | ask --memory none --answers allow >/dev/null 2>&1
is "... while a step that ran leaves it 0 (control)" "$?" 0
rm -f "$SPOKES/broken.json"
"$BIN/hub" --config "$CONF" --llm "$LLM_URL" --memory unix:/nonexistent/redis.sock </dev/null >/dev/null 2>"$TMP/err"
is "an unreachable Redis stops the hub (exit 2)" "$?" 2
like "... saying what to do" "$(cat "$TMP/err")" "memory none"
done_testing
