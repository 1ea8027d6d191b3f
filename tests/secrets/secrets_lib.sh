# Shared setup of the secrets tests that run a hub in namespace mode against stand-in
# APIs: source after tests/lib.sh and tests/hub/hub_lib.sh (MODE=namespace).
#
# The stand-in APIs (tests/secrets/upstream.mjs) run in a network namespace of the
# test's own, at 198.18.N.2 (the benchmark range, reached over a veth whose host end is
# 198.18.N.1), on port 443 with a certificate of a test CA for every name the test uses;
# netproxy is told where those names are (resolve), that this address may be dialled
# (upstream_allow_cidr) and to verify it with the test CA (upstream_ca). Everything
# made here is removed at exit.

SECRETS_DIR=$ROOT/tests/secrets
STORE=$TMP/store
RECORDS=$TMP/upstream.jsonl
UP_N=$((($$ % 250) + 1))
UP_HOST=198.18.$UP_N.1
UP_IP=198.18.$UP_N.2
UP_VETH=isec$(printf %x $$)

# upstream_start NAME...: the stand-in APIs for these names (first one in the CN).
upstream_start() {
    test_cert "$@"
    test_netns sec
    ip link add "$UP_VETH" type veth peer name "${UP_VETH}n" &&
        at_exit "ip link del $UP_VETH 2>/dev/null"
    ip link set "${UP_VETH}n" netns "$NETNS"
    ip addr add "$UP_HOST/30" dev "$UP_VETH"
    ip link set "$UP_VETH" up
    ip -n "$NETNS" addr add "$UP_IP/30" dev "${UP_VETH}n"
    ip -n "$NETNS" link set "${UP_VETH}n" up
    : >"$RECORDS"
    ip netns exec "$NETNS" node "$SECRETS_DIR/upstream.mjs" "$TMP/srv.pem" "$TMP/srv.key" \
        "$RECORDS" "$UP_IP" 443 80 "${UPSTREAM_ANSWERS:-}" >"$TMP/upstream.ports" \
        2>"$TMP/upstream.err" &
    UPSTREAM_PID=$!
    at_exit "kill $UPSTREAM_PID 2>/dev/null"
    wait_for "the stand-in APIs listen" 10 test -s "$TMP/upstream.ports"
}

# secrets_config NAME...: hub.json for namespace mode with the store under $TMP and
# netproxy pointed at the stand-in APIs for these names.
secrets_config() {
    local resolve="" n
    for n in "$@"; do
        resolve="$resolve\"$n:443:$UP_IP\", \"$n:80:$UP_IP\","
    done
    hub_config "{\"secrets\": {\"dir\": \"$STORE\", \"key_file\": \"$TMP/store.key\"},
        \"start_timeout_ms\": 30000, \"call_timeout_ms\": 30000,
        \"audit\": {\"path\": \"$AUDIT\", \"content\": \"full\"},
        \"netproxy\": {\"binary\": \"$BIN/netproxy\", \"audit\": \"$PROXY_AUDIT\",
                     \"resolve\": [${resolve%,}], \"upstream_allow_cidr\": [\"$UP_IP/32\"],
                     \"upstream_ca\": \"$TMP/ca.pem\"}}"
}

# records EXPR: EXPR (Python, over r) for each request the stand-in APIs received.
records() {
    $PY -c 'import json,sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    v = eval(sys.argv[2], {"r": r})
    print(json.dumps(v) if isinstance(v, (dict, list, bool)) or v is None else v)' "$RECORDS" "$1"
}
