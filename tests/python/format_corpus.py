"""A generated corpus of edge-case traces read by both readers (docs/trace-format.md
#format-source). Run from the repository root with /usr/bin/python3:

    format_corpus.py DIR ACCELTRACE

writes DIR/NAME.atr for every case below (deterministic bytes: no clock, no randomness),
reads each with the C reader (`ACCELTRACE dump FILE`, which reads past a damaged index)
and the Python package as dump reads (acceltrace.open(FILE, allow_partial=True).records())
and fails unless both accept it or both reject it with
the same message (the damaged-trace hint "; --allow-partial reads it anyway" and
"; allow_partial=True reads it anyway" count as equal). Each case also states what the
format says must happen (accept, or the message's first words), so a change that made
both readers wrong alike fails too.

The traces are built here byte by byte, not by either writer: frames, CRC-32C, index,
content hash and trailer, so a case can hold what no writer makes (a varint with redundant
continuation bytes, a payload_len at the 1 GiB limit, two zstd frames in one payload).
"""
import os
import struct
import subprocess
import sys
import warnings

import xxhash
import zstandard

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "python"))
import acceltrace  # noqa: E402
from acceltrace import _format as F  # noqa: E402
from acceltrace import _schema  # noqa: E402
from acceltrace._crc32c import crc32c  # noqa: E402

failures = 0
M = acceltrace.messages


def fail(msg):
    global failures
    failures += 1
    print("FAIL " + msg)


# ---- protobuf wire encoding by hand (so varints can be non-canonical) ----

def varint(v, width=0):
    """LEB128 of v, padded with redundant continuation bytes to `width` bytes."""
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        out.append(b)
        if not v:
            break
    while len(out) < width:
        out.append(0)
    for i in range(len(out) - 1):
        out[i] |= 0x80
    return bytes(out)


def field(num, wire, data):
    return varint(num << 3 | wire) + data


def ld(num, data):
    """A length-delimited field."""
    return field(num, 2, varint(len(data)) + data)


def record(type_name, body):
    return ld(_schema.TYPE_NUMBERS[type_name], body)


def header_body():
    h = M["TraceHeader"]()
    h.producer, h.workload, h.params_json = "format_corpus", "test", "{}"
    h.source, h.source_detail = "synthetic", "tests/python/format_corpus.py"
    return h.SerializeToString()


def select_body(sel, count, n_ctx=4096, t=0, l=0, h=0):
    s = M["SalcaSelect"]()
    s.t, s.l, s.h, s.n_ctx, s.count = t, l, h, n_ctx, count
    return s.SerializeToString() + ld(10, sel)


def test_body(step_bytes, layer=0, head=0):
    """TestRecord with `step` given as raw varint bytes."""
    b = field(1, 0, step_bytes)
    if layer:
        b += field(2, 0, varint(layer & 0xFFFFFFFFFFFFFFFF))
    if head:
        b += field(3, 0, varint(head & 0xFFFFFFFFFFFFFFFF))
    return b


# ---- the container ----

class Frame:
    """One frame: payload as stored, codec, type number; raw_len and key for the index
    (computed from the record when it parses, else given)."""

    def __init__(self, type_name, raw, codec=0, stored=None):
        self.type = _schema.TYPE_NUMBERS[type_name]
        self.raw = raw
        self.codec = codec
        self.stored = raw if stored is None else stored
        self.key = (-1, -1, -1)
        try:
            rec = _schema.Record.FromString(raw)
            which = rec.WhichOneof("body")
            if which:
                self.key = _schema.record_key(which, getattr(rec, which))
        except Exception:
            pass

    def bytes(self, crc=None, payload_len=None, reserved=0, type_num=None, codec=None):
        c = crc32c(self.stored) if crc is None else crc
        n = len(self.stored) if payload_len is None else payload_len
        return struct.pack("<IBBHI", n, self.codec if codec is None else codec,
                           self.type if type_num is None else type_num, reserved, c) + \
            self.stored


def build(frames, index=True, preamble=None, edit=None):
    """The file: preamble, frames (edit(i, frame) may return replacement bytes for frame i),
    an index over them (offsets as written, so the index stays consistent) and the trailer."""
    out = bytearray(preamble if preamble is not None else
                    F.MAGIC + struct.pack("<HHI", F.MAJOR, F.MINOR, 0))
    ix = M["TraceIndex"]()
    h = xxhash.xxh3_128()
    for i, fr in enumerate(frames):
        b = (edit(i, fr) if edit else None) or fr.bytes()
        en = ix.entries.add()
        en.offset, en.record_type = len(out), fr.type
        en.step, en.layer, en.head = fr.key
        en.stored_bytes, en.raw_bytes = len(b) - F.FRAME_HEADER_BYTES, len(fr.raw)
        h.update(fr.raw)
        out += b
    if index:
        ix.content_hash, ix.frame_count = h.hexdigest(), len(frames)
        io = len(out)
        out += Frame("index", record("index", ix.SerializeToString())).bytes()
        out += struct.pack("<Q", io) + F.TRAILER_MAGIC
    return bytes(out)


