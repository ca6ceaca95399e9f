/*
 * cmd_export_chakra: `acceltrace export chakra FILE.atr [--mode baseline|ctr] [--steps A-B]
 * -o FILE.et`: the disc model's ops with the trace's densities as a Chakra execution trace
 * (analysis/export_chakra; docs/interop.md#chakra).
 */
#include <stdio.h>
#include <string.h>

#include "analysis/export_chakra.h"
#include "cli/cli.h"
#include "cli/cli_opt.h"
#include "cli/cmd_export.h"

#define VERB "export chakra"

enum { OPT_MODE = 1, OPT_STEPS };

static const struct cli_opt opts[] = {
    CLI_OPT_OUTPUT("FILE.et", "Chakra execution trace written (required)"),
    {OPT_MODE, "mode", 0, CLI_ARG_STRING, "baseline|ctr",
     "disc model mode of the ops: baseline (every token)\nor ctr (the kept tokens of each "
     "step; default)",
     0},
    {OPT_STEPS, "steps", 0, CLI_ARG_STRING, "A-B", "only sampler steps A..B (all)", 0},
    CLI_OPT_QUIET,
    {CLI_ID_JSON, "json", 0, CLI_ARG_NONE, NULL,
     "one JSON object on stdout: file, nodes, predicted seconds", 0},
    CLI_OPT_ALLOW_PARTIAL,
    CLI_OPT_END,
};

const struct cli_spec cmd_export_chakra_spec = {
    .verb = VERB,
    .usage = "usage: acceltrace export chakra FILE.atr [--mode baseline|ctr] [--steps A-B] "
             "-o FILE.et\n"
             "\n"
             "Writes the op sequence the disc replay model runs for each sampler step of a disc\n"
             "trace (shipped DiSC defaults, configs/disc-a100-matched.json) as a Chakra\n"
             "execution trace: one COMP_NODE per op, each depending on the one before, with\n"
             "predicted duration, num_ops and tensor_size (HBM bytes), and as inputs from the\n"
             "trace the step's kept-token fraction and, on self-attention nodes, the measured\n"
             "mask density per head (docs/interop.md#chakra).\n",
    .opts = opts,
    .positional = "FILE",
};

/* The options of the verb into its export_chakra_opts ctx; 0 or exit status 2. */
static int parse_opt(void *ctx, int id, const char *v)
{
    struct export_chakra_opts *o = ctx;
    if (id == OPT_MODE) {
        if (!strcmp(v, "baseline"))
            o->mode = DISC_MODE_BASELINE;
        else if (!strcmp(v, "ctr"))
            o->mode = DISC_MODE_CTR;
        else
            return cli_usage_error(VERB, "bad --mode '%s' (baseline or ctr)", v);
    } else if (id == OPT_STEPS) {
        if (!cmd_export_parse_steps(v, &o->step_lo, &o->step_hi))
            return cli_usage_error(VERB, "bad --steps '%s' (A-B or A, A <= B)", v);
    }
    return 0;
}

/* What cmd_export_dit writes: the options and the figures of the file. */
struct chakra_run {
    struct export_chakra_opts o;
    struct export_chakra_stats st;
};

static int write_chakra(const struct peer_dit *d, void *ctx, struct errmsg *e)
{
    struct chakra_run *run = ctx;
    return export_chakra_write(d, &run->o, &run->st, e);
}

int cmd_export_chakra(int argc, char **argv);
int cmd_export_chakra(int argc, char **argv)
{
    struct chakra_run run = {.o = {.mode = DISC_MODE_CTR, .step_lo = 0, .step_hi = UINT32_MAX}};
    const struct export_chakra_opts *o = &run.o;
    const struct export_chakra_stats *st = &run.st;
    struct cmd_export_args a;
    int status = cmd_export_parse(&cmd_export_chakra_spec, argc, argv, "trace",
                                  "need FILE.atr and -o FILE.et", parse_opt, &run.o, &a);
    if (status)
        return status < 0 ? 0 : status; /* -1: the help */
    run.o.out_path = a.out;
    const char *outs[1] = {a.out};
    if ((status = cmd_export_check_outputs(VERB, a.in, outs, 1)) != 0)
        return status;
    struct peer_dit d;
    if ((status = cmd_export_dit(VERB, a.in, &d, write_chakra, &run)) != 0)
        return status;
    if (a.json)
        status = cli_print_json(json_pack("{s:s,s:s,s:s,s:I,s:I,s:f,s:I}", "file", o->out_path,
                                          "model", d.model, "mode", disc_mode_name(o->mode),
                                          "nodes", (json_int_t)st->nodes, "density_nodes",
                                          (json_int_t)st->density_nodes, "predicted_s", st->seconds,
                                          "bytes", (json_int_t)st->bytes));
    else
        printf("wrote %s: %llu bytes, %llu nodes of model '%s' mode %s (%llu with mask "
               "densities), %.6g s predicted\n",
               o->out_path, (unsigned long long)st->bytes, (unsigned long long)st->nodes, d.model,
               disc_mode_name(o->mode), (unsigned long long)st->density_nodes, st->seconds);
    peer_dit_release(&d);
    return status;
}
