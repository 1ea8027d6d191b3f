#!/usr/bin/env bash
# Fault: the hub's private redis-server (scripts/redis-private: AOF, fsync before every
# acknowledgement) killed with SIGKILL under a running assistant, three times:
#   - while the hub is idle: the next request cannot be stored, so it is not run at
#     all; the user gets an error that names the memory (not a silent loss, and no
#     step that the history would not show);
#   - just before a request, restarted within the reconnect window: the hub notices the
#     lost connection, reconnects and the request runs as if nothing happened;
#   - while the LLM works on a request: its step, whose grant cannot be read, is
#     refused (fail closed); the answer is shown with a warning that it was not stored
#     (in the JSON result, on the terminal, in the audit).
# Afterwards (Redis back, the same hub) everything that was acknowledged before each
# kill is in Redis, an "always" grant given before the first kill still decides
# without a question, and nothing else is there: no entry of the refused request.
# Last, at the terminal (tmux): Redis killed while the user is asked; the user answers
# "always"; the step runs (the user decided), and the user is told on the terminal
# that neither the grant nor the answer was stored.
. "$(dirname "$0")/../lib.sh"
require_root
MODE=process
. "$ROOT/tests/faults/faults_lib.sh"
fault_setup '{"memory": {"reconnect_ms": 4000}}'
redis_start
SOCK=${MEM#unix:}
HIST="isolategpt:$AUSER:history"
texts() { redis-cli -s "$SOCK" lrange "$HIST" 0 -1 | jlines 'd["role"] + "=" + d["text"]'; }
redis_pid() { cat "$REDIS_DIR/redis.pid"; }
redis_kill9() {
    local pid
    pid=$(redis_pid)
    kill -9 "$pid"
    wait_for "redis-server $pid to be gone" 5 bash -c "! kill -0 $pid 2>/dev/null"
}
redis_up() { "$ROOT/scripts/redis-private" start "$REDIS_DIR" >/dev/null 3>&-; }
lines_in() { [ "$(grep -c '"status"' "$TMP/out" 2>/dev/null)" -ge "$1" ]; }
last() { tail -n 1 "$TMP/out" | jget "$1"; }
echo '{"default": "always"}' >"$TMP/always.json"

FARE='plan(("fare__estimate", {"from": "A", "to": "B"})), text("23 USD")'
standin_start "[$FARE, text(\"Answer E.\"),
    plan((\"fare__estimate\", {\"from\": \"C\", \"to\": \"D\"}), delay_ms=2500), text(\"Answer C.\"), $FARE]"
rm -f "$TMP/in"
mkfifo "$TMP/in"
"$BIN/hub" --config "$CONF" --llm "$LLM_URL" --memory "$MEM" --answers "$TMP/always.json" \
    --json <"$TMP/in" >"$TMP/out" 2>"$TMP/err" &
HUB_PID=$!
at_exit "kill -9 $HUB_PID"
exec 3>"$TMP/in"

echo "request A" >&3
wait_for "answer A" 20 lines_in 1
is "A: the request ran (always granted)" "$(last 'd["calls"][0]["outcome"]')" ok
is "A: the grant is in Redis" \
    "$(redis-cli -s "$SOCK" hget "isolategpt:$AUSER:grants" 'exec|fare|estimate|*' | jget 'd["scope"]')" always
is "A: request and answer are in Redis" "$(texts)" "user=request A assistant=23 USD"

# 1. Redis killed while the hub is idle; the next request comes while it is down.
redis_kill9
llm_before=$(standin_requests)
t0=$(date +%s%N)
echo "request B" >&3
wait_for "answer B" 20 lines_in 2
took_ms=$((($(date +%s%N) - t0) / 1000000))
is "B (Redis down): the request fails" "$(last 'd["status"]')" failed
like "B: ... with an error that names the memory" "$(last 'd["error"]')" "^memory: .*Redis"
like "B: ... and that it gave up after the reconnect window" "$(last 'd["error"]')" "gave up after 4000 ms"
check "B: ... after trying for the window, not forever (${took_ms} ms)" test "$took_ms" -lt 15000
is "B: nothing ran: no LLM request was made" "$(standin_requests)" "$llm_before"
is "B: the failure is audited with its reason" \
    "$(audit_count "g(r,'event.action')=='agent-answer' and g(r,'event.outcome')=='failure' and 'memory:' in (g(r,'event.reason') or '')")" 1
like "B: the hub said it lost the connection" "$(cat "$TMP/err")" "lost the connection to Redis"

# 2. Redis back within the window while a request waits for it.
echo "request E" >&3
sleep 0.5
redis_up
wait_for "answer E" 20 lines_in 3
is "E (Redis restarted during the request): the request is answered" "$(last 'd["status"]')" ok
is "E: ... with no warning" "$(last 'd["warnings"]')" "[]"
like "E: the hub said it reconnected" "$(cat "$TMP/err")" "reconnected to Redis"

# 3. Redis killed while the planner's LLM call runs (the stand-in waits 2.5 s): the
# plan's step needs a grant that cannot be read now, and the answer cannot be stored.
echo "request C" >&3
llm_got_c() { [ "$(standin_requests)" -ge "$((llm_before + 2))" ]; }
wait_for "the LLM call of C" 20 llm_got_c
redis_kill9
wait_for "answer C" 30 lines_in 4
is "C (Redis killed mid-request): the step is not run (fail closed), a failure of the grant store" \
    "$(last 'd["calls"][0]["outcome"] + "/" + d["calls"][0]["layer"]')" failed/grant-store
like "C: ... saying the grant store cannot be read and that the user denied nothing" \
    "$(last 'd["calls"][0]["error"]')" "grant store cannot be read.*you denied nothing"
is "C: ... and no re-plan as if the user had refused" "$(last 'd["replans"]')" 0
is "C: the answer is shown" "$(last 'd["answer"]')" "Answer C."
like "C: ... with a warning that it was not stored" "$(last 'd["warnings"][0]')" \
    "^the assistant's entry was not stored in the history: .*Redis"
is "C: the warning is in the audit" \
    "$(audit_count "g(r,'event.action')=='agent-answer' and len(g(r,'isolate.agent.warnings') or [])==1")" 1

# Redis back: the always grant from before the first kill decides (no question).
redis_up
echo "request D" >&3
wait_for "answer D" 20 lines_in 5
is "D: the request runs on the grant stored before the kills" "$(last 'd["calls"][0]["outcome"]')" ok
is "D: ... asked once in all (for A)" \
    "$(audit_count "g(r,'event.action')=='permission-question' and g(r,'isolate.app')=='fare'")" 1
exec 3>&-
wait "$HUB_PID"
is "the hub ends at the end of its input, with status 1 (a request was not answered)" "$?" 1
is "Redis holds every acknowledged write, and nothing of the refused request" "$(texts)" \
    "user=request A assistant=23 USD user=request E assistant=Answer E. user=request C user=request D assistant=23 USD"
is "the grant survived two kill -9 of redis-server" \
    "$(redis-cli -s "$SOCK" hget "isolategpt:$AUSER:grants" 'exec|fare|estimate|*' | jget 'd["scope"]')" always

# At the terminal: Redis dies while the permission question waits for the user.
if ! command -v tmux >/dev/null; then
    skip "a grant given while Redis is down, at the terminal" "tmux is not installed"
    done_testing
    exit
fi
standin_start '[plan(("fare__estimate", {"from": "A", "to": "B"})), sse("The fare is 23 USD.")]'
exec 3>&1 # where wait_pane shows the screen when it fails
T="tmux -L itest-fault-$$"
at_exit "$T kill-server"
$T -f /dev/null new-session -d -s s -x 200 -y 50 \
    "$BIN/hub --config $CONF --llm $LLM_URL --memory $MEM --user prompter; echo hub-exited-\$?; sleep 30"
pane() { $T capture-pane -p -J -t s -S -200; }
pane_has() { pane | grep -qF -- "$1"; }
wait_pane() {
    if ! wait_for "\"$1\" on the terminal" "${2:-10}" pane_has "$1"; then
        pane | sed 's/^/#   | /' >&3
        return 1
    fi
}
check "terminal: the session starts" wait_pane "you›" 20
$T send-keys -t s "fare please" Enter
check "terminal: the permission question appears" wait_pane "hub: permission needed" 20
redis_kill9
$T send-keys -t s "a" Enter
check "terminal: the step runs on the user's answer" wait_pane "The fare is 23 USD." 30
check "terminal: the user is told the always grant was not stored" \
    wait_pane "the always grant for fare.estimate was not stored" 20
check "terminal: ... and that the answer was not stored" \
    wait_pane "the assistant's entry was not stored in the history" 20
pane | grep -E "not stored|23 USD" | sed 's/^/# terminal | /'
$T send-keys -t s "/quit" Enter
wait_pane "hub-exited-" 10 >/dev/null
redis_up
is "terminal: no grant of that user in Redis (it was never acknowledged)" \
    "$(redis-cli -s "$SOCK" hlen "isolategpt:prompter:grants")" 0
is "terminal: the request itself is in the history (stored before the kill)" \
    "$(redis-cli -s "$SOCK" lrange "isolategpt:prompter:history" 0 -1 | jlines 'd["role"] + "=" + d["text"]')" \
    "user=fare please"
is "terminal: the lost grant is audited" \
    "$(audit_count "g(r,'event.action')=='permission-grant' and g(r,'event.outcome')=='failure' and g(r,'isolate.user')=='prompter'")" 1
done_testing
