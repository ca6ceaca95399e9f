/*
 * trace_writer: writes a .atr trace (docs/design.md#the-trace-container, docs/trace-format.md).
 *
 * The writer creates NAME.atr.partial exclusively (O_EXCL; TRACE_WRITER_TMP_SUFFIX), writes
 * the preamble and the header frame, then one frame per trace_writer_append. Each frame is
 * durable on its own (length, codec, type, crc32c of the payload), so a killed writer leaves
 * a .partial file that trace_recover() turns into a valid trace. trace_writer_finish appends
 * the index frame and the trailer, fsyncs, renames NAME.atr.partial to NAME.atr (replacing a
 * trace already there) and fsyncs the directory.
 *
 * The .partial file is also the lock of NAME.atr: while it exists a second writer of the
 * same path is refused, never mixed in, so two concurrent captures give one valid trace and
 * one refusal (docs/trace-format.md, "Concurrent writers"). A write error (a full disk)
 * removes the temporary at once, and a writer freed without a successful finish removes it
 * too: only a killed process leaves a .partial, for recover.
 *
 * Records are protobuf-c Acceltrace__Record values owned by the caller; the writer packs
 * and compresses them before append returns. The writer keeps its own error message.
 * The content hash (XXH3-128 of every raw payload, traces/trace_hash.h) is computed as
 * frames are appended. A writer is used from one thread and starts none.
 */
#ifndef ACCELTRACE_TRACE_WRITER_H
#define ACCELTRACE_TRACE_WRITER_H

#include <stdbool.h>
#include <stdint.h>

#include "common/err.h"
#include "formats/trace.pb-c.h"
#include "traces/trace_key.h"

struct trace_writer;

/* The temporary beside the target: NAME.atr is written as NAME.atr TRACE_WRITER_TMP_SUFFIX. */
#define TRACE_WRITER_TMP_SUFFIX ".partial"

struct trace_writer_opts {
    int zstd_level;   /* default 3; 0 stores frames raw (codec 0) */
    int zstd_workers; /* zstd multithreading workers; 0 = none */
    bool fsync_each;  /* fsync after every frame (slow; default false) */
    /* Frames are also flushed (write(2)) at least every this many bytes; default 1 MiB. */
    uint64_t flush_bytes;
    /* ... and when this many seconds passed since the last write (checked at each
     * append; default 0.5; 0 off). Besides, an indexed frame of a new step key writes the
     * frames before it first, so a killed capture keeps every step it finished. */
    double flush_interval_s;
};

/* Defaults: level 3, no workers, no per-frame fsync. */
void trace_writer_opts_default(struct trace_writer_opts *o);

/*
 * Opens path ("run.atr"; the data goes to "run.atr.partial" until finish) and writes the
 * preamble and the header record. opts may be NULL. On failure *out is NULL, nothing is
 * left on disk, and the returned code is negative: ERR_USAGE when "run.atr.partial" already
 * exists (another writer, or a killed one to recover; it is not touched), ERR_IO when it
 * cannot be created or written; e (if not NULL) receives the code and message.
 */
int trace_writer_open(struct trace_writer **out, const char *path,
                      const struct trace_writer_opts *opts, const Acceltrace__TraceHeader *hdr,
                      struct errmsg *e);

/*
 * Reopens the .partial of path that a killed writer left, to append to it (a resumed
 * capture, capture/capture.h): cuts it to `length` bytes (the frames after a checkpoint
 * go), rebuilds the index rows and the content hash from the frames before that length as
 * trace_recover reads them (keys from trace_record_key), and continues after them. The
 * header frame in the file stays. The scan must find exactly `frames` frames (header
 * included) ending at `length`. On failure *out is NULL and the file stays (cut, when the
 * failure came after the cut): ERR_NOTFOUND when there is no .partial, ERR_USAGE when
 * another writer holds it, ERR_DATA when it is shorter or its frames disagree, ERR_IO.
 * After a successful reopen the writer behaves as one from trace_writer_open: free without
 * finish removes the .partial.
 */
int trace_writer_reopen(struct trace_writer **out, const char *path,
                        const struct trace_writer_opts *opts, uint64_t length, uint64_t frames,
                        struct errmsg *e);

/* Bytes of the .partial so far, written or buffered (the length a checkpoint records after
 * trace_writer_flush). */
uint64_t trace_writer_offset(const struct trace_writer *w);

/*
 * Appends one record as one frame. The record type is rec->body_case; key gives the
 * index keys (NULL: derived from the record by trace_record_key, traces/trace_key.h).
 * The frame reaches the file when the write buffer passes opts.flush_bytes, on
 * trace_writer_flush and on finish. 0 or a negative enum err; after an error the writer
 * refuses further appends.
 */
int trace_writer_append(struct trace_writer *w, const Acceltrace__Record *rec,
                        const struct trace_key *key);

/* Writes the buffered frames to the file (write(2), no fsync). 0 or negative. */
int trace_writer_flush(struct trace_writer *w);

/*
 * Appends index + trailer to the .partial and fsyncs it, without the rename: the file is a
 * complete trace under its temporary name, still held (locked) by w, for a caller that
 * reads it before the final trace exists (a capture that rewrites its records in another
 * order, capture/capture.h). Appends are refused afterwards; finish still renames it, and
 * free without finish removes it. 0 or negative (ERR_IO removes the temporary).
 */
int trace_writer_seal(struct trace_writer *w);

/*
 * Appends index + trailer (unless sealed), fsyncs, renames to the final name. 0 or negative; on a
 * write error (ERR_IO; "disk full writing 'run.atr.partial'" for ENOSPC) the temporary is removed.
 */
int trace_writer_finish(struct trace_writer *w);

/*
 * Frees the writer. Without a successful finish the .partial file it created is removed
 * (the caller gave up); a process killed before this leaves it for trace_recover().
 */
void trace_writer_free(struct trace_writer *w);

/*
 * Refuses to write path over an input: every one of the n_inputs inputs (weights, text, side
 * files, a checkpoint folder; NULL entries skipped) is compared by device and inode
 * (io_same_file, common/io.h) with path, with its temporary path TRACE_WRITER_TMP_SUFFIX
 * (which may exist when path does not) and with the n_side other outputs of the command,
 * which must also differ from path and from each other by name (io_same_path: "--csv X -o
 * X" is refused before either exists). A path that is an existing folder is refused too.
 * 0, or ERR_USAGE with "input 'A' and output 'B' are the same file", "outputs 'A' and 'B'
 * are the same file" or "output 'X' is a folder" in e. Call it before reading any input: a
 * capture then never loads weights it would replace, nor runs to fail at its end.
 */
int trace_writer_check_inputs(const char *path, const char *const *inputs, size_t n_inputs,
                              const char *const *side_outputs, size_t n_side, struct errmsg *e);

/* Last error message of w. */
const char *trace_writer_errmsg(const struct trace_writer *w);

/* Frames written so far (header included). */
uint64_t trace_writer_frames(const struct trace_writer *w);

#endif
