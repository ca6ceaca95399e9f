/*
 * Tests of analysis/hash_lb, the Fig. 15 analyzer, on traces whose masks are generated
 * here (banded, random, block-structured) and written with traces/trace_writer
 * (docs/disc.md#acceptance-checks).
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "analysis/hash_lb.h"
#include "common/io.h"
#include "common/mem.h"
#include "common/rng.h"
#include "formats/bitset.h"
#include "formats/disc_hash.h"
#include "tests/helpers/test_helpers.h"
#include "traces/trace_writer.h"

#define N 256
#define K 3
#define L 2
#define H 3

static uint64_t g_seed;

static void set_bit(struct bitset *b, uint32_t r, uint32_t c)
{
    bitset_set(b, r, c);
}

/* Mask of (step, block, head): kind by head: 0 band, 1 random 40%, 2 block-structured. */
static void make_mask(struct bitset *m, int step, int block, int head, struct rng *r)
{
    bitset_zero(m);
    for (uint32_t i = 0; i < N; i++) {
        for (uint32_t j = 0; j < N; j++) {
            bool on;
            if (head == 0)
                on = (j + 20 + 4 * step >= i) && (j <= i + 20 + 4 * block);
            else if (head == 1)
                on = rng_uniform(r) < 0.4 - 0.1 * step;
            else
                on = ((i / 32 + j / 32 + (uint32_t)block) % 3) == 0;
            if (on)
                set_bit(m, i, j);
        }
        if (bitset_row_popcount(m, i) == 0)
            set_bit(m, i, i);
    }
}

/* Token mask of step k: all at k = 0, then every row but those with i % (k + 2) == 1. */
static bool token_kept(int k, uint32_t i)
{
    return k == 0 || i % (uint32_t)(k + 2) != 1;
}

struct gen_opts {
    bool with_lb;   /* fill lb_* / bin_* as capture does */
    bool keep_all;  /* bits for every mask */
    bool keep_half; /* bits for even heads only */
    bool step_last; /* DiscStep after the step's masks (else before) */
};

