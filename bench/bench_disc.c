/*
 * bench_disc: speed of the DiSC capture's DiT (docs/disc.md):
 *   1. one dense forward pass of `tiny` at 512 px (N = 1024 tokens);
 *   2. a step with 50% of the tokens pruned by CTR against a dense step (target >= 1.8x),
 *      and a step keeping no token (the part CTR cannot prune, which bounds its speed-up);
 *   3. an ST reuse step with about 60% mask sparsity against the dense step, and the
 *      attention kernels alone (masked SDDMM/softmax/SpMM against dense BLAS attention).
 * Times are the best of --reps runs on --threads threads (default ACCELTRACE_THREADS or all
 * CPUs); the steps of parts 2 and 3 and the two kernels run in turn within each round, so
 * each ratio compares runs made at the same time. With --dump DIR it writes the weights
 * (DIR/weights.safetensors, F32), the text (DIR/text.f32, T x D_c), the latent
 * (DIR/latent.f32, C_in x H x W), the timestep
 * (DIR/t.txt) and this forward's eps (DIR/eps.f32) for bench/peers/dit_torch.py, plus a
 * CTR step (DIR/ctr_*: after a dense step at the same t fills the caches, a step at latent
 * ctr_latent.f32 and timestep ctr_t.txt keeping the tokens in ctr_kept.i32) and its eps.
 *
 * --model micro (tests of the peer) replaces tiny; --model dit-micro runs the class-conditional
 * DiT with class 207 (no text) for bench/peers/dit_class_torch.py; --forward-only stops
 * after part 1.
 *
 * usage: bench_disc [--reps R] [--threads N] [--dump DIR] [--model NAME] [--forward-only]
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capture/disc/dit.h"
#include "capture/disc/dit_impl.h" /* the attention kernels alone */
#include "capture/nn/nn.h"
#include "common/mem.h"
#include "common/progress.h"
#include "common/rng.h"
#include "common/threads.h"

static int write_raw(const char *dir, const char *name, const void *d, size_t n)
{
    char p[4096];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "wb");
    if (!f || fwrite(d, 1, n, f) != n) {
        if (f)
            fclose(f);
        return -1;
    }
    return fclose(f);
}

