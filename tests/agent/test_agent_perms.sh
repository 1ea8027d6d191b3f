#!/usr/bin/env bash
# Permission flows with grants in a real private redis-server: once is asked again,
# session lasts the hub session, always persists across a hub restart, never (a
# stored deny) is honoured, an irreversible tool never gets "always", /perms lists
# and /revoke removes; a step outside the plan is flagged to the asker.
. "$(dirname "$0")/../lib.sh"
require_root
MODE=process
. "$ROOT/tests/agent/agent_lib.sh"
agent_setup
redis_start
SOCK=${MEM#unix:}
rcli() { redis-cli -s "$SOCK" "$@"; }

FARE='plan(("fare__estimate", {"from": "A", "to": "B"})), text("23 USD")'
# asked TOOL: permission questions about TOOL so far.
asked() { audit_count "g(r,'event.action')=='permission-question' and g(r,'isolate.tool')=='$1'"; }
answers() { echo "$1" >"$TMP/answers.json"; echo "$TMP/answers.json"; }

# ---- once: asked every time ----
standin_start "[$FARE, $FARE]"
out=$(printf 'fare\nfare\n' | ask --memory "$MEM" --answers "$(answers '{"default": "once"}')")
is "once: both requests ran" "$(echo "$out" | jlines 'd["calls"][0]["outcome"]')" "ok ok"
is "once: ... and each was asked" "$(asked estimate)" 2
is "once: ... nothing stored" "$(rcli hlen "isolategpt:$AUSER:grants")" 0

# ---- session: asked once per hub session ----
standin_start "[$FARE, $FARE, $FARE]"
printf 'fare\nfare\n' | ask --memory "$MEM" --answers "$(answers '{"default": "session"}')" >/dev/null
is "session: two requests in one session, asked once" "$(asked estimate)" 3
is "session: ... not stored in Redis" "$(rcli hlen "isolategpt:$AUSER:grants")" 0
out=$(echo fare | ask --memory "$MEM" --answers "$(answers '{"default": "no"}')")
is "session: a new hub session asks again" "$(asked estimate)" 4
is "session: ... (and no was honoured)" "$(echo "$out" | jget 'd["calls"][0]["outcome"]')" denied

# ---- always: persists across a hub restart ----
standin_start "[$FARE, $FARE]"
echo fare | ask --memory "$MEM" --answers "$(answers '{"default": "always"}')" >/dev/null
is "always: stored in Redis" "$(rcli hget "isolategpt:$AUSER:grants" 'exec|fare|estimate|*' | jget 'd["scope"]')" always
out=$(echo fare | ask --memory "$MEM" --answers "$(answers '{"default": "no"}')")
is "always: after a hub restart the step runs" "$(echo "$out" | jget 'd["calls"][0]["outcome"]')" ok
is "always: ... without a question" "$(asked estimate)" 5
is "always: ... the grant is named in the audit" \
    "$(audit_count "g(r,'event.action')=='permission' and g(r,'event.reason')=='always grant exec|fare|estimate|*'")" 1

# ---- never: a stored deny is honoured ----
standin_start '[plan(("mail__read", {})), text("no"), plan(("mail__read", {})), text("no")]'
out=$(echo mail | ask --memory "$MEM" --answers "$(answers '{"default": "never"}')")
is "never: refused" "$(echo "$out" | jget 'd["calls"][0]["outcome"]')" denied
is "never: ... and stored" "$(rcli hget "isolategpt:$AUSER:grants" 'exec|mail|read|*' | jget 'd["scope"]')" deny
out=$(echo mail | ask --memory "$MEM" --answers allow)
is "never: a later session is refused too" "$(echo "$out" | jget 'd["calls"][0]["outcome"]+"/"+d["calls"][0]["layer"]')" denied/permission
is "never: ... without asking" "$(asked read)" 1

# ---- irreversible: never "always" ----
SEND='plan(("mail__send", {"to": "me@example.org", "body": "hi"})), text("sent")'
standin_start "[$SEND, $SEND]"
out=$(echo send | ask --memory "$MEM" --answers "$(answers '{"default": "always"}')")
is "irreversible: a scripted always runs the step" "$(echo "$out" | jget 'd["calls"][0]["outcome"]')" ok
is "irreversible: ... the question did not offer always" \
    "$(audit_count "g(r,'event.action')=='permission-question' and g(r,'isolate.tool')=='send' and g(r,'isolate.permission.offer_always') is False")" 1
is "irreversible: ... the answer counted once" \
    "$(audit_count "g(r,'event.action')=='permission-answer' and g(r,'isolate.tool')=='send' and g(r,'isolate.permission.answer')=='once'")" 1
is "irreversible: ... nothing stored" "$(rcli hexists "isolategpt:$AUSER:grants" 'exec|mail|send|*')" 0
echo send | ask --memory "$MEM" --answers "$(answers '{"default": "no"}')" >/dev/null
is "irreversible: the next time it is asked again" "$(asked send)" 2
# An always grant written behind the hub's back is ignored for an irreversible tool.
rcli hset "isolategpt:$AUSER:grants" 'exec|mail|send|*' '{"scope":"always","created":1}' >/dev/null
standin_start "[$SEND]"
out=$(echo send | ask --memory "$MEM" --answers "$(answers '{"default": "no"}')")
is "irreversible: a stored always does not decide" "$(asked send)" 3
is "irreversible: ... the user's no does" "$(echo "$out" | jget 'd["calls"][0]["outcome"]')" denied

# ---- /perms and /revoke ----
standin_start "[$FARE]"
out=$(printf '/perms\n/revoke fare\n/perms\nfare\n' |
    "$BIN/hub" --config "$CONF" --llm "$LLM_URL" --memory "$MEM" --answers "$(answers '{"default": "no"}')")
like "/perms lists the stored grants" "$out" "always +exec +fare\.estimate"
like "/perms lists refusals" "$out" "deny +exec +mail\.read"
like "/revoke APP removes that app's grants" "$out" "hub: 1 grant removed"
is "... from Redis" "$(rcli hexists "isolategpt:$AUSER:grants" 'exec|fare|estimate|*')" 0
is "... so the next request is asked again" "$(asked estimate)" 6
out=$(printf '/perms\n/revoke 1\n/revoke all\n/perms\n' |
    "$BIN/hub" --config "$CONF" --llm "$LLM_URL" --memory "$MEM" --answers allow)
like "/revoke N removes the Nth listed grant" "$out" "hub: 1 grant removed"
like "/revoke all removes the rest" "$out" "hub: [0-9]+ grants? removed.*no grants"
is "... Redis holds none" "$(rcli hlen "isolategpt:$AUSER:grants")" 0

# ---- the user's earlier words going to an app: the data permission ----
standin_start '[text("I noted that."),
    plan(("fare__estimate", {"from": "Irvine", "to": "Paris, passenger with hypertension"})), text("no")]'
cat >"$TMP/memdata.json" <<'EOF'
{"default": "allow", "rules": [{"category": "data", "caller": "_memory", "decision": "deny"}]}
EOF
calls_before=$(audit_count "g(r,'event.action')=='tool-call' and g(r,'isolate.app')=='fare'")
out=$(printf 'My doctor says I have hypertension and asthma.\nA ride from Irvine to Paris, please.\n' |
    ask --memory "$MEM" --answers "$TMP/memdata.json" | tail -n 1)
is "a word from an earlier request in a step's arguments asks the data permission" \
    "$(audit_count "g(r,'event.action')=='permission-question' and g(r,'isolate.permission.category')=='data' and g(r,'isolate.caller.app')=='_memory'")" 1
is "... and a refusal keeps it from the app" "$(echo "$out" | jget 'd["calls"][0]["outcome"]')" denied
like "... saying which words" "$(echo "$out" | jget 'd["calls"][0]["error"]')" 'earlier conversation \("hypertension"\)'
is "... the spoke never got the call" "$(audit_count "g(r,'event.action')=='tool-call' and g(r,'isolate.app')=='fare'")" "$calls_before"
done_testing
