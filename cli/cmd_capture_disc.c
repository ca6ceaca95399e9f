/*
 * cmd_capture_disc: `acceltrace capture disc [options] -o FILE.atr`: a DiT denoising run
 * with CTR and ST executed for real (specs/disc.md 2-6), written as a trace.
 */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "capture/capture_registry.h"
#include "capture/disc/disc_capture.h"
#include "capture/disc/dit.h"
#include "cli/cli.h"
#include "common/err.h"
#include "common/mem.h"
#include "common/progress.h"
#include "traces/trace_writer.h"

#define VERB "capture disc"

int cmd_capture_disc(int argc, char **argv);

static void usage(FILE *f)
{
    fputs("usage: acceltrace capture disc [options] -o FILE.atr\n"
          "\n"
          "Runs a PixArt-Sigma-style DiT denoising loop with CTR (cached token reuse) and ST\n"
          "(softmax thresholding with mask reuse) for real and writes DiscStep, DiscMask and\n"
          "Summary records (specs/disc.md; docs/models.md#disc-capture).\n"
          "\n"
          "model and sampler:\n"
          "  --model NAME         micro, tiny (default) or pixart-sigma-xl\n"
          "  --image-size PX      square image size (multiple of 16 up to 8192; XL: 512, 1024,\n"
          "                       2048)\n"
          "  --steps K            sampler steps (default: 4 micro, 20 tiny/XL)\n"
          "  --sampler S          dpm2m (default) or ddim\n"
          "  --cfg W              classifier-free guidance scale (batch of 2; off by default)\n"
          "  --seed S             initial latent seed (default 0)\n"
          "  --weights W          seed:S (default seed:0) or FILE.safetensors (repeat for shards)\n"
          "  --text T             seed:S (default seed:1), raw float32 or .npy (T x D_c)\n"
          "  --null-text FILE     null text for CFG (default zeros)\n"
          "CTR:\n"
          "  --ctr-target R       prune ceil(R N) tokens per step (default 0.40)\n"
          "  --ctr-tau X          fixed threshold in latent units\n"
          "  --ctr-off            no CTR\n"
          "ST:\n"
          "  --st-alpha A         theta = A / N (default 1.0)\n"
          "  --st-theta X         absolute probability threshold\n"
          "  --st-target S        per-block alpha reaching sparsity S at step 0\n"
          "  --st-off             dense attention, no DiscMask records\n"
          "  --st-refresh K       generate masks every K steps (default 2)\n"
          "  --keep-masks SEL     store mask bits: none (default) or e.g.\n"
          "                       'blocks=0,5;heads=all;steps=0-3;batch=0'\n"
          "output and run:\n"
          "  --compare-dense      score against the dense run (default)\n"
          "  --no-compare-dense   skip the reference runs\n"
          "  --png DIR            latent, token-mask and kept attention-mask images\n"
          "  --mem-limit SIZE     refuse to run above SIZE (default 16GiB; B, KB..TB, K..T,\n"
          "                       KiB..TiB)\n"
          "  --save-weights FILE  also write the model weights as F32 safetensors\n"
          "  --threads N          BLAS and worker threads (default: all CPUs)\n"
          "  --zstd-level N       trace compression level (default 3)\n"
          "  -o FILE.atr          output trace (required)\n"
          "  -q                   no progress or summary on stderr\n"
          "  -h, --help           this help\n",
          f);
}

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

/* The options into *pp, *outp, *quietp and *zstdp; 0, or the exit status of a usage error
 * (or of -h) with *done set. */
