#!/usr/bin/env bash
# netproxy out of descriptors (what bounds the tunnels it holds: two descriptors each).
# Under a small RLIMIT_NOFILE, clients ask for more tunnels than fit: the proxy holds
# what fits, answers each of the others 503 tunnel-limit (its own limit, with
# Retry-After, not a 502 that blames the destination), audits every one of them, and
# once the held tunnels close, new ones work again. Run at two limits one apart, so
# that the proxy runs out with one descriptor left (accept works, the dial fails) and
# with none (accept itself fails: only the reserve descriptor lets it answer).
. "$(dirname "$0")/../lib.sh"
require_root
LOAD=$BIN/tests/netproxy/np_load
echo_port=$(free_port) src_port=$(free_port)
bg "$LOAD" serve "127.0.0.1:$echo_port" "127.0.0.1:$src_port"
wait_for "the echo upstream" 10 bash -c "echo >/dev/tcp/127.0.0.1/$echo_port"
run_at_limit() {
    local limit=$1 px_port fds held failed statuses holder
    px_port=$(free_port)
    AUDIT=$TMP/netproxy-$limit.jsonl
    # Started the way a careless parent would: with 80 descriptors of its own left open,
    # which would eat most of the 100 if netproxy kept them (as it once did under CI).
    bg bash -c 'for fd in $(seq 12 91); do eval "exec $fd</dev/null"; done; exec "$@"' inherit \
        prlimit --nofile=$limit:$limit "$BIN/netproxy" --listen "127.0.0.1:$px_port" \
        --allow load.example --ports "$echo_port" --resolve "load.example:$echo_port:127.0.0.1" \
        --upstream-allow-cidr 127.0.0.1/32 --dns-server 127.0.0.1:9 --audit "$AUDIT" 2>"$TMP/err-$limit"
    wait_for "netproxy" 10 bash -c "ss -Hltn 'sport = :$px_port' | grep -q ."
    fds=$(ls /proc/$BG_PID/fd | wc -l)
    check "netproxy closed the descriptors it inherited (holds $fds)" test "$fds" -lt 20
    via=(--via "127.0.0.1:$px_port" --addr "127.0.0.1:$echo_port" --target "load.example:$echo_port")

    # The holder keeps its tunnels until its stdin (a fifo we hold open) closes.
    mkfifo "$TMP/hold-$limit"
    "$LOAD" idle "${via[@]}" -n 60 <"$TMP/hold-$limit" >"$TMP/ready-$limit" &
    holder=$!
    at_exit "kill -9 $holder"
    exec 3>"$TMP/hold-$limit"
    wait_for "the holder" 20 grep -q ready "$TMP/ready-$limit"
    read -r _ held failed statuses <"$TMP/ready-$limit"
    diag "held $held, refused $failed ($statuses)"
    check "some tunnels were held" test "${held:-0}" -gt 20
    check "the proxy could not hold all 60" test "${failed:-0}" -gt 0
    is "the ones it could not hold were answered 503" "$statuses" "503:$failed"
    exec 3>&-
    wait $holder
    like "the proxy said why on stderr" "$(cat "$TMP/err-$limit")" "accept: Too many open files|limits need"

    "$LOAD" latency "${via[@]}" -n 20 >"$TMP/after-$limit.json"
    is "new tunnels work once the held ones closed" "$?" 0

    wait_for "the close records" 10 bash -c "[ \$(grep -c '\"action\":\"close\"' '$AUDIT') -ge $((held + 32)) ]"
    /usr/bin/python3 - "$AUDIT" "$held" "$failed" <<'PYEOF'
import json, sys
held, failed = int(sys.argv[2]), int(sys.argv[3])
data = open(sys.argv[1], "rb").read()
recs = [json.loads(l) for l in data.split(b"\n") if l]
ev = lambda r: r.get("event", {})
ok = [r for r in recs if ev(r).get("action") == "connect" and ev(r).get("outcome") == "success"]
no = [r for r in recs if ev(r).get("action") == "connect" and ev(r).get("outcome") == "failure"]
closes = [r for r in recs if ev(r).get("action") == "close"]
def line(cond, desc, got=""):
    print(("ok - " if cond else "not ok - ") + desc + ("" if cond else ": got %s" % got))
# 20 probes after the hold, plus np_load latency's warm-up of 20/10 + 10
line(len(ok) == held + 32, "an allowed record per held tunnel and per later probe", len(ok))
line(len(no) == failed, "a refusal record per tunnel it could not hold", len(no))
line(all(ev(r).get("reason") == "tunnel-limit" for r in no),
     "each refusal audited as the proxy's tunnel limit", sorted({ev(r).get("reason") for r in no}))
line(len(closes) == len(ok), "a close record per tunnel", len(closes))
PYEOF
}

for limit in 100 101; do
    diag "RLIMIT_NOFILE $limit"
    run_at_limit "$limit"
done
done_testing
