#!/usr/bin/env bash
# Runs the whole test suite of `make test` (and `make asan` with ASAN=1):
#   1. every cmocka program build/tests/test_*
#   2. every shell test tests/sh/*.sh (CLI snapshots, end-to-end runs, crash tests)
#   3. every fuzz target over its committed corpus tests/fuzz/corpus/<target>/
# and prints one closing line "N passed, N failed". Exit 1 if anything failed.
set -u
BUILD=${BUILD:-build}
export BUILD
export ACCELTRACE="$PWD/$BUILD/acceltrace"
export OPENBLAS_NUM_THREADS=${OPENBLAS_NUM_THREADS:-1}
pass=0; fail=0; failed=()
logdir="$BUILD/test-logs"; mkdir -p "$logdir"

run_unit() { # name, command...
    local name=$1; shift
    local t0=$(date +%s.%N)
    if "$@" > "$logdir/$name.log" 2>&1; then
        pass=$((pass + 1))
        printf 'PASS %-40s %6.1fs\n' "$name" "$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { print b - a }')"
    else
        fail=$((fail + 1)); failed+=("$name")
        printf 'FAIL %-40s (log: %s)\n' "$name" "$logdir/$name.log"
        tail -n 30 "$logdir/$name.log" | sed 's/^/    /'
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
    [ -d "$corpus" ] || continue
    run_unit "$name-corpus" "$f" "$corpus"
done
[ ${#failed[@]} -gt 0 ] && echo "failed: ${failed[*]}"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
