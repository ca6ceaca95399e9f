#!/usr/bin/env bash
# Trace writers that must not mix or destroy data (see
# docs/trace-format.md "Concurrent writers"):
#  - two captures to one path started together, 10 times: every outcome is a valid trace
#    plus a clear refusal (exit 2), or two valid traces one after the other; never a
#    corrupt trace, never exit 0 with a bad file, no .partial left;
#  - an existing NAME.partial (a running or killed capture) is refused, not truncated, and
#    still recovers;
#  - an input that is the output or its temporary (by inode: same path, ./path, hard link)
#    is refused with exit 2 naming both, and the input is left intact (capture disc,
#    kura, salca, recover, export tiles);
#  - a capture that fills a 1 MiB tmpfs says "disk full" naming the file and leaves no
#    .partial. Without a tmpfs (not root and no mount namespace) that part cannot run: the
#    test then ends SKIP (exit 77) after the other parts, never a pass.
set -u
A=${ACCELTRACE:?}
fail=0
tmp=$(mktemp -d)
mnt=""
cleanup() {
    [ -n "$mnt" ] && umount "$mnt" 2> /dev/null
    rm -rf "$tmp"
}
trap cleanup EXIT
check() { # description, expected exit, actual exit
    if [ "$2" -ne "$3" ]; then echo "FAIL $1: exit $3, want $2"; fail=1; fi
}
CAP=(capture test --records 20000 --blob-bytes 200)

# 1. two captures to one path, started together, 10 times
refused=0; both=0
for t in 1 2 3 4 5 6 7 8 9 10; do
    rm -f "$tmp/same.atr"
    "$A" "${CAP[@]}" --seed 1 -o "$tmp/same.atr" 2> "$tmp/e1" & p1=$!
    "$A" "${CAP[@]}" --seed 2 -o "$tmp/same.atr" 2> "$tmp/e2" & p2=$!
    wait $p1; r1=$?
    wait $p2; r2=$?
    for k in 1 2; do
        r=$r1; [ $k = 2 ] && r=$r2
        if [ "$r" -eq 2 ]; then
            grep -q "same.atr.partial' exists: another capture is writing" "$tmp/e$k" ||
                { echo "FAIL trial $t: refusal text: $(cat "$tmp/e$k")"; fail=1; }
            refused=$((refused + 1))
        elif [ "$r" -ne 0 ]; then
            echo "FAIL trial $t: capture $k exit $r: $(cat "$tmp/e$k")"; fail=1
        fi
    done
    [ "$r1" -eq 0 ] && [ "$r2" -eq 0 ] && both=$((both + 1))
    if [ "$r1" -ne 0 ] && [ "$r2" -ne 0 ]; then echo "FAIL trial $t: no capture finished"; fail=1; fi
    "$A" verify -q "$tmp/same.atr" || { echo "FAIL trial $t: trace does not verify"; fail=1; }
    [ -e "$tmp/same.atr.partial" ] && { echo "FAIL trial $t: .partial left"; fail=1; }
done
echo "concurrent captures: 10 trials, $refused refused, $both with both finished in turn"
# one after the other: the second replaces the first, whole (the documented semantics)
"$A" "${CAP[@]}" --seed 1 -o "$tmp/seq.atr" 2> /dev/null; check "first capture" 0 $?
"$A" "${CAP[@]}" --seed 2 -o "$tmp/seq.atr" 2> /dev/null; check "second capture" 0 $?
"$A" verify -q "$tmp/seq.atr"; check "verify after two captures in turn" 0 $?
"$A" dump --limit 1 "$tmp/seq.atr" | grep -q '"seed":"*2"*[,}]' ||
    { echo "FAIL the second capture did not win: $("$A" dump --limit 1 "$tmp/seq.atr" | head -c 300)"; fail=1; }

