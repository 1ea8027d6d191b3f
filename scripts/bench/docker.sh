# Sourced by benchmarks: a private Docker daemon for the `docker run` anchor, never the
# host's: its own data root (DOCKER_DIR, under build/ so the image is kept between
# runs), socket, exec root and cgroup parent, no iptables rules, no bridge, no NAT, so
# it touches nothing else on the machine; and an image imported from a root file system
# made here of the node binary and the libraries it loads (no registry is contacted).
#   docker_up DIR    starts it (DOCKER_HOST is set); 1 and why in DOCKER_WHY when it cannot
#   docker_node_image  imports isolate-bench-node:1 unless it is there
#   docker_down      stops it and removes its cgroups
DOCKER_IMAGE=isolate-bench-node:1
DOCKER_PID=
docker_up() {
    DOCKER_DIR=$1
    DOCKER_WHY=
    if ! command -v dockerd >/dev/null || ! command -v docker >/dev/null; then
        DOCKER_WHY="dockerd is not installed (Debian's docker.io: make deps --bench)"
        return 1
    fi
    mkdir -p "$DOCKER_DIR"
    # A unix socket path is limited to 107 bytes: the socket lives in a short /tmp dir.
    DOCKER_RUN=$(mktemp -d /tmp/isolate-bench-docker.XXXXXX)
    export DOCKER_HOST=unix://$DOCKER_RUN/docker.sock
    dockerd --data-root "$DOCKER_DIR/root" --exec-root "$DOCKER_RUN/exec" \
        --pidfile "$DOCKER_RUN/docker.pid" --host "$DOCKER_HOST" --iptables=false \
        --ip6tables=false --bridge=none --ip-masq=false --cgroup-parent=isolate-bench-docker \
        >"$DOCKER_DIR/dockerd.log" 2>&1 &
    DOCKER_PID=$!
    local i
    for ((i = 0; i < 600; i++)); do
        docker version >/dev/null 2>&1 && return 0
        if ! kill -0 "$DOCKER_PID" 2>/dev/null; then
            DOCKER_WHY="dockerd exited: $(grep -m1 -iE 'level=(fatal|error)' "$DOCKER_DIR/dockerd.log" | cut -c1-300)"
            DOCKER_PID=
            return 1
        fi
        sleep 0.1
    done
    DOCKER_WHY="dockerd did not answer within 60 s (see $DOCKER_DIR/dockerd.log)"
    return 1
}
docker_node_image() {
    docker image inspect "$DOCKER_IMAGE" >/dev/null 2>&1 && return 0
    local root f
    root=$(mktemp -d /tmp/isolate-bench-rootfs.XXXXXX)
    for f in "$(command -v node)" $(ldd "$(command -v node)" | grep -o '/[^ ]*'); do
        mkdir -p "$root$(dirname "$f")"
        cp -L "$f" "$root$f"
    done
    [ "$(command -v node)" = /usr/bin/node ] || ln -s "$(command -v node)" "$root/usr/bin/node"
    mkdir -p "$root/tmp" "$root/etc" "$root/proc" "$root/dev" "$root/sys"
    tar -C "$root" -c . | docker import - "$DOCKER_IMAGE" >/dev/null
    local rc=$?
    rm -rf "$root"
    return $rc
}
docker_down() {
    if [ -n "$DOCKER_PID" ]; then
        kill "$DOCKER_PID" 2>/dev/null
        wait "$DOCKER_PID" 2>/dev/null
        DOCKER_PID=
    fi
    # dockerd makes its --cgroup-parent under its own cgroup on v1 (memory/<ours>/...),
    # not only at a hierarchy's root: every one of them, deepest first.
    local d
    find /sys/fs/cgroup -type d -name isolate-bench-docker -prune 2>/dev/null | while read -r d; do
        find "$d" -depth -type d -exec rmdir {} \; 2>/dev/null
    done
    [ -n "${DOCKER_RUN:-}" ] && rm -rf "$DOCKER_RUN"
    return 0
}
