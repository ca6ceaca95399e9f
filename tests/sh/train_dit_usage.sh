#!/usr/bin/env bash
# scripts/train_dit.py refuses impossible recipe settings before it loads anything
# (docs/models.md#trained-small-shipped-weights-measured-not-paper-numbers): --min-snr below 0, --ema-decay outside (0, 1) and
# --scales below 128 px or not numbers exit 2 with a message naming the option; a
# --decode without an output PNG exits 2 as well.
# Skipped (exit 77) when /usr/bin/python3 lacks numpy.
set -u
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
if ! /usr/bin/python3 -c "import numpy" 2> /dev/null; then
    echo "SKIP: /usr/bin/python3 lacks numpy (scripts/deps.sh)"; exit 77
fi
fail() { echo "FAIL: $*"; exit 1; }
want2() { # want2 TEXT ARGS...: exit 2 and TEXT in the message, nothing written to --out
    local text=$1; shift
    /usr/bin/python3 scripts/train_dit.py --out "$T/out" "$@" > "$T/o" 2> "$T/e"
    local rc=$?
    [ $rc = 2 ] || fail "$*: exit $rc, want 2 ($(cat "$T/e"))"
    grep -q -- "$text" "$T/e" || fail "$*: message '$(cat "$T/e")' lacks '$text'"
    [ ! -e "$T/out" ] || fail "$*: $T/out was created"
}
want2 "--min-snr -1" --min-snr -1
want2 "--ema-decay 1" --ema-decay 1
want2 "--ema-decay 0" --ema-decay 0
want2 "--scales '64'" --scales 64
want2 "--scales '256,x'" --scales 256,x
want2 "output PNG" --decode "$T/none.f32"
echo "ok"
