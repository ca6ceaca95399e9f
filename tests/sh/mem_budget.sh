#!/usr/bin/env bash
# Memory budgets: jobs estimate before they allocate and refuse above
# --mem-limit with one message shape, exit 3, leaving no file; a 10^6-config grid and a
# 16384x16384 kura capture are refused with an estimate at under 100 MB peak RSS; grid sizes
# are arithmetic (2x10^7 refused before anything is expanded); `replay --dry-run` prints the
# configs, passes, memory and time and writes nothing. Peak RSS is the child's ru_maxrss
# (getrusage through Debian's Python; /usr/bin/time -v is not installed by default).
set -u
A=${ACCELTRACE:-build/acceltrace}
PY=/usr/bin/python3
if ! [ -x "$PY" ] || ! "$PY" -c 'import resource, subprocess' 2>/dev/null; then
    echo "SKIP: $PY with resource/subprocess is needed to read the peak RSS"
    exit 77
fi
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }

# run NAME CMD...: runs CMD with stdout in $T/NAME.out, stderr in $T/NAME.err, sets $rc and
# $rss_kb (peak resident set of the child, KiB).
run() {
    local name=$1; shift
    rss_kb=$("$PY" - "$T/$name" "$@" <<'EOF'
import resource, subprocess, sys
base = sys.argv[1]
with open(base + ".out", "wb") as o, open(base + ".err", "wb") as e:
    r = subprocess.run(sys.argv[2:], stdout=o, stderr=e)
open(base + ".rc", "w").write(str(r.returncode))
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
EOF
)
    rc=$(cat "$T/$name.rc")
}

# The one shape: "<what> needs about N UNIT, above --mem-limit N UNIT; <hint>".
SHAPE='needs about [0-9.]+ (B|KiB|MiB|GiB|TiB), above --mem-limit [0-9.]+ (B|KiB|MiB|GiB|TiB); '
refused() { # name what-regex
    [ "$rc" = 3 ] || bad "$1: exit $rc, want 3 ($(cat "$T/$1.err"))"
    grep -Eq "^acceltrace: $2 $SHAPE" "$T/$1.err" || bad "$1: message: $(cat "$T/$1.err")"
}
small_rss() { # name
    [ "$rss_kb" -lt 102400 ] || bad "$1: peak RSS $rss_kb KiB while refusing (want < 100 MB)"
}

# capture kura --size 16384x16384 under the default limit (8 GiB): refused with an estimate
run kura_big "$A" capture kura --size 16384x16384 -o "$T/k.atr"
refused kura_big 'capture kura of a 16384x16384 map over 100 steps'
grep -q "above --mem-limit 8 GiB; use a smaller --size or raise --mem-limit" "$T/kura_big.err" ||
    bad "kura_big: default limit or hint: $(cat "$T/kura_big.err")"
# the estimate is the arithmetic of kura_capture_mem_estimate: far above the 8 GiB limit
est=$(sed -n 's/.*needs about \([0-9.]*\) GiB.*/\1/p' "$T/kura_big.err")
awk -v e="${est:-0}" 'BEGIN { exit !(e > 60 && e < 100) }' || bad "kura_big: estimate '$est' GiB"
small_rss kura_big
ls "$T"/k.atr* > /dev/null 2>&1 && bad "kura_big: a refused capture left $(ls "$T"/k.atr*)"
# an explicit limit, in any unit; a map that fits runs
run kura_lim "$A" capture kura --size 1024x1024 --mem-limit 512MiB -o "$T/k.atr"
refused kura_lim 'capture kura of a 1024x1024 map over 100 steps'
grep -q "above --mem-limit 512 MiB;" "$T/kura_lim.err" || bad "kura_lim: $(cat "$T/kura_lim.err")"
run kura_ok "$A" capture kura --size 16x16 --steps 4 --mem-limit 0.5GB -q -o "$T/k.atr"
[ "$rc" = 0 ] && [ -f "$T/k.atr" ] || bad "kura_ok: exit $rc ($(cat "$T/kura_ok.err"))"
for v in 12XB -1GiB abc 0x10 ""; do
    run kura_badlim "$A" capture kura --size 16x16 --mem-limit "$v" -o "$T/k2.atr"
    [ "$rc" = 2 ] || bad "capture kura --mem-limit '$v': exit $rc, want 2"
