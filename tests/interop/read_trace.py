#!/usr/bin/python3
"""Reads an acceltrace .atr trace with stock Python packages only (google.protobuf and
zstandard, no project code), following docs/trace-format.md, and prints the number of
records of each type like `acceltrace info`:

    record_type COUNT

one line per type in Record.body field-number order, header first, index frame excluded.
It also checks the index's content hash over the decompressed payloads: a 64-digit
SHA-256 (older traces) with hashlib, a 32-digit XXH3-128 with python3-xxhash when that
optional Debian package is installed (otherwise that check is skipped).
Usage: read_trace.py TRACE.atr DESCRIPTOR_SET   (DESCRIPTOR_SET = build/gen/formats/trace.desc)
Exit 0 on success, 3 when the file is not a valid trace.
"""
import hashlib
import struct
import sys

import zstandard
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

try:
    import xxhash
except ImportError:  # optional: python3-xxhash
    xxhash = None

MAGIC = b"ACCTRACE"
TRAILER = b"ACCTRIDX"
MAX_PAYLOAD = 1 << 30


def crc32c_table():
    t = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        t.append(c)
    return t


TABLE = crc32c_table()


def crc32c(data):
    c = 0xFFFFFFFF
    for b in data:
        c = (c >> 8) ^ TABLE[(c ^ b) & 0xFF]
    return c ^ 0xFFFFFFFF


def record_class(desc_path):
    fds = descriptor_pb2.FileDescriptorSet()
    with open(desc_path, "rb") as f:
        fds.ParseFromString(f.read())
    pool = descriptor_pool.DescriptorPool()
    for fd in fds.file:
        pool.Add(fd)
    desc = pool.FindMessageTypeByName("acceltrace.Record")
    if hasattr(message_factory, "GetMessageClass"):
        return message_factory.GetMessageClass(desc), desc
    return message_factory.MessageFactory(pool).GetPrototype(desc), desc


def fail(msg):
    print("read_trace.py: " + msg, file=sys.stderr)
    sys.exit(3)


def check_content_hash(want, payloads):
    """The index's content hash against the payloads (docs/trace-format.md)."""
    if len(want) == 64:
        h = hashlib.sha256()
    elif len(want) == 32 and xxhash is not None:
        h = xxhash.xxh3_128()
    elif len(want) == 32:
        return
    else:
        fail("content hash of %d digits in the index" % len(want))
    for p in payloads:
        h.update(p)
    if h.hexdigest() != want:
        fail("content hash mismatch: index %s, frames %s" % (want, h.hexdigest()))


def main():
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    Record, desc = record_class(sys.argv[2])
    with open(sys.argv[1], "rb") as f:
        data = f.read()
    if len(data) < 16 or data[:8] != MAGIC:
        fail("not an acceltrace trace")
    major, minor, flags = struct.unpack_from("<HHI", data, 8)
    if major != 1 or flags != 0:
        fail("unsupported format %d.%d flags %#x" % (major, minor, flags))
    dctx = zstandard.ZstdDecompressor()
    counts = {}
    payloads = []
    pos, frame = 16, 0
    while pos < len(data):
        if len(data) - pos < 12:
            fail("truncated frame header (frame %d at offset %d)" % (frame, pos))
        plen, codec, rtype, reserved, crc = struct.unpack_from("<IBBHI", data, pos)
        if plen > MAX_PAYLOAD or plen > len(data) - pos - 12 or reserved != 0:
            fail("bad frame header (frame %d at offset %d)" % (frame, pos))
        payload = data[pos + 12:pos + 12 + plen]
        if crc32c(payload) != crc:
            fail("bad checksum (frame %d at offset %d)" % (frame, pos))
        if codec == 1:
            raw = dctx.decompress(payload, max_output_size=MAX_PAYLOAD)
        elif codec == 0:
            raw = payload
        else:
            fail("unknown codec %d (frame %d at offset %d)" % (codec, frame, pos))
        rec = Record()
        rec.ParseFromString(raw)
        which = rec.WhichOneof("body")
        if which is None or desc.fields_by_name[which].number != rtype:
            fail("record type mismatch (frame %d at offset %d)" % (frame, pos))
        pos += 12 + plen
        frame += 1
        if which == "index":
            if len(data) - pos != 16 or data[pos + 8:] != TRAILER:
                fail("bad trailer after the index (offset %d)" % pos)
            if rec.index.frame_count != frame - 1:
                fail("index frame count %d, file has %d" % (rec.index.frame_count, frame - 1))
            check_content_hash(rec.index.content_hash, payloads)
            break
        payloads.append(raw)
        counts[rtype] = counts.get(rtype, 0) + 1
    for number in sorted(counts):
        print("%s %d" % (desc.fields_by_number[number].name, counts[number]))


if __name__ == "__main__":
    main()
