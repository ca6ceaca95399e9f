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
#include "common/io.h"
#include "common/progress.h"

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

int cmd_export_scalesim(int argc, char **argv);
int cmd_export_scalesim(int argc, char **argv)
{
    const char *path = NULL;
    struct export_scalesim_opts o = {
        .step = -1, .rows = 32, .cols = 32, .dataflow = "ws", .sram_kb = 64};
    bool json = false;
    int64_t v;
    int r, c;
    struct cli_parser p;
    cli_parser_init(&p, &cmd_export_scalesim_spec, argc, argv);
    for (int id; (id = cli_next(&p)) != CLI_END;) {
        if (id == CLI_HELP || id == CLI_BAD)
            return cli_next_exit(id);
        if (id == OPT_STEP) {
            if (!cli_parse_i64(p.arg, &o.step) || o.step < 0 || o.step > INT32_MAX)
                return cli_usage_error(VERB, "bad --step '%s' (a step number)", p.arg);
        } else if (id == OPT_ARRAY) {
            if (!cli_parse_shape(p.arg, 65536, &r, &c))
                return cli_usage_error(VERB, "bad --array '%s' (RxC, e.g. 32x32)", p.arg);
            o.rows = (uint32_t)r, o.cols = (uint32_t)c;
        } else if (id == OPT_DATAFLOW) {
            if (strcmp(p.arg, "os") && strcmp(p.arg, "ws") && strcmp(p.arg, "is"))
                return cli_usage_error(VERB, "bad --dataflow '%s' (os, ws or is)", p.arg);
            o.dataflow = p.arg;
        } else if (id == OPT_SRAM) {
            if (!cli_parse_i64(p.arg, &v) || v < 1 || v > 1 << 24)
                return cli_usage_error(VERB, "bad --sram-kb '%s' (1..16777216)", p.arg);
            o.sram_kb = (uint32_t)v;
        } else if (id == CLI_ID_OUTPUT) {
            o.csv_path = p.arg;
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
    if (!path || !o.csv_path)
        return cli_usage_error(VERB, "need FILE.atr and -o TOPO.csv");
    char cfg[4200], run[256];
    if (!derive_names(o.csv_path, cfg, sizeof cfg, run, sizeof run))
        return cli_usage_error(VERB, "bad output name '%s'", o.csv_path);
    o.cfg_path = cfg;
    o.run_name = run;
    const char *ins[1] = {path}, *outs[2] = {o.csv_path, cfg};
    struct errmsg em = {0};
    if (io_check_distinct(ins, 1, outs, 2, &em))
        return cli_usage_error(VERB, "%s", errmsg_text(&em));

    struct peer_dit d;
    struct export_scalesim_stats st;
    int rc = peer_dit_read(path, &d, &em);
    if (!rc)
        rc = export_scalesim_write(&d, &o, &st, &em);
    if (rc) {
        int status = rc == ERR_USAGE ? cli_usage_error(VERB, "%s ('%s')", errmsg_text(&em), path)
                                     : cli_fail(rc, errmsg_text(&em));
        peer_dit_release(&d);
        return status;
    }
    int status = 0;
    if (json)
        status = cli_print_json(json_pack(
            "{s:s,s:s,s:s,s:I,s:I,s:I,s:I,s:s}", "topology", o.csv_path, "config", cfg, "model",
            d.model, "step", (json_int_t)o.step, "layers", (json_int_t)st.layers, "macs",
            (json_int_t)st.macs, "tokens", (json_int_t)st.tokens, "status", "input"));
    else
        printf("wrote %s and %s: %llu GEMM layers of model '%s', %llu MACs, M = B x %llu "
               "tokens (%s)\n",
               o.csv_path, cfg, (unsigned long long)st.layers, d.model, (unsigned long long)st.macs,
               (unsigned long long)st.tokens, o.step >= 0 ? "kept at the step, input" : "dense");
    peer_dit_release(&d);
    return status;
}
