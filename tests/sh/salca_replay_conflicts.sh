#!/usr/bin/env bash
# `acceltrace analyze conflicts` (docs/salca.md): synthetic selections and
# a small real Salca capture; every output file is written, alpha per policy is printed,
# alpha >= bound, window never worse than in-order D_f = 1, bad options exit 2.
set -eu
A=${ACCELTRACE:?}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

"$A" analyze conflicts --synthetic clustered --n 8192 --jobs 16 -o "$tmp/syn" > "$tmp/syn.txt"
for f in alpha.csv alpha_layers.csv alpha_vs_window.csv conflict_occupancy.csv \
         conflict_per_batch.csv alpha_vs_window.gp conflict_occupancy.gp conflict_per_batch.gp; do
    [ -s "$tmp/syn/$f" ] || { echo "missing $f"; exit 1; }
done
grep -q '^alpha.inorder_d1=' "$tmp/syn.txt"
grep -q '^alpha.window_128=' "$tmp/syn.txt"
awk -F= '
    /^bound=/ {b = $2}
    /^alpha\.inorder_d1=/ {i = $2}
    /^alpha\.window_/ {w[$1] = $2}
    /^alpha\./ {a[$1] = $2}
    END {
        for (k in a) if (a[k] + 1e-9 < b) { print "alpha below bound: " k; exit 1 }
        for (k in w) if (w[k] > i + 1e-9) { print "window worse: " k; exit 1 }
    }' "$tmp/syn.txt"

# every token selected (consecutive runs) (p_iss = h_att, mod): alpha = 1 for every policy
"$A" analyze conflicts --synthetic uniform --retention 1 --n 4096 --jobs 4 -o "$tmp/all" > "$tmp/all.txt"
if grep '^alpha\.' "$tmp/all.txt" | grep -v '=1.0000$'; then echo "alpha != 1 for consecutive tokens"; exit 1; fi

# a real capture (synthetic Q/K/V source), all maps
"$A" capture salca --source synthetic -q -q --length 4096 --steps 2 --layers 2 --heads 4 --threads 1 -o "$tmp/s.atr" > /dev/null
for m in mod xor hash; do
    "$A" analyze conflicts "$tmp/s.atr" --map "$m" --window 0,32,128 -o "$tmp/out_$m" > "$tmp/$m.txt"
    grep -q "^map=$m" "$tmp/$m.txt"
done
# section 12 plots 7 and 8 from the same trace: heavy-channel stability per layer over the
# prefix ladder (64 .. 2048, then n0 = 4096), overshoot of the 16 salca selections
for f in heavy_stability.csv heavy_stability.dat heavy_stability.gp \
         overshoot.csv overshoot.dat overshoot.gp; do
    [ -s "$tmp/out_mod/$f" ] || { echo "missing $f"; exit 1; }
done
head -1 "$tmp/out_mod/heavy_stability.csv" | grep -q '^layer,prefix_len_tokens,'
head -1 "$tmp/out_mod/overshoot.csv" | grep -q '^bin_lo_pct_of_n,bin_hi_pct_of_n,records,'
# 2 layers x 7 prefix lengths; the m = n0 row overlaps fully
[ "$(($(wc -l < "$tmp/out_mod/heavy_stability.csv") - 1))" -eq 14 ]
[ "$(awk -F, '$2 == 4096 && $4 == 1.000000' "$tmp/out_mod/heavy_stability.csv" | wc -l)" -eq 2 ]
# histogram counts add up to the records printed
[ "$(sed -n 's/^overshoot.records=//p' "$tmp/mod.txt")" -eq 16 ]
[ "$(awk -F, 'NR > 1 {s += $3} END {print s}' "$tmp/out_mod/overshoot.csv")" -eq 16 ]
if command -v gnuplot > /dev/null; then
    for f in heavy_stability.png overshoot.png; do
        [ -s "$tmp/out_mod/$f" ] || { echo "missing or empty $f"; exit 1; }
    done