static int parse_args(int argc, char **argv, struct disc_params *pp, const char **outp,
                      bool *quietp, int *zstdp, bool *done)
{
    struct disc_params p = *pp;
    const char *out = NULL, *save_weights = NULL;
    bool quiet = false;
    int zstd_level = 3;
    int n_ctr = 0, n_st = 0;
    *done = true;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        int64_t iv;
        uint64_t uv;
        double dv;
        if (cli_is_help(a)) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "-q")) {
            quiet = true;
        } else if (!strcmp(a, "--ctr-off")) {
            p.ctr = DISC_CTR_OFF, n_ctr++;
        } else if (!strcmp(a, "--st-off")) {
            p.st = DISC_ST_OFF, n_st++;
        } else if (!strcmp(a, "--compare-dense")) {
            p.compare_dense = true;
        } else if (!strcmp(a, "--no-compare-dense")) {
            p.compare_dense = false;
        } else if (a[0] == '-' && !v) {
            return cli_usage_error(VERB, "unknown option or missing value '%s'", a);
        } else if (!strcmp(a, "-o")) {
            out = argv[++i];
        } else if (!strcmp(a, "--model")) {
            snprintf(p.model, sizeof p.model, "%s", argv[++i]);
        } else if (!strcmp(a, "--image-size")) {
            if (!cli_parse_i64(v, &iv) || iv < 16 || iv > 8192)
                return cli_usage_error(VERB, "bad --image-size '%s'", v);
            p.image_size = (int)iv, i++;
        } else if (!strcmp(a, "--steps")) {
            if (!cli_parse_i64(v, &iv) || iv < 1 || iv > 1000)
                return cli_usage_error(VERB, "bad --steps '%s' (1..1000)", v);
            p.steps = (int)iv, i++;
        } else if (!strcmp(a, "--sampler")) {
            if (!strcmp(v, "dpm2m"))
                p.sampler = DIT_SAMPLER_DPM2M;
            else if (!strcmp(v, "ddim"))
                p.sampler = DIT_SAMPLER_DDIM;
            else
                return cli_usage_error(VERB, "unknown sampler '%s' (dpm2m or ddim)", v);
            i++;
        } else if (!strcmp(a, "--cfg")) {
            /* larger scales overflow the float guidance sum to inf, then NaN */
            if (!cli_parse_f64(v, &dv) || fabs(dv) > 1000.0)
                return cli_usage_error(VERB, "bad --cfg '%s' (a finite number in -1000..1000)",
                                       v);
            p.cfg_on = true, p.cfg_scale = dv, i++;
        } else if (!strcmp(a, "--seed")) {
            if (!cli_parse_u64(v, &uv))
                return cli_usage_error(VERB, "bad --seed '%s'", v);
            p.seed = uv, i++;
        } else if (!strcmp(a, "--weights")) {
            int st = parse_weights(&p, v);
            if (st)
                return st;
            i++;
        } else if (!strcmp(a, "--text")) {
            if (!strncmp(v, "seed:", 5)) {
                if (!cli_parse_u64(v + 5, &uv))
                    return cli_usage_error(VERB, "bad --text '%s'", v);
                p.text_seed = uv, p.text_file = NULL;
            } else {
                p.text_file = v;
            }
            i++;
        } else if (!strcmp(a, "--null-text")) {
            p.null_text_file = argv[++i];
        } else if (!strcmp(a, "--ctr-tau")) {
            if (!parse_float(v, &p.ctr_tau) || !(p.ctr_tau >= 0.0f))
                return cli_usage_error(VERB, "bad --ctr-tau '%s'", v);
            p.ctr = DISC_CTR_TAU, n_ctr++, i++;
        } else if (!strcmp(a, "--ctr-target")) {
            if (strlen(v) >= sizeof p.ctr_target)
                return cli_usage_error(VERB, "bad CTR target '%s'", v);
            snprintf(p.ctr_target, sizeof p.ctr_target, "%s", v);
            p.ctr = DISC_CTR_TARGET, n_ctr++, i++;
        } else if (!strcmp(a, "--st-alpha")) {
            if (!parse_float(v, &p.st_alpha) || !(p.st_alpha >= 0.0f))
                return cli_usage_error(VERB, "bad --st-alpha '%s'", v);
            p.st = DISC_ST_ALPHA, n_st++, i++;
        } else if (!strcmp(a, "--st-theta")) {
            if (!parse_float(v, &p.st_theta) || !(p.st_theta >= 0.0f && p.st_theta <= 1.0f))
                return cli_usage_error(VERB, "bad --st-theta '%s' (0..1)", v);
            p.st = DISC_ST_THETA, n_st++, i++;
        } else if (!strcmp(a, "--st-target")) {
            if (!cli_parse_f64(v, &p.st_target) || !(p.st_target >= 0.0 && p.st_target <= 1.0))
                return cli_usage_error(VERB, "bad --st-target '%s' (0..1)", v);
            p.st = DISC_ST_TARGET, n_st++, i++;
        } else if (!strcmp(a, "--st-refresh")) {
            if (!cli_parse_i64(v, &iv) || iv < 1 || iv > 1000)
                return cli_usage_error(VERB, "bad --st-refresh '%s'", v);
            p.st_refresh = (int)iv, i++;
        } else if (!strcmp(a, "--keep-masks")) {
            if (strlen(v) >= sizeof p.keep_masks)
                return cli_usage_error(VERB, "--keep-masks selection too long");
            snprintf(p.keep_masks, sizeof p.keep_masks, "%s", v);
            i++;
        } else if (!strcmp(a, "--png")) {
            p.png_dir = argv[++i];
        } else if (!strcmp(a, "--mem-limit")) {
            uint64_t lim;
            if (mem_parse_size(v, &lim) || lim == 0)
                return cli_usage_error(VERB, "bad --mem-limit '%s' (a size like 8GiB)", v);
            p.mem_limit_bytes = (double)lim;
            i++;
        } else if (!strcmp(a, "--save-weights")) {
            save_weights = argv[++i];
        } else if (!strcmp(a, "--threads")) {
            if (!cli_parse_i64(v, &iv) || iv < 1 || iv > 1024)
                return cli_usage_error(VERB, "bad --threads '%s'", v);
            p.threads = (int)iv, i++;
        } else if (!strcmp(a, "--zstd-level")) {
            if (!cli_parse_i64(v, &iv) || iv < 0 || iv > 19)
                return cli_usage_error(VERB, "bad --zstd-level '%s'", v);
            zstd_level = (int)iv, i++;
        } else {
            return cli_usage_error(VERB, "unknown option '%s'", a);
        }
    }
    if (!out)
        return cli_usage_error(VERB, "missing -o FILE.atr");
    if (n_ctr > 1)
        return cli_usage_error(VERB, "give at most one of --ctr-tau, --ctr-target, --ctr-off");
    if (n_st > 1)
        return cli_usage_error(VERB,
                               "give at most one of --st-alpha, --st-theta, --st-target, --st-off");
    p.save_weights = save_weights;
    int st = check_inputs(&p, out);
    if (st)
        return st;
    *pp = p;
    *outp = out;
    *quietp = quiet;
    *zstdp = zstd_level;
    *done = false;
    return 0;
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
    if (!quiet) {
        fprintf(stderr, "disc: %s, %d steps, mean prune %.4f, ST sparsity %.4f, %llu masks "
                        "(%llu kept)\n",
                g->name, r->K, r->mean_prune_ratio, r->sparsity,
                (unsigned long long)r->masks_written, (unsigned long long)r->masks_kept);
        if (r->q_ctr.valid)
            fprintf(stderr, "disc: CTR-only vs dense: cosine %.6f, PSNR %.2f dB\n",
                    r->q_ctr.cosine, r->q_ctr.psnr);
        if (r->q_main.valid)
            fprintf(stderr, "disc: main vs dense: cosine %.6f, PSNR %.2f dB, rel_err %.3g\n",
                    r->q_main.cosine, r->q_main.psnr, r->q_main.rel_err[r->K - 1]);
        /* A trained denoiser ends near unit scale (image latents); an untrained eps drives
         * x0hat = (x - sigma eps)/alpha far beyond it, and the quality figures are then those
         * of an untrained model (docs/models.md, "CTR quality: seeded and trained weights").
         * [decision: > 10] */
        const float *xr = r->latent_dense ? r->latent_dense : r->latent;
        double ss = 0.0;
        for (size_t i = 0; i < r->n_latent; i++)
            ss += (double)xr[i] * xr[i];
        double rms = r->n_latent ? sqrt(ss / (double)r->n_latent) : 0.0;
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

int cmd_capture_disc(int argc, char **argv)
{
    struct disc_params p;
    disc_params_default(&p);
    const char *out = NULL;
    bool quiet = false, done = false;
    int zstd_level = 3;
    int st = parse_args(argc, argv, &p, &out, &quiet, &zstd_level, &done);
    if (done)
        return st;

    const struct capture_ops *ops = capture_registry_find("disc");
    struct errmsg e = {0};
    void *inst = NULL;
    int rc = ops->open(&inst, &p, &e);
    if (rc) {
        if (rc == ERR_USAGE)
            return cli_usage_error(VERB, "%s", errmsg_text(&e));
        return cli_fail(rc, errmsg_text(&e));
    }
    struct disc_capture *c = inst;
    const struct dit_config *g = disc_capture_config(c);
    double est = disc_capture_mem_estimate(c);
    if (!quiet || est > p.mem_limit_bytes)
        fprintf(stderr, "acceltrace: %s at %d px (N = %d tokens): memory estimate %.2f GiB\n",
                g->name, g->image, g->tokens, est / 1073741824.0);
    if (p.png_dir && est <= p.mem_limit_bytes)
        mkdir(p.png_dir, 0777);
    struct capture_opts o;
    capture_opts_default(&o);
    o.zstd_level = zstd_level;
    o.mem_limit_bytes = (uint64_t)p.mem_limit_bytes;
    o.quiet = quiet;
    o.command_line = cli_command_line();
    rc = capture_run(ops, inst, out, &o, &e);
    if (rc) {
        ops->close(inst);
        return cli_fail(rc, errmsg_text(&e));
    }
    print_summary(c, &p, quiet);
    ops->close(inst);
    return 0;
}
