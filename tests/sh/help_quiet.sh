#!/usr/bin/env bash
# Help texts and quiet output (README "Command-line grammar"):
#  - `help --help` is the top-level help, exit 0; `help VERB SUB` is the sub-verb's help;
#  - config show, check and list each have their own help, not config's;
#  - the sub-verb lists say `acceltrace model MODEL`, never `model model`;
#  - the top-level help says what plot writes (not "-> PNG" alone);
#  - demo --list writes the steps to stdout, nothing to stderr;
#  - replay -q prints nothing on stderr (the summary too), without -q the summary.
set -u
A=${ACCELTRACE:?}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
cd "$T"
fail=0
bad() { echo "FAIL $*"; fail=1; }

rc=0; "$A" help --help > h.txt 2> e.txt || rc=$?
[ "$rc" = 0 ] || bad "help --help: exit $rc: $(cat e.txt)"
grep -q '^usage: acceltrace VERB' h.txt || bad "help --help: $(head -3 h.txt)"
rc=0; "$A" help -h > /dev/null 2>&1 || rc=$?
[ "$rc" = 0 ] || bad "help -h: exit $rc"

for sub in show check list; do
    rc=0; "$A" config "$sub" --help > "$sub.txt" 2> e.txt || rc=$?
    [ "$rc" = 0 ] || bad "config $sub --help: exit $rc: $(cat e.txt)"
    grep -q "^usage: acceltrace config $sub" "$sub.txt" || bad "config $sub --help: $(head -2 "$sub.txt")"
    "$A" help config "$sub" > "help_$sub.txt" 2>&1
    cmp -s "$sub.txt" "help_$sub.txt" || bad "help config $sub differs from config $sub --help"
done
"$A" config --help > config.txt
for sub in show check list; do
    cmp -s config.txt "$sub.txt" && bad "config $sub --help is config's help"
done
cmp -s show.txt check.txt && bad "config show and check share a help"
grep -q "config SUB --help" config.txt || bad "config --help does not point at the sub-verbs' help"

for v in model capture analyze export; do
    "$A" "$v" --help > v.txt 2>&1
    grep -q "acceltrace $v $v" v.txt && bad "$v --help says '$v $v': $(head -1 v.txt)"
done
"$A" model --help | grep -q '^usage: acceltrace model MODEL \[options\]' || bad "model --help usage line"
"$A" capture --help | grep -q '^usage: acceltrace capture WORKLOAD \[options\]' ||
    bad "capture --help usage line"

"$A" --help > top.txt
grep -q -- '-> PNG' top.txt && bad "top-level help still says '-> PNG'"
grep -Eq '^  plot  .*\.dat, \.gp and png/pdf/svg' top.txt || bad "top-level help on plot: $(grep plot top.txt)"

"$A" demo --list > list.txt 2> list.err || bad "demo --list: exit $?"
[ -s list.txt ] || bad "demo --list wrote nothing on stdout"
[ -s list.err ] && bad "demo --list wrote on stderr: $(head -2 list.err)"

"$A" capture test --records 50 -q -o t.atr 2> /dev/null || bad "capture test"
"$A" replay t.atr --hw "$ROOT/configs/test-count.json" -q -o r1 2> q.err || bad "replay -q: exit $?"
[ -s q.err ] && bad "replay -q wrote on stderr: $(cat q.err)"
"$A" replay t.atr --hw "$ROOT/configs/test-count.json" -o r2 2> v.err || bad "replay: exit $?"
grep -q "replayed 1 of 1 configs" v.err || bad "replay without -q: no summary: $(cat v.err)"
[ "$fail" = 0 ] && echo ok
exit "$fail"
