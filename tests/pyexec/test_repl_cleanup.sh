#!/usr/bin/env bash
# Nothing a repl session writes outlives it (issue 14, item 3, the removal half): an
# ended session's host directory is removed by descriptors (lib/rmtree.c), so a
# directory chain longer than PATH_MAX - which made the path-based nftw() give up with
# ENAMETOOLONG, session after session, until the disk was full - is removed like any
# other tree. From the attacker's side, in process mode, where /data is the host's
# directory (namespace mode adds a tmpfs of its own, test_repl_disk.sh).
. "$(dirname "$0")/../lib.sh"
. "$ROOT/tests/pyexec/pyexec_lib.sh"
pyexec_setup process

start_server --max-sessions 3 --pool 0 --idle-timeout 120 --time-limit 20 ||
    { not_ok "the server starts: $(cat "$TMP/server.err")"; exit 1; }
cat >"$TMP/chain.py" <<'PYEOF'
import sys
sys.path.insert(0, sys.argv[2])
from cases import Conn, ok
c = Conn(int(sys.argv[1]), timeout=60)
for n in range(2):
    r = c.run("""
import os
os.chdir(os.environ.get('SPOKE_DATA', '.'))
for i in range(70):
    os.mkdir('d' * 200)
    os.chdir('d' * 200)
    open('f', 'wb').write(b'z' * 1024)
open('bottom', 'wb').write(b'z' * (1 << 20))
print(len(os.getcwd()))
""")
    ok(r["status"] == "ok" and int(r["output"]) > 3 * 4096,
       "session %d: a directory chain three times PATH_MAX deep, a file at each level" % n, r)
    r = c.run("", r["session_id"], close=True)
    ok(r is not None and r["status"] == "ok", "session %d is closed" % n, r)
c.close()
PYEOF
$PY "$TMP/chain.py" "$PORT" "$ROOT/tests/pyexec" >"$TMP/py.out" 2>&1
grep -E '^(not )?ok' "$TMP/py.out"
grep -q "^Traceback" "$TMP/py.out" && not_ok "the client: $(tail -5 "$TMP/py.out")"
no_session_dirs() { [ "$(session_dirs)" -eq 0 ]; }
if wait_for "the sessions' directories to be removed" 10 no_session_dirs; then
    ok "both sessions' directories are gone from the host, chains and all"
else
    not_ok "both sessions' directories are gone from the host: $(session_dirs) left ($(du -sh "$DATA" | cut -f1))"
fi
is "nothing under the data root holds the chains' bytes" "$(find "$DATA" -name bottom 2>/dev/null | wc -l)" 0
refute "the server did not give up on any of them" grep -q "could not remove" "$TMP/server.err"
stop_server
is "the server exits 0" "$SRV_RC" 0
done_testing
