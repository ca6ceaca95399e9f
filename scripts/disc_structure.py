#!/usr/bin/python3
"""Structure figures of a DiSC trace (docs/models.md
"trained-small"): whether the latent change and the attention masks have the spatial
structure of a trained model. All figures are recomputed from the trace.

(a) change: per step k >= 1, d_p90 / d_p50 of DiscStep (the per-token maxima of |x_k -
    x_{k-1}|, docs/disc.md#ctr-selection); clustering: over the tokens kept at step k, the share of their
    4-neighbours (grid, inside the image) that are kept too, minus the base rate N_k / N;
    steps where CTR keeps every token or none are skipped.
(b) locality: for each kept mask that was generated at its step, each row of a token
    computed at that step: the share of the row's set bits whose key token lies in the
    row's 5x5 grid neighbourhood, divided by the uniform share (neighbourhood size / N);
    averaged over rows, pooled over steps per (block, head); the figure is the median over
    (block, head) and the share of heads >= 2.
(c) final latent RMS: sqrt(mean(x_K^2)) of the dense run (Summary latent_dense), and of the
    main run's latent.
(d) quality: cosine vs the dense run of the CTR-only run and of the main run (Summary).

--reference adds what (a) would be on the trace's own sampler schedule for an ideal
denoiser, whose path is x_k = alpha_k x0 + sigma_k eps exactly (DDIM and DPM-Solver++(2M)
both give it when every prediction is right): per-token max |x_k - x_{k-1}| over the
token's patch, CTR at the trace's --ctr-target (the ceil(R N) smallest pruned), the same
p90/p50 and clustering. Two x0: the training photographs (docs/models.md "trained-small";
each resized to shorter side = the trace's image size, centre crop, encoded with the
shipped encoder; `scripts/deps.sh train` installs them) and the trace's own dense final
latent; eps is drawn 8 times per x0 (numpy default_rng(0)), figures are means. Besides,
the lag-1 autocorrelation of the per-token max |x0| (horizontal neighbours), the spatial
structure (a) depends on. A reference, not a measurement of the model.

usage: PYTHONPATH=python /usr/bin/python3 scripts/disc_structure.py TRACE [--json] [--reference]
       [--check a,b,c]   exit 1 when a named criterion misses (a: p90/p50 >= 2 at some
                         step and clustering >= 0.1 at some step; b: median >= 2;
                         c: 0.5 <= dense RMS <= 2; d: CTR-only cosine >= 0.97)
Exit 3 on an unreadable trace (the reader's message), 2 on bad usage.
"""
import argparse
import fractions
import json
import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "python"))
import acceltrace  # noqa: E402


def neighbour_share(kept, g):
    """kept (g*g,) bool: mean over kept tokens of the kept share of their 4-neighbours."""
    k = kept.reshape(g, g).astype(np.float64)
    pad = np.pad(k, 1)
    nb_kept = pad[:-2, 1:-1] + pad[2:, 1:-1] + pad[1:-1, :-2] + pad[1:-1, 2:]
    inside = np.pad(np.ones_like(k), 1)
    nb_all = inside[:-2, 1:-1] + inside[2:, 1:-1] + inside[1:-1, :-2] + inside[1:-1, 2:]
    sel = k > 0
    return float((nb_kept[sel] / nb_all[sel]).mean())


def window_matrix(g, r=2):
    """(N, N) bool: key j within the (2r+1)^2 grid neighbourhood of query i."""
    ys, xs = np.divmod(np.arange(g * g), g)
    return (np.abs(ys[:, None] - ys[None, :]) <= r) & (np.abs(xs[:, None] - xs[None, :]) <= r)


