"""The Llama decoder of docs/salca.md#model-source in PyTorch (capture/nn/nn_llama.c's model).

Pre-norm Llama: x = E[tok]; per layer a = RMSNorm(x; g_in), x += W_o Attn(RoPE(W_q a),
RoPE(W_k a), W_v a), b = RMSNorm(x; g_post), x += W_down (silu(W_gate b) * W_up b);
logits = W_lm RMSNorm(x; g_final). RoPE in the rotate_half layout with theta and linear
rope_scaling from config.json; GQA with query head h reading KV head h*G//H (Hugging Face
repeat_kv order). Weights load from Hugging Face checkpoints by their public names
(model.safetensors or a sharded model.safetensors.index.json; F32, F16 and BF16), or are
the C capture's seeded tiny weights (wg_fill of capture/nn/weightgen.c, bit for bit, with
the planted k_proj outlier pairs). Projections run in the model dtype; q, k and v are
widened to float32 before RoPE, and attention, softmax and everything after stay float32.
"""
import json
import math
import os

import numpy as np
import torch

from . import rngvec
from .inputs import Rng


class ConfigError(Exception):
    """A bad model configuration (config.json); exit 3 as the C capture."""


class WeightError(Exception):
    """A bad or missing checkpoint tensor (message names tensor and file); exit 3."""


class LlamaConfig:
    def __init__(self, D, L, H, G, d, F, V, eps, rope_theta=10000.0, rope_factor=1.0,
                 max_pos=65536, name="tiny"):
        self.D, self.L, self.H, self.G, self.d, self.F, self.V = D, L, H, G, d, F, V
        self.eps = float(np.float32(eps))
        self.rope_theta, self.rope_factor, self.max_pos = rope_theta, rope_factor, max_pos
        self.name = name
        self.check()

    @classmethod
    def tiny(cls):
        return cls(512, 4, 4, 2, 128, 1536, 4096, 1e-5)

    def check(self):
        if not all((self.D, self.L, self.H, self.G, self.d, self.F, self.V)):
            raise ConfigError("model config has a zero dimension")
        if self.H % self.G:
            raise ConfigError("num_attention_heads %d is not a multiple of num_key_value_heads "
                              "%d" % (self.H, self.G))
        if self.d % 2 or self.d > 256:
            raise ConfigError("head_dim %d must be even and <= 256" % self.d)

    @classmethod
    def from_json(cls, path):
        try:
            with open(path) as f:
                j = json.load(f)
        except OSError as ex:
            raise ConfigError("cannot read '%s': %s" % (path, ex.strerror)) from None
        except ValueError as ex:
            raise ConfigError("config.json is not valid JSON (%s)" % ex) from None
        if not isinstance(j, dict):
            raise ConfigError("config.json is not a JSON object")

        def u32(key, required=True):
            v = j.get(key)
            if v is None:
                if required:
                    raise ConfigError("config.json lacks '%s'" % key)
                return None
            if not isinstance(v, int) or isinstance(v, bool) or not 0 <= v <= 0xFFFFFFFF:
                raise ConfigError("config.json key '%s' is not a valid integer" % key)
            return v
        D, L, H = u32("hidden_size"), u32("num_hidden_layers"), u32("num_attention_heads")
        F, V = u32("intermediate_size"), u32("vocab_size")
        if H == 0:
            raise ConfigError("config.json has num_attention_heads 0")
        G = u32("num_key_value_heads", False)
        G = H if G is None else G
        d = u32("head_dim", False)
        d = D // H if d is None else d
        eps = j.get("rms_norm_eps")
        eps = float(eps) if isinstance(eps, (int, float)) else 1e-6
        theta = j.get("rope_theta")
        theta = float(theta) if isinstance(theta, (int, float)) else 10000.0
        if not (0 < np.float32(eps) < 1) or not theta > 1:
            raise ConfigError("rms_norm_eps must be in (0, 1) and rope_theta above 1")
        mp = j.get("max_position_embeddings")
        max_pos = mp if isinstance(mp, int) and mp > 0 else 65536
        factor = 1.0
        rs = j.get("rope_scaling")
        if rs is not None:
            ty = rs.get("type", rs.get("rope_type")) if isinstance(rs, dict) else None
            tn = ty if isinstance(ty, str) else "?"
            if tn != "linear":
                raise ConfigError("unsupported rope_scaling type '%s'" % tn)
            fa = rs.get("factor")
            if not isinstance(fa, (int, float)) or fa <= 0:
                raise ConfigError("rope_scaling 'linear' needs a positive factor")
            factor = float(fa)
            max_pos = int(min(4294967295.0, max_pos * factor))
        return cls(D, L, H, G, d, F, V, eps, theta, factor, max_pos,
                   name=os.path.dirname(os.path.abspath(path)))

    def param_floats(self):
        D, Hd, Gd, F = self.D, self.H * self.d, self.G * self.d, self.F
        layer = 2 * D + Hd * D + 2 * Gd * D + D * Hd + 3 * F * D
        return self.L * layer + 2 * self.V * self.D + self.D

    def shapes(self):
        """{public name: shape} of every tensor (biases excepted)."""
        D, Hd, Gd, F, V = self.D, self.H * self.d, self.G * self.d, self.F, self.V
        s = {"model.embed_tokens.weight": (V, D), "model.norm.weight": (D,),
             "lm_head.weight": (V, D)}
        for l in range(self.L):
            p = "model.layers.%d." % l
            s.update({p + "input_layernorm.weight": (D,),
                      p + "post_attention_layernorm.weight": (D,),
                      p + "self_attn.q_proj.weight": (Hd, D),
                      p + "self_attn.k_proj.weight": (Gd, D),
                      p + "self_attn.v_proj.weight": (Gd, D),
                      p + "self_attn.o_proj.weight": (D, Hd),
                      p + "mlp.gate_proj.weight": (F, D), p + "mlp.up_proj.weight": (F, D),
                      p + "mlp.down_proj.weight": (D, F)})
        return s


