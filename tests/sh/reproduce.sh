#!/usr/bin/env bash
# `acceltrace reproduce all --quick`: exits 0 and writes
# reproduce.csv and reproduce.md; the columns are the fixed ones; every status is from the
# vocabulary; calibrated and not-modelled rows have a basis; the label rule holds (numbers
# produced by a solver or fit are calibrated, never predicted: the SA-Kura headlines and the
# VPU-width search; the Salca solver lines are recomputed); the rows of acceptance 2 exist;
# each Salca speedup has its measured-alpha and paper-alpha rows; a foreign non-empty
# folder is refused with exit 2. Wall and CPU time of the run are printed (not asserted).
set -euo pipefail
A=${ACCELTRACE:?}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
PY=/usr/bin/python3
cd "$ROOT"
start=$(date +%s)
TIMER=()
[ -x /usr/bin/time ] && TIMER=(/usr/bin/time -f '%e s wall, %U s user, %S s sys' -o "$T/time.txt")
"${TIMER[@]}" "$A" reproduce all --quick --threads 2 -o "$T/R" 2> "$T/log.txt" ||
    { cat "$T/log.txt"; exit 1; }
[ -f "$T/time.txt" ] && echo "reproduce --quick: $(cat "$T/time.txt")"
grep 'done in' "$T/log.txt"
# the long captures inside reproduce show their progress (with -q they would not)
grep -q '^disc capture: [0-9]*/[0-9]*' "$T/log.txt" || { echo "no disc capture progress"; exit 1; }
grep -q '^salca capture: [0-9]*/[0-9]*' "$T/log.txt" || { echo "no salca capture progress"; exit 1; }
[ -s "$T/R/reproduce.csv" ] && [ -s "$T/R/reproduce.md" ]
[ -f "$T/R/.acceltrace-reproduce" ]
cols=paper_id,quantity,condition,paper_value,paper_lo,paper_hi,ours,unit,ratio,status,basis,command
[ "$(head -1 "$T/R/reproduce.csv")" = "$cols" ] || { echo "bad header"; exit 1; }
"$PY" - "$T/R/reproduce.csv" <<'PYEOF'
import csv, re, sys
rows = list(csv.DictReader(open(sys.argv[1], newline='')))
vocab = {'predicted', 'recomputed', 'calibrated', 'input', 'not-modelled'}
bad = []
for r in rows:
    q, s = r['paper_id'] + ': ' + r['quantity'], r['status']
    if s not in vocab:
        bad.append('status %r: %s' % (s, q))
    if s in ('calibrated', 'not-modelled') and not r['basis'].strip():
        bad.append('no basis: ' + q)
    if s != 'not-modelled' and (not r['ours'] or not r['command'].startswith('acceltrace ')):
        bad.append('no value or command: ' + q)
    # a number whose parameter was solved or fitted for it is not predicted
    if s == 'predicted' and re.search(r'(?<!not )(solved|fitted|calibrated)', r['basis']):
        bad.append('predicted but its basis says solved/fitted: ' + q)
    if r['ratio'] and r['ours'] and r['paper_value']:
        if abs(float(r['ratio']) - float(r['ours']) / float(r['paper_value'])) > 1e-4 * abs(float(r['ratio'])):
            bad.append('ratio: ' + q)
def find(paper, text):
    m = [r for r in rows if r['paper_id'] == paper and text in r['quantity']]
    if not m:
        bad.append('missing row %s: %s' % (paper, text))
    return m
def status(paper, text, want):
    for r in find(paper, text):
        if r['status'] != want:
            bad.append('%s: %s is %s, want %s' % (paper, r['quantity'], r['status'], want))
# the SA-Kura headlines come from the t_marsh solve and the fit4 power fit
for t in ('system latency', 'system energy', 'vs Rocket-only', 'energy gain vs Jetson',
          'within 3 mm2', 'within 4 mm2', 'within 5 mm2', 'within 6 mm2'):
    status('kura', t, 'calibrated')
