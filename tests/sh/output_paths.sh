#!/usr/bin/env bash
# Output paths and damaged-trace status (README "Exit status"):
#  - two outputs of one command that name the same file, existing or not (`capture salca
#    --csv X -o X`, or the trace's temporary), are refused with exit 2 before anything runs;
#  - a trace -o that is an existing folder is refused at once (exit 2), not after the
#    capture when its final rename fails;
#  - a file where a verb wants an output folder (analyze, export, replay, merge, plot -o) is
#    exit 2; a missing input folder of merge is exit 3, a file named as one exit 2;
#  - info exits 3 on a trace whose frames are whole but whose index is damaged.
set -u
A=${ACCELTRACE:?}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
cd "$T"
fail=0
expect() { # description, expected exit, message regexp, command...
    local what=$1 want=$2 re=$3 rc=0
    shift 3
    "$@" > out.txt 2> err.txt || rc=$?
    if [ "$rc" != "$want" ]; then
        echo "FAIL $what: exit $rc, want $want: $(cat err.txt)"; fail=1
    elif [ -n "$re" ] && ! grep -Eq -- "$re" err.txt; then
        echo "FAIL $what: message '$(cat err.txt)' lacks /$re/"; fail=1
    fi
}
SAL=(capture salca --length 512 --steps 2 --layers 1 --heads 2 --kv-heads 1 -q)

# 1. outputs against each other, by name, before either exists
expect "--csv X -o X" 2 "outputs 'X.atr' and 'X.atr' are the same file" "$A" "${SAL[@]}" --csv X.atr -o X.atr
[ -e X.atr ] && { echo "FAIL --csv X -o X left X.atr"; fail=1; }
expect "--csv on the temporary" 2 "are the same file" "$A" "${SAL[@]}" --csv ./X.atr.partial -o X.atr
mkdir sub
expect "--csv through another spelling" 2 "are the same file" "$A" "${SAL[@]}" --csv sub/../o.atr -o o.atr
[ -s out.txt ] && { echo "FAIL a refused capture printed its table"; fail=1; }
"$A" "${SAL[@]}" --csv s.csv -o S.atr > /dev/null || { echo "FAIL a good capture: exit $?"; fail=1; }
[ -s s.csv ] && [ -s S.atr ] || { echo "FAIL the good capture wrote no CSV or trace"; fail=1; }

# 2. a trace -o that is a folder: refused before the workload runs
mkdir EXD
expect "capture salca -o DIR" 2 "output 'EXD' is a folder" "$A" "${SAL[@]}" -o EXD
[ -s out.txt ] && { echo "FAIL capture -o DIR ran the workload: $(cat out.txt)"; fail=1; }
[ -e EXD.partial ] && { echo "FAIL capture -o DIR left EXD.partial"; fail=1; }
expect "capture test -o DIR" 2 "output 'EXD' is a folder" "$A" capture test --records 10 -o EXD

# 3. a file where an output folder is wanted
"$A" replay S.atr --model salca -q -o R || { echo "FAIL replay"; fail=1; }
touch FILE
expect "analyze -o FILE" 2 "cannot create folder 'FILE'" "$A" analyze conflicts S.atr -q -o FILE
expect "export -o FILE" 2 "cannot create folder 'FILE'" \
    "$A" export hbm-trace S.atr --hw "$ROOT/configs/salca-hbm2.json" -q -o FILE
expect "replay -o FILE" 2 "FILE" "$A" replay S.atr --model salca -q -o FILE
expect "merge -o FILE" 2 "FILE" "$A" merge R -q -o FILE
expect "plot -o FILE" 2 "cannot create folder 'FILE'" "$A" plot R -q -o FILE
expect "analyze -o FILE/sub" 2 "cannot create folder 'FILE/sub'" "$A" analyze conflicts S.atr -q -o FILE/sub
# merge inputs
expect "merge of a missing folder" 3 "cannot open folder 'nosuch'" "$A" merge nosuch R -o M
expect "merge of a file" 2 "cannot open folder 'FILE'" "$A" merge FILE R -o M

# 4. info: frames whole, index damaged -> 3 with the reason; intact -> 0
cp S.atr bad_index.atr
size=$(stat -c %s bad_index.atr)
printf '\001\002\003' | dd of=bad_index.atr bs=1 seek=$((size - 40)) conv=notrunc 2> /dev/null
expect "info on a damaged index" 3 "bad index frame" "$A" info bad_index.atr
grep -q '^index  *bad index frame' out.txt || { echo "FAIL info printed no index line"; fail=1; }
expect "info --json on a damaged index" 3 "bad index frame" "$A" info --json bad_index.atr
expect "info on an intact trace" 0 "" "$A" info S.atr
head -c "$((size - 60))" S.atr > no_index.atr
expect "info without an index" 3 "." "$A" info no_index.atr
[ "$fail" = 0 ] && echo ok
exit "$fail"
