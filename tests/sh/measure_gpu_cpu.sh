#!/usr/bin/env bash
# scripts/measure_gpu.py (docs/models.md "Baselines"; issue 13 item 4) measures the roofline
# parameters on a GPU; tests never need one, so this runs the same code on the CPU with small
# shapes and checks the plumbing: a config the `a100` model accepts (replay --dry-run), every
# op class timed, the file saying it is not a GPU measurement; bad usage exits 2, a missing
# CUDA device 3 (only asserted where none is present). No figure is asserted.
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
"$PY" $S --device cpu --iters 2 --tokens 64 --caption 16 --hidden 128 --heads 2 --ffn 512 \
    --launch-kernels 50 --peak-tflops 1 --hbm-gbs 500 -o "$T/m.json" || fail "cpu run"
[ ! -e "$T/m.json.tmp" ] && [ -s "$T/m.ops.csv" ] || fail "temporary left or no .ops.csv"
"$PY" - "$T/m.json" "$T/m.ops.csv" << 'PYEOF' || fail "content"
import csv, json, sys
m = json.load(open(sys.argv[1]))
assert m["model"] == "a100", m["model"]
assert "NOT a GPU measurement" in m["doc"] and "head dim 64" in m["doc"], m["doc"]
for k in ("eff_linear", "eff_attn", "eff_mem"):
    assert 0 < m[k] <= 1, (k, m[k])
assert m["launch_us"] > 0
rows = list(csv.DictReader(open(sys.argv[2])))
by = {}
for r in rows:
    by.setdefault(r["class"], []).append(r)
    assert float(r["seconds"]) > 0 and 0 < float(r["fraction_of_peak"]), r
assert [r["op"] for r in by["linear"]][:2] == ["self qkv", "self out"], by["linear"]
assert len(by["linear"]) == 8 and len(by["attention"]) == 2 and len(by["memory"]) == 4
assert by["linear"][0]["shape"] == "128x128x384", by["linear"][0]["shape"]
# the config's efficiency is the FLOP-weighted one of the rows
lin = sum(float(r["flop"]) for r in by["linear"]) / sum(float(r["seconds"]) for r in by["linear"])
assert abs(lin / 1e12 - m["eff_linear"]) <= 1e-3 * m["eff_linear"], (lin, m["eff_linear"])
print("measured config:", {k: m[k] for k in ("eff_linear", "eff_attn", "eff_mem", "launch_us")})
PYEOF
# the file is a config the a100 model reads
"$A" capture disc --model micro --image-size 256 --steps 2 -q -o "$T/d.atr" > /dev/null 2>&1 ||
    fail "capture"
# (a copy with the efficiencies held in [0.01, 1]: a loaded CPU against the 1 TFLOP/s peak
# given above can fall below the schema's 0.001; the keys and their types are what is checked)
"$PY" -c "
import json, sys
m = json.load(open(sys.argv[1]))
for k in ('eff_linear', 'eff_attn', 'eff_mem'):
    m[k] = min(1.0, max(0.01, m[k]))
json.dump(m, open(sys.argv[2], 'w'))" "$T/m.json" "$T/mc.json" || fail "copy"
"$A" replay "$T/d.atr" --hw "$T/mc.json" --dry-run -o "$T/r" > "$T/dry.txt" 2>&1 ||
    { cat "$T/dry.txt"; fail "replay --dry-run refused the measured config"; }
# usage and device errors
"$PY" $S --device cpu --heads 5 -o "$T/x.json" 2> /dev/null; rc=$?
[ $rc = 2 ] || fail "hidden not a multiple of heads: exit $rc, want 2"
if ! "$PY" -c "import torch, sys; sys.exit(torch.cuda.is_available())"; then :; else
    "$PY" $S --device cuda -o "$T/x.json" 2> "$T/err.txt"; rc=$?
    [ $rc = 3 ] && grep -q "not available" "$T/err.txt" || fail "no GPU: exit $rc, want 3"
fi
[ ! -e "$T/x.json" ] || fail "a file was written on error"
echo ok
