/*
 * trace_recover: turns the .partial file of a killed writer (or any damaged trace whose
 * header frame is intact) into a valid trace holding every complete frame before the
 * first incomplete or damaged one (docs/design.md#the-trace-container). Frames are copied verbatim;
 * the index is rebuilt with keys from trace_record_key() and a new content hash.
 */
#ifndef ACCELTRACE_TRACE_RECOVER_H
#define ACCELTRACE_TRACE_RECOVER_H

#include <stdint.h>

#include "common/err.h"

struct trace_recover_result {
    uint64_t frames;        /* frames kept (header included) */
    uint64_t kept_bytes;    /* input bytes kept (preamble + kept frames) */
    uint64_t dropped_bytes; /* input bytes after them (partial frame, index, garbage) */
    char stop[512];         /* why the copy stopped: "end of file" or the frame error */
};

/*
 * Reads in_path, writes out_path through out_path + ".recovering" (created with O_EXCL,
 * fsynced, renamed over out_path when done; removed on a write error). in_path is never
 * modified: when it is the same file as out_path or as that temporary (by st_dev/st_ino,
 * so "./x" and hard links count) recover refuses with ERR_USAGE, as it does when the
 * temporary already exists. 0 on success (res filled), ERR_DATA/ERR_FORMAT when not even
 * the header frame is readable, ERR_IO on write errors; e gets the message.
 */
int trace_recover(const char *in_path, const char *out_path, struct trace_recover_result *res,
                  struct errmsg *e);

#endif
