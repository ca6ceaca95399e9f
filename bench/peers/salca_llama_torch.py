#!/usr/bin/python3
"""Independent PyTorch forward of the Salca capture's Llama decoder (docs/salca.md#model-source),
written from the Hugging Face LlamaModel semantics: RMSNorm, rotate_half RoPE, repeat_kv
GQA, causal softmax attention, SwiGLU MLP. Reads the checkpoint, tokens and logits that
`bench_salca_llama --write DIR` wrote (safetensors parsed by hand: no extra packages),
runs the same prefill and decode steps, and prints the largest relative logit difference
and the speed ratio. Exit 1 when the logits differ by more than 1e-4 relative.

usage: salca_llama_torch.py DIR [--vs BENCH]   (with --vs it first runs BENCH --write DIR)
"""
import json
import re
import struct
import subprocess
import sys
import time

import numpy as np
import torch


def load_safetensors(path):
    with open(path, "rb") as f:
        data = f.read()
    (hlen,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + hlen])
    base = 8 + hlen
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        assert info["dtype"] == "F32", name
        b, e = info["data_offsets"]
        arr = np.frombuffer(data, dtype="<f4", count=(e - b) // 4, offset=base + b)
        out[name] = torch.from_numpy(arr.copy()).reshape(info["shape"])
    return out


def rotate_half(x):
    h = x.shape[-1] // 2
    return torch.cat((-x[..., h:], x[..., :h]), dim=-1)


def rope(x, pos, theta, d):
    inv = 1.0 / (theta ** (torch.arange(0, d, 2, dtype=torch.float64) / d))
    ang = pos.to(torch.float64)[:, None] * inv[None, :]
    emb = torch.cat((ang, ang), dim=-1)
    return x * emb.cos().float() + rotate_half(x) * emb.sin().float()


def rms(x, g, eps):
    return g * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps))


class Llama:
    def __init__(self, ckpt, cfg):
        self.w, self.c = ckpt, cfg
        self.H, self.G = cfg["num_attention_heads"], cfg["num_key_value_heads"]
        self.d = cfg.get("head_dim", cfg["hidden_size"] // self.H)
        self.L = cfg["num_hidden_layers"]
        self.cache = [None] * self.L

    def forward(self, tokens, pos0):
        w, c, H, G, d = self.w, self.c, self.H, self.G, self.d
        eps = c["rms_norm_eps"]
        T = len(tokens)
        pos = torch.arange(pos0, pos0 + T)
        x = w["model.embed_tokens.weight"][tokens]
        for l in range(self.L):
            p = f"model.layers.{l}."
            a = rms(x, w[p + "input_layernorm.weight"], eps)
            q = (a @ w[p + "self_attn.q_proj.weight"].T).view(T, H, d).transpose(0, 1)
            k = (a @ w[p + "self_attn.k_proj.weight"].T).view(T, G, d).transpose(0, 1)
            v = (a @ w[p + "self_attn.v_proj.weight"].T).view(T, G, d).transpose(0, 1)
            q, k = rope(q, pos, c["rope_theta"], d), rope(k, pos, c["rope_theta"], d)
            if self.cache[l] is not None:
                k = torch.cat((self.cache[l][0], k), dim=1)
                v = torch.cat((self.cache[l][1], v), dim=1)
            self.cache[l] = (k, v)
            kk = k.repeat_interleave(H // G, dim=0)  # repeat_kv order
            vv = v.repeat_interleave(H // G, dim=0)
            s = q @ kk.transpose(1, 2) / d ** 0.5
            n = kk.shape[1]
            mask = torch.arange(n)[None, :] > (torch.arange(T)[:, None] + pos0)
            s = s.masked_fill(mask, float("-inf"))
            o = torch.softmax(s, dim=-1) @ vv
            x = x + o.transpose(0, 1).reshape(T, H * d) @ w[p + "self_attn.o_proj.weight"].T
            b = rms(x, w[p + "post_attention_layernorm.weight"], eps)
            g = torch.nn.functional.silu(b @ w[p + "mlp.gate_proj.weight"].T)
            x = x + (g * (b @ w[p + "mlp.up_proj.weight"].T)) @ w[p + "mlp.down_proj.weight"].T
        x = rms(x[-1], w["model.norm.weight"], eps)
        lm = w.get("lm_head.weight", w["model.embed_tokens.weight"])
        return lm @ x


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    d = sys.argv[1]
    ours = None
    if len(sys.argv) == 4 and sys.argv[2] == "--vs":
        out = subprocess.run([sys.argv[3], "--n", "1024", "--steps", "8", "--write", d],
                             check=True, capture_output=True, text=True).stdout
        m = re.search(r"prefill_s=([\d.]+) decode_ms=([\d.]+)", out)
        ours = (float(m.group(1)), float(m.group(2)))
    torch.set_num_threads(1)
    cfg = json.load(open(f"{d}/config.json"))
    ckpt = load_safetensors(f"{d}/model.safetensors")
    tokens = torch.from_numpy(np.fromfile(f"{d}/tokens.bin", dtype="<u4").astype(np.int64))
    ref = np.fromfile(f"{d}/logits.bin", dtype="<f4").reshape(-1, cfg["vocab_size"])
    steps = ref.shape[0] - 1
    n = len(tokens) - steps
    model = Llama(ckpt, cfg)
    with torch.no_grad():
        t0 = time.perf_counter()
        got = [model.forward(tokens[:n], 0)]
        t1 = time.perf_counter()
        for s in range(steps):
            got.append(model.forward(tokens[n + s:n + s + 1], n + s))
        t2 = time.perf_counter()
    got = torch.stack(got).numpy()
    rel = float(np.max(np.abs(got - ref)) / np.max(np.abs(ref)))
    same = int(np.sum(got.argmax(1) == ref.argmax(1)))
    line = (f"salca_llama_torch: n={n} steps={steps} max_rel_logit_diff={rel:.2e} "
            f"argmax_agree={same}/{steps + 1} torch_prefill_s={t1 - t0:.3f} "
            f"torch_decode_ms={1e3 * (t2 - t1) / max(steps, 1):.1f}")
    if ours:
        line += (f" c_prefill_s={ours[0]:.3f} c_decode_ms={ours[1]:.1f}"
                 f" prefill_ratio={(t1 - t0) / ours[0]:.2f}x"
                 f" decode_ratio={(t2 - t1) / max(steps, 1) * 1e3 / ours[1]:.2f}x")
    print(line)
    return 0 if rel <= 1e-4 else 1


if __name__ == "__main__":
    sys.exit(main())
