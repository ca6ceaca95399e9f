#!/usr/bin/env bash
# The one command-line grammar, walked over every verb and sub-verb that `acceltrace --help`
# and `acceltrace VERB --help` list: `help VERB [SUB]` equals `VERB [SUB] --help`; -q and
# --quiet are accepted; --opt=value is accepted (and a KEY=VALUE value is not split); an
# unknown option exits 2 with "did you mean"; --json output parses as JSON; the bash
# completion of `acceltrace completion bash` knows every verb, sub-verb and the options
# their help lists.
set -u
A=${ACCELTRACE:?}
PY=/usr/bin/python3
fail=0
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
bad() { echo "FAIL $*"; fail=1; }

# One option that takes a value per target, with a value valid for it, for --opt=value.
# config has no option that takes a value.
declare -A eq_opt=(
    [info]="--threads=2" [dump]="--limit=1" [verify]="--threads=2" [recover]="--output=x.atr"
    [replay]="--hw=x.json" [sweep]="--hw=x.json" [merge]="--output=x" [energy]="--table=e.json"
    [plot]="--where=mode=all" [report]="--title=T" [demo]="--only=test"
    [analyze/hash]="--units=8,16" [analyze/disc]="--trace=x.atr"
    [analyze/conflicts]="--pcs=16" [model/kura]="--size=96x96" [model/salca]="--d=128"
    [export/tiles]="--shape=20x5" [export/hbm-trace]="--steps=0-1" [reproduce]="--threads=2"
    [export/timeline]="--config=0" [import/masks]="--model=micro" [import/selections]="--context=9"
    [model/gpu]="--workload=dit-xl-2" [validate/gpu]="--set=configs/gpu/validation.csv"
    [export/scalesim]="--step=1" [export/chakra]="--mode=ctr"
)

# Every workload of the capture registry (`capture --list`) has -o FILE.atr: its --opt=value case.
captures=$("$A" capture --list) || bad "capture --list: exit $?"
[ -n "$captures" ] || bad "capture --list printed no workload"
for w in $captures; do eq_opt[capture/$w]="--output=x.atr"; done

# The completion script, sourced once: comp WORDS... prints the candidates for the last word.
"$A" completion bash > "$tmp/comp.bash" || bad "completion bash exit $?"
# shellcheck disable=SC1091
source "$tmp/comp.bash" || bad "completion script does not source"
comp() {
    COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); COMPREPLY=()
    _acceltrace
    printf '%s\n' "${COMPREPLY[@]}" | sort | paste -sd' ' -
}

# The targets: verbs, and "verb/sub" for the verbs that dispatch to sub-verbs.
verbs=$("$A" --help | sed -n '/^verbs:/,/^$/p' | awk 'NF && !/^verbs:/ {print $1}')
[ -n "$verbs" ] || bad "no verbs in acceltrace --help"
targets=()
for v in $verbs; do
    case $v in capture|analyze|model|export|import|validate) subs=$("$A" $v --list) ;; *) subs="";; esac
    # the listing of `VERB --help` names the same sub-verbs as `VERB --list`, in its order
    listed=$("$A" $v --help | sed -n '/^[a-z]*s:$/,/^$/p' | awk 'NF && !/:$/ {print $1}')
    [ "$listed" = "$subs" ] || [ -z "$subs" ] || bad "$v --list ($subs) differs from its --help ($listed)"
    if [ -n "$subs" ]; then
        for s in $subs; do targets+=("$v/$s"); done
        # an unknown sub-verb: exit 2 naming the closest one
        first=$(echo $subs | awk '{print $1}')
        "$A" $v "${first}x" > /dev/null 2> "$tmp/err"; rc=$?
        [ $rc -eq 2 ] && grep -q "did you mean '$first'" "$tmp/err" || bad "$v ${first}x: exit $rc, $(cat "$tmp/err")"
        [ "$(comp acceltrace $v '')" = "$(echo --help --list $subs | tr ' ' '\n' | sort | paste -sd' ' -)" ] \
            || bad "completion of '$v' sub-verbs: $(comp acceltrace $v '')"
    else
        targets+=("$v")
    fi
