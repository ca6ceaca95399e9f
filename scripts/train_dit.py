#!/usr/bin/python3
"""Trains trained-small, the DiSC capture's shipped DiT (docs/models.md "trained-small").

A PixArt-style DiT (capture/disc/dit.c config "trained-small": depth 6, hidden 256, 4 heads,
patch 2, 4 latent channels, no text conditioning) trained as an eps-prediction denoiser on
the schedule of docs/disc.md#sampler, on natural photographs that Debian packages install
(configs/models/trained-small.manifest lists them with their sha256), in the latent space of
a fixed linear encoder fitted on the same photographs.

Encoder [decision]: 8x8 RGB patches (values in [-1, 1]) minus their mean, projected on the 4
leading principal components of the patches of every training image at every scale (both
flips), each channel divided by its standard deviation, so a latent is a 4-channel image at
1/8 of the resolution (channel 0 ~ brightness) with unit variance per channel. The decoder
is the transpose: patch = mean + P (z * std). Stored in configs/models/trained-small.encoder
.safetensors (F32: mean (192), basis (192, 4), std (4)).

Data: each photograph resized (PIL Lanczos) so its shorter side is 256, 384, 512 and 768 px
(scales above its own size are skipped), cropped to a multiple of 8, encoded with and
without a horizontal flip. A training sample is a random crop of one such latent map, 16x16
(128 px) or 32x32 (256 px); the position embedding is the matching window of a 32x32-token
grid at a random offset, so every position a 512 px capture uses is trained. All random
choices come from numpy's default_rng(seed) and torch.manual_seed(seed).

Caption: none. The model's caption input is a fixed null caption, 4 tokens x 32 zeros; the
capture gives trained-small the same zeros when no --text is given.

Objective: t uniform in 0..999, x_t = alpha_t x0 + sigma_t eps, loss = mean((eps_theta(x_t,
t)[:4] - eps)^2) (--min-snr G: each sample's mean weighted by min(SNR_t, G) / SNR_t, SNR_t =
alpha_t^2 / sigma_t^2; a variant, off in the shipped recipe; the logged loss and the
metadata's loss_ema are then the weighted loss). AdamW (lr 5e-4 after a 50-step
linear warm-up, then constant; weight decay 0), gradient norm clipped at 1; every third
step is a 256 px batch of 2, the others 128 px batches of 8. The shipped weights are an EMA
of the parameters (decay min(D, (1 + k) / (10 + k)) at step k, D = --ema-decay, 0.99 by
default), written as F16 safetensors with a .sha256 beside it. Nothing depends on the total
step count, so the checkpoint written at step k equals a run of k steps.

Deterministic: one fixed thread count (--threads, default 1), torch.use_deterministic_
algorithms(True), fixed seeds; the same software gives the same bytes.

usage: /usr/bin/python3 scripts/train_dit.py [--out DIR] [--steps K] [--threads N] [--seed S]
                                           [--scales 256,384,512,768] [--ema-decay D]
                                           [--min-snr G] [--keep-every K]
       /usr/bin/python3 scripts/train_dit.py --check         (verify the manifest's files)
       /usr/bin/python3 scripts/train_dit.py --decode LATENT.f32 --size PX OUT.png
       /usr/bin/python3 scripts/train_dit.py --decode TRACE.atr [--dense] OUT.png
                                           (preview of a DiSC trace's final latent)
Exit 3 when a manifest file is missing or differs (install them: scripts/deps.sh train).
"""
import argparse
import hashlib
import json
import math
import os
import struct
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODELS = os.path.join(ROOT, "configs", "models")
MANIFEST = os.path.join(MODELS, "trained-small.manifest")
SCALES = (256, 384, 512, 768)
DEPTH, HIDDEN, HEADS, CAPTION, TEXT_TOKENS, C_IN, C_OUT, PATCH = 6, 256, 4, 32, 4, 4, 8, 2
GRID_MAX = 32  # position-embedding grid trained (a 512 px capture)


