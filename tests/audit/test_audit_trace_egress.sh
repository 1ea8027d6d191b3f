#!/usr/bin/env bash
# The trace handed to netproxy with the tunnel: in namespace mode, a connection a spoke
# makes while it runs a call of a client's trace gets netproxy records with that
# trace.id and the call's span.id (the hub tells netproxy, control op "trace", which
# call the spoke runs alone).
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
hubc --traceparent "00-$TID-$PID-01" fetch.get '{"url":"https://denied.example/"}' \
    >"$TMP/out" 2>"$TMP/err"
like "a networked spoke's call in a client's trace ran (refused by netproxy)" "$(cat "$TMP/out")" "403"
span=$($PY -c 'import json,sys
for l in open(sys.argv[1]):
    r = json.loads(l)
    if r["event"]["action"] == "tool-call" and r["isolate"]["app"] == "fetch":
        print(r["span"]["id"])' "$AUDIT")
like "... the hub's record has its span" "$span" '^[0-9a-f]{16}$'
is "netproxy's record of the spoke's request carries the call's trace and span" \
    "$($PY -c 'import json,sys
for l in open(sys.argv[1]):
    r = json.loads(l)
    if r["event"]["action"] == "connect" and r.get("destination", {}).get("domain") == "denied.example":
        print(r.get("trace", {}).get("id", "-"), r.get("span", {}).get("id", "-"), r["event"]["reason"])' "$PROXY_AUDIT")" \
    "$TID $span domain-not-allowed"
done_testing