done
[ "$(comp acceltrace rep)" = "replay report reproduce" ] || bad "completion of 'rep': $(comp acceltrace rep)"
"$A" replau > /dev/null 2> "$tmp/err"; rc=$?
[ $rc -eq 2 ] && grep -q "did you mean 'replay'" "$tmp/err" || bad "unknown verb: exit $rc"
"$A" help replau > /dev/null 2> "$tmp/err"; rc=$?
[ $rc -eq 2 ] && grep -q "did you mean 'replay'" "$tmp/err" || bad "help of an unknown verb: exit $rc"

for t in "${targets[@]}"; do
    read -r -a w <<< "${t/\// }"  # "capture/disc" -> (capture disc)
    name="${w[*]}"
    "$A" "${w[@]}" --help > "$tmp/help" 2>&1; rc=$?
    [ $rc -eq 0 ] || bad "$name --help: exit $rc"
    grep -q "^usage: acceltrace $name" "$tmp/help" || bad "$name --help: no usage line"
    "$A" help "${w[@]}" > "$tmp/help2" 2>&1; rc=$?
    [ $rc -eq 0 ] && cmp -s "$tmp/help" "$tmp/help2" || bad "help $name differs from $name --help (exit $rc)"
    for q in -q --quiet; do
        "$A" "${w[@]}" $q --help > "$tmp/hq" 2>&1; rc=$?
        [ $rc -eq 0 ] && cmp -s "$tmp/help" "$tmp/hq" || bad "$name $q not accepted (exit $rc): $(head -c 300 "$tmp/hq")"
    done
    # the options completion offers: every option the help text lists must be among them
    opts=$(comp acceltrace "${w[@]}" -)
    [ -n "$opts" ] || bad "no completion for $name"
    for o in $(grep -E '^ +-' "$tmp/help" | grep -oE -- '--[a-z][a-z0-9-]*[a-z0-9]' | sort -u); do
        [ "$o" = --syn ] && continue  # "--syn-KEY X" of capture salca stands for its --syn-* rows
        case " $opts " in *" $o "*) ;; *) bad "$name: '$o' of its help is not in the grammar";; esac
    done
    # an unknown option: a typo of a real one
    real=$(echo "$opts" | tr ' ' '\n' | grep -E -- '^--[a-z]{3,}' | grep -v -- '--help' | head -n 1)
    [ -n "$real" ] || real=--help
    "$A" "${w[@]}" "${real}x" > /dev/null 2> "$tmp/err"; rc=$?
    [ $rc -eq 2 ] && grep -q "did you mean '--" "$tmp/err" || bad "$name ${real}x: exit $rc, $(cat "$tmp/err")"
    # --opt=value
    if [ -n "${eq_opt[$t]:-}" ]; then
        "$A" "${w[@]}" "${eq_opt[$t]}" --help > "$tmp/he" 2>&1; rc=$?
        [ $rc -eq 0 ] && cmp -s "$tmp/help" "$tmp/he" || bad "$name ${eq_opt[$t]} not accepted (exit $rc): $(head -c 300 "$tmp/he")"
    elif [ "$t" != config ]; then
        bad "$name: no --opt=value case in this test"
    fi
    case " $opts " in
    *" --json "*) ;;
    *) bad "$name has no --json";;
    esac
done

# --opt=value reaches the verb: the same trace info with and without it, one dumped record
"$A" info tests/golden/ok/small.atr > "$tmp/i1" && "$A" info --threads=2 tests/golden/ok/small.atr > "$tmp/i2"
cmp -s "$tmp/i1" "$tmp/i2" || bad "info --threads=2 differs"
[ "$("$A" dump --limit=1 tests/golden/ok/small.atr | wc -l)" -eq 1 ] || bad "dump --limit=1"
"$A" dump --limit=0x10 tests/golden/ok/small.atr > /dev/null || bad "dump --limit=0x10"
"$A" info --threads=abc tests/golden/ok/small.atr > /dev/null 2> "$tmp/err"; rc=$?
[ $rc -eq 2 ] && grep -q "needs an integer, not 'abc'" "$tmp/err" || bad "--threads=abc: exit $rc"
"$A" info --threads > /dev/null 2> "$tmp/err"; rc=$?
[ $rc -eq 2 ] && grep -q "needs a value" "$tmp/err" || bad "--threads without value: exit $rc"
"$A" plot x --mem-limit=lots -o y > /dev/null 2> "$tmp/err"; rc=$?
[ $rc -eq 2 ] && grep -q "needs a size" "$tmp/err" || bad "--mem-limit=lots: exit $rc"

