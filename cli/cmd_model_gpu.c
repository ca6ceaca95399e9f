/*
 * cmd_model_gpu: `acceltrace model gpu`: the per-operator GPU model (replay/gpu_model.h;
 * docs/models.md#gpu-baselines) on a named workload; prints key=value lines, or with
 * --json one object {"workload", "hw", "seconds", "per_step_s" | "per_token_s", "by_op",
 * "status", ...}. --list names the presets and workloads, --sources prints a preset's
 * values with their status and source, --calibrate refits the calibrated values.
 */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/cli_opt.h"
#include "replay/gpu_calibrate.h"
#include "replay/gpu_model.h"
#include "replay/gpu_replay.h"

#define VERB "model gpu"

enum {
    OPT_HW = 1,
    OPT_WORKLOAD,
    OPT_IMAGE,
    OPT_TEXT,
    OPT_STEPS,
    OPT_BATCH,
    OPT_CFG,
    OPT_CONTEXT,
    OPT_PART,
    OPT_HEADS,
    OPT_KV_HEADS,
    OPT_HEAD_DIM,
    OPT_EAGER,
    OPT_LIST,
    OPT_SOURCES,
    OPT_CALIBRATE,
};

/* clang-format off */
static const struct cli_opt opts[] = {
    {OPT_HW, "hw", 0, CLI_ARG_STRING, "PRESET|FILE",
     "a GPU preset (--list) or a config file of model \"gpu\"\n(a100-pcie-80gb)", 0},
    {OPT_WORKLOAD, "workload", 0, CLI_ARG_STRING, "NAME", "the workload (--list)", 0},
    {OPT_IMAGE, "image-size", 0, CLI_ARG_INT, "PX",
     "image side, a multiple of 16 (the workload's default)", 0},
    {OPT_TEXT, "text-tokens", 0, CLI_ARG_INT, "T", "text tokens of PixArt (120 alpha, 300 sigma)", 0},
    {OPT_STEPS, "steps", 0, CLI_ARG_INT, "S", "sampler steps (250 DiT, 20 PixArt)", 0},
    {OPT_BATCH, "batch", 0, CLI_ARG_INT, "B", "batch (1)", 0},
    {OPT_CFG, "cfg", 0, CLI_ARG_NONE, NULL, "classifier-free guidance: the batch doubles", 0},
    {OPT_CONTEXT, "context", 0, CLI_ARG_INT, "N", "decode context length (LLMs, decode-attention)", 0},
    {OPT_PART, "part", 0, CLI_ARG_STRING, "attention|layer|model",
     "how much of an LLM decode step (model)", 0},
    {OPT_HEADS, "heads", 0, CLI_ARG_INT, "H", "query heads (decode-attention)", 0},
    {OPT_KV_HEADS, "kv-heads", 0, CLI_ARG_INT, "G", "K/V heads (decode-attention; H)", 0},
    {OPT_HEAD_DIM, "head-dim", 0, CLI_ARG_INT, "D", "head dimension (decode-attention)", 0},
    {OPT_EAGER, "eager", 0, CLI_ARG_NONE, NULL,
     "count the host's dispatch time per op (eager framework;\nthe default is kernel time)", 0},
    {OPT_LIST, "list", 0, CLI_ARG_NONE, NULL, "list the presets and workloads", 0},
    {OPT_SOURCES, "sources", 0, CLI_ARG_NONE, NULL,
     "print the preset's values with status and source", 0},
    {OPT_CALIBRATE, "calibrate", 0, CLI_ARG_STRING, "FILE",
     "fit the calibrated values of --hw's chip family to a\ncalibration set "
     "(configs/gpu/calibration.csv)", 0},
    CLI_OPT_QUIET,
    {CLI_ID_JSON, "json", 0, CLI_ARG_NONE, NULL, "one JSON object on stdout", 0},
    CLI_OPT_END,
};
/* clang-format on */

const struct cli_spec cmd_model_gpu_spec = {
    .verb = VERB,
    .usage = "usage: acceltrace model gpu --workload NAME [--hw PRESET|FILE] [options]\n"
             "       acceltrace model gpu --list | --sources [--hw PRESET]\n"
             "       acceltrace model gpu --calibrate FILE [--hw PRESET]\n"
             "\n"
             "The per-operator GPU model (docs/models.md#gpu-baselines): GEMMs by tiles and\n"
             "waves, fused attention by CTAs and waves, decode attention and element-wise\n"
             "kernels by bytes, launch gaps; power idle + dynamic x activity. Predicts the\n"
             "time and energy of a diffusion transformer (per step and for S steps) or of one\n"
             "LLM decode token.\n",
    .opts = opts,
    .positional = NULL,
};

struct args {
    const char *hw, *calibrate;
    struct gpu_request r;
    bool json, list, sources;
};

