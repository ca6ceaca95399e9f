#!/usr/bin/env bash
# `acceltrace reproduce disc --quick --full`: the 1k rows come from a 1k capture of the same
# model (their condition and basis say so, and the sources section names that capture),
# while without --full they replay the 512 px statistics scaled; the 2k rows stay scaled
# without --paper-scale. Wall time printed, not asserted.
set -euo pipefail
A=${ACCELTRACE:?}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
cd "$ROOT"
start=$(date +%s)
"$A" reproduce disc --quick --full --threads 2 -q -o "$T/R"
echo "reproduce disc --quick --full: $(( $(date +%s) - start )) s wall"
/usr/bin/python3 - "$T/R/reproduce.csv" "$T/R/reproduce.md" <<'PYEOF'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1], newline='')))
md = open(sys.argv[2]).read()
bad = []
k1 = [r for r in rows if r['paper_id'] == 'disc' and 'at 1024 px' in r['quantity']]
k2 = [r for r in rows if r['paper_id'] == 'disc' and 'at 2048 px' in r['quantity']]
if not k1 or not k2:
    bad.append('no 1k or 2k rows')
for r in k1:
    if 'captured at that size' not in r['condition'] or 'replay of a 1024 px capture' not in r['basis']:
        bad.append('1k row not from a 1k capture: ' + r['quantity'])
    if '--image-size 1024' not in r['command']:
        bad.append('1k row command: ' + r['command'])
    if not r['ours'] or float(r['ours']) != float(r['ours']):
        bad.append('1k row without a value: ' + r['quantity'])
for r in k2:
    if 'scaled' not in r['basis']:
        bad.append('2k row not scaled: ' + r['quantity'])
if 'DiSC capture at 1024 px' not in md:
    bad.append('reproduce.md names no 1k capture source')
if bad:
    print('\n'.join(bad)); sys.exit(1)
print('%d rows at 1k from the 1k capture, %d at 2k scaled' % (len(k1), len(k2)))
PYEOF
