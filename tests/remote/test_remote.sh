#!/usr/bin/env bash
# Remote MCP servers as apps, end to end in namespace mode: `hub spokes add NAME
# https://HOST/PATH` runs the bridge (spokes/mcp_remote) in the app's jail against a
# stand-in remote server (tests/remote/remote.mjs: Streamable HTTP on the MCP SDK, TLS with
# a test CA) in a network namespace of the test's own, its name resolved by netproxy. The
# bearer is a hub secret bound to the host: the server receives the value, and nothing in
# the jail (the bridge's environment and command line, its /data), the manifest, the logs
# or the audit holds it. `hub spokes login` (OAuth 2.1 against a stand-in authorisation
# server, the test playing the browser) keeps tokens in the store that add then uses, a
# start refreshes an expired one, and the hub's own client keeps the address guard. A remote whose tools change is refused like a local one; a URL
# whose name resolves to a private address is refused by netproxy's address guard; URLs
# that are not https, name an address or carry userinfo, and a bearer not bound to the
# host, are refused by add.
. "$(dirname "$0")/../lib.sh"
require_root
MODE=namespace
. "$ROOT/tests/hub/hub_lib.sh"
if ! command -v node >/dev/null ||
    [ ! -d "$ROOT/tests/mcpservers/node_modules/@modelcontextprotocol/sdk" ]; then
    skip "$TEST_NAME" "node or tests/mcpservers/node_modules is missing (make deps)"
    exit 0
fi
. "$ROOT/tests/secrets/secrets_lib.sh"
RHOST=mcp.remote-standin.example
TOKEN=rt_$(head -c 64 /dev/urandom | base64 | tr -dc 'A-Za-z0-9' | head -c 40)
CHANGED=$TMP/changed
RECORDS=$TMP/remote-records.jsonl

# The stand-in remote server at $UP_IP:443 in a namespace of the test's own (the veth as
# secrets_lib.sh's upstream_start makes it).
remote_start() {
    test_cert "$RHOST" auth.remote-standin.example private.remote-standin.example
    test_netns rmt
    ip link add "$UP_VETH" type veth peer name "${UP_VETH}n" &&
        at_exit "ip link del $UP_VETH 2>/dev/null"
    ip link set "${UP_VETH}n" netns "$NETNS"
    ip addr add "$UP_HOST/30" dev "$UP_VETH"
    ip link set "$UP_VETH" up
    ip -n "$NETNS" addr add "$UP_IP/30" dev "${UP_VETH}n"
    ip -n "$NETNS" link set "${UP_VETH}n" up
    : >"$RECORDS"
    ip netns exec "$NETNS" node "$ROOT/tests/remote/remote.mjs" "$TMP/srv.pem" "$TMP/srv.key" \
        "$RECORDS" "$UP_IP" 443 "$TOKEN" "$TMP" >"$TMP/remote.port" 2>"$TMP/remote.err" &
    REMOTE_PID=$!
    at_exit "kill $REMOTE_PID 2>/dev/null"
    wait_for "the stand-in remote server listens" 10 test -s "$TMP/remote.port"
}

