#!/usr/bin/env bash
# "No silent zeros" and bad-input cases: nothing to analyze is exit 3 naming what
# is missing, options that do not apply are refused, empty step counts and non-finite
# option values are usage errors, NaN checkpoints are data errors, `report` on an empty
# folder says so, --shard does not wrap, and FIFOs given as inputs are refused at once
# (each run is bounded by `timeout 10`, so a hang fails instead of blocking the suite).
set -u
A="${ACCELTRACE:-build/acceltrace}"
[ -x "$A" ] || { echo "SKIP: no $A"; exit 77; }
command -v timeout > /dev/null || { echo "SKIP: no timeout(1)"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0

# expect NAME WANT_RC [GREP_PATTERN] -- runs the command after '--' with stderr in $tmp/err
expect() {
    local name=$1 want=$2 pat=$3
    shift 4
    timeout 10 "$@" > "$tmp/out" 2> "$tmp/err" < /dev/null
    local rc=$?
    if [ "$rc" -ne "$want" ]; then
        echo "FAIL $name: exit $rc, want $want"
        sed 's/^/  | /' "$tmp/err" | head -5
        fail=1
    elif [ -n "$pat" ] && ! grep -qi -- "$pat" "$tmp/err"; then
        echo "FAIL $name: stderr lacks '$pat'"
        sed 's/^/  | /' "$tmp/err" | head -5
        fail=1
    fi
}

# --- analyze hash: no recorded statistics for U = 4 and no kept bits -> exit 3
"$A" capture disc --model micro --threads 1 -q -o "$tmp/micro.atr" > /dev/null 2>&1 ||
    { echo "FAIL capture disc micro"; exit 1; }
expect "hash recorded U" 0 "" -- "$A" analyze hash "$tmp/micro.atr" --no-plots -o "$tmp/h0"
expect "hash U=4 without kept masks" 3 "keep-masks" -- \
    "$A" analyze hash "$tmp/micro.atr" --units 4 --no-plots -o "$tmp/h1"
expect "hash other k-odd without kept masks" 3 "k-odd" -- \
    "$A" analyze hash "$tmp/micro.atr" --k-odd 0x3 --no-plots -o "$tmp/h2"

# --- empty step counts
expect "salca --steps 0" 2 "step" -- "$A" capture salca --steps 0 -o "$tmp/s0.atr"
[ -e "$tmp/s0.atr" ] && { echo "FAIL salca --steps 0 wrote a trace"; fail=1; }
expect "disc --steps 0" 2 "steps" -- "$A" capture disc --model micro --steps 0 -o "$tmp/d0.atr"
expect "kura --steps 0" 2 "step" -- "$A" capture kura --steps 0 -o "$tmp/k0.atr"

# --- non-finite option values are refused naming the option
for v in nan NaN inf -inf infinity 1e999; do
    expect "disc --cfg $v" 2 "cfg" -- "$A" capture disc --model micro --cfg "$v" -o "$tmp/c.atr"
done
expect "salca --tiny-outlier-gain inf" 2 "tiny-outlier-gain" -- \
    "$A" capture salca --tiny-outlier-gain inf -o "$tmp/c.atr"
expect "kura --c0 nan" 2 "c0" -- "$A" capture kura --c0 nan -o "$tmp/c.atr"
# a float option past FLT_MAX would become inf in the float parameter
expect "disc --cfg 1e39" 2 "cfg" -- "$A" capture disc --model micro --cfg 1e39 -o "$tmp/c.atr"

# config JSON cannot carry non-finite numbers (jansson refuses NaN and overflow): a guard
printf '{"model": "disc", "clock_ghz": 1e999}\n' > "$tmp/big.json"
expect "config 1e999" 3 "overflow" -- "$A" config check "$tmp/big.json"

# --- options that do not apply to the input
"$A" capture salca --source synthetic -q -q --length 2048 --steps 1 --layers 1 --heads 2 --threads 1 \
    -o "$tmp/s.atr" > /dev/null 2>&1 || { echo "FAIL capture salca"; exit 1; }
expect "conflicts trace ok" 0 "" -- "$A" analyze conflicts "$tmp/s.atr" -o "$tmp/c0"
for o in "--retention 0.2" "--n 4096" "--jobs 8" "--layers 2"; do
    # shellcheck disable=SC2086
    expect "conflicts TRACE $o" 2 "synthetic" -- \
        "$A" analyze conflicts "$tmp/s.atr" $o -o "$tmp/c1"
done
for o in "--method quest" "--group task"; do
    # shellcheck disable=SC2086
    expect "conflicts --synthetic $o" 2 "trace" -- \
        "$A" analyze conflicts --synthetic uniform --n 1024 --jobs 2 $o -o "$tmp/c2"
done
expect "conflicts no selections of the method" 3 "no selections" -- \
    "$A" analyze conflicts "$tmp/s.atr" --method 77 -o "$tmp/c3"

# model kura: options the chosen mode never reads
expect "kura model --fit --size" 2 "does not apply" -- "$A" model kura --fit x.csv --size 8x8
expect "kura model --grid --trace" 2 "does not apply" -- "$A" model kura --grid --trace x.atr
expect "kura model --budget --shape" 2 "does not apply" -- "$A" model kura --budget 3 --shape 2x2
expect "kura model --plots --every, no trace" 2 "needs --trace" -- \
    "$A" model kura --plots "$tmp/kp" --every 3
expect "kura model --calibrate-activity --t-txn" 2 "does not apply" -- \
    "$A" model kura --calibrate-activity x.atr --t-txn 3
expect "kura model --optimal-width --power" 0 "" -- "$A" model kura --optimal-width --power table1

# --- NaN weights in a checkpoint: exit 3 naming the tensor
if [ -x /usr/bin/python3 ]; then
    "$A" capture disc --model micro --threads 1 -q --save-weights "$tmp/w.safetensors" \
        -o "$tmp/w.atr" > /dev/null 2>&1 || { echo "FAIL save weights"; exit 1; }
    name=$(/usr/bin/python3 - "$tmp/w.safetensors" "$tmp/nan.safetensors" << 'EOF'
import json, struct, sys
b = bytearray(open(sys.argv[1], "rb").read())
n = struct.unpack("<Q", b[:8])[0]
h = json.loads(b[8:8 + n])
name = sorted(k for k, v in h.items() if k != "__metadata__" and v["dtype"] == "F32")[-1]
off = 8 + n + h[name]["data_offsets"][0]
b[off + 4:off + 8] = struct.pack("<f", float("nan"))
open(sys.argv[2], "wb").write(b)
print(name)
EOF
)
    expect "capture with NaN weights" 3 "$name" -- \
        "$A" capture disc --model micro --threads 1 -q --weights "$tmp/nan.safetensors" \
        -o "$tmp/n.atr"
    [ -e "$tmp/n.atr" ] && { echo "FAIL NaN weights wrote a trace"; fail=1; }
    # the --text side file (16 x 32 float32 for micro) with an inf at element 5
    /usr/bin/python3 -c 'import struct,sys; v=[0.25]*512; v[5]=float("inf"); open(sys.argv[1],"wb").write(struct.pack("<512f",*v))' "$tmp/text.f32"
    expect "capture with an inf text embedding" 3 "element 5" -- \
        "$A" capture disc --model micro --threads 1 -q --text "$tmp/text.f32" -o "$tmp/t.atr"
fi

# --- report on an empty folder: a clear message, no empty report
mkdir "$tmp/empty"
expect "report empty folder" 3 "nothing to report" -- "$A" report "$tmp/empty"
[ -e "$tmp/empty/report.md" ] && { echo "FAIL empty report.md written"; fail=1; }
expect "report missing folder" 3 "nope" -- "$A" report "$tmp/nope"

# --- --shard with values past 32 bits must not wrap to 1/3
expect "shard wrap" 2 "shard" -- "$A" replay "$tmp/micro.atr" --model disc --shard 4294967297/4294967299 -o "$tmp/r"
expect "shard 0/2" 2 "shard" -- "$A" replay "$tmp/micro.atr" --model disc --shard 0/2 -o "$tmp/r"
expect "shard 1/2x" 2 "shard" -- "$A" replay "$tmp/micro.atr" --model disc --shard 1/2x -o "$tmp/r"

# --- FIFOs as inputs are refused at once, never read (they would block)
if mkfifo "$tmp/fifo.atr" 2> /dev/null; then
    mkfifo "$tmp/fifo.json"
    expect "verify FIFO" 2 "not a regular file" -- "$A" verify "$tmp/fifo.atr"
    expect "info FIFO" 2 "fifo.atr" -- "$A" info "$tmp/fifo.atr"
    expect "config check FIFO" 2 "not a regular file" -- "$A" config check "$tmp/fifo.json"
    printf '{"extends": "fifo.json"}\n' > "$tmp/ext.json"
    expect "config extends FIFO" 3 "not a regular file" -- "$A" config check "$tmp/ext.json"
    expect "weights FIFO" 2 "not a regular file" -- \
        "$A" capture disc --model micro --weights "$tmp/fifo.atr" -o "$tmp/f.atr"
    expect "kura --fit FIFO" 2 "not a regular file" -- "$A" model kura --fit "$tmp/fifo.json"
    expect "kura --coeffs FIFO" 2 "not a regular file" -- \
        "$A" model kura --grid --coeffs "$tmp/fifo.json"
    expect "replay --energy FIFO" 2 "not a regular file" -- \
        "$A" replay "$tmp/micro.atr" --model disc --energy "$tmp/fifo.json" -o "$tmp/re"
    expect "report folder as FIFO" 2 "not a folder" -- "$A" report "$tmp/fifo.atr"
    # a FIFO named like a table inside a folder is skipped, not opened
    mkdir "$tmp/rep" && mkfifo "$tmp/rep/t.csv" && printf 'a,b\n1,2\n' > "$tmp/rep/u.csv"
    expect "report with a FIFO table" 0 "" -- "$A" report "$tmp/rep"
    grep -q "u.csv" "$tmp/rep/report.md" 2> /dev/null || { echo "FAIL report lacks u.csv"; fail=1; }
    grep -q "t.csv" "$tmp/rep/report.md" 2> /dev/null && { echo "FAIL report lists FIFO"; fail=1; }
else
    echo "note: mkfifo unavailable, FIFO cases not run"
fi

[ "$fail" -eq 0 ] && echo "PASS no_silent_zeros"
exit "$fail"
