"""The DiSC capture in PyTorch (`python3 -m acceltrace.capture disc`): the sampler, CTR and
ST of capture/disc/disc_capture.c on the torch DiT of dit_model.py, writing the same
records (DiscStep, DiscMask, Summary; formats/disc_records.proto) through
acceltrace.Writer. Numbers follow the C code: sampler coefficients in double with float32
latents (dit_sampler.c), the CTR threshold by bisection on the float32 bit pattern
(disc_ctr.c), ST thresholds theta = alpha / N in float32, FLOPs by the closed forms of
disc_flops.c, load-balance statistics of formats/disc_hash.h (row sums in ascending row
order). DiscMask records are written per step and (batch, block, head), right after the
step, from the state's packed masks: no step's masks are gathered in memory.

Ties: with tie_eps > 0, every generated probability within tie_eps * theta of theta and
every CTR distance within tie_eps * tau of tau is a tie, collected per record (the
agreement test accepts a bit that differs from the C capture only at a tie).
"""
import json
import math
import time

import numpy as np
import torch

from .. import messages
from .._version import __version__
from . import dit_model, png
from .base import Capture
from .dit_model import ConfigError, DitConfig, DitState
from .inputs import file_sha256, load_text, seeded_latent, seeded_text

PRODUCER = "acceltrace-torch " + __version__
FLOP_NAMES = ["sa_qkv", "sa_qk", "sa_softmax", "sa_pv", "sa_proj", "ca_q", "ca_kv", "ca_qk",
              "ca_softmax", "ca_pv", "ca_proj", "ffn_up", "ffn_act", "ffn_down", "vec",
              "embed"]
HASHES = ["mod", "mul", "range"]
K_ODD = 0x9E3779B1
LB_BITS = [3, 4, 5, 6, 7]
LB_BINS = 20
DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}


# ---- schedule and sampler (dit_sampler.c) ----

def timestep(k, K):
    return int(math.floor(999 * (K - k) / K + 0.5))


def alpha_bar(t):
    ab = 1.0
    for i in range(min(t, 999) + 1):
        ab *= 1.0 - (1e-4 + (0.02 - 1e-4) * i / 999.0)
    return ab


def schedule(K):
    t = [timestep(k, K) for k in range(K)]
    al, sg, lam = [], [], []
    for k in range(K):
        ab = alpha_bar(t[k])
        al.append(math.sqrt(ab))
        sg.append(math.sqrt(1.0 - ab))
        lam.append(math.log(al[k] / sg[k]))
    return t, al + [1.0], sg + [0.0], lam + [math.inf]


def sample(kind, sched, x, eps_fn, post_fn):
    """dit_sample: K steps from x (float32), eps_fn(k, t, x) -> eps, post_fn(k, x_next)."""
    t, al, sg, lam = sched
    K = len(t)
    x = x.copy()
    x0p = None
    for k in range(K):
        eps = eps_fn(k, t[k], x).astype(np.float64)
        a, s, a1, s1 = al[k], sg[k], al[k + 1], sg[k + 1]
        x0 = ((x.astype(np.float64) - s * eps) / a).astype(np.float32)
        if kind == "ddim":
            x = (a1 * x0.astype(np.float64) + s1 * eps).astype(np.float32)
        elif k == K - 1:
            x = x0.copy()
        else:
            h = lam[k + 1] - lam[k]
            c1, c2 = s1 / s, -a1 * math.expm1(-h)
            if k == 0:
                x = (c1 * x.astype(np.float64) + c2 * x0.astype(np.float64)).astype(np.float32)
            else:
                r = (lam[k] - lam[k - 1]) / h
                w0, w1 = 1.0 + 1.0 / (2.0 * r), 1.0 / (2.0 * r)
                D = w0 * x0.astype(np.float64) - w1 * x0p.astype(np.float64)
                x = (c1 * x.astype(np.float64) + c2 * D).astype(np.float32)
        x0p = x0
        post_fn(k, x)
    return x


# ---- CTR (disc_ctr.c) ----

