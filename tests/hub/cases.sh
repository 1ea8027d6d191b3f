# The hub's end-to-end cases, run in the isolation mode $MODE through the real
# binaries (build/hub and the spokes). Sourced by test_hub_<mode>.sh.

. "$ROOT/tests/hub/hub_lib.sh"
hub_setup
mode_needs_jail_skip

# ---- a call reaches the right spoke, and results come back as JSON ----
out=$(hubc alpha.whoami '{}' beta.whoami '{}')
is "$MODE: alpha.whoami reaches alpha" "$(echo "$out" | sed -n 1p | jget 'd["result"]["structuredContent"]["name"]')" alpha
is "$MODE: beta.whoami reaches beta" "$(echo "$out" | sed -n 2p | jget 'd["result"]["structuredContent"]["name"]')" beta
a_id=$(echo "$out" | sed -n 1p | jget 'd["result"]["structuredContent"]["id"]')
like "$MODE: each spoke is told its own instance id" "$a_id" '^[0-9a-f]{32}$'
out=$(hubc notes.add '{"title":"first","text":"hello notes"}')
is "$MODE: example spoke notes.add saves" "$(echo "$out" | jget 'd["structuredContent"]["bytes"]')" 11
out=$(hubc notes.get '{"title":"first"}')
is "$MODE: notes.get returns it from the private data dir" "$(echo "$out" | jget 'd["structuredContent"]["text"]')" "hello notes"
check "$MODE: the note lives under data_root/user/app" test -f "$DATA/tester/notes/notes/first.txt"

# ---- data directory per mode ----
out=$(hubc alpha.whoami '{}')
data=$(echo "$out" | jget 'd["structuredContent"]["data"]')
if [ "$MODE" = namespace ]; then
    is "$MODE: SPOKE_DATA is /data inside the jail" "$data" /data
else
    is "$MODE: SPOKE_DATA is the host directory" "$data" "$(cd "$DATA/tester/alpha" && pwd -P)"
fi
hubc beta.write '{"name":"secret","text":"beta-private"}' >/dev/null
out=$(hubc alpha.read '{"path":"../beta/secret"}')
if [ "$MODE" = namespace ]; then
    is "$MODE: a sibling's data dir is out of reach" "$(echo "$out" | jget 'd["structuredContent"]["ok"]')" false
else
    is "$MODE: a sibling's data dir is reachable (the baseline's weakness)" \
        "$(echo "$out" | jget 'd["structuredContent"].get("text")')" beta-private
fi

# ---- usage and errors ----
hubc alpha.nope '{}' >/dev/null 2>"$TMP/err"; rc=$?
is "$MODE: unknown tool exits 3" "$rc" 3
like "$MODE: unknown tool says so" "$(cat "$TMP/err")" "no tool alpha.nope is installed"
hubc alpha.echo '{"text": 5}' >/dev/null 2>"$TMP/err"; rc=$?
is "$MODE: schema-breaking arguments exit 3" "$rc" 3
like "$MODE: the schema error says where" "$(cat "$TMP/err")" 'hub-validation.*\$\.text: must be string'
hubc alpha.echo 'not json' >/dev/null 2>&1; is "$MODE: malformed JSON-ARGS is a usage error" "$?" 2
hubc alpha.badresult '{}' >/dev/null 2>"$TMP/err"; rc=$?
is "$MODE: a result breaking outputSchema is refused" "$rc" 3
like "$MODE: ... and the reason names the field" "$(cat "$TMP/err")" 'structuredContent\.n: must be integer'
out=$(hubc drifted.whoami '{}' 2>&1); rc=$?
is "$MODE: a spoke whose tools/list differs from its manifest is refused" "$rc" 3
like "$MODE: ... naming the tool and the field" "$out" "tool \"echo\": description changed: pinned"

# ---- mediation: isolate/call ----
: >"$AUDIT"
out=$(hubc --answers allow alpha.relay '{"tool":"beta.echo","arguments":{"text":"via hub"}}')
is "$MODE: isolate/call alpha -> beta returns beta's result" \
    "$(echo "$out" | jget 'd["structuredContent"]["result"]["structuredContent"]["text"]')" "via hub"
is "$MODE: the mediated call was asked twice (call, relay)" \
    "$(audit_count 'g(r,"event.action")=="permission" and g(r,"isolate.caller.app")=="alpha"')" 2
is "$MODE: the mediated call is audited" \
    "$(audit_count 'g(r,"event.action")=="isolate-call" and g(r,"event.outcome")=="success" and g(r,"isolate.app")=="beta"')" 1

