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
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/cli_opt.h"
#include "cli/cli_set.h"
#include "common/err.h"
#include "replay/engine.h"
#include "replay/model_registry.h"
#include "replay/sweep.h"

#define VERB "sweep"

/*
 * The Slurm job's memory for a replay whose --mem-limit is L: L + L/4 + 256 MiB. The
 * limit bounds replay's own estimate of its model instances and buffers; the margin covers
 * what the estimate leaves out (allocator slack, libraries, the trace reader's windows)
 * so the job is not killed at the limit it was given (README.md, "Sweeps on a cluster").
 */
#define SLURM_MEM_FIXED_BYTES ((uint64_t)256 << 20)

enum {
    OPT_HW = 1,
    OPT_MODEL,
    OPT_EMIT,
    OPT_TRACE,
    OPT_ENERGY,
    OPT_PROG,
    OPT_SHARDS,
    OPT_LIST,
    OPT_SET,
    OPT_MAX_RUNNING,
    OPT_SBATCH,
    OPT_ENV_SETUP,
    OPT_JOB_OUTPUT,
    OPT_MEM,
};

static const struct cli_opt opts[] = {
    {OPT_HW, "hw", 0, CLI_ARG_STRING, "CONFIG.json", "base config (its \"model\" picks the model)",
     0},
    {OPT_MODEL, "model", 0, CLI_ARG_STRING, "NAME", "use NAME's defaults when no --hw is given", 0},
    CLI_OPT_SET(OPT_SET),
    {OPT_LIST, "list", 0, CLI_ARG_NONE, NULL, "print every config of the grid (the default)", 0},
    {OPT_EMIT, "emit", 0, CLI_ARG_STRING, "slurm|parallel", "print a job script instead", 0},
    {OPT_TRACE, "trace", 0, CLI_ARG_STRING, "FILE.atr", "the trace the emitted jobs replay", 0},
    {OPT_SHARDS, "shards", 0, CLI_ARG_INT, "N", "shards of the emitted jobs (1..100000)", 0},
    {OPT_MAX_RUNNING, "max-running", 0, CLI_ARG_INT, "N",
     "shards running at once: the Slurm array's %N limit,\nGNU parallel's -j (default: no "
     "limit; parallel 2)",
     0},
    {OPT_MAX_RUNNING, "threads", 'j', CLI_ARG_INT, "N", "--max-running N", CLI_OPT_DEPRECATED},
    {OPT_ENERGY, "energy", 0, CLI_ARG_STRING, "E.json", "energy table of the emitted replays", 0},
    CLI_OPT_MEM_LIMIT("--mem-limit of each emitted replay (default: replay's,\n8GiB; or derived "
                      "from --mem)"),
    {OPT_MEM, "mem", 0, CLI_ARG_SIZE, "SIZE",
     "slurm: the job's memory (default: --mem-limit + 25% +\n256MiB)", 0},
    {OPT_SBATCH, "sbatch", 0, CLI_ARG_STRING, "'ARGS'",
     "slurm: sbatch options, one #SBATCH line each, e.g.\n'--time=01:00:00 --account=X "
     "--partition=P'",
     CLI_OPT_REPEATABLE},
    {OPT_ENV_SETUP, "env-setup", 0, CLI_ARG_STRING, "FILE|CMD",
     "slurm: sourced (a file) or run (a command line) in\nevery job before acceltrace", 0},
    {OPT_JOB_OUTPUT, "job-output", 0, CLI_ARG_STRING, "PATTERN",
     "slurm: the jobs' log files (sbatch --output; %A array\njob, %a task; default "
     "slurm-%A_%a.out)",
     0},
    CLI_OPT_OUTPUT("DIR", "results folder of the emitted jobs (shards in DIR/shard-I)"),
    {OPT_PROG, "acceltrace", 0, CLI_ARG_STRING, "PATH",
     "program path in the emitted commands (default: this program)", 0},
    {CLI_ID_JSON, "json", 0, CLI_ARG_NONE, NULL,
     "--list as one JSON array: index, config hash, name,\nchanged values and the whole config", 0},
    CLI_OPT_QUIET,
    CLI_OPT_END,
};

