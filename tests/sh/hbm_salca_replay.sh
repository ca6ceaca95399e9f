#!/usr/bin/env bash
# The salca replay model's HBM keys (docs/models.md#hbm-timing-mode):
# on a small capture the default (fast, beta_att 0.55 input) is what it was (beta_att_used
# 0.55 up to rounding, same cycles as an explicit hbm.mode fast); hbm.mode timing never
# beats the zero-latency ideal, is slower with K and V in one bank and with refresh;
# beta_att_source derived gives a beta in (0, 1]; config show lists the keys; bad values
# exit 3.
set -eu
A=${ACCELTRACE:?}
CFG=${CONFIGS:-configs}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

"$A" capture salca --source synthetic -q -q --length 4096 --steps 3 --layers 2 --heads 2 --threads 1 \
    --methods salca -o "$tmp/s.atr" > /dev/null
run() { # name json-overrides
    printf '{"model":"salca","extends":"%s/salca-hbm2.json"%s}\n' "$(cd "$CFG" && pwd)" "$2" \
        > "$tmp/$1.json"
    "$A" replay "$tmp/s.atr" --hw "$tmp/$1.json" -o "$tmp/r_$1" -q > /dev/null 2> "$tmp/$1.err"
}
col() { # name column -> value of the first results row
    awk -F, -v c="$2" 'NR == 1 { for (i = 1; i <= NF; i++) { h = $i; sub(/ \[.*/, "", h)
                                                   if (h == c) k = i } }
                       NR == 2 { print $k }' "$tmp/r_$1/results.csv"
}
run def ''
run fast ',"hbm":{"mode":"fast"}'
run tim ',"hbm":{"mode":"timing"}'
run tim_sb ',"hbm":{"mode":"timing","layout":"same_bank"}'
run tim_nr ',"hbm":{"mode":"timing","refresh":false}'
run der ',"beta_att_source":"derived"'
run tim3e ',"hbm":{"mode":"timing","preset":"hbm3e"}'
run tim3pb ',"hbm":{"mode":"timing","preset":"hbm3","refresh_per_bank":true}'
[ "$(col def cycles)" = "$(col fast cycles)" ] || { echo "explicit fast differs"; exit 1; }
[ "$(col def beta_att_source)" = "input" ]
awk -v b="$(col def beta_att_used)" 'BEGIN { if (b < 0.545 || b > 0.5501) { print "beta " b; exit 1 } }'
# timing: att_mem (compute cycles) >= ideal slots x t_slot (8), hence >= the fast zero latency
awk -v m="$(col tim att_mem_cycles)" -v i="$(col tim pc_ideal_slots)" \
    -v s="$(col tim_sb att_mem_cycles)" -v n="$(col tim_nr att_mem_cycles)" 'BEGIN {
    if (m < 8 * i) { print "timing " m " below ideal " 8 * i; exit 1 }
    if (!(s > m)) { print "same_bank " s " not above kv_bg " m; exit 1 }
    if (!(m >= n)) { print "refresh on " m " below off " n; exit 1 } }'
awk -v b="$(col der beta_att_used)" -v m="$(col der att_mem_cycles)" \
    -v s="$(col der pc_slots)" 'BEGIN {
    if (!(b > 0 && b <= 1)) { print "derived beta " b; exit 1 }
    if (m < 8 * s) { print "derived below zero latency"; exit 1 } }'
# hbm3e moves 2.4x the bytes per PC and second of hbm2: its gathers take less compute time
awk -v a="$(col tim att_mem_cycles)" -v e="$(col tim3e att_mem_cycles)" \
    -v p="$(col tim3pb att_mem_cycles)" 'BEGIN {
    if (!(e > 0 && e < a)) { print "hbm3e " e " not below hbm2 " a; exit 1 }
    if (!(p > 0)) { print "hbm3 per-bank refresh " p; exit 1 } }'
"$A" config show salca | grep -q '^hbm.mode '
"$A" config show salca | grep -q '^beta_att_source '
for bad in ',"hbm":{"mode":"slow"}' ',"hbm":{"mode":"timing","token_bytes":200}' \
    ',"beta_att_source":"guess"' ',"hbm":{"mode":"timing","preset":"hbm4"}' \
    ',"hbm":{"mode":"timing","refresh_per_bank":true}'; do
    printf '{"model":"salca"%s}\n' "$bad" > "$tmp/bad.json"
    set +e; "$A" replay "$tmp/s.atr" --hw "$tmp/bad.json" -o "$tmp/rb" -q > /dev/null 2>&1
    rc=$?; set -e
    [ "$rc" -eq 3 ] || { echo "'$bad' exited $rc, not 3"; exit 1; }
done
echo "hbm_salca_replay: ok"
