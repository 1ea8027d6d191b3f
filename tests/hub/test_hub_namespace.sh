#!/usr/bin/env bash
# The hub end to end in `namespace` isolation mode: routing, mediation, hostile spokes,
# hooks, the LLM key, leaks. The cases are in tests/hub/cases.sh.
. "$(dirname "$0")/../lib.sh"
require_root
MODE=namespace
. "$ROOT/tests/hub/cases.sh"
done_testing
