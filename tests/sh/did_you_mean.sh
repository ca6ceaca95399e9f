#!/usr/bin/env bash
# Names a user types wrong get the closest real one (common/suggest.h) or the list, and
# inputs that cannot fit are refused with their reason (README "Command-line grammar"):
#  - dump --type, config keys (file, JSON path, line, column kept), grid keys (list and
#    range axes), config sub-commands, model names (config show, replay --model, "model");
#  - a config's cross-key error ("dpu_count must be a power of two") keeps the file, JSON
#    path, line and column of the key, also through "extends", and names the grid value
#    that made it in a sweep;
#  - plot: --y of no count or metric exits 2 listing them, --where and --x of an unknown key
#    exit 2 with the closest key, RESULTS/results.csv stands for its folder, another file
#    is refused asking for the folder;
#  - energy with a table of another model's counts exits 3 and leaves the folder unchanged;
#  - model kura --budget with no shape that fits exits 2 naming the smallest area.
set -u
A=${ACCELTRACE:?}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
C="$ROOT/configs"
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
cd "$T"
fail=0
expect() { # description, expected exit, message (fixed string), command...
    local what=$1 want=$2 msg=$3 rc=0
    shift 3
    "$@" > out.txt 2> err.txt || rc=$?
    if [ "$rc" != "$want" ]; then
        echo "FAIL $what: exit $rc, want $want: $(cat err.txt)"; fail=1
    elif ! grep -Fq -- "$msg" err.txt; then
        echo "FAIL $what: message '$(cat err.txt)' lacks '$msg'"; fail=1
    fi
}
"$A" capture salca --length 512 --steps 2 --layers 1 --heads 2 --kv-heads 1 -q -o S.atr > /dev/null ||
    { echo "FAIL capture"; exit 1; }

# 1. record types, config and grid keys, sub-commands
expect "dump --type" 2 "unknown record type 'salca_selct'; did you mean 'salca_select'?" \
    "$A" dump --type salca_selct S.atr
expect "dump --type far off" 2 "(one of: header, " "$A" dump --type zzzzzzzz S.atr
printf '{\n  "model": "disc",\n  "dpu_cout": 64\n}\n' > typo.json
expect "config key" 3 "unknown key 'dpu_cout' for model 'disc' at \$.dpu_cout ('typo.json' line 3 column 3); did you mean 'dpu_count'?" \
    "$A" config check typo.json
printf '{"model": "disc", "qqqqqqqq": 4}\n' > far.json
expect "config key far off" 3 "'acceltrace config show disc' lists the keys" "$A" config check far.json
printf '{"dpu_cuont": [2, 4]}\n' > grid.json
expect "grid key (list)" 3 "unknown key 'dpu_cuont' for model 'disc' ('grid.json' \$.dpu_cuont[0] line 1 column 16); did you mean 'dpu_count'?" \
    "$A" sweep grid.json --hw "$C/disc-a100-matched.json"
printf '{"dpu_cuont": {"range": [2, 8, 2]}}\n' > range.json
expect "grid key (range)" 3 "did you mean 'dpu_count'?" "$A" sweep range.json --hw "$C/disc-a100-matched.json"
expect "config sub-command" 2 "unknown sub-command 'shwo'; did you mean 'show'?" "$A" config shwo disc
expect "config show model" 2 "unknown model 'dics'; did you mean 'disc'?" "$A" config show dics
expect "replay --model" 2 "unknown model 'salac'; did you mean 'salca'?" "$A" replay S.atr --model salac -o X
printf '{"model": "kur"}\n' > model.json
expect "config model" 3 "unknown model 'kur'; did you mean 'kura'?" "$A" config check model.json

# 2. cross-key errors keep file, path, line and column
printf '{\n  "model": "disc",\n  "dpu_count": 48\n}\n' > pow2.json
expect "cross-key check" 3 "dpu_count must be a power of two >= 2 at \$.dpu_count ('pow2.json' line 3 column 3)" \
    "$A" config check pow2.json
printf '{\n  "extends": "pow2.json",\n  "vpu_simds": 64\n}\n' > child.json
expect "cross-key check through extends" 3 "at \$.dpu_count ('./pow2.json' line 3 column 3)" \
    "$A" config check ./child.json
printf '{\n  "extends": "pow2.json",\n\n    "dpu_count": 24\n}\n' > over.json
expect "cross-key check, the overriding file" 3 "at \$.dpu_count ('over.json' line 4 column 5)" \
    "$A" config check over.json
printf '{"dpu_count": [64, 48]}\n' > pow2grid.json
expect "cross-key check of a grid value" 3 "sweep config 1: dpu_count must be a power of two >= 2 (dpu_count = 48, value 1 of its axis in 'pow2grid.json' \$.dpu_count[1] line 1 column 20)" \
    "$A" sweep pow2grid.json --hw "$C/disc-a100-matched.json" --list

# 3. plot names and paths
"$A" replay S.atr --hw "$C/salca-hbm2.json" --sweep "$C/salca-sweep.json" -q -o R ||
    { echo "FAIL replay"; exit 1; }
expect "plot --y" 2 "unknown count or metric 'nosuch' (the results have: cycles, " \
    "$A" plot R --y nosuch -q -o P
[ -e P ] && { echo "FAIL plot --y nosuch made its folder"; fail=1; }
expect "plot --y close" 2 "did you mean 'speedup_vs_dense'?" "$A" plot R --y speedup_vs_dens -q -o P
expect "plot --where" 2 "unknown --where key 'windw'; did you mean 'window'?" \
    "$A" plot R --where windw=128 -q -o P
expect "plot --x" 2 "unknown --x config key 'windw'; did you mean 'window'?" \
    "$A" plot R --x windw -q -o P
expect "plot --where, no row" 2 "no results row matches" "$A" plot R --where window=7 -q -o P
expect "plot a file" 2 "'R/manifest.json' is a file: give the results folder" \
    "$A" plot R/manifest.json -q -o P
"$A" plot R/results.csv --y cycles -q -o P1 || { echo "FAIL plot R/results.csv: exit $?"; fail=1; }
"$A" plot R --y cycles -q -o P2 || { echo "FAIL plot R: exit $?"; fail=1; }
for f in P2/*.dat; do
    cmp -s "$f" "P1/$(basename "$f")" || { echo "FAIL plot of results.csv differs: $f"; fail=1; }
done

# 4. energy with another model's table: refused, nothing changed
cp -r R R0
expect "energy, another model's table" 3 "names count 'mac', which no row of 'R/results.csv' has" \
    "$A" energy R --table "$C/disc-energy.json"
for f in results.csv results.jsonl; do
    cmp -s "R/$f" "R0/$f" || { echo "FAIL energy changed $f"; fail=1; }
done
expect "energy of a CSV, another model's table" 3 "which no row of 'R/salca_steps.csv' has" \
    "$A" energy R/salca_steps.csv --table "$C/disc-energy.json" -o x.csv
[ -e x.csv ] && { echo "FAIL energy wrote x.csv"; fail=1; }
"$A" energy R --table "$C/salca-energy.json" -q || { echo "FAIL energy with its own table"; fail=1; }

# 5. a budget nothing fits
expect "model kura --budget 2" 2 "no shape fits --budget 2 mm^2: the smallest of --shapes, H5W5, takes 2.161 mm^2" \
    "$A" model kura --budget 2
[ -s out.txt ] && { echo "FAIL budget 2 printed a result: $(cat out.txt)"; fail=1; }
[ "$fail" = 0 ] && echo ok
exit "$fail"
