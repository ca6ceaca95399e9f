#!/usr/bin/env bash
# make install / make uninstall (README.md "Install"): `make install PREFIX=DIR` puts the
# program in DIR/bin, its man page in DIR/share/man/man1 (generated from the program's own
# help: every verb and sub-verb has a section, and it renders through `man -l` and groff
# without a warning), its bash completion in DIR/share/bash-completion/completions (it
# completes verbs), and the configs and shipped weights in DIR/share/acceltrace, where the
# installed program finds them from any folder (capture disc --model trained-small, a
# demo workload). DESTDIR stages the same tree. `make uninstall` removes every file it put
# there. The make runs never rebuild the program under test (-o: assume it up to date).
# Exit 77 with "SKIP: reason" without make, man or groff (scripts/deps.sh installs them).
set -euo pipefail
A=${ACCELTRACE:?}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
skip() { echo "SKIP: $*"; exit 77; }
for c in make man groff install; do
    command -v "$c" > /dev/null || skip "$c not installed (scripts/deps.sh installs man-db, groff-base)"
done
B=$(cd "$(dirname "$A")" && pwd)
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
mk() { env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s -C "$ROOT" BUILD="$B" -o "$B/acceltrace" "$@"; }

P="$T/prefix"
mk install PREFIX="$P" > "$T/make.log" 2>&1 || { cat "$T/make.log"; fail "make install"; }
I="$P/bin/acceltrace"
[ -x "$I" ] || fail "no executable $I"
for f in share/man/man1/acceltrace.1 share/bash-completion/completions/acceltrace \
         share/acceltrace/configs/test-count.json share/acceltrace/configs/salca-sweep.json \
         share/acceltrace/models/trained-small.safetensors \
         share/acceltrace/models/trained-small.safetensors.sha256; do
    [ -f "$P/$f" ] || fail "make install did not install $f"
done
[ "$(ls "$P/share/acceltrace/configs" | wc -l)" -eq "$(ls "$ROOT"/configs/*.json | wc -l)" ] ||
    fail "configs: $(ls "$P/share/acceltrace/configs")"

# the installed program, run from elsewhere, with the installed configs and weights
mkdir "$T/elsewhere"
cd "$T/elsewhere"
[ "$("$I" --version)" = "$("$A" --version)" ] || fail "installed --version differs"
C="$P/share/acceltrace/configs"
"$I" capture test --records 200 -o t.atr -q 2> /dev/null
"$I" replay t.atr --hw "$C/test-count.json" --sweep "$C/test-sweep.json" -j 1 -q -o r 2> /dev/null
[ "$(($(wc -l < r/results.csv) - 1))" -eq 100 ] || fail "installed replay: $(wc -l < r/results.csv) lines"
env -u ACCELTRACE_MODELS "$I" capture disc --model trained-small --steps 1 -q -o d.atr 2> err.txt ||
    fail "installed program without its weights: $(cat err.txt)"
"$I" demo --only test -o demo -q > /dev/null 2> err.txt || fail "installed demo: $(tail -n 3 err.txt)"
[ -f demo/test/replay/results.csv ] || fail "installed demo wrote no results"

# bash completion from the installed file
out=$(bash -c 'source "$1"; COMP_WORDS=(acceltrace rep); COMP_CWORD=1; _acceltrace
               printf "%s\n" "${COMPREPLY[@]}" | sort | paste -sd" " -' _ \
               "$P/share/bash-completion/completions/acceltrace")
[ "$out" = "replay report reproduce" ] || fail "installed completion of 'rep': '$out'"

# the man page: one section per verb and sub-verb, renders with man -l and groff
M="$P/share/man/man1/acceltrace.1"
MANWIDTH=100 MANPAGER=cat man -l "$M" > man.txt 2> man.err || fail "man -l: $(cat man.err)"
head -n 1 man.txt | grep -q '^ACCELTRACE(1)' || fail "man -l header: $(head -n 1 man.txt)"
for v in $("$A" --help | sed -n '/^verbs:/,/^$/p' | awk 'NF && !/^verbs:/ {print $1}'); do
    grep -q "^   acceltrace $v\$" man.txt || fail "man page lacks a section for '$v'"
done
for vs in "capture disc" "analyze conflicts" "export hbm-trace" "model salca"; do
    grep -q "^   acceltrace $vs\$" man.txt || fail "man page lacks a section for '$vs'"
done
grep -q -- '--sbatch' man.txt && grep -q -- '--set KEY=VALUE' man.txt ||
    fail "man page lacks the options of the help text"
groff -man -Tutf8 -ww -z "$M" 2> groff.err
[ ! -s groff.err ] || fail "groff warnings: $(head -n 5 groff.err)"
MANPATH="$P/share/man" man -w acceltrace | grep -qx "$M" || fail "man -w with MANPATH"

# DESTDIR stages under PREFIX; uninstall removes every file
cd "$T"
mk install DESTDIR="$T/stage" PREFIX=/opt/at > /dev/null 2>&1 || fail "make install DESTDIR"
[ -x "$T/stage/opt/at/bin/acceltrace" ] && [ -f "$T/stage/opt/at/share/man/man1/acceltrace.1" ] ||
    fail "DESTDIR install"
mk uninstall PREFIX="$P" > /dev/null 2>&1 || fail "make uninstall"
left=$(find "$P" -type f)
[ -z "$left" ] || fail "make uninstall left: $left"
[ ! -e "$P/share/acceltrace" ] || fail "make uninstall left share/acceltrace"
echo "install: ok"
