#!/usr/bin/env bash
# The corpus (issue 25, item 7): real MCP servers from npm beyond the four reference
# ones, at the versions of tests/mcpservers/corpus/package.json and its lockfile
# (installed by `make deps`, npm ci --ignore-scripts), each added with `hub spokes add`
# as npm installed it, in namespace mode, four at a time. Among them the SDK 1.0.x line
# on protocol 2024-11-05 (server-github, -brave-search, -slack, -google-maps, -postgres,
# -gitlab), one that prints text on stdout before its first frame (time-mcp),
# one that sends log notifications at start (desktop-commander), one that asks
# roots/list (server-pdf), one that needs more than 256 open files
# (mcp-server-kubernetes), one with 118 tools (@zereight/mcp-gitlab: more than the
# old cap of 64, issue 38) and a node wrapper around a native .NET program of its
# platform package (@azure/mcp, given with --exec).
#
# Then the corpus is called. API servers reach a stand-in upstream (standin.py, on a
# loopback address of this test's own at port 443) through the jail's egress: netproxy
# resolves their API hosts there (hub.json's netproxy.resolve and upstream_allow_cidr)
# and the jail trusts the test CA (NODE_EXTRA_CA_CERTS). Each HTTP client once: Node's
# built-in fetch (exa, brave), the server's own undici agent (context7), node-fetch on
# protocol 2024-11-05 (github); the stand-in checks SNI and Host of every request. A
# server whose API is outside its allowlist (tavily) is refused and audited. A database
# server through --tcp (server-redis against a private redis-server on loopback) and a
# server that runs git through --exec (git-mcp-server). Nothing leaves the machine.
. "$(dirname "$0")/../lib.sh"
require_root
PY=/usr/bin/python3
MODS=$ROOT/tests/mcpservers/corpus/node_modules
if ! command -v node >/dev/null || [ ! -d "$MODS/time-mcp" ]; then
    skip "$TEST_NAME" "node or the corpus is missing (make deps)"
    exit 0
fi
SPOKES=$TMP/spokes
CONF=$TMP/hub.json
HOST_ID_BASE=$((1800000 + ($$ % 4000) * 64))
# The stand-in's own loopback address (port 443 there is this test's alone).
UP=127.77.$((($$ >> 8) % 256)).$(($$ % 256))
API_HOSTS="api.exa.ai context7.com api.github.com api.search.brave.com api.tavily.com gitlab.com"
mkdir -p "$SPOKES"
test_cert $API_HOSTS
for name in github brave exa context7 tavily gitlabx; do
    mkdir -p "$TMP/data/tester/$name" && cp "$TMP/ca.pem" "$TMP/data/tester/$name/ca.pem"
done
chmod 711 "$TMP/data" "$TMP/data/tester"
bg $PY "$ROOT/tests/mcpservers/standin.py" "$UP" "$TMP/srv.pem" "$TMP/srv.key" "$TMP/standin.jsonl"
rport=$(free_port)
bg redis-server --port "$rport" --bind 127.0.0.1 --save "" --appendonly no --daemonize no \
    --logfile "$TMP/redis.log"
