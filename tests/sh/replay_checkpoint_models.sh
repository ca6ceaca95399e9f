#!/usr/bin/env bash
# The save/load checkpoint hooks of the kura, salca, disc and gpu models:
# a replay stopped at every checkpoint (--time-limit 0, a checkpoint after every group of
# a few records, so they fall at odd places: between a kura step and its stored tiles,
# inside a salca decode step) and rerun until done ends with every table byte-identical
# to an uninterrupted replay. Each rerun continues from the last one's checkpoint.
set -euo pipefail
A=${ACCELTRACE:?}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
C=$ROOT/configs
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
cd "$T"
fail() { echo "FAIL: $*"; exit 1; }

# check NAME TRACE HW GRID GROUP: full replay, then the chain; every table compared
check() {
    local name=$1 trace=$2 hw=$3 grid=$4 group=$5 i rc
    "$A" replay "$trace" --hw "$hw" --sweep "$grid" -q -o "$name.full" 2> /dev/null ||
        fail "$name: full replay"
    for i in $(seq 1 300); do
        rc=0
        "$A" replay "$trace" --hw "$hw" --sweep "$grid" -j 2 --checkpoint-every 0 \
            --checkpoint-records 1 --group-records "$group" --time-limit 0 -o "$name.chain" \
            2> "$name.log" || rc=$?
        [ "$rc" -eq 0 ] && break
        [ "$rc" -eq 1 ] && grep -q "stopped at a checkpoint" "$name.log" ||
            fail "$name: run $i: $(cat "$name.log")"
    done
    [ "$rc" -eq 0 ] && [ "$i" -ge 4 ] || fail "$name: $i runs, exit $rc"
    grep -q "resumed from checkpoint" "$name.log" || fail "$name: last run did not resume"
    [ ! -e "$name.chain/replay.ckpt" ] || fail "$name: checkpoint left behind"
    for f in "$name.full"/*.csv "$name.full"/*.jsonl; do
        cmp "$f" "$name.chain/$(basename "$f")" || fail "$name: $(basename "$f") differs"
    done
    echo "$name: $i runs, tables equal"
}

"$A" capture kura --size 13x11 --steps 40 --data uniform --tile-streams 4x3 -q -o k.atr \
    > /dev/null 2>&1 || fail "kura capture"
printf '{"n_h": [5, 20], "n_w": [5, 7]}\n' > kura-grid.json
check kura k.atr "$C/kura-activity.json" kura-grid.json 7

"$A" capture salca --source synthetic -q -q --length 4096 --steps 6 --layers 2 --heads 4 --threads 1 -o s.atr \
    > /dev/null 2>&1 || fail "salca capture"
check salca s.atr "$C/salca-hbm2.json" "$C/salca-sweep.json" 13

"$A" capture disc --model micro --keep-masks 'blocks=0;heads=all;steps=all' -q -o m.atr \
    > /dev/null 2>&1 || fail "disc capture"
check disc m.atr "$C/disc-a100-matched.json" "$C/disc-sweep.json" 3
printf '{"gemm_eff_max": [0.5, 0.7]}\n' > gpu-grid.json
check gpu m.atr "$C/a100.json" gpu-grid.json 5
echo ok
