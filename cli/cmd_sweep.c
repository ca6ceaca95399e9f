/*
 * cmd_sweep: `acceltrace sweep GRID.json --hw CONFIG.json [--emit slurm|parallel ...]`:
 * lists the configs a grid expands to, or prints a Slurm array job script or a GNU
 * parallel command line that replays the shards of the sweep and merges them, so a large
 * sweep runs on an existing scheduler (README.md, sweeps).
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/cli_opt.h"
#include "common/err.h"
#include "replay/model_registry.h"
#include "replay/sweep.h"

#define VERB "sweep"

enum { OPT_HW = 1, OPT_MODEL, OPT_EMIT, OPT_TRACE, OPT_ENERGY, OPT_PROG, OPT_SHARDS, OPT_LIST };

static const struct cli_opt opts[] = {
    {OPT_HW, "hw", 0, CLI_ARG_STRING, "CONFIG.json", "base config (its \"model\" picks the model)",
     0},
    {OPT_MODEL, "model", 0, CLI_ARG_STRING, "NAME", "use NAME's defaults when no --hw is given", 0},
    {OPT_LIST, "list", 0, CLI_ARG_NONE, NULL, "print every config of the grid (the default)", 0},
    {OPT_EMIT, "emit", 0, CLI_ARG_STRING, "slurm|parallel", "print a job script instead", 0},
    {OPT_TRACE, "trace", 0, CLI_ARG_STRING, "FILE.atr", "the trace the emitted jobs replay", 0},
    {OPT_SHARDS, "shards", 0, CLI_ARG_INT, "N", "shards of the emitted jobs (1..100000)", 0},
    CLI_OPT_THREADS("shards run at a time (--emit parallel; array limit for slurm)"),
    {OPT_ENERGY, "energy", 0, CLI_ARG_STRING, "E.json", "energy table of the emitted replays", 0},
    CLI_OPT_OUTPUT("DIR", "results folder of the emitted jobs (shards in DIR/shard-I)"),
    {OPT_PROG, "acceltrace", 0, CLI_ARG_STRING, "PATH",
     "program path in the emitted commands (default: this program)", 0},
    {CLI_ID_JSON, "json", 0, CLI_ARG_NONE, NULL,
     "--list as one JSON array: index, config hash, changed values\nand the whole config", 0},
    CLI_OPT_QUIET,
    CLI_OPT_END,
};

const struct cli_spec cmd_sweep_spec = {
    .verb = VERB,
    .usage = "usage: acceltrace sweep GRID.json --hw CONFIG.json [--list]\n"
             "       acceltrace sweep GRID.json --hw CONFIG.json --emit slurm|parallel\n"
             "                  --trace FILE.atr --shards N [-j J] [--energy E.json] -o DIR\n"
             "\n"
             "--list (default) prints every config of the grid: index, config hash, values.\n"
             "--emit parallel prints a GNU parallel command running the N shards (J at a time)\n"
             "and then 'acceltrace merge' into DIR; --emit slurm prints a Slurm array job\n"
             "script that, run with bash, submits itself as an array of N tasks and a merge job\n"
             "depending on it. Shards go to DIR/shard-I.\n",
    .opts = opts,
    .positional = "FILE",
};

/* Single-quotes s for sh into out. */
static void shq(const char *s, char *out, size_t n)
{
    size_t k = 0;
    if (n < 3)
        return;
    out[k++] = '\'';
    for (; *s && k + 6 < n; s++) {
        if (*s == '\'') {
            memcpy(out + k, "'\\''", 4);
            k += 4;
        } else {
            out[k++] = *s;
        }
    }
    out[k++] = '\'';
    out[k] = 0;
}

/* Writes s to stdout escaped for the inside of a double-quoted sh string, so that a path
 * holding $, ` or " reaches the merge job's --wrap script as the user wrote it. */
static void put_dq(const char *s)
{
    for (; *s; s++) {
        if (strchr("$`\"\\", *s))
            putchar('\\');
        putchar(*s);
    }
}

/* --list: every config of the grid with its hash and the values that differ from base;
 * --json: one array with the whole config of each. 0 or the exit status. */
