#!/usr/bin/env bash
# Provenance: every capture's header names what made its data
# (TraceHeader.source, source_detail; docs/trace-format.md), and `info` shows it:
# seeded and checkpoint DiT weights (with the file's sha256), the synthetic and model Salca
# sources, the Kuramoto generator, the test records.
set -u
A=${ACCELTRACE:?}
fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
bad() { echo "FAIL $*"; fail=1; }
field() { "$A" info "$1" | awk -v k="$2" '$1 == k { $1 = ""; sub(/^ /, ""); print; exit }'; }
expect() { # TRACE SOURCE DETAIL-SUBSTRING
    local s d
    s=$(field "$1" source); d=$(field "$1" source_detail)
    [ "$s" = "$2" ] || bad "$1: source '$s', expected '$2'"
    case "$d" in *"$3"*) ;; *) bad "$1: source_detail '$d' lacks '$3'" ;; esac
    "$A" info --json "$1" | grep -q "\"source\":\"$2\"" || bad "$1: info --json lacks source $2"
}

"$A" capture test -q -o "$tmp/t.atr" || bad "capture test"
expect "$tmp/t.atr" synthetic "test records"

"$A" capture disc --model micro --threads 1 -q --save-weights "$tmp/w.safetensors" \
    -o "$tmp/d.atr" 2> /dev/null || bad "capture disc seeded"
expect "$tmp/d.atr" seeded "seed:"
"$A" capture disc --model micro --threads 1 -q --weights "$tmp/w.safetensors" \
    -o "$tmp/dw.atr" 2> /dev/null || bad "capture disc checkpoint"
sha=$(sha256sum "$tmp/w.safetensors" | cut -d' ' -f1)
expect "$tmp/dw.atr" checkpoint "w.safetensors sha256 $sha"

"$A" capture salca --source synthetic --steps 2 --length 2048 -q -o "$tmp/s.atr" > /dev/null 2>&1 ||
    bad "capture salca synthetic"
expect "$tmp/s.atr" synthetic "synthetic Q/K/V source"
"$A" capture salca --source model --steps 2 --length 512 -q -o "$tmp/sm.atr" > /dev/null 2>&1 ||
    bad "capture salca model"
expect "$tmp/sm.atr" seeded "tiny Llama"

"$A" capture kura --size 12x10 --steps 4 -q -o "$tmp/k.atr" > /dev/null || bad "capture kura"
expect "$tmp/k.atr" synthetic "generator "

# an older trace without the field says so rather than inventing a source
"$A" info tests/golden/ok/small.atr | grep -q "^source .*not recorded" ||
    bad "old trace: no 'not recorded' line"
[ $fail = 0 ] && echo "provenance: ok"
exit $fail
