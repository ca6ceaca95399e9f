"""The Salca capture in PyTorch: `python3 -m acceltrace.capture salca` (docs/python.md).

The model source of `acceltrace capture salca --source model` (docs/models.md "Salca
capture"): the task generator ("Tasks"), a dense prefill and greedy decoding on dense logits with the
project's Llama (llama_model.py: Hugging Face checkpoints or the C capture's seeded tiny
weights), and on every (step, layer, query head) Salca's selection ("Selection") with the
baselines Std_TopK, PL_TopK, Full_Feat and Quest (6), scored against dense attention (7),
plus the substituted runs for top-1 agreement. Records as the C capture writes them, in
its order: SalcaPrefill per (l, g), per step SalcaSelect per (l, h, method) and
SalcaToken, then one Summary; each is appended to the Writer as soon as it is made.

The quantizers run as docs/salca.md writes them, in float32 (float64 for the INT8 score map),
with the heads of a layer batched: key records, query codes and integer dot products are
exact, FP16 rounding is torch's round-to-nearest-even after saturation at 65504. Dot
products, softmax sums and matrix products run in torch's order, not C's, so scores differ
from the C capture's in the last bits; selected sets then agree except where a score sits
on a rounding or threshold boundary (tests/sh/torch_capture_salca.sh counts those).
Not ported: the synthetic source (a statistical KV generator, no model to run in torch)
and the --ablation variants.
"""
import json
import math
import time

import numpy as np
import torch
import torch.nn.functional as F

from .. import messages
from .._version import __version__
from . import llama_model, salca_task
from .base import Capture, MemoryLimit, UsageError  # noqa: F401 (callers catch them here)
from .inputs import file_sha256
from .llama_model import ConfigError, Llama, LlamaConfig

PRODUCER = "acceltrace-torch " + __version__
DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}
METHODS = ["salca", "std_topk", "pl_topk", "full_feat", "quest"]
SALCA, STD, PL, FULL, QUEST = range(5)
PREFIX_MIN = 64


def parse_ratio(s):
    """salca_ratio_parse: a decimal as an exact (num, den) in lowest terms, or None."""
    if not s or s.count(".") > 1 or not all(ch.isdigit() or ch == "." for ch in s):
        return None
    digits = s.replace(".", "")
    if not digits or len(digits) > 18:
        return None
    num, den = int(digits), 10 ** (len(s) - 1 - s.index(".") if "." in s else 0)
    g = math.gcd(num, den) or 1
    return num // g, den // g


def k_fixed(n, rho, k_min):
    k = (n * rho[0] + rho[1] - 1) // rho[1]
    return min(n, max(k, k_min))


def k_dynamic(hist, n, kappa, p_mass, k_min):
    w = [0.0] * 256
    total = 0.0
    for b in range(255, -1, -1):
        w[b] = hist[b] * math.exp(kappa * (b - 255))
        total += w[b]
    target, run, count, kd = p_mass * total, 0.0, 0, n
    for b in range(255, -1, -1):
        run += w[b]
        count += hist[b]
        if run >= target:
            kd = count
            break
    return min(n, max(k_min, kd))


def prefix_ladder(n0):
    out, m = [], PREFIX_MIN
    while m < n0:
        out.append(m)
        m *= 2
    if n0:
        out.append(n0)
    return out


def encode_indices(idx):
    """Delta varints of ascending indices (formats/varint.h): varint(i0), then
    varint(i_k - i_{k-1} - 1)."""
    idx = np.asarray(idx, dtype=np.int64)
    if idx.size == 0:
        return b""
    d = np.empty_like(idx)
    d[0] = idx[0]
    d[1:] = idx[1:] - idx[:-1] - 1
    d = d.astype(np.uint64)
    nb = np.ones(d.size, dtype=np.int64)
    for k in range(1, 5):
        nb += d >= np.uint64(1 << (7 * k))
    out = np.empty(int(nb.sum()), dtype=np.uint8)
    pos = np.concatenate([[0], np.cumsum(nb)[:-1]])
    for k in range(5):
        sel = nb > k
        if not sel.any():
            break
        v = ((d[sel] >> np.uint64(7 * k)) & np.uint64(0x7F)).astype(np.uint8)
        more = (nb[sel] > k + 1).astype(np.uint8) << 7
        out[pos[sel] + k] = v | more
    return out.tobytes()


def fp16r(x):
    """fp16(x) as docs/salca.md defines it (nearest even, subnormals kept, saturating)."""
    return x.clamp(-65504.0, 65504.0).half().float()


