#!/usr/bin/env bash
# Every command of README.md's ```sh blocks, run as written from a fresh clone of this
# tree (issue 38, item 9), the build's binaries copied into the clone's build/. A
# command that listens on a fixed port runs in a network namespace of this test (the
# port is then the test's alone); a command that needs something a reader has and the
# test does not gets a stand-in (an OpenAI-compatible server on ollama's port, the
# suite's installed MCP servers for ~/mcp, a token.txt); the placeholder ID is the
# session the command before printed. Skipped, each with its reason below: what needs
# the internet, a real client, or installs on this machine. A README command this test
# does not know is a failure: a new command needs its line here.
. "$(dirname "$0")/../lib.sh"
require_root
case "$BUILD" in
*san*) # The README's commands use the tree's own config, whose RLIMIT_AS a sanitizer
    # build's spokes cannot start under (hub_lib.sh adjusts it for the other tests).
    skip "$TEST_NAME" "a sanitizer build (the README runs the stock configuration)"
    exit 0 ;;
esac
PY=/usr/bin/python3
CLONE=$TMP/isolategpt
export HOME=$TMP/home
mkdir -p "$HOME"
git clone -q --depth 1 "file://$ROOT" "$CLONE" 2>"$TMP/clone.err" || {
    not_ok "a clone of this tree: $(cat "$TMP/clone.err")"
    exit 1
}
# The stock configuration as shipped, but for the jails' host uids: the stable ones are
# given lowest first per data root, so every hub on the stock range takes the same first
# ids, and a spoke of this clone would wait for (then fail beside) a spoke of another
# test's hub holding that id's host-wide lock. A range of this test's own, as every
# other test has.
$PY - "$CLONE/config/hub.json" "$((3100000 + ($$ % 4000) * 64))" <<'PYEOF'
import json, sys
h = json.load(open(sys.argv[1]))
h["network"].update({"host_id_base": int(sys.argv[2]), "host_id_count": 64})
json.dump(h, open(sys.argv[1], "w"), indent=2)
PYEOF
mkdir -p "$CLONE/build"
cp -a "$BIN/hub" "$BIN/netproxy" "$BIN/nsjail-lite" "$BIN/spokes" "$CLONE/build/"
test_netns readme
NS=$NETNS
# The background hub of `hub serve --stdio`, and the README's own background jobs.
at_exit "kill \$(cat $CLONE/build/var/run/serve.sock.lock 2>/dev/null) 2>/dev/null"
# (netproxy drains for a moment after SIGTERM: each is waited for, up to 10 s.)
at_exit "for p in \$(cat $TMP/*.bgpid 2>/dev/null); do kill \$p; for _w in \$(seq 100); do kill -0 \$p || break; sleep 0.1; done; done"

# run CMD [STDIN]: the command as written, in the clone, with bash; output in $TMP/out
# and $TMP/err, the status in RC.
run() {
    (cd "$CLONE" && bash -c "$1") <<<"${2:-}" >"$TMP/out" 2>"$TMP/err"
    RC=$?
}
# in_ns CMD [STDIN]: run, in the test's network namespace.
in_ns() {
    (cd "$CLONE" && nsenter --net=/run/netns/"$NS" bash -c "$1") <<<"${2:-}" >"$TMP/out" 2>"$TMP/err"
    RC=$?
}
# bg_ns NAME CMD: a README command ending in "&", in the namespace; its pid kept.
bg_ns() {
    (cd "$CLONE" && nsenter --net=/run/netns/"$NS" bash -c "$2"$'\n''echo $! >'"$TMP/$1.bgpid") \
        >"$TMP/$1.out" 2>&1
}
ns_port() { nsenter --net=/run/netns/"$NS" bash -c "echo >/dev/tcp/127.0.0.1/$1" 2>/dev/null; }
said() { printf '%s\n%s' "$(cat "$TMP/out")" "$(cat "$TMP/err")"; }

