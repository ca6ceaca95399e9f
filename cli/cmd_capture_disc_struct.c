/*
 * cmd_capture_disc_struct: the run of `acceltrace capture disc --source structured`
 * (docs/models.md, "Structured synthetic masks"): the options were parsed by
 * cmd_capture_disc.c; this opens the source, prints the estimate, runs it through the capture
 * driver and prints its summary.
 */
#include <math.h>
#include <stdio.h>

#include "capture/disc/disc_structured.h"
#include "cli/cli.h"
#include "common/err.h"

#define VERB "capture disc"

int cmd_capture_disc_structured(const struct disc_struct_params *sp, const char *out,
                                int zstd_level, double mem_limit_bytes, bool quiet, bool json);

/* The --json document: the trace and the run's figures. */
static json_t *summary_json(const struct dit_config *g, const struct disc_struct_result *r,
                            const char *out, double est)
{
    json_t *j = json_pack("{s:s,s:s,s:o,s:s,s:i,s:i,s:i,s:i,s:i,s:f,s:f,s:f,s:I,s:I,s:f}",
                          "workload", "disc", "source", "synthetic-structured", "trace",
                          cli_json_trace_file(out), "model", g->name, "image_size", g->image,
                          "tokens", r->N, "steps", r->K, "blocks", r->L, "heads", r->H,
                          "memory_estimate_bytes", est, "mean_prune_ratio", r->mean_prune_ratio,
                          "st_sparsity", r->sparsity, "masks_written", (json_int_t)r->masks_written,
                          "masks_kept", (json_int_t)r->masks_kept, "wall_seconds", r->wall_s);
    if (j)
        json_object_set_new(j, "predicted",
                            json_pack("{s:f,s:f,s:f,s:i}", "density_lo", r->density_lo,
                                      "density_hi", r->density_hi, "jaccard_mean", r->jaccard_mean,
                                      "jaccard_short_heads", r->jaccard_short));
    return j;
}

int cmd_capture_disc_structured(const struct disc_struct_params *sp, const char *out,
                                int zstd_level, double mem_limit_bytes, bool quiet, bool json)
{
    const struct capture_ops *ops = &capture_disc_structured_ops;
    struct errmsg e = {0};
    void *inst = NULL;
    int rc = ops->open(&inst, sp, &e);
    if (rc) {
        if (rc == ERR_USAGE)
            return cli_usage_error(VERB, "%s", errmsg_text(&e));
        return cli_fail(rc, errmsg_text(&e));
    }
    const struct dit_config *g = disc_struct_config(inst);
    double est = (double)ops->mem_estimate(inst);
    if (!quiet || est > mem_limit_bytes)
        fprintf(stderr,
                "acceltrace: structured masks of %s at %d px (N = %d tokens, %d blocks x %d "
                "heads): memory estimate %.2f GiB\n",
                g->name, g->image, g->tokens, g->depth, g->heads, est / 1073741824.0);
    struct capture_opts o;
    capture_opts_default(&o);
    o.zstd_level = zstd_level;
    o.mem_limit_bytes = (uint64_t)mem_limit_bytes;
    o.quiet = quiet;
    o.command_line = cli_command_line();
    rc = capture_run(ops, inst, out, &o, &e);
    if (rc) {
        ops->close(inst);
        return cli_fail(rc, errmsg_text(&e));
    }
    const struct disc_struct_result *r = disc_struct_result(inst);
    if (r->jaccard_short)
        cli_warn("--struct-jaccard %.3g is out of reach for %d of %d heads (too dense): their "
                 "masks are re-drawn independently at each generation",
                 sp->s.jaccard, r->jaccard_short, r->L * r->H);
    if (!quiet) {
        fprintf(stderr,
                "disc: structured synthetic, %d steps, %d blocks x %d heads, mean prune %.4f, "
                "sparsity %.4f, %llu masks (%llu kept), %.1f s\n",
                r->K, r->L, r->H, r->mean_prune_ratio, r->sparsity,
                (unsigned long long)r->masks_written, (unsigned long long)r->masks_kept, r->wall_s);
        fprintf(stderr,
                "disc: head densities %.4g..%.4g (input), Jaccard of consecutive generations "
                "%.4f (predicted, mean over heads)\n",
                r->density_lo, r->density_hi, r->jaccard_mean);
    }
    int st = json ? cli_print_json(summary_json(g, r, out, est)) : 0;
    ops->close(inst);
    return st;
}
