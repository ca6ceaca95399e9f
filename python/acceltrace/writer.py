"""Writing .atr traces the way traces/trace_writer.c does (docs/trace-format.md).

Writer(path, header) creates PATH.partial exclusively (O_CREAT | O_EXCL: the temporary is
this writer's lock), writes the preamble and the header frame; append() packs a record,
compresses it as one zstd frame (level 3, content size in the frame header, no zstd
checksum), stores it raw when that is not smaller, and writes the frame with its
CRC-32C; close() appends the index frame (one entry per frame with the keys of
traces/trace_key.c, the XXH3-128 content hash over every raw payload before the index)
and the trailer, fsyncs, renames PATH.partial to PATH and fsyncs the folder. A writer
left unfinished by an exception (the `with` form) removes its temporary.
"""
import os
import struct

import xxhash
import zstandard

from . import _schema
from ._crc32c import crc32c
from .errors import TraceError
from ._format import CODEC_RAW, CODEC_ZSTD, MAGIC, MAJOR, MAX_PAYLOAD, MINOR, TRAILER_MAGIC
from .reader import check_record

_FRAME = struct.Struct("<IBBHI")


class Writer:
    """w = Writer("out.atr", header); w.append(msg); ...; w.close().

    header is a TraceHeader message (e.g. acceltrace.open(src).header). append() takes a
    record body message (DiscMask, SalcaSelect, ..., Summary, TestRecord) or a whole
    acceltrace.Record; its index keys are derived from it. level is the zstd level
    (0 = every frame raw)."""

    def __init__(self, path, header, level=3):
        self.path = os.fspath(path)
        self.tmp_path = self.path + ".partial"
        self._level = level
        self._cctx = (zstandard.ZstdCompressor(level=level, write_checksum=False,
                                               write_content_size=True) if level else None)
        self._entries = []
        self._hash = xxhash.xxh3_128()
        self._offset = 0
        self._done = False
        try:
            self._fd = os.open(self.tmp_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            raise TraceError("'%s' exists: another capture is writing '%s', or one was killed; "
                             "run `acceltrace recover %s` or remove it"
                             % (self.tmp_path, self.path, self.tmp_path), self.path,
                             position=False)
        self._st = os.fstat(self._fd)
        try:
            self._write(MAGIC + struct.pack("<HHI", MAJOR, MINOR, 0))
            rec = _schema.Record()
            rec.header.CopyFrom(header)
            self._frame(rec, "header", True)
        except BaseException:
            self._abort()
            raise

    def _write(self, b):
        mv = memoryview(b)
        while mv:
            n = os.write(self._fd, mv)
            mv = mv[n:]
        self._offset += len(b)

    def _frame(self, rec, name, indexed):
        raw = rec.SerializeToString()
        stored, codec = raw, CODEC_RAW
        if self._cctx is not None and raw:
            c = self._cctx.compress(raw)
            if len(c) < len(raw):
                stored, codec = c, CODEC_ZSTD
        if len(stored) > MAX_PAYLOAD:
            raise ValueError("record of %d bytes exceeds the 1 GiB frame limit ('%s')"
                             % (len(stored), self.path))
        num = _schema.TYPE_NUMBERS[name]
        off = self._offset
        self._write(_FRAME.pack(len(stored), codec, num, 0, crc32c(stored)) + stored)
        if indexed:
            key = _schema.record_key(name, getattr(rec, name))
            self._entries.append((off, num, key, len(stored), len(raw)))
            self._hash.update(raw)

    def append(self, msg):
        """Appends one record: a body message or an acceltrace Record. Not a header or an
        index (the writer makes those), nor a record every reader refuses (ValueError,
        reader.check_record: a salca_select whose list is not `count` indices)."""
        if self._done:
            raise ValueError("append to a closed writer of '%s'" % self.path)
        full = msg.DESCRIPTOR.full_name
        if full == "acceltrace.Record":
            name = msg.WhichOneof("body")
            if name is None:
                raise ValueError("empty record")
            rec = msg
        else:
            name = _schema.BODY_FIELD.get(full)
            if name is None:
                raise TypeError("%s is not a record body" % full)
            rec = _schema.Record()
            getattr(rec, name).CopyFrom(msg)
        if name in ("header", "index"):
            raise ValueError("the writer writes the %s record itself" % name)
        bad = check_record(name, getattr(rec, name))
        if bad:
            # a record every reader would refuse is never written ('%s' names the trace)
            raise ValueError("%s: refusing to write it to '%s'" % (bad, self.path))
        try:
            self._frame(rec, name, True)
        except BaseException:
            self._abort()
            raise

    def close(self):
        """Writes the index and the trailer, fsyncs and renames PATH.partial to PATH."""
        if self._done:
            return
        try:
            rec = _schema.Record()
            ix = rec.index
            for off, num, key, stored, raw in self._entries:
                e = ix.entries.add()
                e.offset, e.record_type = off, num
                e.step, e.layer, e.head = key
                e.stored_bytes, e.raw_bytes = stored, raw
            ix.content_hash = self._hash.hexdigest()
            ix.frame_count = len(self._entries)
            index_offset = self._offset
            self._frame(rec, "index", False)
            self._write(struct.pack("<Q", index_offset) + TRAILER_MAGIC)
            os.fsync(self._fd)
            os.close(self._fd)
            self._fd = -1
            st = os.stat(self.tmp_path)
            if (st.st_dev, st.st_ino) != (self._st.st_dev, self._st.st_ino):
                raise TraceError("'%s' was removed or replaced while writing '%s'"
                                 % (self.tmp_path, self.path), self.path, position=False)
            os.rename(self.tmp_path, self.path)
            self._done = True
            dfd = os.open(os.path.dirname(os.path.abspath(self.path)), os.O_RDONLY)
            try:
                os.fsync(dfd)
            finally:
                os.close(dfd)
        except BaseException:
            if not self._done:
                self._abort()
            raise

    @property
    def content_hash(self):
        """XXH3-128 hex of the payloads appended so far (header included)."""
        return self._hash.hexdigest()

    def _abort(self):
        """Removes the temporary of an unfinished writer (as trace_writer_free does)."""
        self._done = True
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
        try:
            st = os.stat(self.tmp_path)
            if (st.st_dev, st.st_ino) == (self._st.st_dev, self._st.st_ino):
                os.unlink(self.tmp_path)
        except (OSError, AttributeError):
            pass

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None:
            self.close()
        else:
            self._abort()
