#!/usr/bin/env bash
# The calibrated Salca source at 32K (docs/models.md, "Calibrated
# Salca source"). Four captures at retentions 0.02, 0.05, 0.1 and 0.2 (--length 32768, 64
# steps, every method), then `analyze conflicts` over them; prints the figures and checks:
# sinks selected in >= 90% of Salca's selections and all of the last 16 tokens in >= 90%,
# streaming and retrieval heads with different run-length distributions, recall vs
# retention a curve (rising over the four retentions), and alpha from the traces.
# Minutes of CPU: a slow test (`make test-slow`, tests/run.sh with ACCELTRACE_SLOW=1).
# OUTDIR=DIR keeps the traces and tables there.
set -euo pipefail
A=${ACCELTRACE:-build/acceltrace}
if [ -n "${OUTDIR:-}" ]; then T=$OUTDIR; mkdir -p "$T"; else T=$(mktemp -d); trap 'rm -rf "$T"' EXIT; fi
fail() { echo "FAIL: $*" >&2; exit 1; }
THREADS=${ACCELTRACE_THREADS:-2}
for rho in 0.02 0.05 0.1 0.2; do
    [ -s "$T/cal_$rho.atr" ] && continue
    "$A" capture salca -q --source calibrated --length 32768 --steps 64 --retention "$rho" \
        --threads "$THREADS" -o "$T/cal_$rho.atr" > "$T/cal_$rho.out" || fail "capture at $rho"
done
"$A" analyze conflicts "$T"/cal_*.atr -o "$T/an" > "$T/an.out" 2>&1 || fail "analyze conflicts"
S="$T/an/selection_structure.csv"
echo "== selection structure (analyze conflicts: selection_structure.csv)"
column -s, -t "$S"
echo "== recall vs retention (recall_vs_retention.csv)"
column -s, -t "$T/an/recall_vs_retention.csv"
echo "== alpha (alpha.csv, salca)"
column -s, -t "$T/an/alpha.csv" | head -12
python3 - "$S" "$T/an/recall_vs_retention.csv" << 'PY' || fail "acceptance figures"
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
bad = []
for cls in ("retrieval", "streaming"):
    for rho in ("0.02", "0.05", "0.1", "0.2"):
        r = [x for x in rows if x["method"] == "salca" and x["head_class"] == cls and x["rho"] == rho]
        if not r:
            bad.append(f"no salca rows for {cls} at {rho}")
allsel = [x for x in rows if x["method"] == "salca"]
n = sum(int(x["selections"]) for x in allsel)
sink = sum(float(x["sink_hit_rate"]) * int(x["selections"]) for x in allsel) / n
rec = sum(float(x["recent16_hit_rate"]) * int(x["selections"]) for x in allsel) / n
print(f"salca over {n} selections: sink hit rate {sink:.4f}, recent-16 hit rate {rec:.4f}")
if sink < 0.9: bad.append(f"sink hit rate {sink:.4f} < 0.9")
if rec < 0.9: bad.append(f"recent-16 hit rate {rec:.4f} < 0.9")
bins = [k for k in rows[0] if k.startswith("rl_")]
for rho in ("0.05",):
    s = next(x for x in allsel if x["head_class"] == "streaming" and x["rho"] == rho)
    r = next(x for x in allsel if x["head_class"] == "retrieval" and x["rho"] == rho)
    tv = 0.5 * sum(abs(float(s[b]) - float(r[b])) for b in bins)
    print(f"rho {rho}: run-length distributions streaming vs retrieval, total variation {tv:.3f}; "
          f"mean run {s['mean_run_len']} vs {r['mean_run_len']}")
    if tv < 0.1: bad.append(f"streaming and retrieval run lengths alike (TV {tv:.3f})")
q = [x for x in csv.DictReader(open(sys.argv[2])) if x["method"] == "salca"]
q.sort(key=lambda x: float(x["retention_mean"]))
curve = [(float(x["retention_mean"]), float(x["recall_mean"])) for x in q]
print("salca recall vs retention:", ", ".join(f"{a:.4f}:{b:.4f}" for a, b in curve))
if len(curve) < 4 or any(b2 <= b1 for (_, b1), (_, b2) in zip(curve, curve[1:])):
    bad.append("recall does not rise over the retentions")
for b in bad: print("FAIL:", b)
sys.exit(1 if bad else 0)
PY
grep '^alpha\.' "$T/an.out" | head -4
echo "salca_calibrated_32k: ok"
