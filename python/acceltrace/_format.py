"""The constants of the .atr container, GENERATED from formats/trace_format.tab by
scripts/gen_trace_format.py (`make format-tables`); edit the table, not this file.
The C side reads the same table as formats/trace_format.h
(docs/trace-format.md#format-source)."""

MAGIC = b"ACCTRACE"
TRAILER_MAGIC = b"ACCTRIDX"
MAJOR = 1
MINOR = 0
PREAMBLE_BYTES = 16
FRAME_HEADER_BYTES = 12
TRAILER_BYTES = 16
MAX_PAYLOAD = 1073741824
CRC32C_POLY = 0x82F63B78
CRC32C_CHECK = 0xE3069283
CODEC_RAW = 0
CODEC_ZSTD = 1
TYPE_HEADER = 1
TYPE_INDEX = 10
MAX_TYPE = 255
VARINT_MAX_BYTES = 10
SALCA_MAX_CTX = 67108864

#: record name -> ((field, signed) or None for step, layer, head)
KEYS = {
    'disc_step': (('k', False), None, None),
    'disc_mask': (('step', False), ('block', False), ('head', False)),
    'salca_prefill': (None, ('l', False), ('g', False)),
    'salca_select': (('t', False), ('l', False), ('h', False)),
    'salca_token': (('t', False), None, None),
    'kura_step': (('step', True), None, None),
    'kura_tiles': (('step', True), None, None),
    'test': (('step', False), ('layer', True), ('head', True)),
}

#: the reader's error texts (printf-style, % applied by the caller)
MSG = {
    'BAD_MAGIC': 'not an acceltrace trace (bad magic)',
    'TRUNC_PREAMBLE': 'truncated preamble',
    'BAD_MAJOR': 'unsupported trace format %d.%d (this reader reads %d.x)',
    'BAD_FLAGS': 'unknown preamble flags 0x%x',
    'FIRST_NOT_HEADER': 'first frame is a %s record, not the header',
    'TRUNC_FRAME_HEADER': 'truncated frame header (%d of 12 bytes)',
    'RESERVED': 'nonzero reserved field in frame header',
    'BAD_CODEC': 'unknown codec %d',
    'BAD_TYPE': 'unknown record type %d',
    'PAYLOAD_LIMIT': 'frame payload of %d bytes exceeds the 1 GiB limit',
    'TRUNC_PAYLOAD': 'truncated frame payload (%d bytes declared, %d present)',
    'RECORD_CAP': 'record of %d bytes exceeds the cap of %d bytes',
    'BAD_CRC': 'bad checksum',
    'NOT_ZSTD': 'payload is not a zstd frame',
    'ZSTD_DECLARES': 'zstd frame declares %d bytes, above the cap of %d bytes',
    'DECOMPRESSED_CAP': 'decompressed record exceeds the cap of %d bytes',
    'BAD_ZSTD': 'bad zstd data: %s',
    'NOT_ONE_ZSTD': 'payload is not exactly one zstd frame',
    'TRUNC_ZSTD': 'truncated zstd data',
    'ZSTD_SIZE': 'zstd frame size mismatch',
    'CANNOT_PARSE': 'cannot parse the %s record',
    'TYPE_MISMATCH': 'record type mismatch (frame header %d, record %d)',
    'NO_INDEX': 'no index (no trailer)',
    'BAD_INDEX_OFFSET': 'bad index offset %d in the trailer',
    'BAD_INDEX_FRAME': 'bad index frame: %s',
    'TRAILER_NOT_INDEX': 'trailer points at a %s frame, not the index',
    'INDEX_GAP': '%d bytes between the index frame and the trailer',
    'INDEX_INCONSISTENT': 'inconsistent index (frame count, entries or hash)',
    'BAD_INDEX_ENTRY': 'bad index entry %d',
    'INDEX_END': 'index entries end at offset %d, not at the index',
    'ENTRY_DISAGREES': 'index entry disagrees with the frame: %s %d in the index, %d in the frame',
    'INDEX_NOT_LAST': 'index frame before the end of the trace (%d bytes follow)',
    'INDEX_NOT_INDEXING': 'index frame that does not index the %d frames before it',
    'SECOND_HEADER': 'second header record',
    'BEYOND_INDEX': 'frame beyond the %d frames of the index',
    'HASH_MISMATCH': 'content hash mismatch: index %s, frames %s',
    'SALCA_CTX': 'n_ctx %d above %d (step %d layer %d head %d)',
    'SALCA_COUNT': 'count %d above n_ctx %d (step %d layer %d head %d)',
    'SALCA_NOT_ASCENDING': 'bad selection list: not ascending varints below n_ctx %d (step %d layer %d head %d)',
    'SALCA_COUNT_DIFFERS': 'bad selection list: %d indices, count says %d (step %d layer %d head %d)',
}
