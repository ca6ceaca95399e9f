#!/usr/bin/env bash
# replay --dry-run's time estimate (docs/models.md#time-estimates) holds every part of a run
# and samples the grid fairly, checked without timing anything here:
#  - its total is the formula over the parts it prints: passes x records x decode +
#    configs x (records x consume + set-up + finish) / threads + configs x rows + results
#    folder + start (the rows and finish were left out once, 0.36 s estimated for 20.7 s);
#  - a small trace is timed whole ("all N records"), 16 configs are timed and their finish
#    and rows too;
#  - a grid whose fastest key makes every fourth config costly (count's spin) is estimated
#    far above the same grid without that cost: evenly spaced samples of 4 once saw only
#    the cheap configs.
set -u
A=${ACCELTRACE:?}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }
"$A" capture test --records 50 -o "$T/t.atr" 2> /dev/null || { echo "FAIL: capture"; exit 1; }

# parts LINE: "total decode consume config finish rows folder start passes configs threads"
parts() {
    perl -ne 'print join(" ", $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13), "\n"
        if /^time: about (\S+) s \(all (\d+) records: (\S+) ms decode and prepare, (\S+) ms consume per config; (\S+) ms to set up a config; (\S+) ms finish, (\S+) ms writing rows per config; (\S+) ms results folder; (\S+) ms start; (\d+) configs timed; (\d+) pass\(es\), (\d+) configs on (\d+) threads\)$/'
}

printf '{"scale":{"range":[1,10,1]},"spin":[0,0,0,200000]}' > "$T/spin.json"
printf '{"scale":{"range":[1,10,1]},"spin":[0,0,0,0]}' > "$T/flat.json"
for g in spin flat; do
    "$A" replay "$T/t.atr" --model count --sweep "$T/$g.json" -j 2 --batch 7 --dry-run \
        > "$T/$g.out" 2>&1 || bad "$g: dry run: $(cat "$T/$g.out")"
    read -r total nrec dec con cfg fin row fold start timed passes n thr < <(parts < "$T/$g.out")
    [ -n "${total:-}" ] || { bad "$g: time line: $(grep '^time' "$T/$g.out")"; continue; }
    [ "$nrec" = 50 ] && [ "$timed" = 16 ] && [ "$passes" = 6 ] && [ "$n" = 40 ] &&
        [ "$thr" = 2 ] || bad "$g: parts: $(grep '^time' "$T/$g.out")"
    # the printed parts give the printed total (each part rounded to 3 digits)
    awk -v t="$total" -v r="$nrec" -v d="$dec" -v c="$con" -v s="$cfg" -v f="$fin" -v w="$row" \
        -v o="$fold" -v b="$start" -v p="$passes" -v n="$n" -v j="$thr" 'BEGIN {
            e = (p * r * d + n * (r * c + s + f) / j + n * w + o + b) / 1000
            exit !(e > 0 && t > 0.98 * e && t < 1.02 * e) }' ||
        bad "$g: total $total s is not the sum of its parts: $(grep '^time' "$T/$g.out")"
    eval "con_$g=$con"
done
awk -v a="${con_spin:-0}" -v b="${con_flat:-1}" 'BEGIN { exit !(a > 10 * b) }' ||
    bad "the costly quarter of the grid was not sampled: consume $con_spin ms with spin, $con_flat ms without"
[ $fail = 0 ] && echo "ok"
exit $fail
