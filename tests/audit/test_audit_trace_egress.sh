#!/usr/bin/env bash
# The trace handed to netproxy with the tunnel: in namespace mode, a connection a spoke
# makes while it runs a call of a client's trace is a span of its own under the call:
# netproxy's records carry that trace.id, the tunnel's span.id and the call's span as
# isolate.span.parent (the hub tells netproxy, control op "trace", which call the spoke
# runs alone), and with an OTLP collector configured the hub exports the tunnel's span
# that netproxy hands it when the tunnel ends (here: at its refusal).
. "$(dirname "$0")/../lib.sh"
require_root
MODE=namespace
. "$ROOT/tests/hub/hub_lib.sh"
hub_setup
hub_config "{\"netproxy\": {\"binary\": \"$BIN/netproxy\", \"audit\": \"$PROXY_AUDIT\"}}"
TID=4bf92f3577b34da6a3ce929d0e0e4736
PID=00f067aa0ba902b7
# fetch asks netproxy (CONNECT) for a name its manifest does not allow: netproxy refuses
# it on record while the call waits for the answer (nothing is resolved or dialled).
SPANS=$TMP/spans.jsonl
coproc COLLECTOR { exec "$PY" "$ROOT/tests/audit/otlp_collector.py" "$SPANS"; }
at_exit "kill $COLLECTOR_PID"
read -r PORT <&"${COLLECTOR[0]}"
OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:$PORT hubc --traceparent "00-$TID-$PID-01" fetch.get '{"url":"https://denied.example/"}' \
    >"$TMP/out" 2>"$TMP/err"
like "a networked spoke's call in a client's trace ran (refused by netproxy)" "$(cat "$TMP/out")" "403"
span=$($PY -c 'import json,sys
for l in open(sys.argv[1]):
    r = json.loads(l)
    if r["event"]["action"] == "tool-call" and r["isolate"]["app"] == "fetch":
        print(r["span"]["id"])' "$AUDIT")
like "... the hub's record has its span" "$span" '^[0-9a-f]{16}$'
rec=$($PY -c 'import json,sys
for l in open(sys.argv[1]):
    r = json.loads(l)
    if r["event"]["action"] == "connect" and r.get("destination", {}).get("domain") == "denied.example":
        print(r.get("trace", {}).get("id", "-"), r.get("isolate", {}).get("span", {}).get("parent", "-"),
              r["event"]["reason"], r.get("span", {}).get("id", "-"))' "$PROXY_AUDIT")
is "netproxy's record of the spoke's request carries the call's trace, the call's span as its parent" \
    "$(echo "$rec" | cut -d' ' -f1-3)" "$TID $span domain-not-allowed"
tunnel=$(echo "$rec" | cut -d' ' -f4)
like "... and a span of the tunnel's own" "$tunnel" '^[0-9a-f]{16}$'
check "... not the call's" test "$tunnel" != "$span"
wait_for "the collector got the tunnel's span" 10 grep -q "tunnel denied.example" "$SPANS"
is "the hub exported the tunnel's span: in the trace, under the call, its id the records', in error (refused)" \
    "$($PY -c 'import json,sys
for l in open(sys.argv[1]):
    for rs in json.loads(l)["body"]["resourceSpans"]:
        for ss in rs["scopeSpans"]:
            for s in ss["spans"]:
                if s["name"].startswith("tunnel "):
                    print(s["name"], s["traceId"], s.get("parentSpanId"), s["spanId"], s["status"]["code"])' "$SPANS")" \
    "tunnel denied.example:443 $TID $span $tunnel 2"
done_testing
