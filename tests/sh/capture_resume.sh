#!/usr/bin/env bash
# Resumable captures (docs/trace-format.md#checkpoints): a small salca capture (both memory
# plans), a kura capture, two small disc captures (micro with CFG and the dense and CTR-only
# comparison runs, masks held; tiny without the comparison, CTR caches and ST masks in the
# spill file; both with CTR, ST and kept masks) and the test capture are SIGKILLed at 5
# random points, each time rerun with --resume (ACCELTRACE_CHECKPOINT_INTERVAL=0: a
# checkpoint at every unit) until one finishes; the trace's `dump` and `verify` outputs must
# equal an uninterrupted run's. Then the refusals: --resume with other parameters (exit 2,
# both params hashes named), a damaged checkpoint (exit 3 naming it) and --resume on the
# structured disc source (exit 2). The seed of the kill points is printed; ACCELTRACE_SEED
# sets it.
set -u
A=${ACCELTRACE:?}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
seed=${ACCELTRACE_SEED:-$RANDOM}
echo "seed $seed"
RANDOM=$seed
export SOURCE_DATE_EPOCH=0 ACCELTRACE_CHECKPOINT_INTERVAL=0
SALCA="capture salca --source calibrated --length 4096 --steps 16 --layers 4 --heads 8 --kv-heads 2 --threads 1 -q"
KURA="capture kura --size 64x64 --steps 400 --reproducible -q"
TESTC="capture test --records 300 -q"
DISC="capture disc --model micro --image-size 384 --steps 12 --cfg 2 --st-refresh 3 -j 1 -q"
DISC_KEEP="--keep-masks blocks=1;heads=0-1;steps=all;batch=all"
DISC_SPILL="capture disc --model tiny --image-size 128 --steps 8 --no-compare-dense -j 1 -q"

# check NAME ARGS...: the uninterrupted run in $T/NAME/ref, the killed ones in $T/NAME/kill
check() {
    local name=$1
    shift
    mkdir -p "$T/$name/ref" "$T/$name/kill"
    local t0 ms
    t0=$(date +%s%N)
    (cd "$T/$name/ref" && "$A" "$@" --resume -o t.atr > /dev/null 2>&1) || fail "$name: uninterrupted run"
    ms=$((($(date +%s%N) - t0) / 1000000))
    local kills=0 resumed=0
    while [ $kills -lt 5 ] && [ ! -e "$T/$name/kill/t.atr" ]; do
        # kill at a random point shortly after this run wrote a checkpoint of its own (0-4%
        # of the uninterrupted run's time later), so each kill lands in the middle of work
        local before
        before=$({ cksum < "$T/$name/kill/t.atr.ckpt"; } 2> /dev/null || echo none)
        (cd "$T/$name/kill" && exec "$A" "$@" --resume -o t.atr > /dev/null 2>&1) &
        local pid=$!
        local waited=0
        while kill -0 $pid 2> /dev/null && [ $waited -lt 6000 ]; do
            [ "$({ cksum < "$T/$name/kill/t.atr.ckpt"; } 2> /dev/null || echo none)" != "$before" ] && break
            sleep 0.01
            waited=$((waited + 1))
        done
        sleep "$(awk -v m=$((ms * (RANDOM % 5) / 100)) 'BEGIN { printf "%.3f", m / 1000 }')"
        kill -9 $pid 2> /dev/null
        wait $pid 2> /dev/null
        kills=$((kills + 1))
        [ -e "$T/$name/kill/t.atr.ckpt" ] && resumed=$((resumed + 1))
    done
    # the test capture finishes in milliseconds: its kills may outlast it (its resume is
    # checked byte for byte in tests/test_capture.c); the real workloads take five
    [ "$name" = test ] || { [ $kills -eq 5 ] && [ $resumed -eq 5 ]; } ||
        fail "$name: $kills kills, $resumed with a checkpoint (want 5 kills, each after one)"
    local n=0
    while [ ! -e "$T/$name/kill/t.atr" ]; do
        (cd "$T/$name/kill" && "$A" "$@" --resume -o t.atr > /dev/null 2>&1) || fail "$name: resumed run"
        n=$((n + 1))
        [ $n -lt 3 ] || fail "$name: no trace after 3 resumed runs"
    done
    [ ! -e "$T/$name/kill/t.atr.ckpt" ] && [ ! -e "$T/$name/kill/t.atr.ckpt.tmp" ] ||
        fail "$name: the finished capture left its checkpoint"
    [ ! -e "$T/$name/kill/t.atr.partial" ] || fail "$name: the finished capture left its .partial"
    for v in dump verify; do
        (cd "$T/$name/ref" && "$A" $v t.atr) > "$T/$name/ref.$v" 2>&1 || fail "$name: $v of the reference"
        (cd "$T/$name/kill" && "$A" $v t.atr) > "$T/$name/kill.$v" 2>&1 || fail "$name: $v of the resumed trace"
        cmp -s "$T/$name/ref.$v" "$T/$name/kill.$v" || fail "$name: $v differs after $kills kills"
    done
    echo "$name: ${ms} ms uninterrupted, $kills kills ($resumed left a checkpoint), same dump and verify"
}

