#!/usr/bin/env bash
# A spoke that floods the hub with pings during a call (issue 14, item 5), from the
# attacker's side: pings count against the call's frame budget, so the flooder is
# killed after a bounded number of frames instead of being answered for as long as its
# call lasts, and another spoke's calls in the same hub are answered meanwhile.
. "$(dirname "$0")/../lib.sh"
MODE=process
. "$ROOT/tests/hub/hub_lib.sh"
hub_setup
cp "$BIN/tests/hub/rawspoke" "$BINDIR/"
$PY - <<PYEOF
import json
m = {"name": "pinger", "description": "Pings the hub as fast as it answers.",
     "command": ["rawspoke", "pingflood", "3000"], "runtime": "c",
     "tools": [{"name": "poke", "description": "Hostile terminal probe.",
                "inputSchema": {"type": "object"}}]}
json.dump(m, open("$SPOKES/pinger.json", "w"))
PYEOF

# The flood and, in the same hub at the same time, twenty calls to another spoke.
args=(pinger.poke '{}')
for i in $(seq 1 20); do args+=(beta.echo "{\"text\":\"t$i\"}"); done
t0=$(date +%s%N)
hubc --parallel "${args[@]}" >"$TMP/out" 2>"$TMP/err"
rc=$?
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
diag "exit $rc after $ms ms; pinger: $(jlines 'd.get("error") or d.get("result") if d["tool"]=="pinger.poke" else ""' <"$TMP/out" | grep .)"
is "the flooding spoke's call fails (the hub's exit status says so: 3)" "$rc" 3
like "... killed for too many frames during one call" \
    "$(jlines 'd["error"]["message"] if d["tool"]=="pinger.poke" and "error" in d else ""' <"$TMP/out" | grep .)" \
    "too many frames during one call"
dur=$(jlines 'd["duration_us"] if d["tool"]=="pinger.poke" else ""' <"$TMP/out" | grep .)
check "... within a second of its first ping, not after its 3 s of flooding (${dur} us)" \
    test "${dur:-9999999}" -lt 1000000
is "... and audited with the reason flood" \
    "$(audit_count 'g(r,"event.action")=="spoke-kill" and g(r,"isolate.app")=="pinger" and g(r,"event.reason")=="flood"')" 1
is "the other spoke's twenty calls are all answered" \
    "$(jlines '"result" in d' <"$TMP/out" | grep -c true)" 20
check "... and the whole run took well under the flood's 3 s (${ms} ms)" test "$ms" -lt 2500
done_testing
