#!/usr/bin/env bash
# SIGKILL a 100-config sweep midway, rerun: finished rows are skipped and the final files
# equal an uninterrupted run's byte for byte. The count model's
# `spin` key makes each pass slow enough to be killed between batches and mid-write.
set -euo pipefail
A=${ACCELTRACE:?}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
T=$(mktemp -d); trap 'kill -9 $pid 2>/dev/null || true; rm -rf "$T"' EXIT
pid=
cd "$T"
"$A" capture test --records 400 -o t.atr 2> /dev/null
printf '{"extends": "%s/configs/test-count.json", "spin": 20000}\n' "$ROOT" > hw.json
G="$ROOT/configs/test-sweep.json"

"$A" replay t.atr --hw hw.json --sweep "$G" --batch 4 -j 1 -q -o full 2> /dev/null
[ "$(wc -l < full/results.jsonl)" -eq 100 ]

"$A" replay t.atr --hw hw.json --sweep "$G" --batch 4 -j 1 -q -o part 2> /dev/null &
pid=$!
for _ in $(seq 1 3000); do
    n=$( (cat part/results.jsonl 2>/dev/null || true) | wc -l)
    [ "$n" -ge 30 ] && break
    sleep 0.01
done
kill -9 "$pid"
wait "$pid" 2>/dev/null || true
pid=
done_rows=$(wc -l < part/results.jsonl)
echo "killed with $done_rows rows written"
[ "$done_rows" -ge 30 ] && [ "$done_rows" -lt 100 ] || { echo "kill did not land midway"; exit 1; }
# a torn trailing line as a kill during a write would leave
printf '{"trace_hash":"%s' "$(head -c 20 part/results.jsonl)" >> part/results.jsonl

"$A" replay t.atr --hw hw.json --sweep "$G" --batch 4 -j 2 -o part 2> log.txt
cat log.txt
grep -q "already done" log.txt
skipped=$(sed -n 's/.*(\([0-9]*\) already done).*/\1/p' log.txt)
[ "$skipped" -ge 30 ] && [ "$skipped" -le "$done_rows" ] || { echo "skipped $skipped"; exit 1; }
cmp full/results.csv part/results.csv
cmp full/results.jsonl part/results.jsonl
# a third run does nothing
"$A" replay t.atr --hw hw.json --sweep "$G" -o part 2> log.txt
grep -q "replayed 0 of 100 configs (100 already done)" log.txt
cmp full/results.csv part/results.csv
echo ok
