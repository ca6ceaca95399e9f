#!/usr/bin/env bash
# Instance memory of a large grid stays bounded (replay/engine.h ENGINE_MAX_BATCH_CONFIGS,
# docs/models.md#memory-estimates-replay-engine-convention): a 33-byte grid of 10^5 count configs replays in passes
# of at most 16384 instances, under the default limit and under --mem-limit 64MiB, with
# every row written and a peak RSS under 100 MB (one pass of all 10^5 instances took 268
# MB), and its dry run says so. Peak RSS is the child's ru_maxrss through Debian's Python.
# The 10^6-config grid at --mem-limit 1GiB is in tests/slow/replay_grid_1e6.sh.
set -u
A=${ACCELTRACE:?}
PY=/usr/bin/python3
[ -x "$PY" ] || { echo "SKIP: $PY is needed to read the peak RSS"; exit 77; }
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
# under `make asan` freed blocks would wait in ASan's quarantine (256 MB) and count as RSS
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}quarantine_size_mb=0:thread_local_quarantine_size_kb=0"
fail=0
bad() { echo "FAIL: $*"; fail=1; }

# run NAME CMD...: stderr in $T/NAME.err, $rc, $rss_kb (peak RSS of the child, KiB)
run() {
    local name=$1; shift
    rss_kb=$("$PY" - "$T/$name" "$@" <<'PYEOF'
import resource, subprocess, sys
with open(sys.argv[1] + ".err", "wb") as e:
    r = subprocess.run(sys.argv[2:], stdout=subprocess.DEVNULL, stderr=e)
open(sys.argv[1] + ".rc", "w").write(str(r.returncode))
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
PYEOF
)
    rc=$(cat "$T/$name.rc")
}

"$A" capture test --records 50 -o "$T/t.atr" 2> /dev/null || { echo "FAIL: capture"; exit 1; }
printf '{"scale":{"range":[1,100000,1]}}' > "$T/g5.json"
"$A" replay "$T/t.atr" --model count --sweep "$T/g5.json" --dry-run > "$T/dry.out" 2>&1 ||
    bad "dry run: $(cat "$T/dry.out")"
grep -q '^passes: 7 of up to 16384 configs (what fits --mem-limit by this estimate, at most 16384)' \
    "$T/dry.out" || bad "dry run passes: $(grep passes "$T/dry.out")"
for lim in default 64MiB; do
    opt=()
    [ $lim = default ] || opt=(--mem-limit $lim)
    run "r$lim" "$A" replay "$T/t.atr" --model count --sweep "$T/g5.json" -j 2 "${opt[@]}" \
        -o "$T/r$lim"
    [ "$rc" = 0 ] || { bad "$lim: exit $rc ($(cat "$T/r$lim.err"))"; continue; }
    grep -q "replayed 100000 of 100000 configs .* in 7 pass(es)" "$T/r$lim.err" ||
        bad "$lim: $(cat "$T/r$lim.err")"
    [ "$(($(wc -l < "$T/r$lim/results.csv") - 1))" = 100000 ] || bad "$lim: rows missing"
    [ "$rss_kb" -lt 102400 ] || bad "$lim: peak RSS $rss_kb KiB (want < 100 MB)"
    echo "$lim: peak RSS $rss_kb KiB"
done
cmp -s "$T/rdefault/results.csv" "$T/r64MiB/results.csv" || bad "the two runs' rows differ"
[ $fail = 0 ] && echo "ok"
exit $fail
