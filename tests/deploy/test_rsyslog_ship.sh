#!/usr/bin/env bash
# The shipped rsyslog configuration (config/rsyslog/60-isolategpt.conf), run as written
# by Debian's rsyslogd (only its paths and the collector's address changed): the hub's
# and netproxy's audit lines reach a collector on loopback once each and byte for byte
# unchanged, across a rotation of the hub's log and an outage of the collector (the
# lines written meanwhile wait in the disk-assisted queue). The collector is another
# rsyslogd taking RELP, the shipped transport: acknowledged lines, so none is doubled
# when the collector goes away mid-batch (plain TCP would send the batch again).
. "$(dirname "$0")/../lib.sh"
require_root
PY=/usr/bin/python3
RSYSLOGD=$(command -v rsyslogd || echo /usr/sbin/rsyslogd)
[ -x "$RSYSLOGD" ] || { skip "$TEST_NAME" "rsyslogd is not installed (make deps)"; exit 0; }

LOG=$TMP/log
mkdir -p "$LOG" "$TMP/spool"
PORT=$(free_port)
RECEIVED=$TMP/received.txt

[ -e /usr/lib/x86_64-linux-gnu/rsyslog/omrelp.so ] || ls /usr/lib/*/rsyslog/omrelp.so >/dev/null 2>&1 ||
    { skip "$TEST_NAME" "rsyslog-relp is not installed (make deps)"; exit 0; }

# The collector, as a SIEM's relay would run it: another rsyslogd taking RELP and
# writing each line it was sent, as it was sent, to RECEIVED. Restartable on its port.
mkdir -p "$TMP/cspool"
cat >"$TMP/collector.conf" <<EOF
global(workDirectory="$TMP/cspool" maxMessageSize="64k")
module(load="imrelp")
template(name="line" type="string" string="%rawmsg%\n")
input(type="imrelp" port="$PORT" address="127.0.0.1" ruleset="collect")
ruleset(name="collect") { action(type="omfile" file="$RECEIVED" template="line") }
EOF
start_collector() {
    "$RSYSLOGD" -n -f "$TMP/collector.conf" -i "$TMP/collector.pid" >>"$TMP/collector.out" 2>&1 &
    COLLECTOR=$!
    at_exit "kill -9 $COLLECTOR"
    wait_for "the collector" 5 bash -c "exec 3<>/dev/tcp/127.0.0.1/$PORT"
}

# The shipped file, with this test's paths and collector.
sed -e "s|/var/log/isolategpt/|$LOG/|g" -e "s|siem.example.invalid|127.0.0.1|" \
    -e "s|Port=\"2514\"|Port=\"$PORT\"|" -e 's|action.resumeInterval="2"|action.resumeInterval="1"|' \
    "$ROOT/config/rsyslog/60-isolategpt.conf" >"$TMP/60-isolategpt.conf"
cat >"$TMP/rsyslog.conf" <<EOF
global(workDirectory="$TMP/spool" maxMessageSize="64k")
include(file="$TMP/60-isolategpt.conf")
EOF
check "rsyslogd accepts the configuration (-N1)" "$RSYSLOGD" -N1 -f "$TMP/rsyslog.conf"

# Lines like the real ones: ECS JSON with escapes and non-ASCII text.
emit() { # FILE FROM TO
    $PY - "$@" <<'EOF'
import json, sys
path, a, b = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
with open(path, "a") as f:
    for i in range(a, b):
        f.write(json.dumps({"@timestamp": "2026-12-01T00:00:00.%06dZ" % i,
            "event": {"action": "tool-call", "outcome": "success", "sequence": i},
            "isolate": {"spoke": path.rsplit("/", 1)[-1], "user": "zoë"},
            "message": "line %d: \"quoted\" \\ tab\t ✓" % i}, ensure_ascii=False,
            separators=(",", ":")) + "\n")
EOF
}
count() { [ -f "$RECEIVED" ] && wc -l <"$RECEIVED" || echo 0; }

start_collector
emit "$LOG/hub.jsonl" 0 100
emit "$LOG/netproxy.jsonl" 0 100
"$RSYSLOGD" -n -f "$TMP/rsyslog.conf" -i "$TMP/rsyslog.pid" >"$TMP/rsyslog.out" 2>&1 &
RS=$!
at_exit "kill -9 $RS"
received_at_least() { [ "$(count)" -ge "$1" ]; }
wait_for "200 lines" 20 received_at_least 200
is "the existing lines of both files arrive" "$(count)" 200

# logrotate: rename, then the program writes a new file at the same path.
mv "$LOG/hub.jsonl" "$LOG/hub.jsonl.1"
emit "$LOG/hub.jsonl" 100 150
emit "$LOG/netproxy.jsonl" 100 150
wait_for "300 lines" 20 received_at_least 300
is "after a rotation of the hub's log, its new file is followed" "$(count)" 300

# The collector goes away; lines written meanwhile are queued, then delivered.
kill -TERM "$COLLECTOR"
wait "$COLLECTOR" 2>/dev/null
emit "$LOG/hub.jsonl" 150 250
emit "$LOG/netproxy.jsonl" 150 250
sleep 2
is "nothing arrives while the collector is down" "$(count)" 300
start_collector
wait_for "500 lines" 30 received_at_least 500
sleep 1 # anything doubled would arrive now
is "after the outage the queued lines arrive" "$(count)" 500

cat "$LOG/hub.jsonl.1" "$LOG/hub.jsonl" "$LOG/netproxy.jsonl" | sort >"$TMP/sent.sorted"
sort "$RECEIVED" >"$TMP/received.sorted"
check "every line arrived exactly once and byte for byte unchanged" \
    cmp "$TMP/sent.sorted" "$TMP/received.sorted"
check "rsyslogd is still running" kill -0 "$RS"
done_testing
