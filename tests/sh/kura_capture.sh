#!/usr/bin/env bash
# End-to-end checks of `acceltrace capture kura` (docs/kura.md
# docs/kura.md#acceptance-checks): the default capture (96x96 fingerprint, T = 100, fixed drift, oracle) finishes,
# verifies, meets the docs/kura.md#acceptance-checks bounds and writes PNGs; --reproducible traces are byte-identical
# for the same seed (also with forced oracle checkpoints and another output name) and differ
# for another seed; tile streams are stored; bad usage exits 2.
set -u
A=${ACCELTRACE:?ACCELTRACE not set}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
# awk float compare: le A B -> exit 0 when A <= B
le() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a <= b) }'; }
get() { sed -n "s/^$1=//p" "$2"; }

# 1. default capture with PNGs
t0=$(date +%s.%N)
"$A" capture kura -q -o "$T/def.atr" --png "$T/png" > "$T/def.out" || fail "default capture"
t1=$(date +%s.%N)
cat "$T/def.out"
echo "default capture: $(echo "$t1 - $t0" | bc) s"
"$A" verify "$T/def.atr" || fail "verify of the default capture"
mae=$(get recon_mae "$T/def.out"); emax=$(get drift_err_max "$T/def.out")
le "$mae" 0.030558 || fail "recon MAE $mae > 0.030558"
le "$emax" 5.83e-6 || fail "drift error $emax > 5.83e-6"
for f in data.png data_x.png final.png final_x.png error.png step_0099.png step_0009.png; do
    [ -s "$T/png/$f" ] || fail "missing png $f"
done
n=$(ls "$T/png"/step_*.png | wc -l)
[ "$n" -eq 10 ] || fail "expected 10 step images, got $n"

# 2. reproducible bytes (small map for speed)
S="--size 40x36 --reproducible -q"
"$A" capture kura $S --seed 5 -o "$T/a.atr" > /dev/null || fail "capture a"
"$A" capture kura $S --seed 5 -o "$T/b.atr" > /dev/null || fail "capture b"
"$A" capture kura $S --seed 5 --oracle-mem 1K -o "$T/c.atr" > "$T/c.out" || fail "capture c"
"$A" capture kura $S --seed 6 -o "$T/d.atr" > /dev/null || fail "capture d"
[ "$(get oracle_checkpoints "$T/c.out")" = 1 ] || fail "--oracle-mem 1K did not checkpoint"
cmp -s "$T/a.atr" "$T/b.atr" || fail "same seed gave different bytes"
cmp -s "$T/a.atr" "$T/c.atr" || fail "oracle checkpoints changed the bytes"
cmp -s "$T/a.atr" "$T/d.atr" && fail "different seeds gave the same bytes"
# without --reproducible only the header and the summary's wall time may differ
"$A" capture kura --size 40x36 -q --seed 5 -o "$T/e.atr" > /dev/null || fail "capture e"
cmp -s "$T/a.atr" "$T/e.atr" && echo "note: non-reproducible trace equal (unexpected but harmless)"

# 3. tile streams and other modes
"$A" capture kura --size 30x25 -q --tile-streams 20x5,10x10 --drift float --score prior \
    -o "$T/t.atr" > /dev/null || fail "tile-stream capture"
"$A" verify "$T/t.atr" > /dev/null || fail "verify tile-stream trace"
"$A" info "$T/t.atr" > "$T/t.info" 2>&1 || fail "info"
grep -E "^kura_tiles +198 " "$T/t.info" > /dev/null || { cat "$T/t.info"; fail "expected 198 kura_tiles frames"; }
# the SA-Kura replay derives the streams with its cycle-accurate array and compares them
# with the stored ones (a mismatch is a data error)
if [ -f configs/kura-h20w5.json ]; then
    "$A" replay "$T/t.atr" --hw configs/kura-h20w5.json -o "$T/res" > /dev/null 2>&1 \
        || fail "replay rejected the stored tile streams"
fi
"$A" capture kura --size 24x24 -q --no-check-drift --data ramp --data-param nx=2,ny=1 \
    --score none --start forward --preset t300 --steps 20 -o "$T/r.atr" > "$T/r.out" || fail "ramp"
grep -q drift_err_max "$T/r.out" && fail "--no-check-drift still reported a drift error"

# 4. usage errors exit 2, with a message
expect2() {
    "$A" capture kura "$@" > /dev/null 2> "$T/err"; rc=$?
    [ $rc -eq 2 ] || fail "expected exit 2 for '$*', got $rc"
    grep -q "^acceltrace" "$T/err" || fail "no message for '$*'"
}
expect2 --size 4x4 -o "$T/x.atr"
expect2 --c-end 2 -o "$T/x.atr"
expect2 --c-end 1.2770806449520864 -o "$T/x.atr"
expect2 --bogus -o "$T/x.atr"
expect2 --size 20x20
expect2 --score net -o "$T/x.atr"
expect2 --data nothing -o "$T/x.atr"
expect2 --data wood --data-param zz=1 -o "$T/x.atr"
expect2 --tile-streams 0x5 -o "$T/x.atr"
# c_end = c_max is accepted
"$A" capture kura -q --size 8x8 --steps 3 --c-end 1.2770806449520862 -o "$T/cmax.atr" \
    > /dev/null || fail "c_end = c_max rejected"
"$A" capture kura --help | grep -q -- "--tile-streams" || fail "help"
echo "ok"
