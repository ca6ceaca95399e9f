#!/usr/bin/env bash
# scripts/measure_gpu.py (docs/models.md#gpu-baselines, "Measuring on a GPU") measures
# end-to-end times for the GPU model's validation set; tests never need a GPU, so this runs
# the same code on the CPU at small shapes and checks the plumbing: the file has the
# validation set's columns, one row per image size and context, says it is not a GPU
# measurement, and `validate gpu --set` reads it; bad usage exits 2, a missing CUDA device
# 3 (only asserted where none is present). No figure is asserted.
# Skipped (exit 77) when /usr/bin/python3 has no torch.
set -u
A=${ACCELTRACE:-build/acceltrace}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
PY=/usr/bin/python3
fail() { echo "FAIL: $*"; exit 1; }
if ! "$PY" -c "import torch" 2> /dev/null; then
    echo "SKIP: /usr/bin/python3 has no torch (scripts/deps.sh)"; exit 77
fi
S=scripts/measure_gpu.py
"$PY" $S --gpu-preset a100-pcie-80gb --device cpu --model micro --image-sizes 128,256 \
    --contexts 256,1024 --heads 4 --kv-heads 2 --head-dim 16 --iters 2 -o "$T/m" ||
    fail "cpu run"
F=$T/m/validation-measured.csv
[ -s "$F" ] && [ ! -e "$F.tmp" ] || fail "no file, or a temporary left"
[ "$(head -1 "$F")" = "$(head -1 configs/gpu/validation.csv)" ] || fail "columns: $(head -1 "$F")"
"$PY" - "$F" << 'PYEOF' || fail "content"
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
assert [r["workload"] for r in rows] == ["micro"] * 2 + ["decode-attention"] * 2, rows
for r in rows:
    assert float(r["measured"]) > 0 and "NOT a GPU measurement" in r["notes"], r
    assert r["source"].startswith("measured here: scripts/measure_gpu.py"), r
assert "image_size=256" in rows[1]["condition"] and "context=1024" in rows[3]["condition"]
PYEOF
# the decode rows are a validation set `validate gpu` reads (the micro DiT is no workload)
grep -v ',micro,' "$F" > "$T/dec.csv"
"$A" validate gpu --set "$T/dec.csv" -o "$T/V" > /dev/null || fail "validate gpu --set"
[ "$(tail -n +2 "$T/V/validation.csv" | wc -l)" = 2 ] || fail "validated rows"
# usage and device errors
"$PY" $S --gpu-preset a100-pcie-80gb --device cpu --heads 5 --kv-heads 2 -o "$T/x" 2> /dev/null
rc=$?
[ $rc = 2 ] || fail "heads not a multiple of kv-heads: exit $rc, want 2"
"$PY" $S --gpu-preset nosuch --device cpu -o "$T/x" 2> /dev/null; rc=$?
[ $rc = 2 ] || fail "unknown preset: exit $rc, want 2"
if ! "$PY" -c "import torch, sys; sys.exit(torch.cuda.is_available())"; then :; else
    "$PY" $S --gpu-preset h100-sxm --device cuda -o "$T/x" 2> "$T/err.txt"; rc=$?
    [ $rc = 3 ] && grep -q "not available" "$T/err.txt" || fail "no GPU: exit $rc, want 3"
fi
[ ! -e "$T/x/validation-measured.csv" ] || fail "a file was written on error"
echo ok
