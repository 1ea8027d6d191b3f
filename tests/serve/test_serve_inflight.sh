#!/usr/bin/env bash
# Many sessions of one user through `hub serve --http` (issue 40): 32 sessions, each
# its own connection, each calling a 100 ms tool one call after another, reach one
# spoke together, and the spoke's in-flight limit grows past its initial 16 to hold
# all 32 at once (the stand-in server, tests/hub/concspoke, says how many it held: no
# timing is judged); with inflight.adaptive false and max_inflight 16 (the fixed window
# of before) it holds 16. No call fails either way. Spokes in none mode.
. "$(dirname "$0")/../lib.sh"
require_root
MODE=none
. "$ROOT/tests/serve/serve_lib.sh"
"$BIN/tests/hub/concspoke" --manifest slow >"$TMP/slow.json"
SERVE_KEEP=slow serve_setup "$TMP/slow.json"
cp "$BIN/tests/hub/concspoke" "$BINDIR"/

# held PORT: the most calls the app's spoke held at once, from its stats tool, over a
# session of its own.
held() {
    $PY - "$1" <<'EOF'
import json, sys, urllib.request
url = "http://127.0.0.1:%s/mcp" % sys.argv[1]
hdr = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
def post(msg, sid=None):
    h = dict(hdr, **({"Mcp-Session-Id": sid} if sid else {}))
    r = urllib.request.urlopen(urllib.request.Request(url, json.dumps(msg).encode(), h), timeout=30)
    body = r.read().decode()
    for line in body.splitlines():  # an event stream's data lines, or the JSON itself
        line = line[5:].strip() if line.startswith("data:") else line
        try:
            m = json.loads(line)
        except ValueError:
            continue
        if isinstance(m, dict) and "id" in m and ("result" in m or "error" in m):
            return r.headers.get("Mcp-Session-Id"), m
    return r.headers.get("Mcp-Session-Id"), None
sid, _ = post({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {},
    "clientInfo": {"name": "inflight-test", "version": "1"}}})
post({"jsonrpc": "2.0", "method": "notifications/initialized"}, sid)
_, m = post({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
             "params": {"name": "stats", "arguments": {}}}, sid)
print(m["result"]["structuredContent"]["max_inflight"] if m and "result" in m else "none")
EOF
}

run() { # LABEL: 32 sessions x 8 calls of sleep 100 ms; sets OUT
    OUT=$("$BIN/tests/serve/serve_client" http "127.0.0.1:$PORT" --sessions 32 --calls 8 \
        sleep '{"ms":100}' 2>"$TMP/client.err")
}

serve_http_start --app slow
run
like "adaptive: 32 sessions x 8 calls of a 100 ms tool, every one answered" "$OUT" \
    '"calls":256,"errors":0'
n=$(held "$PORT")
if [ "$n" != none ] && [ "$n" -ge 28 ]; then
    ok "... the spoke held $n calls at once: the limit grew past its initial 16"
else
    not_ok "... the spoke held $n calls at once, expected 28 or more"
fi
kill "$SERVE_PID"
wait "$SERVE_PID" 2>/dev/null

conf_merge '{"max_inflight": 16, "inflight": {"adaptive": false}}'
serve_http_start --app slow
run
like "fixed window of 16: every call answered too" "$OUT" '"calls":256,"errors":0'
is "... the spoke held 16 at most" "$(held "$PORT")" 16
done_testing
