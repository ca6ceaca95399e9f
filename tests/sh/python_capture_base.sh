#!/usr/bin/env bash
# The torch captures' interface (python/acceltrace/capture/base.py, docs/python.md "Torch
# capture interface") with a capture that needs no torch: the driver's header fields,
# records, progress, memory refusal and cleanup (tests/python/check_capture_base.py).
set -u
A=${ACCELTRACE:?}
PY=/usr/bin/python3
[ -x "$PY" ] || { echo "SKIP: no /usr/bin/python3"; exit 77; }
for m in numpy google.protobuf zstandard xxhash; do
    "$PY" -c "import $m" 2> /dev/null || { echo "SKIP: python module $m missing (scripts/deps.sh)"; exit 77; }
done
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
"$PY" tests/python/check_capture_base.py "$tmp" "$A"
