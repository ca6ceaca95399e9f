/*
 * cmd_capture_salca: `acceltrace capture salca [options] -o FILE.atr`: long-context decode
 * with Salca's token selection and its baselines (docs/models.md, 'Salca capture'). Prints
 * the summary table on stdout (with --json one JSON document), progress on stderr.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capture/capture_registry.h"
#include "capture/nn/nn.h"
#include "capture/salca/salca_capture.h"
#include "capture/salca/salca_select.h"
#include "capture/salca/salca_task.h"
#include "cli/cli.h"
#include "cli/cli_opt.h"
#include "cli/cmd_capture.h"
#include "common/err.h"
#include "common/mem.h"
#include "common/progress.h"
#include "common/threads.h"
#include "traces/trace_writer.h"

#define VERB "capture salca"

enum {
    OPT_SOURCE = 1,
    OPT_CHECKPOINT,
    OPT_SEED,
    OPT_TINY_OUTLIER_GAIN,
    OPT_TASK,
    OPT_LIST_TASKS,
    OPT_STEPS,
    OPT_METHODS,
    OPT_RETENTION,
    OPT_DYNAMIC,
    OPT_P_MASS,
    OPT_THRESHOLD_CMP,
    OPT_ATTN_PRECISION,
    OPT_ABLATION,
    OPT_CSV,
    OPT_NO_HIST,
    OPT_NO_TOP1,
    OPT_ZSTD_LEVEL,
    OPT_MEM_LIMIT_GIB,
    OPT_RESUME,
    OPT_LAYER_MAJOR,
    OPT_DRY_RUN,
    OPT_U32 = 100, /* OPT_U32 + k: the k-th integer option of parse_args */
    OPT_SYN = 200, /* OPT_SYN + k: the k-th --syn-* option */
    OPT_CAL = 300, /* OPT_CAL + k: the k-th --cal-* option */
};

