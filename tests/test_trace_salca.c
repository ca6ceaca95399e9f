/*
 * Tests of traces/trace_salca: the fixed method table both directions, the K rule names,
 * and the decoding of a SalcaSelect's token list with each of its refusals (n_ctx bound,
 * count above n_ctx, a list that decodes to another count, an index outside the context).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "common/buf.h"
#include "formats/varint.h"
#include "traces/trace_salca.h"

static void test_method_names(void **state)
{
    (void)state;
    /* salca_records.proto "method ids" */
    static const char *const want[] = {"salca",     "std_topk", "pl_topk",
                                       "full_feat", "quest",    "dense"};
    assert_int_equal(TRACE_SALCA_N_METHODS, 6);
    for (uint32_t i = 0; i < TRACE_SALCA_N_METHODS; i++) {
        assert_string_equal(trace_salca_method_name(i), want[i]);
        assert_int_equal(trace_salca_method_id(want[i]), (int)i);
    }
    assert_null(trace_salca_method_name(TRACE_SALCA_N_METHODS));
    assert_int_equal(trace_salca_method_id("topk"), -1);
    assert_int_equal(trace_salca_method_id(NULL), -1);
    assert_string_equal(trace_salca_k_mode_name(TRACE_SALCA_K_FIXED), "fixed");
    assert_string_equal(trace_salca_k_mode_name(TRACE_SALCA_K_DYNAMIC), "dynamic");
    assert_null(trace_salca_k_mode_name((enum trace_salca_k_mode)7));
}

/* A select record over idx[0..n) in a context of n_ctx; the list bytes go to b. */
static Acceltrace__SalcaSelect make(struct buf *b, const uint32_t *idx, size_t n, uint32_t n_ctx,
                                    uint32_t count)
{
    buf_init(b);
    assert_int_equal(varint_encode_indices(b, idx, n), 0);
    Acceltrace__SalcaSelect s = ACCELTRACE__SALCA_SELECT__INIT;
    s.t = 3;
    s.l = 1;
    s.h = 2;
    s.n_ctx = n_ctx;
    s.count = count;
    s.sel.data = b->data;
    s.sel.len = b->len;
    return s;
}

static void test_decode(void **state)
{
    (void)state;
    const uint32_t idx[] = {0, 1, 2, 3, 17, 18, 400, 4095};
    const size_t n = sizeof idx / sizeof idx[0];
    uint32_t out[16];
    size_t got = 99;
    struct errmsg e = {0};
    struct buf b;
    Acceltrace__SalcaSelect s = make(&b, idx, n, 4096, (uint32_t)n);
    assert_int_equal(trace_salca_select_check(&s, &e), 0);
    assert_int_equal(trace_salca_select_decode(&s, out, &got, &e), 0);
    assert_int_equal(got, n);
    assert_memory_equal(out, idx, sizeof idx);

    /* the last index is outside a context of 4095 tokens */
    s.n_ctx = 4095;
    assert_int_equal(trace_salca_select_decode(&s, out, &got, &e), ERR_DATA);
    assert_int_equal(got, 0);
    assert_non_null(strstr(e.text, "bad selection list"));
    assert_non_null(strstr(e.text, "step 3 layer 1 head 2"));

    /* the list holds more indices than count says */
    s.n_ctx = 4096;
    s.count = 5;
    assert_int_equal(trace_salca_select_decode(&s, out, &got, &e), ERR_DATA);
    assert_non_null(strstr(e.text, "bad selection list (more than "));
    /* fewer */
    s.count = 9;
    assert_int_equal(trace_salca_select_decode(&s, out, &got, &e), ERR_DATA);
    assert_non_null(strstr(e.text, "(8 of 9 indices)"));

    /* count above n_ctx, then n_ctx above the bound: refused before any byte is read */
    s.count = 10;
    s.n_ctx = 9;
    assert_int_equal(trace_salca_select_check(&s, &e), ERR_DATA);
    assert_non_null(strstr(e.text, "count 10 above n_ctx 9"));
    s.n_ctx = TRACE_SALCA_MAX_CTX + 1;
    assert_int_equal(trace_salca_select_decode(&s, out, &got, &e), ERR_LIMIT);
    assert_non_null(strstr(e.text, "above 67108864"));
    buf_release(&b);
}

/* The reader's check: exactly count ascending indices below n_ctx, nothing stored. */
static void test_validate(void **state)
{
    (void)state;
    const uint32_t idx[] = {0, 5, 6, 100};
    struct errmsg e = {0};
    struct buf b;
    Acceltrace__SalcaSelect s = make(&b, idx, 4, 128, 4);
    assert_int_equal(trace_salca_select_validate(&s, &e), 0);
    s.count = 3;
    assert_int_equal(trace_salca_select_validate(&s, &e), ERR_DATA);
    assert_string_equal(e.text,
                        "bad selection list: 4 indices, count says 3 (step 3 layer 1 head 2)");
    s.count = 5;
    assert_int_equal(trace_salca_select_validate(&s, &e), ERR_DATA);
    assert_string_equal(e.text,
                        "bad selection list: 4 indices, count says 5 (step 3 layer 1 head 2)");
    s.count = 4;
    s.n_ctx = 100; /* the last index is not below it */
    assert_int_equal(trace_salca_select_validate(&s, &e), ERR_DATA);
    assert_non_null(strstr(e.text, "not ascending varints below n_ctx 100"));
    s.n_ctx = 3; /* count above n_ctx: the size check */
    assert_int_equal(trace_salca_select_validate(&s, &e), ERR_DATA);
    assert_non_null(strstr(e.text, "count 4 above n_ctx 3"));
    buf_release(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_method_names),
        cmocka_unit_test(test_decode),
        cmocka_unit_test(test_validate),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
