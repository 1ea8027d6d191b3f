#!/usr/bin/env bash
# hub serve driven by the official MCP TypeScript SDK client (tests/serve/client.mjs)
# over stdio and over Streamable HTTP: tools listed and called, the hub's permission
# question answered as an elicitation, a spoke's own question and sampling request
# reaching the client, its progress and log messages, a cancelled call, a client that cannot be asked refused with
# the reason. Spokes run in namespace mode.
. "$(dirname "$0")/../lib.sh"
require_root
MODE=namespace
. "$ROOT/tests/serve/serve_lib.sh"
if ! have_sdk; then
    skip "hub serve with the MCP SDK client" "no node or tests/serve/node_modules (make deps)"
    exit 0
fi
serve_setup "$ROOT/tests/serve/manifests/conformance.json"
mode_needs_jail_skip

node "$SDK_DIR/client.mjs" stdio "$BIN/hub" "$CONF" 2>"$TMP/stdio.err"
[ $? -eq 0 ] || diag "stdio stderr: $(tail -5 "$TMP/stdio.err")"

# The stdio hub attached to a background hub it started; the HTTP hub below is the
# one that runs the spokes now (two hubs would contend for the apps' data).
stop_background
TOKEN=$("$BIN/hub" serve token add tester --tokens "$TMP/tokens")
serve_http_start --tokens "$TMP/tokens" --allow-data-flows
node "$SDK_DIR/client.mjs" http "$URL" "$TOKEN" 2>"$TMP/http.err"
[ $? -eq 0 ] || diag "http stderr: $(tail -5 "$TMP/http.err")"

# The audit log tells who came, with what, and what they did.
is "session start records with the SDK client's name" \
    "$(audit_count 'g(r,"event.action")=="serve-session-start" and g(r,"user_agent.name")=="serve-test"')" 2
is "session end records" "$(audit_count 'g(r,"event.action")=="serve-session-end"')" 4
like "calls recorded with their outcome" \
    "$(audit_count 'g(r,"event.action")=="serve-call" and g(r,"isolate.serve.result")=="success"')" '^[1-9][0-9]+$'
is "the HTTP sessions' remote address is recorded" \
    "$(audit_count 'g(r,"event.action")=="serve-session-start" and (g(r,"source.address") or "").startswith("127.0.0.1:")')" 2
is "the permission decisions are in the hub's log with the client's answer" \
    "$(audit_count 'g(r,"event.action")=="permission" and "through the client" in (g(r,"event.reason") or "")')" 10
kill "$SERVE_PID"
wait "$SERVE_PID" 2>/dev/null
is "the cancelled calls are on record as such" \
    "$(audit_count 'g(r,"event.action")=="serve-call" and g(r,"isolate.serve.result")=="cancelled"')" 2
kill "$SERVE_PID" 2>/dev/null
is "no spoke left running" "$(leftover_procs)" 0
done_testing
