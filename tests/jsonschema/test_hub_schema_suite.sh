#!/usr/bin/env bash
# Debian's JSON-Schema-Test-Suite through `hub schema` itself (issue 25, item 11), with
# nothing handed over: every test of draft7 but refRemote (whose remotes are a web
# server's) gives the suite's answer (draft6 and draft4 pass too, with --draft; they
# are left out of make check for time: each group is a hub process). What this takes that the
# validator's own suite test (test_jsonschema_suite, which hands the meta-schemas over)
# does not show: a schema file whose root is true or false, and "$ref"s to the drafts'
# meta-schemas, built into the validator.
. "$(dirname "$0")/../lib.sh"
SUITE=/usr/share/json-schema-test-suite/tests
if [ ! -d "$SUITE/draft7" ]; then
    skip "$TEST_NAME" "json-schema-test-suite is not installed (make deps)"
    exit 0
fi
for d in 7; do
    /usr/bin/python3 - "$BIN/hub" "$SUITE/draft$d" "$d" "$TMP" >"$TMP/draft$d" <<'EOF'
import glob, json, os, subprocess, sys
hub, suite, draft, tmp = sys.argv[1:5]
ok = total = 0
failed = []
for f in sorted(glob.glob(suite + "/*.json")):
    if os.path.basename(f) == "refRemote.json":
        continue
    for g in json.load(open(f)):
        path = os.path.join(tmp, "schema.json")
        open(path, "w").write(json.dumps(g["schema"]))
        lines = "".join(json.dumps(t["data"]) + "\n" for t in g["tests"])
        p = subprocess.run([hub, "schema", "--draft", draft, path], input=lines,
                           capture_output=True, text=True)
        out = p.stdout.splitlines()
        for i, t in enumerate(g["tests"]):
            total += 1
            if i < len(out) and out[i].startswith("valid") == t["valid"]:
                ok += 1
            else:
                failed.append("%s: %s: %s %s" % (os.path.basename(f), g["description"],
                                                  t["description"], p.stderr.strip()[:120]))
print(ok, total)
for line in failed[:10]:
    print(line)
EOF
    read -r ok total <"$TMP/draft$d"
    tail -n +2 "$TMP/draft$d" | while read -r line; do diag "$line"; done
    is "draft$d through hub schema --draft $d: every test of the suite but refRemote ($ok of $total)" \
        "$ok" "$total"
done
check "draft7 is the suite's 408" test "$(head -n 1 "$TMP/draft7" | cut -d' ' -f2)" -eq 408

# ---- the two pieces on their own ----
echo true >"$TMP/true.json"
echo false >"$TMP/false.json"
is "a schema file that is just true: anything is valid" \
    "$(printf '1\n"x"\n' | "$BIN/hub" schema "$TMP/true.json" | tr '\n' ' ')" "valid valid "
printf '1\n' | "$BIN/hub" schema "$TMP/false.json" >"$TMP/out"
is "... just false: nothing is (exit 1)" "$?" 1
echo '{"$ref": "http://json-schema.org/draft-07/schema#"}' >"$TMP/meta.json"
is "a \$ref to draft-07's meta-schema resolves, built in (nothing is fetched)" \
    "$(printf '{"type":"object"}\n{"type":12}\n' | "$BIN/hub" schema "$TMP/meta.json" | cut -c1-7 | tr '\n' ' ')" \
    "valid invalid "
echo '{"$ref": "http://json-schema.org/draft-09/schema#"}' >"$TMP/nometa.json"
"$BIN/hub" schema "$TMP/nometa.json" </dev/null 2>"$TMP/err"
is "a \$ref to a meta-schema that does not exist is refused (exit 2)" "$?" 2
like "... as not fetched" "$(cat "$TMP/err")" 'remote references are not fetched'
done_testing
