#include "traces/trace_json.h"

#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "common/err.h"

/* Length of the valid UTF-8 sequence at p (1..4), or 0 when invalid. */
static size_t utf8_len(const uint8_t *p, size_t n)
{
    uint8_t c = p[0];
    size_t len;
    uint32_t min;
    if (c < 0x80)
        return 1;
    if ((c & 0xe0) == 0xc0) {
        len = 2;
        min = 0x80;
    } else if ((c & 0xf0) == 0xe0) {
        len = 3;
        min = 0x800;
    } else if ((c & 0xf8) == 0xf0) {
        len = 4;
        min = 0x10000;
    } else {
        return 0;
    }
    if (len > n)
        return 0;
    uint32_t cp = c & (0x7f >> len);
    for (size_t i = 1; i < len; i++) {
        if ((p[i] & 0xc0) != 0x80)
            return 0;
        cp = (cp << 6) | (p[i] & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
        return 0;
    return len;
}

int trace_json_append_string(struct buf *out, const char *s, size_t n)
{
    const uint8_t *p = (const uint8_t *)s;
    int rc = buf_append(out, "\"", 1);
    size_t i = 0;
    while (!rc && i < n) {
        uint8_t c = p[i];
        if (c == '"' || c == '\\') {
            char e[2] = {'\\', (char)c};
            rc = buf_append(out, e, 2);
            i++;
        } else if (c < 0x20) {
            switch (c) {
            case '\n':
                rc = buf_append(out, "\\n", 2);
                break;
            case '\t':
                rc = buf_append(out, "\\t", 2);
                break;
            case '\r':
                rc = buf_append(out, "\\r", 2);
                break;
            default:
                rc = buf_printf(out, "\\u%04x", c);
                break;
            }
            i++;
        } else if (c < 0x80) {
            rc = buf_append(out, &p[i], 1);
            i++;
        } else {
            size_t l = utf8_len(p + i, n - i);
            if (l) {
                rc = buf_append(out, &p[i], l);
                i += l;
            } else {
                rc = buf_append(out, "\\ufffd", 6);
                i++;
            }
        }
    }
    if (!rc)
        rc = buf_append(out, "\"", 1);
    return rc;
}

static int append_bytes(struct buf *out, const ProtobufCBinaryData *b, enum trace_json_bytes mode)
{
    static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    static const char hex[] = "0123456789abcdef";
    size_t need = mode == TRACE_JSON_HEX ? b->len * 2 : (b->len + 2) / 3 * 4;
    int rc = buf_reserve(out, need + 2);
    if (rc)
        return rc;
    char *o = (char *)out->data + out->len;
    *o++ = '"';
    if (mode == TRACE_JSON_HEX) {
        for (size_t i = 0; i < b->len; i++) {
            *o++ = hex[b->data[i] >> 4];
            *o++ = hex[b->data[i] & 15];
        }
    } else {
        size_t i = 0;
        for (; i + 3 <= b->len; i += 3) {
            uint32_t v =
                (uint32_t)b->data[i] << 16 | (uint32_t)b->data[i + 1] << 8 | b->data[i + 2];
            *o++ = b64[v >> 18];
            *o++ = b64[(v >> 12) & 63];
            *o++ = b64[(v >> 6) & 63];
            *o++ = b64[v & 63];
        }
        if (i < b->len) {
            uint32_t v = (uint32_t)b->data[i] << 16;
            if (i + 1 < b->len)
                v |= (uint32_t)b->data[i + 1] << 8;
            *o++ = b64[v >> 18];
            *o++ = b64[(v >> 12) & 63];
            *o++ = i + 1 < b->len ? b64[(v >> 6) & 63] : '=';
            *o++ = '=';
        }
    }
    *o++ = '"';
    out->len = (size_t)(o - (char *)out->data);
    out->data[out->len] = 0;
    return 0;
}

static int append_double(struct buf *out, double v, int digits)
{
    if (isnan(v))
        return buf_append(out, "\"NaN\"", 5);
    if (isinf(v))
        return v > 0 ? buf_append(out, "\"Infinity\"", 10) : buf_append(out, "\"-Infinity\"", 11);
    return buf_printf(out, "%.*g", digits, v);
}

static int append_value(struct buf *out, const ProtobufCFieldDescriptor *f, const void *p,
                        enum trace_json_bytes mode)
{
    switch (f->type) {
    case PROTOBUF_C_TYPE_INT32:
    case PROTOBUF_C_TYPE_SINT32:
    case PROTOBUF_C_TYPE_SFIXED32: {
        int32_t v;
        memcpy(&v, p, 4);
        return buf_printf(out, "%" PRId32, v);
    }
    case PROTOBUF_C_TYPE_UINT32:
    case PROTOBUF_C_TYPE_FIXED32: {
        uint32_t v;
        memcpy(&v, p, 4);
        return buf_printf(out, "%" PRIu32, v);
    }
    case PROTOBUF_C_TYPE_INT64:
    case PROTOBUF_C_TYPE_SINT64:
    case PROTOBUF_C_TYPE_SFIXED64: {
        int64_t v;
        memcpy(&v, p, 8);
        return buf_printf(out, "%" PRId64, v);
    }
    case PROTOBUF_C_TYPE_UINT64:
    case PROTOBUF_C_TYPE_FIXED64: {
        uint64_t v;
        memcpy(&v, p, 8);
        return buf_printf(out, "%" PRIu64, v);
    }
    case PROTOBUF_C_TYPE_FLOAT: {
        float v;
        memcpy(&v, p, 4);
        return append_double(out, v, 9);
    }
    case PROTOBUF_C_TYPE_DOUBLE: {
        double v;
        memcpy(&v, p, 8);
        return append_double(out, v, 17);
    }
    case PROTOBUF_C_TYPE_BOOL: {
        protobuf_c_boolean v;
        memcpy(&v, p, sizeof v);
        return v ? buf_append(out, "true", 4) : buf_append(out, "false", 5);
    }
    case PROTOBUF_C_TYPE_ENUM: {
        int v;
        memcpy(&v, p, sizeof v);
        const ProtobufCEnumValue *ev =
            protobuf_c_enum_descriptor_get_value((const ProtobufCEnumDescriptor *)f->descriptor, v);
        if (ev)
            return trace_json_append_string(out, ev->name, strlen(ev->name));
        return buf_printf(out, "%d", v);
    }
    case PROTOBUF_C_TYPE_STRING: {
        const char *s;
        memcpy(&s, p, sizeof s);
        if (!s)
            s = "";
        return trace_json_append_string(out, s, strlen(s));
    }
    case PROTOBUF_C_TYPE_BYTES: {
        ProtobufCBinaryData b;
        memcpy(&b, p, sizeof b);
        return append_bytes(out, &b, mode);
    }
    case PROTOBUF_C_TYPE_MESSAGE: {
        const ProtobufCMessage *m;
        memcpy(&m, p, sizeof m);
        if (!m)
            return buf_append(out, "null", 4);
        return trace_json_append(out, m, mode);
    }
    }
    return ERR_INTERNAL;
}

static size_t value_size(const ProtobufCFieldDescriptor *f)
{
    switch (f->type) {
    case PROTOBUF_C_TYPE_INT32:
    case PROTOBUF_C_TYPE_SINT32:
    case PROTOBUF_C_TYPE_SFIXED32:
    case PROTOBUF_C_TYPE_UINT32:
    case PROTOBUF_C_TYPE_FIXED32:
    case PROTOBUF_C_TYPE_FLOAT:
    case PROTOBUF_C_TYPE_ENUM:
        return 4;
    case PROTOBUF_C_TYPE_BOOL:
        return sizeof(protobuf_c_boolean);
    case PROTOBUF_C_TYPE_STRING:
    case PROTOBUF_C_TYPE_MESSAGE:
        return sizeof(void *);
    case PROTOBUF_C_TYPE_BYTES:
        return sizeof(ProtobufCBinaryData);
    default:
        return 8;
    }
}

int trace_json_append(struct buf *out, const ProtobufCMessage *m, enum trace_json_bytes mode)
{
    const ProtobufCMessageDescriptor *d = m->descriptor;
    const char *base = (const char *)m;
    int rc = buf_append(out, "{", 1);
    bool first = true;
    /* fields are stored sorted by number in the descriptor */
    for (unsigned i = 0; !rc && i < d->n_fields; i++) {
        const ProtobufCFieldDescriptor *f = &d->fields[i];
        const void *val = base + f->offset;
        if (f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) {
            uint32_t which;
            memcpy(&which, base + f->quantifier_offset, sizeof which);
            if (which != f->id)
                continue;
        } else if (f->label == PROTOBUF_C_LABEL_OPTIONAL && f->type != PROTOBUF_C_TYPE_MESSAGE &&
                   f->type != PROTOBUF_C_TYPE_STRING) {
            protobuf_c_boolean has;
            memcpy(&has, base + f->quantifier_offset, sizeof has);
            if (!has)
                continue;
        }
        if (f->type == PROTOBUF_C_TYPE_MESSAGE && f->label != PROTOBUF_C_LABEL_REPEATED) {
            const void *sm;
            memcpy(&sm, val, sizeof sm);
            if (!sm)
                continue;
        }
        if (!first)
            rc = buf_append(out, ",", 1);
        first = false;
        if (!rc)
            rc = trace_json_append_string(out, f->name, strlen(f->name));
        if (!rc)
            rc = buf_append(out, ":", 1);
        if (rc)
            break;
        if (f->label == PROTOBUF_C_LABEL_REPEATED) {
            size_t n;
            const char *arr;
            memcpy(&n, base + f->quantifier_offset, sizeof n);
            memcpy(&arr, val, sizeof arr);
            rc = buf_append(out, "[", 1);
            for (size_t k = 0; !rc && k < n; k++) {
                if (k)
                    rc = buf_append(out, ",", 1);
                if (!rc)
                    rc = append_value(out, f, arr + k * value_size(f), mode);
            }
            if (!rc)
                rc = buf_append(out, "]", 1);
        } else {
            rc = append_value(out, f, val, mode);
        }
    }
    if (!rc)
        rc = buf_append(out, "}", 1);
    return rc;
}
