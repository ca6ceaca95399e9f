#!/usr/bin/env bash
# `acceltrace report` reads each trace's header once per run (docs/performance.md, "Trace
# reads in the demo"), however many figures and headline numbers name it and however the
# path is spelled: a kura trace replayed into two folders under two spellings of its path
# (k/kura.atr and ./k/../k/kura.atr) gives headline rows in both folders that name the
# trace's capture settings, and, with strace present, the report opens the trace once
# (three times per folder before the header cache).
set -u
A=${ACCELTRACE:?}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
cd "$T"
fail=0
bad() { echo "FAIL $*"; fail=1; }

mkdir -p k
"$A" capture kura --size 24x24 --steps 20 -q -o k/kura.atr > /dev/null 2>&1 || { bad "capture"; exit 1; }
"$A" replay k/kura.atr --hw "$ROOT/configs/kura-h20w5.json" -q -o k/replay > /dev/null 2>&1 \
    || { bad "replay"; exit 1; }
"$A" replay ./k/../k/kura.atr --hw "$ROOT/configs/kura-h20w5.json" -q -o k/replay2 \
    > /dev/null 2>&1 || { bad "replay 2"; exit 1; }
"$A" report k -o "$T/r.html" 2> "$T/log" || { cat "$T/log"; bad "report"; exit 1; }
# both folders' headline rows carry the trace's settings (read from its header)
for d in replay replay2; do
    n=$(grep -cF "($d/, hw kura-h20w5, trace h=24 w=24 t=20" "$T/r.md")
    [ "$n" -ge 1 ] || bad "no headline of $d names the trace settings: $(grep "$d/" "$T/r.md" | head -2)"
done
if command -v strace > /dev/null && strace -f -o /dev/null true 2> /dev/null; then
    # LeakSanitizer (make asan) cannot run under ptrace, so it is off in the traced runs
    strace -f -e trace=openat -o "$T/st" env ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" "$A" report k -o "$T/r2.html" > /dev/null 2>&1 \
        || bad "report under strace"
    n=$(grep -v ENOENT "$T/st" | grep -c 'kura\.atr"')
    [ "$n" -eq 1 ] || bad "the report opened kura.atr $n times, want 1"
    cmp -s "$T/r.md" "$T/r2.md" || bad "a second report run wrote other text"
else
    echo "SKIP: strace not usable here; the open count is not checked"
    [ $fail -eq 0 ] && exit 77
fi
[ $fail -eq 0 ] && echo "report trace opens ok"
exit $fail
