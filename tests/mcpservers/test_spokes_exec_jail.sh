#!/usr/bin/env bash
# Host programs in a node spoke's jail (issue 38, item 5), in namespace mode: a server
# given `--exec sh` runs it as /bin/sh, as programs do (the merged-/usr links of the
# host, into the jail's own /usr); `--exec node` is taken although node's dynamic
# string table is megabytes (NodeSource's: 5.3 MB); a program the jail refuses before
# anything ran is said so, without naming a log that does not exist.
. "$(dirname "$0")/../lib.sh"
require_root
MODE=namespace
. "$ROOT/tests/hub/hub_lib.sh"
require_cmds node
hub_setup
NEW=$TMP/new
mkdir -p "$NEW" "$TMP/srv"
add() { "$BIN/hub" spokes add --config "$CONF" --spokes "$NEW" --yes "$@"; }
call() { "$BIN/hub" call --config "$CONF" --spokes "$NEW" "$@"; }
# One tool: runs its argument through a shell the way npm packages do (child_process
# with shell: true runs /bin/sh), and answers with what it printed or the error.
cat >"$TMP/srv/server.js" <<'JS'
"use strict";
const { execSync } = require("child_process");
const tool = { name: "sh", description: "Runs a command.", inputSchema: { type: "object" } };
const answer = (id, result) => process.stdout.write(JSON.stringify({ jsonrpc: "2.0", id, result }) + "\n");
function handle(req) {
    if (req.id === undefined) return;
    if (req.method === "initialize")
        return answer(req.id, { protocolVersion: req.params.protocolVersion, capabilities: { tools: {} },
                                serverInfo: { name: "shell-runner", version: "1.0" } });
    if (req.method === "tools/list") return answer(req.id, { tools: [tool] });
    let text;
    try { text = execSync(String(req.params.arguments.cmd), { encoding: "utf8" }); }
    catch (e) { text = "failed: " + e.message; }
    return answer(req.id, { content: [{ type: "text", text }] });
}
let buf = "";
process.stdin.setEncoding("utf8");
process.stdin.on("data", (chunk) => {
    buf += chunk;
    for (let nl; (nl = buf.indexOf("\n")) >= 0; buf = buf.slice(nl + 1)) handle(JSON.parse(buf.slice(0, nl)));
});
JS

add shell --exec sh -- node "$TMP/srv/server.js" >"$TMP/out" 2>"$TMP/err"
is "a node server with --exec sh is added" "$?" 0 || cat "$TMP/err"
call shell.sh '{"cmd":"echo through-$0"}' >"$TMP/out" 2>"$TMP/err"
is "... and its child_process shell (/bin/sh) runs in the jail" "$?" 0
like "... printing through /bin/sh" "$(cat "$TMP/out")" "through-/bin/sh"
call shell.sh '{"cmd":"ls /bin/ /usr/bin/"}' >"$TMP/out" 2>"$TMP/err"
case "$BUILD" in
*san*) skip "... the jail's /bin shows only what was bound" "a sanitizer build's spokes get spoke.json's whole /usr (hub_lib.sh)" ;;
*) like "... and the jail's /bin shows only what was bound (no ls)" "$(cat "$TMP/out")" "ls: not found" ;;
esac

add many --exec sh --nproc 300 --pids 300 -- node "$TMP/srv/server.js" >"$TMP/out" 2>"$TMP/err"
is "--nproc 300 (issue 38, item 4) is taken" "$?" 0
is "... into the manifest's limits" "$(jget 'd["limits"]["nproc"]' <"$NEW/many.json" 2>&1)" 300
call many.sh '{"cmd":"while read l; do case $l in \"Max processes\"*) echo $l;; esac; done </proc/self/limits"}' \
    >"$TMP/out" 2>"$TMP/err"
like "... and is the jail's RLIMIT_NPROC (the node profile's is 64)" "$(cat "$TMP/out")" 'Max processes 300 300'

if [ "$(readelf -d "$(readlink -f "$(command -v node)")" 2>/dev/null |
        awk '/STRSZ/ { print $3 }')" -gt $((1 << 20)) ] 2>/dev/null; then
    add nodechild --exec node -- node "$TMP/srv/server.js" >"$TMP/out" 2>"$TMP/err"
    is "--exec node, whose dynamic string table is over 1 MiB, is added" "$?" 0
    unlike "... no 'bad dynamic string table'" "$(cat "$TMP/err")" "bad dynamic string table"
else
    skip "--exec node with a string table over 1 MiB" "this host's node has a smaller one"
fi

printf 'not a program\n' >"$TMP/srv/notelf"
chmod 755 "$TMP/srv/notelf"
add refused --exec "$TMP/srv/notelf" -- node "$TMP/srv/server.js" >"$TMP/out" 2>"$TMP/err"
is "a program the jail refuses: add fails (exit 3)" "$?" 3
like "... saying why" "$(cat "$TMP/err")" "neither"
like "... and that the server never ran" "$(cat "$TMP/err")" "it wrote no log .*: it never ran"
unlike "... not a log that does not exist" "$(cat "$TMP/err")" "No such file or directory"

done_testing
