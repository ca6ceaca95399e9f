#!/usr/bin/env bash
# Damaged traces through the CLI: replay, analyze, export, dump
# and verify on damaged copies of small real captures.
#   1. a middle frame whose record-type byte reads 10 (index) is a data error (exit 3)
#      naming the file and the frame, for every verb (it used to end the trace silently);
#   2. a missing or damaged index (cut at a frame boundary, trailer cut, index frame with a
#      bad checksum) is refused with exit 3 by replay, analyze, model and export, accepted with
#      --allow-partial and a warning that -q does not hide; dump and verify report it;
#   3. a payload changed with a recomputed crc fails replay and analyze with exit 3
#      (content hash mismatch), not only verify;
#   4. an index whose keys disagree with the records (tests/golden/bad/index_key.atr)
#      fails verify and replay, and replay --allow-partial warns.
set -u
A=${ACCELTRACE:?}
PY=${PYTHON:-/usr/bin/python3}
[ -x "$PY" ] || { echo "SKIP: no $PY to damage the traces"; exit 77; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0
bad() { echo "FAIL $*"; fail=1; }

# damage.py OP IN OUT [N]: frames are walked from offset 16 (12-byte headers) up to the
# trailer; the crc32c of a changed payload is recomputed, so only the content hash tells.
cat > "$tmp/damage.py" <<'EOF'
import struct, sys
op, src, dst = sys.argv[1:4]
n = int(sys.argv[4]) if len(sys.argv) > 4 else 0
b = bytearray(open(src, 'rb').read())
end = len(b) - 16 if b[-8:] == b'ACCTRIDX' else len(b)
frames, off = [], 16
while off + 12 <= end:
    ln = struct.unpack_from('<I', b, off)[0]
    frames.append((off, ln, b[off + 5]))
    off += 12 + ln
def crc32c(data):
    c = 0xffffffff
    for x in data:
        c ^= x
        for _ in range(8):
            c = (c >> 1) ^ (0x82f63b78 & -(c & 1))
    return c ^ 0xffffffff
if op == 'count':
    print(len(frames)); sys.exit(0)
if op == 'last':               # the last frame of record type n before the index
    print(max(i for i, f in enumerate(frames) if f[2] == n)); sys.exit(0)
if op == 'settype':            # frame n's record type byte reads 10
    b[frames[n][0] + 5] = 10
elif op == 'cut':              # cut before frame n (n = index frame: no index, no trailer)
    b = b[:frames[n][0]]
elif op == 'cuttrailer':       # the index frame complete, half a trailer
    b = b[:len(b) - 8]
elif op == 'badindex':         # a byte of the index frame's payload flipped (bad crc)
    o, ln, t = frames[-1]
    assert t == 10
    b[o + 12 + ln // 2] ^= 0x01
elif op == 'payload':          # frame n's raw payload changed, crc recomputed
    o, ln, t = frames[n]
    assert b[o + 4] == 0, 'raw frames only'
    p = o + 12
    blob = b.find(b'\x2a\x40', p, p + ln)  # TestRecord.blob (64 bytes): change a byte in it
    at = blob + 10 if blob >= 0 else p + ln // 2
    b[at] ^= 0x01
    struct.pack_into('<I', b, o + 8, crc32c(b[p:p + ln]))
open(dst, 'wb').write(b)
EOF
dmg() { "$PY" "$tmp/damage.py" "$@" || { echo "FAIL damage.py $*"; exit 1; }; }

# expect RC FILE-PATTERN VERB... : runs the command, checks its exit status and, for
# nonzero statuses and warnings, that stderr names the trace
expect() {
    local want=$1 name=$2; shift 2
    "$@" > "$tmp/out" 2> "$tmp/err"; local rc=$?
    if [ "$rc" -ne "$want" ]; then bad "exit $rc (want $want): $*"; sed 's/^/    /' "$tmp/err"; fi
    if [ "$want" -ne 0 ] && ! grep -q "'[^']*$name'" "$tmp/err"; then
        bad "message does not name '$name': $*"; sed 's/^/    /' "$tmp/err"
    fi
}

# small real captures: test records (raw frames, count model), salca (analyze conflicts,
# model salca), kura (export tiles), disc (analyze hash)
"$A" capture test --records 40 --per-step 10 --level 0 -o "$tmp/t.atr" > /dev/null || exit 1
"$A" capture salca --source synthetic -q --length 1024 --steps 2 --layers 2 --heads 2 --threads 1 \
    -o "$tmp/s.atr" > /dev/null || exit 1
"$A" capture kura -q --size 16x16 --steps 6 -o "$tmp/k.atr" > /dev/null || exit 1
"$A" capture disc --model micro --threads 1 -q -o "$tmp/d.atr" > /dev/null || exit 1
# frames, the header and the index included
nt=$(dmg count "$tmp/t.atr" -); ns=$(dmg count "$tmp/s.atr" -); nk=$(dmg count "$tmp/k.atr" -)

# each run writes a fresh folder (a rerun into one would skip its configs)
runs=0
replay() { runs=$((runs + 1)); "$A" replay "$1" --model count -j 1 -o "$tmp/res.$runs" "${@:2}"; }
conflicts() { runs=$((runs + 1)); "$A" analyze conflicts "$1" --map mod -o "$tmp/cf.$runs" "${@:2}"; }
tiles() { runs=$((runs + 1)); "$A" export tiles "$1" --shape 4x4 -o "$tmp/kt.$runs" "${@:2}"; }

# the intact captures pass everywhere
expect 0 t.atr replay "$tmp/t.atr" -q
expect 0 s.atr conflicts "$tmp/s.atr"
expect 0 k.atr tiles "$tmp/k.atr"
expect 0 d.atr "$A" analyze hash "$tmp/d.atr" -o "$tmp/dh"

# 1. a middle frame typed as the index: exit 3 naming file and frame, even with
# --allow-partial; verify, dump and info too
mid=$((nt / 2))
dmg settype "$tmp/t.atr" "$tmp/t_mid.atr" "$mid"
for args in "" "--allow-partial" "-q"; do
    expect 3 t_mid.atr replay "$tmp/t_mid.atr" $args
    grep -q "index frame before the end of the trace (.*'[^']*t_mid.atr' frame $mid at offset" \
        "$tmp/err" || bad "replay $args on t_mid.atr: message without frame $mid"
done
expect 3 t_mid.atr "$A" dump "$tmp/t_mid.atr"
expect 3 t_mid.atr "$A" verify "$tmp/t_mid.atr"
grep -q "frame $mid " "$tmp/err" || bad "verify t_mid.atr: no frame $mid"
expect 3 t_mid.atr "$A" info "$tmp/t_mid.atr"
dmg settype "$tmp/s.atr" "$tmp/s_mid.atr" $((ns / 2))
expect 3 s_mid.atr conflicts "$tmp/s_mid.atr"
grep -q "frame $((ns / 2)) " "$tmp/err" || bad "analyze on s_mid.atr: no frame number"
dmg settype "$tmp/k.atr" "$tmp/k_mid.atr" $((nk / 2))
expect 3 k_mid.atr tiles "$tmp/k_mid.atr"
# the example: a disc_step frame (type 2) is one bit from the index's type (10)
ds=$(dmg last "$tmp/d.atr" - 2)
dmg settype "$tmp/d.atr" "$tmp/d_mid.atr" "$ds"
expect 3 d_mid.atr "$A" analyze hash "$tmp/d_mid.atr" -o "$tmp/dh_mid"
grep -q "frame $ds " "$tmp/err" || bad "analyze hash on d_mid.atr: no frame $ds"
# the same flip in a trace without an index (a killed capture) is no end either
dmg cut "$tmp/t_mid.atr" "$tmp/t_mid_noidx.atr" $((nt - 1))
expect 3 t_mid_noidx.atr replay "$tmp/t_mid_noidx.atr" --allow-partial

# 2. missing or damaged index: refused by default, read with --allow-partial and a warning
dmg cut "$tmp/t.atr" "$tmp/t_cut.atr" $((nt - 1))
dmg cuttrailer "$tmp/t.atr" "$tmp/t_trl.atr"
dmg badindex "$tmp/t.atr" "$tmp/t_bix.atr"
dmg cut "$tmp/s.atr" "$tmp/s_cut.atr" $((ns - 1))
dmg badindex "$tmp/k.atr" "$tmp/k_bix.atr"
for f in t_cut t_trl t_bix; do
    expect 3 $f.atr replay "$tmp/$f.atr" -q
    grep -q "damaged trace" "$tmp/err" || bad "replay $f.atr: refusal does not say damaged"
    for q in "" -q; do
        expect 0 $f.atr replay "$tmp/$f.atr" --allow-partial $q
        grep -q "^acceltrace: warning: damaged trace.*'[^']*$f.atr'" "$tmp/err" ||
            bad "replay --allow-partial $q $f.atr: no warning naming the file"
        [ "$(grep -c 'warning: damaged' "$tmp/err")" -eq 1 ] ||
            bad "replay $f.atr: warned more than once"
    done
    expect 0 $f.atr "$A" dump "$tmp/$f.atr"
    grep -q "^acceltrace: warning: .*'[^']*$f.atr'" "$tmp/err" || bad "dump $f.atr: no warning"
    [ "$(wc -l < "$tmp/out")" -eq $((nt - 1)) ] || bad "dump $f.atr: not every record"
    expect 3 $f.atr "$A" verify "$tmp/$f.atr"
done
# every record is replayed from a trace cut at the index
expect 0 t_cut.atr replay "$tmp/t_cut.atr" --allow-partial -q -o "$tmp/res_cut"
grep -q ',40,40,' "$tmp/res_cut/results.csv" || bad "replay t_cut.atr: not 40 records"
expect 3 s_cut.atr conflicts "$tmp/s_cut.atr"
expect 0 s_cut.atr conflicts "$tmp/s_cut.atr" --allow-partial
grep -q "^acceltrace: warning: damaged trace.*s_cut.atr" "$tmp/err" || bad "analyze: no warning"
expect 3 s_cut.atr "$A" model salca --trace "$tmp/s_cut.atr"
expect 0 s_cut.atr "$A" model salca --trace "$tmp/s_cut.atr" --allow-partial
grep -q "^acceltrace: warning: damaged trace.*s_cut.atr" "$tmp/err" || bad "model: no warning"
expect 3 k_bix.atr tiles "$tmp/k_bix.atr"
expect 0 k_bix.atr tiles "$tmp/k_bix.atr" --allow-partial
grep -q "^acceltrace: warning: damaged trace.*k_bix.atr" "$tmp/err" || bad "export: no warning"

# 3. a payload changed with its crc recomputed: the content hash catches it
dmg payload "$tmp/t.atr" "$tmp/t_pay.atr" "$mid"
expect 3 t_pay.atr replay "$tmp/t_pay.atr"
grep -q "content hash mismatch" "$tmp/err" || bad "replay t_pay.atr: no content hash mismatch"
expect 3 t_pay.atr replay "$tmp/t_pay.atr" --allow-partial
expect 3 t_pay.atr "$A" verify "$tmp/t_pay.atr"
"$A" capture salca --source synthetic -q --length 1024 --steps 2 --layers 2 --heads 2 --threads 1 --zstd-level 0 \
    -o "$tmp/s0.atr" > /dev/null || exit 1
dmg payload "$tmp/s0.atr" "$tmp/s_pay.atr" $((ns / 2))
expect 3 s_pay.atr conflicts "$tmp/s_pay.atr"
grep -q "content hash mismatch" "$tmp/err" || bad "analyze s_pay.atr: no content hash mismatch"
dmg payload "$tmp/k.atr" "$tmp/k_pay.atr" $((nk / 2))
expect 3 k_pay.atr tiles "$tmp/k_pay.atr"
grep -q "content hash mismatch" "$tmp/err" || bad "export k_pay.atr: no content hash mismatch"

# 4. index keys that disagree with the records
g=tests/golden/bad/index_key.atr
if [ -f "$g" ]; then
    expect 3 index_key.atr "$A" verify "$g"
    grep -q "layer 12345 in the index" "$tmp/err" || bad "verify $g: no layer 12345"
    expect 3 index_key.atr replay "$g"
    expect 0 index_key.atr replay "$g" --allow-partial -q
    grep -q "^acceltrace: warning: damaged trace.*layer 12345" "$tmp/err" ||
        bad "replay $g: no warning"
    # the filter follows the records, not the damaged index
    [ "$("$A" dump --layer 12345 "$g" 2>/dev/null | wc -l)" -eq 0 ] ||
        bad "dump --layer 12345 found a frame"
else
    bad "missing $g"
fi

[ $fail -eq 0 ] && echo "damaged traces ok"
exit $fail