# An OpenAI-compatible stand-in on ollama's port in the namespace: the planner gets a
# call of the notes app's list tool, everything else a plain answer.
standin_ollama() {
    nsenter --net=/run/netns/"$NS" $PY - >"$TMP/ollama.log" 2>&1 <<'PYEOF' &
import http.server, json
class H(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        tools = body.get("tools") and not any(m.get("role") == "tool" for m in body["messages"])
        msg = ({"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function",
                "function": {"name": "notes__list", "arguments": "{}"}}]} if tools else
               {"role": "assistant", "content": "Your notes, from the stand-in model."})
        out = json.dumps({"id": "x", "object": "chat.completion", "model": body.get("model"),
                          "choices": [{"index": 0, "message": msg,
                                       "finish_reason": "tool_calls" if tools else "stop"}]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)
http.server.HTTPServer(("127.0.0.1", 11434), H).serve_forever()
PYEOF
    echo $! >"$TMP/ollama.bgpid"
    wait_for "the stand-in on 11434" 10 ns_port 11434
}

# An MCP session over the command's stdin and stdout: initialize, then tools/list.
mcp_stdio() {
    (cd "$CLONE" && $PY - "$1" >"$TMP/out" 2>"$TMP/err") <<'PYEOF'
import json, subprocess, sys
p = subprocess.Popen(["bash", "-c", sys.argv[1]], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
def send(m): p.stdin.write((json.dumps(m) + "\n").encode()); p.stdin.flush()
def answer(i):
    for line in p.stdout:
        m = json.loads(line)
        if m.get("id") == i: return m
send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18",
      "capabilities": {}, "clientInfo": {"name": "readme-test", "version": "1"}}})
