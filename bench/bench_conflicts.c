/*
 * bench_conflicts: throughput of the Salca channel-conflict analyzer (analysis/conflicts,
 * replay/hbm_pc; docs/salca.md#conflict-analyzer): about 1M selected indices (clustered
 * selections at 5% retention of 32K-token contexts, the paper's workload shape) replayed
 * against 16 PCs (mod map) under in-order issue (D_f = 1) and reorder windows
 * 16, 32, 64, 128, 256 in one pass (the analyzer also runs batch issue and the
 * conflicts-per-batch histograms of all three maps). Prints selected indices per second
 * and a checksum (total slots per policy) that the numpy peer prints too.
 * Then the timing mode over the same jobs, and the write rate of `export hbm-trace`
 * (replay/hbm_export, both formats, to a temporary file target >= 100 MB/s).
 * With --write FILE it saves the selections (per job: u32 layer, u32 head, u32 count, then
 * count u32 indices; little-endian) for bench/peers/conflicts_numpy.py.
 *
 * usage: bench_conflicts [--indices N] [--n CTX] [--retention X] [--seed S] [--reps R]
 *                        [--write FILE]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "analysis/conflicts.h"
#include "common/io.h"
#include "common/mem.h"
#include "replay/hbm_export.h"

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

struct job {
    uint32_t l, h;
    size_t n;
    uint32_t *idx;
};

/* What a timed run keeps of each policy once its jobs are in (fast or timing mode). */
struct run_out {
    uint64_t slots[64];    /* fast mode: total slots per policy */
    double over_ideal[64]; /* timing mode: time over ideal per policy */
    size_t n_policies;
};

/*
 * Analyzes the jobs reps times with options o and returns the best time of the
 * conflicts_add_job loop (seconds), or a negative value on an error; out receives the
 * totals of the last run.
 */
static double timed_runs(const struct conflicts_opts *o, const struct job *jobs, size_t nj,
                         int reps, struct run_out *out)
{
    double best = 1e30;
    for (int r = 0; r < reps; r++) {
        struct conflicts *c = NULL;
        struct errmsg e = {0};
        if (conflicts_new(&c, o, &e) < 0) {
            fprintf(stderr, "bench_conflicts: %s\n", e.text);
            return -1;
        }
        double t0 = now_s();
        for (size_t i = 0; i < nj; i++)
            if (conflicts_add_job(c, NULL, jobs[i].l, jobs[i].h, jobs[i].idx, jobs[i].n, &e) < 0) {
                fprintf(stderr, "bench_conflicts: %s\n", e.text);
                conflicts_free(c);
                return -1;
            }
        double dt = now_s() - t0;
        if (dt < best)
            best = dt;
        out->n_policies = conflicts_n_policies(c);
        for (size_t i = 0; i < out->n_policies && i < 64; i++) {
            struct conflicts_totals t;
            conflicts_totals(c, -1, i, &t);
            out->slots[i] = t.slots;
            struct conflicts_timing tt;
            if (o->timing && conflicts_timing_totals(c, i, &tt) == 0)
                out->over_ideal[i] = tt.time_over_ideal;
        }
        conflicts_free(c);
    }
    return best;
}