# 2. a leftover .partial is refused, left byte for byte, and still recovers
cp tests/golden/bad/no_index.atr "$tmp/left.atr.partial"
"$A" "${CAP[@]}" -o "$tmp/left.atr" 2> "$tmp/err"; check "capture over a .partial" 2 $?
grep -q "run \`acceltrace recover .*left.atr.partial\` or remove it" "$tmp/err" ||
    { echo "FAIL leftover message: $(cat "$tmp/err")"; fail=1; }
cmp -s tests/golden/bad/no_index.atr "$tmp/left.atr.partial" || { echo "FAIL .partial changed"; fail=1; }
[ -e "$tmp/left.atr" ] && { echo "FAIL refused capture wrote a trace"; fail=1; }
"$A" recover "$tmp/left.atr.partial" > /dev/null; check "recover the leftover" 0 $?
"$A" verify -q "$tmp/left.atr"; check "verify the recovered leftover" 0 $?

# 3. capture inputs against the output and its temporary
"$A" capture disc --model micro --threads 1 -q --save-weights "$tmp/w.safetensors" \
    -o "$tmp/m.atr"; check "micro capture" 0 $?
cp "$tmp/w.safetensors" "$tmp/w.keep"
"$A" capture disc --model micro --threads 1 -q --weights "$tmp/w.safetensors" \
    -o "$tmp/w.safetensors" 2> "$tmp/err"; check "--weights W -o W" 2 $?
grep -q "input '.*w.safetensors' and output '.*w.safetensors' are the same file" "$tmp/err" ||
    { echo "FAIL same-file message: $(cat "$tmp/err")"; fail=1; }
cmp -s "$tmp/w.keep" "$tmp/w.safetensors" || { echo "FAIL weights replaced"; fail=1; }
ln "$tmp/w.safetensors" "$tmp/hard.atr"
"$A" capture disc --model micro --threads 1 -q --weights "$tmp/w.safetensors" \
    -o "$tmp/hard.atr" 2> /dev/null; check "--weights W -o hard link of W" 2 $?
cp "$tmp/w.safetensors" "$tmp/t.atr.partial"
"$A" capture disc --model micro --threads 1 -q --weights "$tmp/t.atr.partial" \
    -o "$tmp/t.atr" 2> "$tmp/err"; check "--weights = the temporary" 2 $?
grep -q "t.atr.partial' are the same file" "$tmp/err" || { echo "FAIL temporary message: $(cat "$tmp/err")"; fail=1; }
cmp -s "$tmp/w.keep" "$tmp/t.atr.partial" || { echo "FAIL temporary input changed"; fail=1; }
"$A" capture disc --model micro --threads 1 -q --weights "$tmp/w.safetensors" \
    --save-weights "$tmp/./w.safetensors" -o "$tmp/n.atr" 2> /dev/null
check "--weights W --save-weights ./W" 2 $?
cmp -s "$tmp/w.keep" "$tmp/w.safetensors" || { echo "FAIL weights rewritten"; fail=1; }
echo x > "$tmp/k.w"
"$A" capture kura --size 40x36 --reproducible -q --score net --weights "$tmp/k.w" \
    -o "$tmp/k.w" > /dev/null 2> "$tmp/err"; check "kura --weights W -o W" 2 $?
[ "$(cat "$tmp/k.w")" = x ] || { echo "FAIL kura weights replaced"; fail=1; }
mkdir "$tmp/ck"; echo '{}' > "$tmp/ck/config.json"; echo y > "$tmp/ck/model.safetensors"
"$A" capture salca --source model --checkpoint "$tmp/ck" -o "$tmp/ck/model.safetensors" \
    > /dev/null 2> "$tmp/err"; check "salca -o a checkpoint file" 2 $?
grep -q "ck/model.safetensors' and output" "$tmp/err" || { echo "FAIL salca message: $(cat "$tmp/err")"; fail=1; }
"$A" capture salca --source model --checkpoint "$tmp/ck" --csv "$tmp/ck/config.json" \
    -o "$tmp/sal.atr" > /dev/null 2>&1; check "salca --csv a checkpoint file" 2 $?
