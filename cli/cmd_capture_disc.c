/*
 * cmd_capture_disc: `acceltrace capture disc [options] -o FILE.atr`: a DiT denoising run
 * with CTR and ST executed for real (docs/models.md, 'DiSC capture'), written as a trace.
 */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capture/capture_registry.h"
#include "capture/disc/disc_capture.h"
#include "capture/disc/disc_structured.h"
#include "capture/disc/dit.h"
#include "cli/cli.h"
#include "cli/cli_opt.h"
#include "cli/cmd_capture.h"
#include "common/err.h"
#include "common/io.h"
#include "common/mem.h"
#include "common/progress.h"
#include "traces/trace_writer.h"

#define VERB "capture disc"

int cmd_capture_disc(int argc, char **argv);
/* cli/cmd_capture_disc_struct.c: the run of --source structured. */
int cmd_capture_disc_structured(const struct disc_struct_params *sp, const char *out,
                                int zstd_level, double mem_limit_bytes, bool quiet, bool json);

enum {
    OPT_MODEL = 1,
    OPT_IMAGE_SIZE,
    OPT_STEPS,
    OPT_SAMPLER,
    OPT_CFG,
    OPT_SEED,
    OPT_WEIGHTS,
    OPT_TEXT,
    OPT_NULL_TEXT,
    OPT_CTR_TARGET,
    OPT_CTR_TAU,
    OPT_CTR_OFF,
    OPT_ST_ALPHA,
    OPT_ST_THETA,
    OPT_ST_TARGET,
    OPT_ST_OFF,
    OPT_ST_REFRESH,
    OPT_KEEP_MASKS,
    OPT_COMPARE_DENSE,
    OPT_NO_COMPARE_DENSE,
    OPT_PNG,
    OPT_SAVE_WEIGHTS,
    OPT_ZSTD_LEVEL,
    OPT_CLASS,
    OPT_DRY_RUN,
    OPT_RESUME,
    OPT_SOURCE, /* --source structured and the options only it takes */
    OPT_HEADS,
    OPT_BLOCKS,
    OPT_STRUCT_RADIUS,
    OPT_STRUCT_DECAY,
    OPT_STRUCT_STRIPES,
    OPT_STRUCT_STRIPE_KEEP,
    OPT_STRUCT_DENSITY,
    OPT_STRUCT_SPREAD,
    OPT_STRUCT_ROW_SIGMA,
    OPT_STRUCT_CLUSTER,
    OPT_STRUCT_JACCARD,
};