static int list_configs(const struct sweep *sw, const struct hw_config *base, bool json)
{
    struct errmsg e = {0};
    size_t n = sweep_count(sw);
    int rc = 0;
    const struct hw_schema *s = hw_config_schema(base);
    json_t *arr = json ? json_array() : NULL;
    for (size_t i = 0; i < n && !rc; i++) {
        struct hw_config *c;
        if ((rc = sweep_config(sw, i, &c, &e))) {
            rc = cli_fail(rc, errmsg_text(&e));
            break;
        }
        json_t *changed = json ? json_object() : NULL;
        if (!json)
            printf("%zu %s", i, hw_config_hash(c));
        for (size_t k = 0; k < s->n_keys; k++) {
            char a[128], b[128];
            hw_config_value_text(c, k, a, sizeof a);
            hw_config_value_text(base, k, b, sizeof b);
            if (strcmp(a, b) && json)
                json_object_set_new(changed, s->keys[k].key, json_string(a));
            else if (strcmp(a, b))
                printf(" %s=%s", s->keys[k].key, a);
        }
        if (json)
            json_array_append_new(arr,
                                  json_pack("{s:I,s:s,s:o,s:o?}", "index", (json_int_t)i,
                                            "config_hash", hw_config_hash(c), "changed", changed,
                                            "config", json_loads(hw_config_canonical(c), 0, NULL)));
        else
            printf("\n");
        hw_config_free(c);
    }
    if (json && !rc)
        rc = cli_print_json(arr);
    else
        json_decref(arr);
    return rc;
}

/* What the command line of sweep asks for. */
struct sweep_args {
    const char *grid, *hw, *model, *emit, *trace, *out, *energy, *prog;
    int64_t shards, jobs;
    bool json;
};

/* Parses and checks the options into a; -1 to go on, else the exit status. */
static int sweep_args_parse(struct sweep_args *a, int argc, char **argv)
{
    memset(a, 0, sizeof *a);
    struct cli_parser p;
    cli_parser_init(&p, &cmd_sweep_spec, argc, argv);
    for (int id; (id = cli_next(&p)) != CLI_END;) {
        switch (id) {
        case CLI_HELP:
        case CLI_BAD:
            return cli_next_exit(id);
        case OPT_HW:
            a->hw = p.arg;
            break;
        case OPT_MODEL:
            a->model = p.arg;
            break;
        case OPT_EMIT:
            a->emit = p.arg;
            break;
        case OPT_TRACE:
            a->trace = p.arg;
            break;
        case OPT_ENERGY:
            a->energy = p.arg;
            break;
        case OPT_PROG:
            a->prog = p.arg;
            break;
        case OPT_SHARDS:
            if ((a->shards = p.i64) < 1 || a->shards > 100000)
                return cli_usage_error(VERB, "bad shard count '%s'", p.arg);
            break;
        case CLI_ID_THREADS:
            if ((a->jobs = p.i64) < 1 || a->jobs > 4096)
                return cli_usage_error(VERB, "bad job count '%s'", p.arg);
            break;
        case CLI_ID_OUTPUT:
            a->out = p.arg;
            break;
        case OPT_LIST:
            a->emit = NULL;
            break;
        case CLI_ID_JSON:
            a->json = true;
            break;
        case CLI_POSITIONAL:
            if (a->grid)
                return cli_usage_error(VERB, "more than one grid ('%s')", p.arg);
            a->grid = p.arg;
            break;
        default:
            break;
        }
    }
    if (!a->grid)
        return cli_usage_error(VERB, "no grid given");
    if (!a->hw && !a->model)
        return cli_usage_error(VERB, "no base config given (--hw CONFIG.json)");
    if (a->emit && strcmp(a->emit, "slurm") && strcmp(a->emit, "parallel"))
        return cli_usage_error(VERB, "--emit takes slurm or parallel, not '%s'", a->emit);
    if (a->emit && a->json)
        return cli_usage_error(VERB, "--emit prints a script: --json goes with --list");
    if (a->emit && (!a->trace || !a->out || !a->shards))
        return cli_usage_error(VERB, "--emit needs --trace, --shards and -o");
    return -1;
}

