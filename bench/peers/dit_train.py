#!/usr/bin/python3
"""Trains the DiSC capture's DiT as an eps-prediction denoiser, to measure CTR quality on a
model that denoises (docs/models.md "Seeded-model quality").

The seeded weights of docs/disc.md#weights are an untrained initialisation, so their eps is not
a noise estimate and the sampler drives latents far from unit scale. This script starts from
those weights (DIR/weights.safetensors and DIR/text.f32 as written by
`build/bench/bench_disc --dump DIR --forward-only`), trains them with the standard DDPM
objective on synthetic latents, and writes DIR/trained.safetensors (F32, diffusers names),
which `acceltrace capture disc --weights` loads.

Data [decision]: 4-channel Gaussian random fields on the latent grid with power spectrum
~ 1/(1 + (f/f0)^2)^2 (f0 = 2 cycles per image), channels mixed by a fixed random 4x4 matrix,
each sample scaled to unit standard deviation; the caption is the one text embedding of DIR.
Objective: t uniform in 0..999, x_t = alpha_t x0 + sigma_t eps with the schedule of docs/disc.md#sampler,
loss = mean((eps_theta(x_t, t)[:4] - eps)^2), AdamW (lr 2e-4 unless --lr, weight decay 0),
gradient norm clipped at 1, batch B. --init FILE continues from an earlier checkpoint.

usage: /usr/bin/python3 bench/peers/dit_train.py DIR [--minutes M] [--batch B] [--lat L]
                                                 [--threads N] [--seed S] [--lr LR]
                                                 [--init FILE]
"""
import argparse
import math
import os
import struct
import json
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from dit_torch import forward, load_safetensors, pos_embed  # noqa: E402


def schedule():
    i = np.arange(1000, dtype=np.float64)
    beta = 1e-4 + (0.02 - 1e-4) * i / 999.0
    abar = np.cumprod(1.0 - beta)
    return np.sqrt(abar), np.sqrt(1.0 - abar)


def make_fields(rng, n, c, lat, mix):
    """Gaussian random fields (see the module text), (n, c, lat, lat) float32."""
    fy = np.fft.fftfreq(lat)[:, None] * lat
    fx = np.fft.fftfreq(lat)[None, :] * lat
    amp = 1.0 / (1.0 + (fx * fx + fy * fy) / 4.0)
    white = rng.standard_normal((n, c, lat, lat))
    z = np.fft.ifft2(np.fft.fft2(white) * amp).real
    z = np.einsum("ij,njyx->niyx", mix, z)
    z /= z.reshape(n, -1).std(axis=1)[:, None, None, None]
    return z.astype(np.float32)


def save_safetensors(path, W):
    header, blobs, off = {}, [], 0
    for name in sorted(W):
        a = W[name].detach().contiguous().numpy().astype("<f4")
        header[name] = {"dtype": "F32", "shape": list(a.shape), "data_offsets": [off, off + a.nbytes]}
        blobs.append(a.tobytes())
        off += a.nbytes
    h = json.dumps(header).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    tmp = path + ".partial"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--minutes", type=float, default=30.0)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--lat", type=int, default=16, help="latent side (image size / 8)")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--heads", type=int, default=6)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--lr", type=float, default=2e-4)
    ap.add_argument("--init", default=None, help="start from this checkpoint "
                    "(default DIR/weights.safetensors, the seeded weights)")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    rng = np.random.default_rng(a.seed)
    W = load_safetensors(a.init or f"{a.dir}/weights.safetensors")
    for v in W.values():
        v.requires_grad_(True)
    depth = 1 + max(int(k.split(".")[1]) for k in W if k.startswith("transformer_blocks."))
    d = W["pos_embed.proj.bias"].shape[0]
    dc = W["caption_projection.linear_1.weight"].shape[1]
    c_in = W["pos_embed.proj.weight"].shape[1]
    text = torch.from_numpy(np.fromfile(f"{a.dir}/text.f32", dtype="<f4").reshape(-1, dc).copy())
    pe = pos_embed(d, a.lat // 2)
    alpha, sigma = schedule()
    alpha_t, sigma_t = torch.from_numpy(alpha).float(), torch.from_numpy(sigma).float()
    mix = rng.standard_normal((c_in, c_in)) / math.sqrt(c_in) + np.eye(c_in)
    opt = torch.optim.AdamW(list(W.values()), lr=a.lr, weight_decay=0.0)
    t_end = time.time() + 60.0 * a.minutes
    step, ema = 0, None
    print(f"dit_train: depth {depth}, d {d}, latent {c_in}x{a.lat}x{a.lat}, batch {a.batch}, "
          f"{a.minutes} min on {a.threads} thread(s)", flush=True)
    while time.time() < t_end:
        x0 = torch.from_numpy(make_fields(rng, a.batch, c_in, a.lat, mix))
        t = torch.randint(0, 1000, (a.batch,))
        noise = torch.randn_like(x0)
        xt = alpha_t[t][:, None, None, None] * x0 + sigma_t[t][:, None, None, None] * noise
        loss = F.mse_loss(forward(W, xt, text, t, a.heads, depth, pe), noise)
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(list(W.values()), 1.0)
        opt.step()
        step += 1
        ema = loss.item() if ema is None else 0.98 * ema + 0.02 * loss.item()
        if step % 50 == 0:
            print(f"dit_train: step {step}, loss (EMA 0.98) {ema:.4f}", flush=True)
        if step % 500 == 0:
            save_safetensors(f"{a.dir}/trained.safetensors", W)
    save_safetensors(f"{a.dir}/trained.safetensors", W)
    print(f"dit_train: {step} steps, final loss (EMA) {ema:.4f} -> {a.dir}/trained.safetensors")
    return 0


if __name__ == "__main__":
    sys.exit(main())
