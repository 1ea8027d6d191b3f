#!/usr/bin/env bash
# memory.tls: the hub's memory over TLS to Debian's redis-server (tls-port only, client
# certificates required, a password), a grant made and read back through it; and from
# the other side: a server whose certificate another CA signed, or that carries another
# name, is refused at start, and so is a hub without a client certificate.
. "$(dirname "$0")/../lib.sh"
require_root
command -v redis-server >/dev/null || { skip "$TEST_NAME" "redis-server is not installed"; exit 0; }
MODE=process
. "$ROOT/tests/agent/agent_lib.sh"
agent_setup

test_cert redis.itest
# A client certificate from the same CA, and a second CA nobody trusts.
openssl req -newkey rsa:2048 -nodes -subj "/CN=hub" -keyout "$TMP/cli.key" -out "$TMP/cli.csr" >/dev/null 2>&1
openssl x509 -req -in "$TMP/cli.csr" -CA "$TMP/ca.pem" -CAkey "$TMP/ca.key" -CAcreateserial \
    -days 1 -out "$TMP/cli.pem" >/dev/null 2>&1
openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj "/CN=other CA" \
    -keyout "$TMP/other.key" -out "$TMP/other.pem" >/dev/null 2>&1

RDIR=/tmp/itest-redis-tls-$$
mkdir -p "$RDIR"
at_exit "rm -rf '$RDIR'"
at_exit '[ -s "$RDIR/pid" ] && kill -9 "$(cat "$RDIR/pid")" 2>/dev/null'
PORT=$(free_port)
export ITEST_REDIS_PW="pw-$$-$RANDOM"
redis-server --port 0 --tls-port "$PORT" --bind 127.0.0.1 --daemonize yes --dir "$RDIR" \
    --pidfile "$RDIR/pid" --logfile "$RDIR/log" --save '' --appendonly no \
    --tls-cert-file "$TMP/srv.pem" --tls-key-file "$TMP/srv.key" \
    --tls-ca-cert-file "$TMP/ca.pem" --tls-auth-clients yes --requirepass "$ITEST_REDIS_PW"
rcli() {
    redis-cli --tls --cacert "$TMP/ca.pem" --cert "$TMP/cli.pem" --key "$TMP/cli.key" \
        --sni redis.itest -h 127.0.0.1 -p "$PORT" --no-auth-warning -a "$ITEST_REDIS_PW" "$@"
}
check "redis-server listens with TLS only" wait_for "redis over TLS" 10 rcli ping

mem_conf() { # mem_conf TLS_JSON
    agent_config "{\"memory\": {\"redis\": \"127.0.0.1:$PORT\", \"password_env\": \"ITEST_REDIS_PW\", \"tls\": $1}}"
}
GOOD="{\"ca_file\": \"$TMP/ca.pem\", \"cert_file\": \"$TMP/cli.pem\", \"key_file\": \"$TMP/cli.key\", \"server_name\": \"redis.itest\"}"
FARE='plan(("fare__estimate", {"from": "A", "to": "B"})), text("23 USD")'
echo '{"default": "always"}' >"$TMP/always.json"

mem_conf "$GOOD"
standin_start "[$FARE, $FARE]"
out=$(echo fare | ask --answers "$TMP/always.json" 2>"$TMP/err")
is "over TLS: the request ran and its grant was given" "$(echo "$out" | jget 'd["calls"][0]["outcome"]')" ok
is "... the grant is in Redis" \
    "$(rcli hget "isolategpt:$AUSER:grants" 'exec|fare|estimate|*' | jget 'd["scope"]')" always
is "... and the history (two entries)" "$(rcli llen "isolategpt:$AUSER:history")" 2
out=$(echo fare | ask --answers allow 2>>"$TMP/err")
is "a second session reads the grant back over TLS (no question)" \
    "$(audit_count "g(r,'event.action')=='permission-question'")" 1

# The same through a sentinel that speaks TLS too (discovery, then the master).
SPORT=$(free_port)
mkdir -p "$RDIR/s"
cat >"$RDIR/s/sentinel.conf" <<SEOF
port 0
tls-port $SPORT
bind 127.0.0.1
daemonize yes
pidfile $RDIR/s/pid
logfile $RDIR/s/log
dir $RDIR/s
tls-cert-file $TMP/srv.pem
tls-key-file $TMP/srv.key
tls-ca-cert-file $TMP/ca.pem
tls-replication yes
sentinel monitor itls 127.0.0.1 $PORT 1
sentinel auth-pass itls $ITEST_REDIS_PW
SEOF
redis-sentinel "$RDIR/s/sentinel.conf"
at_exit '[ -s "$RDIR/s/pid" ] && kill -9 "$(cat "$RDIR/s/pid")" 2>/dev/null'
agent_config "{\"memory\": {\"redis\": \"sentinel://127.0.0.1:$SPORT/itls\", \"password_env\": \"ITEST_REDIS_PW\", \"wait_replicas\": 0, \"tls\": $GOOD}}"
standin_start "[$FARE]"
out=$(echo fare | ask --answers allow 2>>"$TMP/err")
is "through a TLS sentinel: the stored grant is read (still no new question)" \
    "$(echo "$out" | jget 'd["calls"][0]["outcome"]') $(audit_count "g(r,'event.action')=='permission-question'")" "ok 1"

try() { # try TLS_JSON: the hub's start error
    mem_conf "$1"
    standin_start "[$FARE]"
    echo fare | ask --answers allow 2>&1 >/dev/null
}
out=$(try "{\"ca_file\": \"$TMP/other.pem\", \"cert_file\": \"$TMP/cli.pem\", \"key_file\": \"$TMP/cli.key\", \"server_name\": \"redis.itest\"}")
like "a server certificate from another CA is refused" "$out" "certificate is refused: .*(unable to get local issuer|self.signed)"
out=$(try "{\"ca_file\": \"$TMP/ca.pem\", \"cert_file\": \"$TMP/cli.pem\", \"key_file\": \"$TMP/cli.key\", \"server_name\": \"impostor.itest\"}")
like "a server certificate for another name is refused" "$out" "certificate is refused: .*hostname mismatch.*impostor.itest"
out=$(try "{\"ca_file\": \"$TMP/ca.pem\", \"server_name\": \"redis.itest\"}")
diag "without a client certificate: $out"
like "without a client certificate the server refuses the hub" "$out" "memory: cannot reach Redis at 127.0.0.1:$PORT: (TLS connection lost|Server closed the TLS connection)"
out=$(try "{\"ca_file\": \"relative/ca.pem\"}")
like "a relative path is refused" "$out" "memory.tls.ca_file: must be an absolute path"
out=$(try "{\"ca_file\": \"$TMP/missing.pem\"}")
like "a missing CA file is named" "$out" "memory.tls.ca_file $TMP/missing.pem"
agent_config "{\"memory\": {\"redis\": \"127.0.0.1:$PORT\", \"password_env\": \"ITEST_REDIS_PW\", \"connect_timeout_ms\": 1000, \"command_timeout_ms\": 1000}}"
standin_start "[$FARE]"
out=$(echo fare | ask --answers allow 2>&1 >/dev/null)
like "plain RESP to the TLS port does not pass for a connection" "$out" "memory: "
done_testing
