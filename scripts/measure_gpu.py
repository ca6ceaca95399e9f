#!/usr/bin/python3
"""Measure the A100/H100 roofline parameters of configs/a100.json on a real GPU (issue 13,
docs/models.md "Baselines"): per op class of the DiT shapes, PyTorch kernels timed with CUDA
events, written as a config the `a100` model (and the disc model's a100.* keys) reads.

What is timed (batch B, N image tokens, caption length C, hidden D, heads H, head dim dh,
FFN width F; defaults PixArt-Sigma-XL at 512 px: 2, 1024, 300, 1152, 16, 72, 4608):
  linear     the block's GEMMs, (B*N) x D -> 3D (self q, k, v), D -> D (self out, cross q,
             cross out), (B*C) x D -> 2D (cross k, v), D -> F, F -> D; and the adaLN
             modulation B x D -> 6D. eff_linear = sum FLOP / (sum time x peak).
  attention  fused attention (torch's scaled_dot_product_attention when present, else
             matmul-softmax-matmul): self N x N and cross N x C, B x H heads of dh.
             FLOP 4 N M dh per head (QK^T and PV). eff_attn likewise.
  memory     LayerNorm, GELU (tanh), residual add and modulate (x (1 + s) + b) on B x N x D:
             eff_mem = sum bytes (every input read once, the output written once) /
             (sum time x peak bandwidth).
  launch     launch_us = the time per kernel of K back-to-back one-element adds (the GPU-side
             floor a kernel costs; docs/models.md "Baselines" for what it leaves out).
Each op is warmed up, then timed over --iters runs (median). Compare with the cited values
(eff_linear 0.60 decision, eff_attn 0.39, eff_mem 0.85, launch_us 2.56 on the A100).

usage: /usr/bin/python3 scripts/measure_gpu.py [--device cuda] [--peak-tflops 312]
         [--hbm-gbs 1935] [--iters 50] [--tokens N] [--caption C] [--hidden D] [--heads H]
         [--ffn F] [--batch B] -o measured.json   (and measured.ops.csv: per op)
With --device cpu the same code runs on the CPU with wall-clock timing, to check the script
(its figures are not GPU measurements, and the file says so). Exit 2 on bad usage, 3 when
the device is missing.
"""
import argparse
import json
import os
import statistics
import sys
import time


def timer(dev, torch):
    """fn -> seconds of one call (median of iters after warm-up)."""
    if dev.type == "cuda":
        def run(fn, iters):
            for _ in range(3):
                fn()
            torch.cuda.synchronize()
            ts = []
            for _ in range(iters):
                a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                a.record()
                fn()
                b.record()
                b.synchronize()
                ts.append(a.elapsed_time(b) * 1e-3)
            return statistics.median(ts)
    else:
        def run(fn, iters):
            fn()
            ts = []
            for _ in range(iters):
                t0 = time.perf_counter()
                fn()
                ts.append(time.perf_counter() - t0)
            return statistics.median(ts)
    return run


def sig(x):
    """x to 4 significant digits."""
    return float(f"{x:.4g}")


def attention(torch, q, k, v):
    f = getattr(torch.nn.functional, "scaled_dot_product_attention", None)
    if f is not None:
        return f(q, k, v)
    s = torch.matmul(q, k.transpose(-1, -2)) * (q.shape[-1] ** -0.5)
    return torch.matmul(torch.softmax(s, dim=-1), v)


