#!/usr/bin/env bash
# netproxy --workers 2 (np_workers.py): thousands of tunnels spread over two event
# loops, standalone (a SO_REUSEPORT socket per worker) and in hub mode (one socket the
# hub passes, watched by both); one audit stream in which every line parses and every
# decision is paired with its close, in order; the seccomp filter on every thread; a
# drain that waits for a tunnel on either worker.
. "$(dirname "$0")/../lib.sh"
require_root
export TMP
/usr/bin/python3 "$ROOT/tests/netproxy/np_workers.py"
