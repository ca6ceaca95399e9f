/*
 * Tests of common/: rng (determinism, uniform/normal moments, von Mises mean cosine),
 * buf, arena, thread pool chunking, sha256 (FIPS 180-2 vectors), crc32c, err strings,
 * mem_fail_after, io_remove_tree, io_mkdir_p, io_same_path and the progress eta. Seed:
 * ACCELTRACE_SEED (default 2026), printed with the first state.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/arena.h"
#include "common/buf.h"
#include "common/crc32c.h"
#include "common/err.h"
#include "common/grow.h"
#include "common/io.h"
#include "common/mem.h"
#include "common/progress.h"
#include "common/rng.h"
#include "common/sha256.h"
#include "common/threads.h"
#include "tests/helpers/test_helpers.h"

static uint64_t seed = 2026;

static void test_rng_determinism(void **state)
{
    (void)state;
    struct rng a, b, c;
    rng_seed(&a, seed);
    rng_seed(&b, seed);
    rng_seed(&c, seed + 1);
    printf("seed %llu: first outputs %016llx\n", (unsigned long long)seed,
           (unsigned long long)rng_u64(&a));
    (void)rng_u64(&b);
    int differ = 0;
    for (int i = 0; i < 1000; i++) {
        uint64_t x = rng_u64(&a);
        assert_int_equal(x, rng_u64(&b));
        differ += x != rng_u64(&c);
    }
    assert_true(differ > 990);
    /* substreams: same arguments same stream, other purpose another stream */
    struct rng s1, s2, s3;
    rng_stream(&s1, seed, "mask", 3, 4);
    rng_stream(&s2, seed, "mask", 3, 4);
    rng_stream(&s3, seed, "kv", 3, 4);
    uint64_t x1 = rng_u64(&s1);
    assert_int_equal(x1, rng_u64(&s2));
    assert_int_not_equal(x1, rng_u64(&s3));
    /* rng_below stays in range and hits every value */
    int seen[7] = {0};
    for (int i = 0; i < 7000; i++) {
        uint64_t v = rng_below(&a, 7);
        assert_true(v < 7);
        seen[v]++;
    }
    for (int i = 0; i < 7; i++)
        assert_true(seen[i] > 850 && seen[i] < 1150);
}

static void test_rng_moments(void **state)
{
    (void)state;
    struct rng r;
    rng_seed(&r, seed);
    const int n = 200000;
    double su = 0, sn = 0, sn2 = 0;
    for (int i = 0; i < n; i++) {
        double u = rng_uniform(&r);
        assert_true(u >= 0 && u < 1);
        su += u;
        double z = rng_normal(&r);
        sn += z;
        sn2 += z * z;
    }
    /* standard errors: uniform mean 1/sqrt(12 n) = 6.5e-4, normal mean 2.2e-3, var 3.2e-3 */
    assert_true(fabs(su / n - 0.5) < 0.004);
    assert_true(fabs(sn / n) < 0.012);
    assert_true(fabs(sn2 / n - 1.0) < 0.016);
}

/* Modified Bessel function I_k(x) by its power series (x small). */
static double bessel_i(int k, double x)
{
    double term = 1, sum = 0;
    for (int i = 1; i <= k; i++)
        term *= x / 2 / i;
    for (int m = 0; m < 40; m++) {
        sum += term;
        term *= (x / 2) * (x / 2) / ((m + 1.0) * (m + 1.0 + k));
    }
    return sum;
}