# an old spelling still works, with a warning naming the new one
"$A" capture salca --mem-limit-gib=1 --help > /dev/null 2> "$tmp/err"; rc=$?
[ $rc -eq 0 ] && grep -q "deprecated: use --mem-limit XGiB" "$tmp/err" || bad "--mem-limit-gib: exit $rc"
"$A" help completion | grep -q "^usage: acceltrace completion bash" || bad "help completion"

# completion: sub-verbs and options
[ "$(comp acceltrace capture d)" = "disc" ] || bad "completion 'capture d': $(comp acceltrace capture d)"
[ "$(comp acceltrace replay --sh)" = "--shard" ] || bad "completion 'replay --sh'"
[ "$(comp acceltrace model kura --gr)" = "--grid" ] || bad "completion 'model kura --gr'"
[ "$(comp acceltrace capture salca --syn-c-l)" = "--syn-c-loc" ] || bad "completion of a legacy option"
[ "$(comp acceltrace help model k)" = "kura" ] || bad "completion 'help model k'"
[ "$(comp acceltrace config s)" = "show" ] || bad "completion 'config s'"
[ "$(comp acceltrace config show c)" = "count" ] || bad "completion 'config show c'"
[ "$(comp acceltrace replay t.atr --model sal)" = "salca" ] || bad "completion of --model"
[ "$(comp acceltrace info tests/golden/ok/small.at)" = "tests/golden/ok/small.atr" ] \
    || bad "completion of a file: $(comp acceltrace info tests/golden/ok/small.at)"

# --json of every verb that has it parses (and is one document)
json() { # description, command...
    local d=$1; shift
    "$@" > "$tmp/out.json" 2> "$tmp/err"; local rc=$?
    [ $rc -eq 0 ] || { bad "$d: exit $rc: $(head -c 300 "$tmp/err")"; return; }
    $PY -c 'import json,sys; json.load(sys.stdin)' < "$tmp/out.json" || bad "$d: output is not JSON"
    json_done+=" $d "
}
json_done=""
C=configs
json "info" "$A" info --json tests/golden/ok/small.atr
json "dump" "$A" dump --json tests/golden/ok/small.atr
$PY -c 'import json,sys; a=json.load(sys.stdin); assert len(a) == int(sys.argv[1]), len(a)' \
    "$(wc -l < tests/golden/ok/small.jsonl)" < <("$A" dump --json tests/golden/ok/small.atr) \
    || bad "dump --json is not one element per record"
json "verify" "$A" verify --json tests/golden/ok/small.atr
json "recover" "$A" recover --json tests/golden/ok/small.atr -o "$tmp/rec.atr"
json "config show" "$A" config show count --json
json "config list" "$A" config list --json
json "config check" "$A" config check --json $C/test-count.json
json "sweep" "$A" sweep $C/test-sweep.json --hw $C/test-count.json --json
"$A" capture test --records 200 -o "$tmp/t.atr" > /dev/null 2>&1 || bad "capture test"
json "replay" "$A" replay "$tmp/t.atr" --hw $C/test-count.json --sweep $C/test-sweep.json -q --json -o "$tmp/rep"
$PY -c 'import json,sys; j=json.load(sys.stdin); assert j["configs_run"] == j["configs_total"] > 0, j' \
    < "$tmp/out.json" || bad "replay --json counts"
for i in 1 2; do
    "$A" replay "$tmp/t.atr" --hw $C/test-count.json --sweep $C/test-sweep.json -q \
        --shard=$i/2 -o "$tmp/s$i" 2> /dev/null || bad "replay --shard=$i/2"
