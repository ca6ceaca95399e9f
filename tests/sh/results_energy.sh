#!/usr/bin/env bash
# `energy RES --table T` replaces exactly the energy columns (energy_j, energy_<c>_j in J)
# in results.csv AND results.jsonl of every table, keeps every other column (salca's
# energy_gain_vs_dense among them) and records the table in the manifest, so that
# replay + energy equals replay --energy byte for byte and a later replay --energy T
# resumes the folder (docs/design.md#trust-interfaces-and-python).
set -euo pipefail
A=${ACCELTRACE:?}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
[ -x /usr/bin/python3 ] || { echo "SKIP: /usr/bin/python3 not installed"; exit 77; }
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
cd "$T"
fail() { echo "FAIL: $*"; exit 1; }
"$A" capture test --records 50 -o t.atr 2> /dev/null
H="$ROOT/configs/test-count.json"
G="$ROOT/configs/test-sweep.json"
E="$ROOT/configs/test-energy.json"
"$A" replay t.atr --hw "$H" --sweep "$G" --energy "$E" -q -o withe 2> /dev/null
"$A" replay t.atr --hw "$H" --sweep "$G" -q -o r 2> /dev/null
"$A" energy r --table "$E" 2> log.txt || fail "energy: $(cat log.txt)"
grep -q "100 rows of r (.csv and .jsonl)" log.txt || fail "energy message: $(cat log.txt)"
cmp withe/results.csv r/results.csv || fail "results.csv differs from replay --energy"
cmp withe/results.jsonl r/results.jsonl || fail "results.jsonl differs from replay --energy"
# the manifest now names the table: replay --energy T resumes, replay without is refused
"$A" replay t.atr --hw "$H" --sweep "$G" --energy "$E" -o r 2> log.txt || fail "resume: $(cat log.txt)"
grep -q "replayed 0 of 100 configs (100 already done)" log.txt || fail "resume: $(cat log.txt)"
rc=0; "$A" replay t.atr --hw "$H" --sweep "$G" -q -o r 2> log.txt || rc=$?
[ "$rc" = 2 ] && grep -q "energy table ('$E', now none)" log.txt || fail "no --energy: $rc $(cat log.txt)"
# another table: only the energy columns change, in both files
sed 's/"pj": 2.5/"pj": 5.0/' "$E" > e2.json
"$A" energy r --table e2.json 2> /dev/null
cut -d, -f1-14 withe/results.csv > a.txt; cut -d, -f1-14 r/results.csv > b.txt
cmp a.txt b.txt || fail "non-energy columns changed"
[ "$(head -1 r/results.csv)" = "$(head -1 withe/results.csv)" ] || fail "header changed"
/usr/bin/python3 - <<'PY' || fail "jsonl energy not recomputed"
import json
a = [json.loads(l) for l in open("withe/results.jsonl")]
b = [json.loads(l) for l in open("r/results.jsonl")]
assert len(a) == len(b) == 100
for x, y in zip(a, b):
    ops, rec = x["counts"]["ops"], x["counts"]["records"]
    assert abs(y["metrics"]["energy_core_j"] - ops * 5.0e-12) <= 1e-24 + 1e-12 * ops * 5e-12
    assert abs(y["metrics"]["energy_io_j"] - rec * 0.75e-12) <= 1e-12 * rec * 0.75e-12
    assert abs(y["metrics"]["energy_j"] - (ops * 5.0e-12 + rec * 0.75e-12)) <= 1e-22
    for k in ("trace_hash", "config_hash", "config", "counts", "labels"):
        assert x[k] == y[k], k
    assert [k for k in x["metrics"]] == [k for k in y["metrics"]]
PY
# a table of a folder on its own would part .csv from .jsonl: refused
rc=0; "$A" energy r/results.csv --table "$E" 2> log.txt || rc=$?
[ "$rc" = 2 ] && grep -q "give the folder" log.txt || fail "csv in folder: $rc $(cat log.txt)"
# a model metric named energy_* that is not an energy column survives (salca)
"$A" capture salca --source synthetic -q -q --length 1024 --steps 2 --layers 1 --heads 2 --threads 1 -o s.atr > /dev/null
"$A" replay s.atr --hw "$ROOT/configs/salca-hbm2.json" --energy "$ROOT/configs/salca-energy.json" \
    -j 1 -q -o s 2> /dev/null
cp -r s s0
"$A" energy s --table "$ROOT/configs/salca-energy.json" 2> /dev/null
head -1 s/results.csv | grep -q "energy_gain_vs_dense" || fail "energy_gain_vs_dense dropped from results.csv"
grep -q '"energy_gain_vs_dense"' s/results.jsonl || fail "energy_gain_vs_dense dropped from results.jsonl"
for f in results.csv results.jsonl salca_steps.csv salca_steps.jsonl; do
    cmp s0/$f s/$f || fail "same table changed $f"
done
echo ok