def int8_quant(x):
    """Symmetric INT8 per row over the last dim: (codes as float, sigma), Salca's INT8 map."""
    sg = x.abs().amax(dim=-1) / 127.0
    safe = torch.where(sg == 0, torch.ones_like(sg), sg)
    c = torch.floor(x / safe[..., None] + 0.5).clamp(-127, 127)
    return torch.where(sg[..., None] == 0, torch.zeros_like(c), c), sg


def key_codes(kh):
    """2-bit asymmetric key records over the heavy channels kh (..., r):
    (codes as float, s, z)."""
    mn, mx = kh.amin(dim=-1), kh.amax(dim=-1)
    z = fp16r(mn)
    s = fp16r((mx - mn) / 3.0)
    safe = torch.where(s == 0, torch.ones_like(s), s)
    c = torch.floor((kh - z[..., None]) / safe[..., None] + 0.5).clamp(0, 3)
    return torch.where(s[..., None] == 0, torch.zeros_like(c), c), s, z


def int8_scores(a):
    """docs/salca.md#int8-scores per row of a (rows, n) float32: uint8 values as float64, lo, hi."""
    lo, hi = a.amin(dim=1), a.amax(dim=1)
    dlo = lo.double()
    rng = hi.double() - dlo
    safe = torch.where(rng == 0, torch.ones_like(rng), rng)
    v = torch.floor((a.double() - dlo[:, None]) * 255.0 / safe[:, None] + 0.5).clamp(0, 255)
    v = torch.where((hi == lo)[:, None], torch.full_like(v, 255.0), v)
    return v, lo, hi


