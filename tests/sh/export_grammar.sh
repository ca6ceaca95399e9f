#!/usr/bin/env bash
# The command line the export verbs share (cli/cmd_export.h): one --steps grammar for
# `export chakra`, `export hbm-trace` and `export timeline` ("A-B" or "A", A <= B < 2^32:
# accepted forms run, every other form is exit 2 naming the value), a second input is exit 2
# "more than one trace/results folder", a missing input or -o is exit 2 with the verb's
# "need ..." line, and an input among the outputs is exit 2 before anything is read.
set -eu
A=${ACCELTRACE:?}
here=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
fail=0
bad() { echo "FAIL $*"; fail=1; }

"$A" capture disc --model micro --steps 3 --threads 1 -q -o d.atr > /dev/null
"$A" capture salca -q --length 512 --steps 2 --layers 1 --heads 2 -o s.atr > /dev/null
"$A" replay d.atr --hw "$here/configs/disc-a100-matched.json" -q -o res > /dev/null 2>&1

# verb, input, output per line
cases="chakra d.atr out.et
hbm-trace s.atr hbm
timeline res t.json"

# exit status and stderr of one run: rc_of VERB IN OUT [ARGS...]
rc_of() {
    local v=$1 in=$2 out=$3; shift 3
    set +e
    "$A" export "$v" "$in" -o "$out" -q "$@" > /dev/null 2> err.txt
    local rc=$?
    set -e
    echo "$rc"
}

while read -r v in out; do
    for s in 0 1 0-1 1-1 1-2; do
        rc=$(rc_of "$v" "$in" "$out" --steps "$s")
        [ "$rc" = 0 ] || bad "export $v --steps $s: exit $rc (want 0): $(head -1 err.txt)"
    done
    for s in 2-1 -1 1-x x 1- 0--0 " 1-2x" 4294967296 0-4294967296; do
        rc=$(rc_of "$v" "$in" "$out" --steps "$s")
        [ "$rc" = 2 ] || bad "export $v --steps '$s': exit $rc (want 2)"
        grep -qF "bad --steps '$s'" err.txt || bad "export $v --steps '$s': $(head -1 err.txt)"
    done
    set +e
    "$A" export "$v" "$in" "$in" -o "$out" > /dev/null 2> err.txt
    rc=$?
    set -e
    [ "$rc" = 2 ] && grep -q "more than one .*('$in')" err.txt \
        || bad "export $v with two inputs: exit $rc: $(head -1 err.txt)"
    set +e
    "$A" export "$v" "$in" > /dev/null 2> err.txt
    rc=$?
    set -e
    [ "$rc" = 2 ] && grep -q "need " err.txt || bad "export $v without -o: exit $rc"
done <<< "$cases"

# the trace as the output: refused before it is read (exit 2), the trace unchanged
sum=$(md5sum < d.atr)
rc=$(rc_of chakra d.atr d.atr)
[ "$rc" = 2 ] && grep -q "same file" err.txt || bad "export chakra -o the trace: exit $rc"
[ "$(md5sum < d.atr)" = "$sum" ] || bad "export chakra -o the trace changed it"

[ "$fail" = 0 ] && echo ok
exit "$fail"
