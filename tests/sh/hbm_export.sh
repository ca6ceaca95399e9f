#!/usr/bin/env bash
# `acceltrace export hbm-trace` (docs/models.md#hbm-timing-mode):
# on a small Salca capture both trace files parse line by line in their readers' formats,
# every address decodes (bit map of replay/hbm_export.h) to the PC that the mod / xor map
# gives its token (indices read back from `acceltrace dump`) with K and V in neighbouring
# bank groups, jobs.csv accounts for every line and matches analyze conflicts' job
# selection, --hw takes the map and layout of a salca config; bad options exit 2, a trace of another workload exits 3. The line checks need
# /usr/bin/python3 (skipped otherwise, exit 77).
set -eu
A=${ACCELTRACE:?}
PY=/usr/bin/python3
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

"$A" capture salca --source synthetic -q -q --length 4096 --steps 3 --layers 2 --heads 2 --threads 1 \
    --methods salca -o "$tmp/s.atr" > /dev/null
"$A" export hbm-trace "$tmp/s.atr" -o "$tmp/ex" > "$tmp/ex.txt"
for f in ramulator.trace dramsim3.trace jobs.csv README.md ramulator_config.py dramsim3.ini; do
    [ -s "$tmp/ex/$f" ] || { echo "missing $f"; exit 1; }
done
grep -q 'ramulator.dram.HBM2(' "$tmp/ex/ramulator_config.py"
# --preset hbm3: Ramulator's HBM3 standard at half-clock ticks, a SID bit in the map,
# the same number of lines
"$A" export hbm-trace "$tmp/s.atr" --preset hbm3 -o "$tmp/h3" > "$tmp/h3.txt"
grep -q 'ramulator.dram.HBM3(.*' "$tmp/h3/ramulator_config.py"
grep -q 'LoadStoreTrace(clock_ratio=4,' "$tmp/h3/ramulator_config.py"
grep -q 'nRCDRD=31, nRP=26, nRAS=45, nRC=72' "$tmp/h3/ramulator_config.py"
grep -q '^bankgroups = 8$' "$tmp/h3/dramsim3.ini"
grep -q 'stack ID (SID)' "$tmp/h3/README.md"
[ "$(wc -l < "$tmp/h3/ramulator.trace")" -eq "$(wc -l < "$tmp/ex/ramulator.trace")" ]
cmp -s "$tmp/h3/ramulator.trace" "$tmp/ex/ramulator.trace" && { echo "hbm3 map = hbm2 map"; exit 1; }
grep -q '^jobs=12$' "$tmp/ex.txt"
tokens=$(sed -n 's/^tokens=//p' "$tmp/ex.txt")
requests=$(sed -n 's/^requests=//p' "$tmp/ex.txt")
grep -q '^write_mb_per_s=' "$tmp/ex.txt"
# 256 B per token = 8 reads of 32 B; one line per read in both files
[ "$requests" -eq $((8 * tokens)) ] || { echo "requests $requests != 8 x $tokens"; exit 1; }
[ "$(wc -l < "$tmp/ex/ramulator.trace")" -eq "$requests" ]
[ "$(wc -l < "$tmp/ex/dramsim3.trace")" -eq "$requests" ]
# jobs.csv: 12 jobs whose line ranges tile the files
awk -F, 'NR > 1 { if ($6 != next_line) { print "gap at job " $1; exit 1 }
                  next_line = $6 + $7; n++ }
         BEGIN { next_line = 1 } END { if (n != 12) { print n " jobs"; exit 1 } }' \
    "$tmp/ex/jobs.csv"
# the same selection as analyze conflicts: --steps 1-1 is 4 jobs in both
"$A" export hbm-trace "$tmp/s.atr" --steps 1-1 --format ramulator -o "$tmp/s1" > "$tmp/s1.txt"
grep -q '^jobs=4$' "$tmp/s1.txt"
[ ! -e "$tmp/s1/dramsim3.trace" ] || { echo "--format ramulator wrote dramsim3.trace"; exit 1; }
"$A" analyze conflicts "$tmp/s.atr" --steps 1-1 -o "$tmp/c1" | grep -q '^jobs=4$'
"$A" export hbm-trace "$tmp/s.atr" --map xor --format dramsim3 -o "$tmp/xor" > /dev/null
# --hw takes the map and layout of a salca replay config; options given override it
"$A" export hbm-trace "$tmp/s.atr" --hw configs/salca-hbm2.json -o "$tmp/hw" > /dev/null
cmp -s "$tmp/hw/ramulator.trace" "$tmp/ex/ramulator.trace" || { echo "--hw default differs"; exit 1; }
printf '{"model":"salca","map":"xor","hbm":{"layout":"same_bank"}}\n' > "$tmp/sb.json"
"$A" export hbm-trace "$tmp/s.atr" --hw "$tmp/sb.json" --format dramsim3 -o "$tmp/hsb" > /dev/null
"$A" export hbm-trace "$tmp/s.atr" --map xor --layout same_bank --format dramsim3 \
    -o "$tmp/osb" > /dev/null
