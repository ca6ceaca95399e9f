#!/usr/bin/env bash
# Two replays into one results folder started together, 10 times:
# every outcome is one complete folder (each config once, equal to a lone run's files) plus
# either a clear refusal naming the folder (exit 2) or a second run that found everything
# done. Before the lock both wrote every row (200 rows of 100 configs).
set -euo pipefail
A=${ACCELTRACE:?}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
cd "$T"
"$A" capture test --records 200 -o t.atr 2> /dev/null
printf '{"extends": "%s/configs/test-count.json", "spin": 2000}\n' "$ROOT" > hw.json
G="$ROOT/configs/test-sweep.json"
"$A" replay t.atr --hw hw.json --sweep "$G" -j 1 -q -o ref 2> /dev/null
refused=0
for i in $(seq 1 10); do
    "$A" replay t.atr --hw hw.json --sweep "$G" -j 1 -o "r$i" 2> "a$i.log" & pa=$!
    "$A" replay t.atr --hw hw.json --sweep "$G" -j 1 -o "r$i" 2> "b$i.log" & pb=$!
    ra=0; wait $pa || ra=$?
    rb=0; wait $pb || rb=$?
    for x in "$ra a" "$rb b"; do
        set -- $x
        case $1 in
        0) ;;
        2) grep -Eq "results folder 'r$i' is in use by another writer( \(pid [0-9]+, acceltrace replay\))?: wait for it" "$2$i.log" ||
               { echo "trial $i: unclear refusal: $(cat "$2$i.log")"; exit 1; }
           refused=$((refused + 1)) ;;
        *) echo "trial $i: exit $1: $(cat "$2$i.log")"; exit 1 ;;
        esac
    done
    [ "$ra" = 0 ] || [ "$rb" = 0 ] || { echo "trial $i: both refused"; exit 1; }
    if [ "$ra" = 0 ] && [ "$rb" = 0 ]; then
        # serialised: the later one must have found all 100 done
        cat "a$i.log" "b$i.log" | grep -q "replayed 0 of 100 configs (100 already done)" ||
            { echo "trial $i: both ran: $(cat "a$i.log" "b$i.log")"; exit 1; }
    fi
    cmp ref/results.csv "r$i/results.csv" || { echo "trial $i: results.csv differs"; exit 1; }
    cmp ref/results.jsonl "r$i/results.jsonl" || { echo "trial $i: results.jsonl differs"; exit 1; }
done
echo "10 trials: $refused refusals, every folder complete"
echo ok