/* clang-format off */
static const struct cli_opt opts[] = {
    {OPT_MODEL, "model", 0, CLI_ARG_STRING, "NAME",
     "micro, tiny (default), trained-small (shipped weights),\npixart-sigma-xl, dit-micro or dit-xl-2", 0},
    {OPT_CLASS, "class", 0, CLI_ARG_INT, "N", "class label of a DiT model (0..999, default 207)", 0},
    {OPT_IMAGE_SIZE, "image-size", 0, CLI_ARG_STRING, "PX",
     "square image size (multiple of 16 up to 8192; XL: 512,\n1024, 2048)", 0},
    {OPT_STEPS, "steps", 0, CLI_ARG_STRING, "K", "sampler steps (default: 4 micro, 20 tiny/XL)", 0},
    {OPT_SAMPLER, "sampler", 0, CLI_ARG_STRING, "S", "dpm2m (default) or ddim", 0},
    {OPT_CFG, "cfg", 0, CLI_ARG_STRING, "W",
     "classifier-free guidance scale (batch of 2; off by default)", 0},
    {OPT_SEED, "seed", 0, CLI_ARG_STRING, "S", "initial latent seed (default 0)", 0},
    {OPT_WEIGHTS, "weights", 0, CLI_ARG_STRING, "W",
     "seed:S (default seed:0) or FILE.safetensors (repeat for\nshards)", CLI_OPT_REPEATABLE},
    {OPT_TEXT, "text", 0, CLI_ARG_STRING, "T",
     "seed:S (default seed:1), raw float32 or .npy (T x D_c)",
     0},
    {OPT_NULL_TEXT, "null-text", 0, CLI_ARG_STRING, "FILE", "null text for CFG (default zeros)", 0},
    {OPT_CTR_TARGET, "ctr-target", 0, CLI_ARG_STRING, "R",
     "CTR: prune ceil(R N) tokens per step (default 0.40)", 0},
    {OPT_CTR_TAU, "ctr-tau", 0, CLI_ARG_STRING, "X", "CTR: fixed threshold in latent units", 0},
    {OPT_CTR_OFF, "ctr-off", 0, CLI_ARG_NONE, NULL, "no CTR", 0},
    {OPT_ST_ALPHA, "st-alpha", 0, CLI_ARG_STRING, "A", "ST: theta = A / N (default 1.0)", 0},
    {OPT_ST_THETA, "st-theta", 0, CLI_ARG_STRING, "X", "ST: absolute probability threshold", 0},
    {OPT_ST_TARGET, "st-target", 0, CLI_ARG_STRING, "S",
     "ST: per-block alpha reaching sparsity S at step 0", 0},
    {OPT_ST_OFF, "st-off", 0, CLI_ARG_NONE, NULL, "dense attention, no DiscMask records", 0},
    {OPT_ST_REFRESH, "st-refresh", 0, CLI_ARG_STRING, "K",
     "ST: generate masks every K steps (default 2)",
     0},
    {OPT_KEEP_MASKS, "keep-masks", 0, CLI_ARG_STRING, "SEL",
     "store mask bits: none (default) or e.g.\n'blocks=0,5;heads=all;steps=0-3;batch=0'", 0},
    {OPT_COMPARE_DENSE, "compare-dense", 0, CLI_ARG_NONE, NULL,
     "score against the dense run (default)", 0},
    {OPT_NO_COMPARE_DENSE, "no-compare-dense", 0, CLI_ARG_NONE, NULL, "skip the reference runs", 0},
    {OPT_PNG, "png", 0, CLI_ARG_STRING, "DIR",
     "latent, token-mask and kept attention-mask images", 0},
    CLI_OPT_MEM_LIMIT("memory plan limit: spill ST masks, then CTR caches to a\nfile next to the "
                      "output until the held part fits;\nrefuse when it cannot (default 16GiB; "
                      "B, KB..TB,\nK..T, KiB..TiB)"),
    {OPT_DRY_RUN, "dry-run", 0, CLI_ARG_NONE, NULL,
     "print the memory plan and exit: 0 when it fits, 3 when\nnot (-o not needed)", 0},
    CMD_CAPTURE_OPT_RESUME(OPT_RESUME),
    {OPT_SAVE_WEIGHTS, "save-weights", 0, CLI_ARG_STRING, "FILE",
     "also write the model weights as F32 safetensors", 0},
    CLI_OPT_THREADS("BLAS and worker threads (default: all CPUs)"),
    {OPT_ZSTD_LEVEL, "zstd-level", 0, CLI_ARG_STRING, "N",
     "trace compression level (default 3)", 0},
    {OPT_SOURCE, "source", 0, CLI_ARG_STRING, "S",
     "model (default: run the DiT) or structured: synthetic\nmasks, no model run (docs/models.md)",
     0},
    {OPT_HEADS, "heads", 0, CLI_ARG_INT, "H", "structured: heads (default the model's)", 0},
    {OPT_BLOCKS, "blocks", 0, CLI_ARG_INT, "B", "structured: blocks written (default all)", 0},
    {OPT_STRUCT_RADIUS, "struct-radius", 0, CLI_ARG_INT, "R",
     "structured: locality window half-width, tokens (4)", 0},
    {OPT_STRUCT_DECAY, "struct-decay", 0, CLI_ARG_STRING, "X",
     "structured: locality keep exp(-dist/X), tokens (2)", 0},
    {OPT_STRUCT_STRIPES, "struct-stripes", 0, CLI_ARG_INT, "S",
     "structured: global key columns per head (8)", 0},
    {OPT_STRUCT_STRIPE_KEEP, "struct-stripe-keep", 0, CLI_ARG_STRING, "P",
     "structured: share of rows keeping a stripe (0.9)", 0},
    {OPT_STRUCT_DENSITY, "struct-density", 0, CLI_ARG_STRING, "D",
     "structured: centre of the head densities (0.5)", 0},
    {OPT_STRUCT_SPREAD, "struct-spread", 0, CLI_ARG_STRING, "W",
     "structured: width of the head densities (1: 0-100%)", 0},
    {OPT_STRUCT_ROW_SIGMA, "struct-row-sigma", 0, CLI_ARG_STRING, "S",
     "structured: log-normal sigma of row densities (0.5)", 0},
    {OPT_STRUCT_CLUSTER, "struct-cluster", 0, CLI_ARG_INT, "C",
     "structured: smoothing radius of row and CTR fields (4)", 0},
    {OPT_STRUCT_JACCARD, "struct-jaccard", 0, CLI_ARG_STRING, "J",
     "structured: Jaccard of consecutive generations (0.8)", 0},
    CLI_OPT_OUTPUT("FILE.atr", "output trace (required)"),
    {CLI_ID_QUIET, "quiet", 'q', CLI_ARG_NONE, NULL,
     "no progress or summary on stderr (warnings and errors stay)", 0},
    {CLI_ID_JSON, "json", 0, CLI_ARG_NONE, NULL,
     "one JSON document on stdout: the trace (file, bytes,\nrecords) and the run's summary "
     "figures", 0},
    CLI_OPT_END,
};
/* clang-format on */