def analyse(path):
    t = acceltrace.open(path)
    dh = t.header.disc
    n, g = dh.tokens, dh.grid_w
    steps, kept_by_step = [], {}
    for rec in t.records("disc_step"):
        m = rec.msg
        kept = rec.to_numpy()
        kept_by_step[m.k] = kept
        row = {"k": m.k, "n_kept": m.n_kept}
        if m.k >= 1 and m.d_p50 > 0 and math.isfinite(m.d_p50):
            row["p90_p50"] = float(m.d_p90 / m.d_p50)
        if 0 < m.n_kept < n:
            base = m.n_kept / n
            row["neighbour_kept"] = neighbour_share(kept, g)
            row["base_rate"] = base
            row["cluster"] = row["neighbour_kept"] - base
        steps.append(row)
    win = window_matrix(g)
    uniform = win.sum(axis=1) / n
    ratio_sum, ratio_rows = {}, {}
    for rec in t.records("disc_mask"):
        m = rec.msg
        if not m.kept or not m.generated:
            continue
        bits = rec.to_numpy()
        rows = kept_by_step.get(m.step, np.ones(n, bool)) & (bits.sum(axis=1) > 0)
        nnz = bits[rows].sum(axis=1)
        local = (bits[rows] & win[rows]).sum(axis=1)
        r = (local / nnz) / uniform[rows]
        key = (m.block, m.head)
        ratio_sum[key] = ratio_sum.get(key, 0.0) + float(r.sum())
        ratio_rows[key] = ratio_rows.get(key, 0) + int(rows.sum())
    heads = {f"b{b}h{h}": ratio_sum[(b, h)] / ratio_rows[(b, h)]
             for (b, h) in sorted(ratio_sum) if ratio_rows[(b, h)]}
    summ = next(t.records("summary"), None)
    out = {"_header": dh, "trace": path, "model": dh.model, "image_size": dh.image_size,
           "tokens": n, "steps": steps, "locality_per_head": heads}
    p = [s["p90_p50"] for s in steps if "p90_p50" in s]
    c = [s["cluster"] for s in steps if "cluster" in s]
    out["p90_p50_max"] = max(p) if p else None
    out["p90_p50_median"] = float(np.median(p)) if p else None
    out["cluster_max"] = max(c) if c else None
    out["cluster_mean"] = float(np.mean(c)) if c else None
    v = list(heads.values())
    out["locality_median"] = float(np.median(v)) if v else None
    out["locality_share_ge2"] = float(np.mean(np.array(v) >= 2)) if v else None
    if summ is not None:
        ds = summ.msg.disc
        if len(ds.latent_dense):
            out["_latent_dense"] = np.array(ds.latent_dense, dtype=np.float64)
            out["rms_dense"] = float(np.sqrt(np.mean(np.square(out["_latent_dense"]))))
        if len(ds.latent):
            out["rms_main"] = float(np.sqrt(np.mean(np.square(np.array(ds.latent)))))
        for q in ds.quality:
            out[f"cosine_{q.run}"] = q.cosine
        out["mean_prune_ratio"] = ds.mean_prune_ratio
        out["st_sparsity"] = ds.sparsity
    return out