def hdr():
    return Frame("header", record("header", header_body()))


def sel_frame(sel, count, **kw):
    return Frame("salca_select", record("salca_select", select_body(sel, count, **kw)))


def cases():
    """(name, bytes, expected): expected is None (must read) or the start of the message."""
    z = zstandard.ZstdCompressor(level=3, write_content_size=True)
    zn = zstandard.ZstdCompressor(level=3, write_content_size=False)
    t1 = Frame("test", record("test", test_body(varint(1))))
    big = Frame("test", record("test", test_body(varint(2)) + ld(5, b"a" * 400)))
    zraw = big.raw
    yield "ok_plain", build([hdr(), t1]), None
    # varints in the delta-coded selection list (formats/varint.h)
    sel = varint(3) + varint(0) + varint(5)          # 3, 4, 10
    yield "sel_canonical", build([hdr(), sel_frame(sel, 3)]), None
    yield "sel_varint_6_bytes", build([hdr(), sel_frame(varint(3, 6) + varint(0), 2)]), None
    yield "sel_varint_10_bytes", build([hdr(), sel_frame(varint(3, 10) + varint(0, 10), 2)]), \
        None
    yield "sel_varint_11_bytes", build([hdr(), sel_frame(varint(3, 11), 1)]), \
        "bad selection list: not ascending"
    yield "sel_varint_10th_byte_2", build([hdr(), sel_frame(b"\x80" * 9 + b"\x02", 1)]), \
        "bad selection list: not ascending"
    yield "sel_index_past_32_bits", build([hdr(), sel_frame(varint(1 << 32), 1)]), \
        "bad selection list: not ascending"
    yield "sel_truncated_varint", build([hdr(), sel_frame(b"\x83", 1)]), \
        "bad selection list: not ascending"
    yield "sel_count_differs", build([hdr(), sel_frame(sel, 4)]), \
        "bad selection list: 3 indices, count says 4"
    yield "sel_index_at_n_ctx", build([hdr(), sel_frame(varint(4095) + varint(0), 2)]), \
        "bad selection list: not ascending"
    yield "sel_max_ctx", build([hdr(), sel_frame(varint(F.SALCA_MAX_CTX - 1), 1,
                                                 n_ctx=F.SALCA_MAX_CTX)]), None
    yield "sel_above_max_ctx", build([hdr(), sel_frame(b"", 0, n_ctx=F.SALCA_MAX_CTX + 1)]), \
        "n_ctx %d above" % (F.SALCA_MAX_CTX + 1)
    # varints of protobuf fields: redundant continuation bytes, 10 bytes the most
    for w in (2, 6, 10):
        yield "pb_step_varint_%d_bytes" % w, build(
            [hdr(), Frame("test", record("test", test_body(varint(7, w))))]), None
    yield "pb_step_varint_11_bytes", build(
        [hdr(), Frame("test", record("test", test_body(varint(7, 11))))]), "cannot parse"
    yield "pb_negative_layer", build(
        [hdr(), Frame("test", record("test", test_body(varint(1), layer=-5, head=-1)))]), None
    # frame header fields
    yield "bad_crc", build([hdr(), t1], edit=lambda i, f: f.bytes(crc=0xDEADBEEF) if i else
                           None), "bad checksum"
    yield "codec_2", build([hdr(), t1], edit=lambda i, f: f.bytes(codec=2) if i else None), \
        "unknown codec 2"
    yield "reserved_1", build([hdr(), t1], edit=lambda i, f: f.bytes(reserved=1) if i else
                              None), "nonzero reserved"
    yield "type_200", build([hdr(), t1], edit=lambda i, f: f.bytes(type_num=200) if i else
                            None), "unknown record type 200"
    yield "type_0", build([hdr(), t1], edit=lambda i, f: f.bytes(type_num=0) if i else
                          None), "unknown record type 0"
    yield "type_mismatch", build([hdr(), t1], edit=lambda i, f: f.bytes(type_num=9) if i else
                                 None), "record type mismatch"
    # payload_len at and past the 1 GiB limit (the bytes are not there)
    for name, n, want in (("len_1gib", F.MAX_PAYLOAD, "truncated frame payload"),
                          ("len_1gib_plus_1", F.MAX_PAYLOAD + 1, "frame payload of"),
                          ("len_u32_max", 0xFFFFFFFF, "frame payload of")):
        yield name, build([hdr(), t1],
                          edit=lambda i, f, n=n: f.bytes(payload_len=n) if i else None), want
    # truncation
    whole = build([hdr(), t1], index=False)
    start = len(whole) - len(t1.bytes())
    yield "no_index_intact", whole, None
    for cut in (4, 11):
        yield "cut_in_frame1_%d" % cut, whole[:start + cut], "truncated frame header"
    for cut in (12, 13, len(t1.bytes()) - 1):
        yield "cut_in_frame1_%d" % cut, whole[:start + cut], "truncated frame payload"
    yield "cut_preamble", whole[:12], "truncated preamble"
    yield "cut_magic", whole[:5], "not an acceltrace trace"
    # preamble
    pre = F.MAGIC + struct.pack("<HHI", F.MAJOR, F.MINOR, 0)
    yield "major_2", build([hdr(), t1], preamble=pre[:8] + struct.pack("<HHI", 2, 0, 0)), \
        "unsupported trace format 2.0"
    yield "minor_7", build([hdr(), t1], preamble=pre[:8] + struct.pack("<HHI", 1, 7, 0)), None
    yield "flags_1", build([hdr(), t1], preamble=pre[:12] + struct.pack("<I", 1)), \
        "unknown preamble flags 0x1"
    yield "first_not_header", build([t1, t1]), "first frame is a test record"
    # zstd payloads
    yield "zstd_ok", build([hdr(), Frame("test", zraw, 1, z.compress(zraw))]), None
    yield "zstd_no_size", build([hdr(), Frame("test", zraw, 1, zn.compress(zraw))]), None
    yield "zstd_two_frames", build([hdr(), Frame("test", zraw, 1, z.compress(zraw) +
                                                 z.compress(b""))]), "payload is not exactly"
    yield "zstd_garbage", build([hdr(), Frame("test", zraw, 1, b"not zstd at all")]), \
        "payload is not a zstd frame"
    yield "zstd_cut", build([hdr(), Frame("test", zraw, 1, z.compress(zraw)[:-3])]), \
        "payload is not exactly one zstd frame"
    yield "zstd_no_size_cut", build([hdr(), Frame("test", zraw, 1, zn.compress(zraw)[:-3])]), \
        "payload is not exactly one zstd frame"
    zc = zstandard.ZstdCompressor(level=3, write_checksum=True).compress(zraw)
    yield "zstd_checksum", build([hdr(), Frame("test", zraw, 1, zc)]), None
    bad = bytearray(zc)
    bad[-1] ^= 0xFF  # the content checksum
    yield "zstd_bad_checksum", build([hdr(), Frame("test", zraw, 1, bytes(bad))]), \
        "bad zstd data"
    yield "zstd_skippable", build([hdr(), Frame("test", zraw, 1, struct.pack(
        "<II", 0x184D2A50, 4) + b"skip")]), "record type mismatch (frame header 15, record 0)"
    # index (the readers read on past a damaged index: `dump` does, Python with
    # allow_partial=True)
    good = build([hdr(), t1])
    yield "index_bad_offset", good[:-16] + struct.pack("<Q", 3) + F.TRAILER_MAGIC, None
    yield "second_header", build([hdr(), hdr()]), "second header record"
    yield "index_mid", build([hdr(), Frame("index", record("index", b"")), t1]), \
        "index frame before the end"