def seeded_weights(cfg, seed, outlier_pairs=4, outlier_gain=8.0):
    """nn_llama_new_tiny's weights as {name: float32 numpy array}: linear N(0, 0.02^2) from
    substream (seed, name), norms 1, then the planted k_proj outlier pairs."""
    W = {}
    for name, shp in cfg.shapes().items():
        n = int(np.prod(shp))
        if name.endswith("norm.weight") or name.endswith("layernorm.weight"):
            W[name] = np.ones(shp, dtype=np.float32)
        else:
            W[name] = rngvec.fill_normal(seed, name, n, 0.02).reshape(shp)
    half, lo = cfg.d // 2, cfg.d // 4
    pairs = min(outlier_pairs, half - lo)
    gain = np.float32(outlier_gain)
    if gain != np.float32(1.0):
        for l in range(cfg.L):
            wk = W["model.layers.%d.self_attn.k_proj.weight" % l]
            for g in range(cfg.G):
                r = Rng.stream(seed, "tiny.outliers", l, g)
                taken = set()
                for _ in range(pairs):
                    while True:
                        j = lo + rng_below(r, half - lo)
                        if j not in taken:
                            break
                    taken.add(j)
                    for row in (g * cfg.d + j, g * cfg.d + j + half):
                        wk[row] *= gain
    return W


def rng_below(r, n):
    """rng_below of common/rng.c: rejection sampling, unbiased for any n > 0."""
    m64 = (1 << 64) - 1
    limit = m64 - m64 % n
    while True:
        x = r.u64()
        if x < limit:
            return x % n


# ---- safetensors ----

_ST_DTYPES = {"F32": ("<f4", 4), "F16": ("<f2", 2), "BF16": ("<u2", 2)}


class SafeTensors:
    """One safetensors file: header parsed, tensors read on demand through a memory map."""

    def __init__(self, path):
        self.path = path
        try:
            size = os.path.getsize(path)
            with open(path, "rb") as f:
                head = f.read(8)
                if size < 8 or len(head) < 8:
                    raise WeightError("'%s' is too short for a safetensors file (%d bytes)"
                                      % (path, size))
                hl = int.from_bytes(head, "little")
                if hl > size - 8:
                    raise WeightError("safetensors header of '%s' (%d bytes) runs past the end "
                                      "of the file (%d bytes)" % (path, hl, size))
                raw = f.read(hl)
        except OSError as ex:
            raise WeightError("cannot open '%s': %s" % (path, ex.strerror)) from None
        try:
            self.meta = json.loads(raw.decode("utf-8"))
        except (ValueError, UnicodeDecodeError) as ex:
            raise WeightError("bad safetensors header JSON in '%s': %s" % (path, ex)) from None
        if not isinstance(self.meta, dict):
            raise WeightError("bad safetensors header JSON in '%s'" % path)
        self.base = 8 + hl
        self.size = size
        self.mm = None

    def names(self):
        return [k for k in self.meta if k != "__metadata__"]

    def tensor(self, name, shape):
        """The tensor as float32 numpy, checked against shape."""
        e = self.meta.get(name)
        try:
            dt, shp, (a, b) = e["dtype"], tuple(e["shape"]), e["data_offsets"]
        except (TypeError, KeyError, ValueError):
            raise WeightError("bad header entry for tensor '%s' in '%s'" % (name, self.path)) \
                from None
        if dt not in _ST_DTYPES:
            raise WeightError("unknown dtype '%s' of tensor '%s' in '%s'" % (dt, name, self.path))
        if shp != tuple(shape):
            raise WeightError("tensor '%s' in '%s' has shape [%s], expected [%s]" % (
                name, self.path, ",".join(map(str, shp)), ",".join(map(str, shape))))
        npdt, esz = _ST_DTYPES[dt]
        n = int(np.prod(shp)) if shp else 1
        if not (0 <= a <= b and b - a == n * esz and self.base + b <= self.size):
            raise WeightError("bad data_offsets of tensor '%s' in '%s'" % (name, self.path))
        if self.mm is None:
            self.mm = np.memmap(self.path, dtype=np.uint8, mode="r")
        x = np.frombuffer(self.mm, dtype=npdt, count=n, offset=self.base + a)
        if dt == "BF16":
            x = (x.astype(np.uint32) << 16).view(np.float32)
        return x.astype(np.float32).reshape(shp)