def measure(a, torch):
    dev = torch.device(a.device)
    dt = torch.float16 if dev.type == "cuda" else torch.float32
    run = timer(dev, torch)
    B, N, C, D, H, F = a.batch, a.tokens, a.caption, a.hidden, a.heads, a.ffn
    dh = D // H
    g = torch.Generator(device="cpu").manual_seed(0)

    def rnd(*shape):
        return torch.randn(*shape, generator=g).to(dev, dt)

    ops = {"linear": [], "attention": [], "memory": []}
    gemms = [("self qkv", B * N, D, 3 * D), ("self out", B * N, D, D), ("cross q", B * N, D, D),
             ("cross kv", B * C, D, 2 * D), ("cross out", B * N, D, D), ("ffn up", B * N, D, F),
             ("ffn down", B * N, F, D), ("adaLN", B, D, 6 * D)]
    for name, m, k, n in gemms:
        x, w = rnd(m, k), rnd(k, n)
        t = run(lambda: torch.matmul(x, w), a.iters)
        ops["linear"].append({"op": name, "m": m, "k": k, "n": n, "flop": 2.0 * m * k * n, "s": t})
    for name, m in (("self", N), ("cross", C)):
        q, kk, v = rnd(B, H, N, dh), rnd(B, H, m, dh), rnd(B, H, m, dh)
        t = run(lambda: attention(torch, q, kk, v), a.iters)
        ops["attention"].append({"op": name, "n": N, "m": m, "dh": dh, "heads": B * H,
                                 "flop": 4.0 * B * H * N * m * dh, "s": t})
    x, y, s, b = rnd(B, N, D), rnd(B, N, D), rnd(B, 1, D), rnd(B, 1, D)
    el = x.element_size()
    ln = torch.nn.LayerNorm(D, elementwise_affine=False).to(dev, dt)
    mem = [("layernorm", lambda: ln(x), 2),
           ("gelu", lambda: torch.nn.functional.gelu(x, approximate="tanh"), 2),
           ("residual add", lambda: x + y, 3), ("modulate", lambda: x * (1 + s) + b, 2)]
    for name, fn, tensors in mem:
        t = run(fn, a.iters)
        ops["memory"].append({"op": name, "bytes": float(tensors * x.numel() * el), "s": t})
    one = torch.zeros(1, device=dev, dtype=dt)
    K = a.launch_kernels

    def chain():
        for _ in range(K):
            one.add_(1)
    t = run(chain, max(3, a.iters // 10))
    lin = sum(o["flop"] for o in ops["linear"]) / sum(o["s"] for o in ops["linear"])
    att = sum(o["flop"] for o in ops["attention"]) / sum(o["s"] for o in ops["attention"])
    bw = sum(o["bytes"] for o in ops["memory"]) / sum(o["s"] for o in ops["memory"])
    name = torch.cuda.get_device_name(dev) if dev.type == "cuda" else "cpu"
    out = {
        "model": "a100",
        "doc": f"measured by scripts/measure_gpu.py on {name} (torch {torch.__version__}, "
               f"{'float16' if dt == torch.float16 else 'float32'})"
               + ("" if dev.type == "cuda" else "; device cpu: a check of the script, NOT a "
                  "GPU measurement"),
        "peak_tflops": a.peak_tflops, "hbm_gbs": a.hbm_gbs,
        "eff_linear": sig(lin / (a.peak_tflops * 1e12)),
        "eff_attn": sig(att / (a.peak_tflops * 1e12)),
        "eff_mem": sig(bw / (a.hbm_gbs * 1e9)),
        "launch_us": sig(t / K * 1e6),
        "elem_bytes": el,
    }
    out["doc"] += (f"; shapes batch {B}, tokens {N}, caption {C}, hidden {D}, heads {H} (head "
                   f"dim {dh}), ffn {F}; median of {a.iters} runs; launch over {K} kernels; "
                   f"per-op figures in the .ops.csv beside this file; command: "
                   + " ".join(sys.argv))
    return out, ops, name


def write_atomic(path, text):
    """text to path through path.tmp, fsynced and renamed."""
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--peak-tflops", type=float, default=312.0)
    ap.add_argument("--hbm-gbs", type=float, default=1935.0)
    ap.add_argument("--iters", type=int, default=50)
    ap.add_argument("--batch", type=int, default=2)
    ap.add_argument("--tokens", type=int, default=1024)
    ap.add_argument("--caption", type=int, default=300)
    ap.add_argument("--hidden", type=int, default=1152)
    ap.add_argument("--heads", type=int, default=16)
    ap.add_argument("--ffn", type=int, default=4608)
    ap.add_argument("--launch-kernels", type=int, default=1000)
    ap.add_argument("-o", "--output", required=True)
    a = ap.parse_args()
    if min(a.iters, a.batch, a.tokens, a.caption, a.hidden, a.heads, a.ffn,
           a.launch_kernels) < 1 or a.hidden % a.heads or a.peak_tflops <= 0 or a.hbm_gbs <= 0:
        print("measure_gpu: sizes, iters and peaks must be positive and hidden a multiple of "
              "heads", file=sys.stderr)
        return 2
    try:
        import torch
    except ImportError:
        print("measure_gpu: PyTorch is not installed (scripts/deps.sh)", file=sys.stderr)
        return 3
    if a.device.startswith("cuda") and not torch.cuda.is_available():
        print(f"measure_gpu: device '{a.device}' is not available (no CUDA GPU here)",
              file=sys.stderr)
        return 3
    out, ops, device = measure(a, torch)
    over = [k for k in ("eff_linear", "eff_attn", "eff_mem") if out[k] > 1]
    if over:
        print(f"measure_gpu: {', '.join(over)} above 1: --peak-tflops {a.peak_tflops} or "
              f"--hbm-gbs {a.hbm_gbs} is below what {device} reached", file=sys.stderr)
        return 3
    rows = ["class,op,shape,flop,bytes,seconds,achieved,unit,fraction_of_peak"]
    for cls, lst in ops.items():
        for o in lst:
            if cls == "memory":
                ach, unit, frac = o["bytes"] / o["s"] / 1e9, "GB/s", o["bytes"] / o["s"] / (
                    a.hbm_gbs * 1e9)
                shape = f"{a.batch}x{a.tokens}x{a.hidden}"
            else:
                ach, unit = o["flop"] / o["s"] / 1e12, "TFLOP/s"
                frac = ach / a.peak_tflops
                shape = (f"{o['m']}x{o['k']}x{o['n']}" if cls == "linear"
                         else f"{o['heads']}x{o['n']}x{o['m']}x{o['dh']}")
            rows.append(f"{cls},{o['op']},{shape},{o.get('flop', '')},{o.get('bytes', '')},"
                        f"{o['s']:.6g},{ach:.6g},{unit},{frac:.4g}")
    write_atomic(a.output, json.dumps(out, indent=1) + "\n")
    base = a.output[:-5] if a.output.endswith(".json") else a.output
    write_atomic(base + ".ops.csv", "\n".join(rows) + "\n")
    print(f"{a.output}: eff_linear {out['eff_linear']}, eff_attn {out['eff_attn']}, eff_mem "
          f"{out['eff_mem']}, launch_us {out['launch_us']} ({out['doc']})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
