#!/usr/bin/env bash
# Salca end to end: capture (synthetic source) -> replay with the paper's design point and
# the sweep in one pass -> results with the energy table; global vs measured alpha.
set -eu
A=${ACCELTRACE:?}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
"$A" capture salca --source synthetic -q -q --length 4096 --steps 3 --layers 2 --heads 4 --threads 1 -o "$tmp/s.atr" > /dev/null
"$A" replay "$tmp/s.atr" --hw configs/salca-hbm2.json --energy configs/salca-energy.json -j 1 -q -o "$tmp/r1" 2> /dev/null
[ -s "$tmp/r1/results.csv" ] && [ -s "$tmp/r1/salca_steps.csv" ]
# value of column NAME ("name" or "name [unit]") in data row ROW of a CSV
col() { awk -F, -v name="$2" -v row="$3" '
    NR == 1 { for (i = 1; i <= NF; i++) if ($i == name || index($i, name " [") == 1) c = i; next }
    NR == row + 1 { print $c }' "$1"; }
R="$tmp/r1/results.csv"
[ "$(($(wc -l < "$R") - 1))" -eq 1 ]
[ "$(col "$R" steps 1)" = 3 ]
[ "$(col "$R" jobs 1)" = 24 ]   # 3 steps x 2 layers x 4 heads
awk -v c="$(col "$R" cycles 1)" -v t="$(col "$R" tokens_per_s 1)" -v a="$(col "$R" alpha_measured 1)" \
    -v s="$(col "$R" speedup_vs_dense 1)" -v e="$(col "$R" energy_j 1)" \
    'BEGIN { exit !(c > 0 && t > 0 && a >= 1 && s > 1 && s < 20 && e > 0) }'
# 20 B per key (160 bits) and 256 B per selected token [docs/salca.md#pipeline-model]
awk -v h="$(col "$R" hbm_bytes 1)" -v n="$(col "$R" context_tokens 1)" -v k="$(col "$R" selected_tokens 1)" \
    'BEGIN { exit !(h == 20 * n + 256 * k) }'
for u in util_p util_q util_f util_a; do
    awk -v v="$(col "$R" $u 1)" 'BEGIN { exit !(v >= 0 && v <= 1) }'
done
S="$tmp/r1/salca_steps.csv"
[ "$(($(wc -l < "$S") - 1))" -eq 3 ]
for r in 1 2 3; do case "$(col "$S" bottleneck $r)" in P|Q|F|A) ;; *) echo "bad bottleneck"; exit 1;; esac; done
# the sweep: 4 designs x 4 issue settings x 4 retentions, one pass over the trace
"$A" replay "$tmp/s.atr" --hw configs/salca-hbm2.json --sweep configs/salca-sweep.json -j 1 -o "$tmp/r2" 2> "$tmp/log"
grep -q "in 1 pass" "$tmp/log"
n=$(($(wc -l < "$tmp/r2/results.csv") - 1))
[ "$n" -eq 64 ] || { echo "sweep rows $n, want 64"; exit 1; }
# plot: the per-config 'bottleneck' label must not split curves: 4 designs x 2 policies
# at window 128 give 8 series of 4 retention points each
"$A" plot "$tmp/r2" --x retention --y tokens_per_s --where window=128 -o "$tmp/figs" 2> /dev/null
[ "$(grep -c '^# block' "$tmp/figs/tokens_per_s_vs_retention.dat")" -eq 8 ]
if grep -q 'bottleneck=' "$tmp/figs/tokens_per_s_vs_retention.gp"; then echo "label split"; exit 1; fi
# the reference configs of docs/salca.md#pipeline-model over the trace, with the plots
"$A" model salca --paper --trace "$tmp/s.atr" --plot "$tmp/plots" > "$tmp/ref.txt" 2> /dev/null
grep -q '^b_pre=160$' "$tmp/ref.txt"
for k in compare.salca_final_inorder_vs_asic_d compare.salca_final_window_128_vs_asic_d \
         ref.asic_d.inorder.cycles ref.salca_final.window_128.bottleneck; do
    grep -q "^$k=" "$tmp/ref.txt" || { echo "missing $k"; exit 1; }
done
# window issue is never slower than in-order for the same design
awk -F= '/^ref.salca_final.inorder.cycles=/ {i = $2} /^ref.salca_final.window_128.cycles=/ {w = $2}
         END { exit !(w <= i && w > 0) }' "$tmp/ref.txt"
for f in pareto.gp stage_utilization.gp step_utilization.gp pareto.dat; do
    [ -s "$tmp/plots/$f" ] || { echo "missing plot $f"; exit 1; }
done
# a CSV beside each plot (docs/salca.md#figures): the paper front (docs/salca.md#analytic-performance-model: m_pre 38, 25, 12 at m_att
# 1, 2, 3; design point m_att 2), 7 config rows whose utilizations match the ref.* lines,
# one row per decode step
grep -qx '2,25,16,16,0.039586,1' "$tmp/plots/pareto.csv"
[ "$(awk -F, 'NR > 1 {printf "%s/%s ", $1, $2}' "$tmp/plots/pareto.csv")" = "1/38 2/25 3/12 " ]
head -1 "$tmp/plots/stage_utilization.csv" | grep -qx 'config,policy,util_p,util_q,util_f,util_a'
[ "$(($(wc -l < "$tmp/plots/stage_utilization.csv") - 1))" -eq 7 ]
want=$(sed -n 's/^ref\.salca_final\.window_128\.util_a=//p' "$tmp/ref.txt")
awk -F, -v w="$want" '$1 == "salca_final" && $2 == "window_128" { d = $6 - w; exit !(d < 1e-4 && d > -1e-4) }' \
    "$tmp/plots/stage_utilization.csv" || { echo "stage_utilization.csv differs from ref.*"; exit 1; }
head -1 "$tmp/plots/step_utilization.csv" | grep -qx 'step,util_p,util_q,util_f,util_a'
[ "$(($(wc -l < "$tmp/plots/step_utilization.csv") - 1))" -eq 3 ]
# an impossible PC split is a config error (exit 3)
printf '{"model": "salca", "h_pre": 20, "h_att": 16}\n' > "$tmp/bad.json"
set +e; "$A" replay "$tmp/s.atr" --hw "$tmp/bad.json" -q -o "$tmp/r3" 2> "$tmp/err"; rc=$?; set -e
[ "$rc" -eq 3 ] || { echo "bad config: exit $rc"; cat "$tmp/err"; exit 1; }
grep -q "20 + 16" "$tmp/err"
echo ok
