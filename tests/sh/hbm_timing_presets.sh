#!/usr/bin/env bash
# hbm3 and hbm3e against Ramulator 2.1 (docs/models.md#hbm-timing-mode, "Against Ramulator 2
# (measured; both presets"): on the default Salca capture's first 256 jobs (`capture salca
# --source synthetic --steps 16`: the same 438833 tokens as the default capture's steps 0-15;
# `--methods salca` would draw other selections) the timing mode's time
# over ideal lies within 15% of Ramulator 2.1 (commit c5b1c3a, measured on the same export)
# at in-order D_f 1 and 8 (request occupancy: read_buffer_size 16 x D_f) and window 128 and
# 1024 (data occupancy: tokens in flight until their data is back).
set -eu
A=${ACCELTRACE:?}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

"$A" capture salca -q -q --source synthetic --steps 16 -o "$tmp/s.atr" > /dev/null
check() { # name value ramulator
    awk -v n="$1" -v v="$2" -v r="$3" 'BEGIN {
        d = v / r - 1; printf "%s: ours %.3f, Ramulator %.3f (%+.1f%%)\n", n, v, r, 100 * d
        if (v == "" || d > 0.15 || d < -0.15) { print n " outside 15%"; exit 1 } }'
}
val() { sed -n "s/^time.$2=//p" "$tmp/$1.txt"; }
for p in hbm3 hbm3e; do
    "$A" analyze conflicts "$tmp/s.atr" --timing --preset $p --steps 0-15 --depth 1,8 \
        --window 0 -q -o "$tmp/${p}_r" > "$tmp/${p}_r.txt"
    "$A" analyze conflicts "$tmp/s.atr" --timing --preset $p --steps 0-15 --depth 1 \
        --window 128,1024 --occupancy data -q -o "$tmp/${p}_d" > "$tmp/${p}_d.txt"
    grep -q '^jobs=256$' "$tmp/${p}_r.txt" || { echo "expected 256 jobs"; exit 1; }
    grep -q '^tokens=438833$' "$tmp/${p}_r.txt" || { echo "not the measured tokens"; exit 1; }
done
# Ramulator 2.1 time over ideal, docs/models.md table
check "hbm3 D_f 1" "$(val hbm3_r inorder_d1)" 3.862
check "hbm3 D_f 8" "$(val hbm3_r inorder_d8)" 1.367
check "hbm3 W 128" "$(val hbm3_d window_128)" 1.362
check "hbm3 W 1024" "$(val hbm3_d window_1024)" 1.345
check "hbm3e D_f 1" "$(val hbm3e_r inorder_d1)" 4.974
check "hbm3e D_f 8" "$(val hbm3e_r inorder_d8)" 1.598
check "hbm3e W 128" "$(val hbm3e_d window_128)" 1.680
check "hbm3e W 1024" "$(val hbm3e_d window_1024)" 1.457
echo "hbm_timing_presets: ok"
