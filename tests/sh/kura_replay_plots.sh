#!/usr/bin/env bash
# SA-Kura figures (docs/kura.md#figures): `model kura --plots` writes every CSV (the
# normative data) and the gnuplot inputs; the CSVs hold the paper's budget answers (calibrated,
# a regression guard), equal
# analytic and cycle-accurate cycles, and per-step drift error and activity of a trace.
set -euo pipefail
A=${ACCELTRACE:-build/acceltrace}
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

"$A" capture kura --size 24x20 --steps 6 -q -o "$d/t.atr" > /dev/null
"$A" model kura --plots "$d/p" --trace "$d/t.atr" --plot-shapes 20x5,4x3 --every 2 \
    > /dev/null 2> "$d/err.txt" || fail "plots: $(cat "$d/err.txt")"
for f in kura_epx_heatmap kura_epx_lines kura_area_epx kura_cycles_shape kura_cpx_heatmap kura_drift_error \
         kura_activity; do
    [ -s "$d/p/$f.csv" ] || fail "missing $f.csv"
    [ -s "$d/p/$f.gp" ] || fail "missing $f.gp"
done
# Fig. 6: the best shape per budget (paper: H10W10, H15W15, H20W15, H25W20)
[ "$(awk -F, '$7 != "" && NR > 1 { print $1 ":" $7 }' "$d/p/kura_area_epx.csv" | tr '\n' ' ')" = \
  "H10W10:3 H15W15:4 H20W15:5 H25W20:6 " ] || fail "budget labels"
# cycles: the simulated step equals the analytic one for all 25 shapes (docs/kura.md#acceptance-checks)
[ "$(awk -F, 'NR > 1 && $3 == $4' "$d/p/kura_cycles_shape.csv" | wc -l)" = 25 ] ||
    fail "cycles vs simulation"
# per-step rows: 5 reverse steps, 2 shapes; errors within the bound X_i
[ "$(tail -n +2 "$d/p/kura_activity.csv" | wc -l)" = 10 ] || fail "activity rows"
awk -F, 'NR > 1 && ($2 > $4 || $2 <= 0) { exit 1 }' "$d/p/kura_drift_error.csv" ||
    fail "drift error above X_i"
awk -F, 'NR > 1 && ($3 <= 0 || $3 >= 1) { exit 1 }' "$d/p/kura_activity.csv" || fail "alpha"
for f in data final error step5 step3 step1; do
    [ -s "$d/p/kura_phase_$f.png" ] || fail "missing kura_phase_$f.png"
done
echo "kura_replay_plots ok"
