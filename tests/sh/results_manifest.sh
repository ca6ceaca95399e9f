#!/usr/bin/env bash
# Results folders carry manifest.json (trace, base config, grid, energy table, version,
# shard); a rerun with any of them changed is refused naming what changed, before anything
# in the folder is touched, so a second sweep never appends its config_index 0..N again
# (docs/design.md#trust-interfaces-and-python). The same run again is accepted and does nothing.
set -euo pipefail
A=${ACCELTRACE:?}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
cd "$T"
fail() { echo "FAIL: $*"; exit 1; }
"$A" capture test --records 50 -o t.atr 2> /dev/null
"$A" capture test --records 60 -o u.atr 2> /dev/null
H="$ROOT/configs/test-count.json"
G="$ROOT/configs/test-sweep.json"
"$A" replay t.atr --hw "$H" --sweep "$G" -q -o r 2> /dev/null
[ -f r/manifest.json ] || fail "no manifest.json"
grep -q '"n_configs": 100' r/manifest.json || fail "manifest lacks n_configs"
grep -q "\"trace_hash\": \"$(head -c 200 r/results.jsonl | sed 's/.*"trace_hash":"\([0-9a-f]*\)".*/\1/')\"" \
    r/manifest.json || fail "manifest trace hash differs from the rows'"
cp -r r before
refused() { # expect exit 2 naming $1, folder untouched
    local want=$1; shift
    rc=0; "$A" replay "$@" -q -o r 2> log.txt || rc=$?
    [ "$rc" = 2 ] || fail "'$*' exited $rc, want 2: $(cat log.txt)"
    grep -q "results folder 'r' was made by another run: .*$want" log.txt ||
        fail "'$*' does not name '$want': $(cat log.txt)"
    cmp before/results.jsonl r/results.jsonl && cmp before/results.csv r/results.csv &&
        cmp before/manifest.json r/manifest.json || fail "'$*' touched the folder"
}
# a second sweep (4 configs, config_index 0..3 again)
printf '{"scale": [1, 2], "min_step": [0, 5]}\n' > g2.json
refused "sweep grid" t.atr --hw "$H" --sweep g2.json
# the same grid written differently is the same grid
printf '{"min_step": [0, 3, 7, 10, 20, 30, 40, 50, 60, 99],\n "scale": {"range": [1, 10, 1]},\n "doc": "a 100-config sweep of the count test model: 10 scales x 10 step filters"}\n' > g3.json
"$A" replay t.atr --hw "$H" --sweep g3.json -q -o r 2> log.txt || fail "reordered grid refused: $(cat log.txt)"
printf '{"extends": "%s", "spin": 1}\n' "$H" > h2.json
refused "base config (--hw)" t.atr --hw h2.json --sweep "$G"
refused "trace" u.atr --hw "$H" --sweep "$G"
refused "energy table (none, now '$ROOT/configs/test-energy.json')" t.atr --hw "$H" --sweep "$G" \
    --energy "$ROOT/configs/test-energy.json"
grep -q "acceltrace energy DIR --table E.json" log.txt || fail "no hint to apply the table"
refused "shard (none, now 1/2)" t.atr --hw "$H" --sweep "$G" --shard 1/2
# the same run: accepted, nothing to do, no row twice
"$A" replay t.atr --hw "$H" --sweep "$G" -o r 2> log.txt
grep -q "replayed 0 of 100 configs (100 already done)" log.txt || fail "rerun: $(cat log.txt)"
[ "$(wc -l < r/results.jsonl)" = 100 ] || fail "rows appended"
# a folder with rows but no manifest (an older acceltrace's) is refused
rm r/manifest.json
rc=0; "$A" replay t.atr --hw "$H" --sweep "$G" -q -o r 2> log.txt || rc=$?
[ "$rc" = 2 ] && grep -q "has rows but no manifest.json" log.txt || fail "no manifest: $rc $(cat log.txt)"
echo ok
