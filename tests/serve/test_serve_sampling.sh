#!/usr/bin/env bash
# hub serve --llm: a spoke's sampling request, from a client that samples no model
# itself, is answered by the hub's own LLM (an OpenAI-compatible stand-in here) on a
# thread of its own, under llm.sampling_*; without --llm it is declined. Spokes in none
# mode. The first hub serve --stdio starts the background hub, which gets its --llm and
# the key from its environment.
. "$(dirname "$0")/../lib.sh"
require_root
MODE=none
. "$ROOT/tests/serve/serve_lib.sh"
. "$ROOT/tests/llm/standin_lib.sh"
serve_setup
$PY - "$CONF" <<'PYEOF'
import json, sys
c = json.load(open(sys.argv[1]))
c["llm"] = {"sampling_burst": 1, "sampling_per_minute": 1, "sampling_max_tokens": 15}
json.dump(c, open(sys.argv[1], "w"))
PYEOF
standin_start '[text("Hello from the hub'"'"'s LLM.", delay_ms=1500)]'
OPENAI_API_KEY=sk-itest-serve-sampling \
    $PY "$ROOT/tests/serve/sampling_probe.py" "$BIN/hub" serve --stdio --config "$CONF" --llm "$LLM_URL" --model standin-model \
        --allow-data-flows
is "the LLM got one request, in the spoke's own context" "$(standin_requests)" 1
is "... with the spoke's words only and no tools" \
    "$(standin_requests '"tools" not in b and [m["content"] for m in b["messages"]] == ["Say hi."]')" 1
is "... maxTokens capped by llm.sampling_max_tokens" "$(standin_requests 'b.get("max_tokens") == 15')" 1
is "... and the key from the hub's environment" \
    "$(standin_requests 'r["headers"].get("authorization") == "Bearer sk-itest-serve-sampling"')" 1
is "the LLM call is audited in the spoke's context" \
    "$(audit_count "g(r,'event.action')=='llm-call' and g(r,'isolate.llm.context')=='spoke:beta'")" 1
is "the runtime audits both sampling requests" "$(audit_count "g(r,'event.action')=='sampling'")" 2

# Without --llm the request is declined, as before (by a hub started without it: the
# background hub the first hub serve --stdio started is stopped).
stop_background
out=$({ printf '%s\n' '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}' \
    '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"beta__sample","arguments":{}}}'
    sleep 3; } | "$BIN/hub" serve --stdio --config "$CONF" 2>/dev/null | grep '"id":2')
like "without --llm a spoke's sampling request is declined" "$out" 'no LLM'
"$BIN/hub" serve --stdio --config "$CONF" --llm "ftp://nowhere" --model m </dev/null 2>"$TMP/err"
is "an unusable --llm is refused at start" "$?" 2
like "... saying why" "$(cat "$TMP/err")" '--llm: '
done_testing
