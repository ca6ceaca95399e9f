#!/usr/bin/env bash
# Runs the whole test suite of `make test` (and `make asan` with ASAN=1):
#   1. every cmocka program build/tests/test_*
#   2. every shell test tests/sh/*.sh (CLI snapshots, end-to-end runs, crash tests)
#   3. every fuzz target over its committed corpus tests/fuzz/corpus/<target>/
#   4. with ACCELTRACE_SLOW=1 (`make test-slow`), the slow tests tests/slow/*.sh too
# With arguments, only the units named, as the output names them: test_NAME (cmocka program
# build/tests/test_NAME), NAME (tests/sh/NAME.sh), fuzz_NAME-corpus (a fuzz target over its
# corpus) and slow_NAME (tests/slow/NAME.sh); a name that is none of these is a usage error
# (exit 2) before anything runs. `make check` passes the units of tests/check.txt,
# `make test-UNIT` one unit.
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

run_cmocka() { # path of build/tests/test_X
    run_unit "$(basename "$1")" "$1"
}
run_fuzz() { # path of build/fuzz/fuzz_X
    local name corpus
    name=$(basename "$1")
    corpus="tests/fuzz/corpus/${name#fuzz_}"
    if ! [ -d "$corpus" ]; then
        run_unit "$name-corpus" sh -c "echo 'FAIL: no corpus $corpus for $1'; exit 1"
        return
    fi
    run_unit "$name-corpus" "$1" "$corpus"
}

if [ $# -gt 0 ]; then
    # named units: every name is checked before the first one runs
    units=()
    for u in "$@"; do
        case "$u" in
        test_*) [ -x "$BUILD/tests/$u" ] && { units+=("cmocka $BUILD/tests/$u"); continue; } ;;
        fuzz_*-corpus) f="$BUILD/fuzz/${u%-corpus}"
            [ -x "$f" ] && { units+=("fuzz $f"); continue; } ;;
        slow_*) [ -f "tests/slow/${u#slow_}.sh" ] && { units+=("slow tests/slow/${u#slow_}.sh"); continue; } ;;
        esac
        if [ -f "tests/sh/$u.sh" ]; then
            units+=("sh tests/sh/$u.sh")
            continue
        fi
        echo "run.sh: no test unit '$u' (test_NAME needs $BUILD/tests/test_NAME built; NAME is tests/sh/NAME.sh)" >&2
        exit 2
    done
    for u in "${units[@]}"; do
        kind=${u%% *}; path=${u#* }
        case "$kind" in
        cmocka) run_cmocka "$path" ;;
        fuzz) run_fuzz "$path" ;;
        sh) run_unit "$(basename "$path" .sh)" bash "$path" ;;
        slow) run_unit "slow_$(basename "$path" .sh)" bash "$path" ;;
        esac
    done
else
    for t in "$BUILD"/tests/test_*; do
        [ -x "$t" ] || continue
        case "$t" in *.o|*.d) continue;; esac
        run_cmocka "$t"
    done
    for s in tests/sh/*.sh; do
        [ -f "$s" ] || continue
        run_unit "$(basename "$s" .sh)" bash "$s"
    done
    for f in "$BUILD"/fuzz/fuzz_*; do
        [ -x "$f" ] || continue
        case "$f" in *.o|*.d) continue;; esac
        run_fuzz "$f"
    done
    if [ "${ACCELTRACE_SLOW:-0}" = 1 ]; then
        for s in tests/slow/*.sh; do
            [ -f "$s" ] || continue
            run_unit "slow_$(basename "$s" .sh)" bash "$s"
        done
    fi
fi
[ ${#skipped[@]} -gt 0 ] && echo "skipped: ${skipped[*]}"
[ ${#failed[@]} -gt 0 ] && echo "failed: ${failed[*]}"
echo "$pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ]
