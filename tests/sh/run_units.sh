#!/usr/bin/env bash
# tests/run.sh with unit names (make check, make test-UNIT): every unit of tests/check.txt
# names a test that exists (a cmocka source, a shell test, a fuzz target with a corpus);
# named units run alone and are counted; an unknown name is a usage error (exit 2) before
# anything runs.
set -eu
BUILD=${BUILD:-build}
fail() { echo "FAIL: $*" >&2; exit 1; }
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT

# 1. tests/check.txt: each name resolves, and every floor has a unit
n=0
while read -r u; do
    case "$u" in
    test_*) [ -f "tests/$u.c" ] || fail "check.txt: no tests/$u.c" ;;
    fuzz_*-corpus) t=${u%-corpus}
        [ -f "tests/fuzz/$t.c" ] || fail "check.txt: no tests/fuzz/$t.c"
        [ -d "tests/fuzz/corpus/${t#fuzz_}" ] || fail "check.txt: no corpus for $t" ;;
    *) [ -f "tests/sh/$u.sh" ] || fail "check.txt: no tests/sh/$u.sh" ;;
    esac
    n=$((n + 1))
done < <(sed -e 's/#.*//' tests/check.txt | tr -s ' \t' '\n' | grep -v '^$')
[ "$n" -ge 10 ] || fail "check.txt names only $n units"
for floor in common formats traces capture replay analysis cli; do
    grep -q "^# $floor:" tests/check.txt || fail "check.txt has no section for $floor"
done

# 2. named units run alone
[ -x "$BUILD/tests/test_csv" ] || { echo "SKIP: $BUILD/tests/test_csv not built"; exit 77; }
BUILD=$BUILD tests/run.sh test_csv > "$T/one.out" 2>&1 || fail "test_csv: $(cat "$T/one.out")"
grep -q '^PASS test_csv ' "$T/one.out" || fail "no PASS line: $(cat "$T/one.out")"
[ "$(grep -c '^PASS ' "$T/one.out")" = 1 ] || fail "more than one unit ran: $(cat "$T/one.out")"
grep -q '^1 passed, 0 failed, 0 skipped$' "$T/one.out" || fail "count: $(cat "$T/one.out")"

# 3. an unknown unit: exit 2, nothing run
set +e
BUILD=$BUILD tests/run.sh test_csv no_such_unit > "$T/bad.out" 2>&1
rc=$?
set -e
[ "$rc" = 2 ] || fail "unknown unit exit $rc: $(cat "$T/bad.out")"
grep -q "no test unit 'no_such_unit'" "$T/bad.out" || fail "message: $(cat "$T/bad.out")"
grep -q '^PASS' "$T/bad.out" && fail "a unit ran before the unknown name was refused"
echo "run.sh units ok ($n in check.txt)"