def maxpool(x, w):
    if w <= 1:
        return x
    return F.max_pool1d(x[:, None, :], w, stride=1, padding=w // 2)[:, 0, :]


def histogram(p8):
    rows = p8.shape[0]
    h = torch.zeros(rows, 256, dtype=torch.int64, device=p8.device)
    h.scatter_add_(1, p8.long(), torch.ones_like(p8, dtype=torch.int64))
    return h


def threshold(hist, n, K, gt):
    """docs/salca.md#threshold per row: T = max{b : sum_{c >= b} H[c] >= K} (> K under gt)."""
    rev = hist.flip(1).cumsum(1)
    Kt = K[:, None]
    cond = rev > Kt if gt else rev >= Kt
    anyc = cond.any(dim=1)
    first = cond.int().argmax(dim=1)
    T = torch.where(anyc, 255 - first, torch.zeros_like(first))
    if gt:
        T = torch.where(K >= n, torch.zeros_like(T), T)
    return T


def topk_mask(s, K):
    """Exact top-K per row (larger first, ties to the lower index) as a bool mask."""
    order = torch.sort(s, dim=1, descending=True, stable=True).indices
    ranks = torch.arange(s.shape[1], device=s.device)[None, :] < K[:, None]
    m = torch.zeros_like(s, dtype=torch.bool)
    m.scatter_(1, order, ranks)
    return m


def masked_softmax(x, mask):
    """salca_softmax over the masked entries of each row (others 0): max subtracted, FP32
    exp, the sum in double, multiplied by the float of its inverse."""
    neg = torch.full_like(x, float("-inf"))
    xm = torch.where(mask, x, neg)
    mx = xm.amax(dim=1, keepdim=True)
    mx = torch.where(torch.isfinite(mx), mx, torch.zeros_like(mx))
    e = torch.where(mask, torch.exp(x - mx), torch.zeros_like(x))
    s = e.double().sum(dim=1, keepdim=True)
    inv = torch.where(s > 0, 1.0 / s, torch.zeros_like(s)).float()
    return e * inv


def cosine(a, b):
    a, b = a.double(), b.double()
    ab, aa, bb = (a * b).sum(1), (a * a).sum(1), (b * b).sum(1)
    c = ab / torch.sqrt(aa * bb)
    c = torch.where((aa == 0) | (bb == 0), torch.zeros_like(c), c)
    return torch.where((aa == 0) & (bb == 0), torch.ones_like(c), c)


class Store:
    """The KV stores of one layer, all G KV heads (salca_kv): FP32 K/V, INT8 K/V with
    scales, Quest page min/max and, after the prefill, 2-bit key records."""

    def __init__(self, G, d, r, cap, page, dev):
        self.G, self.d, self.r, self.cap, self.page, self.n = G, d, r, cap, page, 0
        z = lambda *s, dt=torch.float32: torch.zeros(*s, dtype=dt, device=dev)  # noqa: E731
        self.k, self.v = z(G, cap, d), z(G, cap, d)
        self.k8, self.v8 = z(G, cap, d, dt=torch.int8), z(G, cap, d, dt=torch.int8)
        self.sk, self.sv = z(G, cap), z(G, cap)
        pages = cap // page + 1
        self.pmin, self.pmax = z(G, pages, d), z(G, pages, d)
        self.codes = z(G, cap, r, dt=torch.uint8)
        self.ks, self.kz = z(G, cap), z(G, cap)
        self.heavy = None

    def clone(self):
        c = Store.__new__(Store)
        c.__dict__.update({k: (v.clone() if torch.is_tensor(v) else v)
                           for k, v in self.__dict__.items()})
        return c

    def append(self, k, v):
        """k, v (G, m, d) float32 appended at positions n.. (salca_kv_append)."""
        m = k.shape[1]
        a, b = self.n, self.n + m
        self.k[:, a:b], self.v[:, a:b] = k, v
        k8, sk = int8_quant(k)
        v8, sv = int8_quant(v)
        self.k8[:, a:b], self.v8[:, a:b] = k8.to(torch.int8), v8.to(torch.int8)
        self.sk[:, a:b], self.sv[:, a:b] = sk, sv
        if m == 1:  # Quest pages: a page's first token sets min and max
            p, ki = a // self.page, self.k[:, a]
            if a % self.page == 0:
                self.pmin[:, p], self.pmax[:, p] = ki, ki
            else:
                self.pmin[:, p] = torch.minimum(self.pmin[:, p], ki)
                self.pmax[:, p] = torch.maximum(self.pmax[:, p], ki)
        else:
            self._pages(a, b)
        if self.heavy is not None:
            self._encode(a, b)
        self.n = b

    def _pages(self, a, b):
        for p in range(a // self.page, (b - 1) // self.page + 1):
            i0, i1 = max(a, p * self.page), min(b, (p + 1) * self.page)
            blk = self.k[:, i0:i1]
            mn, mx = blk.amin(dim=1), blk.amax(dim=1)
            if i0 % self.page:
                mn, mx = torch.minimum(mn, self.pmin[:, p]), torch.maximum(mx, self.pmax[:, p])
            self.pmin[:, p], self.pmax[:, p] = mn, mx

    def _encode(self, a, b):
        idx = self.heavy[:, None, :].expand(self.G, b - a, self.r)
        kh = torch.gather(self.k[:, a:b], 2, idx)
        c, s, z = key_codes(kh)
        self.codes[:, a:b] = c.to(torch.uint8)
        self.ks[:, a:b], self.kz[:, a:b] = s, z

    def finish_prefill(self):
        """docs/salca.md#heavy-channels: S_j = sum |K[i, j]| in double, I_g = the r largest (ties: lower j),
        ascending; the prefix-ladder snapshots; key records of the prefill keys."""
        n = self.n
        absk = self.k[:, :n].double().abs()
        self.ladder = prefix_ladder(n)
        cs = absk.cumsum(dim=1)
        self.prefix_heavy = [self._heavy_of(cs[:, m - 1]) for m in self.ladder]
        self.chan_sum = cs[:, n - 1]
        self.heavy = self._heavy_of(self.chan_sum)
        self.n0 = n
        self._encode(0, n)

    def _heavy_of(self, s):
        order = torch.sort(s, dim=1, descending=True, stable=True).indices[:, :self.r]
        return torch.sort(order, dim=1).values


class SalcaCapture(Capture):
    """The Salca capture on the Capture interface (base.py): SalcaCapture(args) validates,
    loads the checkpoint (or the tiny model's shape) and generates the task, which the
    memory estimate needs; base.run_capture(...) does the rest."""

    name = "salca"
    summary = "Salca selections on a Llama's decode steps (the model source)"
    mem_hint = "use a shorter --length or raise --mem-limit"

    def __init__(self, a):
        self.a = a
        self.methods = sorted(set(a.methods))
        if a.pool < 1 or a.pool % 2 == 0:
            raise UsageError("pool width %d must be odd" % a.pool)
        self.rho = parse_ratio(a.retention)
        if not self.rho or self.rho[0] == 0 or self.rho[0] > self.rho[1]:
            raise UsageError("retention '%s' must be a decimal in (0, 1]" % a.retention)
        if a.quest_page < 1:
            raise UsageError("quest page size must be positive")
        self.ti = salca_task.find_task(a.task)
        if self.ti is None:
            raise UsageError("unknown task '%s'" % a.task)
        if a.device.startswith("cuda") and not torch.cuda.is_available():
            raise UsageError("--device %s: torch sees no CUDA device" % a.device)
        if a.dtype == "fp16" and not a.device.startswith("cuda"):
            raise UsageError("--dtype fp16 needs --device cuda (use bf16 or fp32 on the CPU)")
        self.dev = torch.device(a.device)
        self.tie_eps = getattr(a, "tie_eps", 0.0)
        self.ties = {}
        if self.dev.type == "cuda":  # exact integer dot products need full-precision matmuls
            torch.backends.cuda.matmul.allow_tf32 = False
            torch.backends.cudnn.allow_tf32 = False
        self._open_inputs()

    # ---- phase 1: model, task, memory estimate ----
    def _open_inputs(self):
        a = self.a
        if a.checkpoint:
            self.cfg, W, files = llama_model.load_checkpoint(a.checkpoint)
            self.ckpt_sha = {f: file_sha256(f) for f in files}
        else:
            self.cfg = LlamaConfig.tiny()
            W = None
            self.ckpt_sha = {}
        c = self.cfg
        if not 0 <= a.length <= 1 << 24:
            raise UsageError("length %d out of range (0..16777216)" % a.length)
        try:
            self.task = salca_task.generate(self.ti, a.seed, a.sample, a.length, a.max_ctx,
                                            a.max_new, c.V)
        except ValueError as ex:
            raise UsageError(str(ex)) from None
        self.n0 = self.task.n0
        self.N = a.steps if a.steps >= 0 else self.task.n_steps
        self.r = c.d // 2
        self.cap = self.n0 + self.N + 1
        if self.cap > c.max_pos + 1:
            raise UsageError("context of %d tokens exceeds the model's maximum position %d"
                             % (self.cap - 1, c.max_pos))
        for i, tok in enumerate(self.task.tokens):
            if tok >= c.V:
                raise UsageError("task token id %d exceeds the model vocabulary %d" % (tok, c.V))
        self.subst = a.top1
        self._W = W

    def mem_estimate(self):
        return self.estimate()

    def prepare(self):
        """The weights (the checkpoint's, or the tiny model's seeded ones) on the device."""
        a, c, W = self.a, self.cfg, self._W
        self._W = None
        if W is None:
            W = llama_model.seeded_weights(c, a.seed, a.tiny_outlier_pairs, a.tiny_outlier_gain)
        self.model = Llama(c, W, a.device, DTYPES[a.dtype])
        del W

    def estimate(self):
        """Bytes: the model at its dtype, the dense stores (and one copy per method for
        the substituted runs), the prefill's activations and the per-job temporaries."""
        c, n = self.cfg, self.cap
        esz = 4 if self.a.dtype == "fp32" else 2
        per_tok = 2 * c.d * 4 + 2 * c.d + 4 * 4 + self.r
        store = c.L * c.G * (per_tok * n + 2 * (n // self.a.quest_page + 1) * c.d * 4)
        copies = 1 + (len(self.methods) if self.subst else 0)
        prefill = 2 * c.G * self.n0 * c.d * (4 + 8) + self.n0 * (4 * c.D + 3 * c.F) * 4 + \
            c.H * min(self.n0, 1024) * self.n0 * 4 * 2
        jobs = c.H * n * (c.d * 4 * 3 + 64)
        return c.param_floats() * esz + store * copies + prefill + jobs

    # ---- header ----
    def producer(self):
        return "%s (torch %s, device %s, dtype %s)" % (PRODUCER, torch.__version__,
                                                       self.a.device, self.a.dtype)

    def header(self, H):
        a, c, t = self.a, self.cfg, self.task
        mask = sum(1 << m for m in self.methods)
        pj = {"source": "model", "checkpoint": a.checkpoint or "", "seed": a.seed,
              "task": self.ti.name, "sample": a.sample, "length": a.length,
              "max_ctx": a.max_ctx, "max_new": a.max_new, "steps": self.N,
              "retention": a.retention, "k_min": a.k_min,
              "k_rule": "dynamic" if a.dynamic else "fixed", "p_mass": a.p_mass,
              "pool": a.pool, "threshold_cmp": a.threshold_cmp,
              "attn_precision": a.attn_precision, "methods": mask, "no_hist": a.no_hist,
              "top1": a.top1, "quest_page": a.quest_page,
              "quest_dense_layers": a.quest_dense_layers,
              "quest_min_pages": a.quest_min_pages,
              "tiny_outlier_pairs": a.tiny_outlier_pairs,
              "tiny_outlier_gain": a.tiny_outlier_gain,
              "capture": "torch", "torch": torch.__version__, "device": a.device,
              "dtype": a.dtype, "checkpoint_sha256": self.ckpt_sha}
        mj = {"L": c.L, "H": c.H, "G": c.G, "d": c.d, "D": c.D, "F": c.F, "V": c.V,
              "rope_theta": c.rope_theta, "rope_factor": c.rope_factor,
              "name": a.checkpoint or "tiny"}
        canon = lambda o: json.dumps(o, sort_keys=True, separators=(",", ":"))  # noqa: E731
        H.params_json, H.model_json = canon(pj), canon(mj)
        H.seed = a.seed
        if a.checkpoint:  # provenance (docs/trace-format.md)
            H.source = "checkpoint"
            H.source_detail = "; ".join("%s sha256 %s" % (f, h)
                                        for f, h in sorted(self.ckpt_sha.items()))
        else:
            H.source = "seeded"
            H.source_detail = "tiny Llama with weights from the generator, seed %d" % a.seed
        H.source_detail += "; torch capture"
        s = H.salca
        s.source, s.checkpoint, s.tiny_seed = "model", a.checkpoint or "", a.seed
        s.n_layers, s.n_heads, s.n_kv_heads, s.head_dim = c.L, c.H, c.G, c.d
        s.s_f_num, s.s_f_den, s.r, s.pool = 1, 2, self.r, a.pool
        s.k_mode = "dynamic" if a.dynamic else "fixed"
        s.rho, s.rho_num, s.rho_den = a.retention, self.rho[0], self.rho[1]
        s.k_min, s.p_mass, s.threshold_cmp = a.k_min, a.p_mass, a.threshold_cmp
        s.attn_precision = a.attn_precision
        s.task_family, s.task_name = salca_task.FAMILIES[self.ti.family], self.ti.name
        s.sample, s.n_raw, s.n0, s.n_steps, s.max_ctx = a.sample, t.n_raw, t.n0, self.N, \
            a.max_ctx
        s.truncated_tokens, s.lost_spans = t.truncated, t.lost_spans
        for m in self.methods:
            mi = s.methods.add()
            mi.id, mi.name, mi.params = m, METHODS[m], ""
        for st, ln, kind, _ in t.spans:
            sp = s.spans.add()
            sp.start, sp.len, sp.kind = st, ln, kind
        s.rope_theta, s.rope_factor = c.rope_theta, c.rope_factor
        s.quest_page, s.no_hist = a.quest_page, a.no_hist

    # ---- one layer's jobs: every query head against its KV head's store ----
    def jobs(self, st, l, q, methods, metrics):
        """q (H, d) float32 against store st of layer l. Returns {method: result} with
        per-head tensors mask (H, n), K, T, hist, o and, with metrics, recall, cosine,
        runs, overlap, and the dense probabilities P."""
        a, c = self.a, self.cfg
        n, d, r, G, H = st.n, c.d, self.r, c.G, c.H
        gi = torch.arange(H, device=self.dev) * G // H
        rs = float(np.sqrt(np.float32(d)))
        k, v = st.k[gi, :n], st.v[gi, :n]
        out, cache = {}, {}
        q8, sq8 = int8_quant(q)

        def attend(mask):
            if a.attn_precision == "fp32":
                lg = torch.bmm(k, q[:, :, None])[:, :, 0] / rs
                return torch.bmm(masked_softmax(lg, mask)[:, None, :], v)[:, 0, :]
            if "k8" not in cache:
                cache["k8"], cache["v8"] = st.k8[gi, :n].float(), st.v8[gi, :n].float()
            k8, v8 = cache["k8"], cache["v8"]
            dot = torch.bmm(k8, q8[:, :, None])[:, :, 0]
            lg = ((sq8[:, None] * st.sk[gi, :n]) * dot) / rs
            P = masked_softmax(lg, mask)
            return torch.bmm((P * st.sv[gi, :n])[:, None, :], v8)[:, 0, :]

        # Salca's selection; its K is every method's K (the baselines share it)
        heavy = st.heavy[gi]
        qh = torch.gather(q, 1, heavy)
        sq = qh.abs().amax(dim=1) / 3.0
        safe = torch.where(sq == 0, torch.ones_like(sq), sq)
        qc = torch.floor(qh / safe[:, None] + 0.5).clamp(-3, 3)
        qc = torch.where(sq[:, None] == 0, torch.zeros_like(qc), qc)
        Dm = torch.bmm(st.codes[gi, :n].float(), qc[:, :, None])[:, :, 0]
        Q = qc.sum(dim=1)
        At = fp16r(st.ks[gi, :n] * Dm + st.kz[gi, :n] * Q[:, None])
        a8, lo, hi = int8_scores(At)
        p8 = maxpool(a8.float(), a.pool)
        hist = histogram(p8)
        if a.dynamic:
            hc = hist.cpu().tolist()
            Ks = []
            for h in range(H):
                kappa = (float(hi[h]) - float(lo[h])) * float(sq[h]) / (255.0 * math.sqrt(d))
                Ks.append(k_dynamic(hc[h], n, kappa, a.p_mass, a.k_min))
            K = torch.tensor(Ks, device=self.dev)
        else:
            K = torch.full((H,), k_fixed(n, self.rho, a.k_min), device=self.dev)
        gt = a.threshold_cmp == "gt"

        eps = self.tie_eps if metrics else 0.0

        def hist_sel(p8x, histx):
            T = threshold(histx, n, K, gt)
            x = {"mask": p8x >= T[:, None].float(), "K": K, "T": T, "hist": histx}
            if eps > 0:  # ties: pooled values at T - 1 or T
                Tf = T[:, None].float()
                x["bnd"] = (p8x >= Tf - 1) & (p8x <= Tf)
            return x

        def near_cut(sc, Kr):
            """Entries within eps * max|score| of the Kr-th largest score of each row."""
            srt = torch.sort(sc, dim=1, descending=True).values
            cut = torch.gather(srt, 1, (Kr.clamp(min=1) - 1).long()[:, None])
            tol = eps * sc.abs().amax(dim=1, keepdim=True)
            return (sc - cut).abs() <= tol
        out[SALCA] = hist_sel(p8, hist)
        s = None
        if metrics or methods & {STD, PL, FULL}:
            s = torch.bmm(k, q[:, :, None])[:, :, 0]
        if metrics or STD in methods:
            out[STD] = {"mask": topk_mask(s, K), "K": K, "T": torch.zeros_like(K)}
            if eps > 0:
                out[STD]["bnd"] = near_cut(s, K)
        if PL in methods:
            sp = maxpool(s, a.pool)
            out[PL] = {"mask": topk_mask(sp, K), "K": K, "T": torch.zeros_like(K)}
            if eps > 0:
                out[PL]["bnd"] = near_cut(sp, K)
        if FULL in methods:
            f8 = maxpool(int8_scores(s)[0].float(), a.pool)
            out[FULL] = hist_sel(f8, histogram(f8))
        if QUEST in methods:
            page = a.quest_page
            pages = (n + page - 1) // page
            mn, mx = st.pmin[gi, :pages], st.pmax[gi, :pages]
            U = torch.maximum(q[:, None, :] * mx, q[:, None, :] * mn).sum(dim=2)
            npg = []
            for kh in K.tolist():
                kq = n if l < a.quest_dense_layers else kh
                if a.quest_min_pages * page > kq:
                    kq = pages * page if a.quest_min_pages * page > n else \
                        a.quest_min_pages * page
                npg.append(min((kq + page - 1) // page, pages))
            npg = torch.tensor(npg, device=self.dev)
            pm = topk_mask(U, npg)
            tokpage = torch.arange(n, device=self.dev) // page
            out[QUEST] = {"mask": pm[:, tokpage], "K": K, "T": torch.zeros_like(K)}
            if eps > 0:
                out[QUEST]["bnd"] = near_cut(U, npg)[:, tokpage]
        for m in list(out):
            if m in methods:
                out[m]["o"] = attend(out[m]["mask"])
        if not metrics:
            return out
        P = masked_softmax(s / rs, torch.ones_like(s, dtype=torch.bool))
        od = torch.bmm(P[:, None, :], v)[:, 0, :]
        std = out[STD]["mask"]
        Pd = P.double()
        for m in methods:
            x = out[m]
            mk = x["mask"]
            x["recall"] = (Pd * mk).sum(1)
            x["cosine"] = cosine(x["o"], od)
            prev = torch.cat([torch.zeros(H, 1, dtype=torch.bool, device=self.dev),
                              mk[:, :-1]], dim=1)
            x["runs"] = (mk & ~prev).sum(1)
            x["overlap"] = (mk & std).sum(1).double() / K.double()
        out["P"] = P
        return out

    # ---- the capture ----
    def run(self, sink):
        a, c = self.a, self.cfg
        t0 = time.time()
        methods = set(self.methods)
        L, H, G = c.L, c.H, c.G
        acc = {m: {"recall": [], "cos": [], "ret": 0.0, "over": 0.0, "runlen": 0.0,
                   "agree": 0, "ldiff": 0.0, "cov_sum": [0.0] * 8, "cov_min": [1.0] * 8}
               for m in self.methods}
        needles = [sp for sp in self.task.spans if sp[2] in (salca_task.NEEDLE,
                                                              salca_task.KEY)][:8]
        cov_n = [0] * len(needles)
        self.selects = self.sel_bytes = 0
        w = sink  # every record after the header, in the C capture's order
        stores = []

        def on_layer(l, Kl, Vl):
            st = Store(G, c.d, self.r, self.cap, a.quest_page, self.dev)
            st.append(Kl, Vl)
            st.finish_prefill()
            stores.append(st)
        logits = self.model.prefill(self.task.tokens, on_layer)
        token = llama_model.argmax(logits)
        for l in range(L):
            self._emit_prefill(w, stores[l], l)
        subst = {m: [s.clone() for s in stores] for m in self.methods} if self.subst else {}
        for t in range(self.N):
            pos = self.n0 + t
            qs = [None] * L

            def dense_hook(l, q, k, v):
                st = stores[l]
                st.append(k[:, None, :], v[:, None, :])
                qs[l] = q
                n = st.n
                gi = torch.arange(H, device=self.dev) * G // H
                kk, vv = st.k[gi, :n], st.v[gi, :n]
                lg = torch.bmm(kk, q[:, :, None])[:, :, 0] / float(np.sqrt(np.float32(c.d)))
                P = masked_softmax(lg, torch.ones_like(lg, dtype=torch.bool))
                return torch.bmm(P[:, None, :], vv)[:, 0, :]
            dl = self.model.decode(token, pos, dense_hook)
            nxt = llama_model.argmax(dl)
            n = pos + 1
            for l in range(L):
                res = self.jobs(stores[l], l, qs[l], methods, True)
                self._emit_selects(w, res, t, l, n, acc, needles, cov_n)
            if self.subst:
                self._emit_token(w, subst, t, pos, token, nxt, dl, acc)
            token = nxt
            sink.progress(t + 1, self.N)
        self.summary = self._emit_summary(w, acc, needles, cov_n)
        self.wall = time.time() - t0
        return self.summary

    def _emit_prefill(self, w, st, l):
        hv = st.heavy.cpu().numpy().astype(np.uint8)
        cs = st.chan_sum.cpu().numpy().astype(np.float32)
        ph = [x.cpu().numpy().astype(np.uint8) for x in st.prefix_heavy]
        for g in range(st.G):
            pf = messages["SalcaPrefill"]()
            pf.l, pf.g, pf.n0 = l, g, st.n0
            pf.heavy = hv[g].tobytes()
            pf.chan_sum.extend(cs[g].tolist())
            pf.prefix_len.extend(st.ladder)
            pf.prefix_heavy = b"".join(x[g].tobytes() for x in ph)
            w.append(pf)

    def _emit_selects(self, w, res, t, l, n, acc, needles, cov_n):
        a, c = self.a, self.cfg
        P = res["P"].double()
        cov = {}
        for m in self.methods:
            x = res[m]
            mk = x["mask"]
            cv = []
            for (s0, ln, _, _) in needles:
                allm = P[:, s0:s0 + ln].sum(1)
                inm = (P[:, s0:s0 + ln] * mk[:, s0:s0 + ln]).sum(1)
                cv.append(torch.where(allm > 0, inm / torch.where(allm > 0, allm,
                                                                   torch.ones_like(allm)),
                                      torch.ones_like(allm)).float().cpu().tolist())
            cov[m] = cv
            x["cpu"] = {k: x[k].cpu() for k in ("mask", "K", "T", "recall", "cosine", "runs",
                                               "overlap")}
            if "bnd" in x:
                x["cpu"]["bnd"] = x["bnd"].cpu()
            if "hist" in x and not a.no_hist:
                x["cpu"]["hist"] = x["hist"].cpu()
        for h in range(c.H):
            for m in self.methods:
                x = res[m]["cpu"]
                idx = torch.nonzero(x["mask"][h])[:, 0].numpy()
                s = messages["SalcaSelect"]()
                s.t, s.l, s.h, s.g, s.method, s.n_ctx = t, l, h, h * c.G // c.H, m, n
                Kh, cnt = int(x["K"][h]), int(idx.size)
                s.k, s.threshold, s.count = Kh, int(x["T"][h]), cnt
                s.sel = encode_indices(idx)
                s.recall, s.cosine = float(x["recall"][h]), float(x["cosine"][h])
                s.overshoot, s.runs = cnt - Kh, int(x["runs"][h])
                s.overlap = float(x["overlap"][h])
                if "hist" in x:
                    s.hist.extend(x["hist"][h].tolist())
                if "bnd" in x:
                    self.ties["%d/%d/%d/%d" % (t, l, h, m)] = \
                        torch.nonzero(x["bnd"][h])[:, 0].tolist()
                w.append(s)
                self.selects += 1
                self.sel_bytes += len(s.sel)
                ac = acc[m]
                ac["recall"].append(s.recall)
                ac["cos"].append(s.cosine)
                ac["ret"] += cnt / n
                ac["over"] += (cnt - Kh) / n
                ac["runlen"] += cnt / s.runs if s.runs else 0.0
                for i in range(len(needles)):
                    v = cov[m][i][h]
                    ac["cov_min"][i] = min(ac["cov_min"][i], v)
                    ac["cov_sum"][i] += v
            for i in range(len(needles)):
                cov_n[i] += 1

    def _emit_token(self, w, subst, t, pos, token, nxt, dl, acc):
        c = self.cfg
        ids, toks = [], []
        dmax = float(dl.double().abs().max())
        for m in self.methods:
            stores = subst[m]

            def hook(l, q, k, v):
                st = stores[l]
                st.append(k[:, None, :], v[:, None, :])
                return self.jobs(st, l, q, {m}, False)[m]["o"]
            lg = self.model.decode(token, pos, hook)
            tok = llama_model.argmax(lg)
            ids.append(m)
            toks.append(tok)
            md = float((lg.double() - dl.double()).abs().max())
            if dmax > 0 and md / dmax > acc[m]["ldiff"]:
                acc[m]["ldiff"] = md / dmax
            acc[m]["agree"] += tok == nxt
        rec = messages["SalcaToken"]()
        rec.t, rec.dense_token = t, nxt
        rec.methods.extend(ids)
        rec.tokens.extend(toks)
        w.append(rec)
        del c

    def _emit_summary(self, w, acc, needles, cov_n):
        S = messages["Summary"]()
        S.workload = "salca"
        S.wall_seconds = 0.0
        ss = S.salca
        rows = []
        for m in self.methods:
            ac = acc[m]
            jobs = len(ac["recall"])
            r = {"name": METHODS[m], "id": m, "jobs": jobs}
            for key, vals in (("recall", ac["recall"]), ("cosine", ac["cos"])):
                v = sorted(vals)
                r[key + "_mean"] = sum(vals) / jobs if jobs else 0.0
                r[key + "_median"] = v[(jobs - 1) // 2] if jobs else 0.0
                r[key + "_p5"] = v[int(math.floor(0.05 * (jobs - 1)))] if jobs else 0.0
            r["retention"] = ac["ret"] / jobs if jobs else 0.0
            r["overshoot"] = ac["over"] / jobs if jobs else 0.0
            r["top1"] = ac["agree"] / self.N if self.subst and self.N else -1.0
            r["logit_diff"] = ac["ldiff"] if self.subst else -1.0
            rec_n = 0
            for i in range(len(needles)):
                mean = ac["cov_sum"][i] / cov_n[i] if cov_n[i] else 1.0
                rec_n += mean >= 0.9
            r["spans"], r["recalled"] = len(needles), rec_n
            ms = ss.methods.add()
            ms.method, ms.name, ms.jobs = m, METHODS[m], jobs
            ms.recall_mean, ms.recall_median, ms.recall_p5 = (r["recall_mean"],
                                                              r["recall_median"], r["recall_p5"])
            ms.cosine_mean, ms.cosine_median, ms.cosine_p5 = (r["cosine_mean"],
                                                              r["cosine_median"], r["cosine_p5"])
            ms.retention_mean, ms.overshoot_mean = r["retention"], r["overshoot"]
            ms.top1_agreement = r["top1"]
            ms.spans_total, ms.spans_recalled = len(needles), rec_n
            ms.runs_mean_len = ac["runlen"] / jobs if jobs else 0.0
            rows.append(r)
        table = "%-10s %7s %8s %8s %8s %8s %9s %9s %6s %8s\n" % (
            "method", "jobs", "recall", "rec_p5", "cosine", "cos_p5", "retention",
            "overshoot", "top1", "needles")
        for r in rows:
            top1 = "%.3f" % r["top1"] if r["top1"] >= 0 else "-"
            nd = "%d/%d" % (r["recalled"], r["spans"]) if r["spans"] else "-"
            table += "%-10s %7d %8.4f %8.4f %8.4f %8.4f %8.3f%% %8.3f%% %6s %8s\n" % (
                r["name"], r["jobs"], r["recall_mean"], r["recall_p5"], r["cosine_mean"],
                r["cosine_p5"], 100 * r["retention"], 100 * r["overshoot"], top1, nd)
        ss.selects, ss.sel_bytes, ss.table = self.selects, self.sel_bytes, table
        w.append(S)
        return {"rows": rows, "table": table}


__all__ = ["SalcaCapture", "UsageError", "ConfigError", "MemoryLimit", "encode_indices"]
