/*
 * cmd_capture_test: `acceltrace capture test`: writes a synthetic trace of TestRecords
 * (capture/synth/synth_capture.h) for the replay engine's tests, benchmarks and demo, through
 * the capture registry and driver (capture/capture.h).
 */
#include <stdio.h>
#include <string.h>

#include "capture/capture_registry.h"
#include "capture/synth/synth_capture.h"
#include "cli/cli.h"
#include "cli/cli_opt.h"
#include "cli/cmd_capture.h"
#include "common/err.h"
#include "common/mem.h"

#define VERB "capture test"

enum {
    OPT_RECORDS = 1,
    OPT_PER_STEP,
    OPT_NUMBERS,
    OPT_BLOB_BYTES,
    OPT_SEED,
    OPT_LEVEL,
    OPT_RESUME
};

static const struct cli_opt opts[] = {
    {OPT_RECORDS, "records", 0, CLI_ARG_STRING, "N", "records after the header (default 1000)", 0},
    {OPT_PER_STEP, "per-step", 0, CLI_ARG_STRING, "N", "records per step (default 10)", 0},
    {OPT_NUMBERS, "numbers", 0, CLI_ARG_STRING, "N",
     "repeated uint32 values per record (default 16)", 0},
    {OPT_BLOB_BYTES, "blob-bytes", 0, CLI_ARG_STRING, "N", "bytes of blob per record (default 64)",
     0},
    {OPT_SEED, "seed", 0, CLI_ARG_STRING, "S", "seed (default 1)", 0},
    {OPT_LEVEL, "level", 0, CLI_ARG_STRING, "L", "zstd level, 0 = raw frames (default 3)", 0},
    CLI_OPT_MEM_LIMIT("refuse to start above this memory estimate (default 8GiB)"),
    CLI_OPT_OUTPUT("FILE.atr", "the trace to write (required)"),
    CLI_OPT_QUIET,
    CMD_CAPTURE_OPT_RESUME(OPT_RESUME),
    {CLI_ID_JSON, "json", 0, CLI_ARG_NONE, NULL,
     "one JSON document on stdout: the trace (file, bytes,\nrecords, content hash)", 0},
    CLI_OPT_END,
};

const struct cli_spec cmd_capture_test_spec = {
    .verb = VERB,
    .usage = "usage: acceltrace capture test [options] -o FILE.atr\n"
             "\n"
             "Writes a synthetic trace of TestRecords (seeded; the count model replays it).\n",
    .opts = opts,
};

/* The value of a count option: 0..100000000 into p; 0 or the usage exit status. */
static int count_option(struct synth_capture_params *p, const struct cli_parser *ps)
{
    uint64_t v;
    char name[32];
    snprintf(name, sizeof name, "--%s", ps->opt->name);
    if (!cli_parse_u64(ps->arg, &v) || v > 100000000)
        return cli_usage_error(VERB, "bad value '%s' for %s", ps->arg, name);
    switch (ps->opt->id) {
    case OPT_RECORDS:
        p->n_records = v;
        break;
    case OPT_PER_STEP:
        p->records_per_step = v ? (uint32_t)v : 1;
        break;
    case OPT_NUMBERS:
        p->n_numbers = (uint32_t)v;
        break;
    case OPT_BLOB_BYTES:
        p->blob_bytes = (uint32_t)v;
        break;
    default:
        if (v > 19)
            return cli_usage_error(VERB, "zstd level %s above 19", ps->arg);
        p->zstd_level = (int)v;
    }
    return 0;
}

int cmd_capture_test(int argc, char **argv);
int cmd_capture_test(int argc, char **argv)
{
    struct synth_capture_params p;
    synth_capture_params_default(&p);
    uint64_t mem_limit = (uint64_t)8 << 30;
    bool resume = false;
    struct cli_parser ps;
    cli_parser_init(&ps, &cmd_capture_test_spec, argc, argv);
    for (int id; (id = cli_next(&ps)) != CLI_END;) {
        int rc = 0;
        if (id == CLI_HELP || id == CLI_BAD)
            return cli_next_exit(id);
        if (id == CLI_POSITIONAL)
            return cli_usage_error(VERB, "unknown option '%s'", ps.arg);
        if (cli_is_common(id))
            continue;
        if (id == OPT_RESUME) {
            resume = true;
        } else if (id == CLI_ID_MEM_LIMIT) {
            if (ps.u64 == 0)
                return cli_usage_error(VERB, "bad --mem-limit '%s' (a size like 8GiB)", ps.arg);
            mem_limit = ps.u64;
        } else if (id == OPT_SEED) {
            if (!cli_parse_u64(ps.arg, &p.seed))
                return cli_usage_error(VERB, "bad seed '%s'", ps.arg);
        } else if ((rc = count_option(&p, &ps)) != 0) {
            return rc;
        }
    }
    const char *out = ps.common.output;
    bool quiet = ps.common.quiet, json = ps.common.json;
    if (!out)
        return cli_usage_error(VERB, "no output given (-o FILE.atr)");
    const struct capture_ops *ops = capture_registry_find("test");
    struct capture_opts o;
    capture_opts_default(&o);
    o.zstd_level = p.zstd_level;
    o.mem_limit_bytes = mem_limit;
    o.quiet = quiet;
    o.resume = resume;
    struct errmsg e = {0};
    void *inst = NULL;
    int rc = ops->open(&inst, &p, &e);
    if (!rc)
        rc = cmd_capture_run(ops, inst, out, &o, &e);
    ops->close(inst);
    if (rc)
        return cli_fail(rc, errmsg_text(&e));
    if (!quiet)
        fprintf(stderr, "acceltrace: wrote %llu test records to %s\n",
                (unsigned long long)p.n_records, out);
    if (json)
        return cli_print_json(
            json_pack("{s:s,s:o}", "workload", "test", "trace", cli_json_trace_file(out)));
    return 0;
}
