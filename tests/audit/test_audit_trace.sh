#!/usr/bin/env bash
# W3C trace context in the audit (lib/traceparent.h): a client's traceparent
# (`hub call --traceparent`, or an MCP client's params._meta.traceparent through
# `hub serve --stdio`) is continued: the call's records carry its trace.id, a span.id
# of the call's own and isolate.span.parent (through hub serve, the client's request is
# a span between the client's and the call's); a call an app makes (isolate/call) is a
# child span in the same trace; without one, or with one that is not valid, a new trace.
. "$(dirname "$0")/../lib.sh"
require_root
MODE=none
. "$ROOT/tests/hub/hub_lib.sh"
hub_setup
TID=4bf92f3577b34da6a3ce929d0e0e4736
PID=00f067aa0ba902b7
TP=00-$TID-$PID-01
# recs ACTION EXPR: EXPR over every record with that event.action (r), one per line.
recs() { $PY -c 'import json,sys
for l in open(sys.argv[3]):
    r = json.loads(l)
    if r.get("event", {}).get("action") == sys.argv[1]:
        v = eval(sys.argv[2], {"r": r})
        print(json.dumps(v) if isinstance(v, (dict, list, bool)) or v is None else v)' "$1" "$2" "$AUDIT"; }

: >"$AUDIT"
hubc --traceparent "$TP" alpha.echo '{"text": "hi"}' >/dev/null 2>&1
is "hub call --traceparent: the call ran" "$?" 0
is "its records carry the client's trace.id" \
    "$(recs tool-call-start 'r["trace"]["id"]') $(recs tool-call 'r["trace"]["id"]')" "$TID $TID"
is "... the client's span as the parent" "$(recs tool-call 'r["isolate"]["span"]["parent"]')" "$PID"
span=$(recs tool-call 'r["span"]["id"]')
like "... and a span of its own" "$span" '^[0-9a-f]{16}$'
is "... the same in the call's start and end records" "$(recs tool-call-start 'r["span"]["id"]')" "$span"

: >"$AUDIT"
hubc alpha.echo '{"text": "hi"}' >/dev/null 2>&1
like "without one: a new trace" "$(recs tool-call 'r["trace"]["id"]')" '^[0-9a-f]{32}$'
is "... with no parent span" "$(recs tool-call '"span" in r["isolate"]')" false
for bad in "00-${TID^^}-$PID-01" "00-00000000000000000000000000000000-$PID-01" "01-$TID-$PID-01" \
    "00-$TID-0000000000000000-01" "00-$TID-$PID-01-extra" "garbage"; do
    : >"$AUDIT"
    hubc --traceparent "$bad" alpha.echo '{"text": "hi"}' >/dev/null 2>&1
    t=$(recs tool-call 'r["trace"]["id"]')
    if [ "$t" != "$TID" ] && [[ "$t" =~ ^[0-9a-f]{32}$ ]]; then ok "not a traceparent ($bad): a new trace"
    else not_ok "not a traceparent ($bad): a new trace: got '$t'"; fi
done

# A call an app makes through the hub: a child span of the same trace.
: >"$AUDIT"
hubc --answers allow --traceparent "$TP" alpha.relay '{"tool":"beta.echo","arguments":{"text":"via hub"}}' >/dev/null 2>&1
is "an app's call through the hub: ran" "$?" 0
parent_span=$(recs tool-call 'r["span"]["id"] if r["isolate"]["app"] == "alpha" else None' | grep -v null)
is "... its records in the client's trace" \
    "$(recs tool-call 'r["trace"]["id"] if r["isolate"]["app"] == "beta" else None' | grep -v null)" "$TID"
is "... as a child of the calling app's span" \
    "$(recs tool-call 'r["isolate"]["span"]["parent"] if r["isolate"]["app"] == "beta" else None' | grep -v null)" \
    "$parent_span"

# An MCP client's _meta.traceparent, through hub serve --stdio.
: >"$AUDIT"
$PY - "$BIN/hub" "$CONF" "$ROOT/tests/serve" "$TP" >"$TMP/serve.out" 2>"$TMP/serve.err" <<'PYEOF'
import json, sys
sys.path.insert(0, sys.argv[3])
from mcp_stdio import StdioClient
c = StdioClient([sys.argv[1], "serve", "--stdio", "--config", sys.argv[2]])
c.initialize("trace-client")
r = c.request("tools/call", {"name": "alpha__echo", "arguments": {"text": "x"},
                             "_meta": {"traceparent": sys.argv[4]}})
print("ok" if r and "result" in r else "failed %r" % r)
c.close()
PYEOF
is "hub serve: a client's call with _meta.traceparent ran" "$(cat "$TMP/serve.out")" ok
is "... the hub's records of it carry the client's trace.id" "$(recs tool-call 'r["trace"]["id"]')" "$TID"
is "... and so does serve's own record of the request" "$(recs serve-call 'r["trace"]["id"]')" "$TID"
req_span=$(recs serve-call 'r["span"]["id"]')
like "... the request is a span of its own" "$req_span" '^[0-9a-f]{16}$'
is "... whose parent is the client's span" "$(recs serve-call 'r["isolate"]["span"]["parent"]')" "$PID"
is "... and the hub's call is its child" "$(recs tool-call 'r["isolate"]["span"]["parent"]')" "$req_span"
done_testing
