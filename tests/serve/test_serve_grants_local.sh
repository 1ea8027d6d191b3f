#!/usr/bin/env bash
# "always" holds across stdio sessions without Redis: hub serve keeps the answers in
# DATA/.serve-grants.json (root's, 0600). Session one (a client with elicitation)
# answers the question of alpha -> beta.echo "always" (a collab grant: both stages); session two, a new process
# whose client cannot be asked, is let through by them, while a pair nobody answered is
# still refused. A store others may write is refused at start.
. "$(dirname "$0")/../lib.sh"
require_root
MODE=none
. "$ROOT/tests/serve/serve_lib.sh"
serve_setup

cat >"$TMP/probe.py" <<'EOF'
import json, sys
sys.path.insert(0, sys.argv[3])
from mcp_stdio import StdioClient
hub, conf, _, mode = sys.argv[1:5]

def relay(c, tool):
    i = c.call("tools/call", {"name": "alpha__relay",
                              "arguments": {"tool": tool, "arguments": {"text": "hi"}}})
    asked = 0
    while True:
        a = c.answers.get(i)
        if a:
            return a[1]["result"], asked
        for k, m in enumerate(c.notes):
            if m.get("method") == "elicitation/create":
                del c.notes[k]
                asked += 1
                c.send({"jsonrpc": "2.0", "id": m["id"],
                        "result": {"action": "accept", "content": {"decision": "always"}}})
                break
        else:
            if not c._read(120):  # two spokes start on the way: generous on a busy machine
                return None, asked

caps = {"elicitation": {}} if mode == "ask" else {}
c = StdioClient([hub, "serve", "--stdio", "--standalone", "--config", conf],
                stderr=open(f"{sys.argv[5]}/{mode}.hub.err", "w"))
if not c.initialize("grants-" + mode, caps):
    sys.exit("the hub did not answer initialize (its stderr follows)")
r, asked = relay(c, "beta.echo")
print("echo", json.dumps((r or {}).get("structuredContent", r), sort_keys=True), "asked", asked)
if mode == "later":
    r, asked = relay(c, "gamma.echo")
    print("gamma", json.dumps(r, sort_keys=True))
print("rc", c.close())
EOF
# A session that fails says why (the probe's and the hub's stderr), instead of failing
# every check after it in silence.
probe() {
    $PY "$TMP/probe.py" "$BIN/hub" "$CONF" "$ROOT/tests/serve" "$1" "$TMP" 2>"$TMP/$1.err" ||
        diag "session $1: $(tail -5 "$TMP/$1.err") / hub: $(tail -5 "$TMP/$1.hub.err")" >&2
}
out=$(probe ask)
like "session one: the user answers the question always" "$out" '"ok": true.* asked 1'
check "the answers are kept in the data root's store" grep -q always "$DATA/.serve-grants.json"
is "... root's, mode 0600" "$(stat -c '%u %a' "$DATA/.serve-grants.json")" "0 600"
out=$(probe later)
like "session two (a new process, no elicitation): allowed by the kept answers, nobody asked" "$out" '"ok": true.* asked 0'
like "... while a pair nobody answered is still refused" "$out" 'gamma.*cannot be asked'
is "the store answered session one's relay and both of session two's questions" \
    "$(audit_count 'g(r,"event.action")=="permission" and "grant store" in (g(r,"event.reason") or "")')" 3
chmod 0666 "$DATA/.serve-grants.json"
out=$("$BIN/hub" serve --stdio --standalone --config "$CONF" </dev/null 2>&1)
like "a store others may write is refused at start, saying why" "$out" 'serve-grants.json: must be a regular file'
done_testing
