#!/usr/bin/env bash
# SA-Kura replay CLI (docs/kura.md#tile-stream-export, docs/kura.md#replay, docs/kura.md#acceptance-checks): `model kura` figures (docs/kura.md#acceptance-checks,
# the system-level check), `export tiles` on a captured trace (the export check counts, stored
# tile streams checked), and the `kura` replay model over the 25-shape sweep when the
# `replay` verb is present.
set -euo pipefail
A=${ACCELTRACE:-build/acceltrace}
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# the area budget check: the paper's budget answers with the shipped area model (calibrated:
# fit4 passes through these shapes; a regression guard)
for pair in 3:H10W10:258.5:2.868 4:H15W15:195.4:3.828 5:H20W15:178.1:4.535 6:H25W20:166.0:5.874; do
    IFS=: read -r mm2 shape e a <<< "$pair"
    out=$("$A" model kura --budget "$mm2")
    [ "$out" = "$(printf 'best=%s\ne_px_pj=%s\narea_mm2=%s' "$shape" "$e" "$a")" ] ||
        fail "budget $mm2: $out"
done
# a budget no shape fits is an impossible parameter: exit 2 with the smallest shape's area
out=$("$A" model kura --budget 2 2>&1) && rc=0 || rc=$?
[ "$rc" = 2 ] || fail "budget 2: exit $rc, want 2: $out"
echo "$out" | grep -q "no shape fits --budget 2 mm^2: the smallest of --shapes, H5W5, takes 2.161 mm^2" ||
    fail "budget 2 reason: $out"

# acceptance 3 / the power fit check: fit through the paper's four compute-only points (calibrated; guards
# the fit against regressions)
printf 'n_h,n_w,e_px_pj\n10,10,258.5\n15,15,195.4\n20,15,178.1\n25,20,166.0\n' > "$d/p4.csv"
"$A" model kura --fit "$d/p4.csv" > "$d/fit.txt"
grep -qx 'hw=0.195887' "$d/fit.txt" || fail "hw: $(cat "$d/fit.txt")"
grep -qx 'w=0.509283' "$d/fit.txt" || fail "w"
grep -qx 'h=1.678762' "$d/fit.txt" || fail "h"
grep -q '^fixed=30.3363' "$d/fit.txt" || fail "fixed"
grep -qx 'r2=1.000000000' "$d/fit.txt" || fail "r2"
awk -F= '/^residual/ { if ($2 > 0.1 || $2 < -0.1) exit 1 }' "$d/fit.txt" || fail "residuals"
head -4 "$d/p4.csv" > "$d/p3.csv"
set +e
"$A" model kura --fit "$d/p3.csv" > /dev/null 2> "$d/err.txt"; rc=$?
set -e
[ "$rc" = 3 ] || fail "three points exit $rc"
grep -q 'at least 4 points' "$d/err.txt" || fail "three-point message: $(cat "$d/err.txt")"

# N_w* by eq. 12
[ "$("$A" model kura --optimal-width | tr '\n' ' ')" = \
  "nw_opt.H5=26.01 nw_opt.H10=22.28 nw_opt.H15=20.46 nw_opt.H20=19.37 nw_opt.H25=18.65 " ] ||
    fail "optimal width"

# docs/kura.md#acceptance-checks: the grid at 96x96
"$A" model kura --grid > "$d/grid.csv"
[ "$(grep -c '^H' "$d/grid.csv")" = 25 ] || fail "grid rows"
awk -F, '$1 == "H20W5" { if ($6 != 3105 || $4 != 100 || $17 != "641.300" || $19 != "5.8803") exit 1; ok = 1 }
         $1 == "H25W25" { if ($6 != 841 || $4 != 16) exit 1 }
         END { exit !ok }' "$d/grid.csv" || fail "grid values: $(grep H20W5 "$d/grid.csv")"
tail -1 "$d/grid.csv" | grep -q '^# best system-level: H20W5 641.300 us 5.8803 nJ/px; vs rocket 193.0' ||
    fail "best line: $(tail -1 "$d/grid.csv")"
set +e
"$A" model kura --grid --size 0x5 > /dev/null 2>&1; rc=$?
set -e
[ "$rc" = 2 ] || fail "bad size exit $rc"

# export tiles on a captured 13x11 trace with stored 4x3 streams (the export check counts)
"$A" capture kura --size 13x11 --steps 4 --data uniform --tile-streams 4x3 -q -o "$d/t.atr" \
    > /dev/null
