#!/usr/bin/env bash
# hub serve --stdio against a sloppy or hostile client (tests/serve/stdio_probe.py):
# requests before initialize, frames that are not JSON, batches, a second initialize,
# unknown methods and tools, answers and cancellations of nothing, an oversized frame;
# and the options that would mix something into the MCP stream. Spokes in none mode.
. "$(dirname "$0")/../lib.sh"
require_root
MODE=none
. "$ROOT/tests/serve/serve_lib.sh"
serve_setup
$PY "$ROOT/tests/serve/stdio_probe.py" "$BIN/hub" serve --stdio --config "$CONF"

"$BIN/hub" serve --stdio --config "$CONF" --audit - </dev/null >"$TMP/out" 2>"$TMP/err"
is "--audit - is refused with --stdio (it would write into the MCP stream)" "$?" 2
is "... and nothing went to stdout" "$(wc -c <"$TMP/out")" 0
"$BIN/hub" serve --stdio --config "$CONF" --app nothing </dev/null 2>"$TMP/err"
like "--app with an app that is not installed is refused" "$(cat "$TMP/err")" 'no such app'
"$BIN/hub" serve --stdio --http 127.0.0.1:1 --config "$CONF" </dev/null 2>"$TMP/err"
like "--stdio and --http together are refused" "$(cat "$TMP/err")" 'exactly one of'
is "session start and end are on record" \
    "$(audit_count 'g(r,"event.action") in ("serve-session-start","serve-session-end")')" 2
done_testing
