#!/usr/bin/env bash
# With no hub serve running, hub serve --stdio starts a background hub (a daemon of the
# invoking user: setsid, / as its directory, no terminal, its own log in the run dir,
# nothing inherited but /dev/null and that log) and attaches to it, so that the stdio
# sessions of one user, used in turn, share one hub and keep every note each wrote.
# Three clients starting at once end with one daemon. The daemon's orderly end and its
# crash mid-session are told to the attached client, on its stream, and the stdio hub
# ends with 1; the next start replaces the daemon, over the socket a crash left. With
# no session left it ends after serve.idle_exit_s, and not while a client is attached,
# and at once when its socket is removed; idle, it hands the socket to the service
# starting, and busy, it keeps it.
# A daemon that cannot start says why, and the client is served on its own.
. "$(dirname "$0")/../lib.sh"
require_root
MODE=namespace
. "$ROOT/tests/serve/serve_lib.sh"
serve_setup
mode_needs_jail_skip
conf_merge '{"serve": {"idle_exit_s": 600}}'
SOCK=$RUN/serve.sock
LOG=$RUN/serve-background.log

starts() { audit_count 'g(r,"event.action")=="spoke-start" and g(r,"event.outcome")=="success" and g(r,"isolate.app")=="alpha"'; }
# The background hubs of this test's configuration running now (not counting their
# spokes' jail monitors, forks of the hub under its command line).
daemons() {
    $PY -c 'import glob, sys
hubs = {}
for f in glob.glob("/proc/[0-9]*/cmdline"):
    try:
        a = open(f, "rb").read().split(b"\0")
        ppid = open(f[:-7] + "stat").read().rsplit(")", 1)[1].split()[1]
    except (OSError, IndexError):
        continue
    if b"--background" in a and sys.argv[1].encode() in a:
        hubs[f.split("/")[2]] = ppid
print(sum(1 for p in hubs.values() if p not in hubs))' "$CONF"
}
before=$(starts) # mode_needs_jail_skip's own hub call

cat >"$TMP/common.py" <<'EOF'
import json, os, sys, time
sys.path.insert(0, os.environ["SERVE_DIR"])
from mcp_stdio import StdioClient
HUB, CONF, TMP = os.environ["HUB"], os.environ["CONF"], os.environ["TMP"]

def client(name, **kw):
    return StdioClient([HUB, "serve", "--stdio", "--config", CONF],
                       stderr=open(f"{TMP}/{name}.err", "w"), **kw)

def sc(r):
    if not r:
        return "no answer"
    return json.dumps(r["result"].get("structuredContent", r["result"]), sort_keys=True)

def write(c, name):
    return sc(c.request("tools/call", {"name": "alpha__write",
              "arguments": {"name": name, "text": "by " + name}}, timeout=60))

def read(c, name):
    return sc(c.request("tools/call", {"name": "alpha__read",
              "arguments": {"path": name}}, timeout=60))

def daemon():
    return int(open(os.environ["RUN"] + "/serve.sock.lock").read())