: >"$AUDIT"
out=$(hubc --answers deny alpha.relay '{"tool":"beta.echo","arguments":{"text":"x"}}')
is "$MODE: a denied isolate/call is an error to the caller" "$(echo "$out" | jget 'd["structuredContent"]["code"]')" -32001
is "$MODE: a denied isolate/call never starts the target" \
    "$(audit_count 'g(r,"event.action")=="spoke-start" and g(r,"isolate.app")=="beta"')" 0
is "$MODE: the denial is audited" \
    "$(audit_count 'g(r,"event.action")=="permission" and g(r,"event.outcome")=="failure"')" 1

cat >"$TMP/relay-deny.json" <<'EOF'
{"default": "deny",
 "rules": [{"category": "collab", "stage": "call", "app": "beta", "caller": "alpha", "decision": "allow"}]}
EOF
out=$(hubc --answers "$TMP/relay-deny.json" alpha.relay '{"tool":"beta.echo","arguments":{"text":"x"}}')
like "$MODE: a denied relay keeps beta's result from alpha" \
    "$(echo "$out" | jget 'd["structuredContent"]["message"]')" "relaying the result of beta.echo to alpha was denied"

: >"$AUDIT"
out=$(hubc --answers allow alpha.relay '{"tool":"beta.nope"}')
like "$MODE: isolate/call to a missing tool is refused" "$(echo "$out" | jget 'd["structuredContent"]["message"]')" "no tool beta.nope"
out=$(hubc --answers allow alpha.relay '{"tool":"beta.echo","arguments":{"text":7}}')
like "$MODE: isolate/call with schema-breaking arguments is refused" \
    "$(echo "$out" | jget 'd["structuredContent"]["message"]')" 'arguments for beta.echo: \$\.text: must be string'
is "$MODE: neither started beta" "$(audit_count 'g(r,"event.action")=="spoke-start" and g(r,"isolate.app")=="beta"')" 0

out=$(hubc --answers allow alpha.relay '{"tool":"beta.relay","arguments":{"tool":"alpha.echo","arguments":{"text":"loop"}}}')
is "$MODE: a call back into a spoke on the chain is refused (no deadlock)" \
    "$(echo "$out" | jget 'd["structuredContent"]["result"]["structuredContent"]["code"]')" -32002
hub_config '{"max_call_depth": 2}'
out=$(hubc --answers allow alpha.relay '{"tool":"beta.relay","arguments":{"tool":"gamma.echo","arguments":{"text":"deep"}}}')
like "$MODE: the chain depth is limited" \
    "$(echo "$out" | jget 'd["structuredContent"]["result"]["structuredContent"]["message"]')" "deeper than 2"
hub_config '{}'
out=$(hubc --answers allow alpha.relay '{"tool":"beta.relay","arguments":{"tool":"gamma.echo","arguments":{"text":"deep"}}}')
is "$MODE: alpha -> beta -> gamma works within the depth" \
    "$(echo "$out" | jget 'd["structuredContent"]["result"]["structuredContent"]["result"]["structuredContent"]["text"]')" deep

# ---- identity: the hub knows a spoke by its socket ----
cat >"$TMP/only-alpha.json" <<'EOF'
{"default": "deny",
 "rules": [{"category": "collab", "caller": "alpha", "decision": "allow"}]}
EOF
: >"$AUDIT"
out=$(hubc --answers "$TMP/only-alpha.json" hostile.impersonate '{"tool":"beta.echo","as":"alpha"}')
is "$MODE: impersonating alpha (serverInfo, _meta) gets no grant of alpha's" \
    "$(echo "$out" | jget 'd["structuredContent"]["code"]')" -32001
is "$MODE: ... the question named the real caller" \
    "$(audit_count 'g(r,"event.action")=="permission" and g(r,"isolate.caller.app")=="hostile"')" 1
is "$MODE: ... and beta never started" \
    "$(audit_count 'g(r,"event.action")=="spoke-start" and g(r,"isolate.app")=="beta"')" 0

