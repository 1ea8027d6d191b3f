#!/usr/bin/env bash
# The LLM key from the attacker's side: a spoke looks for it in its environment,
# every /proc/PID/environ and the memory of every process it can read, after the hub
# has used the key for real (the stand-in checks the Authorization header).
#   The hub reads the key once, wipes it from its environment and keeps it in pages
#   marked MADV_WIPEONFORK, so the processes the hub forks without exec (nsjail-lite's
#   monitor, the jail's init) hold zeroes where the key was.
#   none and process modes: the spoke runs as root without namespaces, so it can read
#   the hub's own memory - and the scan finds the key there (the control that shows
#   the scan works), but in no copy of the hub.
#   namespace mode: the spoke can read no other process's memory at all.
. "$(dirname "$0")/../lib.sh"
require_root
. "$ROOT/tests/agent/agent_lib.sh"

marker="sk-itest-$$-$RANDOM$RANDOM"
xmarker=$($PY -c 'import sys; print(bytes(b ^ 0x55 for b in sys.argv[1].encode()).hex())' "$marker")
for MODE in none process namespace; do
    rm -rf "$DATA" "$RUN" "$AUDIT"
    agent_setup
    standin_start "[plan((\"keyprobe__scan\", {\"xmarker\": \"$xmarker\"})), text(\"scanned\")]"
    echo "look for the key" | OPENAI_API_KEY=$marker "$BIN/hub" --config "$CONF" --llm "$LLM_URL" \
        --memory none --answers allow --json >"$TMP/out" 2>"$TMP/err" &
    hub=$!
    wait $hub
    res=$(jget 'd["calls"][0]["result"]["structuredContent"]' <"$TMP/out")
    is "$MODE: the hub used the key (the stand-in got it)" \
        "$(standin_requests "r['headers'].get('authorization') == 'Bearer $marker'")" 2
    is "$MODE: the key is not in the spoke's environment" "$(echo "$res" | jget 'd["in_environ"]')" false
    is "$MODE: ... nor in any /proc/PID/environ it can read" \
        "$(echo "$res" | jget '[h for h in d["hits"] if h["where"] == "environ"]')" "[]"
    # The processes between the spoke and the hub (the ancestors below the hub; in
    # namespace mode all of them, as the hub is outside the spoke's pid namespace).
    between="(d['ancestors'][:d['ancestors'].index($hub)] if $hub in d['ancestors'] else d['ancestors'])"
    copies=$(echo "$res" | jget "[h['pid'] for h in d['hits'] if int(h['pid']) in $between]")
    san_copy=$(echo "$res" | jget "[h['pid'] for h in d['hits'] if int(h['pid']) in $between and 'OPENAI_API_KEY' in h.get('map', '')]")
    if [ "$copies" != "[]" ] && [ "$copies" = "$san_copy" ] && [[ "$BUILD" == *san* ]]; then
        # ASan reads /proc/self/environ into a buffer of its own at start, before main()
        # can take the key out; a fork inherits that buffer. Not in a normal build.
        skip "$MODE: ... nor in the memory of any process between the spoke and the hub" \
            "the sanitizer runtime's own copy of the initial environment"
    else
        is "$MODE: ... nor in the memory of any process between the spoke and the hub" "$copies" "[]"
    fi
    [ "$copies" = "[]" ] || diag "found: $(echo "$res" | jget "[h for h in d['hits'] if int(h['pid']) in $between]")"
    case $MODE in
    none)
        is "none: control: the scan finds the key in the hub's own memory (root, no namespaces)" \
            "$(echo "$res" | jget "[h['where'] for h in d['hits'] if int(h['pid']) == $hub]")" '["mem"]'
        ;;
    process)
        is "process: the spoke's parent is nsjail-lite's monitor, a fork of the hub" \
            "$(echo "$res" | jget "d['ancestors'][1] == $hub")" true
        check "process: ... whose memory the spoke could read" test "$(echo "$res" | jget 'd["mem_readable"]')" -gt 0
        is "process: control: the scan finds the key in the hub's own memory (root, no namespaces)" \
            "$(echo "$res" | jget "[h['where'] for h in d['hits'] if int(h['pid']) == $hub]")" '["mem"]'
        ;;
    namespace)
        is "namespace: the spoke finds the key nowhere" "$(echo "$res" | jget 'd["hits"]')" "[]"
        is "namespace: ... it cannot read any other process's memory" "$(echo "$res" | jget 'd["mem_readable"]')" 0
        is "namespace: ... and sees no process of the host" "$(echo "$res" | jget 'd["ancestors"]')" "[1]"
        ;;
    esac
done
done_testing