static int parse_u32(const struct cli_parser *p, uint32_t *dst, int64_t lo, int64_t hi)
{
    if (p->i64 < lo || p->i64 > hi)
        return cli_usage_error(VERB, "bad value '%s' for '--%s' (%lld..%lld)", p->arg, p->opt->name,
                               (long long)lo, (long long)hi);
    *dst = (uint32_t)p->i64;
    return 0;
}

static int parse_args(int argc, char **argv, struct args *a)
{
    struct cli_parser p;
    cli_parser_init(&p, &cmd_model_gpu_spec, argc, argv);
    const char *wl = NULL;
    for (int id; (id = cli_next(&p)) != CLI_END;) {
        int rc = 0;
        if (id == CLI_HELP || id == CLI_BAD)
            return id == CLI_HELP ? -1 : cli_next_exit(id);
        if (id == CLI_POSITIONAL)
            return cli_usage_error(VERB, "unexpected argument '%s'", p.arg);
        switch (id) {
        case OPT_HW:
            a->hw = p.arg;
            break;
        case OPT_WORKLOAD:
            wl = p.arg;
            break;
        case OPT_IMAGE:
            rc = parse_u32(&p, &a->r.image_px, 1, 1 << 20);
            break;
        case OPT_TEXT:
            rc = parse_u32(&p, &a->r.text_tokens, 1, 65536);
            break;
        case OPT_STEPS:
            rc = parse_u32(&p, &a->r.steps, 1, 100000);
            break;
        case OPT_BATCH:
            rc = parse_u32(&p, &a->r.batch, 1, 4096);
            break;
        case OPT_CFG:
            a->r.cfg = true;
            break;
        case OPT_CONTEXT:
            if (p.i64 < 1 || p.i64 > (1ll << 24))
                return cli_usage_error(VERB, "bad value '%s' for '--context' (1..%lld)", p.arg,
                                       1ll << 24);
            a->r.context = (uint64_t)p.i64;
            break;
        case OPT_PART:
            if (!strcmp(p.arg, "attention"))
                a->r.part = GPU_PART_ATTENTION;
            else if (!strcmp(p.arg, "layer"))
                a->r.part = GPU_PART_LAYER;
            else if (!strcmp(p.arg, "model"))
                a->r.part = GPU_PART_MODEL;
            else
                return cli_usage_error(
                    VERB, "bad value '%s' for '--part' (attention, layer, model)", p.arg);
            break;
        case OPT_HEADS:
            rc = parse_u32(&p, &a->r.heads, 1, 4096);
            break;
        case OPT_KV_HEADS:
            rc = parse_u32(&p, &a->r.kv_heads, 1, 4096);
            break;
        case OPT_HEAD_DIM:
            rc = parse_u32(&p, &a->r.head_dim, 1, 1024);
            break;
        case OPT_EAGER:
            a->r.eager = true;
            break;
        case OPT_LIST:
            a->list = true;
            break;
        case OPT_SOURCES:
            a->sources = true;
            break;
        case OPT_CALIBRATE:
            a->calibrate = p.arg;
            break;
        default:
            break;
        }
        if (rc)
            return rc;
    }
    a->json = p.common.json;
    if (!a->hw)
        a->hw = "a100-pcie-80gb";
    if (a->list || a->sources || a->calibrate)
        return 0;
    if (!wl)
        return cli_usage_error(VERB, "--workload NAME is required (see --list)");
    if (!(a->r.wl = gpu_workload_find(wl))) {
        fprintf(stderr, "acceltrace: unknown workload '%s'; workloads:", wl);
        for (size_t i = 0; i < gpu_workload_count(); i++)
            fprintf(stderr, " %s", gpu_workload_get(i)->name);
        fprintf(stderr, "\n");
        return 2;
    }
    return 0;
}

static int do_list(bool json)
{
    json_t *j = json_object(), *ps = json_array(), *ws = json_array();
    for (size_t i = 0; i < gpu_preset_count(); i++) {
        const char *n = gpu_preset_name(i);
        if (!json)
            printf("preset %-16s %s\n", n, gpu_preset_title(n));
        json_array_append_new(ps, json_pack("{s:s,s:s}", "name", n, "title", gpu_preset_title(n)));
    }
    for (size_t i = 0; i < gpu_workload_count(); i++) {
        const struct gpu_workload *w = gpu_workload_get(i);
        if (!json)
            printf("workload %-16s %s\n", w->name, w->title);
        json_array_append_new(ws, json_pack("{s:s,s:s}", "name", w->name, "title", w->title));
    }
    json_object_set_new(j, "presets", ps);
    json_object_set_new(j, "workloads", ws);
    if (json)
        return cli_print_json(j);
    json_decref(j);
    return 0;
}