# ---- hostile spokes: contained, audited, and the hub answers the next call ----
hostile_case() { # NAME TOOL ARGS REASON-REGEX [OPTIONS...]
    local name=$1 tool=$2 args=$3 reason=$4
    shift 4
    : >"$AUDIT"
    local t0 t1 out
    t0=$(date +%s%N)
    out=$(hubc "$@" "hostile.$tool" "$args" alpha.echo '{"text":"still here"}')
    t1=$(date +%s%N)
    local err
    err=$(echo "$out" | jlines 'd.get("error", {}).get("message", "")' | sed -n 1p)
    like "$MODE: $name is contained ($err)" "$err" "$reason"
    is "$MODE: $name: the hub answers the next call" \
        "$(echo "$out" | sed -n 2p | jget 'd["result"]["structuredContent"]["text"]')" "still here"
    is "$MODE: $name is audited" \
        "$(audit_count 'g(r,"event.action") in ("spoke-kill","spoke-exit") and g(r,"isolate.app")=="hostile" and g(r,"event.outcome") in ("success","failure") and (g(r,"event.action")=="spoke-exit" or g(r,"event.reason") not in ("shutdown","stop"))' | awk '{print ($1 > 0)}')" 1
    diag "$name took $(((t1 - t0) / 1000000)) ms"
    is "$MODE: $name leaves no process behind" "$(leftover_procs)" 0
}
hostile_case "garbage" garbage '{}' "malformed frame"
hostile_case "a frame that never ends (2 GiB)" huge '{}' "longer than 1048576 bytes"
# The deadline runs from the call, the spoke's start included: 5 s, so that on a busy
# machine the start cannot use it up ("timed out waiting for the spoke" instead).
hostile_case "a spoke that never answers" silent '{}' "missed its deadline of 5000 ms" --timeout 5000
hostile_case "exit mid-call" exit '{"code":3}' "status 3"
hostile_case "a notification flood" flood '{}' "too many"
hostile_case "an unsolicited response" unsolicited '{}' "never sent|not current"
is "$MODE: each attack was recorded with its reason" \
    "$(audit_count 'g(r,"event.action")=="spoke-kill" and g(r,"event.reason")=="protocol"')" 1

: >"$AUDIT"
out=$(hubc --timeout 20000 hostile.forkbomb '{"max":60}' hostile.whoami '{}')
forked=$(echo "$out" | sed -n 1p | jget 'd["result"]["structuredContent"]["forked"]')
if [ "$MODE" = none ]; then
    is "$MODE: the fork bomb is not limited (nothing is)" "$forked" 60
elif [ "$MODE" = process ]; then
    # Without a user namespace the spoke runs as root, which RLIMIT_NPROC does not bind:
    # the rlimit that SecGPT relies on does not stop it. Only the kill below contains it.
    is "$MODE: the fork bomb is not stopped by nproc (root ignores RLIMIT_NPROC)" "$forked" 60
else
    like "$MODE: the fork bomb stops at the nproc limit" "$forked" '^([0-9]|1[0-6])$'
fi
is "$MODE: after the fork bomb the hub answers" "$(echo "$out" | sed -n 2p | jget 'd["result"]["structuredContent"]["name"]')" hostile
is "$MODE: the fork bomb's children are gone with the hub" "$(leftover_procs)" 0

# ---- memory no rlimit sees (a memfd written, never mapped): the jail's cgroup ----
if [ "$MODE" = namespace ]; then
    $PY - <<PYEOF
import json
m = json.load(open("$SPOKES/hostile.json"))
m["name"] = "hostile_mem"
m["limits"]["memory_mb"] = 64
json.dump(m, open("$SPOKES/hostile_mem.json", "w"))
PYEOF
    : >"$AUDIT"
    hubc --timeout 10000 hostile_mem.memfd '{"mb":256}' >"$TMP/out" 2>"$TMP/err"
    like "$MODE: 256 MiB of memfd against memory_mb 64: the cgroup ends the spoke" \
        "$(cat "$TMP/err")" "\[cgroup\].*memory"
    is "$MODE: ... the exit record carries the reason memory" \
        "$(audit_count 'g(r,"event.action")=="spoke-exit" and g(r,"event.reason")=="memory"')" 1
    out=$(hubc hostile_mem.memfd '{"mb":8}')
    is "$MODE: ... below the limit the same tool works (the next call starts a fresh jail)" \
        "$(echo "$out" | jget 'd["structuredContent"]["held"]')" 8
fi

