#!/usr/bin/env bash
# The command-line contract of nsjail-lite: exit codes (125/126/127/status/128+N), the
# --status-fd line and its reasons (seccomp, rlimit-cpu, rlimit-fsize, wall-time),
# clear launcher errors (profile key, bad address, missing capability), and that a
# caller without privilege gets an error and no half-built sandbox.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/lib-nsjail.sh"
require_root

# jail STATUSFILE ARGS...: run nsjail-lite with --status-fd 3 into STATUSFILE; sets RC,
# OUT, ERR.
jail() {
    local status=$1; shift
    "$NSJ" --host-ids "$HOST_IDS" --status-fd 3 "$@" 3>"$status" >"$TMP/out" 2>"$TMP/err" \
        </dev/null
    RC=$?
    OUT=$(cat "$TMP/out")
    ERR=$(cat "$TMP/err")
}

# --- help ---
help=$("$NSJ" --help)
is "--help exits 0" "$?" 0
for opt in --profile --net --veth-host-netns --bind-ro --bind-rw --tmpfs --env --rlimit-as \
    --rlimit-cpu --rlimit-fsize --rlimit-nofile --rlimit-nproc --wall-time --seccomp \
    --status-fd --memory-mb --pids --cpu-percent --cgroup-parent --debug; do
    like "--help documents $opt" "$help" "$opt"
done

# --- exit codes and the status line ---
jail "$TMP/s" -- /bin/sh -c 'echo out; exit 3'
is "the program's status is the launcher's" "$RC" 3
is "the program's stdout passes through" "$OUT" out
is "status line for an exit" "$(cat "$TMP/s")" '{"exit_code":3,"signal":null,"reason":""}'

jail "$TMP/s" -- true
is "PROGRAM is searched in the jail's PATH" "$RC" 0

jail "$TMP/s" -- /nonexistent/program
is "a missing program gives 127" "$RC" 127
like "  and says why" "$ERR" 'cannot run /nonexistent/program: No such file or directory'
is "  status line" "$(cat "$TMP/s")" '{"exit_code":127,"signal":null,"reason":"not-found"}'
jail "$TMP/s" -- itest-nsj-no-such-command
is "a program missing from PATH gives 127" "$RC" 127

jail "$TMP/s" -- /etc/passwd
is "a program that is not executable gives 126" "$RC" 126
like "  and says why" "$ERR" 'cannot run /etc/passwd: Permission denied'
is "  status line" "$(cat "$TMP/s")" '{"exit_code":126,"signal":null,"reason":"not-executable"}'

jail "$TMP/s" -- /bin/sh -c 'kill -TERM $$'
is "death by signal N gives 128+N" "$RC" 143
is "  status line" "$(cat "$TMP/s")" '{"exit_code":143,"signal":15,"reason":""}'

jail "$TMP/s" --seccomp-action kill -- /usr/bin/unshare -U /bin/true
is "a denied syscall with --seccomp-action kill gives 128+SIGSYS" "$RC" 159
is "  status reason seccomp" "$(cat "$TMP/s")" '{"exit_code":159,"signal":31,"reason":"seccomp"}'
jail "$TMP/s" -- /usr/bin/unshare -U /bin/true
like "the same syscall by default fails with EPERM" "$ERR" 'Operation not permitted'

jail "$TMP/s" --rlimit-cpu 1 -- /bin/sh -c 'while :; do :; done'
is "RLIMIT_CPU: SIGXCPU" "$RC" 152
is "  status reason rlimit-cpu" "$(cat "$TMP/s")" '{"exit_code":152,"signal":24,"reason":"rlimit-cpu"}'
jail "$TMP/s" --rlimit-cpu 1 -- /bin/sh -c 'trap "" XCPU; while :; do :; done'
is "RLIMIT_CPU caught: SIGKILL at the hard limit" "$RC" 137
is "  status reason still rlimit-cpu" "$(cat "$TMP/s")" \
    '{"exit_code":137,"signal":9,"reason":"rlimit-cpu"}'

jail "$TMP/s" --rlimit-fsize 1 -- /usr/bin/dd if=/dev/zero of=/tmp/f bs=1M count=2
is "RLIMIT_FSIZE: SIGXFSZ" "$RC" 153
is "  status reason rlimit-fsize" "$(cat "$TMP/s")" \
    '{"exit_code":153,"signal":25,"reason":"rlimit-fsize"}'

