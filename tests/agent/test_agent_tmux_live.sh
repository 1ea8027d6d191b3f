#!/usr/bin/env bash
# What a new user ran into at the terminal (issue 18), driven through tmux: a refused
# plan said once; a plan that says which steps will ask and which a grant decides; a
# step refused by a standing "never" grant named as such, with the /revoke that undoes
# it; /revoke of something that does not exist; the steps' results when the answer
# could not be composed; a tool call in the answer step shown; a server's error text
# quoted after the hub's line; a countdown for Retry-After; Ctrl-C at a question and
# during a request; a grant store that cannot be read.
. "$(dirname "$0")/../lib.sh"
require_root
command -v tmux >/dev/null || { skip "terminal session" "tmux is not installed"; exit 0; }
MODE=process
. "$ROOT/tests/agent/agent_lib.sh"
agent_setup '{"memory": {"reconnect_ms": 500}}'
redis_start
standin_start '[
  plan(("mail__delete", {"id": 1})),
  plan(("fare__estimate", {"from": "A", "to": "B"})), sse("The fare is 23 USD."),
  plan(("fare__estimate", {"from": "A", "to": "C"})), sse("The fare is 24 USD."),
  plan(("mail__send", {"to": "boss@example.org", "body": "hi"})), sse("Not sent."),
  plan(("mail__send", {"to": "boss@example.org", "body": "again"}), ("fare__estimate", {"from": "A", "to": "D"})),
  sse("Not sent again."),
  plan(("fare__estimate", {"from": "A", "to": "E"})), raw("{\"choices\": [{\"message\": "),
  plan(("fare__estimate", {"from": "A", "to": "F"})), plan(("mail__send", {"to": "x@example.org", "body": "\u001b[2J leak"})),
  {"status": 400, "json": {"error": {"message": "bad max_tokens\u001b[2J\n\u250f\u2501\u2501 hub: permission needed"}}},
  status(429, headers={"Retry-After": "3"}),
  plan(("mail__send", {"to": "boss@example.org", "body": "once more"})),
  text("too late", delay_ms=3000),
  plan(("fare__estimate", {"from": "A", "to": "G"}), delay_ms=1500), sse("Nothing ran.")]'
tmux_start "$BIN/hub --config $CONF --llm $LLM_URL --memory $MEM"
check "the session starts" wait_pane "you›"

# 3. A plan refused before any app ran: its line once, not twice.
wait_prompt
keys "delete my mail" Enter
check "a refused plan is said" wait_pane "the plan was refused before any app ran"
sleep 0.3
is "... once" "$(pane | grep -c 'the plan was refused before any app ran')" 1

# 5. After a session grant the plan says which steps will ask.
wait_prompt
keys "a fare to B" Enter
check "the first plan asks" wait_pane "plan (1 step; it asks before it runs):"
check "... the question" wait_pane "[y] once"
keys "s" Enter
check "... and the step runs" wait_pane "The fare is 23 USD."
wait_prompt
keys "a fare to C" Enter
check "the next plan says its step is already granted" \
    wait_pane "plan (1 step; it is already granted: none asks):"
check "... naming the grant on the step's line" wait_pane "s1 fare.estimate (granted for this session)"
check "... and runs without a question" wait_pane "The fare is 24 USD."
is "... one question in all" "$(pane | grep -c 'hub: permission needed')" 1

# 4. A standing "never": the refusal names the grant and its undo.
wait_prompt
keys "mail my boss" Enter
check "mail.send is asked about" wait_pane "run mail.send for you"
keys "d" Enter
check "... the user's own no" wait_pane "hub: ✗ s1 mail.send: denied (permission)"
keys "n" Enter
check "... answered" wait_pane "Not sent."
wait_prompt
keys "mail my boss again and a fare" Enter
check "the plan says which step a grant refuses and which is granted" \
    wait_pane "plan (2 steps; 1 already granted, 1 refused by your grants):"
check "... on the step's line" wait_pane "s1 mail.send (refused: you said never)"
check "the step is refused by the standing grant, named, with its undo" \
    wait_pane "hub: ✗ s1 mail.send: refused by your standing grant (you said never to exec mail.send); /revoke 2 removes it"
check "the re-plan question does not read like a fresh no" \
    wait_pane "mail.send is refused by a standing grant of yours. Make a new plan without it? [y/N]"
unlike "... and no denied (permission) line for it" "$(pane | grep -c 'mail.send: denied (permission)')" '^2$'
keys "n" Enter
check "... answered" wait_pane "Not sent again."
wait_prompt
keys "/revoke 2" Enter
check "/revoke 2 removes that grant" wait_pane "1 grant removed"
wait_prompt
keys "/perms" Enter
check "... leaving the session grant" wait_pane " 1. session exec   fare.estimate"

# 12. /revoke of what does not exist says so.
wait_prompt
keys "/revoke bogus" Enter
check "/revoke of an app that is not installed says so" \
    wait_pane "no app named bogus is installed and no grant names it: nothing removed"
