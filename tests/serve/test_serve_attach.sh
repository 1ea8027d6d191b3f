#!/usr/bin/env bash
# One hub per host owns the spokes: a running hub serve (here --http) listens on its
# control socket (RUN/serve.sock), and hub serve --stdio hands its client to it instead
# of starting spokes of its own. Two stdio clients and an HTTP session of one user, used
# in turn, keep every file each wrote (one spoke serves them all); an attached process
# ends with its session and the other way round; who may attach is the kernel's word
# (SO_PEERCRED), never the request's; a socket left by a killed hub is taken over (by the
# background hub the next hub serve --stdio starts).
. "$(dirname "$0")/../lib.sh"
require_root
MODE=namespace
. "$ROOT/tests/serve/serve_lib.sh"
serve_setup
mode_needs_jail_skip
conf_merge '{"serve": {"control_users": "unix"}}'
SOCK=$RUN/serve.sock

starts() { audit_count 'g(r,"event.action")=="spoke-start" and g(r,"event.outcome")=="success" and g(r,"isolate.app")=="alpha"'; }
before=$(starts) # mode_needs_jail_skip's own hub call
serve_http_start
check "the HTTP hub owns the control socket" test -S "$SOCK"
is "... open to every local account (serve.control_users unix)" "$(stat -c %a "$SOCK")" 666

cat >"$TMP/probe.py" <<'EOF'
import json, sys, time
sys.path.insert(0, sys.argv[3])
from mcp_stdio import StdioClient
hub, conf = sys.argv[1:3]

def sc(r):
    return json.dumps(r["result"].get("structuredContent", r["result"]), sort_keys=True)

clients = {}
for name in ("one", "two"):
    c = StdioClient([hub, "serve", "--stdio", "--config", conf],
                    stderr=open(sys.argv[4] + "/" + name + ".err", "w"))
    c.initialize("client-" + name)
    clients[name] = c
for name, c in clients.items():
    print(name + "-write", sc(c.request("tools/call", {"name": "alpha__write",
          "arguments": {"name": name, "text": "by " + name}})))
# each reads what the other wrote, and what the HTTP session wrote before
for name, other in (("one", "two"), ("two", "one")):
    print(name + "-reads-" + other, sc(clients[name].request("tools/call",
          {"name": "alpha__read", "arguments": {"path": other}})))
    print(name + "-reads-http", sc(clients[name].request("tools/call",
          {"name": "alpha__read", "arguments": {"path": "http"}})))
print("one-pid", clients["one"].p.pid)
print("one-rc", clients["one"].close())
# the second one is killed: its session must end in the hub all the same
clients["two"].p.kill()
clients["two"].p.wait()
EOF

# The HTTP session writes first.
init=$(curl -s -D "$TMP/h" -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
    -d '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"curl","version":"1"}}}' "$URL")
SID=$(awk -F': ' 'tolower($1)=="mcp-session-id"{print $2}' "$TMP/h" | tr -d '\r')
post() {
    curl -s -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
        -H "Mcp-Session-Id: $SID" -d "$1" "$URL"
}
post '{"jsonrpc":"2.0","method":"notifications/initialized"}' >/dev/null
like "the HTTP session writes" "$(post '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"alpha__write","arguments":{"name":"http","text":"by http"}}}')" '/data/http'

$PY "$TMP/probe.py" "$BIN/hub" "$CONF" "$ROOT/tests/serve" "$TMP" >"$TMP/probe.out" 2>"$TMP/probe.err"
diag "$(cat "$TMP/probe.err")"
got() { sed -n "s/^$1 //p" "$TMP/probe.out"; }
like "stdio client one writes through the running hub" "$(got one-write)" '"path": "/data/one"'
like "stdio client two writes through the running hub" "$(got two-write)" '"path": "/data/two"'
like "one reads what two wrote" "$(got one-reads-two)" '"text": "by two"'
like "two reads what one wrote" "$(got two-reads-one)" '"text": "by one"'
like "one reads what the HTTP session wrote" "$(got one-reads-http)" '"text": "by http"'
like "two reads what the HTTP session wrote" "$(got two-reads-http)" '"text": "by http"'
like "the HTTP session reads what both wrote" \
    "$(post '{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"alpha__read","arguments":{"path":"one"}}}')$(post '{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"alpha__read","arguments":{"path":"two"}}}')" 'by one.*by two'
