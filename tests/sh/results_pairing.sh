#!/usr/bin/env bash
# analyze disc RES --trace X checks the pairing: the first --trace must be the trace RES
# was replayed from (content hash in the manifest / rows); otherwise exit 3 naming both and
# nothing drawn (docs/design.md#trust-interfaces-and-python). Further --trace files are comparisons.
set -euo pipefail
A=${ACCELTRACE:?}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
cd "$T"
fail() { echo "FAIL: $*"; exit 1; }
"$A" capture disc --model micro -o m.atr > /dev/null 2>&1
"$A" capture disc --model micro --seed 7 -o n.atr > /dev/null 2>&1
"$A" replay m.atr --hw "$ROOT/configs/disc-a100-matched.json" -q -o r 2> /dev/null
rc=0; "$A" analyze disc r --trace n.atr -o p 2> log.txt || rc=$?
[ "$rc" = 3 ] || fail "unpaired trace: exit $rc, want 3: $(cat log.txt)"
grep -q "results 'r' are of trace [0-9a-f]*, not of 'n.atr' (trace [0-9a-f]*)" log.txt ||
    fail "message: $(cat log.txt)"
[ -e p/speedup.dat ] && fail "figures drawn for an unpaired trace"
# rows only (no manifest): the rows' trace hash is used
rm r/manifest.json
rc=0; "$A" analyze disc r --trace n.atr -o p 2> log.txt || rc=$?
[ "$rc" = 3 ] || fail "unpaired trace without manifest: exit $rc"
"$A" analyze disc r --trace m.atr --trace n.atr -o p 2> log.txt || fail "paired: $(cat log.txt)"
[ -s p/speedup.dat ] || fail "no figures for the paired trace"
echo ok
