"""Other tools' arrays as acceltrace traces: the Python side of `acceltrace import`
(docs/interop.md#import).

    import acceltrace.interop as io
    io.import_masks("masks.npz", "m.atr", model="micro")            # .npz `masks`
    io.import_masks(bool_array, "m.atr", model="micro")            # (S, L, H, N, N)
    io.import_block_masks("bm.pt", "m.atr", model="micro")          # FlexAttention BlockMask
    io.import_selections("sel.npz", "s.atr", context=4096)          # `selected` (+ `counts`)

The records are those of the C verb: per step one DiscStep (every token computed, ST
generation every `refresh` steps), per (step, block, head) one kept DiscMask with its bits;
per (step, layer, head) one SalcaSelect. Provenance: source "imported", source_detail
"imported FILE sha256 HEX" (or "imported <array>" without a file). A shape that does not
match the model raises ShapeError naming both shapes (the C verb's exit 3). The model
dimensions come from the torch capture (acceltrace.capture.dit_model: micro, tiny,
pixart-sigma-xl), so this module needs torch, as the captures do.
"""
import hashlib
import json
import math
import os
import time

import numpy as np

from . import messages
from ._version import __version__
from .writer import Writer

PRODUCER = "acceltrace-python " + __version__


class ShapeError(ValueError):
    """An array whose shape does not match the model or the other arrays (exit 3)."""


def _canon(obj):
    return json.dumps(obj, sort_keys=True, separators=(",", ":"))


def _sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _header(workload, params, model, source):
    H = messages["TraceHeader"]()
    H.producer = PRODUCER
    H.workload = workload
    H.params_json, H.model_json = _canon(params), _canon(model) if model else ""
    H.command_line = "acceltrace.interop"
    H.utc_time = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    H.params_hash = hashlib.sha256((H.params_json + H.model_json).encode()).hexdigest()
    H.source = "imported"
    if source:
        H.source_detail = "imported %s sha256 %s" % (source, _sha256(source))
    else:
        H.source_detail = "imported <array>"
    return H


def _load(src, name):
    """(array, path or None) of an .npz entry or an array given as such."""
    if isinstance(src, (str, os.PathLike)):
        with np.load(src) as z:
            if name not in z:
                raise KeyError("'%s' has no array '%s'" % (src, name))
            return z[name], os.fspath(src)
    return np.asarray(src), None


def pack_rows(m):
    """bool (..., N) -> uint8 (..., 8 ceil(N/64)): the trace's row layout (LSB first, rows
    padded to 64-bit words)."""
    m = np.asarray(m, dtype=bool)
    n = m.shape[-1]
    pad = (n + 63) // 64 * 64 - n
    if pad:
        m = np.concatenate([m, np.zeros(m.shape[:-1] + (pad,), bool)], axis=-1)
    return np.packbits(m, axis=-1, bitorder="little")


