/*
 * cmd_replay: `acceltrace replay FILE.atr --hw CONFIG.json [--sweep GRID.json] [-j N]
 * [--shard I/N] [--energy E.json] -o DIR` (DESIGN.md section 5): replays a trace against
 * one config or a sweep in one pass and writes DIR/results.csv and DIR/results.jsonl.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "common/err.h"
#include "common/progress.h"
#include "common/threads.h"
#include "replay/engine.h"
#include "replay/model_registry.h"

#define VERB "replay"

static void usage(FILE *f)
{
    fputs("usage: acceltrace replay FILE.atr --hw CONFIG.json [--sweep GRID.json] [options] "
          "-o DIR\n"
          "\n"
          "Replays a trace against a hardware config, or every config of a sweep grid, reading\n"
          "the trace once. Rows go to DIR/results.csv and DIR/results.jsonl keyed by (trace\n"
          "hash, config hash); a rerun into the same DIR skips configs already there.\n"
          "\n"
          "options:\n"
          "  --hw CONFIG.json    base hardware config (its \"model\" picks the model)\n"
          "  --model NAME        use NAME's defaults when no --hw is given\n"
          "  --sweep GRID.json   grid of values per key (lists, {\"range\": [a, b, step]},\n"
          "                      {\"zip\": {...}}); the cartesian product is replayed\n"
          "  --energy E.json     energy table applied to the activity counts of every row\n"
          "  -j, --threads N     model instances split over N threads (default: CPUs)\n"
          "  --shard I/N         replay only the I-th of N slices of the sweep\n"
          "  --batch N           at most N model instances per pass over the trace (default:\n"
          "                      all, one pass)\n"
          "  -o DIR              results folder (created)\n"
          "  -q                  no progress on stderr\n"
          "  -h, --help          this help\n"
          "\nmodels:\n",
          f);
    for (size_t i = 0; i < model_registry_count(); i++) {
        const struct model_ops *m = model_registry_get(i);
        fprintf(f, "  %-10s %s\n", m->name, m->summary ? m->summary : "");
    }
}

static bool parse_shard(const char *s, unsigned *i, unsigned *n)
{
    unsigned a, b;
    char tail;
    if (sscanf(s, "%u/%u%c", &a, &b, &tail) != 2 || b == 0 || a == 0 || a > b || b > 1000000)
        return false;
    *i = a;
    *n = b;
    return true;
}

int cmd_replay(int argc, char **argv);
int cmd_replay(int argc, char **argv)
{
    const char *trace = NULL, *hw = NULL, *grid = NULL, *out = NULL, *energy_path = NULL;
    const char *model_name = NULL;
    struct engine_opts o;
    engine_opts_default(&o);
    o.threads = threads_default();
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        bool has = i + 1 < argc;
        if (cli_is_help(a)) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--hw") && has) {
            hw = argv[++i];
        } else if (!strcmp(a, "--model") && has) {
            model_name = argv[++i];
        } else if (!strcmp(a, "--sweep") && has) {
            grid = argv[++i];
        } else if (!strcmp(a, "--energy") && has) {
            energy_path = argv[++i];
        } else if ((!strcmp(a, "-j") || !strcmp(a, "--threads")) && has) {
            int64_t v;
            if (!cli_parse_i64(argv[++i], &v) || v < 1 || v > 1024)
                return cli_usage_error(VERB, "bad thread count '%s'", argv[i]);
            o.threads = (int)v;
        } else if (!strcmp(a, "--shard") && has) {
            if (!parse_shard(argv[++i], &o.shard_i, &o.shard_n))
                return cli_usage_error(VERB, "bad shard '%s' (want I/N with 1 <= I <= N)",
                                       argv[i]);
        } else if (!strcmp(a, "--batch") && has) {
            int64_t v;
            if (!cli_parse_i64(argv[++i], &v) || v < 1)
                return cli_usage_error(VERB, "bad batch size '%s'", argv[i]);
            o.batch_configs = (size_t)v;
        } else if (!strcmp(a, "-o") && has) {
            out = argv[++i];
        } else if (!strcmp(a, "-q")) {
            o.quiet = true;
            progress_global_quiet = true;
        } else if (a[0] == '-') {
            return cli_usage_error(VERB, "unknown option '%s'", a);
        } else if (!trace) {
            trace = a;
        } else {
            return cli_usage_error(VERB, "more than one trace ('%s')", a);
        }
    }
    if (!trace)
        return cli_usage_error(VERB, "no trace given");
    if (!out)
        return cli_usage_error(VERB, "no results folder given (-o DIR)");
    if (!hw && !model_name)
        return cli_usage_error(VERB, "no hardware config given (--hw CONFIG.json)");

    struct errmsg e = {0};
    struct hw_config *base = NULL;
    struct sweep *sw = NULL;
    struct results *res = NULL;
    struct record_source src = {0};
    struct energy_table et = {0};
    bool have_et = false;
    const struct model_ops *m = NULL;
    int rc;
    if (hw) {
        const struct hw_schema *schema = NULL;
        if (model_name) {
            m = model_registry_find(model_name);
            if (!m) {
                rc = cli_usage_error(VERB, "unknown model '%s'", model_name);
                goto done;
            }
            schema = m->schema;
        }
        if ((rc = hw_config_load(&base, hw, schema, &e)))
            goto fail;
        m = model_registry_find(hw_config_schema(base)->model);
    } else {
        m = model_registry_find(model_name);
        if (!m) {
            rc = cli_usage_error(VERB, "unknown model '%s'", model_name);
            goto done;
        }
        if ((rc = hw_config_defaults(&base, m->schema)))
            goto fail;
    }
    if (grid ? (rc = sweep_load(&sw, grid, base, &e)) : (rc = sweep_single(&sw, base)))
        goto fail;
    if (energy_path) {
        if ((rc = energy_table_load(&et, energy_path, &e)))
            goto fail;
        have_et = true;
        o.energy = &et;
    }
    if ((rc = record_source_trace(&src, trace, 1, &e)))
        goto fail;
    if ((rc = results_open(&res, out, src.content_hash(src.ctx), m->name, &e)))
        goto fail;
    struct engine_stats st;
    rc = engine_run(m, &src, sw, res, &o, &st, &e);
    int crc = results_close(res);
    res = NULL;
    if (rc)
        goto fail;
    if (crc) {
        rc = crc;
        errmsg_set(&e, rc, "cannot close results in '%s'", out);
        goto fail;
    }
    fprintf(stderr,
            "acceltrace: replayed %zu of %zu configs (%zu already done) with model '%s' in %zu "
            "pass(es): %llu records, %llu bytes read, %.2f s -> %s/results.csv\n",
            st.configs_run, st.configs_total, st.configs_skipped, m->name, st.passes,
            (unsigned long long)st.records, (unsigned long long)st.bytes_read, st.seconds, out);
    rc = 0;
    goto done;
fail:
    rc = cli_fail(rc, errmsg_text(&e));
done:
    results_close(res);
    record_source_close(&src);
    if (have_et)
        energy_table_release(&et);
    sweep_free(sw);
    hw_config_free(base);
    return rc;
}
