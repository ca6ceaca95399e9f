"""Writes a small Hugging Face Llama checkpoint for tests/sh/torch_capture_salca.sh: two
BF16 safetensors shards with a model.safetensors.index.json, F32 norms, q/k/v biases, no
lm_head (tied to the embedding), linear rope_scaling 2, planted k_proj outlier rows.

usage: make_llama_ckpt.py DIR [GAIN]   (GAIN: the outlier rows' gain, 8)
"""
import json, os, struct, sys
import numpy as np
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "python"))
from acceltrace.capture.llama_model import LlamaConfig
out = sys.argv[1]
gain = float(sys.argv[2]) if len(sys.argv) > 2 else 8.0
os.makedirs(out, exist_ok=True)
cfg = {"hidden_size": 256, "num_hidden_layers": 2, "num_attention_heads": 4,
       "num_key_value_heads": 2, "intermediate_size": 512, "vocab_size": 512,
       "rms_norm_eps": 1e-5, "rope_theta": 10000.0, "max_position_embeddings": 4096,
       "rope_scaling": {"type": "linear", "factor": 2.0}}
json.dump(cfg, open(os.path.join(out, "config.json"), "w"))
c = LlamaConfig.from_json(os.path.join(out, "config.json"))
rng = np.random.default_rng(3)
W = {}
for name, shp in c.shapes().items():
    if name == "lm_head.weight":
        continue  # tied to the embedding
    if "norm" in name:
        W[name] = (1.0 + 0.1 * rng.standard_normal(shp)).astype(np.float32)
    else:
        W[name] = (0.05 * rng.standard_normal(shp)).astype(np.float32)
for l in range(c.L):
    for p, n in (("q", c.H * c.d), ("k", c.G * c.d), ("v", c.G * c.d)):
        name = "model.layers.%d.self_attn.%s_proj.bias" % (l, p)
        W[name] = (0.02 * rng.standard_normal(n)).astype(np.float32)
# k_proj outlier rows so the heavy channels are well separated
for l in range(c.L):
    wk = W["model.layers.%d.self_attn.k_proj.weight" % l]
    for g in range(c.G):
        for j in (20, 21, 30):
            wk[g * c.d + j] *= gain
            wk[g * c.d + j + c.d // 2] *= gain
def bf16(a):
    u = a.view(np.uint32)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype("<u2")
names = sorted(W)
shards = [names[: len(names) // 2], names[len(names) // 2:]]
wm = {}
for i, part in enumerate(shards):
    fn = "model-%05d-of-00002.safetensors" % (i + 1)
    meta, off, blobs = {}, 0, []
    for n in part:
        dt = "F32" if "norm" in n else "BF16"
        b = W[n].astype("<f4").tobytes() if dt == "F32" else bf16(W[n]).tobytes()
        meta[n] = {"dtype": dt, "shape": list(W[n].shape), "data_offsets": [off, off + len(b)]}
        off += len(b)
        blobs.append(b)
        wm[n] = fn
    h = json.dumps(meta).encode()
    with open(os.path.join(out, fn), "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))
with open(os.path.join(out, "model.safetensors.index.json"), "w") as f:
    json.dump({"metadata": {}, "weight_map": wm}, f)
