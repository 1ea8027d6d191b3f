#!/usr/bin/env bash
# Fault: netproxy killed with SIGKILL while a spoke's tunnel is open (namespace mode).
# The tunnel in flight fails (its spoke gets an error, not a hang), the hub audits
# the exit, restarts netproxy and hands it every spoke's listening socket again, and
# then tunnels work: for the spoke that was running (its socket re-handed) and for a
# spoke started after the restart (a new add). Nothing is left behind.
. "$(dirname "$0")/../lib.sh"
require_root
MODE=namespace
. "$ROOT/tests/hub/hub_lib.sh"
hub_setup

# A stand-in HTTPS upstream on loopback (test CA made now): /slow answers after 20 s,
# anything else at once. It writes a marker when /slow arrives: the tunnel is up.
test_cert www.allowed.example
port=$(free_port)
cat >"$TMP/upstream.py" <<PYEOF
import http.server, socketserver, ssl, time
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        if self.path == "/slow":
            open("$TMP/slow-arrived", "w").close()
            time.sleep(20)
        body = b"hello from the stand-in upstream"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a):
        pass
class S(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
srv = S(("127.0.0.1", $port), H)
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain("$TMP/srv.pem", "$TMP/srv.key")
srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
srv.serve_forever()
PYEOF
bg $PY "$TMP/upstream.py"
wait_for "the stand-in upstream" 10 bash -c "echo >/dev/tcp/127.0.0.1/$port"
$PY - <<PYEOF
import json
for name in ["fetch", "fetchtwo"]:
    m = json.load(open("$SPOKES/fetch.json"))
    m["name"] = name
    m["network"] = {"allow": ["allowed.example"], "ports": [$port]}
    json.dump(m, open("$SPOKES/%s.json" % name, "w"))
PYEOF
hub_config "{\"netproxy\": {\"binary\": \"$BIN/netproxy\", \"audit\": \"$PROXY_AUDIT\",
    \"resolve\": [\"www.allowed.example:$port:127.0.0.1\"],
    \"upstream_allow_cidr\": [\"127.0.0.1/32\"]}, \"call_timeout_ms\": 60000}"
for app in fetch fetchtwo; do
    mkdir -p "$DATA/tester/$app" && chmod 711 "$DATA" "$DATA/tester"
    cp "$TMP/ca.pem" "$DATA/tester/$app/ca.pem"
done

URL=https://www.allowed.example:$port
"$BIN/hub" call --config "$CONF" fetch.get "{\"url\":\"$URL/slow\"}" fetch.get "{\"url\":\"$URL/\"}" \
    fetchtwo.get "{\"url\":\"$URL/\"}" >"$TMP/out" 2>"$TMP/err" &
hub_pid=$!
at_exit "kill -9 $hub_pid"

# netproxy_pid: the hub's netproxy (our build's binary, a child of the hub).
netproxy_pid() {
    local p
    for p in $(pids_by_exe "$BIN/netproxy"); do
        [ "$(awk '{print $4}' "/proc/$p/stat" 2>/dev/null)" = "$hub_pid" ] && echo "$p"
    done
}
if wait_for "the tunnel to /slow" 30 test -e "$TMP/slow-arrived"; then
    ok "the spoke's tunnel through netproxy is up"
else
    not_ok "the spoke's tunnel through netproxy is up"
fi
old=$(netproxy_pid)
like "netproxy runs as the hub's child" "$old" '^[0-9]+$'
t0=$(date +%s%N)
kill -9 "$old"
wait $hub_pid
rc=$?
took_ms=$((($(date +%s%N) - t0) / 1000000))
diag "hub call ended ${took_ms} ms after the kill (status $rc)"

first=$(sed -n 1p "$TMP/out")
is "the tunnel in flight fails (the spoke reports an error)" \
    "$(echo "$first" | jget 'd["result"]["isError"]')" true
check "... promptly: within 10 s, not at curl's 20 s or the 60 s deadline" \
    test "$took_ms" -lt 10000
is "the same spoke reaches its domain again (its socket re-handed)" \
    "$(sed -n 2p "$TMP/out" | jget 'd["result"]["structuredContent"]["body"]')" \
    "hello from the stand-in upstream"
is "a spoke started after the restart reaches its domain (a new add)" \
    "$(sed -n 3p "$TMP/out" | jget 'd["result"]["structuredContent"]["body"]')" \
    "hello from the stand-in upstream"
is "the hub audited netproxy's death (SIGKILL)" \
    "$(audit_count 'g(r,"event.action")=="netproxy-exit" and g(r,"process.exit_code")==137')" 1
is "... and its restart" "$(audit_count 'g(r,"event.action")=="netproxy-restart" and g(r,"event.outcome")=="success"')" 1
is "two netproxy starts in the hub's audit" \
    "$(audit_count 'g(r,"event.action")=="netproxy-start" and g(r,"event.outcome")=="success"')" 2
allowed=$(AUDIT=$PROXY_AUDIT audit_count 'g(r,"event.action")=="connect" and g(r,"event.outcome")=="success"')
is "netproxy's audit has the three tunnels' decisions (one before the kill, two after)" "$allowed" 3
is "no netproxy left" "$(netproxy_pid)" ""
is "no spoke process left" "$(leftover_procs)" 0
is "no veth of this hub left in the host namespace" "$(host_veths $hub_pid)" 0
refute "the gateway namespace is gone" test -e "/run/netns/$GW_NS"
done_testing