status('kura', 'latency gain vs Jetson', 'input')
for t in ('design point', "p' ", 'final design PCs', 'min retention', 'reorder gain alpha_inorder'):
    status('salca', t, 'recomputed')
status('disc', 'CTR token pruning ratio', 'input')
status('disc', 'smallest vpu_width', 'calibrated')
status('disc', 'DiSC_All / DiSC_CTR (Fig. 18a)', 'calibrated')  # at the calibrated default width
status('disc', "DiSC_All / DiSC_CTR at vpu_width 16", 'predicted')
# every DiSC speedup and energy row: at the calibrated default vpu_width it is calibrated
# and names vpu_width; the same row at width 16 is predicted
for r in rows:
    if r['paper_id'] != 'disc' or not re.search(r'(speedup|energy reduction) vs ', r['quantity']):
        continue
    want = 'predicted' if 'vpu_width 16' in r['quantity'] else 'calibrated'
    if r['status'] != want or (want == 'calibrated' and 'vpu_width' not in r['basis']):
        bad.append('vpu_width rule: %s is %s' % (r['quantity'], r['status']))
for gpu in ('A100', 'H100 SXM5', 'H100 PCIe'):
    find('disc', 'DiSC_All speedup vs %s (Fig. 18a)' % gpu)
    find('disc', 'DiSC_All speedup vs %s, vpu_width 16 (Fig. 18a)' % gpu)
# Salca against the GPU: a predicted value
for r in find('salca', 'salca_final (window 128) vs A100 dense decode attention'):
    if r['status'] != 'predicted' or not r['ours'] or not float(r['ours']) > 0:
        bad.append('salca vs GPU: %s %s' % (r['status'], r['ours']))
for t in ('ST attention sparsity', 'FLOP reduction CTR+ST', 'self-attention FLOP reduction',
          'DiSC_Baseline speedup vs A100', 'DiSC_CTR speedup vs A100', 'DiSC_All speedup vs A100',
          'DiSC_Baseline energy reduction', 'DiSC_CTR energy reduction', 'DiSC_All energy reduction vs A100',
          'DiSC_All / DiSC_CTR', 'DiSC_All speedup vs H100', 'DiSC_All energy reduction vs H100',
          'hash, U 64 (Fig. 15)', 'multiplicative hash lowest',
          'conflict factor alpha, in order', 'conflict factor alpha, reorder window 128'):
    find('disc' if 'DiSC' in t or 'FLOP' in t or 'hash' in t or 'ST ' in t else 'salca', t)
# each Salca speedup has the measured-alpha and the paper-alpha row
for t in ('salca_final vs ASIC_D, in order', 'salca_final vs ASIC_D, window 128',
          'ASIC_S_4 vs ASIC_D, in order', 'pipeline reorder gain'):
    find('salca', t + ', measured alpha')
    find('salca', t + ', paper alpha')
for r in rows:  # the paper-alpha rows say the alpha was given, and both rows are predicted
    if 'paper alpha' in r['quantity'] and 'given' not in r['basis']:
        bad.append('paper-alpha row without "given": ' + r['quantity'])
# the 1k and 2k rows come from the 512 px statistics scaled up: predicted, and they say so
for px in (1024, 2048):
    for t in ('DiSC_Baseline speedup vs A100', 'DiSC_CTR speedup vs A100', 'DiSC_All speedup vs A100',
              'DiSC_All energy reduction vs A100', 'DiSC_All speedup vs H100 SXM5',
              'DiSC_All energy reduction vs H100 SXM5', 'DiSC_All speedup vs H100 PCIe',
              'DiSC_All energy reduction vs H100 PCIe'):
        for r in find('disc', '%s at %d px' % (t, px)):
            if 'statistics of the 512 px capture scaled to N=' not in r['basis']:
                bad.append('scaled row: %s / %s / %s' % (r['quantity'], r['status'], r['basis']))
