#!/usr/bin/env bash
# A 10^6-config grid at --mem-limit 1GiB (minutes): the count model replays every config in
# passes of at most 16384 instances (replay/engine.h ENGINE_MAX_BATCH_CONFIGS) with a peak
# RSS under the limit, and the salca model's 10^6-window grid is either run the same way
# or refused up front with an estimate; here its dry run must show passes that fit.
set -u
A=${ACCELTRACE:?}
PY=/usr/bin/python3
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
[ -x "$PY" ] || { echo "SKIP: $PY is needed to read the peak RSS"; exit 77; }
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }
"$A" capture test --records 50 -o "$T/t.atr" 2> /dev/null || { echo "FAIL: capture"; exit 1; }
printf '{"scale":{"range":[1,1000000,1]}}' > "$T/g6.json"
rss_kb=$("$PY" - "$T" "$A" <<'PYEOF'
import resource, subprocess, sys
t, a = sys.argv[1:3]
with open(t + "/r.err", "wb") as e:
    r = subprocess.run([a, "replay", t + "/t.atr", "--model", "count", "--sweep", t + "/g6.json",
                        "--mem-limit", "1GiB", "-q", "-o", t + "/r"], stderr=e)
open(t + "/r.rc", "w").write(str(r.returncode))
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
PYEOF
)
[ "$(cat "$T/r.rc")" = 0 ] || bad "count 10^6: exit $(cat "$T/r.rc"): $(cat "$T/r.err")"
[ "$(($(wc -l < "$T/r/results.csv") - 1))" = 1000000 ] || bad "count 10^6: rows missing"
[ "$rss_kb" -lt 1048576 ] || bad "count 10^6: peak RSS $rss_kb KiB above 1 GiB"
echo "count 10^6 at 1GiB: peak RSS $rss_kb KiB"
"$A" capture salca --source synthetic -q -q --length 4096 --steps 6 --layers 2 --heads 4 \
    --threads 1 -o "$T/s.atr" > /dev/null 2>&1 || { echo "FAIL: salca capture"; exit 1; }
printf '{"window":{"range":[1,1000000,1]}}' > "$T/w6.json"
"$A" replay "$T/s.atr" --hw "$ROOT/configs/salca-hbm2.json" --sweep "$T/w6.json" --mem-limit 1GiB \
    --dry-run > "$T/s.dry" 2>&1 || bad "salca dry run: $(cat "$T/s.dry")"
grep -Eq '^memory: .*, [0-9.]+ (MiB|KiB) for the run \(--mem-limit 1 GiB\)' "$T/s.dry" ||
    bad "salca 10^6: $(grep memory "$T/s.dry")"
[ $fail = 0 ] && echo "ok"
exit $fail
