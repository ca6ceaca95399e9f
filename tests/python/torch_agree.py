#!/usr/bin/python3
"""Agreement of the torch DiSC capture with the C capture (tests/sh/torch_capture.sh).

usage: torch_agree.py C.atr TORCH.atr TIES.json
Reads both traces with the acceltrace package. Token masks (DiscStep) and ST masks
(DiscMask bits, both traces need --keep-masks) must be identical except at threshold ties
recorded by the torch capture (--tie-eps/--ties-out): a CTR token within eps of tau, an ST
entry within eps of theta. A tie that flips a token mask changes every later step, so
the comparison stops after such a step (reported). Prints the counts; exit 1 on any
mismatch away from a tie, or when the traces do not hold the same records.
Also checks what follows from the masks: n_kept, and where the bits agree nnz, rows and
the load-balance statistics (lb_*, bin_*: integers equal, sums within 1e-12), the
header's text hash, and that the final latents agree within 1e-3.
"""
import json
import sys

import numpy as np

import acceltrace


def main():
    c_path, t_path, ties_path = sys.argv[1:4]
    tc, tt = acceltrace.open(c_path), acceltrace.open(t_path)
    ties = json.load(open(ties_path))
    bad = 0
    hc, ht = tc.header.disc, tt.header.disc
    if (hc.text_sha256, hc.tokens, hc.steps) != (ht.text_sha256, ht.tokens, ht.steps):
        print("FAIL: headers differ in text_sha256/tokens/steps: %s vs %s"
              % ((hc.text_sha256, hc.tokens, hc.steps), (ht.text_sha256, ht.tokens, ht.steps)))
        bad += 1
    steps_c = {r.step: r for r in tc.records("disc_step")}
    steps_t = {r.step: r for r in tt.records("disc_step")}
    if sorted(steps_c) != sorted(steps_t) or not steps_c:
        print("FAIL: disc_step records differ: %s vs %s" % (sorted(steps_c), sorted(steps_t)))
        return 1
    ctr_ties = st_ties = 0
    stop = None
    for k in sorted(steps_c):
        a, b = steps_c[k].to_numpy(), steps_t[k].to_numpy()
        diff = np.flatnonzero(a != b)
        near = set(ties["ctr"].get(str(k), []))
        off = [int(i) for i in diff if int(i) not in near]
        if off:
            print("FAIL: token mask of step %d differs at tokens %s (not ties)" % (k, off[:10]))
            bad += 1
        if diff.size:
            ctr_ties += diff.size
            stop = k
            print("step %d: token mask differs at %d tie(s); later steps not compared"
                  % (k, diff.size))
            break
        if steps_c[k].msg.n_kept != steps_t[k].msg.n_kept:
            print("FAIL: n_kept of step %d: %d vs %d" % (k, steps_c[k].msg.n_kept,
                                                       steps_t[k].msg.n_kept))
            bad += 1
    masks_c = {(r.msg.step, r.msg.batch, r.msg.block, r.msg.head): r
               for r in tc.records("disc_mask")}
    masks_t = {(r.msg.step, r.msg.batch, r.msg.block, r.msg.head): r
               for r in tt.records("disc_mask")}
    if sorted(masks_c) != sorted(masks_t) or not masks_c:
        print("FAIL: disc_mask records differ (%d vs %d)" % (len(masks_c), len(masks_t)))
        return 1
    compared = bits = 0
    stats_ok = True
    for key in sorted(masks_c):
        if stop is not None and key[0] > stop:
            continue
        a, b = masks_c[key].to_numpy(), masks_t[key].to_numpy()
        if a.shape != b.shape or a.shape[0] == 0:
            print("FAIL: mask %s not kept in both traces (%s vs %s)" % (key, a.shape, b.shape))
            bad += 1
            continue
        compared += 1
        bits += a.size
        near = {tuple(x) for x in ties["st"].get("%d/%d/%d/%d" % key, [])}
        rows, cols = np.nonzero(a != b)
        off = [(int(r), int(c)) for r, c in zip(rows, cols) if (int(r), int(c)) not in near]
        st_ties += rows.size - len(off)
        if off:
            print("FAIL: mask %s differs at %d entries away from ties, e.g. %s"
                  % (key, len(off), off[:5]))
            bad += 1
        if rows.size == 0:
            mc, mt = masks_c[key].msg, masks_t[key].msg
            ints = ("nnz", "rows", "lb_max", "bin_rows", "bin_nnz", "bin_max")
            same = all(np.array_equal(np.array(getattr(mc, f)), np.array(getattr(mt, f)))
                       for f in ints)
            same = same and all(np.allclose(np.array(getattr(mc, f)), np.array(getattr(mt, f)),
                                            rtol=1e-12, atol=0) for f in ("lb_std", "bin_std"))
            if not same:
                print("FAIL: mask %s: equal bits but the load-balance statistics differ"
                      % (key,))
                stats_ok = False
    if not stats_ok:
        bad += 1
    sc = next(tc.records("summary")).msg.disc
    st_ = next(tt.records("summary")).msg.disc
    xc, xt = np.array(sc.latent), np.array(st_.latent)
    rel = float(np.linalg.norm(xc - xt) / np.linalg.norm(xc))
    print("compared %d steps' token masks and %d ST masks (%d bits): %d CTR tie(s), "
          "%d ST tie(s) differ, %d mismatch(es) away from ties; |x_K torch - x_K C| / |x_K C| "
          "= %.3g" % (len(steps_c) if stop is None else stop + 1, compared, bits, ctr_ties,
                      st_ties, bad, rel))
    if stop is None and rel > 1e-3:
        print("FAIL: final latents differ by %.3g (bound 1e-3)" % rel)
        bad += 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
