#!/usr/bin/env bash
# Spokes started before they are needed, and stopped when idle (issue 29): `hub serve`
# with prestart none (the first call starts its spoke), session (every app the session
# is offered starts when it opens), a manifest's own prestart, service (the apps of
# every user in the tokens file start with the service, before any client comes), and
# idle_s (a spoke without a call is stopped, audited spoke-kill reason idle, and its
# next call starts it again). Spokes in none mode: what this needs is the hub's loop.
# Each stdio hub is --standalone: its own options are what each step checks.
. "$(dirname "$0")/../lib.sh"
require_root
MODE=none
. "$ROOT/tests/serve/serve_lib.sh"
serve_setup
PROBE=$ROOT/tests/serve/prestart_probe.py
APPS=alpha,beta,gamma,delta

out=$($PY "$PROBE" none "$AUDIT" "$BIN/hub" serve --stdio --standalone --config "$CONF" 2>>"$TMP/serve.err")
is "prestart none: the session's call is answered" "$(echo "$out" | jget 'd["echo"]')" true
is "... its spoke started for the call, after the call's record" \
    "$(echo "$out" | jget 'd["started_by_call"]')" true
is "... and no other app was started" "$(echo "$out" | jget 'd["others_started"]')" 0

: >"$AUDIT"
out=$(PROBE_APPS=$APPS $PY "$PROBE" session "$AUDIT" "$BIN/hub" serve --stdio --standalone --config "$CONF" \
    --prestart session 2>>"$TMP/serve.err")
is "prestart session: the four apps' spokes start when the session opens" \
    "$(echo "$out" | jget 'd["all_started"]')" true
is "... a call finds its spoke running (started before the call, once)" \
    "$(echo "$out" | jget '[d["echo"], d["started_before_call"], d["alpha_starts"]]')" \
    '[true, true, 1]'

: >"$AUDIT"
$PY -c 'import json,sys
m = json.load(open(sys.argv[1])); m["prestart"] = "session"; json.dump(m, open(sys.argv[1], "w"))' \
    "$SPOKES/beta.json"
out=$($PY "$PROBE" manifest "$AUDIT" "$BIN/hub" serve --stdio --standalone --config "$CONF" 2>>"$TMP/serve.err")
is "a manifest's prestart: beta starts with the session" "$(echo "$out" | jget 'd["beta_started"]')" true
is "... alpha, left to hub.json (none), starts with its first call" \
    "$(echo "$out" | jget '[d["echo"], d["alpha_started_by_call"]]')" '[true, true]'
out=$("$BIN/hub" serve --stdio --standalone --config "$CONF" --prestart later 2>&1 </dev/null)
is "--prestart takes none, session or service (exit 2)" "$?" 2
like "... and says so" "$out" "--prestart must be none, session or service"
$PY -c 'import json,sys
m = json.load(open(sys.argv[1])); m["prestart"] = "always"; json.dump(m, open(sys.argv[2], "w"))' \
    "$SPOKES/beta.json" "$TMP/bad.json"
mkdir -p "$TMP/badspokes" && cp "$TMP/bad.json" "$TMP/badspokes/beta.json"
out=$("$BIN/hub" spokes --config "$CONF" --spokes "$TMP/badspokes" 2>&1)
like "a manifest's prestart must be one of them too" "$out" 'prestart: must be "none", "session" or "service"'

# ---- service: every user of the tokens file, before any client ----
: >"$AUDIT"
TOKENS=$TMP/tokens
"$BIN/hub" serve token add tester --tokens "$TOKENS" >/dev/null
"$BIN/hub" serve token add other --tokens "$TOKENS" >/dev/null
"$BIN/hub" serve token add other --tokens "$TOKENS" >/dev/null
serve_http_start --tokens "$TOKENS" --app alpha --prestart service
wait_for "alpha's spokes of both users" 60 audit_at_least 2 \
    'g(r,"event.action")=="spoke-start" and g(r,"event.outcome")=="success"'
is "prestart service: alpha started for each user of the tokens file, once, with no client" \
    "$(audit_count 'g(r,"event.action")=="spoke-start" and g(r,"event.outcome")=="success" and g(r,"isolate.app")=="alpha"'),$(audit_count 'g(r,"event.action")=="spoke-start" and g(r,"isolate.user")=="tester"'),$(audit_count 'g(r,"event.action")=="spoke-start" and g(r,"isolate.user")=="other"')" \
    "2,1,1"
is "... and nothing else was started (--app alpha)" \
    "$(audit_count 'g(r,"event.action")=="spoke-start" and g(r,"isolate.app")!="alpha"')" 0
kill "$SERVE_PID"
wait "$SERVE_PID" 2>/dev/null

# ---- idle_s: a manifest's wins over --spoke-idle ----
: >"$AUDIT"
$PY -c 'import json,sys
m = json.load(open(sys.argv[1])); m["idle_s"] = 1; json.dump(m, open(sys.argv[1], "w"))' \
    "$SPOKES/gamma.json"
# One session calls two apps: the data question between them is answered yes.
out=$($PY "$PROBE" idle "$AUDIT" "$BIN/hub" serve --stdio --standalone --config "$CONF" --spoke-idle 0 \
    --answers allow 2>>"$TMP/serve.err")
is "idle_s 1: gamma's spoke is stopped after a second without a call (spoke-kill, idle)" \
    "$(echo "$out" | jget 'd["gamma_stopped"]')" true
is "... alpha's (--spoke-idle 0: never) is not" "$(echo "$out" | jget 'd["alpha_stopped"]')" false
is "... and gamma's next call starts it again" \
    "$(echo "$out" | jget '[d["echo_again"], d["gamma_starts"]]')" '[true, 2]'
unlike "an idle stop is not a warning on stderr" "$(cat "$TMP/serve.err")" "without a call; killed"
done_testing
