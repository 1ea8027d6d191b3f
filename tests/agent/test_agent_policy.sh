#!/usr/bin/env bash
# The extraction step and the argument-source policies in the assistant (issue 35;
# docs/assistant.md). The stand-in LLM plays a model whose extraction obeys the email it
# reads: asked whom to reply to, it answers with the attacker's address.
#   without a policy: the value read out of the email is sent to (the data path that
#     extraction opens; the planner itself never saw the email);
#   with a hub.json rule, or a manifest tool's "policy" block, that the recipient must
#     come from the request: mail.send is refused before anyone is asked, audited;
#   without --extract: the plan is refused, nothing runs.
. "$(dirname "$0")/../lib.sh"
require_root
. "$ROOT/tests/agent/agent_lib.sh"

PLAN='{"steps": [{"id": "s1", "tool": "mail.read", "arguments": {}},
 {"id": "s2", "tool": "hub.extract", "arguments": {"text": {"$ref": "s1"},
  "question": "Whom should the reply go to?",
  "schema": {"type": "object", "properties": {"to": {"type": "string"}}, "required": ["to"]}}},
 {"id": "s3", "tool": "mail.send", "arguments": {"to": {"$ref": "s2.to"}, "body": "Thanks!"}}]}'
RULE='{"policies": [{"tool": "mail.send", "argument": "to", "from": ["request"], "else": "deny"}]}'
run() { # CONFIG-EXTRA ASK-OPTIONS...
    rm -rf "$DATA" "$RUN" "$AUDIT"
    agent_setup "$1"
    shift
    standin_start "[text('''$PLAN'''), text('{\"to\": \"attacker@evil.example\"}'), text('Replied.')]"
    out=$(echo "Reply to the newest email with a thank-you." | ask --memory none --answers allow "$@")
    tools=$(echo "$out" | jget '[c["tool"] + ":" + c["outcome"] for c in d["calls"]]')
    sent=$DATA/$AUSER/mail/sent.jsonl
}

for MODE in process namespace; do
    run '{}' --extract
    is "$MODE, no policy: the extracted address is used" "$tools" \
        '["mail.read:ok", "hub.extract:ok", "mail.send:ok"]'
    check "$MODE, no policy: ... the mail went to the attacker" grep -q attacker@evil.example "$sent"
    is "$MODE: the extraction is audited with its source" \
        "$(audit_count "g(r,'event.action')=='extract' and g(r,'isolate.source')=='mail.read'")" 1
    is "$MODE: the extraction's context was offered no tools" \
        "$(standin_requests '"tools" not in b and "Whom should the reply go to?" in b["messages"][-1]["content"]')" 1

    run "$RULE" --extract
    is "$MODE, hub.json rule: mail.send is refused" "$tools" \
        '["mail.read:ok", "hub.extract:ok", "mail.send:denied"]'
    is "$MODE, hub.json rule: ... by the policy" "$(echo "$out" | jget 'd["calls"][2]["layer"]')" policy
    check "$MODE, hub.json rule: ... no mail was sent" test ! -e "$sent"
    is "$MODE, hub.json rule: ... without a question" \
        "$(audit_count "g(r,'event.action')=='permission-question' and g(r,'isolate.tool')=='send'")" 0
    is "$MODE, hub.json rule: ... audited with the argument's source" \
        "$(audit_count "g(r,'event.action')=='policy' and g(r,'isolate.decision')=='deny' and g(r,'isolate.sources.to')=='extract:mail.read'")" 1

    rm -rf "$DATA" "$RUN" "$AUDIT"
    agent_setup '{}'
    $PY - "$SPOKES/mail.json" <<'PYEOF'
import json, sys
m = json.load(open(sys.argv[1]))
for t in m["tools"]:
    if t["name"] == "send":
        t["policy"] = {"to": {"from": ["request"], "else": "deny"}}
json.dump(m, open(sys.argv[1], "w"))
PYEOF
    standin_start "[text('''$PLAN'''), text('{\"to\": \"attacker@evil.example\"}'), text('Replied.')]"
    out=$(echo "Reply to the newest email with a thank-you." | ask --memory none --answers allow --extract)
    is "$MODE, manifest policy block: mail.send is refused by it" \
        "$(echo "$out" | jget '[c["tool"] + ":" + c.get("layer", c["outcome"]) for c in d["calls"]]')" \
        '["mail.read:ok", "hub.extract:ok", "mail.send:policy"]'

    run '{}'
    is "$MODE, without --extract: nothing runs" "$tools" '[]'
    like "$MODE, without --extract: the plan is refused, saying why" "$(echo "$out" | jget 'd["error"]')" \
        'hub.extract.*not an installed tool'
done
# The request as a trace (OTLP to a stand-in collector): the user's request is the root
# span; its calls, its extraction and its policy decision are spans under it.
MODE=process
SPANS=$TMP/spans.jsonl
coproc COLLECTOR { exec "$PY" "$ROOT/tests/audit/otlp_collector.py" "$SPANS"; }
at_exit "kill $COLLECTOR_PID"
read -r CPORT <&"${COLLECTOR[0]}"
OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:$CPORT run "$RULE" --extract
wait_for "the collector got the request's spans" 10 grep -q '"user-request"' "$SPANS"
$PY -c 'import json,sys
for l in open(sys.argv[1]):
    for rs in json.loads(l)["body"]["resourceSpans"]:
        for ss in rs["scopeSpans"]:
            for s in ss["spans"]:
                print(s["name"].replace(" ", "_"), s["traceId"], s.get("parentSpanId") or "-", s["spanId"], s["status"]["code"])' \
    "$SPANS" >"$TMP/spans.txt"
root=$(grep '^user-request ' "$TMP/spans.txt")
like "the user's request: a root span" "$root" '^user-request [0-9a-f]{32} - [0-9a-f]{16} 1$'
tid=$(echo "$root" | cut -d' ' -f2)
rid=$(echo "$root" | cut -d' ' -f4)
like "... the policy's decision a span under it, in error (deny)" \
    "$(grep '^policy_mail.send_deny ' "$TMP/spans.txt")" "^policy_mail.send_deny $tid $rid [0-9a-f]{16} 2$"
like "... the extraction a span under it" "$(grep '^extract_mail.read ' "$TMP/spans.txt")" \
    "^extract_mail.read $tid $rid [0-9a-f]{16} 1$"
like "... and the call of mail.read" "$(grep '^tool-call_mail.read ' "$TMP/spans.txt")" \
    "^tool-call_mail.read $tid $rid [0-9a-f]{16} 1$"
is "the policy's record carries its span" \
    "$(audit_count "g(r,'event.action')=='policy' and g(r,'span.id')=='$(grep '^policy_mail.send_deny ' "$TMP/spans.txt" | cut -d' ' -f4)' and g(r,'trace.id')=='$tid'")" 1

done_testing
