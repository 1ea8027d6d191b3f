#!/usr/bin/env bash
# Transparent egress through the real hub: a Node server in namespace mode with no proxy
# variables reaches its API with Node's built-in fetch (undici ignores HTTPS_PROXY), a
# redis-server on the host's loopback through a --tcp grant (by address and by name),
# and is refused, with netproxy's records, what it may not reach: another name, another
# SNI, a real address. The node profile lets it instantiate WebAssembly (the cgroup
# bounds its memory, not RLIMIT_AS). `hub spokes add --tcp` writes the grants; with
# --exec git the server runs git (bound with its libraries, processes allowed) and
# nothing else of the host.
. "$(dirname "$0")/../lib.sh"
require_root
MODE=namespace
. "$ROOT/tests/hub/hub_lib.sh"
hub_setup
require_cmds node

test_cert www.allowed.example denied.example
port=$(free_port)
cat >"$TMP/upstream.py" <<PYEOF
import http.server, ssl
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = ("hello from %s" % self.headers.get("Host", "")).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a):
        pass
srv = http.server.HTTPServer(("127.0.0.1", $port), H)
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain("$TMP/srv.pem", "$TMP/srv.key")
srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
srv.serve_forever()
PYEOF
bg $PY "$TMP/upstream.py"
rport=$(free_port)
bg redis-server --port "$rport" --bind 127.0.0.1 --save "" --appendonly no --daemonize no \
    --logfile "$TMP/redis.log"
wait_for "the stand-in upstream" 10 bash -c "echo >/dev/tcp/127.0.0.1/$port"
wait_for "redis-server" 10 bash -c "echo >/dev/tcp/127.0.0.1/$rport"

hub_config "{\"netproxy\": {\"binary\": \"$BIN/netproxy\", \"audit\": \"$PROXY_AUDIT\",
    \"resolve\": [\"www.allowed.example:$port:127.0.0.1\", \"denied.example:$port:127.0.0.1\",
                  \"db.internal.example:$rport:127.0.0.1\"],
    \"upstream_allow_cidr\": [\"127.0.0.1/32\"]}}"
"$BIN/hub" spokes add egress --config "$CONF" --runtime node --allow allowed.example \
    --ports "$port" --tcp "127.0.0.1:$rport" --tcp "db.internal.example:$rport" --exec git \
    --env NODE_EXTRA_CA_CERTS=/data/ca.pem --yes -- /usr/bin/node "$ROOT/tests/hub/egress_spoke.mjs" \
    >"$TMP/add.out" 2>&1
rc=$?
is "hub spokes add --tcp: the spoke is added" "$rc" 0
[ "$rc" -ne 0 ] && diag "$(tail -20 "$TMP/add.out")"
is "... its manifest has the grants" \
    "$(jget 'd["network"]["tcp"]' <"$SPOKES/egress.json")" "[\"127.0.0.1:$rport\", \"db.internal.example:$rport\"]"
is "... and the program it may run" "$(jget 'd["exec"]' <"$SPOKES/egress.json")" '["/usr/bin/git"]'
refute "--exec refuses a program that does not exist" "$BIN/hub" spokes add bad --config "$CONF" \
    --exec no-such-program-here --yes -- /usr/bin/node "$ROOT/tests/hub/egress_spoke.mjs"
refute "--tcp refuses a grant without a port" "$BIN/hub" spokes add bad --config "$CONF" \
    --tcp db.example.com --yes -- /usr/bin/node "$ROOT/tests/hub/egress_spoke.mjs"
# The node profile itself, also in a sanitizer build (whose hub.json names a copy of
# spoke.json, which binds all of /usr): what --exec adds must be all there is.
$PY -c 'import json,sys
m = json.load(open(sys.argv[1])); m["profile"] = sys.argv[2]; json.dump(m, open(sys.argv[1], "w"))' \
    "$SPOKES/egress.json" "$ROOT/config/profiles/node.json"
mkdir -p "$DATA/tester/egress" && chmod 711 "$DATA" "$DATA/tester"
cp "$TMP/ca.pem" "$DATA/tester/egress/ca.pem"

