#!/usr/bin/env bash
# `plot` streams results.jsonl through its --where filters (results files
# streamed): only the kept rows count against --mem-limit, a budget too small for them is
# exit 3 naming the file and line, and a FIFO in place of results.jsonl is refused at once.
set -u
A=${ACCELTRACE:?}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
"$A" capture test -o "$T/t.atr" > /dev/null 2>&1 || fail "capture test"
"$A" replay "$T/t.atr" --hw configs/test-count.json --sweep configs/test-sweep.json -o "$T/r" -q \
    2> /dev/null || fail "replay"
# big: the 100 rows, then 39 copies of the 90 rows of other scales (3610 rows, ~1.3 MB)
mkdir "$T/big"
{ cat "$T/r/results.jsonl"; for i in $(seq 1 39); do grep -v '"scale":3,' "$T/r/results.jsonl"; done; } \
    > "$T/big/results.jsonl"
[ "$(grep -c '"scale":3,' "$T/big/results.jsonl")" = 10 ] || fail "test setup: scale 3 rows"
bytes=$(stat -c %s "$T/big/results.jsonl")
# 1 MiB of memory holds about 95 KB of row text: the whole file does not fit
"$A" plot "$T/big" --y sum --mem-limit 1MiB -o "$T/f1" 2> "$T/err1"
rc=$?
[ $rc -eq 3 ] || fail "plot over the budget: exit $rc, want 3 ($(cat "$T/err1"))"
grep -q "results.jsonl' exceed .* at line [0-9]" "$T/err1" || fail "message: $(cat "$T/err1")"
grep -q -- "--where" "$T/err1" || fail "message does not say what to do: $(cat "$T/err1")"
# --where scale=3 keeps the 10 original rows of scale 3 (3.7 KB), within the same budget,
# and the figure's data equal the small folder's
"$A" plot "$T/big" --y sum --where scale=3 --mem-limit 1MiB -o "$T/f2" 2> "$T/err2" ||
    fail "filtered plot refused: $(cat "$T/err2")"
"$A" plot "$T/r" --y sum --where scale=3 -o "$T/f0" 2> /dev/null || fail "small plot"
[ -s "$T/f2/sum_vs_min_step.dat" ] || fail "no sum_vs_min_step.dat"
cmp -s "$T/f0/sum_vs_min_step.dat" "$T/f2/sum_vs_min_step.dat" || fail "filtered data differ"
rows=$(grep -c '^[0-9]' "$T/f2/sum_vs_min_step.dat")
[ "$rows" = 10 ] || fail "kept $rows data lines, want 10"
# a filter that keeps nothing is a usage error, not an empty figure
"$A" plot "$T/big" --y sum --where scale=99 -o "$T/f3" 2> /dev/null
[ $? -eq 2 ] || fail "empty filter: want exit 2"
# a FIFO as results.jsonl: refused at once (timeout would be exit 124)
mkdir "$T/fifo" && mkfifo "$T/fifo/results.jsonl"
timeout 10 "$A" plot "$T/fifo" --y sum -o "$T/f4" 2> "$T/err4"
rc=$?
[ $rc -ne 124 ] || fail "plot hangs on a FIFO"
[ $rc -ne 0 ] || fail "plot accepted a FIFO"
grep -q "not a regular file" "$T/err4" || fail "FIFO message: $(cat "$T/err4")"
echo "plot budget ok ($bytes bytes, $rows data lines kept)"
