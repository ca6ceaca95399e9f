/*
 * cmd_capture_salca: `acceltrace capture salca [options] -o FILE.atr`: long-context decode
 * with Salca's token selection and its baselines (specs/salca.md sections 3-8). Prints the
 * summary table on stdout, progress on stderr.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capture/capture_registry.h"
#include "capture/salca/salca_capture.h"
#include "capture/salca/salca_select.h"
#include "capture/salca/salca_task.h"
#include "capture/nn/nn.h"
#include "cli/cli.h"
#include "common/err.h"
#include "common/mem.h"
#include "common/progress.h"
#include "common/threads.h"
#include "traces/trace_writer.h"

#define VERB "capture salca"

static void usage(FILE *f)
{
    fputs("usage: acceltrace capture salca [options] -o FILE.atr\n"
          "\n"
          "Runs a long prompt plus N decode steps from a Q/K/V source, applies Salca's token\n"
          "selection (heavy channels, 2-bit keys, 3-bit queries, INT8 scores, max-pool,\n"
          "histogram threshold, INT8 attention) and the baselines on the same tensors, scores\n"
          "them against dense attention and writes a trace (specs/salca.md; docs/models.md).\n"
          "\n"
          "source:\n"
          "  --source synthetic|model  Q/K/V source (synthetic)\n"
          "  --checkpoint DIR      Hugging Face Llama checkpoint (config.json + safetensors);\n"
          "                        without it --source model uses the seeded tiny model\n"
          "  --seed N              seed of task, synthetic source and tiny weights (1)\n"
          "  --layers N --heads N --kv-heads N --head-dim N   synthetic dims (4, 4, 2, 128)\n"
          "  --tiny-outlier-pairs N, --tiny-outlier-gain X    planted k_proj outliers (4, 8)\n"
          "  --syn-KEY X           synthetic parameter (spec 3.3): heavy-pairs, heavy-band-lo,\n"
          "                        gain-median, gain-sigma, heavy-mean, head-spread,\n"
          "                        query-jitter, logit-std, sink-tokens, c-sink, c-loc,\n"
          "                        tau-loc, c-needle, early-layer-scale, early-layers\n"
          "task:\n"
          "  --task NAME           LongBench task or family (narrativeqa); --list-tasks\n"
          "  --sample N            sample index (0)\n"
          "  --length N            prompt tokens exactly (32768); 0 draws a LongBench length\n"
          "  --max-ctx N           middle truncation limit for drawn lengths (31500)\n"
          "  --max-new N           cap of the task's generation length (128)\n"
          "  --steps N             decode steps (64 for every task, so runs compare across\n"
          "                        tasks); -1 uses the spec's N = min(max gen, --max-new)\n"
          "selection:\n"
          "  --methods LIST        salca,std_topk,pl_topk,full_feat,quest (all)\n"
          "  --retention X         target retention rho, a decimal (0.05)\n"
          "  --k-min N             K floor (64)\n"
          "  --dynamic             dynamic K rule; --p-mass X sets its mass (0.95)\n"
          "  --pool W              max-pool width, odd (5); 1 disables\n"
          "  --threshold-cmp ge|gt histogram threshold comparison (ge)\n"
          "  --attn-precision int8|fp32   attention on the selected set (int8)\n"
          "  --quest-page N        Quest page size (16)\n"
          "  --quest-dense-layers N, --quest-min-pages N   Quest options (0, 0)\n"
          "  --ablation SPEC       Salca variant with its own method id (16, 17, ...); SPEC is\n"
          "                        key=value,...: w_k 1-4, w_q 2-4|fp32, s_f, pool, rho\n"
          "                        (repeatable, up to 8)\n"
          "output:\n"
          "  -o FILE.atr           trace to write (required)\n"
          "  --csv FILE            per-(sample, method, layer) recall/cosine aggregates\n"
          "  --no-hist             omit the 256-bin histograms from the records\n"
          "  --no-top1             model source: skip the substituted runs (the top1\n"
          "                        column and the logit_rel_diff.METHOD=X lines: max\n"
          "                        |logit - dense logit| / max |dense logit| over the steps)\n"
          "  --zstd-level N        frame compression level (3; 0 stores raw)\n"
          "  --threads N           worker threads (ACCELTRACE_THREADS or the CPU count)\n"
          "  --mem-limit SIZE      refuse to start above this memory estimate (8GiB; units\n"
          "                        B, KB..TB, K..T, KiB..TiB); --mem-limit-gib X still works\n"
          "  -q                    no progress on stderr\n"
          "  -h, --help            this help\n",
          f);
}

struct synopt {
    const char *name;
    double *dval;
    uint32_t *uval;
};

static int parse_methods(const char *s, uint32_t *mask)
{
    char buf[256];
    if (strlen(s) >= sizeof buf)
        return -1;
    strcpy(buf, s);
    *mask = 0;
    for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
        int m = salca_method_id(tok);
        if (m < 0 || m == SALCA_M_DENSE)
            return -1;
        *mask |= 1u << m;
    }
    return *mask ? 0 : -1;
}

/* One option with a value (a, v); 0, or the exit status of a usage error. */
static int parse_value_option(struct salca_capture_params *p, const char **out, const char *a,
                              const char *v)
{
    if (!strcmp(a, "-o")) {
        *out = v;
    } else if (!strcmp(a, "--ablation")) {
        if (p->n_variants == SALCA_MAX_VARIANTS)
            return cli_usage_error(VERB, "at most %d --ablation variants",
                                   SALCA_MAX_VARIANTS);
        struct salca_variant tv;
        struct errmsg ve = {0};
        if (strlen(v) >= sizeof p->variant_text[0] ||
            salca_variant_parse(v, p->head_dim ? p->head_dim : 128, &tv, &ve))
            return cli_usage_error(VERB, "%s", errmsg_text(&ve));
        snprintf(p->variant_text[p->n_variants++], sizeof p->variant_text[0], "%s", v);
    } else if (!strcmp(a, "--csv")) {
        p->csv_path = v;
    } else if (!strcmp(a, "--source")) {
        if (!strcmp(v, "model"))
            p->model = true;
        else if (!strcmp(v, "synthetic"))
            p->model = false;
        else
            return cli_usage_error(VERB, "unknown source '%s' (model or synthetic)", v);
    } else if (!strcmp(a, "--checkpoint")) {
        p->checkpoint = v;
    } else if (!strcmp(a, "--seed")) {
        if (!cli_parse_u64(v, &p->seed))
            return cli_usage_error(VERB, "bad seed '%s'", v);
    } else if (!strcmp(a, "--task")) {
        if (!salca_task_find(v))
            return cli_usage_error(VERB, "unknown task '%s' (see --list-tasks)", v);
        p->task = v;
    } else if (!strcmp(a, "--steps")) {
        int64_t x;
        /* 0 steps would write a trace with no jobs and exit 0 (issue 17) */
        if (!cli_parse_i64(v, &x) || x < -1 || x == 0 || x > 1000000)
            return cli_usage_error(VERB, "bad step count '%s' (1..1000000, or -1 for the "
                                   "task's N)", v);
        p->steps = (int32_t)x;
    } else if (!strcmp(a, "--methods")) {
        if (parse_methods(v, &p->methods))
            return cli_usage_error(VERB, "bad method list '%s' (salca, std_topk, "
                                   "pl_topk, full_feat, quest)", v);
    } else if (!strcmp(a, "--retention")) {
        if (salca_ratio_parse(v, &p->sel.rho) || p->sel.rho.num == 0 ||
            p->sel.rho.num > p->sel.rho.den || strlen(v) >= sizeof p->rho_text)
            return cli_usage_error(VERB, "retention '%s' must be a decimal in (0, 1]", v);
        snprintf(p->rho_text, sizeof p->rho_text, "%s", v);
    } else if (!strcmp(a, "--p-mass")) {
        if (!cli_parse_f64(v, &p->sel.p_mass) || !(p->sel.p_mass > 0) ||
            p->sel.p_mass > 1)
            return cli_usage_error(VERB, "p-mass '%s' must be in (0, 1]", v);
    } else if (!strcmp(a, "--threshold-cmp")) {
        if (!strcmp(v, "ge"))
            p->sel.cmp = SALCA_CMP_GE;
        else if (!strcmp(v, "gt"))
            p->sel.cmp = SALCA_CMP_GT;
        else
            return cli_usage_error(VERB, "threshold-cmp must be ge or gt");
    } else if (!strcmp(a, "--attn-precision")) {
        if (!strcmp(v, "int8"))
            p->sel.attn_fp32 = false;
        else if (!strcmp(v, "fp32"))
            p->sel.attn_fp32 = true;
        else
            return cli_usage_error(VERB, "attn-precision must be int8 or fp32");
    } else if (!strcmp(a, "--tiny-outlier-gain")) {
        if (!cli_parse_f64(v, &p->tiny_outlier_gain) || !(p->tiny_outlier_gain > 0))
            return cli_usage_error(VERB, "tiny-outlier-gain must be positive");
    } else if (!strcmp(a, "--zstd-level")) {
        int64_t x;
        if (!cli_parse_i64(v, &x) || x < 0 || x > 19)
            return cli_usage_error(VERB, "zstd level must be in [0, 19]");
        p->zstd_level = (int)x;
    } else if (!strcmp(a, "--threads")) {
        int64_t x;
        if (!cli_parse_i64(v, &x) || x < 1 || x > 256)
            return cli_usage_error(VERB, "threads must be in [1, 256]");
        p->threads = (int)x;
    } else if (!strcmp(a, "--mem-limit")) {
        if (mem_parse_size(v, &p->mem_limit_bytes) || p->mem_limit_bytes == 0)
            return cli_usage_error(VERB, "bad --mem-limit '%s' (a size like 8GiB)", v);
    } else if (!strcmp(a, "--mem-limit-gib")) { /* the old spelling: --mem-limit XGiB */
        double x;
        if (!cli_parse_f64(v, &x) || !(x > 0) || x > 1e6)
            return cli_usage_error(VERB, "mem-limit-gib must be positive");
        p->mem_limit_bytes = (uint64_t)(x * 1073741824.0);
    } else {
        return cli_usage_error(VERB, "unknown option '%s'", a);
    }
    return 0;
}

