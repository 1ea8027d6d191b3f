#!/usr/bin/env bash
# Browsers in a spoke (issue 38, item 4): `hub spokes add NAME --browser chromium -- ...`
# in namespace mode, for the two browser servers of the trial, pinned in this folder's
# npm tree: chrome-devtools-mcp (puppeteer, given the profile's launcher with
# --executablePath) and @executeautomation/playwright-mcp-server (playwright, which
# takes CHROME_EXECUTABLE_PATH from the profile). Each opens a page this test serves on
# the host's loopback, reached through the spoke's --tcp grant, and reads its text back
# through tools/call. From the attacker's side: a page at a file of the host outside
# the jail's binds shows nothing of it, a host the spoke was not allowed is refused by
# netproxy (on record) and never reached, and no browser process outlives its spoke.
. "$(dirname "$0")/../lib.sh"
require_root
PY=/usr/bin/python3
MODS=$ROOT/tests/browser/node_modules
CHROMIUM=/usr/lib/chromium/chromium
if ! command -v node >/dev/null || [ ! -d "$MODS/chrome-devtools-mcp" ]; then
    skip "$TEST_NAME" "node or tests/browser/node_modules is missing (make deps)"
    exit 0
fi
if [ ! -x "$CHROMIUM" ]; then
    skip "$TEST_NAME" "Debian's chromium is not installed (scripts/deps --browser, which make check runs)"
    exit 0
fi
SPOKES=$TMP/spokes
CONF=$TMP/hub.json
HOST_ID_BASE=$((2000000 + ($$ % 4000) * 64))
mkdir -p "$SPOKES" "$TMP/www" "$TMP/data"
echo '<html><body><h1>stand-in page for the jailed browser</h1></body></html>' >"$TMP/www/index.html"
# A file of the host's that a page might try: outside every bind of the jail.
echo '<html><body>host secret 4c7f2e</body></html>' >"$TMP/host-secret.html"
chmod -R a+rX "$TMP/www"
PORT=$(free_port)
bg $PY -m http.server "$PORT" --bind 127.0.0.1 --directory "$TMP/www"
$PY - <<EOF
import json
json.dump({
    "isolation": "namespace", "user": "tester", "spokes_dir": "$SPOKES",
    "profile": "$ROOT/config/profiles/spoke.json", "data_root": "$TMP/data",
    "run_dir": "$TMP/run", "audit": "$TMP/audit.jsonl", "call_timeout_ms": 60000,
    "start_timeout_ms": 60000,
    "network": {"veth_pool": "169.254.152.0/22", "gateway_netns": "itest-browser-$$",
                "proxy_port": 3128, "host_id_base": $HOST_ID_BASE, "host_id_count": 64},
    "netproxy": {"binary": "$BIN/netproxy", "audit": "$TMP/netproxy.jsonl"},
}, open("$CONF", "w"), indent=1)
EOF
wait_for "the page server on 127.0.0.1:$PORT" 20 bash -c "echo >/dev/tcp/127.0.0.1/$PORT"
browsers_before=$(pids_by_exe "$CHROMIUM" | wc -l)

add() { # NAME BIN ARGS...
    local name=$1 bin=$2
    shift 2
    "$BIN/hub" spokes add "$name" --config "$CONF" --yes --timeout-s 120 --browser chromium \
        --tcp "127.0.0.1:$PORT" -- "$MODS/.bin/$bin" "$@" >"$TMP/add.$name" 2>&1
}
call() { "$BIN/hub" call --config "$CONF" "$@" 2>&1; }
# text N: the text of the Nth answer (0-based) of hub call's lines on stdin.
text() { $PY -c 'import json,sys
lines = [json.loads(l) for l in sys.stdin if l.startswith("{")]
d = lines[int(sys.argv[1])] if len(lines) > int(sys.argv[1]) else {}
c = (d.get("result") or d).get("content") or [{}]  # one call: its result alone
print(c[0].get("text") or json.dumps(d.get("error") or d.get("result")))' "$1"; }

# ---- chrome-devtools-mcp ----
add cdt chrome-devtools-mcp --executablePath /opt/browser/chromium --headless --isolated
rc=$?
[ "$rc" = 0 ] || diag "$(tail -n 8 "$TMP/add.cdt")"
is "chrome-devtools-mcp is added with --browser chromium in namespace mode" "$rc" 0
check "... the profile's launcher, processes and memory are in its manifest" $PY -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert "/usr/lib/chromium/chromium" in d["exec"], d["exec"]
assert any(m.endswith(":/opt/browser/chromium") for m in d["mounts"]), d["mounts"]
assert d["limits"]["nproc"] >= 512 and d["limits"]["pids"] >= 512, d["limits"]
assert d["env"]["CHROME_PATH"] == "/opt/browser/chromium", d["env"]' "$SPOKES/cdt.json"
out=$(call cdt.new_page "{\"url\":\"http://127.0.0.1:$PORT/\"}" cdt.take_snapshot '{"pageId":2}')
like "... opens the page served on loopback and reads its text" "$(text 1 <<<"$out")" \
    "stand-in page for the jailed browser"
out=$(call cdt.new_page "{\"url\":\"file://$TMP/host-secret.html\"}" cdt.take_snapshot '{"pageId":2}')
like "... a page at a host file outside the jail's binds: not found" "$(text 0 <<<"$out")" \
    "ERR_FILE_NOT_FOUND"
unlike "... and nothing of it shown" "$out" "host secret 4c7f2e"
out=$(call cdt.new_page '{"url":"https://denied.example/"}')
like "... a host the spoke was not allowed: the browser's connection fails" "$(text 0 <<<"$out")" \
    "ERR_TUNNEL_CONNECTION_FAILED|ERR_"
check "... refused by netproxy, on record" test "$(audit_count '((g(r,"isolate.spoke") or "").startswith("cdt-") and g(r,"event.outcome")=="failure" and g(r,"event.reason")=="domain-not-allowed" and "denied.example" in (g(r,"destination.domain"), g(r,"dns.question.name")))' "$TMP/netproxy.jsonl")" -ge 1

# ---- @executeautomation/playwright-mcp-server ----
add pw playwright-mcp-server
rc=$?
[ "$rc" = 0 ] || diag "$(tail -n 8 "$TMP/add.pw")"
is "playwright-mcp-server is added with --browser chromium in namespace mode" "$rc" 0
out=$(call pw.playwright_navigate "{\"url\":\"http://127.0.0.1:$PORT/\",\"headless\":true}" \
    pw.playwright_get_visible_text '{}')
like "... launches Debian's chromium (CHROME_EXECUTABLE_PATH) and reads the page" \
    "$(text 1 <<<"$out")" "stand-in page for the jailed browser"

# ---- the profile refuses what it cannot do ----
"$BIN/hub" spokes add bad --config "$CONF" --yes --browser firefox -- "$MODS/.bin/playwright-mcp-server" \
    >"$TMP/add.bad" 2>&1
is "--browser firefox: a usage error (exit 2)" "$?" 2
like "... naming the profile there is" "$(cat "$TMP/add.bad")" "the browser profile is chromium"
check "... nothing written" test ! -e "$SPOKES/bad.json"

wait_for "no browser process outlives its spoke" 20 \
    bash -c "[ \$(find /proc -mindepth 2 -maxdepth 2 -name exe -lname '$CHROMIUM' 2>/dev/null | wc -l) -le $browsers_before ]"
is "no browser process outlives its spoke" "$(pids_by_exe "$CHROMIUM" | wc -l)" "$browsers_before"
done_testing
