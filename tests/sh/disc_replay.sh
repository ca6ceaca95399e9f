#!/usr/bin/env bash
# End-to-end DiSC replay on a real micro capture (docs/disc.md#acceptance-checks):
# capture -> replay (one config, then the sweep in one pass) -> analyze hash
# -> analyze disc. Needs only the acceltrace binary ($ACCELTRACE).
set -euo pipefail
A=${ACCELTRACE:-build/acceltrace}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# column value of a CSV row: col FILE NAME ROW(1-based data row)
col() {
    awk -F, -v name="$2" -v row="$3" '
        NR == 1 { for (i = 1; i <= NF; i++) { h = $i; sub(/ \[.*\]$/, "", h); if (h == name) c = i } next }
        NR == row + 1 { print $c; exit }' "$1"
}
# CSV rows are quoted where they hold commas ("baseline,ctr,all"); strip that field first
unq() { sed 's/"[^"]*"/Q/g' "$1" > "$1.unq"; echo "$1.unq"; }

$A capture disc --model micro --keep-masks 'blocks=0;heads=all;steps=all' -o "$T/m.atr" \
    > /dev/null 2>&1 || fail "micro capture"

# one config: three modes, nothing estimated
$A replay "$T/m.atr" --hw configs/disc-a100-matched.json --energy configs/disc-energy.json \
    -o "$T/r" 2> "$T/r.log" || fail "replay: $(cat "$T/r.log")"
R=$(unq "$T/r/results.csv")
[ "$(col "$R" mode 1)" = baseline ] && [ "$(col "$R" mode 2)" = ctr ] && [ "$(col "$R" mode 3)" = all ] \
    || fail "modes of results.csv"
[ "$(col "$R" masks_estimated 3)" = 0 ] || fail "masks_estimated should be 0"
for row in 1 2 3; do
    awk -v s="$(col "$R" speedup $row)" 'BEGIN { exit !(s > 1) }' || fail "speedup row $row"
done
# ops.csv exposed cycles add up to the mode's cycles (the overlap check)
O=$(unq "$T/r/ops.csv")
awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) { h = $i; sub(/ \[.*\]$/, "", h); c[h] = i } next }
         { s[$c["mode"]] += $c["exposed_cycles"] }
         END { for (m in s) print m, s[m] }' "$O" | sort > "$T/ops_sum"
for row in 1 2 3; do
    m=$(col "$R" mode $row); cyc=$(col "$R" cycles $row)
    grep -qx "$m $cyc" "$T/ops_sum" || fail "ops.csv exposed cycles of $m != $cyc"
done

# the sweep: 4 x 3 x 3 configs in one pass
$A replay "$T/m.atr" --hw configs/disc-a100-matched.json --sweep configs/disc-sweep.json \
    -o "$T/s" 2> "$T/s.log" || fail "sweep: $(cat "$T/s.log")"
grep -q "replayed 36 of 36 configs" "$T/s.log" || fail "sweep config count: $(cat "$T/s.log")"
grep -q "in 1 pass(es)" "$T/s.log" || fail "sweep not in one pass"
[ "$(($(wc -l < "$T/s/results.csv") - 1))" = 108 ] || fail "sweep rows"
$A plot "$T/s" --y speedup -o "$T/sf" 2> /dev/null || fail "plot of the sweep"
[ -s "$T/sf/speedup_vs_dpu_count.gp" ] || fail "sweep plot script"

# a U outside the recorded set recounts kept masks and estimates the 16 others
sed 's/"dpu_count": 64/"dpu_count": 256/' configs/disc-a100-matched.json > "$T/u256.json"
$A replay "$T/m.atr" --hw "$T/u256.json" -o "$T/u" 2> "$T/u.log" || fail "U=256: $(cat "$T/u.log")"
U=$(unq "$T/u/results.csv")
[ "$(col "$U" masks_estimated 3)" = 16 ] || fail "masks_estimated $(col "$U" masks_estimated 3) != 16"

# baseline = ctr on a --ctr-off trace; mode all without masks exits 3
$A capture disc --model micro --ctr-off -o "$T/off.atr" > /dev/null 2>&1 || fail "ctr-off capture"
$A replay "$T/off.atr" --hw configs/disc-a100-matched.json -o "$T/off" 2> /dev/null || fail "replay off"
F=$(unq "$T/off/results.csv")
B=$(unq "$T/r/results.csv")
for c in cycles mac hbm_bytes sram_rd_bytes vpu_op; do
    [ "$(col "$F" $c 1)" = "$(col "$F" $c 2)" ] || fail "ctr-off: baseline $c != ctr $c"
    [ "$(col "$F" $c 1)" = "$(col "$B" $c 1)" ] || fail "baseline $c differs between traces"
