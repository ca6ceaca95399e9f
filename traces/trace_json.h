/*
 * trace_json: prints any protobuf-c message as one line of JSON, driven by its descriptor,
 * so every record type of every workload dumps without per-type code.
 *
 * Mapping (docs/trace-format.md, "JSON form"): an object with every field under its
 * .proto name, in field-number order; proto3 scalars are printed even when zero;
 * unset submessages and unset oneof members are omitted; repeated fields are arrays;
 * enums are their value names (the number when unknown); 64-bit integers are JSON numbers;
 * floats print with 9 and doubles with 17 significant digits, NaN and infinities as the
 * strings "NaN", "Infinity", "-Infinity"; bytes are base64 (RFC 4648, with padding) or
 * lowercase hex; strings are escaped, invalid UTF-8 bytes become U+FFFD.
 */
#ifndef ACCELTRACE_TRACE_JSON_H
#define ACCELTRACE_TRACE_JSON_H

#include <protobuf-c/protobuf-c.h>

#include "common/buf.h"

enum trace_json_bytes {
    TRACE_JSON_BASE64 = 0,
    TRACE_JSON_HEX = 1,
};

/* Appends m as a JSON object (no newline) to out. 0 or ERR_NOMEM. */
int trace_json_append(struct buf *out, const ProtobufCMessage *m, enum trace_json_bytes bytes);

/* Appends s as a JSON string literal (quoted, escaped) to out. 0 or ERR_NOMEM. */
int trace_json_append_string(struct buf *out, const char *s, size_t n);

#endif
