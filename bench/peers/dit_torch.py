#!/usr/bin/python3
"""PyTorch reference of the DiSC capture's DiT (docs/models.md "DiSC capture").

Runs the torch capture's model (python/acceltrace/capture/dit_model.py, its functional
form `forward`) on the weights of the safetensors file written by
`build/bench/bench_disc --dump DIR` (diffusers tensor names, F32): one forward pass on
the same latent, text and timestep as the C one; compares eps with the C forward (DIR/eps.f32) and times
the PyTorch CPU forward with the same thread count.

usage: /usr/bin/python3 bench/peers/dit_torch.py DIR [--threads N] [--reps R] [--c-seconds S]
Prints the max difference normalised by max|eps_C| (pass: <= 1e-4), the largest elementwise
relative difference over elements with |eps_C| >= 1e-3 max|eps_C|, and the forward time.
When DIR holds the CTR files bench_disc also writes (ctr_*), it checks the CTR path of
CTR (docs/models.md "CTR and ST as executed") the same way: a cached step computing only some tokens.
"""
import argparse
import math
import os
import sys
import time

import numpy as np
import torch

# the model is the torch capture's (python/acceltrace/capture/dit_model.py)
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
from acceltrace.capture.dit_model import forward, load_f32  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--heads", type=int, default=6)
    ap.add_argument("--text-tokens", type=int, default=300)
    ap.add_argument("--c-seconds", type=float, default=None)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    W = load_f32(f"{a.dir}/weights.safetensors")
    depth = 1 + max(int(k.split(".")[1]) for k in W if k.startswith("transformer_blocks."))
    d = W["pos_embed.proj.bias"].shape[0]
    dc = W["caption_projection.linear_1.weight"].shape[1]
    c_in = W["pos_embed.proj.weight"].shape[1]
    lat_raw = np.fromfile(f"{a.dir}/latent.f32", dtype="<f4")
    lat = int(round(math.sqrt(lat_raw.size / c_in)))
    x = torch.from_numpy(lat_raw.reshape(c_in, lat, lat).copy())
    text = torch.from_numpy(np.fromfile(f"{a.dir}/text.f32", dtype="<f4").reshape(-1, dc).copy())
    t = float(open(f"{a.dir}/t.txt").read())
    ref = np.fromfile(f"{a.dir}/eps.f32", dtype="<f4").reshape(c_in, lat, lat)
    best = float("inf")
    with torch.no_grad():
        for _ in range(a.reps + 1):
            t0 = time.perf_counter()
            eps = forward(W, x[None], text, torch.tensor([t]), a.heads, depth)[0]
            best = min(best, time.perf_counter() - t0)
    out = eps.numpy().astype(np.float64)
    refd = ref.astype(np.float64)
    scale = np.abs(refd).max()
    norm_diff = np.abs(out - refd).max() / scale
    big = np.abs(refd) >= 1e-3 * scale
    elem = (np.abs(out - refd)[big] / np.abs(refd)[big]).max()
    print(f"dit_torch: depth {depth}, d {d}, N {(lat // 2) ** 2}, threads {a.threads}")
    print(f"dit_torch: max |eps_torch - eps_C| / max|eps_C| = {norm_diff:.3g} "
          f"({'ok' if norm_diff <= 1e-4 else 'FAIL'}, bound 1e-4); "
          f"max elementwise relative (|eps_C| >= 1e-3 max) = {elem:.3g}")
    print(f"dit_torch: PyTorch CPU forward {best:.3f} s")
    if a.c_seconds:
        print(f"dit_torch: C forward {a.c_seconds:.3f} s, speed ratio C vs PyTorch "
              f"{best / a.c_seconds:.2f}x (target >= 1.0x)")
    ok = norm_diff <= 1e-4
    if os.path.exists(f"{a.dir}/ctr_eps.f32"):
        ok = check_ctr(a, W, x, text, t, heads=a.heads, depth=depth) and ok
    return 0 if ok else 1


def check_ctr(a, W, x, text, t, heads, depth):
    """The CTR step against the C capture: a dense step at (x, t) fills the caches, a
    step at (ctr_latent, ctr_t) computes only the tokens of ctr_kept.i32. Also prints how
    far the CTR eps is from a dense forward at the same input, so agreement with the C
    side is not a dense result in disguise."""
    c_in, lat = x.shape[0], x.shape[1]
    x2 = torch.from_numpy(np.fromfile(f"{a.dir}/ctr_latent.f32", dtype="<f4")
                          .reshape(c_in, lat, lat).copy())
    t2 = float(open(f"{a.dir}/ctr_t.txt").read())
    kept = torch.from_numpy(np.fromfile(f"{a.dir}/ctr_kept.i32", dtype="<i4").astype(np.int64))
    ref = np.fromfile(f"{a.dir}/ctr_eps.f32", dtype="<f4").reshape(c_in, lat, lat)
    ctr = {"caches": [[None, None, None] for _ in range(depth)], "kept": None}
    with torch.no_grad():
        forward(W, x[None], text, torch.tensor([t]), heads, depth, ctr=ctr)
        ctr["kept"] = kept
        eps = forward(W, x2[None], text, torch.tensor([t2]), heads, depth, ctr=ctr)[0]
        dense = forward(W, x2[None], text, torch.tensor([t2]), heads, depth)[0]
    refd = ref.astype(np.float64)
    scale = np.abs(refd).max()
    diff = np.abs(eps.numpy().astype(np.float64) - refd).max() / scale
    gap = np.abs(dense.numpy().astype(np.float64) - refd).max() / scale
    ok = diff <= 1e-4 and gap > 100 * max(diff, 1e-7)
    print(f"dit_torch: CTR step ({kept.numel()} of {(lat // 2) ** 2} tokens computed): "
          f"max |eps_torch - eps_C| / max|eps_C| = {diff:.3g} "
          f"({'ok' if ok else 'FAIL'}, bound 1e-4); the dense forward of the same input "
          f"differs by {gap:.3g}")
    return ok


if __name__ == "__main__":
    sys.exit(main())
