#!/usr/bin/env bash
# A layer-major salca capture ends as a step-ordered trace (docs/trace-format.md#reordered-
# traces): at a small shape (2 layers x 4 query heads, 2 KV heads, 2048 tokens, 3 steps) its
# records, the Summary included, equal the step-major capture's (dump without frame numbers
# and offsets, cmp); the header names the plan ("memory_plan") and no longer
# "record_order"; `model salca` prints the same lines for both. Then a run killed during
# the rewrite (its renames slowed under strace, killed once PATH.reordering exists) resumes
# with --resume to the same file as an uninterrupted run, and the sealed .partial it
# leaves, recovered, is a layer-ordered trace that `model salca` refuses (exit 3).
set -u
A=${ACCELTRACE:?}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
export SOURCE_DATE_EPOCH=0
CAP="capture salca --source calibrated --length 2048 --max-ctx 2048 --steps 3 --layers 2 --heads 4 --kv-heads 2 --threads 1 -q"
cd "$T"
"$A" $CAP -o sm.atr > /dev/null 2>&1 || fail "step-major capture"
"$A" $CAP --layer-major -o lm.atr > /dev/null 2>&1 || fail "layer-major capture"
[ ! -e lm.atr.partial ] && [ ! -e lm.atr.reordering ] && [ ! -e lm.atr.ckpt ] ||
    fail "the layer-major capture left its temporaries: $(ls)"
"$A" verify lm.atr > /dev/null || fail "verify of the reordered trace"
for f in sm lm; do
    "$A" dump $f.atr > $f.jsonl || fail "dump $f"
    # the records without frame numbers and offsets (the headers differ in size)
    tail -n +2 $f.jsonl | sed -E 's/^\{"frame":[0-9]+,"offset":[0-9]+,/{/' > $f.rec
done
[ "$(wc -l < lm.rec)" -eq 125 ] || fail "$(wc -l < lm.rec) records, want 125"
tail -1 lm.rec | grep -q '"type":"summary"' || fail "the last record is not the summary"
cmp -s sm.rec lm.rec || fail "the reordered records differ from the step-major capture's: $(diff sm.rec lm.rec | head -c 300)"
head -1 lm.jsonl | grep -q 'memory_plan\\":\\"layer-major' || fail "header does not name the memory plan"
head -1 lm.jsonl | grep -q 'record_order' && fail "the reordered header still says record_order"
head -1 sm.jsonl | grep -q 'memory_plan' && fail "a step-major header names a memory plan"
"$A" model salca --trace sm.atr > sm.model 2>&1 || fail "model salca on the step-major trace"
"$A" model salca --trace lm.atr > lm.model 2>&1 || fail "model salca on the reordered trace: $(tail -2 lm.model)"
grep -q 'ref.salca_final.inorder.alpha_measured=' lm.model || fail "no trace-driven lines"
cmp -s sm.model lm.model || fail "model salca differs: $(diff sm.model lm.model | head -4)"
echo "layer-major: the same $(wc -l < lm.rec) records as step-major, same model salca"

# a run killed during the rewrite
if ! command -v strace > /dev/null || ! strace -f -o /dev/null true 2> /dev/null; then
    echo "SKIP: strace not usable here; the killed rewrite is not checked"
    exit 77
fi
mkdir k && cd k
strace -f -o /dev/null -e trace=rename -e inject=rename:delay_enter=1500000 \
    "$A" $CAP --layer-major --resume -o t.atr > /dev/null 2>&1 &
spid=$!
for _ in $(seq 1 600); do
    [ -e t.atr.reordering ] && break
    sleep 0.02
done
[ -e t.atr.reordering ] || fail "no rewrite seen"
# the traced capture is strace's child
cpid=$(cat /proc/$spid/task/*/children 2> /dev/null | tr ' ' '\n' | grep -m1 .)
[ -n "$cpid" ] || fail "no capture process under strace"
kill -9 "$cpid"
wait $spid 2> /dev/null
[ ! -e t.atr ] && [ -e t.atr.partial ] && [ -e t.atr.ckpt ] ||
    fail "the killed rewrite left: $(ls)"
"$A" recover t.atr.partial -o old.atr > /dev/null 2>&1 || fail "recover of the sealed .partial"
"$A" model salca --trace old.atr > old.model 2>&1
rc=$?
[ $rc = 3 ] || fail "model salca on a layer-ordered trace: exit $rc, not 3"
grep -q "layer-major salca capture" old.model || fail "refusal message: $(cat old.model)"
"$A" $CAP --layer-major --resume -o t.atr > /dev/null 2>&1 || fail "the resumed run"
[ ! -e t.atr.partial ] && [ ! -e t.atr.reordering ] && [ ! -e t.atr.ckpt ] ||
    fail "the resumed run left its temporaries: $(ls)"
mkdir ../ref && (cd ../ref && "$A" $CAP --layer-major --resume -o t.atr > /dev/null 2>&1) ||
    fail "the uninterrupted run"
for v in dump verify; do
    "$A" $v t.atr > kill.$v 2>&1 || fail "$v of the resumed trace"
    (cd ../ref && "$A" $v t.atr) > ref.$v 2>&1 || fail "$v of the uninterrupted trace"
    cmp -s kill.$v ref.$v || fail "$v of the resumed rewrite differs from the uninterrupted run's"
done
echo "killed in the rewrite: refused as layer-ordered once recovered; resumed to the same file"