def fail(msg, code=3):
    print(f"train_dit: {msg}", file=sys.stderr)
    sys.exit(code)


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def read_manifest():
    """[(package, path, sha256)] from the manifest ('package path sha256' lines)."""
    rows = []
    with open(MANIFEST) as f:
        for ln, line in enumerate(f, 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            parts = line.split()
            if len(parts) != 3 or len(parts[2]) != 64:
                fail(f"{MANIFEST}:{ln}: need 'package path sha256'")
            rows.append(tuple(parts))
    return rows


def check_manifest(rows):
    bad = 0
    for pkg, path, sha in rows:
        if not os.path.exists(path):
            print(f"train_dit: {path} missing (Debian package {pkg}; scripts/deps.sh train)",
                  file=sys.stderr)
            bad += 1
        elif sha256_file(path) != sha:
            print(f"train_dit: {path} differs from {MANIFEST} (sha256)", file=sys.stderr)
            bad += 1
    if bad:
        fail(f"{bad} of {len(rows)} training images missing or different")


def load_rgb(path):
    from PIL import Image
    im = Image.open(path)
    im.load()
    return im.convert("RGB")


def scaled_arrays(rows, scales=SCALES):
    """Per image, per scale, per flip: (H, W, 3) float32 in [-1, 1], H and W multiples of 8."""
    from PIL import Image
    out = []
    for _, path, _ in rows:
        im = load_rgb(path)
        w, h = im.size
        for s in scales:
            if s > min(w, h):
                continue
            nw, nh = round(w * s / min(w, h)), round(h * s / min(w, h))
            r = im.resize((nw, nh), Image.LANCZOS)
            a = np.asarray(r, dtype=np.float32) / 127.5 - 1.0
            a = a[: nh // 8 * 8, : nw // 8 * 8]
            out.append(a)
            out.append(a[:, ::-1].copy())
    return out


def patches(a):
    """(H, W, 3) -> (H/8, W/8, 192): 8x8 patches, channel-last within a patch (y, x, c)."""
    h, w = a.shape[0] // 8, a.shape[1] // 8
    return a.reshape(h, 8, w, 8, 3).transpose(0, 2, 1, 3, 4).reshape(h, w, 192)


def fit_encoder(arrays):
    X = np.concatenate([patches(a).reshape(-1, 192) for a in arrays]).astype(np.float64)
    mean = X.mean(axis=0)
    Xc = X - mean
    cov = Xc.T @ Xc / len(Xc)
    val, vec = np.linalg.eigh(cov)
    P = vec[:, ::-1][:, :C_IN].copy()
    for j in range(C_IN):  # sign: the largest |entry| of each component positive
        if P[np.argmax(np.abs(P[:, j])), j] < 0:
            P[:, j] = -P[:, j]
    std = np.sqrt(np.maximum((Xc @ P).var(axis=0), 1e-12))
    explained = val[::-1][:C_IN].sum() / val.sum()
    return mean.astype(np.float32), P.astype(np.float32), std.astype(np.float32), explained


def encode(a, enc):
    mean, P, std = enc
    z = (patches(a) - mean) @ P / std  # (h, w, 4)
    return np.ascontiguousarray(z.transpose(2, 0, 1), dtype=np.float32)


def decode(z, enc):
    """(4, h, w) latent -> (8h, 8w, 3) uint8."""
    mean, P, std = enc
    c, h, w = z.shape
    p = (z.transpose(1, 2, 0) * std) @ P.T + mean  # (h, w, 192)
    a = p.reshape(h, w, 8, 8, 3).transpose(0, 2, 1, 3, 4).reshape(h * 8, w * 8, 3)
    return np.clip((a + 1.0) * 127.5 + 0.5, 0, 255).astype(np.uint8)


# ---- safetensors ----

def write_safetensors(path, tensors, dtype, meta):
    header, blobs, off = {"__metadata__": meta}, [], 0
    np_dt = {"F32": "<f4", "F16": "<f2"}[dtype]
    for name in sorted(tensors):
        a = np.ascontiguousarray(tensors[name], dtype=np.float32).astype(np_dt)
        header[name] = {"dtype": dtype, "shape": list(a.shape),
                        "data_offsets": [off, off + a.nbytes]}
        blobs.append(a.tobytes())
        off += a.nbytes
    h = json.dumps(header, sort_keys=True).encode()
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


def read_safetensors(path):
    with open(path, "rb") as f:
        raw = f.read()
    (hl,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8: 8 + hl])
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        dt = {"F32": "<f4", "F16": "<f2"}[info["dtype"]]
        b, e = info["data_offsets"]
        out[name] = np.frombuffer(raw[8 + hl + b: 8 + hl + e], dtype=dt).reshape(
            info["shape"]).astype(np.float32)
    return out


def write_text(path, text):
    tmp = path + ".partial"
    with open(tmp, "w") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


# ---- model ----

def init_weights(torch):
    """PixArt-style initialisation: Xavier-uniform linears, zero biases, N(0, 0.02) timestep
    MLP, scale-shift tables N(0, 1/d), zero adaLN-single output, cross-attention output and
    final projection (so the untrained model predicts eps = 0)."""
    d = HIDDEN
    W = {}

    def lin(name, o, i, zero=False, std=None):
        w = torch.empty(o, i)
        if zero:
            torch.nn.init.zeros_(w)
        elif std is not None:
            torch.nn.init.normal_(w, std=std)
        else:
            torch.nn.init.xavier_uniform_(w)
        W[name + ".weight"], W[name + ".bias"] = w, torch.zeros(o)

    w = torch.empty(d, C_IN * PATCH * PATCH)
    torch.nn.init.xavier_uniform_(w)
    W["pos_embed.proj.weight"] = w.view(d, C_IN, PATCH, PATCH)
    W["pos_embed.proj.bias"] = torch.zeros(d)
    lin("adaln_single.emb.timestep_embedder.linear_1", d, 256, std=0.02)
    lin("adaln_single.emb.timestep_embedder.linear_2", d, d, std=0.02)
    lin("adaln_single.linear", 6 * d, d, zero=True)
    lin("caption_projection.linear_1", d, CAPTION, std=0.02)
    lin("caption_projection.linear_2", d, d, std=0.02)
    for i in range(DEPTH):
        b = f"transformer_blocks.{i}."
        W[b + "scale_shift_table"] = torch.randn(6, d) / math.sqrt(d)
        for n in ("attn1.to_q", "attn1.to_k", "attn1.to_v", "attn1.to_out.0", "attn2.to_q",
                  "attn2.to_k", "attn2.to_v"):
            lin(b + n, d, d)
        lin(b + "attn2.to_out.0", d, d, zero=True)
        lin(b + "ff.net.0.proj", 4 * d, d)
        lin(b + "ff.net.2", d, 4 * d)
    W["scale_shift_table"] = torch.randn(2, d) / math.sqrt(d)
    lin("proj_out", PATCH * PATCH * C_OUT, d, zero=True)
    return W


def schedule():
    i = np.arange(1000, dtype=np.float64)
    beta = 1e-4 + (0.02 - 1e-4) * i / 999.0
    abar = np.cumprod(1.0 - beta)
    return np.sqrt(abar), np.sqrt(1.0 - abar)


def build_latents(rows, log, scales=SCALES):
    t0 = time.time()
    arrays = scaled_arrays(rows, scales)
    mean, P, std, explained = fit_encoder(arrays)
    enc = (mean, P, std)
    lats = [encode(a, enc) for a in arrays]
    log(f"{len(rows)} images, {len(arrays)} scaled/flipped maps, PCA explains "
        f"{100 * explained:.1f}% of patch variance, latent std per channel "
        f"{[round(float(x), 3) for x in std]} ({time.time() - t0:.0f} s)")
    return enc, lats, explained


def sample_batch(rng, lats, lat, n):
    x = np.empty((n, C_IN, lat, lat), dtype=np.float32)
    for k in range(n):
        while True:
            z = lats[rng.integers(len(lats))]
            if z.shape[1] >= lat and z.shape[2] >= lat:
                break
        y0 = rng.integers(z.shape[1] - lat + 1)
        x0 = rng.integers(z.shape[2] - lat + 1)
        x[k] = z[:, y0: y0 + lat, x0: x0 + lat]
    return x


def train(a):
    import torch
    import torch.nn.functional as F
    sys.path.insert(0, os.path.join(ROOT, "bench", "peers"))
    from dit_torch import forward, pos_embed

    torch.set_num_threads(a.threads)
    torch.use_deterministic_algorithms(True)
    torch.manual_seed(a.seed)
    rng = np.random.default_rng(a.seed)
    os.makedirs(a.out, exist_ok=True)

    def log(msg):
        print(f"train_dit: {msg}", flush=True)

    rows = read_manifest()
    check_manifest(rows)
    enc, lats, explained = build_latents(rows, log, a.scales)
    enc_path = os.path.join(a.out, "trained-small.encoder.safetensors")
    write_safetensors(enc_path, {"mean": enc[0], "basis": enc[1], "std": enc[2]}, "F32",
                      {"format": "acceltrace-pca-encoder", "patch": "8", "channels": "4",
                       "explained_variance": f"{explained:.6f}",
                       "manifest_sha256": sha256_file(MANIFEST)})
    W = init_weights(torch)
    for v in W.values():
        v.requires_grad_(True)
    names = sorted(W)
    ema = {k: W[k].detach().clone() for k in names}
    pe_full = pos_embed(HIDDEN, GRID_MAX).view(GRID_MAX, GRID_MAX, HIDDEN)
    alpha, sigma = schedule()
    alpha_t, sigma_t = torch.from_numpy(alpha).float(), torch.from_numpy(sigma).float()
    text = torch.zeros(TEXT_TOKENS, CAPTION)
    opt = torch.optim.AdamW([W[k] for k in names], lr=a.lr, weight_decay=0.0)
    n_param = sum(v.numel() for v in W.values())
    log(f"depth {DEPTH}, hidden {HIDDEN}, heads {HEADS}, {n_param} parameters, {a.steps} "
        f"steps on {a.threads} thread(s), seed {a.seed}")
    t_start, avg = time.time(), None
    for step in range(1, a.steps + 1):
        lat, bsz = (32, 2) if step % 3 == 0 else (16, 8)
        g = lat // PATCH
        x0 = torch.from_numpy(sample_batch(rng, lats, lat, bsz))
        oy, ox = rng.integers(GRID_MAX - g + 1), rng.integers(GRID_MAX - g + 1)
        pe = pe_full[oy: oy + g, ox: ox + g].reshape(g * g, HIDDEN)
        t = torch.from_numpy(rng.integers(0, 1000, bsz))
        noise = torch.from_numpy(rng.standard_normal(x0.shape).astype(np.float32))
        xt = alpha_t[t][:, None, None, None] * x0 + sigma_t[t][:, None, None, None] * noise
        for grp in opt.param_groups:
            grp["lr"] = a.lr * min(1.0, step / 50.0)
        if a.min_snr:  # Hang et al. 2023: per-sample weight min(SNR_t, G) / SNR_t
            snr = (alpha_t[t] / sigma_t[t]) ** 2
            per = ((forward(W, xt, text, t, HEADS, DEPTH, pe) - noise) ** 2).mean((1, 2, 3))
            loss = (per * torch.clamp(snr, max=a.min_snr) / snr).mean()
        else:
            loss = F.mse_loss(forward(W, xt, text, t, HEADS, DEPTH, pe), noise)
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_([W[k] for k in names], 1.0)
        opt.step()
        decay = min(a.ema_decay, (1.0 + step) / (10.0 + step))
        with torch.no_grad():
            for k in names:
                ema[k].mul_(decay).add_(W[k].detach(), alpha=1.0 - decay)
        avg = loss.item() if avg is None else 0.95 * avg + 0.05 * loss.item()
        if step % 10 == 0:
            el = time.time() - t_start
            log(f"step {step}, loss {loss.item():.4f} (EMA 0.95 {avg:.4f}), {el:.0f} s, "
                f"{el / step:.2f} s/step")
        if step % a.save_every == 0 or step == a.steps:
            save_weights(a, ema, step, avg, enc_path)
        if a.keep_every and step % a.keep_every == 0:
            src = os.path.join(a.out, "trained-small.safetensors")
            with open(src, "rb") as f:
                blob = f.read()
            with open(os.path.join(a.out, f"trained-small.step{step}.safetensors"), "wb") as f:
                f.write(blob)
    return 0


def save_weights(a, ema, step, avg, enc_path):
    path = os.path.join(a.out, "trained-small.safetensors")
    meta = {"format": "pt", "model": "trained-small", "steps": str(step), "seed": str(a.seed),
            "threads": str(a.threads), "loss_ema": f"{avg:.5f}",
            "manifest_sha256": sha256_file(MANIFEST),
            "encoder_sha256": sha256_file(enc_path),
            "trainer": "scripts/train_dit.py"}
    # a variant's recipe is named; the shipped recipe's file keeps the keys it was made with
    if a.ema_decay != 0.99:
        meta["ema_decay"] = str(a.ema_decay)
    if a.min_snr:
        meta["min_snr"] = str(a.min_snr)
    if tuple(a.scales) != SCALES:
        meta["scales"] = ",".join(map(str, a.scales))
    write_safetensors(path, {k: v.numpy() for k, v in ema.items()}, "F16", meta)
    write_text(path + ".sha256", f"{sha256_file(path)}  trained-small.safetensors\n")
    print(f"train_dit: step {step}: wrote {path} (+ .sha256)", flush=True)


def decode_cmd(a):
    from PIL import Image
    E = read_safetensors(os.path.join(MODELS, "trained-small.encoder.safetensors"))
    enc = (E["mean"], E["basis"], E["std"])
    lat = a.size // 8
    if a.decode.endswith(".atr"):  # the final latent of a DiSC trace (Summary)
        sys.path.insert(0, os.path.join(ROOT, "python"))
        import acceltrace
        t = acceltrace.open(a.decode)
        lat = t.header.disc.latent_w
        summ = next(t.records("summary")).msg.disc
        raw = np.array(summ.latent_dense if a.dense else summ.latent, dtype=np.float32)
    else:
        raw = np.fromfile(a.decode, dtype="<f4")
    if raw.size != C_IN * lat * lat:
        fail(f"{a.decode}: {raw.size} floats, need {C_IN * lat * lat} (4 x {lat} x {lat})")
    img = decode(raw.reshape(C_IN, lat, lat), enc)
    tmp = a.png + ".partial"
    Image.fromarray(img).save(tmp, format="PNG")
    os.replace(tmp, a.png)
    print(f"train_dit: wrote {a.png}")
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=MODELS)
    ap.add_argument("--steps", type=int, default=5000)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--seed", type=int, default=14)
    ap.add_argument("--lr", type=float, default=5e-4)
    ap.add_argument("--save-every", type=int, default=25)
    ap.add_argument("--keep-every", type=int, default=0,
                    help="also keep a copy of the weights every K steps (step K in the name)")
    ap.add_argument("--ema-decay", type=float, default=0.99,
                    help="decay of the parameter EMA that is written (default 0.99)")
    ap.add_argument("--min-snr", type=float, default=0.0,
                    help="weight each sample's loss by min(SNR, G) / SNR (default 0: off)")
    ap.add_argument("--scales", default=",".join(map(str, SCALES)),
                    help="shorter sides (px) the photographs are resized to (default: the "
                         "shipped recipe's 256,384,512,768; docs/models.md for 128,256)")
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--decode", default=None)
    ap.add_argument("--size", type=int, default=256)
    ap.add_argument("--dense", action="store_true", help="--decode TRACE: the dense run's latent")
    ap.add_argument("png", nargs="?")
    a = ap.parse_args()
    try:
        scales = tuple(int(x) for x in a.scales.split(","))
        assert scales and min(scales) >= 128
        a.scales = scales
    except (ValueError, AssertionError):
        print(f"train_dit: bad --scales '{a.scales}' (comma-separated sizes >= 128 px)",
              file=sys.stderr)
        return 2
    if not 0.0 < a.ema_decay < 1.0:
        print(f"train_dit: bad --ema-decay {a.ema_decay} (need 0 < D < 1)", file=sys.stderr)
        return 2
    if a.min_snr < 0.0:
        print(f"train_dit: bad --min-snr {a.min_snr} (need G >= 0; 0 is off)", file=sys.stderr)
        return 2
    if a.check:
        check_manifest(read_manifest())
        print("train_dit: all training images present and unchanged")
        return 0
    if a.decode:
        if not a.png:
            fail("--decode needs an output PNG", 2)
        return decode_cmd(a)
    return train(a)


if __name__ == "__main__":
    sys.exit(main())
