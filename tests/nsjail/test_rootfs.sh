#!/usr/bin/env bash
# nsjail-lite --rootfs DIR and the profile key "rootfs" (a container image's root
# instead of the host's system binds, nsjail-lite/rootfs.c), from the image's side: the
# program (tests/oci/imgspoke, static, asked for its "probe" on stdin) sees the image's
# files and none of the host's, cannot write the root or the image's /etc, gets the
# generated /etc/passwd, a fresh /proc and /tmp, and a --bind-ro given beside it; a
# hostile image whose "etc" is a symlink to the host's /etc, or that carries "proc" and
# "tmp" of its own, changes none of that; a --rootfs that is a symlink is refused.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/lib-nsjail.sh"
require_root || exit 0
SPOKE=$BIN/tests/oci/imgspoke
CALL='{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"probe","arguments":{}}}'

# probe ARGS...: P is the probe's JSON from a jail run with ARGS, else ""; RC, ERR.
probe() {
    echo "$CALL" | "$NSJ" --host-ids "$HOST_IDS" "$@" -- /srv/imgspoke >"$TMP/out" 2>"$TMP/err"
    RC=$?
    ERR=$(cat "$TMP/err")
    P=$($PY -c 'import json,sys; print(json.loads(sys.stdin.read())["result"]["content"][0]["text"])' \
        <"$TMP/out" 2>/dev/null)
}
PY=/usr/bin/python3
pj() { echo "$P" | jget "$1"; }

R=$TMP/image
mkdir -p "$R/srv" "$R/etc" "$R/data"
install -m 0755 "$SPOKE" "$R/srv/imgspoke"
echo "the image" >"$R/etc/image-release"
echo "root:image-hash:0:0:99999:7:::" >"$R/etc/passwd"
ln -s / "$R/hostroot"

probe --rootfs "$R" --cwd /srv --env PROBE_VERSION=r1
is "--rootfs DIR runs the image's program" "$RC" 0 || diag "$ERR"
is "... which sees the image's own files" "$(pj 'd["marker"]')" "the image"
is "... and no host /etc/shadow" "$(pj 'd["host_shadow"]')" 0
is "... and no host /usr" "$(pj 'd["host_usr"]')" 0
is "... cannot write the root, the image's /etc or /srv" \
    "$(pj '[d["write_root"], d["write_etc"], d["write_srv"]]')" '[0, 0, 0]'
is "... --cwd and --env apply" "$(pj 'd["cwd"] + " " + d["version"]')" "/srv r1"
is "... /etc/passwd is the generated one, not the image's" "$(pj 'd["passwd"]')" \
    'root:x:0:0:root:/root:/usr/sbin/nologin'
check "... the image's link to / wrote nothing into the host's root" test ! -e /oci-probe

# A --bind-ro beside --rootfs stays; the profile's system binds do not.
mkdir -p "$TMP/extra"
echo extra >"$TMP/extra/file"
probe --rootfs "$R" --bind-ro "$TMP/extra:/extra"
is "--bind-ro beside --rootfs is bound" "$(pj 'd["extra"]')" 1
printf '%s\n' '{"rootfs": "'"$R"'", "mounts": {"ro": ["'"$TMP/extra"':/extra"]}, "cwd": "/srv"}' \
    >"$TMP/profile.json"
probe --profile "$TMP/profile.json"
is "the profile key rootfs works the same, with its mounts" \
    "$(pj 'd["marker"] + " " + d["cwd"] + " " + str(d["extra"])')" "the image /srv 1"
is "... without the host's /usr" "$(pj 'd["host_usr"]')" 0

# ---- hostile images ----
H=$TMP/hostile
mkdir -p "$H/srv" "$H/proc" "$H/tmp"
install -m 0755 "$SPOKE" "$H/srv/imgspoke"
ln -s /etc "$H/etc"
echo planted >"$H/tmp/planted"
echo fake >"$H/proc/fake"
probe --rootfs "$H"
is "an image whose etc is a link to the host's /etc runs" "$RC" 0 || diag "$ERR"
is "... and still sees no host /etc/shadow" "$(pj 'd["host_shadow"]')" 0
is "... its own /tmp is replaced by the jail's tmpfs" "$(pj 'd["tmp_planted"]')" 0
is "... its own /proc by a fresh proc" "$(pj '[d["proc_self"], d["proc_fake"]]')" '[1, 0]'

ln -s "$R" "$TMP/link-to-image"
probe --rootfs "$TMP/link-to-image"
is "a --rootfs that is a symlink is refused (125)" "$RC" 125
like "... saying so" "$ERR" "rootfs $TMP/link-to-image: "
probe --rootfs relative/dir
is "a relative --rootfs is refused (125)" "$RC" 125
done_testing
