#!/usr/bin/env bash
# capture disc --source structured (docs/models.md, "Structured synthetic masks") at a small
# N (tiny at 512 px: N = 1024, 3 blocks x 8 heads, 4 steps): the trace verifies, names its
# source and parameters in the header, is the same for 1 and 2 threads, replays, and
# `analyze hash` and `analyze disc` run on it; its recorded load-balance statistics equal the
# recount from kept bits; the head densities cover the 20 matrix-sparsity bins; and, measured
# on the kept masks with the Python package: the Jaccard of consecutive generations is the
# set one, rows keep their 5x5 neighbourhood more than a uniform mask would, and CTR's kept
# tokens cluster. Usage errors exit 2, the memory refusal 3. The 2k run is
# tests/slow/disc_structured_2k.sh.
set -u
A=${ACCELTRACE:?}
fail=0
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
check() { # description, expected exit, actual exit
    if [ "$2" -ne "$3" ]; then echo "FAIL $1: exit $3, want $2"; fail=1; fi
}
S=(capture disc --source structured --image-size 512 --heads 8 --blocks 3 --steps 4
    --keep-masks 'steps=0,2')
"$A" "${S[@]}" --threads 2 -o "$tmp/s.atr" 2> "$tmp/err"; check "structured capture" 0 $?
grep -q "^disc: structured synthetic, 4 steps, 3 blocks x 8 heads" "$tmp/err" ||
    { echo "FAIL summary line: $(cat "$tmp/err")"; fail=1; }
"$A" verify -q "$tmp/s.atr"; check "verify" 0 $?
"$A" info "$tmp/s.atr" > "$tmp/info"; check "info" 0 $?
grep -Eq "^source +synthetic-structured$" "$tmp/info" || { echo "FAIL info source"; fail=1; }
grep -Eq "^source_detail +structured synthetic DiSC masks.*Jaccard 0.8" "$tmp/info" ||
    { echo "FAIL info source_detail"; fail=1; }
grep -Eq "^disc_step +4 " "$tmp/info" && grep -Eq "^disc_mask +96 " "$tmp/info" &&
    grep -Eq "^summary +1 " "$tmp/info" || { echo "FAIL info records"; cat "$tmp/info"; fail=1; }
"$A" info --json "$tmp/s.atr" | grep -q '"source":"synthetic-structured"' ||
    { echo "FAIL info --json source"; fail=1; }
"$A" dump --type header "$tmp/s.atr" > "$tmp/hdr"
for kv in '\\"jaccard\\":0.8' '\\"radius\\":4' '\\"stripes\\":8' '\\"spread\\":1' \
    '\\"density_targets\\":\[' '\\"st\\":\\"structured\\"'; do
    grep -q "$kv" "$tmp/hdr" || { echo "FAIL params_json lacks $kv"; fail=1; }
done
# the same bytes for any thread count (records after the header, whose command line differs)
"$A" "${S[@]}" --threads 1 -q --json -o "$tmp/s1.atr" > "$tmp/json"; check "1 thread" 0 $?
grep -q '"source": *"synthetic-structured"' "$tmp/json" && grep -q '"masks_written": *96' "$tmp/json" ||
    { echo "FAIL --json: $(cat "$tmp/json")"; fail=1; }
