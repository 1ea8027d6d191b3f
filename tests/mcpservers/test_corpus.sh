#!/usr/bin/env bash
# The corpus (issue 25, item 7): real MCP servers from npm beyond the four reference
# ones, at the versions of tests/mcpservers/corpus/package.json and its lockfile
# (installed by `make deps`, npm ci --ignore-scripts), each added with `hub spokes add`
# as npm installed it, in namespace mode, four at a time. Among them the SDK 1.0.x line
# on protocol 2024-11-05 (server-github, -brave-search, -slack, -google-maps, -postgres,
# -gitlab), one that prints text on stdout before its first frame (time-mcp),
# one that sends log notifications at start (desktop-commander), one that asks
# roots/list (server-pdf) and one that needs more than 256 open files
# (mcp-server-kubernetes). Servers that would reach an API are added without a network
# (their tools are listed and pinned; none is called: this suite sends nothing to the
# internet). Offline tools are called.
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
mkdir -p "$SPOKES"
$PY - <<EOF
import json
json.dump({
    "isolation": "namespace", "user": "tester", "spokes_dir": "$SPOKES",
    "profile": "$ROOT/config/profiles/spoke.json", "data_root": "$TMP/data",
    "run_dir": "$TMP/run", "audit": "$TMP/audit.jsonl", "call_timeout_ms": 30000,
    "start_timeout_ms": 30000,
    "network": {"veth_pool": "169.254.140.0/22", "gateway_netns": "itest-corpus-$$",
                "proxy_port": 3128, "host_id_base": $HOST_ID_BASE, "host_id_count": 64},
    "netproxy": {"binary": "$BIN/netproxy", "audit": "$TMP/netproxy.jsonl"},
}, open("$CONF", "w"), indent=1)
EOF
# NAME|BIN (in node_modules/.bin)|PROTOCOL it speaks|OPTIONS and ARGS
CORPUS="github|mcp-server-github|2024-11-05|--env GITHUB_PERSONAL_ACCESS_TOKEN=none
brave|mcp-server-brave-search|2024-11-05|--env BRAVE_API_KEY=none
slack|mcp-server-slack|2024-11-05|--env SLACK_BOT_TOKEN=none --env SLACK_TEAM_ID=T0
gmaps|mcp-server-google-maps|2024-11-05|--env GOOGLE_MAPS_API_KEY=none
postgres|mcp-server-postgres|2024-11-05|-- postgresql://127.0.0.1:5432/none
gitlab|mcp-server-gitlab|2024-11-05|--env GITLAB_PERSONAL_ACCESS_TOKEN=none
pdf|mcp-pdf-server||-- --stdio
desktop|desktop-commander||
time|time-mcp||
kubernetes|mcp-server-kubernetes||
git|git-mcp-server||
exa|exa-mcp-server||--env EXA_API_KEY=none
context7|context7-mcp||
tavily|tavily-mcp||--env TAVILY_API_KEY=none
firecrawl|firecrawl-mcp||--env FIRECRAWL_API_KEY=none"
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
t0=$(date +%s)
running=0
while IFS='|' read -r name bin proto rest; do
    # shellcheck disable=SC2086
    add_one "$name" "$bin" $rest &
    running=$((running + 1))
    if [ $running -ge 4 ]; then wait -n; running=$((running - 1)); fi
done <<<"$CORPUS"
wait
diag "15 servers added in $(($(date +%s) - t0)) s, four at a time"
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
is "all 15 are added" "$n_ok" 15

# ---- offline tools, called ----
call() { "$BIN/hub" call --config "$CONF" "$@" 2>&1; }
if [ -f "$SPOKES/time.json" ]; then
    log=$TMP/run/spokes/tester/time.log
    check "time-mcp's text on stdout was skipped into its log, not fatal" \
        grep -q 'not JSON-RPC, skipped' "$log"
fi
done_testing
