#!/usr/bin/env bash
# hub serve follows its spokes directory: an app added, changed while its spoke runs,
# or removed is offered at once and every client is told (notifications/tools/
# list_changed), over stdio and over HTTP's event stream; a manifest that does not
# load changes nothing (tests/serve/reload_probe.py). Spokes in none mode.
. "$(dirname "$0")/../lib.sh"
require_root
MODE=none
. "$ROOT/tests/serve/serve_lib.sh"
serve_setup
cp "$SPOKES/beta.json" "$TMP/beta.orig.json"

# Over stdio: the background hub that hub serve --stdio starts follows the directory.
$PY "$ROOT/tests/serve/reload_probe.py" stdio "$SPOKES" "$AUDIT" "$BIN/hub" serve --stdio --config "$CONF" --allow-data-flows
like "the log says what changed" "$(cat "$RUN/serve-background.log")" 'added epsilon'
like "... and why a directory did not load" "$(cat "$RUN/serve-background.log")" \
    'does not load \(the apps stay as they were\): .*zeta.json'
stop_background

# The same over HTTP, the notifications on the session's GET stream.
cp "$TMP/beta.orig.json" "$SPOKES/beta.json"
rm -f "$SPOKES/notes.txt"
TOKENS=$TMP/tokens
TOKEN=$("$BIN/hub" serve token add tester --tokens "$TOKENS")
serve_http_start --tokens "$TOKENS" --allow-data-flows
: >"$AUDIT"
$PY "$ROOT/tests/serve/reload_probe.py" http "$SPOKES" "$AUDIT" "$URL" "$TOKEN"
kill "$SERVE_PID"
wait "$SERVE_PID" 2>/dev/null
done_testing
