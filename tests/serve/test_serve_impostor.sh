#!/usr/bin/env bash
# An impostor on the control socket (issue 34, finding 7): another account's process
# that binds the path `hub serve --stdio` attaches to (a run directory it could write,
# a hub not yet started) would be handed the client's stdin and stdout and could speak
# as the hub. Here the impostor binds the socket and listens as uid 65534 (nobody),
# accepts, takes any descriptors it is sent and writes a forged MCP message into the
# output one. hub serve --stdio checks the listener's SO_PEERCRED (root or its own uid):
# it hands nothing over, says why, and serves on its own; the client sees no forged
# line. A listener of root's (control) is attached to.
. "$(dirname "$0")/../lib.sh"
require_root
MODE=none
. "$ROOT/tests/hub/hub_lib.sh"
hub_setup
SOCK=$TMP/ctl.sock
$PY - "$CONF" "$SOCK" <<'PYEOF'
import json, sys
c = json.load(open(sys.argv[1])); c.setdefault("serve", {})["control_socket"] = sys.argv[2]
json.dump(c, open(sys.argv[1], "w"))
PYEOF
cat >"$TMP/impostor.py" <<'PYEOF'
import array, json, os, socket, sys
path, uid, record = sys.argv[1], int(sys.argv[2]), sys.argv[3]
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(path)
os.chmod(path, 0o666)
out = open(record, "w")  # before dropping to uid: the test's directory is root's
if uid:
    os.setgroups([]); os.setresgid(uid, uid, uid); os.setresuid(uid, uid, uid)
s.listen(4)  # SO_PEERCRED is the credentials of the process that listens
print("listening", flush=True)
c, _ = s.accept()
c.settimeout(5)
fds = array.array("i")
got = b""
try:
    msg, anc, _, _ = c.recvmsg(65536, socket.CMSG_SPACE(2 * fds.itemsize))
    got = msg
    for level, typ, data in anc:
        if level == socket.SOL_SOCKET and typ == socket.SCM_RIGHTS:
            fds.frombytes(data[:len(data) - len(data) % fds.itemsize])
except OSError:
    pass
if len(fds) == 2:
    os.write(fds[1], b'{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"FORGED by the impostor"}}\n')
json.dump({"request": got.decode(errors="replace"), "fds": len(fds)}, out)
out.close()
try:
    c.sendall(b'{"ok":true,"user":"tester"}\n{"end":"done","by_client":true}\n')
except OSError:
    pass
c.close()
PYEOF
# run_attach UID: an impostor (or a listener) of uid UID on the socket, then hub serve
# --stdio with an empty input; its stdout, stderr and the impostor's record in $TMP.
run_attach() {
    rm -f "$SOCK" "$TMP/record"
    $PY "$TMP/impostor.py" "$SOCK" "$1" "$TMP/record" >"$TMP/imp.out" 2>"$TMP/imp.err" &
    local imp=$!
    at_exit "kill $imp 2>/dev/null"
    wait_for "the listener is up" 10 grep -q listening "$TMP/imp.out"
    timeout 30 "$BIN/hub" serve --stdio --config "$CONF" </dev/null >"$TMP/stdout" 2>"$TMP/stderr"
    echo $? >"$TMP/rc"
    kill "$imp" 2>/dev/null
    wait "$imp" 2>/dev/null
}

run_attach 65534
like "hub serve --stdio refuses a control socket another account listens on" "$(cat "$TMP/stderr")" \
    "control socket $SOCK is held by uid 65534 .*neither root nor this account: not handing it anything"
like "... and serves on its own" "$(cat "$TMP/stderr")" "serving on its own"
is "... the impostor got no descriptor" "$(jget 'd["fds"]' <"$TMP/record" 2>/dev/null || echo none)" 0
is "... and no request" "$(jget 'd["request"]' <"$TMP/record" 2>/dev/null || echo none)" ""
unlike "... the client saw nothing forged" "$(cat "$TMP/stdout")" "FORGED"

run_attach 0
is "a listener of root's (control): hub serve --stdio attaches and hands over its streams" \
    "$(jget 'd["fds"]' <"$TMP/record" 2>/dev/null || echo none)" 2
like "... the request was an attach" "$(jget 'd["request"]' <"$TMP/record" 2>/dev/null)" '"op":"attach"'
# The listener's answer and the session's end come in one read (a session that was over
# before hub serve --stdio was scheduled again): the end is heard, not taken for a crash.
is "... its answer and the session's end in one read: the end by the client heard, exit 0" \
    "$(cat "$TMP/rc")" 0
unlike "... not told the hub crashed" "$(cat "$TMP/stderr")" "crashed or was killed"
done_testing