/* The checks across options; 0, or the exit status of a usage error. */
static int check_args(const struct salca_capture_params *p, const char *out)
{
    if (!out)
        return cli_usage_error(VERB, "missing -o FILE.atr");
    if (p->sel.pool % 2 == 0)
        return cli_usage_error(VERB, "pool width %u must be odd", p->sel.pool);
    if (p->checkpoint && !p->model)
        return cli_usage_error(VERB, "--checkpoint needs --source model");
    { /* no checkpoint file may be the trace, its .partial or the --csv file (exit 2) */
        struct errmsg ce = {0};
        const char *ins[1] = {p->checkpoint};
        const char *side[1] = {p->csv_path};
        if (trace_writer_check_inputs(out, ins, 1, side, 1, &ce))
            return cli_usage_error(VERB, "%s", errmsg_text(&ce));
    }
    return 0;
}

/* The options into *pp and *outp; 0, or the exit status of a usage error (or of -h,
 * --list-tasks) with *done set. */
static int parse_args(int argc, char **argv, struct salca_capture_params *pp, const char **outp,
                      bool *done)
{
    struct salca_capture_params p = *pp;
    const char *out = NULL;
    *done = true;
    struct salca_synth_params *s = &p.synth;
    struct synopt syn[] = {
        {"--syn-heavy-pairs", NULL, &s->heavy_pairs},
        {"--syn-heavy-band-lo", NULL, &s->heavy_band_lo},
        {"--syn-gain-median", &s->gain_median, NULL},
        {"--syn-gain-sigma", &s->gain_sigma, NULL},
        {"--syn-heavy-mean", &s->heavy_mean, NULL},
        {"--syn-head-spread", &s->head_spread, NULL},
        {"--syn-query-jitter", &s->query_jitter, NULL},
        {"--syn-logit-std", &s->logit_std, NULL},
        {"--syn-sink-tokens", NULL, &s->sink_tokens},
        {"--syn-c-sink", &s->c_sink, NULL},
        {"--syn-c-loc", &s->c_loc, NULL},
        {"--syn-tau-loc", &s->tau_loc, NULL},
        {"--syn-c-needle", &s->c_needle, NULL},
        {"--syn-early-layer-scale", &s->early_layer_scale, NULL},
        {"--syn-early-layers", NULL, &s->early_layers},
    };
    const struct {
        const char *name;
        uint32_t *dst;
        uint64_t lo, hi;
    } u32opts[] = {
        {"--sample", &p.sample, 0, 1000000},
        {"--length", &p.length, 0, 1u << 24},
        {"--max-ctx", &p.max_len, 2, 1u << 24},
        {"--max-new", &p.max_new, 1, 1u << 20},
        {"--layers", &p.layers, 1, 1024},
        {"--heads", &p.heads, 1, 1024},
        {"--kv-heads", &p.kv_heads, 1, 1024},
        {"--head-dim", &p.head_dim, 8, 256},
        {"--tiny-outlier-pairs", &p.tiny_outlier_pairs, 0, 128},
        {"--k-min", &p.sel.k_min, 1, UINT32_MAX},
        {"--pool", &p.sel.pool, 1, 1001},
        {"--quest-page", &p.quest_page, 1, 65536},
        {"--quest-dense-layers", &p.quest_dense_layers, 0, 1024},
        {"--quest-min-pages", &p.sel.quest_min_pages, 0, 1u << 24},
    };
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (cli_is_help(a)) {
            usage(stdout);
            return 0;
        }
        if (!strcmp(a, "-q")) {
            p.quiet = true;
            progress_global_quiet = true;
            continue;
        }
        if (!strcmp(a, "--list-tasks")) {
            for (uint32_t k = 0; k < salca_task_count(); k++) {
                const struct salca_task_info *t = salca_task_at(k);
                printf("%-22s %-14s target %6.0f tokens, max gen %u\n", t->name,
                       salca_family_name(t->family), salca_task_target(t), t->max_gen);
            }
            return 0;
        }
        if (!strcmp(a, "--dynamic")) {
            p.sel.k_mode = SALCA_K_DYNAMIC;
            continue;
        }
        if (!strcmp(a, "--no-hist")) {
            p.no_hist = true;
            continue;
        }
        if (!strcmp(a, "--no-top1")) {
            p.top1 = false;
            continue;
        }
        bool flag_done = false;
        for (size_t k = 0; k < sizeof u32opts / sizeof u32opts[0] && !flag_done; k++) {
            if (strcmp(a, u32opts[k].name))
                continue;
            uint64_t x;
            if (!v || !cli_parse_u64(v, &x) || x < u32opts[k].lo || x > u32opts[k].hi)
                return cli_usage_error(VERB, "option '%s' needs an integer in [%llu, %llu]",
                                       a, (unsigned long long)u32opts[k].lo,
                                       (unsigned long long)u32opts[k].hi);
            *u32opts[k].dst = (uint32_t)x;
            i++;
            flag_done = true;
        }
        for (size_t k = 0; k < sizeof syn / sizeof syn[0] && !flag_done; k++) {
            if (strcmp(a, syn[k].name))
                continue;
            if (syn[k].dval) {
                double x;
                if (!v || !cli_parse_f64(v, &x) || !(x >= 0) || x > 1e6)
                    return cli_usage_error(VERB, "option '%s' needs a number >= 0", a);
                *syn[k].dval = x;
            } else {
                uint64_t x;
                if (!v || !cli_parse_u64(v, &x) || x > 1000000)
                    return cli_usage_error(VERB, "option '%s' needs an integer >= 0", a);
                *syn[k].uval = (uint32_t)x;
            }
            i++;
            flag_done = true;
        }
        if (flag_done)
            continue;
        if (!v) {
            if (!strncmp(a, "-", 1))
                return cli_usage_error(VERB, "unknown option '%s' (or missing value)", a);
            return cli_usage_error(VERB, "unexpected argument '%s'", a);
        }
        int st = parse_value_option(&p, &out, a, v);
        if (st)
            return st;
        i++;
    }
    int st = check_args(&p, out);
    if (st)
        return st;
    *pp = p;
    *outp = out;
    *done = false;
    return 0;
}