"$A" dump "$tmp/s.atr" | tail -n +2 | sed 's/"offset":[0-9]*,//' > "$tmp/a.jsonl"
"$A" dump "$tmp/s1.atr" | tail -n +2 | sed 's/"offset":[0-9]*,//' > "$tmp/b.jsonl"
cmp -s "$tmp/a.jsonl" "$tmp/b.jsonl" || { echo "FAIL 1 and 2 threads differ"; fail=1; }
# replay and the analyzers run on it unchanged
"$A" replay "$tmp/s.atr" --hw configs/disc-a100-matched.json -o "$tmp/r" 2> /dev/null
check "replay" 0 $?
[ "$(grep -c ',all,' "$tmp/r/results.csv")" -ge 1 ] || { echo "FAIL replay has no mode all"; fail=1; }
"$A" analyze disc "$tmp/r" --trace "$tmp/s.atr" -o "$tmp/d" > /dev/null 2>&1
check "analyze disc" 0 $?
[ -s "$tmp/d/st_sparsity.dat" ] || { echo "FAIL analyze disc: no st_sparsity"; fail=1; }
"$A" analyze hash "$tmp/s.atr" -o "$tmp/h" --no-plots > /dev/null; check "analyze hash" 0 $?
# 24 head densities 1/48, 3/48, ... 47/48: every 5% bin holds at least one
bins=$(awk -F, 'NR > 1 && $1 == "mul" && $2 == 8 && $6 > 0' "$tmp/h/hash_matrix.csv" | wc -l)
echo "matrix-sparsity bins covered: $bins of 20"
[ "$bins" -ge 19 ] || { echo "FAIL only $bins of 20 sparsity bins covered"; fail=1; }
# recorded statistics = the recount of the kept bits (U = 256 forces it)
"$A" analyze hash "$tmp/s.atr" -o "$tmp/h2" --units 8,16,32,64,256 --no-plots > /dev/null 2>&1
check "analyze hash 256" 0 $?
# usage errors and the memory refusal
"$A" capture disc --struct-radius 2 -o "$tmp/x.atr" 2> "$tmp/err"; check "struct option alone" 2 $?
grep -q "needs --source structured" "$tmp/err" || { echo "FAIL message: $(cat "$tmp/err")"; fail=1; }
"$A" capture disc --source structured --weights seed:1 -o "$tmp/x.atr" 2> /dev/null
check "--weights with structured" 2 $?
"$A" capture disc --source bogus -o "$tmp/x.atr" 2> /dev/null; check "bad source" 2 $?
"$A" capture disc --source structured --heads 7 -o "$tmp/x.atr" 2> /dev/null; check "heads 7" 2 $?
"$A" capture disc --source structured --blocks 13 -o "$tmp/x.atr" 2> /dev/null; check "blocks 13" 2 $?
"$A" capture disc --source structured --struct-jaccard 1.5 -o "$tmp/x.atr" 2> /dev/null
check "jaccard 1.5" 2 $?
"$A" capture disc --source structured --model pixart-sigma-xl --image-size 2048 \
    --keep-masks steps=0 --mem-limit 64MiB -o "$tmp/x.atr" 2> "$tmp/err"
check "mem-limit" 3 $?
grep -q "above --mem-limit" "$tmp/err" || { echo "FAIL mem message: $(cat "$tmp/err")"; fail=1; }
[ -e "$tmp/x.atr" ] || [ -e "$tmp/x.atr.partial" ] && { echo "FAIL refused run left a file"; fail=1; }
PY=/usr/bin/python3
if ! [ -x "$PY" ] || ! "$PY" -c 'import numpy, zstandard, xxhash, google.protobuf' 2> /dev/null; then
    [ $fail -eq 0 ] && echo "SKIP: no /usr/bin/python3 with numpy, zstandard, xxhash, protobuf"
    exit $((fail ? 1 : 77))
fi
# Jaccard over every row needs every row regenerated: --ctr-off (with CTR a computed subset
# of rows has it up to the sampling of the smooth row field)
"$A" "${S[@]}" --ctr-off -q -o "$tmp/off.atr" 2> /dev/null; check "ctr off" 0 $?
PYTHONPATH=python "$PY" - "$tmp/s.atr" "$tmp/off.atr" "$tmp/h/hash_masks.csv" \
    "$tmp/h2/hash_masks.csv" << 'EOF' || fail=1
import csv, json, sys
import numpy as np
import acceltrace
bad = []
def load(path):
    t = acceltrace.open(path)
    steps = {r.step: r.to_numpy() for r in t.records("disc_step")}
    masks = {(r.msg.step, r.msg.block, r.msg.head): r.to_numpy()
             for r in t.records("disc_mask") if r.msg.kept}
    return t.header, steps, masks
