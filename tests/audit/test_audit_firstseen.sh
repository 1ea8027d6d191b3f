#!/usr/bin/env bash
# netproxy --first-seen: isolate.first_seen on allowed connects, per user, app and
# registrable domain, remembered across restarts in its store; none on refusals; a
# store with junk in it loads (np_firstseen.py).
. "$(dirname "$0")/../lib.sh"
require_root
export TMP
PYTHONPATH="$ROOT/tests/netproxy" /usr/bin/python3 "$ROOT/tests/audit/np_firstseen.py"
