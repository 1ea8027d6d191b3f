#!/usr/bin/env bash
# Separate instances of one app (the repl-server's sessions) and the user's one
# instance of it, in namespace mode: each has its own /data, whichever starts first.
# Regression: instance directories used to live inside the app's directory, which the
# app's own instance gets as /data (chowned to its jail uid), so that instance read
# every session's files, and a session could no longer start once it had run.
. "$(dirname "$0")/../lib.sh"
require_root
MODE=namespace
. "$ROOT/tests/hub/hub_lib.sh"
hub_setup

out=$(hubc --instance s1 alpha.write '{"name":"secret","text":"s1-private"}')
is "a session writes a file to its /data" "$(echo "$out" | jget 'd["structuredContent"]["path"]')" /data/secret
for path in /data/s1/secret s1/secret /data/alpha.s1/secret ../alpha.s1/secret; do
    out=$(hubc alpha.read "{\"path\":\"$path\"}")
    is "the app's own instance cannot read it as $path" \
        "$(echo "$out" | jget 'd["structuredContent"]["ok"]')" false
done
out=$(hubc --instance s1 alpha.read '{"path":"secret"}')
is "the session starts again after the app's own instance ran, and keeps its file" \
    "$(echo "$out" | jget 'd["structuredContent"]["text"]')" s1-private
out=$(hubc --instance s2 alpha.read '{"path":"/data/../alpha.s1/secret"}')
is "another session cannot read it either" "$(echo "$out" | jget 'd["structuredContent"]["ok"]')" false
is "the app's directory holds no session's directory" \
    "$(find "$DATA/tester/alpha" -mindepth 1 -maxdepth 1 -type d | wc -l)" 0
done_testing
