#!/usr/bin/env bash
# A 240-config single-pass replay SIGKILLed at about 70% of its run
# resumes from the engine's last checkpoint (DIR/replay.ckpt) and ends with results.csv and
# results.jsonl byte-identical to an uninterrupted run. The rerun's share of the full run's
# time is measured and printed, never asserted (target <= 40%; docs/performance.md).
# Then --time-limit 0 stops at every checkpoint: a chain of reruns, each continuing from the
# last, ends with the same files too. The count model's `spin` key makes records costly.
set -euo pipefail
A=${ACCELTRACE:?}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
T=$(mktemp -d)
pid=
trap '[ -n "$pid" ] && kill -9 $pid 2>/dev/null; rm -rf "$T"' EXIT
cd "$T"
spin=25000 # about 13 s of CPU under gcc -O2
ck=()       # the default checkpoint interval (1 s)
# under ASan a shorter run, with checkpoints every 0.25 s so that one exists well before
# 70% of it (with the 1 s default the first one came as the pass ended, and the kill landed
# while the rows were being written)
case "${BUILD:-}$A" in *asan*) spin=5000 ck=(--checkpoint-every 0.25) ;; esac
"$A" capture test --records 2000 -o t.atr 2> /dev/null
printf '{"extends": "%s/configs/test-count.json", "spin": %d}\n' "$ROOT" "$spin" > hw.json
printf '{"scale": {"range": [1, 24, 1]}, "ops_per_record": [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]}\n' \
    > grid.json
run() { "$A" replay t.atr --hw hw.json --sweep grid.json -j 2 ${ck[@]+"${ck[@]}"} "$@"; }
now() { date +%s.%N; }
TIMEFORMAT='%R %U %S' # wall, user and system seconds of a timed command

{ time run -o full 2> full.log; } 2> full.time
read -r t_full u s < full.time
c_full=$(echo "$u + $s" | bc)
grep -q "replayed 240 of 240 configs (0 already done) with model 'count' in 1 pass" full.log
[ "$(wc -l < full/results.jsonl)" -eq 240 ]
[ ! -e full/replay.ckpt ] || { echo "checkpoint left behind by a finished run"; exit 1; }

# the same run, SIGKILLed once it has used 70% of the full run's CPU time (its work; wall
# time on a shared machine says little) and a checkpoint exists
hz=$(getconf CLK_TCK)
kill_at=$(echo "$c_full * 0.7 * $hz" | bc)
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat" 2> /dev/null || echo 0; }
t0=$(now)
# (not through run(): $! must be the replay itself, not a subshell around it)
"$A" replay t.atr --hw hw.json --sweep grid.json -j 2 ${ck[@]+"${ck[@]}"} -q -o part 2> part.log &
pid=$!
landed=0
while kill -0 "$pid" 2> /dev/null; do
    [ "$(awk '{ print $3 }' "/proc/$pid/stat" 2> /dev/null)" != Z ] || break
    if [ "$(echo "$(cpu_ticks "$pid") >= $kill_at" | bc)" = 1 ] && [ -s part/replay.ckpt ]; then
        kill -9 "$pid"
        landed=1
        break
    fi
    sleep 0.05
done
wait "$pid" 2> /dev/null || true
pid=
[ "$landed" = 1 ] || { echo "the run ended before the kill"; cat part.log; exit 1; }
rows=$( (cat part/results.jsonl 2> /dev/null || true) | wc -l)
echo "killed after $(echo "$(now) - $t0" | bc | cut -c1-5) s (full run ${t_full:0:5} s), $rows rows"
[ "$rows" -eq 0 ] || { echo "a single pass wrote rows before its end"; exit 1; }

{ time run -o part 2> rerun.log; } 2> rerun.time || { cat rerun.log; exit 1; }
read -r t_re u s < rerun.time
c_re=$(echo "$u + $s" | bc)
cat rerun.log | grep -v '^replay:' || true
resumed=$(sed -n 's/.*resumed from checkpoint after \([0-9]*\) records.*/\1/p' rerun.log)
[ -n "$resumed" ] && [ "$resumed" -gt 0 ] && [ "$resumed" -lt 2000 ] ||
    { echo "the rerun did not resume from a checkpoint"; exit 1; }
cmp full/results.csv part/results.csv
cmp full/results.jsonl part/results.jsonl
[ ! -e part/replay.ckpt ] && [ ! -e part/replay.ckpt.tmp ] ||
    { echo "checkpoint left behind"; exit 1; }
# the machine may be shared: CPU seconds are the steadier measure, wall seconds are shown too
echo "measured: rerun/full = $(echo "scale=3; $c_re / $c_full" | bc) in CPU seconds ($c_re of" \
    "$c_full), $(echo "scale=3; $t_re / $t_full" | bc) in wall seconds ($t_re of $t_full);" \
    "resumed after $resumed of 2000 records; target <= 0.40"

# a chain of runs stopped at each checkpoint ends with the same files (spin 0: quick)
printf '{"extends": "%s/configs/test-count.json"}\n' "$ROOT" > hw0.json
"$A" replay t.atr --hw hw0.json --sweep grid.json -q -o full0 2> /dev/null
for i in $(seq 1 40); do
    rc=0
    "$A" replay t.atr --hw hw0.json --sweep grid.json -j 2 -q --checkpoint-every 0 \
        --checkpoint-records 256 --time-limit 0 -o chain 2> chain.log || rc=$?
    [ "$rc" -eq 0 ] && break
    [ "$rc" -eq 1 ] && grep -q "stopped at a checkpoint" chain.log || { cat chain.log; exit 1; }
done
[ "$rc" -eq 0 ] && [ "$i" -ge 8 ] || { echo "chain: $i runs, rc $rc"; exit 1; }
cmp full0/results.csv chain/results.csv
cmp full0/results.jsonl chain/results.jsonl
echo ok