cmp -s "$tmp/hsb/dramsim3.trace" "$tmp/osb/dramsim3.trace" || { echo "--hw layout differs"; exit 1; }
"$A" export hbm-trace "$tmp/s.atr" --hw "$tmp/sb.json" --map mod --layout kv_bg \
    --format dramsim3 -o "$tmp/hov" > /dev/null
cmp -s "$tmp/hov/dramsim3.trace" "$tmp/ex/dramsim3.trace" || { echo "options do not override"; exit 1; }
set +e; "$A" export hbm-trace "$tmp/s.atr" --hw configs/kura-h20w5.json -o "$tmp/hk" \
    > /dev/null 2>&1; rc=$?; set -e
[ "$rc" -eq 3 ] || { echo "kura config exited $rc, not 3"; exit 1; }

# bad options exit 2; a trace of another workload exits 3
for bad in "--format ramulator3" "--pcs 12" "--layout x" "--steps 3-1" "--map nope" \
    "--preset hbm4" "--refresh off" ""; do
    set +e; "$A" export hbm-trace "$tmp/s.atr" $bad > /dev/null 2>&1; rc=$?; set -e
    [ "$rc" -eq 2 ] || { echo "'$bad' (no -o) exited $rc, not 2"; exit 1; }
    set +e; "$A" export hbm-trace "$tmp/s.atr" $bad -o "$tmp/bad" > /dev/null 2>&1; rc=$?; set -e
    [ -z "$bad" ] || [ "$rc" -eq 2 ] || { echo "'$bad' exited $rc, not 2"; exit 1; }
done
"$A" capture test --records 20 -o "$tmp/t.atr" > /dev/null 2>&1
set +e; "$A" export hbm-trace "$tmp/t.atr" -o "$tmp/t" > /dev/null 2>&1; rc=$?; set -e
[ "$rc" -eq 3 ] || { echo "test-workload trace exited $rc, not 3"; exit 1; }

if ! [ -x "$PY" ]; then
    echo "SKIP: $PY missing for the line-by-line address check"
    exit 77
fi
"$A" dump --type salca_select --hex "$tmp/s.atr" > "$tmp/sel.jsonl"
"$PY" - "$tmp/sel.jsonl" "$tmp/ex/ramulator.trace" "$tmp/ex/dramsim3.trace" \
    "$tmp/xor/dramsim3.trace" <<'EOF'
import json, re, sys

jobs = []
for line in open(sys.argv[1]):
    r = json.loads(line)["record"]
    if r.get("method", 0) != 0:
        continue
    b = bytes.fromhex(r["sel"])
    idx, v, sh, prev = [], 0, 0, -1
    for x in b:  # LEB128 deltas: first index, then gap - 1 (formats/varint.h)
        v |= (x & 127) << sh
        sh += 7
        if x < 128:
            prev = v if prev < 0 else prev + v + 1
            idx.append(prev)
            v, sh = 0, 0
    assert len(idx) == r["count"], (len(idx), r["count"])
    jobs.append((r.get("l", 0), r.get("h", 0), idx))

pat = {"ramulator": re.compile(r"^LD 0x([0-9a-f]+)$"),
       "dramsim3": re.compile(r"^0x([0-9a-f]+) READ ([0-9]+)$")}

def check(path, fmt, pcmap):
    lines = open(path).read().split("\n")
    assert lines[-1] == "", "no final newline"
    lines = lines[:-1]
    n = 0
    tok = 0
    for l, h, idx in jobs:
        for i in idx:
            want = pcmap(l, h, i)
            bgs = []
            for r in range(8):
                m = pat[fmt].match(lines[n])
                if not m:
                    sys.exit("%s line %d: bad '%s'" % (path, n + 1, lines[n]))
                a = int(m.group(1), 16)
                # bits: 5 byte, 5 column, 4 PC, 2 bank group, 2 bank, row
                if a & 31 or (a >> 10) & 15 != want:
                    sys.exit("%s line %d: PC %d, token %d wants %d" %
                             (path, n + 1, (a >> 10) & 15, i, want))
                if fmt == "dramsim3" and int(m.group(2)) != tok:  # 16 tokens / 16 cycles
                    sys.exit("%s line %d: cycle %s, want %d" % (path, n + 1, m.group(2), tok))
                bgs.append((a >> 14) & 3)
                n += 1
            # kv_bg: K0 V0 K1 V1 ...: K in bank group 2s, V in 2s + 1
            if bgs[0::2] != [bgs[0]] * 4 or bgs[1::2] != [bgs[0] + 1] * 4 or bgs[0] % 2:
                sys.exit("%s token %d: bank groups %s" % (path, i, bgs))
            tok += 1
    if n != len(lines):
        sys.exit("%s: %d lines, %d expected" % (path, len(lines), n))

mod = lambda l, h, i: i % 16
xor = lambda l, h, i: (i % 16) ^ ((i // 16) % 16) ^ (h % 16)
check(sys.argv[2], "ramulator", mod)
check(sys.argv[3], "dramsim3", mod)
check(sys.argv[4], "dramsim3", xor)
EOF
echo "hbm_export: ok"
