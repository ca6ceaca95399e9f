/*
 * cmd_export_scalesim: `acceltrace export scalesim FILE.atr [--step K] -o TOPO.csv`: the
 * GEMMs of a DiT sampler step as a SCALE-Sim v2 topology and config
 * (analysis/export_scalesim; docs/interop.md#scale-sim).
 */
#include <stdio.h>
#include <string.h>

#include "analysis/export_scalesim.h"
#include "cli/cli.h"
#include "cli/cli_opt.h"
#include "cli/cmd_export.h"

#define VERB "export scalesim"

enum { OPT_STEP = 1, OPT_ARRAY, OPT_DATAFLOW, OPT_SRAM };

static const struct cli_opt opts[] = {
    CLI_OPT_OUTPUT("TOPO.csv", "topology file (required); the config goes to TOPO.cfg"),
    {OPT_STEP, "step", 0, CLI_ARG_STRING, "K",
     "M of token-wise layers = B x N_k of sampler step K\n(default: the dense network, N)", 0},
    {OPT_ARRAY, "array", 0, CLI_ARG_STRING, "RxC", "systolic array rows x columns (32x32)", 0},
    {OPT_DATAFLOW, "dataflow", 0, CLI_ARG_STRING, "os|ws|is", "dataflow of the config (ws)", 0},
    {OPT_SRAM, "sram-kb", 0, CLI_ARG_STRING, "N", "each operand SRAM, kB (64)", 0},
    CLI_OPT_QUIET,
    {CLI_ID_JSON, "json", 0, CLI_ARG_NONE, NULL,
     "one JSON object on stdout: files, layers, MACs, tokens", 0},
    CLI_OPT_ALLOW_PARTIAL,
    CLI_OPT_END,
};

const struct cli_spec cmd_export_scalesim_spec = {
    .verb = VERB,
    .usage = "usage: acceltrace export scalesim FILE.atr [--step K] [--array RxC] -o TOPO.csv\n"
             "\n"
             "Writes the matrix products of one sampler step of a disc trace's DiT as a\n"
             "SCALE-Sim v2 topology in GEMM mode (TOPO.csv: Layer,M,N,K) and a run config\n"
             "(TOPO.cfg): embeddings, per block the projections, QK^T and PV per batch element\n"
             "and head, FFN, final layer (docs/interop.md#scale-sim). Run it with\n"
             "  python3 scalesim/scale.py -t TOPO.csv -c TOPO.cfg -p LOGDIR -i gemm\n"
             "Token-wise M is B x N_k at --step K (CTR's kept tokens, input from the trace),\n"
             "else B x N. Attention is dense: SCALE-Sim v2 has no sparse operands.\n",
    .opts = opts,
    .positional = "FILE",
};

/* TOPO.cfg beside TOPO.csv, and the run name TOPO; false when a name is too long. */
static bool derive_names(const char *csv, char *cfg, size_t ncfg, char *run, size_t nrun)
{
    size_t n = strlen(csv);
    if (n > 4 && !strcmp(csv + n - 4, ".csv"))
        n -= 4;
    if (n + 5 > ncfg)
        return false;
    memcpy(cfg, csv, n);
    memcpy(cfg + n, ".cfg", 5);
    const char *base = strrchr(csv, '/');
    base = base ? base + 1 : csv;
    size_t nb = (size_t)(csv + n - base);
    if (!nb || nb + 1 > nrun)
        return false;
    memcpy(run, base, nb);
    run[nb] = 0;
    return true;
}

/* The options of the verb into its export_scalesim_opts ctx; 0 or exit status 2. */
static int parse_opt(void *ctx, int id, const char *v)
{
    struct export_scalesim_opts *o = ctx;
    int64_t n;
    int r, c;
    if (id == OPT_STEP) {
        if (!cli_parse_i64(v, &o->step) || o->step < 0 || o->step > INT32_MAX)
            return cli_usage_error(VERB, "bad --step '%s' (a step number)", v);
    } else if (id == OPT_ARRAY) {
        if (!cli_parse_shape(v, 65536, &r, &c))
            return cli_usage_error(VERB, "bad --array '%s' (RxC, e.g. 32x32)", v);
        o->rows = (uint32_t)r, o->cols = (uint32_t)c;
    } else if (id == OPT_DATAFLOW) {
        if (strcmp(v, "os") && strcmp(v, "ws") && strcmp(v, "is"))
            return cli_usage_error(VERB, "bad --dataflow '%s' (os, ws or is)", v);
        o->dataflow = v;
    } else if (id == OPT_SRAM) {
        if (!cli_parse_i64(v, &n) || n < 1 || n > 1 << 24)
            return cli_usage_error(VERB, "bad --sram-kb '%s' (1..16777216)", v);
        o->sram_kb = (uint32_t)n;
    }
    return 0;
}

/* What cmd_export_dit writes: the options and the figures of the files. */
struct scalesim_run {
    struct export_scalesim_opts o;
    struct export_scalesim_stats st;
};

static int write_scalesim(const struct peer_dit *d, void *ctx, struct errmsg *e)
{
    struct scalesim_run *run = ctx;
    return export_scalesim_write(d, &run->o, &run->st, e);
}

int cmd_export_scalesim(int argc, char **argv);
int cmd_export_scalesim(int argc, char **argv)
{
    struct scalesim_run run = {
        .o = {.step = -1, .rows = 32, .cols = 32, .dataflow = "ws", .sram_kb = 64}};
    const struct export_scalesim_opts *o = &run.o;
    const struct export_scalesim_stats *st = &run.st;
    struct cmd_export_args a;
    int status = cmd_export_parse(&cmd_export_scalesim_spec, argc, argv, "trace",
                                  "need FILE.atr and -o TOPO.csv", parse_opt, &run.o, &a);
    if (status)
        return status < 0 ? 0 : status; /* -1: the help */
    run.o.csv_path = a.out;
    char cfg[4200], name[256];
    if (!derive_names(a.out, cfg, sizeof cfg, name, sizeof name))
        return cli_usage_error(VERB, "bad output name '%s'", a.out);
    run.o.cfg_path = cfg;
    run.o.run_name = name;
    const char *outs[2] = {a.out, cfg};
    if ((status = cmd_export_check_outputs(VERB, a.in, outs, 2)) != 0)
        return status;
    struct peer_dit d;
    if ((status = cmd_export_dit(VERB, a.in, &d, write_scalesim, &run)) != 0)
        return status;
    if (a.json)
        status = cli_print_json(json_pack(
            "{s:s,s:s,s:s,s:I,s:I,s:I,s:I,s:s}", "topology", o->csv_path, "config", cfg, "model",
            d.model, "step", (json_int_t)o->step, "layers", (json_int_t)st->layers, "macs",
            (json_int_t)st->macs, "tokens", (json_int_t)st->tokens, "status", "input"));
    else
        printf("wrote %s and %s: %llu GEMM layers of model '%s', %llu MACs, M = B x %llu "
               "tokens (%s)\n",
               o->csv_path, cfg, (unsigned long long)st->layers, d.model,
               (unsigned long long)st->macs, (unsigned long long)st->tokens,
               o->step >= 0 ? "kept at the step, input" : "dense");
    peer_dit_release(&d);
    return status;
}