static void test_von_mises(void **state)
{
    (void)state;
    /* E[cos(theta - mu)] = I1(kappa) / I0(kappa) for a von Mises(mu, kappa) variable;
     * kappa = 1.2: 0.71475 / 1.39373 = 0.51283. 10^6 draws: standard error of the mean
     * cosine about 6.4e-4, so the tolerance 0.003 is > 4 standard errors. */
    double want = bessel_i(1, 1.2) / bessel_i(0, 1.2);
    assert_true(fabs(want - 0.51278) < 0.0002);
    struct rng r;
    rng_seed(&r, seed);
    const int n = 1000000;
    const double mu = 0.7;
    double sc = 0, ss = 0;
    for (int i = 0; i < n; i++) {
        double t = rng_von_mises(&r, mu, 1.2);
        assert_true(t > -M_PI - 1e-12 && t <= M_PI + 1e-12);
        sc += cos(t - mu);
        ss += sin(t - mu);
    }
    printf("von Mises kappa 1.2: mean cos %.5f (I1/I0 = %.5f), mean sin %.5f\n", sc / n, want,
           ss / n);
    assert_true(fabs(sc / n - want) < 0.003);
    assert_true(fabs(ss / n) < 0.003);
    /* kappa = 0 is uniform on the circle */
    sc = 0;
    for (int i = 0; i < 100000; i++)
        sc += cos(rng_von_mises(&r, 0, 0));
    assert_true(fabs(sc / 100000) < 0.012);
}

static void test_buf(void **state)
{
    (void)state;
    struct buf b;
    buf_init(&b);
    for (int i = 0; i < 1000; i++)
        assert_int_equal(buf_append(&b, "abc", 3), 0);
    assert_int_equal(b.len, 3000);
    assert_int_equal(buf_printf(&b, "|%d|%s", 42, "x"), 0);
    assert_int_equal(b.len, 3005);
    assert_memory_equal(b.data + 3000, "|42|x", 6); /* NUL-terminated */
    buf_clear(&b);
    assert_int_equal(b.len, 0);
    /* a failed allocation leaves the buffer intact */
    assert_int_equal(buf_append(&b, "keep", 4), 0);
    mem_fail_after(1);
    int rc = buf_reserve(&b, (size_t)1 << 30);
    mem_fail_after(0);
    assert_int_equal(rc, ERR_NOMEM);
    assert_int_equal(b.len, 4);
    assert_memory_equal(b.data, "keep", 4);
    /* the error is sticky: later appends are no-ops returning it, until buf_clear */
    assert_int_equal(buf_err(&b), ERR_NOMEM);
    assert_int_equal(buf_append(&b, "more", 4), ERR_NOMEM);
    assert_int_equal(buf_printf(&b, "%d", 7), ERR_NOMEM);
    assert_int_equal(buf_reserve(&b, 1), ERR_NOMEM);
    assert_int_equal(b.len, 4);
    buf_clear(&b);
    assert_int_equal(buf_err(&b), 0);
    assert_int_equal(buf_append(&b, "ok", 2), 0);
    assert_memory_equal(b.data, "ok", 3);
    assert_int_equal(buf_reserve(&b, SIZE_MAX), ERR_NOMEM); /* overflow */
    assert_int_equal(buf_err(&b), ERR_NOMEM);
    buf_release(&b);
    assert_null(b.data);
    assert_int_equal(buf_err(&b), 0);
}

static void test_arena(void **state)
{
    (void)state;
    struct arena a;
    arena_init(&a, 1024);
    char *prev = NULL;
    for (int i = 0; i < 500; i++) {
        char *p = arena_alloc(&a, 37);
        assert_non_null(p);
        assert_int_equal((uintptr_t)p % 8, 0); /* aligned */
        memset(p, i & 0xff, 37);
        if (prev)
            assert_int_equal((unsigned char)prev[36], (unsigned char)((i - 1) & 0xff));
        prev = p;
    }
    char *big = arena_alloc(&a, 10000); /* larger than a block */
    assert_non_null(big);
    memset(big, 1, 10000);
    int *z = arena_calloc(&a, 100, sizeof(int));
    assert_non_null(z);
    for (int i = 0; i < 100; i++)
        assert_int_equal(z[i], 0);
    arena_reset(&a);
    assert_non_null(arena_alloc(&a, 10));
    arena_release(&a);
}

struct chunk_log {
    size_t begin[8], end[8];
    int calls[8];
    long sum;
};

static void chunk_fn(void *ctx, size_t begin, size_t end, int worker)
{
    struct chunk_log *l = ctx;
    l->begin[worker] = begin;
    l->end[worker] = end;
    l->calls[worker]++;
    long s = 0;
    for (size_t i = begin; i < end; i++)
        s += (long)i;
    __atomic_add_fetch(&l->sum, s, __ATOMIC_RELAXED);
}

