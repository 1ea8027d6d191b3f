#!/usr/bin/env bash
# `hub spokes add NAME oci:REF` (issue 36, item 2): a container image as a spoke, in
# namespace mode, from a registry on loopback (Debian's docker-registry, htpasswd
# login) holding images this test builds with umoci and skopeo from files (no docker):
# a statically linked MCP server (tests/oci/imgspoke.c) on an otherwise empty root.
# Checked: the add pulls by digest and pins it, the call answers from the image; a tag
# moved to a new image changes nothing until `hub spokes update`, which shows the digest
# move and the new tool; from the attacker's side (the image's own server probing):
# only the image's root is there (no host /etc/shadow, no host /usr), the root and /etc
# cannot be written, the image's setuid-root entrypoint runs with no privilege (and is
# not setuid on the host), an absolute symlink to / in the image leads nowhere on the
# host; the registry password is in no manifest, profile, log, audit line or command
# line (/proc/*/cmdline sampled while skopeo pulls); a device node in an image is
# refused and leaves nothing behind.
. "$(dirname "$0")/../lib.sh"
MODE=namespace
. "$ROOT/tests/hub/hub_lib.sh"
. "$ROOT/tests/oci/oci_lib.sh"
require_root || exit 0
oci_tools_or_skip
command -v setcap >/dev/null || { skip "$TEST_NAME" "no setcap (libcap2-bin)"; exit 0; }
hub_setup
STORE=$TMP/secrets
hub_config "{\"secrets\": {\"dir\": \"$STORE\", \"key_file\": \"$TMP/store.key\"}}"
mode_needs_jail_skip
SPOKE=$BIN/tests/oci/imgspoke

# ---- the registry, on loopback, with a login ----
oci_registry || exit 1
IMAGE=127.0.0.1:$PORT/itest/imgspoke

# build_image TAG VERSION [EXTRA]: the server at /srv/imgspoke (setuid root, as a
# hostile image would ship it), a copy with a file capability (/srv/capped), a marker
# file, a link to /, pushed as IMAGE:TAG.
# Unpacked as root: --rootless would also write a runtime spec for a rootless bundle,
# which fails on a machine without /etc/resolv.conf (the host test's has no network).
build_image() {
    local tag=$1 version=$2 extra=${3:-} lay=$TMP/layout b=$TMP/bundle-$1
    [ -d "$lay" ] || umoci init --layout "$lay"
    umoci new --image "$lay:$tag" &&
        umoci unpack --image "$lay:$tag" "$b" >/dev/null &&
        mkdir -p "$b/rootfs/srv" "$b/rootfs/etc" &&
        install -m 4755 "$SPOKE" "$b/rootfs/srv/imgspoke" &&
        install -m 0755 "$SPOKE" "$b/rootfs/srv/capped" &&
        setcap cap_net_raw+ep "$b/rootfs/srv/capped" &&
        echo "imgspoke image $version" >"$b/rootfs/etc/image-release" &&
        ln -s / "$b/rootfs/hostroot" &&
        umoci repack --image "$lay:$tag" "$b" &&
        umoci config --image "$lay:$tag" --config.entrypoint /srv/imgspoke \
            --config.env "PROBE_VERSION=$version" ${extra:+--config.env "$extra"} \
            --config.workingdir /srv &&
        oci_push "$lay:$tag" itest/imgspoke:latest
}
build_image v1 1 >"$TMP/build.out" 2>&1
is "a test image is built and pushed to the loopback registry" "$?" 0 || diag "$(cat "$TMP/build.out")"

H() { "$BIN/hub" "$1" "$2" --config "$CONF" "${@:3}"; }
printf 'tester:%s\n' "$PASSWORD" | H secrets set regcred >/dev/null 2>&1
is "the registry's login is in the secret store" "$?" 0

# ---- without the login the registry refuses, and nothing is left ----
H spokes add --yes noauth "oci:$IMAGE:latest" >"$TMP/out" 2>"$TMP/err"
is "without --registry-secret the pull fails (exit 3)" "$?" 3
like "... with skopeo's own words" "$(cat "$TMP/err")" 'skopeo inspect .* failed.*|.*(unauthorized|authentication required)'
check "... and writes no manifest" test ! -e "$SPOKES/noauth.json"
check "... and leaves no store" test ! -e "$DATA/.spoke-images/noauth"

