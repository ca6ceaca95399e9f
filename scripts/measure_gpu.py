#!/usr/bin/python3
"""Measure end-to-end GPU times for the GPU model's validation set (docs/models.md#gpu-baselines).

Times, with CUDA events (median of --iters after warm-up), in FP16:
  - one denoising step of the project's PyTorch PixArt transformer (python/acceltrace
    capture/dit_model.py, seeded weights) at each --image-sizes, batch 2 (classifier-free
    guidance), the caption's cross-attention K/V computed once per run as that model does;
  - one layer's decode attention (torch scaled_dot_product_attention, one query per
    sequence, grouped-query when torch supports it) at each --contexts.
Writes DIR/validation-measured.csv with the columns of configs/gpu/validation.csv (id,
workload, gpu, condition, measured, unit, source, quote, notes): source "measured here"
with the command line, ready to be appended to the validation set; `acceltrace validate
gpu --set DIR/validation-measured.csv -o V` compares the model with them.

usage: /usr/bin/python3 scripts/measure_gpu.py --gpu-preset NAME [--device cuda]
         [--model pixart-sigma-xl] [--image-sizes 512,1024,2048] [--contexts 32768,131072]
         [--heads 32] [--kv-heads 8] [--head-dim 128] [--batch 1] [--iters 20] -o DIR
--gpu-preset names the preset of the board measured (a100-pcie-80gb, ..., h200).
With --device cpu the same code runs on the CPU with wall-clock timing, to check the
script; its rows say they are not GPU measurements. Exit 2 on bad usage, 3 when the
device is missing.
"""
import argparse
import csv
import io
import os
import statistics
import sys
import time

PRESETS = ("a100-pcie-80gb", "a100-pcie-40gb", "a100-sxm-80gb", "h100-pcie", "h100-sxm", "h200")
COLUMNS = ["id", "workload", "gpu", "condition", "measured", "unit", "source", "quote", "notes"]


def timer(dev, torch):
    """fn -> seconds of one call (median of iters after warm-up)."""
    def run(fn, iters):
        for _ in range(2):
            fn()
        if dev.type == "cuda":
            torch.cuda.synchronize()
        ts = []
        for _ in range(iters):
            if dev.type == "cuda":
                a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                a.record()
                fn()
                b.record()
                b.synchronize()
                ts.append(a.elapsed_time(b) * 1e-3)
            else:
                t0 = time.perf_counter()
                fn()
                ts.append(time.perf_counter() - t0)
        return statistics.median(ts)
    return run


