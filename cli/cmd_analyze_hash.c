/*
 * cmd_analyze_hash: `acceltrace analyze hash FILE.atr -o DIR`: the DiSC hash load-balance
 * study (paper Fig. 15; docs/models.md, DiSC 'Hashes and load-balance statistics') over a
 * disc trace's ST masks.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/hash_lb.h"
#include "cli/cli.h"
#include "cli/cli_opt.h"
#include "common/err.h"
#include "common/io.h"
#include "common/progress.h"
#include "common/threads.h"

#define VERB "analyze hash"

enum { OPT_UNITS = 1, OPT_K_ODD, OPT_NO_PLOTS };

static const struct cli_opt opts[] = {
    CLI_OPT_OUTPUT("DIR", "output folder (required; created if missing)"),
    CLI_OPT_PLOT_FORMAT,
    {OPT_UNITS, "units", 0, CLI_ARG_STRING, "LIST",
     "unit counts U, powers of two >= 2 (8,16,32,64)", 0},
    {OPT_K_ODD, "k-odd", 0, CLI_ARG_STRING, "X",
     "multiplicative-hash constant, odd, decimal or 0x hex\n(0x9E3779B1)", 0},
    CLI_OPT_THREADS("threads for recounted masks (all CPUs); results do not\ndepend on it"),
    {OPT_NO_PLOTS, "no-plots", 0, CLI_ARG_NONE, NULL, "CSV only", 0},
    CLI_OPT_QUIET,
    {CLI_ID_JSON, "json", 0, CLI_ARG_NONE, NULL,
     "one JSON document on stdout: mask counts, the mean std-dev\nper hash and U, files written",
     0},
    CLI_OPT_ALLOW_PARTIAL,
    CLI_OPT_END,
};

const struct cli_spec cmd_analyze_hash_spec = {
    .verb = VERB,
    .usage =
        "usage: acceltrace analyze hash FILE.atr -o DIR [options]\n"
        "\n"
        "Load balance of the DiSC key-index hashes (mod, mul, range) over the ST masks of a\n"
        "disc trace (docs/models.md, DiSC 'Hashes and load-balance statistics'; paper\n"
        "Fig. 15): per row the std-dev and the max of nonzeros per unit, pooled by matrix\n"
        "and by row sparsity. Uses the recorded statistics, or recounts kept masks for other\n"
        "unit counts or constants. Writes hash_matrix.csv, hash_row.csv, hash_masks.csv and\n"
        "the plots hash_std_vs_sparsity, hash_std_vs_row_sparsity and hash_imbalance to DIR.\n",
    .opts = opts,
    .positional = "FILE",
};

/* The mean std-dev of nonzeros per unit of hash h at unit count index i over all rows. */
static double mean_std(const struct hash_lb *a, int h, int i)
{
    double s = 0;
    uint64_t rows = 0;
    for (int b = 0; b < DISC_LB_BINS; b++) {
        s += hash_lb_matrix_bin(a, b)->std_sum[h][i];
        rows += hash_lb_matrix_bin(a, b)->rows;
    }
    return rows ? s / (double)rows : 0.0;
}

/* The --json document: mask counts, the Fig. 15 summary, the files of dir. */
static json_t *summary_json(const struct hash_lb *a, const struct hash_lb_opts *o, const char *in,
                            const char *dir)
{
    json_t *rows = json_array();
    for (int i = 0; i < o->n_units; i++) {
        json_t *r = json_pack("{s:i}", "units", 1 << o->bits[i]);
        for (int h = 0; h < DISC_HASH_KINDS; h++)
            json_object_set_new(r, disc_hash_name(h), json_real(mean_std(a, h, i)));
        json_array_append_new(rows, r);
    }
    return json_pack("{s:s,s:s,s:I,s:I,s:I,s:o,s:o}", "trace", in, "dir", dir, "masks",
                     (json_int_t)hash_lb_masks_seen(a), "masks_recounted",
                     (json_int_t)hash_lb_masks_recounted(a), "masks_without_statistics",
                     (json_int_t)hash_lb_masks_skipped(a), "mean_std_dev", rows, "files",
                     cli_json_dir_files(dir));
}