# ---- add, sampling every command line while it pulls ----
# (In Python: a shell loop forks a tr per process, and on a loaded machine one pass
# over /proc outlasted the whole pull, so no sample held skopeo.)
/usr/bin/python3 -c '
import os, sys, time
out = sys.stdout
while True:
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                with open("/proc/" + pid + "/cmdline", "rb") as f:
                    line = f.read().replace(b"\0", b" ")
            except OSError:
                continue
            if line:
                out.buffer.write(line + b"\n")
    out.flush()
    time.sleep(0.01)
' >"$TMP/cmdlines" 2>/dev/null &
SAMPLER=$!
at_exit "kill $SAMPLER"
H spokes add --yes --registry-secret regcred img "oci:$IMAGE:latest" >"$TMP/out" 2>"$TMP/err"
rc=$?
kill "$SAMPLER"
wait "$SAMPLER" 2>/dev/null
is "spokes add img oci:$IMAGE:latest works in namespace mode" "$rc" 0 ||
    diag "$(cat "$TMP/out" "$TMP/err")"
like "... the command lines sampled include skopeo's pull" "$(grep -c 'skopeo' "$TMP/cmdlines")" '^[1-9]'
is "... and none holds the registry password" "$(grep -c -- "$PASSWORD" "$TMP/cmdlines")" 0
M=$SPOKES/img.json
DIGEST=$(curl -s -u "tester:$PASSWORD" -H 'Accept: application/vnd.oci.image.manifest.v1+json' \
    "http://127.0.0.1:$PORT/v2/itest/imgspoke/manifests/latest" | sha256sum | cut -d' ' -f1)
is "... the digest pinned is the registry's manifest's" "$(jget 'd["image"]["digest"]' <"$M")" "sha256:$DIGEST"
is "... the command is the image's entrypoint" "$(jget 'd["command"]' <"$M")" '["/srv/imgspoke"]'
is "... the tool is pinned" "$(jget '[t["name"] for t in d["tools"]]' <"$M")" '["probe"]'
is "... the secret is named, by name only" "$(jget 'd["image"]["secret"]' <"$M")" regcred
ROOTFS=$(jget 'd["image"]["dir"]' <"$M")/rootfs
is "... the image's setuid bit is gone on the host" "$(stat -c %a "$ROOTFS/srv/imgspoke")" 755
is "... its files belong to root" "$(stat -c %u "$ROOTFS/srv/imgspoke")" 0
is "... the image's file capability is gone on the host" "$(getcap "$ROOTFS/srv/capped")" ""

out=$(hubc img.probe '{}' 2>"$TMP/call.err")
is "hub call img.probe answers from the image" "$?" 0 || diag "$(cat "$TMP/call.err")"
P=$(echo "$out" | jget 'd["content"][0]["text"]')
diag "probe: $P"
is "... the image's own files are its root" "$(echo "$P" | jget 'd["marker"]')" "imgspoke image 1"
is "... the image's Env and WorkingDir apply" "$(echo "$P" | jget 'd["version"] + " " + d["cwd"]')" "1 /srv"
is "... no host /etc/shadow" "$(echo "$P" | jget 'd["host_shadow"]')" 0
is "... no host /usr" "$(echo "$P" | jget 'd["host_usr"]')" 0
is "... the root cannot be written" "$(echo "$P" | jget 'd["write_root"]')" 0
is "... nor the image's /etc or /srv" "$(echo "$P" | jget '[d["write_etc"], d["write_srv"]]')" '[0, 0]'
is "... /data can" "$(echo "$P" | jget 'd["write_data"]')" 1
is "... the setuid-root entrypoint runs as the jail's uid, not root" \
    "$(echo "$P" | jget '[d["uid"], d["euid"]]')" '[1000, 1000]'
check "... the image's link to / did not write into the host's root" test ! -e /oci-probe
H spokes add --yes --registry-secret regcred withargs -- "oci:$IMAGE:latest" --from-args \
    >"$TMP/out" 2>"$TMP/err"
is "ARG after oci:REF replaces the image's Cmd" "$(jget 'd["command"]' <"$SPOKES/withargs.json")" \
    '["/srv/imgspoke", "--from-args"]' || diag "$(cat "$TMP/err")"
is "... kept for update" "$(jget 'd["image"]["args"]' <"$SPOKES/withargs.json")" '["--from-args"]'
P=$(hubc withargs.probe '{}' 2>/dev/null | jget 'd["content"][0]["text"]')
is "... and given to the server" "$(echo "$P" | jget 'd["arg1"]')" --from-args
for mode in none process; do
    hubc --isolation "$mode" img.probe '{}' >"$TMP/out" 2>&1
    refute "... in $mode mode it is refused, not run on the host" test "$?" = 0
    like "... saying why" "$(cat "$TMP/out")" "container image: it runs only in namespace isolation, not $mode"