# ---- a hub killed with SIGKILL mid-call: its spokes end with it ----
# No clean shutdown can run: in none mode the kernel's parent-death signal ends the
# spoke, in the other modes nsjail-lite's monitor does.
"$BIN/hub" call --config "$CONF" --timeout 600000 hostile.silent '{}' >/dev/null 2>&1 &
killed_hub=$!
spoke_started() { [ "$(leftover_procs)" -ge 1 ]; }
if wait_for "$MODE: the hung call's spoke" 120 spoke_started; then
    kill -9 "$killed_hub"
    wait "$killed_hub" 2>/dev/null
    no_spoke_left() { [ "$(leftover_procs)" -eq 0 ]; }
    wait_for "$MODE: the killed hub's spoke to end" 60 no_spoke_left
    is "$MODE: a hub killed with SIGKILL leaves no spoke process behind" "$(leftover_procs)" 0
else
    kill -9 "$killed_hub"
    not_ok "$MODE: the hung call's spoke started"
fi

# ---- a hung spoke does not hold up the others ----
out=$(hubc --parallel --timeout 8000 hostile.silent '{}' alpha.echo '{"text":"fast"}')
first=$(echo "$out" | sed -n 1p | jget 'd["tool"]')
is "$MODE: while one spoke hangs another answers first" "$first" alpha.echo
ms=$(echo "$out" | sed -n 1p | jget 'd["duration_us"] // 1000')
check "$MODE: ... well before the hung call's deadline (${ms} ms)" test "$ms" -lt 6000

# ---- the LLM key is never in a spoke ----
marker="sk-itest-$$-$RANDOM"
out=$(OPENAI_API_KEY=$marker hubc alpha.env "{\"marker\":\"sk-itest-$$\"}")
is "$MODE: the LLM key is not in the spoke's environment" "$(echo "$out" | jget 'd["structuredContent"]["in_environ"]')" false
if [ -n "${ISOLATE_VALGRIND:-}" ]; then
    # Under valgrind /proc/PID/environ shows valgrind's copy of the start-up environment,
    # which the hub's scrub of its own (the client's) copy cannot reach.
    skip "$MODE: ... nor in any /proc/*/environ the spoke can read" "the hub runs under valgrind"
else
    is "$MODE: ... nor in any /proc/*/environ the spoke can read" "$(echo "$out" | jget 'd["structuredContent"]["proc_hits"]')" "[]"
fi
check "$MODE: ... (it could read some)" test "$(echo "$out" | jget 'd["structuredContent"]["proc_readable"]')" -gt 0
env_names=$(echo "$out" | jget '",".join(sorted(e.split("=")[0] for e in d["structuredContent"]["environ"]))')
unlike "$MODE: the hub's own environment is not passed on" "$env_names" "(^|,)(HOME=/root|USER|SHELL|OPENAI_API_KEY|TMP)(,|$)"
like "$MODE: the spoke gets its name and data dir" "$env_names" "SPOKE_DATA.*SPOKE_ID.*SPOKE_NAME"

# ---- hooks: elicitation and sampling ----
out=$(hubc alpha.ask '{}')
is "$MODE: elicitation without an answer declines" "$(echo "$out" | jget 'd["structuredContent"]["answer"]["action"]')" decline
cat >"$TMP/elicit.json" <<'EOF'
{"default": "deny", "elicitation": [{"app": "alpha", "action": "accept", "content": {"color": "blue"}}]}
EOF
out=$(hubc --answers "$TMP/elicit.json" alpha.ask '{}')
is "$MODE: a scripted elicitation answer reaches the spoke" "$(echo "$out" | jget 'd["structuredContent"]["answer"]["content"]["color"]')" blue
cat >"$TMP/elicit-bad.json" <<'EOF'
{"default": "deny", "elicitation": [{"app": "alpha", "action": "accept", "content": {"shade": 3}}]}
EOF
out=$(hubc --answers "$TMP/elicit-bad.json" alpha.ask '{}')
is "$MODE: an answer that misses requestedSchema is not delivered" "$(echo "$out" | jget 'd["structuredContent"]["ok"]')" false
out=$(hubc alpha.sample '{}')
is "$MODE: sampling without an LLM says so" "$(echo "$out" | jget 'd["structuredContent"]["message"]')" "no LLM configured"

# ---- per-spoke log ----
hubc alpha.log '{"text":"a line for the log"}' >/dev/null
check "$MODE: a spoke's stderr lands in its log" grep -q "a line for the log" "$RUN/spokes/tester/alpha.log"

