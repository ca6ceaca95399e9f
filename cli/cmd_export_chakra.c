/*
 * cmd_export_chakra: `acceltrace export chakra FILE.atr [--mode baseline|ctr] [--steps A-B]
 * -o FILE.et`: the disc model's ops with the trace's densities as a Chakra execution trace
 * (analysis/export_chakra; docs/interop.md#chakra).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/export_chakra.h"
#include "cli/cli.h"
#include "cli/cli_opt.h"
#include "common/io.h"
#include "common/progress.h"

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

static bool parse_steps(const char *v, uint32_t *lo_out, uint32_t *hi_out)
{
    char *end;
    errno = 0;
    unsigned long lo = strtoul(v, &end, 10), hi = lo;
    bool ok = end != v && !errno && v[0] != '-';
    if (ok && *end == '-') {
        const char *b = end + 1;
        hi = strtoul(b, &end, 10);
        ok = end != b && !errno && *b != '-';
    }
    if (!ok || *end || lo > hi || hi > UINT32_MAX)
        return false;
    *lo_out = (uint32_t)lo;
    *hi_out = (uint32_t)hi;
    return true;
}

int cmd_export_chakra(int argc, char **argv);
int cmd_export_chakra(int argc, char **argv)
{
    const char *path = NULL;
    struct export_chakra_opts o = {.mode = DISC_MODE_CTR, .step_lo = 0, .step_hi = UINT32_MAX};
    bool json = false;
    struct cli_parser p;
    cli_parser_init(&p, &cmd_export_chakra_spec, argc, argv);
    for (int id; (id = cli_next(&p)) != CLI_END;) {
        if (id == CLI_HELP || id == CLI_BAD)
            return cli_next_exit(id);
        if (id == OPT_MODE) {
            if (!strcmp(p.arg, "baseline"))
                o.mode = DISC_MODE_BASELINE;
            else if (!strcmp(p.arg, "ctr"))
                o.mode = DISC_MODE_CTR;
            else
                return cli_usage_error(VERB, "bad --mode '%s' (baseline or ctr)", p.arg);
        } else if (id == OPT_STEPS) {
            if (!parse_steps(p.arg, &o.step_lo, &o.step_hi))
                return cli_usage_error(VERB, "bad --steps '%s' (A-B or A, A <= B)", p.arg);
        } else if (id == CLI_ID_OUTPUT) {
            o.out_path = p.arg;
        } else if (id == CLI_ID_JSON) {
            json = true;
        } else if (id == CLI_ID_QUIET) {
            progress_global_quiet = true;
        } else if (id == CLI_ID_ALLOW_PARTIAL) {
            cli_trace_option("--allow-partial");
        } else if (id == CLI_POSITIONAL) {
            if (path)
                return cli_usage_error(VERB, "more than one trace ('%s')", p.arg);
            path = p.arg;
        }
    }
    if (!path || !o.out_path)
        return cli_usage_error(VERB, "need FILE.atr and -o FILE.et");
    const char *ins[1] = {path}, *outs[1] = {o.out_path};
    struct errmsg em = {0};
    if (io_check_distinct(ins, 1, outs, 1, &em))
        return cli_usage_error(VERB, "%s", errmsg_text(&em));

    struct peer_dit d;
    struct export_chakra_stats st;
    int rc = peer_dit_read(path, &d, &em);
    if (!rc)
        rc = export_chakra_write(&d, &o, &st, &em);
    if (rc) {
        int status = rc == ERR_USAGE ? cli_usage_error(VERB, "%s ('%s')", errmsg_text(&em), path)
                                     : cli_fail(rc, errmsg_text(&em));
        peer_dit_release(&d);
        return status;
    }
    int status = 0;
    if (json)
        status = cli_print_json(json_pack("{s:s,s:s,s:s,s:I,s:I,s:f,s:I}", "file", o.out_path,
                                          "model", d.model, "mode", disc_mode_name(o.mode), "nodes",
                                          (json_int_t)st.nodes, "density_nodes",
                                          (json_int_t)st.density_nodes, "predicted_s", st.seconds,
                                          "bytes", (json_int_t)st.bytes));
    else
        printf("wrote %s: %llu bytes, %llu nodes of model '%s' mode %s (%llu with mask "
               "densities), %.6g s predicted\n",
               o.out_path, (unsigned long long)st.bytes, (unsigned long long)st.nodes, d.model,
               disc_mode_name(o.mode), (unsigned long long)st.density_nodes, st.seconds);
    peer_dit_release(&d);
    return status;
}
