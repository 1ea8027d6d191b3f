#!/usr/bin/env bash
# scripts/redis-private: a unix socket only, AOF with fsync on every write, idempotent
# start, stop by pid file that never kills a process that is not its server.
. "$(dirname "$0")/../lib.sh"
rp="$ROOT/scripts/redis-private"
dir="/tmp/itest-memory-rp-$$"
at_exit "rm -rf '$dir'"
at_exit "'$rp' stop '$dir'"

sock=$("$rp" start "$dir")
is "start prints the socket path" "$sock" "$dir/redis.sock"
check "the server answers on it" test "$(redis-cli -s "$sock" ping)" = PONG
pid=$(cat "$dir/redis.pid")
is "no TCP port" "$(redis-cli -s "$sock" config get port | tail -n 1)" 0
is "no TCP listener of that pid" "$(ss -Hltnp 2>/dev/null | grep -c "pid=$pid,")" 0
is "append-only file on" "$(redis-cli -s "$sock" config get appendonly | tail -n 1)" yes
is "fsync before every acknowledgement" "$(redis-cli -s "$sock" config get appendfsync | tail -n 1)" always
is "protected mode" "$(redis-cli -s "$sock" config get protected-mode | tail -n 1)" yes
is "directory mode 0700" "$(stat -c %a "$dir")" 700
is "socket mode 0700" "$(stat -c %a "$sock")" 700

again=$("$rp" start "$dir")
is "a second start finds the running server" "$again" "$sock"
is "and starts no other" "$(cat "$dir/redis.pid")" "$pid"
check "status answers" "$rp" status "$dir"

redis-cli -s "$sock" rpush k v >/dev/null
kill -9 "$pid"
sock2=$("$rp" start "$dir")
is "start after kill -9" "$sock2" "$sock"
is "the data came back from the AOF" "$(redis-cli -s "$sock" lrange k 0 -1)" v

check "stop" "$rp" stop "$dir"
refute "status after stop" "$rp" status "$dir"
check "the socket is gone" test ! -e "$sock"
refute "stop when nothing runs is an error" "$rp" stop "$dir"

# A stale pid file naming some other process: stop must not touch it.
sleep 30 &
victim=$!
at_exit "kill $victim"
echo "$victim" >"$dir/redis.pid"
refute "stop refuses a pid that is not its redis-server" "$rp" stop "$dir"
check "and the other process lives" kill -0 "$victim"

long="/tmp/itest-memory-rp-$$-$(printf 'x%.0s' $(seq 1 120))"
out=$("$rp" start "$long" 2>&1)
like "a socket path too long is refused" "$out" "too long"
refute "  with a failure status" "$rp" start "$long"
check "usage without arguments" bash -c "'$rp' 2>&1 | grep -q usage"
done_testing
