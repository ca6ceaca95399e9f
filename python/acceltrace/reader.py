"""Reading .atr traces (docs/trace-format.md), with the C reader's damaged-trace policy.

`open(path)` checks the preamble, reads the header frame and loads the index. A trace
whose index is missing or inconsistent is refused with TraceError unless
allow_partial=True (then a warning names the damage and the frames are read in file
order). Streaming (`Trace.records()`) checks every frame header against the bytes left,
the CRC-32C of the stored payload, the zstd frame, the record type and, with a valid
index, the entry of every frame (keys recomputed from the record); an index-type frame
anywhere but last is an error; after the last frame the content hash of the payloads is
compared with the index's. Every error names the file, the frame and its offset, as the
C reader does (traces/trace_reader.c), and is a TraceError: nothing else escapes on
damaged input.
"""
import hashlib
import mmap
import os
import stat
import struct
import warnings

import numpy as np
import xxhash
import zstandard

from . import _schema
from ._crc32c import crc32c
# the container's constants and error texts: generated from formats/trace_format.tab
from ._format import (CODEC_RAW, CODEC_ZSTD, FRAME_HEADER_BYTES, MAGIC, MAJOR, MAX_PAYLOAD,
                      MSG, PREAMBLE_BYTES, SALCA_MAX_CTX, TRAILER_BYTES, TRAILER_MAGIC,
                      VARINT_MAX_BYTES)
from .errors import MaskNotKeptError, TraceError, open_error
_FRAME = struct.Struct("<IBBHI")
_PI_2_15 = np.pi / 32768.0  # theta_q = q*pi/2^15 (formats/kura_fixed.h kura_q_theta)


class DamagedTraceWarning(UserWarning):
    """Damage accepted under allow_partial=True (the text is the C reader's message)."""


class _Frame:
    __slots__ = ("number", "offset", "codec", "type", "stored", "crc", "payload")


def _zstd_frame_size(data):
    """Bytes of the zstd frame at the start of data, found from its block headers as
    ZSTD_findFrameCompressedSize finds them (RFC 8878 section 3.1.1), or -1 when the frame
    is cut short or malformed."""
    if len(data) >= 8 and struct.unpack_from("<I", data)[0] & 0xFFFFFFF0 == 0x184D2A50:
        # a skippable frame: magic, u32 size, that many bytes (it decompresses to nothing)
        return 8 + struct.unpack_from("<I", data, 4)[0]
    try:
        pos = zstandard.frame_header_size(data)
    except zstandard.ZstdError:
        return -1
    checksum = len(data) > 4 and data[4] & 0x04
    while True:
        if pos + 3 > len(data):
            return -1
        b = data[pos] | data[pos + 1] << 8 | data[pos + 2] << 16
        last, btype, bsize = b & 1, (b >> 1) & 3, b >> 3
        if btype == 3:
            return -1
        pos += 3 + (1 if btype == 1 else bsize)
        if pos > len(data):
            return -1
        if last:
            break
    pos += 4 if checksum else 0
    return pos if pos <= len(data) else -1


def _hash_ok(h):
    return len(h) in (32, 64) and all(c in "0123456789abcdef" for c in h)