const struct cli_spec cmd_capture_disc_spec = {
    .verb = VERB,
    .usage = "usage: acceltrace capture disc [options] -o FILE.atr\n"
             "\n"
             "Runs a PixArt-Sigma-style DiT denoising loop with CTR (cached token reuse) and ST\n"
             "(softmax thresholding with mask reuse) for real and writes DiscStep, DiscMask and\n"
             "Summary records (docs/models.md, 'DiSC capture').\n",
    .opts = opts,
};

/* The parse state: what parse_args fills besides the workload's parameters. */
struct disc_args {
    struct disc_params p;
    const char *out, *save_weights;
    bool quiet, json, dry_run, resume;
    int zstd_level;
    int n_ctr, n_st; /* CTR and ST modes given: at most one each */
    bool structured; /* --source structured */
    struct disc_struct_params sp;
    uint64_t given; /* bit id: option id given (ids below 64) */
};

static bool parse_float(const char *s, float *out)
{
    double v;
    if (!cli_parse_f64(s, &v) || fabs(v) > FLT_MAX) /* would become inf as a float */
        return false;
    *out = (float)v;
    return true;
}

/* One --weights value: seed:S or a safetensors file; 0, or the exit status of a usage
 * error. */
static int parse_weights(struct disc_params *p, const char *v)
{
    uint64_t uv;
    if (!strncmp(v, "seed:", 5)) {
        if (!cli_parse_u64(v + 5, &uv))
            return cli_usage_error(VERB, "bad --weights '%s'", v);
        p->weight_seed = uv;
    } else {
        if (p->n_weight_files >= DISC_MAX_WEIGHT_FILES)
            return cli_usage_error(VERB, "too many --weights files (max %d)",
                                   DISC_MAX_WEIGHT_FILES);
        p->weight_files[p->n_weight_files++] = v;
    }
    return 0;
}

/* No input may be the trace, its .partial or the --save-weights file; 0, or the exit status
 * of the usage error. */
static int check_inputs(const struct disc_params *p, const char *out)
{
    struct errmsg e = {0};
    { /* no input may be the trace, its .partial or the --save-weights file (exit 2) */
        const char *ins[DISC_MAX_WEIGHT_FILES + 2];
        size_t n_in = 0;
        for (int k = 0; k < p->n_weight_files; k++)
            ins[n_in++] = p->weight_files[k];
        ins[n_in++] = p->text_file;
        ins[n_in++] = p->null_text_file;
        const char *side[1] = {p->save_weights};
        if (trace_writer_check_inputs(out, ins, n_in, side, 1, &e))
            return cli_usage_error(VERB, "%s", errmsg_text(&e));
    }
    return 0;
}

/* The model, sampler and input options; 0 or the exit status of a usage error. */
static int parse_model_value(struct disc_args *a, int id, const char *v)
{
    struct disc_params *p = &a->p;
    int64_t iv;
    uint64_t uv;
    double dv;
    switch (id) {
    case OPT_MODEL:
        snprintf(p->model, sizeof p->model, "%s", v);
        return 0;
    case OPT_IMAGE_SIZE:
        if (!cli_parse_i64(v, &iv) || iv < 16 || iv > 8192)
            return cli_usage_error(VERB, "bad --image-size '%s'", v);
        p->image_size = (int)iv;
        return 0;
    case OPT_STEPS:
        if (!cli_parse_i64(v, &iv) || iv < 1 || iv > 1000)
            return cli_usage_error(VERB, "bad --steps '%s' (1..1000)", v);
        p->steps = (int)iv;
        return 0;
    case OPT_SAMPLER:
        if (!strcmp(v, "dpm2m"))
            p->sampler = DIT_SAMPLER_DPM2M;
        else if (!strcmp(v, "ddim"))
            p->sampler = DIT_SAMPLER_DDIM;
        else
            return cli_usage_error(VERB, "unknown sampler '%s' (dpm2m or ddim)", v);
        return 0;
    case OPT_CFG:
        /* larger scales overflow the float guidance sum to inf, then NaN */
        if (!cli_parse_f64(v, &dv) || fabs(dv) > 1000.0)
            return cli_usage_error(VERB, "bad --cfg '%s' (a finite number in -1000..1000)", v);
        p->cfg_on = true, p->cfg_scale = dv;
        return 0;
    case OPT_CLASS:
        /* the range is checked by capture_disc_ops.open (a usage error there too) */
        if (!cli_parse_i64(v, &iv) || iv < INT32_MIN || iv > INT32_MAX)
            return cli_usage_error(VERB, "bad --class '%s' (a label 0..999)", v);
        p->class_label = (int)iv;
        return 0;
    case OPT_SEED:
        if (!cli_parse_u64(v, &uv))
            return cli_usage_error(VERB, "bad --seed '%s'", v);
        p->seed = uv;
        return 0;
    case OPT_WEIGHTS:
        return parse_weights(p, v);
    case OPT_TEXT:
        if (!strncmp(v, "seed:", 5)) {
            if (!cli_parse_u64(v + 5, &uv))
                return cli_usage_error(VERB, "bad --text '%s'", v);
            p->text_seed = uv, p->text_file = NULL;
        } else {
            p->text_file = v;
        }
        return 0;
    case OPT_NULL_TEXT:
        p->null_text_file = v;
        return 0;
    default:
        return -1;
    }
}

