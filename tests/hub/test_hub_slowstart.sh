#!/usr/bin/env bash
# A spoke's jail is set up off the hub's event loop: while a namespace spoke starts
# slowly, for a real reason (its /data holds many files, which nsjail-lite hands to
# the jail's host id before the jail starts), an already running spoke's calls are
# answered promptly; a spoke whose program does not exist still gets its 127 "not
# found" error, at every call; and a spoke closed, or the hub freed, while a jail is
# starting leaves no process behind. Driven through the hub's API by slowstart.c.
. "$(dirname "$0")/../lib.sh"
require_root
MODE=namespace
. "$ROOT/tests/hub/hub_lib.sh"
hub_setup
$PY - "$SPOKES" <<'PYEOF'
import json, sys
m = json.load(open(sys.argv[1] + "/alpha.json"))
m["name"] = "ghost"
m["command"] = ["itest-no-such-program"]
json.dump(m, open(sys.argv[1] + "/ghost.json", "w"))
PYEOF
# 20,000 files in the /data of alpha's instance "big": a few hundred milliseconds of
# chown at each of its starts.
BIG=$DATA/tester/alpha.big
mkdir -p "$BIG"
(cd "$BIG" && mkdir d{1..200} && touch d{1..200}/f{1..100})
cp "$BIN/tests/hub/slowstart" "$TMP/slowstart"

"$TMP/slowstart" "$CONF" "$BIN" >"$TMP/out.json" 2>"$TMP/err"
is "the hub driver ran" "$?" 0
get() { $PY -c 'import json,sys; d=json.load(open(sys.argv[1]))
for k in sys.argv[2].split("."): d = d[k]
print(json.dumps(d) if isinstance(d, bool) else d)' "$TMP/out.json" "$1" 2>/dev/null; }
diag "slow start alone $(get big_alone_ms) ms, beside calls $(get big_ms) ms;" \
    "$(get echo_answered) warm calls meanwhile, slowest $(get echo_max_ms) ms"
is "the warm spoke answers" "$(get warm_ok)" true
is "the slow spoke starts and answers, alone" "$(get big_alone_ok)" true
is "  and again beside the warm spoke's calls" "$(get big_ok)" true
is "  no warm call failed meanwhile" "$(get echo_failed)" 0
check "the warm spoke answered while the slow one started" test "$(get echo_answered)" -gt 0
# The start alone takes its chown, the jail and initialize; a loop that waited for the
# jail's setup would hold every warm call for most of it.
check "  its slowest call took under half the slow start ($(get echo_max_ms) ms vs $(get big_alone_ms) ms)" \
    $PY -c 'import sys; sys.exit(0 if float(sys.argv[1]) < float(sys.argv[2]) / 2 else 1)' \
    "$(get echo_max_ms)" "$(get big_alone_ms)"
for i in 1 2; do
    is "a missing program: call $i fails" "$(get ghost$i.ok)" false
    like "  with the start error" "$(get ghost$i.message)" \
        "^spoke ghost could not start: .*itest-no-such-program: No such file or directory"
done
is "  each start audited as a failure with code 127" \
    "$(audit_count 'g(r,"event.action")=="spoke-start" and g(r,"isolate.app")=="ghost" and g(r,"event.outcome")=="failure" and g(r,"process.exit_code")==127')" 2
is "  and no other start of it" \
    "$(audit_count 'g(r,"event.action") in ("spoke-start","spoke-exit") and g(r,"isolate.app")=="ghost"')" 2
is "closed while starting: the call fails" "$(get closed_while_starting.ok)" false
is "  and its processes are reaped" "$(get procs_after_close)" 1
is "hub freed while a spoke's jail is set up (2 processes then)" "$(get procs_before_free)" 2
is "  the call is answered" "$(get freed_while_starting_answered)" true
is "no spoke program left" "$(leftover_procs)" 0
is "no monitor or init left" "$(pids_by_exe "$TMP/slowstart" | wc -l)" 0
done_testing
