#!/usr/bin/env bash
# `acceltrace report` renders a self-contained HTML page that a real browser loads.
# A small tree made in seconds: a demo workload folder (capture, replay
# with a sweep, plots), a tiny SA-Kura run (capture 24x24, replay, model kura --plots: the
# figures and the raw phase maps of a gallery), `reproduce kura --quick` (ours vs paper) and
# an unrelated folder the report must leave out. Checked without a browser: the folders
# covered, escaping, no network reference, links that resolve, the Markdown twin in the
# same order, --exclude, --inline, plots as figures (not thumbnails), data lines without
# 17-digit decimals. Then headless Chromium loads the page at 1400 px with a checking
# script added to a copy: every <img> has naturalWidth > 0, no figure, caption, data line,
# thumbnail name or headline cell wider than its box, one headline table per workload
# folder, an ours-vs-paper table; screenshots go to $BUILD/test-artifacts/ (not committed).
# Without a Chromium that starts, the browser part is skipped (exit 77).
set -euo pipefail
A=${ACCELTRACE:?}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
ART="$ROOT/${BUILD:-build}/test-artifacts"
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
cd "$ROOT"
fail() { echo "FAIL: $*"; exit 1; }

"$A" demo --only test -o "$T/out" -q 2> "$T/log" || { cat "$T/log"; fail "demo --only test"; }
K="$T/kura"
mkdir -p "$K"
"$A" capture kura --size 24x24 --steps 20 -q -o "$K/kura.atr" > /dev/null 2>&1
"$A" replay "$K/kura.atr" --hw configs/kura-h20w5.json -q -o "$K/replay" 2> /dev/null
"$A" model kura --plots "$K/figures" --trace "$K/kura.atr" --every 10 -q > /dev/null 2>&1
"$A" reproduce kura --quick -q -o "$T/out/reproduce" > /dev/null 2>&1
# not a workload folder of out/: no marker, so not covered
mkdir -p "$T/out/unrelated"
cp "$K/figures/kura_phase_data.png" "$T/out/unrelated/stray.png"
# a caption with markup must come out escaped
printf '<script>alert(1)</script> & "quoted"\n' > "$K/figures/kura_epx_lines.caption"

"$A" report "$T/out" "$K" -o "$T/report.html" --title 'Report <check>' \
    --exclude 'kura_phase_step9*' 2> "$T/log" || { cat "$T/log"; fail "report"; }
cat "$T/log"
H="$T/report.html" M="$T/report.md"
[ -s "$H" ] && [ -s "$M" ] || fail "report.html or report.md missing"
[ ! -e "$H.tmp" ] && [ ! -e "$M.tmp" ] || fail "temporary left behind"
n_sec=$(grep -c '<section class="workload"' "$H")
[ "$n_sec" -eq 3 ] || fail "$n_sec workload sections, want 3 (out/reproduce, out/test, kura)"
[ "$(grep -c '<table class="headline"' "$H")" -eq "$n_sec" ] || fail "headline tables != sections"
grep -q '<table class="repro">' "$H" || fail "no ours-vs-paper table"
grep -q 'class="st st-calib"' "$H" || fail "no coloured status label"
grep -q 'Not covered: .*unrelated (no demo or reproduce marker)' "$H" || fail "unrelated not named"
! grep -q 'stray.png' "$H" "$M" || fail "a folder not given was covered"
! grep -q 'kura_phase_step9' "$H" "$M" || fail "--exclude ignored"
grep -q 'kura_phase_step19.png' "$H" || fail "phase map missing from the gallery"
grep -q '<div class="gallery">' "$H" || fail "no gallery"
# an image with a gnuplot script beside it is a figure with its caption, not a thumbnail
grep -q '<figcaption><b>kura_phase_data.png</b>' "$H" || fail "a plot shown as a raw thumbnail"
# decimals of the data line (the trace's generator parameters) with 6 digits, not 17
grep -q '<p class="data">Data: synthetic (generator fingerprint (.*core_r=0.4,' "$H" ||
    fail "data line: $(grep -o '<p class="data">Data: synthetic (generator[^<]*' "$H")"
! grep -o '<p class="data">Data: [^<]*' "$H" | grep -Eq '[0-9]\.[0-9]{7,}' ||
    fail "a data line with a 17-digit number"
grep -q '<details><summary>' "$H" || fail "no table preview"
grep -q '<h3>Design space</h3>' "$H" || fail "kura figures not grouped by question"
grep -q 'command: <code>acceltrace plot ' "$H" || fail "a plot's command not shown"
grep -q 'config hash <code>[0-9a-f]\{16\}' "$H" || fail "no config hash"
grep -q 'SA-Kura system time per step' "$H" || fail "no kura headline"
# every section says what made its data (the trace header's source)
[ "$(grep -c '<p class="data">Data: ' "$H")" -eq "$n_sec" ] || fail "a section without Data"
grep -q '<p class="data">Data: synthetic (' "$H" || fail "the demo trace's source not shown"
grep -q "Data: no capture (solver lines" "$H" || fail "reproduce kura's data line"
grep -q '^Data: synthetic (' "$M" || fail "no data source in report.md"
grep -q '<title>Report &lt;check&gt;</title>' "$H" || fail "title not escaped"
grep -q '&lt;script&gt;alert(1)&lt;/script&gt; &amp; &quot;quoted&quot;' "$H" ||
    fail "caption not escaped"