def token_max(z, p):
    """(C, H, W) -> (H/p * W/p,) per-token max |z| over the token's C x p x p values."""
    c, hh, ww = z.shape
    return np.abs(z).reshape(c, hh // p, p, ww // p, p).max(axis=(0, 2, 4)).reshape(-1)


def ideal_path(x0, al, sg, g, p, n_prune, rng, draws=8):
    """Mean over eps draws of the per-step (a) figures on x_k = al_k x0 + sg_k eps."""
    rows = []
    for _ in range(draws):
        eps = rng.standard_normal(x0.shape)
        row = []
        for k in range(1, len(al) - 1):
            d = token_max((al[k] - al[k - 1]) * x0 + (sg[k] - sg[k - 1]) * eps, p)
            kept = np.ones(g * g, bool)
            kept[np.argsort(d, kind="stable")[:n_prune]] = False
            q50, q90 = np.percentile(d, [50, 90])
            row.append((q90 / q50, neighbour_share(kept, g) - kept.mean()))
        rows.append(row)
    return np.array(rows).mean(axis=0)  # (K - 1, 2)


def autocorr(z, p, g):
    t = token_max(z, p).reshape(g, g)
    return float(np.corrcoef(t[:, :-1].ravel(), t[:, 1:].ravel())[0, 1])


def reference(path, o):
    """The --reference figures (module docstring); o is analyse(path)'s result."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import train_dit
    dh = o["_header"]
    if dh.ctr_mode != "target":
        raise acceltrace.TraceError(f"'{path}': --reference needs a --ctr-target capture, "
                                    f"this one's CTR is '{dh.ctr_mode}'", path, position=False)
    al, sg = np.array(dh.alphas), np.array(dh.sigmas)
    g, p, lat = dh.grid_w, dh.patch, dh.latent_w
    n_prune = math.ceil(fractions.Fraction(dh.ctr_target) * g * g)  # exact, as the capture
    rows = train_dit.read_manifest()
    x0s = []
    try:
        import PIL  # noqa: F401 (train_dit.scaled_arrays reads the photographs with it)
        have = all(os.path.exists(f) for _, f, _ in rows)
    except ImportError:
        have = False
    if have:
        train_dit.check_manifest(rows)  # exit 3 when one differs from the manifest
        enc_f = train_dit.read_safetensors(os.path.join(train_dit.MODELS,
                                                        "trained-small.encoder.safetensors"))
        enc = (enc_f["mean"], enc_f["basis"], enc_f["std"])
        for a in train_dit.scaled_arrays(rows, (dh.image_size,))[::2]:  # no flips
            z = train_dit.encode(a, enc)
            y0, x0 = (z.shape[1] - lat) // 2, (z.shape[2] - lat) // 2
            x0s.append(z[:, y0: y0 + lat, x0: x0 + lat].astype(np.float64))
    rng = np.random.default_rng(0)
    out = {}
    cases = [("photos", x0s)] if x0s else []
    if not x0s:
        out["photos"] = {"skipped": "training photographs or python3-pil not installed "
                                    "(scripts/deps.sh train)"}
    if "_latent_dense" in o:
        cases.append(("dense_latent", [o["_latent_dense"].reshape(-1, lat, lat)]))
    for name, xs in cases:
        per = np.array([ideal_path(x, al, sg, g, p, n_prune, rng) for x in xs]).mean(axis=0)
        out[name] = {"x0": len(xs), "p90_p50_max": float(per[:, 0].max()),
                     "cluster_max": float(per[:, 1].max()),
                     "cluster_per_step": [round(float(v), 4) for v in per[:, 1]],
                     "autocorr_median": float(np.median([autocorr(x, p, g) for x in xs]))}
    return out


def checks(o):
    ok = {}
    ok["a"] = (o["p90_p50_max"] or 0) >= 2 and (o["cluster_max"] or 0) >= 0.1
    ok["b"] = (o["locality_median"] or 0) >= 2
    ok["c"] = 0.5 <= o.get("rms_dense", float("nan")) <= 2
    ok["d"] = o.get("cosine_ctr", 0) >= 0.97
    return ok


def fmt(x, spec=".3f"):
    return "n/a" if x is None or (isinstance(x, float) and math.isnan(x)) else format(x, spec)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("trace")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--check", default="")
    ap.add_argument("--reference", action="store_true",
                    help="also (a) on an ideal denoiser's path (module docstring)")
    a = ap.parse_args()
    want = [x for x in a.check.split(",") if x]
    if any(x not in "abcd" or len(x) != 1 for x in want):
        print(f"disc_structure: bad --check '{a.check}' (letters a, b, c, d)", file=sys.stderr)
        return 2
    try:
        o = analyse(a.trace)
        if a.reference:
            o["reference"] = reference(a.trace, o)
        for k in [k for k in o if k.startswith("_")]:  # not for the report
            del o[k]
    except acceltrace.TraceError as e:
        print(f"disc_structure: {e}", file=sys.stderr)
        return 3
    ok = checks(o)
    o["pass"] = ok
    if a.json:
        print(json.dumps(o, indent=1, sort_keys=True))
    else:
        print(f"{o['trace']}: {o['model']} at {o['image_size']} px, N = {o['tokens']}")
        for s in o["steps"]:
            print(f"  step {s['k']:2d}: kept {s['n_kept']:5d}  p90/p50 "
                  f"{fmt(s.get('p90_p50'), '.2f'):>5}  P(nb kept|kept) "
                  f"{fmt(s.get('neighbour_kept'))} base {fmt(s.get('base_rate'))}")
        print(f"(a) p90/p50 max {fmt(o['p90_p50_max'], '.2f')} (median "
              f"{fmt(o['p90_p50_median'], '.2f')}); clustering max {fmt(o['cluster_max'])} "
              f"mean {fmt(o['cluster_mean'])}: {'pass' if ok['a'] else 'miss'}")
        print(f"(b) locality median over {len(o['locality_per_head'])} heads "
              f"{fmt(o['locality_median'], '.2f')}x uniform, heads >= 2x: "
              f"{fmt(o['locality_share_ge2'], '.2f')}: {'pass' if ok['b'] else 'miss'}")
        print(f"(c) final latent RMS dense {fmt(o.get('rms_dense'))}, main "
              f"{fmt(o.get('rms_main'))}: {'pass' if ok['c'] else 'miss'}")
        print(f"(d) cosine vs dense: CTR-only {fmt(o.get('cosine_ctr'), '.4f')}, main "
              f"{fmt(o.get('cosine_main'), '.4f')}: {'pass' if ok['d'] else 'miss'}")
        for name, r in o.get("reference", {}).items():
            if "skipped" in r:
                print(f"reference, ideal denoiser to {name}: skipped, {r['skipped']}")
                continue
            print(f"reference, ideal denoiser to {name} ({r['x0']} x0): p90/p50 max "
                  f"{fmt(r['p90_p50_max'], '.2f')}, clustering max {fmt(r['cluster_max'])}, "
                  f"token max|x0| lag-1 autocorrelation {fmt(r['autocorr_median'])}")
    missed = [x for x in want if not ok[x]]
    if missed:
        print(f"disc_structure: missed {','.join(missed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