/* One --struct-* value in [lo, hi]; 0 or the exit status of a usage error. */
static int struct_f64(const char *name, const char *v, double lo, double hi, double *out)
{
    if (!cli_parse_f64(v, out) || !(*out >= lo && *out <= hi))
        return cli_usage_error(VERB, "bad --%s '%s' (%g..%g)", name, v, lo, hi);
    return 0;
}

/* --source and the options of --source structured (ranges checked again by the source);
 * 0, the exit status of a usage error, or -1 when id is none of them. */
static int parse_struct_value(struct disc_args *a, const struct cli_parser *ps)
{
    struct disc_struct_shape *s = &a->sp.s;
    const char *v = ps->arg;
    const int64_t iv = ps->i64;
    switch (ps->opt->id) {
    case OPT_SOURCE:
        if (strcmp(v, "model") && strcmp(v, "structured"))
            return cli_usage_error(VERB, "unknown --source '%s' (model or structured)", v);
        a->structured = !strcmp(v, "structured");
        return 0;
    case OPT_HEADS:
    case OPT_BLOCKS:
        if (iv < 1 || iv > 4096)
            return cli_usage_error(VERB, "bad --%s '%s'", ps->opt->name, v);
        *(ps->opt->id == OPT_HEADS ? &a->sp.heads : &a->sp.blocks) = (int)iv;
        return 0;
    case OPT_STRUCT_RADIUS:
    case OPT_STRUCT_STRIPES:
    case OPT_STRUCT_CLUSTER: {
        int hi = ps->opt->id == OPT_STRUCT_RADIUS    ? 64
                 : ps->opt->id == OPT_STRUCT_CLUSTER ? 256
                                                     : 65536;
        if (iv < 0 || iv > hi)
            return cli_usage_error(VERB, "bad --%s '%s' (0..%d)", ps->opt->name, v, hi);
        *(ps->opt->id == OPT_STRUCT_RADIUS    ? &s->radius
          : ps->opt->id == OPT_STRUCT_CLUSTER ? &s->cluster
                                              : &s->stripes) = (int)iv;
        return 0;
    }
    case OPT_STRUCT_DECAY:
        return struct_f64(ps->opt->name, v, 0, 1e6, &s->decay);
    case OPT_STRUCT_STRIPE_KEEP:
        return struct_f64(ps->opt->name, v, 0, 1, &s->stripe_keep);
    case OPT_STRUCT_DENSITY:
        return struct_f64(ps->opt->name, v, 0, 1, &s->density);
    case OPT_STRUCT_SPREAD:
        return struct_f64(ps->opt->name, v, 0, 2, &s->spread);
    case OPT_STRUCT_ROW_SIGMA:
        return struct_f64(ps->opt->name, v, 0, 4, &s->row_sigma);
    case OPT_STRUCT_JACCARD:
        return struct_f64(ps->opt->name, v, 0, 1, &s->jaccard);
    default:
        return -1;
    }
}

/* The CTR and ST options that take a value; 0, the exit status of a usage error, or -1
 * when id is none of them. */
