#!/usr/bin/env bash
# A killed capture keeps the steps it finished (docs/trace-format.md, "A killed writer"):
# ten salca captures are SIGKILLed at random points; the last progress line each printed
# (ACCELTRACE_PROGRESS_INTERVAL=0: a line per finished decode step) says how many steps had
# finished, and `recover` must give back at least 90% of them, each step whole (all its
# layer x head selections). A capture stopped by a file-size limit (SIGXFSZ ignored, EFBIG)
# fails naming its file and leaves no .partial behind, so the next run starts. The seed
# of the kill points is printed; ACCELTRACE_SEED sets it.
set -u
A=${ACCELTRACE:?}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
seed=${ACCELTRACE_SEED:-$RANDOM}
echo "seed $seed"
RANDOM=$seed
L=4 H=8 STEPS=60
run() { # OUT: a capture of STEPS decode steps (several seconds on 2 cores)
    ACCELTRACE_PROGRESS_INTERVAL=0 "$A" capture salca --source synthetic --length 16384 \
        --steps $STEPS --layers $L --heads $H --kv-heads 2 --threads 1 --methods salca -o "$1"
}
# the whole run's duration sets the range of the kill points
t0=$(date +%s%N)
run "$T/full.atr" 2> /dev/null || fail "uninterrupted capture"
full_ms=$((($(date +%s%N) - t0) / 1000000))
echo "uninterrupted: ${full_ms} ms"
for i in $(seq 1 10); do
    out=$T/k$i.atr
    run "$out" 2> "$T/k$i.log" &
    pid=$!
    # a point between 30% and 95% of the uninterrupted run
    ms=$((full_ms * (30 + RANDOM % 66) / 100))
    sleep "$(awk -v m=$ms 'BEGIN { printf "%.3f", m / 1000 }')"
    kill -9 $pid 2> /dev/null
    wait $pid 2> /dev/null
    done_steps=$(grep -o 'salca capture: [0-9]*/' "$T/k$i.log" | tail -n 1 | grep -o '[0-9]*' || true)
    done_steps=${done_steps:-0}
    if [ -e "$out" ]; then
        echo "kill $i at ${ms} ms: the capture had finished"; continue
    fi
    if [ ! -e "$out.partial" ]; then # killed while the source was still being set up
        [ "$done_steps" = 0 ] || fail "kill $i: no .partial after $done_steps steps"
        echo "kill $i at ${ms} ms: before the trace was opened"; continue
    fi
    "$A" recover "$out.partial" -o "$T/r$i.atr" > /dev/null 2>&1 || fail "kill $i: recover"
    # steps with all L x H selections
    got=$("$A" dump --type salca_select "$T/r$i.atr" |
        /usr/bin/python3 -c '
import json, sys
n = {}
for line in sys.stdin:
    s = json.loads(line)["step"]
    n[s] = n.get(s, 0) + 1
print(sum(1 for c in n.values() if c == int(sys.argv[1])))' $((L * H)))
    echo "kill $i at ${ms} ms: $done_steps steps finished, $got recovered whole"
    [ $((got * 10)) -ge $((done_steps * 9)) ] || fail "kill $i: $got of $done_steps steps"
    rm -f "$out.partial"
done
# a file-size limit: an error naming the file, exit non-zero, no .partial left
( ulimit -f 64; run "$T/small.atr" ) > /dev/null 2> "$T/fsz.log"
rc=$?
[ $rc -ne 0 ] && [ $rc -lt 128 ] || fail "file-size limit: exit $rc (killed by a signal?)"
grep -q "small.atr" "$T/fsz.log" || fail "file-size limit: no file named: $(cat "$T/fsz.log")"
[ ! -e "$T/small.atr.partial" ] || fail "file-size limit left a .partial"
run "$T/small.atr" 2> /dev/null || fail "the next run after the limit"
echo ok
