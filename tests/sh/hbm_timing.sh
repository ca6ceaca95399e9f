#!/usr/bin/env bash
# `acceltrace analyze conflicts --timing` (docs/models.md#hbm-timing-mode): on a
# small Salca capture the timing mode writes hbm_time.csv with its columns and one row per
# policy, never beats the ideal, leaves the fast-mode files byte-identical, and honours
# --steps, --layout and --refresh; bad options exit 2.
set -eu
A=${ACCELTRACE:?}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

"$A" capture salca --source synthetic -q -q --length 4096 --steps 3 --layers 2 --heads 2 --threads 1 \
    --methods salca -o "$tmp/s.atr" > /dev/null
"$A" analyze conflicts "$tmp/s.atr" --window 0,32,128 -o "$tmp/fast" > "$tmp/fast.txt"
"$A" analyze conflicts "$tmp/s.atr" --window 0,32,128 --timing -o "$tmp/t" > "$tmp/t.txt"
csv="$tmp/t/hbm_time.csv"
[ -s "$csv" ] || { echo "missing hbm_time.csv"; exit 1; }
cols=policy,depth,window,jobs,tokens,ideal_cycles,cycles,time_over_ideal,alpha
cols=$cols,row_hits,row_misses
[ "$(head -1 "$csv")" = "$cols" ] || { echo "bad header: $(head -1 "$csv")"; exit 1; }
# batch, inorder_d1/2/4, window_32/128; 3 steps x 2 layers x 2 heads = 12 jobs each
[ "$(($(wc -l < "$csv") - 1))" -eq 6 ] || { echo "expected 6 policy rows"; exit 1; }
awk -F, 'NR > 1 {
    if ($4 != 12) { print "jobs " $4; exit 1 }
    if ($7 < $6 || $8 < 1) { print "faster than ideal: " $1; exit 1 }
    if ($10 + $11 != 2 * $5) { print "row accesses != 2 per token: " $1; exit 1 } }' "$csv"
grep -q '^time.inorder_d1=' "$tmp/t.txt"
grep -q '^time.window_128=' "$tmp/t.txt"
# the fast mode's files and lines are unchanged by --timing
for f in "$tmp"/fast/*; do
    # manifest.json records each run's own command line (and so --timing)
    [ "$(basename "$f")" = manifest.json ] && continue
    cmp -s "$f" "$tmp/t/$(basename "$f")" || { echo "differs: $f"; exit 1; }
done
diff <(grep -v '^time\.' "$tmp/t.txt") "$tmp/fast.txt" > /dev/null
# --steps selects decode steps: 1 step = 4 jobs
"$A" analyze conflicts "$tmp/s.atr" --timing --steps 1-1 -o "$tmp/s1" > "$tmp/s1.txt"
grep -q '^jobs=4$' "$tmp/s1.txt"
# K and V in one bank are slower than K | V across bank groups; refresh adds time
"$A" analyze conflicts "$tmp/s.atr" --timing --layout same_bank -o "$tmp/sb" > "$tmp/sb.txt"
"$A" analyze conflicts "$tmp/s.atr" --timing --refresh off -o "$tmp/nr" > "$tmp/nr.txt"
kv=$(sed -n 's/^time.inorder_d1=//p' "$tmp/t.txt")
sb=$(sed -n 's/^time.inorder_d1=//p' "$tmp/sb.txt")
nr=$(sed -n 's/^time.inorder_d1=//p' "$tmp/nr.txt")
awk -v a="$kv" -v b="$sb" -v c="$nr" 'BEGIN {
    if (!(b > a) || !(a > c)) { print "kv " a " same_bank " b " no refresh " c; exit 1 } }'
# --preset: hbm3 and hbm3e replay the same jobs; --compare-presets writes every preset's rows
# (its hbm2 rows are hbm_time.csv's at the default preset) and the plot's data and script
"$A" analyze conflicts "$tmp/s.atr" --window 0,32,128 --timing --preset hbm3e -o "$tmp/e" \
    > "$tmp/e.txt"
grep -q '^time.window_128=' "$tmp/e.txt"
[ "$(head -1 "$tmp/e/hbm_time.csv")" = "$cols" ] || { echo "bad hbm3e header"; exit 1; }
"$A" analyze conflicts "$tmp/s.atr" --window 0,32,128 --timing --compare-presets -o "$tmp/cp" \
    > /dev/null
pc="$tmp/cp/hbm_presets.csv"
[ "$(head -1 "$pc")" = "preset,$cols" ] || { echo "bad hbm_presets.csv header"; exit 1; }
for p in hbm2 hbm3 hbm3e; do
    [ "$(grep -c "^$p," "$pc")" -eq 6 ] || { echo "expected 6 rows of $p"; exit 1; }
done
diff <(grep '^hbm2,' "$pc" | cut -d, -f2-) <(tail -n +2 "$tmp/t/hbm_time.csv") > /dev/null ||
    { echo "hbm2 rows differ from hbm_time.csv"; exit 1; }
diff <(grep '^hbm3e,' "$pc" | cut -d, -f2-) <(tail -n +2 "$tmp/e/hbm_time.csv") > /dev/null ||
    { echo "hbm3e rows differ from --preset hbm3e"; exit 1; }
[ -s "$tmp/cp/hbm_presets_vs_window.dat" ] && [ -s "$tmp/cp/hbm_presets_vs_window.gp" ] ||
    { echo "missing hbm_presets_vs_window plot files"; exit 1; }
# per-bank refresh needs a part that has it
"$A" analyze conflicts "$tmp/s.atr" --timing --preset hbm3 --refresh perbank -o "$tmp/pb" \
    > /dev/null
set +e; "$A" analyze conflicts "$tmp/s.atr" --timing --refresh perbank -o "$tmp/pb2" \
    > /dev/null 2> "$tmp/pb2.err"; rc=$?; set -e
[ "$rc" -eq 2 ] && grep -q "no per-bank refresh" "$tmp/pb2.err" ||
    { echo "hbm2 --refresh perbank exited $rc"; exit 1; }
# bad options exit 2; timing-only options need --timing
for bad in "--layout x --timing" "--refresh maybe --timing" "--steps 5-2" "--layout kv_bg" \
    "--preset hbm4 --timing" "--preset hbm3" "--compare-presets"; do
    set +e; "$A" analyze conflicts "$tmp/s.atr" $bad -o "$tmp/bad" > /dev/null 2>&1; rc=$?; set -e
    [ "$rc" -eq 2 ] || { echo "'$bad' exited $rc, not 2"; exit 1; }
done
echo "hbm_timing: ok"
