#!/usr/bin/env bash
# Python interop: tests/interop/read_trace.py reads traces with
# Debian's python3-protobuf and python3-zstandard only and must print the same record
# counts per type as `acceltrace info`, and checks each index's content hash (XXH3-128 through
# python3-xxhash). Skipped (exit 77, counted by tests/run.sh) when
# the modules are missing.
set -u
A=${ACCELTRACE:?}
BUILD=${BUILD:-build}
PY=/usr/bin/python3
desc="$BUILD/gen/formats/trace.desc"
if ! [ -x "$PY" ] || ! "$PY" -c 'import google.protobuf, zstandard, xxhash' 2>/dev/null; then
    echo "SKIP: $PY lacks google.protobuf, zstandard or xxhash (apt-get install python3-protobuf python3-zstandard python3-xxhash)"
    exit 77
fi
if ! [ -f "$desc" ]; then
    echo "SKIP: $desc missing (made by 'make test': protoc-c --descriptor_set_out)"
    exit 77
fi
fail=0
for t in tests/interop/every_type.atr tests/golden/ok/*.atr; do
    want=$("$A" info "$t" | awk '/^record type/ {on=1; next} on && NF == 4 && $1 != "total" {print $1, $2}')
    got=$("$PY" tests/interop/read_trace.py "$t" "$desc") || { echo "FAIL read_trace.py $t"; fail=1; continue; }
    if [ "$want" != "$got" ]; then
        echo "FAIL $t: counts differ"; echo "acceltrace info:"; echo "$want"; echo "python:"; echo "$got"; fail=1
    fi
done
# a damaged trace is refused by both
"$PY" tests/interop/read_trace.py tests/golden/bad/bad_crc.atr "$desc" >/dev/null 2>&1
[ $? -eq 3 ] || { echo "FAIL read_trace.py accepted bad_crc.atr"; fail=1; }
# a wrong XXH3-128 in an intact index
"$PY" tests/interop/read_trace.py tests/golden/bad/index_hash.atr "$desc" >/dev/null 2>&1
[ $? -eq 3 ] || { echo "FAIL read_trace.py accepted index_hash.atr"; fail=1; }
[ $fail -eq 0 ] && echo "python interop ok"
exit $fail
