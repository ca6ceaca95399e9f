#!/usr/bin/env bash
# A sweep that --mem-limit splits into several passes gives the rows of a single-pass
# replay byte for byte, for the salca, disc and kura models: every pass reopens the trace,
# and what the engine keeps across passes (the trace header, replay/engine.h) must outlive
# the reader of the pass before (a limit that splits the sweep once read freed memory).
# Limits are tried from small to large; the test needs at least one that splits the sweep
# into 3 or more passes and one that splits it at all, and every run that is not refused
# up front (exit 3, "raise --mem-limit") must end with the single pass's tables. The runs
# are not -q: their closing summary gives the passes.
set -u
A=${ACCELTRACE:?}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
C=$ROOT/configs
F=$ROOT/tests/fuzz/ckpt
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }

# split NAME TRACE HW GRID: the single pass, then each limit
split() {
    local name=$1 trace=$2 hw=$3 grid=$4 lim rc passes max=0
    "$A" replay "$trace" --hw "$hw" --sweep "$grid" -j 1 -o "$T/$name.one" 2> "$T/$name.one.err" ||
        { bad "$name: single pass: $(cat "$T/$name.one.err")"; return; }
    grep -q " in 1 pass(es)" "$T/$name.one.err" || bad "$name: not one pass: $(cat "$T/$name.one.err")"
    for lim in 10300KiB 10400KiB 10500KiB 10600KiB 10800KiB 11MiB 11500KiB 12MiB 14MiB; do
        rc=0
        rm -rf "$T/$name.split"
        "$A" replay "$trace" --hw "$hw" --sweep "$grid" -j 2 --mem-limit "$lim" \
            -o "$T/$name.split" 2> "$T/$name.err" || rc=$?
        if [ "$rc" = 3 ] && grep -q "raise --mem-limit" "$T/$name.err"; then
            continue
        fi
        [ "$rc" = 0 ] || { bad "$name at $lim: exit $rc: $(tail -3 "$T/$name.err")"; continue; }
        passes=$(sed -n 's/.* in \([0-9]*\) pass(es).*/\1/p' "$T/$name.err")
        [ "${passes:-0}" -gt "$max" ] && max=$passes
        for f in "$T/$name.one"/*.csv "$T/$name.one"/*.jsonl; do
            cmp -s "$f" "$T/$name.split/$(basename "$f")" ||
                bad "$name at $lim ($passes passes): $(basename "$f") differs"
        done
    done
    [ "$max" -ge 3 ] || bad "$name: no limit split the sweep into 3 passes or more (at most $max)"
    echo "$name: up to $max passes, tables equal"
}

"$A" capture salca --source synthetic -q -q --length 4096 --steps 6 --layers 2 --heads 4 \
    --threads 1 -o "$T/s.atr" > /dev/null 2>&1 || { echo "FAIL: salca capture"; exit 1; }
split salca "$T/s.atr" "$C/salca-hbm2.json" "$C/salca-sweep.json"
split disc "$F/disc.atr" "$C/disc-a100-matched.json" "$C/disc-sweep.json"
printf '{"n_h": [5, 10, 20, 40], "n_w": [5, 7, 16, 64]}\n' > "$T/kura-grid.json"
split kura "$F/kura.atr" "$C/kura-activity.json" "$T/kura-grid.json"
[ $fail = 0 ] && echo "ok"
exit $fail
