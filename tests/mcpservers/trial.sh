#!/usr/bin/env bash
# A new user's trial (docs/mcp-servers.md): 20 popular MCP servers from npm, each added
# with `hub spokes add NAME [--env KEY=dummy] [--allow DOMAIN] -- npm:PACKAGE@VERSION`
# into a fresh store in namespace mode, four at a time, then one tool of each called in
# one hub. The API servers' hosts resolve (netproxy.resolve) to the corpus's stand-in
# upstream (standin.py, which logs SNI and Host), so "did its request reach its host
# through the jail's egress" has an answer without the internet. Not in make check (it
# installs 20 packages from the registry): run it by hand, as root, on a built tree:
#     tests/mcpservers/trial.sh        # prints the table of docs/mcp-servers.md
. "$(dirname "$0")/../lib.sh"
require_root
PY=/usr/bin/python3
SPOKES=$TMP/spokes
CONF=$TMP/hub.json
HOST_ID_BASE=$((1900000 + ($$ % 4000) * 64))
UP=127.78.$((($$ >> 8) % 256)).$(($$ % 256))
API_HOSTS="api.github.com api.search.brave.com slack.com maps.googleapis.com gitlab.com
api.exa.ai sentry.io context7.com api.notion.com api.firecrawl.dev api.tavily.com"
mkdir -p "$SPOKES"
# shellcheck disable=SC2086
test_cert $API_HOSTS
bg $PY "$ROOT/tests/mcpservers/standin.py" "$UP" "$TMP/srv.pem" "$TMP/srv.key" "$TMP/standin.jsonl"
rport=$(free_port)
bg redis-server --port "$rport" --bind 127.0.0.1 --save "" --appendonly no --daemonize no \
    --logfile "$TMP/redis.log"
