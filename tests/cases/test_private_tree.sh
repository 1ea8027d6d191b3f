#!/usr/bin/env bash
# The project where a new user puts it: a copy of the tree (configuration, scripts and
# this build's binaries) in a private directory (0700, like Debian's /root), which a
# jail's unprivileged host id cannot traverse. Namespace mode must work there with no
# change of permissions on the host (the privileged side hands the jail its bind
# sources by descriptor): nsjail-lite's own binds, a hub call, one case study. Then a
# spoke that cannot start: the case study and `make demo`'s script must say `error`
# for every step it spoils, never a verdict, and exit non-zero.
. "$(dirname "$0")/../lib.sh"
require_root
PY=/usr/bin/python3

PRIV=$(mktemp -d "/tmp/isolate-private-$$.XXXXXX")
at_exit "rm -rf '$PRIV'"
TREE=$PRIV/home/isolategpt
mkdir -p "$TREE/$BUILD" "$PRIV/secret"
chmod 700 "$PRIV" "$PRIV/home"
is "the copy's parent is private (0700)" "$(stat -c %a "$PRIV")" 700
cp -a "$ROOT/config" "$ROOT/scripts" "$TREE/"
cp -a "$BIN/hub" "$BIN/nsjail-lite" "$BIN/netproxy" "$BIN/spokes" "$TREE/$BUILD/"

# Our own veth pool and host ids: another hub (a demo, another test) may be running.
HOST_ID_BASE=$((1500000 + ($$ % 4000) * 64))
SAN=0
case "$BUILD" in *san*) SAN=1 ;; esac
$PY - "$TREE/config" "$HOST_ID_BASE" "$SAN" <<'EOF'
import json, os, sys
conf, base, san = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1"
h = json.load(open(os.path.join(conf, "hub.json")))
h["network"].update({"veth_pool": "169.254.88.0/22", "host_id_base": base, "host_id_count": 64})
json.dump(h, open(os.path.join(conf, "hub.json"), "w"))
if san:
    # As tests/cases/test_cases_run.sh: ASan's shadow memory needs no address-space limit.
    p = os.path.join(conf, "profiles/spoke.json")
    pr = json.load(open(p)); pr["limits"]["as_mb"] = 0; json.dump(pr, open(p, "w"))
    d = os.path.join(conf, "spokes")
    for f in os.listdir(d):
        m = json.load(open(os.path.join(d, f)))
        m.get("limits", {}).pop("as_mb", None)
        m.setdefault("env", {})["ASAN_OPTIONS"] = "detect_leaks=0"
        json.dump(m, open(os.path.join(d, f), "w"))
EOF
HUB=$TREE/$BUILD/hub

# 1. nsjail-lite: a read-only bind from inside the private directory.
echo "private note" >"$PRIV/secret/note"
out=$("$TREE/$BUILD/nsjail-lite" --profile "$TREE/config/profiles/spoke.json" \
    --bind-ro "$PRIV/secret:/secret" -- /bin/cat /secret/note 2>"$TMP/nsjail.err")
rc=$?
is "nsjail-lite binds a source under a 0700 directory (exit status)" "$rc" 0
is "... and the jail reads it" "$out" "private note"
out=$("$TREE/$BUILD/nsjail-lite" --profile "$TREE/config/profiles/spoke.json" \
    --bind-ro "$PRIV/secret:/secret" -- /bin/sh -c 'echo x > /secret/note' 2>&1)
like "... read-only inside (the jail's write is refused)" "$out" "Read-only file system"
is "... and the host file is unchanged" "$(cat "$PRIV/secret/note")" "private note"

# Without CAP_SYS_ADMIN the jail clones its sources itself, as its own host id, which
# cannot reach them: the error names the directory in the way and what to do.
out=$(setpriv --bounding-set -sys_admin "$TREE/$BUILD/nsjail-lite" \
    --profile "$TREE/config/profiles/spoke.json" --bind-ro "$PRIV/secret:/secret" \
    -- /bin/cat /secret/note 2>&1)
