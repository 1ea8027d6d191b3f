#!/usr/bin/env bash
# Tamper-evident audit (lib/auditchain.h, `hub audit verify`): a rotated set written
# through lib/audit is intact in any order; each way an attacker with write access to
# the log directory could hide a record is reported, with the right exit code and the
# bad record's file:line: an edited, deleted, inserted or reordered record (in each file
# of the set), a rotated file's cut tail, a missing file, a cut tail after the last
# checkpoint, a chain recomputed after an edit (the signature catches it), a forged or
# foreign-key signature. Writers that share the file (one after another, and at once)
# keep one chain, and a fresh writer on a rotated-away file links to the old one.
. "$(dirname "$0")/../lib.sh"
W=$BIN/tests/audit/audit_writer
HUB=$BIN/hub
L=$TMP/log
KEY=$TMP/state/audit.key
mkdir -p "$L" "$TMP/state"

# verify FILE...: the exit code, the first fault in $TMP/err.
verify() { "$HUB" audit verify --key "$KEY" "$@" >"$TMP/out" 2>"$TMP/err"; echo $?; }
fault() { cat "$TMP/err"; }
# fresh: a set of three files (a.jsonl.2 oldest, a.jsonl live), 40 records, a checkpoint
# every 7, rotated after records 12 and 26; copied into $S, the set the case tampers.
"$W" --out "$L/a.jsonl" --key "$KEY" --records 40 --every 7 --rotate-at 12 --rotate-at 26
S=$TMP/set
fresh() { rm -rf "$S"; cp -a "$L" "$S"; }
# nth FILE N: line N of FILE. The python below edits a file in place: args FILE N.
edit() { python3 - "$@" <<'PY'
import sys
f, op, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
lines = open(f).read().splitlines(True)
if op == "edit":
    lines[n - 1] = lines[n - 1].replace("api.example.com", "api.evil.example", 1)
elif op == "delete":
    del lines[n - 1]
elif op == "insert":        # a copy of another record, put back in another place
    lines.insert(n - 1, lines[0])
elif op == "plain":         # a record forged without chain fields
    lines.insert(n - 1, '{"event":{"action":"connect","outcome":"success"}}\n')
elif op == "swap":
    lines[n - 1], lines[n] = lines[n], lines[n - 1]
elif op == "cut":           # keep only the first n lines
    lines = lines[:n]
elif op == "sig":           # flip one character of a checkpoint's signature
    l = lines[n - 1]
    i = l.index('"isolate.signature":"') + 25
    lines[n - 1] = l[:i] + ("A" if l[i] != "A" else "B") + l[i + 1:]
elif op == "reason":        # a checkpoint's own words changed
    lines[n - 1] = lines[n - 1].replace('"reason":"interval"', '"reason":"shutdown"', 1)
open(f, "w").write("".join(lines))
PY
}
# rechain FILE N: edits line N and recomputes every hash after it, as an attacker who
# knows the format would; only the signatures (key unknown) are left as they were.
rechain() { python3 - "$@" <<'PY'
import hashlib, re, sys
f, n = sys.argv[1], int(sys.argv[2])
lines = open(f).read().splitlines()
lines[n - 1] = lines[n - 1].replace("api.example.com", "api.evil.example", 1)
for i in range(n, len(lines)):
    h = hashlib.sha256(lines[i - 1].encode()).hexdigest()
    lines[i] = re.sub(r'"prev":"[0-9a-f]{64}"', '"prev":"%s"' % h, lines[i])
open(f, "w").write("\n".join(lines) + "\n")
PY
}
# jf DOTTED.PATH: that field of the JSON record on stdin.
jf() { python3 -c 'import json,sys
d = json.loads(sys.stdin.read())
for k in sys.argv[1].split("."):
    d = d[k]
print(d)' "$1"; }
nlines() { wc -l <"$1" | tr -d ' '; }
# first line number of FILE whose record is a checkpoint
ckpt_line() { grep -n '"audit-checkpoint"' "$1" | sed -n "${2:-1}p" | cut -d: -f1; }

# ---- the intact set ----
is "three files written" "$(ls "$L" | sort | tr '\n' ' ')" "a.jsonl a.jsonl.1 a.jsonl.2 "
fresh
is "intact: exit 0" "$(verify "$S"/a.jsonl.2 "$S"/a.jsonl.1 "$S"/a.jsonl)" 0
like "intact: the records and checkpoints counted" "$(cat "$TMP/out")" \
    "^intact: [0-9]+ records \(seq 1 to [0-9]+\) in 3 file\(s\), [0-9]+ signed checkpoints"
is "intact: in any order (a glob's)" "$(verify "$S"/a.jsonl*)" 0
gzip "$S/a.jsonl.2"
is "intact: a rotated file compressed by logrotate (.gz) is read through gzip" "$(verify "$S"/a.jsonl*)" 0
printf 'junk' >>"$S/a.jsonl.2.gz"
is "... a damaged .gz: exit 5" "$(verify "$S"/a.jsonl*)" 5
fresh
is "each rotated file starts with a link record" \
    "$(head -n1 "$S"/a.jsonl.1 | jf 'event.action') $(head -n1 "$S"/a.jsonl | jf 'event.action')" \
    "audit-link audit-link"
is "the link names the previous file's last hash" \
    "$(head -n1 "$S"/a.jsonl.1 | jf 'isolate.audit.previous.hash')" \
    "$(tail -n1 "$S"/a.jsonl.2 | tr -d '\n' | sha256sum | cut -d' ' -f1)"
is "a rotated file ends with a checkpoint (reason rotate)" \
    "$(tail -n1 "$S"/a.jsonl.2 | jf 'isolate.audit.checkpoint.reason')" rotate
like "the live file ends with a checkpoint" \
    "$(tail -n1 "$S"/a.jsonl | jf 'event.action')" "^audit-checkpoint$"

# ---- one record edited, deleted, inserted, reordered: in each file of the set ----
for f in a.jsonl.2 a.jsonl.1 a.jsonl; do
    fresh; edit "$S/$f" edit 4
    is "$f: an edited record: exit 1" "$(verify "$S"/a.jsonl*)" 1
    like "$f: ... named by file:line" "$(fault)" "$S/$f:4: record changed"
    fresh; edit "$S/$f" delete 4
    is "$f: a deleted record: exit 1" "$(verify "$S"/a.jsonl*)" 1
    like "$f: ... the gap named where it is" "$(fault)" "$S/$f:4: 1 record\(s\) missing before this one"
    fresh; edit "$S/$f" insert 5
    is "$f: an inserted (replayed) record: exit 1" "$(verify "$S"/a.jsonl*)" 1
    like "$f: ... named" "$(fault)" "$S/$f:5: "
    fresh; edit "$S/$f" plain 5
    is "$f: a forged record without the chain: exit 1" "$(verify "$S"/a.jsonl*)" 1
    like "$f: ... named" "$(fault)" "$S/$f:5: a record without its chain fields"
    fresh; edit "$S/$f" swap 3
    is "$f: two records swapped: exit 1" "$(verify "$S"/a.jsonl*)" 1
    like "$f: ... named" "$(fault)" "$S/$f:3: "
done

# ---- whole files and tails ----
fresh; edit "$S/a.jsonl.1" cut $(($(nlines "$S/a.jsonl.1") - 3))
is "a rotated file's tail cut: exit 1" "$(verify "$S"/a.jsonl*)" 1
like "... named at the next file's link" "$(fault)" "$S/a.jsonl:1: 3 record\(s\) missing .*tail was cut"
fresh; rm "$S/a.jsonl.1"
is "a file of the set missing: exit 1" "$(verify "$S"/a.jsonl*)" 1
like "... named" "$(fault)" "$S/a.jsonl:1: [0-9]+ record\(s\) missing"
fresh; c=$(ckpt_line "$S/a.jsonl" 1); edit "$S/a.jsonl" cut $((c + 2))
is "the live file cut after a checkpoint: exit 4" "$(verify "$S"/a.jsonl*)" 4
like "... the unsealed records named" "$(fault)" "$S/a.jsonl:$((c + 1)): 2 record\(s\) from here to the end have no signed checkpoint"
fresh; edit "$S/a.jsonl" cut $(($(nlines "$S/a.jsonl") - 1))
is "the final checkpoint removed: exit 4" "$(verify "$S"/a.jsonl*)" 4
fresh; printf '{"event":{"action":"x"' >>"$S/a.jsonl"
is "a torn last line: exit 1" "$(verify "$S"/a.jsonl*)" 1
fresh; cp "$S/a.jsonl.1" "$S/copy"
is "the same file given twice: exit 1" "$(verify "$S"/a.jsonl* "$S/copy")" 1

# ---- hostile lines: bounded, never a crash ----
fresh; python3 -c 'import sys; open(sys.argv[1], "a").write("{\"x\":\"" + "A" * (5 << 20) + "\"}\n")' "$S/a.jsonl"
is "a line longer than any record: exit 1" "$(verify "$S"/a.jsonl*)" 1
like "... named as such" "$(fault)" "$S/a.jsonl:[0-9]+: a line longer than any record"
fresh; printf '%s\n' '{"a":1,"isolate.chain":{"seq":99999999999999999999999,"prev":"zz"}}' \
    '{"isolate.chain":{"seq":3,"prev":"0000000000000000000000000000000000000000000000000000000000000000"},"isolate.signature":"' \
    >>"$S/a.jsonl"
is "chain fields cut short or out of range: exit 1" "$(verify "$S"/a.jsonl*)" 1

# ---- signatures ----
fresh; rechain "$S/a.jsonl.1" 4
is "an edit with every later hash recomputed: exit 3 (bad signature)" "$(verify "$S"/a.jsonl*)" 3
like "... the first checkpoint after the edit named" "$(fault)" "$S/a.jsonl.1:$(ckpt_line "$S/a.jsonl.1" 1): bad signature"
fresh; edit "$S/a.jsonl.2" sig "$(ckpt_line "$S/a.jsonl.2" 1)"
is "a checkpoint's signature changed: exit 3" "$(verify "$S"/a.jsonl*)" 3
fresh; edit "$S/a.jsonl" reason "$(ckpt_line "$S/a.jsonl" 1)"
is "a checkpoint's own fields changed: exit 3" "$(verify "$S"/a.jsonl*)" 3
fresh
"$W" --out "$TMP/other.jsonl" --key "$TMP/other.key" --records 2 >/dev/null
is "checked with another key: exit 3" \
    "$("$HUB" audit verify --key "$TMP/other.key" "$S"/a.jsonl* 2>"$TMP/err" >/dev/null; echo $?)" 3
like "... the key named" "$(fault)" "signed with key [0-9a-f]{16}, which is not among the keys given"
"$HUB" audit verify --key "$TMP/other.key" --key "$KEY" "$S"/a.jsonl* >/dev/null 2>&1
is "several --key: each checkpoint checked with its own" "$?" 0

# ---- usage and unreadable files ----
"$HUB" audit verify --key "$KEY" "$TMP/nonexistent" >/dev/null 2>&1
is "an unreadable file: exit 5" "$?" 5
"$HUB" audit verify --key "$KEY" >/dev/null 2>&1
is "no file: exit 2 (usage)" "$?" 2
"$HUB" audit verify --key "$TMP/nonexistent.pem" "$S/a.jsonl" >/dev/null 2>&1
is "a key that cannot be read: exit 2" "$?" 2
# A spokes folder with a broken manifest (an attacker who can write one there, or a
# typo) does not stop a verification: hub.json alone is read.
mkdir -p "$TMP/broken-spokes" && echo '{"name": ' >"$TMP/broken-spokes/bad.json"
"$HUB" audit verify --spokes "$TMP/broken-spokes" --key "$KEY" "$S"/a.jsonl* >/dev/null 2>"$TMP/err"
is "a broken manifest in the spokes folder: still verified, exit 0" "$?" 0

# ---- writers sharing one file ----
rm -rf "$TMP/m" && mkdir "$TMP/m"
"$W" --out "$TMP/m/s.jsonl" --key "$KEY" --records 5
"$W" --out "$TMP/m/s.jsonl" --key "$KEY" --records 5
is "two writers one after the other: one chain" "$(verify "$TMP/m/s.jsonl")" 0
is "... each sealed its records when it closed" \
    "$(grep -c '"reason":"shutdown"' "$TMP/m/s.jsonl")" 2
"$W" --out "$TMP/m/s.jsonl" --key "$KEY" --records 400 --every 50 &
p1=$!
"$W" --out "$TMP/m/s.jsonl" --key "$KEY" --records 400 --every 50 &
p2=$!
wait $p1 $p2
is "two writers at once: one chain (flock)" "$(verify "$TMP/m/s.jsonl")" 0
is "... every record there" "$(grep -c '"action":"connect"' "$TMP/m/s.jsonl")" 810
mv "$TMP/m/s.jsonl" "$TMP/m/s.jsonl.1"
"$W" --out "$TMP/m/s.jsonl" --key "$KEY" --records 3
is "a fresh writer after logrotate links to FILE.1" "$(verify "$TMP/m/s.jsonl" "$TMP/m/s.jsonl.1")" 0
is "... its link says continued" "$(head -n1 "$TMP/m/s.jsonl" | jf 'isolate.audit.chain')" continued

# ---- the chain's head file cut short under a writer ----
# .NAME.chain is mapped by every writer of NAME; an ftruncate of it by another process
# made the next touch of the mapping a SIGBUS that ended the writer (and lost records).
mkdir -p "$TMP/h"
"$W" --out "$TMP/h/l.jsonl" --key "$KEY" --records 1500000 2>"$TMP/h/err" &
wpid=$!
for _ in $(seq 100); do [ -s "$TMP/h/l.jsonl" ] && break; sleep 0.05; done
truncate -s 0 "$TMP/h/.l.jsonl.chain"
wait $wpid
is "the head file cut short while a writer writes: the writer carries on (exit 0, no SIGBUS)" "$?" 0
like "... and says so" "$(cat "$TMP/h/err")" "was cut short by another process"
is "... every record written" "$(grep -c '"action":"connect"' "$TMP/h/l.jsonl")" 1500000
is "... and the chain unbroken: hub audit verify exit 0" "$(verify "$TMP/h/l.jsonl")" 0

# ---- the key ----
is "the key file is 0600" "$(stat -c %a "$KEY")" 600
chmod 0644 "$KEY"
"$W" --out "$TMP/m/t.jsonl" --key "$KEY" --records 1 2>"$TMP/err"
is "a key others may read is refused" "$?" 1
like "... and said" "$(fault)" "not a regular file of mode 0600"
chmod 0600 "$KEY"

done_testing
