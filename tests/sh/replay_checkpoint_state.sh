#!/usr/bin/env bash
# Checkpoint state is checked before it is used (docs/models.md#checkpoints-replay-engine-convention): a replay
# stopped at a checkpoint, whose saved model state is then edited (a flag that is not 0
# or 1, a float sum out of range, counters that disagree) with the CRC recomputed, is
# refused on the rerun with exit 3 and a message naming the checkpoint file, the model,
# the config and what is wrong; the unedited checkpoint resumes and ends with the rows of
# an uninterrupted replay. Models: disc, salca and kura (instance and shared state).
set -u
A=${ACCELTRACE:?}
PY=/usr/bin/python3
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
F=$ROOT/tests/fuzz/ckpt
[ -x "$PY" ] || { echo "SKIP: no /usr/bin/python3"; exit 77; }
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }

# stop MODEL TRACE DIR: a replay stopped at its first checkpoint after 6 records
stop() {
    "$A" replay "$2" --model "$1" -q --checkpoint-every 0 --checkpoint-records 6 \
        --group-records 1 --time-limit 0 -o "$3" > /dev/null 2>&1
    [ -f "$3/replay.ckpt" ] || { echo "FAIL: $1: no checkpoint in $3"; exit 1; }
}

# edit DIR WHAT: rewrites DIR/replay.ckpt with one change to instance 0 (or the shared
# state), CRC recomputed (layout in replay/engine.h)
edit() {
    PYTHONPATH="$ROOT/python" "$PY" - "$1/replay.ckpt" "$2" <<'PYEOF' || exit 1
import struct, sys
from acceltrace._crc32c import crc32c
path, what = sys.argv[1:3]
b = bytearray(open(path, "rb").read())
pos = 8
for _ in range(3):
    pos += 4 + struct.unpack_from("<I", b, pos)[0]
pos += 16
(n,) = struct.unpack_from("<Q", b, pos)
(shared_len,) = struct.unpack_from("<Q", b, pos + 8)
shared = pos + 16
pos = shared + shared_len + 8
pos += 4 + struct.unpack_from("<I", b, pos)[0]
(state_len,) = struct.unpack_from("<Q", b, pos)
st = pos + 8
end = st + state_len
if what == "disc_flag":        # have_step[0]
    b[st] = 7
elif what == "disc_cell":      # r_p of the last cell (56-byte cells, then n_masks, n_pend)
    assert struct.unpack_from("<Q", b, end - 8)[0] == 0, "pending masks in the state"
    struct.pack_into("<d", b, end - 16 - 56, 1e300)
elif what == "disc_masks":     # n_masks
    struct.pack_into("<Q", b, end - 16, struct.unpack_from("<Q", b, end - 16)[0] + 1)
elif what == "salca_flag":     # any, after two (scheduler, step start) pairs of 80 + 8 bytes
    b[st + 176] = 5
elif what == "salca_total":    # tot.cycles: any, cur_t, cur_l, cur (112 bytes), tot
    o = st + 176 + 1 + 4 + 4 + 112 + 8
    struct.pack_into("<Q", b, o, struct.unpack_from("<Q", b, o)[0] + 1)
elif what == "kura_size":      # h = 0 with steps counted
    assert struct.unpack_from("<Q", b, st + 16)[0] > 0, "no kura step before the checkpoint"
    struct.pack_into("<Q", b, st, 0)
elif what == "kura_shared":    # the map flag of the shared state
    b[shared] = 3
else:
    sys.exit("unknown edit " + what)
struct.pack_into("<I", b, len(b) - 4, crc32c(bytes(b[:-4])))
open(path, "wb").write(b)
PYEOF
}

# refused NAME MODEL TRACE EDIT WHAT: the rerun after EDIT exits 3 naming file and WHAT
refused() {
    local name=$1 model=$2 trace=$3 rc=0
    stop "$model" "$trace" "$T/$name"
    edit "$T/$name" "$4"
    "$A" replay "$trace" --model "$model" -q -o "$T/$name" > /dev/null 2> "$T/$name.err" || rc=$?
    [ "$rc" = 3 ] || bad "$name: exit $rc, want 3 ($(cat "$T/$name.err"))"
    grep -qF "checkpoint '$T/$name/replay.ckpt': " "$T/$name.err" &&
        grep -qF -- "$5" "$T/$name.err" || bad "$name: message: $(cat "$T/$name.err") (want: $5)"
}
refused disc_flag disc "$F/disc.atr" disc_flag \
    "model 'disc' cannot load config 0: bad disc state at byte 0: a step flag is not 0 or 1"
refused disc_cell disc "$F/disc.atr" disc_cell "a cell sum is out of range"
refused disc_masks disc "$F/disc.atr" disc_masks "the mask counts disagree"
refused salca_flag salca "$F/salca.atr" salca_flag "bad salca state at byte 176: the step flag is not 0 or 1"
refused salca_total salca "$F/salca.atr" salca_total "bad salca state: the totals are not the sum of the"
refused kura_size kura "$F/kura.atr" kura_size "bad kura state: "
refused kura_shared kura "$F/kura.atr" kura_shared "bad shared kura state at byte 0: the map flag is not 0 or 1"

# the same checkpoints unedited resume and give the uninterrupted rows
for m in disc salca kura; do
    "$A" replay "$F/$m.atr" --model "$m" -q -o "$T/$m.full" 2> /dev/null || bad "$m: full replay"
    stop "$m" "$F/$m.atr" "$T/$m.resumed"
    "$A" replay "$F/$m.atr" --model "$m" -o "$T/$m.resumed" 2> "$T/$m.err" ||
        bad "$m: resume: $(cat "$T/$m.err")"
    grep -q "resumed from checkpoint" "$T/$m.err" || bad "$m: did not resume: $(cat "$T/$m.err")"
    cmp -s "$T/$m.full/results.csv" "$T/$m.resumed/results.csv" || bad "$m: rows differ"
done
[ $fail = 0 ] && echo "ok"
exit $fail