done

# ---- the tag moves: nothing changes until update ----
build_image v2 2 PROBE_EXTRA=1 >"$TMP/build.out" 2>&1
is "a new image is pushed under the same tag" "$?" 0 || diag "$(cat "$TMP/build.out")"
P=$(hubc img.probe '{}' 2>/dev/null | jget 'd["content"][0]["text"]')
is "... the spoke still runs the pinned digest" "$(echo "$P" | jget 'd["version"]')" 1
H spokes verify img >"$TMP/out" 2>&1
is "... verify reports the moved tag (exit 3)" "$?" 3
like "... naming the new digest and the pinned one" "$(cat "$TMP/out")" \
    "image: $IMAGE:latest now names sha256:[0-9a-f]{64}, pinned sha256:$DIGEST"
P=$(hubc img.probe '{}' 2>/dev/null | jget 'd["content"][0]["text"]')
is "... and the spoke still runs the pinned digest after verify" "$(echo "$P" | jget 'd["version"]')" 1
H spokes update img --yes >"$TMP/out" 2>"$TMP/err"
is "spokes update img pulls the tag's new digest" "$?" 0 || diag "$(cat "$TMP/out" "$TMP/err")"
like "... showing the digest move" "$(cat "$TMP/out")" "image: $IMAGE:latest sha256:$DIGEST -> sha256:"
like "... and the new tool" "$(cat "$TMP/out")" 'extra'
unlike "... the pin moved" "$(jget 'd["image"]["digest"]' <"$M")" "$DIGEST"
check "... the old root is gone from the store" test ! -e "$ROOTFS"
is "... and the old image from its layout" \
    "$(jget '[m["annotations"]["org.opencontainers.image.ref.name"] for m in d["manifests"]]' \
        <"$DATA/.spoke-images/img/layout/index.json")" "[\"$(jget 'd["image"]["digest"][7:]' <"$M")\"]"
P=$(hubc img.probe '{}' 2>/dev/null | jget 'd["content"][0]["text"]')
is "... and the spoke runs the new image" "$(echo "$P" | jget 'd["version"]')" 2

# ---- the password is nowhere the hub wrote ----
is "the registry password is in no file of the spokes, data, run and audit" \
    "$(grep -rl -- "$PASSWORD" "$SPOKES" "$DATA" "$RUN" "$AUDIT" 2>/dev/null | wc -l)" 0
is "... nor its base64 form" \
    "$(grep -rl -- "$(printf 'tester:%s' "$PASSWORD" | base64 -w0)" "$SPOKES" "$DATA" "$RUN" "$AUDIT" 2>/dev/null | wc -l)" 0
is "... and no auth file is left in /tmp" "$(find /tmp -maxdepth 1 -name 'hub-oci-auth.*' -newer "$CONF" | wc -l)" 0

# ---- an image with a device node is refused ----
lay=$TMP/layout b=$TMP/bundle-dev
umoci new --image "$lay:dev" && umoci unpack --image "$lay:dev" "$b" >/dev/null &&
    mkdir -p "$b/rootfs/srv" && cp "$SPOKE" "$b/rootfs/srv/imgspoke" &&
    mknod "$b/rootfs/srv/kmem" c 1 2 && umoci repack --image "$lay:dev" "$b" &&
    umoci config --image "$lay:dev" --config.entrypoint /srv/imgspoke &&
    oci_push "$lay:dev" itest/imgspoke:dev >"$TMP/build.out" 2>&1
is "an image holding a device node is pushed" "$?" 0
H spokes add --yes --registry-secret regcred devimg "oci:$IMAGE:dev" >"$TMP/out" 2>"$TMP/err"
is "... its add fails (exit 3)" "$?" 3
like "... naming the device node" "$(cat "$TMP/err")" 'image file /srv/kmem: a device node: refused'
check "... and leaves nothing in the store" test ! -e "$DATA/.spoke-images/devimg"
is "no process is left behind" "$(leftover_procs)" 0
# By its path inside a jail: test_rootfs, beside this test, runs the same program for
# a moment. A server left behind is still there a second later.
img_before=$(pids_by_exe '*/srv/imgspoke' | sort)
sleep 1
is "... no image's server either" \
    "$(comm -12 <(echo "$img_before") <(pids_by_exe '*/srv/imgspoke' | sort) | grep -c .)" 0
done_testing
