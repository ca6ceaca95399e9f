#!/usr/bin/python3
"""PyTorch reference of the DiSC capture's DiT (docs/disc.md#forward-pass).

Builds the same PixArt-Sigma-style model from the safetensors file written by
`build/bench/bench_disc --dump DIR` (diffusers tensor names, F32), runs one forward pass on
the same latent, text and timestep, compares eps with the C forward (DIR/eps.f32) and times
the PyTorch CPU forward with the same thread count.

usage: /usr/bin/python3 bench/peers/dit_torch.py DIR [--threads N] [--reps R] [--c-seconds S]
Prints the max difference normalised by max|eps_C| (pass: <= 1e-4), the largest elementwise
relative difference over elements with |eps_C| >= 1e-3 max|eps_C|, and the forward time.
When DIR holds the CTR files bench_disc also writes (ctr_*), it checks the CTR path of
docs/disc.md#ctr-selection the same way: a cached step computing only some tokens.
"""
import argparse
import json
import math
import os
import struct
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F


def load_safetensors(path):
    with open(path, "rb") as f:
        raw = f.read()
    (hl,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8 : 8 + hl])
    base = 8 + hl
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        if info["dtype"] != "F32":
            raise SystemExit(f"dit_torch: tensor '{name}' is {info['dtype']}, expected F32")
        b, e = info["data_offsets"]
        arr = np.frombuffer(raw[base + b : base + e], dtype="<f4").reshape(info["shape"])
        out[name] = torch.from_numpy(arr.copy())
    return out


def gelu(x):
    return F.gelu(x, approximate="tanh")


def layer_norm(x):
    return F.layer_norm(x, (x.shape[-1],), eps=1e-6)


def pos_embed(d, g):
    """2-D sin-cos embedding of docs/disc.md#forward-pass: x half then y half, each sin ++ cos."""
    s = max(1.0, g / 32.0)
    q = d // 4
    w = np.array([10000.0 ** (-j / q) for j in range(q)])
    pe = np.zeros((g * g, d))
    for gy in range(g):
        for gx in range(g):
            row = pe[gy * g + gx]
            for half, pos in enumerate((gx / s, gy / s)):
                row[half * (d // 2) : half * (d // 2) + q] = np.sin(pos * w)
                row[half * (d // 2) + q : half * (d // 2) + 2 * q] = np.cos(pos * w)
    return torch.from_numpy(pe.astype(np.float32))


def attention(q, k, v, heads):
    """q (B, n, d), k and v (B or 1, m, d) -> (B, n, d)."""
    b, n, d = q.shape
    dh = d // heads
    qh = q.view(b, n, heads, dh).transpose(1, 2)
    kh = k.view(k.shape[0], k.shape[1], heads, dh).transpose(1, 2)
    vh = v.view(v.shape[0], v.shape[1], heads, dh).transpose(1, 2)
    s = (qh @ kh.transpose(-1, -2)) / math.sqrt(dh)
    return (torch.softmax(s, dim=-1) @ vh).transpose(1, 2).reshape(b, n, d)


def merge(cache, rows, S):
    """docs/disc.md#ctr-selection: the full token set from the computed rows S and the cached rest."""
    if cache is None:
        return rows
    full = cache.clone()
    full[:, S] = rows
    return full


def forward(W, x, text, t, heads, depth, pe=None, ctr=None):
    """The forward pass of docs/disc.md#forward-pass on a batch: x (B, C_in, L, L), t (B,).

    ctr (docs/disc.md#ctr-selection): a dict with "caches" (a list per block of [sa, ca, ff] hidden
    states, None before the first step) and "kept" (a LongTensor of computed tokens, or None
    for all). Only kept rows get Q, cross-attention and the FFN; K and V use all rows; the
    other rows come from the caches, which are then updated."""
    lin = lambda name, h: F.linear(h, W[name + ".weight"], W[name + ".bias"])
    d = W["pos_embed.proj.bias"].shape[0]
    bsz, c_in, lat = x.shape[0], x.shape[1], x.shape[2]
    p = 2
    g = lat // p
    f = torch.exp(-math.log(10000.0) * torch.arange(128, dtype=torch.float64) / 128.0)
    ang = t.double()[:, None] * f[None]
    temb = torch.cat([torch.cos(ang), torch.sin(ang)], dim=1).float()
    e = lin("adaln_single.emb.timestep_embedder.linear_2",
            F.silu(lin("adaln_single.emb.timestep_embedder.linear_1", temb)))  # (B, d)
    m = lin("adaln_single.linear", F.silu(e)).view(bsz, 6, d)
    y = lin("caption_projection.linear_2", gelu(lin("caption_projection.linear_1", text)))[None]
    X = F.conv2d(x, W["pos_embed.proj.weight"], W["pos_embed.proj.bias"], stride=p)
    if pe is None:
        pe = pos_embed(d, g)
    X = X.reshape(bsz, d, g * g).transpose(1, 2) + pe
    S = slice(None) if ctr is None or ctr["kept"] is None else ctr["kept"]
    for i in range(depth):
        b = f"transformer_blocks.{i}."
        mod = W[b + "scale_shift_table"][None] + m
        sh1, sc1, g1, sh2, sc2, g2 = [mod[:, r][:, None] for r in range(6)]
        cache = ctr["caches"][i] if ctr is not None else [None, None, None]
        A = layer_norm(X) * (1 + sc1) + sh1
        att = attention(lin(b + "attn1.to_q", A[:, S]), lin(b + "attn1.to_k", A),
                        lin(b + "attn1.to_v", A), heads)
        H = X[:, S] + g1 * lin(b + "attn1.to_out.0", att)
        ca = attention(lin(b + "attn2.to_q", H), lin(b + "attn2.to_k", y),
                       lin(b + "attn2.to_v", y), heads)
        H2 = H + lin(b + "attn2.to_out.0", ca)
        Fm = layer_norm(H2) * (1 + sc2) + sh2
        H3 = H2 + g2 * lin(b + "ff.net.2", gelu(lin(b + "ff.net.0.proj", Fm)))
        if ctr is not None:
            cache[0], cache[1] = merge(cache[0], H, S), merge(cache[1], H2, S)
            cache[2] = merge(cache[2], H3, S)
            X = cache[2]
        else:
            X = H3
    fin = W["scale_shift_table"][None] + e[:, None]
    shf, scf = fin[:, 0][:, None], fin[:, 1][:, None]
    O = lin("proj_out", layer_norm(X) * (1 + scf) + shf)  # (B, N, p*p*C_out)
    c_out = O.shape[2] // (p * p)
    O = O.view(bsz, g, g, p, p, c_out)
    eps = torch.einsum("bhwpqc->bchpwq", O).reshape(bsz, c_out, lat, lat)
    return eps[:, :c_in]


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
    W = load_safetensors(f"{a.dir}/weights.safetensors")
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
    """docs/disc.md#ctr-selection CTR step against the C capture: a dense step at (x, t) fills the caches, a
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