/* Writes a disc trace to path; returns the number of masks. */
static int write_trace(const char *path, const struct gen_opts *g)
{
    Acceltrace__DiscHeader dh = ACCELTRACE__DISC_HEADER__INIT;
    dh.model = "test";
    dh.depth = L, dh.hidden = 48, dh.heads = H, dh.head_dim = 16, dh.ffn_hidden = 192;
    dh.patch = 2, dh.in_channels = 4, dh.out_channels = 8, dh.caption_width = 32;
    dh.text_tokens = 8, dh.latent_h = 32, dh.latent_w = 32, dh.grid_w = 16, dh.tokens = N;
    dh.steps = K, dh.batch = 1, dh.st_refresh = 2;
    dh.ctr_mode = "target", dh.st_mode = "alpha";
    char *hashes[3] = {"mod", "mul", "range"};
    uint32_t units[5] = {8, 16, 32, 64, 128};
    dh.n_lb_hashes = 3, dh.lb_hashes = hashes;
    dh.lb_k_odd = DISC_HASH_K_ODD;
    dh.n_lb_units = 5, dh.lb_units = units;
    dh.lb_bins = DISC_LB_BINS;
    Acceltrace__TraceHeader hdr = ACCELTRACE__TRACE_HEADER__INIT;
    hdr.producer = "test_hash_lb";
    hdr.workload = "disc";
    hdr.disc = &dh;
    struct trace_writer *w = NULL;
    struct errmsg err = {0};
    assert_int_equal(trace_writer_open(&w, path, NULL, &hdr, &err), 0);
    struct disc_lb *lb = NULL;
    assert_int_equal(disc_lb_new_std(&lb, N, DISC_HASH_K_ODD), 0);
    struct bitset m, tm;
    assert_int_equal(bitset_init(&m, N, N), 0);
    assert_int_equal(bitset_init(&tm, 1, N), 0);
    size_t nbytes;
    assert_true(bitset_bytes_for(N, N, &nbytes));
    uint8_t *bytes = mem_alloc(nbytes);
    uint8_t tbytes[N / 8];
    struct rng r;
    rng_stream(&r, g_seed, "hash_lb_masks", 0, 0);
    int masks = 0;
    for (int k = 0; k < K; k++) {
        bitset_zero(&tm);
        uint32_t nk = 0;
        for (uint32_t i = 0; i < N; i++)
            if (token_kept(k, i)) {
                bitset_set(&tm, 0, i);
                nk++;
            }
        bitset_to_bytes(&tm, tbytes, sizeof tbytes);
        Acceltrace__DiscStep st = ACCELTRACE__DISC_STEP__INIT;
        st.k = (uint32_t)k;
        st.n_kept = nk;
        st.token_mask.data = tbytes;
        st.token_mask.len = sizeof tbytes;
        st.st_generated = k % 2 == 0;
        Acceltrace__Record rs = ACCELTRACE__RECORD__INIT;
        rs.body_case = ACCELTRACE__RECORD__BODY_DISC_STEP;
        rs.disc_step = &st;
        struct trace_key sk = {k, -1, -1};
        if (!g->step_last)
            assert_int_equal(trace_writer_append(w, &rs, &sk), 0);
        for (int b = 0; b < L; b++)
            for (int h = 0; h < H; h++) {
                make_mask(&m, k, b, h, &r);
                struct disc_lb_acc acc;
                disc_lb_acc_init(&acc, lb);
                assert_int_equal(
                    disc_lb_mask(lb, m.words, N, m.words_per_row, tm.words, NULL, &acc), 0);
                Acceltrace__DiscMask dm = ACCELTRACE__DISC_MASK__INIT;
                dm.step = (uint32_t)k, dm.block = (uint32_t)b, dm.head = (uint32_t)h;
                dm.generated = k % 2 == 0;
                dm.rows = nk;
                dm.nnz = acc.nnz;
                dm.sparsity = 1.0 - (double)acc.nnz / ((double)nk * N);
                dm.n_cols = N;
                uint64_t lbmax[15], binmax[300], binnnz[20];
                double lbstd[15], binstd[300];
                uint32_t binrows[20];
                for (int hh = 0; hh < 3; hh++)
                    for (int u = 0; u < 5; u++) {
                        lbmax[hh * 5 + u] = acc.max_sum[hh][u];
                        lbstd[hh * 5 + u] = acc.std_sum[hh][u];
                        for (int bin = 0; bin < 20; bin++) {
                            binmax[bin * 15 + hh * 5 + u] = acc.bin_max[bin][hh][u];
                            binstd[bin * 15 + hh * 5 + u] = acc.bin_std[bin][hh][u];
                        }
                    }
                for (int bin = 0; bin < 20; bin++) {
                    binrows[bin] = acc.bin_rows[bin];
                    binnnz[bin] = acc.bin_nnz[bin];
                }
                if (g->with_lb) {
                    dm.n_lb_max = 15, dm.lb_max = lbmax;
                    dm.n_lb_std = 15, dm.lb_std = lbstd;
                    dm.n_bin_rows = 20, dm.bin_rows = binrows;
                    dm.n_bin_nnz = 20, dm.bin_nnz = binnnz;
                    dm.n_bin_max = 300, dm.bin_max = binmax;
                    dm.n_bin_std = 300, dm.bin_std = binstd;
                }
                if (g->keep_all || (g->keep_half && h % 2 == 0)) {
                    bitset_to_bytes(&m, bytes, nbytes);
                    dm.bits.data = bytes;
                    dm.bits.len = nbytes;
                    dm.kept = true;
                }
                Acceltrace__Record rm = ACCELTRACE__RECORD__INIT;
                rm.body_case = ACCELTRACE__RECORD__BODY_DISC_MASK;
                rm.disc_mask = &dm;
                struct trace_key mk = {k, b, h};
                assert_int_equal(trace_writer_append(w, &rm, &mk), 0);
                masks++;
            }
        if (g->step_last)
            assert_int_equal(trace_writer_append(w, &rs, &sk), 0);
    }
    assert_int_equal(trace_writer_finish(w), 0);
    trace_writer_free(w);
    mem_free(bytes);
    bitset_release(&m);
    bitset_release(&tm);
    disc_lb_free(lb);
    return masks;
}

static struct hash_lb *run(const char *trace, const char *outdir, int threads, const char *units)
{
    struct hash_lb_opts o;
    hash_lb_opts_default(&o);
    o.threads = threads;
    struct errmsg e = {0};
    if (units)
        assert_int_equal(hash_lb_parse_units(&o, units, &e), 0);
    assert_int_equal(io_mkdir_p(outdir, 0777, NULL), 0);
    struct hash_lb *a = NULL;
    int rc = hash_lb_run_file(trace, &o, outdir, false, NULL, &a, &e);
    if (rc < 0)
        fail_msg("%s", e.text);
    return a;
}

/* statistics recorded inline equal the analyzer's recount of kept bits, bit for bit,
 * whether the step record comes before or after its masks. */
