/*
 * cmd_demo: `acceltrace demo -o out/` (and `make demo`): runs, on built-in defaults, each
 * workload's capture, a default sweep of its model, its analyzers and plots, then writes
 * out/report.html and its plain-text twin out/report.md (analysis/report.h).
 *
 * The demo is the table `steps` below: each workload adds its rows (in order: capture,
 * replay with a default sweep, analyzers, plots). A row is an acceltrace command line run
 * as a child process; "{out}" stands for the workload's folder out/<workload>, and arguments
 * starting with "configs/" name the repository's configs (found from the current folder,
 * next to the program's build folder, or in PREFIX/share/acceltrace of an installed
 * program). A workload
 * without rows is skipped with a line saying so; a failing step stops its workload (the
 * others still run) and makes the demo exit 1. Each run replaces the workload folders of
 * the previous one (fresh_workload_dir).
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "analysis/report.h"
#include "cli/cli.h"
#include "cli/cli_opt.h"
#include "common/buf.h"
#include "common/io.h"
#include "common/progress.h"

#define VERB "demo"
#define DEMO_MAX_ARGS 64
#define DEMO_MARKER ".acceltrace-demo"

struct demo_step {
    const char *workload; /* "disc", "salca", "kura", "test" */
    const char *kind;     /* "capture", "replay", "analyze", "plot": for the log */
    const char *args;     /* arguments after "acceltrace", separated by single spaces */
};

/* Workloads in demo order; each needs rows in `steps`. */
static const char *const workloads[] = {"test", "disc", "salca", "kura"};

static const struct demo_step steps[] = {
    /* test: the engine's own count model on a synthetic trace */
    {"test", "capture",
     "capture test --records 20000 --numbers 64 --blob-bytes 256 -o {out}/test.atr"},
    {"test", "replay",
     "replay {out}/test.atr --hw configs/test-count.json --sweep configs/test-sweep.json "
     "--energy configs/test-energy.json -q -o {out}/replay"},
    {"test", "plot", "plot {out}/replay --y sum --y records --y energy_j -o {out}/plots"},
    /* disc: PixArt-Sigma-XL shapes at 512 px (seeded weights), 2 steps (one ST generation,
     * one reuse step with CTR pruning), CTR 40% + ST; README "A first run" has the time */
    {"disc", "capture",
     "capture disc --model pixart-sigma-xl --image-size 512 --steps 2 -q --png {out}/png "
     "-o {out}/disc.atr"},
    {"disc", "replay",
     "replay {out}/disc.atr --hw configs/disc-a100-matched.json --energy configs/disc-energy.json "
     "-q -o {out}/replay"},
    {"disc", "replay",
     "replay {out}/disc.atr --hw configs/disc-a100-matched.json --sweep configs/disc-sweep.json "
     "--energy configs/disc-energy.json -q -o {out}/sweep"},
    /* the disc figures and the hash load balance (what `analyze hash` writes) from one read
     * of the trace: both analyzers share the pass (analysis/analyzer.h) */
    {"disc", "analyze",
     "analyze disc {out}/replay --trace {out}/disc.atr --hash {out}/hash -o {out}/figures"},
    {"disc", "export",
     "export timeline {out}/replay -q -o {out}/timeline/timeline.json --plot {out}/timeline"},
    /* the sweep's speedup against the DPU count at the default (calibrated) vpu_width 24 */
    {"disc", "plot",
     "plot {out}/sweep --x dpu_count --y speedup --where mode=all --where vpu_width=24 "
     "-o {out}/plots"},
    /* salca: synthetic 32K context, 64 decode steps, 4 layers, every selection method */
    {"salca", "capture", "capture salca -q -o {out}/salca.atr"},
    {"salca", "replay",
     "replay {out}/salca.atr --hw configs/salca-hbm2.json --sweep configs/salca-sweep.json "
     "--energy configs/salca-energy.json -q -o {out}/replay"},
    {"salca", "analyze", "analyze conflicts {out}/salca.atr -o {out}/conflicts"},
    {"salca", "export",
     "export timeline {out}/replay -q -o {out}/timeline/timeline.json --plot {out}/timeline"},
    {"salca", "model", "model salca --paper --plot {out}/model --trace {out}/salca.atr"},
    /* kura rows: */
    {"kura", "capture", "capture kura -q -o {out}/kura.atr"},
    {"kura", "replay",
     "replay {out}/kura.atr --hw configs/kura-h20w5.json --sweep configs/kura-sweep.json -q "
     "-o {out}/replay"},
    {"kura", "plot",
     "plot {out}/replay --x n_w --y sys_e_px_nj --y e_px_pj --y cycles_step -o {out}/plots"},
    /* the trace figures and the RTL tiles (what `export tiles` writes) from one read of the
     * trace: both analyzers share the pass (analysis/analyzer.h) */
    {"kura", "plot",
     "model kura --plots {out}/figures --trace {out}/kura.atr --every 20 --tiles {out}/tiles "
     "--tile-shape 20x5"},
    {"kura", "export",
     "export timeline {out}/replay -q -o {out}/timeline/timeline.json --plot {out}/timeline"},
    {NULL, NULL, NULL},
};

