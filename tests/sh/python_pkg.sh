#!/usr/bin/env bash
# The Python package python/acceltrace (docs/python.md), with Debian's /usr/bin/python3:
#  a. `pip install ./python` offline into a venv that sees Debian's numpy/protobuf/zstandard/
#     xxhash (--system-site-packages; PEP 668 refuses system installs), import from there;
#     the shipped descriptor set equals a fresh `protoc-c` one from formats/*.proto;
#  b. the Python reader and the C reader agree on every record (frame, offset, type, keys and
#     every field against `acceltrace dump`) of small disc, salca, kura and test captures,
#     the golden traces and tests/interop/every_type.atr;
#  c. round trip C -> Python Writer -> C: `acceltrace verify` passes and `dump` equals the
#     original's (offsets aside: they depend on the zstd build; byte identity is reported);
#  d. the corruption matrix on tests/golden/ok/small.atr: truncation at every offset (with and
#     without allow_partial) and every bit flipped give no hang and no exception but
#     acceltrace.TraceError; every golden bad trace raises TraceError with the C reader's
#     message; at every cut, allow_partial=True reads exactly the frames `dump` prints;
#  load_results() of a count-model sweep equals its results.csv cell by cell, units included,
#  and is one type (acceltrace.Results) whose .to_pandas() DataFrame holds the same cells;
#  a missing trace or results file raises TraceNotFoundError (TraceError and
#  FileNotFoundError); to_numpy() of a mask --keep-masks did not select raises
#  MaskNotKeptError naming --keep-masks;
#  e. to_numpy() masks and token masks, indices() and kura phase maps equal the C records'
#     bytes decoded bit by bit, and the capture's row_nnz / nnz / n_kept / count / runs.
set -u
A=${ACCELTRACE:?}
PY=/usr/bin/python3
[ -x "$PY" ] || { echo "SKIP: no /usr/bin/python3"; exit 77; }
for m in numpy google.protobuf zstandard xxhash pandas venv pip; do
    "$PY" -c "import $m" 2> /dev/null || { echo "SKIP: python module $m missing (scripts/deps.sh)"; exit 77; }
done
command -v protoc-c > /dev/null || { echo "SKIP: protoc-c missing"; exit 77; }
fail=0
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
C=tests/python/check_pkg.py

# a. install offline, then use the installed package (not the source folder) below
"$PY" -m venv --system-site-packages "$tmp/venv" || { echo "FAIL venv"; exit 1; }
VPY="$tmp/venv/bin/python"
cp -r python "$tmp/src"   # build in a copy: the checkout gets no build/ or egg-info
PIP_NO_INDEX=1 "$VPY" -m pip install -q --no-build-isolation --no-index "$tmp/src" \
    > "$tmp/pip.log" 2>&1 || { echo "FAIL pip install ./python"; cat "$tmp/pip.log"; exit 1; }
where=$(cd "$tmp" && "$VPY" -c "import acceltrace; print(acceltrace.__file__)")
case "$where" in "$tmp/venv/"*) ;; *) echo "FAIL installed package not used: $where"; fail=1;; esac
run() { (cd "$tmp" && "$VPY" "$OLDPWD/$C" "$@") || fail=1; }
protoc-c -I. --include_imports --descriptor_set_out="$tmp/fresh.desc" formats/*.proto
run descriptor "$tmp/fresh.desc"
run crc

# b, c, e. small real captures and the committed traces
mkdir -p "$tmp/t"
"$A" capture test --records 300 --blob-bytes 256 -o "$tmp/t/test.atr" > /dev/null
"$A" capture test --records 40 --level 0 -o "$tmp/t/test_raw.atr" > /dev/null
"$A" capture disc --model micro --image-size 64 --steps 3 --threads 1 \
    --keep-masks 'blocks=all;heads=all;steps=all;batch=0' -o "$tmp/t/disc.atr" -q > /dev/null
"$A" capture salca --source synthetic --length 300 --steps 3 --layers 2 --heads 2 --kv-heads 1 --head-dim 32 \
    --k-min 8 -o "$tmp/t/salca.atr" -q > /dev/null
"$A" capture kura --size 16x16 --steps 10 --tile-streams 8x4 --threads 1 \
    -o "$tmp/t/kura.atr" -q > /dev/null
for f in tests/golden/ok/*.atr tests/interop/every_type.atr; do cp "$f" "$tmp/t/"; done
n=0
for f in "$tmp"/t/*.atr; do
    b=$(basename "$f" .atr)
    "$A" dump "$f" > "$tmp/$b.jsonl" || { echo "FAIL C dump $b"; fail=1; continue; }
    run agree "$f" "$tmp/$b.jsonl"
    case $b in disc|salca|kura) run arrays "$f" "$tmp/$b.jsonl" --some;; esac
    run copy "$f" "$tmp/$b.copy.atr"
    "$A" verify "$tmp/$b.copy.atr" > "$tmp/verify.out" 2>&1 \
        || { echo "FAIL verify of the Python copy of $b: $(cat "$tmp/verify.out")"; fail=1; }
    "$A" dump "$tmp/$b.copy.atr" > "$tmp/$b.copy.jsonl"
    strip() { sed 's/^\({"frame":[0-9]*,\)"offset":[0-9]*,/\1/' "$1"; }
    if ! diff <(strip "$tmp/$b.jsonl") <(strip "$tmp/$b.copy.jsonl") > /dev/null; then
        echo "FAIL dump of the Python copy of $b differs"; fail=1
    fi
    cmp -s "$f" "$tmp/$b.copy.atr" && same="byte-identical" || same="same records"
    echo "copy $b: verify ok, dump equal, $same"
    n=$((n + 1))
done
[ "$n" -ge 9 ] || { echo "FAIL only $n traces checked"; fail=1; }
run api "$tmp/t/salca.atr"
"$A" replay "$tmp/t/test.atr" --hw configs/test-count.json --sweep configs/test-sweep.json \
    -j 1 -o "$tmp/res" -q > /dev/null || { echo "FAIL replay for load_results"; fail=1; }
run results "$tmp/res"
run missing "$tmp"
"$A" capture disc --model micro --image-size 64 --steps 2 --threads 1 \
    --keep-masks 'blocks=0;heads=0;steps=all;batch=0' -o "$tmp/some_masks.atr" -q > /dev/null ||
    { echo "FAIL capture with some masks kept"; fail=1; }
run notkept "$tmp/some_masks.atr"

# d. damaged input
run bad "$PWD"/tests/golden/bad/*.atr
run matrix "$PWD/tests/golden/ok/small.atr"
run partial "$PWD/tests/golden/ok/small.atr" "$A"
# the same without python3-crcmod: the portable CRC-32C (numpy) decides every frame
mkdir -p "$tmp/nocrc/crcmod"
echo 'raise ImportError("blocked by python_pkg.sh: test the portable CRC-32C")' \
    > "$tmp/nocrc/crcmod/__init__.py"
export PYTHONPATH="$tmp/nocrc"
run crc
run agree "$tmp/t/disc.atr" "$tmp/disc.jsonl"
run matrix "$PWD/tests/golden/ok/small.atr"
unset PYTHONPATH

[ $fail -eq 0 ] && echo "python_pkg: all checks passed"
exit $fail
