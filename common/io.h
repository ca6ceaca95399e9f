/*
 * io: byte sources and sinks, so the same reader/writer code runs on files, memory
 * (tests, fuzzers) and pipes.
 *
 * A struct src reads at absolute offsets (pread on files) and counts the bytes it served
 * in bytes_read, which tests use to prove random access touches only what it must.
 * A struct sink appends bytes (to a file descriptor or a memory buffer) and can fsync.
 */
#ifndef ACCELTRACE_IO_H
#define ACCELTRACE_IO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/buf.h"
#include "common/err.h"

struct src {
    int fd;              /* file descriptor, or -1 for memory */
    const uint8_t *mem;  /* memory source bytes (not owned) */
    uint64_t size;       /* total bytes available */
    uint64_t bytes_read; /* bytes served so far (statistics) */
};

/*
 * Opens path for reading as an input. Only regular files are inputs: a FIFO, device, socket
 * or folder is refused before anything is read (opening a FIFO would block until a writer
 * came, reading a device might never end). Returns the descriptor (>= 0; caller closes) and
 * *size_bytes (may be NULL), or ERR_NOINPUT (cannot open; errno kept), ERR_USAGE (not a
 * regular file) or ERR_IO, with a message naming the path.
 */
int io_open_input(const char *path, uint64_t *size_bytes, struct errmsg *e);

/* Opens a file source through io_open_input; 0, or its error with a message naming the
 * path. */
int src_open_file(struct src *s, const char *path, struct errmsg *e);
/* A source over memory the caller keeps alive. */
void src_init_mem(struct src *s, const void *data, size_t n);
/*
 * Reads up to n bytes at off into p; *got is what was read (short only at end of data).
 * 0 or ERR_IO.
 */
int src_read_at(struct src *s, uint64_t off, void *p, size_t n, size_t *got);
void src_close(struct src *s);

struct sink {
    int fd;          /* file descriptor, or -1 for memory */
    struct buf *mem; /* memory sink (not owned) */
    uint64_t offset; /* bytes written so far */
};

/* Creates/truncates path for writing (mode 0644); 0 or ERR_IO with a message. */
int sink_open_file(struct sink *k, const char *path, struct errmsg *e);
/*
 * Creates path for writing (mode 0644) only if nothing is there (O_CREAT | O_EXCL: an
 * existing file, or a link to one, is never truncated or followed). 0; ERR_USAGE when
 * path exists (errno EEXIST), ERR_IO otherwise; the message names the path.
 */
int sink_create_excl(struct sink *k, const char *path, struct errmsg *e);
void sink_init_mem(struct sink *k, struct buf *b);
/* Writes all n bytes; 0 or ERR_IO/ERR_NOMEM. */
int sink_write(struct sink *k, const void *p, size_t n);
/* fsync for files; no-op for memory. */
int sink_sync(struct sink *k);
/* Closes the file (not the memory buffer); 0 or ERR_IO. */
int sink_close(struct sink *k);

/*
 * Reads a whole file of at most max_bytes into a NUL-terminated buffer (*text, length
 * *len; free with mem_free). ERR_NOINPUT when it cannot be opened, ERR_USAGE when it is not
 * a regular file (io_open_input), ERR_LIMIT when larger than max_bytes, ERR_IO on a read
 * error, ERR_NOMEM; messages name the path.
 */
int io_read_file(const char *path, uint64_t max_bytes, char **text, size_t *len, struct errmsg *e);

/*
 * Removes path and, for a folder, everything below it, without following symbolic links
 * (a link is removed, not its target). A missing path is not an error. 0, ERR_IO (the
 * first entry that could not be removed stops the walk) or ERR_LIMIT (nesting deeper than
 * 32 or a path longer than 4095 bytes).
 */
int io_remove_tree(const char *path);

/*
 * Creates the folder path and every missing folder above it, like `mkdir -p`: new folders
 * get mode (less the umask), a folder that is already there is fine (also one reached
 * through a symbolic link). 0; ERR_IO when a part cannot be created or is there and is not
 * a folder (errno kept), ERR_LIMIT for a path of 4096 bytes or more, ERR_USAGE for an
 * empty one; the message names the path: "cannot create folder 'a/b': ...".
 */
int io_mkdir_p(const char *path, mode_t mode, struct errmsg *e);

/* fsyncs the directory holding path, so a rename in it is durable. */
int io_sync_parent_dir(const char *path);

/*
 * True when a and b name the same existing file: same st_dev and st_ino after following
 * links (so "x", "./x", a hard link and a symbolic link to x all match x). False when
 * either is NULL or cannot be stat'ed (an output that does not exist yet matches nothing).
 */
bool io_same_file(const char *a, const char *b);

/*
 * True when a and b name the same file, existing or not: io_same_file, or the same text
 * once their folders are made canonical ("out/x.csv" and "./out/../out/x.csv"), so two
 * outputs not yet written are told apart before either is.
 */
bool io_same_path(const char *a, const char *b);

/*
 * Refuses to let a command write over what it reads, or two of its outputs into one file:
 * compares every input with every output (temporaries included) by io_same_file, and the
 * outputs with each other by io_same_path. An input that is a folder (a checkpoint
 * directory) is compared through each of its entries, one level deep. NULL entries are
 * skipped. 0, or ERR_USAGE with "input 'A' and output 'B' are the same file" or "outputs
 * 'A' and 'B' are the same file" in e.
 */
int io_check_distinct(const char *const *inputs, size_t n_inputs, const char *const *outputs,
                      size_t n_outputs, struct errmsg *e);

/*
 * Test hook (I/O-fault injection): once n_bytes more bytes have reached file sinks,
 * sink_write writes what fits and then fails with errno = errnum (ENOSPC for a full disk).
 * io_fail_writes_after(0, 0) disarms it. Not thread-safe: for single-threaded tests.
 */
void io_fail_writes_after(uint64_t n_bytes, int errnum);

#endif
