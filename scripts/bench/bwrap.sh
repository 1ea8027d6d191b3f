# Sourced by benchmarks: BWRAP, the bubblewrap command line with nsjail-lite's own
# containment (every namespace, the same read-only binds and merged-/usr symlinks,
# /proc, /dev, /tmp, uid/gid 1000, no capabilities, a new session) and nsjail-lite's
# seccomp program, given as FILTER (a file: `nsjail-lite --dump-seccomp FILTER`) on
# descriptor 9. Usage: bwrap_argv FILTER; then "${BWRAP[@]}" PROGRAM ARGS... 9<FILTER.
bwrap_argv() {
    BWRAP=(bwrap --unshare-all --die-with-parent --new-session --uid 1000 --gid 1000 --cap-drop ALL)
    local p
    for p in /usr /etc/ssl/certs /etc/ld.so.cache /etc/alternatives; do
        [ -e "$p" ] && BWRAP+=(--ro-bind "$p" "$p")
    done
    for p in /bin /lib /lib64 /sbin /lib32; do
        if [ -L "$p" ]; then
            BWRAP+=(--symlink "$(readlink "$p")" "$p")
        elif [ -e "$p" ]; then
            BWRAP+=(--ro-bind "$p" "$p")
        fi
    done
    BWRAP+=(--proc /proc --dev /dev --tmpfs /tmp --seccomp 9)
}