static void test_record_equals_recount(void **state)
{
    (void)state;
    struct gen_opts g1 = {.with_lb = true, .keep_all = true};
    struct gen_opts g2 = {.with_lb = false, .keep_all = true, .step_last = true};
    int nm = write_trace(th_path_tmp("rec.atr"), &g1);
    write_trace(th_path_tmp("bits.atr"), &g2);
    struct hash_lb *a = run(th_path_tmp("rec.atr"), th_path_tmp("out_rec"), 1, NULL);
    struct hash_lb *b = run(th_path_tmp("bits.atr"), th_path_tmp("out_bits"), 1, NULL);
    assert_int_equal(hash_lb_masks_seen(a), nm);
    assert_int_equal(hash_lb_masks_recounted(a), 0);
    assert_int_equal(hash_lb_masks_recounted(b), nm);
    for (int bin = 0; bin < DISC_LB_BINS; bin++) {
        assert_memory_equal(hash_lb_matrix_bin(a, bin), hash_lb_matrix_bin(b, bin),
                            sizeof(struct hash_lb_pool));
        assert_memory_equal(hash_lb_row_bin(a, bin), hash_lb_row_bin(b, bin),
                            sizeof(struct hash_lb_pool));
    }
    th_assert_same_file(th_path_tmp("out_rec/hash_matrix.csv"),
                        th_path_tmp("out_bits/hash_matrix.csv"));
    th_assert_same_file(th_path_tmp("out_rec/hash_row.csv"), th_path_tmp("out_bits/hash_row.csv"));
    hash_lb_free(a);
    hash_lb_free(b);
}

/* results are identical for 1 and 2 threads (recounted masks, other unit counts). */
static void test_threads_identical(void **state)
{
    (void)state;
    struct gen_opts g = {.with_lb = false, .keep_all = true};
    write_trace(th_path_tmp("thr.atr"), &g);
    struct hash_lb *a = run(th_path_tmp("thr.atr"), th_path_tmp("out_t1"), 1, "2,8,256");
    struct hash_lb *b = run(th_path_tmp("thr.atr"), th_path_tmp("out_t2"), 2, "2,8,256");
    const char *files[3] = {"hash_matrix.csv", "hash_row.csv", "hash_masks.csv"};
    for (int i = 0; i < 3; i++) {
        char pa[600], pb[600];
        snprintf(pa, sizeof pa, "%s/out_t1/%s", th_tmpdir(), files[i]);
        snprintf(pb, sizeof pb, "%s/out_t2/%s", th_tmpdir(), files[i]);
        th_assert_same_file(pa, pb);
    }
    hash_lb_free(a);
    hash_lb_free(b);
}

/* Issue acceptance 2: the analyzer equals a brute-force count of the diagonal band (head 0)
 * done here, pooled per matrix-sparsity bin for U = 32. */
static void test_band_brute_force(void **state)
{
    (void)state;
    struct gen_opts g = {.with_lb = true, .keep_half = true};
    write_trace(th_path_tmp("band.atr"), &g);
    /* U = 32 is recorded, U = 4 is not: only kept (even-head) masks are recounted, odd
     * heads have no statistics for U = 4 and are skipped */
    struct hash_lb *a = run(th_path_tmp("band.atr"), th_path_tmp("out_band"), 1, "32,4");
    assert_int_equal(hash_lb_masks_skipped(a), K * L * 1); /* head 1 of each (k, b) */
    assert_int_equal(hash_lb_masks_recounted(a), K * L * 2);
    /* brute force over head 0 and head 2 masks (the recounted ones) for every hash */
    struct hash_lb_pool want[DISC_LB_BINS];
    memset(want, 0, sizeof want);
    struct rng r;
    rng_stream(&r, g_seed, "hash_lb_masks", 0, 0);
    struct bitset m;
    assert_int_equal(bitset_init(&m, N, N), 0);
    const unsigned ub[2] = {5, 2};
    for (int k = 0; k < K; k++)
        for (int b = 0; b < L; b++)
            for (int h = 0; h < H; h++) {
                make_mask(&m, k, b, h, &r); /* same rng sequence as the writer */
                if (h % 2 == 1)
                    continue;
                uint64_t rows = 0, nnz = 0, maxs[3][2] = {{0}};
                double stds[3][2] = {{0}};
                for (uint32_t i = 0; i < N; i++) {
                    if (!token_kept(k, i))
                        continue;
                    rows++;
                    uint64_t rn = 0;
                    for (uint32_t j = 0; j < N; j++)
                        rn += bitset_get(&m, i, j);
                    nnz += rn;
                    for (int hh = 0; hh < 3; hh++)
                        for (int u = 0; u < 2; u++) {
                            uint32_t c[32] = {0};
                            uint32_t nu = 1u << ub[u];
                            for (uint32_t j = 0; j < N; j++)
                                if (bitset_get(&m, i, j))
                                    c[disc_hash_apply(hh, j, ub[u], N, DISC_HASH_K_ODD)]++;
                            double mu = (double)rn / nu, ss = 0;
                            uint32_t mx = 0;
                            for (uint32_t v = 0; v < nu; v++) {
                                ss += ((double)c[v] - mu) * ((double)c[v] - mu);
                                mx = c[v] > mx ? c[v] : mx;
                            }
                            stds[hh][u] += sqrt(ss / nu);
                            maxs[hh][u] += mx;
                        }
                }
                int bin = disc_lb_bin(rows * N - nnz, rows * N);
                want[bin].masks++;
                want[bin].rows += rows;
                want[bin].nnz += nnz;
                for (int hh = 0; hh < 3; hh++)
                    for (int u = 0; u < 2; u++) {
                        want[bin].std_sum[hh][u] += stds[hh][u];
                        want[bin].max_sum[hh][u] += maxs[hh][u];
                    }
            }
    for (int bin = 0; bin < DISC_LB_BINS; bin++) {
        const struct hash_lb_pool *got = hash_lb_matrix_bin(a, bin);
        assert_int_equal(got->masks, want[bin].masks);
        assert_int_equal(got->rows, want[bin].rows);
        assert_int_equal(got->nnz, want[bin].nnz);
        for (int hh = 0; hh < 3; hh++)
            for (int u = 0; u < 2; u++) {
                assert_int_equal(got->max_sum[hh][u], want[bin].max_sum[hh][u]);
                assert_true(fabs(got->std_sum[hh][u] - want[bin].std_sum[hh][u]) <=
                            1e-9 * (1 + want[bin].std_sum[hh][u]));
            }
    }
    bitset_release(&m);
    hash_lb_free(a);
}

