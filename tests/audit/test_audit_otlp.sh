#!/usr/bin/env bash
# OpenTelemetry export (lib/otlp.h): with OTEL_EXPORTER_OTLP_ENDPOINT set, each
# call is a span POSTed as OTLP/HTTP JSON to a stand-in collector on loopback, in the
# client's trace (traceparent continued), its parent the client's span, an app's call
# through the hub a child span, and so are each spoke's start and each question (under
# the call they were for, their ids in the records they cover), and through hub serve
# the client's request, between the client's span and the call's; a collector that
# never answers does not hold a call up, and the hub says how many spans it could not
# export.
. "$(dirname "$0")/../lib.sh"
require_root
MODE=none
. "$ROOT/tests/hub/hub_lib.sh"
hub_setup
TID=4bf92f3577b34da6a3ce929d0e0e4736
PID=00f067aa0ba902b7
SPANS=$TMP/spans.jsonl
coproc COLLECTOR { exec "$PY" "$ROOT/tests/audit/otlp_collector.py" "$SPANS"; }
at_exit "kill $COLLECTOR_PID"
read -r PORT <&"${COLLECTOR[0]}"
like "the stand-in collector listens" "$PORT" '^[0-9]+$'

OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:$PORT hubc --answers allow --traceparent "00-$TID-$PID-01" \
    alpha.relay '{"tool":"beta.echo","arguments":{"text":"traced"}}' >/dev/null 2>"$TMP/err"
is "a call with a collector configured runs" "$?" 0
wait_for "the collector got the spans" 10 test -s "$SPANS"
# spans as "name traceId parentSpanId spanId status" lines, by name
$PY -c 'import json,sys
for l in open(sys.argv[1]):
    d = json.loads(l)
    assert d["path"] == "/v1/traces" and d["type"] == "application/json", d
    for rs in d["body"]["resourceSpans"]:
        svc = [a["value"]["stringValue"] for a in rs["resource"]["attributes"] if a["key"] == "service.name"]
        for ss in rs["scopeSpans"]:
            for s in ss["spans"]:
                print(s["name"], s["traceId"], s.get("parentSpanId", "-"), s["spanId"],
                      s["status"]["code"], svc[0], int(s["endTimeUnixNano"]) >= int(s["startTimeUnixNano"]))' \
    "$SPANS" | sort >"$TMP/spans.txt"
relay=$(grep '^tool-call alpha.relay ' "$TMP/spans.txt")
echo_=$(grep '^tool-call beta.echo ' "$TMP/spans.txt")
like "the app's call: a span in the client's trace, its parent the client's span" "$relay" \
    "^tool-call alpha.relay $TID $PID [0-9a-f]{16} 1 isolategpt-hub True$"
like "the call it made through the hub: a child span" "$echo_" \
    "^tool-call beta.echo $TID $(echo "$relay" | cut -d' ' -f5) [0-9a-f]{16} 1 isolategpt-hub True$"
is "... the same ids as the audit records" \
    "$($PY -c 'import json,sys
for l in open(sys.argv[1]):
    r = json.loads(l)
    if r["event"]["action"] == "tool-call" and r["isolate"]["app"] == "beta":
        print(r["span"]["id"])' "$AUDIT")" "$(echo "$echo_" | cut -d' ' -f5)"

relay_span=$(echo "$relay" | cut -d' ' -f5)
echo_span=$(echo "$echo_" | cut -d' ' -f5)
like "each spoke's start: a span under the call it was started for (alpha's under the relay)" \
    "$(grep '^spoke-start alpha ' "$TMP/spans.txt")" "^spoke-start alpha $TID $relay_span [0-9a-f]{16} 1 isolategpt-hub True$"
like "... beta's under the call made through the hub" \
    "$(grep '^spoke-start beta ' "$TMP/spans.txt")" "^spoke-start beta $TID $echo_span [0-9a-f]{16} 1 isolategpt-hub True$"
like "the question before alpha may call beta: a span under the relay" \
    "$(grep '^question collab call beta.echo ' "$TMP/spans.txt")" "^question collab call beta.echo $TID $relay_span [0-9a-f]{16} 1 "
like "... and the question before the result goes back" \
    "$(grep '^question collab relay beta.echo ' "$TMP/spans.txt")" "^question collab relay beta.echo $TID $relay_span [0-9a-f]{16} 1 "
is "the records they cover carry their ids (spoke-start, permission)" \
    "$($PY -c 'import json,sys
ids = {l.split()[-4] for l in open(sys.argv[2]) if l.startswith(("spoke-start", "question"))}
n = 0
for l in open(sys.argv[1]):
    r = json.loads(l)
    if r["event"]["action"] in ("spoke-start", "permission") and r.get("span", {}).get("id") in ids \
            and r.get("trace", {}).get("id") == sys.argv[3]:
        n += 1
print(n)' "$AUDIT" "$TMP/spans.txt" "$TID")" 4

# Through hub serve: the client's request is a span between the client's and the call's.
: >"$SPANS"
OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:$PORT $PY - "$BIN/hub" "$CONF" "$ROOT/tests/serve" \
    "00-$TID-$PID-01" >"$TMP/serve.out" 2>"$TMP/serve.err" <<'PYEOF'
import sys
sys.path.insert(0, sys.argv[3])
from mcp_stdio import StdioClient
c = StdioClient([sys.argv[1], "serve", "--stdio", "--standalone", "--config", sys.argv[2]])
c.initialize("otlp-client")
r = c.request("tools/call", {"name": "alpha__echo", "arguments": {"text": "x"},
                             "_meta": {"traceparent": sys.argv[4]}})
print("ok" if r and "result" in r else "failed %r" % r)
c.close()
PYEOF
is "hub serve --stdio --standalone: a client's traced call ran" "$(cat "$TMP/serve.out")" ok
wait_for "the collector got serve's spans" 10 grep -q "mcp tools/call" "$SPANS"
$PY -c 'import json,sys
for l in open(sys.argv[1]):
    for rs in json.loads(l)["body"]["resourceSpans"]:
        for ss in rs["scopeSpans"]:
            for s in ss["spans"]:
                print(s["name"], s["traceId"], s.get("parentSpanId", "-"), s["spanId"])' \
    "$SPANS" | sort >"$TMP/serve-spans.txt"
req=$(grep '^mcp tools/call alpha.echo ' "$TMP/serve-spans.txt")
like "the client's request: a span in the client's trace, under the client's span" "$req" \
    "^mcp tools/call alpha.echo $TID $PID [0-9a-f]{16}$"
like "... the call a child of it" "$(grep '^tool-call alpha.echo ' "$TMP/serve-spans.txt")" \
    "^tool-call alpha.echo $TID $(echo "$req" | awk '{print $NF}') [0-9a-f]{16}$"

# A collector that listens and never answers: the call is not held up by it.
coproc HANG { exec "$PY" "$ROOT/tests/audit/otlp_collector.py" "$TMP/none" --hang; }
at_exit "kill $HANG_PID"
read -r HPORT <&"${HANG[0]}"
t0=$(date +%s%N)
OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=http://127.0.0.1:$HPORT/v1/traces hubc alpha.echo '{"text":"x"}' \
    >/dev/null 2>"$TMP/err"
rc=$?
ms=$((($(date +%s%N) - t0) / 1000000))
is "a collector that never answers: the call still succeeds" "$rc" 0
check "... and the hub ends within its flush bound (${ms} ms)" test "$ms" -lt 8000
like "... saying what it could not export" "$(cat "$TMP/err")" "OTLP: 2 spans not exported"
done_testing
