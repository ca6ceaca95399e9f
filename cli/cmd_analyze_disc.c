/*
 * cmd_analyze_disc: `acceltrace analyze disc RESULTS_DIR [--trace FILE.atr ...] -o DIR`:
 * the DiSC figures of specs/disc.md section 9 from a results folder of `acceltrace replay`
 * with model disc and, with --trace (repeatable), from the captures' own records, several
 * captures compared in one figure.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "analysis/disc_plots.h"
#include "cli/cli.h"
#include "common/err.h"
#include "replay/results.h"
#include "traces/trace_reader.h"

#define VERB "analyze disc"

static void usage(FILE *f)
{
    fputs("usage: acceltrace analyze disc RESULTS_DIR [--trace FILE.atr ...] -o DIR\n"
          "\n"
          "DiSC replay figures from a results folder of `acceltrace replay` (model disc):\n"
          "speedup and energy over the A100 per mode (paper Fig. 18, paper ranges shaded),\n"
          "cycles_by_op (exposed cycles per op class per step, config 0) and, with --trace,\n"
          "the capture views: prune_per_step, st_sparsity, st_sparsity_heatmap, latent_diff,\n"
          "quality_per_step (with quality.csv), flops_self_attention and flops_network\n"
          "(Fig. 17). Each plot gets .dat, .gp, .png (and the bar plots NAME.csv).\n"
          "\n"
          "Several --trace files are compared in one figure: one line per trace, labelled by\n"
          "its file name without directory and .atr; in the FLOP bars one group of dense,\n"
          "CTR and CTR+ST per trace, each in % of its own dense (categories \"LABEL dense\",\n"
          "...); quality.csv has a row per trace and run. st_sparsity_heatmap is drawn for\n"
          "the first trace with masks, st_sparsity_heatmap_LABEL for each further one.\n"
          "\n"
          "The first --trace must be the trace RESULTS_DIR was replayed from (its content\n"
          "hash equals the results'); otherwise nothing is drawn and the exit status is 3.\n"
          "\n"
          "options:\n"
          "  --trace FILE.atr  a replayed disc trace (per-step, quality and FLOP views);\n"
          "                    repeatable, at most 16\n"
          "  -o DIR            output folder (required; created if missing)\n"
          "  -h, --help        this help\n",
          f);
}

int cmd_analyze_disc(int argc, char **argv);
int cmd_analyze_disc(int argc, char **argv)
{
    const char *rdir = NULL, *out = NULL;
    const char *traces[DISC_PLOTS_MAX_TRACES];
    size_t n_traces = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (cli_is_help(a)) {
            usage(stdout);
            return 0;
        }
        if (!strcmp(a, "-o") && i + 1 < argc) {
            out = argv[++i];
        } else if (!strcmp(a, "--trace") && i + 1 < argc) {
            if (n_traces == DISC_PLOTS_MAX_TRACES)
                return cli_usage_error(VERB, "more than %d --trace files ('%s')",
                                       DISC_PLOTS_MAX_TRACES, argv[i + 1]);
            traces[n_traces++] = argv[++i];
        } else if (a[0] == '-') {
            return cli_usage_error(VERB, "unknown option or missing value '%s'", a);
        } else if (!rdir) {
            rdir = a;
        } else {
            return cli_usage_error(VERB, "more than one results folder ('%s')", a);
        }
    }
    if (!rdir)
        return cli_usage_error(VERB, "missing RESULTS_DIR");
    if (!out)
        return cli_usage_error(VERB, "missing -o DIR");
    if (mkdir(out, 0777) != 0 && errno != EEXIST) {
        cli_error("cannot create folder '%s': %s", out, strerror(errno));
        return 1;
    }
    struct errmsg e = {0};
    if (n_traces) {
        /* the first --trace must be the trace RESULTS_DIR was replayed from */
        char rhash[128];
        int prc = results_trace_hash(rdir, rhash, sizeof rhash, &e);
        if (prc < 0)
            return cli_fail(prc == ERR_NOTFOUND ? ERR_DATA : prc, e.text);
        struct trace_reader *tr = NULL;
        struct errmsg oe = {0};
        if ((prc = trace_reader_open(&tr, traces[0], NULL, &oe)) < 0)
            return cli_fail(prc, oe.text);
        const char *th = trace_reader_content_hash(tr);
        bool paired = th && !strcmp(th, rhash);
        if (!paired)
            cli_error("results '%s' are of trace %.16s, not of '%s' (trace %.16s): give the "
                      "trace they were replayed from as the first --trace",
                      rdir, rhash, traces[0], th ? th : "unknown");
        trace_reader_free(tr);
        if (!paired)
            return 3;
    }
    bool rendered = true;
    int rc = disc_plots_write(rdir, traces, n_traces, out, &rendered, &e);
    if (rc < 0)
        return cli_fail(rc, e.text);
    if (!rendered)
        cli_warn("gnuplot not found: run 'gnuplot NAME.gp' in %s to render", out);
    return 0;
}
