#!/usr/bin/env bash
# The transcript (audit.content "full") rotates with the audit log: logrotate renames
# both and sends SIGHUP; the running hub (here `hub repl-server`) writes the next
# records to new files at the configured paths, the new transcript again mode 0600,
# and the renamed files keep what was written before the signal.
. "$(dirname "$0")/../lib.sh"
. "$ROOT/tests/pyexec/pyexec_lib.sh"
require_root
pyexec_setup none
TRANSCRIPT=$TMP/transcript.jsonl
$PY - "$CONF" "$AUDIT" "$TRANSCRIPT" <<'PYEOF'
import json, sys
c = json.load(open(sys.argv[1]))
c["audit"] = {"path": sys.argv[2], "content": "full", "transcript": sys.argv[3]}
json.dump(c, open(sys.argv[1], "w"), indent=1)
PYEOF
start_server --max-sessions 2 --time-limit 5 ||
    { not_ok "the server starts: $(cat "$TMP/server.err")"; exit 1; }
run() { # run CODE: one stateless run, its status
    $PY - "$PORT" "$1" <<'PYEOF'
import json, socket, struct, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=20)
body = json.dumps({"code": sys.argv[2], "close": True}).encode()
s.sendall(struct.pack(">I", len(body)) + body)
head = b""
while len(head) < 4:
    head += s.recv(4 - len(head))
n, = struct.unpack(">I", head)
data = b""
while len(data) < n:
    data += s.recv(n - len(data))
print(json.loads(data).get("status"))
PYEOF
}
is "a run before the rotation" "$(run 'print("before-rotation")')" ok
check "its code is in the transcript" grep -q before-rotation "$TRANSCRIPT"
mv "$AUDIT" "$AUDIT.1"
mv "$TRANSCRIPT" "$TRANSCRIPT.1"
kill -HUP "$SRV_PID"
# Reopened: both files exist again at their paths (not a fixed wait, which a busy
# machine can outlast before the server handles the signal).
wait_for "the server to reopen its logs" 60 test -e "$AUDIT" -a -e "$TRANSCRIPT"
is "a run after the rotation" "$(run 'print("after-rotation")')" ok
check "the server is still running" kill -0 "$SRV_PID"
check "a new transcript at the configured path has the new run" grep -q after-rotation "$TRANSCRIPT"
is "... mode 0600" "$(stat -c %a "$TRANSCRIPT")" 600
refute "... and not the old one" grep -q before-rotation "$TRANSCRIPT"
refute "the rotated transcript got nothing after the signal" grep -q after-rotation "$TRANSCRIPT.1"
check "a new audit log too" test -s "$AUDIT"
bad=$($PY -c 'import json,sys
bad = 0
for f in sys.argv[1:]:
    for line in open(f):
        try: json.loads(line)
        except ValueError: bad += 1
print(bad)' "$TRANSCRIPT" "$TRANSCRIPT.1")
is "every transcript line is one whole record" "$bad" 0
stop_server
is "the server ends cleanly" "$SRV_RC" 0
done_testing