def told(c, timeout=30):
    """The hub's last word to an attached client: the log message, and the exit status."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        for m in c.notes:
            if m.get("method") == "notifications/message" and m["params"].get("logger") == "isolategpt":
                return m["params"]["level"] + ": " + m["params"]["data"], c.p.wait(timeout=30)
        if not c._read(max(end - time.monotonic(), 0)):
            break
    return "nothing", c.p.wait(timeout=30)
EOF
export SERVE_DIR=$ROOT/tests/serve HUB=$BIN/hub CONF TMP RUN

# Three sessions start at once, no hub running: one background hub for all of them.
cat >"$TMP/three.py" <<'EOF'
import os, sys
exec(open(os.environ["TMP"] + "/common.py").read())
marker = os.open(TMP + "/marker", os.O_WRONLY | os.O_CREAT, 0o600)
names = ("one", "two", "three")
cs = {n: client(n, pass_fds=(marker,)) for n in names}  # all three start at once
for n, c in cs.items():
    print(n + "-init", "ok" if c.initialize("client-" + n) else "no answer")
for n, c in cs.items():
    print(n + "-write", write(c, n))
# in turn: each reads what the next one wrote
for n, other in (("one", "two"), ("two", "three"), ("three", "one")):
    print(n + "-reads-" + other, read(cs[n], other))
print("client-pids", " ".join(str(c.p.pid) for c in cs.values()))
for n, c in cs.items():
    print(n + "-rc", c.close())
EOF
$PY "$TMP/three.py" >"$TMP/three.out" 2>"$TMP/three.diag"
diag "$(cat "$TMP/three.diag")"
got() { sed -n "s/^$1 //p" "$TMP/three.out"; }
is "three clients starting at once with no hub running: each is served" "$(got one-init)$(got two-init)$(got three-init)" okokok
is "... by one background hub (the others attached to it)" "$(daemons)" 1
is "... the only one started: the others waited for it (none found the socket taken)" \
    "$(grep -c 'clients of this host attach at' "$LOG"),$(grep -c 'another hub serve owns' "$LOG")" 1,0
like "... each writes its note" "$(got one-write)$(got two-write)$(got three-write)" '/data/one.*/data/two.*/data/three'
like "... and reads the one another session wrote" "$(got one-reads-two) $(got two-reads-three) $(got three-reads-one)" 'by two.*by three.*by one'
is "... through one spoke" "$(($(starts) - before))" 1
is "... every session attached, none served on its own" \
    "$(audit_count 'g(r,"event.action")=="serve-session-start" and g(r,"isolate.serve.transport")=="attach"'),$(audit_count 'g(r,"event.action")=="serve-session-start" and g(r,"isolate.serve.transport")=="stdio"')" 3,0
is "... and each stdio hub ended with 0 when its client closed stdin" "$(got one-rc)$(got two-rc)$(got three-rc)" 000

# The daemon: detached from the clients, its own log, nothing inherited.
D1=$(background_pid)
check "the lock file names the running daemon" test -n "$D1"
read -r -a stat < <(sed 's/.*) //' "/proc/$D1/stat" 2>/dev/null)
unlike "... its parent is none of the stdio hubs" " $(got client-pids) " " ${stat[1]:-x} "
is "... it leads no terminal (tty 0) and is in a session of its own" "${stat[4]:-x} $([ "${stat[3]:-0}" != "$(ps -o sid= $$ | tr -d ' ')" ] && echo own)" "0 own"
is "... its directory is /" "$(readlink "/proc/$D1/cwd")" /
is "... stdin /dev/null, stdout and stderr its log" \
    "$(readlink "/proc/$D1/fd/0") $(readlink "/proc/$D1/fd/1") $(readlink "/proc/$D1/fd/2")" "/dev/null $LOG $LOG"
is "... the log is the user's alone (0600)" "$(stat -c %a "$LOG")" 600
fds=$(for f in /proc/"$D1"/fd/*; do readlink "$f"; done)
unlike "... it holds no descriptor the stdio hub had (a marker passed to it)" "$fds" "$TMP/marker"
like "... its log says what it is" "$(cat "$LOG")" 'ends after 600 s without a client'

# Its orderly end while a client is attached: the client is told, the stdio hub ends with 1.
cat >"$TMP/term.py" <<'EOF'
import os, signal, sys
exec(open(os.environ["TMP"] + "/common.py").read())
c = client("term")
c.initialize("term")
print("read", read(c, "one"))
os.kill(daemon(), signal.SIGTERM)
print("told", *told(c))
EOF
$PY "$TMP/term.py" >"$TMP/term.out" 2>&1
diag "$(cat "$LOG")"
like "a client attached to the running daemon reads the notes" "$(sed -n 's/^read //p' "$TMP/term.out")" 'by one'
like "the daemon ended (SIGTERM): the attached client is told so on its stream, and the stdio hub ends with 1" \
    "$(sed -n 's/^told //p' "$TMP/term.out")" '^error: The IsolateGPT hub serving this session ended: the hub is shutting down\. Start this MCP server again.* 1$'
like "... stderr says it too" "$(cat "$TMP/term.err")" 'hub serving this session ended: the hub is shutting down'
wait_for "the daemon's end" 30 bash -c "! kill -0 $D1"
refute "... which took its socket with it" test -e "$SOCK"

# A crash mid-session: the next client starts a daemon, which is killed outright.
cat >"$TMP/crash.py" <<'EOF'
import os, signal, sys
exec(open(os.environ["TMP"] + "/common.py").read())
c = client("crash")
c.initialize("crash")
print("daemon", daemon())
print("read", read(c, "two"))
os.kill(daemon(), signal.SIGKILL)
print("told", *told(c))
EOF
$PY "$TMP/crash.py" >"$TMP/crash.out" 2>&1
D2=$(sed -n 's/^daemon //p' "$TMP/crash.out")
check "the next stdio client started a new daemon" test -n "$D2" -a "$D2" != "$D1"
like "... which reads what the first daemon's sessions wrote" "$(sed -n 's/^read //p' "$TMP/crash.out")" 'by two'
like "the daemon killed mid-session: the client is told it crashed, and the stdio hub ends with 1" \
    "$(sed -n 's/^told //p' "$TMP/crash.out")" '^error: .*ended: its process ended without ending the session \(it crashed or was killed\).* 1$'
wait_for "the killed daemon's spoke to end" 30 test "$(leftover_procs)" -eq 0
is "... its spoke ended with it" "$(leftover_procs)" 0
check "... its socket is left behind" test -S "$SOCK"

# The next start replaces it over the stale socket; with no client for
# serve.idle_exit_s it ends by itself, and not while one is attached.
conf_merge '{"serve": {"idle_exit_s": 1}}'
cat >"$TMP/idle.py" <<'EOF'
import os, sys
exec(open(os.environ["TMP"] + "/common.py").read())
c = client("idle")
c.initialize("idle")
d = daemon()
print("daemon", d)
print("read", read(c, "three"))
time.sleep(2.5)  # over idle_exit_s, attached
print("alive", os.path.exists(f"/proc/{d}"))
print("rc", c.close())
EOF
$PY "$TMP/idle.py" >"$TMP/idle.out" 2>&1
D3=$(sed -n 's/^daemon //p' "$TMP/idle.out")
check "after the crash, the next client starts a daemon anew" test -n "$D3" -a "$D3" != "$D2"
like "... over the socket the crash left, and reads the notes" "$(sed -n 's/^read //p' "$TMP/idle.out")" 'by three'
is "... it runs on past serve.idle_exit_s (1 s) while a client is attached" "$(sed -n 's/^alive //p' "$TMP/idle.out")" True
wait_for "the idle daemon's end" 30 bash -c "! kill -0 $D3"
refute "... and ends once none is" kill -0 "$D3"
like "... saying why in its log" "$(cat "$LOG")" 'had no client for 1 s: ending'
is "no daemon of this test is left" "$(daemons)" 0

# A daemon whose socket is removed (its run directory deleted) can be reached by no
# client, and a second one would start beside it: it ends.
conf_merge '{"serve": {"idle_exit_s": 600}}'
cat >"$TMP/gone.py" <<'EOF'
import os, sys
exec(open(os.environ["TMP"] + "/common.py").read())
c = client("gone")
c.initialize("gone")
print("daemon", daemon())
print("rc", c.close())
EOF
$PY "$TMP/gone.py" >"$TMP/gone.out" 2>&1
D4=$(sed -n 's/^daemon //p' "$TMP/gone.out")
check "a new daemon serves the next client (idle_exit_s 600)" test -n "$D4" -a "$D4" != "$D3"
check "... and runs on without one" kill -0 "${D4:-0}"
rm -f "$SOCK"
wait_for "the daemon whose socket is gone to end" 30 bash -c "! kill -0 ${D4:-0}"
like "... it ends, saying why" "$(cat "$LOG")" 'control socket .* is gone or replaced'

# The service starting while an idle background hub holds the socket: the background
# hub hands it over and ends (two hubs would contend for the apps' data), and stdio
# clients attach to the service from then on.
$PY "$TMP/gone.py" >"$TMP/handover.out" 2>&1
D5=$(sed -n 's/^daemon //p' "$TMP/handover.out")
check "an idle daemon runs" kill -0 "${D5:-0}"
serve_http_start
wait_for "the daemon to hand the socket over" 30 bash -c "! kill -0 ${D5:-0}"
like "the service starting: the idle daemon hands it the socket and ends" "$(cat "$LOG")" 'takes the socket over: ending'
wait_for "the service to own the socket" 30 test "$(cat "$SOCK.lock" 2>/dev/null)" = "$SERVE_PID"
is "... which the service owns now" "$(cat "$SOCK.lock")" "$SERVE_PID"
$PY "$TMP/gone.py" >"$TMP/after-handover.out" 2>&1
is "... and the next stdio client attaches to the service, starting no daemon" "$(sed -n 's/^daemon //p' "$TMP/after-handover.out")" "$SERVE_PID"
kill "$SERVE_PID"
wait_for "the service's end" 30 bash -c "! kill -0 $SERVE_PID"

# ... but one with a session attached keeps the socket: its client is not cut off.
cat >"$TMP/busy.py" <<'EOF'
import os, socket, subprocess, sys
exec(open(os.environ["TMP"] + "/common.py").read())
c = client("busy")
c.initialize("busy")
d = daemon()
s = socket.socket()
s.bind(("127.0.0.1", 0))
port = s.getsockname()[1]
s.close()
h = subprocess.Popen([HUB, "serve", "--http", f"127.0.0.1:{port}", "--config", CONF],
                     stderr=open(TMP + "/busy-http.err", "w"))
end = time.monotonic() + 60
while time.monotonic() < end:  # it listens once it has tried the control socket
    try:
        socket.create_connection(("127.0.0.1", port), 1).close()
        break
    except OSError:
        time.sleep(0.05)
print("same", daemon() == d and os.path.exists(f"/proc/{d}"))
print("read", read(c, "one"))
h.terminate()
h.wait(timeout=30)
print("rc", c.close())
EOF
$PY "$TMP/busy.py" >"$TMP/busy.out" 2>&1
is "a daemon with a session attached keeps the socket when the service starts" "$(sed -n 's/^same //p' "$TMP/busy.out")" True
like "... its session goes on" "$(sed -n 's/^read //p' "$TMP/busy.out")" 'by one'
like "... and the service says who owns it" "$(cat "$TMP/busy-http.err")" 'another hub serve owns'
stop_background

# A daemon that cannot start: the client hears why, and is served on its own.
rm -f "$SOCK.lock" && mkdir "$SOCK.lock"
out=$(: | "$BIN/hub" serve --stdio --config "$CONF" 2>&1 >/dev/null)
like "a daemon that cannot start: its log's words, then serving on its own" "$out" \
    "the background hub ended at its start \\($LOG\\): .*lock $SOCK.lock: Is a directory.*; serving on its own"
rmdir "$SOCK.lock"
is "no spoke left running" "$(leftover_procs)" 0
done_testing