static void test_pool_chunks(void **state)
{
    (void)state;
    for (int t = 1; t <= 4; t++) {
        struct thread_pool *p = pool_new(t);
        assert_non_null(p);
        assert_int_equal(pool_size(p), t);
        for (size_t n = 0; n < 40; n += 13) {
            struct chunk_log l;
            memset(&l, 0, sizeof l);
            pool_for(p, n, chunk_fn, &l);
            assert_int_equal(l.sum, (long)(n * (n ? n - 1 : 0) / 2));
            /* chunk w covers [n w / T, n (w + 1) / T) (common/threads.h) */
            for (int w = 0; w < t; w++) {
                size_t b = n * (size_t)w / (size_t)t, e = n * (size_t)(w + 1) / (size_t)t;
                if (b == e)
                    continue;
                assert_int_equal(l.calls[w], 1);
                assert_int_equal(l.begin[w], b);
                assert_int_equal(l.end[w], e);
            }
        }
        pool_free(p);
    }
}

/* Workers in phases: in phase k every worker writes its slot, waits at the barrier, then
 * checks that every other worker's slot holds phase k (nothing read before all wrote), and
 * waits again before the next phase overwrites the slots. 200 phases on 1, 2 and 4 threads
 * (more threads than this machine's CPUs, so a waiter yields). */
struct barrier_run {
    struct pool_barrier bar;
    int slot[8];
    int workers;
    atomic_int bad;
};

static void barrier_fn(void *ctx, size_t begin, size_t end, int worker)
{
    struct barrier_run *r = ctx;
    (void)begin, (void)end;
    for (int k = 1; k <= 200; k++) {
        __atomic_store_n(&r->slot[worker], k, __ATOMIC_RELAXED);
        pool_barrier_wait(&r->bar);
        for (int w = 0; w < r->workers; w++)
            if (__atomic_load_n(&r->slot[w], __ATOMIC_RELAXED) != k)
                atomic_fetch_add(&r->bad, 1);
        pool_barrier_wait(&r->bar);
    }
}

static void test_pool_barrier(void **state)
{
    (void)state;
    for (int t = 1; t <= 4; t *= 2) {
        struct thread_pool *p = pool_new(t);
        assert_non_null(p);
        struct barrier_run r = {.workers = t};
        pool_barrier_init(&r.bar, p);
        atomic_init(&r.bad, 0);
        pool_for(p, (size_t)t, barrier_fn, &r);
        assert_int_equal(atomic_load(&r.bad), 0);
        for (int w = 0; w < t; w++)
            assert_int_equal(r.slot[w], 200);
        pool_free(p);
    }
}

