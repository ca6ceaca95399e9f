#!/usr/bin/env bash
# `acceltrace export timeline` (docs/interop.md#timeline) on the demo's three replays, from
# small captures with the demo's configs: disc (disc-a100-matched), salca (salca-hbm2 with
# its sweep), kura (kura-h20w5 with its sweep). Each file parses as the Trace Event Format
# (an object with traceEvents; X events with numeric ts/dur; every pid and tid named by an M
# event; C counters numeric), and per track the summed slice time equals the results'
# busy figure for that unit (dpu_s, vpu_s, hbm_s, selector_s, hidden_cycles; the GPU baseline's
# gpu_gemm_s, gpu_attention_s, gpu_elementwise_s, gpu_launch_s; busy_p..busy_a;
# array_s, dma_s, host_s) within 1%, also once slices are merged (--detail); --steps keeps
# only those steps; the Gantt figure is written; bad options, steps without slices and a
# model without the schedule hook exit 2, a trace that is not the results' exits 3. Needs /usr/bin/python3 (exit 77 otherwise).
set -eu
A=${ACCELTRACE:?}
PY=/usr/bin/python3
[ -x "$PY" ] || { echo "SKIP: no /usr/bin/python3"; exit 77; }
here=$(cd "$(dirname "$0")/../.." && pwd)
C=$here/configs
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
cd "$tmp"

"$A" capture disc --model micro --steps 2 --threads 1 -q -o d.atr > /dev/null
"$A" capture salca -q --length 4096 --steps 3 --layers 2 --heads 2 --threads 1 -o s.atr > /dev/null
"$A" capture kura --size 40x36 --steps 4 -q -o k.atr > /dev/null
"$A" replay d.atr --hw "$C/disc-a100-matched.json" --energy "$C/disc-energy.json" -q -o dr \
    2> /dev/null
"$A" replay s.atr --hw "$C/salca-hbm2.json" --sweep "$C/salca-sweep.json" \
    --energy "$C/salca-energy.json" -q -o sr 2> /dev/null
"$A" replay k.atr --hw "$C/kura-h20w5.json" --sweep "$C/kura-sweep.json" -q -o kr 2> /dev/null
grep -q '"trace_path"' dr/manifest.json || { echo "manifest has no trace_path"; exit 1; }

"$A" export timeline dr -o d.json --plot dfig > d.txt
"$A" export timeline sr --config 5 -o s.json --plot sfig > s.txt
"$A" export timeline kr --config 7 -o k.json --plot kfig > k.txt
for w in d s k; do
    grep -q "^wrote $w.json: [0-9]* bytes" $w.txt || { echo "no size line: $(cat $w.txt)"; exit 1; }
    [ "$(sed -n 's/^wrote [^ ]* \([0-9]*\) bytes.*/\1/p' $w.txt)" = "$(stat -c %s $w.json)" ] ||
        { echo "$w: printed size differs from the file's"; exit 1; }
    [ -s ${w}fig/timeline.dat ] || { echo "$w: no figure data"; exit 1; }
done
# merged past 20 slices: sums unchanged, fewer events
"$A" export timeline dr --detail 20 -o dm.json > dm.txt
grep -q 'merged by' dm.txt || { echo "--detail 20 did not merge: $(cat dm.txt)"; exit 1; }
"$A" export timeline kr --config 7 --steps 2-2 -o ks.json > /dev/null

cat > check.py <<'PY'
import json, sys

def load(path):
    with open(path) as f:
        doc = json.load(f)
    assert isinstance(doc, dict) and isinstance(doc["traceEvents"], list), path
    ev = doc["traceEvents"]
    pname, tname, sums, steps = {}, {}, {}, set()
    for e in ev:
        ph = e["ph"]
        assert isinstance(e["pid"], int) and isinstance(e["tid"], int), e
        if ph == "M":
            if e["name"] == "process_name":
                pname[e["pid"]] = e["args"]["name"]
            elif e["name"] == "thread_name":
                tname[(e["pid"], e["tid"])] = e["args"]["name"]
        elif ph == "X":
            for k in ("ts", "dur"):
                assert isinstance(e[k], (int, float)) and e[k] >= 0, e
            assert e["name"] and "step" in e["args"], e
            key = (e["pid"], e["tid"])
            sums[key] = sums.get(key, 0.0) + e["dur"] * 1e-6
            steps.add(e["args"]["step"])
        elif ph == "C":
            assert all(isinstance(v, (int, float)) for v in e["args"].values()), e
        else:
            raise AssertionError("unexpected phase %r" % ph)
    named = {}
    for (pid, tid), s in sums.items():
        assert pid in pname and (pid, tid) in tname, "unnamed track %r" % ((pid, tid),)
        named[(pname[pid], tname[(pid, tid)])] = s
    assert named, path
    return named, steps, len(ev)

def rows(folder, ci):
    out = []
    with open(folder + "/results.jsonl") as f:
        for line in f:
            r = json.loads(line)
            if r["config_index"] == ci:
                out.append(r)
    assert out, (folder, ci)
    return out

