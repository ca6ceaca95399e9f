#!/usr/bin/env bash
# Config errors exit 3 and name the file, the JSON path and the line and column
# unknown key, wrong type, out of range, bad JSON, missing extends
# target; grid errors likewise; a good config with extends passes.
set -euo pipefail
A=${ACCELTRACE:?}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
cd "$T"

expect3() { # file, expected substring...
    local f=$1; shift
    set +e; "$A" config check "$f" > out.txt 2> err.txt; rc=$?; set -e
    [ "$rc" -eq 3 ] || { echo "config check $f: exit $rc, want 3"; cat err.txt; exit 1; }
    for s in "$@"; do
        grep -qF -- "$s" err.txt || { echo "config check $f: no '$s' in: $(cat err.txt)"; exit 1; }
    done
}

printf '{\n  "model": "count",\n  "scale": 2,\n  "fiel": 3\n}\n' > unknown.json
expect3 unknown.json "unknown key 'fiel'" '$.fiel' "'unknown.json' line 4 column 3"
printf '{\n  "model": "count",\n  "scale": "x"\n}\n' > type.json
expect3 type.json "expected integer, got string" '$.scale' "'type.json' line 3 column 3"
printf '{\n  "model": "count",\n  "min_step": -1\n}\n' > range.json
expect3 range.json "out of range" '$.min_step' "'range.json' line 3 column 3"
printf '{\n  "model": "count",\n  "scale": 2,,\n}\n' > bad.json
expect3 bad.json "bad json" "'bad.json' line 3 column 14"
printf '{\n  "extends": "nothere.json",\n  "scale": 2\n}\n' > ext.json
expect3 ext.json "missing extends target 'nothere.json'" '$.extends' "'ext.json' line 2 column 3"
printf '{"model": "count", "split_rows": 1}\n' > bool.json
expect3 bool.json "expected boolean" '$.split_rows'
printf '{"model": "nosuch"}\n' > model.json
expect3 model.json "unknown model 'nosuch'" '$.model'
mkdir -p sub
printf '{"model": "count", "extends": "sub/a.json"}\n' > cyc.json
printf '{"extends": "../cyc.json"}\n' > sub/a.json
expect3 cyc.json "extends cycle"

# extends relative to the extending file, values override the base
printf '{"extends": "%s/configs/test-count.json", "scale": 5}\n' "$ROOT" > sub/good.json
"$A" config check sub/good.json > out.txt
grep -q '"scale":5' out.txt
# the hash does not depend on how the file is written
printf '{"scale": 5, "model": "count",\n "field": "value"}\n' > same.json
h1=$("$A" config check sub/good.json | head -1 | awk '{print $NF}')
h2=$("$A" config check same.json | head -1 | awk '{print $NF}')
[ "$h1" = "$h2" ] || { echo "hash differs: $h1 vs $h2"; exit 1; }

# the same errors through replay exit 3 too
"$A" capture test --records 50 -o t.atr 2> /dev/null
set +e; "$A" replay t.atr --hw unknown.json -q -o r 2> err.txt; rc=$?; set -e
[ "$rc" -eq 3 ] && grep -qF '$.fiel' err.txt
# grid errors name the grid file and path
printf '{"scale": [1, 2],\n "min_step": {"range": [0, 10, 0]}}\n' > g.json
set +e; "$A" replay t.atr --hw same.json --sweep g.json -q -o r 2> err.txt; rc=$?; set -e
[ "$rc" -eq 3 ] && grep -qF "'g.json' \$.min_step.range[2] line 2" err.txt || { cat err.txt; exit 1; }
printf '{"scale": [1, "two"]}\n' > g2.json
set +e; "$A" sweep g2.json --hw same.json 2> err.txt; rc=$?; set -e
[ "$rc" -eq 3 ] && grep -qF '$.scale[1]' err.txt || { cat err.txt; exit 1; }
# config show lists every key with unit, default and doc
"$A" config show count > show.txt
grep -q '^ops_per_record .*float.*op.*\[0, 1000000000\]' show.txt
grep -q '^field .*"value"' show.txt
echo ok