# text N: the Nth call's result (a JSON text) as JSON.
out=$(hubc egress.fetch "{\"url\":\"https://www.allowed.example:$port/\"}" \
    egress.fetch "{\"url\":\"https://denied.example:$port/\"}" \
    egress.lookup '{"name":"www.allowed.example"}' \
    egress.connect "{\"host\":\"www.allowed.example\",\"port\":$port,\"servername\":\"denied.example\",\"send\":\"GET / HTTP/1.1\\r\\n\\r\\n\"}" \
    egress.connect "{\"host\":\"127.0.0.1\",\"port\":$rport,\"send\":\"PING\\r\\n\"}" \
    egress.connect "{\"host\":\"db.internal.example\",\"port\":$rport,\"send\":\"PING\\r\\n\"}" \
    egress.connect '{"host":"10.200.0.1","port":443,"send":"x"}' \
    egress.wasm '{"count":4}' \
    egress.run '{"argv":["/usr/bin/git","init","-q","/data/repo"]}' \
    egress.run '{"argv":["/usr/bin/git","-C","/data/repo","status","--porcelain=v2","--branch"]}' \
    egress.run '{"argv":["/usr/bin/curl","--version"]}' 2>"$TMP/call.err")
text() { echo "$out" | sed -n "${1}p" | jget 'd["result"]["content"][0]["text"]'; }
is "Node's fetch, no proxy variables: the allowed API answers" \
    "$(text 1 | jget 'd.get("body")')" "hello from www.allowed.example:$port"
is "a name outside the allowlist: not found (the jail's resolver says NXDOMAIN)" \
    "$(text 2 | jget 'd.get("error")')" ENOTFOUND
like "dns.lookup gets a synthetic address" "$(text 3 | jget 'd["addresses"][0]')" '^240\.240\.'
unlike "a ClientHello naming another host: never answered" "$(text 4 | jget 'd.get("data","")')" hello
is "redis on the host's loopback through --tcp 127.0.0.1:PORT" "$(text 5 | jget 'd.get("data").strip()')" "+PONG"
is "... and through a grant by name" "$(text 6 | jget 'd.get("data","").strip()')" "+PONG"
unlike "a direct connection to a real address: nothing comes back" "$(text 7 | jget 'd.get("data","")')" .
is "WebAssembly under the node profile: 4 memories (RLIMIT_AS no longer stops them)" \
    "$(text 8 | jget '[d.get("instances"), d.get("error")]')" '[4, null]'
is "--exec git: the server runs git init" "$(text 9 | jget 'd.get("status")')" 0
check "... in its /data, as the jail's user" test -d "$DATA/tester/egress/repo/.git"
like "... and git status" "$(text 10 | jget 'd.get("stdout")')" "branch.head"
is "... but no other host program is there (curl)" "$(text 11 | jget 'd.get("error")')" ENOENT

pa() { audit_count "($1)" "$PROXY_AUDIT"; }
S='(g(r,"isolate.spoke") or "").startswith("egress-")'
check "the fetch is audited: transparent, with its SNI" test "$(pa "$S and g(r,\"event.action\")==\"connect\" and
    g(r,\"isolate.egress\")==\"transparent\" and g(r,\"tls.client.server_name\")==\"www.allowed.example\" and
    g(r,\"event.outcome\")==\"success\"")" -ge 1
check "the refused name is audited by the resolver" test "$(pa "$S and g(r,\"event.action\")==\"dns-query\" and
    g(r,\"dns.question.name\")==\"denied.example\" and g(r,\"event.reason\")==\"domain-not-allowed\"")" -ge 1
check "the other SNI is audited as sni-mismatch" test "$(pa "$S and g(r,\"event.reason\")==\"sni-mismatch\" and
    g(r,\"tls.client.server_name\")==\"denied.example\"")" -ge 1
check "the direct address is audited" test "$(pa "$S and g(r,\"destination.address\")==\"10.200.0.1\" and
    g(r,\"event.reason\")==\"ip-literal-not-allowed\"")" -ge 1
check "the redis tunnels are audited as tcp grants, with their bytes" test "$(pa "$S and
    g(r,\"event.action\")==\"close\" and g(r,\"isolate.tcp_grant\") and g(r,\"destination.port\")==$rport and
    g(r,\"destination.bytes\")==7")" -ge 2
[ -s "$TMP/call.err" ] && diag "$(head -c 3000 "$TMP/call.err")"

# The synthetic addresses outlive a netproxy restart (the hub hands them back).
$PY "$ROOT/tests/hub/egress_restart.py" "$BIN/hub" serve --stdio --standalone --config "$CONF"
is "no hub veth left in the host namespace" "$(host_veths)" 0
done_testing
