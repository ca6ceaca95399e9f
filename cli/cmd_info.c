/*
 * cmd_info: `acceltrace info FILE.atr [--json]`: header, record counts per type, raw vs
 * stored bytes and the compression ratio. Every frame is read and checked; on a damaged
 * trace (a bad frame, or a missing or inconsistent index) the intact prefix is reported and
 * the exit status is 3.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "analysis/analyzer.h"
#include "cli/cli.h"
#include "cli/cli_opt.h"
#include "common/buf.h"
#include "common/err.h"
#include "traces/trace_json.h"
#include "traces/trace_reader.h"

#define N_TYPES 256

struct type_stat {
    uint64_t count, raw, stored;
};

static const struct cli_opt opts[] = {
    CLI_OPT_JSON,
    CLI_OPT_THREADS("decode frames with N threads (1..64, default 1)"),
    CLI_OPT_QUIET,
    CLI_OPT_END,
};

const struct cli_spec cmd_info_spec = {
    .verb = "info",
    .usage = "usage: acceltrace info [options] FILE.atr\n\n"
             "prints the header, the number of records of each type, raw (decompressed) and\n"
             "stored payload bytes and the compression ratio raw/stored; every frame is read\n"
             "and checked, so a damaged trace (a bad frame, a missing or inconsistent index)\n"
             "reports its intact prefix and exits 3\n",
    .opts = opts,
    .positional = "FILE",
};

static void kv(const char *k, const char *v)
{
    printf("%-14s %s\n", k, v && *v ? v : "-");
}

/* The header part of the text form, provenance included. */
static void header_lines(const char *path, unsigned major, unsigned minor,
                         const Acceltrace__TraceHeader *h)
{
    char v[64];
    kv("file", path);
    snprintf(v, sizeof v, "%u.%u", major, minor);
    kv("format", v);
    kv("producer", h->producer);
    kv("workload", h->workload);
    snprintf(v, sizeof v, "%" PRIu64, h->seed);
    kv("seed", v);
    kv("utc_time", h->utc_time);
    kv("command_line", h->command_line);
    kv("params_hash", h->params_hash);
    kv("source", h->source && *h->source ? h->source : "(not recorded: older trace)");
    if (h->source_detail && *h->source_detail)
        kv("source_detail", h->source_detail);
}

/* One more frame of its type in the totals. */
static void count_frame(struct type_stat *st, const struct trace_frame_info *fi)
{
    st[fi->type].count++;
    st[fi->type].raw += fi->raw_bytes;
    st[fi->type].stored += fi->stored_bytes;
}

/* The frames after the header, counted in one analyzer pass (the records themselves are
 * not needed). */
static int info_record(void *self, const struct trace_scan_pos *pos, Acceltrace__Record **rec,
                       struct errmsg *e)
{
    (void)rec;
    (void)e;
    count_frame(self, trace_reader_last_frame(pos->r));
    return 0;
}

static const struct analyzer_ops info_ops = {.name = "info", .record = info_record};

