#!/usr/bin/env bash
# Resume cross-checks results.csv against results.jsonl and says what it drops; only the
# tail (a torn line, the group in flight, CSV rows past the JSON lines) may go. A corrupt
# line with rows after it, or a CSV row whose keys differ from its JSON line, is refused
# with file and line (exit 3) instead of silently dropping every row after it.
set -euo pipefail
A=${ACCELTRACE:?}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
cd "$T"
fail() { echo "FAIL: $*"; exit 1; }
"$A" capture test --records 50 -o t.atr 2> /dev/null
H="$ROOT/configs/test-count.json"
G="$ROOT/configs/test-sweep.json"
run() { "$A" replay t.atr --hw "$H" --sweep "$G" -o r "$@"; }
run -q 2> /dev/null
cp -r r full
# 1. a corrupt middle line: refused naming file and line, nothing dropped
sed -i '5s/.*/{"trace_hash": "garbage/' r/results.jsonl
cp r/results.jsonl damaged.jsonl
rc=0; run -q 2> log.txt || rc=$?
[ "$rc" = 3 ] || fail "corrupt line 5: exit $rc, want 3: $(cat log.txt)"
grep -q "corrupt row ('r/results.jsonl' line 5)" log.txt || fail "message: $(cat log.txt)"
cmp damaged.jsonl r/results.jsonl || fail "the damaged file was changed"
# 2. the tail: 3 JSON lines gone (CSV rows past them) and a torn line; says what it drops
head -n 97 full/results.jsonl > r/results.jsonl
printf '{"trace_hash":"%s' "$(head -c 20 full/results.jsonl)" >> r/results.jsonl
run 2> log.txt || fail "resume: $(cat log.txt)"
grep -q "warning: resuming 'r': dropped 'r/results.jsonl': a torn last line (line 98); 'r/results.csv': 3 row(s) from line 99 on" log.txt ||
    fail "drop message: $(cat log.txt)"
grep -q "replayed 3 of 100 configs (97 already done)" log.txt || fail "resume: $(cat log.txt)"
cmp full/results.csv r/results.csv && cmp full/results.jsonl r/results.jsonl || fail "resumed files differ"
# 3. a CSV row whose keys are not its JSON line's
awk -F, 'NR == 11 { $2 = "0000000000000000" } 1' OFS=, full/results.csv > r/results.csv
rc=0; run -q 2> log.txt || rc=$?
[ "$rc" = 3 ] || fail "csv mismatch: exit $rc: $(cat log.txt)"
grep -q "row keys of 'r/results.csv' line 11 differ from 'r/results.jsonl' line 10" log.txt ||
    fail "csv mismatch message: $(cat log.txt)"
# 4. CSV shorter than the JSON lines
head -n 51 full/results.csv > r/results.csv
rc=0; run -q 2> log.txt || rc=$?
[ "$rc" = 3 ] && grep -q "'r/results.csv' has 50 rows, 'r/results.jsonl' 100" log.txt ||
    fail "short csv: $rc $(cat log.txt)"
echo ok