class Record:
    """One record of a trace: .type (the name `acceltrace info` prints), .step, .layer,
    .head (the index keys, -1 where one does not apply), .msg (the body message, e.g. a
    DiscMask), .frame and .offset (its frame number and the offset of its frame header)."""

    __slots__ = ("type", "step", "layer", "head", "msg", "frame", "offset", "_trace")

    def __init__(self, type_name, key, msg, frame, offset, trace):
        self.type = type_name
        self.step, self.layer, self.head = key
        self.msg = msg
        self.frame = frame
        self.offset = offset
        self._trace = trace

    def __repr__(self):
        return "<acceltrace.Record %s step=%d layer=%d head=%d frame=%d>" % (
            self.type, self.step, self.layer, self.head, self.frame)

    def _err(self, what):
        return TraceError(what, self._trace.path if self._trace else "?", self.frame,
                          self.offset)

    def to_numpy(self):
        """The record's array:
        disc_mask: bool (rows, n_cols), the stored mask bits (rows padded to 64 bits in
                   the record; padding dropped); a mask the capture did not keep
                   (rec.msg.kept false: not selected by --keep-masks) raises
                   MaskNotKeptError;
        disc_step: bool (N,), the token mask (1 = computed), N from the header's
                   disc.tokens;
        kura_step: float64 (h, w), the phase map theta = q*pi/2^15 in rad.
        A record whose bytes do not fit its shape raises TraceError."""
        m = self.msg
        if self.type == "disc_mask":
            if not m.kept:
                raise MaskNotKeptError(
                    "disc_mask step %d block %d head %d was not kept: its bits are only "
                    "stored for what `acceltrace capture disc --keep-masks SEL` selects "
                    "(e.g. --keep-masks 'blocks=all;heads=all;steps=all;batch=0')"
                    % (self.step, self.layer, self.head))
            cols = m.n_cols
            row_bytes = (cols + 63) // 64 * 8
            bits = m.bits
            if row_bytes == 0 or len(bits) % row_bytes:
                if not bits:
                    return np.zeros((0, cols), dtype=bool)
                raise self._err("mask of %d bytes is not whole rows of %d columns"
                                % (len(bits), cols))
            rows = len(bits) // row_bytes
            a = np.frombuffer(bits, dtype=np.uint8).reshape(rows, row_bytes)
            u = np.unpackbits(a, axis=1, bitorder="little")
            if row_bytes * 8 != cols:
                u = u[:, :cols]
            return u.view(np.bool_)
        if self.type == "disc_step":
            tm = m.token_mask
            n = 0
            hdr = self._trace.header if self._trace else None
            if hdr is not None and hdr.HasField("disc"):
                n = hdr.disc.tokens
            if n == 0:
                n = len(tm) * 8
            if len(tm) * 8 < n:
                raise self._err("token mask of %d bytes holds fewer than %d tokens"
                                % (len(tm), n))
            u = np.unpackbits(np.frombuffer(tm, dtype=np.uint8), bitorder="little")
            return u[:n].view(np.bool_)
        if self.type == "kura_step":
            n = m.h * m.w
            if len(m.phase_q15) != 2 * n:
                raise self._err("phase map of %d bytes, %dx%d int16 expected"
                                % (len(m.phase_q15), m.h, m.w))
            q = np.frombuffer(m.phase_q15, dtype="<i2").reshape(m.h, m.w)
            return q.astype(np.float64) * _PI_2_15
        raise TypeError("to_numpy() applies to disc_mask, disc_step and kura_step records, "
                        "not %s" % self.type)

    def indices(self):
        """salca_select: the selected token indices, ascending int64 (the delta-varint
        `sel` blob decoded as formats/varint.h describes). TraceError when the blob is
        malformed or its count differs from the record's `count`."""
        if self.type != "salca_select":
            raise TypeError("indices() applies to salca_select records, not %s" % self.type)
        idx = decode_indices(self.msg.sel)
        if idx is None:
            raise self._err("malformed selected-index list")
        if idx.size != self.msg.count:
            raise self._err("selected-index list holds %d indices, count says %d"
                            % (idx.size, self.msg.count))
        return idx


def decode_indices(blob):
    """Decodes a delta-coded ascending index list (formats/varint.h) into int64; None when
    malformed: a truncated varint, one longer than VARINT_MAX_BYTES (10) bytes or past 64
    bits, or an index or gap past 32 bits. Redundant continuation bytes (0 written as
    80 80 00) are accepted, as protobuf and the C reader accept them
    (docs/trace-format.md#varints)."""
    a = np.frombuffer(blob, dtype=np.uint8)
    if a.size == 0:
        return np.zeros(0, dtype=np.int64)
    if a[-1] & 0x80:
        return None
    ends = np.flatnonzero(a < 0x80)
    starts = np.empty_like(ends)
    starts[0] = 0
    starts[1:] = ends[:-1] + 1
    lens = ends - starts + 1
    if lens.max() > VARINT_MAX_BYTES:
        return None
    group = np.repeat(np.arange(ends.size), lens)
    pos = np.arange(a.size) - starts[group]
    bits = (a & 0x7F).astype(np.uint64)
    # the last byte a u64 can have carries its top bit only
    if np.any(bits[pos == VARINT_MAX_BYTES - 1] > 1):
        return None
    vals = np.zeros(ends.size, dtype=np.uint64)
    np.add.at(vals, group, bits << (7 * pos).astype(np.uint64))
    if vals.size and vals.max() > 0xFFFFFFFF:
        return None
    idx = np.cumsum(vals.astype(np.int64) + 1) - 1
    if idx[-1] > 0xFFFFFFFF:
        return None
    return idx


