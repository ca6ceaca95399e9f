/*
 * cmd_dump: `acceltrace dump FILE.atr [filters]` prints records as JSON lines through the
 * generic descriptor-driven printer (traces/trace_json.h), so every record type of every
 * workload dumps without per-type code.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "analysis/analyzer.h"
#include "cli/cli.h"
#include "cli/cli_opt.h"
#include "common/buf.h"
#include "common/err.h"
#include "common/suggest.h"
#include "traces/trace_json.h"
#include "traces/trace_reader.h"

enum { OPT_TYPE = 1, OPT_STEP, OPT_LAYER, OPT_HEAD, OPT_LIMIT, OPT_HEX };

static const struct cli_opt opts[] = {
    {OPT_TYPE, "type", 0, CLI_ARG_STRING, "NAME",
     "only records of this type (disc_mask, salca_select, ...)", 0},
    {OPT_STEP, "step", 0, CLI_ARG_INT, "N", "only frames whose index key step is N", 0},
    {OPT_LAYER, "layer", 0, CLI_ARG_INT, "N", "only frames whose index key layer is N", 0},
    {OPT_HEAD, "head", 0, CLI_ARG_INT, "N", "only frames whose index key head is N", 0},
    {OPT_LIMIT, "limit", 0, CLI_ARG_STRING, "N", "stop after N records", 0},
    {OPT_HEX, "hex", 0, CLI_ARG_NONE, NULL, "bytes fields as lowercase hex instead of base64", 0},
    {CLI_ID_JSON, "json", 0, CLI_ARG_NONE, NULL,
     "one JSON array of those objects instead of JSON lines", 0},
    CLI_OPT_THREADS("decode frames with N threads (1..64, default 1)"),
    CLI_OPT_QUIET,
    CLI_OPT_END,
};

const struct cli_spec cmd_dump_spec = {
    .verb = "dump",
    .usage =
        "usage: acceltrace dump [options] FILE.atr\n\n"
        "prints one JSON object per record (the header first):\n"
        "  {\"frame\":N,\"offset\":BYTES,\"type\":\"NAME\",\"step\":S,\"layer\":L,\"head\":H,\n"
        "   \"record\":{...every field of the record...}}\n"
        "keys are -1 where they do not apply; bytes fields are base64 (RFC 4648) unless\n"
        "--hex; NaN and infinities are the strings \"NaN\", \"Infinity\", \"-Infinity\"\n",
    .opts = opts,
    .positional = "FILE",
};

static int type_from_name(const char *s)
{
    for (uint32_t t = 1; t < 256; t++)
        if (!strcmp(trace_record_type_name(t), s))
            return (int)t;
    return -1;
}

/* Refuses an unknown --type with the closest record type, or the list of them. */
static int unknown_type(const char *s)
{
    struct suggest sg;
    struct buf names;
    buf_init(&names);
    suggest_init(&sg, s, strlen(s));
    for (uint32_t t = 1; t < 256; t++) {
        const char *n = trace_record_type_name(t);
        if (!strcmp(n, "unknown"))
            continue;
        suggest_add(&sg, n);
        buf_printf(&names, "%s%s", names.len ? ", " : "", n);
    }
    const char *best = suggest_result(&sg);
    int rc = best ? cli_usage_error("dump", "unknown record type '%s'; did you mean '%s'?", s, best)
                  : cli_usage_error("dump", "unknown record type '%s' (one of: %s)", s,
                                    names.data ? (const char *)names.data : "");
    buf_release(&names);
    return rc;
}

static bool parse_key(const char *s, int32_t *out)
{
    int64_t v;
    if (!cli_parse_i64(s, &v) || v < -1 || v > INT32_MAX)
        return false;
    *out = (int32_t)v;
    return true;
}

/* The body message of a record (the member of the oneof that is set). */
static const ProtobufCMessage *record_body(const Acceltrace__Record *rec)
{
    const ProtobufCFieldDescriptor *f = protobuf_c_message_descriptor_get_field(
        &acceltrace__record__descriptor, (int)rec->body_case);
    if (!f || f->type != PROTOBUF_C_TYPE_MESSAGE)
        return NULL;
    const ProtobufCMessage *m;
    memcpy(&m, (const char *)rec + f->offset, sizeof m);
    return m;
}

static int print_record(struct buf *b, const struct trace_frame_info *fi,
                        const Acceltrace__Record *rec, enum trace_json_bytes mode, const char *sep)
{
    buf_clear(b);
    int e = buf_printf(b,
                       "%s{\"frame\":%" PRIu64 ",\"offset\":%" PRIu64
                       ",\"type\":\"%s\",\"step\":%d,\"layer\":%d,\"head\":%d,\"record\":",
                       sep, fi->number, fi->offset, trace_record_type_name(fi->type), fi->key.step,
                       fi->key.layer, fi->key.head);
    const ProtobufCMessage *m = record_body(rec);
    if (m)
        e |= trace_json_append(b, m, mode);
    else
        e |= buf_printf(b, "{}");
    e |= buf_printf(b, *sep == '[' || *sep == ',' ? "}" : "}\n");
    if (e)
        return ERR_NOMEM;
    fwrite(b->data, 1, b->len, stdout);
    return 0;
}

/* What dump keeps and prints: the filters, --limit and the output mode. */
struct dump_pass {
    int type;                   /* frame type kept; -1 = every type */
    int32_t step, layer, head;  /* key filters; -2 = none */
    uint64_t limit, printed;    /* --limit; frames printed so far */
    enum trace_json_bytes mode; /* bytes fields: base64 or hex */
    bool json;                  /* one JSON array instead of one object per line */
    struct buf b;               /* the line being written */
};

