#!/usr/bin/env bash
# scripts/disc_structure.py --reference (docs/models.md#trained-small-shipped-weights-measured-not-paper-numbers): the (a)
# figures on an ideal denoiser's path x_k = alpha_k x0 + sigma_k eps.
#  1. on the schedule of a real capture, a smooth x0 (a bright half-image) gives kept
#     tokens that cluster (P(neighbour kept | kept) - base >= 0.2 at some step) and white
#     noise gives none (< 0.08 at every step): the figure can tell the two apart;
#  2. on a trained-small capture it reports the trace's dense latent, and the training
#     photographs when they are installed (then their clustering is >= 0.1: the target
#     is reachable on this latent space), or says they are not;
#  3. a capture without --ctr-target exits 3 naming the trace.
# Skipped (exit 77) when /usr/bin/python3 lacks numpy, protobuf or zstandard.
set -u
A=${ACCELTRACE:-build/acceltrace}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
if ! /usr/bin/python3 -c "import numpy, google.protobuf, zstandard" 2> /dev/null; then
    echo "SKIP: /usr/bin/python3 lacks numpy, protobuf or zstandard (scripts/deps.sh)"; exit 77
fi
fail() { echo "FAIL: $*"; exit 1; }
S=scripts/disc_structure.py

"$A" capture disc --model trained-small --image-size 256 --steps 20 --threads 1 -q \
    --keep-masks none -o "$T/ts.atr" || fail "capture"

# 1. the ideal path on known fields
PYTHONPATH=python:scripts /usr/bin/python3 - "$T/ts.atr" << 'EOF' || fail "ideal path"
import sys
import numpy as np
import acceltrace
import disc_structure as ds
h = acceltrace.open(sys.argv[1]).header.disc
al, sg = np.array(h.alphas), np.array(h.sigmas)
g, p = h.grid_w, h.patch
rng = np.random.default_rng(3)
blob = np.zeros((4, g * p, g * p))
blob[0, :, : g * p // 2] = 3.0
smooth = ds.ideal_path(blob, al, sg, g, p, round(0.4 * g * g), rng)
white = ds.ideal_path(rng.standard_normal(blob.shape), al, sg, g, p, round(0.4 * g * g), rng)
print("clustering max: bright half", smooth[:, 1].max().round(3), "white noise",
      white[:, 1].max().round(3))
assert smooth.shape == (len(al) - 2, 2), smooth.shape
assert smooth[:, 1].max() >= 0.2, smooth[:, 1]
assert np.abs(white[:, 1]).max() < 0.08, white[:, 1]
EOF

# 2. a trained-small capture
PYTHONPATH=python /usr/bin/python3 $S "$T/ts.atr" --reference --json > "$T/r.json" ||
    fail "--reference"
PYTHONPATH=python /usr/bin/python3 $S "$T/ts.atr" --reference | grep "^reference" ||
    fail "--reference text"
/usr/bin/python3 - "$T/r.json" << 'EOF' || fail "reference figures"
import json, sys
r = json.load(open(sys.argv[1]))["reference"]
d = r["dense_latent"]
assert d["x0"] == 1 and len(d["cluster_per_step"]) == 19, d
ph = r["photos"]
if "skipped" in ph:
    print("photos:", ph["skipped"])
else:
    assert ph["x0"] >= 20, ph["x0"]
    assert ph["cluster_max"] >= 0.1, ("photos clustering", ph["cluster_max"])
    print("photos: clustering max", round(ph["cluster_max"], 3), "over", ph["x0"], "photographs")
EOF

# 3. a capture without a CTR target
"$A" capture disc --model micro --steps 2 --ctr-off -q -o "$T/off.atr" || fail "capture ctr-off"
PYTHONPATH=python /usr/bin/python3 $S "$T/off.atr" --reference > /dev/null 2> "$T/off.err"
rc=$?
[ $rc = 3 ] || fail "--ctr-off trace: exit $rc, want 3"
grep -q "off.atr" "$T/off.err" && grep -q "ctr-target" "$T/off.err" ||
    fail "--ctr-off trace: message $(cat "$T/off.err")"
echo "ok"
