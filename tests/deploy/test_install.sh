#!/usr/bin/env bash
# make install's layout (scripts/install) into a DESTDIR, then the installed system used
# the way systemd would use it: in a private mount namespace of the test's own, where
# DESTDIR's /usr/local is /usr/local and its /etc/isolategpt and /var/log/isolategpt
# appear through overlays (nothing is written to the host's /etc, /usr or /var):
#   - the three units pass `systemd-analyze verify`, serve and repl score below 5 in
#     `systemd-analyze security`;
#   - each unit's ExecStart runs as written (only the listening port changed to a free
#     one): the repl-server finds /etc/isolategpt/hub.json by itself, says READY=1 and
#     STOPPING=1 on NOTIFY_SOCKET, runs Python in a namespace jail from the installed
#     spokes for the installed client holding a token (and refuses one without),
#     survives SIGHUP; hub serve serves a client holding a token of the installed
#     tokens file; netproxy@ takes its options from its EnvironmentFile, drops to the
#     installed system user, refuses a domain outside its allowlist and audits it;
#   - a second install keeps an edited configuration file (the new one as .dist);
#   - uninstall removes the programs and leaves configuration, data and logs.
. "$(dirname "$0")/../lib.sh"
require_root
PY=/usr/bin/python3
command -v systemd-analyze >/dev/null || { skip "$TEST_NAME" "systemd-analyze missing"; exit 0; }

D=$TMP/root
out=$(BUILD=$BUILD DESTDIR=$D "$ROOT/scripts/install" install 2>&1)
is "scripts/install install succeeds" "$?" 0
for f in usr/local/bin/hub usr/local/bin/netproxy usr/local/bin/nsjail-lite \
    usr/local/bin/isolategpt-repl-client usr/local/lib/sysusers.d/isolategpt.conf \
    usr/local/libexec/isolategpt/spokes/pyexec etc/isolategpt/hub.json \
    etc/isolategpt/spokes/code.json etc/isolategpt/profiles/python.json \
    usr/local/lib/systemd/system/isolategpt-repl.service \
    usr/local/lib/systemd/system/isolategpt-serve.service \
    usr/local/lib/systemd/system/isolategpt-netproxy@.service \
    usr/local/lib/tmpfiles.d/isolategpt.conf etc/logrotate.d/isolategpt \
    usr/local/share/isolategpt/rsyslog/60-isolategpt.conf; do
    check "installed: /$f" test -e "$D/$f"
done
if [ -x "$BUILD/nsjail-lite-dynamic" ]; then
    # Where a static launcher looks for the twin that asks systemd for a scope.
    check "installed: the static launcher's twin, at ../libexec/isolategpt from its bin" \
        test -x "$D/usr/local/bin/../libexec/isolategpt/nsjail-lite-dynamic"
fi
is "the state directory is private" "$(stat -c %a "$D/var/lib/isolategpt")" 700
like "the installed hub.json names the system's directories" "$(cat "$D/etc/isolategpt/hub.json")" \
    '"data_root": "/var/lib/isolategpt/data".*"audit": "/var/log/isolategpt/hub.jsonl"'
like "... and the installed spokes" "$(cat "$D/etc/isolategpt/hub.json")" \
    '"spoke_bin_dir": "/usr/local/libexec/isolategpt/spokes"'
unlike "the units have no placeholder left" "$(cat "$D"/usr/local/lib/systemd/system/*)" "@[A-Z]+@"
check "logrotate accepts its file (debug run, nothing rotated)" \
    logrotate -d -s "$TMP/logrotate.state" "$D/etc/logrotate.d/isolategpt"

