#!/usr/bin/env bash
# test_np_egress.sh's attacks with netproxy under valgrind (memcheck): the transparent
# path, the resolver, the sniffer and the forwards without an invalid read or a leak.
# (It found the guard's class read before the guard had set it, for a raw grant to a
# loopback address.)
case "${BUILD:-build}" in
*san* | *fuzz*)
    . "$(dirname "$0")/../lib.sh"
    skip "netproxy's transparent egress under valgrind" "not in a sanitizer build"
    exit 0
    ;;
esac
if ! command -v valgrind >/dev/null; then
    . "$(dirname "$0")/../lib.sh"
    skip "netproxy's transparent egress under valgrind" "no valgrind (make deps --valgrind)"
    exit 0
fi
export NP_EGRESS_VALGRIND=1
exec "$(dirname "$0")/test_np_egress.sh"
