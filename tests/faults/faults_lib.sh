# Helpers for the fault tests that drive the assistant (hub, Redis, spokes): source
# after tests/lib.sh. Built on tests/agent/agent_lib.sh (stand-in LLM, private Redis,
# jget, audit_count), with this component's own names: the itest-fault- prefix for
# the gateway namespace and the Redis directory, veth names vft*, the veth pool
# 169.254.120.0/22 and a host-id range of its own, which no other component's tests use.
# The test apps are tests/agent's (fare, mail, ...), tests/hub's alpha and hostile
# (testspoke: a call to be caught in, children it forks), which in namespace mode get a
# veth to netproxy, and escape (escapespoke: a process outside its group).
. "$ROOT/tests/agent/agent_lib.sh"
REDIS_DIR=/tmp/itest-fault-$$-redis
GW_NS=itest-fault-$$
HOST_ID_BASE=$((1100000 + ($$ % 4000) * 64))

fault_setup() {
    mkdir -p "$SPOKES" "$BINDIR"
    local app
    for app in alpha hostile; do
        $PY -c 'import json,sys
m = json.load(open(sys.argv[1]))
m["network"] = {"allow": ["allowed.example"], "ports": [443]}
m["limits"]["call_s"] = 120  # a call to be caught in must outlast a slow machine
json.dump(m, open(sys.argv[2], "w"))' "$ROOT/tests/hub/manifests/$app.json" "$SPOKES/$app.json"
    done
    cp "$ROOT"/tests/faults/manifests/*.json "$SPOKES"/
    cp "$BIN"/tests/hub/testspoke "$BIN"/tests/faults/escapespoke "$BINDIR"/
    agent_setup '{}'
    fault_config "${1:-{\}}"
}

# fault_config EXTRA_JSON: agent_config with this component's network names.
fault_config() {
    agent_config "$($PY -c 'import json,sys
e = json.loads(sys.argv[1])
e.setdefault("network", {"veth_pool": "169.254.120.0/22", "veth_prefix": "vft",
    "gateway_netns": sys.argv[2], "proxy_port": 3128, "host_id_base": int(sys.argv[3]),
    "host_id_count": 64})
print(json.dumps(e))' "$1" "$GW_NS" "$HOST_ID_BASE")"
}

# pids_of_exe PATH: pids of the running processes whose executable is PATH (one find:
# a readlink per process is seconds on a loaded machine).
pids_of_exe() {
    find /proc -mindepth 2 -maxdepth 2 -name exe -lname "$1" 2>/dev/null | cut -d/ -f3
}

# descendants PID: pids of every process below PID (one ps, so a snapshot).
descendants() {
    ps -e -o pid=,ppid= | awk -v root="$1" '
        { parent[$1] = $2; order[NR] = $1 }
        END {
            keep[root] = 1
            do { added = 0
                for (i = 1; i <= NR; i++) { p = order[i]
                    if (!(p in keep) && (parent[p] in keep)) { keep[p] = 1; added = 1; print p } }
            } while (added)
        }'
}

# alive PIDS...: prints the pids of the list that still exist (zombies included).
alive_of() {
    local p
    for p in "$@"; do
        [ -d "/proc/$p" ] && echo "$p"
    done
}