done

# the same shape from the other captures (disc, salca; salca keeps --mem-limit-gib)
run disc "$A" capture disc --model pixart-sigma-xl --image-size 2048 --mem-limit 1GiB \
    -o "$T/d.atr"
refused disc 'capture disc of pixart-sigma-xl at 2048 px'
run salca "$A" capture salca --length 2048 --steps 1 --mem-limit 1MB -o "$T/s.atr"
refused salca 'capture salca'
grep -q "above --mem-limit 977 KiB;" "$T/salca.err" || bad "salca: 1MB is 977 KiB: $(cat "$T/salca.err")"
run salca_gib "$A" capture salca --length 2048 --steps 1 --mem-limit-gib 0.001 -o "$T/s.atr"
refused salca_gib 'capture salca'
run testcap "$A" capture test --records 100000000 -o "$T/tc.atr"
refused testcap 'capture test of 100000000 records'
ls "$T"/d.atr* "$T"/s.atr* "$T"/tc.atr* > /dev/null 2>&1 && bad "a refused capture left a file"

# replay: a 33-byte grid of 10^6 configs in one pass (--batch) is refused at once with an
# estimate, without building anything and without a results folder
run trace "$A" capture test --records 50 -o "$T/t.atr"
[ "$rc" = 0 ] || bad "capture test: $(cat "$T/trace.err")"
printf '{"scale":{"range":[1,1000000,1]}}' > "$T/g6.json"
run grid6 "$A" replay "$T/t.atr" --model count --sweep "$T/g6.json" --batch 1000000 \
    --mem-limit 100MiB -o "$T/r6"
refused grid6 "replay of 1000000 'count' configs in passes of 1000000"
grep -Eq "needs about 2\.[0-9]+ GiB, above --mem-limit 100 MiB; use a smaller --batch" \
    "$T/grid6.err" || bad "grid6: estimate or hint: $(cat "$T/grid6.err")"
small_rss grid6
[ -e "$T/r6" ] && bad "grid6: a refused replay created its results folder"
run grid6b "$A" replay "$T/t.atr" --model count --sweep "$T/g6.json" --batch 500000 \
    --mem-limit 1GiB -o "$T/r6"
refused grid6b "replay of 1000000 'count' configs in passes of 500000"
small_rss grid6b
# without --batch the engine sizes the passes to the limit: the dry run shows them at once
run grid6d "$A" replay "$T/t.atr" --model count --sweep "$T/g6.json" --mem-limit 100MiB --dry-run
[ "$rc" = 0 ] || bad "grid6d: exit $rc ($(cat "$T/grid6d.err"))"
read -r passes batch < <(sed -n 's/^passes: \([0-9]*\) of up to \([0-9]*\) configs (what fits.*/\1 \2/p' \
    "$T/grid6d.out")
[ "${passes:-0}" -gt 1 ] && [ $((passes * batch)) -ge 1000000 ] &&
    [ $(((passes - 1) * batch)) -lt 1000000 ] || bad "grid6d: passes '$passes' x '$batch'"
small_rss grid6d
# ... and the engine batches exactly so (2x10^4 configs, 12 MiB)
printf '{"scale":{"range":[1,20000,1]}}' > "$T/g4.json"
run grid4d "$A" replay "$T/t.atr" --model count --sweep "$T/g4.json" --mem-limit 12MiB --dry-run
want=$(sed -n 's/^passes: \([0-9]*\) of up to.*/\1/p' "$T/grid4d.out")
run grid4 "$A" replay "$T/t.atr" --model count --sweep "$T/g4.json" --mem-limit 12MiB -j 1 \
    -o "$T/r4"
[ "$rc" = 0 ] || bad "grid4: exit $rc ($(cat "$T/grid4.err"))"
[ "${want:-0}" -gt 1 ] && grep -q "in $want pass(es)" "$T/grid4.err" ||
    bad "grid4: dry run said $want passes, the engine: $(cat "$T/grid4.err")"
