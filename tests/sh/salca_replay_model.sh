#!/usr/bin/env bash
# `acceltrace model salca`: the solver table check (the section 9 table lines, compared as strings,
# in order, at the head of the output) and the solver rejection check (rejected p, exit status 2, messages). The
# lines are recomputed (the paper's formulas on its inputs): a regression guard of our
# arithmetic, not a test of a model against the paper.
set -eu
A=${ACCELTRACE:?}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

cat > "$tmp/want" <<'LINES'
b_pre=160
b_att=2048
hbm_bits_per_ns=4096.0000
front.1.m_pre=38
front.1.r_min=0.0130
front.2.m_pre=25
front.2.r_min=0.0396
front.3.m_pre=12
front.3.r_min=0.1237
design.m_pre=25
design.m_att=2
design.h_pre=16
design.h_pre_real=15.6250
design.h_att=16
design.B_req_bits_per_ns=4048.0000
design.r_min=0.0396
fixed.m_pre=25.6000
fixed.r_min=0.0387
p_prime_pre=24
p_prime_att=2
u_pre=0.9896
u_att=0.5500
m_att_beta_att=1.1000
final.m_pre=17
final.m_att=2
final.h_pre=11
final.h_att=16
final.h_pre_direct=11
final.h_att_direct=15
final.B_req_bits_per_ns=3408.0000
final.r_min=0.0582
asic_s4.b_pre=544
asic_s4.m_pre=7.5294
asic_s4.r_min=0.1314
asic_s4.r_min_int=0.1414
conflict_gain=1.8632
LINES
"$A" model salca --paper --p-pre 16 --p-att 1 > "$tmp/out"
head -n "$(wc -l < "$tmp/want")" "$tmp/out" > "$tmp/head"
diff -u "$tmp/want" "$tmp/head"
# every line is key=value
if grep -v -E '^[A-Za-z0-9_.]+=[^=]+$' "$tmp/out"; then echo "malformed line"; exit 1; fi
# without p there are no final.* lines
"$A" model salca > "$tmp/nop"
if grep -q '^final\.' "$tmp/nop"; then echo "final.* printed without p"; exit 1; fi

expect_fail() { # status, pattern, args...
    local st=$1 pat=$2; shift 2
    set +e; "$A" model salca "$@" > /dev/null 2> "$tmp/err"; local rc=$?; set -e
    [ "$rc" -eq "$st" ] || { echo "exit $rc, want $st for: $*"; cat "$tmp/err"; exit 1; }
    grep -q -- "$pat" "$tmp/err" || { echo "missing '$pat' for: $*"; cat "$tmp/err"; exit 1; }
}
expect_fail 2 "p_pre 25 outside \[1, 24\]" --paper --p-pre 25 --p-att 1
expect_fail 2 "4128 > 4096 bits/ns" --paper --p-pre 24 --p-att 1
expect_fail 2 "17 + 16 > 32" --paper --p-pre 24 --p-att 1
expect_fail 2 "m = (26, 4)" --paper --p-pre 24 --p-att 2
expect_fail 2 "unknown option" --nope
expect_fail 2 "bad value" --alpha x
"$A" model salca --paper --p-pre 23 --p-att 1 > "$tmp/ok23"
grep -qx 'final.m_pre=25' "$tmp/ok23"; grep -qx 'final.h_pre=16' "$tmp/ok23"; grep -qx 'final.h_att=16' "$tmp/ok23"
"$A" model salca --help | grep -q -- '--p-pre'
echo ok