# --- wall time: the whole pid namespace goes, background children included ---
marker_sleep="3$$"
start=$(date +%s%N)
jail "$TMP/s" --wall-time 1 -- /bin/sh -c "sleep $marker_sleep & sleep $marker_sleep"
took=$(( ($(date +%s%N) - start) / 1000000 ))
is "wall time kills with SIGKILL" "$RC" 137
is "  status reason wall-time" "$(cat "$TMP/s")" '{"exit_code":137,"signal":9,"reason":"wall-time"}'
check "  after about a second (${took} ms)" test "$took" -ge 900 -a "$took" -lt 10000
refute "  and no process of the jail is left" pgrep -f "^sleep $marker_sleep"

# --- the jail dies with its launcher, even when the launcher is SIGKILLed (the "^sleep"
# patterns match the jail's processes, not the launcher's command line) ---
"$NSJ" --host-ids "$HOST_IDS" -- /bin/sh -c "sleep 4$$ & sleep 4$$" </dev/null &
launcher=$!
check "the jail started" wait_for "the jail to start" 5 pgrep -f "^sleep 4$$"
kill -KILL "$launcher"
wait "$launcher" 2>/dev/null
wait_for "the jail to go" 5 eval '! pgrep -f "^sleep 4$$" >/dev/null'
refute "killing the launcher with SIGKILL ends every process of the jail" pgrep -f "^sleep 4$$"

# --- SIGTERM to the launcher ends the jail and reports it ---
"$NSJ" --host-ids "$HOST_IDS" --status-fd 3 -- /bin/sh -c "sleep 5$$ & sleep 5$$" \
    </dev/null 3>"$TMP/term.status" &
launcher=$!
check "the jail started" wait_for "the jail to start" 5 pgrep -f "^sleep 5$$"
kill -TERM "$launcher"
wait "$launcher"
is "SIGTERM to the launcher: exit 137" "$?" 137
is "  status reason killed" "$(cat "$TMP/term.status")" '{"exit_code":137,"signal":9,"reason":"killed"}'
refute "  no process of the jail is left" pgrep -f "^sleep 5$$"

# --- launcher errors: 125 with a message naming the cause ---
jail "$TMP/s" --no-such-option -- /bin/true
is "an unknown option gives 125" "$RC" 125
like "  and names it" "$ERR" "unknown or incomplete option '--no-such-option'"
is "  status line" "$(cat "$TMP/s")" '{"exit_code":125,"signal":null,"reason":"setup"}'

cat >"$TMP/typo.json" <<'EOF'
{"limits": {"cpu_s": 5, "wall_sec": 3}}
EOF
jail "$TMP/s" --profile "$TMP/typo.json" -- /bin/true
is "an unknown profile key gives 125" "$RC" 125
like "  the message names the file and the key" "$ERR" "$TMP/typo.json: limits.wall_sec: unknown key"

cat >"$TMP/ptrace.json" <<'EOF'
{"seccomp": {"allow": ["ptrace"]}}
EOF
jail "$TMP/s" --profile "$TMP/ptrace.json" -- /bin/true
is "a profile cannot allow ptrace" "$RC" 125
like "  and is told why" "$ERR" "seccomp.allow: 'ptrace' is never allowed"

jail "$TMP/s" --seccomp no-such-preset -- /bin/true
is "an unknown seccomp preset gives 125" "$RC" 125
like "  and lists the known ones" "$ERR" "unknown preset 'no-such-preset' \(known: c, python, node \(each also as NAME\+exec\)\)"
echo '{"preset": "c", "allow": ["personality"], "action": "kill"}' >"$TMP/policy.json"
jail "$TMP/s" --seccomp "$TMP/policy.json" -- /bin/sh -c 'echo policy'
is "--seccomp FILE: a policy with additions (compiled at run time) runs a program" \
    "$RC $OUT" "0 policy"
jail "$TMP/s" --no-namespaces --net "veth:169.254.101.1/30,169.254.101.2/30" -- /bin/true
is "--net veth without namespaces gives 125" "$RC" 125

jail "$TMP/s" --net veth:169.254.169.253/30,169.254.169.254/30 -- /bin/true
is "the metadata address is refused" "$RC" 125
like "  with a reason" "$ERR" '169.254.169.254 \(cloud metadata\)'
jail "$TMP/s" --net veth:169.254.168.1/16,169.254.168.2/16 -- /bin/true
is "a prefix that covers the metadata address is refused" "$RC" 125
jail "$TMP/s" --net veth:10.0.0.1/30,10.0.0.9/30 -- /bin/true
is "addresses of different prefixes are refused" "$RC" 125
jail "$TMP/s" --bind-ro /nonexistent-itest-nsj -- /bin/true
is "a missing bind source gives 125" "$RC" 125
like "  and names it" "$ERR" 'bind /nonexistent-itest-nsj: No such file or directory'
jail "$TMP/s" --status-fd 99 -- /bin/true
is "a closed --status-fd gives 125" "$RC" 125

