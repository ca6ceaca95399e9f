/*
 * cmd_analyze_disc: `acceltrace analyze disc RESULTS_DIR [--trace FILE.atr ...] -o DIR`:
 * the DiSC figures (docs/models.md, DiSC 'Figures') from a results folder of `acceltrace replay`
 * with model disc and, with --trace (repeatable), from the captures' own records, several
 * captures compared in one figure.
 */
#include <stdio.h>
#include <string.h>

#include "analysis/disc_plots.h"
#include "analysis/hash_lb.h"
#include "cli/cli.h"
#include "cli/cli_opt.h"
#include "common/err.h"
#include "common/io.h"
#include "common/progress.h"
#include "common/threads.h"
#include "replay/results.h"
#include "traces/trace_reader.h"

#define VERB "analyze disc"

enum { OPT_TRACE = 1, OPT_HASH };

static const struct cli_opt opts[] = {
    {OPT_TRACE, "trace", 0, CLI_ARG_STRING, "FILE.atr",
     "a replayed disc trace (per-step, quality and FLOP views);\nat most 16", CLI_OPT_REPEATABLE},
    {OPT_HASH, "hash", 0, CLI_ARG_STRING, "DIR",
     "also write what `analyze hash TRACE -o DIR` writes for the\nfirst --trace, from the same "
     "read of it",
     0},
    CLI_OPT_OUTPUT("DIR", "output folder (required; created if missing)"),
    CLI_OPT_PLOT_FORMAT,
    CLI_OPT_QUIET,
    {CLI_ID_JSON, "json", 0, CLI_ARG_NONE, NULL,
     "one JSON document on stdout: folder, traces, files written", 0},
    CLI_OPT_ALLOW_PARTIAL,
    CLI_OPT_END,
};

const struct cli_spec cmd_analyze_disc_spec = {
    .verb = VERB,
    .usage = "usage: acceltrace analyze disc RESULTS_DIR [--trace FILE.atr ...] -o DIR\n"
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
             "With --hash DIR the hash load-balance analyzer of `analyze hash` (default units,\n"
             "k-odd and plots) shares the pass over the first --trace: the trace is read once.\n",
    .opts = opts,
    .positional = "DIR",
};

/* What `analyze hash` does after its pass, for the hash analyzer h that shared the pass
 * over trace: write the tables and plots, the manifest (trace hash and source from id, taken
 * in the same pass) and the warnings; 0 or an exit status after the message. Frees h's
 * analyzer. */
static int hash_finish(struct hash_lb_pass *h, const struct analyzer *an, const char *trace,
                       const struct cli_trace_ident *id)
{
    struct errmsg e = {0};
    int rc = analyzer_finish(an, 1, &e);
    if (rc < 0) {
        rc = cli_fail(rc, errmsg_text(&e));
        goto done;
    }
    if (!*h->rendered)
        cli_warn("gnuplot not found: run 'gnuplot NAME.gp' in %s to render", h->dir);
    if ((rc = cli_write_output_manifest_id("analyze hash", h->dir, NULL, &trace, 1, id)))
        goto done;
    if (hash_lb_masks_skipped(h->a))
        cli_warn("%llu of %llu masks of '%s' have neither recorded statistics for these unit "
                 "counts and k-odd nor kept bits: left out of the tables (source 'none' in "
                 "hash_masks.csv)",
                 (unsigned long long)hash_lb_masks_skipped(h->a),
                 (unsigned long long)hash_lb_masks_seen(h->a), trace);
done:
    hash_lb_free(h->a);
    h->a = NULL;
    return rc;
}