enum { OPT_ONLY = 1, OPT_LIST };

static const struct cli_opt opts[] = {
    CLI_OPT_OUTPUT("DIR", "the demo folder (default out)"),
    {OPT_ONLY, "only", 0, CLI_ARG_STRING, "WORKLOAD", "run one workload (test, disc, salca, kura)",
     0},
    {OPT_LIST, "list", 0, CLI_ARG_NONE, NULL, "print the steps, run nothing", 0},
    {CLI_ID_JSON, "json", 0, CLI_ARG_NONE, NULL,
     "one JSON document on stdout: the steps (--list) or each\nworkload's status and the report",
     0},
    CLI_OPT_QUIET,
    CLI_OPT_END,
};

const struct cli_spec cmd_demo_spec = {
    .verb = VERB,
    .usage =
        "usage: acceltrace demo [-o DIR] [--only WORKLOAD] [--list]\n"
        "\n"
        "Runs every workload's demo steps (capture, default sweep replay, analyzers, plots)\n"
        "into DIR/<workload> (default DIR: out) and writes DIR/report.html and DIR/report.md.\n"
        "--list prints the "
        "steps; --only runs one workload.\n",
    .opts = opts,
};

/*
 * The folder whose configs/ the steps' "configs/..." arguments name: "." when configs/ is
 * here, else the parent of the program's folder (a build folder's), else
 * PREFIX/share/acceltrace of an installed program (make install puts bin/acceltrace and
 * share/acceltrace/configs under one PREFIX). root gets at most n bytes.
 */
static void demo_root(const char *self, char *root, size_t n)
{
    struct stat sb;
    snprintf(root, n, ".");
    if (!stat("configs", &sb) && S_ISDIR(sb.st_mode))
        return;
    snprintf(root, n, "%s", self);
    for (int up = 0; up < 2; up++) {
        char *slash = strrchr(root, '/');
        if (slash)
            *slash = 0;
    }
    char probe[PATH_MAX + 32];
    snprintf(probe, sizeof probe, "%s/configs", root);
    if ((stat(probe, &sb) || !S_ISDIR(sb.st_mode)) &&
        strlen(root) + sizeof "/share/acceltrace" <= n)
        strcat(root, "/share/acceltrace");
}

/* Splits args into argv (in buf), replacing the token part "{out}" by out. */
static int build_argv(const char *args, const char *out, char *buf, size_t n, char **argv,
                      const char *self, const char *root)
{
    size_t k = 0;
    int argc = 0;
    argv[argc++] = (char *)self;
    for (const char *p = args; *p && argc < DEMO_MAX_ARGS - 1;) {
        while (*p == ' ')
            p++;
        if (!*p)
            break;
        argv[argc++] = buf + k;
        if (!strncmp(p, "configs/", 8) && strcmp(root, ".")) {
            size_t l = strlen(root);
            if (k + l + 2 >= n)
                return -1;
            memcpy(buf + k, root, l);
            k += l;
            buf[k++] = '/';
        }
        while (*p && *p != ' ' && k + 1 < n) {
            if (!strncmp(p, "{out}", 5)) {
                size_t l = strlen(out);
                if (k + l + 1 >= n)
                    return -1;
                memcpy(buf + k, out, l);
                k += l;
                p += 5;
            } else {
                buf[k++] = *p++;
            }
        }
        buf[k++] = 0;
        if (k >= n)
            return -1;
    }
    argv[argc] = NULL;
    return argc;
}

