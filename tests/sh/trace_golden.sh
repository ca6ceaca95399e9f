#!/usr/bin/env bash
# Golden traces through the CLI: every tests/golden/ok/NAME.atr verifies and dumps to its
# committed NAME.jsonl; every tests/golden/bad/NAME.atr makes verify exit 3 with exactly
# the message in NAME.err, and dump/info exit 3 too.
set -u
A=${ACCELTRACE:?}
fail=0
tmp_err=$(mktemp); trap 'rm -f "$tmp_err"' EXIT
for t in tests/golden/ok/*.atr; do
    exp=${t%.atr}.jsonl
    if ! "$A" verify -q "$t"; then echo "FAIL verify $t"; fail=1; fi
    if ! "$A" dump "$t" | diff -u "$exp" - ; then echo "FAIL dump $t differs from $exp"; fail=1; fi
    # two decoding threads give the same output
    if ! "$A" dump -j 2 "$t" | diff -q "$exp" - >/dev/null; then echo "FAIL dump -j 2 $t"; fail=1; fi
done
"$A" dump --hex --type test --step 1 tests/golden/ok/small.atr |
    diff -u tests/golden/ok/small.step1.hex.jsonl - || { echo "FAIL filtered dump"; fail=1; }
for t in tests/golden/bad/*.atr; do
    exp=${t%.atr}.err
    err=$("$A" verify "$t" 2>&1 >/dev/null); rc=$?
    if [ "$rc" -ne 3 ]; then echo "FAIL verify $t exit $rc (want 3)"; fail=1; fi
    if [ "$err" != "$(cat "$exp")" ]; then
        echo "FAIL verify $t message"; echo "  got:  $err"; echo "  want: $(cat "$exp")"; fail=1
    fi
    # dump fails on damaged frames and on a wrong content hash (it hashes as it streams);
    # with no trailer or index keys that disagree with the records it warns and exits 0
    want=3
    case "$t" in *no_trailer.atr|*index_key.atr) want=0;; esac
    "$A" dump "$t" >/dev/null 2>"$tmp_err"; rc=$?
    [ "$rc" -eq "$want" ] || { echo "FAIL dump $t exit $rc (want $want)"; fail=1; }
    grep -q "^acceltrace: " "$tmp_err" || { echo "FAIL dump $t gave no message"; fail=1; }
done
[ $fail -eq 0 ] && echo "golden traces ok"
exit $fail
