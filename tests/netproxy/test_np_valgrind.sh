#!/usr/bin/env bash
# netproxy under valgrind (np_valgrind.py): a short run with tunnels and refusals ends
# with no memory errors and no leaks. Skipped when valgrind is not installed.
. "$(dirname "$0")/../lib.sh"
require_root
if ! command -v valgrind >/dev/null; then
    skip "netproxy under valgrind" "valgrind not installed (scripts/deps --all)"
    exit 0
fi
if [ -n "${ISOLATE_VALGRIND:-}" ]; then
    skip "netproxy under valgrind" "tests/valgrind/run already runs every netproxy under valgrind"
    exit 0
fi
if grep -aq __asan_init "$BIN/netproxy"; then
    skip "netproxy under valgrind" "valgrind cannot run the ASan build (SAN=1)"
    exit 0
fi
if ! valgrind -q "$BIN/netproxy" --help >/dev/null 2>&1; then
    skip "netproxy under valgrind" "valgrind cannot read this build (clang's DWARF 5 needs valgrind >= 3.20)"
    exit 0
fi
export TMP
/usr/bin/python3 "$ROOT/tests/netproxy/np_valgrind.py"
