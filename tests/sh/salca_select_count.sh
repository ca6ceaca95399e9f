#!/usr/bin/env bash
# A SalcaSelect whose `sel` list does not hold `count` indices is one error for every reader
# (traces/trace_salca.h trace_salca_select_validate, run by the trace reader): verify,
# replay, analyze conflicts and export hbm-trace exit 3 with the same message naming the
# file, frame and offset, and the Python reader raises TraceError with that message; the
# Python Writer refuses to write such a record. The trace is a small synthetic capture
# rewritten with one record's count off by one (the writer's check patched out to make it).
set -u
A=${ACCELTRACE:?}
PY=/usr/bin/python3
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
[ -x "$PY" ] || { echo "SKIP: no /usr/bin/python3"; exit 77; }
for m in numpy google.protobuf zstandard xxhash; do
    "$PY" -c "import $m" 2> /dev/null || { echo "SKIP: python module $m missing (scripts/deps.sh)"; exit 77; }
done
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }

"$A" capture salca --source synthetic -q -q --length 512 --steps 2 --layers 1 --heads 2 \
    --threads 1 -o "$T/s.atr" > /dev/null 2>&1 || { echo "FAIL: capture"; exit 1; }
"$A" verify "$T/s.atr" > /dev/null 2>&1 || { echo "FAIL: the capture does not verify"; exit 1; }

# the Writer refuses the record; the same record written with the check patched out
PYTHONPATH="$ROOT/python" "$PY" - "$T/s.atr" "$T/bad.atr" "$T/refused.atr" > "$T/py.out" 2>&1 <<'PYEOF'
import sys
import acceltrace
from acceltrace import writer
src, out, refused = sys.argv[1:4]
t = acceltrace.open(src)
recs = list(t.records())
k = next(i for i, r in enumerate(recs) if r.type == "salca_select" and r.msg.count > 1)
recs[k].msg.count -= 1
w = writer.Writer(refused, t.header)
try:
    w.append(recs[k].msg)
    print("writer wrote it")
except ValueError as e:
    print("writer refused: %s" % e)
w.close()
writer.check_record = lambda name, body: None
with writer.Writer(out, t.header) as w2:
    for r in recs:
        w2.append(r.msg)
try:
    for r in acceltrace.open(out).records():
        pass
    print("python read it")
except acceltrace.TraceError as e:
    print("python: %s" % e)
PYEOF
grep -q "^writer refused: bad selection list: [0-9]* indices, count says [0-9]* (step [0-9]* layer [0-9]* head [0-9]*): refusing to write it to '$T/refused.atr'$" "$T/py.out" ||
    bad "python writer: $(cat "$T/py.out")"
[ -f "$T/bad.atr" ] || { echo "FAIL: no damaged trace: $(cat "$T/py.out")"; exit 1; }
want=$(sed -n 's/^python: //p' "$T/py.out")
echo "$want" | grep -Eq "^bad selection list: [0-9]+ indices, count says [0-9]+ \(step [0-9]+ layer [0-9]+ head [0-9]+\) \('$T/bad.atr' frame [0-9]+ at offset [0-9]+\)$" ||
    bad "python reader: $(cat "$T/py.out")"

# every verb: exit 3 and the Python reader's message
check() { # name, command...
    local name=$1 rc=0
    shift
    "$@" > "$T/$name.out" 2> "$T/$name.err" || rc=$?
    [ "$rc" = 3 ] || bad "$name: exit $rc, want 3 ($(cat "$T/$name.err"))"
    grep -qF -- "$want" "$T/$name.err" || bad "$name: message: $(cat "$T/$name.err") (want: $want)"
}
check verify "$A" verify "$T/bad.atr"
check replay "$A" replay "$T/bad.atr" --hw "$ROOT/configs/salca-hbm2.json" -q -o "$T/r"
check conflicts "$A" analyze conflicts "$T/bad.atr" -o "$T/c"
check export "$A" export hbm-trace "$T/bad.atr" -o "$T/x"
# the untouched capture still passes all of them
"$A" replay "$T/s.atr" --hw "$ROOT/configs/salca-hbm2.json" -q -o "$T/ok" 2> /dev/null ||
    bad "replay of the good trace"
"$A" analyze conflicts "$T/s.atr" -o "$T/okc" > /dev/null 2>&1 || bad "conflicts of the good trace"
[ $fail = 0 ] && echo "ok"
exit $fail