done
$A capture disc --model micro --st-off -o "$T/nost.atr" > /dev/null 2>&1 || fail "st-off capture"
set +e
$A replay "$T/nost.atr" --hw configs/disc-a100-matched.json -o "$T/nost" 2> "$T/nost.log"
rc=$?
set -e
[ $rc = 3 ] || fail "mode all without masks: exit $rc, want 3"

# inline statistics = the analyzer's recount of kept masks, bit for bit
$A analyze hash "$T/m.atr" -o "$T/h1" --no-plots > /dev/null || fail "analyze hash"
$A analyze hash "$T/m.atr" -o "$T/h2" --units 8,16,32,64,256 --no-plots > /dev/null || fail "analyze hash 256"
[ -s "$T/h1/hash_matrix.csv" ] && [ -s "$T/h1/hash_row.csv" ] || fail "hash CSVs missing"
# kept masks (block 0): columns 10.. of h1 equal the same columns of h2 (U=8..64 come first)
n1=$(awk -F, 'NR > 1 && $3 == 0' "$T/h1/hash_masks.csv" | cut -d, -f1-8,10-33 | sort | md5sum)
n2=$(awk -F, 'NR > 1 && $3 == 0 && $9 == "bits"' "$T/h2/hash_masks.csv" | cut -d, -f1-8,10-17,20-27,30-37 | sort | md5sum)
[ "$(awk -F, 'NR > 1 && $9 == "bits"' "$T/h2/hash_masks.csv" | wc -l)" -gt 0 ] || fail "no kept masks recounted"
[ "$n1" = "$n2" ] || fail "recorded and recounted statistics differ"
[ "$(awk -F, 'NR > 1 && $9 == "none"' "$T/h2/hash_masks.csv" | wc -l)" = 16 ] || fail "skipped masks"

# figures
$A analyze disc "$T/r" --trace "$T/m.atr" -o "$T/p" 2> /dev/null || fail "analyze disc"
for f in speedup energy cycles_by_op prune_per_step st_sparsity st_sparsity_heatmap \
         latent_diff quality_per_step flops_self_attention flops_network; do
    [ -s "$T/p/$f.gp" ] && [ -s "$T/p/$f.dat" ] || fail "plot $f"
done
# docs/disc.md#figures items 4-6 against the trace's own Summary: the quality table repeats its cosine
# and PSNR, the dense bar is 100%, and the CTR and CTR+ST bars are 100 (1 - reduction).
S=$($A dump --type summary "$T/m.atr")
sv() { printf '%s\n' "$S" | grep -o "\"$1\":[^,}]*" | head -1 | cut -d: -f2; }
qv() { printf '%s\n' "$S" | grep -o '"run":"'"$1"'","cosine":[^,]*,"psnr":[^,]*' | sed 's/.*"cosine":\([^,]*\),"psnr":\(.*\)/\1 \2/'; }
awk -F, -v want="$(qv ctr)" -v want_main="$(qv main)" '
    function near(a, b) { d = a - b; return (d < 0 ? -d : d) <= 1e-12 * (1 + (b < 0 ? -b : b)) }
    NR == 1 && $1 != "trace" { exit 1 }
    NR > 1 && $1 != "m" { exit 1 }   # the trace column: file name without .atr
    NR == 2 { split(want, w, " "); if (!near($3, w[1]) || !near($4, w[2])) exit 1 }
    NR == 3 { split(want_main, w, " "); if (!near($3, w[1]) || !near($4, w[2])) exit 1 }
    END { if (NR != 3) exit 1 }' "$T/p/quality.csv" || fail "quality.csv differs from the Summary"
awk -F, -v rc="$(sv reduction_ctr)" -v rs="$(sv reduction_st)" '
    function near(a, b) { d = a - b; return (d < 0 ? -d : d) <= 1e-9 }
    NR > 1 { t = 0; for (i = 2; i <= NF; i++) t += $i; tot[$1] = t }
    END { if (!near(tot["dense"], 100) || !near(tot["CTR"], 100 * (1 - rc)) ||
              !near(tot["CTR+ST"], 100 * (1 - rc - rs))) exit 1 }' "$T/p/flops_network.csv" ||
    fail "flops_network bars do not match the Summary reductions"
