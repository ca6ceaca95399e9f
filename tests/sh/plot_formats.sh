#!/usr/bin/env bash
# `plot` output formats and layout: --format pdf passes pdfinfo, svg passes
# xmllint, eps starts with the PostScript magic; --series/--style colour and dash by two
# keys; --facet makes one panel per value; more than 8 series in one panel become facets on
# their own, or exit 2 naming the keys; sentinel x values are a category; --where is in the
# title; a bad --format or --size is exit 2. Checked in the .gp/.dat, not in pixels.
set -u
A=${ACCELTRACE:?}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
"$A" capture test --records 200 -o "$T/t.atr" > /dev/null 2>&1 || fail "capture test"
"$A" replay "$T/t.atr" --hw configs/test-count.json --sweep configs/test-sweep.json -o "$T/r" -q \
    2> /dev/null || fail "replay"

# the sweep: 10 scales x 10 min_step; x = scale, 10 series of min_step
"$A" plot "$T/r" --y sum --format svg -o "$T/svg" -q || fail "plot --format svg"
gp="$T/svg/sum_vs_scale.gp"
grep -q "^set terminal svg enhanced" "$gp" || fail "svg terminal"
grep -q "^set output 'sum_vs_scale.svg'" "$gp" || fail "svg output"
# 10 series > 8: panels by min_step, one series each
grep -q '^set multiplot layout 3,4 ' "$gp" || fail "automatic facets: $(grep multiplot "$gp")"
[ "$(grep -c '^set title "min_step=' "$gp")" = 10 ] || fail "10 facet titles"
[ "$(grep -c '^set multiplot next' "$gp")" = 2 ] || fail "2 blank cells of the 3x4 grid"
# --facet: a panel per scale, one series (min_step is x) each
"$A" plot "$T/r" --y sum --x min_step --facet scale -o "$T/fac" -q || fail "plot --facet"
gp="$T/fac/sum_vs_min_step.gp"
[ "$(grep -c '^set title "scale=' "$gp")" = 10 ] || fail "--facet scale: 10 panels"
[ "$(grep -c "index [0-9]* using 1:2" "$gp")" = 10 ] || fail "--facet scale: 10 series"
"$A" plot "$T/r" --y sum --where scale=1 --x min_step -o "$T/w" -q || fail "plot --where"
grep -q '^set title "sum vs min_step (model count, 10 rows; where scale=1)"' \
    "$T/w/sum_vs_min_step.gp" || fail "--where in the title"
# --series c1 --style c2 on 2 x 3 series: linetype 1 + colour + 8 dash (Okabe-Ito colour of
# c1's value, dash of c2's value)
mkdir -p "$T/two"
python3 - "$T/two/results.jsonl" << 'PY'
import json, sys
with open(sys.argv[1], "w") as f:
    for c1 in ("p", "q"):
        for c2 in ("u", "v", "w"):
            for x in range(3):
                f.write(json.dumps({"model": "count", "config_hash": c1 + c2 + str(x),
                                    "config": {"c1": c1, "c2": c2, "scale": x},
                                    "counts": {"sum": x}, "labels": {}}) + "\n")
PY
"$A" plot "$T/two" --y sum --series c1 --style c2 -o "$T/ss" -q || fail "plot --series --style"
lts=$(grep -o 'with linespoints lt [0-9]*' "$T/ss/sum_vs_scale.gp" | awk '{print $4}' | tr '\n' ' ')
[ "$lts" = "1 9 17 2 10 18 " ] || fail "--series/--style linetypes: $lts"
grep -q '^set multiplot' "$T/ss/sum_vs_scale.gp" && fail "6 series need no facets"
skip=""
command -v gnuplot > /dev/null || skip="gnuplot not on PATH"
command -v pdfinfo > /dev/null && command -v xmllint > /dev/null ||
    skip="${skip:-pdfinfo or xmllint missing (scripts/deps.sh installs poppler-utils, libxml2-utils)}"
if [ -z "$skip" ]; then
    "$A" plot "$T/r" --y sum --x min_step --where scale=1 --format pdf --size 6x4in -o "$T/pdf" -q || fail "plot --format pdf"
    f=$(ls "$T"/pdf/*.pdf | head -1)
    [ -n "$f" ] || fail "no pdf written"
    pdfinfo "$f" > "$T/info" 2>&1 || fail "pdfinfo: $(cat "$T/info")"
    grep -q '^Page size: *432 x 288 pts' "$T/info" || fail "pdf size: $(grep 'Page size' "$T/info")"
    for f in "$T"/svg/*.svg; do
        xmllint --noout "$f" || fail "xmllint $f"
    done
    "$A" plot "$T/r" --y sum --format eps -o "$T/eps" -q || fail "plot --format eps"
    head -c 11 "$T/eps/sum_vs_scale.eps" | grep -q '^%!PS-Adobe' || fail "eps magic"
    "$A" plot "$T/r" --y sum --format epslatex -o "$T/tex" -q || fail "plot --format epslatex"
    [ -s "$T/tex/sum_vs_scale.tex" ] && [ -s "$T/tex/sum_vs_scale.eps" ] || fail "epslatex files"
    "$A" plot "$T/r" --y sum --x min_step --where scale=1 --size 1000x700 -o "$T/png" -q || fail "plot --size"
    # PNG IHDR: width and height, big-endian, at bytes 16..23
    [ "$(od -An -tu1 -j16 -N8 "$T/png/sum_vs_min_step.png" | tr -s ' ')" = " 0 0 3 232 0 0 2 188" ] ||
        fail "png size"
fi
# usage errors
"$A" plot "$T/r" --format gif -o "$T/x" 2> "$T/e1"; [ $? = 2 ] || fail "--format gif: exit 2"
grep -q "bad --format 'gif'" "$T/e1" || fail "--format message"
"$A" plot "$T/r" --size 5 -o "$T/x" 2> /dev/null; [ $? = 2 ] || fail "--size 5: exit 2"
"$A" plot "$T/r" --series nokey -o "$T/x" 2> "$T/e2"; [ $? = 2 ] || fail "--series nokey: exit 2"
grep -q "'nokey' is not a swept config key" "$T/e2" || fail "--series message"
# too many series even with facets: a 20 x 20 sweep of two keys into one panel each
mkdir -p "$T/big"
python3 - "$T/big/results.jsonl" << 'PY'
import json, sys
with open(sys.argv[1], "w") as f:
    for a in range(20):
        for b in range(20):
            for c in range(3):
                f.write(json.dumps({"model": "count", "config_hash": "%d-%d-%d" % (a, b, c),
                                    "config": {"a": "a%d" % a, "b": "b%d" % b, "scale": c},
                                    "counts": {"sum": a + b + c}, "labels": {}}) + "\n")
PY
"$A" plot "$T/big" --y sum -o "$T/bigp" 2> "$T/e3"; rc=$?
[ $rc = 2 ] || fail "400 series: exit $rc, not 2"
grep -q "would draw .* series in one panel" "$T/e3" && grep -q "a (20 values)" "$T/e3" ||
    fail "overflow message: $(cat "$T/e3")"
if [ -n "$skip" ]; then
    echo "SKIP: $skip: the files were not rendered and checked"
    exit 77
fi
echo "plot_formats ok"
