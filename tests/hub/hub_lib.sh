# Helpers for the hub's end-to-end tests; source after tests/lib.sh with MODE set.
#
# Each test gets its own copy of the spoke binaries (so that "is any of its processes
# left?" has an unambiguous answer), its own spokes directory (tests/hub/manifests
# plus the example manifests of config/spokes), data root, run directory and audit
# log under $TMP, and a hub.json naming them. Network names use the itest-hub- and
# vhb prefixes and a /27 of the veth range 169.254.104.0/22, which no other component's
# tests use: the /30s are a host-wide pool (hubs skip one another's), so a run takes
# one of the 32 /27s by its pid, and its spokes get the addresses below (VETH_HOST1 the
# first networked spoke's proxy side, VETH_HOST2 the second's) unless another run of
# the same test holds the same /27.

PY=/usr/bin/python3
SPOKES=$TMP/spokes
BINDIR=$TMP/bin
DATA=$TMP/data
RUN=$TMP/run
AUDIT=$TMP/audit.jsonl
PROXY_AUDIT=$TMP/netproxy.jsonl
CONF=$TMP/hub.json
PROFILE=$ROOT/config/profiles/spoke.json
GW_NS=itest-hub-$$
HOST_ID_BASE=$((600000 + ($$ % 4000) * 64))
_k=$(($$ % 32))
VETH_POOL=169.254.$((104 + _k / 8)).$(((_k % 8) * 32))/27
VETH_HOST1=169.254.$((104 + _k / 8)).$(((_k % 8) * 32 + 1))
VETH_HOST2=169.254.$((104 + _k / 8)).$(((_k % 8) * 32 + 5))

hub_setup() {
    mkdir -p "$SPOKES" "$BINDIR"
    cp "$ROOT"/tests/hub/manifests/*.json "$ROOT"/config/spokes/*.json "$SPOKES"/
    cp "$BIN"/tests/hub/testspoke "$BIN"/spokes/* "$BINDIR"/
    # A sanitizer build's spokes reserve terabytes of address space for ASan's shadow
    # memory, which any RLIMIT_AS kills before main(); LeakSanitizer cannot run in a
    # pid namespace under seccomp. Only there: no address-space limit, no leak check.
    case "$BUILD" in
    *san*)
        $PY -c 'import json,sys
p = json.load(open(sys.argv[1])); p["limits"]["as_mb"] = 0; json.dump(p, open(sys.argv[2], "w"))
for f in sys.argv[3:]:
    m = json.load(open(f)); m.get("limits", {}).pop("as_mb", None)
    m.setdefault("env", {})["ASAN_OPTIONS"] = "detect_leaks=0"; json.dump(m, open(f, "w"))' \
            "$ROOT/config/profiles/spoke.json" "$TMP/profile.json" "$SPOKES"/*.json
        PROFILE=$TMP/profile.json ;;
    esac
    # Under tests/valgrind/run (the hub runs under memcheck): valgrind refuses to change
    # the hard RLIMIT_NOFILE, so process-mode spokes keep the hub's; the rest applies.
    if [ -n "${ISOLATE_VALGRIND:-}" ]; then
        $PY -c 'import json,sys
p = json.load(open(sys.argv[1])); p["limits"]["nofile"] = 0; json.dump(p, open(sys.argv[2], "w"))
for f in sys.argv[3:]:
    m = json.load(open(f)); m.get("limits", {}).pop("nofile", None); json.dump(m, open(f, "w"))' \
            "$PROFILE" "$TMP/profile-vg.json" "$SPOKES"/*.json
        PROFILE=$TMP/profile-vg.json
    fi
    hub_config "${1:-{\}}"
}

# hub_config EXTRA_JSON: writes $CONF, merged with EXTRA_JSON (top-level keys replace).
hub_config() {
    $PY - "$1" <<EOF
import json, sys
conf = {
    "isolation": "$MODE",
    "user": "tester",
    "spokes_dir": "$SPOKES",
    "spoke_bin_dir": "$BINDIR",
    "profile": "$PROFILE",
    "data_root": "$DATA",
    "run_dir": "$RUN",
    "audit": "$AUDIT",
    "call_timeout_ms": 20000,
    "start_timeout_ms": 10000,
    "network": {"veth_pool": "$VETH_POOL", "gateway_netns": "$GW_NS",
                "proxy_port": 3128, "host_id_base": $HOST_ID_BASE, "host_id_count": 64},
    "netproxy": {"binary": "$BIN/netproxy", "audit": "$PROXY_AUDIT"},
    "llm": {"api_key_env": "OPENAI_API_KEY"},
}
conf.update(json.loads(sys.argv[1]))
json.dump(conf, open("$CONF", "w"), indent=1)
EOF
}

# hubc ARGS...: hub call with this test's configuration; stdout and stderr separate.
hubc() {
    "$BIN/hub" call --config "$CONF" "$@"
}

# jlines EXPR: applies EXPR to each JSON line on stdin (d), prints the results.
jlines() {
    $PY -c 'import json,sys
for line in sys.stdin:
    if line.strip():
        d = json.loads(line)
        v = eval(sys.argv[1], {"d": d})
        print(json.dumps(v) if isinstance(v, (dict, list, bool)) or v is None else v)' "$1"
}

# host_veths [PID]: veths in the host's network namespace named as the hub names them
# (vhb<hub pid in hex>-<slot>; of the hub PID only, if given). Counted by name, not in
# total, so that other tests' veths coming and going at the same time do not count.
host_veths() {
    local pat=vhb
    [ -n "${1:-}" ] && pat=vhb$(printf %x "$1")-
    ip -o link show type veth | awk -F': ' '{print $2}' | grep -c "^$pat" || true
}

# Processes still running from this test's copy of the spoke binaries.
leftover_procs() { pids_by_exe "$BINDIR/*" | wc -l; }

# mode_has_jail: process and namespace modes need nsjail-lite in the build.
mode_needs_jail_skip() {
    if [ "$MODE" != none ] && ! "$BIN/hub" call --config "$CONF" alpha.whoami '{}' >/dev/null 2>"$TMP/probe.err"; then
        if grep -q "needs nsjail-lite" "$TMP/probe.err"; then
            skip "hub end-to-end in $MODE mode" "this build has no nsjail-lite yet"
            exit 0
        fi
    fi
}
