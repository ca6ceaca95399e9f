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
#include "common/err.h"
#include "common/mem.h"

#define VERB "capture test"

static void usage(FILE *f)
{
    fputs("usage: acceltrace capture test [options] -o FILE.atr\n"
          "\n"
          "Writes a synthetic trace of TestRecords (seeded; the count model replays it).\n"
          "\n"
          "options:\n"
          "  --records N      records after the header (default 1000)\n"
          "  --per-step N     records per step (default 10)\n"
          "  --numbers N      repeated uint32 values per record (default 16)\n"
          "  --blob-bytes N   bytes of blob per record (default 64)\n"
          "  --seed S         seed (default 1)\n"
          "  --level L        zstd level, 0 = raw frames (default 3)\n"
          "  --mem-limit SIZE refuse to start above this memory estimate (default 8GiB)\n",
          f);
}

int cmd_capture_test(int argc, char **argv);
int cmd_capture_test(int argc, char **argv)
{
    struct synth_capture_params p;
    synth_capture_params_default(&p);
    const char *out = NULL;
    uint64_t mem_limit = (uint64_t)8 << 30;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        uint64_t v;
        if (cli_is_help(a)) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "-o") && i + 1 < argc) {
            out = argv[++i];
        } else if (i + 1 < argc && !strcmp(a, "--mem-limit")) {
            if (mem_parse_size(argv[++i], &mem_limit) || mem_limit == 0)
                return cli_usage_error(VERB, "bad --mem-limit '%s' (a size like 8GiB)", argv[i]);
        } else if (i + 1 < argc && !strcmp(a, "--seed")) {
            if (!cli_parse_u64(argv[++i], &p.seed))
                return cli_usage_error(VERB, "bad seed '%s'", argv[i]);
        } else if (i + 1 < argc && (!strcmp(a, "--records") || !strcmp(a, "--per-step") ||
                                    !strcmp(a, "--numbers") || !strcmp(a, "--blob-bytes") ||
                                    !strcmp(a, "--level"))) {
            if (!cli_parse_u64(argv[++i], &v) || v > 100000000)
                return cli_usage_error(VERB, "bad value '%s' for %s", argv[i], a);
            if (!strcmp(a, "--records"))
                p.n_records = v;
            else if (!strcmp(a, "--per-step"))
                p.records_per_step = v ? (uint32_t)v : 1;
            else if (!strcmp(a, "--numbers"))
                p.n_numbers = (uint32_t)v;
            else if (!strcmp(a, "--blob-bytes"))
                p.blob_bytes = (uint32_t)v;
            else if (v > 19)
                return cli_usage_error(VERB, "zstd level %s above 19", argv[i]);
            else
                p.zstd_level = (int)v;
        } else {
            return cli_usage_error(VERB, "unknown option '%s'", a);
        }
    }
    if (!out)
        return cli_usage_error(VERB, "no output given (-o FILE.atr)");
    const struct capture_ops *ops = capture_registry_find("test");
    struct capture_opts o;
    capture_opts_default(&o);
    o.zstd_level = p.zstd_level;
    o.mem_limit_bytes = mem_limit;
    o.quiet = true;
    struct errmsg e = {0};
    void *inst = NULL;
    int rc = ops->open(&inst, &p, &e);
    if (!rc)
        rc = capture_run(ops, inst, out, &o, &e);
    ops->close(inst);
    if (rc)
        return cli_fail(rc, errmsg_text(&e));
    fprintf(stderr, "acceltrace: wrote %llu test records to %s\n",
            (unsigned long long)p.n_records, out);
    return 0;
}
