"""Compares a C and a torch Salca capture record by record.

usage: salca_agree.py C.atr TORCH.atr TIES.json [--expect-mismatch]

Every SalcaPrefill must have the same heavy channels; every SalcaToken the same dense token;
every SalcaSelect (t, l, h, method) the same K and either the same selected set, or a set
whose differing indices all lie on the torch run's boundary for that record (TIES.json from
--tie-eps/--ties-out: pooled INT8 value at T-1 or T, or a score within eps of the cut):
a tie. Prints the counts; exit 0 when everything agrees away from ties, 1 otherwise (with
--expect-mismatch: exit 0 when some selection differs away from ties, i.e. a perturbed run
is caught by its selections).
"""
import json
import sys

import acceltrace


def load(path):
    t = acceltrace.open(path)
    pre, sel, tok = {}, {}, {}
    for r in t.records():
        m = r.msg
        if r.type == "salca_prefill":
            pre[(m.l, m.g)] = (bytes(m.heavy), bytes(m.prefix_heavy))
        elif r.type == "salca_select":
            sel[(m.t, m.l, m.h, m.method)] = (m.k, set(r.indices().tolist()))
        elif r.type == "salca_token":
            tok[m.t] = (m.dense_token, list(m.methods), list(m.tokens))
    return t.header, pre, sel, tok


def main(argv):
    expect_bad = "--expect-mismatch" in argv
    args = [a for a in argv if not a.startswith("--")]
    hc, pc, sc, tc = load(args[0])
    ht, pt, st, tt = load(args[1])
    with open(args[2]) as f:
        ties = json.load(f)
    bad = []
    if hc.salca.n0 != ht.salca.n0 or list(hc.salca.spans) != list(ht.salca.spans):
        bad.append("task differs (n0 %d vs %d)" % (hc.salca.n0, ht.salca.n0))
    if pc != pt:
        bad.append("heavy channels differ in %d of %d KV heads"
                   % (sum(pc.get(k) != pt.get(k) for k in set(pc) | set(pt)), len(pc)))
    both = set(tc) & set(tt)  # a run without substituted runs has no SalcaToken records
    if any(tc[k][0] != tt[k][0] for k in both):
        bad.append("dense greedy tokens differ")
    sub = sum(tc[k][2] != tt[k][2] for k in both)
    if set(sc) != set(st):
        bad.append("record keys differ (%d vs %d selections)" % (len(sc), len(st)))
    same = tie_recs = tie_idx = off_recs = 0
    per_method = {}
    for key in sorted(set(sc) & set(st)):
        (kc, sc_), (kt, st_) = sc[key], st[key]
        pm = per_method.setdefault(key[3], [0, 0, 0])
        pm[0] += 1
        if kc != kt:
            bad.append("K differs at t/l/h/m %s: %d vs %d" % ("/".join(map(str, key)), kc, kt))
            continue
        if sc_ == st_:
            same += 1
            continue
        diff = sc_ ^ st_
        bnd = set(ties.get("/".join(map(str, key)), []))
        off = diff - bnd
        if off:
            pm[2] += 1
            off_recs += 1
            bad.append("t/l/h/m %s: %d indices differ away from ties (first %d)"
                       % ("/".join(map(str, key)), len(off), min(off)))
        else:
            pm[1] += 1
            tie_recs += 1
            tie_idx += len(diff)
    n = len(set(sc) & set(st))
    names = ["salca", "std_topk", "pl_topk", "full_feat", "quest"]
    print("selections %d: identical %d, differing only at ties %d (%d indices), differing "
          "away from ties %d; heavy sets %d/%d equal; substituted-run tokens differ at %d "
          "of %d steps" % (n, same, tie_recs, tie_idx, off_recs,
                           sum(pc.get(k) == pt.get(k) for k in pc), len(pc), sub, len(both)))
    for m, (cnt, ti, off) in sorted(per_method.items()):
        print("  %-9s %4d records: %d tie-only, %d mismatched" % (names[m], cnt, ti, off))
    for b in bad[:5]:
        print("  mismatch: %s" % b)
    ok = not bad
    if expect_bad:  # caught only by selected sets that differ away from ties
        print("perturbation %s" % ("detected" if off_recs else "NOT detected"))
        return 0 if off_recs else 1
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
