#!/usr/bin/env bash
# The shipped rsyslog configuration (config/rsyslog/60-isolategpt.conf), run as written
# by Debian's rsyslogd (only its paths and the collector's address changed): the hub's
# and netproxy's audit lines reach a collector on loopback at least once and byte for byte
# unchanged, across a rotation of the hub's log and an outage of the collector (the
# lines written meanwhile wait in the disk-assisted queue). The collector is another
# rsyslogd taking RELP, the shipped transport (acknowledged lines: none lost), over TLS
# authenticated both ways. First the attacks on the transport (issue 27, "also
# seen": RELP to the SIEM had no TLS): a listener on the collector's address that reads
# what arrives sees a TLS handshake and not one audit line; a TLS listener with a
# certificate of another CA for the collector's name gets no line either.
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

# Certificates: a CA for the collector (siem.example.invalid, the shipped name), one for
# the hub host's client certificate, and an impostor's CA with its own certificate for
# the collector's name.
cert() { # NAME CA SUBJECT-NAME: $TMP/NAME.pem and .key signed by $TMP/CA (self if CA=NAME)
    openssl req -newkey rsa:2048 -nodes -subj "/CN=$3" -keyout "$TMP/$1.key" -out "$TMP/$1.csr" >/dev/null 2>&1
    printf 'subjectAltName=DNS:%s\nbasicConstraints=%s\n' "$3" "$([ "$1" = "$2" ] && echo CA:TRUE || echo CA:FALSE)" >"$TMP/$1.ext"
    if [ "$1" = "$2" ]; then
        openssl x509 -req -in "$TMP/$1.csr" -signkey "$TMP/$1.key" -days 1 -extfile "$TMP/$1.ext" -out "$TMP/$1.pem" >/dev/null 2>&1
    else
        openssl x509 -req -in "$TMP/$1.csr" -CA "$TMP/$2.pem" -CAkey "$TMP/$2.key" -CAcreateserial \
            -days 1 -extfile "$TMP/$1.ext" -out "$TMP/$1.pem" >/dev/null 2>&1
    fi
}
cert ca ca "itest SIEM CA"
cert collector ca siem.example.invalid
cert client ca hub.example.invalid
cert evilca evilca "itest impostor CA"
cert impostor evilca siem.example.invalid
cert othername ca other.example.invalid

# The collector, as a SIEM's relay would run it: another rsyslogd taking RELP over TLS
# (only the hub host's certificate) and writing each line it was sent, as it was sent,
# to RECEIVED. Restartable on its port.
mkdir -p "$TMP/cspool"
cat >"$TMP/collector.conf" <<EOF
global(workDirectory="$TMP/cspool" maxMessageSize="64k")
module(load="imrelp" tls.tlslib="openssl")
template(name="line" type="string" string="%rawmsg%\n")
input(type="imrelp" port="$PORT" address="127.0.0.1" ruleset="collect"
      tls="on" tls.caCert="$TMP/ca.pem" tls.myCert="$TMP/collector.pem"
      tls.myPrivKey="$TMP/collector.key" tls.authMode="name"
      tls.permittedPeer=["hub.example.invalid"])
ruleset(name="collect") { action(type="omfile" file="$RECEIVED" template="line") }
EOF
start_collector() {
    "$RSYSLOGD" -n -f "$TMP/collector.conf" -i "$TMP/collector.pid" >>"$TMP/collector.out" 2>&1 &
    COLLECTOR=$!
    at_exit "kill -9 $COLLECTOR"
    wait_for "the collector" 5 bash -c "exec 3<>/dev/tcp/127.0.0.1/$PORT"
}

# The shipped file, with this test's paths and collector.
sed -e "s|/var/log/isolategpt/|$LOG/|g" -e 's|Target="siem.example.invalid"|Target="127.0.0.1"|' \
    -e "s|Port=\"2514\"|Port=\"$PORT\"|" -e 's|action.resumeInterval="2"|action.resumeInterval="1"|' \
    -e "s|/etc/isolategpt/siem/|$TMP/|" \
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

