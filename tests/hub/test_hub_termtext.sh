#!/usr/bin/env bash
# Terminal control sequences from a spoke never reach the operator's terminal (issue 14,
# item 2). A hostile spoke (tests/hub/rawspoke.c) puts clear-screen, OSC 0 (title),
# OSC 52 (clipboard), a C1 CSI, a bidi override and a fake hub permission line at
# column 0 into each text the hub prints: the error it returns to initialize, its
# protocolVersion, a tool name (the "does not match its manifest" warning), the error
# it returns to tools/call (printed by `hub call`) and a log line during a call. The
# bytes that reach stderr are checked: the text arrives, quoted after the hub's prefix,
# and none of the sequences survives.
. "$(dirname "$0")/../lib.sh"
MODE=process
. "$ROOT/tests/hub/hub_lib.sh"
hub_setup
cp "$BIN/tests/hub/rawspoke" "$BINDIR/"
ROUTES="init-error version tools call-error log"
for r in $ROUTES; do
    $PY - "$r" <<EOF
import json, sys
r = sys.argv[1]
m = {"name": "term_" + r.replace("-", "_"), "description": "Hostile terminal probe.",
     "command": ["rawspoke", r], "runtime": "c",
     "tools": [{"name": "poke", "description": "Hostile terminal probe.",
                "inputSchema": {"type": "object"}}]}
json.dump(m, open("$SPOKES/%s.json" % m["name"], "w"))
EOF
done

# bytes FILE HEX: how many times the byte sequence HEX occurs in FILE.
bytes() { $PY -c 'import sys; print(open(sys.argv[1], "rb").read().count(bytes.fromhex(sys.argv[2])))' "$1" "$2"; }

for r in $ROUTES; do
    app=term_${r//-/_}
    hubc "$app.poke" '{}' >"$TMP/$r.out" 2>"$TMP/$r.err"
    rc=$?
    diag "$r: exit $rc; stderr: $(head -c 300 "$TMP/$r.err" | cat -v)"
    check "$r: the spoke's text reached stderr (it carried the payload)" grep -q "TITLE-SET" "$TMP/$r.err"
    is "$r: no ESC reaches the terminal (clear screen, OSC 0, OSC 52)" "$(bytes "$TMP/$r.err" 1b)" 0
    is "$r: no BEL (the OSC terminator)" "$(bytes "$TMP/$r.err" 07)" 0
    is "$r: no CR (a return to column 0)" "$(bytes "$TMP/$r.err" 0d)" 0
    is "$r: no C1 CSI" "$(bytes "$TMP/$r.err" c29b)" 0
    is "$r: no bidi override" "$(bytes "$TMP/$r.err" e280ae)" 0
    is "$r: every stderr line starts with the hub's prefix (only the hub writes at column 0)" \
        "$(grep -cv '^hub: ' "$TMP/$r.err")" 0
    check "$r: the sequences are shown inert (caret notation, escapes)" \
        grep -qF ']52;c;cHduZWQ=' "$TMP/$r.err"
    case $r in
    log) is "$r: the call itself succeeds (exit 0)" "$rc" 0 ;;
    *) is "$r: the call fails (exit 3)" "$rc" 3 ;;
    esac
done
like "tools: it is the manifest-mismatch warning" "$(cat "$TMP/tools.err")" "does not match its manifest"
like "version: it is the protocol version check" "$(cat "$TMP/version.err")" "unsupported MCP protocol version"
done_testing
