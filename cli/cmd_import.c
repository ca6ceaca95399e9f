/*
 * cmd_import: `acceltrace import masks|selections FILE.npz [options] -o TRACE.atr`: arrays
 * from other tools as traces, through the capture interface (capture/import/import_capture.h;
 * docs/interop.md#import).
 */
#include <stdio.h>
#include <string.h>

#include "capture/import/import_capture.h"
#include "cli/cli.h"
#include "cli/cli_opt.h"
#include "cli/subverb.h"
#include "common/err.h"
#include "common/progress.h"

enum {
    OPT_MODEL = 1,
    OPT_IMAGE,
    OPT_REFRESH,
    OPT_CONTEXT,
    OPT_METHOD,
    OPT_LAYERS,
    OPT_HEADS,
    OPT_KV_HEADS,
    OPT_HEAD_DIM,
    OPT_ZSTD,
};

/* clang-format off */
#define IMPORT_COMMON_OPTS \
    CLI_OPT_OUTPUT("TRACE.atr", "trace to write (required)"), \
    {OPT_ZSTD, "zstd-level", 0, CLI_ARG_INT, "N", "frame compression level (3; 0 stores raw)", 0}, \
    CLI_OPT_MEM_LIMIT("refuse to start above this memory estimate (8GiB)"), \
    CLI_OPT_QUIET, \
    {CLI_ID_JSON, "json", 0, CLI_ARG_NONE, NULL, \
     "one JSON object on stdout: trace, steps, records, ones, sha256", 0}

static const struct cli_opt masks_opts[] = {
    {OPT_MODEL, "model", 0, CLI_ARG_STRING, "NAME",
     "DiT model the masks belong to: micro, tiny,\npixart-sigma-xl, dit-micro, dit-xl-2 (required)", 0},
    {OPT_IMAGE, "image-size", 0, CLI_ARG_INT, "PX", "image size (the model's default)", 0},
    {OPT_REFRESH, "refresh", 0, CLI_ARG_INT, "R",
     "masks generated at steps k % R == 0, reused between (1)", 0},
    IMPORT_COMMON_OPTS,
    CLI_OPT_END,
};

static const struct cli_opt sel_opts[] = {
    {OPT_CONTEXT, "context", 0, CLI_ARG_INT, "N",
     "prompt tokens n0: step t has n0 + t + 1 keys (required\nwithout an n_ctx array)", 0},
    {OPT_METHOD, "method", 0, CLI_ARG_INT, "ID", "SalcaSelect method id to file them under (0)", 0},
    {OPT_LAYERS, "layers", 0, CLI_ARG_INT, "L", "expected layers (checked against the file)", 0},
    {OPT_HEADS, "heads", 0, CLI_ARG_INT, "H", "expected query heads (checked)", 0},
    {OPT_KV_HEADS, "kv-heads", 0, CLI_ARG_INT, "G", "K/V heads (the query heads)", 0},
    {OPT_HEAD_DIM, "head-dim", 0, CLI_ARG_INT, "D", "head dimension of the header (128)", 0},
    IMPORT_COMMON_OPTS,
    CLI_OPT_END,
};
/* clang-format on */

const struct cli_spec cmd_import_masks_spec = {
    .verb = "import masks",
    .usage = "usage: acceltrace import masks FILE.npz --model NAME [--image-size PX] -o "
             "TRACE.atr\n"
             "\n"
             "Converts dense boolean attention masks, the array `masks` of shape (steps,\n"
             "blocks, heads, tokens, tokens) in an .npz (np.savez or np.savez_compressed), into\n"
             "a disc trace: one DiscStep per step (every token computed) and one kept DiscMask\n"
             "per (step, block, head). A shape that does not match the model is exit 3 naming\n"
             "both (docs/interop.md#import).\n",
    .opts = masks_opts,
    .positional = "FILE.npz",
};

const struct cli_spec cmd_import_selections_spec = {
    .verb = "import selections",
    .usage = "usage: acceltrace import selections FILE.npz [--context N] -o TRACE.atr\n"
             "\n"
             "Converts selected K/V token indices, `selected` (steps, layers, heads, k) padded\n"
             "with -1, or a flat `selected` with `counts` (steps, layers, heads), and an\n"
             "optional `n_ctx` (steps,), into a salca trace of SalcaSelect records\n"
             "(docs/interop.md#import).\n",
    .opts = sel_opts,
    .positional = "FILE.npz",
};

