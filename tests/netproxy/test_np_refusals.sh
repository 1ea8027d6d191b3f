#!/usr/bin/env bash
# netproxy's refusals from a hostile spoke's side (np_refusals.py): connections the
# kernel queued before a spoke's listener closes (spoke-remove, stop) are decided and on
# record; a flood of refused connections stays within the spoke's record budget while
# another spoke's records stay whole; the global pending limit is shared.
. "$(dirname "$0")/../lib.sh"
require_root
export TMP
/usr/bin/python3 "$ROOT/tests/netproxy/np_refusals.py"
