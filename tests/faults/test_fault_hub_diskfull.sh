#!/usr/bin/env bash
# Fault: the disk under the hub's own audit log fills up. A decision that lets
# something happen must be on record before it happens, so while the log cannot be
# written the hub refuses (error layer "audit", code -32007) rather than run unlogged:
#   - a tool call (`hub call`, no permission asked) in none, process and namespace
#     modes: the tool does not run, its spoke is not even started;
#   - an isolate/call between spokes (waiter -> beta, collab allowed by --answers):
#     the caller gets the audit error, beta never starts;
#   - the relay of a result (waiter -> holder): holder ran and returned a secret, the
#     decision to hand it to waiter cannot be written: waiter gets the audit error and
#     not the secret;
#   - the assistant's data permission (a plan step whose argument is holder's result,
#     for beta): holder ran, the permission cannot be written: that step fails at the
#     audit layer and beta never gets the secret;
#   - an elicitation answer (holder asks once the disk is full): holder gets the audit
#     error and not the answer;
#   - a repl-server run in an existing session and in a new one: an error response,
#     the code does not run, the session and the server live on.
# The hub says so once on stderr (not per record) and does not crash. Once space is
# back the same actions run with no restart of anything in between for the server,
# and the log is whole JSON lines holding their records.
#
# The log lives on a 64 KiB tmpfs in a mount namespace of its own, held by a process
# that dies with this test (so the mount cannot outlive it); every hub runs in that
# namespace (nsenter), and the test reaches the tmpfs through /proc/HOLDER/root.
. "$(dirname "$0")/../lib.sh"
require_root
MODE=process
. "$ROOT/tests/hub/hub_lib.sh"
# waiter first: hub_setup adapts every manifest there to a sanitizer build.
mkdir -p "$SPOKES" "$BINDIR"
cp "$ROOT/tests/faults/manifests/waiter.json" "$ROOT/tests/faults/manifests/holder.json" "$SPOKES/"
cp "$BIN/tests/faults/waitspoke" "$BINDIR/"
hub_setup
# The code app for the repl-server, its profile named absolutely (as pyexec_lib does).
$PY -c 'import json,sys
m = json.load(open(sys.argv[1])); m["profile"] = sys.argv[2]; json.dump(m, open(sys.argv[1], "w"))' \
    "$SPOKES/code.json" "$ROOT/config/profiles/python.json"
at_exit "ip netns del $GW_NS; rm -f /run/netns/$GW_NS" # only if the hub failed to

MNT=$TMP/logdisk
mkdir -p "$MNT"
unshare --mount --propagation private sh -c \
    'mount -t tmpfs -o size=64k,mode=0755 itest-fault-hubdisk "$0" && exec setpriv --pdeathsig KILL sleep 300' \
    "$MNT" &
HOLDER=$!
at_exit "kill -9 $HOLDER; wait $HOLDER"
mounted() { grep -q " $MNT " "/proc/$HOLDER/mountinfo"; }
if ! wait_for "the log's tmpfs" 10 mounted; then
    not_ok "a private tmpfs for the audit log"
    exit 1
fi
DISK=/proc/$HOLDER/root$MNT # the tmpfs, seen from here
AUDIT=$DISK/audit.jsonl     # for audit_count
SAVED=$TMP/audit-before.jsonl
: >"$SAVED"
check "the audit disk is private to the hub's mount namespace" test ! -e "$MNT/audit.jsonl" -a -d "$DISK"

