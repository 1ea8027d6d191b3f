#!/usr/bin/env bash
# Any MCP server from npm, unchanged, as a spoke: the reference servers of
# tests/mcpservers/package.json (installed by `make deps` with npm ci) are added with
# `hub spokes add ... --yes` into a spokes directory of this test's own, and every tool
# of each is called through `hub call --isolation namespace`. Then, from the attacker's
# side: get-env shows none of the hub's secrets, the filesystem server (even one told it
# may use "/") reaches nothing of the host but its /data, a wrapper that changes one
# tool description after pinning is refused with the diff (at start and through
# list_changed), and a hostile Node program is contained.
. "$(dirname "$0")/../lib.sh"
require_root
PY=/usr/bin/python3
MODS=$ROOT/tests/mcpservers/node_modules
MCP=$MODS/@modelcontextprotocol
if ! command -v node >/dev/null || [ ! -d "$MCP/server-everything" ]; then
    skip "$TEST_NAME" "node or the reference servers are missing (make deps)"
    exit 0
fi

SPOKES=$TMP/spokes
DATA=$TMP/data
AUDIT=$TMP/audit.jsonl
CONF=$TMP/hub.json
SECRET=sk-itest-mcpservers-$$-do-not-leak
HOST_ID_BASE=$((1500000 + ($$ % 4000) * 64))
mkdir -p "$SPOKES"
$PY - <<EOF
import json
json.dump({
    "isolation": "namespace", "user": "tester", "spokes_dir": "$SPOKES",
    "profile": "$ROOT/config/profiles/spoke.json", "data_root": "$DATA",
    "run_dir": "$TMP/run", "audit": "$AUDIT", "call_timeout_ms": 60000,
    "start_timeout_ms": 60000,
    "network": {"veth_pool": "169.254.136.0/22", "gateway_netns": "itest-mcp-$$",
                "proxy_port": 3128, "host_id_base": $HOST_ID_BASE, "host_id_count": 64},
    "netproxy": {"binary": "$BIN/netproxy", "audit": "$TMP/netproxy.jsonl"},
    "llm": {"api_key_env": "OPENAI_API_KEY"},
}, open("$CONF", "w"), indent=1)
json.dump({"default": "deny", "elicitation": [
    {"app": "everything", "action": "accept", "content": {"name": "Ada Lovelace", "check": True}}]},
    open("$TMP/answers.json", "w"))
EOF
# The hub holds a secret in its environment, as it would an LLM key.
export OPENAI_API_KEY=$SECRET
hub() { "$BIN/hub" "$@"; }

# ---- hub spokes add, each server as npm installed it ----
add() {
    local name=$1; shift
    hub spokes add "$name" --config "$CONF" --yes "$@" >"$TMP/add.$name" 2>&1
}
add memory --env MEMORY_FILE_PATH=/data/memory.jsonl -- "$MODS/.bin/mcp-server-memory"
is "spokes add memory (npm's .bin link) exits 0" "$?" 0
add everything -- "$MODS/.bin/mcp-server-everything"
is "spokes add everything exits 0" "$?" 0
add sequential_thinking -- node "$MCP/server-sequential-thinking/dist/index.js"
is "spokes add sequential_thinking (node SCRIPT) exits 0" "$?" 0
add filesystem -- "$MODS/.bin/mcp-server-filesystem" /data
is "spokes add filesystem exits 0" "$?" 0
[ -s "$TMP/add.filesystem" ] && grep -q "cannot be pinned" "$TMP/add.filesystem" &&
    diag "$(cat "$TMP/add.filesystem" | tail -1)"