static int parse_method_value(struct disc_args *a, int id, const char *v)
{
    struct disc_params *p = &a->p;
    int64_t iv;
    switch (id) {
    case OPT_CTR_TAU:
        if (!parse_float(v, &p->ctr_tau) || !(p->ctr_tau >= 0.0f))
            return cli_usage_error(VERB, "bad --ctr-tau '%s'", v);
        p->ctr = DISC_CTR_TAU, a->n_ctr++;
        return 0;
    case OPT_CTR_TARGET:
        if (strlen(v) >= sizeof p->ctr_target)
            return cli_usage_error(VERB, "bad CTR target '%s'", v);
        snprintf(p->ctr_target, sizeof p->ctr_target, "%s", v);
        p->ctr = DISC_CTR_TARGET, a->n_ctr++;
        return 0;
    case OPT_ST_ALPHA:
        if (!parse_float(v, &p->st_alpha) || !(p->st_alpha >= 0.0f))
            return cli_usage_error(VERB, "bad --st-alpha '%s'", v);
        p->st = DISC_ST_ALPHA, a->n_st++;
        return 0;
    case OPT_ST_THETA:
        if (!parse_float(v, &p->st_theta) || !(p->st_theta >= 0.0f && p->st_theta <= 1.0f))
            return cli_usage_error(VERB, "bad --st-theta '%s' (0..1)", v);
        p->st = DISC_ST_THETA, a->n_st++;
        return 0;
    case OPT_ST_TARGET:
        if (!cli_parse_f64(v, &p->st_target) || !(p->st_target >= 0.0 && p->st_target <= 1.0))
            return cli_usage_error(VERB, "bad --st-target '%s' (0..1)", v);
        p->st = DISC_ST_TARGET, a->n_st++;
        return 0;
    case OPT_ST_REFRESH:
        if (!cli_parse_i64(v, &iv) || iv < 1 || iv > 1000)
            return cli_usage_error(VERB, "bad --st-refresh '%s'", v);
        p->st_refresh = (int)iv;
        return 0;
    case OPT_KEEP_MASKS:
        if (strlen(v) >= sizeof p->keep_masks)
            return cli_usage_error(VERB, "--keep-masks selection too long");
        snprintf(p->keep_masks, sizeof p->keep_masks, "%s", v);
        return 0;
    default:
        return parse_model_value(a, id, v);
    }
}

/* The output and run options; 0, the exit status of a usage error, or -1 when id is none
 * of them. */
static int parse_run_option(struct disc_args *a, const struct cli_parser *ps)
{
    struct disc_params *p = &a->p;
    const char *v = ps->arg;
    int64_t iv;
    int st;
    switch (ps->opt->id) {
    case CLI_ID_QUIET:
        a->quiet = true;
        return 0;
    case CLI_ID_JSON:
        a->json = true;
        return 0;
    case OPT_DRY_RUN:
        a->dry_run = true;
        return 0;
    case OPT_RESUME:
        a->resume = true;
        return 0;
    case OPT_CTR_OFF:
        p->ctr = DISC_CTR_OFF, a->n_ctr++;
        return 0;
    case OPT_ST_OFF:
        p->st = DISC_ST_OFF, a->n_st++;
        return 0;
    case OPT_COMPARE_DENSE:
    case OPT_NO_COMPARE_DENSE:
        p->compare_dense = ps->opt->id == OPT_COMPARE_DENSE;
        return 0;
    case CLI_ID_OUTPUT:
        a->out = v;
        return 0;
    case OPT_PNG:
        p->png_dir = v;
        return 0;
    case CLI_ID_MEM_LIMIT:
        if (ps->u64 == 0)
            return cli_usage_error(VERB, "bad --mem-limit '%s' (a size like 8GiB)", v);
        p->mem_limit_bytes = (double)ps->u64;
        return 0;
    case OPT_SAVE_WEIGHTS:
        a->save_weights = v;
        return 0;
    case CLI_ID_THREADS:
        if (ps->i64 < 1 || ps->i64 > 1024)
            return cli_usage_error(VERB, "bad --threads '%s'", v);
        p->threads = (int)ps->i64;
        return 0;
    case OPT_ZSTD_LEVEL:
        if (!cli_parse_i64(v, &iv) || iv < 0 || iv > 19)
            return cli_usage_error(VERB, "bad --zstd-level '%s'", v);
        a->zstd_level = (int)iv;
        return 0;
    default:
        st = parse_struct_value(a, ps);
        return st >= 0 ? st : parse_method_value(a, ps->opt->id, v);
    }
}

/* The options that go with the source: --source structured takes the shape, seed, CTR
 * target, refresh and keep options and its own; the DiT run takes none of those. 0 or the
 * exit status of a usage error. */
