/*
 * Tests of common/suggest: the edit distance, the prefix rule, the limit that keeps far
 * names unsuggested, ties, '|'-separated lists and an exact match (no hint).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "common/suggest.h"

static const char *best(const char *name, const char *const *cands, size_t n)
{
    struct suggest s;
    suggest_init(&s, name, strlen(name));
    for (size_t i = 0; i < n; i++)
        suggest_add(&s, cands[i]);
    return suggest_result(&s);
}

static void test_distance(void **state)
{
    (void)state;
    assert_int_equal(suggest_distance("kitten", 6, "sitting", 7), 3);
    assert_int_equal(suggest_distance("", 0, "abc", 3), 3);
    assert_int_equal(suggest_distance("abc", 3, "abc", 3), 0);
    assert_int_equal(suggest_distance("salca_selct", 11, "salca_select", 12), 1);
    char longer[80];
    memset(longer, 'a', sizeof longer - 1);
    longer[sizeof longer - 1] = 0;
    assert_int_equal(suggest_distance(longer, strlen(longer), "a", 1), 99);
}

static void test_closest(void **state)
{
    (void)state;
    const char *types[] = {"disc_mask", "salca_select", "salca_token", "kura_step"};
    assert_string_equal(best("salca_selct", types, 4), "salca_select");
    assert_string_equal(best("salca_tokn", types, 4), "salca_token");
    assert_null(best("zzzzzzzz", types, 4));     /* far from everything */
    assert_null(best("salca_select", types, 4)); /* exact: nothing to suggest */
    const char *keys[] = {"window", "depth", "policy"};
    assert_string_equal(best("windw", keys, 3), "window");
    assert_string_equal(best("win", keys, 3), "window"); /* a typed prefix is one edit */
    assert_null(best("w", keys, 3));                     /* one letter is no prefix */
    const char *verbs[] = {"replay", "report"};
    assert_string_equal(best("repot", verbs, 2), "report");
    assert_string_equal(best("repXay", verbs, 2), "replay");
    const char *tie[] = {"ab", "ba"};
    assert_string_equal(best("aa", tie, 2), "ab"); /* ties keep the first */
    /* the limit grows with the name: 3 edits allowed at 9 letters, not at 6 */
    const char *l9[] = {"abcdefghi"};
    assert_string_equal(best("abcxyzghi", l9, 1), "abcdefghi");
    const char *l6[] = {"abcdef"};
    assert_null(best("abcxyz", l6, 1));
}

static void test_list(void **state)
{
    (void)state;
    struct suggest s;
    suggest_init(&s, "sal", 3);
    suggest_add_list(&s, "disc|salca|kura");
    assert_non_null(suggest_result(&s));
    assert_int_equal(suggest_result_len(&s), 5);
    assert_memory_equal(suggest_result(&s), "salca", 5);
    suggest_init(&s, "qqqqqq", 6);
    suggest_add_list(&s, "disc|salca|kura");
    assert_null(suggest_result(&s));
    assert_int_equal(suggest_result_len(&s), 0);
    suggest_add(&s, NULL); /* ignored */
    assert_null(suggest_result(&s));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_distance),
        cmocka_unit_test(test_closest),
        cmocka_unit_test(test_list),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