static int do_sources(const char *preset, bool json)
{
    size_t n = 0;
    const struct gpu_preset_value *v = gpu_preset_values(preset, &n);
    if (!v)
        return cli_usage_error(VERB, "--sources takes a preset name, not '%s'", preset);
    json_t *arr = json_array();
    for (size_t i = 0; i < n; i++) {
        if (!json)
            printf("%s=%.10g\t[%s] %s\n", v[i].key, v[i].value, v[i].status, v[i].source);
        json_array_append_new(arr,
                              json_pack("{s:s,s:f,s:s,s:s}", "key", v[i].key, "value", v[i].value,
                                        "status", v[i].status, "source", v[i].source));
    }
    if (json)
        return cli_print_json(json_pack("{s:s,s:o}", "hw", preset, "values", arr));
    json_decref(arr);
    return 0;
}

static int do_calibrate(const char *path, const char *preset, bool json)
{
    struct gpu_fit fit;
    struct errmsg e = {0};
    int rc = gpu_calibrate(path, preset, &fit, &e);
    if (rc)
        return cli_fail(rc, errmsg_text(&e));
    json_t *arr = json_array();
    for (int i = 0; i < GPU_FIT_PARAMS; i++) {
        const struct gpu_fit_param *q = &fit.p[i];
        if (!json)
            printf("%s=%.6g\trows=%zu rms_log=%.4f%s\n", q->key, q->value, q->rows, q->rms_log,
                   i > 0 && i < 3 && fit.attn_fwd_bwd ? " (forward + backward rows)" : "");
        json_array_append_new(
            arr, json_pack("{s:s,s:o,s:I,s:o}", "key", q->key, "value",
                           isfinite(q->value) ? json_real(q->value) : json_null(), "rows",
                           (json_int_t)q->rows, "rms_log",
                           isfinite(q->rms_log) ? json_real(q->rms_log) : json_null()));
    }
    if (json)
        return cli_print_json(
            json_pack("{s:s,s:s,s:o}", "family", fit.family, "calibration", path, "fit", arr));
    json_decref(arr);
    return 0;
}

int cmd_model_gpu(int argc, char **argv)
{
    struct args a = {0};
    a.r.part = GPU_PART_MODEL;
    int rc = parse_args(argc, argv, &a);
    if (rc)
        return rc < 0 ? 0 : rc;
    if (a.list)
        return do_list(a.json);
    if (a.sources)
        return do_sources(a.hw, a.json);
    if (a.calibrate)
        return do_calibrate(a.calibrate, a.hw, a.json);
    struct gpu_hw hw;
    bool eager = false;
    struct errmsg e = {0};
    if ((rc = gpu_hw_resolve(a.hw, &hw, &eager, &e)))
        return cli_fail(rc, errmsg_text(&e));
    a.r.eager = a.r.eager || eager;
    struct gpu_estimate est;
    char msg[256];
    if ((rc = gpu_request_run(&hw, &a.r, &est, msg, sizeof msg)))
        return cli_usage_error(VERB, "%s", msg);
    const bool dit = a.r.wl->kind == GPU_WL_DIT;
    const char *unit_key = dit ? "per_step_s" : "per_token_s";
    json_t *by = json_object();
    for (int c = 0; c < GPU_OP_N; c++)
        json_object_set_new(by, gpu_op_class_name((enum gpu_op_class)c), json_real(est.acc.s[c]));
    json_t *j = json_pack("{s:s,s:s,s:f,s:f,s:o,s:f,s:f,s:I,s:s}", "workload", a.r.wl->name, "hw",
                          a.hw, "seconds", est.seconds, unit_key, est.per_unit_s, "by_op", by,
                          "energy_j", est.energy_j, "power_w", est.power_w, "kernels",
                          (json_int_t)est.acc.kernels, "status", "predicted");
    if (dit)
        json_object_set_new(j, "steps", json_integer(est.steps));
    json_object_set_new(j, "batch", json_integer(est.batch));
    if (a.json)
        return cli_print_json(j);
    const char *keys[] = {"workload", "hw",      "seconds", unit_key, "energy_j",
                          "power_w",  "kernels", "steps",   "batch",  "status"};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        json_t *v = json_object_get(j, keys[i]);
        if (!v)
            continue;
        if (json_is_string(v))
            printf("%s=%s\n", keys[i], json_string_value(v));
        else if (json_is_integer(v))
            printf("%s=%lld\n", keys[i], (long long)json_integer_value(v));
        else
            printf("%s=%.6g\n", keys[i], json_real_value(v));
    }
    for (int c = 0; c < GPU_OP_N; c++)
        printf("by_op.%s=%.6g\n", gpu_op_class_name((enum gpu_op_class)c), est.acc.s[c]);
    json_decref(j);
    return 0;
}