[ "$(($(wc -l < "$T/r4/results.csv") - 1))" = 20000 ] || bad "grid4: rows missing"
# a limit below the program itself refuses even one instance per pass
run tiny "$A" replay "$T/t.atr" --model count --mem-limit 5MiB -o "$T/r5"
refused tiny "replay of 1 'count' configs, even one instance per pass,"
# 2x10^7 configs: counted from the ranges, refused before any value is expanded
printf '{"scale":{"range":[-1000000,999999,1]},"min_step":{"range":[0,9,1]}}' > "$T/g7.json"
run grid7 "$A" replay "$T/t.atr" --model count --sweep "$T/g7.json" -o "$T/r7"
[ "$rc" = 3 ] || bad "grid7: exit $rc"
grep -q "grid expands to 20000000 configs, more than 10000000" "$T/grid7.err" ||
    bad "grid7: $(cat "$T/grid7.err")"
small_rss grid7
run grid7s "$A" sweep "$T/g7.json" --model count
grep -q "grid expands to 20000000 configs" "$T/grid7s.err" || bad "sweep grid7: $(cat "$T/grid7s.err")"
small_rss grid7s

# replay --dry-run: configs and hashes (as `sweep` lists them), passes, memory, time (from
# the first records); writes nothing, even with -o
run dry "$A" replay "$T/t.atr" --hw configs/test-count.json --sweep configs/test-sweep.json \
    --batch 7 --dry-run -o "$T/rd"
[ "$rc" = 0 ] || bad "dry-run: exit $rc ($(cat "$T/dry.err"))"
[ -e "$T/rd" ] && bad "dry-run created its results folder"
grep -q '^configs: 100 (indices 0..99 of 100)$' "$T/dry.out" || bad "dry-run count: $(head -3 "$T/dry.out")"
"$A" sweep configs/test-sweep.json --hw configs/test-count.json | awk '{ print "config " $1 " " $2 }' \
    > "$T/want_hashes"
grep '^config [0-9]' "$T/dry.out" > "$T/got_hashes"
cmp -s "$T/want_hashes" "$T/got_hashes" || bad "dry-run hashes differ from 'sweep' ($(wc -l < "$T/got_hashes") lines)"
grep -q '^passes: 15 of up to 7 configs (--batch), 750 records read in all$' "$T/dry.out" ||
    bad "dry-run passes: $(grep passes "$T/dry.out")"
grep -Eq '^memory: about [0-9.]+ KiB per instance \(largest [0-9.]+ KiB\), 64 KiB shared and records in flight, 7.81 KiB index of finished configs, [0-9.]+ MiB for the run \(--mem-limit 8 GiB\)$' \
    "$T/dry.out" || bad "dry-run memory: $(grep memory "$T/dry.out")"
grep -Eq '^time: about [0-9.e+-]+ s \(all 50 records: .*16 configs timed; 15 pass\(es\), 100 configs on [0-9]+ threads' \
    "$T/dry.out" || bad "dry-run time: $(grep time "$T/dry.out")"
# a dry run of the 10^6 grid lists 1000 configs and counts the rest, in passes of at most
# 16384 instances (replay/engine.h ENGINE_MAX_BATCH_CONFIGS), whatever the limit
run dry6 "$A" replay "$T/t.atr" --model count --sweep "$T/g6.json" --dry-run
[ "$rc" = 0 ] || bad "dry-run 10^6: exit $rc ($(cat "$T/dry6.err"))"
[ "$(grep -c '^config [0-9]' "$T/dry6.out")" = 1000 ] || bad "dry-run 10^6 lists $(grep -c '^config [0-9]' "$T/dry6.out")"
grep -q '^\.\.\. 999000 more configs' "$T/dry6.out" || bad "dry-run 10^6: no count of the rest"
grep -q '^passes: 62 of up to 16384 configs' "$T/dry6.out" || bad "dry-run 10^6: $(grep passes "$T/dry6.out")"
small_rss dry6

[ $fail = 0 ] && echo "ok"
exit $fail
