#!/usr/bin/env bash
# Approvals out of band (tests/serve/approvals_probe.py): a client that cannot be asked
# is told what waits and how it is answered; `hub approvals` lists the question and
# answers it (allow for the session, deny); a cancelled call's question is withdrawn;
# another account sees none of the user's questions and cannot answer one; an
# unanswered question expires to --answers; with serve.approvals_only even a client that
# can elicit is not asked; the refusal of --ask-exec says its reason once.
. "$(dirname "$0")/../lib.sh"
require_root
MODE=none
. "$ROOT/tests/serve/serve_lib.sh"
serve_setup
conf_merge '{"serve": {"approval_wait_s": 6, "control_users": "unix"}}'
chmod 0711 "$TMP" # the other account reaches the socket in $RUN
mkdir -p "$RUN" && chmod 0711 "$RUN"
probe() { $PY "$ROOT/tests/serve/approvals_probe.py" "$BIN/hub" "$CONF" "$ROOT/tests/serve" "$@"; }
got() { sed -n "s/^$1 //p" "$TMP/$2.out"; }

# The main run: the probe stops before its last question so that the test can act as
# another account, then lets it wait for the expiry.
coproc P { probe queue >"$TMP/queue.out" 2>"$TMP/queue.err"; }
at_exit "kill $P_PID"
wait_for "the probe's last question" 60 grep -q '^qid ' "$TMP/queue.out"
qid=$(got qid queue)
out=$(cd / && setpriv --reuid=65534 --regid=65534 --clear-groups "$BIN/hub" approvals --config "$CONF" 2>&1)
is "another account sees none of the user's questions" "$out" "no questions are waiting"
out=$(cd / && setpriv --reuid=65534 --regid=65534 --clear-groups "$BIN/hub" approvals --config "$CONF" allow "$qid" 2>&1)
like "... and cannot answer one (as if it were not there)" "$out" "no question $qid is waiting"
echo >&"${P[1]}"
wait "$P_PID"
diag "$(cat "$TMP/queue.err")"

like "the client is told what waits and how to answer it" "$(got told queue)" '^[0-9a-f]{8}$'
is "... also as progress, since it asked for progress" "$(got progress queue)" yes
like "hub approvals lists it: id, user, what, who asks, the question" "$(got list queue)" \
    "$(got told queue)  user tester  collab beta.echo for alpha .*The app alpha wants to call beta.echo"
like "allow --for session answers it" "$(got allow queue)" '^0 .*answered session'
like "... the result's way back is a question of its own, answered too" "$(got allow2 queue)" '^0 .*answered once'
like "the call then completes" "$(got result queue)" '"ok": true'
like "a question answered already is not there any more" "$(got again queue)" '^2 .*is waiting'
like "deny answers no" "$(got deny queue)" '^0 .*answered no'
like "... and the call is refused with it" "$(got denied queue)" 'the user answered no through hub approvals'
is "a question waits while its call runs" "$(got pending queue)" yes
is "... and is withdrawn when the client cancels the call" "$(got withdrawn queue)" yes
is "... which gets no answer (MCP)" "$(got answered-after-cancel queue)" no
like "a question nobody answers expires to --answers (no)" "$(got expired queue)" \
    'nobody answered question [0-9a-f]{8} with hub approvals within 6 s; --answers decided no'
is "the hub ended cleanly" "$(got rc queue)" 0
is "queued, answered, withdrawn and expired questions are audited" \
    "$(audit_count 'g(r,"event.action")=="serve-approval"')" 10
is "... the withdrawn one with its reason" \
    "$(audit_count 'g(r,"event.action")=="serve-approval" and "cancelled its call" in g(r,"event.reason")')" 1

# The operator's policy: every question waits here, none goes to the client. (Each
# configuration is a new background hub's: the one the stdio hub started is stopped.)
stop_background
conf_merge '{"serve": {"approval_wait_s": 20, "approvals_only": true}}'
probe only >"$TMP/only.out" 2>"$TMP/only.err"
is "approvals_only: a client that can elicit is not asked" "$(got elicited only)" ""
like "... the question waits for hub approvals" "$(got told only)" '^[0-9a-f]{8}$'
like "... allow --for always answers it" "$(got allow only)" '^0 .*answered always'
like "... and the call completes" "$(got result only)" '"ok": true'

# --ask-exec's refusal for a client that cannot be asked says its reason once.
stop_background
conf_merge '{"serve": {}}'
probe exec --ask-exec >"$TMP/exec.out" 2>"$TMP/exec.err"
out=$(got refusal exec)
like "--ask-exec without a way to ask: refused, saying why" "$out" 'the client cannot be asked'
is "... once" "$(grep -o 'the client cannot be asked' <<<"$out" | wc -l)" 1
stop_background
out=$("$BIN/hub" approvals --config "$CONF" 2>&1)
like "hub approvals with no hub running says so" "$out" 'no hub serve is running here'
done_testing
