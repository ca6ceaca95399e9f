#!/usr/bin/env bash
# acceltrace.interop.import_block_masks (docs/interop.md#import): PyTorch FlexAttention
# BlockMasks saved with torch.save (a list over steps of lists over blocks) become a disc
# trace whose masks read back, bit for bit, as the BlockMask's blocks expanded to tokens,
# and which replays with configs/disc-a100-matched.json. Needs torch with
# torch.nn.attention.flex_attention (torch >= 2.5) for /usr/bin/python3: SKIP (exit 77)
# otherwise.
set -eu
A=${ACCELTRACE:?}
PY=/usr/bin/python3
here=$(cd "$(dirname "$0")/../.." && pwd)
export PYTHONPATH=$here/python${PYTHONPATH:+:$PYTHONPATH}
if ! "$PY" -c "from torch.nn.attention.flex_attention import create_block_mask" 2> /dev/null; then
    v=$("$PY" -c "import torch; print(torch.__version__)" 2> /dev/null || echo none)
    echo "SKIP: torch $v has no FlexAttention BlockMask (needs torch >= 2.5)"
    exit 77
fi
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
"$PY" - <<'PY'
import numpy as np, torch, acceltrace, acceltrace.interop as io
from torch.nn.attention.flex_attention import create_block_mask
N, B = 64, 16
def mod_for(s, b):
    def causal_window(bb, h, q, kv):
        return (q >= kv) & (q - kv <= 16 * (1 + (s + b + h) % 3))
    return causal_window
masks = [[create_block_mask(mod_for(s, b), 1, 4, N, N, device="cpu", BLOCK_SIZE=B)
          for b in range(2)] for s in range(2)]
torch.save(masks, "bm.pt")
io.import_block_masks("bm.pt", "bm.atr", model="micro")
t = acceltrace.open("bm.atr")
n = 0
for r in t.records("disc_mask"):
    g = r.msg
    dense = masks[g.step][g.block].to_dense()[0, g.head].numpy().astype(bool)
    want = np.repeat(np.repeat(dense, B, 0), B, 1)[:N, :N]
    assert (r.to_numpy() == want).all(), (g.step, g.block, g.head)
    n += 1
assert n == 16, n
print("blockmask ok")
PY
"$A" replay bm.atr --hw "$here/configs/disc-a100-matched.json" -q -o r 2> /dev/null
grep -q '"mode":"all"' r/results.jsonl
echo "blockmask import ok"