[ "$(grep -c '<script' "$H")" -eq 0 ] || fail "the page holds a script"
! grep -Eq '(src|href)="(https?:)?//' "$H" || fail "a network reference"
# every image and link resolves beside the page
n=0
for l in $(grep -o '\(src\|href\)="[^"#][^"]*"' "$H" | sed 's/^[a-z]*="//; s/"$//' | sort -u); do
    [ -f "$T/$l" ] || fail "dangling reference '$l'"
    n=$((n + 1))
done
echo "$n references resolve"
# the Markdown twin: the same figures in the same order
grep -o '<figcaption><b>[^<]*</b>' "$H" | sed 's/.*<b>//; s/<\/b>//' > "$T/h.txt"
grep -o '^- Figure \[[^]]*\]' "$M" | sed 's/^- Figure \[//; s/\]$//; s/\\//g' > "$T/m.txt"
[ -s "$T/h.txt" ] && cmp -s "$T/h.txt" "$T/m.txt" || { diff "$T/h.txt" "$T/m.txt"; fail "md order"; }
echo "$(wc -l < "$T/h.txt") figures in the same order in both files"
# --inline: one portable file, copied away from the tree
mkdir -p "$T/away"
"$A" report "$T/out" "$K" --inline -q -o "$T/inline.html"
cp "$T/inline.html" "$T/away/report.html"
[ "$(grep -o '<img src="data:image/png;base64,' "$T/away/report.html" | wc -l)" -eq \
    "$(grep -o '<img ' "$T/away/report.html" | wc -l)" ] || fail "--inline left an image linked"
# bad input
set +e
"$A" report "$T/nope" 2> "$T/err"; rc=$?
set -e
[ $rc -eq 3 ] && grep -q "nope" "$T/err" || fail "missing folder: exit $rc"
"$A" report "$T/out" -o "$T/x.txt" 2> /dev/null && fail "-o without .html accepted"

# ---- the browser ----
CH=$(command -v chromium || command -v chromium-browser || true)
[ -n "$CH" ] || { echo "SKIP: chromium not installed (scripts/deps.sh installs it)"; exit 77; }
chrome() { # url, extra args...
    local u=$1; shift
    timeout 90 "$CH" --headless --disable-gpu --no-sandbox --user-data-dir="$T/profile" \
        --no-first-run --disable-extensions "$@" "$u" 2> "$T/chrome.err"
}
if ! chrome about:blank --dump-dom > /dev/null; then
    echo "SKIP: chromium does not start: $(tail -n 2 "$T/chrome.err" | tr '\n' ' ')"
    exit 77
fi
probe='<script>
window.addEventListener("load", function () {
  var im = document.images, bad = [];
  for (var i = 0; i < im.length; i++)
    if (!im[i].complete || im[i].naturalWidth === 0) bad.push(im[i].getAttribute("src").slice(0, 60));
  var p = document.createElement("pre");
  p.id = "probe";
  var wide = document.querySelectorAll("figure, figcaption, .prov, p.data, .gallery a, table.headline td"), over = 0;
  for (var j = 0; j < wide.length; j++)
    if (wide[j].scrollWidth > wide[j].clientWidth + 1) over++;
  p.textContent = "PROBE images=" + im.length + " bad=" + bad.length + " overflow=" + over +
    " headline=" + document.querySelectorAll("table.headline").length +
    " sections=" + document.querySelectorAll("section.workload").length +
    " repro=" + document.querySelectorAll("table.repro").length + " END " + bad.join(" ");
  document.body.appendChild(p);
});
</script>'
check_page() { # page.html, expected sections
    local page=$1 want=$2 probe_page="${1%.html}.probe.html" line
    awk -v s="$probe" '/<\/body>/ { print s } { print }' "$page" > "$probe_page"
    chrome "file://$probe_page" --dump-dom --virtual-time-budget=15000 --window-size=1400,4000 \
        > "$T/dom.html" ||
        fail "chromium failed on $page: $(tail -n 3 "$T/chrome.err")"
    line=$(grep -o 'PROBE images=[0-9][^<]*' "$T/dom.html" || true)
    echo "$page: $line"
    [ -n "$line" ] || fail "the probe did not run in $page"
    echo "$line" | grep -Eq "images=[1-9][0-9]* bad=0 overflow=0 headline=$want sections=$want repro=[1-9]" ||
        fail "$page: $line"
}
check_page "$H" 3
check_page "$T/away/report.html" 3
# the probe can fail: a copy with one image pointing nowhere is caught
sed '0,/<img src="[^"]*"/s//<img src="missing.png"/' "$H" > "$T/broken.html"
if (check_page "$T/broken.html" 3) > "$T/broken.log" 2>&1; then
    fail "a missing image went unnoticed: $(cat "$T/broken.log")"
fi
grep -q 'bad=1 ' "$T/broken.log" || fail "broken page: $(cat "$T/broken.log")"
mkdir -p "$ART"
chrome "file://$H" --screenshot="$ART/report_html.png" --window-size=1400,2600 \
    --hide-scrollbars > /dev/null 2>&1 || fail "screenshot"
[ -s "$ART/report_html.png" ] || fail "no screenshot"
echo "screenshot: $ART/report_html.png"
echo ok