done
json "merge" "$A" merge "$tmp/s1" "$tmp/s2" --json -o "$tmp/merged"
json "energy" "$A" energy "$tmp/rep" --table $C/test-energy.json --json
json "plot" "$A" plot "$tmp/rep" --y=sum --json -o "$tmp/plots"
json "report" "$A" report "$tmp/plots" --json
json "demo" "$A" demo --list --json
json "model gpu" "$A" model gpu --workload pixart-sigma-xl --image-size 512 --json
json "validate gpu" "$A" validate gpu --json -o "$tmp/val"
json "model kura" "$A" model kura --grid --shapes 5,10 --json
json "model kura budget" "$A" model kura --budget=3 --json
json "model kura optimal-width" "$A" model kura --optimal-width --json
json "reproduce" "$A" reproduce kura -q --json -o "$tmp/repro"
$PY -c 'import json,sys; a=json.load(sys.stdin); assert a and all(r["status"] for r in a), a' \
    < "$tmp/out.json" || bad "reproduce --json rows"
json "capture test" "$A" capture test --records 50 --json -o "$tmp/c50.atr"
$PY -c 'import json,sys; j=json.load(sys.stdin); assert j["trace"]["records"] == 50 and j["trace"]["bytes"] > 0, j' \
    < "$tmp/out.json" || bad "capture test --json figures"
"$A" capture test -q --records 50 -o "$tmp/c50q.atr" 2> "$tmp/err" && [ ! -s "$tmp/err" ] \
    || bad "capture test -q is not quiet: $(cat "$tmp/err")"
json "capture kura" "$A" capture kura --size 10x10 --steps 5 -q --json -o "$tmp/k.atr"
$PY -c 'import json,sys; j=json.load(sys.stdin); assert j["reverse_steps"] == 4 and j["trace"]["records"] > 0, j' \
    < "$tmp/out.json" || bad "capture kura --json figures"
[ ! -s "$tmp/err" ] || bad "capture kura -q is not quiet: $(cat "$tmp/err")"
"$A" capture kura --size 10x10 --steps 5 --oracle-mem 4096 -q -o "$tmp/k2.atr" > /dev/null \
    || bad "capture kura --oracle-mem in plain bytes"
json "export tiles" "$A" export tiles "$tmp/k.atr" --shape 5x5 --json -o "$tmp/tiles"
$PY -c 'import json,sys; j=json.load(sys.stdin); assert j["tiles"] > 0 and "in.hex" in j["files"], j' \
    < "$tmp/out.json" || bad "export tiles --json figures"
json "capture disc" "$A" capture disc --model micro --steps 2 -q --json -o "$tmp/d.atr"
$PY -c 'import json,sys; j=json.load(sys.stdin); assert j["steps"] == 2 and j["trace"]["records"] > 0 \
    and j["flops"]["all"] < j["flops"]["dense"], j' < "$tmp/out.json" || bad "capture disc --json figures"
grep -q "^disc:" "$tmp/err" && bad "capture disc -q printed its summary"
json "analyze hash" "$A" analyze hash "$tmp/d.atr" --no-plots --json -o "$tmp/hash"
$PY -c 'import json,sys; j=json.load(sys.stdin); assert j["masks"] > 0 and "hash_row.csv" in j["files"], j' \
    < "$tmp/out.json" || bad "analyze hash --json figures"
"$A" replay "$tmp/d.atr" --hw $C/disc-a100-matched.json -q -o "$tmp/drep" > /dev/null 2>&1 \
    || bad "replay of the disc trace"
json "analyze disc" "$A" analyze disc "$tmp/drep" --trace "$tmp/d.atr" -q --json -o "$tmp/adisc"
$PY -c 'import json,sys; j=json.load(sys.stdin); assert "energy.csv" in j["files"], j' \
    < "$tmp/out.json" || bad "analyze disc --json files"
json "model salca" "$A" model salca --json --plot "$tmp/msalca"
$PY -c 'import json,sys; j=json.load(sys.stdin); assert j["b_att"] == 2048 and "pareto.csv" in j["files"], j' \
    < "$tmp/out.json" || bad "model salca --json figures"