def import_masks(masks, out, model, image_size=0, refresh=1, source=None, level=3):
    """Writes dense boolean masks (steps, blocks, heads, tokens, tokens) of DiT `model` at
    `image_size` as a disc trace `out`. masks: an .npz path (array `masks`) or an array.
    Returns {"steps", "masks", "ones"}."""
    from .capture.dit_model import DitConfig
    arr, path = _load(masks, "masks")
    source = source or path
    cfg = DitConfig(model, image_size)
    want = (cfg.depth, cfg.heads, cfg.tokens, cfg.tokens)
    if arr.ndim != 5 or tuple(arr.shape[1:]) != want or arr.shape[0] < 1:
        raise ShapeError("masks have shape %s; model '%s' at %d px wants (steps, %d, %d, %d, "
                         "%d)" % (tuple(arr.shape), cfg.name, cfg.image, *want))
    if arr.dtype != np.bool_:
        raise ShapeError("masks have dtype %s (bool wanted)" % arr.dtype)
    if refresh < 1:
        raise ValueError("refresh must be >= 1")
    S, N = arr.shape[0], cfg.tokens
    H = _header("disc", {"import": "masks", "file": source or "<array>", "image_size": cfg.image,
                         "steps": S, "refresh": refresh},
                {"name": cfg.name, "depth": cfg.depth, "hidden": cfg.hidden,
                 "heads": cfg.heads, "patch": cfg.patch, "in_channels": cfg.c_in,
                 "out_channels": cfg.c_out, "caption_width": cfg.caption,
                 "text_tokens": cfg.text_tokens, "image_size": cfg.image, "tokens": N,
                 "family": "pixart"}, source)
    d = H.disc
    cfg.fill_disc_header(d)
    d.weights_source = d.text_source = "imported"
    d.steps, d.batch, d.ctr_mode, d.st_mode = S, 1, "off", "imported"
    d.st_refresh, d.keep_masks = refresh, "all"
    ones = 0
    tok = pack_rows(np.ones(N, bool)).tobytes()
    with Writer(out, H, level=level) as w:
        for k in range(S):
            st = messages["DiscStep"]()
            st.k, st.tau, st.n_kept, st.token_mask = k, math.nan, N, tok
            st.diff_mean = st.diff_rms = st.diff_max = math.nan
            st.d_p50 = st.d_p90 = st.d_p99 = st.d_max = math.nan
            st.rel_err, st.st_generated = math.nan, k % refresh == 0
            w.append(st)
            for b in range(cfg.depth):
                for h in range(cfg.heads):
                    m = arr[k, b, h]
                    row_nnz = m.sum(axis=1)
                    nnz = int(row_nnz.sum())
                    dm = messages["DiscMask"]()
                    dm.step, dm.block, dm.head = k, b, h
                    dm.generated = k % refresh == 0
                    dm.rows, dm.nnz, dm.n_cols, dm.kept = N, nnz, N, True
                    dm.sparsity = 1.0 - nnz / (N * N)
                    dm.theta = math.nan
                    dm.row_nnz.extend(int(x) for x in row_nnz)
                    dm.bits = pack_rows(m).tobytes()
                    w.append(dm)
                    ones += nnz
    return {"steps": S, "masks": S * cfg.depth * cfg.heads, "ones": ones}


def block_masks_to_dense(obj, n_tokens):
    """A FlexAttention BlockMask (batch 1), or a list over steps of lists over blocks of
    them, as a dense bool array (steps, blocks, heads, n_tokens, n_tokens): each block of
    BLOCK_SIZE (q, kv) tokens is expanded and the edge cropped to n_tokens."""
    def one(bm):
        dense = bm.to_dense().cpu().numpy().astype(bool)  # (B, H, Q_blocks, KV_blocks)
        if dense.shape[0] != 1:
            raise ShapeError("BlockMask batch %d (1 wanted)" % dense.shape[0])
        bs = bm.BLOCK_SIZE if isinstance(bm.BLOCK_SIZE, tuple) else (bm.BLOCK_SIZE,) * 2
        full = np.repeat(np.repeat(dense[0], bs[0], axis=1), bs[1], axis=2)
        if full.shape[1] < n_tokens or full.shape[2] < n_tokens:
            raise ShapeError("BlockMask covers %s tokens; the model has %d" % (
                full.shape[1:], n_tokens))
        return full[:, :n_tokens, :n_tokens]
    if isinstance(obj, (list, tuple)):
        return np.stack([np.stack([one(b) for b in step]) for step in obj])
    return one(obj)[None, None]


def import_block_masks(path, out, model, image_size=0, refresh=1, level=3):
    """torch.save'd BlockMask(s) (block_masks_to_dense) as a disc trace; a single BlockMask
    stands for one step of a one-block model only (the shape check says so otherwise)."""
    import torch
    from .capture.dit_model import DitConfig
    obj = torch.load(path, weights_only=False) if "weights_only" in \
        torch.load.__code__.co_varnames else torch.load(path)
    dense = block_masks_to_dense(obj, DitConfig(model, image_size).tokens)
    return import_masks(dense, out, model, image_size, refresh, source=os.fspath(path),
                        level=level)