# ---- no leaks over 200 start/stop cycles ----
: >"$AUDIT"
stats=$(hubc --repeat 200 --cold --stats alpha.echo '{"text":"cycle"}' 2>&1 >/dev/null | tail -1)
is "$MODE: 200 cold calls all answered" "$(echo "$stats" | jget 'd["ok"]')" 200
is "$MODE: ... no spoke process left in the hub" "$(echo "$stats" | jget 'd["procs_after"]')" 0
is "$MODE: ... no veth address or host uid left allocated" "$(echo "$stats" | jget 'd["slots_after"]')" 0
is "$MODE: ... no descriptor leaked" "$(echo "$stats" | jget 'd["fds_after"]')" "$(echo "$stats" | jget 'd["fds_before"]')"
is "$MODE: ... 200 starts audited" "$(audit_count 'g(r,"event.action")=="spoke-start" and g(r,"event.outcome")=="success"')" 200
is "$MODE: ... 200 exits audited" "$(audit_count 'g(r,"event.action")=="spoke-exit"')" 200
is "$MODE: ... and no process left on the machine" "$(leftover_procs)" 0

# ---- namespace mode: the network goes through netproxy, and only there ----
if [ "$MODE" = namespace ]; then
    # A stand-in HTTPS upstream on loopback with a certificate from a CA made now.
    test_cert www.allowed.example denied.example
    port=$(free_port)
    cat >"$TMP/upstream.py" <<PYEOF
import http.server, ssl
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = b"hello from the stand-in upstream"
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a):
        pass
srv = http.server.HTTPServer(("127.0.0.1", $port), H)
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain("$TMP/srv.pem", "$TMP/srv.key")
srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
srv.serve_forever()
PYEOF
    bg $PY "$TMP/upstream.py"
    wait_for "the stand-in upstream" 10 bash -c "echo >/dev/tcp/127.0.0.1/$port"
    # fetch may reach allowed.example only; netprobe is a second networked spoke.
    $PY - <<PYEOF
