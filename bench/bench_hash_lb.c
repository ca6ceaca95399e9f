/*
 * bench_hash_lb: throughput of the one-pass DiSC load-balance count (formats/disc_hash,
 * docs/disc.md#load-balance-analyzer) over one 2k-resolution head: a 16384 x 16384 mask at 60%
 * sparsity, 3 hashes x 4 unit counts (8, 16, 32, 64) in one pass, with 1 and 2 threads.
 * Prints MB of mask bits per second and a checksum of the statistics. With --write-mask
 * FILE it also saves the mask (little-endian 64-bit words, row-major) so the numpy peer
 * (bench/peers/hash_lb_numpy.py) counts the very same bits and prints the same checksum.
 *
 * usage: bench_hash_lb [--n N] [--seed S] [--write-mask FILE] [--reps R]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/mem.h"
#include "common/rng.h"
#include "common/threads.h"
#include "formats/disc_hash.h"

static double cpu_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Words with each bit set with probability 102/256 (~0.40): the binary expansion
 * 0.01100110 of p applied to 8 uniform words, least significant digit first. */
static uint64_t word_p40(struct rng *r)
{
    static const int digits[8] = {0, 1, 1, 0, 0, 1, 1, 0}; /* LSB .. MSB of 102 */
    uint64_t x = 0;
    for (int i = 0; i < 8; i++) {
        uint64_t u = rng_u64(r);
        x = digits[i] ? (x | u) : (x & u);
    }
    return x;
}

int main(int argc, char **argv)
{
    uint32_t n = 16384;
    uint64_t seed = 1;
    int reps = 3;
    const char *out = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--n") && i + 1 < argc)
            n = (uint32_t)strtoul(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--seed") && i + 1 < argc)
            seed = strtoull(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc)
            reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--write-mask") && i + 1 < argc)
            out = argv[++i];
        else {
            fprintf(stderr, "usage: bench_hash_lb [--n N] [--seed S] [--reps R] "
                            "[--write-mask FILE]\n");
            return 2;
        }
    }
    if (n < 64 || n % 64 || n > (1u << 16) || reps < 1) {
        fprintf(stderr, "bench_hash_lb: --n must be a multiple of 64 in 64..65536\n");
        return 2;
    }
    const size_t wpr = n / 64, words = (size_t)n * wpr;
    uint64_t *bits = mem_alloc(words * sizeof *bits);
    if (!bits)
        return 1;
    struct rng r;
    rng_stream(&r, seed, "bench_hash_lb", 0, 0);
    for (size_t i = 0; i < words; i++)
        bits[i] = word_p40(&r);
    if (out) {
        FILE *f = fopen(out, "wb");
        if (!f || fwrite(bits, sizeof *bits, words, f) != words || fclose(f) != 0) {
            fprintf(stderr, "bench_hash_lb: cannot write '%s'\n", out);
            return 1;
        }
    }
    const unsigned ub[4] = {3, 4, 5, 6};
    struct disc_lb *lb = NULL;
    if (disc_lb_new(&lb, n, DISC_HASH_K_ODD, ub, 4) < 0)
        return 1;
    const double mb = (double)n * n / 8 / 1e6;
    double mbs[2] = {0, 0}, check[2] = {0, 0};
    for (int t = 1; t <= 2; t++) {
        struct thread_pool *p = t > 1 ? pool_new(t) : NULL;
        double best = 1e30, best_cpu = 1e30;
        for (int rep = 0; rep < reps; rep++) {
            struct disc_lb_acc acc;
            disc_lb_acc_init(&acc, lb);
            double t0 = now_s(), c0 = cpu_s();
            disc_lb_mask(lb, bits, n, wpr, NULL, p, &acc);
            double dt = now_s() - t0, dc = cpu_s() - c0;
            if (dt < best)
                best = dt;
            if (dc < best_cpu)
                best_cpu = dc;
            double c = 0;
            for (int h = 0; h < DISC_HASH_KINDS; h++)
                for (int i = 0; i < 4; i++)
                    c += (double)acc.max_sum[h][i] + acc.std_sum[h][i];
            check[t - 1] = c;
        }
        mbs[t - 1] = mb / best;
        printf("hash_lb n=%u threads=%d: %.3f s wall (%.3f s cpu), %.1f MB/s of mask bits, "
               "checksum %.6f\n",
               n, t, best, best_cpu, mbs[t - 1], check[t - 1]);
        if (p)
            pool_free(p);
    }
    printf("hash_lb 2-thread speedup %.2fx (checksums %s)\n", mbs[1] / mbs[0],
           check[0] == check[1] ? "equal" : "DIFFER");
    disc_lb_free(lb);
    mem_free(bits);
    return check[0] == check[1] ? 0 : 1;
}
