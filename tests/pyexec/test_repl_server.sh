#!/usr/bin/env bash
# hub repl-server end to end in namespace mode: sessions that keep their state,
# tracebacks as errors, unknown sessions, eight concurrent clients that cannot see each
# other, hostile code contained for the right reason, runaway code interrupted (and
# killed when it ignores the interrupt) while other sessions keep answering, every
# class of malformed frame, the audit trail, and SIGTERM ending every sandbox.
. "$(dirname "$0")/../lib.sh"
. "$ROOT/tests/pyexec/pyexec_lib.sh"
require_root
pyexec_setup namespace

MAX_FRAME=65536
start_server --max-sessions 14 --time-limit 1 --max-frame $MAX_FRAME --idle-timeout 120 --pool 2 ||
    { not_ok "the server starts: $(cat "$TMP/server.err")"; exit 1; }
ok "the server listens on port $PORT"

cases alive "$PORT"
cases basic "$PORT"
cases isolation "$PORT" 8
cases hostile "$PORT" "$ROOT"
cases timeouts "$PORT" 1
cases malformed "$PORT" $MAX_FRAME
check "the server process is still running" kill -0 "$SRV_PID"
cases alive "$PORT"

# ---- the audit trail ----
has() { # DESC FILTER: at least one record matches
    local n
    n=$(audit_count "$2")
    if [ "$n" -gt 0 ]; then ok "$1 ($n)"; else not_ok "$1: no record matches $2"; fi
}
has "audit: session starts (with the client's address)" \
    'g(r,"event.action")=="repl-session-start" and g(r,"source.ip")=="127.0.0.1"'
has "audit: executions with size, duration and outcome" \
    'g(r,"event.action")=="repl-execute" and g(r,"source.bytes")>0 and g(r,"event.duration")>0 and g(r,"event.outcome")=="success"'
has "audit: an execution that raised" 'g(r,"event.action")=="repl-execute" and g(r,"event.reason")=="exception"'
has "audit: an execution interrupted at its time limit" 'g(r,"event.action")=="repl-execute" and g(r,"event.reason")=="timeout"'
has "audit: an execution killed with its sandbox" 'g(r,"event.action")=="repl-execute" and g(r,"event.reason")=="killed"'
has "audit: ... by the hub at the deadline" 'g(r,"event.action")=="spoke-kill" and g(r,"event.reason")=="deadline" and g(r,"isolate.app")=="code"'
has "audit: session ends (closed)" 'g(r,"event.action")=="repl-session-end" and g(r,"event.reason")=="closed"'
has "audit: session ends (killed)" 'g(r,"event.action")=="repl-session-end" and g(r,"event.reason")=="killed"'
for reason in oversized-frame invalid-utf8 invalid-json invalid-request unknown-session; do
    has "audit: refused request ($reason)" "g(r,\"event.action\")==\"repl-request\" and g(r,\"event.reason\")==\"$reason\""
done
is "audit: no code without --debug" "$(audit_count 'g(r,"isolate.code") is not None')" 0
sid=$(cases new "$PORT" | tail -1)
is "audit: a session id is never logged" "$(grep -c "$sid" "$AUDIT")" 0
is "the session's data directory is named by its instance, not its id" \
    "$(find "$DATA" -name "*$sid*" | wc -l)" 0

# ---- SIGTERM ----
running=$(leftover_sessions)
[ "$running" -ge 2 ] && ok "sessions are running before SIGTERM ($running)" ||
    not_ok "sessions are running before SIGTERM: $running"
stop_server
is "SIGTERM: the server exits 0" "$SRV_RC" 0
is "SIGTERM: no session's interpreter is left" "$(leftover_sessions)" 0
has "SIGTERM: sessions end with reason shutdown" 'g(r,"event.action")=="repl-session-end" and g(r,"event.reason")=="shutdown"'
is "SIGTERM: every session's data directory is removed" "$(session_dirs)" 0
is "SIGTERM: every session's spoke log is removed" "$(ls "$RUN/spokes/tester" 2>/dev/null | wc -l)" 0
is "the server wrote nothing alarming on stderr" \
    "$(grep -ciE 'sanitizer|runtime error|leak|assert' "$TMP/server.err")" 0
done_testing