check salca $SALCA
check salca-layer-major $SALCA --layer-major
check kura $KURA
check disc $DISC $DISC_KEEP
check disc-spill $DISC_SPILL --mem-limit 208.5MiB --keep-masks "heads=0;steps=all"
check test $TESTC

# a killed run to refuse resuming from
mkdir -p "$T/bad"
cd "$T/bad"
"$A" $SALCA -o t.atr > /dev/null 2>&1 &
pid=$!
for _ in $(seq 1 200); do
    [ -e t.atr.ckpt ] && break
    sleep 0.05
done
kill -9 $pid 2> /dev/null
wait $pid 2> /dev/null
[ -e t.atr.ckpt ] && [ -e t.atr.partial ] || fail "no checkpoint to refuse"
hash=$(od -An -c -j16 -N64 t.atr.ckpt | tr -d ' \n')
"$A" $SALCA --steps 9 --resume -o t.atr > /dev/null 2> err.txt
rc=$?
[ $rc = 2 ] || fail "other parameters: exit $rc, not 2"
grep -q "$hash" err.txt || fail "other parameters: the checkpoint's hash not named: $(cat err.txt)"
grep -q "this run [0-9a-f]\{64\}" err.txt || fail "other parameters: this run's hash not named"
# a damaged byte in the workload part (after the 120-byte fixed part)
cp t.atr.ckpt good.ckpt
printf '\x5a' | dd of=t.atr.ckpt bs=1 seek=130 conv=notrunc 2> /dev/null
"$A" $SALCA --resume -o t.atr > /dev/null 2> err.txt
rc=$?
[ $rc = 3 ] || fail "damaged checkpoint: exit $rc, not 3"
grep -q "t.atr.ckpt" err.txt || fail "damaged checkpoint: not named: $(cat err.txt)"
[ -e t.atr.partial ] || fail "a refused resume removed the .partial"
# capture test cannot be given --resume on a workload without checkpoints: every capture
# verb here has them; the driver's refusal is tested in tests/test_capture.c
cp good.ckpt t.atr.ckpt
"$A" $SALCA --resume -o t.atr > /dev/null 2>&1 || fail "the good checkpoint did not resume"
# the structured DiSC source has no checkpoints: --resume with it is a usage error
"$A" capture disc --source structured --resume -o s.atr > /dev/null 2> err.txt
rc=$?
[ $rc = 2 ] || fail "capture disc --source structured --resume: exit $rc, not 2"
grep -q "resume" err.txt || fail "structured --resume: the option not named: $(cat err.txt)"
[ ! -e s.atr ] && [ ! -e s.atr.partial ] || fail "structured --resume wrote a trace"
echo "refusals: other parameters exit 2 with both hashes, damaged checkpoint exit 3, structured disc --resume exit 2"
echo "PASS"