hub_setup
remote_start
secrets_config "$RHOST" auth.remote-standin.example
# A name of the same domain that resolves to loopback: a private address for the guard.
$PY - "$CONF" <<'EOF'
import json, sys
c = json.load(open(sys.argv[1]))
c["netproxy"]["resolve"].append("private.remote-standin.example:443:127.0.0.1")
json.dump(c, open(sys.argv[1], "w"), indent=1)
EOF
H() { "$BIN/hub" "$@" --config "$CONF"; }
add() { "$BIN/hub" spokes add --config "$CONF" --yes "$@"; }
# mem_has PID TEXT: "yes" when TEXT is in any readable mapping of PID's memory (read in
# chunks; a sanitizer build's shadow regions of gigabytes, never the program's data, are
# skipped).
mem_has() {
    $PY -c 'import re,sys
pid, text, found = sys.argv[1], sys.argv[2].encode(), False
with open(f"/proc/{pid}/maps") as maps, open(f"/proc/{pid}/mem", "rb", 0) as mem:
    for line in maps:
        m = re.match(r"([0-9a-f]+)-([0-9a-f]+) r", line)
        if not m or "[vvar]" in line or "[vsyscall]" in line:
            continue
        lo, hi = int(m.group(1), 16), int(m.group(2), 16)
        if hi - lo > (1 << 30):
            continue
        prev = b""
        for at in range(lo, hi, 1 << 24):
            try:
                mem.seek(at); chunk = mem.read(min(1 << 24, hi - at))
            except (OSError, ValueError, OverflowError):
                break
            found |= text in prev + chunk
            prev = chunk[-len(text):]
print("yes" if found else "no")' "$1" "$2"
}
rrec() {
    $PY -c 'import json,sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    if not r.get("as"): print(eval(sys.argv[2], {"r": r}))' "$RECORDS" "$1"
}

echo "$TOKEN" | H secrets set remote_token --hosts "$RHOST" --header Authorization >/dev/null