def check_record(name, body):
    """What is wrong with a record whose fields disagree with each other, in the words of
    the C reader (traces/trace_salca.c trace_salca_select_validate), or None. Checked on
    every record read and by Writer.append: a salca_select whose `sel` list is not exactly
    `count` ascending indices below n_ctx."""
    if name != "salca_select":
        return None
    where = (body.t, body.l, body.h)
    if body.n_ctx > SALCA_MAX_CTX:
        return MSG["SALCA_CTX"] % ((body.n_ctx, SALCA_MAX_CTX) + where)
    if body.count > body.n_ctx:
        return MSG["SALCA_COUNT"] % ((body.count, body.n_ctx) + where)
    idx = decode_indices(body.sel)
    if idx is None or (idx.size and idx[-1] >= body.n_ctx):
        return MSG["SALCA_NOT_ASCENDING"] % ((body.n_ctx,) + where)
    if idx.size != body.count:
        return MSG["SALCA_COUNT_DIFFERS"] % ((idx.size, body.count) + where)
    return None


class Trace:
    """An open trace. Attributes: path, header (the TraceHeader message), index (the
    TraceIndex message, or None when the index is damaged and allow_partial=True),
    index_problem (why the index is unusable, or None), major, minor."""

    def __init__(self, path, allow_partial=False, compute_hash=True,
                 max_record_bytes=1 << 30):
        self.path = os.fspath(path)
        self.allow_partial = allow_partial
        self.compute_hash = compute_hash
        self.max_record_bytes = max_record_bytes
        self._dctx = zstandard.ZstdDecompressor(max_window_size=1 << 27)
        self._mm = None
        self._keys = None
        self.index = None
        self.index_problem = None
        self._open_file()
        try:
            self._open()
        except BaseException:
            self.close()
            raise

    # ---- file and preamble ----

    def _open_file(self):
        p = self.path
        try:
            fd = os.open(p, os.O_RDONLY | os.O_NONBLOCK)
        except OSError as e:
            raise open_error(p, e) from None
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                kind = ("a fifo" if stat.S_ISFIFO(st.st_mode) else
                        "a folder" if stat.S_ISDIR(st.st_mode) else "not a file")
                raise TraceError("'%s' is not a regular file (%s): inputs must be files"
                                 % (p, kind), p, position=False)
            if st.st_size:
                self._mm = mmap.mmap(fd, 0, prot=mmap.PROT_READ)
                self._data = memoryview(self._mm)
            else:
                self._data = memoryview(b"")
        finally:
            os.close(fd)
        self.size = len(self._data)

    def close(self):
        """Releases the file mapping (records already returned stay valid)."""
        if self._mm is not None:
            mm, self._mm = self._mm, None
            self._data = memoryview(b"")
            try:
                mm.close()
            except BufferError:  # a payload view is still alive: the collector closes it
                pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _err(self, what, number, offset):
        return TraceError(what, self.path, number, offset)

    def _open(self):
        d, p = self._data, self.path
        if self.size < 8 or bytes(d[:8]) != MAGIC:
            raise TraceError(MSG["BAD_MAGIC"], p, None, 0)
        if self.size < PREAMBLE_BYTES:
            raise TraceError(MSG["TRUNC_PREAMBLE"], p, None, self.size)
        self.major, self.minor, flags = struct.unpack_from("<HHI", d, 8)
        if self.major != MAJOR:
            raise TraceError(MSG["BAD_MAJOR"]
                             % (self.major, self.minor, MAJOR), p, None, 8)
        if flags:
            raise TraceError(MSG["BAD_FLAGS"] % flags, p, None, 12)
        fr = self._read_frame(PREAMBLE_BYTES, self.size, 0)
        if fr.type != _schema.HEADER:
            raise self._err(MSG["FIRST_NOT_HEADER"]
                            % _schema.TYPE_NAMES[fr.type], 0, PREAMBLE_BYTES)
        raw = self._decompress(fr)
        rec = self._parse(fr, raw)
        self.header = rec.header
        self._header_raw = raw
        self._header_end = PREAMBLE_BYTES + FRAME_HEADER_BYTES + fr.stored
        self._end = self.size
        self._load_index()
        if self.index_problem is not None:
            if not self.allow_partial:
                raise TraceError("damaged trace: %s; allow_partial=True reads it anyway"
                                 % self._index_text, p, None, self._index_offset,
                                 position=False)
            self._warn(self._index_text, 5)

    def _warn(self, text, stacklevel=3):
        warnings.warn("damaged trace read with allow_partial=True: " + text,
                      DamagedTraceWarning, stacklevel=stacklevel)

    # ---- frames ----

    def _read_frame(self, off, end, number):
        """The frame header at off, checked against the bytes before end (C read_frame)."""
        if off > end or end - off < FRAME_HEADER_BYTES:
            raise self._err(MSG["TRUNC_FRAME_HEADER"]
                            % (0 if off > end else end - off), number, off)
        fr = _Frame()
        fr.stored, fr.codec, fr.type, reserved, fr.crc = _FRAME.unpack_from(self._data, off)
        fr.number, fr.offset = number, off
        if reserved:
            raise self._err(MSG["RESERVED"], number, off)
        if fr.codec > CODEC_ZSTD:
            raise self._err(MSG["BAD_CODEC"] % fr.codec, number, off)
        if fr.type not in _schema.TYPE_NAMES:
            raise self._err(MSG["BAD_TYPE"] % fr.type, number, off)
        if fr.stored > MAX_PAYLOAD:
            raise self._err(MSG["PAYLOAD_LIMIT"] % fr.stored,
                            number, off)
        avail = end - off - FRAME_HEADER_BYTES
        if fr.stored > avail:
            raise self._err(MSG["TRUNC_PAYLOAD"]
                            % (fr.stored, avail), number, off)
        if fr.codec == CODEC_RAW and fr.stored > self.max_record_bytes:
            raise self._err(MSG["RECORD_CAP"]
                            % (fr.stored, self.max_record_bytes), number, off)
        start = off + FRAME_HEADER_BYTES
        fr.payload = self._data[start:start + fr.stored]
        return fr

    def _decompress(self, fr):
        """Checks the crc and returns the raw payload (bytes) of a frame."""
        if crc32c(fr.payload) != fr.crc:
            raise self._err(MSG["BAD_CRC"], fr.number, fr.offset)
        if fr.codec == CODEC_RAW:
            return bytes(fr.payload)
        cap = self.max_record_bytes
        data = bytes(fr.payload)
        try:
            fcs = zstandard.frame_content_size(data)
        except zstandard.ZstdError:
            raise self._err(MSG["NOT_ZSTD"], fr.number, fr.offset)
        # checked in the C reader's order (traces/trace_reader.c decompress_job), so a
        # payload with several faults gets the same message from both
        if _zstd_frame_size(data) != len(data):
            raise self._err(MSG["NOT_ONE_ZSTD"], fr.number, fr.offset)
        if fcs > cap:
            raise self._err(MSG["ZSTD_DECLARES"]
                            % (fcs, cap), fr.number, fr.offset)
        try:
            if fcs < 0:
                # no declared size: bound what a stream may produce before trusting it
                with self._dctx.stream_reader(data, read_across_frames=False) as sr:
                    if len(sr.read(cap + 1)) > cap:
                        raise self._err(MSG["DECOMPRESSED_CAP"]
                                        % cap, fr.number, fr.offset)
            dobj = self._dctx.decompressobj()
            out = dobj.decompress(data)
        except zstandard.ZstdError as e:
            # "zstd decompressor error: Data corruption detected": the C reader prints
            # zstd's own name of the error, the text after the last ": "
            raise self._err(MSG["BAD_ZSTD"] % str(e).rsplit(": ", 1)[-1], fr.number,
                            fr.offset)
        if dobj.unused_data:
            raise self._err(MSG["NOT_ONE_ZSTD"], fr.number, fr.offset)
        if not dobj.eof:
            raise self._err(MSG["TRUNC_ZSTD"], fr.number, fr.offset)
        if fcs >= 0 and len(out) != fcs:
            raise self._err(MSG["ZSTD_SIZE"], fr.number, fr.offset)
        return out

    def _parse(self, fr, raw):
        try:
            with warnings.catch_warnings():
                # python-protobuf warns and keeps a prefix on a stray end-group tag, where
                # protobuf-c refuses the record: refuse it too
                warnings.simplefilter("error", RuntimeWarning)
                rec = _schema.Record.FromString(raw)
        except Exception:  # DecodeError, and whatever else a hostile payload provokes
            raise self._err(MSG["CANNOT_PARSE"] % _schema.TYPE_NAMES[fr.type],
                            fr.number, fr.offset)
        which = rec.WhichOneof("body")
        num = _schema.TYPE_NUMBERS[which] if which else 0
        if num != fr.type:
            raise self._err(MSG["TYPE_MISMATCH"]
                            % (fr.type, num), fr.number, fr.offset)
        return rec

    # ---- index ----

    def _problem(self, off, what):
        self.index_problem = what
        self._index_offset = off
        self._index_text = "%s ('%s' index at offset %d)" % (what, self.path, off)

    def _load_index(self):
        size, d = self.size, self._data
        if size < self._header_end + FRAME_HEADER_BYTES + TRAILER_BYTES:
            return self._problem(size, MSG["NO_INDEX"])
        iend = size - TRAILER_BYTES
        if bytes(d[iend + 8:size]) != TRAILER_MAGIC:
            return self._problem(size, MSG["NO_INDEX"])
        io = struct.unpack_from("<Q", d, iend)[0]
        if io < self._header_end or io > iend:
            return self._problem(iend, MSG["BAD_INDEX_OFFSET"] % io)
        try:
            fr = self._read_frame(io, iend, 0)
        except TraceError as e:
            return self._problem(io, MSG["BAD_INDEX_FRAME"] % e.what)
        if fr.type != _schema.INDEX:
            return self._problem(io, MSG["TRAILER_NOT_INDEX"]
                                 % _schema.TYPE_NAMES[fr.type])
        if io + FRAME_HEADER_BYTES + fr.stored != iend:
            return self._problem(io, MSG["INDEX_GAP"]
                                 % (iend - io - FRAME_HEADER_BYTES - fr.stored))
        try:
            ix = self._parse(fr, self._decompress(fr)).index
        except TraceError as e:
            return self._problem(io, MSG["BAD_INDEX_FRAME"] % e.what)
        n = len(ix.entries)
        if ix.frame_count != n or n == 0 or n > 0xFFFFFFFF or not _hash_ok(ix.content_hash):
            return self._problem(io, MSG["INDEX_INCONSISTENT"])
        expect = PREAMBLE_BYTES
        for i, en in enumerate(ix.entries):
            if (en.offset != expect or en.record_type not in _schema.TYPE_NAMES
                    or en.record_type == _schema.INDEX
                    or (i == 0) != (en.record_type == _schema.HEADER)
                    or en.stored_bytes > MAX_PAYLOAD):
                return self._problem(io, MSG["BAD_INDEX_ENTRY"] % i)
            expect = en.offset + FRAME_HEADER_BYTES + en.stored_bytes
        if expect != io:
            return self._problem(io, MSG["INDEX_END"]
                                 % expect)
        self.index = ix
        self._end = io

    @staticmethod
    def _entry_check(en, fr, raw_len, key):
        for field, a, b in (("offset", en.offset, fr.offset), ("type", en.record_type, fr.type),
                            ("stored bytes", en.stored_bytes, fr.stored),
                            ("raw bytes", en.raw_bytes, raw_len), ("step", en.step, key[0]),
                            ("layer", en.layer, key[1]), ("head", en.head, key[2])):
            if a != b:
                return MSG["ENTRY_DISAGREES"] % (field, a, b)
        return None

    # ---- streaming ----

    def records(self, type=None):
        """Yields every record after the header in file order (the summary included), or
        only those of `type` (a name as `info` prints it, or a collection of names). Every
        frame is still checked, and the content hash is compared once the last frame was
        read; the index frame is not a record. Raises TraceError on damage."""
        want = None
        if type is not None:
            want = {type} if isinstance(type, str) else set(type)
            bad = want - set(_schema.TYPE_NUMBERS)
            if bad:
                raise ValueError("unknown record type %s" % ", ".join(sorted(bad)))
        ix = self.index
        hasher = None
        if ix is not None and self.compute_hash:
            hasher = hashlib.sha256() if len(ix.content_hash) == 64 else xxhash.xxh3_128()
            hasher.update(self._header_raw)
        entries = ix.entries if ix is not None else None
        mismatch = False
        pos, number, end, size = self._header_end, 1, self._end, self.size
        names = _schema.TYPE_NAMES
        while pos != end:
            fr = self._read_frame(pos, end, number)
            if fr.type == _schema.INDEX:
                after = pos + FRAME_HEADER_BYTES + fr.stored
                rest = size - after if size > after else 0
                if ix is None and rest <= TRAILER_BYTES:
                    if crc32c(fr.payload) != fr.crc:
                        break  # a damaged index last: the index problem already says so
                    try:
                        r = self._parse(fr, self._decompress(fr))
                        indexes = len(r.index.entries) == number
                    except TraceError:
                        indexes = False
                    if indexes:
                        break
                    raise self._err(MSG["INDEX_NOT_INDEXING"]
                                    % number, number, pos)
                raise self._err(MSG["INDEX_NOT_LAST"]
                                % rest, number, pos)
            if fr.type == _schema.HEADER:
                raise self._err(MSG["SECOND_HEADER"], number, pos)
            raw = self._decompress(fr)
            rec = self._parse(fr, raw)
            if hasher is not None:
                hasher.update(raw)
            name = names[fr.type]
            body = getattr(rec, name)
            bad = check_record(name, body)
            if bad:
                raise self._err(bad, number, pos)
            key = _schema.record_key(name, body)
            if entries is not None and not mismatch:
                if number >= len(entries):
                    what = MSG["BEYOND_INDEX"] % len(entries)
                else:
                    what = self._entry_check(entries[number], fr, len(raw), key)
                if what:
                    if not self.allow_partial:
                        raise TraceError("%s ('%s' frame %d at offset %d); allow_partial=True "
                                         "reads it anyway" % (what, self.path, number, pos),
                                         self.path, number, pos, position=False)
                    mismatch = True
                    self._warn("%s ('%s' frame %d at offset %d)" % (what, self.path, number,
                                                                    pos))
            pos += FRAME_HEADER_BYTES + fr.stored
            number += 1
            if want is None or name in want:
                yield Record(name, key, body, fr.number, fr.offset, self)
        if hasher is not None:
            got = hasher.hexdigest()
            if got != ix.content_hash:
                raise self._err(MSG["HASH_MISMATCH"]
                                % (ix.content_hash, got), number, pos)

    def __iter__(self):
        return self.records()

    def find(self, type, step=-1, layer=-1, head=-1):
        """The first record of `type` with these keys, read alone through the index (its
        frame must match its entry, keys included); None when the index has no such
        entry. TraceError when the trace has no valid index or the frame is damaged."""
        if self.index is None:
            raise TraceError("no valid index in '%s': %s" % (self.path, self.index_problem),
                             self.path, position=False)
        if type not in _schema.TYPE_NUMBERS:
            raise ValueError("unknown record type %s" % type)
        if self._keys is None:
            keys = {}
            for i, en in enumerate(self.index.entries):
                keys.setdefault((en.record_type, en.step, en.layer, en.head), i)
            self._keys = keys
        i = self._keys.get((_schema.TYPE_NUMBERS[type], step, layer, head))
        if i is None:
            return None
        en = self.index.entries[i]
        fr = self._read_frame(en.offset, self._end, i)
        raw = self._decompress(fr)
        rec = self._parse(fr, raw)
        body = getattr(rec, type)
        bad = check_record(type, body)
        if bad:
            raise self._err(bad, i, en.offset)
        key = _schema.record_key(type, body)
        what = self._entry_check(en, fr, len(raw), key)
        if what:
            raise self._err(what, i, en.offset)
        return Record(type, key, body, i, en.offset, self)

    def counts(self):
        """{type name: records} over the index (header included, as `info` counts)."""
        if self.index is None:
            raise TraceError("no valid index in '%s': %s" % (self.path, self.index_problem),
                             self.path, position=False)
        out = {}
        for en in self.index.entries:
            n = _schema.TYPE_NAMES[en.record_type]
            out[n] = out.get(n, 0) + 1
        return out

    @property
    def content_hash(self):
        """The index's content hash (hex), or None without a valid index."""
        return self.index.content_hash if self.index is not None else None


def open(path, allow_partial=False, compute_hash=True, max_record_bytes=1 << 30):  # noqa: A001
    """Opens a trace: `acceltrace.open('out/disc/disc.atr')`. See Trace."""
    return Trace(path, allow_partial=allow_partial, compute_hash=compute_hash,
                 max_record_bytes=max_record_bytes)
