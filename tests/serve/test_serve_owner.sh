#!/usr/bin/env bash
# Two hubs never break each other's app data (namespace mode): each (user, app) keeps
# one host id for its data directory (DATA/.host-ids), across hubs and restarts, and
# the directory is used by one spoke at a time. Hub A (hub serve --stdio, standalone)
# writes a file and keeps its spoke; hub B (hub call) wants the same app: it waits for
# the data, then gives up with the reason, and A's spoke can still read what it wrote
# (before stable ids B's spoke took the directory over and A got "Permission denied").
# Once A has ended, B's spoke starts under the same id and reads A's file.
. "$(dirname "$0")/../lib.sh"
require_root
MODE=namespace
. "$ROOT/tests/serve/serve_lib.sh"
serve_setup
mode_needs_jail_skip
conf_merge '{"start_timeout_ms": 2000}'

registry_id() { awk -v k="$1" '$2 == k {print $1}' "$DATA/.host-ids"; }
owner() { stat -c %u "$DATA/tester/alpha"; }

cat >"$TMP/probe.py" <<'EOF'
import json, subprocess, sys, time
sys.path.insert(0, sys.argv[4])
from mcp_stdio import StdioClient

hub, conf, tmp = sys.argv[1:4]
def text(r):
    return json.dumps(r["result"].get("structuredContent", r["result"]), sort_keys=True)

a = StdioClient([hub, "serve", "--stdio", "--standalone", "--config", conf],
                stderr=open(tmp + "/a.err", "w"))
a.initialize("hub-a")
print("a-write", text(a.request("tools/call", {"name": "alpha__write",
                                              "arguments": {"name": "fa", "text": "from A"}})))
t0 = time.monotonic()
b = subprocess.run([hub, "call", "--config", conf, "alpha.write", '{"name":"fb","text":"from B"}'],
                   capture_output=True, text=True)
print("b-rc", b.returncode)
print("b-waited", "yes" if time.monotonic() - t0 >= 1.5 else "no")
print("b-err", b.stderr.strip().replace("\n", " "))
print("a-read", text(a.request("tools/call", {"name": "alpha__read", "arguments": {"path": "fa"}})))
print("a-rc", a.close())
EOF
$PY "$TMP/probe.py" "$BIN/hub" "$CONF" "$TMP" "$ROOT/tests/serve" >"$TMP/probe.out" 2>"$TMP/probe.err"
diag "$(cat "$TMP/probe.err")"
got() { sed -n "s/^$1 //p" "$TMP/probe.out"; }
like "hub A's spoke writes its file" "$(got a-write)" '"path": "/data/fa"'
is "hub B's call fails while A's spoke holds the app's data" "$(got b-rc)" 3
is "... after waiting for it (the start timeout)" "$(got b-waited)" yes
like "... and says why" "$(got b-err)" 'in use by a spoke of another hub'
like "hub A's spoke still reads what it wrote (its data was not taken over)" "$(got a-read)" '"ok": true.*"text": "from A"'
is "hub A ended cleanly" "$(got a-rc)" 0

id=$(registry_id tester/alpha)
like "tester/alpha has a stable host id in the upper half of the range" "$id" '^[0-9]+$'
[ -n "$id" ] && check "... from the upper half of network.host_id_base + count" \
    test "$id" -ge $((HOST_ID_BASE + 32)) -a "$id" -lt $((HOST_ID_BASE + 64))
is "the data directory is owned by it" "$(owner)" "$id"
out=$(hubc alpha.write '{"name":"fb","text":"from B"}' 2>&1)
like "once A has ended, hub B's spoke starts and writes" "$out" '"path":"/data/fb"'
out=$(hubc alpha.read '{"path":"fa"}' 2>&1)
like "... and reads the file A's spoke wrote" "$out" '"text":"from A"'
is "a later hub (a restart) keeps the same owner" "$(owner)" "$id"
is "one registry line per (user, app)" "$(grep -c ' tester/alpha$' "$DATA/.host-ids")" 1
hubc beta.echo '{"text":"x"}' >/dev/null 2>&1
other=$(registry_id tester/beta)
check "another app of the user gets an id of its own" test -n "$other" -a "$other" != "$id"

# The registry is root's and written only by root: a registry others may write is refused
# (it decides which data a jail's id owns), and the start says so.
chmod 0666 "$DATA/.host-ids"
out=$(hubc alpha.read '{"path":"fa"}' 2>&1)
like "a registry writable by others is refused, saying why" "$out" 'host-ids: must be a regular file owned by root and writable only by it'
chmod 0600 "$DATA/.host-ids"
is "no spoke left running" "$(leftover_procs)" 0
done_testing
