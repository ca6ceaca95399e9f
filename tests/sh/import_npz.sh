#!/usr/bin/env bash
# `acceltrace import masks|selections` and acceltrace.interop (docs/interop.md#import): a
# numpy mask file with a known pattern (np.savez and np.savez_compressed) imported by the C
# verb and by the Python package reads back with the Python reader bit for bit; both traces
# verify and replay with configs/disc-a100-matched.json to the same figures; the provenance
# is "imported FILE sha256"; selections (padded with -1, and ragged with counts) read back
# as the same sorted index sets and replay with configs/salca-hbm2.json; a shape that does
# not match the model is exit 3 naming both shapes (the Python side raises ShapeError), an
# index outside the context exit 3, a missing --model exit 2. Needs /usr/bin/python3 with
# numpy (exit 77 otherwise).
set -eu
A=${ACCELTRACE:?}
PY=/usr/bin/python3
here=$(cd "$(dirname "$0")/../.." && pwd)
C=$here/configs
"$PY" -c "import numpy" 2> /dev/null || { echo "SKIP: no numpy for /usr/bin/python3"; exit 77; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
export PYTHONPATH=$here/python${PYTHONPATH:+:$PYTHONPATH}

# micro at its default 128 px: 2 blocks, 4 heads, 64 tokens; 3 steps
"$PY" - <<'PY'
import numpy as np
S, L, H, N = 3, 2, 4, 64
i = np.arange(N)
m = np.zeros((S, L, H, N, N), bool)
for s in range(S):
    for b in range(L):
        for h in range(H):
            # a band of width s+b+h+1, the first 4 key tokens (sinks) and a stride of 7
            m[s, b, h] = (np.abs(i[:, None] - i[None, :]) <= s + b + h) | (i[None, :] < 4) | \
                         ((i[:, None] * 7 + i[None, :] + h) % 13 == 0)
np.savez("m.npz", masks=m)
np.savez_compressed("mc.npz", masks=m)
np.savez("wrong.npz", masks=np.zeros((3, 2, 4, 64, 60), bool))
sel = -np.ones((3, 2, 4, 40), np.int64)
flat, counts = [], np.zeros((3, 2, 4), np.int64)
for t in range(3):
    for l in range(2):
        for h in range(4):
            k = 10 + 3 * h + t
            v = (np.arange(k) * (5 + l) + 2 * h + t)[::-1]  # unsorted on purpose
            sel[t, l, h, :k] = v
            flat.extend(v.tolist())
            counts[t, l, h] = k
np.savez("sel.npz", selected=sel)
np.savez("ragged.npz", selected=np.array(flat, np.int32), counts=counts,
         n_ctx=np.array([300, 301, 302]))
sel[1, 1, 1, 0] = 5000
np.savez("far.npz", selected=sel)
PY

"$A" import masks m.npz --model micro -q -o c.atr > c.txt
"$A" import masks mc.npz --model micro -q -o cc.atr > /dev/null
grep -q "wrote c.atr: disc trace, 3 steps, 24 masks" c.txt || { cat c.txt; exit 1; }
"$A" verify c.atr > /dev/null
"$A" info c.atr | grep -q "^source_detail  imported m.npz sha256 $(sha256sum m.npz | cut -c1-64)$" ||
    { echo "provenance: $("$A" info c.atr | grep source)"; exit 1; }
"$PY" -c "
import acceltrace.interop as io
r = io.import_masks('m.npz', 'p.atr', model='micro')
assert r == {'steps': 3, 'masks': 24, 'ones': r['ones']} and r['ones'] > 0, r
"
"$PY" - <<'PY'
import numpy as np, acceltrace
m = np.load("m.npz")["masks"]
for path in ("c.atr", "cc.atr", "p.atr"):
    t = acceltrace.open(path)
    assert t.header.source == "imported", t.header.source
    seen = set()
    for r in t.records("disc_mask"):
        g = r.msg
        got = r.to_numpy()
        assert got.shape == (64, 64), got.shape
        assert (got == m[g.step, g.block, g.head]).all(), (path, g.step, g.block, g.head)
        assert g.nnz == m[g.step, g.block, g.head].sum() and g.kept and g.rows == 64
        seen.add((g.step, g.block, g.head))
    assert len(seen) == 24, (path, len(seen))
    steps = [r.msg for r in t.records("disc_step")]
    assert [s.k for s in steps] == [0, 1, 2] and all(s.n_kept == 64 for s in steps)
print("mask bits ok")
PY
for t in c p; do
    "$A" replay $t.atr --hw "$C/disc-a100-matched.json" -q -o r$t 2> /dev/null
done
"$PY" - <<'PY'
import json
def rows(d):
    out = []
    for line in open(d + "/results.jsonl"):
        r = json.loads(line)
        out.append((r["labels"], r["counts"], {k: v for k, v in r["metrics"].items()}))
    return out
a, b = rows("rc"), rows("rp")
assert a == b, "C and Python imports replay differently"
modes = {x[0]["mode"]: x for x in a}
assert set(modes) == {"baseline", "ctr", "all"}, modes.keys()
assert modes["all"][2]["masks_estimated"] == 0  # recounted from the imported bits
assert modes["all"][1]["cycles"] != modes["baseline"][1]["cycles"]
print("replay ok")
PY

# the BlockMask expansion (block_masks_to_dense) on an object with the two members of a
# FlexAttention BlockMask it uses (to_dense, BLOCK_SIZE); the real class is
# tests/sh/import_blockmask.sh, skipped without torch >= 2.5
if "$PY" -c "import torch" 2> /dev/null; then
    "$PY" - <<'PY'
import numpy as np, torch, acceltrace, acceltrace.interop as io
class BM:
    BLOCK_SIZE = (16, 16)
    def __init__(self, d):
        self.d = d
    def to_dense(self):
        return self.d
g = torch.Generator().manual_seed(7)
blocks = [[torch.rand(1, 4, 4, 4, generator=g) > 0.5 for b in range(2)] for s in range(2)]
dense = io.block_masks_to_dense([[BM(x) for x in step] for step in blocks], 64)
assert dense.shape == (2, 2, 4, 64, 64), dense.shape
for s in range(2):
    for b in range(2):
        want = np.kron(blocks[s][b][0].numpy(), np.ones((16, 16), bool)).astype(bool)
        assert (dense[s, b] == want).all(), (s, b)
io.import_masks(dense, "bm.atr", model="micro")
for r in acceltrace.open("bm.atr").records("disc_mask"):
    assert (r.to_numpy() == dense[r.msg.step, r.msg.block, r.msg.head]).all()
try:
    io.block_masks_to_dense(BM(torch.ones(1, 4, 2, 2, dtype=torch.bool)), 64)
except io.ShapeError as e:
    assert "the model has 64" in str(e), e
else:
    raise SystemExit("a BlockMask smaller than the model was accepted")
print("block expansion ok")
PY
fi

# selections: padded and ragged
"$A" import selections sel.npz --context 200 --layers 2 --heads 4 -q -o s.atr > /dev/null
"$A" import selections ragged.npz -q -o sr.atr > /dev/null
"$PY" -c "
import acceltrace.interop as io
io.import_selections('sel.npz', 'ps.atr', context=200)
"
"$PY" - <<'PY'
import numpy as np, acceltrace
sel = np.load("sel.npz")["selected"]
for path, ctx0 in (("s.atr", 201), ("sr.atr", 300), ("ps.atr", 201)):
    n = 0
    for r in acceltrace.open(path).records("salca_select"):
        g = r.msg
        want = sel[g.t, g.l, g.h]
        want = np.sort(want[want >= 0])
        assert (r.indices() == want).all(), (path, g.t, g.l, g.h)
        assert g.n_ctx == ctx0 + g.t and g.count == want.size
        n += 1
    assert n == 24, (path, n)
print("selections ok")
PY
"$A" replay s.atr --hw "$C/salca-hbm2.json" -q -o rs 2> /dev/null
grep -q '"jobs":24' rs/results.jsonl || { echo "salca replay of the import"; exit 1; }

# errors
set +e
"$A" import masks wrong.npz --model micro -o w.atr 2> err.txt; rc=$?
[ $rc = 3 ] && grep -q "(3, 2, 4, 64, 60)" err.txt && grep -q "(steps, 2, 4, 64, 64)" err.txt ||
    { echo "wrong shape: $rc $(cat err.txt)"; exit 1; }
"$A" import masks m.npz --model tiny -o w.atr 2> err.txt; rc=$?
[ $rc = 3 ] || { echo "other model: $rc"; exit 1; }
"$A" import masks m.npz -o w.atr 2> /dev/null; rc=$?
[ $rc = 2 ] || { echo "no --model: $rc"; exit 1; }
"$A" import selections sel.npz --context 200 --heads 8 -o w.atr 2> err.txt; rc=$?
[ $rc = 3 ] && grep -q "(3, 2, 4, 40)" err.txt || { echo "heads: $rc $(cat err.txt)"; exit 1; }
"$A" import selections far.npz --context 200 -o w.atr 2> err.txt; rc=$?
[ $rc = 3 ] && grep -q "index 5000" err.txt || { echo "far index: $rc $(cat err.txt)"; exit 1; }
"$A" import selections sel.npz -o w.atr 2> /dev/null; rc=$?
[ $rc = 2 ] || { echo "no --context: $rc"; exit 1; }
"$A" import masks nothere.npz --model micro -o w.atr 2> /dev/null; rc=$?
[ $rc = 3 ] || { echo "missing file: $rc"; exit 1; }
head -c 100 m.npz > cut.npz
"$A" import masks cut.npz --model micro -o w.atr 2> /dev/null; rc=$?
[ $rc = 3 ] || { echo "truncated npz: $rc"; exit 1; }
"$PY" -c "
import acceltrace.interop as io
try:
    io.import_masks('wrong.npz', 'w2.atr', model='micro')
except io.ShapeError as e:
    assert '(3, 2, 4, 64, 60)' in str(e), e
else:
    raise SystemExit('no ShapeError')
"; rc=$?
[ $rc = 0 ] || exit 1
set -e
[ ! -e w.atr ] && [ ! -e w.atr.partial ] && [ ! -e w2.atr ] || { echo "a failed import left a file"; exit 1; }
echo "import ok"
