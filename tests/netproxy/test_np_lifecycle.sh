#!/usr/bin/env bash
# netproxy's process lifecycle and audit guarantees (np_lifecycle.py): SIGHUP reopens
# the audit log after logrotate's rename, SIGTERM drains, a full disk refuses tunnels
# instead of running them unlogged, --report-only, and audit to stdout.
. "$(dirname "$0")/../lib.sh"
require_root
export TMP
/usr/bin/python3 "$ROOT/tests/netproxy/np_lifecycle.py"
