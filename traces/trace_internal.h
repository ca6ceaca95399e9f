/*
 * trace_internal: constants and helpers shared by the files of traces/ only (writer,
 * reader, verify, recover). Not a public contract; see docs/trace-format.md.
 */
#ifndef ACCELTRACE_TRACE_INTERNAL_H
#define ACCELTRACE_TRACE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <protobuf-c/protobuf-c.h>

#include "common/err.h"
#include "formats/trace.pb-c.h"
#include "formats/trace_format.h"
#include "traces/trace_key.h"

/* The container's constants come from formats/trace_format.tab (one table for C and
 * Python; docs/trace-format.md#format-source). */
#define TRACE_MAGIC TRACE_FORMAT_MAGIC
#define TRACE_TRAILER_MAGIC TRACE_FORMAT_TRAILER_MAGIC
#define TRACE_MAJOR TRACE_FORMAT_MAJOR
#define TRACE_MINOR TRACE_FORMAT_MINOR
#define TRACE_PREAMBLE_BYTES TRACE_FORMAT_PREAMBLE_BYTES
#define TRACE_FRAME_HEADER_BYTES TRACE_FORMAT_FRAME_HEADER_BYTES
#define TRACE_TRAILER_BYTES TRACE_FORMAT_TRAILER_BYTES
#define TRACE_MAX_PAYLOAD TRACE_FORMAT_MAX_PAYLOAD /* payload_len <= 1 GiB */
#define TRACE_CODEC_RAW TRACE_FORMAT_CODEC_RAW
#define TRACE_CODEC_ZSTD TRACE_FORMAT_CODEC_ZSTD
#define TRACE_TYPE_HEADER TRACE_FORMAT_TYPE_HEADER
#define TRACE_TYPE_INDEX TRACE_FORMAT_TYPE_INDEX
#define TRACE_MAX_TYPE TRACE_FORMAT_MAX_TYPE

static inline void trace_put_u16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}

static inline void trace_put_u32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static inline void trace_put_u64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static inline uint16_t trace_get_u16(const uint8_t *p)
{
    return (uint16_t)(p[0] | (p[1] << 8));
}

static inline uint32_t trace_get_u32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline uint64_t trace_get_u64(const uint8_t *p)
{
    return (uint64_t)trace_get_u32(p) | (uint64_t)trace_get_u32(p + 4) << 32;
}

/* One index row as kept in memory by the writer and recover. */
struct trace_entry {
    uint64_t offset;
    uint32_t type;
    struct trace_key key;
    uint32_t stored_bytes;
    uint64_t raw_bytes;
};

/*
 * protobuf-c allocator that refuses to have more than `limit` bytes live at once (so an
 * absurd repeated count cannot allocate beyond the cap). exceeded tells a refused
 * allocation from a parse error. Records unpacked with it are freed by trace_record_free.
 */
struct trace_budget {
    uint64_t limit;
    uint64_t used;
    bool exceeded;
};
void trace_budget_allocator(ProtobufCAllocator *a, struct trace_budget *b);

/* Whether the record type is a Record.body field number this build knows. */
bool trace_type_known(uint32_t type);

/*
 * A writer that copies frames verbatim (used by recover): creates tmp_path exclusively
 * (O_EXCL; ERR_USAGE when it exists), writes the preamble; frames are appended with
 * trace_writer_append_frame; finish renames tmp_path to final_path.
 */
struct trace_writer;
int trace_writer_open_raw(struct trace_writer **out, const char *final_path, const char *tmp_path,
                          struct errmsg *e);
/* Appends an already encoded frame: stored payload bytes (codec as given), raw = the
 * decompressed payload (for the content hash), key for the index. */
int trace_writer_append_frame(struct trace_writer *w, uint32_t type, uint8_t codec,
                              const uint8_t *stored, size_t stored_len, const uint8_t *raw,
                              size_t raw_len, const struct trace_key *key);

struct trace_writer_opts;
struct trace_frame_info;
/*
 * A writer with the header of trace_writer_open whose temporary is tmp_path (not
 * final_path + ".partial"): a rewrite of a trace whose own .partial is its input
 * (trace_reorder). Same errors as trace_writer_open.
 */
int trace_writer_open_tmp(struct trace_writer **out, const char *final_path, const char *tmp_path,
                          const struct trace_writer_opts *opts, const Acceltrace__TraceHeader *hdr,
                          struct errmsg *e);

struct trace_reader;
/*
 * Random access by index position (entry 0 is the header): reads the frame of entry pos,
 * checks its crc, decompresses and decodes it and checks it against the entry, keys of the
 * decoded record included (as trace_reader_find). *fi and the payloads (as stored and
 * decompressed) stay valid until the next call that reads a frame. 0; ERR_NOTFOUND without
 * a valid index, ERR_USAGE when pos is past the index, ERR_DATA naming file, frame, offset.
 */
int trace_reader_entry_frame(struct trace_reader *r, uint64_t pos,
                             const struct trace_frame_info **fi, const uint8_t **stored,
                             size_t *stored_len, const uint8_t **raw, size_t *raw_len);

/* Why the index is unusable (as trace_reader_index_status) without the position; *offset
 * is the byte offset concerned. 0 when the index is fine. */
struct trace_reader;
int trace_reader_index_problem(const struct trace_reader *r, const char **what, uint64_t *offset);
/*
 * Whether frame fi agrees with index entry en: offset, type, stored and raw bytes, and the
 * keys rk recomputed from the decoded record (trace_record_key). 0, or ERR_DATA with *what
 * saying which field differs ("index entry disagrees with the frame: layer 12345 in the
 * index, 0 in the frame"), without the position. Shared by the reader and verify.
 */
struct trace_frame_info;
int trace_entry_check(const Acceltrace__IndexEntry *en, const struct trace_frame_info *fi,
                      const struct trace_key *rk, char *what, size_t what_len);
/* Offset of the next frame the stream would read. */
uint64_t trace_reader_stream_end(const struct trace_reader *r);
/* Name used in messages. */
const char *trace_reader_name(const struct trace_reader *r);

#endif