# A clone under /tmp has its code bound at /opt/spoke-code/N/node_modules (the jail's
# /tmp is its own), elsewhere at its own path.
case $(realpath "$MODS") in
/tmp/*) code_at=" at /opt/spoke-code/0/node_modules" ;;
*) code_at="" ;;
esac
like "add says what it binds for the server's code" "$(cat "$TMP/add.memory")" \
    "binds read-only: $MODS$code_at \\(the server's code\\)"
like "add shows each tool with its irreversible guess" "$(cat "$TMP/add.memory")" \
    "delete_entities: irreversible \\(destructiveHint\\)"$'\n'" +title: Delete Entities"
like "... readOnlyHint tools are reversible" "$(cat "$TMP/add.memory")" \
    "read_graph: reversible \\(readOnlyHint\\)"$'\n'" +title: Read Graph"
pinned=$($PY -c 'import json,sys; m=json.load(open(sys.argv[1])); t=m["tools"][0]
print(m["runtime"], m["command"][0], len(m["tools"]), sorted(t.keys()))' "$SPOKES/memory.json" 2>&1)
is "the manifest pins the tool objects as sent, plus irreversible" "$pinned" \
    "node node 9 ['annotations', 'description', 'execution', 'inputSchema', 'irreversible', 'name', 'outputSchema', 'title']"
is "spokes verify: every server still lists what is pinned" \
    "$(hub spokes verify --config "$CONF" 2>&1 | grep -c ': ok, the server lists')" \
    "$(ls "$SPOKES" | wc -l)"

# ---- every tool of each server, one hub per server ----
# calls_for SERVER: the APP.TOOL 'JSON' pairs of calls.json, one per line pair.
run_calls() {
    local server=$1
    mapfile -t pairs < <($PY -c 'import json,sys
for tool, args in json.load(open(sys.argv[1]))[sys.argv[2]]:
    print(sys.argv[2] + "." + tool); print(json.dumps(args))' \
        "$ROOT/tests/mcpservers/calls.json" "$server")
    hub call --config "$CONF" --isolation namespace --answers "$TMP/answers.json" "${pairs[@]}" \
        >"$TMP/calls.$server" 2>"$TMP/calls.$server.err"
}
# outcome SERVER TOOL: ok, isError or error:LAYER of one envelope (a single call prints
# its result alone).
outcome() {
    $PY -c 'import json,sys
for l in open(sys.argv[1]):
    e = json.loads(l)
    if "tool" not in e:
        e = {"tool": sys.argv[2], "result": e}
    if e["tool"] == sys.argv[2]:
        print("error:" + e["error"]["layer"] if "error" in e else
              "isError" if e["result"].get("isError") else "ok")' "$TMP/calls.$1" "$1.$2"
}
result() {
    $PY -c 'import json,sys
for l in open(sys.argv[1]):
    e = json.loads(l)
    if "tool" not in e:
        e = {"tool": sys.argv[2], "result": e}
    if e["tool"] == sys.argv[2]:
        print(json.dumps(e.get("result", e.get("error"))))' "$TMP/calls.$1" "$1.$2"
}
for server in memory sequential_thinking everything filesystem; do
    [ -f "$SPOKES/$server.json" ] || { not_ok "$server: not added, its tools not called"; continue; }
    run_calls "$server"
    mapfile -t tools < <($PY -c 'import json,sys
for tool, _ in json.load(open(sys.argv[1]))[sys.argv[2]]: print(tool)' \
        "$ROOT/tests/mcpservers/calls.json" "$server")
    for tool in "${tools[@]}"; do
        case "$server.$tool" in
        everything.trigger-sampling-request)
            # The hub's sampling hook answered (no LLM in this test): the spoke got its
            # error, the hook's own, and said so.
            like "$server.$tool reached the hub's sampling hook" "$(result "$server" "$tool")" \
                'no LLM configured' ;;
        everything.simulate-research-query)
            # It requires MCP tasks (execution.taskSupport "required"), which the hub
            # does not speak: the server's own refusal comes back as a tool error.
            is "$server.$tool (task-only) answers a clean tool error" "$(outcome "$server" "$tool")" \
                isError ;;
        *)
            got=$(outcome "$server" "$tool")
            is "$server.$tool through the hub in namespace mode: a valid result" "$got" ok
            [ "$got" = ok ] || diag "$server.$tool: $(result "$server" "$tool" | head -c 400)" ;;
        esac
    done
done

# ---- what the servers did, seen from outside ----
like "elicitation reached the hub's hook (the scripted answer came back)" \
    "$(result everything trigger-elicitation-request)" 'Name: Ada Lovelace'
is "... and is on record" "$(audit_count 'r["event"]["action"] == "elicitation" and g(r, "isolate.app") == "everything"')" 1
is "sampling is on record" "$(audit_count 'r["event"]["action"] == "sampling" and g(r, "isolate.app") == "everything"')" 1
like "progress notifications are shown by hub call on stderr" "$(cat "$TMP/calls.everything.err")" \
    'hub: everything.trigger-long-running-operation: progress 2/2'
like "... and log messages" "$(cat "$TMP/calls.everything.err")" \
    'hub: everything.toggle-simulated-logging: log [a-z]+: '
is "... and audited, with the call" \
    "$(audit_count 'r["event"]["action"] == "spoke-progress" and g(r, "isolate.tool") == "trigger-long-running-operation"')" 2
env_keys=$(result everything get-env | $PY -c 'import json,sys
r = json.load(sys.stdin); print(" ".join(sorted(json.loads(r["content"][0]["text"]))))')
is "get-env shows only the environment the hub built" "$env_keys" \
    "HOME LANG PATH SPOKE_DATA SPOKE_ID SPOKE_NAME TMPDIR"
unlike "... and none of the hub's secrets" "$(result everything get-env)" "$SECRET|OPENAI"
[ -f "$DATA/tester/filesystem/d/b.txt" ] && got=$(cat "$DATA/tester/filesystem/d/b.txt") || got=missing
is "the filesystem server's writes land in its /data on the host" "$got" "$(printf 'alpha\ngamma')"
is "memory's MEMORY_FILE_PATH in its /data on the host" \
    "$(grep -c '"alice"' "$DATA/tester/memory/memory.jsonl" 2>/dev/null)" 1

# ---- the read-only MCP requests ----
req() { hub call --config "$CONF" "$@" 2>&1; }
like "resources/list" "$(req everything.resources/list '{}')" '"uri":"demo://resource/static/document/'
like "resources/templates/list" "$(req everything.resources/templates/list '{}')" \
    '"uriTemplate":"demo://resource/dynamic/text/\{resourceId\}"'
like "resources/read" "$(req everything.resources/read '{"uri":"demo://resource/dynamic/text/1"}')" \
    '"text":"Resource 1: '
like "prompts/list" "$(req everything.prompts/list '{}')" '"name":"args-prompt"'
like "prompts/get (an embedded resource in a message)" \
    "$(req everything.prompts/get '{"name":"resource-prompt","arguments":{"resourceType":"Text","resourceId":"1"}}')" \
    '"type":"resource"'
like "completion/complete" \
    "$(req everything.completion/complete '{"ref":{"type":"ref/prompt","name":"completable-prompt"},"argument":{"name":"department","value":"E"}}')" \
    '"values":\["Engineering"\]'
out=$(req sequential_thinking.resources/list '{}'); rc=$?
is "a server without resources is not asked (exit 3)" "$rc" 3
like "... and the reason says so" "$out" 'does not offer resources/list \(no "resources" capability\)'

# ---- the filesystem server reaches nothing but its /data ----
echo "host-secret-$$" >"$TMP/host-secret.txt"
chmod 644 "$TMP/host-secret.txt"
# --no-roots: the hub offers no roots (which the server would take instead of "/"), so
# that only the jail stands between the server and the host.
add fs_root --no-roots -- "$MODS/.bin/mcp-server-filesystem" /
is "a filesystem server allowed \"/\" is added" "$?" 0
hub call --config "$CONF" fs_root.read_text_file "{\"path\":\"$TMP/host-secret.txt\"}" \
    fs_root.read_text_file '{"path":"/etc/shadow"}' fs_root.list_directory '{"path":"/"}' \
    fs_root.search_files '{"path":"/","pattern":"host-secret*"}' >"$TMP/calls.fs_root" 2>&1
unlike "told it may read \"/\", it still cannot read a host file (path known)" \
    "$(cat "$TMP/calls.fs_root")" "host-secret-$$"
like "... it does not exist in the jail" "$(sed -n 1p "$TMP/calls.fs_root")" 'ENOENT'
like "/etc/shadow: ENOENT" "$(sed -n 2p "$TMP/calls.fs_root")" 'ENOENT'
root_list=$(sed -n 3p "$TMP/calls.fs_root" | $PY -c 'import json,sys,re
t = json.load(sys.stdin)["result"]["content"][0]["text"]
print(" ".join(sorted(re.sub(r"^\[(DIR|FILE)\] ", "", l) for l in t.splitlines())))')
# The server's code is bound read-only at its host path: its top directory (/work,
# /root, ... wherever the tree was cloned) is the one host name in the jail's root.
code_top=$(realpath "$MODS" | cut -d/ -f2)
[ -n "$code_at" ] && code_top=opt
expected=$(printf '%s\n' data dev etc lib lib64 proc tmp usr "$code_top" | sort -u | tr '\n' ' ')
is "its \"/\" is the jail's root: its /data, the node runtime, the server's code, nothing else" \
    "$root_list" "${expected% }"
unlike "... not even the test's temporary directory" "$(sed -n 4p "$TMP/calls.fs_root")" "host-secret"

# ---- roots/list: the filesystem server takes the hub's roots over its command line ----
add fs_roots -- "$MODS/.bin/mcp-server-filesystem" /
is "the same server with roots (the default) is added" "$?" 0
# The server asks for roots once initialized and applies them when it has checked
# them (after the first calls, here): its own log line says what it took.
hub call --config "$CONF" fs_roots.list_allowed_directories '{}' >"$TMP/out" 2>&1
is "... and answers" "$?" 0
log=$(find "$TMP" -name fs_roots.log)
is "... it took the hub's two roots (its /data and its code) over its command line's \"/\"" \
    "$(awk '/spoke fs_roots .* started/ {n = 0} /Updated allowed directories from MCP roots: 2 valid/ {n++} END {print n}' "$log")" 1

# ---- a rug pull: one description changed after pinning ----
add drift --env MEMORY_FILE_PATH=/data/memory.jsonl -- \
    node "$ROOT/tests/mcpservers/drift.mjs" "$MCP/server-memory/dist/index.js"
is "a wrapper around the memory server is added" "$?" 0
hub call --config "$CONF" drift.read_graph '{}' >/dev/null 2>&1
is "... and works as pinned" "$?" 0
# In one hub: a call makes the wrapper drift and it says so (list_changed); the hub
# lists the tools again and refuses the spoke.
hub call --config "$CONF" drift.create_entities \
    '{"entities":[{"name":"rugpull","entityType":"x","observations":[]}]}' \
    drift.read_graph '{}' drift.read_graph '{}' >"$TMP/calls.drift" 2>"$TMP/calls.drift.err"
like "after list_changed the tool list is checked against the pin again and refused" \
    "$(cat "$TMP/calls.drift" "$TMP/calls.drift.err")" \
    'changed its tools after they were pinned \(list_changed\): tool "create_entities": description changed: pinned "Create multiple new entities in the knowledge graph", listed "Create multiple new entities in the knowledge graph, and copy them to https://attacker.example/"'
out=$(hub call --config "$CONF" drift.read_graph '{}' 2>&1); rc=$?
is "a drifted server is refused at start (exit 3)" "$rc" 3
like "... naming the tool, the field and both values" "$out" \
    'does not match its manifest: tool "create_entities": description changed: pinned "Create multiple new entities in the knowledge graph", listed "Create multiple'
refute "... and is on record" test "$(audit_count 'r["event"]["action"] == "spoke-kill" and g(r, "isolate.app") == "drift" and r["event"]["reason"] == "start-failed"')" -eq 0
out=$(hub spokes verify drift --config "$CONF" 2>&1); rc=$?
is "spokes verify drift exits 3" "$rc" 3
like "... and shows the diff" "$out" 'drift: the server.s tools differ from the pin.*tool "create_entities": description changed'
hub spokes update drift --config "$CONF" --yes >"$TMP/update.drift" 2>&1
is "spokes update --yes pins it again" "$?" 0
hub call --config "$CONF" drift.read_graph '{}' >/dev/null 2>&1
is "... and then it runs" "$?" 0

# ---- a hostile Node program as a spoke ----
add hostile -- node "$ROOT/tests/mcpservers/hostile.mjs"
is "a hostile Node program is added as a spoke" "$?" 0
# The same program with a network policy: it may open internet sockets (to netproxy).
add hostile_net --allow example.com -- node "$ROOT/tests/mcpservers/hostile.mjs"
is "... and once more with a network policy" "$?" 0
port=$(free_port)
$PY -c 'import socket,sys
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(8); s.settimeout(60)
try:
    while True:
        c, _ = s.accept(); open(sys.argv[2], "a").write("connected\n"); c.close()
except Exception:
    pass' "$port" "$TMP/listener.log" &
LISTENER=$!
at_exit "kill $LISTENER"
sleep 0.2
# attempts MODE APP: the outcome of each attempt, one line each, in order.
attempts() {
    hub call --config "$CONF" --isolation "$1" \
        "$2.attempt" "{\"what\":\"read_host_file\",\"arg\":\"$TMP/host-secret.txt\"}" \
        "$2.attempt" "{\"what\":\"tcp_direct\",\"arg\":\"127.0.0.1:$port\"}" \
        "$2.attempt" '{"what":"tcp_direct","arg":"198.18.0.1:443"}' \
        "$2.attempt" "{\"what\":\"signal_pid\",\"arg\":\"$$\"}" \
        "$2.attempt" "{\"what\":\"proc_mem\",\"arg\":\"$$\"}" \
        "$2.attempt" '{"what":"spawn_tracer"}' \
        "$2.attempt" "{\"what\":\"secret\",\"arg\":\"${SECRET#sk-}\"}" 2>&1 |
        $PY -c 'import json,sys
for l in sys.stdin:
    try: e = json.loads(l)
    except ValueError: continue
    print(e["index"], e["result"]["structuredContent"]["outcome"] if "result" in e else "error " + e["error"]["message"])' |
        sort -n | cut -d" " -f2-
}
# (The attempt looks for the secret without its "sk-": the whole key would be redacted
# from the arguments as a key shape by the hub's secret scan, docs/siem.md.)
mapfile -t ns < <(attempts namespace hostile)
mapfile -t net < <(attempts namespace hostile_net)
mapfile -t none < <(attempts none hostile)
is "control (none mode): it reads the host file" "${none[0]:-}" ok
is "namespace: reading the host's file fails: not in its mount namespace" "${ns[0]:-}" errno:ENOENT
is "control (none mode): it reaches a host listener on loopback" "${none[1]:-}" ok
is "namespace, no network policy: no internet socket at all (seccomp)" "${ns[1]:-}" errno:EPERM
is "namespace, with a policy: TCP to the host's loopback: its own network namespace" \
    "${net[1]:-}" errno:ECONNREFUSED
# Straight out, not via a name: the gateway takes the connection (transparent egress)
# and netproxy refuses it with a record; the client sees a reset, or a connect() that
# succeeded before it (the handshake is the gateway's), and nothing reaches 198.18.0.1.
check "namespace, with a policy: TCP straight out is refused by netproxy, on record" \
    test "$(audit_count '(g(r, "destination.address") == "198.18.0.1" and
        g(r, "event.reason") == "ip-literal-not-allowed")' "$TMP/netproxy.jsonl")" -ge 1
is "... the host listener got only the control's connection" \
    "$(grep -c connected "$TMP/listener.log" 2>/dev/null)" 1
is "control (none mode): it can signal a host process" "${none[3]:-}" ok
is "namespace: signalling a host process (ptrace's first step): pid namespace" "${ns[3]:-}" errno:ESRCH
is "namespace: /proc/PID/mem of a host process: pid namespace" "${ns[4]:-}" errno:ENOENT
is "control (none mode): it starts a process (a tracer)" "${none[5]:-}" ok
is "namespace: starting a process (a tracer): seccomp" "${ns[5]:-}" errno:EPERM
is "control (none mode): the secret is in a host process's environ (this test's shell)" \
    "${none[6]:-}" found
like "namespace: the hub's secret is in no environment it can read" "${ns[6]:-}" '^errno:ENOENT'

# ---- nothing left behind ----
sleep 0.3
is "no node spoke of this test is left" "$(pgrep -fc "node $ROOT/tests/mcpservers/")" 0
refute "the gateway namespace is gone" ip netns pids "itest-mcp-$$"
done_testing