import json
m = json.load(open("$SPOKES/fetch.json"))
m["network"] = {"allow": ["allowed.example"], "ports": [$port]}
json.dump(m, open("$SPOKES/fetch.json", "w"))
m = json.load(open("$SPOKES/alpha.json"))
m["name"] = "netprobe"
m["network"] = {"allow": ["allowed.example"], "ports": [$port]}
json.dump(m, open("$SPOKES/netprobe.json", "w"))
PYEOF
    hub_config "{\"netproxy\": {\"binary\": \"$BIN/netproxy\", \"audit\": \"$PROXY_AUDIT\",
        \"resolve\": [\"www.allowed.example:$port:127.0.0.1\", \"denied.example:$port:127.0.0.1\"],
        \"upstream_allow_cidr\": [\"127.0.0.1/32\"], \"workers\": 2, \"ping_interval_ms\": 1000,
        \"refusal_rate\": 1, \"refusal_burst\": 1}}"
    mkdir -p "$DATA/tester/fetch" && chmod 711 "$DATA" "$DATA/tester"
    cp "$TMP/ca.pem" "$DATA/tester/fetch/ca.pem"
    : >"$AUDIT"
    out=$(hubc fetch.get "{\"url\":\"https://www.allowed.example:$port/\"}" \
        fetch.get "{\"url\":\"https://denied.example:$port/\"}" \
        netprobe.connect "{\"host\":\"$VETH_HOST1\",\"port\":3128}" \
        netprobe.connect "{\"host\":\"$VETH_HOST1\",\"port\":3128}" \
        netprobe.connect "{\"host\":\"$VETH_HOST2\",\"port\":3128}" \
        netprobe.connect "{\"host\":\"127.0.0.1\",\"port\":$port}" \
        alpha.connect "{\"host\":\"$VETH_HOST1\",\"port\":3128}")
    is "namespace: the allowed domain is reached through netproxy" \
        "$(echo "$out" | sed -n 1p | jget 'd["result"]["structuredContent"]["body"]')" "hello from the stand-in upstream"
    like "namespace: another domain gets 403 from netproxy" \
        "$(echo "$out" | sed -n 2p | jget 'd["result"]["content"][0]["text"]')" "proxy answered 403"
    # The gateway takes every connection a spoke makes (transparent egress): one aimed
    # at another spoke's listener lands on the spoke's own, which refuses it.
    check "namespace: a spoke aiming at another spoke's proxy listener is refused by its own" \
        test "$(audit_count '((g(r,"isolate.spoke") or "").startswith("netprobe-") and
            g(r,"destination.address")=="'"$VETH_HOST1"'" and
            g(r,"event.reason")=="ip-literal-not-allowed")' "$PROXY_AUDIT")" -ge 1
    check "namespace: ... and never used by it" \
        test "$(audit_count '((g(r,"isolate.spoke") or "").startswith("netprobe-") and
            g(r,"event.action")=="connect" and g(r,"event.outcome")=="success")' "$PROXY_AUDIT")" -eq 0
    is "namespace: ... while its own answers (control)" \
        "$(echo "$out" | sed -n 5p | jget 'd["result"]["structuredContent"]["ok"]')" true
    is "namespace: a spoke cannot reach the host's loopback" \
        "$(echo "$out" | sed -n 6p | jget 'd["result"]["structuredContent"]["ok"]')" false
    is "namespace: a spoke without network reaches nothing" \
        "$(echo "$out" | sed -n 7p | jget 'd["result"]["structuredContent"]["ok"]')" false
    # hub.json's refusal budget (1 record, then 1 a second) reached netproxy: the
    # netprobe spoke's second refusal toward the same listener, right after the first,
    # is counted in a summary, not recorded (netproxy's default burst, 2,000, would
    # record both).
    check "namespace: netproxy.refusal_burst reached netproxy: one refusal of the two on record" \
        test "$(audit_count '((g(r,"isolate.spoke") or "").startswith("netprobe-") and
            g(r,"destination.address")=="'"$VETH_HOST1"'" and
            g(r,"event.reason")=="ip-literal-not-allowed")' "$PROXY_AUDIT")" -eq 1
    check "namespace: ... and the other counted in its refusal-summary" \
        test "$(audit_count '((g(r,"isolate.spoke") or "").startswith("netprobe-") and
            g(r,"event.action")=="refusal-summary")' "$PROXY_AUDIT")" -ge 1
    check "namespace: netproxy wrote a denial for denied.example" grep -q '"denied.example"' "$PROXY_AUDIT"
    like "namespace: netproxy.workers reached netproxy (it says so when ready)" \
        "$(cat "$RUN/netproxy.log")" 'ready: hub mode, 2 workers'
    check "namespace: ... and the hub audits its start with them" \
        test "$(audit_count 'g(r,"event.action")=="netproxy-start" and g(r,"isolate.netproxy.workers")==2')" -ge 1
    out=$(hubc --answers allow notes.clip "{\"title\":\"clipped\",\"url\":\"https://www.allowed.example:$port/\"}" \
        notes.get '{"title":"clipped"}')
    is "namespace: notes.clip fetches through fetch.get via the hub (no network of its own)" \
        "$(echo "$out" | sed -n 2p | jget 'd["result"]["structuredContent"]["text"]')" "hello from the stand-in upstream"
    out=$(MODE=none; hubc --isolation none alpha.connect "{\"host\":\"127.0.0.1\",\"port\":$port}")
    is "none: the same spoke reaches the host's loopback (control)" \
        "$(echo "$out" | jget 'd["structuredContent"]["ok"]')" true
    is "namespace: no hub veth in the host namespace" "$(host_veths)" 0
    refute "namespace: the gateway namespace is gone with the hub" test -e "/run/netns/$GW_NS"
    check "namespace: the proxy address was audited with the spoke's start" \
        test "$(audit_count 'g(r,"event.action")=="spoke-start" and g(r,"isolate.proxy.address")=="'"$VETH_HOST1"'"')" -ge 1
fi

# ---- a CPU hog: the rlimit (process, namespace) or the deadline (none) ends it ----
$PY - <<PYEOF
import json
m = json.load(open("$SPOKES/hostile.json"))
m["name"] = "hostile_cpu"
m["limits"]["cpu_s"] = 1
json.dump(m, open("$SPOKES/hostile_cpu.json", "w"))
PYEOF
: >"$AUDIT"
# The rlimit counts CPU time, which a busy machine hands out slowly: the deadline that
# must not come first is a generous one (none mode has no rlimit, only the deadline).
hubc --timeout "$([ "$MODE" = none ] && echo 2000 || echo 120000)" hostile_cpu.spin '{}' \
    >/dev/null 2>"$TMP/err"
if [ "$MODE" = none ]; then
    like "$MODE: a CPU hog runs until its deadline (no rlimit in none mode)" "$(cat "$TMP/err")" "\[deadline\].*missed its deadline"
else
    like "$MODE: a CPU hog is ended by RLIMIT_CPU, and the caller is told" "$(cat "$TMP/err")" "\[rlimit\].*rlimit-cpu"
    is "$MODE: ... the exit record carries nsjail-lite's reason" \
        "$(audit_count 'g(r,"event.action")=="spoke-exit" and g(r,"event.reason")=="rlimit-cpu"')" 1
fi
