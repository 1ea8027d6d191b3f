#!/usr/bin/env bash
# The real GitHub and Notion MCP servers from npm (tests/secrets/package.json, pinned;
# make deps installs them) given their keys the documented way: `hub secrets set ...
# --hosts` and `hub spokes add --secret`. Their APIs are stand-ins in a network namespace
# of the test's own that record what they receive: the real value arrives there, while
# the servers' environment, /proc/self/environ, their data, the manifests, every log and
# audit file hold the stand-in only.
#
# Node 20's clients do not tunnel through HTTPS_PROXY (node-fetch ignores it, axios
# sends requests to the proxy in clear): connect-shim.cjs, loaded through NODE_OPTIONS,
# gives them CONNECT, as Node 22.21+ or the jail's transparent egress does. The servers'
# code is as npm installed it.
. "$(dirname "$0")/../lib.sh"
require_root
MODE=namespace
. "$ROOT/tests/hub/hub_lib.sh"
MODS=$ROOT/tests/secrets/node_modules
if ! command -v node >/dev/null || [ ! -x "$MODS/.bin/mcp-server-github" ] ||
    [ ! -x "$MODS/.bin/notion-mcp-server" ]; then
    skip "$TEST_NAME" "node or the servers of tests/secrets/package.json are missing (make deps)"
    exit 0
fi
. "$ROOT/tests/secrets/secrets_lib.sh"
hub_setup
UPSTREAM_ANSWERS=$ROOT/tests/secrets/answers.json upstream_start api.github.com api.notion.com
secrets_config api.github.com api.notion.com
H() {
    if [ "$1 ${2:-}" = "spokes add" ]; then
        "$BIN/hub" spokes add --config "$CONF" "${@:3}"
    else
        "$BIN/hub" "$@" --config "$CONF"
    fi
}
GH=github_pat_$(head -c 96 /dev/urandom | base64 | tr -dc 'A-Za-z0-9' | head -c 70)
NT=ntn_$(head -c 64 /dev/urandom | base64 | tr -dc 'A-Za-z0-9' | head -c 46)
echo "$GH" | H secrets set github --hosts api.github.com >/dev/null 2>&1
is "hub secrets set github --hosts api.github.com" "$?" 0
echo "$NT" | H secrets set notion --hosts api.notion.com >/dev/null 2>&1
is "hub secrets set notion --hosts api.notion.com" "$?" 0
SHIM=(--env "NODE_OPTIONS=--require=/opt/itest/connect-shim.cjs" --bind-ro "$ROOT/tests/secrets:/opt/itest")
H spokes add github --allow github.com --secret GITHUB_PERSONAL_ACCESS_TOKEN=github "${SHIM[@]}" \
    --yes -- "$MODS/.bin/mcp-server-github" >"$TMP/add.github" 2>&1
is "spokes add github (the npm server, --secret)" "$?" 0 || diag "$(tail -5 "$TMP/add.github")"
H spokes add notion --allow notion.com --secret NOTION_TOKEN=notion "${SHIM[@]}" \
    --yes -- "$MODS/.bin/notion-mcp-server" >"$TMP/add.notion" 2>&1
rc=$?; is "spokes add notion (the npm server, --secret)" "$rc" 0; [ "$rc" = 0 ] || diag "$(tail -5 "$TMP/add.notion")"
refute "the manifests hold no value" grep -lF -e "$GH" -e "$NT" "$SPOKES/github.json" "$SPOKES/notion.json"

: >"$RECORDS"
out=$(hubc github.search_repositories '{"query":"stand-in"}' 2>"$TMP/gh.err")
rc=$?; is "github.search_repositories runs" "$rc" 0; [ "$rc" = 0 ] || diag "$(tail -5 "$TMP/gh.err") $(tail -5 "$RUN"/spokes/tester/github.log)"
like "... and answers from the (stand-in) API" "$out" "itest/stand-in"
is "api.github.com received the real key" \
    "$(records 'r["headers"].get("authorization")' | grep -c "^Bearer $GH$")" 1
out=$(hubc notion.API-get-self '{}' 2>"$TMP/nt.err")
is "notion API-get-self runs" "$?" 0 || diag "$(tail -3 "$TMP/nt.err")"
like "... and answers from the (stand-in) API" "$out" "itest integration"
is "api.notion.com received the real key" \
    "$(records 'r["headers"].get("authorization")' | grep -c "^Bearer $NT$")" 1
check "each injection is audited by name" \
    test "$(audit_count 'g(r,"event.action")=="credential-inject" and g(r,"isolate.secret.name") in ("github","notion")' "$PROXY_AUDIT")" -ge 2

# What the servers hold: their own process's view, through their own data directory
# (a server that writes its environment to disk would put the stand-in there).
for app in github notion; do
    pid_env=$(grep -rlF -e "$GH" -e "$NT" /proc/[0-9]*/environ 2>/dev/null | head -1)
    is "$app: no process's environment holds a value while it runs" "$pid_env" ""
done
is "no value in the data, manifests, logs, audit or transcript" \
    "$(grep -rlF -e "$GH" -e "$NT" "$DATA" "$SPOKES" "$RUN" "$AUDIT" "$PROXY_AUDIT" \
        "$TMP/audit.transcript.jsonl" 2>/dev/null)" ""
done_testing