# This test's own hub: host ids, veth pool, data, run and audit paths of its own (the
# ExecStart lines stay as written).
HOST_ID_BASE=$((1700000 + ($$ % 4000) * 64))
$PY - "$D/etc/isolategpt/hub.json" "$HOST_ID_BASE" "$TMP" <<'EOF'
import json, sys
path, base, tmp = sys.argv[1], int(sys.argv[2]), sys.argv[3]
h = json.load(open(path))
h.update({"data_root": tmp + "/var/data", "run_dir": tmp + "/run", "audit": tmp + "/log/hub.jsonl"})
h["network"].update({"veth_pool": "169.254.92.0/22", "host_id_base": base, "host_id_count": 64})
json.dump(h, open(path, "w"), indent=1)
EOF
mkdir -p "$D/etc/isolategpt/netproxy"
NP_PORT=$(free_port)
echo "NETPROXY_OPTS=\"--listen 127.0.0.1:$NP_PORT --name itest --allow example.com\"" \
    >"$D/etc/isolategpt/netproxy/itest.conf"

# inside CMD...: CMD in a private mount namespace that shows the installed system,
# with the system user the installed sysusers.d file names (systemd-sysusers would make
# it on a real install; here it is added to the overlay's copy of passwd and group).
mkdir -p "$TMP/etc-up" "$TMP/etc-work" "$TMP/log-up/isolategpt" "$TMP/log-work"
cp -a "$D/etc/isolategpt" "$TMP/etc-up/"
NP_UID=$(for ((u = 999; u > 100; u--)); do getent passwd $u >/dev/null || getent group $u >/dev/null || { echo $u; break; }; done)
cp /etc/passwd /etc/group "$TMP/etc-up/"
echo "isolategpt:x:$NP_UID:$NP_UID::/nonexistent:/usr/sbin/nologin" >>"$TMP/etc-up/passwd"
echo "isolategpt:x:$NP_UID:" >>"$TMP/etc-up/group"
like "the sysusers.d file names the user netproxy@ drops to" \
    "$(cat "$D/usr/local/lib/sysusers.d/isolategpt.conf")" '(^|'$'\n'')u isolategpt '
TOKEN=$("$D/usr/local/bin/hub" serve token add tester --tokens "$TMP/etc-up/isolategpt/tokens")
cat >"$TMP/inside.sh" <<EOF
#!/bin/bash
set -e
mount --make-rprivate /
mount --bind "$D/usr/local" /usr/local
mount -t overlay overlay -o lowerdir=/etc,upperdir=$TMP/etc-up,workdir=$TMP/etc-work /etc
mount -t overlay overlay -o lowerdir=/var/log,upperdir=$TMP/log-up,workdir=$TMP/log-work /var/log
exec "\$@"
EOF
chmod +x "$TMP/inside.sh"
inside() { unshare -m "$TMP/inside.sh" "$@"; }

UNITS=/usr/local/lib/systemd/system
out=$(inside systemd-analyze verify "$UNITS/isolategpt-repl.service" \
    "$UNITS/isolategpt-serve.service" "$UNITS/isolategpt-netproxy@itest.service" 2>&1)
is "systemd-analyze verify accepts the three units (${out:-no complaint})" "$?" 0
# Their hardening, as systemd rates it (issue 24: below 5; each exposure left is
# explained in the unit). --threshold=49 fails above 4.9.
for u in serve repl; do
    out=$(systemd-analyze security --offline=true --threshold=49 --no-pager \
        "$D$UNITS/isolategpt-$u.service" 2>&1)
    rc=$?
    is "systemd-analyze security rates isolategpt-$u below 5 ($(sed -n 's/.*Overall exposure level for [^:]*: //p' <<<"$out"))" "$rc" 0
done

