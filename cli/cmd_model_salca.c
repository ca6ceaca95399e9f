/*
 * cmd_model_salca: `acceltrace model salca`: the Salca analytic performance model
 * (specs/salca.md section 9) as a solver; prints one key=value line per derived value.
 */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "common/buf.h"
#include "common/err.h"
#include "common/mem.h"
#include "replay/salca_perf.h"

#define VERB "model salca"

static void usage(FILE *f)
{
    fputs("usage: acceltrace model salca [--paper] [options]\n"
          "\n"
          "Salca analytic performance model (specs/salca.md section 9; docs/models.md#salca-replay):\n"
          "bits per key, HBM bandwidth, the Pareto front of (m_pre, m_att), the design point,\n"
          "its minimum retention, the compute ceilings p', the final design for a given p,\n"
          "the 4-bit baseline ASIC_S_4 and the conflict gain. Prints key=value lines.\n"
          "Decimal values are exact ratios (0.95 = 19/20); a/b is accepted too.\n"
          "\n"
          "options (defaults are the paper's inputs):\n"
          "  --paper              use the paper's inputs (the default; stated explicitly)\n"
          "  --d N                head dimension (128)\n"
          "  --s-f X              feature keep ratio (0.5)\n"
          "  --w-k N              key bit width (2)\n"
          "  --factor-bits N      bits of the per-key quantization factors (32)\n"
          "  --chn N              HBM pseudo-channels (32)\n"
          "  --bw N               bits per pseudo-channel per HBM cycle (128)\n"
          "  --f-hbm-ghz X        HBM clock, GHz (1)\n"
          "  --f-cmp-ghz X        compute clock, GHz (0.5)\n"
          "  --alpha X            channel-conflict factor (1.17)\n"
          "  --alpha-inorder X    in-order conflict factor, for conflict_gain (2.18)\n"
          "  --beta-pre X         HBM efficiency of pre-compute (0.95)\n"
          "  --beta-att X         HBM efficiency of attention (0.55)\n"
          "  --r-q X              target retention (0.05)\n"
          "  --p-pre N, --p-att N compute parallelism of the final design (final.* lines)\n"
          "  --h-pre N, --h-att N pseudo-channels of the fixed-PC view (design point's)\n"
          "  -h, --help           this help\n",
          f);
}

int cmd_model_salca(int argc, char **argv);
int cmd_model_salca(int argc, char **argv)
{
    struct salca_perf_in in;
    salca_perf_in_paper(&in);
    const struct {
        const char *opt;
        struct salca_rat *dst;
    } rats[] = {
        {"--d", &in.d},
        {"--s-f", &in.s_f},
        {"--w-k", &in.w_k},
        {"--factor-bits", &in.factor_bits},
        {"--chn", &in.chn},
        {"--bw", &in.bw},
        {"--f-hbm-ghz", &in.f_hbm_ghz},
        {"--f-cmp-ghz", &in.f_cmp_ghz},
        {"--alpha", &in.alpha},
        {"--alpha-inorder", &in.alpha_inorder},
        {"--beta-pre", &in.beta_pre},
        {"--beta-att", &in.beta_att},
        {"--r-q", &in.r_q},
    };
    const struct {
        const char *opt;
        int64_t *dst;
    } ints[] = {
        {"--p-pre", &in.p_pre},
        {"--p-att", &in.p_att},
        {"--h-pre", &in.h_pre},
        {"--h-att", &in.h_att},
    };
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (cli_is_help(a)) {
            usage(stdout);
            return 0;
        }
        if (!strcmp(a, "--paper"))
            continue;
        bool done = false;
        for (size_t k = 0; k < sizeof rats / sizeof rats[0] && !done; k++) {
            if (strcmp(a, rats[k].opt))
                continue;
            if (i + 1 >= argc)
                return cli_usage_error(VERB, "option '%s' needs a value", a);
            if (salca_rat_parse(argv[++i], rats[k].dst) < 0)
                return cli_usage_error(VERB, "bad value '%s' for '%s' (a decimal or a/b)",
                                       argv[i], a);
            done = true;
        }
        for (size_t k = 0; k < sizeof ints / sizeof ints[0] && !done; k++) {
            if (strcmp(a, ints[k].opt))
                continue;
            if (i + 1 >= argc)
                return cli_usage_error(VERB, "option '%s' needs a value", a);
            if (!cli_parse_i64(argv[++i], ints[k].dst) || *ints[k].dst < 1 ||
                *ints[k].dst > 1000000000)
                return cli_usage_error(VERB, "bad value '%s' for '%s' (a positive integer)",
                                       argv[i], a);
            done = true;
        }
        if (!done)
            return cli_usage_error(VERB, "unknown option '%s'", a);
    }

    struct salca_perf_out *out = mem_alloc(sizeof *out);
    if (!out)
        return cli_fail(ERR_NOMEM, "out of memory");
    struct errmsg e = {0};
    int rc = salca_perf_solve(&in, out, &e);
    if (rc < 0) {
        mem_free(out);
        return cli_fail(rc, errmsg_text(&e));
    }
    if (!out->design_meets_r_q)
        cli_warn("no pareto point reaches r_q; the design point is the one with the smallest "
                 "r_min (design.meets_r_q=0)");
    struct buf b;
    buf_init(&b);
    rc = salca_perf_format(out, &b);
    mem_free(out);
    if (rc < 0) {
        buf_release(&b);
        return cli_fail(rc, "out of memory");
    }
    fwrite(b.data, 1, b.len, stdout);
    buf_release(&b);
    if (fflush(stdout) != 0)
        return cli_fail(ERR_IO, "cannot write the output");
    return 0;
}