int cmd_analyze_disc(int argc, char **argv);
int cmd_analyze_disc(int argc, char **argv)
{
    const char *rdir = NULL, *out = NULL;
    const char *traces[DISC_PLOTS_MAX_TRACES];
    size_t n_traces = 0;
    bool json = false;
    struct hash_lb_opts ho;
    hash_lb_opts_default(&ho);
    ho.threads = threads_default();
    bool hash_rendered = true;
    struct hash_lb_pass hash = {&ho, NULL, true, &hash_rendered, NULL};
    struct cli_trace_ident tid = {0}; /* for the manifests: no second open of the trace */
    struct analyzer extra[2] = {{&cli_trace_ident_ops, &tid}, {&hash_lb_pass_ops, &hash}};
    struct cli_parser p;
    cli_parser_init(&p, &cmd_analyze_disc_spec, argc, argv);
    for (int id; (id = cli_next(&p)) != CLI_END;) {
        if (id == CLI_HELP || id == CLI_BAD)
            return cli_next_exit(id);
        if (id == OPT_TRACE) {
            if (n_traces == DISC_PLOTS_MAX_TRACES)
                return cli_usage_error(VERB, "more than %d --trace files ('%s')",
                                       DISC_PLOTS_MAX_TRACES, p.arg);
            traces[n_traces++] = p.arg;
        } else if (id == OPT_HASH) {
            hash.dir = p.arg;
        } else if (id == CLI_ID_PLOT_FORMAT) {
            cli_plot_output_opt(VERB, id, p.arg);
        } else if (id == CLI_POSITIONAL) {
            if (rdir)
                return cli_usage_error(VERB, "more than one results folder ('%s')", p.arg);
            rdir = p.arg;
        }
    }
    out = p.common.output;
    json = p.common.json;
    if (!rdir)
        return cli_usage_error(VERB, "missing RESULTS_DIR");
    if (!out)
        return cli_usage_error(VERB, "missing -o DIR");
    if (hash.dir && !n_traces)
        return cli_usage_error(VERB, "--hash needs a --trace to read");
    int frc = cli_plot_output_opt(VERB, 0, NULL);
    if (frc)
        return frc;
    struct errmsg e = {0};
    int mrc = cli_output_dir(out);
    if (!mrc && hash.dir)
        mrc = cli_output_dir(hash.dir);
    if (mrc)
        return mrc;
    struct trace_reader *tr = NULL; /* the first --trace: paired here, then read by the pass */
    if (n_traces) {
        /* the first --trace must be the trace RESULTS_DIR was replayed from */
        char rhash[128];
        int prc = results_trace_hash(rdir, rhash, sizeof rhash, &e);
        if (prc < 0)
            return cli_fail(prc == ERR_NOTFOUND ? ERR_DATA : prc, e.text);
        struct errmsg oe = {0};
        if ((prc = trace_reader_open(&tr, traces[0], NULL, &oe)) < 0)
            return cli_fail(prc, oe.text);
        const char *th = trace_reader_content_hash(tr);
        bool paired = th && !strcmp(th, rhash);
        if (!paired) {
            cli_error("results '%s' are of trace %.16s, not of '%s' (trace %.16s): give the "
                      "trace they were replayed from as the first --trace",
                      rdir, rhash, traces[0], th ? th : "unknown");
            trace_reader_free(tr);
            return 3;
        }
    }
    bool rendered = true;
    int rc = disc_plots_write(rdir, traces, n_traces, tr, extra, hash.dir ? 2 : 1, out, &rendered,
                              &e); /* frees tr */
    if (rc < 0) {
        hash_lb_free(hash.a);
        return cli_fail(rc, e.text);
    }
    if (hash.dir && (rc = hash_finish(&hash, &extra[1], traces[0], &tid)))
        return rc;
    if (!rendered)
        cli_warn("gnuplot not found: run 'gnuplot NAME.gp' in %s to render", out);
    if ((rc = cli_write_output_manifest_id("analyze disc", out, rdir, traces, n_traces, &tid)))
        return rc;
    if (json) {
        json_t *tj = json_array();
        for (size_t k = 0; k < n_traces; k++)
            json_array_append_new(tj, json_string(traces[k]));
        return cli_print_json(json_pack("{s:s,s:s,s:o,s:b,s:o}", "results", rdir, "dir", out,
                                        "traces", tj, "rendered", rendered, "files",
                                        cli_json_dir_files(out)));
    }
    return 0;
}
