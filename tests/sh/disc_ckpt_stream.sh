#!/usr/bin/env bash
# DiSC checkpoints are streamed (docs/trace-format.md#checkpoints): tiny at 512 px with the
# CTR block outputs and ST masks in the spill file writes a checkpoint at every sampler step
# (ACCELTRACE_CHECKPOINT_INTERVAL=0) of about 27 MiB; its peak resident set (/usr/bin/time)
# must stay within a quarter of one checkpoint of the same run without checkpoints (a
# checkpoint built in memory added about twice its size). Then a folder without room for a
# checkpoint (ACCELTRACE_CHECKPOINT_FREE_BYTES stands for the free space): the capture
# finishes, writes none and warns once, naming the size needed. Last, a killed micro
# capture's checkpoint damaged, truncated and too long is refused (exit 3, file and offset),
# and the good one resumes to the uninterrupted run's trace byte for byte.
set -u
A=${ACCELTRACE:?}
[ -x /usr/bin/time ] || { echo "SKIP: no /usr/bin/time"; exit 77; }
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
export SOURCE_DATE_EPOCH=0
DISC="capture disc --model tiny --image-size 512 --steps 3 --threads 1 --no-compare-dense --mem-limit 190MiB -q"

# run NAME INTERVAL: peak RSS in KB into $T/NAME.rss, largest checkpoint seen into $T/NAME.max
run() {
    local name=$1 iv=$2 max=0 s
    mkdir -p "$T/$name"
    (cd "$T/$name" && ACCELTRACE_CHECKPOINT_INTERVAL=$iv exec /usr/bin/time -f %M -o ../$name.rss \
        "$A" $DISC -o t.atr > /dev/null 2> ../$name.err) &
    local pid=$!
    while kill -0 $pid 2> /dev/null; do
        s=$(stat -c %s "$T/$name/t.atr.ckpt" 2> /dev/null || echo 0)
        [ "$s" -gt $max ] && max=$s
        sleep 0.02
    done
    wait $pid || fail "$name: exit $? $(cat "$T/$name.err")"
    echo $max > "$T/$name.max"
}
run ckpt 0
run none 100000
ck=$(cat "$T/ckpt.max")
with=$(cat "$T/ckpt.rss")
without=$(cat "$T/none.rss")
[ "$ck" -gt $((16 << 20)) ] || fail "checkpoints of $ck bytes, want over 16 MiB"
[ "$(cat "$T/none.max")" = 0 ] || fail "a checkpoint written at a 100000 s interval"
[ $(((with - without) * 1024)) -lt $((ck / 4)) ] ||
    fail "peak $with KB with checkpoints of $ck bytes, $without KB without"
cmp -s "$T/ckpt/t.atr" "$T/none/t.atr" || fail "checkpoints changed the trace"
[ ! -e "$T/ckpt/t.atr.ckpt" ] || fail "the finished capture left its checkpoint"
echo "checkpoints of $ck bytes: peak $with KB, $without KB without"

# no room for a checkpoint: none written, one warning, the same trace
mkdir -p "$T/full"
(cd "$T/full" && ACCELTRACE_CHECKPOINT_INTERVAL=0 ACCELTRACE_CHECKPOINT_FREE_BYTES=1048576 \
    exec "$A" $DISC -o t.atr > /dev/null 2> ../full.err) &
pid=$!
seen=no
while kill -0 $pid 2> /dev/null; do
    [ -e "$T/full/t.atr.ckpt" ] || [ -e "$T/full/t.atr.ckpt.tmp" ] && seen=yes
    sleep 0.02
done
wait $pid || fail "full disk: exit $? $(cat "$T/full.err")"
[ $seen = no ] || fail "full disk: a checkpoint was written"
[ "$(grep -c 'without a checkpoint' "$T/full.err")" = 1 ] ||
    fail "full disk: want one warning: $(cat "$T/full.err")"
grep -q "3 sampler-step boundaries" "$T/full.err" || fail "full disk: count: $(cat "$T/full.err")"
grep -q "had 1 MiB free" "$T/full.err" || fail "full disk: free space not named: $(cat "$T/full.err")"
cmp -s "$T/full/t.atr" "$T/none/t.atr" || fail "full disk: the trace differs"
echo "no room: no checkpoint, one warning, same trace"

# a killed micro capture's checkpoint: damaged, truncated and too long are refused (exit 3,
# file and offset named, the .partial kept), the good one resumes to the uninterrupted trace
MICRO="capture disc --model micro --image-size 384 --steps 12 --cfg 2 -j 1 -q"
mkdir -p "$T/ref" "$T/kill"
(cd "$T/ref" && "$A" $MICRO -o t.atr > /dev/null 2>&1) || fail "micro reference run"
cd "$T/kill"
ACCELTRACE_CHECKPOINT_INTERVAL=0 "$A" $MICRO -o t.atr > /dev/null 2>&1 &
pid=$!
for _ in $(seq 1 500); do
    [ -e t.atr.ckpt ] && break
    sleep 0.01
done
kill -9 $pid 2> /dev/null
wait $pid 2> /dev/null
[ -e t.atr.ckpt ] && [ -e t.atr.partial ] || fail "micro: no checkpoint to refuse"
cp t.atr.ckpt good.ckpt
n=$(stat -c %s good.ckpt)
refused() { # what, pattern
    "$A" $MICRO --resume -o t.atr > /dev/null 2> err.txt
    local rc=$?
    [ $rc = 3 ] || fail "$1: exit $rc, not 3: $(cat err.txt)"
    grep -q "'t.atr.ckpt'" err.txt && grep -q "$2" err.txt || fail "$1: $(cat err.txt)"
    [ -e t.atr.partial ] || fail "$1: the .partial was removed"
    cp good.ckpt t.atr.ckpt
}
printf '\x5a' | dd of=t.atr.ckpt bs=1 seek=$((n - 100)) conv=notrunc 2> /dev/null
refused "damaged" "bad checksum.*offset 12"
head -c $((n - 1)) good.ckpt > t.atr.ckpt
refused "truncated" "truncated or too long: offset 112"
printf 'xx' >> t.atr.ckpt
refused "too long" "truncated or too long: offset 112"
ACCELTRACE_CHECKPOINT_INTERVAL=0 "$A" $MICRO --resume -o t.atr > /dev/null 2>&1 ||
    fail "micro: the good checkpoint did not resume"
cmp -s "$T/ref/t.atr" t.atr || fail "micro: the resumed trace differs from the uninterrupted one"
echo "micro: damaged, truncated, too long refused with offsets; resumed trace equal"
echo "PASS"