static int check_source(struct disc_args *a)
{
    static const int model_only[] = {
        OPT_SAMPLER, OPT_CFG,      OPT_WEIGHTS,      OPT_TEXT,          OPT_NULL_TEXT,
        OPT_CTR_TAU, OPT_ST_ALPHA, OPT_ST_THETA,     OPT_ST_TARGET,     OPT_ST_OFF,
        OPT_PNG,     OPT_CLASS,    OPT_SAVE_WEIGHTS, OPT_COMPARE_DENSE, OPT_NO_COMPARE_DENSE,
        OPT_DRY_RUN, OPT_RESUME};
    const struct cli_opt *o;
    for (o = opts; o->id; o++) {
        bool given = o->id < 64 && (a->given >> o->id) & 1u;
        bool struct_opt = o->id >= OPT_HEADS && o->id <= OPT_STRUCT_JACCARD;
        bool model_opt = false;
        for (size_t i = 0; i < sizeof model_only / sizeof model_only[0]; i++)
            model_opt |= o->id == model_only[i];
        if (given && a->structured && model_opt)
            return cli_usage_error(VERB, "--%s does not apply to --source structured", o->name);
        if (given && !a->structured && struct_opt)
            return cli_usage_error(VERB, "--%s needs --source structured", o->name);
    }
    if (!a->structured)
        return 0;
    struct disc_struct_params *sp = &a->sp;
    snprintf(sp->model, sizeof sp->model, "%s", a->p.model);
    sp->image_size = a->p.image_size;
    sp->steps = a->p.steps;
    sp->seed = a->p.seed;
    sp->ctr_on = a->p.ctr != DISC_CTR_OFF;
    snprintf(sp->ctr_target, sizeof sp->ctr_target, "%s", a->p.ctr_target);
    sp->st_refresh = a->p.st_refresh;
    snprintf(sp->keep_masks, sizeof sp->keep_masks, "%s", a->p.keep_masks);
    sp->threads = a->p.threads;
    return 0;
}

/* The options into a (a->p holds the defaults); 0 to run, -1 when the help was printed
 * (exit 0), else the exit status of a usage error. */
static int parse_args(int argc, char **argv, struct disc_args *a)
{
    a->zstd_level = 3;
    struct cli_parser ps;
    cli_parser_init(&ps, &cmd_capture_disc_spec, argc, argv);
    for (int id; (id = cli_next(&ps)) != CLI_END;) {
        if (id == CLI_HELP || id == CLI_BAD)
            return id == CLI_HELP ? -1 : cli_next_exit(id);
        if (id == CLI_POSITIONAL)
            return cli_usage_error(VERB, "unknown option '%s'", ps.arg);
        if (ps.opt->id > 0 && ps.opt->id < 64)
            a->given |= 1ull << ps.opt->id;
        int st = parse_run_option(a, &ps);
        if (st)
            return st;
    }
    if (!a->out && !a->dry_run)
        return cli_usage_error(VERB, "missing -o FILE.atr");
    if (a->n_ctr > 1)
        return cli_usage_error(VERB, "give at most one of --ctr-tau, --ctr-target, --ctr-off");
    if (a->n_st > 1)
        return cli_usage_error(VERB,
                               "give at most one of --st-alpha, --st-theta, --st-target, --st-off");
    a->p.save_weights = a->save_weights;
    int st = check_source(a);
    if (st || a->dry_run)
        return st;
    return check_inputs(&a->p, a->out);
}

/* The RMS of the final latent (the dense run's when there is one). */
static double final_latent_rms(const struct disc_result *r)
{
    const float *xr = r->latent_dense ? r->latent_dense : r->latent;
    double ss = 0.0;
    for (size_t i = 0; i < r->n_latent; i++)
        ss += (double)xr[i] * xr[i];
    return r->n_latent ? sqrt(ss / (double)r->n_latent) : 0.0;
}

/* The --json document: the trace and the figures of the summary. */
static json_t *summary_json(const struct disc_capture *c, const char *out, double est)
{
    const struct dit_config *g = disc_capture_config(c);
    const struct disc_result *r = disc_capture_result(c);
    json_t *j = json_pack(
        "{s:s,s:o,s:s,s:i,s:i,s:i,s:f,s:f,s:f,s:I,s:I,s:f,s:{s:I,s:I,s:I}}", "workload", "disc",
        "trace", cli_json_trace_file(out), "model", g->name, "image_size", g->image, "tokens",
        g->tokens, "steps", r->K, "memory_estimate_bytes", est, "mean_prune_ratio",
        r->mean_prune_ratio, "st_sparsity", r->sparsity, "masks_written",
        (json_int_t)r->masks_written, "masks_kept", (json_int_t)r->masks_kept, "final_latent_rms",
        final_latent_rms(r), "flops", "dense", (json_int_t)disc_flops_total(r->flops_dense), "ctr",
        (json_int_t)disc_flops_total(r->flops_ctr), "all",
        (json_int_t)disc_flops_total(r->flops_all));
    if (j && r->q_ctr.valid)
        json_object_set_new(
            j, "ctr_vs_dense",
            json_pack("{s:f,s:f}", "cosine", r->q_ctr.cosine, "psnr_db", r->q_ctr.psnr));
    if (j && r->q_main.valid)
        json_object_set_new(j, "main_vs_dense",
                            json_pack("{s:f,s:f,s:f}", "cosine", r->q_main.cosine, "psnr_db",
                                      r->q_main.psnr, "rel_err", r->q_main.rel_err[r->K - 1]));
    return j;
}

