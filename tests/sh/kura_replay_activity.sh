#!/usr/bin/env bash
# SA-Kura activity calibration (docs/kura.md#switching-activity): alpha_cal over the default capture at
# H20W5 must match the replay model's shipped default (0.4744), and a uniform map toggles
# about half the bits written (the activity check).
set -euo pipefail
A=${ACCELTRACE:-build/acceltrace}
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

"$A" capture kura -q -o "$d/def.atr" > /dev/null
"$A" model kura --calibrate-activity "$d/def.atr" > "$d/cal.txt"
grep -qx 'shape=H20W5' "$d/cal.txt" || fail "shape"
grep -qx 'steps=99' "$d/cal.txt" || fail "steps: $(cat "$d/cal.txt")"
awk -F= '/^alpha_cal=/ { v = $2; if (v < 0.4694 || v > 0.4794) exit 1; ok = 1 } END { exit !ok }' \
    "$d/cal.txt" || fail "alpha_cal $(cat "$d/cal.txt") differs from the shipped 0.4744"

"$A" capture kura --size 96x96 --steps 3 --data uniform -q -o "$d/u.atr" > /dev/null
"$A" model kura --calibrate-activity "$d/u.atr" > "$d/u.txt"
awk -F= '/^alpha_cal=/ { v = $2; if (v < 0.45 || v > 0.55) exit 1; ok = 1 } END { exit !ok }' \
    "$d/u.txt" || fail "uniform alpha $(cat "$d/u.txt")"
set +e
"$A" model kura --calibrate-activity "$d/nothere.atr" > /dev/null 2>&1; rc=$?
set -e
[ "$rc" != 0 ] || fail "missing trace accepted"
echo "kura_replay_activity ok"
