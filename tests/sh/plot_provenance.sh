#!/usr/bin/env bash
# What made a user's own figures: `plot` and `analyze conflicts` write OUT/manifest.json
# (kind, the command as typed, inputs, the hashes and data source of what they read), the
# report shows that command under each figure instead of "command: not recorded", and a
# results folder's own manifest is never replaced. `plot --format pdf` counts pdf, not png.
# Headline numbers of two results folders say which folder, hardware and config each is
# of; long decimals of the data line are printed with 6 digits.
set -u
A=${ACCELTRACE:?}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
mkdir -p "$T/w"
"$A" capture test --records 200 -o "$T/w/t.atr" > /dev/null 2>&1 || fail "capture test"
"$A" replay "$T/w/t.atr" --hw configs/test-count.json --sweep configs/test-sweep.json \
    -o "$T/w/r" -q 2> /dev/null || fail "replay sweep"
"$A" replay "$T/w/t.atr" --hw configs/test-count.json -o "$T/w/one" -q 2> /dev/null ||
    fail "replay one config"

"$A" plot "$T/w/r" --y sum --format pdf -o "$T/w/figs" 2> "$T/err" || fail "plot --format pdf"
grep -q '(1 pdf)' "$T/err" || fail "plot --format pdf says: $(cat "$T/err")"
! grep -q 'png' "$T/err" || fail "a pdf run counts png: $(cat "$T/err")"
"$A" plot "$T/w/r" --y sum -o "$T/w/figs" -q || fail "plot"
m="$T/w/figs/manifest.json"
[ -s "$m" ] || fail "plot wrote no manifest.json"
/usr/bin/python3 - "$m" "$T/w/r/manifest.json" "$T/w/r" << 'EOF' || fail "plot manifest"
import json, sys
m, r = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
assert m["kind"] == "plot", m
assert m["command"].startswith("acceltrace plot ") and "--y sum" in m["command"], m
assert m["inputs"] == [sys.argv[3]], m
assert m["trace_hash"] == r["trace_hash"] and m["config_hash"] == r["config_hash"], m
assert m["trace_source"] == r["trace_source"], m
EOF

# plotting into the results folder itself leaves its manifest (the guard of its rows) alone
cp "$T/w/r/manifest.json" "$T/r-manifest"
"$A" plot "$T/w/r" --y sum -o "$T/w/r" -q || fail "plot into the results folder"
cmp -s "$T/w/r/manifest.json" "$T/r-manifest" || fail "plot replaced a results manifest"

"$A" analyze conflicts --synthetic uniform -o "$T/w/conf" -q > /dev/null 2>&1 ||
    fail "analyze conflicts --synthetic"
grep -q '"kind": "analyze conflicts"' "$T/w/conf/manifest.json" ||
    fail "analyze conflicts wrote no manifest"
grep -q '"command": "acceltrace analyze conflicts --synthetic uniform' "$T/w/conf/manifest.json" ||
    fail "analyze conflicts manifest command"

"$A" report "$T/w" -o "$T/report.html" -q 2> "$T/err" || fail "report: $(cat "$T/err")"
H="$T/report.html"
grep -q 'sum_vs_scale.png</b>' "$H" || fail "the figure is not in the report"
grep -A3 'sum_vs_scale.png</b>' "$H" | grep -q 'command: <code>acceltrace plot .*--y sum' ||
    fail "the figure's command is not shown"
grep -q 'command: not recorded' "$H" && fail "a figure without its command"
# two results folders: each headline says which folder, hardware and config it is of
grep -q 'class="setting">one/, hw test-count' "$H" || fail "no setting for one/"
grep -q 'class="setting">r/, hw test-count, [^<]*config [a-z_]*=' "$H" ||
    fail "no swept config for r/: $(grep -o 'class="setting">[^<]*' "$H" | sort -u)"
echo ok