# ---- add refuses what it cannot make safe, before anything starts ----
out=$(add r1 http://$RHOST/mcp 2>&1)
is "an http:// URL is refused" "$?" 2
like "... saying why" "$out" "must be https"
out=$(add r1 https://127.0.0.1/mcp 2>&1)
is "an address literal is refused" "$?" 2
like "... saying why" "$out" "not a DNS name"
for u in https://127.1/mcp https://0x7f.0.0.1/mcp "https://[::1]/mcp" https://10.0.0.1:8443/; do
    out=$(add r1 "$u" 2>&1)
    like "$u is refused as not a DNS name" "$? $out" "^2 .*not a DNS name"
done
out=$(add r1 https://co.uk/mcp 2>&1)
like "a public suffix as host is refused" "$? $out" "^2 .*public suffix"
out=$(add r1 "https://user:$TOKEN@$RHOST/mcp" 2>&1)
is "a URL with userinfo is refused" "$?" 2
unlike "... and the refusal does not repeat the credential" "$out" "$TOKEN"
echo "$TOKEN" | H secrets set env_token >/dev/null
out=$(add r1 --secret MCP_REMOTE_BEARER=env_token "https://$RHOST/mcp" 2>&1)
is "a bearer secret not bound to the host (it would enter the jail) is refused" "$?" 2
like "... saying how to bind it" "$out" "--hosts $RHOST"
check "... and nothing is written" test ! -e "$SPOKES/r1.json"

# ---- add + call ----
out=$(add remote --secret MCP_REMOTE_BEARER=remote_token "https://$RHOST/mcp" 2>&1)
is "spokes add remote https://$RHOST/mcp" "$?" 0 || diag "$out" "$(tail -5 "$TMP/remote.err")"
like "... lists the remote's tools" "$out" "echo"
M=$SPOKES/remote.json
is "the manifest runs the bridge with the URL" \
    "$(jget 'd["command"]' <"$M")" "[\"mcp_remote\", \"https://$RHOST/mcp\"]"
is "... its allowlist is the URL's registrable domain" \
    "$(jget 'd["network"]["allow"]' <"$M")" '["remote-standin.example"]'
is "... its bearer a secret by name" "$(jget 'd["env"]["MCP_REMOTE_BEARER"]' <"$M")" '{"secret": "remote_token"}'
is "... its tools pinned" "$(jget '[t["name"] for t in d["tools"]]' <"$M")" '["echo", "slow", "big"]'

r=$(hubc remote.echo '{"text":"hello remote"}' 2>"$TMP/call.err")
is "a call reaches the remote and its answer comes back" \
    "$(echo "$r" | jget 'd["structuredContent"]["text"]')" "hello remote" || diag "$(cat "$TMP/call.err")"
is "... the remote received the value of the secret" \
    "$(rrec 'r["authorization"]' | sort -u)" "Bearer $TOKEN"
like "... over one MCP session (Mcp-Session-Id)" "$(rrec 'r["rpc"] or r["method"]' | tr '\n' ' ')" \
    "initialize notifications/initialized tools/list tools/call"
check "... each request after initialize carries the session" \
    test "$(rrec 'r["session"] is None and r["rpc"] != "initialize"' | grep -c True)" -eq 0
check "the injection is audited by netproxy" \
    audit_at_least 1 'g(r,"event.action")=="credential-inject" and g(r,"isolate.secret.name")=="remote_token" and g(r,"url.domain")=="'"$RHOST"'"' "$PROXY_AUDIT"
check "the hub's audit records the call" \
    audit_at_least 1 'str(g(r,"isolate.tool")).endswith("echo")'

# JSON responses (no SSE) work the same.
out=$(add remote_json --secret MCP_REMOTE_BEARER=remote_token "https://$RHOST/json" 2>&1)
is "a remote answering with JSON bodies is added too" "$?" 0 || diag "$out"
r=$(hubc remote_json.echo '{"text":"json body"}' 2>>"$TMP/call.err")
is "... and called" "$(echo "$r" | jget 'd["structuredContent"]["text"]')" "json body"

# The older HTTP+SSE transport: the bridge falls back to it on the 405.
out=$(add remote_sse --secret MCP_REMOTE_BEARER=remote_token "https://$RHOST/sse" 2>&1)
is "a remote of the HTTP+SSE transport is added" "$?" 0 || diag "$out"
r=$(hubc remote_sse.echo '{"text":"over sse"}' 2>>"$TMP/call.err")
is "... and called, the answer coming on its stream" "$(echo "$r" | jget 'd["structuredContent"]["text"]')" "over sse"
like "... by a GET of the stream and POSTs to the endpoint it named" \
    "$(rrec 'r["method"] + " " + r["path"].split("?")[0]' | grep -E '/sse|/messages' | sort -u | tr '\n' ' ')" \
    "GET /sse POST /messages POST /sse"

# Calls at once through one hub (hub serve --stdio --standalone: no background hub left
# holding the spoke): a slow call does not hold a quick one.
order=$(SERVE_DIR="$ROOT/tests/serve" HUB="$BIN/hub" CONF="$CONF" $PY - <<'EOF'
import os, sys, time
sys.path.insert(0, os.environ["SERVE_DIR"])
from mcp_stdio import StdioClient
c = StdioClient([os.environ["HUB"], "serve", "--stdio", "--standalone", "--config", os.environ["CONF"]])
c.initialize("remote-test")
slow = c.call("tools/call", {"name": "remote__slow", "arguments": {"ms": 6000}})
time.sleep(0.5)
quick = c.call("tools/call", {"name": "remote__echo", "arguments": {"text": "quick"}})
a, b = c.answer(quick, 60), c.answer(slow, 60)
ok = a and b and "error" not in a and "error" not in b and not a["result"].get("isError")
print("quick first" if ok and c.answers[quick][0] < c.answers[slow][0] else f"slow first or failed: {a} {b}")
c.close()
EOF
)
is "two calls at once: the quick one is answered while the slow one runs" "$order" "quick first"

# ---- a hostile remote ----
r=$(hubc remote.big '{"bytes":2000000}' 2>"$TMP/big.err")
check "an answer past the bridge's bound (1 MiB) fails the call" test "$?" -ne 0
like "... saying so" "$(cat "$TMP/big.err") $r" "an answer over 1048576 bytes"
r=$(hubc remote.big '{"bytes":1000}' 2>>"$TMP/call.err")
is "... and an answer within it passes" "$(echo "$r" | jget 'len(d["content"][0]["text"])')" 1000
out=$(add evil_sse --secret MCP_REMOTE_BEARER=remote_token "https://$RHOST/evil-sse" 2>&1)
check "an HTTP+SSE server whose endpoint is another origin is not added" test "$?" -ne 0
like "... the bridge refused the endpoint" "$out" "not of the server's origin"
is "... and netproxy was never asked for that origin" \
    "$(audit_count 'g(r,"destination.domain")=="collector.attacker.example"' "$PROXY_AUDIT")" 0

# ---- the token is in no jail, log or manifest ----
# token_nowhere APP VALUE PREFIX: during a slow call of APP, its bridge holds a stand-in
# (the value's shape: two letters or digits where PREFIX has its own two, since a
# prefix no key format is known by is not kept (docs/secrets.md), `_` and 40 letters and
# digits) and not VALUE; after it, no file under the test's tree but the store and the
# stand-in server's records holds VALUE.
token_nowhere() {
    local app=$1 value=$2 prefix=$3 bridge="" slow env_of files
    hubc "$app.slow" '{"ms":4000}' >/dev/null 2>>"$TMP/call.err" &
    slow=$!
    at_exit "kill $slow 2>/dev/null"
    find_bridge() { bridge=$(pids_by_exe "$BINDIR/mcp_remote" | head -1); [ -n "$bridge" ]; }
    if wait_for "the bridge runs" 20 find_bridge; then
        env_of=$(tr '\0' '\n' </proc/$bridge/environ)
        like "$app: the bridge holds a stand-in of the bearer" "$env_of" "MCP_REMOTE_BEARER=[A-Za-z0-9]{$((${#prefix} - 1))}_[A-Za-z0-9]{40}"
        unlike "$app: ... not the value (its environment)" "$env_of" "$value"
        unlike "$app: ... nor in its command line" "$(tr '\0' ' ' </proc/$bridge/cmdline)" "$value"
        is "$app: ... nor anywhere in its memory (every readable mapping)" "$(mem_has "$bridge" "$value")" no
    else
        not_ok "$app: the bridge was not seen running"
    fi
    wait $slow
    files=$(grep -rlaF "$value" "$TMP" --exclude="$(basename "$RECORDS")" 2>/dev/null |
        grep -v "^$STORE/" || true)
    is "$app: no file (data, manifests, logs, audits) holds the value but the store's" "$files" ""
}
token_nowhere remote "$TOKEN" rt_

# ---- a remote whose tools change is refused as a local one is ----
touch "$CHANGED"
r=$(hubc remote.echo '{"text":"after the change"}' 2>"$TMP/changed.err")
rc=$?
check "a call after the remote changed a tool fails" test "$rc" -ne 0
like "... because the tools no longer match the pin" "$(cat "$TMP/changed.err") $r" "description changed"
H spokes verify remote >/dev/null 2>&1
is "spokes verify says so (exit 3)" "$?" 3
rm -f "$CHANGED"

# ---- OAuth: hub spokes login, the test playing the user's browser ----
AHOST=auth.remote-standin.example
browser() { curl -s --cacert "$TMP/ca.pem" --resolve "$AHOST:443:$UP_IP" "$@"; }
asrec() {
    $PY -c 'import json,sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r.get("as"): print(eval(sys.argv[2], {"r": r}))' "$RECORDS" "$1"
}
# Without a stand-in the jail's TLS is its own: it trusts the test CA by SSL_CERT_FILE.
mkdir -p "$DATA/tester/roauth" && cp "$TMP/ca.pem" "$DATA/tester/roauth/ca.pem"
out=$(add roauth --env SSL_CERT_FILE=/data/ca.pem "https://$RHOST/mcp" 2>&1)
check "before the login, add of a remote that wants OAuth fails" test "$?" -ne 0
like "... saying to log in" "$out" "hub spokes login"
"$BIN/hub" spokes login --config "$CONF" roauth "https://$RHOST/mcp" --timeout-s 60 \
    >"$TMP/login.out" 2>&1 </dev/null &
LOGIN=$!
at_exit "kill $LOGIN 2>/dev/null"
wait_for "the login prints its URL" 20 grep -q "^  https://$AHOST/authorize" "$TMP/login.out"
AUTH_URL=$(grep -o "https://$AHOST/authorize[^ ]*" "$TMP/login.out")
CB=$(grep -o 'http://127.0.0.1:[0-9]*/callback' "$TMP/login.out" | head -1)
like "the login prints the authorisation URL with PKCE S256 and the resource" "$AUTH_URL" \
    "code_challenge=[A-Za-z0-9_-]{43}&code_challenge_method=S256&state=.*&resource=https%3A%2F%2F$RHOST%2Fmcp"
# From the attacker's side: a callback with another state (a forged redirect).
bad=$(curl -s -o /dev/null -w '%{http_code}' "$CB?code=forged&state=not-this-login")
is "a callback with a wrong state is refused (400)" "$bad" 400
loc=$(browser -o /dev/null -w '%{redirect_url}' "$AUTH_URL")
like "the authorisation server redirects to the hub's loopback callback" "$loc" "^$CB\?code="
page=$(curl -s "$loc")
like "... which says the hub is logged in" "$page" "logged in"
wait $LOGIN
is "hub spokes login exits 0" "$?" 0 || diag "$(cat "$TMP/login.out")"
is "the hub registered itself with its loopback redirect (RFC 7591)" \
    "$(asrec 'r["path"] == "/register"' | grep -c True)" 1
is "... exchanged the code with its PKCE verifier and the resource" \
    "$(asrec 'r["path"] == "/token" and len(r["form"].get("code_verifier", "")) >= 43 and r["form"].get("resource") == "https://'"$RHOST"'/mcp" and r["form"]["grant_type"] == "authorization_code"' | grep -c True)" 1
is "... once: the forged code was never tried" "$(asrec 'r["path"] == "/token" and r["form"].get("code") == "forged"' | grep -c True)" 0
sl=$(H secrets list --format json)
is "the access token is a secret bound to the remote's host" \
    "$(echo "$sl" | jget '[s["hosts"] for s in d if s["name"] == "roauth.oauth"]')" "[[\"$RHOST\"]]"
check "the login's audit record" audit_at_least 1 'g(r,"event.action")=="oauth-login" and g(r,"event.outcome")=="success" and g(r,"isolate.spoke")=="roauth"'

out=$(add roauth "https://$RHOST/mcp" 2>&1)
is "after the login, add of the remote succeeds with no --secret" "$?" 0 || diag "$out"
is "... its bearer the login's token" "$(jget 'd["env"]["MCP_REMOTE_BEARER"]' <"$SPOKES/roauth.json")" '{"secret": "roauth.oauth"}'
r=$(hubc roauth.echo '{"text":"with oauth"}' 2>>"$TMP/call.err")
is "a call with the OAuth token" "$(echo "$r" | jget 'd["structuredContent"]["text"]')" "with oauth"
AT=$(rrec 'r["authorization"]' | grep -o 'at_[A-Za-z0-9]*' | tail -1)
like "... the remote received an access token of the authorisation server" "$AT" "^at_[A-Za-z0-9]{40}$"
token_nowhere roauth "$AT" at_
RT=$(asrec 'r["path"] == "/token" and r["form"]["grant_type"] == "refresh_token"' | grep -c True)

# Refresh: the next token expires at once, so the start after it asks for a new one (and
# the authorisation server revokes the old one: a call that works proves the refresh).
echo 1 >"$TMP/expires_in"
out=$(H spokes login roauth --refresh 2>&1)
is "hub spokes login --refresh" "$out" "refreshed"
OLD=$(rrec 'r["authorization"]' | tail -1)
r=$(hubc roauth.echo '{"text":"refreshed"}' 2>>"$TMP/call.err")
is "a start after the token expired refreshes it, and the call works" \
    "$(echo "$r" | jget 'd["structuredContent"]["text"]')" "refreshed"
is "... two refresh grants in all (--refresh, then the start's)" \
    "$(asrec 'r["path"] == "/token" and r["form"]["grant_type"] == "refresh_token"' | grep -c True)" "$((RT + 2))"
check "... audited" audit_at_least 2 'g(r,"event.action")=="oauth-refresh" and g(r,"event.outcome")=="success"'
rm -f "$TMP/expires_in"

# A running spoke (hub serve) whose token is refreshed: the store's watch hands the new
# value to netproxy, and its next request has it (the old one is revoked by then).
rot=$(SERVE_DIR="$ROOT/tests/serve" HUB="$BIN/hub" CONF="$CONF" $PY - <<'EOF'
import os, subprocess, sys, time
sys.path.insert(0, os.environ["SERVE_DIR"])
from mcp_stdio import StdioClient
hub, conf = os.environ["HUB"], os.environ["CONF"]
c = StdioClient([hub, "serve", "--stdio", "--standalone", "--config", conf])
c.initialize("remote-rotation")
def echo(text):
    r = c.request("tools/call", {"name": "roauth__echo", "arguments": {"text": text}}, 60)
    return (r or {}).get("result", {}).get("structuredContent", {}).get("text", f"failed: {r}")
one = echo("before")
out = subprocess.run([hub, "spokes", "login", "--config", conf, "roauth", "--refresh"],
                     capture_output=True, text=True).stdout.strip()
time.sleep(1)
print(one, out, echo("after"))
c.close()
EOF
)
is "a refresh reaches a running spoke's next request" "$rot" "before refreshed after"
is "... its two calls carried two tokens (the old, the refreshed)" \
    "$(rrec 'r["authorization"] if r["rpc"] == "tools/call" else ""' | grep . | tail -2 | sort -u | wc -l)" 2

# From a hostile server's side: metadata for another resource, no PKCE S256.
n_reg=$(asrec 'r["path"] == "/register"' | grep -c True)
out=$("$BIN/hub" spokes login --config "$CONF" wrongres "https://$RHOST/mcp-wrongres" --timeout-s 5 2>&1 </dev/null)
like "a login whose resource metadata is for another resource is refused" "$? $out" "^3 .*metadata is for https://$RHOST/elsewhere"
out=$("$BIN/hub" spokes login --config "$CONF" nos256 "https://$RHOST/mcp-nos256" --timeout-s 5 2>&1 </dev/null)
like "a login to an authorisation server without PKCE S256 is refused" "$? $out" "^3 .*does not offer PKCE S256"
is "... neither registered a client" "$(asrec 'r["path"] == "/register"' | grep -c True)" "$n_reg"

# The hub's own client has netproxy's address guard: metadata or a URL naming an address
# inside is refused before anything is sent.
out=$("$BIN/hub" spokes login --config "$CONF" privy "https://private.remote-standin.example/mcp" \
    --timeout-s 5 2>&1 </dev/null)
check "a login to a name that resolves to a private address fails" test "$?" -ne 0
like "... refused by the address guard" "$out" "loopback address, which is refused"
check "... audited" audit_at_least 1 'g(r,"event.action")=="oauth-login" and g(r,"event.outcome")=="failure" and g(r,"isolate.spoke")=="privy"'

# ---- a name that resolves to a private address: netproxy's address guard ----
n0=$(wc -l <"$RECORDS")
out=$(add privy "https://private.remote-standin.example/mcp" 2>&1)
check "a remote whose name resolves to a private address is not added" test "$?" -ne 0
if audit_at_least 1 'g(r,"event.reason")=="forbidden-address" and g(r,"destination.domain")=="private.remote-standin.example"' "$PROXY_AUDIT"; then
    ok "... netproxy refused it by the address guard (audited)"
else
    not_ok "... netproxy refused it by the address guard (audited): $out $(grep private "$PROXY_AUDIT" | tail -2)"
fi
is "... and the stand-in received nothing" "$(wc -l <"$RECORDS")" "$n0"
check "... nothing is written" test ! -e "$SPOKES/privy.json"

done_testing
