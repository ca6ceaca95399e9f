#!/usr/bin/env bash
# The container format has one source, formats/trace_format.tab (docs/trace-format.md
# #format-source), with /usr/bin/python3:
#  a. formats/trace_format.h, python/acceltrace/_format.py and _version.py equal what
#     scripts/gen_trace_format.py makes from the table and common/version.h now;
#  b. every reader message of the table is printed by the C code of traces/, and the
#     Python reader takes its texts from the table;
#  c. the version is written only in common/version.h (python/ holds no literal of it
#     but the generated _version.py) and the example dump of docs/trace-format.md is the
#     bytes of tests/golden/ok/raw.atr;
#  d. a generated corpus of edge cases (varints with redundant continuation bytes, 10 and
#     11 bytes, payload_len at and past 1 GiB, cut frames, bad CRC, codec, reserved, type,
#     flags, major, zstd payloads cut, doubled, skippable, with a bad checksum) read by
#     `acceltrace dump` and the Python package: both accept or both reject with the same
#     message, and as the format says.
set -u
A=${ACCELTRACE:?}
PY=/usr/bin/python3
[ -x "$PY" ] || { echo "SKIP: no /usr/bin/python3"; exit 77; }
for m in numpy google.protobuf zstandard xxhash; do
    "$PY" -c "import $m" 2> /dev/null || { echo "SKIP: python module $m missing (scripts/deps.sh)"; exit 77; }
done
fail=0
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
"$PY" tests/python/check_format.py fresh messages version || fail=1
"$PY" tests/python/format_corpus.py "$tmp/corpus" "$A" || fail=1
# the freshness check catches a stale output: change the table in a copy and look
mkdir -p "$tmp/copy/formats" "$tmp/copy/python/acceltrace" "$tmp/copy/scripts" "$tmp/copy/common"
cp formats/trace_format.tab formats/trace_format.h "$tmp/copy/formats/"
cp python/acceltrace/_format.py python/acceltrace/_version.py "$tmp/copy/python/acceltrace/"
cp scripts/gen_trace_format.py "$tmp/copy/scripts/"; cp common/version.h "$tmp/copy/common/"
sed -i 's/^const MINOR 0$/const MINOR 1/' "$tmp/copy/formats/trace_format.tab"
if (cd "$tmp/copy" && "$PY" scripts/gen_trace_format.py check 2> "$tmp/stale.err"); then
    echo "FAIL a changed table was not reported stale"; fail=1
elif ! grep -q "stale generated file 'formats/trace_format.h'" "$tmp/stale.err"; then
    echo "FAIL stale message: $(cat "$tmp/stale.err")"; fail=1
fi
(cd "$tmp/copy" && "$PY" scripts/gen_trace_format.py c && "$PY" scripts/gen_trace_format.py py)
grep -q '^#define TRACE_FORMAT_MINOR 1$' "$tmp/copy/formats/trace_format.h" &&
    grep -q '^MINOR = 1$' "$tmp/copy/python/acceltrace/_format.py" ||
    { echo "FAIL one table edit did not reach both outputs"; fail=1; }
[ $fail -eq 0 ] && echo "python_format: all checks passed"
exit $fail
