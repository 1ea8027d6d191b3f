#!/usr/bin/env bash
# Several `hub serve --http` instances of one user share their "always" and "never"
# answers through the Redis of hub.json's memory (as instances behind HAProxy do): what
# the user answered through one instance holds at the other, and a tool without a grant
# is still refused there as --answers says; and what is first seen for the user
# (isolate.first_seen) is first at one instance only. The official MCP SDK client drives both
# (tests/serve/shared_grants.mjs). Spokes in none mode: this is about the grants.
. "$(dirname "$0")/../lib.sh"
require_root
MODE=none
. "$ROOT/tests/serve/serve_lib.sh"
have_sdk || { skip "$TEST_NAME" "the MCP SDK client is not installed (make deps: npm ci)"; exit 0; }

REDIS_DIR=$TMP/redis
SOCK=$("$ROOT/scripts/redis-private" start "$REDIS_DIR") ||
    { not_ok "a private redis-server starts"; exit 1; }
at_exit "'$ROOT/scripts/redis-private' stop '$REDIS_DIR'"
serve_setup
$PY - "$CONF" "$SOCK" <<'EOF'
import json, sys
c = json.load(open(sys.argv[1]))
c["memory"] = {"redis": "unix:" + sys.argv[2], "prefix": "itest-grants"}
json.dump(c, open(sys.argv[1], "w"))
EOF

# Both instances ask before every call (--ask-exec): the exec question is the one
# whose answer is shared.
serve_http_start --ask-exec --audit "$TMP/audit1.jsonl"
URL1=$URL
serve_http_start --ask-exec --audit "$TMP/audit2.jsonl"
URL2=$URL
node "$SDK_DIR/shared_grants.mjs" "$URL1" "$URL2" 2>"$TMP/node.err"
rc=$?
[ $rc -eq 0 ] || diag "node: $(tail -3 "$TMP/node.err")"
like "the grants are in the shared Redis, where every hub of the user reads them" \
    "$(redis-cli -s "$SOCK" --raw keys 'itest-grants:*' 2>/dev/null | tr '\n' ' ')" "itest-grants:tester:"
# isolate.first_seen, remembered in the same Redis: alpha.echo is new at the first
# instance and not at the second, which shares the memory.
first() { audit_count "g(r,'event.action')=='tool-call-start' and g(r,'isolate.app')=='alpha' and g(r,'isolate.first_seen') is $2" "$1"; }
is "the first instance marks alpha.echo first_seen" "$(first "$TMP/audit1.jsonl" True)" 1
is "... the second, sharing the Redis, does not" "$(first "$TMP/audit2.jsonl" True)" 0
is "... it says false there" "$(first "$TMP/audit2.jsonl" False)" 1
done_testing
