#!/usr/bin/env bash
# Interop check of the DiSC capture's DiT (docs/disc.md#forward-pass, docs/disc.md#ctr-selection)
# against an independent PyTorch forward (bench/peers/dit_torch.py) on micro: one dense
# forward, and one CTR step (a dense step fills the caches, then a step at a new latent and
# timestep computes every other token and takes the rest from the caches) agree within
# 1e-4 of max|eps|, while the CTR step differs clearly from a dense forward of its input.
# Skipped (exit 77, counted by tests/run.sh) when /usr/bin/python3 has no torch or numpy.
set -u
B=${BUILD:-build}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
if ! /usr/bin/python3 -c "import torch, numpy" 2> /dev/null; then
    echo "SKIP: /usr/bin/python3 lacks torch or numpy (apt-get install python3-torch python3-numpy)"; exit 77
fi
[ -x "$B/bench/bench_disc" ] || { echo "FAIL: $B/bench/bench_disc not built"; exit 1; }
"$B/bench/bench_disc" --model micro --forward-only --reps 0 --threads 1 --dump "$T" > /dev/null ||
    { echo "FAIL: bench_disc --dump"; exit 1; }
out=$(/usr/bin/python3 bench/peers/dit_torch.py "$T" --threads 1 --reps 0 --heads 4) ||
    { echo "FAIL: $out"; exit 1; }
echo "$out"
[ "$(echo "$out" | grep -c '(ok, bound 1e-4)')" = 2 ] || { echo "FAIL: dense and CTR checks"; exit 1; }
echo "ok"
