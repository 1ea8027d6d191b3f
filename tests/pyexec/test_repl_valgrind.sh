#!/usr/bin/env bash
# hub repl-server under valgrind: sessions, tracebacks, every malformed frame, a run
# interrupted and a run killed at its deadline, then SIGTERM: no memory error, no leak.
# In `none` isolation mode (valgrind does not know open_tree, which the namespace mode
# needs); the server's own code is the same in every mode. Skipped without valgrind.
. "$(dirname "$0")/../lib.sh"
. "$ROOT/tests/pyexec/pyexec_lib.sh"
if ! command -v valgrind >/dev/null; then
    skip "repl-server under valgrind" "valgrind not installed (scripts/deps --all)"
    exit 0
fi
if grep -aq __asan_init "$BIN/hub"; then
    skip "repl-server under valgrind" "valgrind cannot run the ASan build (SAN=1)"
    exit 0
fi
if ! valgrind -q "$BIN/hub" --help >/dev/null 2>&1; then
    skip "repl-server under valgrind" "valgrind cannot read this build (clang's DWARF 5 needs valgrind >= 3.20)"
    exit 0
fi
pyexec_setup none
VG=$TMP/valgrind.log
"$BIN/hub" --help >/dev/null # warm the page cache
valgrind -q --leak-check=full --errors-for-leak-kinds=definite,indirect --error-exitcode=99 \
    --log-file="$VG" "$BIN/hub" repl-server --config "$CONF" --listen 127.0.0.1:0 \
    --time-limit 1 --max-frame 65536 >"$TMP/vg.out" 2>"$TMP/server.err" &
SRV_PID=$!
at_exit "kill -9 $SRV_PID"
listening() { grep -q "listening on" "$TMP/vg.out"; }
wait_for "the server under valgrind" 60 listening || { not_ok "the server starts under valgrind"; exit 1; }
PORT=$(sed -n 's/^repl-server: listening on 127.0.0.1:\([0-9]*\) .*/\1/p' "$TMP/vg.out")
under_valgrind() { sed -E 's/^(not )?ok - /&under valgrind: /'; }
cases basic "$PORT" | under_valgrind
cases malformed "$PORT" 65536 | under_valgrind
cases timeouts "$PORT" 1 | under_valgrind
cases alive "$PORT" | under_valgrind
stop_server
is "valgrind: the server exits 0 after SIGTERM (99 would be a memory error or leak)" "$SRV_RC" 0
errors=$(grep -vE 'unhandled amd64-linux syscall|You may be able|README_MISSING|Nevertheless|valgrind.org/support' "$VG" | grep -c .)
is "valgrind: nothing reported" "$errors" 0 || diag "$(grep -vE 'unhandled amd64-linux syscall|You may be able|README_MISSING|Nevertheless|valgrind.org/support' "$VG" | head -60)"
[ "$errors" -eq 0 ] || head -40 "$VG"
done_testing