int main(int argc, char **argv)
{
    int reps = 2, threads = threads_default();
    const char *dump = NULL, *model = "tiny";
    int image_size = 0; /* the config's default */
    bool forward_only = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--reps") && i + 1 < argc)
            reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--threads") && i + 1 < argc)
            threads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--dump") && i + 1 < argc)
            dump = argv[++i];
        else if (!strcmp(argv[i], "--forward-only"))
            forward_only = true;
        else if (!strcmp(argv[i], "--model") && i + 1 < argc)
            model = argv[++i];
        else if (!strcmp(argv[i], "--image-size") && i + 1 < argc)
            image_size = atoi(argv[++i]);
        else {
            fprintf(stderr,
                    "usage: bench_disc [--reps R] [--threads N] [--dump DIR] [--model NAME] "
                    "[--image-size PX] [--forward-only]\n");
            return 2;
        }
    }
    if (reps < 1)
        reps = 1;
    if (threads < 1)
        threads = 1;
    nn_set_threads(threads);
    struct thread_pool *pool = pool_new(threads);
    struct dit_config cfg;
    struct errmsg e = {0};
    struct dit_model *m = NULL;
    if (!pool || dit_config_get(&cfg, model, image_size, &e) || dit_model_new_seeded(&m, &cfg, 0, &e)) {
        fprintf(stderr, "bench_disc: setup failed: %s\n", errmsg_text(&e));
        return 1;
    }
    size_t T = (size_t)cfg.text_tokens, Dc = (size_t)cfg.caption, N = (size_t)cfg.tokens;
    size_t n = (size_t)cfg.c_in * cfg.lat * cfg.lat;
    float *text = mem_alloc(T * Dc * 4), *x = mem_alloc(n * 4), *eps = mem_alloc(n * 4);
    int32_t *kept = mem_alloc(N * 4);
    struct rng r;
    rng_stream(&r, 1, "text", 0, 0);
    for (size_t i = 0; i < T * Dc; i++)
        text[i] = (float)rng_normal(&r);
    rng_stream(&r, 0, "latent", 0, 0);
    for (size_t i = 0; i < n; i++)
        x[i] = (float)rng_normal(&r);
    if (cfg.class_cond)
        dit_model_set_class(m, 1, 0, 207); /* DiT configs: class 207, no text */
    else
        dit_model_set_text(m, 1, 0, text);
    struct dit_state *dense = NULL, *ctr = NULL, *st = NULL;
    if (dit_state_new(&dense, m, 1, false, false) || dit_state_new(&ctr, m, 1, true, false) ||
        dit_state_new(&st, m, 1, false, true)) {
        fprintf(stderr, "bench_disc: out of memory\n");
        return 1;
    }
    const double t_step = 500.0;
    struct dit_fwd fd = {
        .t = t_step, .n_kept = (int)N, .st = DIT_ST_OFF, .st_target = -1, .pool = pool};

    /* 1. dense forward */
    double best_dense = 1e30;
    for (int i = 0; i < reps + 1; i++) { /* first run warms up */
        double t0 = progress_now_s();
        dit_forward(m, dense, x, &fd, eps);
        double dt = progress_now_s() - t0;
        if (i > 0 || reps == 0)
            best_dense = dt < best_dense ? dt : best_dense;
    }
    printf("bench_disc: %s forward N=%zu threads=%d: %.3f s\n", model, N, threads, best_dense);
    if (dump) {
        char tb[32];
        int len = snprintf(tb, sizeof tb, "%g\n", t_step);
        char p[4096];
        snprintf(p, sizeof p, "%s/weights.safetensors", dump);
        if (dit_model_save(m, p, 0, &e) || write_raw(dump, "text.f32", text, T * Dc * 4) ||
            write_raw(dump, "latent.f32", x, n * 4) || write_raw(dump, "eps.f32", eps, n * 4) ||
            write_raw(dump, "t.txt", tb, (size_t)len)) {
            fprintf(stderr, "bench_disc: cannot write to '%s' %s\n", dump, errmsg_text(&e));
            return 1;
        }
        printf("bench_disc: wrote %s/{weights.safetensors,text.f32,latent.f32,eps.f32,t.txt}\n",
               dump);
    }

    if (dump) {
        /* CTR reference data (docs/disc.md#ctr-selection) for bench/peers/dit_torch.py --ctr: a dense step at
         * (x, t) fills the caches, then a step at (x2, t2) keeps every other token. */
        struct dit_state *cs = NULL;
        float *x2 = mem_alloc(n * 4), *eps2 = mem_alloc(n * 4);
        int32_t *half = mem_alloc(N * 4);
        if (!x2 || !eps2 || !half || dit_state_new(&cs, m, 1, true, false)) {
            fprintf(stderr, "bench_disc: out of memory\n");
            return 1;
        }
        rng_stream(&r, 0, "bench-ctr-dump", 0, 0);
        for (size_t i = 0; i < n; i++)
            x2[i] = x[i] + 0.3f * (float)rng_normal(&r);
        size_t nh = 0;
        for (size_t i = 0; i < N; i += 2)
            half[nh++] = (int32_t)i;
        struct dit_fwd f2 = fd;
        dit_forward(m, cs, x, &fd, eps2);
        f2.t = 450.0;
        f2.kept = half;
        f2.n_kept = (int)nh;
        dit_forward(m, cs, x2, &f2, eps2);
        char tb[32];
        int len = snprintf(tb, sizeof tb, "%g\n", f2.t);
        if (write_raw(dump, "ctr_latent.f32", x2, n * 4) ||
            write_raw(dump, "ctr_kept.i32", half, nh * 4) ||
            write_raw(dump, "ctr_eps.f32", eps2, n * 4) ||
            write_raw(dump, "ctr_t.txt", tb, (size_t)len)) {
            fprintf(stderr, "bench_disc: cannot write to '%s'\n", dump);
            return 1;
        }
        printf("bench_disc: wrote %s/ctr_{latent.f32,kept.i32,eps.f32,t.txt}\n", dump);
        dit_state_free(cs);
        mem_free(x2), mem_free(eps2), mem_free(half);
    }
    if (forward_only) {
        dit_state_free(dense);
        dit_state_free(ctr);
        dit_state_free(st);
        dit_model_free(m);
        pool_free(pool);
        mem_free(text), mem_free(x), mem_free(eps), mem_free(kept);
        return 0;
    }

    /* 2. CTR: step 0 fills the caches, then half of the tokens (a seeded random half). */
    dit_forward(m, ctr, x, &fd, eps);
    rng_stream(&r, 0, "bench-ctr", 0, 0);
    size_t nk = 0;
    for (size_t i = 0; i < N; i++)
        if (nk < N / 2 && rng_below(&r, N - i) < N / 2 - nk)
            kept[nk++] = (int32_t)i;
    struct dit_fwd fc = fd;
    fc.kept = kept;
    fc.n_kept = (int)nk;
    /* the step keeping no token: what CTR cannot prune (LN-modulate, K and V of every token,
     * the patch embedding and the final layer) */
    struct dit_fwd fz = fc;
    fz.n_kept = 0;

    /* 3. ST: generate masks at ~60% sparsity (per-block alpha from the target), then reuse. */
    float theta[64], alpha[64];
    bool shrt[64];
    struct dit_fwd fg = fd;
    fg.st = DIT_ST_GENERATE;
    fg.st_target = 0.6;
    fg.theta = theta;
    fg.theta_out = theta;
    fg.alpha_out = alpha;
    fg.short_out = shrt;
    fg.pool = pool;
    dit_forward(m, st, x, &fg, eps);
    uint64_t nnz = 0;
    size_t words = dit_mask_words(&cfg);
    for (int b = 0; b < cfg.depth; b++)
        for (int h = 0; h < cfg.heads; h++) {
            const uint64_t *mk = dit_state_mask(st, 0, b, h);
            for (size_t w = 0; w < N * words; w++)
                nnz += (uint64_t)__builtin_popcountll(mk[w]);
        }
    double sp = 1.0 - (double)nnz / ((double)cfg.depth * cfg.heads * N * N);
    struct dit_fwd fr = fd;
    fr.st = DIT_ST_REUSE;
    fr.theta = theta;
    fr.pool = pool;
    /* The steps a ratio compares run in turn within each round (dense, CTR, no token kept,
     * ST reuse), so a busy moment of a shared machine slows one round of each rather than
     * all runs of one; each is the best of its rounds. */
    enum { S_DENSE, S_CTR, S_NONE, S_REUSE, S_N };
    struct dit_state *sst[S_N] = {dense, ctr, ctr, st};
    const struct dit_fwd *sf[S_N] = {&fd, &fc, &fz, &fr};
    double best_step[S_N] = {1e30, 1e30, 1e30, 1e30};
    for (int i = 0; i < reps; i++)
        for (int k = 0; k < S_N; k++) {
            double t0 = progress_now_s();
            dit_forward(m, sst[k], x, sf[k], eps);
            double dt = progress_now_s() - t0;
            best_step[k] = dt < best_step[k] ? dt : best_step[k];
        }
    double step_dense = best_step[S_DENSE], best_ctr = best_step[S_CTR],
           best_none = best_step[S_NONE];
    printf("bench_disc: CTR step, %zu of %zu tokens kept: %.3f s, speed-up vs dense %.2fx "
           "(target >= 1.8x; dense step in the same rounds %.3f s)\n",
           nk, N, best_ctr, step_dense / best_ctr, step_dense);
    /* What CTR leaves: the fixed part g (share of the dense step) plus the rest in proportion
     * to the kept share p, so the speed-up is 1/(g + (1-g)p) at best. */
    double gfix = best_none / step_dense, pk = (double)nk / (double)N;
    if (gfix > 1.0)
        gfix = 1.0;
    printf("bench_disc: CTR fixed part (a step keeping no token: K and V of every token, patch "
           "embedding, final layer) %.3f s = %.2f of the dense step: bound at %.0f%% kept "
           "%.2fx\n",
           best_none, gfix, 100.0 * pk, 1.0 / (gfix + (1.0 - gfix) * pk));
    printf("bench_disc: ST reuse step, sparsity %.3f: %.3f s, vs dense step %.2fx (target >= "
           "1.3x)\n",
           sp, best_step[S_REUSE], step_dense / best_step[S_REUSE]);
    /* Attention kernels alone on block 0's masks, random Q, K, V of the real shape, on the
     * same threads: the dense kernel of the capture (BLAS S = QK^T and O = PV on the pool's
     * BLAS threads, softmax rows on the pool) against its masked reuse kernel (the
     * row-compressed SDDMM, softmax and SpMM on the pool's workers). */
    int dh = cfg.head_dim, d = cfg.hidden;
    size_t chunk = (1u << 22) / N < 1 ? 1 : (1u << 22) / N;
    float *q = mem_alloc(N * (size_t)d * 4), *k = mem_alloc(N * (size_t)d * 4),
          *v = mem_alloc(N * (size_t)d * 4), *o = mem_alloc(N * (size_t)d * 4),
          *scr = mem_alloc(chunk * N * 4), *kp = mem_alloc(N * (size_t)dh * 4),
          *vp = mem_alloc(N * (size_t)dh * 4);
    rng_stream(&r, 0, "bench-qkv", 0, 0);
    for (size_t i = 0; i < N * (size_t)d; i++) {
        q[i] = (float)rng_normal(&r);
        k[i] = (float)rng_normal(&r);
        v[i] = (float)rng_normal(&r);
    }
    double best_ad = 1e30, best_as = 1e30;
    uint64_t nnz0 = 0;
    for (int h = 0; h < cfg.heads; h++) {
        const uint64_t *mk = dit_state_mask(st, 0, 0, h);
        for (size_t w = 0; w < N * words; w++)
            nnz0 += (uint64_t)__builtin_popcountll(mk[w]);
    }
    /* the layout choice: the share of 8 x 8 tiles of block 0's masks holding a set entry
     * (a blocked kernel could skip only the empty ones) */
    uint64_t tiles = 0, tiles_set = 0;
    for (int h = 0; h < cfg.heads; h++) {
        const uint64_t *mk = dit_state_mask(st, 0, 0, h);
        for (size_t r0 = 0; r0 < N; r0 += 8)
            for (size_t c0 = 0; c0 < N; c0 += 8) {
                uint64_t any = 0;
                for (size_t rr = r0; rr < r0 + 8 && rr < N; rr++)
                    any |= (mk[rr * words + c0 / 64] >> (c0 % 64)) & 0xffu;
                tiles++;
                tiles_set += any != 0;
            }
    }
    if (dit_ensure_wscratch(m, pool)) {
        fprintf(stderr, "bench_disc: out of memory\n");
        return 1;
    }
    for (int i = 0; i < reps + 1; i++) { /* the first round warms up */
        for (int sparse = 0; sparse < 2; sparse++) {
            double t0 = progress_now_s();
            if (!sparse)
                for (int h = 0; h < cfg.heads; h++) {
                    const float *qh = q + h * dh, *kh = k + h * dh, *vh = v + h * dh;
                    float *oh = o + h * dh;
                    for (size_t r0 = 0; r0 < N; r0 += chunk) {
                        int rows = (int)(N - r0 < chunk ? N - r0 : chunk);
                        dit_attn_dense(pool, rows, (int)N, dh, qh + r0 * d, d, kh, d, vh, d,
                                       oh + r0 * d, d, 0.125f, scr);
                    }
                }
            else {
                /* all heads, the packing of K and V included, as the capture's reuse step
                 * runs them */
                struct dit_reuse_ctx g = {.m = m,
                                          .mask = dit_state_mask(st, 0, 0, 0),
                                          .words = words,
                                          .q = q,
                                          .k = k,
                                          .v = v,
                                          .o = o,
                                          .d = d,
                                          .dh = dh,
                                          .N = (int)N,
                                          .heads = cfg.heads,
                                          .scale = 0.125f,
                                          .kp = kp,
                                          .vp = vp};
                dit_attn_reuse(pool, &g, N);
            }
            double dt = progress_now_s() - t0;
            double *best = sparse ? &best_as : &best_ad;
            if (i > 0)
                *best = dt < *best ? dt : *best;
        }
    }
    /* the reference masked attention (nn_attention with a mask: per-entry bit walk, one
     * thread), the kernel before the row-compressed one, on the same masks */
    double best_ref = 1e30;
    for (int i = 0; i < reps; i++) {
        double t0 = progress_now_s();
        for (int h = 0; h < cfg.heads; h++) {
            struct nn_attn a = {.n_q = (int)N, .n_k = (int)N, .dh = dh, .q = q + h * dh,
                                .ldq = d, .k = k + h * dh, .ldk = d, .v = v + h * dh,
                                .ldv = d, .o = o + h * dh, .ldo = d, .scale = 0.125f,
                                .causal_offset = -1, .scratch = scr,
                                .mask = dit_state_mask(st, 0, 0, h), .mask_words = words};
            nn_attention(&a);
        }
        double dt = progress_now_s() - t0;
        best_ref = dt < best_ref ? dt : best_ref;
    }
    printf("bench_disc: masked attention of one block: reference kernel (1 thread) %.4f s, "
           "row-compressed (%d threads) %.4f s, %.2fx\n",
           best_ref, threads, best_as, best_ref / best_as);
    printf("bench_disc: block 0 masks: %.1f%% of 8x8 tiles hold a set entry\n",
           100.0 * (double)tiles_set / (double)tiles);
    printf("bench_disc: attention of one block (%d heads), sparsity %.3f: dense %.4f s, "
           "masked %.4f s (%d threads each), masked vs dense %.2fx (target >= 1.5x)\n",
           cfg.heads, 1.0 - (double)nnz0 / ((double)cfg.heads * N * N), best_ad, best_as,
           threads, best_ad / best_as);
    /* Amdahl: only self-attention differs between the dense and the reuse step, so with f
     * the share of the dense step spent in it (depth blocks of the kernel timed above) the
     * reuse step's speed-up is 1/((1-f) + f/r) at kernel ratio r, and below 1/(1-f) even
     * with attention for free. */
    double f = cfg.depth * best_ad / step_dense;
    if (f > 1.0)
        f = 1.0;
    printf("bench_disc: self-attention share of the dense step f = %.2f (%d blocks x %.4f s of "
           "%.3f s): reuse step bound at the kernel ratio %.2fx: %.2fx; with free attention: "
           "%.2fx\n",
           f, cfg.depth, best_ad, step_dense, best_ad / best_as,
           1.0 / ((1.0 - f) + f * best_as / best_ad), f < 1.0 ? 1.0 / (1.0 - f) : INFINITY);
    dit_state_free(dense);
    dit_state_free(ctr);
    dit_state_free(st);
    dit_model_free(m);
    pool_free(pool);
    mem_free(text), mem_free(x), mem_free(eps), mem_free(kept);
    mem_free(q), mem_free(k), mem_free(v), mem_free(o), mem_free(scr), mem_free(kp), mem_free(vp);
    return 0;
}
