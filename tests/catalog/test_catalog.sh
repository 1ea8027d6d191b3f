#!/usr/bin/env bash
# The catalog (issue 36): every entry of config/catalog is added with `hub spokes add
# NAME` and no command, in namespace mode, four at a time, from the trees `make deps`
# installed with the suite's lockfiles (--installed: the package checked against the
# entry's version and integrity), then one tool of each is called in one hub.
#
# An entry's keys must be in the secret store first: add refuses, saying what to set,
# and starts nothing. Then the keys are set as the entries say (hosts and header) and
# the API servers reach a stand-in upstream on a loopback address of the test's own
# (netproxy's resolve and upstream_ca), which logs the key headers it received: the
# real key arrives there, put in by netproxy, while the jail held a stand-in. Variables
# (--var) fill the entries' raw TCP grants and arguments (redis). An operator's entry in
# the same format is added the same way; an entry whose package or tools differ from
# what the server is refused.
. "$(dirname "$0")/../lib.sh"
require_root
PY=/usr/bin/python3
CORPUS=$ROOT/tests/mcpservers/corpus
REFS=$ROOT/tests/mcpservers
CATNPM=$ROOT/tests/catalog/npm
if ! command -v node >/dev/null || [ ! -d "$CORPUS/node_modules/time-mcp" ] ||
    [ ! -d "$REFS/node_modules/@modelcontextprotocol/server-memory" ] ||
    [ ! -d "$CATNPM/node_modules/airtable-mcp-server" ]; then
    skip "$TEST_NAME" "node or the suite's npm trees are missing (make deps)"
    exit 0
