#!/usr/bin/env bash
# What a spoke can make the hub write to disk (issue 27, finding 11): its log's cap held
# for one start of the same append-only file, so 20 calls (20 starts) wrote 20 caps; a
# call of 1000 log messages added 966 KiB of audit. Now the cap holds for the file
# (at the cap it is rotated to .1: two caps at most), and a call's progress and log
# records are budgeted (64 KiB; the rest counted in the call's own record).
. "$(dirname "$0")/../lib.sh"
MODE=none
. "$ROOT/tests/hub/hub_lib.sh"
hub_setup '{"spoke_log_max_bytes": 4096}'

LOG=$RUN/spokes/tester/alpha.log
text=$($PY -c 'print("x" * 3000, end="")')
for i in 1 2 3 4 5 6; do
    hubc alpha.log "{\"text\": \"$text\"}" >/dev/null 2>&1 || not_ok "call $i"
done
size=$(stat -c %s "$LOG" 2>/dev/null || echo 0)
old=$(stat -c %s "$LOG.1" 2>/dev/null || echo 0)
diag "after six starts of 3000 bytes each: $size bytes, $old in $LOG.1"
check "six starts writing 3000 bytes each keep the log under its cap (4096 + a note): $size" \
    test "$size" -le 4500
check "... the full one rotated to .1, also under the cap: $old" test "$old" -gt 0 -a "$old" -le 4500
like "... the log says where it stopped" "$(cat "$LOG" "$LOG.1")" 'log cap reached'

before=$(stat -c %s "$AUDIT")
out=$(hubc hostile.chatter '{"count": 1000}' 2>/dev/null)
is "a call of 1000 log messages of 900 bytes is answered" "$(echo "$out" | jget 'd["content"][0]["text"]')" chattered
grown=$(( $(stat -c %s "$AUDIT") - before ))
diag "the audit grew by $grown bytes"
# (The budget counts the records as the hub makes them; each line also carries its place
# in the hash chain, about 110 bytes more: docs/siem.md.)
check "... the audit log grew by less than 96 KiB ($grown bytes; 64 KiB of budget)" test "$grown" -lt 98304
like "... its log records up to the budget" "$(audit_count 'g(r,"event.action")=="spoke-log" and g(r,"isolate.app")=="hostile"')" '^[4-9][0-9]$'
n=$(audit_count 'g(r,"event.action")=="tool-call" and g(r,"isolate.tool")=="chatter" and (g(r,"isolate.events_unaudited") or 0) > 900')
is "... the rest counted in the call's own record (isolate.events_unaudited)" "$n" 1
done_testing