is "an attached process ends when its client closes stdin" "$(got one-rc)" 0
is "one spoke served all three clients" "$(($(starts) - before))" 1
is "the attached sessions are the running hub's, audited as such" \
    "$(audit_count 'g(r,"event.action")=="serve-session-start" and g(r,"isolate.serve.transport")=="attach" and g(r,"isolate.user")=="tester"')" 2
wait_for "the killed client's session to end" 60 audit_at_least 2 'g(r,"event.action")=="serve-session-end" and g(r,"isolate.serve.transport")=="attach"'
is "... both attached sessions ended in the hub, the killed one too" \
    "$(audit_count 'g(r,"event.action")=="serve-session-end" and g(r,"isolate.serve.transport")=="attach"')" 2
check "the HTTP hub still runs" kill -0 "$SERVE_PID"

# Who may attach: the kernel says who connects. Another local account acts as the hub
# user of its own name (serve.control_users "unix") and cannot name another one.
cat >"$TMP/peer.py" <<'EOF'
import json, os, socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect(sys.argv[1])
req = json.dumps({"op": "attach", "user": sys.argv[2]}).encode() + b"\n"
r, w = os.pipe()
s.sendmsg([req], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, bytes(memoryview(bytearray(
    r.to_bytes(4, sys.byteorder) + w.to_bytes(4, sys.byteorder)))))])
print(s.makefile().readline().strip())
EOF
chmod 0711 "$TMP" "$RUN" # the other account must reach the socket
out=$(setpriv --reuid=65534 --regid=65534 --clear-groups $PY - "$SOCK" tester <"$TMP/peer.py" 2>&1)
like "another account naming user tester is refused" "$out" '"ok": *false.*nobody may act only as the hub user nobody'
out=$(printf '{"op":"attach","user":"tester"}\n' | $PY -c 'import socket,sys
s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); s.sendall(sys.stdin.buffer.read()); print(s.makefile().readline().strip())' "$SOCK")
like "an attach without the client's descriptors is refused" "$out" 'needs the client.s input and output'
out=$(printf 'not json\n' | $PY -c 'import socket,sys
s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); s.sendall(sys.stdin.buffer.read()); print(s.makefile().readline().strip())' "$SOCK")
like "a request that is not JSON is refused" "$out" 'a JSON object with an op'
out=$("$BIN/hub" serve --stdio --config "$CONF" --isolation none </dev/null 2>&1 >/dev/null)
like "a client that asks for another isolation is refused, and serves on its own" "$out" 'isolates its apps in namespace mode, not none.*serving on its own'

# A hub killed outright leaves its socket: the next hub serve takes it over.
kill -9 "$SERVE_PID"; wait "$SERVE_PID" 2>/dev/null
check "the killed hub's socket is still there" test -S "$SOCK"
$PY - "$BIN/hub" "$CONF" "$ROOT/tests/serve" <<'EOF' >"$TMP/after.out" 2>&1
import json, sys
sys.path.insert(0, sys.argv[3])
from mcp_stdio import StdioClient
c = StdioClient([sys.argv[1], "serve", "--stdio", "--config", sys.argv[2]])
c.initialize("after")
r = c.request("tools/call", {"name": "alpha__read", "arguments": {"path": "one"}})
print("read", json.dumps(r["result"]["structuredContent"], sort_keys=True))
print("rc", c.close())
EOF
like "with no hub running, hub serve --stdio starts a background hub (and reads the data)" "$(cat "$TMP/after.out")" '"text": "by one"'
is "... and attaches to it: no session served on its own" "$(audit_count 'g(r,"event.action")=="serve-session-start" and g(r,"isolate.serve.transport")=="stdio"')" 0
check "... the background hub owns the socket now" test -n "$(background_pid)"
stop_background
is "no spoke left running" "$(leftover_procs)" 0
done_testing
