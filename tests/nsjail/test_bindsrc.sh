#!/usr/bin/env bash
# nsjail-lite's bind sources from the attacker's side (issue 27, finding 6): a source
# whose directory another user owns can be swapped for a symlink to / between two
# starts, which gave the jail the host's root and /proc. Each source is now opened a
# component at a time (bindsrc.c): a directory along it that another user may write,
# or another user's symlink, refuses the bind; root's own symlinks are followed; the
# mounts below a source come along only with --rbind-*.
. "$(dirname "$0")/../lib.sh"
require_root
. "$ROOT/tests/nsjail/lib-nsjail.sh"

jail() {
    "$NSJ" --host-ids "$HOST_IDS" "$@" >"$TMP/out" 2>"$TMP/err" </dev/null
    RC=$?
    OUT=$(cat "$TMP/out")
    ERR=$(cat "$TMP/err")
}
# The attacker: an unused uid of the test's own range (as test_cli.sh's caller).
evil=$((HOST_IDS_BASE + 62))
chmod 711 "$TMP"
mkdir -p "$TMP/evil/code" "$TMP/data" "$TMP/safe"
echo "the app" >"$TMP/evil/code/app.js"
echo "from the host" >"$TMP/data/in"
chown "$evil:$evil" "$TMP/evil"

jail --bind-ro "$TMP/evil/code:/code" -- /bin/cat /code/app.js
is "a source in a directory another user owns is refused" "$RC" 125
like "... naming the directory, its owner and mode" "$ERR" \
    "bind $TMP/evil/code: $TMP/evil \\(owner uid $evil, mode 0755\\) lets another user replace"
setpriv --reuid="$evil" --regid="$evil" --clear-groups \
    sh -c "mv '$TMP/evil/code' '$TMP/evil/code.old' && ln -s / '$TMP/evil/code'"
check "the attacker swapped the source for a link to /" test -L "$TMP/evil/code"
jail --bind-ro "$TMP/evil/code:/code" -- /bin/sh -c 'test -e /code/proc/1/environ && echo HOST ROOT'
is "... after the swap the bind is still refused" "$RC" 125
unlike "... and the jail never saw the host's root" "$OUT" "HOST ROOT"

ln -s / "$TMP/safe/evil-link"
chown -h "$evil:$evil" "$TMP/safe/evil-link"
jail --bind-ro "$TMP/safe/evil-link:/code" -- /bin/ls /code
is "another user's symlink is not followed" "$RC" 125
like "... saying so" "$ERR" "$TMP/safe/evil-link is a symlink \\(owned by uid $evil\\)"

ln -s "$TMP/data" "$TMP/safe/root-link"
jail --bind-ro "$TMP/safe/root-link:/data" -- /bin/cat /data/in
is "root's symlink in root's directory is followed (control)" "$RC $OUT" "0 from the host"
ln -s ../data "$TMP/safe/rel-link"
jail --bind-ro "$TMP/safe/rel-link/in:/in" -- /bin/cat /in
is "... a relative one too, through the rest of the path" "$RC $OUT" "0 from the host"

mkdir -m 1777 "$TMP/sticky"
mkdir "$TMP/sticky/mine" "$TMP/sticky/theirs"
echo mine >"$TMP/sticky/mine/f"
chown "$evil:$evil" "$TMP/sticky/theirs"
jail --bind-ro "$TMP/sticky/mine:/m" -- /bin/cat /m/f
is "in a sticky world-writable directory (as /tmp), root's entry binds" "$RC $OUT" "0 mine"
jail --bind-ro "$TMP/sticky/theirs:/m" -- /bin/true
is "... another user's entry there does not" "$RC" 125

mkdir -p "$TMP/tree/sub"
mount -t tmpfs -o size=1m itest-bindsrc "$TMP/tree/sub" && at_exit "umount '$TMP/tree/sub'"
echo below >"$TMP/tree/sub/f"
jail --bind-ro "$TMP/tree:/t" -- /bin/sh -c 'cat /t/sub/f 2>/dev/null || echo absent'
is "a bind brings the source's own mount only" "$OUT" absent
jail --rbind-ro "$TMP/tree:/t" -- /bin/cat /t/sub/f
is "... --rbind-ro the mounts below it too" "$RC $OUT" "0 below"
done_testing