def parse_target(s):
    ok = len(s) >= 1 and s[0].isdigit() and (len(s) == 1 or (
        s[1] == "." and 3 <= len(s) <= 11 and s[2:].isdigit()))
    if not ok:
        raise ConfigError("bad CTR target '%s' (a decimal 0 <= R <= 1 with at most 9 digits "
                          "after the point)" % s)
    f = len(s) - 2 if len(s) > 1 else 0
    num = int(s.replace(".", ""))
    if num > 10 ** f:
        raise ConfigError("bad CTR target '%s' (a decimal 0 <= R <= 1 with at most 9 digits "
                          "after the point)" % s)
    return num, f


def token_max(xk, xprev, p):
    c, lat, _ = xk.shape
    g = lat // p
    v = np.abs(xk - xprev).reshape(c, g, p, g, p)
    return v.max(axis=(0, 2, 4)).reshape(g * g).astype(np.float32)


def tau_for_prune(d, n_prune):
    if n_prune == 0 or d.size == 0:
        return np.float32(0.0)
    mx = np.float32(max(0.0, float(d.max())))
    top = np.nextafter(mx, np.float32(np.inf), dtype=np.float32)
    lo, hi = 0, int(np.array(top, dtype=np.float32).view(np.uint32))
    while lo < hi:
        mid = lo + (hi - lo) // 2
        tv = np.array(mid, dtype=np.uint32).view(np.float32)
        if int(np.count_nonzero(d < tv)) >= n_prune:
            hi = mid
        else:
            lo = mid + 1
    return np.array(lo, dtype=np.uint32).view(np.float32)[()]


