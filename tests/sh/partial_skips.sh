#!/usr/bin/env bash
# A test that cannot run one of its parts says so: it ends SKIP (exit 77, "SKIP: reason")
# or fails, never passes. Checked on the tests that had such parts: capture_writers.sh
# without a tmpfs (mount made to fail), replay_shards_parallel.sh without GNU parallel (a
# PATH without it), and the fuzz corpus driver on an empty, missing or unreadable corpus.
set -u
A=${ACCELTRACE:?}
BUILD=${BUILD:-build}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }

# the corpus driver: no inputs or a path it cannot read is a failure
drv=$ROOT/$BUILD/fuzz/fuzz_config
[ -x "$drv" ] || { echo "FAIL: no $drv (make all)"; exit 1; }
mkdir "$T/empty"
"$drv" "$T/empty" > "$T/d.out" 2>&1 && bad "corpus driver passed an empty corpus: $(cat "$T/d.out")"
grep -q "no inputs" "$T/d.out" || bad "corpus driver, empty corpus: $(cat "$T/d.out")"
"$drv" "$T/nosuch" > "$T/d.out" 2>&1 && bad "corpus driver passed a missing corpus"
grep -q "cannot read '$T/nosuch'" "$T/d.out" || bad "corpus driver, missing: $(cat "$T/d.out")"
printf '{}' > "$T/one"
"$drv" "$T/one" > "$T/d.out" 2>&1 || bad "corpus driver on one input: $(cat "$T/d.out")"

# a PATH whose `mount` fails, and one without GNU parallel (everything else linked)
mkdir "$T/nomount" "$T/nopar"
printf '#!/bin/sh\necho "mount: not allowed" >&2\nexit 32\n' > "$T/nomount/mount"
chmod +x "$T/nomount/mount"
IFS=: read -r -a dirs <<< "$PATH"
for d in "${dirs[@]}"; do
    for f in "$d"/*; do
        n=$(basename "$f")
        [ "$n" = parallel ] || [ -e "$T/nopar/$n" ] || ln -s "$f" "$T/nopar/$n" 2> /dev/null
    done
done
PATH="$T/nopar" command -v parallel > /dev/null && bad "parallel still on the reduced PATH"

# skipped SCRIPT PATH: the script ends 77 with a SKIP line
skipped() {
    local rc=0
    (cd "$ROOT" && PATH="$2" bash "tests/sh/$1") > "$T/$1.out" 2>&1 || rc=$?
    [ "$rc" = 77 ] || bad "$1 without its tool: exit $rc, want 77 ($(tail -5 "$T/$1.out"))"
    grep -q '^SKIP: ' "$T/$1.out" || bad "$1: no SKIP line: $(tail -5 "$T/$1.out")"
}
skipped capture_writers.sh "$T/nomount:$PATH"
skipped replay_shards_parallel.sh "$T/nopar"
[ $fail = 0 ] && echo "ok"
exit $fail
