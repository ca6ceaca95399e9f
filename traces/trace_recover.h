/*
 * trace_recover: turns the .partial file of a killed writer (or any damaged trace whose
 * header frame is intact) into a valid trace holding every complete frame before the
 * first incomplete or damaged one (DESIGN.md section 3). Frames are copied verbatim;
 * the index is rebuilt with keys from trace_record_key() and a new content hash.
 */
#ifndef ACCELTRACE_TRACE_RECOVER_H
#define ACCELTRACE_TRACE_RECOVER_H

#include <stdint.h>

#include "common/err.h"

struct trace_recover_result {
    uint64_t frames;         /* frames kept (header included) */
    uint64_t kept_bytes;     /* input bytes kept (preamble + kept frames) */
    uint64_t dropped_bytes;  /* input bytes after them (partial frame, index, garbage) */
    char stop[512];          /* why the copy stopped: "end of file" or the frame error */
};

/*
 * Reads in_path, writes out_path (through out_path + ".recovering", renamed when done;
 * in_path is never modified, and may not equal out_path). 0 on success (res filled),
 * ERR_DATA/ERR_FORMAT when not even the header frame is readable, ERR_IO on write errors;
 * e gets the message.
 */
int trace_recover(const char *in_path, const char *out_path, struct trace_recover_result *res,
                  struct errmsg *e);

#endif
