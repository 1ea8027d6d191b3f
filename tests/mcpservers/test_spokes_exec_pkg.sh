#!/usr/bin/env bash
# `--exec pkg:REL`: a native program inside the server's npm package (issue 38, item 2;
# @azure/mcp's .NET binary), in namespace mode, against a stand-in npm registry on
# loopback. The package's node server runs its own bin/native (a copy of echo): with
# --exec pkg:bin/native it may, from the package's code as the jail shows it (under
# /opt/spoke-code when the store is under /tmp), its libraries bound; without, the
# spawn fails (EPERM: no processes); a REL that leaves the package, is no executable
# file, or comes without an npm: package is refused.
. "$(dirname "$0")/../lib.sh"
require_root
MODE=namespace
. "$ROOT/tests/hub/hub_lib.sh"
require_cmds node npm
hub_setup
REG=$TMP/registry
mkdir -p "$REG" "$TMP/new"
$PY "$ROOT/tests/mcpservers/npmref/registry.py" "$REG" >"$TMP/port" 2>"$TMP/registry.err" &
at_exit "kill $!"
has_port() { [ -s "$TMP/port" ]; }
wait_for "the stand-in registry" 30 has_port || exit 1
PORT=$(head -n 1 "$TMP/port")
export npm_config_registry=http://127.0.0.1:$PORT/ npm_config_cache=$TMP/npm-cache
export npm_config_update_notifier=false
# isolate-test-native@1.0.0: server.js, whose one tool runs bin/native of its package.
$PY - "$REG" "$PORT" <<'PYEOF'
import base64, hashlib, io, json, os, sys, tarfile
reg, port = sys.argv[1:3]
name, version = "isolate-test-native", "1.0.0"
server = r'''#!/usr/bin/env node
"use strict";
const { execFileSync } = require("child_process");
const path = require("path");
const tool = { name: "native", description: "Runs the package's own program.", inputSchema: { type: "object" } };
const answer = (id, result) => process.stdout.write(JSON.stringify({ jsonrpc: "2.0", id, result }) + "\n");
function handle(req) {
    if (req.id === undefined) return;
    if (req.method === "initialize")
        return answer(req.id, { protocolVersion: "2025-06-18", capabilities: { tools: {} },
                                serverInfo: { name, version: "1" } });
    if (req.method === "tools/list") return answer(req.id, { tools: [tool] });
    let text;
    const prog = path.join(__dirname, "bin", "native");
    try { text = execFileSync(prog, ["ran", "from", prog], { encoding: "utf8" }); }
    catch (e) { text = "failed: " + e.message; }
    return answer(req.id, { content: [{ type: "text", text }] });
}
const name = "isolate-test-native";
let buf = "";
process.stdin.setEncoding("utf8");
process.stdin.on("data", (c) => {
    buf += c;
    for (let nl; (nl = buf.indexOf("\n")) >= 0; buf = buf.slice(nl + 1)) handle(JSON.parse(buf.slice(0, nl)));
});
'''
pkg = {"name": name, "version": version, "bin": {name: "server.js"}, "license": "MIT"}
files = (("package.json", json.dumps(pkg).encode(), 0o644), ("server.js", server.encode(), 0o644),
         ("bin/native", open("/usr/bin/echo", "rb").read(), 0o755))
buf = io.BytesIO()
with tarfile.open(fileobj=buf, mode="w:gz") as tar:
    for fname, data, mode in files:
        info = tarfile.TarInfo("package/" + fname)
        info.size, info.mode = len(data), mode
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
PYEOF
add() { "$BIN/hub" spokes add --config "$CONF" --spokes "$TMP/new" --yes "$@"; }
call() { "$BIN/hub" call --config "$CONF" --spokes "$TMP/new" "$@"; }
STORE=$DATA/.spoke-packages

add native --exec pkg:bin/native -- npm:isolate-test-native >"$TMP/out" 2>"$TMP/err"
is "--exec pkg:bin/native with npm:isolate-test-native is added" "$?" 0 || diag "$(cat "$TMP/err")"
like "... the manifest's exec is the file in the hub's store" "$(jget '" ".join(d["exec"])' <"$TMP/new/native.json")" \
    "^$STORE/native/1.0.0/node_modules/isolate-test-native/bin/native\$"
out=$(call native.native '{}' 2>&1)
like "... and the server runs its package's program in the jail" "$out" 'ran from /opt/spoke-code/0/node_modules/isolate-test-native/bin/native'

add plain -- npm:isolate-test-native >"$TMP/out" 2>"$TMP/err"
is "without --exec pkg: the same package is added" "$?" 0
out=$(call plain.native '{}' 2>&1)
like "... but its program cannot be started (no processes in the jail)" "$out" 'failed: spawnSync .*EPERM'

add escape --exec pkg:../../../../../../usr/bin/id -- npm:isolate-test-native >"$TMP/out" 2>"$TMP/err"
is "--exec pkg: with .. is refused (exit 3)" "$?" 3
like "... saying why" "$(cat "$TMP/err")" 'a path inside the package, relative, without ".."'
check "... nothing written" test ! -e "$TMP/new/escape.json"
check "... nothing left in the store" test ! -e "$STORE/escape"
add notexec --exec pkg:package.json -- npm:isolate-test-native >"$TMP/out" 2>"$TMP/err"
is "--exec pkg: of a file that is not executable is refused (exit 3)" "$?" 3
like "... saying so" "$(cat "$TMP/err")" 'not an executable file of package isolate-test-native'
add nofile --exec pkg:bin/missing -- npm:isolate-test-native >"$TMP/out" 2>"$TMP/err"
like "--exec pkg: of a file the package does not have is refused" "$(cat "$TMP/err")" 'has no such file'
add nopkg --exec pkg:bin/native -- node "$ROOT/tests/mcpservers/npmref/server.js" >"$TMP/out" 2>"$TMP/err"
is "--exec pkg: without an npm: package is a usage error (exit 2)" "$?" 2
like "... saying to give the server as npm:" "$(cat "$TMP/err")" 'names a file of the server.s npm package: give the server as npm:PACKAGE'

add viadep --exec pkg:node_modules/isolate-test-native/bin/native -- npm:isolate-test-native >"$TMP/out" 2>"$TMP/err"
is "--exec pkg:node_modules/DEP/REL (a file of the install's tree) is taken" "$?" 0
add depout --exec pkg:node_modules/.bin/../../package-lock.json -- npm:isolate-test-native >"$TMP/out" 2>"$TMP/err"
is "... with .. it is refused (exit 3)" "$?" 3

# update moves the exec path with the package.
"$BIN/hub" spokes update native --config "$CONF" --spokes "$TMP/new" --yes >"$TMP/out" 2>&1
like "update keeps exec in the store (the same version)" "$(jget '" ".join(d["exec"])' <"$TMP/new/native.json")" \
    "^$STORE/native/1.0.0/node_modules/isolate-test-native/bin/native\$"
is "no process is left behind" "$(leftover_procs)" 0
done_testing