def import_selections(selected, out, context=None, counts=None, n_ctx=None, method=0,
                      kv_heads=None, head_dim=128, layers=None, heads=None, level=3):
    """Selected K/V token indices as a salca trace: `selected` (steps, layers, heads, k)
    padded with -1, or flat with `counts` (steps, layers, heads); keys per step from
    `n_ctx` (steps,) or context + t + 1. selected may be an .npz path holding `selected`
    and optionally `counts` and `n_ctx`. Returns {"steps", "selections", "ones"}."""
    from .capture.salca import encode_indices
    source = None
    if isinstance(selected, (str, os.PathLike)):
        source = os.fspath(selected)
        with np.load(source) as z:
            selected = z["selected"]
            counts = z["counts"] if "counts" in z else counts
            n_ctx = z["n_ctx"] if "n_ctx" in z else n_ctx
    sel = np.asarray(selected)
    lead = np.asarray(counts).shape if counts is not None else sel.shape[:3]
    if (counts is None and sel.ndim != 4) or len(lead) != 3 or \
            (layers and lead[1] != layers) or (heads and lead[2] != heads):
        raise ShapeError("selected%s has shape %s; want (steps, %s, %s%s)" % (
            "/counts" if counts is not None else "", tuple(lead if counts is not None
                                                          else sel.shape),
            layers or "layers", heads or "heads", "" if counts is not None else ", k"))
    S, L, Hq = lead
    if n_ctx is not None:
        ctx = np.asarray(n_ctx, dtype=np.int64)
        if ctx.shape != (S,):
            raise ShapeError("n_ctx has shape %s; want (%d,)" % (ctx.shape, S))
    elif context is None:
        raise ValueError("no n_ctx array: give context")
    else:
        ctx = context + np.arange(S, dtype=np.int64) + 1
    G = kv_heads or Hq
    H = _header("salca", {"import": "selections", "file": source or "<array>",
                          "context": -1 if context is None else int(context),
                          "method": method}, None, source)
    sh = H.salca
    sh.source, sh.n_layers, sh.n_heads, sh.n_kv_heads = "imported", L, Hq, G
    sh.head_dim, sh.n_steps, sh.k_mode = head_dim, S, "fixed"
    sh.n0 = int(context) if context is not None else int(ctx[0]) - 1
    mi = sh.methods.add()
    mi.id, mi.params = method, "imported"
    mi.name = ["salca", "std_topk", "pl_topk", "full_feat", "quest", "dense"][method] \
        if method < 6 else "imported"
    flat = sel.reshape(-1) if counts is not None else None
    pos, ones, n = 0, 0, 0
    with Writer(out, H, level=level) as w:
        for t in range(S):
            for l in range(L):
                for h in range(Hq):
                    if counts is not None:
                        c = int(np.asarray(counts)[t, l, h])
                        v = flat[pos:pos + c]
                        pos += c
                    else:
                        v = sel[t, l, h]
                        v = v[v != -1]
                    v = np.sort(v.astype(np.int64))
                    if v.size and (v[0] < 0 or v[-1] >= ctx[t] or (np.diff(v) == 0).any()):
                        raise ShapeError("selection (step %d, layer %d, head %d) holds an "
                                         "index outside 0..%d or twice" % (t, l, h, ctx[t] - 1))
                    s = messages["SalcaSelect"]()
                    s.t, s.l, s.h, s.g = t, l, h, h * G // Hq
                    s.method, s.n_ctx, s.k, s.count = method, int(ctx[t]), v.size, v.size
                    s.sel = encode_indices(v)
                    s.recall = s.cosine = s.overlap = math.nan
                    s.runs = int(v.size and 1 + (np.diff(v) != 1).sum())
                    w.append(s)
                    ones += v.size
                    n += 1
    return {"steps": S, "selections": n, "ones": ones}
