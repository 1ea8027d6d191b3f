#!/usr/bin/env bash
# Fault: the audit log's disk fills up under netproxy (fault_diskfull.py): tunnels are
# refused rather than run unlogged, and the log stays whole when space comes back.
. "$(dirname "$0")/../lib.sh"
require_root
export TMP
/usr/bin/python3 "$ROOT/tests/faults/fault_diskfull.py"
