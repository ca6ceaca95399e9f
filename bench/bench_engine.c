/*
 * bench_engine: the one-pass engine's scaling. Replays a
 * decode-heavy test trace (large repeated fields, zstd frames) with the cheap count model
 * for N = 1, 10 and 100 configs and prints the wall time of each and
 * time(100 configs) / time(1 config) (target <= 1.5), plus bytes read per run, which must
 * not grow with N. Options: --records N (default 20000), --threads T (default 1),
 * --reps R (best of R interleaved rounds, default 5).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "capture/synth/synth_capture.h"
#include "common/io.h"
#include "common/progress.h"
#include "replay/engine.h"
#include "replay/model_registry.h"

static double run_once(const char *trace, const char *dir, size_t n_configs, int threads,
                       uint64_t *bytes)
{
    const struct model_ops *m = model_registry_find("count");
    struct hw_config *base;
    struct errmsg e = {0};
    if (hw_config_defaults(&base, m->schema))
        exit(1);
    char grid[128];
    snprintf(grid, sizeof grid, "{\"scale\": {\"range\": [1, %zu, 1]}}", n_configs);
    struct sweep *sw;
    struct record_source src;
    struct results *res;
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd))
        exit(1);
    if (sweep_parse(&sw, grid, "grid", base, &e) || record_source_trace(&src, trace, 1, &e) ||
        results_open(&res, dir, src.content_hash(src.ctx), "count", &e)) {
        fprintf(stderr, "bench_engine: %s\n", e.text);
        exit(1);
    }
    struct engine_opts o;
    engine_opts_default(&o);
    o.threads = threads;
    o.quiet = true;
    struct engine_stats st;
    double t0 = progress_now_s();
    if (engine_run(m, &src, sw, res, &o, &st, &e)) {
        fprintf(stderr, "bench_engine: %s\n", e.text);
        exit(1);
    }
    double t = progress_now_s() - t0;
    *bytes = st.bytes_read;
    results_close(res);
    record_source_close(&src);
    sweep_free(sw);
    hw_config_free(base);
    return t;
}

int main(int argc, char **argv)
{
    struct synth_capture_params p;
    synth_capture_params_default(&p);
    p.n_records = 20000;
    p.n_numbers = 512;
    p.blob_bytes = 2048;
    int threads = 1, reps = 5;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--records"))
            p.n_records = strtoull(argv[i + 1], NULL, 10);
        else if (!strcmp(argv[i], "--threads"))
            threads = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--reps"))
            reps = atoi(argv[i + 1]);
    }
    char dir[256], trace[300], res[300];
    snprintf(dir, sizeof dir, "/tmp/acceltrace-bench-engine-%ld", (long)getpid());
    struct errmsg e = {0};
    if (io_mkdir_p(dir, 0755, &e)) {
        fprintf(stderr, "bench_engine: %s\n", errmsg_text(&e));
        return 1;
    }
    snprintf(trace, sizeof trace, "%s/t.atr", dir);
    snprintf(res, sizeof res, "%s/res", dir);
    struct errmsg err = {0};
    if (synth_capture_write(trace, &p, &err)) {
        fprintf(stderr, "bench_engine: %s\n", err.text);
        return 1;
    }
    struct stat sb;
    stat(trace, &sb);
    printf("bench_engine: trace of %llu records (%u numbers, %u blob bytes each), %lld bytes "
           "on disk; count model, %d thread(s), best of %d\n",
           (unsigned long long)p.n_records, p.n_numbers, p.blob_bytes, (long long)sb.st_size,
           threads, reps);
    const size_t ns[] = {1, 10, 100};
    double best[3] = {1e30, 1e30, 1e30};
    uint64_t bytes[3] = {0, 0, 0};
    /* Rounds interleave the three sizes, so load from other jobs hits them alike. */
    for (int r = 0; r < reps; r++)
        for (int k = 0; k < 3; k++) {
            double t = run_once(trace, res, ns[k], threads, &bytes[k]);
            if (t < best[k])
                best[k] = t;
        }
    for (int k = 0; k < 3; k++)
        printf("bench_engine: %3zu configs: %.3f s, %llu bytes read\n", ns[k], best[k],
               (unsigned long long)bytes[k]);
    printf("bench_engine: time(10)/time(1) = %.2f, time(100)/time(1) = %.2f (target <= 1.5)\n",
           best[1] / best[0], best[2] / best[0]);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) ? 1 : 0;
}