/* Prints rec (frame fi) when the filters keep it and the limit allows. 0, ERR_NOMEM, or
 * ANALYZER_STOP once the limit is reached (nothing more to read). */
static int dump_one(struct dump_pass *d, const struct trace_frame_info *fi,
                    const Acceltrace__Record *rec)
{
    bool keep = (d->type < 0 || (uint32_t)d->type == fi->type) &&
                (d->step == -2 || d->step == fi->key.step) &&
                (d->layer == -2 || d->layer == fi->key.layer) &&
                (d->head == -2 || d->head == fi->key.head);
    if (keep && d->printed < d->limit) {
        const char *sep = !d->json ? "" : d->printed ? "," : "[";
        if (print_record(&d->b, fi, rec, d->mode, sep))
            return ERR_NOMEM;
        d->printed++;
    }
    return d->printed >= d->limit ? ANALYZER_STOP : 0;
}

/* The records after the header, in file order, through one analyzer pass. */
static int dump_record(void *self, const struct trace_scan_pos *pos, Acceltrace__Record **rec,
                       struct errmsg *e)
{
    int rc = dump_one(self, trace_reader_last_frame(pos->r), *rec);
    return rc < 0 ? errmsg_set(e, rc, "out of memory") : rc;
}

static const struct analyzer_ops dump_ops = {.name = "dump", .record = dump_record};

int cmd_dump(int argc, char **argv)
{
    struct trace_reader_opts o;
    trace_reader_opts_default(&o);
    /* dump shows what is intact of a damaged trace and reports the damage itself */
    o.allow_partial = true;
    o.warn_damage = false;
    const char *path = NULL;
    int type = -1;
    int32_t step = -2, layer = -2, head = -2; /* -2: no filter */
    uint64_t limit = UINT64_MAX;
    enum trace_json_bytes mode = TRACE_JSON_BASE64;
    bool json = false;
    struct cli_parser p;
    cli_parser_init(&p, &cmd_dump_spec, argc, argv);
    for (int id; (id = cli_next(&p)) != CLI_END;) {
        switch (id) {
        case CLI_HELP:
        case CLI_BAD:
            return cli_next_exit(id);
        case OPT_HEX:
            mode = TRACE_JSON_HEX;
            break;
        case OPT_TYPE:
            if ((type = type_from_name(p.arg)) < 0)
                return unknown_type(p.arg);
            break;
        case OPT_STEP:
        case OPT_LAYER:
        case OPT_HEAD:
            if (!parse_key(p.arg, id == OPT_STEP ? &step : id == OPT_LAYER ? &layer : &head))
                return cli_usage_error("dump", "--%s needs an integer >= -1", p.opt->name);
            break;
        case OPT_LIMIT:
            if (!cli_parse_u64(p.arg, &limit))
                return cli_usage_error("dump", "--limit needs a count");
            break;
        case CLI_ID_THREADS:
            if (p.i64 < 1 || p.i64 > 64)
                return cli_usage_error("dump", "--threads needs a thread count 1..64");
            o.threads = (int)p.i64;
            break;
        case CLI_POSITIONAL:
            if (path)
                return cli_usage_error("dump", "more than one trace file");
            path = p.arg;
            break;
        default:
            break; /* -q: dump prints no progress */
        }
    }
    json = p.common.json;
    if (!path)
        return cli_usage_error("dump", "no trace file given");
    struct trace_reader *r;
    struct errmsg err = {0};
    int rc = trace_reader_open(&r, path, &o, &err);
    if (rc)
        return cli_fail(rc, err.text);
    struct dump_pass d = {type, step, layer, head, limit, 0, mode, json, {0}};
    buf_init(&d.b);
    int status = 0;
    /* the header record, frame 0 */
    Acceltrace__Record hrec = ACCELTRACE__RECORD__INIT;
    hrec.body_case = ACCELTRACE__RECORD__BODY_HEADER;
    hrec.header = (Acceltrace__TraceHeader *)trace_reader_header(r);
    rc = dump_one(&d, trace_reader_last_frame(r), &hrec);
    if (rc < 0) {
        status = cli_fail(ERR_NOMEM, "out of memory");
    } else if (rc == 0) {
        struct analyzer_opts ao;
        analyzer_opts_default(&ao);
        ao.scan.progress_label = NULL; /* dump prints no progress */
        const struct analyzer an = {&dump_ops, &d};
        if ((rc = analyzer_run_reader(r, path, &an, 1, &ao, &err)) < 0) {
            fflush(stdout);
            status = cli_fail(rc, errmsg_text(&err));
        }
    }
    uint64_t printed = d.printed;
    const char *imsg;
    if (!status && printed < limit && trace_reader_index_status(r, &imsg) != 0)
        cli_warn("%s", imsg); /* the records are intact; only the index is unusable */
    else if (!status && printed < limit && trace_reader_damage(r))
        cli_warn("%s", trace_reader_damage(r)); /* keys shown are the records' own */
    if (json)
        fputs(printed ? "]\n" : "[]\n", stdout); /* an array even when damage stopped it */
    buf_release(&d.b);
    trace_reader_free(r);
    if (fflush(stdout) != 0 && !status)
        status = cli_fail(ERR_IO, "cannot write the output");
    return status;
}
