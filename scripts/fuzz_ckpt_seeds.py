#!/usr/bin/env python3
"""Converts replay checkpoints (replay.ckpt, layout in replay/engine.h) into seeds of the
fuzz_ckpt target (tests/fuzz/fuzz_ckpt.c), both of its forms:

    scripts/fuzz_ckpt_seeds.py OUT_DIR MODEL CKPT...

MODEL is disc, salca, kura or a100 (the target's model order; gpu is a100's other name). Each checkpoint of one
instance gives "MODEL-state-N" (form 0: records, state, separator, shared state) and
"MODEL-body-N" (form 1: everything after the model name, without the CRC).
"""
import hashlib
import os
import struct
import sys

MODELS = ["disc", "salca", "kura", "a100"]
SEP = b"\0--part\0"


def parse(b):
    """(records, body, shared, states) of one checkpoint file."""
    if b[:8] != b"ATCKPT02":
        raise ValueError("not a checkpoint")
    pos = 8
    for _ in range(3):
        (n,) = struct.unpack_from("<I", b, pos)
        pos += 4 + n
    body_start = pos
    records, _position, n_inst, shared_len = struct.unpack_from("<QQQQ", b, pos)
    pos += 32
    shared = b[pos:pos + shared_len]
    pos += shared_len
    states = []
    for _ in range(n_inst):
        pos += 8
        (hl,) = struct.unpack_from("<I", b, pos)
        pos += 4 + hl
        (sl,) = struct.unpack_from("<Q", b, pos)
        pos += 8
        states.append(b[pos:pos + sl])
        pos += sl
    return records, b[body_start:len(b) - 4], shared, states


def main():
    if len(sys.argv) >= 3 and sys.argv[2] == "gpu":
        sys.argv[2] = "a100"
    if len(sys.argv) < 4 or sys.argv[2] not in MODELS:
        sys.exit(__doc__)
    out, model = sys.argv[1], sys.argv[2]
    sel = MODELS.index(model)
    os.makedirs(out, exist_ok=True)
    for path in sys.argv[3:]:
        with open(path, "rb") as f:
            records, body, shared, states = parse(f.read())
        if len(states) != 1:
            continue
        seeds = {
            "state": bytes([sel, records % 256]) + states[0] + (SEP + shared if shared else b""),
            "body": bytes([sel + len(MODELS)]) + body,
        }
        for form, data in seeds.items():
            name = "%s-%s-%s" % (model, form, hashlib.sha1(data).hexdigest()[:12])
            with open(os.path.join(out, name), "wb") as f:
                f.write(data)


if __name__ == "__main__":
    main()
