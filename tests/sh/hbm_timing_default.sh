#!/usr/bin/env bash
# The default-run check (docs/models.md#hbm-timing-mode): on the default Salca capture's
# first 256 jobs (decode steps 0-15; `capture salca --steps 16` selects the same tokens as
# the default 64-step capture's first 16 steps), the timing mode at its default occupancy
# (request: Ramulator 2's read buffer semantics) gives time_over_ideal 2.3-2.8 at in-order
# D_f 1 and 1.15-1.35 at window 128 (Ramulator 2.1: 2.76 and 1.30 measured on the same
# export, 2.53 and 1.25 in the reference run). The data occupancy (tokens counted until their data
# is back) is a different front end and lies well above the band at D_f 1.
set -eu
A=${ACCELTRACE:?}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

"$A" capture salca -q -q --steps 16 --methods salca -o "$tmp/s.atr" > /dev/null
"$A" analyze conflicts "$tmp/s.atr" --timing --steps 0-15 --depth 1 --window 0,128 -q \
    -o "$tmp/req" > "$tmp/req.txt"
"$A" analyze conflicts "$tmp/s.atr" --timing --steps 0-15 --depth 1 --window 0,128 -q \
    --occupancy data -o "$tmp/dat" > "$tmp/dat.txt"
val() { sed -n "s/^time.$2=//p" "$tmp/$1.txt"; }
grep -q '^jobs=256$' "$tmp/req.txt" || { echo "expected 256 jobs"; exit 1; }
d1=$(val req inorder_d1); w128=$(val req window_128); dd1=$(val dat inorder_d1)
echo "request: D_f 1 $d1, W 128 $w128; data: D_f 1 $dd1"
awk -v a="$d1" -v b="$w128" -v c="$dd1" 'BEGIN {
    if (a == "" || a < 2.3 || a > 2.8) { print "D_f 1 " a " outside 2.3-2.8"; exit 1 }
    if (b == "" || b < 1.15 || b > 1.35) { print "W 128 " b " outside 1.15-1.35"; exit 1 }
    if (c == "" || !(c > 2.8)) { print "data occupancy D_f 1 " c " not above the band"; exit 1 } }'
echo "hbm_timing_default: ok"
