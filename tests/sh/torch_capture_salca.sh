#!/usr/bin/env bash
# The Salca torch capture against the C capture: on the tiny Llama
# (seeded weights, built in both), `python3 -m acceltrace.capture salca` and `acceltrace
# capture salca --source model` give the same heavy channels, dense tokens and selected
# sets per (t, l, h, method), identical away from score ties (counted and printed by
# tests/python/salca_agree.py); a perturbed checkpoint (outlier gain 8 -> 8.05) and a trace with
# one selection edited must both be caught. The same agreement on a Hugging Face checkpoint
# (tests/python/make_llama_ckpt.py) loaded by its public tensor names. Also: the vectorized generator equals the
# scalar one, the torch trace verifies and replays, usage errors exit 2, the memory limit exits 3.
# Skipped (exit 77, counted by tests/run.sh) when /usr/bin/python3 has no torch or numpy.
set -u
A=${ACCELTRACE:?ACCELTRACE not set}
PY=/usr/bin/python3
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
if ! $PY -c "import torch, numpy, google.protobuf, zstandard, xxhash" 2> /dev/null; then
    echo "SKIP: /usr/bin/python3 lacks torch, numpy, protobuf, zstandard or xxhash"; exit 77
fi
export PYTHONPATH="$PWD/python${PYTHONPATH:+:$PYTHONPATH}"
export SOURCE_DATE_EPOCH=1767225600
cap() { $PY -m acceltrace.capture salca "$@"; }
common=(--length 512 --steps 2 --threads 1)

# 1. the vectorized generator (jump-ahead lanes) equals common/rng.c's scalar port
$PY - << 'EOF' || fail "vectorized generator differs from the scalar one"
import numpy as np
from acceltrace.capture import rngvec
from acceltrace.capture.inputs import Rng
st = rngvec.stream_state(1, "model.layers.0.self_attn.k_proj.weight")
r = Rng(0); r.s = list(st)
ref = np.array([np.float32(0.02 * r.normal()) for _ in range(3001)], dtype=np.float32)
got = rngvec.normals_f32(st, 3001, 0.02)
assert ref.tobytes() == got.tobytes()
EOF

# 2. C and torch captures of the tiny model; torch records its boundary tokens
"$A" capture salca -q --source model "${common[@]}" -o "$T/c.atr" > "$T/c.out" \
    || fail "C capture"
cap -q "${common[@]}" --tie-eps 1e-5 --ties-out "$T/ties.json" -o "$T/t.atr" > "$T/t.out" \
    || fail "torch capture"
"$A" verify "$T/t.atr" > /dev/null || fail "verify of the torch trace"
"$A" replay "$T/t.atr" --hw configs/salca-hbm2.json -o "$T/r" > /dev/null 2>&1 \
    && [ -s "$T/r/results.csv" ] || fail "replay of the torch trace"
cat "$T/t.out"
out=$($PY tests/python/salca_agree.py "$T/c.atr" "$T/t.atr" "$T/ties.json") \
    || { echo "$out"; fail "torch and C selections differ away from ties"; }
echo "$out"
# the summary tables agree to their printed digits (same sets, near-equal scores)
diff <(sed -n '2,6p' "$T/c.out") <(sed -n '2,6p' "$T/t.out") > /dev/null \
    || fail "summary tables differ"

# 3. a Hugging Face checkpoint (sharded BF16, biases, tied lm_head, linear RoPE scaling 2)
# loaded by both captures by its public tensor names
$PY tests/python/make_llama_ckpt.py "$T/ck" || fail "writing the test checkpoint"
ck=(--checkpoint "$T/ck" --length 300 --steps 3 --threads 1 --k-min 16)
"$A" capture salca -q --source model "${ck[@]}" -o "$T/kc.atr" > /dev/null || fail "C capture ck"
cap -q "${ck[@]}" --tie-eps 1e-5 --ties-out "$T/kt.json" -o "$T/kt.atr" > /dev/null \
    || fail "torch capture ck"
out=$($PY tests/python/salca_agree.py "$T/kc.atr" "$T/kt.atr" "$T/kt.json") \
    || { echo "$out"; fail "checkpoint: torch and C selections differ away from ties"; }