[ "$($PY -c 'import json,sys; print(len(json.load(sys.stdin)) - 1)' < "$tmp/out.json")" = \
  "$("$A" model salca | wc -l)" ] || bad "model salca --json has not one member per line"
json "analyze conflicts" "$A" analyze conflicts --synthetic uniform --n 4096 --jobs 8 -q --json \
    -o "$tmp/conf"
$PY -c 'import json,sys; j=json.load(sys.stdin); assert j["jobs"] == 8 and "alpha.csv" in j["files"], j' \
    < "$tmp/out.json" || bad "analyze conflicts --json figures"
# the help of a verb that parses into a struct first runs nothing
"$A" model salca --help | grep -q "^b_pre=" && bad "model salca --help ran the model"
"$A" analyze conflicts --help 2>&1 | grep -q "^acceltrace:" && bad "analyze conflicts --help ran"
json "capture salca" "$A" capture salca --source synthetic -q --length 4096 --steps 3 --layers 2 --heads 2 --threads 1 \
    --methods salca --json -o "$tmp/s.atr"
$PY -c 'import json,sys; j=json.load(sys.stdin); assert j["selections"] > 0 and j["trace"]["records"] > 0 \
    and [m["name"] for m in j["methods"]] == ["salca"], j' < "$tmp/out.json" || bad "capture salca --json figures"
[ ! -s "$tmp/err" ] || bad "capture salca -q is not quiet: $(cat "$tmp/err")"
json "export hbm-trace" "$A" export hbm-trace "$tmp/s.atr" -q --json -o "$tmp/hbm"
$PY -c 'import json,sys; j=json.load(sys.stdin); assert j["requests"] > 0 and "jobs.csv" in j["files"], j' \
    < "$tmp/out.json" || bad "export hbm-trace --json figures"
[ ! -s "$tmp/err" ] || bad "export hbm-trace -q is not quiet: $(cat "$tmp/err")"
"$A" replay "$tmp/s.atr" --hw $C/salca-hbm2.json -q -o "$tmp/srep" 2> /dev/null
json "export timeline" "$A" export timeline "$tmp/srep" -q --json -o "$tmp/tl.json"
$PY -c 'import json,sys; j=json.load(sys.stdin); assert j["slices"] > 0 and j["bytes"] > 0, j' \
    < "$tmp/out.json" || bad "export timeline --json figures"
json "export scalesim" "$A" export scalesim "$tmp/d.atr" -q --json -o "$tmp/topo.csv"
$PY -c 'import json,sys; j=json.load(sys.stdin); assert j["layers"] > 0 and j["macs"] > 0, j' \
    < "$tmp/out.json" || bad "export scalesim --json figures"
json "export chakra" "$A" export chakra "$tmp/d.atr" -q --json -o "$tmp/d.et"
$PY -c 'import json,sys; j=json.load(sys.stdin); assert j["nodes"] > 0 and j["predicted_s"] > 0, j' \
    < "$tmp/out.json" || bad "export chakra --json figures"
$PY -c 'import numpy as np; np.savez("'"$tmp"'/m.npz", masks=np.eye(64, dtype=bool)[None, None, None].repeat(2, 1).repeat(4, 2)); np.savez("'"$tmp"'/sel.npz", selected=np.arange(8).reshape(1, 2, 2, 2))'
json "import masks" "$A" import masks "$tmp/m.npz" --model micro -q --json -o "$tmp/im.atr"
$PY -c 'import json,sys; j=json.load(sys.stdin); assert j["records"] == 8 and j["ones"] == 512, j' \
    < "$tmp/out.json" || bad "import masks --json figures"
[ ! -s "$tmp/err" ] || bad "import masks -q is not quiet: $(cat "$tmp/err")"
json "import selections" "$A" import selections "$tmp/sel.npz" --context 16 -q --json -o "$tmp/is.atr"
for t in "${targets[@]}"; do
    name="${t/\// }"
    case "$json_done" in *" $name "*) ;; *) bad "no --json check of '$name' in this test";; esac
done
[ $fail -eq 0 ] && echo "cli grammar ok: ${#targets[@]} verbs and sub-verbs"
exit $fail
