#!/usr/bin/env bash
# DiSC replay on a real tiny capture (docs/disc.md#acceptance-checks end to end). The capture takes
# minutes, so this is a slow test: `make test-slow` runs it (tests/run.sh with
# ACCELTRACE_SLOW=1 runs tests/slow/ after the rest); `make test` does not list it.
set -euo pipefail
A=${ACCELTRACE:-build/acceltrace}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
col() {
    sed 's/"[^"]*"/Q/g' "$1" | awk -F, -v name="$2" -v row="$3" '
        NR == 1 { for (i = 1; i <= NF; i++) { h = $i; sub(/ \[.*\]$/, "", h); if (h == name) c = i } next }
        NR == row + 1 { print $c; exit }'
}
$A capture disc --model tiny --keep-masks 'blocks=0;heads=0;steps=all' -o "$T/t.atr" \
    > /dev/null 2>&1 || fail "tiny capture"
# the tiny baseline check is stated at the docs/disc.md#replay-configuration table's 64x16 VPU; the default vpu_width is now the
# calibrated 24 (docs/models.md, VPU width), so the check runs the shipped config at 16
sed 's/"vpu_width": 24,/"vpu_width": 16,/' configs/disc-a100-matched.json > "$T/hw16.json"
grep -q '"vpu_width": 16,' "$T/hw16.json" || fail "configs/disc-a100-matched.json has no vpu_width 24 line"
$A replay "$T/t.atr" --hw "$T/hw16.json" -o "$T/r" 2> /dev/null || fail "replay"
# 20 steps of tiny in mode baseline take 5,920,700 cycles
[ "$(col "$T/r/results.csv" cycles 1)" = 5920700 ] || fail "baseline cycles $(col "$T/r/results.csv" cycles 1)"
# on tiny: recorded statistics of the kept masks = the analyzer's recount
$A analyze hash "$T/t.atr" -o "$T/h1" --no-plots > /dev/null || fail "analyze hash"
$A analyze hash "$T/t.atr" -o "$T/h2" --units 8,16,32,64,256 --no-plots > /dev/null || fail "analyze 256"
n1=$(awk -F, 'NR > 1 && $3 == 0 && $4 == 0' "$T/h1/hash_masks.csv" | cut -d, -f1-8,10-33 | sort | md5sum)
n2=$(awk -F, 'NR > 1 && $9 == "bits"' "$T/h2/hash_masks.csv" | cut -d, -f1-8,10-17,20-27,30-37 | sort | md5sum)
[ "$(awk -F, 'NR > 1 && $9 == "bits"' "$T/h2/hash_masks.csv" | wc -l)" -gt 0 ] || fail "no kept masks recounted"
[ "$n1" = "$n2" ] || fail "recorded and recounted statistics differ"
echo "disc_replay_tiny: ok"