const struct cli_spec cmd_sweep_spec = {
    .verb = VERB,
    .usage = "usage: acceltrace sweep GRID.json --hw CONFIG.json [--set KEY=VALUE]... [--list]\n"
             "       acceltrace sweep GRID.json --hw CONFIG.json --emit slurm|parallel\n"
             "                  --trace FILE.atr --shards N [--max-running J] [--energy E.json]\n"
             "                  [--mem-limit SIZE] [--mem SIZE] [--sbatch 'ARGS']...\n"
             "                  [--env-setup FILE|CMD] [--job-output PATTERN] -o DIR\n"
             "\n"
             "--list (default) prints every config of the grid: index, config hash, row name\n"
             "(when the grid names its rows), values.\n"
             "--emit parallel prints a GNU parallel command running the N shards (J at a time)\n"
             "and then 'acceltrace merge' into DIR; --emit slurm prints a Slurm array job\n"
             "script that, run with bash, submits itself as an array of N tasks and a merge job\n"
             "depending on it. Shards go to DIR/shard-I. Slurm: each task asks for --mem SIZE\n"
             "(default: the replay's --mem-limit plus 25% plus 256MiB; given --mem alone, the\n"
             "replays get --mem-limit (SIZE - 256MiB) / 1.25); every --sbatch option becomes an\n"
             "#SBATCH line of the array and an option of the merge job (but --mem*,\n"
             "--cpus-per-task, --output and --error, which are the array's); --env-setup runs\n"
             "before acceltrace in every job. -j, the old spelling of --max-running, still\n"
             "works with a warning.\n",
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

/* --list: every config of the grid with its hash, its row name (named grids) and the
 * values that differ from base; --json: one array with the whole config of each. 0 or the
 * exit status. */
static int list_configs(const struct sweep *sw, const struct hw_config *base, bool json)
{
    struct errmsg e = {0};
    size_t n = sweep_count(sw);
    int rc = 0;
    bool named = sweep_has_names(sw);
    const struct hw_schema *s = hw_config_schema(base);
    json_t *arr = json ? json_array() : NULL;
    for (size_t i = 0; i < n && !rc; i++) {
        struct hw_config *c;
        char name[SWEEP_NAME_TOTAL_MAX + 1] = "";
        if ((rc = sweep_config(sw, i, &c, &e))) {
            rc = cli_fail(rc, errmsg_text(&e));
            break;
        }
        if (named)
            sweep_name(sw, i, name, sizeof name);
        json_t *changed = json ? json_object() : NULL;
        if (!json)
            printf("%zu %s%s%s%s", i, hw_config_hash(c), named ? " name='" : "", name,
                   named ? "'" : "");
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
            json_array_append_new(arr, json_pack("{s:I,s:s,s:s*,s:o,s:o?}", "index", (json_int_t)i,
                                                 "config_hash", hw_config_hash(c), "name",
                                                 named ? name : NULL, "changed", changed, "config",
                                                 json_loads(hw_config_canonical(c), 0, NULL)));
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

#define SBATCH_MAX 64

/* What the command line of sweep asks for. */
struct sweep_args {
    const char *grid, *hw, *model, *emit, *trace, *out, *energy, *prog;
    const char *env_setup, *job_output, *mem_limit_text, *mem_text;
    int64_t shards, jobs;
    uint64_t mem_limit, mem; /* bytes; 0 when not given */
    bool json;
    struct cli_sets sets;
    char *sbatch[SBATCH_MAX]; /* the words of every --sbatch (heap), in order */
    size_t n_sbatch;
    bool mem_per_cpu; /* an --sbatch --mem-per-cpu: no --mem line then */
};

static void sweep_args_release(struct sweep_args *a)
{
    for (size_t i = 0; i < a->n_sbatch; i++)
        free(a->sbatch[i]);
    a->n_sbatch = 0;
}

/* True when sbatch word w is option `name` (as --name, --name=V) or its letter (-x, -xV). */
static bool sbatch_is(const char *w, const char *name, char letter)
{
    size_t l = strlen(name);
    if (!strncmp(w, "--", 2) && !strncmp(w + 2, name, l) && (w[2 + l] == 0 || w[2 + l] == '='))
        return true;
    return letter && w[0] == '-' && w[1] == letter;
}

/* The sbatch options the script sets itself, with what to use instead. */
static const struct {
    const char *name;
    char letter;
    const char *instead;
} sbatch_owned[] = {
    {"array", 'a', "--shards N and --max-running J"},
    {"dependency", 'd', "nothing: the merge job's dependency is the script's"},
    {"chdir", 'D', "nothing: the jobs run in the folder sweep ran in"},
    {"wrap", 0, "nothing: the script is the job"},
    {"parsable", 0, "nothing: the script reads the job id itself"},
    {"mem", 0, "--mem SIZE (the replays' --mem-limit follows it)"},
    {"output", 'o', "--job-output PATTERN"},
};

/* Splits one --sbatch ARGS at blanks into a->sbatch; exit status 2 after a message on a
 * word that is not an option or that the script owns, else 0. */
static int sbatch_add(struct sweep_args *a, const char *args)
{
    const char *p = args;
    bool any = false;
    while (*p) {
        while (*p == ' ' || *p == '\t')
            p++;
        size_t l = strcspn(p, " \t");
        if (!l)
            break;
        char w[512];
        if (l >= sizeof w)
            return cli_usage_error(VERB, "--sbatch word too long ('%.40s...')", p);
        memcpy(w, p, l);
        w[l] = 0;
        p += l;
        any = true;
        if (w[0] != '-' || !w[1] || strpbrk(w, "\n\r"))
            return cli_usage_error(VERB,
                                   "--sbatch takes sbatch options such as '--time=01:00:00 "
                                   "--account=X', not '%s' (write options as --name=value)",
                                   w);
        for (size_t k = 0; k < sizeof sbatch_owned / sizeof sbatch_owned[0]; k++)
            if (sbatch_is(w, sbatch_owned[k].name, sbatch_owned[k].letter))
                return cli_usage_error(VERB, "--sbatch '%s': the script sets --%s; use %s", w,
                                       sbatch_owned[k].name, sbatch_owned[k].instead);
        if (a->n_sbatch == SBATCH_MAX)
            return cli_usage_error(VERB, "more than %d --sbatch options", SBATCH_MAX);
        if (!(a->sbatch[a->n_sbatch] = strdup(w)))
            return cli_fail(ERR_NOMEM, "out of memory");
        a->n_sbatch++;
        a->mem_per_cpu =
            a->mem_per_cpu || sbatch_is(w, "mem-per-cpu", 0) || sbatch_is(w, "mem-per-gpu", 0);
    }
    if (!any)
        return cli_usage_error(VERB, "--sbatch '%s' holds no option", args);
    return 0;
}

/* The checks of the options that go with --emit; -1 to go on, else the exit status. */
static int sweep_args_check(struct sweep_args *a)
{
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
    bool slurm = a->emit && !strcmp(a->emit, "slurm");
    const char *only_slurm = a->n_sbatch     ? "--sbatch"
                             : a->env_setup  ? "--env-setup"
                             : a->job_output ? "--job-output"
                             : a->mem        ? "--mem"
                                             : NULL;
    if (only_slurm && !slurm)
        return cli_usage_error(VERB, "%s goes with --emit slurm", only_slurm);
    if ((a->mem_limit || a->jobs) && !a->emit)
        return cli_usage_error(VERB, "%s goes with --emit",
                               a->mem_limit ? "--mem-limit" : "--max-running");
    if (a->mem && a->mem_per_cpu)
        return cli_usage_error(VERB, "--mem and an --sbatch --mem-per-cpu/gpu exclude each other");
    if (a->mem && !a->mem_limit && a->mem <= SLURM_MEM_FIXED_BYTES + ((uint64_t)1 << 20))
        return cli_usage_error(VERB,
                               "--mem %s leaves the replays no memory: the job keeps 256MiB "
                               "beside their --mem-limit (give more, or --mem-limit too)",
                               a->mem_text);
    const char *paths[] = {a->grid,   a->hw,   a->model,     a->trace,     a->out,
                           a->energy, a->prog, a->env_setup, a->job_output};
    for (size_t i = 0; slurm && i < sizeof paths / sizeof paths[0]; i++)
        if (paths[i] && strpbrk(paths[i], "\n\r"))
            return cli_usage_error(VERB, "a line break in '%s' cannot go into a job script",
                                   paths[i]);
    for (size_t i = 0; slurm && i < a->sets.n; i++)
        if (strpbrk(a->sets.kv[i], "\n\r"))
            return cli_usage_error(VERB, "a line break in --set cannot go into a job script");
    return -1;
}

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
        case OPT_SET:
            if (cli_sets_add(&a->sets, VERB, p.arg))
                return 2;
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
        case OPT_MAX_RUNNING:
            if ((a->jobs = p.i64) < 1 || a->jobs > 100000)
                return cli_usage_error(VERB, "bad --max-running '%s' (1..100000)", p.arg);
            break;
        case CLI_ID_MEM_LIMIT:
            if (!(a->mem_limit = p.u64) || a->mem_limit > ((uint64_t)1 << 50))
                return cli_usage_error(VERB, "bad --mem-limit '%s' (a size like 8GiB)", p.arg);
            a->mem_limit_text = p.arg;
            break;
        case OPT_MEM:
            if (!(a->mem = p.u64) || a->mem > ((uint64_t)1 << 52))
                return cli_usage_error(VERB, "bad --mem '%s' (a size like 16GiB)", p.arg);
            a->mem_text = p.arg;
            break;
        case OPT_SBATCH:
            if (sbatch_add(a, p.arg))
                return 2;
            break;
        case OPT_ENV_SETUP:
            if (!*p.arg)
                return cli_usage_error(VERB, "--env-setup wants a file or a command line");
            a->env_setup = p.arg;
            break;
        case OPT_JOB_OUTPUT:
            if (!*p.arg)
                return cli_usage_error(VERB, "--job-output wants a file name pattern");
            a->job_output = p.arg;
            break;
        case OPT_LIST:
            a->emit = NULL;
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
    a->out = p.common.output;
    a->json = p.common.json;
    return sweep_args_check(a);
}

/* The quoted pieces of the emitted command lines. */
struct emit_text {
    char prog[PATH_MAX * 2], trace[PATH_MAX * 2], base[PATH_MAX * 2 + 16], grid[PATH_MAX * 2];
    char out[PATH_MAX * 2], energy[PATH_MAX * 2 + 16], sets[8192], limit[64];
};

static int emit_text_init(struct emit_text *t, const struct sweep_args *a, const char *prog)
{
    char q[PATH_MAX * 2];
    memset(t, 0, sizeof *t);
    shq(prog, t->prog, sizeof t->prog);
    shq(a->trace, t->trace, sizeof t->trace);
    shq(a->grid, t->grid, sizeof t->grid);
    shq(a->out, t->out, sizeof t->out);
    shq(a->hw ? a->hw : a->model, q, sizeof q);
    snprintf(t->base, sizeof t->base, "%s %s", a->hw ? "--hw" : "--model", q);
    if (a->energy) {
        shq(a->energy, q, sizeof q);
        snprintf(t->energy, sizeof t->energy, " --energy %s", q);
    }
    if (!cli_sets_shell(&a->sets, t->sets, sizeof t->sets))
        return cli_usage_error(VERB, "the --set options are too long for a job script");
    return 0;
}

/* The MiB of n bytes, rounded up. */
static unsigned long long mib_up(uint64_t n)
{
    return (unsigned long long)((n + ((uint64_t)1 << 20) - 1) >> 20);
}

/*
 * The job's memory and the replays' --mem-limit (SLURM_MEM_FIXED_BYTES): --mem given, the
 * limit is what fits in it (unless given too); otherwise the job gets the limit (given, or
 * replay's default) plus the margin. *mem 0: no --mem line (--sbatch --mem-per-cpu).
 */
static void slurm_memory(const struct sweep_args *a, uint64_t *mem, uint64_t *limit)
{
    *limit = a->mem_limit;
    if (a->mem) {
        *mem = a->mem;
        if (!*limit)
            *limit = (a->mem - SLURM_MEM_FIXED_BYTES) / 5 * 4;
        return;
    }
    uint64_t l = a->mem_limit ? a->mem_limit : ENGINE_DEFAULT_MEM_LIMIT;
    *mem = a->mem_per_cpu ? 0 : l + l / 4 + SLURM_MEM_FIXED_BYTES;
}

/* The --env-setup lines: "source 'FILE'" for an existing file, else the command as given. */
static void env_setup_line(const char *env, FILE *f)
{
    struct stat sb;
    if (!env)
        return;
    /* set -u off around it: setup scripts (module systems) read unset variables */
    if (!stat(env, &sb) && S_ISREG(sb.st_mode)) {
        char q[PATH_MAX * 2];
        shq(env, q, sizeof q);
        fprintf(f, "set +u\nsource %s\nset -u\n", q);
    } else {
        fprintf(f, "set +u\n%s\nset -u\n", env);
    }
}

/* The merge job's --output: the array's pattern with %a (no task there) as "merge". */
static void merge_output(const char *pattern, char *out, size_t n)
{
    size_t k = 0;
    for (const char *p = pattern; *p && k + 8 < n; p++) {
        if (p[0] == '%' && p[1] == 'a') {
            memcpy(out + k, "merge", 5);
            k += 5;
            p++;
        } else {
            out[k++] = *p;
        }
    }
    out[k] = 0;
}

/* True when the merge job takes sbatch word w too (not the array's own resources). */
static bool merge_takes(const char *w)
{
    return !sbatch_is(w, "mem-per-cpu", 0) && !sbatch_is(w, "mem-per-gpu", 0) &&
           !sbatch_is(w, "cpus-per-task", 'c') && !sbatch_is(w, "error", 'e');
}

/*
 * --emit slurm: a bash script that, run outside Slurm, submits itself as an array of one
 * task per shard and a merge job after it (a script on sbatch's stdin, so it runs under
 * bash with the --env-setup line too); run as a task, it replays its shard. Relative paths
 * mean the folder sweep ran in, wherever the script is run from: both jobs get it as
 * --chdir. The merge job's --kill-on-invalid-dep cancels it when a shard fails, instead of
 * leaving it pending for ever.
 */
static int emit_slurm(const struct sweep_args *a, const struct emit_text *t, size_t n)
{
    char cwd[PATH_MAX], qc[PATH_MAX * 2], q[PATH_MAX * 2];
    if (!getcwd(cwd, sizeof cwd))
        return cli_fail(ERR_IO, "cannot read the working directory for --chdir");
    shq(cwd, qc, sizeof qc);
    uint64_t mem, limit;
    slurm_memory(a, &mem, &limit);
    char limit_arg[PATH_MAX * 2 + 16] = "";
    if (a->mem_limit) {
        shq(a->mem_limit_text, q, sizeof q);
        snprintf(limit_arg, sizeof limit_arg, " --mem-limit %s", q);
    } else if (a->mem) {
        snprintf(limit_arg, sizeof limit_arg, " --mem-limit %lluMiB",
                 (unsigned long long)(limit >> 20));
    }
    bool own_cpus = false;
    for (size_t i = 0; i < a->n_sbatch; i++)
        own_cpus = own_cpus || sbatch_is(a->sbatch[i], "cpus-per-task", 'c');
    printf("#!/bin/bash\n"
           "# Slurm array job for a sweep of %zu configs in %lld shards.\n"
           "# Run with bash: it submits itself as an array job and a merge job after it.\n",
           n, (long long)a->shards);
    if (mem)
        printf("# --mem: %s; the replays' --mem-limit is %llu MiB\n",
               a->mem ? "given" : "the replays' --mem-limit + 25% + 256MiB",
               (unsigned long long)((limit ? limit : ENGINE_DEFAULT_MEM_LIMIT) >> 20));
    printf("#SBATCH --job-name=acceltrace-sweep\n#SBATCH --array=1-%lld", (long long)a->shards);
    if (a->jobs)
        printf("%%%lld", (long long)a->jobs);
    printf("\n");
    if (!own_cpus)
        printf("#SBATCH --cpus-per-task=1\n");
    if (mem)
        printf("#SBATCH --mem=%lluM\n", mib_up(mem));
    if (a->job_output)
        printf("#SBATCH --output=%s\n", a->job_output);
    for (size_t i = 0; i < a->n_sbatch; i++)
        printf("#SBATCH %s\n", a->sbatch[i]);
    printf("set -euo pipefail\n"
           "if [ -z \"${SLURM_ARRAY_TASK_ID:-}\" ]; then\n");
    if (a->job_output && strchr(a->job_output, '/')) { /* Slurm makes no folders */
        char dir[PATH_MAX];
        snprintf(dir, sizeof dir, "%s", a->job_output);
        *strrchr(dir, '/') = 0;
        shq(dir[0] ? dir : "/", q, sizeof q);
        if (!strchr(dir, '%'))
            printf("    (cd %s && mkdir -p %s)\n", qc, q);
    }
    printf("    jid=$(sbatch --parsable --chdir %s \"$0\")\n"
           "    sbatch --dependency=afterok:\"${jid%%%%;*}\" --kill-on-invalid-dep=yes \\\n"
           "        --chdir %s --job-name=acceltrace-merge",
           qc, qc);
    for (size_t i = 0; i < a->n_sbatch; i++)
        if (merge_takes(a->sbatch[i])) {
            shq(a->sbatch[i], q, sizeof q);
            printf(" %s", q);
        }
    if (a->job_output) {
        char mo[PATH_MAX];
        merge_output(a->job_output, mo, sizeof mo);
        shq(mo, q, sizeof q);
        printf(" --output=%s", q);
    }
    printf(" <<'ACCELTRACE_MERGE'\n#!/bin/bash\nset -euo pipefail\n");
    env_setup_line(a->env_setup, stdout);
    printf("exec %s merge", t->prog);
    for (int64_t i = 1; i <= a->shards; i++)
        printf(" %s/shard-%lld", t->out, (long long)i);
    printf(" -o %s\nACCELTRACE_MERGE\n    exit 0\nfi\n", t->out);
    env_setup_line(a->env_setup, stdout);
    printf("exec %s replay %s %s%s --sweep %s%s%s -j \"${SLURM_CPUS_PER_TASK:-1}\" -q \\\n"
           "    --shard \"${SLURM_ARRAY_TASK_ID}/%lld\" -o %s/shard-\"${SLURM_ARRAY_TASK_ID}\"\n",
           t->prog, t->trace, t->base, t->sets, t->grid, t->energy, limit_arg, (long long)a->shards,
           t->out);
    return 0;
}

/* --emit parallel: one GNU parallel command line for the shards, then the merge. */
static void emit_parallel(const struct sweep_args *a, const struct emit_text *t)
{
    char limit_arg[PATH_MAX + 16] = "", q[PATH_MAX];
    if (a->mem_limit) {
        shq(a->mem_limit_text, q, sizeof q);
        snprintf(limit_arg, sizeof limit_arg, " --mem-limit %s", q);
    }
    printf("parallel --halt now,fail=1 -j %lld %s replay %s %s%s --sweep %s%s%s -j 1 -q "
           "--shard {}/%lld -o %s/shard-{} ::: $(seq 1 %lld) && %s merge",
           (long long)(a->jobs ? a->jobs : 2), t->prog, t->trace, t->base, t->sets, t->grid,
           t->energy, limit_arg, (long long)a->shards, t->out, (long long)a->shards, t->prog);
    for (int64_t i = 1; i <= a->shards; i++)
        printf(" %s/shard-%lld", t->out, (long long)i);
    printf(" -o %s\n", t->out);
}

int cmd_sweep(int argc, char **argv)
{
    struct sweep_args args;
    int rc = sweep_args_parse(&args, argc, argv);
    if (rc >= 0) {
        sweep_args_release(&args);
        return rc;
    }
    struct errmsg e = {0};
    struct hw_config *base = NULL;
    struct sweep *sw = NULL;
    if (args.hw) {
        rc = hw_config_load(&base, args.hw, args.model ? model_registry_schema(args.model) : NULL,
                            &e);
    } else {
        const struct hw_schema *s = model_registry_schema(args.model);
        if (!s) {
            sweep_args_release(&args);
            return cli_usage_error(VERB, "unknown model '%s'", args.model);
        }
        rc = hw_config_defaults(&base, s);
    }
    if (rc) {
        rc = cli_fail(rc, errmsg_text(&e));
        goto done;
    }
    if ((rc = cli_sets_apply(&args.sets, VERB, base)))
        goto done;
    if ((rc = sweep_load(&sw, args.grid, base, &e))) {
        rc = cli_fail(rc, errmsg_text(&e));
        goto done;
    }
    if (!args.emit) {
        rc = list_configs(sw, base, args.json);
        goto done;
    }
    char self[PATH_MAX] = "acceltrace";
    const char *prog = args.prog;
    if (!prog) {
        ssize_t k = readlink("/proc/self/exe", self, sizeof self - 1);
        if (k > 0)
            self[k] = 0;
        prog = self;
    }
    static struct emit_text t; /* large: kept off the stack */
    if ((rc = emit_text_init(&t, &args, prog)))
        goto done;
    if (!strcmp(args.emit, "parallel"))
        emit_parallel(&args, &t);
    else
        rc = emit_slurm(&args, &t, sweep_count(sw));
done:
    sweep_free(sw);
    hw_config_free(base);
    sweep_args_release(&args);
    return rc;
}