rc=$?
is "without CAP_SYS_ADMIN a private source is refused (exit 125)" "$rc" 125
like "... naming the directory that blocks it and its mode" "$out" \
    "host uid [0-9]+ cannot search $PRIV \(mode 0700\)"

# 2. A hub call in namespace mode: spoke binary, data directory, all under the copy.
out=$(cd "$PRIV" && "$HUB" call --config "$TREE/config/hub.json" --isolation namespace \
    --user rt notes.list '{}' 2>"$TMP/call.err")
rc=$?
is "hub call notes.list in namespace mode from the private tree (exit status)" "$rc" 0
like "... answers with the notes" "$out" '"structuredContent"'
unlike "... with no spoke-start failure" "$(cat "$TMP/call.err")" "could not start|Permission denied"

# 3. One case study in namespace mode: every step ran and was blocked, with a layer.
"$HUB" casestudies --config "$TREE/config/hub.json" --isolation namespace \
    --case app_compromise --format json >"$TMP/cs.json" 2>"$TMP/cs.err"
rc=$?
is "hub casestudies app_compromise (namespace) from the private tree (exit status)" "$rc" 0
counts=$($PY - "$TMP/cs.json" <<'EOF'
import collections, json, sys
doc = json.load(open(sys.argv[1]))
c = collections.Counter()
for case in doc["cases"]:
    for s in case["steps"]:
        c[s["outcome"]] += 1
        if s["outcome"] == "blocked" and s.get("layer") in (None, "unexplained"):
            c["no-layer"] += 1
print(c["blocked"], c["succeeded"], c["error"], c["no-layer"])
EOF
)
read -r blocked succeeded errors nolayer <<<"${counts:-0 0 0 0}"
is "... every step blocked (7 of app_compromise)" "$blocked" 7
is "... none succeeded, none could not run" "$succeeded $errors" "0 0"
is "... each blocked step names its layer" "$nolayer" 0

# 4. A spoke that cannot start (its program is not executable): no verdict for the
# steps that need it, `error` with the reason, and a non-zero exit.
chmod a-x "$TREE/$BUILD/spokes/metro_hail"
"$HUB" casestudies --config "$TREE/config/hub.json" --isolation namespace \
    --case app_compromise --format json >"$TMP/broken.json" 2>"$TMP/broken.err"
rc=$?
is "a victim that cannot start: hub casestudies exits 3" "$rc" 3
read -r metro other why < <($PY - "$TMP/broken.json" <<'EOF'
import json, sys
steps = [s for c in json.load(open(sys.argv[1]))["cases"] for s in c["steps"]]
metro = [s for s in steps if "metro_hail" in s["attack"]]
other = [s for s in steps if "metro_hail" not in s["attack"]]
bad = [s for s in metro if s["outcome"] != "error" or s.get("layer") is not None
       or "could not start" not in s["evidence"]]
print(len(metro) - len(bad), ",".join(sorted(set(s["outcome"] for s in other))),
      (bad[0]["attack"] + ":" + bad[0]["outcome"]) if bad else "-")
EOF
)
is "... every step that needs metro_hail (5) is an error with the start failure, no layer" \
    "$metro" 5
is "... (first one that is not: none)" "$why" "-"
is "... the steps that do not need it still ran and were blocked" "$other" "blocked"

out=$(cd "$TREE" && BUILD=$BUILD timeout 300 scripts/demo 2>&1)
rc=$?
is "make demo's script with a spoke that cannot start exits 3" "$rc" 3
like "... its table says ERROR for the steps that did not run" "$out" "ERROR \(did not run\)"
like "... and the namespace summary counts them" "$out" \
    "namespace +[0-9]+ of 22 attack steps SUCCEEDED .*, [1-9][0-9]* could not run"
unlike "... and no namespace step that could not run is called blocked" \
    "$(grep -E '^  (inflate|overwrite|kill|ptrace|write)-metro_hail' <<<"$out")" "blocked"

done_testing
