#!/usr/bin/env bash
# nsjail-lite's bind sources from the attacker's side (issue 27, finding 6): a source
# whose directory another user owns can be swapped for a symlink to / between two
# starts, which gave the jail the host's root and /proc. Each source is now opened a
# component at a time (bindsrc.c): a directory along it that another user may write,
# or another user's symlink, refuses the bind; root's own symlinks are followed; the
# mounts below a source come along only with --rbind-*.
#
# The attacks run twice: as the host gives them, and where a seccomp filter refuses
# openat2() whole with ENOSYS (systemd's RestrictSUIDSGID=, nspawn; no_openat2.c), where
# the walk falls back to openat(O_NOFOLLOW) a component at a time and must refuse the same
# for the same reason.
. "$(dirname "$0")/../lib.sh"
require_root
. "$ROOT/tests/nsjail/lib-nsjail.sh"
NO_OPENAT2=$BIN/tests/nsjail/no_openat2

WRAP=() # the command nsjail-lite runs under: nothing, or no_openat2
jail() {
    "${WRAP[@]}" "$NSJ" --host-ids "$HOST_IDS" "$@" >"$TMP/out" 2>"$TMP/err" </dev/null
    RC=$?
    OUT=$(cat "$TMP/out")
    ERR=$(cat "$TMP/err")
}
# The attacker: an unused uid of the test's own range (as test_cli.sh's caller).
evil=$((HOST_IDS_BASE + 62))
chmod 711 "$TMP"

# attacks DIR: each attack in a fresh tree under DIR (the swap below changes it).
attacks() {
    local TMP=$1
    mkdir -p "$TMP"
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
    like "... for the same reason" "$ERR" "bind $TMP/evil/code: $TMP/evil \\(owner uid $evil,"
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
    like "... as the sticky directory does not protect it" "$ERR" "$TMP/sticky \\(owner uid 0, mode 1777\\)"

    mkdir -p "$TMP/tree/sub"
    mount -t tmpfs -o size=1m itest-bindsrc "$TMP/tree/sub" && at_exit "umount '$TMP/tree/sub'"
    echo below >"$TMP/tree/sub/f"
    jail --bind-ro "$TMP/tree:/t" -- /bin/sh -c 'cat /t/sub/f 2>/dev/null || echo absent'
    is "a bind brings the source's own mount only" "$OUT" absent
    jail --rbind-ro "$TMP/tree:/t" -- /bin/cat /t/sub/f
    is "... --rbind-ro the mounts below it too" "$RC $OUT" "0 below"
}

attacks "$TMP/host"

diag "openat2() refused whole (ENOSYS), as under systemd's RestrictSUIDSGID="
WRAP=("$NO_OPENAT2" ENOSYS --)
jail -- /bin/sh -c 'echo started'
is "a normal start works (the default binds: /usr and the like)" "$RC $OUT" "0 started"
attacks "$TMP/enosys"

WRAP=("$NO_OPENAT2" EPERM --)
jail --bind-ro "$TMP/host/data:/data" -- /bin/cat /data/in
is "refused with EPERM (a filter's default action), a bind works" "$RC $OUT" "0 from the host"
jail --bind-ro "$TMP/host/safe/evil-link:/code" -- /bin/ls /code
like "... and another user's symlink is still refused" "$RC $ERR" \
    "^125 .*$TMP/host/safe/evil-link is a symlink \\(owned by uid $evil\\)"
done_testing
