#!/usr/bin/env bash
# A hostile spoke against netproxy's injecting path (np_attack.py, issue 34): h2 `host`
# fronting, chunk extensions, values echoed back by the API, a PING flood, bytes sent
# during netproxy's own upstream handshake.
. "$(dirname "$0")/../lib.sh"
require_root
if ! command -v node >/dev/null; then
    skip "$TEST_NAME" "node is missing (make deps)"
    exit 0
fi
export TMP
/usr/bin/python3 "$ROOT/tests/secrets/np_attack.py"