[ "$(cat "$tmp/ck/model.safetensors")$(cat "$tmp/ck/config.json")" = "y{}" ] ||
    { echo "FAIL checkpoint changed"; fail=1; }
"$A" capture kura --size 40x36 --reproducible -q -o "$tmp/k.atr" > /dev/null; check "kura capture" 0 $?
mkdir "$tmp/tiles"; ln "$tmp/k.atr" "$tmp/tiles/in.hex"
"$A" export tiles "$tmp/tiles/in.hex" --shape 2x2 -o "$tmp/tiles" > /dev/null 2> "$tmp/err"
check "export tiles into the trace's own file" 2 $?
"$A" verify -q "$tmp/k.atr"; check "trace intact after export refusal" 0 $?

# 4. recover: the input is never the output or its temporary
cp tests/golden/ok/small.atr "$tmp/r.atr.recovering"
"$A" recover "$tmp/r.atr.recovering" -o "$tmp/r.atr" 2> "$tmp/err"; check "recover X.recovering -o X" 2 $?
grep -q "is the temporary" "$tmp/err" || { echo "FAIL recover temporary message: $(cat "$tmp/err")"; fail=1; }
cmp -s tests/golden/ok/small.atr "$tmp/r.atr.recovering" || { echo "FAIL recover truncated its input"; fail=1; }
cp tests/golden/ok/small.atr "$tmp/s.atr"
"$A" recover "$tmp/s.atr" -o "$tmp/./s.atr" 2> "$tmp/err"; check "recover X -o ./X" 2 $?
grep -q "same file" "$tmp/err" || { echo "FAIL recover same-file message: $(cat "$tmp/err")"; fail=1; }
cmp -s tests/golden/ok/small.atr "$tmp/s.atr" || { echo "FAIL recover changed its input"; fail=1; }
: > "$tmp/busy.atr.recovering"
"$A" recover "$tmp/s.atr" -o "$tmp/busy.atr" 2> "$tmp/err"; check "recover over a .recovering" 2 $?
[ -e "$tmp/busy.atr.recovering" ] || { echo "FAIL recover removed a temporary not its own"; fail=1; }

# 5. disk full: a 1 MiB tmpfs
mkdir "$tmp/mnt"
if mount -t tmpfs -o size=1m tmpfs "$tmp/mnt" 2> /dev/null; then
    mnt="$tmp/mnt"
    "$A" capture test --records 20000 --blob-bytes 200 --level 0 -o "$mnt/full.atr" 2> "$tmp/err"
    check "capture into a full disk" 1 $?
    grep -q "disk full writing '.*full.atr.partial'" "$tmp/err" || { echo "FAIL disk-full message: $(cat "$tmp/err")"; fail=1; }
    left=$(ls -A "$mnt")
    [ -z "$left" ] || { echo "FAIL disk-full capture left: $left"; fail=1; }
    "$A" capture test --records 100 -o "$mnt/small.atr" 2> /dev/null; check "rerun after disk full" 0 $?
    "$A" verify -q "$mnt/small.atr"; check "verify rerun" 0 $?
    cp tests/golden/ok/small.atr "$mnt/in.atr"
    cat /dev/zero > "$mnt/fill" 2> /dev/null
    "$A" recover "$mnt/in.atr" -o "$mnt/out.atr" > /dev/null 2> "$tmp/err"
    check "recover into a full disk" 1 $?
    [ -e "$mnt/out.atr.recovering" ] && { echo "FAIL recover left its temporary"; fail=1; }
else
    skipped="part 5 (disk full) not run: cannot mount a tmpfs (not root or no mount namespace)"
fi
if [ "$fail" = 0 ] && [ -n "${skipped:-}" ]; then
    echo "SKIP: $skipped"
    exit 77
fi
exit $fail
