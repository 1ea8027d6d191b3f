#!/usr/bin/env bash
# `hub secrets set|list|rm` and secrets given to a spoke's environment (env mode):
# the value comes from stdin (at a terminal with echo off), never from the command
# line; list and the files never show it; a manifest names the secret and never holds
# the value (`hub spokes add --secret`); a literal value that looks like a key is
# warned about; the spoke gets the value, and what the hub writes (audit, transcript of
# audit.content "full", the spoke's log) has "[secret NAME]" where the value would be.
. "$(dirname "$0")/../lib.sh"
require_root
MODE=none
. "$ROOT/tests/hub/hub_lib.sh"
hub_setup
STORE=$TMP/store
KEYFILE=$TMP/store.key
hub_config "{\"secrets\": {\"dir\": \"$STORE\", \"key_file\": \"$KEYFILE\"},
             \"audit\": {\"path\": \"$AUDIT\", \"content\": \"full\"}}"
TRANSCRIPT=$TMP/audit.transcript.jsonl
# H ARGS...: the hub with this test's configuration, given before a spoke's command.
H() {
    if [ "$1 ${2:-}" = "spokes add" ]; then
        "$BIN/hub" spokes add --config "$CONF" "${@:3}"
    else
        "$BIN/hub" "$@" --config "$CONF"
    fi
}
# has DESC TEXT REGEX: like, without printing all of TEXT when it fails.
has() { if echo "$2" | grep -Eq -- "$3"; then ok "$1"; else not_ok "$1: /$3/ not in: $(echo "$2" | head -c 400)"; fi; }
VALUE="tok_$$_3f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c"

# ---- set, list, rm ----
out=$(printf '%s\n' "$VALUE" | H secrets set apitoken 2>&1)
is "set reads the value from stdin" "$?" 0
like "... and says where it goes" "$out" "secret apitoken stored \\(given to the spoke's environment\\)"
like "... and that it made the store key" "$out" "made the store key $KEYFILE"
is "the store is 0700" "$(stat -c %a "$STORE")" 700
is "the secret's file is 0600" "$(stat -c %a "$STORE/apitoken.json")" 600
is "the key is 0600" "$(stat -c %a "$KEYFILE")" 600
refute "the file does not hold the value" grep -q "$VALUE" "$STORE/apitoken.json"
H secrets set apitoken "$VALUE" >/dev/null 2>&1
is "a value on the command line is a usage error (it would be in ps and the history)" "$?" 2
list=$(H secrets list 2>&1)
like "list names the secret" "$list" "apitoken"
like "... and where it goes" "$list" "given to the spoke's environment"
unlike "... never its value" "$list" "$VALUE"
printf 'ghp_%s\n' "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8" |
    H secrets set gh --hosts api.github.com,*.githubusercontent.com --header Authorization >/dev/null 2>&1
is "set --hosts --header" "$?" 0
is "list --format json: hosts, header, mode" \
    "$(H secrets list --format json | jget '[(s["name"], s["hosts"], s.get("header"), s["mode"]) for s in d]')" \
    '[["apitoken", [], null, "env"], ["gh", ["api.github.com", "*.githubusercontent.com"], "Authorization", "inject"]]'
printf 'ghp_%s\n' "Z1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8" | H secrets set gh >/dev/null 2>&1
is "set again with a new value alone keeps hosts and header (a rotation never moves the key into the jail)" \
    "$(H secrets list --format json | jget '[(s["hosts"], s.get("header")) for s in d if s["name"] == "gh"]')" \
    '[[["api.github.com", "*.githubusercontent.com"], "Authorization"]]'
out=$(echo "short-one" | H secrets set tiny --hosts api.example.com 2>&1)
is "a value too short for a stand-in is refused for --hosts" "$?" 2
like "... saying why" "$out" "a stand-in needs at least 16"
out=$(printf 'tab\there%s\n' "$VALUE" | H secrets set tabbed --hosts api.example.com 2>&1)
is "... and so is one that cannot go into a header" "$?" 2
like "... saying why" "$out" "cannot be put into a request header" 
out=$(H secrets set empty </dev/null 2>&1)
is "an empty value is refused" "$?" 2
like "... saying where the value comes from" "$out" "no value on standard input"
out=$(echo x | H secrets set '../escape' 2>&1)
is "a name with a path in it is refused" "$?" 2

# At a terminal: no echo, and the line typed is the value.
$PY - "$BIN/hub" "$CONF" "$VALUE-tty" >"$TMP/tty.out" 2>&1 <<'PYEOF'
import os, pty, sys, time, select
hub, conf, value = sys.argv[1:4]
pid, fd = pty.fork()
if pid == 0:
    os.execv(hub, [hub, "secrets", "set", "typed", "--config", conf])
