#!/usr/bin/env bash
# Tool search (issue 36): hub.json serve.tools "search" (or a number of tools past which
# it is on) makes hub serve offer find_tools, call_tool and list_apps instead of every
# tool. From a client (toolsearch_probe.py): call_tool is mediated as a direct call
# (the data question between apps, on record), hostile arguments get an answer. Then
# the figures of scripts/bench/toolsearch on the catalog's apps hold: tools/list at
# least 85% smaller, the right tool in find_tools' first five for at least 95% of the
# requests of scripts/bench/toolsearch-queries.tsv.
. "$(dirname "$0")/../lib.sh"
require_root
MODE=process
. "$ROOT/tests/serve/serve_lib.sh"
serve_setup
conf_merge '{"serve": {"tools": "search", "approval_wait_s": 0}}'
$PY "$ROOT/tests/serve/toolsearch_probe.py" "$BIN/hub" serve --stdio --standalone --config "$CONF"
check "call_tool's call is on record as the tool's own (beta echo)" \
    test "$(audit_count 'g(r,"isolate.app")=="beta" and g(r,"isolate.tool")=="echo"')" -ge 1
check "... and the refused one as a refusal of alpha echo" \
    test "$(audit_count '(g(r,"isolate.app")=="alpha" and g(r,"isolate.tool")=="echo" and g(r,"event.outcome")=="failure")')" -ge 1

# serve.tools as a number: search only past that many tools.
tools_listed() {
    $PY - "$BIN/hub" serve --stdio --standalone --config "$CONF" <<'EOF'
import sys
sys.path.insert(0, __import__("os").environ["ROOT"] + "/tests/serve")
from mcp_stdio import StdioClient
c = StdioClient(sys.argv[1:])
c.initialize("count")
print(len(c.request("tools/list", {})["result"]["tools"]))
c.close()
EOF
}
n_all=$(conf_merge '{"serve": {"tools": "all"}}' && tools_listed)
check "serve.tools \"all\": every tool is listed ($n_all)" test "${n_all:-0}" -gt 40
conf_merge "{\"serve\": {\"tools\": $((n_all + 1))}}"
is "serve.tools $((n_all + 1)): below it, every tool" "$(tools_listed)" "$n_all"
conf_merge "{\"serve\": {\"tools\": $((n_all - 1))}}"
is "serve.tools $((n_all - 1)): past it, the three of tool search" "$(tools_listed)" 3
conf_merge '{"serve": {"tools": "some"}}'
"$BIN/hub" serve --stdio --standalone --config "$CONF" </dev/null >/dev/null 2>"$TMP/err"
like "serve.tools \"some\" is refused, saying what it may be" "$(cat "$TMP/err")" \
    'serve.tools: must be "all", "search" or a number'

# ---- the figures on the catalog's apps ----
"$ROOT/scripts/bench/toolsearch" --check >"$TMP/bench" 2>&1
rc=$?
diag "$(tail -n 12 "$TMP/bench")"
is "scripts/bench/toolsearch --check: tools/list >= 85% smaller, the right tool in the first five for >= 95%" "$rc" 0
done_testing
