#!/usr/bin/env bash
# Memory (hub/memory/memory.h) against a real private redis-server and in-process: the
# assertions are in memory_check.c; this wrapper owns the server's directory and makes
# sure the daemon is stopped whatever happens to the check.
. "$(dirname "$0")/../lib.sh"
dir="/tmp/itest-memory-$$"
at_exit "rm -rf '$dir'"
at_exit "'$ROOT/scripts/redis-private' stop '$dir'"
"$BIN/tests/memory/memory_check" "$dir"
