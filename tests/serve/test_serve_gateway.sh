#!/usr/bin/env bash
# hub serve's gateway shape serves every app's resources, prompts and completion under
# names of its own making (isolategpt:APP:URI, APP__PROMPT), routed to the app each
# belongs to and answered in those names (tests/serve/gateway_probe.py). The
# conformance spoke has resources and prompts, the probe apps have none. None mode.
. "$(dirname "$0")/../lib.sh"
require_root
MODE=none
. "$ROOT/tests/serve/serve_lib.sh"
serve_setup "$ROOT/tests/serve/manifests/conformance.json"
$PY "$ROOT/tests/serve/gateway_probe.py" "$BIN/hub" serve --stdio --config "$CONF"
is "each app's list is one audited request of the hub" \
    "$(audit_count "g(r,'event.action')=='tool-call' and g(r,'isolate.tool')=='resources/list'")" \
    "$(ls "$SPOKES"/*.json | wc -l)"
done_testing
