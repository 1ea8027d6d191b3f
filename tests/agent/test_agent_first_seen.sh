#!/usr/bin/env bash
# isolate.first_seen: the first time (per user and app, remembered in Redis across hub
# sessions) an app uses a tool or is refused something, its audit record says true;
# after that false. With --memory none it holds for the hub session only.
. "$(dirname "$0")/../lib.sh"
require_root
MODE=process
. "$ROOT/tests/agent/agent_lib.sh"
agent_setup
redis_start
SOCK=${MEM#unix:}
answers() { echo "$1" >"$TMP/answers.json"; echo "$TMP/answers.json"; }
# seen ACTION TOOL: the isolate.first_seen values of those records, in order.
seen() { $PY -c 'import json,sys
out = []
for line in open(sys.argv[1]):
    r = json.loads(line); e = r.get("event", {}); i = r.get("isolate", {})
    if e.get("action") == sys.argv[2] and i.get("tool") == sys.argv[3]:
        out.append(str(i.get("first_seen", "absent")))
print(" ".join(out))' "$AUDIT" "$1" "$2"; }

FARE='plan(("fare__estimate", {"from": "A", "to": "B"})), text("23 USD")'
MAIL='plan(("mail__read", {})), text("no")'
standin_start "[$FARE, $FARE]"
printf 'fare\nfare\n' | ask --memory "$MEM" --answers "$(answers '{"default": "session"}')" >/dev/null
is "a tool's first use is first seen, its second not" "$(seen tool-call-start estimate)" "True False"
unlike "an allowed permission carries no first_seen" "$(seen permission estimate)" "True|False"
standin_start "[$FARE]"
echo fare | ask --memory "$MEM" --answers "$(answers '{"default": "once"}')" >/dev/null
is "a new hub session remembers it (Redis)" "$(seen tool-call-start estimate)" "True False False"
is "the memory holds it per user and app" \
    "$(redis-cli -s "$SOCK" hexists "isolategpt:$AUSER:seen" 'fare|tool:fare.estimate')" 1

standin_start "[$MAIL, $MAIL]"
printf 'mail\nmail\n' | ask --memory "$MEM" --answers "$(answers '{"default": "no"}')" >/dev/null
is "the first refusal is first seen, the next not" "$(seen permission read)" "True False"
is "the refused call never started" "$(seen tool-call-start read)" ""

# Another user: the same app and tool are new for them.
standin_start "[$FARE]"
echo fare | ask --memory "$MEM" --user other --answers "$(answers '{"default": "once"}')" >/dev/null
is "another user's first use is first seen for them" "$(seen tool-call-start estimate)" \
    "True False False True"

# --memory none: first seen within the hub session.
: >"$AUDIT"
standin_start "[$FARE, $FARE]"
printf 'fare\nfare\n' | ask --memory none --answers "$(answers '{"default": "session"}')" >/dev/null
is "--memory none: first seen within the session" "$(seen tool-call-start estimate)" "True False"
done_testing
