#!/usr/bin/env bash
# merge: shards of a sweep with a secondary table
# (disc's ops) merge, streamed, into files equal to an unsharded run's, with the run's
# manifest (shard dropped); the output folder is locked (a held folder is refused, as is
# energy on it); each file goes through a temporary and a rename, so a failing write
# leaves a complete results.csv, never the 0-byte one an in-place rewrite left; an output
# folder holding another run's rows is refused (its tables would mix).
set -euo pipefail
A=${ACCELTRACE:?}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
command -v flock > /dev/null || { echo "SKIP: flock(1) not installed"; exit 77; }
T=$(mktemp -d); holder=
trap '[ -n "$holder" ] && kill "$holder" 2> /dev/null; rm -rf "$T"' EXIT
cd "$T"
fail() { echo "FAIL: $*"; exit 1; }
"$A" capture disc --model micro -o m.atr > /dev/null 2>&1
H="$ROOT/configs/disc-a100-matched.json"
printf '{"dpu_count": [16, 32, 64], "hbm_gbs": [1024, 2048]}\n' > g.json
"$A" replay m.atr --hw "$H" --sweep g.json -q -o full 2> /dev/null
for i in 1 2 3; do "$A" replay m.atr --hw "$H" --sweep g.json --shard $i/3 -q -o s$i 2> /dev/null; done
[ -f full/ops.jsonl ] || fail "no ops table"
grep -q '"shard": "2/3"' s2/manifest.json || fail "shard not in manifest"
"$A" merge s3 s1 s2 -o out 2> log.txt || fail "merge: $(cat log.txt)"
for f in results.csv results.jsonl ops.csv ops.jsonl; do cmp full/$f out/$f || fail "$f differs"; done
diff <(grep -v '"command"' full/manifest.json) <(grep -v '"command"' out/manifest.json) ||
    fail "merged manifest differs from the unsharded run's"
ls -a out | grep -q tmp && fail "temporaries left: $(ls -a out)"
# the merged folder resumes as the unsharded run: nothing to do
"$A" replay m.atr --hw "$H" --sweep g.json -o out 2> log.txt || fail "resume merged: $(cat log.txt)"
grep -q "replayed 0 of 6 configs (6 already done)" log.txt || fail "resume merged: $(cat log.txt)"
# shards of another grid are refused
"$A" replay m.atr --hw "$H" --sweep "$ROOT/configs/disc-sweep.json" --shard 1/3 -q -o x1 2> /dev/null
rc=0; "$A" merge s2 x1 -o bad 2> log.txt || rc=$?
[ "$rc" = 3 ] && grep -q "differs from 's2' in sweep grid" log.txt || fail "other grid: $rc $(cat log.txt)"
# merging the same shards again into their output is fine; another run's output is refused
"$A" merge s1 s2 s3 -o out 2> log.txt || fail "merge again: $(cat log.txt)"
rc=0; "$A" merge x1 -o out 2> log.txt || rc=$?
[ "$rc" = 2 ] && grep -q "merge output 'out' holds rows of another run: .*sweep grid" log.txt ||
    fail "merge over another run: $rc $(cat log.txt)"
cmp full/results.csv out/results.csv || fail "a refused merge changed the folder"
# a held output folder: merge and energy refused, nothing written
flock out/.lock -c 'touch held; sleep 30' & holder=$!
for _ in $(seq 1 500); do [ -f held ] && break; sleep 0.01; done
[ -f held ] || fail "lock holder did not start"
rc=0; "$A" merge s1 s2 s3 -o out 2> log.txt || rc=$?
[ "$rc" = 2 ] && grep -q "results folder 'out' is in use by another writer" log.txt || fail "held merge: $rc $(cat log.txt)"
rc=0; "$A" energy out --table "$ROOT/configs/disc-energy.json" 2> log.txt || rc=$?
[ "$rc" = 2 ] && grep -q "results folder 'out' is in use" log.txt || fail "held energy: $rc $(cat log.txt)"
# a replay writing into an input: merge refused (inputs are locked shared)
rc=0; "$A" merge out s1 -o other 2> log.txt || rc=$?
[ "$rc" = 2 ] && grep -q "results folder 'out' is in use" log.txt || fail "held input: $rc $(cat log.txt)"
kill "$holder"; wait "$holder" 2> /dev/null || true; holder=
cmp full/results.csv out/results.csv || fail "a refused writer changed the folder"
# a write that fails (results.jsonl cannot be replaced) leaves a complete results.csv
mkdir w && cp full/results.csv w/ && mkdir w/results.jsonl
rc=0; "$A" merge s1 s2 s3 -o w 2> log.txt || rc=$?
[ "$rc" != 0 ] || fail "merge into a broken folder succeeded"
[ -s w/results.csv ] || fail "results.csv left empty"
cmp full/results.csv w/results.csv || fail "results.csv left incomplete"
echo ok