static void test_sha256(void **state)
{
    (void)state;
    /* FIPS 180-2 appendix B vectors */
    char hex[65];
    sha256_hex("abc", 3, hex);
    assert_string_equal(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    sha256_hex("", 0, hex);
    assert_string_equal(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    const char *two = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    sha256_hex(two, strlen(two), hex);
    assert_string_equal(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    /* one million 'a', fed in uneven pieces */
    struct sha256 s;
    sha256_init(&s);
    char a[1000];
    memset(a, 'a', sizeof a);
    size_t left = 1000000, k = 1;
    while (left) {
        size_t n = k % 1000 + 1;
        if (n > left)
            n = left;
        sha256_update(&s, a, n);
        left -= n;
        k = k * 7 + 3;
    }
    uint8_t d[32];
    sha256_final(&s, d);
    sha256_to_hex(d, hex);
    assert_string_equal(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
    /* the SHA-NI path (when the CPU has it) and the portable one agree on random data */
    struct rng r;
    rng_seed(&r, seed);
    static uint8_t data[10007];
    for (size_t i = 0; i < sizeof data; i++)
        data[i] = (uint8_t)rng_u64(&r);
    for (size_t n = 0; n < sizeof data; n += 997) {
        char fast[65], slow[65];
        sha256_hex(data, n, fast);
        setenv("ACCELTRACE_NO_SHANI", "1", 1);
        sha256_hex(data, n, slow);
        unsetenv("ACCELTRACE_NO_SHANI");
        assert_string_equal(fast, slow);
    }
}

static void test_crc32c(void **state)
{
    (void)state;
    /* check value of CRC-32C (RFC 3720 appendix B.4 polynomial) */
    assert_int_equal(crc32c_update(0, "123456789", 9), 0xE3069283u);
    assert_int_equal(crc32c_update_sw(0, "123456789", 9), 0xE3069283u);
    uint8_t zeros[32] = {0};
    assert_int_equal(crc32c_update(0, zeros, 32), 0x8A9136AAu); /* RFC 3720 B.4 */
    struct rng r;
    rng_seed(&r, seed);
    uint8_t buf[1000];
    for (size_t i = 0; i < sizeof buf; i++)
        buf[i] = (uint8_t)rng_u64(&r);
    for (size_t n = 0; n < sizeof buf; n += 37) {
        uint32_t whole = crc32c_update(0, buf, n);
        assert_int_equal(whole, crc32c_update_sw(0, buf, n));
        assert_int_equal(whole,
                         crc32c_update(crc32c_update(0, buf, n / 3), buf + n / 3, n - n / 3));
    }
}

/* grow: first capacity GROW_MIN, doubling, the exact need when larger, overflow refused, and
 * a failed allocation leaves the array and its capacity as they were. */
static void test_grow(void **state)
{
    (void)state;
    int *a = NULL;
    size_t cap = 0;
    assert_int_equal(grow((void **)&a, &cap, 0, sizeof *a), 0);
    assert_null(a);
    assert_int_equal(grow((void **)&a, &cap, 1, sizeof *a), 0);
    assert_int_equal(cap, GROW_MIN);
    for (int i = 0; i < GROW_MIN; i++)
        a[i] = i;
    assert_int_equal(grow((void **)&a, &cap, GROW_MIN + 1, sizeof *a), 0);
    assert_int_equal(cap, 2 * GROW_MIN);
    assert_int_equal(a[GROW_MIN - 1], GROW_MIN - 1); /* contents kept */
    assert_int_equal(grow((void **)&a, &cap, 1000, sizeof *a), 0);
    assert_int_equal(cap, 1000);
    int *before = a;
    assert_int_equal(grow((void **)&a, &cap, 999, sizeof *a), 0); /* no-op */
    assert_ptr_equal(a, before);
    assert_int_equal(grow((void **)&a, &cap, SIZE_MAX / 2, sizeof *a), ERR_LIMIT);
    assert_int_equal(cap, 1000);
    mem_fail_after(1);
    assert_int_equal(grow((void **)&a, &cap, 1001, sizeof *a), ERR_NOMEM);
    mem_fail_after(0);
    assert_ptr_equal(a, before);
    assert_int_equal(cap, 1000);
    assert_int_equal(a[GROW_MIN - 1], GROW_MIN - 1);
    mem_free(a);
}

static void test_err_and_mem(void **state)
{
    (void)state;
    assert_string_equal(err_str(ERR_DATA), "corrupt input data");
    assert_string_equal(err_str(1), "unknown error");
    assert_string_equal(err_str(-100), "unknown error");
    /* every code has its own text: none falls through to "unknown error", none repeats */
    for (int c = 0; c > -ERR_COUNT_; c--) {
        assert_string_not_equal(err_str(c), "unknown error");
        for (int d = c + 1; d <= 0; d++)
            assert_string_not_equal(err_str(c), err_str(d));
    }
    assert_string_equal(err_str(ERR_NOINPUT), "input file cannot be opened");
    assert_string_equal(err_str(ERR_OK), "success");
    assert_int_equal(err_exit_code(0), 0);
    assert_int_equal(err_exit_code(ERR_USAGE), 2);
    assert_int_equal(err_exit_code(ERR_DATA), 3);
    assert_int_equal(err_exit_code(ERR_LIMIT), 3);
    assert_int_equal(err_exit_code(ERR_IO), 1);
    struct errmsg e = {0, ""};
    assert_int_equal(errmsg_set(&e, ERR_DATA, "bad %s in '%s'", "thing", "f"), ERR_DATA);
    assert_string_equal(errmsg_text(&e), "bad thing in 'f'");
    /* mem_fail_after(3): allocations 1 and 2 succeed, 3 and later fail until disarmed */
    mem_fail_after(3);
    void *p1 = mem_alloc(8), *p2 = mem_alloc(8), *p3 = mem_alloc(8), *p4 = mem_calloc(1, 8);
    mem_fail_after(0);
    assert_non_null(p1);
    assert_non_null(p2);
    assert_null(p3);
    assert_null(p4);
    void *p5 = mem_alloc(8);
    assert_non_null(p5);
    mem_free(p1);
    mem_free(p2);
    mem_free(p5);
    mem_free(NULL);
    size_t out;
    assert_false(mem_mul(SIZE_MAX / 2 + 1, 2, &out));
    assert_true(mem_mul(1000, 1000, &out));
    assert_int_equal(out, 1000000);
    assert_false(mem_add(SIZE_MAX, 1, &out));
    char *s = mem_strdup("dup");
    assert_string_equal(s, "dup");
    mem_free(s);
}

/* io_remove_tree removes nested folders and files, removes a symbolic link without
 * touching its target, and accepts a missing path. */
static void test_remove_tree(void **state)
{
    (void)state;
    char root[] = "/tmp/acceltrace-rmtree-XXXXXX";
    assert_non_null(mkdtemp(root));
    char p[512], outside[128], tree[128];
    snprintf(tree, sizeof tree, "%s/tree", root);
    snprintf(outside, sizeof outside, "%s/outside.txt", root);
    FILE *f = fopen(outside, "w");
    assert_non_null(f);
    fputs("keep\n", f);
    fclose(f);
    snprintf(p, sizeof p, "%s/a/b", tree);
    assert_int_equal(io_mkdir_p(p, 0755, NULL), 0);
    snprintf(p, sizeof p, "%s/a/b/file.bin", tree);
    f = fopen(p, "w");
    assert_non_null(f);
    fclose(f);
    snprintf(p, sizeof p, "%s/a/link", tree);
    assert_int_equal(symlink(outside, p), 0);
    snprintf(p, sizeof p, "%s/dirlink", tree);
    assert_int_equal(symlink(root, p), 0); /* following it would delete everything */
    assert_int_equal(io_remove_tree(tree), 0);
    struct stat st;
    assert_int_not_equal(lstat(tree, &st), 0);
    assert_int_equal(stat(outside, &st), 0);
    assert_int_equal(io_remove_tree(tree), 0);    /* missing: fine */
    assert_int_equal(io_remove_tree(outside), 0); /* a plain file */
    assert_int_not_equal(stat(outside, &st), 0);
    assert_int_equal(rmdir(root), 0);
}

/* io_mkdir_p makes every missing folder of a path, accepts what is there, and names the
 * path when a part is a file, too long or empty. */
static void test_mkdir_p(void **state)
{
    (void)state;
    char root[] = "/tmp/acceltrace-mkdirp-XXXXXX";
    assert_non_null(mkdtemp(root));
    char p[256], q[1024];
    struct stat st;
    struct errmsg e = {0};
    snprintf(p, sizeof p, "%s/a//b/c/", root); /* doubled and trailing '/' */
    assert_int_equal(io_mkdir_p(p, 0700, &e), 0);
    snprintf(q, sizeof q, "%s/a/b/c", root);
    assert_int_equal(stat(q, &st), 0);
    assert_true(S_ISDIR(st.st_mode));
    assert_int_equal(st.st_mode & 0077, 0);       /* the mode, less the umask */
    assert_int_equal(io_mkdir_p(q, 0700, &e), 0); /* already there */
    snprintf(p, sizeof p, "%s/link", root);
    assert_int_equal(symlink(q, p), 0);
    assert_int_equal(io_mkdir_p(p, 0700, &e), 0); /* a link to a folder is a folder */
    snprintf(p, sizeof p, "%s/a/file", root);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fclose(f);
    /* a file named as the folder: the command line's mistake, a usage error */
    assert_int_equal(io_mkdir_p(p, 0700, &e), ERR_USAGE);
    snprintf(q, sizeof q, "cannot create folder '%s': Not a directory", p);
    assert_string_equal(errmsg_text(&e), q);
    snprintf(q, sizeof q, "%s/below/x", p);
    assert_int_equal(io_mkdir_p(q, 0700, &e), ERR_USAGE);
    assert_non_null(strstr(errmsg_text(&e), q));
    assert_int_equal(io_mkdir_p("", 0700, &e), ERR_USAGE);
    char *longp = malloc(5000);
    assert_non_null(longp);
    memset(longp, 'x', 4999);
    longp[4999] = 0;
    assert_int_equal(io_mkdir_p(longp, 0700, &e), ERR_LIMIT);
    free(longp);
    assert_int_equal(io_remove_tree(root), 0);
}

/* io_same_path: the same file by inode, or by name before it exists; outputs checked
 * against each other by io_check_distinct. */
static void test_same_path(void **state)
{
    (void)state;
    char root[] = "/tmp/acceltrace-samepath-XXXXXX";
    assert_non_null(mkdtemp(root));
    char a[300], b[300], c[300];
    snprintf(a, sizeof a, "%s/x.csv", root);
    snprintf(b, sizeof b, "%s/./sub/../x.csv", root);
    snprintf(c, sizeof c, "%s/y.csv", root);
    char sub[300];
    snprintf(sub, sizeof sub, "%s/sub", root);
    assert_int_equal(mkdir(sub, 0700), 0);
    assert_true(io_same_path(a, b)); /* neither exists yet */
    assert_false(io_same_path(a, c));
    assert_false(io_same_path(a, NULL));
    FILE *f = fopen(a, "w");
    assert_non_null(f);
    fclose(f);
    assert_true(io_same_path(a, b));
    char l[300];
    snprintf(l, sizeof l, "%s/link.csv", root);
    assert_int_equal(symlink(a, l), 0);
    assert_true(io_same_path(l, a)); /* through the link once it exists */
    struct errmsg e = {0};
    const char *outs[] = {c, a, b};
    assert_int_equal(io_check_distinct(NULL, 0, outs, 3, &e), ERR_USAGE);
    assert_non_null(strstr(errmsg_text(&e), "outputs '"));
    assert_non_null(strstr(errmsg_text(&e), "are the same file"));
    assert_int_equal(io_check_distinct(NULL, 0, outs, 2, &e), 0);
    assert_int_equal(io_remove_tree(root), 0);
}

/* The estimate of time left: rate so far, units and the cases without one. */
static void test_progress_eta(void **state)
{
    (void)state;
    struct progress p;
    progress_init(&p, "t", 100, true);
    char buf[32];
    p.t_start_s = 1000.0;
    p.done = 25;
    progress_eta_text(&p, 1010.0, buf, sizeof buf); /* 10 s for 25: 30 s for 75 */
    assert_string_equal(buf, " eta 30s");
    p.done = 1;
    progress_eta_text(&p, 1010.0, buf, sizeof buf); /* 990 s */
    assert_string_equal(buf, " eta 16m30s");
    p.total = 1000;
    progress_eta_text(&p, 1010.0, buf, sizeof buf); /* 9990 s */
    assert_string_equal(buf, " eta 2h46m");
    p.done = 0;
    progress_eta_text(&p, 1010.0, buf, sizeof buf);
    assert_string_equal(buf, " eta ?");
    p.done = 1000;
    progress_eta_text(&p, 1010.0, buf, sizeof buf);
    assert_string_equal(buf, "");
    p.total = 0;
    p.done = 5;
    progress_eta_text(&p, 1010.0, buf, sizeof buf);
    assert_string_equal(buf, "");
}

int main(void)
{
    seed = th_seed(seed);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rng_determinism),
        cmocka_unit_test(test_rng_moments),
        cmocka_unit_test(test_von_mises),
        cmocka_unit_test(test_buf),
        cmocka_unit_test(test_arena),
        cmocka_unit_test(test_pool_chunks),
        cmocka_unit_test(test_pool_barrier),
        cmocka_unit_test(test_sha256),
        cmocka_unit_test(test_crc32c),
        cmocka_unit_test(test_err_and_mem),
        cmocka_unit_test(test_grow),
        cmocka_unit_test(test_remove_tree),
        cmocka_unit_test(test_mkdir_p),
        cmocka_unit_test(test_same_path),
        cmocka_unit_test(test_progress_eta),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