# The unit's ExecStart line, with systemd's specifiers and variables as systemd would
# expand them for this test (%i, $NETPROXY_OPTS from the EnvironmentFile).
exec_start() { # UNIT INSTANCE (a line ending in a backslash goes on, as for systemd)
    local line
    line=$(sed -n '/^ExecStart=/{:a;/\\$/{N;ba};s/^ExecStart=//;s/[[:space:]]*\\\n[[:space:]]*/ /g;p}' "$D$UNITS/$1")
    line=${line//%i/$2}
    printf '%s' "$line"
}

# A NOTIFY_SOCKET of our own: every datagram, one per line.
cat >"$TMP/notify.py" <<'EOF'
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
with open(sys.argv[2], "ab", buffering=0) as out:
    while True:
        out.write(s.recv(4096).replace(b"\n", b" ") + b"\n")
EOF
$PY "$TMP/notify.py" "$TMP/notify.sock" "$TMP/notify.log" &
at_exit "kill -9 $!"
wait_for "the notify socket" 5 test -S "$TMP/notify.sock"
notified() { grep -q "$1" "$TMP/notify.log" 2>/dev/null; }

# --- isolategpt-repl.service ---
REPL_PORT=$(free_port)
cmd=$(exec_start isolategpt-repl.service "")
like "the repl unit starts the installed hub with the system's configuration and tokens" "$cmd" \
    "^/usr/local/bin/hub repl-server --config /etc/isolategpt/hub.json --listen 127.0.0.1:[0-9]+ --tokens /etc/isolategpt/tokens$"
cmd=$(sed -E "s/127\.0\.0\.1:[0-9]+/127.0.0.1:$REPL_PORT/" <<<"$cmd")
# Not through inside(): $! must be the program's own pid (unshare and the script exec).
# shellcheck disable=SC2086 # the ExecStart line is split like systemd splits it
NOTIFY_SOCKET=$TMP/notify.sock unshare -m "$TMP/inside.sh" $cmd >"$TMP/repl.out" 2>"$TMP/repl.err" &
REPL=$!
at_exit "kill -9 $REPL; wait $REPL"
wait_for "READY=1 from the repl-server" 20 notified "READY=1"
like "the repl-server says READY=1 with its status" "$(cat "$TMP/notify.log")" \
    "READY=1 STATUS=listening on 127.0.0.1:$REPL_PORT"
CLIENT=$D/usr/local/bin/isolategpt-repl-client
like "the installed client talks to the unit's address by default" "$($CLIENT --help)" \
    'default 127\.0\.0\.1:8760'
out=$($CLIENT --server "127.0.0.1:$REPL_PORT" 'print(6*7)' 2>&1)
like "without a token the repl-server refuses the installed client" "$out" 'unauthorized'
out=$(ISOLATEGPT_TOKEN=$TOKEN $CLIENT --server "127.0.0.1:$REPL_PORT" 'print(6*7)' 2>/dev/null)
is "with one, a Python session runs in its jail from the installed spokes" "$out" 42
kill -HUP "$REPL"
sleep 0.3
check "SIGHUP (logrotate) does not end it" kill -0 "$REPL"
kill -TERM "$REPL"
wait "$REPL"
is "SIGTERM ends it with status 0" "$?" 0
check "... after STOPPING=1" notified "STOPPING=1"

# --- isolategpt-serve.service ---
: >"$TMP/notify.log"
cmd=$(exec_start isolategpt-serve.service "")
like "the serve unit starts the installed hub with the system's configuration and tokens" "$cmd" \
    "^/usr/local/bin/hub serve --config /etc/isolategpt/hub.json --http 127.0.0.1:[0-9]+ --tokens /etc/isolategpt/tokens --metrics 127.0.0.1:[0-9]+$"
SERVE_PORT=$(free_port)
METRICS_PORT=$(free_port)
cmd=$(sed -E -e "s/--http 127\.0\.0\.1:[0-9]+/--http 127.0.0.1:$SERVE_PORT/" \
    -e "s/--metrics 127\.0\.0\.1:[0-9]+/--metrics 127.0.0.1:$METRICS_PORT/" <<<"$cmd")
check "the installed tokens file is private and empty" \
    test "$(stat -c %a "$D/etc/isolategpt/tokens")" = 600 -a ! -s "$D/etc/isolategpt/tokens"
# shellcheck disable=SC2086
NOTIFY_SOCKET=$TMP/notify.sock unshare -m "$TMP/inside.sh" $cmd >"$TMP/serve.out" 2>"$TMP/serve.err" &
SERVE=$!
at_exit "kill -9 $SERVE; wait $SERVE"
wait_for "READY=1 from hub serve" 20 notified "READY=1"
check "hub serve says READY=1" notified "READY=1"
code=$(curl -s -o "$TMP/init.json" -w '%{http_code}' -H "Authorization: Bearer $TOKEN" \
    -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
    --data-binary '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"curl","version":"1"}}}' \
    "http://127.0.0.1:$SERVE_PORT/mcp")
is "an MCP client with a token of the installed tokens file is served" "$code" 200
kill -HUP "$SERVE"
sleep 0.3
check "SIGHUP (logrotate) does not end hub serve" kill -0 "$SERVE"
kill -TERM "$SERVE"
wait "$SERVE"
is "SIGTERM ends hub serve with status 0" "$?" 0

# --- isolategpt-netproxy@itest.service ---
: >"$TMP/notify.log"
cmd=$(exec_start isolategpt-netproxy@.service itest)
set -a
. "$D/etc/isolategpt/netproxy/itest.conf"
set +a
cmd=${cmd//\$NETPROXY_OPTS/$NETPROXY_OPTS}
# shellcheck disable=SC2086
NOTIFY_SOCKET=$TMP/notify.sock unshare -m "$TMP/inside.sh" $cmd >"$TMP/np.out" 2>"$TMP/np.err" &
NP=$!
at_exit "kill -9 $NP; wait $NP"
wait_for "READY=1 from netproxy" 10 notified "READY=1"
check "netproxy@itest says READY=1" notified "READY=1 STATUS=standalone"
is "... and runs as the installed system user" "$(ps -o uid= -p "$NP" | tr -d ' ')" "$NP_UID"
code=$(curl -s -o /dev/null -w '%{http_connect}' --max-time 5 -x "http://127.0.0.1:$NP_PORT" \
    https://denied.example.net/ 2>/dev/null)
is "netproxy@itest refuses a domain outside its EnvironmentFile's allowlist" "$code" 403
wait_for "netproxy's audit line" 5 test -s "$TMP/log-up/isolategpt/netproxy-itest.jsonl"
like "... and audits it where the unit says (/var/log/isolategpt/netproxy-itest.jsonl)" \
    "$(cat "$TMP/log-up/isolategpt/netproxy-itest.jsonl" 2>/dev/null)" '"reason":"domain-not-allowed"'
kill -TERM "$NP"
wait "$NP"
is "netproxy@itest ends on SIGTERM with status 0" "$?" 0
check "nothing reached the host's /etc or /var/log" \
    bash -c '! test -e /etc/isolategpt && ! test -e /var/log/isolategpt/netproxy-itest.jsonl'

# --- a second install keeps what the operator edited ---
sed -i 's/"user": "default"/"user": "ops"/' "$D/etc/isolategpt/hub.json"
cp "$D/etc/isolategpt/hub.json" "$TMP/edited.json"
out=$(BUILD=$BUILD DESTDIR=$D "$ROOT/scripts/install" install 2>&1)
check "the edited hub.json is kept" cmp "$TMP/edited.json" "$D/etc/isolategpt/hub.json"
like "... the new version is beside it, and the install says so" "$out" \
    "kept /etc/isolategpt/hub.json \(edited\); the new version is /etc/isolategpt/hub.json.dist"
check "... as hub.json.dist" test -s "$D/etc/isolategpt/hub.json.dist"
check "an unedited file gets no .dist" test ! -e "$D/etc/isolategpt/spokes/notes.json.dist"

# --- uninstall ---
touch "$D/var/log/isolategpt/hub.jsonl" "$D/var/lib/isolategpt/data/keep"
DESTDIR=$D "$ROOT/scripts/install" uninstall >/dev/null 2>&1
check "uninstall removes the programs" test ! -e "$D/usr/local/bin/hub"
check "... and the units" test ! -e "$D$UNITS/isolategpt-repl.service"
check "... and leaves the configuration, data and logs" \
    test -e "$D/etc/isolategpt/hub.json" -a -e "$D/var/lib/isolategpt/data/keep" \
    -a -e "$D/var/log/isolategpt/hub.jsonl"
done_testing
