#!/usr/bin/env bash
# DiSC memory plan (docs/models.md#disc-memory-plan): --dry-run prints the plan and exits 0
# when it fits, 3 when not; the paper's 2048 px shape fits 8 GiB by spilling the ST masks; a
# tiny 512 px capture forced to spill masks and CTR block outputs by a small --mem-limit
# writes the same records as the run that holds everything, and leaves no spill file.
set -u
A=${ACCELTRACE:?}
fail=0
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
bad() { echo "FAIL $*"; fail=1; }

"$A" capture disc --model pixart-sigma-xl --image-size 2048 --mem-limit 8GiB --dry-run \
    > "$tmp/plan" 2> "$tmp/err"
rc=$?; [ "$rc" = 0 ] || bad "dry-run 2048 px at 8GiB: exit $rc $(cat "$tmp/err")"
grep -Eq "^  st masks +1 bit +14 GiB +512 MiB +spill file$" "$tmp/plan" || bad "mask line: $(cat "$tmp/plan")"
grep -Eq "^  ctr block outputs +f32 .* memory$" "$tmp/plan" || bad "ctr line held: $(cat "$tmp/plan")"
grep -q "planned: fits$" "$tmp/plan" || bad "2048 px plan does not fit 8 GiB"
[ -e "$tmp/x.atr" ] && bad "dry-run wrote a trace"
"$A" capture disc --model pixart-sigma-xl --image-size 2048 --mem-limit 1GiB --dry-run \
    > "$tmp/plan1" 2> "$tmp/err"
rc=$?; [ "$rc" = 3 ] || bad "dry-run at 1GiB: exit $rc, want 3"
grep -q "does not fit$" "$tmp/plan1" || bad "1 GiB plan: $(cat "$tmp/plan1")"
grep -q "the memory plan needs .* held, above --mem-limit 1 GiB" "$tmp/err" || bad "1 GiB message: $(cat "$tmp/err")"

# tiny at 512 px: everything held (the default limit) vs both spilled (190 MiB: the weights,
# activations and trajectories of about 178 MiB stay, the masks and block outputs go)
"$A" capture disc --model tiny --image-size 512 --mem-limit 190MiB --dry-run > "$tmp/plan2"
rc=$?; [ "$rc" = 0 ] || bad "tiny dry-run at 190MiB: exit $rc"
[ "$(grep -c ' spill file$' "$tmp/plan2")" = 2 ] || bad "tiny plan spills two items: $(cat "$tmp/plan2")"
run() { # name, extra options
    local n=$1; shift
    mkdir -p "$tmp/$n"
    "$A" capture disc --model tiny --image-size 512 --steps 3 --threads 2 --no-compare-dense \
        --keep-masks "blocks=0,11;steps=1,2;heads=0,5" "$@" -o "$tmp/$n/t.atr" 2> "$tmp/$n.err"
    local rc=$?; [ "$rc" = 0 ] || bad "capture $n: exit $rc $(cat "$tmp/$n.err")"
    "$A" dump "$tmp/$n/t.atr" | tail -n +2 | sed 's/"offset":[0-9]*,//' > "$tmp/$n.jsonl"
}
run held
run spilled --mem-limit 190MiB
[ -s "$tmp/held.jsonl" ] || bad "empty dump"
grep -q "spill file" "$tmp/held.err" && bad "the held run spilled"
# masks 12 blocks x 6 heads x 1024 rows x 16 words x 8 B = 9 MiB, block outputs 18 MiB
grep -q "^disc: spill file 27 MiB" "$tmp/spilled.err" || bad "spilled run: $(cat "$tmp/spilled.err")"
grep -q '"disc_mask"' "$tmp/held.jsonl" || bad "no mask records in the dump"
cmp -s "$tmp/held.jsonl" "$tmp/spilled.jsonl" || bad "records differ with spilling"
ls -A "$tmp/spilled" | grep -qv '^t.atr$' && bad "files left next to the output: $(ls -A "$tmp/spilled")"
exit $fail