int cmd_info(int argc, char **argv)
{
    struct trace_reader_opts o;
    trace_reader_opts_default(&o);
    o.compute_hash = true;
    /* info describes damaged traces too: the damage is its "index" line */
    o.allow_partial = true;
    o.warn_damage = false;
    bool json = false;
    const char *path = NULL;
    struct cli_parser p;
    cli_parser_init(&p, &cmd_info_spec, argc, argv);
    for (int id; (id = cli_next(&p)) != CLI_END;) {
        if (id == CLI_HELP || id == CLI_BAD)
            return cli_next_exit(id);
        if (id == CLI_ID_THREADS) {
            if (p.i64 < 1 || p.i64 > 64)
                return cli_usage_error("info", "--threads needs a thread count 1..64");
            o.threads = (int)p.i64;
        } else if (id == CLI_POSITIONAL) {
            if (path)
                return cli_usage_error("info", "more than one trace file");
            path = p.arg;
        } /* -q: info prints no progress */
    }
    json = p.common.json;
    if (!path)
        return cli_usage_error("info", "no trace file given");
    struct trace_reader *r;
    struct errmsg err = {0};
    int rc = trace_reader_open(&r, path, &o, &err);
    if (rc)
        return cli_fail(rc, err.text);
    static struct type_stat st[N_TYPES];
    memset(st, 0, sizeof st);
    count_frame(st, trace_reader_last_frame(r)); /* the header, frame 0 */
    struct analyzer_opts ao;
    analyzer_opts_default(&ao);
    ao.scan.progress_label = NULL; /* info prints no progress */
    const struct analyzer an = {&info_ops, st};
    struct errmsg ferr_e = {0};
    int frc = analyzer_run_reader(r, path, &an, 1, &ao, &ferr_e);
    uint64_t frames = 0, raw = 0, stored = 0;
    for (int t = 0; t < N_TYPES; t++) {
        frames += st[t].count;
        raw += st[t].raw;
        stored += st[t].stored;
    }
    double ratio = stored ? (double)raw / (double)stored : 0.0;
    const char *idx_msg;
    int idx = trace_reader_index_status(r, &idx_msg);
    char idx_text[600];
    if (idx == 0 && trace_reader_damage(r)) { /* read, but a frame disagreed with it */
        idx = ERR_DATA;
        idx_msg = trace_reader_damage(r);
    }
    snprintf(idx_text, sizeof idx_text, "%s", idx == 0 ? "ok" : idx_msg);
    char hash[65];
    snprintf(hash, sizeof hash, "%s", trace_reader_computed_hash(r));
    const char *hash_name = trace_reader_hash_name(r);
    uint64_t intact = trace_reader_offset(r);
    unsigned major, minor;
    trace_reader_version(r, &major, &minor);
    const Acceltrace__TraceHeader *h = trace_reader_header(r);
    int status = 0;
    char ferr[600] = "";
    if (frc < 0) {
        snprintf(ferr, sizeof ferr, "%s", errmsg_text(&ferr_e));
        status = err_exit_code(frc);
    } else if (idx != 0) { /* every frame read, but the index is missing or wrong */
        snprintf(ferr, sizeof ferr, "%s", idx_text);
        status = err_exit_code(ERR_DATA);
    }
    if (json) {
        struct buf b;
        buf_init(&b);
        int e = buf_printf(&b, "{\"file\":");
        e |= trace_json_append_string(&b, path, strlen(path));
        e |= buf_printf(&b, ",\"format\":\"%u.%u\",\"header\":", major, minor);
        e |= trace_json_append(&b, &h->base, TRACE_JSON_BASE64);
        e |= buf_printf(&b, ",\"frames\":%" PRIu64 ",\"types\":{", frames);
        bool first = true;
        for (int t = 0; t < N_TYPES; t++) {
            if (!st[t].count)
                continue;
            e |= buf_printf(&b,
                            "%s\"%s\":{\"count\":%" PRIu64 ",\"raw_bytes\":%" PRIu64
                            ",\"stored_bytes\":%" PRIu64 "}",
                            first ? "" : ",", trace_record_type_name((uint32_t)t), st[t].count,
                            st[t].raw, st[t].stored);
            first = false;
        }
        e |= buf_printf(&b,
                        "},\"raw_bytes\":%" PRIu64 ",\"stored_bytes\":%" PRIu64
                        ",\"ratio\":%.4f,\"content_hash\":\"%s\",\"hash_algorithm\":\"%s\","
                        "\"index\":",
                        raw, stored, ratio, hash, hash_name);
        e |= trace_json_append_string(&b, idx_text, strlen(idx_text));
        e |= buf_printf(&b, ",\"intact\":%s,\"intact_bytes\":%" PRIu64, frc < 0 ? "false" : "true",
                        intact);
        if (frc < 0) {
            e |= buf_printf(&b, ",\"error\":");
            e |= trace_json_append_string(&b, ferr, strlen(ferr));
        }
        e |= buf_printf(&b, "}\n");
        if (e) {
            buf_release(&b);
            trace_reader_free(r);
            return cli_fail(ERR_NOMEM, "out of memory");
        }
        fwrite(b.data, 1, b.len, stdout);
        buf_release(&b);
    } else {
        header_lines(path, major, minor, h);
        kv("content_hash", hash);
        kv("hash_algorithm", hash_name);
        kv("index", idx_text);
        printf("%-14s %" PRIu64 "%s\n", "frames", frames, frc < 0 ? " (intact prefix)" : "");
        printf("\n%-16s %10s %14s %14s\n", "record type", "count", "raw bytes", "stored bytes");
        for (int t = 0; t < N_TYPES; t++)
            if (st[t].count)
                printf("%-16s %10" PRIu64 " %14" PRIu64 " %14" PRIu64 "\n",
                       trace_record_type_name((uint32_t)t), st[t].count, st[t].raw, st[t].stored);
        printf("%-16s %10" PRIu64 " %14" PRIu64 " %14" PRIu64 "\n", "total", frames, raw, stored);
        printf("\n%-14s %.3f (raw / stored payload bytes)\n", "ratio", ratio);
        if (frc < 0)
            printf("%-14s damaged after %" PRIu64 " bytes: %s\n", "status", intact, ferr);
    }
    if (status)
        cli_error("%s", ferr);
    trace_reader_free(r);
    return status;
}