def dit_steps(a, torch, dev, run):
    """One denoising step of the PixArt transformer per image size: rows."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
    import numpy as np
    from acceltrace.capture import dit_model
    rows = []
    dtype = torch.float16 if dev.type == "cuda" else torch.float32
    for px in a.image_sizes:
        cfg = dit_model.DitConfig(a.model, image=px)
        model = dit_model.Dit(cfg, dit_model.seeded_weights(cfg, 0), str(dev), dtype)
        rng = np.random.default_rng(0)
        texts = [rng.standard_normal((cfg.text_tokens, cfg.caption), dtype=np.float32)
                 for _ in range(2)]
        model.set_text(texts)
        x = rng.standard_normal((cfg.c_in, cfg.lat, cfg.lat), dtype=np.float32)
        state = dit_model.DitState(cfg, 2, False, False, dev)
        with torch.no_grad():
            s = run(lambda: model.forward(x, 500.0, state), a.iters)
        rows.append({
            "workload": a.model, "unit": "ms", "measured": "%.4g" % (s * 1e3),
            "condition": "image_size=%d;steps=1;batch=1;cfg=1;text_tokens=%d;runtime=eager;per=step"
                         % (px, cfg.text_tokens),
            "quote": "median of %d CUDA-event timings of one forward (batch 2)" % a.iters,
            "notes": "project PyTorch transformer (python/acceltrace/capture/dit_model.py), "
                     "seeded weights, %s; caption K/V once per run" % ("fp16" if dev.type == "cuda" else "fp32"),
        })
        del model
    return rows


def decode_attention(a, torch, dev, run):
    """One layer's decode attention per context: rows."""
    import torch.nn.functional as F
    rows = []
    dtype = torch.float16 if dev.type == "cuda" else torch.float32
    sdpa = getattr(F, "scaled_dot_product_attention", None)
    gqa = sdpa is not None and "enable_gqa" in (sdpa.__doc__ or "")
    g = a.kv_heads if gqa else a.heads

    def attend(q, k, v, **kw):  # torch without SDPA: matmul, softmax, matmul
        if sdpa is not None:
            return sdpa(q, k, v, **kw)
        w = torch.softmax(q @ k.transpose(-1, -2) / a.head_dim ** 0.5, dim=-1)
        return w @ v
    for n in a.contexts:
        q = torch.randn(a.batch, a.heads, 1, a.head_dim, device=dev, dtype=dtype)
        k = torch.randn(a.batch, g, n, a.head_dim, device=dev, dtype=dtype)
        v = torch.randn(a.batch, g, n, a.head_dim, device=dev, dtype=dtype)
        kw = {"enable_gqa": True} if gqa and g != a.heads else {}
        with torch.no_grad():
            s = run(lambda: attend(q, k, v, **kw), a.iters)
        rows.append({
            "workload": "decode-attention", "unit": "us", "measured": "%.4g" % (s * 1e6),
            "condition": "batch=%d;context=%d;heads=%d;kv_heads=%d;head_dim=%d;part=attention"
                         % (a.batch, n, a.heads, g, a.head_dim),
            "quote": "median of %d timings of scaled_dot_product_attention, one query" % a.iters,
            "notes": "torch %s%s%s" % (torch.__version__, "" if gqa or g == a.kv_heads else
                                       "; no enable_gqa: K/V heads = query heads",
                                       "" if sdpa else "; no SDPA: matmul-softmax-matmul"),
        })
        del q, k, v
    return rows


def ints(s):
    return [int(x) for x in s.split(",") if x]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--gpu-preset", required=True, choices=PRESETS)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--model", default="pixart-sigma-xl")
    ap.add_argument("--image-sizes", type=ints, default=[512, 1024, 2048])
    ap.add_argument("--contexts", type=ints, default=[32768, 131072])
    ap.add_argument("--heads", type=int, default=32)
    ap.add_argument("--kv-heads", type=int, default=8)
    ap.add_argument("--head-dim", type=int, default=128)
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("-o", "--output", required=True)
    a = ap.parse_args()
    if a.iters < 1 or a.heads < 1 or a.kv_heads < 1 or a.heads % a.kv_heads or a.head_dim < 1 \
            or a.batch < 1 or any(n < 1 for n in a.contexts) or any(p % 16 for p in a.image_sizes):
        ap.error("iters, heads, head dim, batch and contexts must be positive, heads a "
                 "multiple of kv-heads, image sizes multiples of 16")
    try:
        import torch
    except ImportError:
        print("measure_gpu: torch is not installed", file=sys.stderr)
        return 3
    dev = torch.device(a.device)
    if dev.type == "cuda" and not torch.cuda.is_available():
        print("measure_gpu: CUDA device not available", file=sys.stderr)
        return 3
    run = timer(dev, torch)
    rows = dit_steps(a, torch, dev, run) + decode_attention(a, torch, dev, run)
    board = torch.cuda.get_device_name(dev) if dev.type == "cuda" else "CPU: NOT a GPU measurement"
    cmd = "scripts/measure_gpu.py " + " ".join(sys.argv[1:])
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=COLUMNS, lineterminator="\n")
    w.writeheader()
    for i, r in enumerate(rows):
        r.update(id="m%03d" % (i + 1), gpu=a.gpu_preset, source="measured here: " + cmd)
        r["notes"] = "board %s; %s" % (board, r["notes"])
        w.writerow(r)
    os.makedirs(a.output, exist_ok=True)
    path = os.path.join(a.output, "validation-measured.csv")
    with open(path + ".tmp", "w") as f:
        f.write(buf.getvalue())
        f.flush()
        os.fsync(f.fileno())
    os.replace(path + ".tmp", path)
    print("wrote %s (%d rows)" % (path, len(rows)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
