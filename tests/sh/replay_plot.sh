#!/usr/bin/env bash
# `acceltrace plot` on a replayed sweep: scripts name axes with units and titles; PNGs are
# rendered when gnuplot is on PATH; without gnuplot on PATH the run still succeeds, writes
# data and scripts and warns once. `acceltrace report` links them.
set -euo pipefail
A=${ACCELTRACE:?}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
cd "$T"
"$A" capture test --records 200 -o t.atr 2> /dev/null
printf '{"extends": "%s/configs/test-count.json", "split_rows": true}\n' "$ROOT" > hw.json
"$A" replay t.atr --hw hw.json --sweep "$ROOT/configs/test-sweep.json" \
    --energy "$ROOT/configs/test-energy.json" -q -o res 2> /dev/null
"$A" plot res --y sum --y energy_j -o figs 2> log.txt
grep -q 'set xlabel "scale"' figs/sum_vs_scale.gp
grep -q 'set ylabel "energy_j \[J\]"' figs/energy_j_vs_scale.gp
# 10 x 2 series of 10 points each: more than 8 in one panel, so a panel per min_step
grep -q 'set multiplot layout 3,4 title "sum vs scale (model count, 200 rows)"' figs/sum_vs_scale.gp
grep -q 'set title "min_step=0"' figs/sum_vs_scale.gp
grep -q 'title "parity=even"' figs/sum_vs_scale.gp
[ "$(grep -c '^# block' figs/sum_vs_scale.dat)" -eq 20 ]
if command -v gnuplot > /dev/null; then
    for f in figs/sum_vs_scale.png figs/energy_j_vs_scale.png; do
        sz=$(stat -c %s "$f")
        [ "$sz" -gt 5000 ] || { echo "$f only $sz bytes"; exit 1; }
        head -c 4 "$f" | od -c | grep -q 'P   N   G'
    done
    if grep -q "gnuplot not found" log.txt; then echo "warned with gnuplot present"; exit 1; fi
fi

# --where keeps only matching rows: one series of 10 points; a filter matching nothing or
# without '=' is a usage error
"$A" plot res --x scale --y sum --where parity=even --where min_step=0 -o figw 2> /dev/null
grep -q 'set title "sum vs scale (model count, 10 rows; where parity=even, min_step=0)"' \
    figw/sum_vs_scale.gp
[ "$(grep -c '^# block' figw/sum_vs_scale.dat)" -eq 1 ]
set +e; "$A" plot res --where parity=odd_none -o figw2 2> /dev/null; rc1=$?
"$A" plot res --where parity -o figw2 2> /dev/null; rc2=$?; set -e
[ "$rc1" -eq 2 ] && [ "$rc2" -eq 2 ] || { echo "--where usage errors gave $rc1 $rc2"; exit 1; }

# no gnuplot on PATH: success, data + scripts, one warning
mkdir bin
set +e; env PATH="$T/bin" "$A" plot res -o nogp 2> log2.txt; rc=$?; set -e
[ "$rc" -eq 0 ] || { cat log2.txt; exit 1; }
[ "$(grep -c 'gnuplot not found' log2.txt)" -eq 1 ]
ls nogp/*.gp > /dev/null && ls nogp/*.dat > /dev/null
if ls nogp/*.png 2> /dev/null; then echo "png without gnuplot?"; exit 1; fi
[ "$(ls nogp/*.gp | wc -l)" -ge 4 ]

# report: every figure and table linked, links resolve
"$A" report . 2> /dev/null
grep -q '^- Table \[results.csv\](res/results.csv): table of 200 rows' report.md
grep -q '(figs/sum_vs_scale.png): sum vs scale' report.md
grep -o '](\([^)]*\))' report.md | sed 's/^](//; s/)$//' | sort -u | while read -r l; do
    [ -f "$l" ] || { echo "dangling link $l"; exit 1; }
done
echo ok