"$A" export tiles "$d/t.atr" --shape 4x3 -o "$d/x" > "$d/export.txt"
grep -q 'stored tiles match' "$d/export.txt" || fail "stored tiles: $(cat "$d/export.txt")"
[ "$(wc -l < "$d/x/in.hex")" = 467 ] || fail "in.hex lines"
[ "$(wc -l < "$d/x/out.hex")" = 467 ] || fail "out.hex lines"
[ "$(grep -c '^[13]' "$d/x/in.hex")" = 112 ] || fail "valid input lines"
[ "$(grep -c '^3' "$d/x/in.hex")" = 16 ] || fail "first-column lines"
[ "$(grep -c '^1' "$d/x/out.hex")" = 48 ] || fail "valid output lines"
[ "$(wc -l < "$d/x/lut.hex")" = 4097 ] || fail "lut.hex"
[ "$(wc -l < "$d/x/drift.hex")" = 143 ] || fail "drift.hex"
grep -q '"N_cyc": 467' "$d/x/meta.json" || fail "meta.json N_cyc"
grep -q 'Word layouts' "$d/x/README.txt" || fail "README.txt"
"$A" export tiles "$d/t.atr" --shape 20x5 --step 2 -o "$d/y" > /dev/null
[ "$(wc -l < "$d/y/in.hex")" = 98 ] || fail "20x5 lines"
set +e
"$A" export tiles "$d/t.atr" --shape 4x3 --step 9 -o "$d/z" > /dev/null 2>&1; rc=$?
[ "$rc" = 3 ] || fail "missing step exit $rc"
"$A" export tiles "$d/t.atr" --shape 4 -o "$d/z" > /dev/null 2>&1; rc=$?
[ "$rc" = 2 ] || fail "bad shape exit $rc"
set -e

# model kura --plots --trace --tiles: export tiles' files from the figures' pass, byte for
# byte what export tiles writes (step T-1), and its printed line; the option's usage errors
"$A" export tiles "$d/t.atr" --shape 4x3 -o "$d/xt" > "$d/export_t.txt"
"$A" model kura --plots "$d/kp" --trace "$d/t.atr" --tiles "$d/kt" --tile-shape 4x3 \
    > "$d/model_t.txt" 2> /dev/null
diff -r "$d/xt" "$d/kt" > /dev/null || fail "model kura --tiles files differ from export tiles"
grep -qF "$(sed "s|$d/xt|$d/kt|" "$d/export_t.txt")" "$d/model_t.txt" ||
    fail "model kura --tiles line: $(cat "$d/model_t.txt")"
[ -s "$d/kp/kura_drift_error.csv" ] || fail "model kura --tiles: no trace figures"
set +e
"$A" model kura --plots "$d/kq" --tiles "$d/kt2" --tile-shape 4x3 > /dev/null 2>&1; rc=$?
[ "$rc" = 2 ] || fail "--tiles without --trace exit $rc"
"$A" model kura --plots "$d/kq" --trace "$d/t.atr" --tiles "$d/kt2" > /dev/null 2>&1; rc=$?
[ "$rc" = 2 ] || fail "--tiles without --tile-shape exit $rc"
"$A" model kura --plots "$d/kq" --trace "$d/t.atr" --tiles "$d/t.atr" --tile-shape 4x3 \
    > /dev/null 2>&1; rc=$?
[ "$rc" = 2 ] || fail "--tiles onto the trace exit $rc"
set -e

# the replay model over the 25-shape sweep (one pass), when the replay verb exists
if "$A" replay --help > /dev/null 2>&1; then
    "$A" capture kura --size 24x24 --steps 3 -q -o "$d/r.atr" > /dev/null
    "$A" replay "$d/r.atr" --hw configs/kura-h20w5.json --sweep configs/kura-sweep.json \
        -o "$d/res" > /dev/null 2>&1 || fail "replay"
    [ "$(tail -n +2 "$d/res/results.csv" | wc -l)" = 25 ] || fail "replay rows"
    # every stored KuraTiles record (two shapes, every step) is checked during the replay
    "$A" capture kura --size 40x36 --steps 5 --tile-streams 20x5,7x3 -q -o "$d/ts.atr" \
        > /dev/null
    "$A" replay "$d/ts.atr" --hw configs/kura-h20w5.json -o "$d/rts" > /dev/null 2>&1 ||
        fail "replay with stored tiles"
    # the cycle-accurate check on a captured 96x96 step: the checked cycle-accurate array over the
    # 25 paper shapes (a mismatch with the fixed-point drift fails the replay)
    "$A" capture kura --size 96x96 --steps 3 -q -o "$d/c96.atr" > /dev/null
    printf '{"model": "kura", "cycle_accurate": true}\n' > "$d/ca.json"
    "$A" replay "$d/c96.atr" --hw "$d/ca.json" --sweep configs/kura-sweep.json -o "$d/ca" \
        > /dev/null 2>&1 || fail "cycle-accurate replay"
    awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
             { if ($col["sim_cycles [cycles]"] != 2 * $col["cycles_step [cycles]"]) exit 1; n++ }
             END { exit n != 25 }' "$d/ca/results.csv" || fail "cycle-accurate rows"
fi
echo "kura_replay ok"