def checkpoint_files(path):
    """The safetensors files of a checkpoint directory (sharded index or one file)."""
    idx = os.path.join(path, "model.safetensors.index.json")
    if not os.path.exists(idx):
        return [os.path.join(path, "model.safetensors")]
    try:
        with open(idx) as f:
            j = json.load(f)
    except (OSError, ValueError) as ex:
        raise WeightError("cannot read '%s': %s" % (idx, ex)) from None
    wm = j.get("weight_map") if isinstance(j, dict) else None
    if not isinstance(wm, dict):
        raise WeightError("'%s' has no weight_map object" % idx)
    files = []
    for key, val in wm.items():
        if not isinstance(val, str):
            raise WeightError("weight_map entry '%s' in '%s' is not a file name" % (key, idx))
        if "/" in val or val == "..":
            raise WeightError("shard name '%s' in '%s' is not a plain file name" % (val, idx))
        p = os.path.join(path, val)
        if p not in files:
            files.append(p)
    return files


def load_checkpoint(path):
    """(config, weights {name: float32 numpy}, files) of a Hugging Face Llama checkpoint."""
    cfg = LlamaConfig.from_json(os.path.join(path, "config.json"))
    files = checkpoint_files(path)
    sts = [SafeTensors(p) for p in files]
    where = {}
    for st in sts:
        for n in st.names():
            where.setdefault(n, st)
    W = {}
    shapes = cfg.shapes()
    for name, shp in shapes.items():
        st = where.get(name)
        if st is None and name == "lm_head.weight":
            continue  # tied to the embedding
        if st is None:
            raise WeightError("missing tensor '%s' in checkpoint '%s'" % (name, path))
        W[name] = st.tensor(name, shp)
    for l in range(cfg.L):
        for p, n in (("q", cfg.H * cfg.d), ("k", cfg.G * cfg.d), ("v", cfg.G * cfg.d)):
            name = "model.layers.%d.self_attn.%s_proj.bias" % (l, p)
            if name in where:
                W[name] = where[name].tensor(name, (n,))
    return cfg, W, files


# ---- the forward ----