/* Warnings and, unless quiet, the run's summary on stderr (the module never prints). */
static void print_summary(const struct disc_capture *c, const struct disc_params *pp, bool quiet)
{
    const struct disc_params p = *pp;
    const struct dit_config *g = disc_capture_config(c);
    const struct disc_result *r = disc_capture_result(c);
    for (int b = 0; b < r->L; b++)
        if (r->st_short[b])
            cli_warn("--st-target %.6g not reached in block %d: alpha = N = %d", p.st_target, b,
                     g->tokens);
    if (r->ckpt_skipped) {
        char need[32], avail[32];
        cli_warn("%llu sampler-step boundaries passed without a checkpoint: one needs %s, its "
                 "folder had %s free (--resume continues from the last one written)",
                 (unsigned long long)r->ckpt_skipped,
                 mem_size_text(r->ckpt_need_bytes, need, sizeof need),
                 mem_size_text(r->ckpt_free_bytes, avail, sizeof avail));
    }
    if (!quiet) {
        fprintf(stderr,
                "disc: %s, %d steps, mean prune %.4f, ST sparsity %.4f, %llu masks "
                "(%llu kept)\n",
                g->name, r->K, r->mean_prune_ratio, r->sparsity,
                (unsigned long long)r->masks_written, (unsigned long long)r->masks_kept);
        if (r->spill_bytes) {
            char sz[32];
            fprintf(stderr, "disc: spill file %s (memory plan under --mem-limit)\n",
                    mem_size_text(r->spill_bytes, sz, sizeof sz));
        }
        if (r->q_ctr.valid)
            fprintf(stderr, "disc: CTR-only vs dense: cosine %.6f, PSNR %.2f dB\n", r->q_ctr.cosine,
                    r->q_ctr.psnr);
        if (r->q_main.valid)
            fprintf(stderr, "disc: main vs dense: cosine %.6f, PSNR %.2f dB, rel_err %.3g\n",
                    r->q_main.cosine, r->q_main.psnr, r->q_main.rel_err[r->K - 1]);
        /* A trained denoiser ends near unit scale (image latents); an untrained eps drives
         * x0hat = (x - sigma eps)/alpha far beyond it, and the quality figures are then those
         * of an untrained model (docs/models.md, "CTR quality: seeded and trained weights").
         * [decision: > 10] */
        double rms = final_latent_rms(r);
        fprintf(stderr, "disc: final %slatent RMS %.4g\n", r->latent_dense ? "dense " : "", rms);
        if (rms > 10.0)
            cli_warn("final latent RMS %.3g is far from unit scale: these weights do not act as "
                     "a trained denoiser, and cosine and PSNR are those of this untrained model",
                     rms);
        double fd = (double)disc_flops_total(r->flops_dense);
        fprintf(stderr, "disc: FLOPs dense %.4g, ctr %.4g (-%.1f%%), all %.4g (-%.1f%%)\n", fd,
                (double)disc_flops_total(r->flops_ctr),
                100.0 * (1.0 - (double)disc_flops_total(r->flops_ctr) / fd),
                (double)disc_flops_total(r->flops_all),
                100.0 * (1.0 - (double)disc_flops_total(r->flops_all) / fd));
    }
}

/* The memory plan on stdout (capture disc --dry-run); the exit status: 0 when it fits, 3
 * when even with the spill file the held part exceeds --mem-limit. */