/* clang-format off */
#define U32(k, n, mv, h) {OPT_U32 + (k), n, 0, CLI_ARG_STRING, mv, h, 0}
#define SYN(k, n, h) {OPT_SYN + (k), n, 0, CLI_ARG_STRING, "X", h, 0}
#define CAL(k, n, h) {OPT_CAL + (k), n, 0, CLI_ARG_STRING, "X", h, 0}
static const struct cli_opt opts[] = {
    {OPT_SOURCE, "source", 0, CLI_ARG_STRING, "calibrated|synthetic|model",
     "Q/K/V source (calibrated: Llama-3.1-8B's per-head\nstructure, docs/models.md 'Calibrated "
     "Salca source')", 0},
    {OPT_CHECKPOINT, "checkpoint", 0, CLI_ARG_STRING, "DIR",
     "Hugging Face Llama checkpoint (config.json +\nsafetensors); without it --source model "
     "uses the seeded\ntiny model", 0},
    {OPT_SEED, "seed", 0, CLI_ARG_STRING, "N",
     "seed of task, synthetic source and tiny weights (1)",
     0},
    U32(4, "layers", "N", "layers (4; calibrated: spread over the model's 32)"),
    U32(5, "heads", "N", "query heads (4; calibrated: <= 4 per K/V head)"),
    U32(6, "kv-heads", "N", "K/V heads (2; calibrated: <= 8)"),
    U32(7, "head-dim", "N", "head dimension of the synthetic sources (128)"),
    U32(8, "tiny-outlier-pairs", "N", "planted k_proj outlier pairs of the tiny model (4)"),
    {OPT_TINY_OUTLIER_GAIN, "tiny-outlier-gain", 0, CLI_ARG_STRING, "X",
     "gain of the planted outliers (8)", 0},
    SYN(0, "syn-heavy-pairs", "synthetic parameter (docs/models.md, Salca 'Sources'):\n"
        "heavy channel pairs P (4)"),
    SYN(1, "syn-heavy-band-lo", "synthetic: heavy band start j_lo (0: d/4)"),
    SYN(2, "syn-gain-median", "synthetic: heavy gain median (8)"),
    SYN(3, "syn-gain-sigma", "synthetic: heavy gain sigma (0.5)"),
    SYN(4, "syn-heavy-mean", "synthetic: heavy mean m_h (2)"),
    SYN(5, "syn-head-spread", "synthetic: head spread eta (0.3)"),
    SYN(6, "syn-query-jitter", "synthetic: query jitter zeta (0.2)"),
    SYN(7, "syn-logit-std", "synthetic: logit std sigma_L (5)"),
    SYN(8, "syn-sink-tokens", "synthetic: sink tokens (4)"),
    SYN(9, "syn-c-sink", "synthetic: c_sink (10)"),
    SYN(10, "syn-c-loc", "synthetic: c_loc (4)"),
    SYN(11, "syn-tau-loc", "synthetic: tau_loc (64)"),
    SYN(12, "syn-c-needle", "synthetic: c_needle (24)"),
    SYN(13, "syn-early-layer-scale", "synthetic: early-layer scale lambda (0.3)"),
    SYN(14, "syn-early-layers", "synthetic: early layers (2)"),
    CAL(0, "cal-retrieval-frac", "calibrated parameter (docs/models.md, 'Calibrated Salca\n"
        "source'): share of KV heads that are retrieval heads (0.5)"),
    CAL(1, "cal-logit-std", "calibrated: background logit std sigma (1)"),
    CAL(2, "cal-sink-tokens", "calibrated: sink tokens (4)"),
    CAL(3, "cal-c-sink", "calibrated: sink boost (10)"),
    CAL(4, "cal-local-tokens", "calibrated: local band of every head (100)"),
    CAL(5, "cal-c-local", "calibrated: local boost (10)"),
    CAL(6, "cal-stream-window", "calibrated: streaming heads' recent window (256)"),
    CAL(7, "cal-search-tokens", "calibrated: prompt length of the budgets (30000)"),
    CAL(8, "cal-c-needle", "calibrated: needle relevance (8)"),
    CAL(9, "cal-query-jitter", "calibrated: query jitter zeta (0.2)"),
    {OPT_TASK, "task", 0, CLI_ARG_STRING, "NAME", "LongBench task or family (narrativeqa)", 0},
    {OPT_LIST_TASKS, "list-tasks", 0, CLI_ARG_NONE, NULL, "print the tasks and exit", 0},
    U32(0, "sample", "N", "sample index (0)"),
    U32(1, "length", "N", "prompt tokens exactly (32768); 0 draws a LongBench length"),
    U32(2, "max-ctx", "N", "middle truncation limit for drawn lengths (31500)"),
    U32(3, "max-new", "N", "cap of the task's generation length (128)"),
    {OPT_STEPS, "steps", 0, CLI_ARG_STRING, "N",
     "decode steps (64 for every task, so runs compare across\ntasks); -1 uses N = "
     "min(max gen, --max-new)", 0},
    {OPT_METHODS, "methods", 0, CLI_ARG_LIST, "LIST",
     "salca,std_topk,pl_topk,full_feat,quest (all)",
     0},
    {OPT_RETENTION, "retention", 0, CLI_ARG_STRING, "X",
     "target retention rho, a decimal (0.05)", 0},
    U32(9, "k-min", "N", "K floor (64)"),
    {OPT_DYNAMIC, "dynamic", 0, CLI_ARG_NONE, NULL, "dynamic K rule", 0},
    {OPT_P_MASS, "p-mass", 0, CLI_ARG_STRING, "X", "mass of the dynamic K rule (0.95)", 0},
    U32(10, "pool", "W", "max-pool width, odd (5); 1 disables"),
    {OPT_THRESHOLD_CMP, "threshold-cmp", 0, CLI_ARG_STRING, "ge|gt",
     "histogram threshold comparison (ge)", 0},
    {OPT_ATTN_PRECISION, "attn-precision", 0, CLI_ARG_STRING, "int8|fp32",
     "attention on the selected set (int8)", 0},
    U32(11, "quest-page", "N", "Quest page size (16)"),
    U32(12, "quest-dense-layers", "N", "Quest dense layers (0)"),
    U32(13, "quest-min-pages", "N", "Quest minimum pages (0)"),
    {OPT_ABLATION, "ablation", 0, CLI_ARG_STRING, "SPEC",
     "Salca variant with its own method id (16, 17, ...); SPEC\nis key=value,...: w_k 1-4, "
     "w_q 2-4|fp32, s_f, pool, rho;\nup to 8", CLI_OPT_REPEATABLE},
    CLI_OPT_OUTPUT("FILE.atr", "trace to write (required)"),
    {OPT_CSV, "csv", 0, CLI_ARG_STRING, "FILE",
     "per-(sample, method, layer) recall/cosine aggregates", 0},
    {OPT_NO_HIST, "no-hist", 0, CLI_ARG_NONE, NULL, "omit the 256-bin histograms from the records",
     0},
    {OPT_NO_TOP1, "no-top1", 0, CLI_ARG_NONE, NULL,
     "model source: skip the substituted runs (the top1\ncolumn and the logit_rel_diff.METHOD=X "
     "lines: max\n|logit - dense logit| / max |dense logit| over the steps)", 0},
    {OPT_ZSTD_LEVEL, "zstd-level", 0, CLI_ARG_STRING, "N",
     "frame compression level (3; 0 stores raw)",
     0},
    CLI_OPT_THREADS("worker threads (ACCELTRACE_THREADS or the CPU count)"),
    CLI_OPT_MEM_LIMIT("refuse to start above this memory estimate (8GiB;\nunits B, KB..TB, K..T, "
                      "KiB..TiB)"),
    {OPT_MEM_LIMIT_GIB, "mem-limit-gib", 0, CLI_ARG_STRING, "X", "--mem-limit XGiB",
     CLI_OPT_DEPRECATED},
    {CLI_ID_QUIET, "quiet", 'q', CLI_ARG_NONE, NULL, "no progress on stderr", 0},
    CMD_CAPTURE_OPT_RESUME(OPT_RESUME),
    {OPT_LAYER_MAJOR, "layer-major", 0, CLI_ARG_NONE, NULL,
     "hold one layer's K/V at a time (records per layer,\nthen per step); chosen without it when "
     "every layer\nwould exceed --mem-limit (docs/models.md 'Salca\nmemory plan')", 0},
    {OPT_DRY_RUN, "dry-run", 0, CLI_ARG_NONE, NULL,
     "print the memory plan and exit: 0 when it fits\n--mem-limit, 3 when not (-o not needed)", 0},
    {CLI_ID_JSON, "json", 0, CLI_ARG_NONE, NULL,
     "one JSON document on stdout: the trace (file, bytes,\nrecords), the run and per method "
     "its recall, cosine,\nretention and overshoot", 0},
    CLI_OPT_END,
};
#undef U32
#undef SYN
#undef CAL
/* clang-format on */