# several captures in one figure (docs/disc.md#figures items 1, 5, 6): the main trace and the --st-off one
$A analyze disc "$T/r" --trace "$T/m.atr" --trace "$T/nost.atr" -o "$T/p2" 2> /dev/null ||
    fail "analyze disc with two traces"
# one gnuplot block per trace, named by its file name without directory and .atr
[ "$(grep -c '^# block ' "$T/p2/prune_per_step.dat")" = 2 ] &&
    grep -q '^# block 0: m (' "$T/p2/prune_per_step.dat" &&
    grep -q '^# block 1: nost (' "$T/p2/prune_per_step.dat" || fail "prune_per_step series"
# the st-off trace has no masks: one st_sparsity line, one heatmap
[ "$(grep -c '^# block ' "$T/p2/st_sparsity.dat")" = 1 ] || fail "st_sparsity series"
[ -s "$T/p2/st_sparsity_heatmap.dat" ] && ! ls "$T/p2"/st_sparsity_heatmap_* > /dev/null 2>&1 ||
    fail "heatmap files of two traces"
# six bars, each in % of its own trace's dense: dense rows sum to 100, the main trace's
# group repeats the one-trace bars, and without ST the CTR+ST bar equals the CTR bar
awk -F, 'function near(a, b) { d = a - b; return (d < 0 ? -d : d) <= 1e-9 }
    FNR == 1 { next }
    FILENAME == ARGV[1] { one["m " $1] = substr($0, length($1) + 2); next }
    { n++; t = 0; for (i = 2; i <= NF; i++) t += $i; tot[$1] = t; rest[$1] = substr($0, length($1) + 2) }
    END { if (n != 6 || !near(tot["m dense"], 100) || !near(tot["nost dense"], 100)) exit 1
          for (c in one) if (rest[c] != one[c]) exit 1
          if (rest["nost CTR+ST"] != rest["nost CTR"] || rest["m CTR+ST"] == rest["m CTR"]) exit 1 }' \
    "$T/p/flops_network.csv" "$T/p2/flops_network.csv" || fail "flops_network bars of two traces"
[ "$(grep -c '^nost,' "$T/p2/quality.csv")" = 1 ] && [ "$(grep -c '^m,' "$T/p2/quality.csv")" = 2 ] ||
    fail "quality.csv rows of two traces"
# the same file name twice: the second is "m-2", with its own heatmap file
$A analyze disc "$T/r" --trace "$T/m.atr" --trace "$T/m.atr" -o "$T/p3" 2> /dev/null ||
    fail "analyze disc with a repeated trace"
grep -q '^# block 1: m-2 (' "$T/p3/prune_per_step.dat" && [ -s "$T/p3/st_sparsity_heatmap_m-2.dat" ] ||
    fail "repeated trace label"
$A analyze hash "$T/m.atr" -o "$T/h3" > /dev/null 2>&1 || fail "analyze hash with plots"
for f in hash_std_vs_sparsity hash_std_vs_row_sparsity hash_imbalance; do
    [ -s "$T/h3/$f.gp" ] || fail "plot $f"
done

# usage errors
set +e
$A analyze hash "$T/m.atr" > /dev/null 2>&1; [ $? = 2 ] || fail "missing -o should exit 2"
$A analyze hash "$T/m.atr" -o "$T/x" --units 12 > /dev/null 2>&1; [ $? = 2 ] || fail "--units 12"
$A analyze hash "$T/m.atr" -o "$T/x" --k-odd 4 > /dev/null 2>&1; [ $? = 2 ] || fail "--k-odd 4"
# at most 16 traces: the 17th is a usage error naming the limit, before any file is read
set -- ; for i in $(seq 17); do set -- "$@" --trace "$T/m.atr"; done
$A analyze disc "$T/r" "$@" -o "$T/x17" > /dev/null 2> "$T/x17.log"; [ $? = 2 ] || fail "17 traces should exit 2"
grep -q "more than 16 --trace" "$T/x17.log" || fail "17 traces: $(cat "$T/x17.log")"
[ ! -e "$T/x17" ] || fail "17 traces: output folder made"
$A analyze disc "$T/r" --trace "$T/m.atr" --trace "$T/r/results.csv" -o "$T/x" > /dev/null 2> "$T/xb.log"
[ $? = 3 ] && grep -q "results.csv" "$T/xb.log" || fail "a trace that is not disc: $(cat "$T/xb.log")"
set -e
$A analyze hash --help | grep -q "usage: acceltrace analyze hash" || fail "help"
echo "disc_replay: ok"