class Llama:
    """The decoder on a torch device; prefill() and decode() as nn_llama_prefill/_decode."""

    def __init__(self, cfg, W, device, dtype):
        self.cfg, self.device, self.dtype = cfg, torch.device(device), dtype
        c = cfg

        def t(name, dt=None):
            return torch.from_numpy(np.ascontiguousarray(W[name])).to(self.device, dt or dtype)
        self.emb = t("model.embed_tokens.weight")
        self.lm = t("lm_head.weight") if "lm_head.weight" in W else self.emb
        self.g_final = t("model.norm.weight", torch.float32)
        self.layers = []
        for l in range(c.L):
            p = "model.layers.%d." % l
            y = {k: t(p + n) for k, n in (
                ("wq", "self_attn.q_proj.weight"), ("wk", "self_attn.k_proj.weight"),
                ("wv", "self_attn.v_proj.weight"), ("wo", "self_attn.o_proj.weight"),
                ("wg", "mlp.gate_proj.weight"), ("wu", "mlp.up_proj.weight"),
                ("wd", "mlp.down_proj.weight"))}
            y["g_in"] = t(p + "input_layernorm.weight", torch.float32)
            y["g_post"] = t(p + "post_attention_layernorm.weight", torch.float32)
            for b in "qkv":
                n = p + "self_attn.%s_proj.bias" % b
                y["b" + b] = t(n, torch.float32) if n in W else None
            self.layers.append(y)
        half = c.d // 2
        self.inv = np.array([math.pow(c.rope_theta, -2.0 * j / c.d) for j in range(half)])

    def rope_cs(self, pos0, n):
        """cos, sin (n, d/2) float32 of positions pos0.. as nn_llama_rope (angle in double)."""
        m = np.arange(pos0, pos0 + n, dtype=np.float64) / self.cfg.rope_factor
        ang = m[:, None] * self.inv[None, :]
        cs = torch.from_numpy(np.cos(ang).astype(np.float32)).to(self.device)
        sn = torch.from_numpy(np.sin(ang).astype(np.float32)).to(self.device)
        return cs, sn

    @staticmethod
    def rope(x, cs, sn):
        """x (n, heads, d) float32, rotate_half pairs j and j + d/2."""
        h = x.shape[-1] // 2
        a, b = x[..., :h], x[..., h:]
        c, s = cs[:, None, :], sn[:, None, :]
        return torch.cat([a * c - b * s, b * c + a * s], dim=-1)

    def rmsnorm(self, x, g):
        x32 = x.float()
        s2 = (x32.double() ** 2).mean(dim=-1, keepdim=True)
        inv = (1.0 / torch.sqrt(s2 + float(self.cfg.eps))).float()
        return (x32 * inv * g).to(self.dtype)

    def _qkv(self, y, x, pos0):
        c = self.cfg
        n = x.shape[0]
        a = self.rmsnorm(x, y["g_in"])
        q, k, v = (a @ y["wq"].T).float(), (a @ y["wk"].T).float(), (a @ y["wv"].T).float()
        if y["bq"] is not None:
            q, k, v = q + y["bq"], k + y["bk"], v + y["bv"]
        cs, sn = self.rope_cs(pos0, n)
        q = self.rope(q.view(n, c.H, c.d), cs, sn)
        k = self.rope(k.view(n, c.G, c.d), cs, sn)
        return q, k, v.view(n, c.G, c.d)

    def _tail(self, y, x, o):
        """x += W_o o; x += MLP(x) (o: (n, H*d) float32)."""
        x = x + (o.to(self.dtype) @ y["wo"].T)
        b = self.rmsnorm(x, y["g_post"])
        h = torch.nn.functional.silu(b @ y["wg"].T) * (b @ y["wu"].T)
        return x + h @ y["wd"].T

    def logits(self, x_last):
        a = self.rmsnorm(x_last[None], self.g_final)
        return (a @ self.lm.T).float()[0]

    @torch.no_grad()
    def prefill(self, tokens, on_layer, chunk=1024):
        """Dense causal prefill: on_layer(l, K, V) receives each layer's (G, n0, d) float32
        post-RoPE keys and values as soon as they are made (only one layer's are held);
        returns the last position's logits."""
        c = self.cfg
        tok = torch.as_tensor(np.asarray(tokens, dtype=np.int64), device=self.device)
        n0 = tok.shape[0]
        x = self.emb[tok]
        rep = c.H // c.G
        scale = 1.0 / math.sqrt(c.d)
        for l, y in enumerate(self.layers):
            q, k, v = self._qkv(y, x, 0)
            Kl, Vl = k.transpose(0, 1).contiguous(), v.transpose(0, 1).contiguous()
            del k, v
            o = torch.empty(n0, c.H, c.d, device=self.device)
            for p0 in range(0, n0, chunk):
                p1 = min(n0, p0 + chunk)
                qh = q[p0:p1].transpose(0, 1)  # (H, m, d)
                kh = Kl[:, :p1].repeat_interleave(rep, dim=0)
                vh = Vl[:, :p1].repeat_interleave(rep, dim=0)
                s = (qh @ kh.transpose(1, 2)) * scale
                pos = torch.arange(p0, p1, device=self.device)[:, None]
                s = s.masked_fill(torch.arange(p1, device=self.device)[None, :] > pos,
                                  float("-inf"))
                o[p0:p1] = (torch.softmax(s, dim=-1) @ vh).transpose(0, 1)
            on_layer(l, Kl, Vl)
            del Kl, Vl
            x = self._tail(y, x, o.reshape(n0, c.H * c.d))
        return self.logits(x[-1])

    @torch.no_grad()
    def decode(self, token, pos, attn):
        """One token at position pos; attn(l, q (H, d), k (G, d), v (G, d)) -> o (H, d),
        all float32. Returns the logits."""
        c = self.cfg
        x = self.emb[torch.tensor([token], device=self.device)]
        for l, y in enumerate(self.layers):
            q, k, v = self._qkv(y, x, pos)
            o = attn(l, q[0], k[0], v[0])
            x = self._tail(y, x, o.reshape(1, c.H * c.d))
        return self.logits(x[0])


def argmax(logits):
    """Greedy token: the first of the largest logits (ties to the lowest id, docs/salca.md#model-source)."""
    return int(torch.argmax(logits).item())