def c_read(tool, path):
    r = subprocess.run([tool, "dump", path], stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE, text=True)
    if r.returncode == 0:
        return None
    first = (r.stderr.strip().splitlines() or ["(exit %d, no message)" % r.returncode])[0]
    return first.replace("acceltrace: ", "", 1).replace("; --allow-partial reads it anyway", "")


def py_read(path):
    """As `acceltrace dump` reads: past a damaged index (allow_partial=True)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", acceltrace.DamagedTraceWarning)
            with acceltrace.open(path, allow_partial=True) as t:
                for _ in t.records():
                    pass
    except acceltrace.TraceError as e:
        return str(e).replace("; allow_partial=True reads it anyway", "")
    return None


def main():
    d, tool = sys.argv[1], sys.argv[2]
    os.makedirs(d, exist_ok=True)
    n = 0
    for name, data, want in cases():
        path = os.path.join(d, name + ".atr")
        with open(path, "wb") as f:
            f.write(data)
        c, py = c_read(tool, path), py_read(path)
        n += 1
        if c != py:
            fail("%s: the readers differ\n  C:      %s\n  python: %s" % (name, c, py))
            continue
        if want is None and c is not None:
            fail("%s: the format accepts it, both readers refuse it: %s" % (name, c))
        elif want is not None and (c is None or not c.startswith(want)):
            fail("%s: expected an error starting %r, both readers give %r" % (name, want, c))
        else:
            print("%-26s %s" % (name, "read" if c is None else c.split(" ('")[0]))
    print("format corpus: %d cases, %d failures" % (n, failures))
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