/* A unit count outside the recorded set with no kept bits leaves nothing to
 * pool: ERR_DATA naming the recorded set and --keep-masks, not tables of zeros. */
static void test_nothing_to_pool_is_data_error(void **state)
{
    (void)state;
    struct gen_opts g = {.with_lb = true};
    int nm = write_trace(th_path_tmp("nokeep.atr"), &g);
    assert_true(nm > 0);
    struct hash_lb_opts o;
    hash_lb_opts_default(&o);
    struct errmsg e = {0};
    assert_int_equal(hash_lb_parse_units(&o, "4", &e), 0);
    assert_int_equal(io_mkdir_p(th_path_tmp("out_nokeep"), 0777, NULL), 0);
    struct hash_lb *a = NULL;
    int rc = hash_lb_run_file(th_path_tmp("nokeep.atr"), &o, th_path_tmp("out_nokeep"), false, NULL,
                              &a, &e);
    assert_int_equal(rc, ERR_DATA);
    assert_null(a);
    assert_non_null(strstr(e.text, "U = 8,16,32,64,128"));
    assert_non_null(strstr(e.text, "--keep-masks"));
    assert_non_null(strstr(e.text, "nokeep.atr"));
    /* the recorded U = 32 still works on the same trace */
    a = run(th_path_tmp("nokeep.atr"), th_path_tmp("out_nokeep"), 1, "32");
    assert_int_equal(hash_lb_masks_skipped(a), 0);
    assert_int_equal(hash_lb_masks_seen(a), nm);
    hash_lb_free(a);
}

/* The unit-list parser rejects what docs/disc.md#load-balance-analyzer does not allow. */
static void test_parse_units(void **state)
{
    (void)state;
    struct hash_lb_opts o;
    hash_lb_opts_default(&o);
    struct errmsg e = {0};
    assert_int_equal(hash_lb_parse_units(&o, "8,16,32,64,128,2", &e), 0);
    assert_int_equal(o.n_units, 6);
    assert_int_equal(o.bits[5], 1);
    assert_int_equal(hash_lb_parse_units(&o, "12", &e), ERR_USAGE);
    assert_int_equal(hash_lb_parse_units(&o, "1", &e), ERR_USAGE);
    assert_int_equal(hash_lb_parse_units(&o, "8,8", &e), ERR_USAGE);
    assert_int_equal(hash_lb_parse_units(&o, "8,x", &e), ERR_USAGE);
    assert_int_equal(hash_lb_parse_units(&o, "", &e), ERR_USAGE);
}

static int setup(void **state)
{
    (void)state;
    g_seed = th_seed(7);
    return th_tmpdir_make("hash_lb") ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    (void)th_tmpdir_remove();
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_units),
        cmocka_unit_test(test_record_equals_recount),
        cmocka_unit_test(test_threads_identical),
        cmocka_unit_test(test_band_brute_force),
        cmocka_unit_test(test_nothing_to_pool_is_data_error),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