# Run in the log's namespace. nsenter execs the program (no fork for a mount
# namespace): started with & directly, not from a function (a subshell), $! is the hub.
INNS=(nsenter "--mount=/proc/$HOLDER/ns/mnt" --)
hubc_ns() { "${INNS[@]}" "$BIN/hub" call --config "$CONF" "$@"; }
config() { # MODE USER
    hub_config "{\"isolation\": \"$1\", \"user\": \"$2\", \"audit\": \"$MNT/audit.jsonl\"}"
}
# fill_disk: the log so far is moved aside (tmpfs counts whole pages, so a record may
# still fit in the last page of a log that has anything in it: emptied, the next
# record needs a page of its own), then every free page goes to a filler.
# fill_disk [PID]: PID, a hub running meanwhile, is stopped while the log is moved and the
# disk filled: a record it wrote in between would take a page of its own whose slack
# then took the records the test expects refused (a false failure, in half the runs of
# the sanitizer build).
fill_disk() {
    [ -n "${1:-}" ] && kill -STOP "$1"
    [ -f "$AUDIT" ] && cat "$AUDIT" >>"$SAVED"
    : >"$AUDIT"
    dd if=/dev/zero of="$DISK/filler" bs=4k >/dev/null 2>&1
    local full=$(stat -f -c %a "$DISK")
    [ -n "${1:-}" ] && kill -CONT "$1"
    [ "$full" = 0 ]
}
free_disk() { rm -f "$DISK/filler"; }
# whole_lines: the log's lines (moved aside and current) are all JSON objects and the
# file ends with a newline: prints "ok" or what is wrong.
whole_lines() {
    $PY - "$SAVED" "$AUDIT" <<'EOF'
import json, sys
bad = []
for path in sys.argv[1:]:
    data = open(path, "rb").read()
    if data and not data.endswith(b"\n"):
        bad.append("%s does not end with a newline" % path)
    for line in data.split(b"\n")[:-1] if data else []:
        try:
            assert isinstance(json.loads(line), dict)
        except Exception:
            bad.append(line[:100].decode(errors="replace"))
print("ok" if not bad else "; ".join(bad))
EOF
}
said_once() { [ "$(grep -c 'cannot be written' "$1")" = 1 ] && grep -q 'No space left on device' "$1"; }
# refused_out LABEL DESC ACTION: $TMP/out holds a result refused at the audit layer
# (ok false, code -32007, "refusing to ACTION unlogged"; ACTION is a regex).
refused_out() {
    is "$1: $2" "$(jget 'd["structuredContent"]["ok"]' <"$TMP/out")" false
    is "$1: ... with code -32007" "$(jget 'd["structuredContent"]["code"]' <"$TMP/out")" -32007
    like "$1: ... saying why" "$(jget 'd["structuredContent"]["message"]' <"$TMP/out")" \
        "cannot be written \(No space left on device\); refusing to $3 unlogged"
}

# ---- a tool call, in each isolation mode ----------------------------------------------
for mode in none process namespace; do
    u=u$mode
    config "$mode" "$u"
    check "$mode: the disk is full" fill_disk
    rc=0
    hubc_ns alpha.write "{\"name\": \"marker\", \"text\": \"ran\"}" alpha.whoami '{}' \
        >"$TMP/out" 2>"$TMP/err" || rc=$?
    is "$mode, disk full: hub call exits 3 (refused; not a crash)" "$rc" 3
    first=$(sed -n 1p "$TMP/out")
    is "$mode: the call is refused at the audit layer" \
        "$(echo "$first" | jget 'd["error"]["layer"]')" audit
    is "$mode: ... with code -32007" "$(echo "$first" | jget 'd["error"]["code"]')" -32007
    like "$mode: ... saying why" "$(echo "$first" | jget 'd["error"]["message"]')" \
        "^the audit log $MNT/audit.jsonl cannot be written \(No space left on device\); refusing to run alpha\.write unlogged$"
    is "$mode: the second call too" "$(sed -n 2p "$TMP/out" | jget 'd["error"]["layer"]')" audit
    check "$mode: the tool did not run (no marker)" test ! -e "$DATA/$u/alpha/marker"
    check "$mode: the spoke was not even started (no data dir, no spoke log)" \
        test ! -e "$DATA/$u/alpha" -a ! -e "$RUN/spokes/$u/alpha.log"
    check "$mode: the hub said so once on stderr, not per record" said_once "$TMP/err"
    like "$mode: ... and how many records were lost" "$(cat "$TMP/err")" \
        "the last [0-9]+ records could not be written"

    free_disk
    rc=0
    hubc_ns alpha.write "{\"name\": \"marker\", \"text\": \"ran\"}" >"$TMP/out" 2>"$TMP/err" || rc=$?
    is "$mode, space again: the call runs" "$rc" 0
    is "$mode: ... and the tool did its work" "$(cat "$DATA/$u/alpha/marker" 2>/dev/null)" ran
    is "$mode: ... nothing said about the log" "$(grep -c 'audit log' "$TMP/err")" 0
    q="g(r,'isolate.user')=='$u' and g(r,'isolate.app')=='alpha' and g(r,'isolate.tool')=='write'"
    is "$mode: its start is on record" "$(audit_count "g(r,'event.action')=='tool-call-start' and $q")" 1
    is "$mode: ... and its end" \
        "$(audit_count "g(r,'event.action')=='tool-call' and g(r,'event.outcome')=='success' and $q")" 1
    is "$mode: the log is whole JSON lines" "$(whole_lines)" ok