echo "checkpoint: $out"
$PY -c "
import acceltrace, json, sys
h = acceltrace.open(sys.argv[1]).header
p = json.loads(h.params_json)
assert p['capture'] == 'torch' and p['device'] == 'cpu' and len(p['checkpoint_sha256']) == 2, p
assert h.producer.startswith('acceltrace-torch'), h.producer
" "$T/kt.atr" || fail "torch header provenance"
# bf16 on the CPU: a trace that verifies and names its dtype (other numerics: not compared)
cap -q --checkpoint "$T/ck" --length 300 --steps 1 --dtype bf16 -o "$T/bf.atr" > /dev/null \
    && "$A" verify "$T/bf.atr" > /dev/null && "$A" info "$T/bf.atr" | grep -q "dtype bf16" \
    || fail "bf16 torch capture"
mkdir "$T/ck2" && cp "$T/ck"/* "$T/ck2" && sed -i 's/model.norm.weight/model.nrmx.weight/' \
    "$T/ck2/model.safetensors.index.json" "$T/ck2"/model-0000*.safetensors
cap -q --checkpoint "$T/ck2" --length 300 --steps 1 -o "$T/x.atr" 2> "$T/err"
[ $? -eq 3 ] && grep -q "missing tensor 'model.norm.weight'" "$T/err" \
    || fail "missing tensor: not exit 3 naming it ($(cat "$T/err"))"

# 4. perturbations are caught: an edited selection, and a slightly different checkpoint
$PY - "$T/t.atr" "$T/ties.json" "$T/edit.atr" << 'EOF' || fail "cannot write the edited trace"
import json, sys
import acceltrace
from acceltrace.capture.salca import encode_indices
t = acceltrace.open(sys.argv[1])
ties = json.load(open(sys.argv[2]))
done = False
with acceltrace.Writer(sys.argv[3], t.header) as w:
    for r in t.records():
        m = r.msg
        if r.type == "salca_select" and not done and m.t == 1 and m.method == 0:
            sel = set(r.indices().tolist())
            key = "%d/%d/%d/%d" % (m.t, m.l, m.h, m.method)
            far = [i for i in range(m.n_ctx) if i not in sel and i not in set(ties[key])]
            sel.discard(max(sel))
            sel.add(far[0])
            m.sel = encode_indices(sorted(sel))
            done = True
        w.append(m)
EOF
$PY tests/python/salca_agree.py "$T/c.atr" "$T/edit.atr" "$T/ties.json" --expect-mismatch \
    | tail -1 | grep -q "perturbation detected" || fail "an edited selection went unnoticed"
$PY tests/python/make_llama_ckpt.py "$T/ckp" 8.05 || fail "writing the perturbed checkpoint"
cap -q --checkpoint "$T/ckp" --length 300 --steps 3 --threads 1 --k-min 16 --no-top1 \
    --tie-eps 1e-5 --ties-out "$T/tiesp.json" -o "$T/p.atr" > /dev/null || fail "perturbed capture"
$PY tests/python/salca_agree.py "$T/kc.atr" "$T/p.atr" "$T/tiesp.json" --expect-mismatch \
    | tail -1 | grep -q "perturbation detected" || fail "a perturbed model went unnoticed"

# 5. usage errors exit 2, the memory limit exits 3 with the C capture's message shape
cap -q --source synthetic -o "$T/x.atr" 2> "$T/err"
[ $? -eq 2 ] && grep -q "only the model source" "$T/err" || fail "--source synthetic: not exit 2"
cap -q --methods salca,nope -o "$T/x.atr" 2> /dev/null
[ $? -eq 2 ] || fail "bad --methods: not exit 2"
cap -q --mem-limit 1MiB -o "$T/x.atr" 2> "$T/err"
[ $? -eq 3 ] && grep -q "needs about .*, above --mem-limit 1 MiB" "$T/err" \
    || fail "--mem-limit: not refused with exit 3"
[ ! -e "$T/x.atr" ] || fail "a refused capture left a trace"
echo "ok"
