#!/usr/bin/env bash
# netproxy --audit-key: its records chained and signed across a logrotate rename and
# SIGHUP, sealed at SIGTERM, intact for hub audit verify; a refusal's record deleted
# from the rotated file is found (np_chain.py).
. "$(dirname "$0")/../lib.sh"
require_root
export TMP
PYTHONPATH="$ROOT/tests/netproxy" /usr/bin/python3 "$ROOT/tests/audit/np_chain.py"
