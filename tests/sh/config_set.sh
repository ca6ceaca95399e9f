#!/usr/bin/env bash
# --set KEY=VALUE and `config diff` (README.md "Config overrides"): replay --set gives the
# rows of a config file holding the same values, byte for byte; a string key takes a bare
# word; a bad override (unknown key, wrong type, out of range, a failing cross-key check,
# no '=') exits 2 naming the key and the --set, before anything is written; a rerun with
# another --set into the same folder is refused (the base config changed). sweep --list,
# sweep --emit and config check take --set too. `config diff A B` prints both hashes and
# exactly the keys whose resolved values differ ("extends", defaults and layout applied).
set -euo pipefail
A=${ACCELTRACE:?}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
cd "$T"
fail() { echo "FAIL: $*"; exit 1; }
HW="$ROOT/configs/test-count.json"
"$A" capture test --records 200 -o t.atr 2> /dev/null
printf '{"extends": "%s", "scale": 3, "field": "step"}\n' "$HW" > s3.json
printf '{"scale": [1, 2]}\n' > g.json

# --set equals the file with the same values
"$A" replay t.atr --hw s3.json -j 1 -q -o by_file 2> /dev/null
"$A" replay t.atr --hw "$HW" --set scale=3 --set field=step -j 1 -q -o by_set 2> /dev/null
cmp by_file/results.csv by_set/results.csv && cmp by_file/results.jsonl by_set/results.jsonl ||
    fail "replay --set differs from the same values in a file"
grep -q '"field":"step"' by_set/results.jsonl || fail "bare word for a string key"
"$A" replay t.atr --model count --set 'field="step"' --set scale=3 -j 1 -q -o by_model 2> /dev/null
cmp by_file/results.csv by_model/results.csv || fail "--model with --set (JSON string) differs"
# the override applies under a sweep too: scale from the grid, field from --set
"$A" replay t.atr --hw "$HW" --sweep g.json --set field=step -j 1 -q -o swept 2> /dev/null
[ "$(grep -c '"field":"step"' swept/results.jsonl)" -eq 2 ] || fail "--set under --sweep"

# bad overrides: exit 2, key and --set named, nothing written
check_bad() { # want-text args...
    local want=$1 rc
    shift
    set +e
    "$A" replay t.atr --hw "$HW" "$@" -q -o bad 2> err.txt
    rc=$?
    set -e
    [ $rc -eq 2 ] || fail "replay $*: exit $rc, want 2 ($(cat err.txt))"
    grep -qF -- "$want" err.txt || fail "replay $*: '$(cat err.txt)' lacks '$want'"
    [ ! -e bad ] || fail "replay $*: wrote bad/"
}
check_bad "unknown key 'scal' for model 'count' (--set scal=3)" --set scal=3
check_bad "value -1 of 'min_step' out of range [0, 4294967295]" --set min_step=-1
check_bad "(--set min_step=-1)" --set min_step=-1
check_bad "wrong type for 'scale': expected integer, got number (--set scale=1.5)" --set scale=1.5
check_bad "value 'nope' of 'field' is not one of" --set field=nope
check_bad "--set wants KEY=VALUE, not 'scale'" --set scale
check_bad "bad json value for 'split_rows'" --set split_rows=yes
set +e
"$A" replay t.atr --hw "$ROOT/configs/disc-a100-matched.json" --set dpu_count=48 -q -o bad 2> err.txt
rc=$?
set -e
[ $rc -eq 2 ] && grep -q "dpu_count must be a power of two.*(with --set)" err.txt ||
    fail "cross-key check: exit $rc, $(cat err.txt)"
# another --set into the same folder: the base config changed, refused
set +e
"$A" replay t.atr --hw "$HW" --set scale=4 --set field=step -q -o by_set 2> err.txt
rc=$?
set -e
[ $rc -eq 2 ] || fail "rerun with another --set: exit $rc"

# sweep and config check take it too
[ "$("$A" sweep g.json --hw "$HW" --set field=step --json | grep -o '"field":"step"' | wc -l)" -eq 2 ] ||
    fail "sweep --list --set: $("$A" sweep g.json --hw "$HW" --set field=step --json)"
"$A" sweep g.json --hw "$HW" --set field=step --emit parallel --trace t.atr --shards 2 -o o |
    grep -q -- "--hw '$HW' --set 'field=step' --sweep" || fail "sweep --emit without the --set"
[ "$("$A" config check "$HW" --set scale=3 --set field=step | sed -n 's/.*hash //p')" = \
  "$("$A" config check s3.json | sed -n 's/.*hash //p')" ] || fail "config check --set hash"

# config diff: hashes and exactly the differing keys, in A's key order
"$A" config diff "$HW" s3.json > diff.txt
ha=$("$A" config check "$HW" | sed -n 's/.*hash //p')
hb=$("$A" config check s3.json | sed -n 's/.*hash //p')
want=$(printf "a %s: model count, hash %s\nb s3.json: model count, hash %s\nfield: \"value\" -> \"step\"\nscale: 1 -> 3\n2 key(s) differ" "$HW" "$ha" "$hb")
[ "$(cat diff.txt)" = "$want" ] || { cat diff.txt; fail "config diff output"; }
# the same values written another way: no difference
printf '{\n  "field": "step", "model": "count",\n  "scale": 3}\n' > s3b.json
"$A" config diff s3.json s3b.json | grep -qx "0 key(s) differ" || fail "layout counted as a difference"
"$A" config diff s3.json s3b.json --json | grep -q '"differ":\[\]' || fail "diff --json"
"$A" config diff "$HW" "$ROOT/configs/a100.json" | grep -qx 'model: "count" -> "gpu"' ||
    fail "diff across models"
set +e
"$A" config diff "$HW" 2> err.txt; rc=$?
set -e
[ $rc -eq 2 ] || fail "diff with one file: exit $rc"
set +e
"$A" config diff "$HW" nosuch.json 2> err.txt; rc=$?
set -e
[ $rc -eq 3 ] && grep -q "nosuch.json" err.txt || fail "diff of a missing file: exit $rc"
echo "config_set: ok"
