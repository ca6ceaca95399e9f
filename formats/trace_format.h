/*
 * trace_format: the constants of the .atr container, GENERATED from formats/trace_format.tab by
 * scripts/gen_trace_format.py (`make format-tables`); edit the table, not this file.
 * The Python package reads the same table as python/acceltrace/_format.py, so both
 * sides change together (docs/trace-format.md#format-source). traces/trace_internal.h
 * uses these values; tests/test_trace_format.c checks the ones other modules keep.
 */
#ifndef ACCELTRACE_TRACE_FORMAT_H
#define ACCELTRACE_TRACE_FORMAT_H

#include <stdint.h>

/* Integers above 0xffff are uint64_t. */
#define TRACE_FORMAT_MAGIC "ACCTRACE"
#define TRACE_FORMAT_TRAILER_MAGIC "ACCTRIDX"
#define TRACE_FORMAT_MAJOR 1
#define TRACE_FORMAT_MINOR 0
#define TRACE_FORMAT_PREAMBLE_BYTES 16
#define TRACE_FORMAT_FRAME_HEADER_BYTES 12
#define TRACE_FORMAT_TRAILER_BYTES 16
#define TRACE_FORMAT_MAX_PAYLOAD UINT64_C(1073741824)
#define TRACE_FORMAT_CRC32C_POLY UINT64_C(0x82F63B78)
#define TRACE_FORMAT_CRC32C_CHECK UINT64_C(0xE3069283)
#define TRACE_FORMAT_CODEC_RAW 0
#define TRACE_FORMAT_CODEC_ZSTD 1
#define TRACE_FORMAT_TYPE_HEADER 1
#define TRACE_FORMAT_TYPE_INDEX 10
#define TRACE_FORMAT_MAX_TYPE 255
#define TRACE_FORMAT_VARINT_MAX_BYTES 10
#define TRACE_FORMAT_SALCA_MAX_CTX UINT64_C(67108864)

/* Index keys (record, step field, layer field, head field; - where -1). */
/*   disc_step: k, -, - */
/*   disc_mask: step, block, head */
/*   salca_prefill: -, l, g */
/*   salca_select: t, l, h */
/*   salca_token: t, -, - */
/*   kura_step: step (signed), -, - */
/*   kura_tiles: step (signed), -, - */
/*   test: step, layer (signed), head (signed) */

/* The reader's error texts with %d for any integer (C prints them with %u,
 * %llu or %zu). */
#define TRACE_FORMAT_MSG_BAD_MAGIC "not an acceltrace trace (bad magic)"
#define TRACE_FORMAT_MSG_TRUNC_PREAMBLE "truncated preamble"
#define TRACE_FORMAT_MSG_BAD_MAJOR "unsupported trace format %d.%d (this reader reads %d.x)"
#define TRACE_FORMAT_MSG_BAD_FLAGS "unknown preamble flags 0x%x"
#define TRACE_FORMAT_MSG_FIRST_NOT_HEADER "first frame is a %s record, not the header"
#define TRACE_FORMAT_MSG_TRUNC_FRAME_HEADER "truncated frame header (%d of 12 bytes)"
#define TRACE_FORMAT_MSG_RESERVED "nonzero reserved field in frame header"
#define TRACE_FORMAT_MSG_BAD_CODEC "unknown codec %d"
#define TRACE_FORMAT_MSG_BAD_TYPE "unknown record type %d"
#define TRACE_FORMAT_MSG_PAYLOAD_LIMIT "frame payload of %d bytes exceeds the 1 GiB limit"
#define TRACE_FORMAT_MSG_TRUNC_PAYLOAD "truncated frame payload (%d bytes declared, %d present)"
#define TRACE_FORMAT_MSG_RECORD_CAP "record of %d bytes exceeds the cap of %d bytes"
#define TRACE_FORMAT_MSG_BAD_CRC "bad checksum"
#define TRACE_FORMAT_MSG_NOT_ZSTD "payload is not a zstd frame"
#define TRACE_FORMAT_MSG_ZSTD_DECLARES "zstd frame declares %d bytes, above the cap of %d bytes"
#define TRACE_FORMAT_MSG_DECOMPRESSED_CAP "decompressed record exceeds the cap of %d bytes"
#define TRACE_FORMAT_MSG_BAD_ZSTD "bad zstd data: %s"
#define TRACE_FORMAT_MSG_NOT_ONE_ZSTD "payload is not exactly one zstd frame"
#define TRACE_FORMAT_MSG_TRUNC_ZSTD "truncated zstd data"
#define TRACE_FORMAT_MSG_ZSTD_SIZE "zstd frame size mismatch"
#define TRACE_FORMAT_MSG_CANNOT_PARSE "cannot parse the %s record"
#define TRACE_FORMAT_MSG_TYPE_MISMATCH "record type mismatch (frame header %d, record %d)"
#define TRACE_FORMAT_MSG_NO_INDEX "no index (no trailer)"
#define TRACE_FORMAT_MSG_BAD_INDEX_OFFSET "bad index offset %d in the trailer"
#define TRACE_FORMAT_MSG_BAD_INDEX_FRAME "bad index frame: %s"
#define TRACE_FORMAT_MSG_TRAILER_NOT_INDEX "trailer points at a %s frame, not the index"
#define TRACE_FORMAT_MSG_INDEX_GAP "%d bytes between the index frame and the trailer"
#define TRACE_FORMAT_MSG_INDEX_INCONSISTENT "inconsistent index (frame count, entries or hash)"
#define TRACE_FORMAT_MSG_BAD_INDEX_ENTRY "bad index entry %d"
#define TRACE_FORMAT_MSG_INDEX_END "index entries end at offset %d, not at the index"
#define TRACE_FORMAT_MSG_ENTRY_DISAGREES                                                           \
    "index entry disagrees with the frame: %s %d in the index, %d in the frame"
#define TRACE_FORMAT_MSG_INDEX_NOT_LAST "index frame before the end of the trace (%d bytes follow)"
#define TRACE_FORMAT_MSG_INDEX_NOT_INDEXING                                                        \
    "index frame that does not index the %d frames before it"
#define TRACE_FORMAT_MSG_SECOND_HEADER "second header record"
#define TRACE_FORMAT_MSG_BEYOND_INDEX "frame beyond the %d frames of the index"
#define TRACE_FORMAT_MSG_HASH_MISMATCH "content hash mismatch: index %s, frames %s"
#define TRACE_FORMAT_MSG_SALCA_CTX "n_ctx %d above %d (step %d layer %d head %d)"
#define TRACE_FORMAT_MSG_SALCA_COUNT "count %d above n_ctx %d (step %d layer %d head %d)"
#define TRACE_FORMAT_MSG_SALCA_NOT_ASCENDING                                                       \
    "bad selection list: not ascending varints below n_ctx %d (step %d layer %d head %d)"
#define TRACE_FORMAT_MSG_SALCA_COUNT_DIFFERS                                                       \
    "bad selection list: %d indices, count says %d (step %d layer %d head %d)"

#endif