int main(int argc, char **argv)
{
    size_t want = 1000000;
    uint32_t n = 32768;
    double ret = 0.05;
    uint64_t seed = 1;
    int reps = 3;
    const char *out = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--indices") && i + 1 < argc)
            want = strtoull(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--n") && i + 1 < argc)
            n = (uint32_t)strtoul(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--retention") && i + 1 < argc)
            ret = atof(argv[++i]);
        else if (!strcmp(argv[i], "--seed") && i + 1 < argc)
            seed = strtoull(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc)
            reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--write") && i + 1 < argc)
            out = argv[++i];
        else {
            fprintf(stderr, "usage: bench_conflicts [--indices N] [--n CTX] [--retention X] "
                            "[--seed S] [--reps R] [--write FILE]\n");
            return 2;
        }
    }
    if (n == 0 || !(ret > 0) || ret > 1 || reps < 1) {
        fprintf(stderr, "bench_conflicts: bad parameters\n");
        return 2;
    }
    /* Selections: 32 heads per layer (LongChat-7B's), as many layers as needed. */
    size_t cap = 64, nj = 0, total = 0;
    struct job *jobs = mem_alloc(cap * sizeof *jobs);
    uint32_t *buf = mem_alloc((size_t)n * sizeof *buf);
    if (!jobs || !buf)
        return 1;
    while (total < want) {
        if (nj == cap) {
            cap *= 2;
            struct job *p = mem_realloc(jobs, cap * sizeof *p);
            if (!p)
                return 1;
            jobs = p;
        }
        struct job *j = &jobs[nj];
        j->l = (uint32_t)(nj / 32);
        j->h = (uint32_t)(nj % 32);
        if (salca_synth_selection(SALCA_SYNTH_CLUSTERED, n, ret, seed, j->l, j->h, buf, &j->n) < 0)
            return 1;
        j->idx = mem_alloc(j->n * sizeof *j->idx);
        if (!j->idx)
            return 1;
        memcpy(j->idx, buf, j->n * sizeof *buf);
        total += j->n;
        nj++;
    }
    if (out) {
        FILE *f = fopen(out, "wb");
        if (!f) {
            fprintf(stderr, "bench_conflicts: cannot write '%s'\n", out);
            return 1;
        }
        for (size_t i = 0; i < nj; i++) {
            uint32_t hdr[3] = {jobs[i].l, jobs[i].h, (uint32_t)jobs[i].n};
            fwrite(hdr, sizeof hdr, 1, f);
            fwrite(jobs[i].idx, sizeof(uint32_t), jobs[i].n, f);
        }
        if (fclose(f) != 0)
            return 1;
    }
    struct conflicts_opts o;
    conflicts_opts_default(&o);
    o.n_depths = 1;  /* in-order D_f = 1 is window "0" */
    o.n_windows = 6; /* 0, 16, ..., 256: the windows the numpy peer simulates */
    struct run_out fast = {0};
    double best = timed_runs(&o, jobs, nj, reps, &fast);
    if (best < 0)
        return 1;
    size_t np = fast.n_policies;
    printf("bench_conflicts: %zu jobs, %zu selected indices (clustered, %.3g of %u), 16 PCs mod,"
           " policies:",
           nj, total, ret, n);
    for (size_t i = 0; i < np; i++)
        printf(" %s", i == 0 ? "batch" : i == 1 ? "inorder_d1" : "window");
    printf("\n");
    printf("bench_conflicts: best of %d: %.3f s, %.2f M indices/s (all policies, one pass)\n", reps,
           best, (double)total / best / 1e6);
    /* the timing mode (replay/hbm_timing, HBM2 preset) over the same jobs and policies:
     * no peer of its own, so it is shown against the fast mode of this run */
    struct hbm_timing_cfg tc;
    hbm_timing_cfg_default(&tc);
    o.timing = &tc;
    struct run_out timed = {0};
    double best_t = timed_runs(&o, jobs, nj, reps, &timed);
    if (best_t < 0)
        return 1;
    printf("bench_conflicts: timing mode (hbm2), best of %d: %.3f s, %.2f M indices/s, %.1fx the "
           "fast mode's time; time over ideal:",
           reps, best_t, (double)total / best_t / 1e6, best_t / best);
    for (size_t i = 0; i < np && i < 64; i++)
        printf(" %.3f", timed.over_ideal[i]);
    printf("\n");
    /* export hbm-trace: both formats of every job into one temporary file, best of reps */
    char tmpl[] = "/tmp/bench_hbm_export_XXXXXX";
    int fd = mkstemp(tmpl);
    if (fd < 0)
        return 1;
    close(fd);
    struct hbm_pc_mapping pm = {HBM_PC_MAP_MOD, 16, 0};
    double best_x = -1;
    uint64_t xbytes = 0;
    for (int r = 0; r < reps; r++) {
        struct sink k;
        struct hbm_export *x[2] = {NULL, NULL};
        if (sink_open_file(&k, tmpl, NULL) < 0)
            return 1;
        double t0 = now_s();
        int rc = 0;
        for (int f = 0; f < 2 && rc == 0; f++)
            rc = hbm_export_new(&x[f], &k, (enum hbm_export_format)f, &tc, &pm, 0, NULL);
        for (size_t i = 0; i < nj && rc == 0; i++)
            for (int f = 0; f < 2 && rc == 0; f++)
                rc = hbm_export_job(x[f], jobs[i].l, jobs[i].h, jobs[i].idx, jobs[i].n);
        for (int f = 0; f < 2 && rc == 0; f++)
            rc = hbm_export_finish(x[f]);
        rc = rc ? rc : sink_close(&k);
        double dt = now_s() - t0;
        xbytes = x[0] && x[1] ? hbm_export_bytes(x[0]) + hbm_export_bytes(x[1]) : 0;
        hbm_export_free(x[0]);
        hbm_export_free(x[1]);
        if (rc < 0) {
            fprintf(stderr, "bench_conflicts: cannot write '%s'\n", tmpl);
            remove(tmpl);
            return 1;
        }
        if (best_x < 0 || dt < best_x)
            best_x = dt;
    }
    remove(tmpl);
    printf("bench_conflicts: export hbm-trace (ramulator + dramsim3 lines), best of %d: %.3f s, "
           "%.1f MB, %.0f MB/s\n",
           reps, best_x, (double)xbytes / 1e6, (double)xbytes / 1e6 / best_x);
    /* checksum over in-order D_f = 1 and the five windows (the peer's policies) */
    printf("checksum slots:");
    for (size_t i = 1; i < np; i++)
        printf(" %llu", (unsigned long long)fast.slots[i]);
    printf("\n");
    for (size_t i = 0; i < nj; i++)
        mem_free(jobs[i].idx);
    mem_free(jobs);
    mem_free(buf);
    return 0;
}