print(json.dumps(answer(1)))
send({"jsonrpc": "2.0", "method": "notifications/initialized"})
send({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
print(json.dumps(answer(2)))
p.stdin.close()
sys.exit(p.wait(timeout=30))
PYEOF
    RC=$?
}

TOKEN=
SESSION=
handle() {
    local c=$1
    case "$c" in
    "apt-get update"*)
        skip "$c" "needs the internet (Debian's mirrors); this machine has the packages" ;;
    "git clone <this repository> isolategpt && cd isolategpt"*)
        check "$c: this test's own clone of the tree (<this repository> is the reader's URL)" \
            test -f "$CLONE/README.md" ;;
    "make demo"*)
        skip "$c" "builds the whole tree again in the clone (minutes on 2 cores): the lead's make demo runs it, tests/cases the case studies" ;;
    "make check"*)
        skip "$c" "the suite itself, which runs this test" ;;
    "build/hub --user alice --llm http://127.0.0.1:11434/v1 --model qwen2.5:7b"*)
        standin_ollama
        in_ns "$c" "What notes do I have?"
        is "$c (a stand-in model on 11434): answers" "$RC" 0 || diag "$(said)"
        unlike "... its step ran (no step failed)" "$(said)" "failed|could not start"
        like "... with the model's answer after the notes app's step" "$(said)" "Your notes, from the stand-in model"
        kill "$(cat "$TMP/ollama.bgpid")" 2>/dev/null ;;
    "build/hub --user alice --llm replay:config/replay/notes.json"*)
        run "$c" "What notes do I have?"
        is "$c (a request on stdin): answers" "$RC" 0
        like "... with the shipped recording's answer" "$(said)" "These are the titles of your notes" ;;
    'echo "What notes do I have?" | build/hub --llm replay:config/replay/notes.json --answers allow --json'*)
        run "$c"
        is "$c: exit 0" "$RC" 0
        is "... one JSON result, status ok, the notes app called" \
            "$(jget '[d["status"], d["calls"][0]["tool"]]' <"$TMP/out" 2>&1)" '["ok", "notes.list"]' ;;
    "build/hub spokes  "*) # the listing (the sub-commands below have their own lines)
        run "$c"
        is "$c: exit 0" "$RC" 0
        like "... lists the installed apps" "$(said)" "notes - " ;;
    "build/hub call notes.add"*)
        run "$c"
        is "$c: exit 0" "$RC" 0 ;;
    "build/hub call --isolation none notes.get"*)
        run "$c"
        is "$c: exit 0" "$RC" 0
        like "... the note added by the command before" "$(said)" "buy milk" ;;
    "npm install --prefix ~/mcp @modelcontextprotocol/server-memory"*)
        skip "$c" "needs the internet (npm's registry); stand-in: the suite's installed copy (tests/mcpservers, make deps) in ~/mcp"
        mkdir -p "$HOME/mcp"
        cp -a "$ROOT/tests/mcpservers/node_modules" "$HOME/mcp/" 2>/dev/null ;;
    "build/hub spokes add memory "*)
        if [ ! -x "$HOME/mcp/node_modules/.bin/mcp-server-memory" ] || ! command -v node >/dev/null; then
            skip "$c" "node or the suite's MCP servers are missing (make deps)"
            return
        fi
        run "$c" "y"
        is "$c (answering y): exit 0" "$RC" 0
        like "... pins its tools" "$(said)" "wrote .*memory.json \\(9 tools pinned\\)" ;;
    "build/hub call memory.read_graph"*)
        if [ ! -e "$CLONE/config/spokes/memory.json" ]; then
            skip "$c" "the memory spoke was not added"
            return
        fi
        run "$c"
        is "$c: exit 0" "$RC" 0
        like "... the server's graph" "$(said)" "entities" ;;
    "build/hub secrets set github --hosts api.github.com < token.txt"*)
        printf 'ghp_readmeTestStandInToken0123456789abcd\n' >"$CLONE/token.txt" # the reader's token
        run "$c"
        is "$c (a stand-in token.txt): exit 0" "$RC" 0 ;;
    "build/hub catalog search github"*)
        run "$c"
        is "$c: exit 0" "$RC" 0
        like "... the catalog's github entry, its package pinned" "$(said)" \
            'github +GitHub.*npm @modelcontextprotocol/server-github@[0-9]' ;;
    "build/hub spokes add github "*)
        skip "$c" "needs the internet (npm's registry, for npm:@modelcontextprotocol/server-github)" ;;
    "build/hub spokes add gh-image "*)
        skip "$c" "needs the internet (ghcr.io); tests/oci pulls its images from a registry on loopback" ;;
    "build/hub spokes login linear "*)
        skip "$c" "needs the internet (mcp.linear.app); tests/remote logs in to a stand-in" ;;
    "build/hub audit verify build/var/log/hub.jsonl*"*)
        # The hubs of the commands above wrote it; one may still run (the background hub
        # of hub serve --stdio), whose last records wait for its next checkpoint: exit 4
        # says so. Anything else is a broken chain or signature.
        run "$c"
        case "$RC" in
        0) ok "$c: intact" ;;
        4) like "$c: intact up to a running writer's last checkpoint" "$(said)" \
            'no signed checkpoint after them.*its writer is still running' ;;
        *) not_ok "$c: exit $RC: $(said | head -3)" ;;
        esac ;;
    "make bench B=agent"*)
        skip "$c" "builds and runs the whole benchmark (about a minute): tests/agentbench runs a reduced suite" ;;
    "build/hub client add claude-code --user alice"*)
        run "$c"
        is "$c: exit 0" "$RC" 0
        like "... in ~/.claude.json" "$(cat "$HOME/.claude.json" 2>&1)" '"isolategpt"' ;;
    "build/hub serve --stdio --user alice"*)
        mcp_stdio "$c"
        is "$c (an MCP session on stdin): exit 0" "$RC" 0 || diag "$(said)"
        like "... initializes and lists the apps' tools" "$(said)" '"name": "notes__list"'
        kill "$(cat "$CLONE/build/var/run/serve.sock.lock" 2>/dev/null)" 2>/dev/null ;;
    "build/hub serve token add alice --tokens build/var/tokens"*)
        run "$c"
        is "$c: exit 0" "$RC" 0
        TOKEN=$(head -n 1 "$TMP/out")
        like "... prints a token" "$TOKEN" '^[A-Za-z0-9_-]{40,}$' ;;
    "build/hub serve --http 127.0.0.1:8750 --tokens build/var/tokens"*)
        # A server in the foreground as written: the test runs it in the background.
        (cd "$CLONE" && exec nsenter --net=/run/netns/"$NS" bash -c "exec $c") >"$TMP/http.out" 2>&1 &
        echo $! >"$TMP/http.bgpid"
        wait_for "hub serve --http on 8750" 20 ns_port 8750
        in_ns "curl -s -H 'Authorization: Bearer $TOKEN' -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' -d '{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-06-18\",\"capabilities\":{},\"clientInfo\":{\"name\":\"t\",\"version\":\"1\"}}}' http://127.0.0.1:8750/mcp"
        like "$c: initialize with the token printed before" "$(said)" '"protocolVersion"'
        kill "$(cat "$TMP/http.bgpid")" 2>/dev/null ;;
    "make deb && apt-get install ./build/isolategpt_0.1.0_amd64.deb"*)
        skip "$c" "installs a package on this machine and starts its services: make check-host does it in a machine it boots" ;;
    "isolategpt serve token add alice --tokens /etc/isolategpt/tokens"*)
        skip "$c" "needs the installed package (make check-host)" ;;
    "build/hub repl-server &"*)
        bg_ns repl "$c"
        wait_for "the repl-server on 8000" 20 ns_port 8000
        check "$c: listens on 127.0.0.1:8000" ns_port 8000 ;;
    "scripts/repl-client 'x = 6 * 7'"*)
        in_ns "$c"
        is "$c: exit 0" "$RC" 0
        [ "$RC" = 0 ] || diag "$(said)"
        SESSION=$(sed -n 's/^session: //p' "$TMP/err" | head -n 1)
        like "... names its session on stderr" "$SESSION" '^[A-Za-z0-9_-]+$' ;;
    "scripts/repl-client --session ID "*)
        in_ns "${c/--session ID/--session $SESSION}"
        is "$c (ID the session printed before): exit 0" "$RC" 0
        is "... 42, then 43" "$(tr '\n' ' ' <"$TMP/out")" "42 43 " ;;
    "build/netproxy --listen 127.0.0.1:3128 --allow example.com --audit /tmp/netproxy.jsonl &"*)
        # Its /tmp private: the audit path is the README's, the file the test's.
        # Its pid goes out on descriptor 9, opened before /tmp is covered.
        (cd "$CLONE" && nsenter --net=/run/netns/"$NS" unshare -m --propagation private bash -c \
            "mount -t tmpfs readme /tmp || exit 1"$'\n'"$c"$'\n''echo $! >&9') \
            >"$TMP/netproxy.out" 2>&1 9>"$TMP/netproxy.bgpid"
        wait_for "netproxy on 3128" 20 ns_port 3128
        check "$c: listens on 3128" ns_port 3128 ;;
    "curl --proxy http://127.0.0.1:3128 https://www.example.com/"*)
        skip "$c" "needs the internet (www.example.com)" ;;
    "curl --proxy http://127.0.0.1:3128 https://evil.example/"*)
        # As written; curl's own file makes it verbose, to show the proxy's headers.
        mkdir -p "$TMP/curlhome" && echo verbose >"$TMP/curlhome/.curlrc"
        CURL_HOME=$TMP/curlhome in_ns "$c"
        like "$c: refused with 403" "$(said)" "CONNECT tunnel failed, response 403"
        like "... X-Proxy-Error: domain-not-allowed" "$(said)" "X-Proxy-Error: domain-not-allowed" ;;
    "build/nsjail-lite -- /bin/sh -c 'id; ls /'"*)
        run "$c"
        is "$c: exit 0" "$RC" 0
        like "... uid 1000 (spoke)" "$(said)" "uid=1000\\(spoke\\)" ;;
    "build/nsjail-lite --wall-time 2 --status-fd 3 -- /bin/sleep 5 3>&1"*)
        run "$c"
        like "$c: killed at the wall time" "$(said)" '"exit_code":137.*"reason":"wall-time"' ;;
    *)
        not_ok "a README command this test does not know (give it a line in tests/docs/test_readme.sh): $c" ;;
    esac
}

mapfile -t COMMANDS < <($PY - "$CLONE/README.md" <<'PYEOF'
import sys
block = False
for line in open(sys.argv[1]):
    if line.startswith("```"):
        block = line.strip() == "```sh"
        continue
    if block and line.strip():
        print(line.rstrip("\n"))
PYEOF
)
check "README.md has sh blocks to run" test "${#COMMANDS[@]}" -gt 10
for c in "${COMMANDS[@]}"; do
    handle "$c"
done
done_testing
