#!/usr/bin/python3
"""PyTorch reference of the capture's class-conditional DiT (docs/models.md, "DiT-XL/2").

Rebuilds DiT (Peebles & Xie 2023; the module structure of facebookresearch/DiT models.py:
TimestepEmbedder, LabelEmbedder, DiTBlock with adaLN-Zero, FinalLayer, unpatchify) in plain
PyTorch from the safetensors file written by `build/bench/bench_disc --model dit-micro
--forward-only --dump DIR` (original DiT tensor names, F32), runs one forward pass on the
same latent (DIR/latent.f32), timestep (DIR/t.txt) and class label 207, and compares the
eps channels with the C forward (DIR/eps.f32).

usage: /usr/bin/python3 bench/peers/dit_class_torch.py DIR [--label 207]
Prints max|eps_torch - eps_C| / max|eps_C| and exits 1 above 1e-4.
"""
import argparse
import json
import math
import os
import struct
import sys

import numpy as np
import torch
import torch.nn.functional as F


def load_safetensors(path):
    with open(path, "rb") as f:
        raw = f.read()
    (hl,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8 : 8 + hl])
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        if info["dtype"] != "F32":
            raise SystemExit(f"dit_class_torch: tensor '{name}' is {info['dtype']}, expected F32")
        b, e = info["data_offsets"]
        a = np.frombuffer(raw[8 + hl + b : 8 + hl + e], dtype="<f4").reshape(info["shape"])
        out[name] = torch.from_numpy(a.copy())
    return out


def timestep_embedding(t, dim=256, max_period=10000):
    # TimestepEmbedder.timestep_embedding: cos ++ sin of t * exp(-log(P) i / half)
    half = dim // 2
    freqs = torch.exp(-math.log(max_period) * torch.arange(half, dtype=torch.float64) / half)
    args = torch.tensor([t], dtype=torch.float64)[:, None] * freqs[None]
    return torch.cat([torch.cos(args), torch.sin(args)], dim=-1).float()


def sincos_1d(dim, pos):
    omega = np.arange(dim // 2, dtype=np.float64) / (dim / 2.0)
    omega = 1.0 / 10000**omega
    out = np.einsum("m,d->md", pos.reshape(-1), omega)
    return np.concatenate([np.sin(out), np.cos(out)], axis=1)


def sincos_2d(dim, g):
    # get_2d_sincos_pos_embed: meshgrid(w, h), first half from grid[0] (x), second from y
    gw, gh = np.meshgrid(np.arange(g, dtype=np.float32), np.arange(g, dtype=np.float32))
    return np.concatenate([sincos_1d(dim // 2, gw), sincos_1d(dim // 2, gh)], axis=1)


def modulate(x, shift, scale):
    return x * (1 + scale) + shift


def forward(w, x, t, label, heads):
    d = w["x_embedder.proj.bias"].shape[0]
    p = w["x_embedder.proj.weight"].shape[2]
    c_in = x.shape[0]
    h = x.shape[1]
    g = h // p
    n = g * g
    # x_embedder (conv p x p stride p) + pos_embed
    tok = F.conv2d(x[None], w["x_embedder.proj.weight"], w["x_embedder.proj.bias"], stride=p)
    tok = tok.flatten(2).transpose(1, 2)[0]  # (N, d)
    tok = tok + torch.from_numpy(sincos_2d(d, g)).float()
    te = timestep_embedding(t)
    te = F.linear(F.silu(F.linear(te, w["t_embedder.mlp.0.weight"], w["t_embedder.mlp.0.bias"])),
                  w["t_embedder.mlp.2.weight"], w["t_embedder.mlp.2.bias"])
    c = te + w["y_embedder.embedding_table.weight"][label][None]
    depth = 1 + max(int(k.split(".")[1]) for k in w if k.startswith("blocks."))
    dh = d // heads
    for i in range(depth):
        b = f"blocks.{i}."
        mod = F.linear(F.silu(c), w[b + "adaLN_modulation.1.weight"], w[b + "adaLN_modulation.1.bias"])
        sh1, sc1, g1, sh2, sc2, g2 = mod.chunk(6, dim=1)
        a = modulate(F.layer_norm(tok, (d,), eps=1e-6), sh1, sc1)
        qkv = F.linear(a, w[b + "attn.qkv.weight"], w[b + "attn.qkv.bias"])
        qkv = qkv.reshape(n, 3, heads, dh).permute(1, 2, 0, 3)  # (3, h, N, dh)
        q, k, v = qkv[0], qkv[1], qkv[2]
        att = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(dh), dim=-1) @ v
        att = att.transpose(0, 1).reshape(n, d)
        tok = tok + g1 * F.linear(att, w[b + "attn.proj.weight"], w[b + "attn.proj.bias"])
        f = modulate(F.layer_norm(tok, (d,), eps=1e-6), sh2, sc2)
        f = F.gelu(F.linear(f, w[b + "mlp.fc1.weight"], w[b + "mlp.fc1.bias"]), approximate="tanh")
        tok = tok + g2 * F.linear(f, w[b + "mlp.fc2.weight"], w[b + "mlp.fc2.bias"])
    fm = F.linear(F.silu(c), w["final_layer.adaLN_modulation.1.weight"],
                  w["final_layer.adaLN_modulation.1.bias"])
    sh, sc = fm.chunk(2, dim=1)
    o = F.linear(modulate(F.layer_norm(tok, (d,), eps=1e-6), sh, sc),
                 w["final_layer.linear.weight"], w["final_layer.linear.bias"])
    c_out = o.shape[1] // (p * p)
    # unpatchify: (h, w, p, q, c) -> (c, h p, w q)
    o = o.reshape(g, g, p, p, c_out).permute(4, 0, 2, 1, 3).reshape(c_out, h, h)
    return o[:c_in]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--label", type=int, default=207)
    ap.add_argument("--heads", type=int, default=4)
    a = ap.parse_args()
    torch.set_num_threads(1)
    w = load_safetensors(os.path.join(a.dir, "weights.safetensors"))
    c_in = w["x_embedder.proj.weight"].shape[1]
    lat = np.fromfile(os.path.join(a.dir, "latent.f32"), dtype="<f4")
    h = int(round(math.sqrt(lat.size / c_in)))
    x = torch.from_numpy(lat.reshape(c_in, h, h).copy())
    t = float(open(os.path.join(a.dir, "t.txt")).read())
    eps_c = np.fromfile(os.path.join(a.dir, "eps.f32"), dtype="<f4").reshape(c_in, h, h)
    with torch.no_grad():
        eps_t = forward(w, x, t, a.label, a.heads).double().numpy()
    rel = np.abs(eps_t - eps_c).max() / np.abs(eps_c).max()
    print(f"dit_class_torch: max|eps_torch - eps_C| / max|eps_C| = {rel:.3g} "
          f"(max|eps_C| = {np.abs(eps_c).max():.4g})")
    sys.exit(0 if rel <= 1e-4 else 1)


if __name__ == "__main__":
    main()
