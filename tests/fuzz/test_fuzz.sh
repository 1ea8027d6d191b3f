#!/usr/bin/env bash
# The fuzz harnesses as a bounded smoke run in `make check`: each harness replays its
# committed seeds and every regression input (tests/fuzz/regress/NAME/, the past
# findings) and then makes FUZZ_CHECK_RUNS mutations (a few seconds in total). Long
# runs are `make fuzz FUZZ_SECONDS=N`. Skipped only when clang or libFuzzer is missing
# (`make check` installs both through scripts/deps --fuzz).
. "$(dirname "$0")/../lib.sh"
RUNS=${FUZZ_CHECK_RUNS:-3000}
if ! why=$("$ROOT/tests/fuzz/have-libfuzzer" 2>&1); then
    skip "fuzz smoke runs" "$why"
    exit 0
fi
names=()
for f in "$ROOT"/tests/fuzz/fuzz_*.c; do
    n=$(basename "$f" .c); n=${n#fuzz_}
    [ "$n" = file ] || names+=("$n")
done
for n in "${names[@]}"; do
    if [ ! -x "$ROOT/build/fuzz/fuzz/fuzz_$n" ]; then
        not_ok "fuzz_$n is built (make fuzzers)"
        continue
    fi
    regress=$(find "$ROOT/tests/fuzz/regress/$n" -type f 2>/dev/null | wc -l)
    if out=$("$ROOT/tests/fuzz/run" --runs "$RUNS" "$n" 2>&1); then
        ok "fuzz_$n: $(find "$ROOT/tests/fuzz/corpus/$n" -type f | wc -l) seeds, $regress regression inputs and $RUNS mutations without a finding"
    else
        not_ok "fuzz_$n: $out"
    fi
done
done_testing