/* Parses and runs one import with ops. */
static int run_import(const struct cli_spec *spec, const struct capture_ops *ops, int argc,
                      char **argv)
{
    const char *verb = spec->verb, *out = NULL;
    struct import_params ip;
    import_params_default(&ip);
    struct capture_opts o;
    capture_opts_default(&o);
    bool json = false;
    struct cli_parser p;
    cli_parser_init(&p, spec, argc, argv);
    for (int id; (id = cli_next(&p)) != CLI_END;) {
        if (id == CLI_HELP || id == CLI_BAD)
            return cli_next_exit(id);
        int64_t v = p.i64;
        bool neg = (id == OPT_IMAGE || id == OPT_CONTEXT || id == OPT_METHOD || id == OPT_LAYERS ||
                    id == OPT_HEADS || id == OPT_KV_HEADS || id == OPT_HEAD_DIM ||
                    id == OPT_REFRESH || id == OPT_ZSTD) &&
                   (v < 0 || v > 100000000);
        if (neg)
            return cli_usage_error(verb, "bad value '%s'", p.arg);
        switch (id) {
        case OPT_MODEL:
            ip.model = p.arg;
            break;
        case OPT_IMAGE:
            ip.image_size = (int)v;
            break;
        case OPT_REFRESH:
            ip.refresh = (int)v;
            break;
        case OPT_CONTEXT:
            ip.context = v;
            break;
        case OPT_METHOD:
            ip.method = (uint32_t)v;
            break;
        case OPT_LAYERS:
            ip.layers = (uint32_t)v;
            break;
        case OPT_HEADS:
            ip.heads = (uint32_t)v;
            break;
        case OPT_KV_HEADS:
            ip.kv_heads = (uint32_t)v;
            break;
        case OPT_HEAD_DIM:
            ip.head_dim = (uint32_t)v;
            break;
        case OPT_ZSTD:
            o.zstd_level = (int)v;
            break;
        case CLI_ID_MEM_LIMIT:
            o.mem_limit_bytes = p.u64;
            break;
        case CLI_POSITIONAL:
            if (ip.path)
                return cli_usage_error(verb, "more than one input ('%s')", p.arg);
            ip.path = p.arg;
            break;
        }
    }
    out = p.common.output;
    json = p.common.json;
    o.quiet = p.common.quiet;
    if (!ip.path || !out)
        return cli_usage_error(verb, "need FILE.npz and -o TRACE.atr");
    if (ops == &capture_import_masks_ops && !ip.model)
        return cli_usage_error(verb, "need --model NAME");
    o.command_line = cli_command_line();
    struct errmsg e = {0};
    void *inst = NULL;
    int rc = ops->open(&inst, &ip, &e);
    if (!rc)
        rc = capture_run(ops, inst, out, &o, &e);
    if (rc) {
        ops->close(inst);
        return rc == ERR_USAGE ? cli_usage_error(verb, "%s", errmsg_text(&e))
                               : cli_fail(rc, errmsg_text(&e));
    }
    const struct import_result r = *import_capture_result(inst);
    ops->close(inst);
    if (json)
        return cli_print_json(json_pack("{s:s,s:s,s:s,s:I,s:I,s:I,s:s,s:s}", "workload", ops->name,
                                        "input", ip.path, "trace", out, "steps",
                                        (json_int_t)r.steps, "records", (json_int_t)r.jobs, "ones",
                                        (json_int_t)r.ones, "shape", r.shape, "sha256", r.sha256));
    printf("wrote %s: %s trace, %llu steps, %llu %s, %llu %s from '%s' %s (sha256 %.16s...)\n", out,
           ops->name, (unsigned long long)r.steps, (unsigned long long)r.jobs,
           ops == &capture_import_masks_ops ? "masks" : "selections", (unsigned long long)r.ones,
           ops == &capture_import_masks_ops ? "bits set" : "indices", ip.path, r.shape, r.sha256);
    return 0;
}

static int cmd_import_masks(int argc, char **argv)
{
    return run_import(&cmd_import_masks_spec, &capture_import_masks_ops, argc, argv);
}

static int cmd_import_selections(int argc, char **argv)
{
    return run_import(&cmd_import_selections_spec, &capture_import_selections_ops, argc, argv);
}

static const struct subverb table[] = {
    {"masks", cmd_import_masks, "dense boolean attention masks (.npz) as a disc trace"},
    {"selections", cmd_import_selections, "selected K/V token indices (.npz) as a salca trace"},
    {NULL, NULL, NULL},
};

int cmd_import(int argc, char **argv);
int cmd_import(int argc, char **argv)
{
    return subverb_dispatch("import", "kind", table, argc, argv, false);
}
