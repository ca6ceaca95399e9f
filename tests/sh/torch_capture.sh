#!/usr/bin/env bash
# The torch DiSC capture (python3 -m acceltrace.capture disc; docs/python.md "Torch
# capture") against the C capture on micro: the C capture writes its weights
# (--save-weights) and every mask (--keep-masks heads=all); the torch capture loads those
# weights (latent and text come from the same seeded generator, re-implemented bit for bit)
# and writes the same record set. tests/python/torch_agree.py reads both traces with the
# acceltrace package: token masks and ST masks identical except at threshold ties (entries
# within 1e-4 theta of theta, tokens within 1e-4 tau of tau, counted and reported), equal
# load-balance statistics where the bits agree, final latents within 1e-3. Then
# `acceltrace verify` accepts the torch trace, `acceltrace replay` of it runs against
# configs/disc-a100-matched.json, CFG and bf16 torch traces verify, and usage / data errors
# exit 2 / 3 with a message. A capture at another alpha must be reported as disagreeing.
# --png images equal the C capture's pixel for pixel, --save-weights writes the weights the
# run used (the C capture loading them agrees), --mem-limit refuses as the C capture does.
# With ACCELTRACE_SLOW=1 the same agreement on tiny at 4 steps (minutes here).
# Skipped (exit 77) when /usr/bin/python3 lacks torch.
set -u
A=${ACCELTRACE:?}
PY=/usr/bin/python3
[ -x "$PY" ] || { echo "SKIP: no /usr/bin/python3"; exit 77; }
for m in torch numpy google.protobuf zstandard xxhash; do
    "$PY" -c "import $m" 2> /dev/null ||
        { echo "SKIP: python module $m missing (apt-get install python3-torch; scripts/deps.sh)"; exit 77; }
done
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
export PYTHONPATH="$PWD/python${PYTHONPATH:+:$PYTHONPATH}"
fail=0
bad() { echo "FAIL: $*"; fail=1; }

agree() { # name, model, extra options...
    local n=$1 m=$2; shift 2
    "$A" capture disc --model "$m" --threads 1 --keep-masks heads=all "$@" \
        --save-weights "$T/$m.w.safetensors" -q -o "$T/$n.c.atr" || { bad "C capture $n"; return; }
    "$PY" -m acceltrace.capture disc --model "$m" --threads 1 --keep-masks heads=all "$@" \
        --weights "$T/$m.w.safetensors" --tie-eps 1e-4 --ties-out "$T/$n.ties.json" \
        -o "$T/$n.t.atr" 2> "$T/$n.log" || { bad "torch capture $n: $(cat "$T/$n.log")"; return; }
    grep "ties within" "$T/$n.log"
    out=$("$PY" tests/python/torch_agree.py "$T/$n.c.atr" "$T/$n.t.atr" "$T/$n.ties.json")
    rc=$?
    echo "$n ($m $*): $out"
    [ $rc -eq 0 ] || bad "$n masks disagree"
}

agree micro micro
agree refresh3 micro --steps 6 --st-refresh 3 --ctr-target 0.25 --seed 7 --text seed:3
agree ddim micro --sampler ddim --st-theta 0.02 --ctr-tau 30
agree target micro --st-target 0.6 --steps 5
[ "${ACCELTRACE_SLOW:-0}" = 1 ] && agree tiny tiny --steps 4
# the comparison can fail: another threshold (alpha 1.2) must be reported as mismatches
"$PY" -m acceltrace.capture disc --model micro --threads 1 --keep-masks heads=all --st-alpha 1.2 \
    --weights "$T/micro.w.safetensors" --tie-eps 1e-4 --ties-out "$T/neg.ties.json" -q \
    -o "$T/neg.t.atr" || bad "torch capture alpha 1.2"
"$PY" tests/python/torch_agree.py "$T/micro.c.atr" "$T/neg.t.atr" "$T/neg.ties.json" \
    > "$T/neg.out" && bad "alpha 1.2 agreed with alpha 1.0: $(tail -1 "$T/neg.out")"
grep -q "away from ties" "$T/neg.out" || bad "no mismatch report: $(cat "$T/neg.out")"
# CFG (batch of 2): the torch trace verifies (null text zeros, keys from the records)
"$PY" -m acceltrace.capture disc --model micro --cfg 4.5 --weights "$T/micro.w.safetensors" \
    -q -o "$T/cfg.atr" && "$A" verify -q "$T/cfg.atr" || bad "torch capture with --cfg"

# the torch trace is a DiSC trace like any other: verify, info, replay
"$A" verify -q "$T/micro.t.atr" || bad "verify of the torch trace"
"$A" info "$T/micro.t.atr" > "$T/info" || bad "info"
grep -Eq "^disc_mask +32 " "$T/info" || bad "info disc_mask count: $(cat "$T/info")"
"$PY" -c "
import acceltrace, sys
h = acceltrace.open(sys.argv[1]).header
assert h.producer.startswith('acceltrace-torch'), h.producer
assert 'device cpu' in h.producer and 'dtype fp32' in h.producer, h.producer
assert len(h.disc.weight_sha256) == 1 and len(h.disc.weight_sha256[0]) == 64
" "$T/micro.t.atr" || bad "torch header provenance"
"$A" replay "$T/micro.t.atr" --hw configs/disc-a100-matched.json -o "$T/r" 2> "$T/r.log" ||
    bad "replay of the torch trace: $(cat "$T/r.log")"
