#!/usr/bin/env bash
# logrotate's way with the hub's audit log: the file is renamed, then SIGHUP. The
# running repl-server must go on (SIGHUP is not the end of a daemon), write every
# record after the signal to a new file at the configured path, and lose, tear or
# split no record across the rotations, while a client keeps it busy.
. "$(dirname "$0")/../lib.sh"
. "$ROOT/tests/pyexec/pyexec_lib.sh"
require_root
pyexec_setup none

start_server --max-sessions 4 --time-limit 5 ||
    { not_ok "the server starts: $(cat "$TMP/server.err")"; exit 1; }
ok "the repl-server listens on port $PORT"

# A client that runs code in one session until told to stop, then says how many runs
# it made (each answered: each must have its record).
cat >"$TMP/client.py" <<'EOF'
import json, os, socket, struct, sys
port, stop = int(sys.argv[1]), sys.argv[2]
s = socket.create_connection(("127.0.0.1", port), timeout=20)
def call(req):
    body = json.dumps(req).encode()
    s.sendall(struct.pack(">I", len(body)) + body)
    head = b""
    while len(head) < 4:
        head += s.recv(4 - len(head))
    n, = struct.unpack(">I", head)
    data = b""
    while len(data) < n:
        data += s.recv(n - len(data))
    return json.loads(data)
sid, runs = None, 0
while not os.path.exists(stop):
    r = call({"code": "1+1", **({"session_id": sid} if sid else {})})
    if r.get("status") != "ok":
        print("error", r); sys.exit(1)
    sid = r["session_id"]
    runs += 1
call({"code": "2+2", "session_id": sid, "close": True})
print(runs + 1)
EOF
/usr/bin/python3 "$TMP/client.py" "$PORT" "$TMP/stop" >"$TMP/client.out" 2>&1 &
CLIENT=$!
at_exit "kill -9 $CLIENT"

ROTATIONS=5
for i in $(seq 1 $ROTATIONS); do
    sleep 0.3
    mv "$AUDIT" "$AUDIT.$i"
    kill -HUP "$SRV_PID"
done
sleep 0.3
touch "$TMP/stop"
wait "$CLIENT"
runs=$(cat "$TMP/client.out")
like "the client's runs were all answered across $ROTATIONS rotations" "$runs" '^[0-9]+$'
check "the server is still running after $ROTATIONS SIGHUPs" kill -0 "$SRV_PID"
check "a new audit file is at the configured path" test -s "$AUDIT"

read -r bad empty execs < <(/usr/bin/python3 - "$AUDIT" $ROTATIONS <<'EOF'
import json, sys
path, n = sys.argv[1], int(sys.argv[2])
files = [f"{path}.{i}" for i in range(1, n + 1)] + [path]
bad = empty = execs = 0
for f in files:
    lines = open(f, "rb").read().split(b"\n")
    if lines[-1] != b"":
        bad += 1  # a record cut at the end of a file
    recs = 0
    for line in lines[:-1]:
        try:
            r = json.loads(line)
        except ValueError:
            bad += 1
            continue
        recs += 1
        execs += r.get("event", {}).get("action") == "repl-execute"
    empty += recs == 0
print(bad, empty, execs)
EOF
)
is "every line of every file is one whole record" "$bad" 0
is "each rotated file and the new one got records (none left empty)" "$empty" 0
is "one repl-execute record per run, none lost or doubled" "$execs" "$runs"

stop_server
is "the server still ends cleanly on SIGTERM" "$SRV_RC" 0
done_testing