# shellcheck disable=SC2086
$PY - $API_HOSTS <<EOF
import json, sys
json.dump({
    "isolation": "namespace", "user": "tester", "spokes_dir": "$SPOKES",
    "profile": "$ROOT/config/profiles/spoke.json", "data_root": "$TMP/data",
    "run_dir": "$TMP/run", "audit": "$TMP/audit.jsonl", "call_timeout_ms": 60000,
    "start_timeout_ms": 60000,
    "network": {"veth_pool": "169.254.144.0/22", "gateway_netns": "itest-trial-$$",
                "proxy_port": 3128, "host_id_base": $HOST_ID_BASE, "host_id_count": 64},
    "netproxy": {"binary": "$BIN/netproxy", "audit": "$TMP/netproxy.jsonl",
                 "resolve": ["%s:443:$UP" % h for h in sys.argv[1:]],
                 "upstream_allow_cidr": ["$UP/32"]},
}, open("$CONF", "w"), indent=1)
EOF
CA=NODE_EXTRA_CA_CERTS=/data/ca.pem
# NAME|PACKAGE@VERSION|API HOST (checked at the stand-in)|OPTIONS and ARGS|TOOL|ARGUMENTS
TRIAL="github|@modelcontextprotocol/server-github@2025.4.8|api.github.com|--env GITHUB_PERSONAL_ACCESS_TOKEN=x --allow github.com|search_repositories|{\"query\":\"x\"}
brave|@modelcontextprotocol/server-brave-search@0.6.2|api.search.brave.com|--env BRAVE_API_KEY=x --allow brave.com|brave_web_search|{\"query\":\"x\"}
slack|@modelcontextprotocol/server-slack@2025.4.25|slack.com|--env SLACK_BOT_TOKEN=x --env SLACK_TEAM_ID=T0 --allow slack.com|slack_list_channels|{}
gmaps|@modelcontextprotocol/server-google-maps@0.6.2|maps.googleapis.com|--env GOOGLE_MAPS_API_KEY=x --allow maps.googleapis.com|maps_geocode|{\"address\":\"x\"}
postgres|@modelcontextprotocol/server-postgres@0.6.2||-- postgresql://127.0.0.1:5432/none||
puppeteer|@modelcontextprotocol/server-puppeteer@2025.5.12||||
gitlab|@modelcontextprotocol/server-gitlab@2025.4.25|gitlab.com|--env GITLAB_PERSONAL_ACCESS_TOKEN=x --allow gitlab.com|search_repositories|{\"search\":\"x\"}
redis|@modelcontextprotocol/server-redis@2025.4.25||--tcp 127.0.0.1:$rport -- redis://127.0.0.1:$rport|set|{\"key\":\"k\",\"value\":\"v\"}
exa|exa-mcp-server@3.4.1|api.exa.ai|--env EXA_API_KEY=x --allow exa.ai|web_search_exa|{\"query\":\"x\"}
sentry|@sentry/mcp-server@0.39.0|sentry.io|--env SENTRY_ACCESS_TOKEN=x --allow sentry.io|find_organizations|{}
context7|@upstash/context7-mcp@4.1.1|context7.com|--allow context7.com|query-docs|{\"libraryId\":\"/a/b\",\"query\":\"x\"}
git|@cyanheads/git-mcp-server@2.15.3||--exec git|git_init|{\"path\":\"/data/repo\"}
kubernetes|mcp-server-kubernetes@4.1.7||||
playwright|@playwright/mcp@0.0.83||||
desktop|@wonderwhy-er/desktop-commander@0.2.52|||list_directory|{\"path\":\"/data\"}
time|time-mcp@1.0.6|||current_time|{}
pdf|@modelcontextprotocol/server-pdf@2.0.4||-- --stdio||
notion|@notionhq/notion-mcp-server@2.5.2|api.notion.com|--env NOTION_TOKEN=x --allow notion.com|API-get-self|{}
firecrawl|firecrawl-mcp@3.26.0|api.firecrawl.dev|--env FIRECRAWL_API_KEY=x --allow firecrawl.dev|firecrawl_scrape|{\"url\":\"https://example.org/\"}
tavily|tavily-mcp@0.2.22|api.tavily.com|--env TAVILY_API_KEY=x --allow tavily.com|tavily_search|{\"query\":\"x\"}"
# TRIAL_ONLY="NAME ...": only these servers (a second look at a few).
if [ -n "${TRIAL_ONLY:-}" ]; then
    TRIAL=$(grep -E "^($(echo "$TRIAL_ONLY" | tr ' ' '|'))\|" <<<"$TRIAL")
fi
N_TRIAL=$(wc -l <<<"$TRIAL")
wait_for "the stand-in upstream on $UP:443" 20 bash -c "echo >/dev/tcp/$UP/443"
wait_for "redis-server" 20 bash -c "echo >/dev/tcp/127.0.0.1/$rport"

add_one() { # NAME PACKAGE OPTS... [-- ARGS...]
    local name=$1 pkg=$2
    shift 2
    local opts=() args=() seen=0 a
    for a in "$@"; do
        if [ "$a" = -- ]; then seen=1; elif [ $seen = 1 ]; then args+=("$a"); else opts+=("$a"); fi
    done
    mkdir -p "$TMP/data/tester/$name" && cp "$TMP/ca.pem" "$TMP/data/tester/$name/ca.pem"
    [ -n "${opts[*]}" ] && [[ " ${opts[*]} " == *" --allow "* ]] && opts+=(--env "$CA")
    "$BIN/hub" spokes add "$name" --config "$CONF" --yes --timeout-s 300 "${opts[@]}" -- \
        "npm:$pkg" "${args[@]}" >"$TMP/add.$name" 2>&1
    echo $? >"$TMP/rc.$name"
}
mkdir -p "$TMP/data/tester" && chmod 711 "$TMP/data" "$TMP/data/tester"
started=()
t0=$(date +%s)
while IFS='|' read -r name pkg host rest tool targs; do
    n=${#started[@]}
    [ "$n" -ge 4 ] && wait "${started[n - 4]}"
    # shellcheck disable=SC2086
    add_one "$name" "$pkg" $rest &
    started+=($!)
done <<<"$TRIAL"
for p in "${started[@]}"; do wait "$p"; done
diag "$N_TRIAL servers added (npm install included) in $(($(date +%s) - t0)) s"

calls=()
while IFS='|' read -r name pkg host rest tool targs; do
    [ -n "$tool" ] && [ "$(cat "$TMP/rc.$name")" = 0 ] && calls+=("$name.$tool" "$targs")
done <<<"$TRIAL"
t0=$(date +%s)
"$BIN/hub" call --config "$CONF" --parallel "${calls[@]}" >"$TMP/calls.out" 2>"$TMP/calls.err"
diag "$((${#calls[@]} / 2)) calls in one hub in $(($(date +%s) - t0)) s"

echo "| server | added | revision | tools | called | its API host reached through the egress |"
echo "|---|---|---|---:|---|---|"
n_added=0
n_api=0
n_reached=0
while IFS='|' read -r name pkg host rest tool targs; do
    rc=$(cat "$TMP/rc.$name")
    added=no proto="" ntools="" called="" reached=""
    if [ "$rc" = 0 ]; then
        added=yes
        n_added=$((n_added + 1))
        proto=$(jget 'd.get("protocol") or ""' <"$SPOKES/$name.json")
        ntools=$(jget 'len(d["tools"])' <"$SPOKES/$name.json")
    else
        added="no: $(grep -m1 '^hub:' "$TMP/add.$name" | cut -c1-200)"
        diag "$name: $(tail -n 8 "$TMP/add.$name")"
    fi
    if [ -n "$tool" ] && [ "$rc" = 0 ]; then
        called=$($PY -c 'import json,sys
for line in open(sys.argv[1]):
    d = json.loads(line)
    if "tool" not in d:  # one call alone: hub call prints its bare result
        d = {"tool": sys.argv[2], "result": d}
    if d.get("tool") == sys.argv[2]:
        if "error" in d: print("`%s` error: %s" % (sys.argv[3], d["error"].get("message", "")[:80]))
        else:
            r = d["result"]; t = ((r.get("content") or [{}])[0].get("text") or "")[:60].replace("\n", " ").replace("|", "/")
            print("`%s` %s: %s" % (sys.argv[3], "isError" if r.get("isError") else "ok", t))' \
            "$TMP/calls.out" "$name.$tool" "$tool")
    fi
    if [ -n "$host" ]; then
        n_api=$((n_api + 1))
        k=$($PY -c 'import json,sys
print(sum(1 for l in open(sys.argv[1]) if json.loads(l)["sni"] == sys.argv[2] == json.loads(l)["host"]))' \
            "$TMP/standin.jsonl" "$host" 2>/dev/null || echo 0)
        mode=$(audit_count "(g(r,'event.action')=='connect' and g(r,'event.outcome')=='success' and
            (g(r,'isolate.spoke') or '').startswith('$name-') and g(r,'destination.domain')=='$host' and
            g(r,'isolate.egress')=='transparent')" "$TMP/netproxy.jsonl")
        if [ "$k" -ge 1 ]; then
            n_reached=$((n_reached + 1))
            reached="yes, $host ($([ "$mode" -ge 1 ] && echo transparent || echo CONNECT))"
        else
            reached="**no** ($host)"
        fi
    fi
    echo "| $pkg | $added | $proto | $ntools | $called | $reached |"
done <<<"$TRIAL"
diag "$n_added of $N_TRIAL added; $n_reached of $n_api API servers reached their host through the egress"
[ -s "$TMP/calls.err" ] && diag "$(head -c 4000 "$TMP/calls.err")"
done_testing
