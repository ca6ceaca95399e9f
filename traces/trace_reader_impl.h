/*
 * trace_reader_impl: what the parts of the .atr reader share, private to
 * traces/trace_reader*.c (the public contract is trace_reader.h). trace_reader.c opens,
 * streams (with its read-ahead ring and worker threads), finds and seeks;
 * trace_reader_frame.c reads, decompresses and unpacks one frame (struct job);
 * trace_reader_index.c loads and checks the trailer and index.
 */
#ifndef ACCELTRACE_TRACE_READER_IMPL_H
#define ACCELTRACE_TRACE_READER_IMPL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <zstd.h>

#include "common/buf.h"
#include "common/err.h"
#include "traces/trace_hash.h"
#include "traces/trace_internal.h"
#include "traces/trace_reader.h"

#define BATCH_STORED_BYTES (64u << 20) /* stop reading ahead past this many payload bytes */
#define BATCH_RAW_BYTES (256u << 20)   /* ... or past this many declared decompressed bytes */

/* State of a slot of the read-ahead ring (threads > 1). */
enum job_state { JOB_FREE, JOB_READ, JOB_BUSY, JOB_DONE };

struct job {
    struct trace_frame_info fi;
    uint32_t crc;
    struct buf stored;
    struct buf rawbuf;
    const uint8_t *raw;
    size_t raw_len;
    Acceltrace__Record *rec;
    int rc;
    struct errmsg err;
    enum job_state state; /* guarded by trace_reader.mu */
    uint64_t declared;    /* decompressed bytes counted against BATCH_RAW_BYTES */
};

struct worker {
    struct trace_reader *r;
    int idx; /* its zstd context */
    pthread_t thread;
};

struct sort_key {
    uint32_t type;
    int32_t step, layer, head;
    uint32_t pos;
};

struct trace_reader {
    struct src own;
    struct src *src;
    char *name;
    struct trace_reader_opts opts;
    struct errmsg err;
    Acceltrace__Record *header_rec;
    Acceltrace__Record *index_rec; /* only when the index is valid */
    const Acceltrace__TraceIndex *index;
    struct errmsg index_err;  /* code 0: index fine; else the full message */
    struct errmsg index_what; /* the same without the position */
    uint64_t index_problem_offset;
    uint64_t index_offset;
    struct sort_key *order;
    uint64_t pos; /* offset of the next frame to read */
    uint64_t end; /* index_offset with a valid index, else the file size */
    uint64_t next_number;
    ZSTD_DCtx **dctx;
    int n_dctx;
    struct job *jobs;
    size_t batch, n_jobs, job_next;        /* threads > 1: ring of batch slots, head job_next */
    uint64_t ahead_stored, ahead_declared; /* of the n_jobs frames in the ring */
    struct worker *workers;
    int n_workers;          /* started worker threads (threads - 1) */
    bool sync_ready;        /* mu and the condition variables exist */
    pthread_mutex_t mu;     /* guards job states, job_next, n_jobs, stop */
    pthread_cond_t work_cv; /* a frame was read, or stop */
    pthread_cond_t done_cv; /* a worker finished a frame */
    bool caller_waiting;
    bool stop;
    int pending_rc; /* read error after the current batch */
    struct errmsg pending_err;
    bool at_end;
    int sticky; /* first error of next(); repeated afterwards */
    struct job find_job;
    struct trace_frame_info last;
    const struct job *last_job;
    struct trace_hash hash; /* the index's algorithm; XXH3-128 without an index */
    char hash_hex[TRACE_HASH_HEX_MAX];
    uint64_t frames_read;
    unsigned major, minor;
    bool hashing;         /* opts.compute_hash or no valid index */
    struct errmsg damage; /* first damage accepted under allow_partial (code 0: none) */
    bool index_mismatch;  /* a frame disagreed with the index: entries no longer used */
    bool end_checked;     /* the end-of-stream content hash check ran */
};

/* ---- trace_reader.c ---- */

/* Records damage accepted under allow_partial (the first one is kept) and warns. */
void tr_accept_damage(struct trace_reader *r, const char *msg);

/* ---- trace_reader_frame.c ---- */

/* "<what> ('<file>' frame N at offset O)" into e; returns code. */
int tr_frame_err(struct errmsg *e, int code, const char *name, uint64_t number, uint64_t offset,
                 const char *fmt, ...) __attribute__((format(printf, 6, 7)));

/* Empties j for the next frame (its buffers kept); tr_job_release frees them. */
void tr_job_reset(struct job *j);
void tr_job_release(struct job *j);

/*
 * Reads the frame header at off and its payload into j->stored, checking every field
 * against the bytes left before `end`. Errors go to e.
 */
int tr_read_frame(struct trace_reader *r, uint64_t off, uint64_t end, uint64_t number,
                  struct job *j, struct errmsg *e);

/*
 * Checks the crc and decompresses j (thread-safe given its own dctx), at most cap bytes.
 * Unpacking is left to tr_unpack_job on the consumer's thread, so records are allocated
 * and freed by the same thread. Both return 0 or a negative err with j->err set.
 */
int tr_decompress_job(struct job *j, ZSTD_DCtx *d, uint64_t cap, const char *name);
int tr_unpack_job(struct job *j, uint64_t cap, const char *name);

/* tr_decompress_job + tr_unpack_job. */
int tr_decode_job(struct job *j, ZSTD_DCtx *d, uint64_t cap, const char *name);

/* ---- trace_reader_index.c ---- */

/* qsort order of struct sort_key: type, step, layer, head, then file position. */
int tr_cmp_sort_key(const void *a, const void *b);

/* Records why the index is unusable: `what` and the byte offset it concerns. */
void tr_index_problem(struct trace_reader *r, int code, uint64_t off, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Reads and checks trailer and index; on any problem leaves r->index NULL with index_err. */
void tr_load_index(struct trace_reader *r, uint64_t header_end);

#endif
