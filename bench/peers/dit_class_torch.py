#!/usr/bin/python3
"""PyTorch reference of the capture's class-conditional DiT (docs/models.md, "DiT-XL/2").

Runs DiT (Peebles & Xie 2023; the module structure of facebookresearch/DiT models.py:
TimestepEmbedder, LabelEmbedder, DiTBlock with adaLN-Zero, FinalLayer, unpatchify) as
python/acceltrace/capture/dit_model.py `class_forward` writes it, on the safetensors file written by `build/bench/bench_disc --model dit-micro
--forward-only --dump DIR` (original DiT tensor names, F32), runs one forward pass on the
same latent (DIR/latent.f32), timestep (DIR/t.txt) and class label 207, and compares the
eps channels with the C forward (DIR/eps.f32).

usage: /usr/bin/python3 bench/peers/dit_class_torch.py DIR [--label 207]
Prints max|eps_torch - eps_C| / max|eps_C| and exits 1 above 1e-4.
"""
import argparse
import math
import os
import sys

import numpy as np
import torch

# the model is the torch capture's (python/acceltrace/capture/dit_model.py)
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
from acceltrace.capture.dit_model import class_forward, load_f32  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--label", type=int, default=207)
    ap.add_argument("--heads", type=int, default=4)
    a = ap.parse_args()
    torch.set_num_threads(1)
    w = load_f32(os.path.join(a.dir, "weights.safetensors"))
    c_in = w["x_embedder.proj.weight"].shape[1]
    lat = np.fromfile(os.path.join(a.dir, "latent.f32"), dtype="<f4")
    h = int(round(math.sqrt(lat.size / c_in)))
    x = torch.from_numpy(lat.reshape(c_in, h, h).copy())
    t = float(open(os.path.join(a.dir, "t.txt")).read())
    eps_c = np.fromfile(os.path.join(a.dir, "eps.f32"), dtype="<f4").reshape(c_in, h, h)
    with torch.no_grad():
        eps_t = class_forward(w, x, t, a.label, a.heads).double().numpy()
    rel = np.abs(eps_t - eps_c).max() / np.abs(eps_c).max()
    print(f"dit_class_torch: max|eps_torch - eps_C| / max|eps_C| = {rel:.3g} "
          f"(max|eps_C| = {np.abs(eps_c).max():.4g})")
    sys.exit(0 if rel <= 1e-4 else 1)


if __name__ == "__main__":
    main()
