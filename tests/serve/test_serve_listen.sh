#!/usr/bin/env bash
# subscriptions/listen, the 2026-07-28 way to hear that the lists changed
# (tests/serve/listen_probe.py): acknowledged with what the hub honours (the list
# changes, not resource updates), then the list changes each subscription asked for,
# under its own id, when an app is added or removed; a malformed filter or a second
# subscription under an open one's id refused; a cancelled subscription hears nothing
# more; the hub's end answers an open one; over HTTP on the request's own event stream,
# which, closed, ends the subscription and its session in the hub. Spokes in none mode.
. "$(dirname "$0")/../lib.sh"
require_root
MODE=none
. "$ROOT/tests/serve/serve_lib.sh"
serve_setup
MPORT=$(free_port)
serve_http_start --metrics "127.0.0.1:$MPORT"
$PY "$ROOT/tests/serve/listen_probe.py" "$BIN/hub" "$CONF" "$ROOT/tests/serve" "$SPOKES" "$URL" \
    "http://127.0.0.1:$MPORT/metrics" >"$TMP/out" 2>"$TMP/err"
diag "$(tail -5 "$TMP/err")"
got() { sed -n "s/^$1 //p" "$TMP/out"; }

is "acknowledged under its id with what the hub honours: the list changes asked for, no resource updates" \
    "$(got ack)" '{"_meta": {"io.modelcontextprotocol/subscriptionId": "L1"}, "notifications": {"resourcesListChanged": true, "toolsListChanged": true}}'
is "a filter that is not an object: -32602" "$(got bad-filter)" -32602
is "a flag that is not a boolean: -32602" "$(got bad-flag)" -32602
is "a second subscription under an open one's id: -32600" "$(got duplicate)" '[-32600]'
is "an app added: each subscription hears what it asked for, under its own id, and nothing else" \
    "$(got added)" '[["notifications/prompts/list_changed", 2], ["notifications/resources/list_changed", "L1"], ["notifications/tools/list_changed", "L1"]]'
is "a cancelled subscription hears nothing more (and is not answered); the other still hears" \
    "$(got after-cancel)" '[["notifications/prompts/list_changed", 2]]'
is "the hub's end answers the open subscription: complete, under its id" "$(got hub-end)" '[[2, "complete", 2]]'
is "... and the hub ended cleanly" "$(got stdio-rc)" 0
is "HTTP: the listen request's answer is an event stream" "$(got h-status)" '["HTTP/1.1 200 OK", "text/event-stream"]'
is "... which first says what is acknowledged" "$(got h-ack)" '[["notifications/subscriptions/acknowledged", 7]]'
is "... while it is open, its session is" "$(got h-open)" 1
is "... an app added: on that stream, under its id" "$(got h-added)" '[["notifications/tools/list_changed", 7]]'
is "... the client closing the stream ends the subscription and its session" "$(got h-closed)" 0
check "the HTTP hub still runs" kill -0 "$SERVE_PID"
done_testing