done

# ---- an isolate/call between spokes ---------------------------------------------------
u=ucollab
config process "$u"
relay='{"file": "go", "tool": "beta.write", "arguments": {"name": "marker", "text": "ran"}}'
"${INNS[@]}" "$BIN/hub" call --config "$CONF" --answers allow waiter.relay_when "$relay" \
    >"$TMP/out" 2>"$TMP/err" &
hub_pid=$!
at_exit "kill -9 $hub_pid"
waiting() { [ "$(audit_count "g(r,'event.action')=='spoke-start' and g(r,'event.outcome')=='success' and g(r,'isolate.app')=='waiter'")" = 1 ]; }
if wait_for "the waiter's spoke" 20 waiting; then
    check "collab: the disk is full while waiter's call runs" fill_disk "$hub_pid"
    touch "$DATA/$u/waiter/go" # waiter makes its isolate/call now
    rc=0
    wait $hub_pid || rc=$?
    is "collab, disk full: waiter's own call completes (exit 0; no crash)" "$rc" 0
    refused_out collab "waiter's isolate/call was refused" "run beta\.write for waiter"
    check "collab: beta did not run (no marker)" test ! -e "$DATA/$u/beta/marker"
    check "collab: beta was not even started" test ! -e "$DATA/$u/beta"
    check "collab: the hub said so once on stderr" said_once "$TMP/err"
else
    not_ok "collab: waiter started: $(cat "$TMP/err")"
    kill -9 $hub_pid
fi
free_disk
rc=0
hubc_ns --answers allow waiter.relay_when "$relay" >"$TMP/out" 2>"$TMP/err" || rc=$?
is "collab, space again: the isolate/call runs" "$(jget 'd["structuredContent"]["ok"]' <"$TMP/out")" true
is "collab: ... and beta did its work" "$(cat "$DATA/$u/beta/marker" 2>/dev/null)" ran
is "collab: the decision is on record" \
    "$(audit_count "g(r,'event.action')=='permission' and g(r,'isolate.permission.category')=='collab' and g(r,'event.outcome')=='success' and g(r,'isolate.app')=='beta'")" 2
is "collab: ... and beta's start, as a call whose parent is waiter's" \
    "$(audit_count "g(r,'event.action')=='tool-call-start' and g(r,'isolate.app')=='beta' and g(r,'isolate.caller.app')=='waiter' and g(r,'isolate.call.parent')")" 1
is "collab: the log is whole JSON lines" "$(whole_lines)" ok

