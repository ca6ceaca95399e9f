/*
 * bench_salca: selection of one head at n = 32K and 128K (docs/salca.md#selection
 * performance). Compares the histogram threshold (INT8 scores + max-pool + histogram +
 * threshold + filter, the docs/salca.md#selection path on given FP16 scores) with exact top-k by
 * sorting the FP32 scores (qsort) and by nth_element-style selection, and reports the whole
 * Salca selection (relevance from the 2-bit records + the steps above) in tokens/s per core
 * and the key-record bandwidth it implies (20 bytes per token at d = 128, s_f = 1/2).
 * Single thread; median of the repetitions.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "capture/salca/salca_kv.h"
#include "capture/salca/salca_quant.h"
#include "capture/salca/salca_select.h"
#include "common/rng.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_d);
    return v[n / 2];
}

int main(void)
{
    const uint32_t sizes[2] = {32768, 131072};
    const uint32_t d = 128, r = 64;
    for (int si = 0; si < 2; si++) {
        uint32_t n = sizes[si];
        struct rng rg;
        rng_stream(&rg, 1, "bench.salca", n, 0);
        struct salca_kv kv;
        if (salca_kv_init(&kv, d, r, n, 16)) {
            fprintf(stderr, "bench_salca: out of memory\n");
            return 1;
        }
        float k[128], v[128], q[128];
        for (uint32_t i = 0; i < n; i++) {
            for (uint32_t j = 0; j < d; j++) {
                k[j] = (float)(rng_normal(&rg) * (j % 16 == 9 ? 8.0 : 1.0));
                v[j] = (float)rng_normal(&rg);
            }
            salca_kv_append(&kv, k, v);
        }
        salca_kv_finish_prefill(&kv);
        for (uint32_t j = 0; j < d; j++)
            q[j] = (float)rng_normal(&rg);
        struct salca_scratch sc;
        if (salca_scratch_init(&sc, n, d, r, 16)) {
            fprintf(stderr, "bench_salca: out of memory\n");
            return 1;
        }
        uint32_t K = salca_k_fixed(n, (struct salca_ratio){1, 20}, 64);
        /* FP32 full-feature scores for the exact top-k paths */
        for (uint32_t i = 0; i < n; i++)
            sc.s[i] = salca_dot(q, kv.k + (size_t)i * d, d);
        /* FP16 relevance scores once, for the threshold-only timing */
        int32_t Q;
        salca_query_quant(q, kv.heavy, r, sc.qc);
        Q = salca_relevance_lut(sc.qc, r, sc.lut);
        salca_relevance(sc.lut, Q, kv.krec, kv.rb, kv.ks, kv.kz, r, n, sc.a);
        enum { REPS = 15 };
        double t_hist[REPS], t_qsort[REPS], t_nth[REPS], t_full[REPS];
        uint32_t cnt = 0, hist[256];
        int qreps = n > 65536 ? 5 : REPS;
        for (int rep = 0; rep < REPS; rep++) {
            double t0 = now_s();
            salca_int8_scores(sc.a, n, sc.a8, NULL, NULL);
            salca_maxpool_u8(sc.a8, n, 5, sc.p8);
            salca_histogram(sc.p8, n, hist);
            uint32_t T = salca_threshold(hist, n, K, SALCA_CMP_GE);
            cnt = salca_filter(sc.p8, n, T, sc.idx[0]);
            double t1 = now_s();
            salca_topk(sc.s, n, K, sc.idx[1], sc.work);
            double t2 = now_s();
            t_hist[rep] = t1 - t0;
            t_nth[rep] = t2 - t1;
            if (rep < qreps) {
                double t3 = now_s();
                salca_topk_qsort(sc.s, n, K, sc.idx[2], sc.work);
                t_qsort[rep] = now_s() - t3;
            }
            /* the whole Salca selection of one head */
            double t4 = now_s();
            float sq = salca_query_quant(q, kv.heavy, r, sc.qc);
            (void)sq;
            Q = salca_relevance_lut(sc.qc, r, sc.lut);
            salca_relevance(sc.lut, Q, kv.krec, kv.rb, kv.ks, kv.kz, r, n, sc.tmp);
            salca_int8_scores(sc.tmp, n, sc.a8, NULL, NULL);
            salca_maxpool_u8(sc.a8, n, 5, sc.p8);
            salca_histogram(sc.p8, n, hist);
            uint32_t T2 = salca_threshold(hist, n, K, SALCA_CMP_GE);
            cnt = salca_filter(sc.p8, n, T2, sc.idx[3]);
            t_full[rep] = now_s() - t4;
        }
        if (memcmp(sc.idx[1], sc.idx[2], K * sizeof(uint32_t)) != 0) {
            fprintf(stderr, "bench_salca: nth_element and qsort top-k differ\n");
            return 1;
        }
        double h = median(t_hist, REPS), ns = median(t_nth, REPS);
        double qs = median(t_qsort, qreps), full = median(t_full, REPS);
        printf("bench_salca: n=%u K=%u |S|=%u hist_select_ms=%.3f qsort_topk_ms=%.3f "
               "nth_element_topk_ms=%.3f speedup_vs_qsort=%.1fx speedup_vs_nth=%.1fx\n",
               n, K, cnt, h * 1e3, qs * 1e3, ns * 1e3, qs / h, ns / h);
        printf("bench_salca: n=%u whole_selection_ms=%.3f tokens_per_s_per_core=%.3g "
               "key_record_bandwidth_GBps=%.2f\n",
               n, full * 1e3, n / full, n * (double)kv.rb / full / 1e9);
        salca_scratch_release(&sc);
        salca_kv_release(&kv);
    }
    return 0;
}
