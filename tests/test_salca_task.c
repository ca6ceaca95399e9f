/*
 * Tests of capture/salca/salca_task (docs/salca.md#task-generator): the truncation check
 * (truncation keeps the first and last floor(M/2) tokens; mean n_raw within 5% of the target over
 * 2000 draws; spans inside [0, n0)), the mean target over the 21 LongBench tasks, determinism and
 * the family layouts. Seed: ACCELTRACE_SEED (default 3).
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "capture/salca/salca_task.h"
#include "tests/helpers/test_helpers.h"

static uint64_t seed = 3;

/* mean of 2000 draws per task within 5% of the target. */
static void test_lengths(void **state)
{
    (void)state;
    double sum_target = 0;
    int longbench = 0;
    for (uint32_t k = 0; k < salca_task_count(); k++) {
        const struct salca_task_info *t = salca_task_at(k);
        double target = salca_task_target(t);
        double mean = 0;
        for (uint32_t s = 0; s < 2000; s++)
            mean += (double)salca_task_draw_n_raw(t, seed, s);
        mean /= 2000;
        if (fabs(mean / target - 1) > 0.05)
            fail_msg("%s: mean n_raw %.0f vs target %.0f", t->name, mean, target);
        if (t->family != SALCA_FAM_PASSKEY) {
            sum_target += target;
            longbench++;
        }
    }
    assert_int_equal(longbench, 21);
    /* docs/salca.md#task-generator [derived]: the mean target over the 21 tasks is 10,542 tokens */
    assert_true(fabs(sum_target / 21 - 10542) < 1);
}

/* middle truncation keeps exactly the first and last floor(M/2) tokens. */
static void test_truncation(void **state)
{
    (void)state;
    const struct salca_task_info *t = salca_task_find("lsht"); /* 22337 average: often > M */
    struct salca_task_params p;
    salca_task_params_default(&p);
    p.seed = seed;
    p.max_len = 5001; /* odd M: floor(M/2) = 2500 each side */
    int truncated = 0;
    for (uint32_t s = 0; s < 6; s++) {
        p.sample = s;
        struct salca_task full, cut;
        struct errmsg e = {0};
        struct salca_task_params pf = p;
        pf.length = 0;
        pf.max_len = 1u << 30; /* no truncation: the raw prompt */
        assert_int_equal(salca_task_generate(t, &pf, &full, &e), 0);
        assert_int_equal(salca_task_generate(t, &p, &cut, &e), 0);
        assert_true(cut.n_raw == full.n_raw);
        if (full.n_raw > 5001) {
            truncated++;
            assert_int_equal(cut.n0, 5000);
            assert_int_equal(cut.truncated, full.n_raw - 5000);
            assert_memory_equal(cut.tokens, full.tokens, 2500 * 4);
            assert_memory_equal(cut.tokens + 2500, full.tokens + full.n_raw - 2500, 2500 * 4);
        } else {
            assert_int_equal(cut.n0, full.n_raw);
        }
        for (uint32_t a = 0; a < cut.n_spans; a++)
            assert_true(cut.spans[a].start + cut.spans[a].len <= cut.n0);
        salca_task_release(&full);
        salca_task_release(&cut);
    }
    assert_true(truncated > 0);
}

/* Every task: spans inside the prompt, ids in range, BOS first, deterministic output. */
static void test_layouts(void **state)
{
    (void)state;
    struct salca_task_params p;
    salca_task_params_default(&p);
    p.seed = seed;
    for (uint32_t k = 0; k < salca_task_count(); k++) {
        const struct salca_task_info *t = salca_task_at(k);
        for (uint32_t len = 256; len <= 20000; len *= 5) {
            p.length = len;
            struct salca_task a, b;
            struct errmsg e = {0};
            assert_int_equal(salca_task_generate(t, &p, &a, &e), 0);
            assert_int_equal(salca_task_generate(t, &p, &b, &e), 0);
            assert_int_equal(a.n0, len);
            assert_int_equal(a.truncated, 0);
            assert_memory_equal(a.tokens, b.tokens, len * 4);
            assert_memory_equal(a.c, b.c, len * 4);
            assert_int_equal(a.tokens[0], 1);
            for (uint32_t i = 0; i < len; i++)
                assert_true(a.tokens[i] < p.vocab);
            for (uint32_t s = 0; s < a.n_spans; s++) {
                assert_true(a.spans[s].start >= 1);
                assert_true(a.spans[s].start + a.spans[s].len <= len);
            }
            uint32_t needles = 0;
            for (uint32_t s = 0; s < a.n_spans; s++)
                needles += a.spans[s].kind == SALCA_SPAN_NEEDLE;
            if (t->family == SALCA_FAM_SINGLE_DOC_QA)
                assert_int_equal(needles, 1);
            if (t->family == SALCA_FAM_MULTI_DOC_QA)
                assert_int_equal(needles, strcmp(t->name, "musique") ? 2u : 4u);
            if (t->family == SALCA_FAM_CODE) {
                /* the last 48 tokens copy 3 earlier 16-token spans, in draw order */
                assert_int_equal(a.n_spans, 3);
                for (int c = 0; c < 3; c++)
                    assert_memory_equal(a.tokens + len - 48 + 16 * c, a.tokens + a.spans[c].start,
                                        16 * 4);
            }
            salca_task_release(&a);
            salca_task_release(&b);
        }
    }
    p.length = 100;
    struct salca_task x;
    struct errmsg e = {0};
    assert_int_equal(salca_task_generate(salca_task_find("qasper"), &p, &x, &e), ERR_USAGE);
    assert_non_null(salca_task_find("few_shot"));
    assert_null(salca_task_find("nosuchtask"));
}

int main(void)
{
    seed = th_seed(seed);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lengths),
        cmocka_unit_test(test_truncation),
        cmocka_unit_test(test_layouts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
