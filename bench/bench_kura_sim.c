/*
 * bench_kura_sim: speed of the SA-Kura replay.
 *   1. cycle-accurate simulation (docs/kura.md#cycle-accurate-array) in PE-cycles per second, with and without the
 *      checks and the activity counting, over the 25 paper shapes on 96x96 maps;
 *   2. its cost relative to the analytic model on the same in-memory trace (replay engine);
 *   3. the 25-configuration analytic sweep over a 1000-step 96x96 trace in one pass vs 25
 *      separate one-config replays (target: one pass <= 1.5x one replay).
 * Environment: KURA_BENCH_STEPS (default 1000) shortens item 3.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/mem.h"
#include "common/rng.h"
#include "formats/kura_fixed.h"
#include "replay/engine.h"
#include "replay/kura_model.h"
#include "replay/kura_sim.h"
#include "replay/model_registry.h"
#include "replay/results.h"
#include "replay/sweep.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

struct trace_mem {
    Acceltrace__TraceHeader hdr;
    Acceltrace__KuraHeader kh;
    Acceltrace__Record **recs;
    Acceltrace__KuraStep *steps;
    uint8_t *maps;
    size_t n;
};

/* T-1 REVERSE steps of random 96x96 maps with a t100-like schedule. */
static int trace_build(struct trace_mem *t, int h, int w, int T)
{
    memset(t, 0, sizeof *t);
    acceltrace__trace_header__init(&t->hdr);
    acceltrace__kura_header__init(&t->kh);
    t->hdr.workload = "kura";
    t->kh.h = (uint32_t)h;
    t->kh.w = (uint32_t)w;
    t->kh.t = (uint32_t)T;
    t->hdr.kura = &t->kh;
    size_t n = (size_t)T - 1, px = (size_t)h * w;
    t->recs = calloc(n, sizeof *t->recs);
    t->steps = calloc(n, sizeof *t->steps);
    t->maps = malloc(n * 2 * px);
    if (!t->recs || !t->steps || !t->maps)
        return -1;
    struct rng r;
    rng_stream(&r, 1, "bench-kura-sim", 0, 0);
    for (size_t i = 0; i < n; i++) {
        Acceltrace__KuraStep *ks = &t->steps[i];
        acceltrace__kura_step__init(ks);
        ks->role = ACCELTRACE__KURA_ROLE__KURA_ROLE_REVERSE;
        ks->step = (int32_t)(T - 1 - i);
        double s = (double)ks->step / (T - 1);
        ks->k = 3e-5 * (1 - s) + 0.03 * s;
        ks->kref = 1.5 * ks->k;
        ks->h = (uint32_t)h;
        ks->w = (uint32_t)w;
        uint8_t *m = t->maps + i * 2 * px;
        for (size_t p = 0; p < 2 * px; p++)
            m[p] = (uint8_t)rng_below(&r, 256);
        ks->phase_q15.data = m;
        ks->phase_q15.len = 2 * px;
        t->recs[i] = malloc(sizeof **t->recs);
        if (!t->recs[i])
            return -1;
        acceltrace__record__init(t->recs[i]);
        t->recs[i]->body_case = ACCELTRACE__RECORD__BODY_KURA_STEP;
        t->recs[i]->kura_step = ks;
    }
    t->n = n;
    return 0;
}

static void trace_free(struct trace_mem *t)
{
    for (size_t i = 0; i < t->n; i++)
        free(t->recs[i]);
    free(t->recs);
    free(t->steps);
    free(t->maps);
}

/* One engine run of model kura with base JSON (+ grid); returns seconds or -1. */
static double replay(struct trace_mem *t, const char *base_json, const char *grid_json)
{
    const struct model_ops *m = model_registry_find("kura");
    struct hw_config *base = NULL;
    struct sweep *sw = NULL;
    struct record_source src;
    struct results *res = NULL;
    struct errmsg e = {0};
    char dir[] = "/tmp/acceltrace_bench_kura_XXXXXX";
    double sec = -1;
    if (!m || !mkdtemp(dir))
        return -1;
    if (hw_config_parse(&base, base_json, "bench", m->schema, &e) ||
        (grid_json ? sweep_parse(&sw, grid_json, "grid", base, &e) : sweep_single(&sw, base)) ||
        record_source_mem(&src, &t->hdr, t->recs, t->n) ||
        results_open(&res, dir, src.content_hash(src.ctx), "kura", &e)) {
        fprintf(stderr, "bench_kura_sim: %s\n", e.text);
        goto done;
    }
    struct engine_opts o;
    engine_opts_default(&o);
    o.quiet = true;
    double t0 = now_s();
    if (engine_run(m, &src, sw, res, &o, NULL, &e)) {
        fprintf(stderr, "bench_kura_sim: %s\n", e.text);
        goto done;
    }
    sec = now_s() - t0;
done:
    results_close(res);
    record_source_close(&src);
    sweep_free(sw);
    hw_config_free(base);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "bench_kura_sim: cannot remove %s\n", dir);
    return sec;
}