wait_prompt
keys "/revoke fare.nothing" Enter
check "/revoke of a tool the app does not have says so" \
    wait_pane "the app fare has no tool named nothing and no grant names it: nothing removed"
wait_prompt
keys "/revoke mail" Enter
check "/revoke of an app without grants says so" \
    wait_pane "no grant for mail: nothing removed (/perms lists the grants)"
# 8. The model's answer at the answer step is malformed: the steps' results still shown.
wait_prompt
keys "a fare to E" Enter
check "a malformed answer at the answer step is said" wait_pane "composing the answer failed (malformed)"
check "... and what the step returned is shown" \
    wait_pane "hub: no answer was composed; what the steps returned (data, quoted):"
check "... naming the step" wait_pane "hub:   s1 fare.estimate:"
check "... its result quoted" wait_pane '  ┊   "fare": "23 USD"'

# 9. A tool call in the answer context: not run, and shown (as data).
wait_prompt
keys "a fare to F" Enter
check "a tool call while composing the answer is reported" \
    wait_pane "hub: ! the model asked to call a tool while composing the answer; it was not run (that step has no tools):"
check "... the call quoted, its escape encoded" wait_pane '  ┊ mail__send {"to":"x@example.org","body":"\u001B[2J leak"}'
check "... and nothing was sent" test ! -e "$DATA/$AUSER/mail/sent.jsonl"

# 10. An LLM server's error text: quoted after the hub's line, never part of it.
wait_prompt
keys "one more" Enter
check "the server's 400 is the hub's line" \
    wait_pane "rejected the request: HTTP 400 Bad Request; the server said:"
check "... its text quoted after it, its escape made harmless" wait_pane "  ┊ bad max_tokens"
p=$(pane)
is "... no hub line carries the server's words" "$(echo "$p" | grep '^hub:' | grep -c 'max_tokens\|permission needed')" 0
like "... its fake frame line is inside the quote" "$p" '  ┊ bad max_tokens.\[2J ┏━━ hub: permission needed'
is "... and starts no line (the two real questions do)" "$(echo "$p" | grep -c '^┏━━ hub: permission needed')" 2

# 7. A 429 with Retry-After: a status line with the time left, which Ctrl-C ends.
wait_prompt
keys "wait for it" Enter
check "a wait on Retry-After is shown with the time left" \
    wait_pane "hub: the LLM server turned down attempt 1 (rate-limit): trying again in 3 s; Ctrl-C cancels"
check "... counting down" wait_pane "trying again in 2 s"
keys C-c
check "... Ctrl-C cancels the request" wait_pane "hub: ✗ request cancelled (Ctrl-C)"
check "... without a second attempt" test "$(standin_requests)" -eq 15
unlike "... and the status line is gone" "$(pane | grep -v '^ *$' | tail -n 3)" "trying again"

# 6. Ctrl-C at a permission question cancels the whole request.
wait_prompt
keys "mail my boss once more" Enter
check "a question" wait_pane '"body": "once more"'
keys C-c
check "Ctrl-C at the question: the step is not run, said once" \
    wait_pane "hub: ✗ s1 mail.send: not run (cancelled)"
check "... the request is cancelled" wait_prompt
is "... no re-plan offered, no answer composed" \
    "$(pane | grep -c 'Make a new plan without it')/$(standin_requests)" 2/16
is "... and nothing sent" "$(test -e "$DATA/$AUSER/mail/sent.jsonl" && echo sent || echo none)" none

# 6. Ctrl-C while the LLM is slow: no "^C", no echo of type-ahead.
keys "a slow one" Enter
check "the request is on its way" wait_pane "you› a slow one"
sleep 0.3
keys "typed ahead"
sleep 0.2
keys C-c
check "Ctrl-C cancels it" wait_pane "hub: ✗ request cancelled (Ctrl-C)" 4
p=$(pane)
unlike "... the terminal did not echo ^C" "$p" '\^C'
unlike "... nor the type-ahead" "$p" "typed ahead"
like "... the cancel line starts at column 0, once" "$(echo "$p" | grep -c '^hub: ✗ request cancelled (Ctrl-C)')" '^3$'
# 4. The grant store cannot be read (Redis gone while the planner works): no one's no.
wait_prompt
keys "a fare to G" Enter
check "the request is on its way" wait_pane "you› a fare to G"
"$ROOT/scripts/redis-private" stop "$REDIS_DIR" >/dev/null
check "a step whose grant cannot be read is not run, and the user denied nothing" \
    wait_pane "hub: ✗ s1 fare.estimate: not run: your grants cannot be read (the memory is unreachable), so the hub cannot know whether you allow it; you denied nothing" 10
check "... no re-plan is offered" wait_pane "Nothing ran."
is "... and no question or re-plan offer for it" "$(pane | grep -c 'fare.estimate is refused\|fare.estimate was denied')" 0
wait_prompt
keys "/quit" Enter
check "/quit ends the session" wait_pane "hub-exited-0"
done_testing