def quantile(sorted_d, q):
    n = sorted_d.size
    r = max(1, (q * n + 99) // 100)
    return float(sorted_d[r - 1])


# ---- load balance (formats/disc_hash.c) and FLOPs (disc_flops.c) ----

class LoadBalance:
    """Per-row bucket counts of every hash and U = 2^b by one matmul with a one-hot
    column-to-bucket matrix; sums over rows in ascending order (cumsum)."""

    def __init__(self, n_cols, device):
        j = np.arange(n_cols, dtype=np.uint64)
        cols, self.segs = [], []
        for h in range(3):
            for b in LB_BITS:
                if h == 0:
                    v = j & np.uint64((1 << b) - 1)
                elif h == 1:
                    v = ((j * np.uint64(K_ODD)) & np.uint64(0xFFFFFFFF)) >> np.uint64(32 - b)
                else:
                    v = (j << np.uint64(b)) // np.uint64(n_cols)
                oh = np.zeros((n_cols, 1 << b), dtype=np.float32)
                oh[np.arange(n_cols), v.astype(np.int64)] = 1.0
                self.segs.append((sum(c.shape[1] for c in cols), 1 << b))
                cols.append(oh)
        self.onehot = torch.from_numpy(np.concatenate(cols, axis=1)).to(device)
        self.n_cols = n_cols

    def mask_stats(self, rows):
        """rows: bool (R, N) on the device, the computed rows in ascending order. Returns
        nnz, lb_max[15], lb_std[15], bin_rows[20], bin_nnz[20], bin_max[300], bin_std[300]."""
        R = rows.shape[0]
        lbmax = np.zeros(15, dtype=np.uint64)
        lbstd = np.zeros(15)
        brows = np.zeros(LB_BINS, dtype=np.uint64)
        bnnz = np.zeros(LB_BINS, dtype=np.uint64)
        bmax = np.zeros((LB_BINS, 15), dtype=np.uint64)
        bstd = np.zeros((LB_BINS, 15))
        if R == 0:
            return 0, lbmax, lbstd, brows, bnnz, bmax.ravel(), bstd.ravel()
        counts = (rows.float() @ self.onehot).cpu().numpy().astype(np.float64)
        nnz_r = rows.sum(dim=1).cpu().numpy().astype(np.int64)
        n = self.n_cols
        bins = np.minimum(LB_BINS - 1, (20 * (n - nnz_r)) // n)
        sig = np.empty((R, 15))
        mx = np.empty((R, 15), dtype=np.uint64)
        for i, (o, u) in enumerate(self.segs):
            c = counts[:, o:o + u]
            mu = nnz_r.astype(np.float64) / u
            ss = np.cumsum((c - mu[:, None]) ** 2, axis=1)[:, -1]
            sig[:, i] = np.sqrt(ss / u)
            mx[:, i] = c.max(axis=1).astype(np.uint64)
        lbstd = np.cumsum(sig, axis=0)[-1]
        lbmax = mx.sum(axis=0, dtype=np.uint64)
        for bn in np.unique(bins):
            sel = bins == bn
            brows[bn] = int(sel.sum())
            bnnz[bn] = int(nnz_r[sel].sum())
            bmax[bn] = mx[sel].sum(axis=0, dtype=np.uint64)
            bstd[bn] = np.cumsum(sig[sel], axis=0)[-1]
        return (int(nnz_r.sum()), lbmax, lbstd, brows, bnnz, bmax.ravel(), bstd.ravel())


def flops_step(cfg, B, nk, st, nnz_block):
    """disc_flops_step: (dense, ctr, all) lists of 16 class totals for one step."""
    N, d, h, T, dh = cfg.tokens, cfg.hidden, cfg.heads, cfg.text_tokens, cfg.head_dim
    d2 = d * d
    p2 = cfg.patch * cfg.patch

    def block(Nk, f):
        add = [2 * (Nk + 2 * N) * d2, 2 * Nk * N * d, 5 * h * Nk * N, 2 * Nk * N * d,
               2 * Nk * d2, 2 * Nk * d2, 4 * T * d2, 2 * Nk * T * d, 5 * h * Nk * T,
               2 * Nk * T * d, 2 * Nk * d2, 8 * Nk * d2, 32 * Nk * d, 8 * Nk * d2,
               7 * N * d + 12 * Nk * d, 0]
        for i in range(16):
            f[i] += add[i]

    def per_pass(f):
        f[15] += 2 * B * (N * cfg.c_in * p2 * d + T * cfg.caption * d + T * d * d +
                          N * d * p2 * cfg.c_out) + 2 * (256 * d + 7 * d * d)
        f[14] += 7 * B * N * d

    fd, fc, fa = [0] * 16, [0] * 16, [0] * 16
    for blk in range(cfg.depth):
        for _ in range(B):
            block(N, fd)
            block(nk, fc)
            block(nk, fa)
        if st == "off":
            continue
        nnz = nnz_block[blk]
        fa[2] -= B * 5 * h * nk * N
        fa[3] -= B * 2 * nk * N * d
        if st == "generate":
            fa[2] += B * 6 * h * nk * N + 2 * nnz
        else:
            fa[1] -= B * 2 * nk * N * d
            fa[1] += 2 * dh * nnz
            fa[2] += 5 * nnz
        fa[3] += 2 * dh * nnz
    for f in (fd, fc, fa):
        per_pass(f)
    return fd, fc, fa


_POP8 = np.array([bin(i).count("1") for i in range(256)], dtype=np.uint32)


def row_popcount(packed):
    """Set bits per row of a packed (N, nb) uint8 mask, as uint32."""
    return _POP8[packed.cpu().numpy()].sum(axis=1, dtype=np.uint32)


def rel_err(x, ref):
    x, ref = x.astype(np.float64).ravel(), ref.astype(np.float64).ravel()
    return math.sqrt(float(np.sum((x - ref) ** 2))) / math.sqrt(float(np.sum(ref ** 2)))


def cosine(x, ref):
    x, ref = x.astype(np.float64).ravel(), ref.astype(np.float64).ravel()
    return float(np.dot(x, ref) / math.sqrt(float(np.dot(x, x)) * float(np.dot(ref, ref))))


def psnr(x, ref):
    x, ref = x.astype(np.float64).ravel(), ref.astype(np.float64).ravel()
    se = float(np.sum((x - ref) ** 2))
    if se == 0.0:
        return math.inf
    rng = float(ref.max() - ref.min())
    return 10.0 * math.log10(rng * rng / (se / x.size))


def parse_keep(sel, L, H, K, B):
    """--keep-masks (capture/disc/disc_keep.h grammar) -> predicate(step, batch, blk, h)."""
    if sel == "none":
        return lambda k, b, l, h: False
    keys = {"blocks": L, "heads": H, "steps": K, "batch": B}
    chosen = {}
    for item in sel.split(";"):
        if "=" not in item:
            raise ConfigError("bad --keep-masks item '%s' (key=all|none|ranges)" % item)
        key, val = item.split("=", 1)
        if key not in keys:
            raise ConfigError("unknown --keep-masks key '%s' in '%s'" % (key, sel))
        if key in chosen:
            raise ConfigError("repeated --keep-masks key '%s' in '%s'" % (key, sel))
        n = keys[key]
        if val == "all":
            s = set(range(n))
        elif val == "none":
            s = set()
        else:
            s = set()
            for r in val.split(","):
                try:
                    a, _, b = r.partition("-")
                    a, b = int(a), int(b) if b else int(a)
                except ValueError:
                    raise ConfigError("bad --keep-masks range '%s' in '%s'" % (r, sel)) from None
                if a > b or a < 0 or b >= n:
                    raise ConfigError("--keep-masks %s range '%s' out of 0..%d" % (key, r, n - 1))
                s.update(range(a, b + 1))
        chosen[key] = s
    full = {k: set(range(n)) for k, n in keys.items()}
    full.update(chosen)
    return lambda k, b, l, h: (l in full["blocks"] and h in full["heads"] and
                               k in full["steps"] and b in full["batch"])


def canon(obj):
    return json.dumps(obj, sort_keys=True, separators=(",", ":"))


class DiscCapture(Capture):
    """The DiSC capture on the Capture interface (base.py): DiscCapture(args), then
    base.run_capture(...) -> summary dict."""

    name = "disc"
    summary = "DiT denoising with CTR and ST executed for real (DiSC)"
    mem_hint = "use a smaller --image-size or raise --mem-limit"

    def __init__(self, a):
        self.a = a
        self.cfg = DitConfig(a.model, a.image_size)
        cfg = self.cfg
        self.K = a.steps or cfg.default_steps
        if not 1 <= self.K <= 1000:
            raise ConfigError("steps %d out of range (1..1000)" % self.K)
        self.B = 2 if a.cfg is not None else 1
        self.n_prune = 0
        if a.ctr == "target":
            num, f = parse_target(a.ctr_target)
            self.n_prune = (num * cfg.tokens + 10 ** f - 1) // 10 ** f
        if a.st_refresh < 1:
            raise ConfigError("--st-refresh must be >= 1")
        if a.st == "target" and not 0.0 <= a.st_target <= 1.0:
            raise ConfigError("--st-target must lie in [0, 1]")
        if a.st == "theta" and not 0.0 <= a.st_theta <= 1.0:
            raise ConfigError("--st-theta must lie in [0, 1]")
        if a.st == "alpha" and not (a.st_alpha >= 0 and math.isfinite(a.st_alpha)):
            raise ConfigError("--st-alpha must be a finite number >= 0")
        if a.device.startswith("cuda") and not torch.cuda.is_available():
            raise ConfigError("--device %s: torch sees no CUDA device" % a.device)
        if a.dtype == "fp16" and not a.device.startswith("cuda"):
            raise ConfigError("--dtype fp16 needs --device cuda (torch has no float16 matmul "
                              "on the CPU; use bf16 or fp32)")
        self.keep = parse_keep(a.keep_masks, cfg.depth, cfg.heads, self.K, self.B)
        self.ties = {"st": {}, "ctr": {}}
        self.tie_eps = a.tie_eps

    def mem_estimate(self):
        """Bytes, as disc_capture.c estimates them (docs/models.md "Memory estimates"): the float32 parameters, the
        CTR caches and the packed ST masks (plus the score scratch of --st-target)."""
        a, cfg = self.a, self.cfg
        N, d, L, h, B = cfg.tokens, cfg.hidden, cfg.depth, cfg.heads, self.B
        est = 4.0 * cfg.param_count()
        if a.ctr != "off":
            est += 3.0 * L * B * N * d * 4.0
        if a.st != "off":
            est += h * L * B * N * math.ceil(N / 64.0) * 8.0
        if a.st == "target":
            est += h * B * N * N * 4.0
        return int(math.ceil(est))

    def mem_what(self):
        return "capture disc of %s at %d px" % (self.cfg.name, self.cfg.image)

    def save_weights(self, path):
        """The model's weights (seeded or loaded) as F32 safetensors, diffusers names."""
        from .png import write_safetensors
        write_safetensors(path, {n: t.detach().float().cpu().numpy() for n, t in self.W.items()})

    def prepare(self):
        """Loads or seeds the weights and the text, builds the model (after the memory
        check) and writes --save-weights."""
        self._load()
        if self.a.save_weights:
            self.save_weights(self.a.save_weights)

    def _load(self):
        a, cfg = self.a, self.cfg
        if a.weights and not a.weights[0].startswith("seed:"):
            self.W = dit_model.load_weights(cfg, a.weights)
            self.wsha = [file_sha256(p) for p in a.weights]
            self.wsource = "file"
        else:
            ws = int(a.weights[0][5:]) if a.weights else 0
            self.W = dit_model.seeded_weights(cfg, ws)
            self.wsha = []
            self.wsource = "torch-seed:%d" % ws
        T, Dc = cfg.text_tokens, cfg.caption
        if a.text and not a.text.startswith("seed:"):
            text = load_text(a.text, T, Dc)
            self.text_source = a.text
        else:
            ts = int(a.text[5:]) if a.text else 1
            text = seeded_text(ts, T, Dc)
            self.text_source = "seed:%d" % ts
        self.text_sha = __import__("hashlib").sha256(text.tobytes()).hexdigest()
        texts = [text]
        self.null_source = self.null_sha = ""
        if self.B == 2:
            null = (load_text(a.null_text, T, Dc) if a.null_text
                    else np.zeros((T, Dc), dtype=np.float32))
            self.null_source = a.null_text or "zeros"
            self.null_sha = __import__("hashlib").sha256(null.tobytes()).hexdigest()
            texts.append(null)
        self.model = dit_model.Dit(cfg, self.W, a.device, DTYPES[a.dtype])
        self.model.set_text(texts)
        self.x_init = seeded_latent(a.seed, cfg.c_in, cfg.lat)
        self.sched = schedule(self.K)
        self.lb = LoadBalance(cfg.tokens, self.model.device)

    def producer(self):
        return "%s (torch %s, device %s, dtype %s)" % (PRODUCER, torch.__version__,
                                                       self.a.device, self.a.dtype)

    def header(self, H):
        a, cfg = self.a, self.cfg
        pj = {"model": cfg.name, "image_size": cfg.image, "steps": self.K,
              "sampler": a.sampler, "cfg": a.cfg, "seed": a.seed,
              "weights": a.weights if self.wsource == "file" else self.wsource,
              "text": self.text_source, "null_text": self.null_source, "ctr": a.ctr,
              "st": a.st, "st_refresh": a.st_refresh, "keep_masks": a.keep_masks,
              "compare_dense": a.compare_dense, "capture": "torch", "device": a.device,
              "dtype": a.dtype, "torch": torch.__version__}
        if a.ctr == "tau":
            pj["ctr_tau"] = a.ctr_tau
        if a.ctr == "target":
            pj["ctr_target"] = a.ctr_target
        if a.st == "alpha":
            pj["st_alpha"] = a.st_alpha
        if a.st == "theta":
            pj["st_theta"] = a.st_theta
        if a.st == "target":
            pj["st_target"] = a.st_target
        mj = {"name": cfg.name, "depth": cfg.depth, "hidden": cfg.hidden, "heads": cfg.heads,
              "patch": cfg.patch, "in_channels": cfg.c_in, "out_channels": cfg.c_out,
              "caption_width": cfg.caption, "text_tokens": cfg.text_tokens,
              "image_size": cfg.image, "tokens": cfg.tokens}
        H.params_json, H.model_json = canon(pj), canon(mj)
        H.seed = a.seed
        if self.wsource == "file":  # provenance (docs/trace-format.md)
            H.source = "checkpoint"
            H.source_detail = "; ".join("%s sha256 %s" % (f, h)
                                        for f, h in zip(a.weights, self.wsha))
        else:
            H.source = "seeded"
            H.source_detail = "weights from the documented generator (%s)" % self.wsource
        H.source_detail += "; text %s; torch capture" % self.text_source
        d = H.disc
        cfg.fill_disc_header(d)
        d.weights_source = self.wsource
        d.weights_seeded = self.wsource != "file"
        if self.wsource == "file":
            d.weight_files.extend(a.weights)
            d.weight_sha256.extend(self.wsha)
        d.text_source, d.text_sha256 = self.text_source, self.text_sha
        d.null_text_source, d.null_text_sha256 = self.null_source, self.null_sha
        d.seed, d.sampler, d.steps = a.seed, a.sampler, self.K
        d.cfg_scale = a.cfg if a.cfg is not None else 0.0
        d.batch = self.B
        t, al, sg, _ = self.sched
        d.timesteps.extend(t)
        d.alphas.extend(al)
        d.sigmas.extend(sg)
        d.ctr_mode = a.ctr
        d.ctr_tau = a.ctr_tau if a.ctr == "tau" else 0.0
        d.ctr_target = a.ctr_target if a.ctr == "target" else ""
        d.st_mode = a.st
        d.st_alpha = a.st_alpha if a.st == "alpha" else 0.0
        d.st_theta = a.st_theta if a.st == "theta" else 0.0
        d.st_target = a.st_target if a.st == "target" else 0.0
        d.st_refresh = a.st_refresh
        d.keep_masks = a.keep_masks
        d.lb_hashes.extend(HASHES)
        d.lb_k_odd = K_ODD
        d.lb_units.extend(1 << b for b in LB_BITS)
        d.lb_bins = LB_BINS
        d.flop_classes.extend(FLOP_NAMES)
        d.compare_dense = a.compare_dense

    def _run(self, ctr, st, main, dense_traj, writer, progress):
        """One sampler run (one_run of disc_capture.c); returns (x_K, trajectory)."""
        a, cfg = self.a, self.cfg
        N, L, H, B = cfg.tokens, cfg.depth, cfg.heads, self.B
        dev = self.model.device
        state = DitState(cfg, B, ctr, st, dev)
        if a.st == "alpha":
            theta = [float(np.float32(a.st_alpha) / np.float32(N))] * L
            self.alpha = [a.st_alpha] * L
        elif a.st == "target":
            theta = [0.0] * L
            self.alpha = [0.0] * L
            self.st_short = [False] * L
        else:
            theta = [float(np.float32(a.st_theta))] * L
            self.alpha = [math.nan] * L
        theta32 = [float(np.float32(x)) for x in theta]
        cur = {"prev": None}
        traj = []
        acc = self.acc
        row_ties = {}  # (batch, block, head) -> {row: [cols]}: ties of the current mask

        def tie_fn(k):
            if not (main and self.tie_eps > 0):
                return None

            def f(b, blk, h, toks, p):
                # a generated row replaces its ties; reused rows keep those of the step
                # that generated them
                th = theta32[blk]
                rt = row_ties.setdefault((b, blk, h), {})
                for tok in toks.cpu().tolist():
                    rt.pop(tok, None)
                near = ((p - th).abs() <= self.tie_eps * th).nonzero()
                for r, col in zip(toks[near[:, 0]].cpu().tolist(), near[:, 1].cpu().tolist()):
                    rt.setdefault(r, []).append(col)
            return f

        def eps_fn(k, t, x):
            s = {"tau": math.nan, "diff": (math.nan,) * 3, "dq": (math.nan,) * 4, "nk": N}
            kept = None
            if k > 0:
                prev = cur["prev"]
                d = token_max(x, prev, cfg.patch)
                v = np.abs(x - prev).astype(np.float64).ravel()
                s["diff"] = (float(v.mean()), math.sqrt(float((v * v).mean())), float(v.max()))
                ds = np.sort(d)
                s["dq"] = (quantile(ds, 50), quantile(ds, 90), quantile(ds, 99), float(ds[-1]))
                if ctr:
                    tau = np.float32(a.ctr_tau) if a.ctr == "tau" else tau_for_prune(d, self.n_prune)
                    s["tau"] = float(tau)
                    sel = np.flatnonzero(d >= tau)
                    s["nk"] = int(sel.size)
                    if sel.size < N:
                        kept = torch.from_numpy(sel.astype(np.int64)).to(dev)
                    if main and self.tie_eps > 0:
                        near = np.flatnonzero(np.abs(d - tau) <= self.tie_eps * tau)
                        if near.size:
                            self.ties["ctr"][str(k)] = near.tolist()
            cur["prev"] = x.copy()
            s["kept"] = kept
            gen = st and k % a.st_refresh == 0
            s["gen"] = gen
            mode = "off" if not st else "generate" if gen else "reuse"
            cur["s"] = s
            with torch.no_grad():
                target = None
                if st and a.st == "target" and k == 0:
                    target = (a.st_target, {"alpha": self.alpha, "theta": theta32,
                                            "short": self.st_short})
                e = self.model.forward(x, t, state, kept=kept, st_mode=mode, theta=theta32,
                                       tie=tie_fn(k) if gen else None, target=target)
            if B == 2:
                w = np.float32(a.cfg)
                return e[1] + w * (e[0] - e[1])
            return e[0]

        def post_fn(k, xn):
            traj.append(xn.copy())
            if progress:
                progress(k)
            if not main:
                return
            s = cur["s"]
            nk, kept = s["nk"], s["kept"]
            tokmask = np.zeros(N, dtype=bool)
            tokmask[kept.cpu().numpy() if kept is not None else slice(None)] = True
            mode = "off" if not st else "generate" if s["gen"] else "reuse"
            stats = {}
            nnz_block = [0] * L
            if st:
                rows = kept if kept is not None else torch.arange(N, device=dev)
                for b in range(B):
                    for blk in range(L):
                        for h in range(H):
                            packed = state.masks[b][blk][h]
                            m = dit_model.unpack_rows(packed[rows], N)
                            stats[(b, blk, h)] = self.lb.mask_stats(m)
                            nnz_block[blk] += stats[(b, blk, h)][0]
            fd, fc, fa = flops_step(cfg, B, nk, mode, nnz_block)
            for i in range(16):
                acc["fd"][i] += fd[i]
                acc["fc"][i] += fc[i]
                acc["fa"][i] += fa[i]
            if k > 0:
                acc["prune"].append(1.0 - nk / N)
            rec = messages["DiscStep"]()
            rec.k, rec.t, rec.tau, rec.n_kept = k, self.sched[0][k], s["tau"], nk
            rec.prune_ratio = 1.0 - nk / N
            words = (N + 63) // 64
            tm = np.zeros(words * 64, dtype=bool)
            tm[:N] = tokmask
            rec.token_mask = np.packbits(tm, bitorder="little").tobytes()
            rec.diff_mean, rec.diff_rms, rec.diff_max = s["diff"]
            rec.d_p50, rec.d_p90, rec.d_p99, rec.d_max = s["dq"]
            rec.flops_dense.extend(fd)
            rec.flops_ctr.extend(fc)
            rec.flops_all.extend(fa)
            rec.rel_err = rel_err(xn, dense_traj[k]) if dense_traj is not None else math.nan
            rec.st_generated = s["gen"]
            writer.append(rec)
            if a.png:
                png.token_mask(a.png, k, tokmask, cfg.grid)
            if st:
                self._emit_masks(writer, k, s, stats, theta32, state, row_ties)

        x = sample(a.sampler, self.sched, self.x_init, eps_fn, post_fn)
        return x, traj

    def _emit_masks(self, writer, k, s, stats, theta32, state, row_ties):
        """The DiscMask records of step k of the main run, per (batch, block, head), from
        the state's packed masks; adds them to the summary's accumulators."""
        a, cfg, acc = self.a, self.cfg, self.acc
        N, L, H, B = cfg.tokens, cfg.depth, cfg.heads, self.B
        nk = s["nk"]
        for b in range(B):
            for blk in range(L):
                for h in range(H):
                    nnz, lbmax, lbstd, brows, bnnz, bmax, bstd = stats[(b, blk, h)]
                    m = messages["DiscMask"]()
                    m.step, m.batch, m.block, m.head = k, b, blk, h
                    m.generated, m.rows, m.nnz = s["gen"], nk, nnz
                    cells = nk * N
                    m.sparsity = 1.0 - nnz / cells if nk else math.nan
                    m.theta = theta32[blk]
                    m.n_cols = N
                    m.lb_max.extend(int(v) for v in lbmax)
                    m.lb_std.extend(float(v) for v in lbstd)
                    m.bin_rows.extend(int(v) for v in brows)
                    m.bin_nnz.extend(int(v) for v in bnnz)
                    m.bin_max.extend(int(v) for v in bmax)
                    m.bin_std.extend(float(v) for v in bstd)
                    acc["nnz"] += nnz
                    acc["cells"] += cells
                    acc["blk_nnz"][blk] += nnz
                    acc["blk_cells"][blk] += cells
                    g = "gen" if s["gen"] else "reuse"
                    acc[g + "_nnz"] += nnz
                    acc[g + "_cells"] += cells
                    if self.keep(k, b, blk, h):
                        packed = state.masks[b][blk][h]
                        m.kept = True
                        m.row_nnz.extend(row_popcount(packed).tolist())
                        m.bits = packed.cpu().numpy().tobytes()
                        acc["kept"] += 1
                        if a.png:
                            png.attn_mask(a.png, k, b, blk, h,
                                          dit_model.unpack_rows(packed, N).cpu().numpy())
                    writer.append(m)
                    acc["written"] += 1
                    rt = row_ties.get((b, blk, h))
                    if rt:
                        self.ties["st"]["%d/%d/%d/%d" % (k, b, blk, h)] = [
                            [r, col] for r in sorted(rt) for col in rt[r]]

    def progress_total(self):
        """Sampler steps of the whole capture: the main run, the dense run and, with CTR
        and ST both on, the CTR-only run."""
        a = self.a
        return self.K * (1 + (1 if a.compare_dense else 0) +
                         (1 if a.compare_dense and a.ctr != "off" and a.st != "off" else 0))

    def run(self, sink):
        a, cfg = self.a, self.cfg
        L = cfg.depth
        t0 = time.time()
        self.acc = {"fd": [0] * 16, "fc": [0] * 16, "fa": [0] * 16, "prune": [], "nnz": 0,
                    "cells": 0, "blk_nnz": [0] * L, "blk_cells": [0] * L, "gen_nnz": 0,
                    "gen_cells": 0, "reuse_nnz": 0, "reuse_cells": 0, "kept": 0,
                    "written": 0}
        ctr, st = a.ctr != "off", a.st != "off"
        quality = []
        dense = dense_traj = None
        total, done = self.progress_total(), [0]

        def progress(k):
            done[0] += 1
            sink.progress(done[0], total)
        w = sink
        if a.compare_dense:
            dense, dense_traj = self._run(False, False, False, None, None, progress)
        if a.compare_dense and ctr and st:
            xc, ctraj = self._run(True, False, False, None, None, progress)
            quality.append(("ctr", xc, ctraj))
        x, traj = self._run(ctr, st, True, dense_traj, w, progress)
        if a.compare_dense:
            quality.append(("main", x, traj))
        acc = self.acc
        S = messages["Summary"]()
        S.workload = "disc"
        ds = S.disc
        for name, xq, tq in quality:
            q = ds.quality.add()
            q.run = name
            q.cosine = cosine(xq, dense)
            q.psnr = psnr(xq, dense)
            q.rel_err.extend(rel_err(tq[k], dense_traj[k]) for k in range(self.K))
        ds.mean_prune_ratio = (sum(acc["prune"]) / len(acc["prune"]) if acc["prune"]
                               else math.nan)
        nan = math.nan
        ds.sparsity = 1.0 - acc["nnz"] / acc["cells"] if acc["cells"] else nan
        ds.sparsity_per_block.extend(1.0 - acc["blk_nnz"][b] / acc["blk_cells"][b]
                                     if acc["blk_cells"][b] else nan for b in range(L))
        ds.sparsity_generation = (1.0 - acc["gen_nnz"] / acc["gen_cells"]
                                  if acc["gen_cells"] else nan)
        ds.sparsity_reuse = (1.0 - acc["reuse_nnz"] / acc["reuse_cells"]
                             if acc["reuse_cells"] else nan)
        if st:
            ds.alpha_per_block.extend(self.alpha)
        ds.flops_dense.extend(acc["fd"])
        ds.flops_ctr.extend(acc["fc"])
        ds.flops_all.extend(acc["fa"])
        fd, fc, fa = sum(acc["fd"]), sum(acc["fc"]), sum(acc["fa"])
        sd, sc, sa = sum(acc["fd"][:5]), sum(acc["fc"][:5]), sum(acc["fa"][:5])
        ds.reduction_ctr = 1.0 - fc / fd
        ds.reduction_st = (fc - fa) / fd
        ds.sa_reduction_ctr = 1.0 - sc / sd
        ds.sa_reduction_st = (sc - sa) / sd
        ds.sa_share = sd / fd
        ds.latent.extend(x.ravel().tolist())
        if dense is not None:
            ds.latent_dense.extend(dense.ravel().tolist())
        ds.masks_written, ds.masks_kept = acc["written"], acc["kept"]
        w.append(S)
        if a.png:
            png.latent(a.png, "latent", x)
            if dense is not None:
                png.latent(a.png, "latent_dense", dense)
        out = {"wall_s": time.time() - t0, "sparsity": ds.sparsity,
               "mean_prune_ratio": ds.mean_prune_ratio, "masks_written": acc["written"],
               "masks_kept": acc["kept"]}
        for name, xq, _ in quality:
            out["cosine_" + name] = cosine(xq, dense)
        return out