# quick runs fewer heads or the tiny model: the condition says so
for r in rows:
    if r['paper_id'] == 'salca' and 'conflict factor' in r['quantity'] and '32 query heads' not in r['condition']:
        bad.append('salca condition does not name the geometry')
    if r['paper_id'] == 'disc' and 'DiSC_All speedup vs A100' in r['quantity'] and 'tiny' not in r['condition']:
        bad.append('quick disc condition does not say tiny')
    if r['paper_id'] == 'salca' and ' layers, ' in r['quantity'] and r['quantity'].endswith(']'):
        bad.append('--quick without --full ran a full-geometry salca capture: ' + r['quantity'])
if bad:
    print('\n'.join(bad)); sys.exit(1)
print('%d rows ok' % len(rows))
PYEOF
# what made each run's data: the trace headers' sources
[ "$(head -1 "$T/R/sources.csv")" = paper_id,data,source,source_detail ]
grep -q '^disc,.*,seeded,' "$T/R/sources.csv" || { echo "no disc source"; exit 1; }
grep -q '^salca,.*,synthetic-calibrated,' "$T/R/sources.csv" || { echo "no salca source"; exit 1; }
grep -q '^## Data sources' "$T/R/reproduce.md"
grep -q '^| salca | the Salca capture (calibrated source' "$T/R/reproduce.md"
grep -q '^## disc: the GPU baselines by op class' "$T/R/reproduce.md"
grep -q "^## disc: speedup sensitivity to the GPU model's error" "$T/R/reproduce.md"
grep -q '^## disc: DiSC_All / DiSC_CTR against vpu_width' "$T/R/reproduce.md"
grep -q '^| 16 (before calibration) |' "$T/R/reproduce.md"
grep -q '^| 24 (default) |' "$T/R/reproduce.md"
# the DiSC time by unit, at 512 px and at the scaled sizes
[ "$(grep -c '^## disc: DiSC time by unit' "$T/R/reproduce.md")" = 3 ]
grep -q '^| DPU array (compute-bound ops) |' "$T/R/reproduce.md"
# All/CTR against vpu_width as a figure: its CSV (5 widths), the PNG when gnuplot is here
F=$T/R/disc_all_over_ctr_vs_vpu
[ "$(head -1 "$F.csv")" = vpu_width,disc_ctr_speedup,disc_all_speedup,all_over_ctr ]
[ "$(cut -d, -f1 "$F.csv" | tail -n +2 | tr '\n' ' ')" = "16 24 32 48 64 " ]
grep -q '(disc_all_over_ctr_vs_vpu.png)' "$T/R/reproduce.md"
if command -v gnuplot > /dev/null; then [ -s "$F.png" ]; fi
# the figure's ratios are the table's (3 decimals)
"$PY" - "$F.csv" "$T/R/reproduce.md" <<'PYEOF'
import csv, sys
md = open(sys.argv[2]).read()
for r in csv.DictReader(open(sys.argv[1])):
    cell = '| %.3f | %.3f | %.3f |' % (float(r['disc_ctr_speedup']), float(r['disc_all_speedup']), float(r['all_over_ctr']))
    assert cell in md, cell
PYEOF
# a rerun of one paper into the same folder is accepted
"$A" reproduce kura -o "$T/R" 2> /dev/null
grep -q '^kura,' "$T/R/reproduce.csv" && ! grep -q '^disc,' "$T/R/reproduce.csv"
# a non-empty folder that reproduce did not make is refused and left alone
mkdir "$T/foreign" && echo keep > "$T/foreign/notes.txt"
set +e
"$A" reproduce kura -o "$T/foreign" 2> "$T/err.txt"; rc=$?
"$A" reproduce nonsense -o "$T/x" 2> /dev/null; rc2=$?
"$A" reproduce kura 2> /dev/null; rc3=$?
set -e
[ $rc = 2 ] || { echo "foreign folder: exit $rc, want 2"; exit 1; }
grep -q "not made by acceltrace reproduce" "$T/err.txt"
[ "$(cat "$T/foreign/notes.txt")" = keep ] && [ ! -e "$T/foreign/reproduce.csv" ]
[ $rc2 = 2 ] && [ $rc3 = 2 ] || { echo "usage errors: $rc2 $rc3"; exit 1; }
echo "ok ($(( $(date +%s) - start )) s)"
