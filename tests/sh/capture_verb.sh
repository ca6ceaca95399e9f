#!/usr/bin/env bash
# The `capture` verb: its listing is the capture registry's (names in registry order, the
# summaries of the ops), snapshotted; no workload and an unknown one are usage errors (exit
# 2); every listed workload answers --help with its own usage.
set -u
A=${ACCELTRACE:?}
fail=0
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
check() { # description, expected exit, actual exit
    if [ "$2" -ne "$3" ]; then echo "FAIL $1: exit $3, want $2"; fail=1; fi
}
cat > "$tmp/want" <<'TXT'
usage: acceltrace capture WORKLOAD [options]

workloads:
  disc       DiT denoising with CTR and ST executed for real (DiSC)
  kura       Kuramoto orientation diffusion with the SA-Kura drift
  salca      long-context decode with Salca token selection and baselines
  test       synthetic TestRecords for the replay engine's tests

'acceltrace capture WORKLOAD --help' describes each
TXT
"$A" capture --help > "$tmp/help"; check "capture --help" 0 $?
diff -u "$tmp/want" "$tmp/help" || { echo "FAIL capture --help snapshot"; fail=1; }
"$A" capture > /dev/null 2> "$tmp/err"; check "capture without workload" 2 $?
diff -u "$tmp/want" "$tmp/err" || { echo "FAIL capture listing on stderr"; fail=1; }
"$A" capture nosuch > /dev/null 2> "$tmp/err"; check "capture nosuch" 2 $?
grep -q "unknown workload 'nosuch'" "$tmp/err" || { echo "FAIL unknown workload: $(cat "$tmp/err")"; fail=1; }
for w in $(sed -n 's/^  \([a-z][a-z0-9_]*\)  .*/\1/p' "$tmp/help"); do
    "$A" capture "$w" --help > "$tmp/wh"; check "capture $w --help" 0 $?
    grep -q "^usage: acceltrace capture $w" "$tmp/wh" || { echo "FAIL capture $w --help text"; fail=1; }
done
[ $fail -eq 0 ] && echo "capture verb ok"
exit $fail