$PY - $API_HOSTS <<EOF
import json, sys
json.dump({
    "isolation": "namespace", "user": "tester", "spokes_dir": "$SPOKES",
    "profile": "$ROOT/config/profiles/spoke.json", "data_root": "$TMP/data",
    "run_dir": "$TMP/run", "audit": "$TMP/audit.jsonl", "call_timeout_ms": 30000,
    "start_timeout_ms": 30000,
    "network": {"veth_pool": "169.254.140.0/22", "gateway_netns": "itest-corpus-$$",
                "proxy_port": 3128, "host_id_base": $HOST_ID_BASE, "host_id_count": 64},
    "netproxy": {"binary": "$BIN/netproxy", "audit": "$TMP/netproxy.jsonl",
                 "resolve": ["%s:443:$UP" % h for h in sys.argv[1:]],
                 "upstream_allow_cidr": ["$UP/32"]},
}, open("$CONF", "w"), indent=1)
EOF
CA=NODE_EXTRA_CA_CERTS=/data/ca.pem
# NAME|BIN (in node_modules/.bin)|PROTOCOL it speaks|OPTIONS and ARGS
CORPUS="github|mcp-server-github|2024-11-05|--env GITHUB_PERSONAL_ACCESS_TOKEN=none --allow github.com --env $CA
brave|mcp-server-brave-search|2024-11-05|--env BRAVE_API_KEY=none --allow brave.com --env $CA
slack|mcp-server-slack|2024-11-05|--env SLACK_BOT_TOKEN=none --env SLACK_TEAM_ID=T0
gmaps|mcp-server-google-maps|2024-11-05|--env GOOGLE_MAPS_API_KEY=none
postgres|mcp-server-postgres|2024-11-05|-- postgresql://127.0.0.1:5432/none
gitlab|mcp-server-gitlab|2024-11-05|--env GITLAB_PERSONAL_ACCESS_TOKEN=none
redis|mcp-server-redis||--tcp 127.0.0.1:$rport -- redis://127.0.0.1:$rport
pdf|mcp-pdf-server||-- --stdio
desktop|desktop-commander||
time|time-mcp||
kubernetes|mcp-server-kubernetes||
git|git-mcp-server||--exec git
exa|exa-mcp-server||--env EXA_API_KEY=none --allow exa.ai --env $CA
context7|context7-mcp||--allow context7.com --env $CA
tavily|tavily-mcp||--env TAVILY_API_KEY=none --allow tavily.example --env $CA
firecrawl|firecrawl-mcp||--env FIRECRAWL_API_KEY=none
gitlabx|zereight-mcp-gitlab||--env GITLAB_PERSONAL_ACCESS_TOKEN=none --allow gitlab.com --env $CA
azure|azmcp||--exec $MODS/@azure/mcp-linux-x64/dist/azmcp --env DOTNET_SYSTEM_GLOBALIZATION_INVARIANT=1 --env AZURE_MCP_COLLECT_TELEMETRY=false -- server start"
N_CORPUS=$(wc -l <<<"$CORPUS")
wait_for "the stand-in upstream on $UP:443" 20 bash -c "echo >/dev/tcp/$UP/443"
wait_for "redis-server" 20 bash -c "echo >/dev/tcp/127.0.0.1/$rport"
add_one() { # NAME BIN OPTS...
    local name=$1 bin=$2
    shift 2
    local opts=() args=() seen=0 a
    for a in "$@"; do
        if [ "$a" = -- ]; then seen=1; elif [ $seen = 1 ]; then args+=("$a"); else opts+=("$a"); fi
    done
    "$BIN/hub" spokes add "$name" --config "$CONF" --yes --timeout-s 180 "${opts[@]}" -- \
        "$MODS/.bin/$bin" "${args[@]}" >"$TMP/add.$name" 2>&1
    echo $? >"$TMP/rc.$name"
}
# The jobs started here, waited for by pid: a bare wait would wait for the stand-in and
# redis-server too, which run until the end.
jobs_started=()
wait_started() {
    local p
    for p in "${jobs_started[@]}"; do wait "$p"; done
    jobs_started=()
}
t0=$(date +%s)
while IFS='|' read -r name bin proto rest; do
    # At most four adds at a time: the fifth waits for the first, and so on.
    n=${#jobs_started[@]}
    [ "$n" -ge 4 ] && wait "${jobs_started[n - 4]}"
    # shellcheck disable=SC2086
    add_one "$name" "$bin" $rest &
    jobs_started+=($!)
done <<<"$CORPUS"
wait_started
diag "$N_CORPUS servers added in $(($(date +%s) - t0)) s, four at a time"
n_ok=0
while IFS='|' read -r name bin proto rest; do
    rc=$(cat "$TMP/rc.$name" 2>/dev/null)
    [ "$rc" = 0 ] || diag "$name: $(tail -n 5 "$TMP/add.$name")"
    is "$name ($bin) is added in namespace mode" "$rc" 0
    [ "$rc" = 0 ] && n_ok=$((n_ok + 1))
    if [ -n "$proto" ] && [ -f "$SPOKES/$name.json" ]; then
        is "... on protocol $proto, pinned" "$(jget 'd.get("protocol")' <"$SPOKES/$name.json")" "$proto"
    fi
done <<<"$CORPUS"
is "all $N_CORPUS are added" "$n_ok" "$N_CORPUS"

# ---- the corpus, called: in one hub, all at once ----
t0=$(date +%s)
"$BIN/hub" call --config "$CONF" --parallel \
    exa.web_search_exa '{"query":"isolation of MCP servers","numResults":1}' \
    context7.query-docs '{"libraryId":"/standin/lib","query":"how to test it"}' \
    github.search_repositories '{"query":"standin"}' \
    brave.brave_web_search '{"query":"standin","count":1}' \
    tavily.tavily_search '{"query":"standin"}' \
    redis.set '{"key":"corpus","value":"stand-in value"}' \
    git.git_init '{"path":"/data/repo"}' \
    time.current_time '{"format":"YYYY-MM-DD"}' \
    gitlabx.whoami '{}' \
    azure.get_azure_bestpractices '{"intent":"list the commands","learn":true}' >"$TMP/out.1" 2>"$TMP/err.1"
diag "the corpus called in $(($(date +%s) - t0)) s"
[ -s "$TMP/err.1" ] && diag "$(head -c 3000 "$TMP/err.1")"
# jlines_durations: "TOOL N ms, ..." of hub call's lines on stdin (each start included).
jlines_durations() {
    $PY -c 'import json,sys
print(", ".join("%s %d ms" % (d.get("tool"), d.get("duration_us", 0) // 1000)
                for d in map(json.loads, filter(str.strip, sys.stdin))))' 2>/dev/null || true
}
diag "$(cat "$TMP/out.1" | jlines_durations)"
# text APP.TOOL: that call's answer (the text of its first content item, or its error).
text() {
    cat "$TMP/out.1" | $PY -c 'import json,sys
for line in sys.stdin:
    d = json.loads(line)
    if d.get("tool") == sys.argv[1]:
        c = (d.get("result") or {}).get("content") or [{}]
        print(c[0].get("text") or json.dumps(d.get("error") or d.get("result")))' "$1"
}
# arrived HOST: requests the stand-in saw for HOST, with SNI and Host both HOST.
arrived() {
    $PY -c 'import json,sys
n = 0
for line in open(sys.argv[1]):
    r = json.loads(line)
    n += r["sni"] == sys.argv[2] and r["host"] == sys.argv[2]
print(n)' "$TMP/standin.jsonl" "$1" 2>/dev/null || echo 0
}
pa() { audit_count "($1)" "$TMP/netproxy.jsonl"; }
# egressed SPOKE HOST MODE: netproxy's successful connect records of SPOKE to HOST by
# MODE (transparent: straight to its synthetic address; connect: HTTPS_PROXY).
egressed() {
    pa "(g(r,\"isolate.spoke\") or \"\").startswith(\"$1-\") and g(r,\"event.action\")==\"connect\" and
        g(r,\"event.outcome\")==\"success\" and g(r,\"destination.domain\")==\"$2\" and
        g(r,\"isolate.egress\")==\"$3\""
}
like "exa (Node's built-in fetch) answers from its stand-in API" "$(text exa.web_search_exa)" "stand-in answer from api.exa.ai"
check "... which saw the request for api.exa.ai (SNI and Host)" test "$(arrived api.exa.ai)" -ge 1
check "... through the transparent path (fetch ignores HTTPS_PROXY)" test "$(egressed exa api.exa.ai transparent)" -ge 1
like "context7 (its own undici agent) answers from its stand-in API" "$(text context7.query-docs)" "stand-in docs from context7.com"
check "... which saw the request for context7.com" test "$(arrived context7.com)" -ge 1
check "... through netproxy (its ProxyAgent takes HTTPS_PROXY: CONNECT)" \
    test "$(egressed context7 context7.com connect)" -ge 1
like "github (2024-11-05, node-fetch) answers from its stand-in API" "$(text github.search_repositories)" '"total_count": *4242'
check "... which saw the request for api.github.com" test "$(arrived api.github.com)" -ge 1
check "... through the transparent path" test "$(egressed github api.github.com transparent)" -ge 1
like "brave-search (2024-11-05, built-in fetch) answers from its stand-in API" "$(text brave.brave_web_search)" \
    "stand-in answer from api.search.brave.com"
check "... which saw the request for api.search.brave.com" test "$(arrived api.search.brave.com)" -ge 1
# More tools than the old cap of 64 (issue 38): @zereight/mcp-gitlab lists 118 by default.
if [ -f "$SPOKES/gitlabx.json" ]; then
    check "@zereight/mcp-gitlab is pinned with more than 64 tools (hub.json max_tools)" \
        test "$(jget 'len(d.get("tools") or [])' <"$SPOKES/gitlabx.json")" -gt 64
fi
like "... and its whoami answers from its stand-in API" "$(text gitlabx.whoami)" "stand-in user from gitlab.com"
check "... which saw the request for gitlab.com" test "$(arrived gitlab.com)" -ge 1
check "... through netproxy by CONNECT (its client takes HTTPS_PROXY)" \
    test "$(egressed gitlabx gitlab.com connect)" -ge 1
# A package whose node wrapper spawns a native program of its platform package
# (@azure/mcp: a 140 MB .NET binary), given with --exec and .NET's globalization off (no
# ICU to dlopen in the jail).
if [ -f "$SPOKES/azure.json" ]; then
    is "@azure/mcp's .NET binary lists its 61 tools in the jail, pinned" \
        "$(jget 'len(d.get("tools") or [])' <"$SPOKES/azure.json")" 61
fi
like "... and answers a call itself (get_azure_bestpractices, learn)" \
    "$(text azure.get_azure_bestpractices)" "available command and their parameters"
mkdir -p "$TMP/noexec"
"$BIN/hub" spokes add azure_noexec --config "$CONF" --spokes "$TMP/noexec" --yes --timeout-s 60 \
    --env DOTNET_SYSTEM_GLOBALIZATION_INVARIANT=1 -- "$MODS/.bin/azmcp" server start \
    >"$TMP/add.noexec" 2>&1
rc=$?
check "... without --exec for its binary, the same add fails" test "$rc" -ne 0
like "... because the jail refused the wrapper's spawn of it" "$(cat "$TMP/add.noexec")" 'EPERM|EACCES'
check "... and writes no manifest" test ! -e "$TMP/noexec/azure_noexec.json"
unlike "tavily, whose API is outside its allowlist, gets no answer from it" "$(text tavily.tavily_search)" "stand-in answer"
is "... the stand-in never saw a request for api.tavily.com" "$(arrived api.tavily.com)" 0
check "... and netproxy refused api.tavily.com, with an audit record" test "$(pa '(g(r,"isolate.spoke") or "").startswith("tavily-") and
    g(r,"event.outcome")=="failure" and g(r,"event.reason")=="domain-not-allowed" and
    "api.tavily.com" in (g(r,"dns.question.name"), g(r,"destination.domain"))')" -ge 1
check "no request reached the stand-in for a host other than its SNI" \
    test "$($PY -c 'import json,sys; print(sum(json.loads(l)["sni"] != json.loads(l)["host"] for l in open(sys.argv[1])))' \
        "$TMP/standin.jsonl" 2>/dev/null || echo 1)" = 0
like "server-redis through --tcp 127.0.0.1:PORT: SET" "$(text redis.set)" "[Ss]uccessfully set"
is "... and the private redis-server has it" \
    "$(redis-cli -h 127.0.0.1 -p "$rport" --raw get corpus 2>&1)" "stand-in value"
check "... the tunnel is audited as a tcp grant" test "$(pa '(g(r,"isolate.spoke") or "").startswith("redis-") and
    g(r,"event.action")=="close" and g(r,"isolate.tcp_grant") and g(r,"destination.port")=='"$rport"'')" -ge 1
like "git-mcp-server through --exec git: git_init runs git" "$(text git.git_init)" '/data/repo'
check "... which made a repository in its /data" test -d "$TMP/data/tester/git/repo/.git"
is "... on the branch it named" "$(cat "$TMP/data/tester/git/repo/.git/HEAD" 2>&1)" "ref: refs/heads/main"
like "time-mcp answers (its text on stdout skipped)" "$(text time.current_time)" '[0-9]{4}-[0-9]{2}-[0-9]{2}'
if [ -f "$SPOKES/time.json" ]; then
    log=$TMP/run/spokes/tester/time.log
    check "time-mcp's text on stdout was skipped into its log, not fatal" \
        grep -q 'not JSON-RPC, skipped' "$log"
fi
done_testing
