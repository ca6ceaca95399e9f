#!/usr/bin/env bash
# Named sweep rows (README.md "Named sweep rows"): a zip's "name" list names the grid's
# rows; replay writes them as a `name` column (CSV, after the key columns) and a "name"
# member (JSON) that survive shards + merge, resume and energy; `sweep --list` shows them;
# plot legends say the name instead of the keys it stands for, --where name=... selects by
# it; the report's headline numbers say which named row they were read from. Without names
# the files are those of the same grid before names existed: the named run's CSV minus its
# name column equals the unnamed run's byte for byte. Bad names are refused with the grid
# path.
set -euo pipefail
A=${ACCELTRACE:?}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
cd "$T"
fail() { echo "FAIL: $*"; exit 1; }
HW="$ROOT/configs/test-count.json"
E="$ROOT/configs/test-energy.json"
"$A" capture test --records 300 -o t.atr 2> /dev/null
cat > named.json << 'J'
{"doc": "two named designs x 3 step filters",
 "design": {"zip": {"name": ["small", "big, \"wide\""], "scale": [1, 5], "spin": [0, 2]}},
 "min_step": [0, 3, 7]}
J
cat > plain.json << 'J'
{"doc": "two named designs x 3 step filters",
 "design": {"zip": {"scale": [1, 5], "spin": [0, 2]}},
 "min_step": [0, 3, 7]}
J
"$A" replay t.atr --hw "$HW" --sweep named.json -j 1 -q -o nm 2> /dev/null
"$A" replay t.atr --hw "$HW" --sweep plain.json -j 1 -q -o pl 2> /dev/null

# the column and the member, in config order
head -n 1 nm/results.csv | grep -q '^trace_hash,config_hash,config_index,model,name,field,' ||
    fail "header: $(head -n 1 nm/results.csv)"
want=$(printf 'small\nsmall\nsmall\n"big, ""wide"""\n"big, ""wide"""\n"big, ""wide"""')
got=$(tail -n +2 nm/results.csv | sed 's/^[^,]*,[^,]*,[^,]*,[^,]*,\("[^"]*\(""[^"]*\)*"\|[^,]*\),.*/\1/')
[ "$got" = "$want" ] || fail "name cells: $got"
[ "$(grep -c '"model":"count","name":"small","row":0' nm/results.jsonl)" -eq 3 ] ||
    fail "JSON name member: $(head -n 1 nm/results.jsonl)"
grep -q '"name":"big, \\"wide\\""' nm/results.jsonl || fail "JSON name of row 4"
# `sweep --list` names the same rows; --json too
"$A" sweep named.json --hw "$HW" | grep -q "^3 [0-9a-f]* name='big, \"wide\"' " ||
    fail "sweep --list: $("$A" sweep named.json --hw "$HW" | sed -n 4p)"
[ "$("$A" sweep named.json --hw "$HW" --json | grep -o '"name": *"small"' | wc -l)" -eq 3 ] ||
    fail "sweep --list --json names"

# without names: the same files as before names existed (the name column is all that differs)
cut -d, -f1-4,6- < <(sed 's/"big, ""wide"""/BIG/' nm/results.csv) > nm_noname.csv
cmp nm_noname.csv pl/results.csv || fail "unnamed CSV differs beyond the name column"
! grep -q '"name"' pl/results.jsonl || fail "an unnamed grid wrote names"
head -n 1 pl/results.csv | grep -q '^trace_hash,config_hash,config_index,model,field,' ||
    fail "unnamed header changed"

# shards + merge, resume, energy keep the names
for i in 1 2; do "$A" replay t.atr --hw "$HW" --sweep named.json --shard $i/2 -j 1 -q -o s$i 2> /dev/null; done
"$A" merge s1 s2 -o merged 2> /dev/null
cmp nm/results.csv merged/results.csv && cmp nm/results.jsonl merged/results.jsonl ||
    fail "merged shards differ from the unsharded named run"
cp -r nm resumed
for f in results.csv results.jsonl; do head -n -2 nm/$f > resumed/$f; done
"$A" replay t.atr --hw "$HW" --sweep named.json -j 1 -q -o resumed 2> /dev/null
cmp nm/results.csv resumed/results.csv && cmp nm/results.jsonl resumed/results.jsonl ||
    fail "resumed named run differs"
"$A" replay t.atr --hw "$HW" --sweep named.json --energy "$E" -j 1 -q -o withe 2> /dev/null
cp -r nm later
"$A" energy later --table "$E" -q 2> /dev/null
cmp withe/results.csv later/results.csv || fail "energy on a named folder differs from replay --energy"

# plot: the legend names the series; keys the name stands for are not repeated
"$A" plot nm --x min_step --y sum -o figs -q 2> /dev/null
grep -q 'title "small" noenhanced' figs/sum_vs_min_step.gp || fail "legend: $(grep title figs/*.gp)"
grep -q 'title "big, \\"wide\\"" noenhanced' figs/sum_vs_min_step.gp ||
    fail "legend: $(grep title figs/*.gp)"
grep -q 'scale=' figs/sum_vs_min_step.gp && fail "legend repeats the named keys"
"$A" plot nm --x min_step --y sum --where name=small -o figs2 -q 2> /dev/null
[ "$(grep -c '^# block' figs2/sum_vs_min_step.dat)" -eq 1 ] || fail "--where name=small"
"$A" plot pl --x min_step --y sum -o figs3 -q 2> /dev/null
grep -q 'title "scale=1 spin=0"' figs3/sum_vs_min_step.gp || fail "unnamed legend changed"

# report: the headline numbers say which named row they come from
"$A" report nm -q 2> /dev/null
grep -q "sweep row 'small'" nm/report.md || fail "report: no row name in the headline source"
grep -q "(small)" nm/report.md || fail "report: no row name in the headline quantity"

# bad names: exit 3 naming the grid path
printf '{"d": {"zip": {"name": ["a", "a"], "scale": [1, 2]}}}' > dup.json
set +e
"$A" replay t.atr --hw "$HW" --sweep dup.json -q -o bad 2> err.txt
rc=$?
set -e
[ $rc -eq 3 ] || fail "duplicate name: exit $rc"
grep -q "row name given twice.*'dup.json' \$.d.zip.name\[1\]" err.txt || fail "message: $(cat err.txt)"
echo "sweep_names: ok"
