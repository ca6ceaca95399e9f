#!/usr/bin/env bash
# Interop check of the class-conditional DiT (docs/models.md, "DiT-XL/2") against an
# independent PyTorch forward with the module structure of facebookresearch/DiT models.py
# (bench/peers/dit_class_torch.py) on dit-micro: one dense forward with class 207 agrees
# within 1e-4 of max|eps|, and the same comparison with another label fails, so the check
# sees the conditioning. Skipped (exit 77) when /usr/bin/python3 has no torch or numpy.
set -u
B=${BUILD:-build}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
if ! /usr/bin/python3 -c "import torch, numpy" 2> /dev/null; then
    echo "SKIP: /usr/bin/python3 lacks torch or numpy (apt-get install python3-torch python3-numpy)"; exit 77
fi
[ -x "$B/bench/bench_disc" ] || { echo "FAIL: $B/bench/bench_disc not built"; exit 1; }
"$B/bench/bench_disc" --model dit-micro --forward-only --reps 0 --threads 1 --dump "$T" > /dev/null ||
    { echo "FAIL: bench_disc --dump"; exit 1; }
out=$(/usr/bin/python3 bench/peers/dit_class_torch.py "$T") || { echo "FAIL: $out"; exit 1; }
echo "$out"
if /usr/bin/python3 bench/peers/dit_class_torch.py "$T" --label 3 > /dev/null; then
    echo "FAIL: another class label agrees too"; exit 1
fi
echo "ok"
