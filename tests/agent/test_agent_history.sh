#!/usr/bin/env bash
# The conversation history in Redis: each request and answer is stored per user, is
# there after the hub is killed with SIGKILL, survives a Redis restart (the hub
# reconnects without losing what it wrote) and a SIGKILL of redis-server (AOF).
. "$(dirname "$0")/../lib.sh"
require_root
MODE=process
. "$ROOT/tests/agent/agent_lib.sh"
agent_setup
redis_start
SOCK=${MEM#unix:}
KEY="isolategpt:$AUSER:history"
texts() { redis-cli -s "$SOCK" lrange "$KEY" 0 -1 | jlines 'd["role"] + "=" + d["text"]'; }

standin_start '[text("Answer one."), text("Answer two."), text("Answer three."), text("Answer four.")]'
# A hub that reads requests from a FIFO, so that it can be killed while it waits.
start_hub() {
    rm -f "$TMP/in"
    mkfifo "$TMP/in"
    "$BIN/hub" --config "$CONF" --llm "$LLM_URL" --memory "$MEM" --answers allow --json \
        <"$TMP/in" >>"$TMP/out" 2>>"$TMP/err" &
    HUB_PID=$!
    at_exit "kill -9 $HUB_PID; wait $HUB_PID"
    exec 3>"$TMP/in"
}
answers_seen() { cat "$TMP/out" 2>/dev/null | grep -c '"status"'; }
seen_at_least() { [ "$(answers_seen)" -ge "$1" ]; }

start_hub
echo "first request" >&3
wait_for "the first answer" 10 seen_at_least 1
is "request and answer are stored" "$(texts)" "user=first request assistant=Answer one."
kill -9 "$HUB_PID"
wait "$HUB_PID" 2>/dev/null
exec 3>&-
is "after kill -9 of the hub the history is still there" "$(texts)" "user=first request assistant=Answer one."

start_hub
# Redis restarts under the running hub, once the hub is connected: stop (it flushes),
# start (it loads the AOF).
hub_connected() { redis-cli -s "$SOCK" info clients | grep -q '^connected_clients:[2-9]'; }
wait_for "the hub to connect to Redis" 10 hub_connected
"$ROOT/scripts/redis-private" stop "$REDIS_DIR" >/dev/null
"$ROOT/scripts/redis-private" start "$REDIS_DIR" >/dev/null 3>&- # the daemon must not hold the FIFO open
echo "second request" >&3
wait_for "the second answer" 15 seen_at_least 2
is "after a Redis restart the hub reconnects and answers" "$(tail -n 1 "$TMP/out" | jget 'd["status"]')" ok
is "... and the history holds both conversations" "$(texts)" \
    "user=first request assistant=Answer one. user=second request assistant=Answer two."

# redis-server killed with SIGKILL: what it acknowledged is in its AOF.
kill -9 "$(cat "$REDIS_DIR/redis.pid")"
wait_for "redis-server to be gone" 5 bash -c "! redis-cli -s '$SOCK' ping"
"$ROOT/scripts/redis-private" start "$REDIS_DIR" >/dev/null 3>&-
echo "third request" >&3
wait_for "the third answer" 15 seen_at_least 3
is "after kill -9 of redis-server nothing acknowledged was lost" "$(texts)" \
    "user=first request assistant=Answer one. user=second request assistant=Answer two. user=third request assistant=Answer three."
exec 3>&-
wait "$HUB_PID"
is "the hub ends at the end of its input" "$?" 0

# The next session's planner sees the earlier requests (never the answers).
standin_start '[text("ok")]'
echo "fourth request" | ask --memory "$MEM" --answers allow >/dev/null
is "the planner is shown the earlier requests" \
    "$(standin_requests '"tools" in b and "- first request" in b["messages"][1]["content"] and "- third request" in b["messages"][1]["content"]')" 1
is "... but none of the answers (they were composed from app output)" \
    "$(standin_requests 'any("Answer one" in str(m.get("content")) for m in b["messages"])')" 0
MODE=none
agent_config '{}'
standin_start '[text("ok")]'
echo "fifth request" | ask --memory "$MEM" --answers allow >/dev/null
is "the baseline's one context is shown the answers too" \
    "$(standin_requests 'any("Answer one" in str(m.get("content")) for m in b["messages"])')" 1

# The hub's own private redis-server (no memory configured) stops under a running hub:
# the hub starts it again before the next request instead of failing it after the
# reconnect window.
MODE=process
agent_config '{}'
PRIV=$RUN/redis
standin_start '[text("Private one."), text("Private two.")]'
rm -f "$TMP/in" "$TMP/out" "$TMP/err"
mkfifo "$TMP/in"
"$BIN/hub" --config "$CONF" --llm "$LLM_URL" --answers allow --json <"$TMP/in" >>"$TMP/out" 2>>"$TMP/err" &
HUB_PID=$!
at_exit "kill -9 $HUB_PID; wait $HUB_PID; '$ROOT/scripts/redis-private' stop '$PRIV'"
exec 3>"$TMP/in"
echo "private request one" >&3
wait_for "the first answer (private redis)" 10 seen_at_least 1
"$ROOT/scripts/redis-private" stop "$PRIV" >/dev/null
t0=$(date +%s%N)
echo "private request two" >&3
wait_for "the second answer (private redis)" 10 seen_at_least 2
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
is "the private redis-server stopped: the next request is answered" "$(tail -n 1 "$TMP/out" | jget 'd["status"]')" ok
check "... without waiting out the reconnect window (${ms} ms)" test "$ms" -lt 4000
like "... and the user is told it was started again" "$(cat "$TMP/err")" \
    "hub: the hub's private redis-server \(.*/redis\) was not running: started it again"
is "... the history of both requests is in it" \
    "$(redis-cli -s "$PRIV/redis.sock" lrange "isolategpt:$AUSER:history" 0 -1 | jlines 'd["text"]')" \
    "private request one Private one. private request two Private two."
exec 3>&-
wait "$HUB_PID"
check "... and the hub stops it when it ends (it started it)" bash -c "! redis-cli -s '$PRIV/redis.sock' ping"
done_testing
