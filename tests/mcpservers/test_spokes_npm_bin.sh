#!/usr/bin/env bash
# A hostile npm package whose "bin" leaves the package (issue 34, finding 7): published
# to the stand-in registry on loopback (npmref/registry.py) with "bin" pointing by "../"
# at a file of the host's (a working MCP server, so that a hub that followed it would
# add the spoke and run that file). `hub spokes add -- npm:PACKAGE` refuses it, writes
# no manifest, leaves nothing in the store and never runs the file; the same package
# with its bin inside is added (control).
. "$(dirname "$0")/../lib.sh"
MODE=process
. "$ROOT/tests/hub/hub_lib.sh"
require_cmds node npm
hub_setup
REF=$ROOT/tests/mcpservers/npmref
REG=$TMP/registry
mkdir -p "$REG" "$TMP/new" "$TMP/host"
$PY "$REF/registry.py" "$REG" >"$TMP/port" 2>"$TMP/registry.err" &
at_exit "kill $!"
has_port() { [ -s "$TMP/port" ]; }
wait_for "the stand-in registry" 30 has_port || exit 1
PORT=$(head -n 1 "$TMP/port")
export npm_config_registry=http://127.0.0.1:$PORT/ npm_config_cache=$TMP/npm-cache
export npm_config_update_notifier=false
STORE=$DATA/.spoke-packages
# The host's file: the reference server, which also leaves a mark when it runs.
sed 's/@DESCRIPTION@/a host file/' "$REF/server.js" >"$TMP/host/server.js"
printf '%s\n' "require('fs').writeFileSync('$TMP/host/ran', 'ran');" >>"$TMP/host/server.js"
# publish NAME BIN: a package whose package.json names BIN, with server.js inside.
publish() {
    $PY - "$REG" "$PORT" "$1" "$2" "$REF/server.js" <<'PYEOF'
import base64, hashlib, io, json, os, sys, tarfile
reg, port, name, bin_, server = sys.argv[1:6]
pkg = {"name": name, "version": "1.0.0", "bin": {name: bin_}, "license": "MIT"}
code = open(server).read().replace("@DESCRIPTION@", "inside")
buf = io.BytesIO()
with tarfile.open(fileobj=buf, mode="w:gz") as tar:
    for fname, text in (("package.json", json.dumps(pkg)), ("server.js", code)):
        data = text.encode()
        info = tarfile.TarInfo("package/" + fname)
        info.size, info.mode = len(data), 0o755
        tar.addfile(info, io.BytesIO(data))
tgz = buf.getvalue()
os.makedirs(os.path.join(reg, name, "-"), exist_ok=True)
open(os.path.join(reg, name, "-", name + "-1.0.0.tgz"), "wb").write(tgz)
doc = {"name": name, "dist-tags": {"latest": "1.0.0"}, "versions": {"1.0.0": dict(pkg, dist={
    "tarball": "http://127.0.0.1:%s/%s/-/%s-1.0.0.tgz" % (port, name, name),
    "shasum": hashlib.sha1(tgz).hexdigest(),
    "integrity": "sha512-" + base64.b64encode(hashlib.sha512(tgz).digest()).decode()})}}
json.dump(doc, open(os.path.join(reg, name + ".packument"), "w"))
PYEOF
}
add() { "$BIN/hub" spokes add --config "$CONF" --spokes "$TMP/new" --yes "$@"; }
UP=$(printf '../%.0s' $(seq 1 24))
publish isolate-evil-bin "$UP${TMP#/}/host/server.js"
publish isolate-good-bin server.js

add evil -- npm:isolate-evil-bin >"$TMP/out" 2>"$TMP/err"
rc=$?
check "a package whose bin leaves it by ../ is refused" test "$rc" -ne 0
like "... saying why" "$(cat "$TMP/err")" \
    'package isolate-evil-bin: its "bin" ".*host/server.js" is not a file inside the package: refused'
check "... no manifest written" test ! -e "$TMP/new/evil.json"
check "... nothing left in the store" test ! -e "$STORE/evil"
check "... and the host's file never ran" test ! -e "$TMP/host/ran"
add good -- npm:isolate-good-bin >"$TMP/out" 2>"$TMP/err"
is "the same package with its bin inside is added (control)" "$?" 0 || diag "$(tail -5 "$TMP/err")"
is "no process is left behind" "$(leftover_procs)" 0
done_testing