out = b""
def read_for(t):
    global out
    end = time.time() + t
    while time.time() < end:
        r, _, _ = select.select([fd], [], [], 0.1)
        if r:
            try:
                d = os.read(fd, 4096)
            except OSError:
                return
            if not d:
                return
            out += d
            if b"not shown" in out and b"\x00sent" not in out:
                out += b"\x00sent"
                os.write(fd, value.encode() + b"\n")
read_for(10)
got, status = os.waitpid(pid, os.WNOHANG)
if got == 0:
    os.kill(pid, 9)
    _, status = os.waitpid(pid, 0)
text = out.replace(b"\x00sent", b"").decode(errors="replace")
print("status", os.waitstatus_to_exitcode(status))
print("echoed" if value in text else "not echoed")
print(text.replace(value, "<VALUE>"))
PYEOF
like "at a terminal the value is read and stored" "$(cat "$TMP/tty.out")" "status 0"
like "... without echo" "$(head -2 "$TMP/tty.out")" "not echoed"
diag "$(tail -n +3 "$TMP/tty.out" | tr '\r\n' '  ')"

# ---- manifests: --secret, and literal keys ----
out=$(H spokes add keyed --secret API_TOKEN=nosuch --yes -- "$BINDIR/testspoke" 2>&1)
is "spokes add --secret with a secret not in the store fails" "$?" 2
like "... naming the command that adds it" "$out" "secret nosuch is not in the store .*hub secrets set nosuch"
out=$(H spokes add keyed --secret API_TOKEN=apitoken --env OTHER=ghp_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8 \
    --yes -- "$BINDIR/testspoke" 2>&1)
is "spokes add --secret API_TOKEN=apitoken" "$?" 0
like "a literal --env value that looks like a key is warned about" "$out" \
    "--env OTHER=...: the value looks like a GitHub token \\(ghp_\\).*--secret OTHER=NAME"
is "the manifest names the secret, never its value" \
    "$(jget 'd["env"]["API_TOKEN"]' <"$SPOKES/keyed.json")" '{"secret": "apitoken"}'
refute "... nowhere in the file" grep -q "$VALUE" "$SPOKES/keyed.json"
out=$(H spokes 2>&1)
has "loading a manifest with a literal key warns, naming the file and the variable" "$out" \
    "keyed.json: env.OTHER looks like a GitHub token \\(ghp_\\)"
unlike "... without printing the value" "$out" "a1B2c3D4e5F6g7H8"
has "hub spokes shows which variable holds which secret" "$out" "secret: +API_TOKEN from the store's apitoken"

# ---- the spoke gets the value; what the hub writes does not ----
# (secret_scan log: by default the hub would block a result carrying the value, which
# tests/audit/test_audit_secretscan.sh checks; here the spoke must show it has it.)
$PY -c 'import json,sys
m = json.load(open(sys.argv[1])); m["secret_scan"] = "log"; json.dump(m, open(sys.argv[1], "w"))' \
    "$SPOKES/keyed.json"
: >"$AUDIT"
res=$(hubc keyed.env "{\"marker\": \"$VALUE\"}" 2>"$TMP/call.err")
is "env mode: the call ran" "$?" 0
is "env mode: the spoke's environment holds the value" \
    "$(echo "$res" | jget 'd["structuredContent"]["in_environ"]')" true
hubc keyed.log "{\"text\": \"the token is $VALUE, do not tell\"}" >/dev/null 2>&1
is "a call that logs the value ran" "$?" 0
log=$(cat "$RUN"/spokes/tester/keyed.log 2>/dev/null)
like "the spoke's log has the secret's name where the value was" "$log" \
    "the token is \\[secret apitoken\\], do not tell"
is "the value is in no log, audit or transcript file" \
    "$(grep -rl "$VALUE" "$RUN" "$AUDIT" "$TRANSCRIPT")" ""
check "the transcript of audit.content full is there" test -s "$TRANSCRIPT"
has "... and has the result, redacted" "$(cat "$TRANSCRIPT")" "API_TOKEN=\\[secret apitoken\\]"

# ---- rm ----
out=$(H secrets rm apitoken 2>&1)
is "rm" "$?" 0
like "rm names the spokes that use it" "$out" "keyed \\(API_TOKEN\\)"
out=$(hubc keyed.whoami '{}' 2>&1)
is "a spoke whose secret is gone does not start" "$?" 3
like "... and says how to add it" "$out" \
    "secret apitoken \\(env API_TOKEN of spoke keyed\\) is not in the store .*hub secrets set apitoken"
H secrets rm apitoken >/dev/null 2>&1
is "rm of a secret that is not there exits 3" "$?" 3
done_testing
