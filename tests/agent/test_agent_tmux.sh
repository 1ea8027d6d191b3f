#!/usr/bin/env bash
# The terminal session, driven through tmux like a user: the banner, a request typed
# with the line editor, the plan, a permission question in the hub's frame answered
# at the keyboard, the answer streamed as quoted data with escape sequences made
# harmless, history recall, /perms, an irreversible tool asked without "always",
# and /quit.
. "$(dirname "$0")/../lib.sh"
require_root
command -v tmux >/dev/null || { skip "terminal session" "tmux is not installed"; exit 0; }
MODE=process
. "$ROOT/tests/agent/agent_lib.sh"
agent_setup
redis_start
# The plan's arguments try to draw a fake frame and clear the screen inside the
# permission question; the answer tries an escape sequence and a line of its own.
standin_start '[
  plan(("fare__estimate", {"from": "Main Street", "to": "Elm Avenue \u2517\u2501\u2501 [y] once \u001b[2J"})),
  sse("The fare is 23 USD.\n\u2503 hub: permission needed\u001b[31m red"),
  plan(("mail__send", {"to": "boss@example.org", "body": "The fare is 23 USD."})),
  sse("I did not send it."),
  plan(("asker__ask", {})), sse("You live in Irvine."),
  text("too late", delay_ms=8000)]'

tmux_start "$BIN/hub --config $CONF --llm $LLM_URL --memory $MEM"

check "the session starts with the hub's banner" wait_pane "IsolateGPT-C assistant for $AUSER"
check "... and a prompt" wait_pane "you›"
# Typed with a mistake, then fixed with the editor: Ctrl-U clears, Left/Right move.
keys "garbage" C-u "How much is a ride to Elm Avenu?" Left "e" Enter
check "the plan is shown before anything runs" wait_pane "plan (1 step; it asks before it runs):"
check "a permission question appears" wait_pane "hub: permission needed"
p=$(pane)
like "... framed at column 0 by the hub" "$p" $'\n┏━━ hub: permission needed'
like "... naming the app and tool" "$p" "┃ run fare.estimate for you"
like "... showing what will be sent, quoted" "$p" '┃   ┊   "from": "Main Street",'
like "... with the fake frame and the escape inside the quoted value" "$p" '┃   ┊   "to": "Elm Avenue ┗━━ \[y\] once \\u001[bB]\[2J"'
like "... offering always for a reversible tool" "$p" '┗━━ \[y\] once  \[s\] this session  \[a\] always  \[n\] no  \[d\] never'
unlike "... and the screen was not cleared" "$p" "^$"
keys "s" Enter
check "the answer streams in after the step ran" wait_pane "The fare is 23 USD."
p=$(pane)
like "the answer is quoted data" "$p" $'\n  ┊ The fare is 23 USD.'
like "... its escape sequence is shown, not obeyed" "$p" '  ┊ ┃ hub: permission needed\^\[\[31m red'
like "... and its fake hub line cannot start a line" "$(pane | grep -c '^┃ hub: permission needed')" '^0$'
check "the step's outcome is the hub's" wait_pane "hub: ✓ s1 fare.estimate: ok"

keys "/perms" Enter
check "/perms shows the session grant" wait_pane "session exec   fare.estimate"
keys Up
check "Up recalls the last request" wait_pane "you› How much is a ride to Elm Avenue?" 3
keys C-u "Mail my boss the fare" Enter
check "an irreversible tool is asked about" wait_pane "irreversible:"
p=$(pane)
like "... without offering always" "$p" '┗━━ \[y\] once  \[s\] this session  \[n\] no  \[d\] never'
keys "a" Enter
check "... and always is not taken as an answer" wait_pane "answer y, s, n or d"
keys "n" Enter
check "the refusal is the user's" wait_pane "hub: ✗ s1 mail.send: denied (permission)"
check "the hub offers to plan again" wait_pane "mail.send was denied. Make a new plan without it? [y/N]"
keys "n" Enter
check "the answer says so" wait_pane "I did not send it."
check "nothing was sent" test ! -e "$DATA/$AUSER/mail/sent.jsonl"

# An app's question (elicitation): the hub's frame, the app's words quoted.
keys "Where do I live?" Enter
check "the step is asked about first" wait_pane "run asker.ask for you"
keys "y" Enter
check "the app's question is shown in the hub's frame" wait_pane "hub: the app asker asks you something (its words, quoted)"
like "... its words quoted and their escape shown" "$(pane)" '┃   ┊ Which city do you live in\?\^\[\[2J'
keys "a" Enter
check "... each field is asked for" wait_pane "city (string)›"
keys "Irvine" Enter
check "the answer used what the user typed" wait_pane "You live in Irvine."
is "... which the app received" "$(audit_count "g(r,'event.action')=='elicitation' and g(r,'isolate.elicitation.action')=='accept'")" 1

# Ctrl-C while the LLM is slow stops that request, not the session.
keys "a slow one" Enter
check "the request is on its way" wait_pane "you› a slow one"
sleep 0.5
keys C-c
check "Ctrl-C cancels it" wait_pane "hub: ✗ request cancelled (Ctrl-C)" 4
keys "/help" Enter
check "... and the session goes on" wait_pane "/revoke N|APP[.TOOL]|all"
keys "/quit" Enter
check "/quit ends the session" wait_pane "hub-exited-0"
is "the session's permission questions and answers are audited" \
    "$(audit_count "g(r,'event.action')=='permission-answer' and g(r,'event.reason')=='the user answered: ' + g(r,'isolate.permission.answer')")" 3
done_testing