def close(got, want, what):
    ok = abs(got - want) <= 0.01 * abs(want) + 1e-15
    if not ok:
        raise AssertionError("%s: timeline %.9g s, results %.9g s" % (what, got, want))

def check_disc(path):
    named, _, n = load(path)
    for r in rows("dr", 0):
        mode = r["labels"]["mode"]
        g = "DiSC mode " + mode
        m, c = r["metrics"], r["counts"]
        hz = r["config"]["clock_ghz"] * 1e9
        want = {"DPU array": m["dpu_s"], "VPU": m["vpu_s"], "HBM (memory-bound ops)": m["hbm_s"],
                "token selector": m["selector_s"],
                "DPU array under SpMM": c["hidden_cycles"] / hz}
        for track, w in want.items():
            close(named.get((g, track), 0.0), w, "%s %s" % (g, track))
        total = sum(v for (gg, t), v in named.items() if gg == g and t != "DPU array under SpMM")
        close(total, m["seconds"], g + " exposed total")
        # the GPU baseline beside it: a track per op class, each the results' gpu_<class>_s
        gg = "GPU " + r["config"]["gpu"]
        for t, col in (("GPU GEMM", "gpu_gemm_s"), ("GPU attention", "gpu_attention_s"),
                       ("GPU element-wise", "gpu_elementwise_s"), ("GPU launch gaps", "gpu_launch_s")):
            close(named.get((gg, t), 0.0), m[col], "%s %s" % (gg, t))
        close(sum(v for (p, t), v in named.items() if p == gg), m["gpu_seconds"], gg + " total")
    return n

def check_salca(path):
    named, _, n = load(path)
    (r,) = [x for x in rows("sr", 5)]
    hz = r["config"]["f_cmp_ghz"] * 1e9
    for k, t in (("p", "stage P (relevance)"), ("q", "stage Q (INT8, pool, histogram)"),
                 ("f", "stage F (threshold, filter)"), ("a", "stage A (gather, attention)")):
        close(named.get(("Salca", t), 0.0), r["counts"]["busy_" + k] / hz, "salca busy_" + k)
    return n

def check_kura(path, steps=None):
    named, seen, n = load(path)
    (r,) = rows("kr", 7)
    m = r["metrics"]
    if steps is None:
        for t, col in (("array", "array_s"), ("DMA", "dma_s"), ("host", "host_s")):
            close(named.get(("SA-Kura", t), 0.0), m[col], "kura " + col)
        close(sum(named.values()), m["sys_step_s"] * r["counts"]["steps"], "kura system total")
    else:
        assert seen == steps, seen
        close(named[("SA-Kura", "array")], m["step_s"], "kura one step's array time")
    return n

n_d = check_disc("d.json")
n_m = check_disc("dm.json")
assert n_m < n_d, (n_m, n_d)
assert json.load(open("dm.json"))["otherData"]["merge_level"] >= 1
check_salca("s.json")
check_kura("k.json")
check_kura("ks.json", steps={2})
print("ok")
PY
"$PY" check.py

# errors: no such config, bad format, perfetto not written yet, a trace not the results'
set +e
"$A" export timeline dr --config 3 -o x.json 2> err.txt; rc=$?
[ $rc = 2 ] && grep -q "no row of config 3" err.txt || { echo "config 3: $rc $(cat err.txt)"; exit 1; }
"$A" export timeline dr --format svg -o x.json 2> /dev/null; rc=$?
[ $rc = 2 ] || { echo "--format svg exit $rc"; exit 1; }
"$A" export timeline dr --format perfetto -o x.json 2> /dev/null; rc=$?
[ $rc = 2 ] || { echo "--format perfetto exit $rc"; exit 1; }
"$A" export timeline dr --trace s.atr -o x.json 2> err.txt; rc=$?
[ $rc = 3 ] && grep -q "is not the one of" err.txt || { echo "other trace: $rc $(cat err.txt)"; exit 1; }
"$A" export timeline nowhere -o x.json 2> /dev/null; rc=$?
[ $rc = 3 ] || { echo "missing folder exit $rc"; exit 1; }
"$A" export timeline kr --config 7 --steps 50-60 -o x.json 2> err.txt; rc=$?
[ $rc = 2 ] && grep -q "no slices in steps 50-60" err.txt || { echo "empty steps: $rc"; exit 1; }
"$A" capture test --records 20 -q -o t.atr > /dev/null
"$A" replay t.atr --hw "$C/test-count.json" -q -o tr 2> /dev/null
"$A" export timeline tr -o x.json 2> err.txt; rc=$?
[ $rc = 2 ] && grep -q "reported no schedule" err.txt || { echo "count model: $rc $(cat err.txt)"; exit 1; }
set -e
[ ! -e x.json ] && [ ! -e x.json.tmp ] || { echo "a failed export left a file"; exit 1; }
echo "timeline export ok"
