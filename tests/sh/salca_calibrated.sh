#!/usr/bin/env bash
# The calibrated Salca source (docs/models.md, "Calibrated Salca source")
# at a reduced length: it is the default source and names itself in the header; the head
# classes follow the DuoAttention retrieval fraction; `analyze conflicts` writes
# selection_structure.csv per head class with the sink and recent-16 hit rates and the
# run-length distribution; streaming and retrieval heads select differently; recall rises
# with retention. The 32K figures: tests/slow/salca_calibrated_32k.sh.
set -u
A=${ACCELTRACE:?ACCELTRACE not set}
case "$A" in */*) A=$(realpath "$A") ;; esac
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
export SOURCE_DATE_EPOCH=1767225600
cap() { "$A" capture salca -q --length 4096 --steps 8 --threads 2 "$@" > /dev/null; }

# 1. the default source at two retentions; provenance and the per-head map in the header
cap --retention 0.1 -o "$T/r10.atr" || fail "default capture"
cap --retention 0.05 --source calibrated -o "$T/r05.atr" || fail "calibrated capture"
"$A" info "$T/r10.atr" | grep -q '^source  *synthetic-calibrated$' || fail "info: source"
"$A" info "$T/r10.atr" | grep -q 'full_attention_heads.tsv' || fail "info: source_detail data"
"$A" info --json "$T/r10.atr" > "$T/info.json" || fail "info --json"
python3 - "$T/info.json" << 'PY' || fail "header parameters"
import json, sys
p = json.loads(json.load(open(sys.argv[1]))["header"]["params_json"])
assert p["source"] == "calibrated", p["source"]
c = p["calibrated"]
# layers 0, 8, 16, 24 and query heads 0, 2 (KV head 0) and 16, 18 (KV head 4) of the model
assert c["model_layers"] == [0, 8, 16, 24] and c["model_q_heads"] == [0, 2, 16, 18], c
# DuoAttention gates, top half retrieval: (0,0) .605 (0,4) .025 (8,0) 1 (8,4) .930 (16,0) 1
# (16,4) .922 (24,0) .828 (24,4) .988 against the 128th largest gate .953
assert c["head_class"] == "SSSS" "RRSS" "RRSS" "SSRR", c["head_class"]
# MInference patterns of those heads (Llama-3.1-8B 128k file)
assert c["head_pattern"] == "DDDD" "DBAD" "EBBE" "BBEE", c["head_pattern"]
# boost of a 30/800 key at 0.98057 of the mass: logit(m) - logit(830/30000) + 1/2
assert abs(c["pattern_boost"]["A"] - 7.98) < 0.01, c["pattern_boost"]
PY

# 2. the selection structure per head class
"$A" analyze conflicts "$T/r10.atr" "$T/r05.atr" -o "$T/an" > /dev/null 2>&1 || fail "analyze conflicts"
S="$T/an/selection_structure.csv"
[ -s "$S" ] || fail "no selection_structure.csv"
python3 - "$S" "$T/an/recall_vs_retention.csv" << 'PY' || fail "selection structure figures"
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
bins = [k for k in rows[0] if k.startswith("rl_")]
def row(m, cls, rho):
    r = [x for x in rows if x["method"] == m and x["head_class"] == cls and x["rho"] == rho]
    assert len(r) == 1, (m, cls, rho, len(r))
    return r[0]
for m in ("salca", "std_topk", "pl_topk", "full_feat", "quest"):
    for rho in ("0.1", "0.05"):
        # 4 layers x 4 heads x 8 steps = 128 selections: 5 of the 8 KV-head groups stream
        assert int(row(m, "streaming", rho)["selections"]) == 80
        assert int(row(m, "retrieval", rho)["selections"]) == 48
        for cls in ("streaming", "retrieval"):
            s = sum(float(row(m, cls, rho)[b]) for b in bins)
            assert abs(s - 1) < 1e-5, (m, cls, rho, s)
# at 4K and rho 0.1 (K = 410 > the 260 sink and window tokens of a streaming head) the
# exact top-k keeps every sink and every one of the last 16 tokens in every selection
for cls in ("streaming", "retrieval"):
    r = row("std_topk", cls, "0.1")
    assert float(r["sink_hit_rate"]) == 1 and float(r["recent16_hit_rate"]) == 1, r
sal = [row("salca", c, "0.1") for c in ("streaming", "retrieval")]
n = sum(int(x["selections"]) for x in sal)
sink = sum(float(x["sink_hit_rate"]) * int(x["selections"]) for x in sal) / n
rec = sum(float(x["recent16_hit_rate"]) * int(x["selections"]) for x in sal) / n
print(f"salca at 4K, rho 0.1: sink hit {sink:.3f}, recent-16 hit {rec:.3f}")
assert sink >= 0.9 and rec >= 0.9, (sink, rec)
# streaming heads: sinks + one window, so most selected tokens lie in long runs; retrieval
# heads add scattered vertical keys: the token-weighted run-length distributions differ
s, r = row("std_topk", "streaming", "0.1"), row("std_topk", "retrieval", "0.1")
tv = 0.5 * sum(abs(float(s[b]) - float(r[b])) for b in bins)
print(f"std_topk run lengths, streaming vs retrieval: total variation {tv:.3f}")
assert tv >= 0.1, tv
assert float(s["rl_257_up"]) > float(r["rl_257_up"]), (s["rl_257_up"], r["rl_257_up"])
q = {(x["method"], x["rho"]): float(x["recall_mean"]) for x in csv.DictReader(open(sys.argv[2]))}
for m in ("salca", "std_topk"):
    assert q[(m, "0.1")] > q[(m, "0.05")], (m, q)
PY

# 3. the retrieval fraction drives the classes: 0 makes every head a streaming head
"$A" capture salca -q --length 1024 --steps 1 --cal-retrieval-frac 0 --methods salca \
    -o "$T/f0.atr" > /dev/null || fail "frac 0"
"$A" analyze conflicts "$T/f0.atr" -o "$T/an0" > /dev/null 2>&1 || fail "analyze frac 0"
[ "$(cut -d, -f4 "$T/an0/selection_structure.csv" | sed 1d | sort -u)" = streaming ] \
    || fail "retrieval fraction 0 left retrieval heads"

# 4. --source synthetic keeps the old source and its header
"$A" capture salca -q --length 1024 --steps 1 --source synthetic --methods salca \
    -o "$T/syn.atr" > /dev/null || fail "synthetic capture"
"$A" info "$T/syn.atr" | grep -q '^source  *synthetic$' || fail "synthetic: source"

# 5. same parameters, same bytes (the header holds the command line: same name, two folders)
mkdir "$T/a" "$T/b"
for d in a b; do
    (cd "$T/$d" && "$A" capture salca -q --length 1024 --steps 2 --threads 2 -o same.atr \
        > /dev/null) || fail "repeat $d"
done
cmp -s "$T/a/same.atr" "$T/b/same.atr" || fail "equal runs gave different bytes"
# and the thread count changes no record (the prompt's K/V groups and the decode jobs run
# on the workers); the header differs by its command line, and so the frame offsets
mkdir "$T/c"
(cd "$T/c" && "$A" capture salca -q --length 1024 --steps 2 --threads 1 -o same.atr \
    > /dev/null) || fail "one thread"
recs() { "$A" dump "$1" | sed '1d; s/"offset":[0-9]*,//'; }
[ "$(recs "$T/a/same.atr")" = "$(recs "$T/c/same.atr")" ] || fail "1 and 2 threads: other records"
[ "$(recs "$T/a/same.atr" | grep -c salca_prefill)" -gt 1 ] || fail "no prefill records to compare"

# 6. usage errors exit 2: dims that do not map onto the model, a bad fraction or source
for args in "--heads 10 --kv-heads 2" "--layers 33" "--kv-heads 16 --heads 16" \
    "--cal-retrieval-frac 1.5" "--source bogus"; do
    # shellcheck disable=SC2086
    "$A" capture salca -q --length 1024 --steps 1 $args -o "$T/bad.atr" > /dev/null 2> "$T/err"
    rc=$?
    [ $rc -eq 2 ] || fail "'$args': exit $rc, $(cat "$T/err")"
done
grep -q "unknown source 'bogus'" "$T/err" || fail "message for a bad source"
echo "salca_calibrated: ok"