static int print_plan(const struct disc_capture *c, const char *spill_dir)
{
    const struct disc_mem_plan *pl = disc_capture_mem_plan(c);
    const struct dit_config *g = disc_capture_config(c);
    char a[32], b[32], h[32];
    printf("disc memory plan: %s at %d px, N = %d tokens, --mem-limit %s\n", g->name, g->image,
           g->tokens, mem_size_text((uint64_t)pl->limit_bytes, a, sizeof a));
    printf("  %-26s %-9s %12s %12s  %s\n", "item", "precision", "total", "held", "where");
    for (int i = 0; i < pl->n_items; i++) {
        const struct disc_mem_item *it = &pl->item[i];
        printf("  %-26s %-9s %12s %12s  %s\n", it->name, it->precision,
               mem_size_text((uint64_t)it->total_bytes, a, sizeof a),
               mem_size_text((uint64_t)it->held_bytes, b, sizeof b),
               it->place == DISC_MEM_SPILLED ? "spill file" : "memory");
    }
    if (pl->spill_bytes > 0)
        printf("spill file: %s in '%s' (unlinked at creation, gone when the run ends)\n",
               mem_size_text((uint64_t)pl->spill_bytes, a, sizeof a), spill_dir);
    else
        printf("spill file: none\n");
    printf("checkpoint: %s at most in '%s' (streamed to disk, not held)\n",
           mem_size_text(disc_capture_ckpt_bytes(c), a, sizeof a), spill_dir);
    printf("held: %s of %s with nothing spilled; %s planned: %s\n",
           mem_size_text((uint64_t)pl->all_bytes, a, sizeof a),
           mem_size_text((uint64_t)pl->limit_bytes, b, sizeof b),
           mem_size_text((uint64_t)pl->held_bytes, h, sizeof h),
           pl->fits ? "fits" : "does not fit");
    if (!pl->fits)
        fprintf(stderr, "acceltrace %s: the memory plan needs %s held, above --mem-limit %s\n",
                VERB, mem_size_text((uint64_t)pl->held_bytes, a, sizeof a),
                mem_size_text((uint64_t)pl->limit_bytes, b, sizeof b));
    return pl->fits ? 0 : 3;
}

int cmd_capture_disc(int argc, char **argv)
{
    struct disc_args a = {0};
    disc_params_default(&a.p);
    disc_struct_params_default(&a.sp);
    int st = parse_args(argc, argv, &a);
    if (st)
        return st < 0 ? 0 : st; /* -1: the help */
    if (a.structured)
        return cmd_capture_disc_structured(&a.sp, a.out, a.zstd_level, a.p.mem_limit_bytes, a.quiet,
                                           a.json);
    /* the spill file goes next to the output (docs/models.md#disc-memory-plan) */
    char spill_dir[4096];
    const char *slash = a.out ? strrchr(a.out, '/') : NULL;
    if (slash)
        snprintf(spill_dir, sizeof spill_dir, "%.*s", (int)(slash - a.out + (slash == a.out)),
                 a.out);
    else
        snprintf(spill_dir, sizeof spill_dir, ".");
    a.p.spill_dir = spill_dir;
    const struct disc_params p = a.p;
    bool quiet = a.quiet;
    const struct capture_ops *ops = capture_registry_find("disc");
    struct errmsg e = {0};
    void *inst = NULL;
    int rc = ops->open(&inst, &a.p, &e);
    if (rc) {
        if (rc == ERR_USAGE)
            return cli_usage_error(VERB, "%s", errmsg_text(&e));
        return cli_fail(rc, errmsg_text(&e));
    }
    struct disc_capture *c = inst;
    if (a.dry_run) {
        st = print_plan(c, spill_dir);
        ops->close(inst);
        return st;
    }
    const struct dit_config *g = disc_capture_config(c);
    double est = disc_capture_mem_estimate(c);
    if (!quiet || est > p.mem_limit_bytes)
        fprintf(stderr, "acceltrace: %s at %d px (N = %d tokens): memory estimate %.2f GiB\n",
                g->name, g->image, g->tokens, est / 1073741824.0);
    if (p.png_dir && est <= p.mem_limit_bytes && (rc = io_mkdir_p(p.png_dir, 0777, &e)) != 0) {
        ops->close(inst);
        return cli_fail(rc, errmsg_text(&e));
    }
    struct capture_opts o;
    capture_opts_default(&o);
    o.zstd_level = a.zstd_level;
    o.mem_limit_bytes = (uint64_t)p.mem_limit_bytes;
    o.quiet = quiet;
    o.command_line = cli_command_line();
    o.resume = a.resume;
    rc = cmd_capture_run(ops, inst, a.out, &o, &e);
    if (rc) {
        ops->close(inst);
        return cli_fail(rc, errmsg_text(&e));
    }
    print_summary(c, &p, quiet);
    st = a.json ? cli_print_json(summary_json(c, a.out, est)) : 0;
    ops->close(inst);
    return st;
}