/* Appends "step\tacceltrace ARGS" to the workload's marker (fresh_workload_dir). */
static void record_step(const char *wdir, int ac, char **av)
{
    char marker[PATH_MAX + 32];
    snprintf(marker, sizeof marker, "%s/" DEMO_MARKER, wdir);
    FILE *f = fopen(marker, "a");
    if (!f)
        return; /* the report then says the command was not recorded */
    fprintf(f, "step\tacceltrace");
    for (int i = 1; i < ac; i++)
        fprintf(f, " %s", av[i]);
    fprintf(f, "\n");
    fclose(f);
}

/* Runs one step; returns its exit status (or 1 when it could not start). */
static int run_step(char **argv)
{
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0)
        return 1;
    if (pid == 0) {
        execv(argv[0], argv);
        fprintf(stderr, "acceltrace: demo: cannot run '%s': %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    int st;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR)
            return 1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
}

/*
 * A workload's folder starts empty on every run, so a rerun never mixes results of an
 * older trace with the new one (replay refuses such a folder). Only a folder holding the
 * marker that this function writes is removed; any other existing folder of that name is
 * left alone and the demo stops with a usage error.
 */
static int fresh_workload_dir(const char *wdir)
{
    char marker[PATH_MAX + 32];
    snprintf(marker, sizeof marker, "%s/" DEMO_MARKER, wdir);
    struct stat sb;
    if (!stat(wdir, &sb)) {
        if (stat(marker, &sb))
            return cli_usage_error(VERB,
                                   "'%s' exists and was not made by acceltrace demo; move it "
                                   "away or choose another -o folder",
                                   wdir);
        if (io_remove_tree(wdir)) {
            cli_error("cannot remove the previous demo output '%s': %s", wdir, strerror(errno));
            return 1;
        }
    }
    struct errmsg me = {0};
    int mrc = io_mkdir_p(wdir, 0755, &me);
    if (mrc)
        return cli_fail(mrc, errmsg_text(&me));
    FILE *f = fopen(marker, "w");
    if (!f) {
        cli_error("cannot create '%s': %s", marker, strerror(errno));
        return 1;
    }
    /* the report reads the "cwd" and "step" lines: which command wrote which folder */
    char cwd[PATH_MAX];
    bool bad = fputs("made by acceltrace demo; the next demo run replaces this folder\n", f) < 0;
    if (getcwd(cwd, sizeof cwd))
        bad |= fprintf(f, "cwd\t%s\n", cwd) < 0;
    if (fclose(f) || bad) {
        cli_error("cannot write '%s'", marker);
        return 1;
    }
    return 0;
}

int cmd_demo(int argc, char **argv)
{
    const char *out = "out", *only = NULL;
    bool list = false;
    bool json = false, quiet = false;
    struct cli_parser p;
    cli_parser_init(&p, &cmd_demo_spec, argc, argv);
    for (int id; (id = cli_next(&p)) != CLI_END;) {
        if (id == CLI_HELP || id == CLI_BAD)
            return cli_next_exit(id);
        if (id == OPT_ONLY)
            only = p.arg;
        else if (id == OPT_LIST)
            list = true;
        else if (id == CLI_POSITIONAL)
            return cli_usage_error(VERB, "unknown argument '%s'", p.arg);
    }
    if (p.common.output)
        out = p.common.output;
    json = p.common.json;
    quiet = p.common.quiet;
    char self[PATH_MAX];
    ssize_t sl = readlink("/proc/self/exe", self, sizeof self - 1);
    if (sl <= 0)
        return cli_fail(ERR_IO, "cannot find the acceltrace program (/proc/self/exe)");
    self[sl] = 0;
    char root[PATH_MAX];
    demo_root(self, root, sizeof root);
    int mrc = list ? 0 : cli_output_dir(out);
    if (mrc)
        return mrc;
    json_t *jw = json ? json_array() : NULL; /* --json: per workload, or the steps (--list) */
    struct buf pre;
    buf_init(&pre);
    buf_printf(&pre, "Made by `acceltrace demo` (acceltrace %s) on built-in defaults.\n\n",
               ACCELTRACE_VERSION);
    int status = 0;
    double t_all = progress_now_s();
    for (size_t w = 0; w < sizeof workloads / sizeof workloads[0]; w++) {
        const char *wl = workloads[w];
        if (only && strcmp(only, wl))
            continue;
        size_t n_rows = 0;
        for (const struct demo_step *s = steps; s->workload; s++)
            n_rows += !strcmp(s->workload, wl);
        if (!n_rows) {
            json_array_append_new(jw, json_pack("{s:s,s:s}", "workload", wl, "status", "skipped"));
            fprintf(stderr, "demo: skipping %s: no demo steps registered for it yet\n", wl);
            buf_printf(&pre, "- %s: skipped (no demo steps yet)\n", wl);
            continue;
        }
        char wdir[PATH_MAX];
        snprintf(wdir, sizeof wdir, "%s/%s", out, wl);
        if (!list && (status = fresh_workload_dir(wdir)) != 0) {
            buf_release(&pre);
            return status;
        }
        double t_wl = progress_now_s();
        int failed = 0;
        for (const struct demo_step *s = steps; s->workload; s++) {
            if (strcmp(s->workload, wl))
                continue;
            char buf[8192], *av[DEMO_MAX_ARGS];
            int ac = build_argv(s->args, wdir, buf, sizeof buf, av, self, root);
            if (ac < 0) {
                cli_error("demo step too long: %s", s->args);
                failed = 1;
                break;
            }
            if (list && json) {
                json_t *a = json_array();
                for (int i = 1; i < ac; i++)
                    json_array_append_new(a, json_string(av[i]));
                json_array_append_new(
                    jw, json_pack("{s:s,s:s,s:o}", "workload", wl, "kind", s->kind, "argv", a));
                continue;
            }
            if (!quiet || list) { /* --list is the result: stdout; a run's log: stderr */
                FILE *f = list ? stdout : stderr;
                fprintf(f, "demo: [%s] %s: acceltrace", wl, s->kind);
                for (int i = 1; i < ac; i++)
                    fprintf(f, " %s", av[i]);
                fprintf(f, "\n");
            }
            if (list)
                continue;
            double t0 = progress_now_s();
            record_step(wdir, ac, av);
            int rc = run_step(av);
            if (rc) {
                cli_error("demo step of %s failed with exit %d: %s", wl, rc, s->args);
                failed = rc;
                break;
            }
            if (!quiet)
                fprintf(stderr, "demo: [%s] %s done in %.1f s\n", wl, s->kind,
                        progress_now_s() - t0);
        }
        if (list)
            continue;
        json_array_append_new(jw, json_pack("{s:s,s:s,s:I,s:f}", "workload", wl, "status",
                                            failed ? "failed" : "ok", "steps", (json_int_t)n_rows,
                                            "seconds", progress_now_s() - t_wl));
        if (failed) {
            status = 1;
            buf_printf(&pre, "- %s: FAILED (see the log)\n", wl);
        } else {
            buf_printf(&pre, "- %s: %zu steps in %.1f s\n", wl, n_rows, progress_now_s() - t_wl);
        }
    }
    if (list) {
        buf_release(&pre);
        return json ? cli_print_json(json_pack("{s:o}", "steps", jw)) : 0;
    }
    struct report_stats st;
    struct errmsg e = {0};
    const char *dirs[] = {out};
    struct report_opts ro = {
        .dirs = dirs, .n_dirs = 1, .title = "acceltrace demo", .preamble = (const char *)pre.data};
    int rc = report_write(&ro, &st, &e);
    buf_release(&pre);
    if (rc) {
        json_decref(jw);
        return cli_fail(rc, errmsg_text(&e));
    }
    if (json) {
        int jrc = cli_print_json(json_pack(
            "{s:o,s:s,s:s,s:I,s:I}", "workloads", jw, "report", st.html_path, "markdown",
            st.md_path, "figures", (json_int_t)st.figures, "tables", (json_int_t)st.tables));
        return status ? status : jrc;
    }
    fprintf(stderr, "demo: %s and %s: %zu figures, %zu tables (%.1f s)\n", st.html_path, st.md_path,
            st.figures, st.tables, progress_now_s() - t_all);
    return status;
}
