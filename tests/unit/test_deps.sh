#!/usr/bin/env bash
# scripts/deps: what make demo installs is in the VM image (--list, which tests/host/image
# installs from; the VM has no network, so make demo there installs nothing more: a
# package wanted beyond --list failed make demo in the host test), and the extras come
# with their own options only.
. "$(dirname "$0")/../lib.sh"
DEPS=$ROOT/scripts/deps
sort -u <("$DEPS" --list) >"$TMP/list"
beyond() { sort -u | comm -23 - "$TMP/list" | tr '\n' ' '; }
like "--wanted lists make demo's packages (the compiler among them)" \
    "$("$DEPS" --wanted | tr '\n' ' ')" "(^| )gcc( |$)"
is "make demo's packages (scripts/deps) are all in the VM image's (--list)" \
    "$("$DEPS" --wanted | beyond)" ""
like "--browser adds chromium" "$("$DEPS" --wanted --browser | tr '\n' ' ')" "(^| )chromium( |$)"
unlike "... which --list (the VM image) leaves out" "$(tr '\n' ' ' <"$TMP/list")" "(^| )chromium( |$)"
like "--bench adds the anchors" "$("$DEPS" --wanted --bench | tr '\n' ' ')" "(^| )bubblewrap( |$)"
like "make check installs the browser its test needs" \
    "$(sed -n '/^check:/,/^$/p' "$ROOT/Makefile")" "scripts/deps --browser"
unlike "make demo does not" "$(sed -n '/^demo:/,/^$/p' "$ROOT/Makefile")" "--browser|--all"
"$DEPS" --no-such-option >/dev/null 2>"$TMP/err"
is "an unknown option: usage, exit 2" "$?" 2
like "... naming --wanted" "$(cat "$TMP/err")" "--wanted"
done_testing