const struct cli_spec cmd_capture_salca_spec = {
    .verb = VERB,
    .usage = "usage: acceltrace capture salca [options] -o FILE.atr\n"
             "\n"
             "Runs a long prompt plus N decode steps from a Q/K/V source, applies Salca's token\n"
             "selection (heavy channels, 2-bit keys, 3-bit queries, INT8 scores, max-pool,\n"
             "histogram threshold, INT8 attention) and the baselines on the same tensors, scores\n"
             "them against dense attention and writes a trace (docs/models.md, 'Salca\n"
             "capture').\n",
    .opts = opts,
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

/* One option with a value (id, v); 0, or the exit status of a usage error. */
static int parse_value_option(struct salca_capture_params *p, const char **out, int id,
                              const char *v)
{
    if (id == CLI_ID_OUTPUT) {
        *out = v;
    } else if (id == OPT_ABLATION) {
        if (p->n_variants == SALCA_MAX_VARIANTS)
            return cli_usage_error(VERB, "at most %d --ablation variants", SALCA_MAX_VARIANTS);
        struct salca_variant tv;
        struct errmsg ve = {0};
        if (strlen(v) >= sizeof p->variant_text[0] ||
            salca_variant_parse(v, p->head_dim ? p->head_dim : 128, &tv, &ve))
            return cli_usage_error(VERB, "%s", errmsg_text(&ve));
        snprintf(p->variant_text[p->n_variants++], sizeof p->variant_text[0], "%s", v);
    } else if (id == OPT_CSV) {
        p->csv_path = v;
    } else if (id == OPT_SOURCE) {
        p->model = !strcmp(v, "model");
        p->calibrated = !strcmp(v, "calibrated");
        if (!p->model && !p->calibrated && strcmp(v, "synthetic"))
            return cli_usage_error(VERB, "unknown source '%s' (calibrated, synthetic or model)", v);
    } else if (id == OPT_CHECKPOINT) {
        p->checkpoint = v;
    } else if (id == OPT_SEED) {
        if (!cli_parse_u64(v, &p->seed))
            return cli_usage_error(VERB, "bad seed '%s'", v);
    } else if (id == OPT_TASK) {
        if (!salca_task_find(v))
            return cli_usage_error(VERB, "unknown task '%s' (see --list-tasks)", v);
        p->task = v;
    } else if (id == OPT_STEPS) {
        int64_t x;
        /* 0 steps would write a trace with no jobs and exit 0 */
        if (!cli_parse_i64(v, &x) || x < -1 || x == 0 || x > 1000000)
            return cli_usage_error(VERB,
                                   "bad step count '%s' (1..1000000, or -1 for the "
                                   "task's N)",
                                   v);
        p->steps = (int32_t)x;
    } else if (id == OPT_METHODS) {
        if (parse_methods(v, &p->methods))
            return cli_usage_error(VERB,
                                   "bad method list '%s' (salca, std_topk, "
                                   "pl_topk, full_feat, quest)",
                                   v);
    } else if (id == OPT_RETENTION) {
        if (salca_ratio_parse(v, &p->sel.rho) || p->sel.rho.num == 0 ||
            p->sel.rho.num > p->sel.rho.den || strlen(v) >= sizeof p->rho_text)
            return cli_usage_error(VERB, "retention '%s' must be a decimal in (0, 1]", v);
        snprintf(p->rho_text, sizeof p->rho_text, "%s", v);
    } else if (id == OPT_P_MASS) {
        if (!cli_parse_f64(v, &p->sel.p_mass) || !(p->sel.p_mass > 0) || p->sel.p_mass > 1)
            return cli_usage_error(VERB, "p-mass '%s' must be in (0, 1]", v);
    } else if (id == OPT_THRESHOLD_CMP) {
        if (!strcmp(v, "ge"))
            p->sel.cmp = SALCA_CMP_GE;
        else if (!strcmp(v, "gt"))
            p->sel.cmp = SALCA_CMP_GT;
        else
            return cli_usage_error(VERB, "threshold-cmp must be ge or gt");
    } else if (id == OPT_ATTN_PRECISION) {
        if (!strcmp(v, "int8"))
            p->sel.attn_fp32 = false;
        else if (!strcmp(v, "fp32"))
            p->sel.attn_fp32 = true;
        else
            return cli_usage_error(VERB, "attn-precision must be int8 or fp32");
    } else if (id == OPT_TINY_OUTLIER_GAIN) {
        if (!cli_parse_f64(v, &p->tiny_outlier_gain) || !(p->tiny_outlier_gain > 0))
            return cli_usage_error(VERB, "tiny-outlier-gain must be positive");
    } else if (id == OPT_ZSTD_LEVEL) {
        int64_t x;
        if (!cli_parse_i64(v, &x) || x < 0 || x > 19)
            return cli_usage_error(VERB, "zstd level must be in [0, 19]");
        p->zstd_level = (int)x;
    } else if (id == CLI_ID_THREADS) {
        int64_t x;
        if (!cli_parse_i64(v, &x) || x < 1 || x > 256)
            return cli_usage_error(VERB, "threads must be in [1, 256]");
        p->threads = (int)x;
    } else if (id == CLI_ID_MEM_LIMIT) {
        if (mem_parse_size(v, &p->mem_limit_bytes) || p->mem_limit_bytes == 0)
            return cli_usage_error(VERB, "bad --mem-limit '%s' (a size like 8GiB)", v);
    } else if (id == OPT_MEM_LIMIT_GIB) { /* the old spelling: --mem-limit XGiB */
        double x;
        if (!cli_parse_f64(v, &x) || !(x > 0) || x > 1e6)
            return cli_usage_error(VERB, "mem-limit-gib must be positive");
        p->mem_limit_bytes = (uint64_t)(x * 1073741824.0);
    } else {
        return -1; /* not an option with a value */
    }
    return 0;
}

/* The checks across options; 0, or the exit status of a usage error. */
static int check_args(const struct salca_capture_params *p, const char *out, bool dry_run)
{
    if (!out && !dry_run)
        return cli_usage_error(VERB, "missing -o FILE.atr");
    if (p->sel.pool % 2 == 0)
        return cli_usage_error(VERB, "pool width %u must be odd", p->sel.pool);
    if (p->checkpoint && !p->model)
        return cli_usage_error(VERB, "--checkpoint needs --source model");
    if (p->calibrated && (p->head_dim ? p->head_dim : 128) < 16)
        return cli_usage_error(VERB, "the calibrated source needs a head dim of 16 or more");
    if (out) { /* no checkpoint file may be the trace, its .partial or the --csv file (exit 2) */
        struct errmsg ce = {0};
        const char *ins[1] = {p->checkpoint};
        const char *side[1] = {p->csv_path};
        if (trace_writer_check_inputs(out, ins, 1, side, 1, &ce))
            return cli_usage_error(VERB, "%s", errmsg_text(&ce));
    }
    return 0;
}

/* Prints the tasks (--list-tasks). */
static void list_tasks(void)
{
    for (uint32_t k = 0; k < salca_task_count(); k++) {
        const struct salca_task_info *t = salca_task_at(k);
        printf("%-22s %-14s target %6.0f tokens, max gen %u\n", t->name,
               salca_family_name(t->family), salca_task_target(t), t->max_gen);
    }
}

/* A --syn-* option: where its value goes (a double or an integer). */
struct synopt {
    const char *name;
    double *dval;
    uint32_t *uval;
};

/* The integer options (OPT_U32 + k) and the --syn-* options (OPT_SYN + k); 0, the exit
 * status of a usage error, or -1 when id is none of them. */
static int parse_number_option(struct salca_capture_params *p, int id, const char *name,
                               const char *v)
{
    struct salca_synth_params *s = &p->synth;
    struct synopt syn[] = {
        {"syn-heavy-pairs", NULL, &s->heavy_pairs},
        {"syn-heavy-band-lo", NULL, &s->heavy_band_lo},
        {"syn-gain-median", &s->gain_median, NULL},
        {"syn-gain-sigma", &s->gain_sigma, NULL},
        {"syn-heavy-mean", &s->heavy_mean, NULL},
        {"syn-head-spread", &s->head_spread, NULL},
        {"syn-query-jitter", &s->query_jitter, NULL},
        {"syn-logit-std", &s->logit_std, NULL},
        {"syn-sink-tokens", NULL, &s->sink_tokens},
        {"syn-c-sink", &s->c_sink, NULL},
        {"syn-c-loc", &s->c_loc, NULL},
        {"syn-tau-loc", &s->tau_loc, NULL},
        {"syn-c-needle", &s->c_needle, NULL},
        {"syn-early-layer-scale", &s->early_layer_scale, NULL},
        {"syn-early-layers", NULL, &s->early_layers},
    };
    const struct {
        uint32_t *dst;
        uint64_t lo, hi;
    } u32opts[] = {
        {&p->sample, 0, 1000000},
        {&p->length, 0, 1u << 24},
        {&p->max_len, 2, 1u << 24},
        {&p->max_new, 1, 1u << 20},
        {&p->layers, 1, 1024},
        {&p->heads, 1, 1024},
        {&p->kv_heads, 1, 1024},
        {&p->head_dim, 8, 256},
        {&p->tiny_outlier_pairs, 0, 128},
        {&p->sel.k_min, 1, UINT32_MAX},
        {&p->sel.pool, 1, 1001},
        {&p->quest_page, 1, 65536},
        {&p->quest_dense_layers, 0, 1024},
        {&p->sel.quest_min_pages, 0, 1u << 24},
    };
    int k = id - OPT_U32;
    if (k >= 0 && k < (int)(sizeof u32opts / sizeof u32opts[0])) {
        uint64_t x;
        if (!cli_parse_u64(v, &x) || x < u32opts[k].lo || x > u32opts[k].hi)
            return cli_usage_error(VERB, "option '--%s' needs an integer in [%llu, %llu]", name,
                                   (unsigned long long)u32opts[k].lo,
                                   (unsigned long long)u32opts[k].hi);
        *u32opts[k].dst = (uint32_t)x;
        return 0;
    }
    struct salca_calib_params *c = &p->calib;
    struct synopt cal[] = {
        {"cal-retrieval-frac", &c->retrieval_frac, NULL},
        {"cal-logit-std", &c->logit_std, NULL},
        {"cal-sink-tokens", NULL, &c->sink_tokens},
        {"cal-c-sink", &c->c_sink, NULL},
        {"cal-local-tokens", NULL, &c->local_tokens},
        {"cal-c-local", &c->c_local, NULL},
        {"cal-stream-window", NULL, &c->stream_window},
        {"cal-search-tokens", NULL, &c->search_tokens},
        {"cal-c-needle", &c->c_needle, NULL},
        {"cal-query-jitter", &c->query_jitter, NULL},
    };
    struct synopt *tab = syn;
    k = id - OPT_CAL;
    if (k >= 0 && k < (int)(sizeof cal / sizeof cal[0])) {
        if (k == 0 || k == 7) { /* a share in [0, 1]; a positive length */
            double x;
            uint64_t u;
            if (k == 0 && (!cli_parse_f64(v, &x) || !(x >= 0) || x > 1))
                return cli_usage_error(VERB, "option '--%s' needs a number in [0, 1]", name);
            if (k == 7 && (!cli_parse_u64(v, &u) || u == 0 || u > (1u << 24)))
                return cli_usage_error(VERB, "option '--%s' needs an integer in [1, 16777216]",
                                       name);
            if (k == 0)
                c->retrieval_frac = x;
            else
                c->search_tokens = (uint32_t)u;
            return 0;
        }
        tab = cal;
    } else if ((k = id - OPT_SYN) < 0 || k >= (int)(sizeof syn / sizeof syn[0])) {
        return -1;
    }
    if (tab[k].dval) {
        double x;
        if (!cli_parse_f64(v, &x) || !(x >= 0) || x > 1e6)
            return cli_usage_error(VERB, "option '--%s' needs a number >= 0", name);
        *tab[k].dval = x;
    } else {
        uint64_t x;
        if (!cli_parse_u64(v, &x) || x > 1000000)
            return cli_usage_error(VERB, "option '--%s' needs an integer >= 0", name);
        *tab[k].uval = (uint32_t)x;
    }
    return 0;
}

/* The parsed command line. */
struct salca_args {
    struct salca_capture_params p;
    const char *out;
    bool json;
    bool resume;
    bool dry_run;
};

/* The options into a (a->p holds the defaults); 0 to run, -1 when the help or the task
 * list was printed (exit 0), else the exit status of a usage error. */
static int parse_args(int argc, char **argv, struct salca_args *a)
{
    struct salca_capture_params *p = &a->p;
    struct cli_parser ps;
    cli_parser_init(&ps, &cmd_capture_salca_spec, argc, argv);
    for (int id; (id = cli_next(&ps)) != CLI_END;) {
        if (id == CLI_HELP || id == CLI_BAD)
            return id == CLI_HELP ? -1 : cli_next_exit(id);
        if (id == CLI_POSITIONAL)
            return cli_usage_error(VERB, "unexpected argument '%s'", ps.arg);
        int st = 0;
        if (id == CLI_ID_QUIET) {
            p->quiet = true;
            progress_global_quiet = true;
        } else if (id == CLI_ID_JSON) {
            a->json = true;
        } else if (id == OPT_LIST_TASKS) {
            list_tasks();
            return -1;
        } else if (id == OPT_DYNAMIC) {
            p->sel.k_mode = SALCA_K_DYNAMIC;
        } else if (id == OPT_RESUME) {
            a->resume = true;
        } else if (id == OPT_LAYER_MAJOR) {
            p->layer_major = true;
        } else if (id == OPT_DRY_RUN) {
            a->dry_run = true;
        } else if (id == OPT_NO_HIST) {
            p->no_hist = true;
        } else if (id == OPT_NO_TOP1) {
            p->top1 = false;
        } else if ((st = parse_number_option(p, id, ps.opt->name, ps.arg)) < 0) {
            st = parse_value_option(p, &a->out, id, ps.arg);
        }
        if (st)
            return st;
    }
    return check_args(p, a->out, a->dry_run);
}

/* The source as the summary names it. */
static const char *source_name(const struct salca_capture_params *p)
{
    if (p->model)
        return p->checkpoint ? p->checkpoint : "model tiny";
    return p->calibrated ? "calibrated" : "synthetic";
}

/* The --json document: the trace, the run and the figures of each method run. */
static json_t *summary_json(const struct salca_args *a, const struct salca_capture_result *res)
{
    const struct salca_capture_params *p = &a->p;
    json_t *methods = json_array();
    for (int m = 0; m < SALCA_NSLOT && methods; m++) {
        const struct salca_capture_method *x = &res->m[m];
        if (!x->run)
            continue;
        json_t *j =
            json_pack("{s:s,s:i,s:I,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:i,s:i}", "name",
                      x->name, "id", (int)x->id, "jobs", (json_int_t)x->jobs, "recall_mean",
                      x->recall_mean, "recall_median", x->recall_median, "recall_p5", x->recall_p5,
                      "recall_min", x->recall_min, "cosine_mean", x->cosine_mean, "cosine_median",
                      x->cosine_median, "cosine_p5", x->cosine_p5, "cosine_min", x->cosine_min,
                      "retention_mean", x->retention_mean, "overshoot_mean", x->overshoot_mean,
                      "spans_total", (int)x->spans_total, "spans_recalled", (int)x->spans_recalled);
        if (j && x->top1 >= 0) {
            json_object_set_new(j, "top1", json_real(x->top1));
            json_object_set_new(j, "logit_rel_diff", json_real(x->logit_diff));
        }
        json_array_append_new(methods, j);
    }
    return json_pack("{s:s,s:o,s:s,s:s,s:i,s:I,s:i,s:i,s:i,s:i,s:i,s:I,s:f,s:o}", "workload",
                     "salca", "trace", cli_json_trace_file(a->out), "source", source_name(p),
                     "task", p->task, "n0", (int)res->n0, "n_raw", (json_int_t)res->n_raw, "steps",
                     (int)res->steps, "layers", (int)res->L, "heads", (int)res->H, "kv_heads",
                     (int)res->G, "head_dim", (int)res->d, "selections", (json_int_t)res->selects,
                     "wall_s", res->wall_seconds, "methods", methods);
}

/* The memory plan on stdout (capture salca --dry-run); the exit status: 0 when it fits
 * --mem-limit, 3 when even the layer-major plan does not. */
static int print_plan(const struct salca_capture_params *p, const struct salca_mem_plan *pl)
{
    char a[32], b[32];
    printf("salca memory plan: %s source, --mem-limit %s\n", source_name(p),
           pl->limit_bytes ? mem_size_text(pl->limit_bytes, a, sizeof a) : "none");
    printf("  %-26s %-11s %12s %12s  %s\n", "item", "precision", "total", "held", "where");
    for (int i = 0; i < pl->n_items; i++) {
        const struct salca_mem_item *it = &pl->item[i];
        printf("  %-26s %-11s %12s %12s  %s\n", it->name, it->precision,
               mem_size_text(it->total_bytes, a, sizeof a),
               mem_size_text(it->held_bytes, b, sizeof b), it->where);
    }
    if (pl->layer_major)
        printf("plan: layer-major, one layer's K/V at a time (%s with every layer held)\n",
               mem_size_text(pl->all_bytes, a, sizeof a));
    else
        printf("plan: step-major, every layer's K/V held\n");
    printf("held: %s of %s: %s\n", mem_size_text(pl->held_bytes, a, sizeof a),
           pl->limit_bytes ? mem_size_text(pl->limit_bytes, b, sizeof b) : "no limit",
           pl->fits ? "fits" : "does not fit");
    if (!pl->fits)
        fprintf(stderr, "acceltrace %s: the memory plan needs %s held, above --mem-limit %s\n",
                VERB, mem_size_text(pl->held_bytes, a, sizeof a),
                mem_size_text(pl->limit_bytes, b, sizeof b));
    return pl->fits ? 0 : 3;
}

int cmd_capture_salca(int argc, char **argv);
int cmd_capture_salca(int argc, char **argv)
{
    struct salca_args *a = mem_calloc(1, sizeof *a);
    if (!a)
        return cli_fail(ERR_NOMEM, "out of memory");
    salca_capture_params_default(&a->p); /* source: calibrated (docs/models.md) */
    a->p.threads = threads_default();
    int st = parse_args(argc, argv, a);
    if (st) {
        mem_free(a);
        return st < 0 ? 0 : st; /* -1: the help or the task list */
    }
    const struct salca_capture_params *p = &a->p;
    nn_set_threads(1); /* deterministic BLAS; parallelism comes from the job threads */

    const struct capture_ops *ops = capture_registry_find("salca");
    struct capture_opts o;
    capture_opts_default(&o);
    o.zstd_level = p->zstd_level;
    o.mem_limit_bytes = p->mem_limit_bytes;
    o.quiet = p->quiet;
    o.command_line = cli_command_line(); /* time: SOURCE_DATE_EPOCH or now (capture.h) */
    o.resume = a->resume;
    if ((st = cmd_capture_resume_check(ops, o.resume))) {
        mem_free(a);
        return st;
    }
    struct errmsg e = {0};
    void *inst = NULL;
    int rc = ops->open(&inst, p, &e);
    if (!rc && a->dry_run) {
        st = print_plan(p, salca_capture_mem_plan(inst));
        ops->close(inst);
        mem_free(a);
        return st;
    }
    if (!rc)
        rc = cmd_capture_run(ops, inst, a->out, &o, &e);
    if (rc < 0) {
        ops->close(inst);
        mem_free(a);
        return cli_fail(rc, errmsg_text(&e));
    }
    const struct salca_capture_result *res = salca_capture_result(inst);
    if (a->json) {
        st = cli_print_json(summary_json(a, res));
        ops->close(inst);
        mem_free(a);
        return st;
    }
    printf("salca capture: %s, task %s, n0 %u (n_raw %llu), %u steps, L %u H %u G %u d %u, "
           "%llu selections, %.1f s\n",
           source_name(p), p->task, res->n0, (unsigned long long)res->n_raw, res->steps, res->L,
           res->H, res->G, res->d, (unsigned long long)res->selects, res->wall_seconds);
    fputs(res->table, stdout);
    /* model source: the substituted runs' logits against the dense run's (the end-to-end model
     * check) */
    for (int m = 0; m < SALCA_NSLOT; m++)
        if (res->m[m].run && res->m[m].top1 >= 0)
            printf("logit_rel_diff.%s=%.3e\n", res->m[m].name, res->m[m].logit_diff);
    ops->close(inst);
    mem_free(a);
    if (fflush(stdout) != 0)
        return cli_fail(ERR_IO, "cannot write the output");
    return 0;
}