# ---- the relay of a result between spokes -----------------------------------------------
# waiter calls holder (both decisions allowed); holder starts its call while the disk has
# room, the disk fills, then holder returns a secret: the decision to hand it back to
# waiter cannot be written, so waiter gets the audit error and never the secret.
u=urelay
config process "$u"
SECRET=relay-secret-$$
give="{\"file\": \"go\", \"tool\": \"holder.give_when\", \"arguments\": {\"file\": \"go\", \"text\": \"$SECRET\"}}"
"${INNS[@]}" "$BIN/hub" call --config "$CONF" --answers allow waiter.relay_when "$give" \
    >"$TMP/out" 2>"$TMP/err" &
hub_pid=$!
at_exit "kill -9 $hub_pid"
started() { [ "$(audit_count "g(r,'event.action')=='$1' and g(r,'isolate.user')=='$u' and g(r,'isolate.app')=='$2'")" = 1 ]; }
if wait_for "the waiter's spoke" 20 started spoke-start waiter && touch "$DATA/$u/waiter/go" &&
    wait_for "holder's call" 20 started tool-call-start holder; then
    check "relay: the disk is full while holder's call runs" fill_disk "$hub_pid"
    touch "$DATA/$u/holder/go" # holder returns the secret now
    rc=0
    wait $hub_pid || rc=$?
    is "relay, disk full: waiter's own call completes (exit 0; no crash)" "$rc" 0
    is "relay: holder ran and gave its result" "$(cat "$DATA/$u/holder/gave" 2>/dev/null)" "$SECRET"
    refused_out relay "waiter's isolate/call was refused" "relay the result of holder\.give_when to waiter"
    is "relay: holder's result did not reach waiter" "$(grep -c "$SECRET" "$TMP/out")" 0
    check "relay: the hub said so once on stderr" said_once "$TMP/err"
else
    not_ok "relay: waiter and holder started: $(cat "$TMP/err")"
    kill -9 $hub_pid
fi
free_disk
rm -f "$DATA/$u/holder/gave"
rc=0
hubc_ns --answers allow waiter.relay_when "$give" >"$TMP/out" 2>"$TMP/err" || rc=$?
is "relay, space again: the result is relayed" \
    "$(jget 'd["structuredContent"]["result"]["structuredContent"]["text"]' <"$TMP/out")" "$SECRET"
is "relay: the decision is on record" \
    "$(audit_count "g(r,'event.action')=='permission' and g(r,'isolate.permission.category')=='collab' and g(r,'isolate.permission.stage')=='relay' and g(r,'event.outcome')=='success' and g(r,'isolate.app')=='holder'")" 1
is "relay: the log is whole JSON lines" "$(whole_lines)" ok

# ---- the assistant's data permission ---------------------------------------------------
# A plan (from a stand-in LLM) whose second step gets the first one's result: holder's
# secret would go to beta.write. holder's step starts while the disk has room, the disk
# fills, holder returns: the permission to share its result with beta cannot be written,
# so that step fails at the audit layer and beta never gets the secret.
u=uagent
hub_config "{\"isolation\": \"process\", \"user\": \"$u\", \"audit\": \"$MNT/audit.jsonl\",
    \"llm\": {\"api_key_env\": \"OPENAI_API_KEY\", \"model\": \"standin-model\", \"timeout_ms\": 5000}}"