int main(void)
{
    const int shapes[5] = {5, 10, 15, 20, 25};
    int h = 96, w = 96;
    size_t px = (size_t)h * w;
    int16_t *q = mem_alloc(px * sizeof *q);
    uint32_t *sc = mem_alloc(px * sizeof *sc);
    int32_t *uq = mem_alloc(px * sizeof *uq);
    int32_t *dm = mem_alloc(px * sizeof *dm);
    struct kura_regs regs;
    if (!q || !sc || !uq || !dm || kura_regs_init(&regs, 0.03, 0.045, 0))
        return 1;
    struct rng r;
    rng_stream(&r, 2, "bench-kura-sim-map", 0, 0);
    for (size_t i = 0; i < px; i++)
        q[i] = (int16_t)(uint16_t)rng_below(&r, 65536);
    kura_sc_map(q, (size_t)h, (size_t)w, sc);
    kura_fixed_drift_map(q, (size_t)h, (size_t)w, &regs, uq, dm, NULL);

    /* 1. simulation speed over the 25 shapes, three option sets */
    const char *names[3] = {"plain", "checked", "checked+activity"};
    for (int mode = -1; mode < 3; mode++) { /* mode -1: untimed warm-up */
        uint64_t pe_cycles = 0;
        int reps = 4;
        double t0 = now_s();
        for (int rep = 0; rep < reps; rep++)
            for (int i = 0; i < 5; i++)
                for (int j = 0; j < 5; j++) {
                    struct kura_sim *s;
                    struct kura_sim_result res;
                    struct errmsg e = {0};
                    struct kura_sim_opts o = {.check = mode >= 1, .activity = mode == 2};
                    if (kura_sim_new(&s, shapes[i], shapes[j]) ||
                        kura_sim_run(s, sc, h, w, uq, NULL, &o, &res, &e)) {
                        fprintf(stderr, "bench_kura_sim: %s\n", e.text);
                        return 1;
                    }
                    pe_cycles += res.pe_cycles;
                    kura_sim_free(s);
                }
        double sec = now_s() - t0;
        if (mode < 0)
            continue;
        printf("bench_kura_sim: sim %-17s 25 shapes x %d on 96x96: %.3f s, %.3g PE-cycles/s\n", names[mode],
               reps, sec, (double)pe_cycles / sec);
    }

    /* 2 and 3: replays through the engine on in-memory traces */
    const char *env = getenv("KURA_BENCH_STEPS");
    int steps = env ? atoi(env) : 1000;
    if (steps < 3)
        steps = 3;
    struct trace_mem t;
    if (trace_build(&t, h, w, 101) != 0)
        return 1;
    double an = replay(&t, "{\"model\":\"kura\"}", NULL);
    double ca = replay(&t, "{\"model\":\"kura\",\"cycle_accurate\":true}", NULL);
    double act = replay(&t, "{\"model\":\"kura\",\"activity\":true}", NULL);
    printf("bench_kura_sim: replay H20W5, 100 steps 96x96: analytic %.3f s, cycle-accurate %.3f s (%.1fx), "
           "+activity %.3f s (%.1fx)\n",
           an, ca, ca / an, act, act / an);
    trace_free(&t);

    if (trace_build(&t, h, w, steps + 1) != 0)
        return 1;
    /* best of three, alternating, so warm-up and neighbours' load hit both alike */
    double one = INFINITY, sweep = INFINITY;
    for (int rep = 0; rep < 3; rep++) {
        double a = replay(&t, "{\"model\":\"kura\"}", NULL);
        double b = replay(&t, "{\"model\":\"kura\"}",
                          "{\"n_h\":[5,10,15,20,25],\"n_w\":[5,10,15,20,25]}");
        one = a < one ? a : one;
        sweep = b < sweep ? b : sweep;
    }
    double sep = 0;
    for (int i = 0; i < 5; i++)
        for (int j = 0; j < 5; j++) {
            char js[96];
            snprintf(js, sizeof js, "{\"model\":\"kura\",\"n_h\":%d,\"n_w\":%d}", shapes[i],
                     shapes[j]);
            sep += replay(&t, js, NULL);
        }
    printf("bench_kura_sim: 25-config analytic sweep, %d steps 96x96: one pass %.3f s, one replay %.3f s "
           "(ratio %.2f, target <= 1.5), 25 separate replays %.3f s (%.1fx the one pass)\n",
           steps, sweep, one, sweep / one, sep, sep / sweep);
    trace_free(&t);
    mem_free(q);
    mem_free(sc);
    mem_free(uq);
    mem_free(dm);
    return 0;
}