[ -s "$T/r/results.csv" ] || bad "replay wrote no results.csv: $(ls "$T/r")"

# bf16 on the CPU: a trace that verifies and says so (not compared: other numerics)
"$PY" -m acceltrace.capture disc --model micro --dtype bf16 --weights "$T/micro.w.safetensors" \
    -q -o "$T/bf16.atr" && "$A" verify -q "$T/bf16.atr" || bad "torch capture in bf16"
"$A" info "$T/bf16.atr" | grep -q "dtype bf16" || bad "bf16 producer"

# --png: the same images as the C capture's --png, pixel for pixel (token masks, kept
# attention masks, latents), read back with acceltrace.capture.png.read_png
mkdir -p "$T/pc" "$T/pt"
"$A" capture disc --model micro --threads 1 --steps 2 --keep-masks heads=all \
    --weights "$T/micro.w.safetensors" --png "$T/pc" -q -o "$T/pc.atr" || bad "C capture --png"
"$PY" -m acceltrace.capture disc --model micro --threads 1 --steps 2 --keep-masks heads=all \
    --weights "$T/micro.w.safetensors" --png "$T/pt" -q -o "$T/pt.atr" || bad "torch --png"
"$PY" - "$T/pc" "$T/pt" << 'EOF' || bad "--png images differ from the C capture's"
import os, sys
from acceltrace.capture.png import read_png
c, t = sorted(os.listdir(sys.argv[1])), sorted(os.listdir(sys.argv[2]))
assert c == t and len(c) == 28, (c, t)
for f in c:
    a, b = read_png(os.path.join(sys.argv[1], f)), read_png(os.path.join(sys.argv[2], f))
    assert a.shape == b.shape and (a == b).all(), f
EOF
# --save-weights: the file holds the weights the run used (torch-seeded here): the C
# capture loading it gives the same masks
"$PY" -m acceltrace.capture disc --model micro --threads 1 --steps 2 --keep-masks heads=all \
    --weights seed:5 --save-weights "$T/s5.safetensors" --tie-eps 1e-4 --ties-out "$T/s5.json" \
    -q -o "$T/s5.t.atr" || bad "torch --save-weights"
"$A" capture disc --model micro --threads 1 --steps 2 --keep-masks heads=all \
    --weights "$T/s5.safetensors" -q -o "$T/s5.c.atr" || bad "C capture of the saved weights"
"$PY" tests/python/torch_agree.py "$T/s5.c.atr" "$T/s5.t.atr" "$T/s5.json" > "$T/s5.out" ||
    bad "saved weights: $(tail -2 "$T/s5.out")"
# --mem-limit: the C capture's estimate and message, exit 3, no file
"$PY" -m acceltrace.capture disc --model pixart-sigma-xl --image-size 2048 --mem-limit 1GiB \
    -o "$T/x.atr" 2> "$T/e"; rc=$?
[ $rc -eq 3 ] && grep -q "needs about 22.2 GiB, above --mem-limit 1 GiB; " "$T/e" ||
    bad "--mem-limit: exit $rc $(cat "$T/e")"

# errors: usage 2, data 3, messages naming the subject
"$PY" -m acceltrace.capture disc --model micro --dtype fp16 -o "$T/x.atr" 2> "$T/e"; rc=$?
[ $rc -eq 2 ] && grep -q "fp16 needs --device cuda" "$T/e" || bad "fp16 on cpu: exit $rc $(cat "$T/e")"
"$PY" -m acceltrace.capture disc --model nano -o "$T/x.atr" 2> "$T/e"; rc=$?
[ $rc -eq 2 ] && grep -q "unknown model 'nano'" "$T/e" || bad "unknown model: exit $rc $(cat "$T/e")"
"$PY" -m acceltrace.capture disc --model micro --ctr-target 1.5 -o "$T/x.atr" 2> "$T/e"; rc=$?
[ $rc -eq 2 ] && grep -q "1.5" "$T/e" || bad "ctr-target 1.5: exit $rc"
head -c 1000 "$T/micro.w.safetensors" > "$T/trunc.safetensors"
"$PY" -m acceltrace.capture disc --model micro --weights "$T/trunc.safetensors" -o "$T/x.atr" 2> "$T/e"; rc=$?
[ $rc -eq 3 ] && grep -q "trunc.safetensors" "$T/e" || bad "truncated weights: exit $rc $(cat "$T/e")"
head -c 100 /dev/zero > "$T/text.f32"
"$PY" -m acceltrace.capture disc --model micro --weights "$T/micro.w.safetensors" \
    --text "$T/text.f32" -o "$T/x.atr" 2> "$T/e"; rc=$?
[ $rc -eq 3 ] && grep -q "text.f32' has 100 bytes" "$T/e" || bad "short text: exit $rc $(cat "$T/e")"
[ -e "$T/x.atr" ] && bad "a failed capture left a trace"
[ $fail -eq 0 ] && echo "ok"
exit $fail