SECRET=data-secret-$$
$PY - "$TMP/standin.json" "$SECRET" <<'EOF2'
import json, sys
def answer(content):
    return {"json": {"id": "c", "object": "chat.completion", "model": "standin-model",
                     "choices": [{"index": 0, "finish_reason": "stop",
                                  "message": {"role": "assistant", "content": content}}],
                     "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}}
plan = json.dumps({"steps": [
    {"id": "s1", "tool": "holder.give_when", "arguments": {"file": "go", "text": sys.argv[2]}},
    {"id": "s2", "tool": "beta.write", "arguments": {"name": "got", "text": {"$ref": "s1.text"}}}]})
json.dump({"responses": [answer(plan), answer("done"), answer(plan), answer("done")]},
          open(sys.argv[1], "w"))
EOF2
"$BIN/tests/llm/openai_standin" --script "$TMP/standin.json" --log "$TMP/standin.log" \
    >"$TMP/standin.port" &
at_exit "kill $!; wait $!"
wait_for "the stand-in's port" 5 test -s "$TMP/standin.port"
LLM=http://127.0.0.1:$(head -n1 "$TMP/standin.port")/v1
assist() { "${INNS[@]}" "$BIN/hub" --config "$CONF" --llm "$LLM" --json --memory none --answers allow; }
echo "keep my secret at beta" | assist >"$TMP/out" 2>"$TMP/err" &
hub_pid=$!
at_exit "kill -9 $hub_pid"
if wait_for "holder's step" 20 started tool-call-start holder; then
    check "data: the disk is full while holder's step runs" fill_disk "$hub_pid"
    touch "$DATA/$u/holder/go" # holder returns the secret now
    rc=0
    wait $hub_pid || rc=$?
    # Its final answer's LLM call cannot be recorded either: the request is unanswered.
    is "data, disk full: the assistant exits 1 (a request unanswered; not a crash)" "$rc" 1
    is "data: holder's step ran" "$(jget 'd["calls"][0]["outcome"]' <"$TMP/out")" ok
    is "data: beta's step failed at the audit layer" \
        "$(jget 'd["calls"][1]["outcome"]+"/"+d["calls"][1]["layer"]' <"$TMP/out")" failed/audit
    like "data: ... saying why" "$(jget 'd["calls"][1]["error"]' <"$TMP/out")" \
        "cannot be written \(No space left on device\); refusing to share data with beta\.write unlogged"
    check "data: beta did not get the secret (not even started)" test ! -e "$DATA/$u/beta"
    check "data: the hub said so once on stderr" said_once "$TMP/err"
else
    not_ok "data: holder's step started: $(cat "$TMP/err")"
    kill -9 $hub_pid
fi
free_disk
rc=0
echo "keep my secret at beta" | assist >"$TMP/out" 2>"$TMP/err" || rc=$?
is "data, space again: both steps run" "$(jget '[c["outcome"] for c in d["calls"]]' <"$TMP/out")" '["ok", "ok"]'
is "data: ... and beta got the secret" "$(cat "$DATA/$u/beta/got" 2>/dev/null)" "$SECRET"
is "data: the permission is on record" \
    "$(audit_count "g(r,'event.action')=='permission' and g(r,'isolate.permission.category')=='data' and g(r,'event.outcome')=='success' and g(r,'isolate.caller.app')=='holder' and g(r,'isolate.app')=='beta'")" 1
is "data: the log is whole JSON lines" "$(whole_lines)" ok

# ---- an elicitation answer ----------------------------------------------------------------
# holder's call starts while the disk has room, the disk fills, then holder asks the user:
# the answer (scripted by --answers) cannot be put on record, so holder never gets it.
u=uelicit
config process "$u"
SECRET=elicit-secret-$$
cat >"$TMP/elicit.json" <<EOF2
{"default": "allow", "elicitation": [{"app": "holder", "action": "accept", "content": {"secret": "$SECRET"}}]}
EOF2
"${INNS[@]}" "$BIN/hub" call --config "$CONF" --answers "$TMP/elicit.json" holder.ask_when \
    '{"file": "go"}' >"$TMP/out" 2>"$TMP/err" &
hub_pid=$!
at_exit "kill -9 $hub_pid"
if wait_for "holder's call" 20 started spoke-start holder; then
    check "elicit: the disk is full while holder's call runs" fill_disk "$hub_pid"
    touch "$DATA/$u/holder/go" # holder asks now
    rc=0
    wait $hub_pid || rc=$?
    is "elicit, disk full: holder's call completes (exit 0; no crash)" "$rc" 0
    refused_out elicit "the answer was withheld" "hand the user's answer to holder"
    is "elicit: the answer did not reach holder" "$(grep -c "$SECRET" "$TMP/out")" 0
    check "elicit: the hub said so once on stderr" said_once "$TMP/err"
else
    not_ok "elicit: holder started: $(cat "$TMP/err")"
    kill -9 $hub_pid
fi
free_disk
hubc_ns --answers "$TMP/elicit.json" holder.ask_when '{"file": "go"}' >"$TMP/out" 2>"$TMP/err"
is "elicit, space again: the answer reaches holder" \
    "$(jget 'd["structuredContent"]["answer"]["content"]["secret"]' <"$TMP/out")" "$SECRET"
is "elicit: it is on record" \
    "$(audit_count "g(r,'event.action')=='elicitation' and g(r,'event.outcome')=='success' and g(r,'isolate.app')=='holder'")" 1
is "elicit: the log is whole JSON lines" "$(whole_lines)" ok

# ---- the repl-server ------------------------------------------------------------------
config process urepl
out=$TMP/server.out
"${INNS[@]}" "$BIN/hub" repl-server --config "$CONF" --listen 127.0.0.1:0 --pool 0 \
    >"$out" 2>"$TMP/server.err" &
SRV_PID=$!
at_exit "kill -9 $SRV_PID; wait $SRV_PID"
port() { sed -n 's/^repl-server: listening on 127.0.0.1:\([0-9]*\) .*/\1/p' "$out"; }
listening() { [ -n "$(port)" ]; }
wait_for "the repl-server" 10 listening
PORT=$(port)
repl() { "$ROOT/scripts/repl-client" --server "127.0.0.1:$PORT" --json "$@"; }
marker='import os; open(os.environ["SPOKE_DATA"] + "/marker", "w").write("ran"); print("wrote")'
if [ -z "$PORT" ]; then
    not_ok "repl: the server listens: $(cat "$TMP/server.err")"
else
    first=$(repl 'x = 41' 2>/dev/null)
    is "repl: a run while the disk has room" "$(echo "$first" | jget 'd["status"]')" ok
    sid=$(echo "$first" | jget 'd["session_id"]')
    check "repl: the disk is full" fill_disk "$SRV_PID"
    resp=$(repl --session "$sid" "$marker" 2>/dev/null)
    is "repl, disk full: the run in the session is refused" "$(echo "$resp" | jget 'd["status"]')" error
    like "repl: ... saying why" "$(echo "$resp" | jget 'd["error"]')" \
        "cannot be written \(No space left on device\); refusing to run code\.run unlogged"
    is "repl: the code did not run" "$(find "$DATA/urepl" -name marker | wc -l)" 0
    resp=$(repl "$marker" 2>/dev/null)
    is "repl, disk full: a run in a new session is refused too" \
        "$(echo "$resp" | jget 'd["status"]')" error
    like "repl: ... saying why" "$(echo "$resp" | jget 'd["error"]')" "refusing to run code\.run unlogged"
    check "repl: the server is up" kill -0 "$SRV_PID"
    free_disk
    resp=$(repl --session "$sid" "$marker"'; print(x + 1)' 2>/dev/null)
    is "repl, space again: the same session runs the code" "$(echo "$resp" | jget 'd["output"]')" \
        "wrote
42"
    is "repl: ... which did its work" "$(find "$DATA/urepl" -name marker | wc -l)" 1
    is "repl: the run is on record" \
        "$(audit_count "g(r,'event.action')=='repl-execute' and g(r,'event.outcome')=='success'")" 1
    kill -TERM "$SRV_PID"
    rc=0
    wait "$SRV_PID" || rc=$?
    is "repl: the server ends normally on SIGTERM" "$rc" 0
    check "repl: it said the outage once on stderr" said_once "$TMP/server.err"
    like "repl: ... and its end" "$(cat "$TMP/server.err")" \
        "is written again; [0-9]+ records could not be written"
fi
is "the log is whole JSON lines at the end" "$(whole_lines)" ok
is "no spoke process is left" "$(leftover_procs)" 0
done_testing
