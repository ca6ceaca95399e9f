/*
 * Tests of replay/energy's built-in tables and of the models' energy through them: each
 * built-in table holds the events, pJ and static terms of its shipped file in file order;
 * the built-in "salca" total is the pre-table sum bit for bit; the DiSC model reads its
 * in-model table through energy_table_load (sums a count named twice, an empty "static"
 * list means no static power, a missing one keeps the default, unknown counts and bad
 * entries are ERR_CONFIG naming the file).
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/err.h"
#include "common/io.h"
#include "replay/disc_model.h"
#include "replay/energy.h"
#include "tests/helpers/test_helpers.h"

/* Writes text to NAME in th_tmpdir(); the path into out. */
static const char *write_tmp(const char *name, const char *text, char *out, size_t n)
{
    snprintf(out, n, "%s/%s", th_tmpdir(), name);
    FILE *f = fopen(out, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    return out;
}

/* Built-in NAME equals FILE event by event, in order; its one component is "model". */
static void check_builtin(const char *name, const char *file)
{
    const struct energy_table *b = energy_table_builtin(name);
    assert_non_null(b);
    struct energy_table t;
    struct errmsg e = {0};
    assert_int_equal(energy_table_load(&t, file, &e), 0);
    assert_int_equal(b->n_events, t.n_events);
    for (size_t i = 0; i < t.n_events; i++) {
        assert_string_equal(b->events[i].count, t.events[i].count);
        assert_true(b->events[i].pj == t.events[i].pj);
        assert_int_equal(b->events[i].is_static, t.events[i].is_static);
        assert_string_equal(b->events[i].component, "model");
    }
    assert_int_equal(b->static_listed, t.static_listed);
    assert_int_equal(b->n_components, 1);
    assert_string_equal(b->components[0], "model");
    energy_table_release(&t);
}

static void test_builtin_equals_files(void **state)
{
    (void)state;
    check_builtin("disc", "configs/disc-energy.json");
    check_builtin("salca", "configs/salca-energy.json");
    assert_null(energy_table_builtin("kura"));
    assert_null(energy_table_builtin(""));
}

struct counts {
    double hbm, mac_3x2, cmp8, hist, mac_int8, exps;
};

static int lookup(void *ctx, const char *name, double *v)
{
    const struct counts *c = ctx;
    if (!strcmp(name, "hbm_bytes"))
        *v = c->hbm;
    else if (!strcmp(name, "mac_3x2"))
        *v = c->mac_3x2;
    else if (!strcmp(name, "cmp8_ops"))
        *v = c->cmp8;
    else if (!strcmp(name, "hist_updates"))
        *v = c->hist;
    else if (!strcmp(name, "mac_int8"))
        *v = c->mac_int8;
    else if (!strcmp(name, "exp_ops"))
        *v = c->exps;
    else
        return ERR_NOTFOUND;
    return 0;
}

/* The Salca model's energy before the built-in table was a formula of its own; the
 * built-in table gives the same bits (results stay byte-identical). */
static void test_salca_builtin_bits(void **state)
{
    (void)state;
    const struct energy_table *b = energy_table_builtin("salca");
    const struct counts cs[] = {
        {3292608, 6294528, 491760, 98352, 1325568, 5178},
        {1, 3, 7, 11, 13, 17},
        {123456789, 987654321, 55555, 4444, 333333, 2222},
    };
    for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) {
        const struct counts *c = &cs[i];
        double want = 1e-12 * (31.2 * c->hbm + 0.03 * c->mac_3x2 + 0.03 * c->cmp8 + 0.03 * c->hist +
                               0.23 * c->mac_int8 + 2.0 * c->exps);
        double comp[1], j = -1;
        assert_int_equal(energy_compute(b, lookup, (void *)c, comp, &j), 0);
        assert_memory_equal(&j, &want, sizeof j);
        assert_memory_equal(&comp[0], &want, sizeof j);
    }
}

/* disc_energy_load: through energy_table_load, with the DiSC model's mapping. */
static void test_disc_load(void **state)
{
    (void)state;
    char p[256];
    struct errmsg e = {0};
    struct disc_energy def, en;
    disc_energy_default(&def);
    assert_true(def.e_mac == 0.6 && def.e_hbm == 31.2 && def.p_static_w == 8.0);

    /* a count named twice sums, as energy_compute does; no "static": default kept */
    en = def;
    write_tmp("dup.json",
              "{\"events\": [{\"count\": \"mac\", \"pj\": 1.5}, {\"count\": \"mac\", \"pj\": 2}]}",
              p, sizeof p);
    assert_int_equal(disc_energy_load(&en, p, &e), 0);
    assert_true(en.e_mac == 3.5);
    assert_true(en.e_hbm == def.e_hbm);
    assert_true(en.p_static_w == def.p_static_w);

    /* an empty "static" list: no static power */
    en = def;
    write_tmp("nostatic.json",
              "{\"events\": [{\"count\": \"hbm_bytes\", \"pj\": 10}], \"static\": []}", p,
              sizeof p);
    assert_int_equal(disc_energy_load(&en, p, &e), 0);
    assert_true(en.e_hbm == 10 && en.p_static_w == 0);

    /* static terms add */
    en = def;
    write_tmp("static.json",
              "{\"events\": [{\"count\": \"bus_elems\", \"pj\": 1}], \"static\": ["
              "{\"time\": \"seconds\", \"watts\": 2}, {\"time\": \"seconds\", \"watts\": 3}]}",
              p, sizeof p);
    assert_int_equal(disc_energy_load(&en, p, &e), 0);
    assert_true(en.e_bus == 1 && en.p_static_w == 5);

    /* a count the model does not make */
    write_tmp("unknown.json", "{\"events\": [{\"count\": \"flops\", \"pj\": 1}]}", p, sizeof p);
    assert_int_equal(disc_energy_load(&en, p, &e), ERR_CONFIG);
    assert_non_null(strstr(errmsg_text(&e), "unknown count 'flops' at $.events[0]"));
    assert_non_null(strstr(errmsg_text(&e), p));

    /* the engine's checks apply: a negative pJ, a missing file */
    write_tmp("neg.json", "{\"events\": [{\"count\": \"mac\", \"pj\": -1}]}", p, sizeof p);
    assert_int_equal(disc_energy_load(&en, p, &e), ERR_CONFIG);
    assert_non_null(strstr(errmsg_text(&e), "$.events[0]"));
    snprintf(p, sizeof p, "%s/missing.json", th_tmpdir());
    assert_int_equal(disc_energy_load(&en, p, &e), ERR_NOINPUT);
    assert_non_null(strstr(errmsg_text(&e), p));
}

int main(void)
{
    if (!th_tmpdir_make("energy"))
        return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_builtin_equals_files),
        cmocka_unit_test(test_salca_builtin_bits),
        cmocka_unit_test(test_disc_load),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    (void)th_tmpdir_remove();
    return rc;
}
