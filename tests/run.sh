#!/usr/bin/env bash
# Runs the whole test suite of `make test` (and `make asan` with ASAN=1):
#   1. every cmocka program build/tests/test_*
#   2. every shell test tests/sh/*.sh (CLI snapshots, end-to-end runs, crash tests)
#   3. every fuzz target over its committed corpus tests/fuzz/corpus/<target>/
#   4. with ACCELTRACE_SLOW=1 (`make test-slow`), the slow tests tests/slow/*.sh too
# Each unit ends PASS, FAIL or SKIP, and the closing line is "N passed, N failed, N skipped".
# A shell test skips by exiting 77 after printing a line "SKIP: reason"; a cmocka program
# skips when any of its tests called skip() (cmocka prints "[  SKIPPED ]"): the program is
# then counted as skipped, not passed, and the skipped tests are named. A skip is never a
# pass. Exit 1 if anything failed; skips alone do not fail the run (CI reads the count).
set -u
BUILD=${BUILD:-build}
export BUILD
export ACCELTRACE="$PWD/$BUILD/acceltrace"
export OPENBLAS_NUM_THREADS=${OPENBLAS_NUM_THREADS:-1}
pass=0; fail=0; skip=0; failed=(); skipped=()
logdir="$BUILD/test-logs"; mkdir -p "$logdir"

elapsed() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%6.1fs", b - a }'; }

# The reason a skipped unit gives: its "SKIP: ..." line, or the cmocka tests it skipped.
skip_reason() { # log
    local r
    r=$(grep -m1 '^SKIP: ' "$1" | sed 's/^SKIP: //')
    if [ -z "$r" ]; then
        r=$(sed -n 's/^\[  SKIPPED \] \(test_[A-Za-z0-9_]*\).*/\1/p' "$1" | sort -u | paste -sd, -)
        [ -n "$r" ] && r="cmocka skipped $r"
    fi
    echo "${r:-no reason given}"
}

run_unit() { # name, command...
    local name=$1; shift
    local log="$logdir/$name.log" t0 rc
    t0=$(date +%s.%N)
    "$@" > "$log" 2>&1
    rc=$?
    if [ $rc -eq 0 ] && grep -q '^\[  SKIPPED \]' "$log"; then rc=77; fi
    if [ $rc -eq 0 ]; then
        pass=$((pass + 1))
        printf 'PASS %-40s %s\n' "$name" "$(elapsed "$t0")"
    elif [ $rc -eq 77 ]; then
        skip=$((skip + 1)); skipped+=("$name")
        printf 'SKIP %-40s %s  (%s)\n' "$name" "$(elapsed "$t0")" "$(skip_reason "$log")"
    else
        fail=$((fail + 1)); failed+=("$name")
        printf 'FAIL %-40s (exit %d, log: %s)\n' "$name" "$rc" "$log"
        tail -n 30 "$log" | sed 's/^/    /'
    fi
}

for t in "$BUILD"/tests/test_*; do
    [ -x "$t" ] || continue
    case "$t" in *.o|*.d) continue;; esac
    run_unit "$(basename "$t")" "$t"
done
for s in tests/sh/*.sh; do
    [ -f "$s" ] || continue
    run_unit "$(basename "$s" .sh)" bash "$s"
done
for f in "$BUILD"/fuzz/fuzz_*; do
    [ -x "$f" ] || continue
    name=$(basename "$f")
    corpus="tests/fuzz/corpus/${name#fuzz_}"
    if ! [ -d "$corpus" ]; then
        run_unit "$name-corpus" sh -c "echo 'FAIL: no corpus $corpus for $f'; exit 1"
        continue
    fi
    run_unit "$name-corpus" "$f" "$corpus"
done
if [ "${ACCELTRACE_SLOW:-0}" = 1 ]; then
    for s in tests/slow/*.sh; do
        [ -f "$s" ] || continue
        run_unit "slow_$(basename "$s" .sh)" bash "$s"
    done
fi
[ ${#skipped[@]} -gt 0 ] && echo "skipped: ${skipped[*]}"
[ ${#failed[@]} -gt 0 ] && echo "failed: ${failed[*]}"
echo "$pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ]
