#!/usr/bin/env bash
# The demo writes out/report.md whose links all resolve and its HTML
# twin out/report.html with one section and headline table per workload (the
# browser check is tests/sh/report_html.sh). By default
# only the engine's own "test" workload runs (seconds); ACCELTRACE_SLOW=1 runs the whole
# demo as `make demo` does, with every workload that has demo steps.
set -euo pipefail
A=${ACCELTRACE:?}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
cd "$ROOT"
"$A" demo --list > "$T/list.txt" 2> "$T/list.err"
grep -q '^demo: \[test\] replay: acceltrace replay ' "$T/list.txt"
[ ! -s "$T/list.err" ] || { echo "demo --list wrote to stderr: $(cat "$T/list.err")"; exit 1; }
if [ "${ACCELTRACE_SLOW:-0}" = 1 ]; then
    "$A" demo -o "$T/out" 2> "$T/log.txt" || { cat "$T/log.txt"; exit 1; }
else
    "$A" demo --only test -o "$T/out" 2> "$T/log.txt" || { cat "$T/log.txt"; exit 1; }
fi
cat "$T/log.txt"
R="$T/out/report.md"
[ -s "$R" ]
grep -q '^# acceltrace demo' "$R"
grep -q '^- test: 3 steps' "$R"
n=0
cd "$T/out"
for l in $(grep -o '](\([^)]*\))' report.md | sed 's/^](//; s/)$//' | sort -u); do
    [ -f "$l" ] || { echo "dangling link '$l' in report.md"; exit 1; }
    n=$((n + 1))
done
echo "$n links resolve"
[ "$n" -ge 4 ]
# every figure and table under out/ is linked
for f in $(find . -name '*.png' -o -name '*.csv' | sed 's|^\./||'); do
    grep -qF "]($f)" report.md || { echo "$f not in report.md"; exit 1; }
done
echo ok
H="$T/out/report.html"
[ -s "$H" ] || { echo "no report.html"; exit 1; }
n_wl=$(grep -c '^- [a-z]*: [0-9]* steps in' "$R")
[ "$(grep -c '<table class="headline"' "$H")" -eq "$n_wl" ] ||
    { echo "headline tables in report.html != $n_wl workloads"; exit 1; }
# the figures of the page and of report.md are the same, in the same order
grep -o '<figcaption><b>[^<]*</b>' "$H" | sed 's/.*<b>//; s/<\/b>//' > "$T/h.txt"
grep -o '^- Figure \[[^]]*\]' "$R" | sed 's/^- Figure \[//; s/\]$//; s/\\//g' > "$T/m.txt"
[ -s "$T/h.txt" ] && cmp -s "$T/h.txt" "$T/m.txt" || { echo "report.html and report.md differ"; exit 1; }
# each demo figure names the step that made it
[ "$(grep -c 'command: <code>acceltrace ' "$H")" -ge "$(wc -l < "$T/h.txt")" ] ||
    { echo "a figure without its command"; exit 1; }
echo "html ok: $n_wl workload(s), $(wc -l < "$T/h.txt") figures"
# A rerun replaces the workload folder (a stale replay folder of another trace would make
# replay refuse it): a file planted in it is gone and the run succeeds again.
cd "$ROOT"
touch "$T/out/test/stale.txt"
"$A" demo --only test -o "$T/out" 2> "$T/log2.txt" || { cat "$T/log2.txt"; exit 1; }
[ ! -e "$T/out/test/stale.txt" ] || { echo "rerun kept the old folder"; exit 1; }
[ -f "$T/out/test/.acceltrace-demo" ] && [ -s "$T/out/test/test.atr" ]
# a folder of that name not made by the demo is left alone: usage error, contents kept
mkdir -p "$T/foreign/test" && echo keep > "$T/foreign/test/notes.txt"
set +e
"$A" demo --only test -o "$T/foreign" 2> "$T/log3.txt"
rc=$?
set -e
[ $rc = 2 ] || { echo "foreign folder: exit $rc, want 2"; exit 1; }
grep -q "was not made by acceltrace demo" "$T/log3.txt"
[ "$(cat "$T/foreign/test/notes.txt")" = keep ]
echo "rerun ok"