fi
SPOKES=$TMP/spokes
CONF=$TMP/hub.json
HOST_ID_BASE=$((1300000 + ($$ % 4000) * 128))
UP=127.78.$((($$ >> 8) % 256)).$(($$ % 256))
API_HOSTS="api.github.com api.search.brave.com slack.com maps.googleapis.com gitlab.com api.exa.ai
context7.com api.tavily.com api.firecrawl.dev api.notion.com api.hubspot.com api.airtable.com
api.perplexity.ai api.figma.com circleci.com api.mapbox.com api.linear.app api.everart.ai
youtube.com bedrock-agent-runtime.us-east-1.amazonaws.com api.line.me api.pinecone.io
api.browserbase.com api.stagehand.browserbase.com generativelanguage.googleapis.com api.laratranslate.com shopify.dev
api.netlify.com api.postman.com"
mkdir -p "$SPOKES" "$TMP/catalog"
cp "$ROOT"/config/catalog/*.json "$TMP/catalog/"
# shellcheck disable=SC2086
test_cert $API_HOSTS
# The servers whose keys stay in their environment trust the test CA themselves; the
# others get the hub's CA (netproxy opens their TLS to put the key in).
for name in context7 tavily youtube awskb mapbox lara shopify; do
    mkdir -p "$TMP/data/tester/$name" && cp "$TMP/ca.pem" "$TMP/data/tester/$name/ca.pem"
done
chmod 711 "$TMP/data" "$TMP/data/tester"
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
    "secrets": {"dir": "$TMP/secrets", "key_file": "$TMP/secrets.key"},
    "network": {"veth_pool": "169.254.132.0/22", "gateway_netns": "itest-catalog-$$",
                "proxy_port": 3128, "host_id_base": $HOST_ID_BASE, "host_id_count": 128},
    "netproxy": {"binary": "$BIN/netproxy", "audit": "$TMP/netproxy.jsonl",
                 "resolve": ["%s:443:$UP" % h for h in sys.argv[1:]],
                 "upstream_allow_cidr": ["$UP/32"], "upstream_ca": "$TMP/ca.pem"},
}, open("$CONF", "w"), indent=1)
EOF
hub() { "$BIN/hub" "$@" --config "$CONF"; }
wait_for "the stand-in upstream on $UP:443" 20 bash -c "echo >/dev/tcp/$UP/443"
wait_for "redis-server" 20 bash -c "echo >/dev/tcp/127.0.0.1/$rport"

# ---- hub catalog ----
out=$(hub catalog 2>&1)
N_CATALOG=$(ls "$TMP"/catalog/*.json | wc -l)
like "hub catalog lists the entries" "$out" "$N_CATALOG entries in $TMP/catalog"
like "... each with its package pinned and its keys" "$out" \
    'npm @modelcontextprotocol/server-github@2025.4.8, 26 tools, network \["github.com"\], keys: github'
first() { hub catalog search "$@" --format json 2>/dev/null | jget 'd[0]["name"]'; }
is "hub catalog search: \"open a pull request\" -> github" "$(first open a pull request)" github
is "... \"key value cache\" -> redis" "$(first key value cache)" redis
is "... \"documentation of a library\" -> context7" "$(first documentation of a library)" context7
hub catalog search zzzqqq >/dev/null 2>&1
is "... nothing matching: exit 3" "$?" 3

# ---- keys first ----
hub spokes add github --yes --installed "$CORPUS" >"$TMP/out" 2>"$TMP/err"
is "add github with its key not in the store is refused (exit 2)" "$?" 2
like "... saying which key to set, with the entry's hosts and header" "$(cat "$TMP/err")" \
    'hub secrets set github --hosts api.github.com --header Authorization < FILE +# GITHUB_PERSONAL_ACCESS_TOKEN'
check "... before anything started (no spoke log)" test ! -e "$TMP/run/spokes/tester/github.log"
check "... and nothing written" test ! -e "$SPOKES/github.json"

# The keys, as the entries say (the value on stdin); each unique so that the stand-in's
# log tells which arrived where.
declare -A KEY
KEY[github]=ghp_Kq7z${$}githubAbcdefghijklmnopqrstu
KEY[brave]=BSAKq7z${$}braveAbcdefghijklmnop
KEY[slack]=xoxb-Kq7z${$}slackAbcdefghijklmnop
KEY[gmaps]=AIzaKq7z${$}gmapsAbcdefghijklmnop
KEY[gitlab]=glpat-Kq7z${$}gitlabAbcdefghijklmn
KEY[exa]=exaKq7z${$}exaAbcdefghijklmnopqr
KEY[firecrawl]=fc-Kq7z${$}firecrawlAbcdefghijkl
KEY[tavily]=tvly-Kq7z${$}tavilyAbcdefghijklmn
KEY[notion]=ntn_Kq7z${$}notionAbcdefghijklmn
KEY[hubspot]=pat-na1-Kq7z${$}hubspotAbcdefghijkl
KEY[airtable]=patKq7z${$}airtableAbcdefghijkl
KEY[perplexity]=pplx-Kq7z${$}perplexityAbcdefgh
KEY[figma]=figd_Kq7z${$}figmaAbcdefghijklmn
KEY[circleci]=CCIPATKq7z${$}circleciAbcdefghij
# A Mapbox token is a JWT (pk.PAYLOAD.SIGNATURE), which the server decodes.
KEY[mapbox]=pk.$(printf '{"u":"Kq7z%s","a":"standin"}' $$ | base64 -w0 | tr '+/' '-_' | tr -d =).Kq7z${$}mapboxsig
KEY[linear]=lin_api_Kq7z${$}linearAbcdefghijk
KEY[everart]=evKq7z${$}everartAbcdefghijklm
KEY[line]=Kq7z${$}lineAbcdefghijklmnopq
KEY[aws-key-id]=AKIAKQ7Z${$}ABCDEFGH
KEY[aws-secret-key]=Kq7z${$}awsAbcdefghijklmnopqrstu
KEY[pinecone]=pcsk_Kq7z${$}pineconeAbcdefghijk
KEY[browserbase]=bb_live_Kq7z${$}browserbaseAbcdefg
KEY[gemini]=AIzaKq7z${$}geminiAbcdefghijklmno
KEY[lara-key-id]=Kq7z${$}LARAKEYIDABCDEFGH
KEY[lara-key-secret]=Kq7z${$}laraSecretAbcdefghijk
KEY[elasticsearch]=Kq7z${$}elasticAbcdefghijklm
KEY[netlify]=nfp_Kq7z${$}netlifyAbcdefghijklm
KEY[postman]=PMAK-Kq7z${$}postmanAbcdefghijklm
# Each secret as its entry says (hosts, header or query parameter; none: environment).
$PY - "$TMP/catalog" >"$TMP/secrets.tsv" <<'EOF2'
import glob, json, sys
for f in sorted(glob.glob(sys.argv[1] + "/*.json")):
    for s in json.load(open(f)).get("secrets", []):
        a = []
        if s.get("hosts"): a += ["--hosts", ",".join(s["hosts"])]
        if s.get("header"): a += ["--header", s["header"]]
        if s.get("query"): a += ["--query", s["query"]]
        print(s["secret"] + "\t" + " ".join(a))
EOF2
while IFS=$'\t' read -r name args; do
    # shellcheck disable=SC2086
    printf '%s' "${KEY[$name]}" | hub secrets set "$name" $args >/dev/null 2>"$TMP/set.err" ||
        diag "hub secrets set $name: $(cat "$TMP/set.err")"
done <"$TMP/secrets.tsv"

# ---- every entry added, four at a time ----
# NAME|PREFIX (where make deps installed it)|the operator's options
CA=NODE_EXTRA_CA_CERTS=/data/ca.pem
ENTRIES="github|$CORPUS|
brave|$CORPUS|
slack|$CORPUS|--var SLACK_TEAM_ID=T0STANDIN
gmaps|$CORPUS|
postgres|$CORPUS|
gitlab|$CORPUS|
redis|$CORPUS|--var REDIS_ADDR=127.0.0.1:$rport
pdf|$CORPUS|
desktop|$CORPUS|
time|$CORPUS|
kubernetes|$CORPUS|
git|$CORPUS|
exa|$CORPUS|
context7|$CORPUS|--env $CA
tavily|$CORPUS|--env $CA
firecrawl|$CORPUS|
everything|$REFS|
filesystem|$REFS|
memory|$REFS|
sequential|$REFS|
notion|$CATNPM|
hubspot|$CATNPM|
airtable|$CATNPM|
perplexity|$CATNPM|
figma|$CATNPM|
mongodb|$CATNPM|--var MDB_ADDR=127.0.0.1:$(free_port)
circleci|$CATNPM|
mapbox|$CATNPM|--env $CA
linear|$CATNPM|
everart|$CATNPM|
youtube|$CATNPM|--env $CA
awskb|$CATNPM|--env $CA
line|$CATNPM|
pinecone|$CATNPM|
browserbase|$CATNPM|--var BROWSERBASE_PROJECT_ID=pstandin
lara|$CATNPM|--env $CA
elasticsearch|$CATNPM|--var ES_ADDR=127.0.0.1:$(free_port)
shopify|$CATNPM|--env $CA
netlify|$CATNPM|
postman|$CATNPM|"
N=$(wc -l <<<"$ENTRIES")
add_one() { # NAME PREFIX OPTS...
    local name=$1 prefix=$2
    shift 2
    hub spokes add "$name" --yes --timeout-s 180 --installed "$prefix" "$@" >"$TMP/add.$name" 2>&1
    echo $? >"$TMP/rc.$name"
}
jobs_started=()
t0=$(date +%s)
# github first, alone: the first spoke with a key netproxy puts in makes the hub's CA
# (secrets.dir/ca), which hubs starting at the same moment would each make (and mount
# while another writes it).
add_one github "$CORPUS"
while IFS='|' read -r name prefix opts; do
    [ "$name" = github ] && continue
    n=${#jobs_started[@]}
    [ "$n" -ge 4 ] && wait "${jobs_started[n - 4]}"
    # shellcheck disable=SC2086
    add_one "$name" "$prefix" $opts &
    jobs_started+=($!)
done <<<"$ENTRIES"
for p in "${jobs_started[@]}"; do wait "$p"; done
diag "$N entries added in $(($(date +%s) - t0)) s, four at a time"
n_ok=0
while IFS='|' read -r name prefix opts; do
    rc=$(cat "$TMP/rc.$name" 2>/dev/null)
    [ "$rc" = 0 ] || diag "$name: $(grep -v '^ *|' "$TMP/add.$name" | grep -v '^    [a-z]' | tail -n 12 | head -c 2500)"
    [ "$rc" = 0 ] && n_ok=$((n_ok + 1))
done <<<"$ENTRIES"
# CATALOG_DEBUG_DIR=DIR keeps the adds' output, the calls, the stand-in's and netproxy's
# records and the spokes' logs there (the test's own directory goes at its end).
[ -n "${CATALOG_DEBUG_DIR:-}" ] && cp "$TMP"/add.* "$CATALOG_DEBUG_DIR"/
is "all $N entries are added with hub spokes add NAME alone, in namespace mode" "$n_ok" "$N"
like "... github said where it came from" "$(cat "$TMP/add.github")" \
    "spoke github: from the catalog, $TMP/catalog/github.json: npm @modelcontextprotocol/server-github 2025.4.8 \\(sha512-"
m() { jget "$2" <"$SPOKES/$1.json" 2>/dev/null; }
is "... its manifest pins the entry's package and integrity" \
    "$(m github 'd["package"]["npm"] + "@" + d["package"]["version"] + " " + d["package"]["integrity"]')" \
    "@modelcontextprotocol/server-github@2025.4.8 $(jget 'd["source"]["integrity"]' <"$TMP/catalog/github.json")"
is "... its network is the entry's hosts" "$(m github 'd["network"]["allow"]')" '["github.com"]'
is "... its key is named, never written" "$(m github 'd["env"]["GITHUB_PERSONAL_ACCESS_TOKEN"]')" \
    '{"secret": "github"}'
check "... no key value in any manifest" bash -c "! grep -rq Kq7z$$ '$SPOKES'"
is "redis: --var filled the entry's raw TCP grant" "$(m redis 'd["network"]["tcp"]')" "[\"127.0.0.1:$rport\"]"
is "... and its argument" "$(m redis 'd["command"][-1]')" "redis://127.0.0.1:$rport"
is "git: the entry's program" "$(m git 'd["exec"]')" '["/usr/bin/git"]'
is "kubernetes: the entry's limit" "$(m kubernetes 'd["limits"]["nofile"]')" 4096

# ---- each one called, in one hub, all at once ----
t0=$(date +%s)
hub call --parallel \
    github.search_repositories '{"query":"standin"}' \
    brave.brave_web_search '{"query":"standin","count":1}' \
    slack.slack_list_channels '{}' \
    gmaps.maps_geocode '{"address":"Oslo"}' \
    postgres.query '{"sql":"select 1"}' \
    gitlab.search_repositories '{"search":"standin"}' \
    redis.set '{"key":"catalog","value":"from the catalog"}' \
    pdf.list_pdfs '{}' \
    desktop.list_directory '{"path":"/data"}' \
    time.current_time '{"format":"YYYY-MM-DD"}' \
    kubernetes.ping '{}' \
    git.git_init '{"path":"/data/repo"}' \
    exa.web_search_exa '{"query":"isolation","numResults":1}' \
    context7.query-docs '{"libraryId":"/standin/lib","query":"how to test it"}' \
    tavily.tavily_search '{"query":"standin"}' \
    firecrawl.firecrawl_scrape '{"url":"https://example.com"}' \
    everything.echo '{"message":"from the catalog"}' \
    filesystem.list_allowed_directories '{}' \
    memory.read_graph '{}' \
    sequential.sequentialthinking '{"thought":"one","nextThoughtNeeded":false,"thoughtNumber":1,"totalThoughts":1}' \
    notion.API-get-self '{}' \
    hubspot.hubspot-get-user-details '{}' \
    airtable.list_bases '{}' \
    perplexity.perplexity_search '{"query":"standin"}' \
    figma.get_figma_data '{"fileKey":"standin"}' \
    mongodb.list-databases '{"connectionId":"default"}' \
    circleci.list_followed_projects '{}' \
    mapbox.search_and_geocode_tool '{"q":"Oslo"}' \
    linear.linear_search_issues '{"query":"standin"}' \
    everart.generate_image '{"prompt":"a stand-in"}' \
    youtube.get_transcript '{"url":"https://www.youtube.com/watch?v=standin0001","lang":"en"}' \
    awskb.retrieve_from_aws_kb '{"query":"standin","knowledgeBaseId":"KBSTANDIN"}' \
    line.get_message_quota '{}' \
    pinecone.list-indexes '{}' \
    browserbase.browserbase_session_create '{}' \
    lara.list_languages '{}' \
    elasticsearch.list_indices '{"indexPattern":"*"}' \
    shopify.search_docs_chunks '{"conversationId":"standin","prompt":"standin"}' \
    netlify.netlify-user-services-reader '{"selectSchema":{"operation":"get-user","params":{}}}' \
    postman.getAuthenticatedUser '{}' \
    >"$TMP/calls" 2>"$TMP/calls.err"
diag "the $N entries called in $(($(date +%s) - t0)) s"
# answered APP.TOOL: 1 when the server answered the call (a result, isError or not, or
# its own JSON-RPC error).
answered() {
    $PY -c 'import json,sys
for line in open(sys.argv[1]):
    d = json.loads(line)
    if d.get("tool") == sys.argv[2]:
        e = d.get("error") or {}
        print(1 if d.get("result") is not None or e.get("layer") == "spoke" else 0); break
else: print(0)' "$TMP/calls" "$1" 2>/dev/null || echo 0
}
text() {
    $PY -c 'import json,sys
for line in open(sys.argv[1]):
    d = json.loads(line)
    if d.get("tool") == sys.argv[2]:
        c = (d.get("result") or {}).get("content") or [{}]
        print(c[0].get("text") or json.dumps(d.get("error") or d.get("result")))' "$TMP/calls" "$1"
}
n_answered=0
for t in github.search_repositories brave.brave_web_search slack.slack_list_channels \
    gmaps.maps_geocode postgres.query gitlab.search_repositories redis.set pdf.list_pdfs \
    desktop.list_directory time.current_time kubernetes.ping git.git_init exa.web_search_exa \
    context7.query-docs tavily.tavily_search firecrawl.firecrawl_scrape everything.echo \
    filesystem.list_allowed_directories memory.read_graph sequential.sequentialthinking \
    notion.API-get-self hubspot.hubspot-get-user-details airtable.list_bases \
    perplexity.perplexity_search figma.get_figma_data mongodb.list-databases \
    circleci.list_followed_projects mapbox.search_and_geocode_tool linear.linear_search_issues \
    everart.generate_image youtube.get_transcript awskb.retrieve_from_aws_kb line.get_message_quota \
    pinecone.list-indexes browserbase.browserbase_session_create lara.list_languages \
    elasticsearch.list_indices shopify.search_docs_chunks netlify.netlify-user-services-reader \
    postman.getAuthenticatedUser; do
    a=$(answered "$t")
    [ "$a" = 1 ] || diag "$t: $(grep -F "\"$t\"" "$TMP/calls" | head -c 600)"
    n_answered=$((n_answered + a))
done
is "each of the $N servers answered its call through the hub" "$n_answered" "$N"
[ -s "$TMP/calls.err" ] && diag "$(head -c 2000 "$TMP/calls.err")"
[ -n "${CATALOG_DEBUG_DIR:-}" ] && cp "$TMP/calls" "$TMP/calls.err" "$TMP/standin.jsonl" "$TMP/netproxy.jsonl" \
    "$TMP"/run/spokes/tester/*.log "$CATALOG_DEBUG_DIR"/
# arrived HOST: requests the stand-in saw for HOST (SNI and Host both HOST); key HOST
# VALUE: of those, the ones that carried VALUE in a key header or the query.
arrived() {
    $PY -c 'import json,sys
print(sum(1 for l in open(sys.argv[1]) for r in [json.loads(l)]
          if r["sni"] == r["host"] == sys.argv[2] and
             (len(sys.argv) < 4 or any(sys.argv[3] in k for k in r["keys"]) or sys.argv[3] in r["path"])))' \
        "$TMP/standin.jsonl" "$@" 2>/dev/null || echo 0
}
for pair in github:api.github.com brave:api.search.brave.com slack:slack.com \
    gmaps:maps.googleapis.com gitlab:gitlab.com exa:api.exa.ai firecrawl:api.firecrawl.dev \
    notion:api.notion.com hubspot:api.hubspot.com airtable:api.airtable.com \
    perplexity:api.perplexity.ai figma:api.figma.com circleci:circleci.com \
    linear:api.linear.app everart:api.everart.ai line:api.line.me pinecone:api.pinecone.io \
    browserbase:api.stagehand.browserbase.com netlify:api.netlify.com postman:api.postman.com; do
    name=${pair%%:*} host=${pair#*:}
    check "$name reached its API host ($host) through the jail's egress" test "$(arrived "$host")" -ge 1
    check "... with its real key, put in by netproxy where the entry says" \
        test "$(arrived "$host" "${KEY[$name]}")" -ge 1
done
check "tavily (its key in its environment, as its entry says) reached api.tavily.com" \
    test "$(arrived api.tavily.com "${KEY[tavily]}")" -ge 1
check "context7 (no key) reached context7.com" test "$(arrived context7.com)" -ge 1
check "mapbox (its token in its environment: the server decodes it) reached api.mapbox.com" \
    test "$(arrived api.mapbox.com "${KEY[mapbox]}")" -ge 1
check "lara (its keys in its environment: it signs its requests with them) reached api.laratranslate.com" \
    test "$(arrived api.laratranslate.com)" -ge 1
check "shopify (no key) reached shopify.dev" test "$(arrived shopify.dev)" -ge 1
check "youtube (no key) reached youtube.com" test "$(arrived youtube.com)" -ge 1
# awskb's AWS keys are in its environment (SigV4 signs with them); its SDK speaks only
# HTTP/2 to Bedrock, which the stand-in does not: the connection through the egress is
# what is checked.
check "awskb reached bedrock-agent-runtime.us-east-1.amazonaws.com through netproxy" \
    test "$(audit_count '(g(r,"isolate.spoke") or "").startswith("awskb-") and g(r,"event.action")=="connect" and g(r,"event.outcome")=="success" and g(r,"destination.domain")=="bedrock-agent-runtime.us-east-1.amazonaws.com"' \
        "$TMP/netproxy.jsonl")" -ge 1
like "github's answer is the stand-in's" "$(text github.search_repositories)" '"total_count": *4242'
like "brave's answer is the stand-in's" "$(text brave.brave_web_search)" "stand-in answer from api.search.brave.com"
like "exa's answer is the stand-in's" "$(text exa.web_search_exa)" "stand-in answer from api.exa.ai"
like "context7's answer is the stand-in's" "$(text context7.query-docs)" "stand-in docs from context7.com"
like "tavily's answer is the stand-in's" "$(text tavily.tavily_search)" "stand-in answer from api.tavily.com"
is "redis: the private redis-server has the key" \
    "$(redis-cli -h 127.0.0.1 -p "$rport" --raw get catalog 2>&1)" "from the catalog"
check "git: git_init made a repository in its /data" test -d "$TMP/data/tester/git/repo/.git"
like "time answers" "$(text time.current_time)" '[0-9]{4}-[0-9]{2}-[0-9]{2}'
like "everything echoes" "$(text everything.echo)" 'from the catalog'
like "filesystem: its /data, the entry's argument" "$(text filesystem.list_allowed_directories)" '/data'
like "memory answers from its /data" "$(text memory.read_graph)" 'entities'
like "postgres: the server answered (no PostgreSQL here: netproxy's tcp grant finds none)" \
    "$(text postgres.query)" 'ECONNRESET|ECONNREFUSED'
# A stand-in is what the jails held: no real key in any spoke's log or data.
check "no real key in any spoke's log or data directory (but those that hold it)" \
    bash -c "! grep -rqa Kq7z$$ '$TMP/run/spokes' '$TMP/data/tester' --exclude-dir=tavily \
        --exclude-dir=awskb --exclude-dir=mapbox --exclude-dir=lara --exclude-dir=elasticsearch \
        --exclude=tavily.log --exclude=awskb.log --exclude=mapbox.log --exclude=lara.log \
        --exclude=elasticsearch.log"

# ---- an operator's entry, and entries that do not match ----
$PY - "$TMP/catalog" <<'EOF'
import json, sys
d = sys.argv[1]
e = json.load(open(d + "/time.json"))
e["name"], e["title"] = "clock", "Clock (the operator's own entry)"
json.dump(e, open(d + "/clock.json", "w"))
bad = dict(e, name="badpkg")
bad["source"] = dict(e["source"], integrity="sha512-" + "A" * 86 + "==")
json.dump(bad, open(d + "/badpkg.json", "w"))
drift = dict(e, name="drift")
drift["tools"] = [dict(t) for t in e["tools"]]
drift["tools"][0]["description"] = "Get the current time, and send it elsewhere."
json.dump(drift, open(d + "/drift.json", "w"))
EOF
hub spokes add clock --yes --installed "$CORPUS" >"$TMP/out" 2>&1
is "an operator's entry in the same format is added the same way" "$?" 0 ||
    diag "$(grep '^hub:' "$TMP/out" | head -c 1500)"
like "... found by hub catalog search" "$(hub catalog search operator 2>&1)" 'clock +Clock'
hub spokes add badpkg --yes --installed "$CORPUS" >"$TMP/out" 2>&1
is "an entry whose integrity is not the package's is refused (exit 3)" "$?" 3
like "... saying so" "$(cat "$TMP/out")" 'not the one the catalog vetted'
check "... nothing written" test ! -e "$SPOKES/badpkg.json"
hub spokes add drift --yes --installed "$CORPUS" >"$TMP/out" 2>&1
is "an entry whose tools are not what the server lists is refused (exit 3)" "$?" 3
like "... naming the tool and the field" "$(cat "$TMP/out")" \
    'other tools than its catalog entry .*tool "current_time": description changed'
check "... nothing written" test ! -e "$SPOKES/drift.json"
hub spokes add redis2 --yes --var REDIS_ADDR=x >"$TMP/out" 2>&1
is "no entry of that name and no command: exit 2" "$?" 2
like "... saying so" "$(cat "$TMP/out")" 'no catalog entry redis2'
hub spokes add time2 --var X=1 -- /bin/true >"$TMP/out" 2>&1
is "--var with a command: exit 2" "$?" 2
printf '{"name":"evil","title":"x","description":"x","source":{"npm":"x","version":"^1","integrity":"sha512-x"},"tools":[{"name":"t"}]}' \
    >"$TMP/catalog/evil.json"
like "an entry with a version range is left out, with why" "$(hub catalog 2>&1)" \
    'left out: .*evil.json: source.version: must be one exact version'
done_testing
