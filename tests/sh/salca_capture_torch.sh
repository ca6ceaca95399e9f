#!/usr/bin/env bash
# Interop check of the Salca capture's Llama decoder (docs/salca.md#model-source, the Llama model check) against an
# independent PyTorch forward (bench/peers/salca_llama_torch.py): the tiny model's logits
# after a 256-token prefill and 4 cached decode steps agree within 1e-4 relative and give
# the same argmax. Skipped (exit 77, counted by tests/run.sh) when /usr/bin/python3 has no
# torch or numpy.
set -u
B=${BUILD:-build}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
if ! /usr/bin/python3 -c "import torch, numpy" 2> /dev/null; then
    echo "SKIP: /usr/bin/python3 lacks torch or numpy (apt-get install python3-torch python3-numpy)"; exit 77
fi
[ -x "$B/bench/bench_salca_llama" ] || { echo "FAIL: $B/bench/bench_salca_llama not built"; exit 1; }
"$B/bench/bench_salca_llama" --n 256 --steps 4 --write "$T" > /dev/null || { echo "FAIL: bench"; exit 1; }
out=$(/usr/bin/python3 bench/peers/salca_llama_torch.py "$T") || { echo "FAIL: $out"; exit 1; }
echo "$out"
echo "$out" | grep -q "argmax_agree=5/5" || { echo "FAIL: argmax differs"; exit 1; }
echo "ok"