int cmd_capture_salca(int argc, char **argv);
int cmd_capture_salca(int argc, char **argv)
{
    struct salca_capture_params p;
    salca_capture_params_default(&p);
    p.threads = threads_default();
    const char *out = NULL;
    bool done = false;
    int st = parse_args(argc, argv, &p, &out, &done);
    if (done)
        return st;
    nn_set_threads(1); /* deterministic BLAS; parallelism comes from the job threads */

    const struct capture_ops *ops = capture_registry_find("salca");
    struct capture_opts o;
    capture_opts_default(&o);
    o.zstd_level = p.zstd_level;
    o.mem_limit_bytes = p.mem_limit_bytes;
    o.quiet = p.quiet;
    o.command_line = cli_command_line(); /* time: SOURCE_DATE_EPOCH or now (capture.h) */
    struct errmsg e = {0};
    void *inst = NULL;
    int rc = ops->open(&inst, &p, &e);
    if (!rc)
        rc = capture_run(ops, inst, out, &o, &e);
    if (rc < 0) {
        ops->close(inst);
        return cli_fail(rc, errmsg_text(&e));
    }
    const struct salca_capture_result *res = salca_capture_result(inst);
    printf("salca capture: %s, task %s, n0 %u (n_raw %llu), %u steps, L %u H %u G %u d %u, "
           "%llu selections, %.1f s\n",
           p.model ? (p.checkpoint ? p.checkpoint : "model tiny") : "synthetic", p.task, res->n0,
           (unsigned long long)res->n_raw, res->steps, res->L, res->H, res->G, res->d,
           (unsigned long long)res->selects, res->wall_seconds);
    fputs(res->table, stdout);
    /* model source: the substituted runs' logits against the dense run's (spec A20) */
    for (int m = 0; m < SALCA_NSLOT; m++)
        if (res->m[m].run && res->m[m].top1 >= 0)
            printf("logit_rel_diff.%s=%.3e\n", res->m[m].name, res->m[m].logit_diff);
    ops->close(inst);
    if (fflush(stdout) != 0)
        return cli_fail(ERR_IO, "cannot write the output");
    return 0;
}
