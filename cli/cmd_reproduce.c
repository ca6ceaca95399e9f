/*
 * cmd_reproduce: `acceltrace reproduce [disc|salca|kura|all] [--quick] -o DIR`: every
 * headline number of the three papers beside ours, with how ours was obtained
 * (analysis/reproduce.h), into DIR/reproduce.csv and DIR/reproduce.md. The runs are
 * in-process (capture, replay models, solvers); traces go to DIR/work.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "analysis/reproduce.h"
#include "cli/reproduce_runs.h"
#include "cli/cli.h"
#include "common/progress.h"

#define VERB "reproduce"

static void usage(FILE *f)
{
    fputs("usage: acceltrace reproduce [disc|salca|kura|all] [--quick] [--threads N] -o DIR\n"
          "\n"
          "Runs the headline experiments of the three papers at the papers' own settings\n"
          "where this machine can, and writes DIR/reproduce.csv and DIR/reproduce.md: one row\n"
          "per paper number (paper value or range, ours, ratio) with its status and basis:\n"
          "  predicted     our model, from inputs not fitted to this number\n"
          "  recomputed    the paper's formula on the paper's inputs (checks arithmetic)\n"
          "  calibrated    a parameter of ours was solved for it (basis names it)\n"
          "  input         equals a setting we chose\n"
          "  not-modelled  nothing of ours computes it (basis says why)\n"
          "and the acceltrace command that recomputes ours. The condition column says what\n"
          "differs from the paper (weights, steps, resolution, heads).\n"
          "\n"
          "  WORKLOAD      disc, salca, kura or all (default all)\n"
          "  --quick       smaller captures (tiny DiT, 2 Salca layers x 4 steps): about a\n"
          "                minute on 2 cores; without it pixart-sigma-xl shapes at 512 px\n"
          "                (10 steps) and 4 Salca layers x 16 steps, under 20 minutes\n"
          "  --threads N   capture threads (default: the CPU count)\n"
          "  -o DIR        output folder: new, empty, or made by an earlier reproduce\n",
          f);
}

/* Repository root: "." when configs/ is here, else the parent of the program's folder. */
static void find_root(char *root, size_t n)
{
    struct stat sb;
    snprintf(root, n, ".");
    if (!stat("configs", &sb) && S_ISDIR(sb.st_mode))
        return;
    char self[PATH_MAX];
    ssize_t sl = readlink("/proc/self/exe", self, sizeof self - 1);
    if (sl <= 0)
        return;
    self[sl] = 0;
    for (int up = 0; up < 2; up++) {
        char *slash = strrchr(self, '/');
        if (slash)
            *slash = 0;
    }
    snprintf(root, n, "%s", self);
}

typedef int (*repro_fn)(struct repro_table *, const struct repro_opts *, struct errmsg *);

int cmd_reproduce(int argc, char **argv);
int cmd_reproduce(int argc, char **argv)
{
    const char *out = NULL, *which = "all";
    struct repro_opts o = {0};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (cli_is_help(a)) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "-o") && i + 1 < argc) {
            out = argv[++i];
        } else if (!strcmp(a, "--quick")) {
            o.quick = true;
        } else if (!strcmp(a, "--threads") && i + 1 < argc) {
            int64_t x;
            if (!cli_parse_i64(argv[++i], &x) || x < 1 || x > 256)
                return cli_usage_error(VERB, "bad --threads '%s' (1-256)", argv[i]);
            o.threads = (int)x;
        } else if (i == 1 && (!strcmp(a, "disc") || !strcmp(a, "salca") || !strcmp(a, "kura") ||
                              !strcmp(a, "all"))) {
            which = a;
        } else {
            return cli_usage_error(VERB, "unknown argument '%s'", a);
        }
    }
    if (!out)
        return cli_usage_error(VERB, "missing -o DIR");
    struct errmsg e = {0};
    int rc = repro_dir_prepare(out, &e);
    if (rc)
        return cli_fail(rc, errmsg_text(&e));
    char root[PATH_MAX], work[PATH_MAX + 8];
    find_root(root, sizeof root);
    snprintf(work, sizeof work, "%s/work", out);
    o.work = work;
    o.root = root;
    static const struct {
        const char *name;
        repro_fn fn;
    } runs[] = {{"disc", reproduce_disc}, {"salca", reproduce_salca}, {"kura", reproduce_kura}};
    struct repro_table t;
    repro_table_init(&t);
    char pre[1024];
    size_t pl = (size_t)snprintf(pre, sizeof pre,
                                 "Made by `acceltrace reproduce %s%s` "
                                 "(acceltrace %s).",
                                 which, o.quick ? " --quick" : "", ACCELTRACE_VERSION);
    for (size_t k = 0; k < 3 && !rc; k++) {
        if (strcmp(which, "all") && strcmp(which, runs[k].name))
            continue;
        fprintf(stderr, "reproduce: %s ...\n", runs[k].name);
        double t0 = progress_now_s(), c0 = (double)clock() / CLOCKS_PER_SEC;
        rc = runs[k].fn(&t, &o, &e);
        double wall = progress_now_s() - t0, cpu = (double)clock() / CLOCKS_PER_SEC - c0;
        fprintf(stderr, "reproduce: %s done in %.1f s (%.1f s CPU)\n", runs[k].name, wall, cpu);
        if (pl < sizeof pre)
            pl += (size_t)snprintf(pre + pl, sizeof pre - pl, " %s: %.1f s wall, %.1f s CPU.",
                                   runs[k].name, wall, cpu);
    }
    rc = rc ? rc
            : repro_table_write(&t, out, "Paper numbers beside ours (acceltrace reproduce)", pre,
                                &e);
    if (!rc)
        fprintf(stderr, "reproduce: %zu rows in %s/reproduce.csv and %s/reproduce.md\n", t.n, out,
                out);
    repro_table_release(&t);
    return rc ? cli_fail(rc, errmsg_text(&e)) : 0;
}