# --- options reach the program ---
jail "$TMP/s" --env FOO=bar -- /usr/bin/env
is "the environment is PATH and --env only" "$(sort <<<"$OUT" | tr '\n' ' ')" \
    "FOO=bar PATH=/usr/local/bin:/usr/bin:/bin "
jail "$TMP/s" --hostname itest-nsj -- /usr/bin/hostname
is "--hostname" "$OUT" itest-nsj
echo "kept $$" >"$TMP/keep"
exec 9<"$TMP/keep"
jail "$TMP/s" --keep-fd 9 -- /bin/sh -c 'cat <&9'
is "--keep-fd passes a descriptor" "$OUT" "kept $$"
exec 9<&-
mkdir -p "$TMP/data"
echo "from the host" >"$TMP/data/in"
jail "$TMP/s" --bind-ro "$TMP/data:/data" -- /bin/cat /data/in
is "--bind-ro SRC:DST" "$OUT" "from the host"
jail "$TMP/s" --tmpfs /scratch:2 -- /bin/sh -c 'echo x >/scratch/f && cat /scratch/f'
is "--tmpfs" "$OUT" x
jail "$TMP/s" --rlimit-nofile 17 -- /bin/sh -c 'ulimit -n'
is "--rlimit-nofile" "$OUT" 17
jail "$TMP/s" -v -- /bin/true
like "-v prints the setup steps" "$ERR" 'cloned init.*mapped inside uid 1000.*pivoted into the new root'

# --- a caller without privilege: a clear error and nothing built ---
cp "$NSJ" "$TMP/nsjail-lite"
# An unused uid of the test's own range: RLIMIT_NPROC counts every process of the
# uid, and "nobody" may be busy on a shared machine.
nobody=$((HOST_IDS_BASE + 63))
out=$(cd "$TMP" && setpriv --reuid=$nobody --regid=$nobody --clear-groups "$TMP/nsjail-lite" \
    --net "veth:169.254.101.1/30,169.254.101.2/30" -- /bin/true 2>&1)
is "an unprivileged caller gets 125" "$?" 125
like "  with the missing capabilities named" "$out" \
    'missing capability CAP_SETUID, CAP_SETGID: .*needs CAP_SETUID and CAP_SETGID'
out=$(cd "$TMP" && setpriv --inh-caps=-net_admin --bounding-set=-net_admin "$TMP/nsjail-lite" \
    --host-ids "$HOST_IDS" --net "veth:169.254.101.1/30,169.254.101.2/30" -- /bin/true 2>&1)
is "root without CAP_NET_ADMIN and --net veth gets 125" "$?" 125
like "  and is told that --net veth needs CAP_NET_ADMIN" "$out" \
    'missing capability CAP_NET_ADMIN: --net veth needs CAP_NET_ADMIN on the host'
is "  no veth was made (its address is nowhere)" "$(ip -o addr show to 169.254.101.0/30)" ""
out=$(cd "$TMP" && setpriv --reuid=$nobody --regid=$nobody --clear-groups "$TMP/nsjail-lite" \
    --no-namespaces -- /bin/sh -c 'echo unprivileged; grep ^Seccomp: /proc/self/status' 2>&1)
like "--no-namespaces works without privilege (seccomp still on)" "$out" \
    'unprivileged.Seccomp:.2'

# --- the static launcher's dynamic twin (nsjail-lite/module.mk): the same program ---
if [ -x "$NSJ-dynamic" ]; then
    is "the twin's --help is the launcher's" "$("$NSJ-dynamic" --help)" "$help"
    out=$("$NSJ-dynamic" --host-ids "$HOST_IDS" -- /bin/sh -c 'echo twin; id -u' 2>&1)
    like "the twin runs a jail as the launcher does" "$out" 'twin.1000'
    # An ELF program header of type PT_INTERP (3) names the dynamic loader.
    interp() {
        /usr/bin/python3 - "$1" <<'PY'
import struct, sys
d = open(sys.argv[1], "rb").read()
phoff, = struct.unpack_from("<Q", d, 32)
phentsize, phnum = struct.unpack_from("<HH", d, 54)
print(sum(struct.unpack_from("<I", d, phoff + i * phentsize)[0] == 3 for i in range(phnum)))
PY
    }
    is "the launcher has no dynamic loader (static-pie)" "$(interp "$NSJ")" 0
    is "  its twin has one" "$(interp "$NSJ-dynamic")" 1
fi
done_testing
