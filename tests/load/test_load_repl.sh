#!/usr/bin/env bash
# The correctness part of the repl-server's load run (scripts/load/repl, make load) at a
# size the suite can afford: 16 sessions opened at once, then driven concurrently for
# 2 s. Every answer must be the session's own marker and its own run count (state
# kept, no session answering for another), no request may fail, and no sandbox process
# may outlive the server's SIGTERM. The figures it prints are not judged.
. "$(dirname "$0")/../lib.sh"
require_root
LOAD_SESSIONS=16 LOAD_SECONDS=2 "$ROOT/scripts/load/repl" >"$TMP/table" 2>"$TMP/err"
is "the load run passed its own checks" "$?" 0
sed 's/^/# /' "$TMP/table"
row() { grep -F "$1" "$TMP/table" | awk -F'|' '{gsub(/ /, "", $3); print $3}'; }
is "every session's every answer was its own marker and run count" \
    "$(row "sessions whose every answer")" "16of16"
is "no request failed" "$(row "| errors |")" 0
is "no sandbox process outlived the server" "$(row "left after the server")" 0
done_testing
