/*
 * test_export_chakra: the Chakra execution trace of a hand-built DiT read back with a
 * protobuf wire walk written here: the file is exactly a sequence of varint-framed
 * messages; the metadata says version 0.0.4; there is one node per op of disc_step_ops in
 * run order (ids 0, 1, ...; type COMP_NODE; data_deps [id - 1]); the summed exposed
 * cycles equal those of disc_step_ops at the shipped hardware; self-attention nodes of
 * steps with masks carry the densities (docs/interop.md#chakra); mode all and steps past
 * the trace are ERR_USAGE; a failed allocation returns ERR_NOMEM and leaves no file.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "analysis/export_chakra.h"
#include "analysis/export_peer.h"
#include "common/io.h"
#include "common/mem.h"
#include "formats/varint.h"

#define STEPS 3
#define DEPTH 2
#define HEADS 4

static uint64_t n_kept[STEPS] = {64, 40, 33};
static bool seen[STEPS] = {true, true, true};
static bool gen[STEPS] = {true, false, true};
static uint64_t nnz[STEPS * DEPTH * HEADS], cells[STEPS * DEPTH * HEADS];

static void network(struct peer_dit *d)
{
    memset(d, 0, sizeof *d);
    snprintf(d->model, sizeof d->model, "micro");
    d->dm = (struct disc_dims){.depth = DEPTH,
                               .d = 64,
                               .h = HEADS,
                               .dh = 16,
                               .text = 16,
                               .dc = 32,
                               .n = 64,
                               .batch = 1,
                               .cin = 4,
                               .cout = 8,
                               .patch = 2,
                               .lat_h = 16,
                               .lat_w = 16,
                               .ctr_on = true};
    d->steps = STEPS;
    d->n_kept = n_kept;
    d->step_seen = seen;
    d->generated = gen;
    /* masks at steps 0 and 2 only */
    for (uint32_t k = 0; k < STEPS; k += 2)
        for (size_t i = 0; i < DEPTH * HEADS; i++) {
            nnz[k * DEPTH * HEADS + i] = 100 + i;
            cells[k * DEPTH * HEADS + i] = 64 * 64;
            d->masks++;
        }
    d->nnz = nnz;
    d->cells = cells;
}

/* The first varint field `field` of a message, or UINT64_MAX. */
static uint64_t field_varint(const uint8_t *p, size_t n, uint32_t field)
{
    size_t i = 0, u;
    uint64_t key, v;
    while (i < n) {
        assert_int_equal(varint_get_u64(p + i, n - i, &key, &u), 0);
        i += u;
        switch (key & 7) {
        case 0:
            assert_int_equal(varint_get_u64(p + i, n - i, &v, &u), 0);
            i += u;
            if (key >> 3 == field)
                return v;
            break;
        case 1:
            i += 8;
            break;
        case 2:
            assert_int_equal(varint_get_u64(p + i, n - i, &v, &u), 0);
            i += u + v;
            break;
        default:
            fail_msg("wire type %u", (unsigned)(key & 7));
        }
    }
    assert_int_equal(i, n);
    return UINT64_MAX;
}

static void test_round_trip(void **state)
{
    (void)state;
    char dir[] = "/tmp/test_export_chakra.XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[128];
    snprintf(path, sizeof path, "%s/d.et", dir);
    struct peer_dit d;
    network(&d);
    struct export_chakra_opts o = {path, DISC_MODE_CTR, 0, UINT32_MAX};
    struct export_chakra_stats st;
    struct errmsg e = {0};
    assert_int_equal(export_chakra_write(&d, &o, &st, &e), 0);

    /* the model's own op list, for the expected nodes and cycles */
    struct disc_hw hw;
    disc_hw_default(&hw);
    size_t cap = disc_step_ops_max(DEPTH), total = 0;
    struct disc_op *ops = calloc(cap, sizeof *ops);
    assert_non_null(ops);
    uint64_t cycles = 0;
    for (uint32_t k = 0; k < STEPS; k++) {
        struct disc_step_in in = {k, n_kept[k], gen[k], NULL};
        size_t n = disc_step_ops(&hw, &d.dm, DISC_MODE_CTR, &in, ops, cap);
        total += n;
        for (size_t i = 0; i < n; i++)
            cycles += ops[i].exposed;
    }
    free(ops);
    assert_int_equal(st.nodes, total);
    assert_int_equal(st.cycles, cycles);
    assert_int_equal(st.density_nodes, 2 * DEPTH * 3); /* steps 0 and 2: qk, softmax, pv */

    char *text;
    size_t len;
    assert_int_equal(io_read_file(path, 1 << 24, &text, &len, &e), 0);
    assert_int_equal(len, st.bytes);
    const uint8_t *p = (const uint8_t *)text;
    size_t i = 0, u, msgs = 0;
    uint64_t n;
    while (i < len) {
        assert_int_equal(varint_get_u64(p + i, len - i, &n, &u), 0);
        i += u;
        assert_true(n > 0 && n <= len - i);
        if (msgs == 0) { /* GlobalMetadata: version "0.0.4" first */
            assert_memory_equal(p + i,
                                "\x0a\x05"
                                "0.0.4",
                                7);
        } else {
            uint64_t id = field_varint(p + i, n, 1);
            assert_int_equal(id == UINT64_MAX ? 0 : id, msgs - 1);
            assert_int_equal(field_varint(p + i, n, 3), 4);
        }
        i += n;
        msgs++;
    }
    assert_int_equal(i, len);
    assert_int_equal(msgs, total + 1);
    mem_free(text);

    /* a later range: fewer nodes, same per-step ops */
    o.step_lo = 2;
    assert_int_equal(export_chakra_write(&d, &o, &st, &e), 0);
    assert_int_equal(st.density_nodes, DEPTH * 3);

    o.step_lo = STEPS;
    assert_int_equal(export_chakra_write(&d, &o, &st, &e), ERR_USAGE);
    o.step_lo = 0;
    o.mode = DISC_MODE_ALL;
    assert_int_equal(export_chakra_write(&d, &o, &st, &e), ERR_USAGE);
    o.mode = DISC_MODE_BASELINE;

    unlink(path);
    int failed = 0;
    for (long k = 1; k < 200; k++) {
        mem_fail_after(k);
        int rc = export_chakra_write(&d, &o, &st, &e);
        mem_fail_after(0);
        char tmp[160];
        snprintf(tmp, sizeof tmp, "%s.tmp", path);
        assert_int_equal(access(tmp, F_OK), -1);
        if (rc == 0)
            break;
        assert_int_equal(rc, ERR_NOMEM);
        assert_int_equal(access(path, F_OK), -1);
        failed++;
    }
    assert_true(failed > 0);
    assert_int_equal(io_remove_tree(dir), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
