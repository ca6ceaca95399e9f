#!/usr/bin/env bash
# Several analyzers share one read of a trace (analysis/analyzer.h): `analyze disc --trace T
# --hash H` writes into H what `analyze hash T -o H` writes (every table and plot script
# byte for byte; manifest.json differs in its command line), and with strace present it
# reads from T less than half a trace more than `analyze disc` without --hash (the hash
# analyzer rides along), where a second pass would read the whole file again, and opens T
# once: the pairing check's reader feeds the pass and both manifests take T's hash and
# source from it.
set -u
A=${ACCELTRACE:?}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0
bad() { echo "FAIL $*"; fail=1; }

"$A" capture disc --model micro --steps 2 -q -o "$tmp/m.atr" > /dev/null 2>&1 || { bad "capture"; exit 1; }
"$A" replay "$tmp/m.atr" --hw configs/disc-a100-matched.json -q -o "$tmp/r" > /dev/null 2>&1 \
    || { bad "replay"; exit 1; }
"$A" analyze hash "$tmp/m.atr" -q -o "$tmp/h1" > /dev/null 2> "$tmp/e1" || bad "analyze hash: $(cat "$tmp/e1")"
"$A" analyze disc "$tmp/r" --trace "$tmp/m.atr" --hash "$tmp/h2" -q -o "$tmp/f2" > /dev/null \
    2> "$tmp/e2" || bad "analyze disc --hash: $(cat "$tmp/e2")"
"$A" analyze disc "$tmp/r" --trace "$tmp/m.atr" -q -o "$tmp/f1" > /dev/null 2>&1 || bad "analyze disc"

n=0
for f in "$tmp"/h1/*; do
    b=$(basename "$f")
    case $b in manifest.json|*.png|*.pdf|*.svg) continue;; esac
    cmp -s "$f" "$tmp/h2/$b" || bad "--hash's $b differs from analyze hash's"
    n=$((n + 1))
done
[ $n -ge 3 ] || bad "analyze hash wrote only $n comparable files"
grep -q hash_row.csv <(ls "$tmp/h2") || bad "--hash wrote no hash_row.csv"
[ "$(ls "$tmp/h1" | sort)" = "$(ls "$tmp/h2" | sort)" ] || bad "--hash wrote other files: $(ls "$tmp/h2")"
# the disc figures are the same with and without the hash riding along
for f in "$tmp"/f1/*.csv "$tmp"/f1/*.dat; do
    [ -e "$f" ] || continue
    cmp -s "$f" "$tmp/f2/$(basename "$f")" || bad "analyze disc's $(basename "$f") changed with --hash"
done
# usage: --hash without a trace
"$A" analyze disc "$tmp/r" --hash "$tmp/h3" -o "$tmp/f3" > /dev/null 2> "$tmp/e3"; rc=$?
[ $rc -eq 2 ] && grep -q -- "--hash needs a --trace" "$tmp/e3" || bad "--hash without --trace: exit $rc"

if command -v strace > /dev/null && strace -f -o /dev/null true 2> /dev/null; then
    # LeakSanitizer (make asan) cannot run under ptrace, so it is off in the traced runs
    # bytes read from m.atr (strace -y names each descriptor's file)
    bytes_read() {
        strace -f -y -e trace=read,pread64 -o "$tmp/st" env ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" "$@" > /dev/null 2>&1
        grep 'm\.atr>' "$tmp/st" | awk -F'= ' '{ s += $NF } END { print s + 0 }'
    }
    size=$(stat -c %s "$tmp/m.atr")
    with=$(bytes_read "$A" analyze disc "$tmp/r" --trace "$tmp/m.atr" --hash "$tmp/h4" -q -o "$tmp/f4")
    without=$(bytes_read "$A" analyze disc "$tmp/r" --trace "$tmp/m.atr" -q -o "$tmp/f5")
    [ "$without" -ge "$size" ] && [ $((with - without)) -lt $((size / 2)) ] \
        || bad "analyze disc reads $with bytes of the $size-byte trace with --hash, $without without"
    strace -f -e trace=openat -o "$tmp/so" env ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" "$A" analyze disc "$tmp/r" --trace "$tmp/m.atr" \
        --hash "$tmp/h6" -q -o "$tmp/f6" > /dev/null 2>&1 || bad "analyze disc under strace"
    opens=$(grep -v ENOENT "$tmp/so" | grep -c 'm\.atr"')
    [ "$opens" -eq 1 ] || bad "analyze disc --hash opened the trace $opens times, want 1"
    # the manifest written from the pass records what analyze hash's records (but the command)
    cmp -s <(grep -v '"command"' "$tmp/h1/manifest.json") \
        <(grep -v '"command"' "$tmp/h6/manifest.json") \
        || bad "--hash's manifest differs from analyze hash's: $(cat "$tmp/h6/manifest.json")"
else
    echo "note: strace not usable here; the open count is not checked"
fi
[ $fail -eq 0 ] && echo "shared pass ok: $n hash files equal"
exit $fail
