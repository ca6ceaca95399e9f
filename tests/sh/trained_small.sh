#!/usr/bin/env bash
# The shipped trained-small DiT (docs/models.md#trained-small-shipped-weights-measured-not-paper-numbers):
#  1. configs/models/trained-small.safetensors matches its .sha256 and is F16, <= 20 MB;
#  2. `capture disc --model trained-small` loads it by default: the header names
#     trained-small, the file and its sha256, and the null-caption text;
#  3. a changed copy (found through $ACCELTRACE_MODELS) exits 3 naming the sha256 mismatch
#     and writes no trace;
#  4. on a short capture (256 px, 20 steps, masks of blocks 0,2,5 kept) scripts/
#     disc_structure.py finds what docs/models.md reports met: per-token change p90/p50
#     >= 2 at some step, final dense latent RMS in 0.5-2, CTR-only cosine >= 0.97; and the
#     weaker forms of the missed criteria: kept tokens cluster above the base rate at some
#     step (issue target +0.1: missed) and attention locality above 1.2x uniform (target
#     2x: missed; seeded weights give 0.99x).
# Skipped (exit 77) when /usr/bin/python3 lacks numpy, protobuf or zstandard.
set -u
A=${ACCELTRACE:-build/acceltrace}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
M=configs/models
if ! /usr/bin/python3 -c "import numpy, google.protobuf, zstandard" 2> /dev/null; then
    echo "SKIP: /usr/bin/python3 lacks numpy, protobuf or zstandard (scripts/deps.sh)"; exit 77
fi
fail() { echo "FAIL: $*"; exit 1; }

# 1. the committed weights
[ -f $M/trained-small.safetensors ] || fail "$M/trained-small.safetensors missing"
want=$(cut -c1-64 $M/trained-small.safetensors.sha256)
got=$(sha256sum $M/trained-small.safetensors | cut -c1-64)
[ "$want" = "$got" ] || fail "sha256 $got, .sha256 says $want"
size=$(stat -c %s $M/trained-small.safetensors)
[ "$size" -le 20000000 ] || fail "weights are $size bytes (> 20 MB)"
/usr/bin/python3 - "$M/trained-small.safetensors" << 'EOF' || fail "not all F16"
import json, struct, sys
raw = open(sys.argv[1], "rb").read(1 << 20)
h = json.loads(raw[8 : 8 + struct.unpack("<Q", raw[:8])[0]])
bad = [k for k, v in h.items() if k != "__metadata__" and v["dtype"] != "F16"]
assert not bad and h["__metadata__"]["model"] == "trained-small", bad
EOF

# 2. default load and provenance
"$A" capture disc --model trained-small --image-size 256 --steps 20 --threads 1 -q \
    --keep-masks 'blocks=0,2,5;heads=all;steps=all' -o "$T/ts.atr" || fail "capture"
"$A" info "$T/ts.atr" > "$T/info.txt" || fail "info"
PYTHONPATH=python /usr/bin/python3 - "$T/ts.atr" "$got" << 'EOF' || fail "header provenance"
import sys, acceltrace
h = acceltrace.open(sys.argv[1]).header
assert h.source == "trained-small", h.source
assert sys.argv[2] in h.source_detail, h.source_detail
d = h.disc
assert d.weights_source == "trained-small", d.weights_source
assert not d.weights_seeded
assert list(d.weight_sha256) == [sys.argv[2]], list(d.weight_sha256)
assert d.weight_files[0].endswith("trained-small.safetensors"), d.weight_files[0]
assert d.text_source.startswith("zeros"), d.text_source
print("header:", d.weights_source, d.weight_files[0], d.weight_sha256[0][:12], d.text_source)
EOF

# 3. a changed copy and a missing file
mkdir "$T/bad"
cp $M/trained-small.safetensors $M/trained-small.safetensors.sha256 "$T/bad/"
printf '\x01' | dd of="$T/bad/trained-small.safetensors" bs=1 seek=$((size - 2)) conv=notrunc \
    status=none
ACCELTRACE_MODELS="$T/bad" "$A" capture disc --model trained-small --steps 2 -q \
    -o "$T/bad.atr" 2> "$T/bad.err"
rc=$?
[ $rc = 3 ] || fail "changed weights: exit $rc, want 3 ($(cat "$T/bad.err"))"
grep -q "sha256" "$T/bad.err" || fail "changed weights: message $(cat "$T/bad.err")"
[ ! -e "$T/bad.atr" ] || fail "changed weights: a trace was written"

# 4. structure figures (docs/models.md#trained-small-shipped-weights-measured-not-paper-numbers reports which criteria hold)
PYTHONPATH=python /usr/bin/python3 scripts/disc_structure.py "$T/ts.atr" --json > "$T/s.json" ||
    fail "disc_structure"
PYTHONPATH=python /usr/bin/python3 scripts/disc_structure.py "$T/ts.atr"
/usr/bin/python3 - "$T/s.json" << 'EOF' || fail "structure figures"
import json, sys
o = json.load(open(sys.argv[1]))
assert o["p90_p50_max"] >= 2, ("(a) p90/p50", o["p90_p50_max"])
assert o["cluster_max"] > 0, ("(a) kept tokens cluster at some step", o["cluster_max"])
assert o["locality_median"] > 1.2, ("(b) locality above the seeded 0.99x", o["locality_median"])
assert 0.5 <= o["rms_dense"] <= 2, ("(c) final dense latent RMS", o["rms_dense"])
assert o["cosine_ctr"] >= 0.97, ("(d) CTR-only cosine", o["cosine_ctr"])
EOF
echo "ok"