hdr, steps, masks = load(sys.argv[1])
pj = json.loads(hdr.params_json)
G, N, H, Kr = hdr.disc.grid_w, hdr.disc.tokens, hdr.disc.heads, pj["st_refresh"]
J, tgt = pj["struct"]["jaccard"], pj["density_targets"]
def jaccard(steps, masks):
    inter = union = 0
    for (k, b, h), m0 in masks.items():
        if k != 0 or tgt[b * H + h] > 0.75:  # denser heads cannot reach J (a warning says so)
            continue
        rows = steps[Kr]  # rows computed at step Kr hold generation 1, step 0's generation 0
        m1 = masks[(Kr, b, h)][rows]
        inter += (m0[rows] & m1).sum()
        union += (m0[rows] | m1).sum()
    return inter / union
_, steps_off, masks_off = load(sys.argv[2])
j_off, j_ctr = jaccard(steps_off, masks_off), jaccard(steps, masks)
print("Jaccard of consecutive generations: %.4f (all rows), %.4f (CTR rows), set %.2f"
      % (j_off, j_ctr, J))
if abs(j_off - J) > 0.01:
    bad.append("Jaccard %.4f over all rows, set %.2f" % (j_off, J))
if abs(j_ctr - J) > 0.05:
    bad.append("Jaccard %.4f over CTR rows, set %.2f" % (j_ctr, J))
# locality: share of a row's nonzeros in its 5x5 neighbourhood / the share under a uniform mask
ys, xs = np.divmod(np.arange(N), G)
near = (np.abs(ys[:, None] - ys[None, :]) <= 2) & (np.abs(xs[:, None] - xs[None, :]) <= 2)
ratio = {}
for (k, b, h), m in masks.items():
    if k == 0:
        share = (m & near).sum(1) / m.sum(1)
        ratio[(b, h)] = ((share / (near.sum(1) / N)).mean(), 1 - m.mean())
sparse = [r for r, s in ratio.values() if s >= 0.5]
print("5x5 locality over uniform: median %.2f over heads of sparsity >= 0.5, min %.2f"
      % (np.median(sparse), min(r for r, _ in ratio.values())))
if np.median(sparse) < 2 or min(r for r, _ in ratio.values()) <= 1:
    bad.append("masks are not local")
# CTR: P(4-neighbour kept | kept) against the kept share
for k, tm in sorted(steps.items()):
    if k == 0:
        continue
    g = tm.reshape(G, G)
    pairs = sum(2 * (g[:G - dy, :G - dx] & g[dy:, dx:]).sum() for dy, dx in ((0, 1), (1, 0)))
    kept_nb = sum(g[:G - dy, :G - dx].sum() + g[dy:, dx:].sum() for dy, dx in ((0, 1), (1, 0)))
    p, base = pairs / kept_nb, tm.mean()
    print("step %d: P(neighbour kept | kept) %.3f, kept share %.3f" % (k, p, base))
    if p - base < 0.1:
        bad.append("CTR tokens of step %d do not cluster" % k)
# the recorded statistics of every kept mask equal the recount of its bits
rec = {(r["step"], r["block"], r["head"]): r for r in csv.DictReader(open(sys.argv[3]))}
n = 0
for r in csv.DictReader(open(sys.argv[4])):
    if r["source"] != "bits":
        continue
    n += 1
    key = (r["step"], r["block"], r["head"])
    for col, v in rec[key].items():
        if col.startswith(("mean_std_", "imbalance_")) and v != r[col]:
            bad.append("mask %s: recorded %s %s, recounted %s" % (key, col, v, r[col]))
if n != 48:
    bad.append("%d kept masks recounted, want 48" % n)
for b in bad:
    print("FAIL", b)
sys.exit(1 if bad else 0)
EOF
[ $fail -eq 0 ] && echo "disc structured ok"
exit $fail
