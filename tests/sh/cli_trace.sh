#!/usr/bin/env bash
# CLI snapshots of the trace verbs: info (text and --json) of a golden trace, --help and
# usage errors, info on a damaged trace (intact prefix, exit 3), recover of a cut file.
set -u
A=${ACCELTRACE:?}
fail=0
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
check() { # description, expected exit, actual exit
    if [ "$2" -ne "$3" ]; then echo "FAIL $1: exit $3, want $2"; fail=1; fi
}
"$A" info tests/golden/ok/small.atr > "$tmp/info"; check "info" 0 $?
diff -u tests/golden/ok/small.info "$tmp/info" || { echo "FAIL info snapshot"; fail=1; }
"$A" info --json tests/golden/ok/small.atr > "$tmp/info.json"; check "info --json" 0 $?
diff -u tests/golden/ok/small.info.json "$tmp/info.json" || { echo "FAIL info --json snapshot"; fail=1; }
for v in info dump verify recover; do
    "$A" $v --help > "$tmp/help"; check "$v --help" 0 $?
    grep -q "^usage: acceltrace $v" "$tmp/help" || { echo "FAIL $v --help text"; fail=1; }
    "$A" $v --bogus > /dev/null 2>&1; check "$v --bogus" 2 $?
    "$A" $v > /dev/null 2>&1; check "$v without file" 2 $?
done
"$A" info "$tmp/missing.atr" 2> "$tmp/err"; check "info missing file" 3 $?
grep -q "^acceltrace: cannot open '$tmp/missing.atr'" "$tmp/err" || { echo "FAIL missing file message"; fail=1; }
# damaged: info prints the intact prefix and exits 3
"$A" info tests/golden/bad/bad_crc.atr > "$tmp/out" 2> "$tmp/err"; check "info bad_crc" 3 $?
grep -q "^frames *1 (intact prefix)" "$tmp/out" || { echo "FAIL info intact prefix"; fail=1; }
grep -q "frame 1 at offset 102" "$tmp/err" || { echo "FAIL info damaged message"; fail=1; }
# recover: a trace cut inside frame 2 gives a valid trace with frames 0 and 1
cp tests/golden/bad/no_index.atr "$tmp/cut.atr.partial"
"$A" recover "$tmp/cut.atr.partial" > "$tmp/out"; check "recover" 0 $?
grep -q "^recovered 2 frames into $tmp/cut.atr" "$tmp/out" || { echo "FAIL recover text: $(cat "$tmp/out")"; fail=1; }
"$A" verify -q "$tmp/cut.atr"; check "verify recovered" 0 $?
"$A" dump "$tmp/cut.atr" | diff -u <(head -n 2 tests/golden/ok/small.jsonl) - || { echo "FAIL recovered dump"; fail=1; }
# recovering a finished trace keeps every frame
"$A" recover tests/golden/ok/small.atr -o "$tmp/again.atr" > /dev/null; check "recover finished" 0 $?
"$A" dump "$tmp/again.atr" | diff -q tests/golden/ok/small.jsonl - > /dev/null || { echo "FAIL recover finished dump"; fail=1; }
"$A" recover "$tmp/x.atr" > /dev/null 2>&1; check "recover without .partial or -o" 2 $?
"$A" recover tests/golden/bad/bad_magic.atr -o "$tmp/y.atr" 2> "$tmp/err"; check "recover bad magic" 3 $?
[ -e "$tmp/y.atr" ] && { echo "FAIL recover left an output"; fail=1; }
[ $fail -eq 0 ] && echo "cli trace verbs ok"
exit $fail