fi
# a trace written before SalcaPrefill held the prefix ladder (capture of commit fa6d557~1,
# 256 tokens, 1 step, L 1, H 2): it still analyzes; heavy_stability is skipped with one note
old="$(dirname "$0")/data/salca_no_prefix_ladder.atr"
"$A" analyze conflicts "$old" -o "$tmp/old" > "$tmp/old.txt" 2> "$tmp/old.err"
[ "$(grep -c 'note: heavy_stability skipped' "$tmp/old.err")" -eq 1 ]
[ ! -e "$tmp/old/heavy_stability.csv" ] && [ -s "$tmp/old/overshoot.csv" ]
grep -q '^overshoot.records=2$' "$tmp/old.txt"
# 2 steps x 2 layers x 4 heads of the salca method
jobs=$(sed -n 's/^jobs=//p' "$tmp/mod.txt")
[ "$jobs" -eq 16 ] || { echo "expected 16 salca jobs, got $jobs"; exit 1; }
"$A" analyze conflicts "$tmp/s.atr" --method all -o "$tmp/out_all" > "$tmp/allm.txt"
jobs_all=$(sed -n 's/^jobs=//p' "$tmp/allm.txt")
[ "$jobs_all" -eq 80 ] || { echo "expected 80 jobs over 5 methods, got $jobs_all"; exit 1; }
head -1 "$tmp/out_mod/alpha_vs_window.csv" | grep -q 'alpha_all'
# per-job rows: one per salca selection, slots of every policy
"$A" analyze conflicts "$tmp/s.atr" --per-job -o "$tmp/out_jobs" > /dev/null
[ "$(($(wc -l < "$tmp/out_jobs/alpha_jobs.csv") - 1))" -eq 16 ]
head -1 "$tmp/out_jobs/alpha_jobs.csv" | grep -q 'slots_window_128'

# the retention sweep of docs/salca.md#figures: one capture per rho, then one analyze over all of them gives a
# point per (method, rho) in recall_vs_retention.csv and cosine_vs_retention.csv; each plot
# has a mean and a dashed 5th-percentile series per method; with 4 jobs per point the p5
# (nearest rank) is the minimum, so p5 <= mean
for r in 0.02 0.08; do
    "$A" capture salca --source synthetic -q -q --length 2048 --steps 1 --layers 2 --heads 2 --threads 1 \
        --retention "$r" -o "$tmp/r$r.atr" > /dev/null
done
"$A" analyze conflicts "$tmp/r0.02.atr" "$tmp/r0.08.atr" -o "$tmp/ret" > /dev/null
head -1 "$tmp/ret/cosine_vs_retention.csv" | grep -q '^group,method,rho,jobs,retention_mean,cosine_mean,cosine_p5$'
for f in recall_vs_retention cosine_vs_retention; do
    [ "$(awk -F, 'NR > 1 && $2 == "salca"' "$tmp/ret/$f.csv" | wc -l)" -eq 2 ] \
        || { echo "$f.csv: want a salca row per rho"; exit 1; }
    grep -q 'title "salca p5"' "$tmp/ret/$f.gp" || { echo "$f.gp: no p5 series"; exit 1; }
done
awk -F, 'NR > 1 && ($7 > $6 + 1e-9 || $4 != 4) { print "bad cosine row: " $0; exit 1 }' \
    "$tmp/ret/cosine_vs_retention.csv"
awk -F, 'NR > 1 && $7 > $6 + 1e-9 { print "bad recall row: " $0; exit 1 }' \
    "$tmp/ret/recall_vs_retention.csv"
# the salca retention grows with rho
awk -F, 'NR > 1 && $2 == "salca" { r[$3] = $5 } END { exit !(r["0.02"] < r["0.08"]) }' \
    "$tmp/ret/cosine_vs_retention.csv" || { echo "retention does not grow with rho"; exit 1; }

expect_fail() { # status, pattern, args...
    local st=$1 pat=$2; shift 2
    set +e; "$A" analyze conflicts "$@" > /dev/null 2> "$tmp/err"; local rc=$?; set -e
    [ "$rc" -eq "$st" ] || { echo "exit $rc, want $st for: $*"; cat "$tmp/err"; exit 1; }
    grep -q -- "$pat" "$tmp/err" || { echo "missing '$pat' for: $*"; cat "$tmp/err"; exit 1; }
}
expect_fail 2 "missing -o" "$tmp/s.atr"
expect_fail 2 "bad --map" "$tmp/s.atr" --map nope -o "$tmp/x"
expect_fail 2 "power of two" "$tmp/s.atr" --map xor --pcs 12 -o "$tmp/x"
expect_fail 2 "bad --window" "$tmp/s.atr" --window 1,x -o "$tmp/x"
printf 'not a trace' > "$tmp/bad.atr"
set +e; "$A" analyze conflicts "$tmp/bad.atr" -o "$tmp/x" > /dev/null 2>&1; rc=$?; set -e
[ "$rc" -eq 3 ] || { echo "bad trace: exit $rc, want 3"; exit 1; }
"$A" analyze conflicts --help | grep -q -- '--window'
"$A" analyze conflicts --help | grep -q 'heavy_stability'
"$A" analyze conflicts --help | grep -q 'overshoot'
# synthetic selections have no trace: no stability note, no stability files
[ ! -e "$tmp/syn/heavy_stability.csv" ]
echo ok
