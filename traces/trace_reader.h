/*
 * trace_reader: reads a .atr trace (docs/design.md#the-trace-container, docs/trace-format.md).
 *
 * Streaming: trace_reader_next returns the records after the header in file order.
 * Random access: when the file has a valid index, trace_reader_find looks up the frame
 * for (type, step, layer, head) and reads only that frame. Every length read from the
 * file is bounded before use (payload <= 1 GiB, decompressed <= opts.max_record_bytes);
 * any violation is ERR_DATA/ERR_LIMIT with a message naming the file, the frame number
 * and its byte offset. The reader never crashes or allocates without bound on any input.
 *
 * Damaged traces (docs/trace-format.md "Damaged traces"): one policy for every opener. A
 * trace with a missing or unusable index, or frames that disagree with their entries, is
 * refused unless opts.allow_partial (the CLI's --allow-partial, process-wide through
 * trace_reader_global_allow_partial); accepted damage goes to the warning hook. An index
 * frame before the end and a content hash mismatch are data errors either way.
 *
 * Records returned to the caller are owned by the caller: free with trace_record_free.
 */
#ifndef ACCELTRACE_TRACE_READER_H
#define ACCELTRACE_TRACE_READER_H

#include <stdbool.h>
#include <stdint.h>

#include "common/err.h"
#include "common/io.h"
#include "formats/trace.pb-c.h"
#include "traces/trace_key.h"

struct trace_reader;

struct trace_reader_opts {
    uint64_t max_record_bytes; /* cap on a decompressed payload; default 1 GiB */
    int threads;               /* frames decoded in parallel by trace_reader_next: threads - 1
                                  worker threads decompress frames read ahead; 1 = none */
    bool ignore_index;         /* do not read the trailer/index (streaming only); such a
                                  reader is never refused as damaged */
    bool compute_hash;         /* hash payloads as they stream (trace_reader_computed_hash)
                                  and, at the end of the stream, compare with the index's
                                  content_hash (ERR_DATA on a mismatch); default true, and
                                  always done when the trace has no valid index */
    bool allow_partial;        /* accept a damaged trace (trace_reader_damage): one whose
                                  index is missing or unusable, or whose frames disagree with
                                  their index entries. Without it, open fails with ERR_DATA on
                                  a missing or damaged index and next() on the first frame
                                  that disagrees with its entry. Default:
                                  trace_reader_global_allow_partial */
    bool warn_damage;          /* hand accepted damage to the warning hook (default true); off
                                  for callers that report the damage themselves (verify, info,
                                  dump, recover) */
};

/*
 * Defaults: 1 GiB cap, 1 thread, index read, content hash computed and checked, damaged
 * traces refused unless trace_reader_global_allow_partial, damage warned.
 */
void trace_reader_opts_default(struct trace_reader_opts *o);

/*
 * Process-wide policy for damaged traces, set once by the program before it opens traces
 * (like progress_global_quiet), so openers deep in analyzers follow the command line:
 * trace_reader_opts_default copies the flag into opts.allow_partial (NULL opts too).
 */
extern bool trace_reader_global_allow_partial;

/*
 * Installs the function that receives, once per distinct message per process, the damage
 * every reader with allow_partial and warn_damage accepts ("no index (no trailer) ('f.atr'
 * index at offset N)", "frame does not match its index entry: ... ('f.atr' frame N at offset
 * O)"). Modules never print: the CLI installs a hook that writes a warning to stderr. NULL
 * removes it. The hook may be called from any thread that opens or reads a trace.
 */
void trace_reader_set_warn_hook(void (*hook)(const char *msg));

/*
 * Opens a trace file (or, with _open_src, any source; the source stays owned by the
 * caller and must outlive the reader) and reads preamble and header. name is used in
 * messages. On failure *out is NULL, and e (when not NULL) receives the code and message.
 */
int trace_reader_open(struct trace_reader **out, const char *path,
                      const struct trace_reader_opts *opts, struct errmsg *e);
int trace_reader_open_src(struct trace_reader **out, struct src *s, const char *name,
                          const struct trace_reader_opts *opts, struct errmsg *e);

void trace_reader_free(struct trace_reader *r);

/* Format version from the preamble (major is always 1 for an open reader). */
void trace_reader_version(const struct trace_reader *r, unsigned *major, unsigned *minor);

/* The header record (owned by the reader). */
const Acceltrace__TraceHeader *trace_reader_header(const struct trace_reader *r);

/*
 * Next record in file order after the header (the index frame is not returned).
 * Returns 1 with *rec set (caller frees with trace_record_free), 0 at the end, <0 on error.
 * When key is not NULL it receives the frame's index keys (-1 when unknown).
 * Errors besides a damaged frame (all ERR_DATA, naming file, frame and offset): an index
 * frame anywhere but last before the trailer; with a valid index, a frame whose type,
 * offset, sizes or keys (trace_record_key of the decoded record) disagree with its entry
 * (without opts.allow_partial; with it the damage is recorded and the record's own keys
 * are used from there on); when hashing, a content hash of the streamed payloads that
 * differs from the index's (reported instead of the end, 0, once); and a record whose
 * fields disagree with each other: a SalcaSelect whose list is not `count` indices below
 * n_ctx (trace_salca_select_validate; also for trace_reader_find).
 */