emit "$LOG/hub.jsonl" 0 100
emit "$LOG/netproxy.jsonl" 0 100
# listen MODE: on the collector's port, what a listener there gets from the shipper's
# first connection (waited for up to 30 s): "plain" reads the bytes as they come, "impostor" answers TLS with the impostor's
# certificate and reads what follows the handshake; both answer RELP's open. Prints the first byte (hex),
# whether an audit line's text was among the bytes and whether the shipper connected.
listen() {
    $PY - "$1" "$PORT" "$TMP" <<'EOF'
import socket, ssl, sys, time
mode, port, tmp = sys.argv[1], int(sys.argv[2]), sys.argv[3]
srv = socket.socket(); srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind(("127.0.0.1", port)); srv.listen(8); srv.settimeout(1)
got, first, conns, end = b"", "", 0, time.monotonic() + 30
while time.monotonic() < end and not conns:
    try:
        c, _ = srv.accept()
    except socket.timeout:
        continue
    c.settimeout(2)
    conns += 1
    try:
        if mode != "plain":
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.load_cert_chain(tmp + "/" + mode + ".pem", tmp + "/" + mode + ".key")
            c = ctx.wrap_socket(c, server_side=True)
        opened = False
        while True:
            b = c.recv(65536)
            if not b: break
            if not got: first = "%02x" % b[0]
            got += b
            # Answer RELP's open as a collector would, so that the shipper sends lines.
            if not opened and b" open " in got and got.endswith(b"\n"):
                txnr = got.split(b" ", 1)[0]
                offer = b"relp_version=0\nrelp_software=listener\ncommands=syslog"
                rsp = b"200 OK\n" + offer
                c.sendall(txnr + b" rsp %d " % len(rsp) + rsp + b"\n")
                opened = True
    except (OSError, ssl.SSLError):
        pass
    c.close()
print(first or "none", "audit-line" if b"tool-call" in got else "no-audit-line",
      "tried" if conns else "not-tried")
EOF
}
"$RSYSLOGD" -n -f "$TMP/rsyslog.conf" -i "$TMP/rsyslog.pid" >"$TMP/rsyslog.out" 2>&1 &
RS=$!
at_exit "kill -9 $RS"
is "a plain listener on the collector's address sees a TLS handshake (0x16) and no audit line" \
    "$(listen plain)" "16 no-audit-line tried"
start_collector
# Lines as the collector holds them, each once: over TLS a collector's restart makes
# librelp send its unacknowledged window again (at least once), so duplicates are
# counted, and what the SIEM must deduplicate is said (diag).
distinct() { [ -f "$RECEIVED" ] && sort -u "$RECEIVED" | wc -l || echo 0; }
received_at_least() { [ "$(distinct)" -ge "$1" ]; }
wait_for "200 lines" 20 received_at_least 200
is "the existing lines of both files arrive" "$(distinct)" 200

# logrotate: rename, then the program writes a new file at the same path.
mv "$LOG/hub.jsonl" "$LOG/hub.jsonl.1"
emit "$LOG/hub.jsonl" 100 150
emit "$LOG/netproxy.jsonl" 100 150
wait_for "300 lines" 20 received_at_least 300
is "after a rotation of the hub's log, its new file is followed" "$(distinct)" 300

# The collector goes away; lines written meanwhile are queued, then delivered.
kill -TERM "$COLLECTOR"
wait "$COLLECTOR" 2>/dev/null
held=$(count)
emit "$LOG/hub.jsonl" 150 250
emit "$LOG/netproxy.jsonl" 150 250
sleep 2
is "nothing arrives while the collector is down" "$(count)" "$held"
start_collector
wait_for "500 lines" 30 received_at_least 500
sleep 1 # anything late would arrive now
is "after the outage the queued lines arrive" "$(distinct)" 500

cat "$LOG/hub.jsonl.1" "$LOG/hub.jsonl" "$LOG/netproxy.jsonl" | sort >"$TMP/sent.sorted"
sort -u "$RECEIVED" >"$TMP/received.sorted"
check "every line arrived, byte for byte unchanged, and nothing else" \
    cmp "$TMP/sent.sorted" "$TMP/received.sorted"
diag "$(($(count) - $(distinct))) of $(count) received lines were sent again (the collector's restarts)"
check "rsyslogd is still running" kill -0 "$RS"

# Last, shippers of their own (their own files, queue and state, each started after
# the listener, so that its first connection is the one tried; an authentication
# failure can make rsyslog disable the action until it restarts): the collector's
# address taken over by a TLS listener with a certificate of another CA for the
# collector's name, then by one with a certificate of the collector's CA for another
# name.
kill -TERM "$COLLECTOR" "$RS"
wait "$COLLECTOR" "$RS" 2>/dev/null
impostor() { # MODE: what a listener of that certificate got from a fresh shipper
    mkdir -p "$TMP/$1.log" "$TMP/$1.spool"
    emit "$TMP/$1.log/hub.jsonl" 0 10
    sed -e "s|$LOG/|$TMP/$1.log/|g" "$TMP/60-isolategpt.conf" >"$TMP/$1.60.conf"
    printf 'global(workDirectory="%s" maxMessageSize="64k")\ninclude(file="%s")\n' \
        "$TMP/$1.spool" "$TMP/$1.60.conf" >"$TMP/$1.rsyslog.conf"
    listen "$1" >"$TMP/$1.out" &
    local listener=$! shipper
    "$RSYSLOGD" -n -f "$TMP/$1.rsyslog.conf" -i "$TMP/$1.pid" >"$TMP/$1.rsyslog.out" 2>&1 &
    shipper=$!
    at_exit "kill -9 $shipper"
    wait "$listener"
    kill "$shipper"
    wait "$shipper" 2>/dev/null
    cut -d' ' -f2- "$TMP/$1.out"
}
is "a TLS listener with another CA's certificate for the collector's name gets no audit line" \
    "$(impostor impostor)" "no-audit-line tried"
is "a TLS listener with the collector's CA's certificate for another name gets no audit line" \
    "$(impostor othername)" "no-audit-line tried"
done_testing