int cmd_sweep(int argc, char **argv)
{
    struct sweep_args args;
    int prc = sweep_args_parse(&args, argc, argv);
    if (prc >= 0)
        return prc;
    const char *grid = args.grid, *hw = args.hw, *model = args.model, *emit = args.emit;
    const char *trace = args.trace, *out = args.out, *energy = args.energy, *prog = args.prog;
    int64_t shards = args.shards, jobs = args.jobs;
    bool json = args.json;
    struct errmsg e = {0};
    struct hw_config *base = NULL;
    struct sweep *sw = NULL;
    int rc;
    if (hw) {
        rc = hw_config_load(&base, hw, model ? model_registry_schema(model) : NULL, &e);
    } else {
        const struct hw_schema *s = model_registry_schema(model);
        if (!s)
            return cli_usage_error(VERB, "unknown model '%s'", model);
        rc = hw_config_defaults(&base, s);
    }
    if (rc)
        return cli_fail(rc, errmsg_text(&e));
    if ((rc = sweep_load(&sw, grid, base, &e))) {
        hw_config_free(base);
        return cli_fail(rc, errmsg_text(&e));
    }
    size_t n = sweep_count(sw);
    if (!emit) {
        rc = list_configs(sw, base, json);
        sweep_free(sw);
        hw_config_free(base);
        return rc;
    }
    sweep_free(sw);
    char self[PATH_MAX] = "acceltrace";
    if (!prog) {
        ssize_t k = readlink("/proc/self/exe", self, sizeof self - 1);
        if (k > 0)
            self[k] = 0;
        prog = self;
    }
    char qp[PATH_MAX * 2], qt[PATH_MAX * 2], qh[PATH_MAX * 2 + 16], qg[PATH_MAX * 2],
        qo[PATH_MAX * 2], qe[PATH_MAX * 2 + 16] = "", qm[256] = "";
    shq(prog, qp, sizeof qp);
    shq(trace, qt, sizeof qt);
    shq(grid, qg, sizeof qg);
    shq(out, qo, sizeof qo);
    if (hw) {
        char t[PATH_MAX * 2];
        shq(hw, t, sizeof t);
        snprintf(qh, sizeof qh, "--hw %s", t);
    } else {
        char t[200];
        shq(model, t, sizeof t);
        snprintf(qh, sizeof qh, "--model %s", t);
    }
    if (energy) {
        char t[PATH_MAX * 2];
        shq(energy, t, sizeof t);
        snprintf(qe, sizeof qe, " --energy %s", t);
    }
    (void)qm;
    if (!strcmp(emit, "parallel")) {
        printf("parallel --halt now,fail=1 -j %lld %s replay %s %s --sweep %s%s -j 1 -q "
               "--shard {}/%lld -o %s/shard-{} ::: $(seq 1 %lld) && %s merge",
               (long long)(jobs ? jobs : 2), qp, qt, qh, qg, qe, (long long)shards, qo,
               (long long)shards, qp);
        for (int64_t i = 1; i <= shards; i++)
            printf(" %s/shard-%lld", qo, (long long)i);
        printf(" -o %s\n", qo);
    } else {
        /* Relative paths mean the folder sweep ran in, wherever the script is run from:
         * both jobs get it as --chdir. The merge job's --kill-on-invalid-dep cancels it
         * when a shard fails, instead of leaving it pending for ever. */
        char limit[32] = "", cwd[PATH_MAX], qc[PATH_MAX * 2];
        if (!getcwd(cwd, sizeof cwd)) {
            hw_config_free(base);
            return cli_fail(ERR_IO, "cannot read the working directory for --chdir");
        }
        shq(cwd, qc, sizeof qc);
        if (jobs)
            snprintf(limit, sizeof limit, "%%%lld", (long long)jobs);
        printf("#!/bin/bash\n"
               "# Slurm array job for a sweep of %zu configs in %lld shards.\n"
               "# Run with bash: it submits itself as an array job and a merge job after it.\n"
               "#SBATCH --job-name=acceltrace-sweep\n"
               "#SBATCH --array=1-%lld%s\n"
               "#SBATCH --cpus-per-task=1\n"
               "set -euo pipefail\n"
               "if [ -z \"${SLURM_ARRAY_TASK_ID:-}\" ]; then\n"
               "    jid=$(sbatch --parsable --chdir %s \"$0\")\n"
               "    sbatch --dependency=afterok:\"${jid%%%%;*}\" --kill-on-invalid-dep=yes \\\n"
               "        --chdir %s --job-name=acceltrace-merge --wrap \\\n"
               "        \"",
               n, (long long)shards, (long long)shards, limit, qc, qc);
        put_dq(qp);
        fputs(" merge", stdout);
        for (int64_t i = 1; i <= shards; i++) {
            putchar(' ');
            put_dq(qo);
            printf("/shard-%lld", (long long)i);
        }
        fputs(" -o ", stdout);
        put_dq(qo);
        printf(
            "\"\n"
            "    exit 0\n"
            "fi\n"
            "exec %s replay %s %s --sweep %s%s -j \"${SLURM_CPUS_PER_TASK:-1}\" -q \\\n"
            "    --shard \"${SLURM_ARRAY_TASK_ID}/%lld\" -o %s/shard-\"${SLURM_ARRAY_TASK_ID}\"\n",
            qp, qt, qh, qg, qe, (long long)shards, qo);
    }
    hw_config_free(base);
    return 0;
}
