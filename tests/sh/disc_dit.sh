#!/usr/bin/env bash
# The class-conditional DiT configs of `capture disc` (docs/models.md, "DiT-XL/2"): a
# dit-micro capture with CFG that verify accepts, whose header names the model family, the
# class label and the null class; a checkpoint written by --save-weights (original DiT
# names) reproduces the seeded run; usage errors (exit 2) for --text with a DiT config and
# a size dit-xl-2 does not allow. ACCELTRACE_SLOW=1 adds dit-xl-2 at 256 px with seeded
# weights (about a minute on 2 cores).
set -u
A=${ACCELTRACE:?}
fail=0
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
check() { # description, expected exit, actual exit
    if [ "$2" -ne "$3" ]; then echo "FAIL $1: exit $3, want $2"; fail=1; fi
}
"$A" capture disc --model dit-micro --threads 1 --steps 3 --cfg 4 \
    --save-weights "$tmp/w.safetensors" -o "$tmp/m.atr" 2> "$tmp/err"
check "dit-micro capture" 0 $?
grep -q "main vs dense: cosine" "$tmp/err" || { echo "FAIL summary line"; cat "$tmp/err"; fail=1; }
"$A" info "$tmp/m.atr" > "$tmp/info" 2> /dev/null; check "info" 0 $?
grep -Eq "^disc_step +3 " "$tmp/info" || { echo "FAIL info disc_step"; cat "$tmp/info"; fail=1; }
# 3 steps x 2 batch elements x 2 blocks x 4 heads
grep -Eq "^disc_mask +48 " "$tmp/info" || { echo "FAIL info disc_mask"; cat "$tmp/info"; fail=1; }
"$A" dump "$tmp/m.atr" 2> /dev/null | head -n 1 > "$tmp/hdr.json"
for s in '\\"family\\":\\"dit\\"' '\\"classes\\":1000' '\\"class\\":207' 'class:207' 'class:1000' \
    '\\"cross_attention\\":false'; do
    grep -q "$s" "$tmp/hdr.json" || { echo "FAIL header lacks $s"; head -c 3000 "$tmp/hdr.json"; fail=1; }
done
# the saved checkpoint (original DiT names) reproduces the seeded run
"$A" capture disc --model dit-micro --threads 1 --steps 3 --cfg 4 -q \
    --weights "$tmp/w.safetensors" -o "$tmp/w.atr"; check "capture from safetensors" 0 $?
"$A" dump "$tmp/m.atr" 2> /dev/null | tail -n +2 | sed 's/"offset":[0-9]*,//' > "$tmp/a.jsonl"
"$A" dump "$tmp/w.atr" 2> /dev/null | tail -n +2 | sed 's/"offset":[0-9]*,//' > "$tmp/b.jsonl"
[ -s "$tmp/a.jsonl" ] || { echo "FAIL empty dump"; fail=1; }
# --class sets the label the header names; a label outside 0..999 is a usage error
"$A" capture disc --model dit-micro --threads 1 --steps 1 --class 5 -q -o "$tmp/c5.atr"
check "capture --class 5" 0 $?
"$A" dump "$tmp/c5.atr" 2> /dev/null | head -n 1 | grep -q 'class:5' || { echo "FAIL --class 5 not in the header"; fail=1; }
"$A" capture disc --model dit-micro --class 1000 -q -o "$tmp/c6.atr" 2> /dev/null
check "capture --class 1000" 2 $?
# verify: with CFG (B = 2) the mask records' index keys are those trace_record_key derives
"$A" verify -q "$tmp/m.atr"; check "verify with cfg" 0 $?
"$A" capture disc --model dit-micro --threads 1 --steps 2 -q -o "$tmp/v.atr"
check "dit-micro capture without cfg" 0 $?
"$A" verify -q "$tmp/v.atr"; check "verify" 0 $?
cmp -s "$tmp/a.jsonl" "$tmp/b.jsonl" || { echo "FAIL safetensors run differs from seeded run"; fail=1; }
# usage errors
printf 'x' > "$tmp/t.f32"
"$A" capture disc --model dit-micro --text "$tmp/t.f32" -o "$tmp/x.atr" 2> "$tmp/err"
check "--text with dit" 2 $?
grep -q "class-conditional" "$tmp/err" || { echo "FAIL --text message"; cat "$tmp/err"; fail=1; }
"$A" capture disc --model dit-xl-2 --image-size 1024 -o "$tmp/x.atr" 2> "$tmp/err"
check "dit-xl-2 at 1024" 2 $?
grep -q "256 or 512" "$tmp/err" || { echo "FAIL image-size message"; cat "$tmp/err"; fail=1; }
if [ "${ACCELTRACE_SLOW:-0}" = 1 ]; then
    "$A" capture disc --model dit-xl-2 --image-size 256 --steps 2 -q -o "$tmp/xl.atr" 2> "$tmp/err"
    check "dit-xl-2 at 256" 0 $?
    "$A" verify -q "$tmp/xl.atr"; check "verify xl" 0 $?
    "$A" dump "$tmp/xl.atr" | head -n 1 | grep -q '"parameters":"674834720"\|"parameters":674834720' ||
        { echo "FAIL xl header parameters"; fail=1; }
fi
exit $fail
