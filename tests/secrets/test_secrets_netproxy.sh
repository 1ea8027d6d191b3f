#!/usr/bin/env bash
# netproxy's injection at the wire (np_inject.py): a test hub on the control channel,
# clients in raw TLS, curl over HTTP/1.1 and HTTP/2, plain HTTP; the stand-in APIs on
# loopback record what they receive.
. "$(dirname "$0")/../lib.sh"
require_root
if ! command -v node >/dev/null; then
    skip "$TEST_NAME" "node is missing (make deps)"
    exit 0
fi
export TMP
/usr/bin/python3 "$ROOT/tests/secrets/np_inject.py"