int trace_reader_next(struct trace_reader *r, Acceltrace__Record **rec, struct trace_key *key);

/*
 * Random access through the index: the record of type `type` (Record.body field number)
 * with the given keys. 1 found (*rec set), 0 not present, <0 error (ERR_NOTFOUND when the
 * trace has no valid index; ERR_DATA when the frame found differs from its entry, keys of
 * the decoded record included).
 */
int trace_reader_find(struct trace_reader *r, uint32_t type, int32_t step, int32_t layer,
                      int32_t head, Acceltrace__Record **rec);

/* The index (NULL when the file has none or it is invalid). Owned by the reader. */
const Acceltrace__TraceIndex *trace_reader_index(const struct trace_reader *r);

/*
 * Hex content hash of the trace (XXH3-128 over the decompressed payloads of every frame
 * before the index, traces/trace_hash.h; a SHA-256 in traces written before XXH3); the
 * index's when present, otherwise computed as frames are read.
 */
const char *trace_reader_content_hash(const struct trace_reader *r);

/*
 * Name of the algorithm of the content hash and of the computed hash: "xxh3-128", or
 * "sha256" for an older trace whose index holds a SHA-256. Static storage.
 */
const char *trace_reader_hash_name(const struct trace_reader *r);

/* Statistics: frames read, bytes of the source served, current offset. */
uint64_t trace_reader_frames_read(const struct trace_reader *r);
uint64_t trace_reader_bytes_read(const struct trace_reader *r);

/*
 * Byte offset just past the last frame trace_reader_next returned (after open: past the
 * header frame). After an error it is the end of the intact prefix.
 */
uint64_t trace_reader_offset(const struct trace_reader *r);

/*
 * Moves a reader that has returned no record yet so that trace_reader_next continues with
 * frame number `frame` at byte `offset` (what trace_reader_offset and the frame number
 * after the last record reported in an earlier read; a resumed replay). When the reader
 * hashes payloads (opts.compute_hash, or no valid index) the frames before the target are
 * still read, checked and hashed, without being unpacked, so trace_reader_computed_hash
 * covers the whole trace; otherwise the index must list `frame` at `offset` (or offset is
 * the end of the stream) and nothing is read. 0; ERR_USAGE after a record was returned;
 * ERR_DATA (message naming the file and offset) when the target is not that frame's start,
 * or a skipped frame is damaged.
 */
int trace_reader_seek(struct trace_reader *r, uint64_t offset, uint64_t frame);

/* What the reader knows about one frame. */
struct trace_frame_info {
    uint64_t number;       /* frame number; the header is frame 0 */
    uint64_t offset;       /* byte offset of the frame header */
    uint32_t type;         /* record type (Record.body field number) */
    uint8_t codec;         /* 0 raw, 1 zstd */
    uint32_t stored_bytes; /* payload_len */
    uint64_t raw_bytes;    /* decompressed payload bytes */
    struct trace_key key;  /* index keys */
};

/* The frame of the record trace_reader_next returned last (the header frame after open). */
const struct trace_frame_info *trace_reader_last_frame(const struct trace_reader *r);

/*
 * The first damage the reader accepted under opts.allow_partial (a missing or unusable
 * index at open, or the first frame that disagrees with its index entry while streaming),
 * as the message the warning hook got; NULL while none was seen. With ignore_index the
 * index is not judged. Owned by the reader.
 */
const char *trace_reader_damage(const struct trace_reader *r);

/*
 * State of the index: 0 when it was read and is consistent; otherwise the code
 * (ERR_NOTFOUND no trailer, ERR_DATA/ERR_LIMIT/ERR_FORMAT damaged) and *msg (when not
 * NULL) the message. With opts.ignore_index: ERR_NOTFOUND, "index not read".
 */
int trace_reader_index_status(const struct trace_reader *r, const char **msg);

/*
 * Content hash (hex, the algorithm of trace_reader_hash_name) over the decompressed
 * payloads of the frames read so far (header included), independent of the index; after
 * the last frame it is what the index's content_hash must equal. Needs opts.compute_hash
 * when the trace has a valid index (NULL otherwise). The string is valid until the next
 * call on r.
 */
const char *trace_reader_computed_hash(struct trace_reader *r);

/*
 * Payload bytes of the frame last returned by trace_reader_next: as stored and
 * decompressed. Valid until the next call that reads a frame. For copying frames verbatim.
 */
void trace_reader_last_payload(const struct trace_reader *r, const uint8_t **stored,
                               size_t *stored_len, const uint8_t **raw, size_t *raw_len);

const char *trace_reader_errmsg(const struct trace_reader *r);

/* Frees a record returned by the reader. NULL is a no-op. */
void trace_record_free(Acceltrace__Record *rec);

/* Name of a record type ("disc_mask") from its body field number; "unknown" otherwise. */
const char *trace_record_type_name(uint32_t type);

#endif
