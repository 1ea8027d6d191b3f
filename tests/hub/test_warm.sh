#!/usr/bin/env bash
# A node spoke restarted from a held node (a manifest's "warm": true, issue 40): after
# the spoke stops (idle, or it exits), its next instance is made ahead, jail set up and
# node booted, and waits before any of the server's code loads; the next call takes it.
# From the attacker's side (warm_probe.py): what one instance plants is not there for
# the next, the held node loads nothing of the server until the call, a held node that
# dies is not replaced, nothing outlives the hub. Also: the manifest's checks, and the
# loader itself (go or nothing).
. "$(dirname "$0")/../lib.sh"
require_root
MODE=namespace
. "$ROOT/tests/hub/hub_lib.sh"
hub_setup
require_cmds node
NODE=$(command -v node)
LOADER=$ROOT/hub/runtime/held_node.cjs

# ---- the loader alone: a newline, then the entry as node's main; anything else, nothing ----
cat >"$TMP/entry.cjs" <<'JS'
require('fs').appendFileSync(process.env.MARK, JSON.stringify([process.argv.slice(1), require.main === module]) + '\n');
JS
out=$(printf '\n' | MARK=$TMP/mark "$NODE" "$LOADER" "$TMP/entry.cjs" a b; echo "rc=$?")
is "the loader: after the go, the entry runs as node's main with a plain start's argv" \
    "$(cat "$TMP/mark" 2>/dev/null)|$out" "[[\"$TMP/entry.cjs\",\"a\",\"b\"],true]|rc=0"
rm -f "$TMP/mark"
out=$(printf '{"jsonrpc":"2.0"}\n' | MARK=$TMP/mark "$NODE" "$LOADER" "$TMP/entry.cjs" 2>&1; echo "rc=$?")
like "... anything but the go first: it exits 2 and says why" "$out" "expected the go.*rc=2"
is "... and the entry never loaded" "$(cat "$TMP/mark" 2>/dev/null)" ""
out=$(MARK=$TMP/mark "$NODE" "$LOADER" "$TMP/entry.cjs" </dev/null 2>&1; echo "rc=$?")
is "... stdin closed before the go: it exits 0, the entry never loaded" "$(cat "$TMP/mark" 2>/dev/null)|$out" "|rc=0"

# ---- the manifest ----
hub_config '{}'
# --exec node: the hostile spoke may start processes, to try to leave one behind.
"$BIN/hub" spokes add warm --config "$CONF" --runtime node --exec "$NODE" --yes -- "$NODE" \
    "$ROOT/tests/hub/warm_spoke.mjs" arg1 >"$TMP/add.out" 2>&1
rc=$?
is "hub spokes add: the node spoke is added" "$rc" 0
[ "$rc" -ne 0 ] && diag "$(tail -20 "$TMP/add.out")"
rm -f "$DATA/tester/warm/loads" # the add's own run, to list the tools
$PY -c 'import json,sys
m = json.load(open(sys.argv[1])); m.update(warm=True, idle_s=1, profile=sys.argv[2])
json.dump(m, open(sys.argv[1], "w"))' "$SPOKES/warm.json" "$ROOT/config/profiles/node.json"
bad() { # NAME PYTHON-EDIT: a copy of warm.json edited, alone in a spokes folder
    mkdir -p "$TMP/bad-$1"
    $PY -c "import json,sys
m = json.load(open(sys.argv[1])); $2
json.dump(m, open(sys.argv[2], 'w'))" "$SPOKES/warm.json" "$TMP/bad-$1/warm.json"
    "$BIN/hub" spokes --config "$CONF" --spokes "$TMP/bad-$1" 2>&1
}
like "warm is for node spokes only" "$(bad c 'm["runtime"] = "c"')" 'warm: is for runtime "node" only'
like "... started as node ENTRY, without node options before it" \
    "$(bad opts 'm["command"][1:1] = ["--no-warnings"]')" 'warm: needs a command of the form'
like "... and a boolean" "$(bad type 'm["warm"] = "yes"')" 'warm'
is "the manifest with warm loads" "$("$BIN/hub" spokes --config "$CONF" >/dev/null 2>&1; echo $?)" 0

# ---- the held node, from the attacker's side ----
entry=$(jget 'd["command"][1]' <"$SPOKES/warm.json")
$PY "$ROOT/tests/hub/warm_probe.py" "$AUDIT" "$DATA/tester/warm/loads" "$entry" \
    "$BIN/hub" serve --stdio --standalone --config "$CONF"
is "the loader the hub wrote is held_node.cjs, byte for byte" \
    "$(cmp "$RUN/held-node.cjs" "$LOADER" >/dev/null 2>&1 && echo same)" same
is "no hub veth left in the host namespace" "$(host_veths)" 0
done_testing
