#!/usr/bin/env bash
# The official MCP conformance suite (npm @modelcontextprotocol/conformance, on Node 22
# from the npm package node@22) runs its server scenarios (the active ones and the
# pending ones: --suite all) against
# `hub serve --http --app conformance`: spokes/conformance in namespace mode behind the
# hub's mediation. One line per scenario; the ones listed in conformance-pending.txt
# are skipped with their reason. The table of results is printed as diagnostics.
. "$(dirname "$0")/../lib.sh"
require_root
MODE=namespace
. "$ROOT/tests/serve/serve_lib.sh"
NODE22=$SDK_DIR/node_modules/.bin/node
SUITE=$SDK_DIR/node_modules/.bin/conformance
if [ ! -x "$NODE22" ] || [ ! -e "$SUITE" ]; then
    skip "the MCP conformance suite" "tests/serve/node_modules lacks node@22 or the suite (make deps)"
    exit 0
fi
serve_setup "$ROOT/tests/serve/manifests/conformance.json"
mode_needs_jail_skip
serve_http_start --app conformance
"$NODE22" "$SUITE" server --suite all --url "http://localhost:$PORT/mcp" -o "$TMP/results" >"$TMP/suite.out" 2>&1

declare -A pending
while read -r name why; do
    case "$name" in '' | '#'*) continue ;; esac
    pending[$name]=$why
done <"$ROOT/tests/serve/conformance-pending.txt"

n=0
for dir in "$TMP"/results/server-*; do
    [ -d "$dir" ] || continue
    scenario=$(basename "$dir" | sed -E 's/^server-//; s/-[0-9]{4}-[0-9]{2}-[0-9]{2}T.*$//')
    read -r passed failed checks < <($PY -c 'import json,sys
c = json.load(open(sys.argv[1]))
print(sum(1 for x in c if x["status"] == "SUCCESS"), sum(1 for x in c if x["status"] == "FAILURE"), len(c))' "$dir/checks.json")
    n=$((n + 1))
    diag "$(printf '%-32s %2d passed %2d failed' "$scenario" "$passed" "$failed")"
    if [ -n "${pending[$scenario]:-}" ]; then
        if [ "$failed" -gt 0 ]; then
            skip "conformance: $scenario" "${pending[$scenario]}"
        else
            not_ok "conformance: $scenario passes now: take it out of conformance-pending.txt"
        fi
    elif [ "$failed" -eq 0 ] && [ "$checks" -gt 0 ]; then
        # A scenario may only inform (server-sse-polling when the answer is JSON).
        ok "conformance: $scenario"
    else
        not_ok "conformance: $scenario: $($PY -c 'import json,sys
print("; ".join(x.get("errorMessage","") for x in json.load(open(sys.argv[1])) if x["status"]=="FAILURE")[:300])' "$dir/checks.json")"
    fi
done
like "the suite ran its scenarios" "$n" '^[1-9][0-9]+$'
kill "$SERVE_PID"; wait "$SERVE_PID" 2>/dev/null
is "no spoke left running" "$(leftover_procs)" 0
done_testing
