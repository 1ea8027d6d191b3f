#!/usr/bin/env bash
# MCP 2026-07-28 towards clients (tests/serve/modern_probe.py): server/discover and
# stateless requests with per-request _meta over stdio, beside a legacy session on the
# same stream, and over HTTP with the request metadata headers checked against the body;
# the protocol's errors and their HTTP statuses; log messages only when asked for; no
# request of the hub's to such a client (its questions and a spoke's go as the answer
# input_required); a closed stream cancels its request; the 2024-11-05 header on a
# legacy session. Spokes in none mode.
. "$(dirname "$0")/../lib.sh"
require_root
MODE=none
. "$ROOT/tests/serve/serve_lib.sh"
serve_setup "$ROOT/tests/serve/manifests/conformance.json"
serve_http_start --allow-data-flows
$PY "$ROOT/tests/serve/modern_probe.py" "$BIN/hub" "$CONF" "$ROOT/tests/serve" "$URL" \
    >"$TMP/out" 2>"$TMP/err"
diag "$(tail -5 "$TMP/err")"
got() { sed -n "s/^$1 //p" "$TMP/out"; }

d=$(got discover)
like "server/discover: the modern versions" "$d" '"supportedVersions": \["2026-07-28"\]'
like "... the capabilities, the lists' changes offered (subscriptions/listen)" "$d" '"capabilities": \{.*"prompts": \{"listChanged": true\}.*"tools": \{"listChanged": true\}'
like "... the identity in _meta, resultType, caching hints" "$d" '"_meta": \{"io.modelcontextprotocol/serverInfo": \{"name": "isolategpt-hub".*"cacheScope": "private".*"resultType": "complete".*"ttlMs": 0'
like "tools/list without initialize: resultType, ttlMs, cacheScope, serverInfo" "$(got list)" '"cacheScope": "private", "n": [1-9][0-9]*, "resultType": "complete", "server": "isolategpt-hub", "ttlMs": 0'
is "tools/call without initialize" "$(got call)" '{"resultType": "complete", "sc": {"text": "hi"}}'
like "an unsupported version: -32022 with the supported ones and the requested" "$(got bad-version)" '"code": -32022.*"requested": "1900-01-01", "supported": \["2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26"\]'
like "_meta without clientCapabilities: -32602" "$(got no-caps)" '"code": -32602'
is "ping is not a method of 2026-07-28" "$(got ping)" -32601
is "no log message for a request that named no level" "$(got log-without-level)" 0
is "... three for one that named info" "$(got log-with-level)" 3
like "a question for a modern request is not put to its client, and the refusal says why" "$(got question)" 'a 2026-07-28 request: the hub sends it no requests'
is "a client that declared elicitation gets the question as the answer: input_required, elicitation/create, a requestState" \
    "$(got mrtr-1)" '["input_required", "elicitation/create", true, 32]'
is "... a requestState the hub did not give is refused" "$(got mrtr-forged)" -32602
is "... and so is the right one with other arguments" "$(got mrtr-other-args)" -32602
is "... answered on retries (the call, then the result's way back), the call completes" "$(got mrtr-done)" '[2, "complete", true]'
is "... and the state, spent, cannot be replayed" "$(got mrtr-replay)" -32602
is "a spoke's elicitation for a modern request: input_required, under the app's label" \
    "$(got spoke-elicit)" '["input_required", "elicitation/create", "[conformance] your name?", ["email", "username"]]'
is "... the retry's answer reaches the spoke" "$(got spoke-elicit-done)" \
    '["complete", "User response: action=accept, content={\"username\":\"ann\",\"email\":\"a@x\"}"]'
is "a spoke's sampling request for a client that declared sampling: input_required, no other context, labelled" \
    "$(got spoke-sample)" '["input_required", "sampling/createMessage", "none", true]'
is "... the retry's message reaches the spoke" "$(got spoke-sample-done)" '["complete", "LLM response: hi there"]'
like "... a client that did not declare sampling is not asked (declined: no --llm)" "$(got spoke-sample-undeclared)" '^\["complete", "Sampling failed: '
like "a spoke's question in the hub's words is refused, not sent" "$(got spoke-elicit-hub-words)" '^\["complete", "Elicitation failed: .*hub.s words'
is "... no request of the hub's went to the client" "$(got requests-sent)" 0
is "the same stdio stream still takes initialize" "$(got legacy)" 2025-11-25
is "... and then ping" "$(got legacy-ping)" true
is "the stdio hub ended cleanly" "$(got stdio-rc)" 0

is "HTTP server/discover: 200, the versions, complete, no session id" "$(got h-discover)" '[200, ["2026-07-28"], "complete", null]'
is "HTTP tools/call with the headers, no session" "$(got h-call)" '[200, {"text": "over http"}, "complete"]'
is "Mcp-Name in its base64 form" "$(got h-b64)" 200
is "an Mcp-Name other than the body's: 400, HeaderMismatch, the request's id" "$(got h-name-mismatch)" '[400, -32020, 4]'
is "no Mcp-Name: 400, HeaderMismatch" "$(got h-no-name)" '[400, -32020]'
is "an Mcp-Method other than the body's: 400, HeaderMismatch" "$(got h-method-mismatch)" '[400, -32020]'
is "a MCP-Protocol-Version header other than the body's: 400, HeaderMismatch" "$(got h-version-mismatch)" '[400, -32020]'
is "an unknown method: 404, -32601" "$(got h-unknown)" '[404, -32601]'
is "an unsupported version: 400, -32022, what is supported" "$(got h-unsupported)" '[400, -32022, ["2026-07-28", "2025-11-25"]]'
is "_meta without clientCapabilities: 400, -32602" "$(got h-no-caps)" '[400, -32602]'
is "a legacy session's MCP-Protocol-Version: 2024-11-05 is served" "$(got h-2024)" '[200, true]'
wait_for "the closed stream's call to be audited" 60 audit_at_least 1 'g(r,"event.action")=="serve-call" and g(r,"isolate.tool")=="sleep"'
is "closing a modern request's stream cancels its call" \
    "$(audit_count 'g(r,"event.action")=="serve-call" and g(r,"isolate.tool")=="sleep" and g(r,"isolate.serve.result")=="cancelled"')" 1
is "stateless requests open no session on record" \
    "$(audit_count 'g(r,"event.action")=="serve-session-start" and g(r,"isolate.serve.transport")=="http"')" 1
done_testing