int cmd_analyze_hash(int argc, char **argv);
int cmd_analyze_hash(int argc, char **argv)
{
    struct hash_lb_opts o;
    hash_lb_opts_default(&o);
    o.threads = threads_default();
    const char *in = NULL, *dir = NULL;
    bool plots = true;
    struct errmsg e = {0};
    bool json = false;
    struct cli_parser p;
    cli_parser_init(&p, &cmd_analyze_hash_spec, argc, argv);
    for (int id; (id = cli_next(&p)) != CLI_END;) {
        if (id == CLI_HELP || id == CLI_BAD)
            return cli_next_exit(id);
        if (id == OPT_UNITS) {
            if (hash_lb_parse_units(&o, p.arg, &e) < 0)
                return cli_usage_error(VERB, "%s", e.text);
        } else if (id == OPT_K_ODD) {
            const char *v = p.arg;
            char *end;
            errno = 0;
            unsigned long long k = strtoull(v, &end, 0);
            if (errno || end == v || *end || *v == '-' || k > 0xFFFFFFFFull || (k & 1) == 0)
                return cli_usage_error(VERB, "--k-odd needs an odd 32-bit number ('%s')", v);
            o.k_odd = (uint32_t)k;
        } else if (id == CLI_ID_THREADS) {
            if (p.i64 < 1 || p.i64 > 1024)
                return cli_usage_error(VERB, "-j needs a thread count in 1..1024 ('%s')", p.arg);
            o.threads = (int)p.i64;
        } else if (id == OPT_NO_PLOTS) {
            plots = false;
        } else if (id == CLI_ID_PLOT_FORMAT) {
            cli_plot_output_opt(VERB, id, p.arg);
        } else if (id == CLI_POSITIONAL) {
            if (in)
                return cli_usage_error(VERB, "more than one trace ('%s')", p.arg);
            in = p.arg;
        }
    }
    dir = p.common.output;
    json = p.common.json;
    if (!in)
        return cli_usage_error(VERB, "missing FILE.atr");
    if (!dir)
        return cli_usage_error(VERB, "missing -o DIR");
    int frc = cli_plot_output_opt(VERB, 0, NULL);
    if (frc)
        return frc;
    int mrc = cli_output_dir(dir);
    if (mrc)
        return mrc;
    bool rendered = true;
    struct hash_lb *a = NULL;
    int rc = hash_lb_run_file(in, &o, dir, plots, &rendered, &a, &e);
    if (rc < 0)
        return cli_fail(rc, e.text);
    if (plots && !rendered)
        cli_warn("gnuplot not found: run 'gnuplot NAME.gp' in %s to render", dir);
    if ((rc = cli_write_output_manifest("analyze hash", dir, NULL, &in, 1))) {
        hash_lb_free(a);
        return rc;
    }
    if (hash_lb_masks_skipped(a))
        cli_warn("%llu of %llu masks of '%s' have neither recorded statistics for these unit "
                 "counts and k-odd nor kept bits: left out of the tables (source 'none' in "
                 "hash_masks.csv)",
                 (unsigned long long)hash_lb_masks_skipped(a),
                 (unsigned long long)hash_lb_masks_seen(a), in);
    if (json) {
        rc = cli_print_json(summary_json(a, &o, in, dir));
        hash_lb_free(a);
        return rc;
    }
    printf("masks %llu, recounted from kept bits %llu, without statistics %llu\n",
           (unsigned long long)hash_lb_masks_seen(a),
           (unsigned long long)hash_lb_masks_recounted(a),
           (unsigned long long)hash_lb_masks_skipped(a));
    /* the Fig. 15 summary: mean std-dev per hash at each U over all pooled masks */
    printf("%-6s", "U");
    for (int h = 0; h < DISC_HASH_KINDS; h++)
        printf(" %12s", disc_hash_name(h));
    printf("   (mean std-dev of nonzeros per unit over all rows)\n");
    for (int i = 0; i < o.n_units; i++) {
        printf("%-6u", 1u << o.bits[i]);
        for (int h = 0; h < DISC_HASH_KINDS; h++)
            printf(" %12.4f", mean_std(a, h, i));
        printf("\n");
    }
    hash_lb_free(a);
    return 0;
}
