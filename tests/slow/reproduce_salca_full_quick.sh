#!/usr/bin/env bash
# `acceltrace reproduce salca --quick --full`: besides the usual rows, the calibrated source
# at the paper's decode geometry (32 layers x 32 query heads, 8 KV heads, d 128), captured
# with the layer-major plan; --quick takes it at n0 2048 and 8192 and 1 decode step (the
# real --full: 32768 and 131072, 2 steps; docs/performance.md). Each such row says the
# geometry and context in its quantity, condition and basis, is predicted, has a finite
# value, and its command names the capture; the sources name both captures. Wall time
# printed, not asserted.
set -euo pipefail
A=${ACCELTRACE:?}
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
start=$(date +%s)
"$A" reproduce salca --quick --full --threads 2 -q -o "$T/R"
echo "reproduce salca --quick --full: $(( $(date +%s) - start )) s wall"
/usr/bin/python3 - "$T/R/reproduce.csv" "$T/R/sources.csv" <<'PYEOF'
import csv, math, sys
rows = list(csv.DictReader(open(sys.argv[1], newline='')))
src = open(sys.argv[2]).read()
bad = []
for k, n0 in (('2K', 2048), ('8K', 8192)):
    sel = [r for r in rows if r['paper_id'] == 'salca' and r['quantity'].endswith('[32 layers, %s]' % k)]
    qs = {r['quantity'].rsplit(' [', 1)[0] for r in sel}
    want = {'conflict factor alpha, in order (sec. 4)',
            'conflict factor alpha, reorder window 128 (sec. 4)',
            'salca_final vs ASIC_D, in order, measured alpha (Fig. 10)',
            'salca_final vs ASIC_D, window 128, measured alpha (2.58 x 1.87)',
            'salca_final (window 128) vs A100 dense decode attention GPU_D (abstract)',
            'A100 GPU_S vs GPU_D decode attention'}
    if not want <= qs:
        bad.append('%s: rows missing: %s' % (k, sorted(want - qs)))
    for r in sel:
        if '32 layers x 32 query heads' not in r['condition'] or k not in r['condition']:
            bad.append('%s condition: %s' % (k, r['condition']))
        if '32 layers, captured at %s' % k not in r['basis']:
            bad.append('%s basis: %s' % (k, r['basis']))
        if r['status'] != 'predicted':
            bad.append('%s status %s: %s' % (k, r['status'], r['quantity']))
        v = float(r['ours']) if r['ours'] else float('nan')
        if not math.isfinite(v) or v <= 0:
            bad.append('%s value %r: %s' % (k, r['ours'], r['quantity']))
        if '--length %d ' % n0 not in r['command'] or '--layer-major' not in r['command']:
            bad.append('%s command: %s' % (k, r['command']))
    alpha = [float(r['ours']) for r in sel if r['quantity'].startswith('conflict factor alpha')]
    if alpha and not all(1.0 <= a < 8 for a in alpha):
        bad.append('%s alpha out of range: %s' % (k, alpha))
    if 'n0 %d, layer-major plan' % n0 not in src:
        bad.append('sources.csv does not name the %s capture' % k)
if bad:
    print('\n'.join(bad)); sys.exit(1)
print('full-geometry rows at 2K and 8K ok')
PYEOF
