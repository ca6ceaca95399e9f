/*
 * model_count: the engine's test model. It counts the TestRecord records of a trace whose
 * step is at least `min_step` and sums one of their fields times `scale`, so a sweep has
 * a known, config-dependent answer for every config. `spin` burns a fixed amount of
 * arithmetic per record, to stand for a costly model in engine tests and benchmarks.
 * Every figure here is a definition of the test model [decision]; there is no paper.
 */
#include <float.h>
#include <string.h>

#include "common/mem.h"
#include "replay/model.h"

static const struct hw_key count_keys[] = {
    HW_KEY_STRING("field", "value", "value|step|x|numbers|blob_bytes",
                  "TestRecord field summed: value, step, x, sum of numbers, blob length"),
    HW_KEY_INT("scale", "", -1000000, 1000000, 1, "multiplier applied to the field"),
    HW_KEY_INT("min_step", "", 0, 4294967295.0, 0, "records with a smaller step are ignored"),
    HW_KEY_FLOAT("ops_per_record", "op", 0, 1e9, 1.0,
                 "activity count charged per counted record (for energy tables)"),
    HW_KEY_INT("spin", "iterations", 0, 100000000, 0,
               "arithmetic iterations per record, to emulate a costly model"),
    HW_KEY_BOOL("split_rows", 0, "report two rows (label parity = even/odd steps)"),
};

static const struct hw_schema count_schema = {
    .model = "count",
    .keys = count_keys,
    .n_keys = sizeof count_keys / sizeof count_keys[0],
    .check = NULL,
};

enum count_field { F_VALUE, F_STEP, F_X, F_NUMBERS, F_BLOB };

struct count_state {
    enum count_field field;
    int64_t scale;
    uint64_t min_step;
    double ops_per_record;
    int64_t spin;
    bool split;
    uint64_t records[2]; /* counted records by step parity */
    double sum[2];       /* field * scale summed, by step parity */
    uint64_t spin_acc;   /* result of the spin work (kept so it is not optimised away) */
};

static int count_new(void **state, const struct hw_config *cfg, const struct model_env *env,
                     struct errmsg *e)
{
    (void)env;
    struct count_state *s = mem_calloc(1, sizeof *s);
    if (!s)
        return errmsg_set(e, ERR_NOMEM, "out of memory");
    const char *f = hw_config_str(cfg, "field");
    s->field = !strcmp(f, "value")     ? F_VALUE
               : !strcmp(f, "step")    ? F_STEP
               : !strcmp(f, "x")       ? F_X
               : !strcmp(f, "numbers") ? F_NUMBERS
                                       : F_BLOB;
    s->scale = hw_config_int(cfg, "scale");
    s->min_step = (uint64_t)hw_config_int(cfg, "min_step");
    s->ops_per_record = hw_config_float(cfg, "ops_per_record");
    s->spin = hw_config_int(cfg, "spin");
    s->split = hw_config_bool(cfg, "split_rows");
    *state = s;
    return 0;
}

static int count_consume(void *state, const struct model_record *r, struct errmsg *e)
{
    (void)e;
    struct count_state *s = state;
    if (r->rec->body_case != ACCELTRACE__RECORD__BODY_TEST)
        return 0;
    const Acceltrace__TestRecord *t = r->rec->test;
    if (t->step < s->min_step)
        return 0;
    double v = 0;
    switch (s->field) {
    case F_VALUE:
        v = (double)t->value;
        break;
    case F_STEP:
        v = (double)t->step;
        break;
    case F_X:
        v = t->x;
        break;
    case F_NUMBERS:
        for (size_t i = 0; i < t->n_numbers; i++)
            v += t->numbers[i];
        break;
    case F_BLOB:
        v = (double)t->blob.len;
        break;
    }
    int parity = s->split ? (int)(t->step & 1) : 0;
    s->records[parity]++;
    s->sum[parity] += v * (double)s->scale;
    uint64_t acc = s->spin_acc;
    for (int64_t i = 0; i < s->spin; i++)
        acc = acc * 6364136223846793005ULL + 1442695040888963407ULL;
    s->spin_acc = acc;
    return 0;
}

static int count_row(struct count_state *s, struct model_result *res, int parity)
{
    int rc = result_row_begin(res, NULL);
    if (!rc && s->split)
        rc = result_label(res, "parity", parity ? "odd" : "even");
    if (!rc)
        rc = result_count(res, "records", "records", s->records[parity]);
    if (!rc)
        rc = result_count_f64(res, "ops", "op", (double)s->records[parity] * s->ops_per_record);
    if (!rc)
        rc = result_metric(res, "sum", "", s->sum[parity]);
    if (!rc)
        rc = result_metric(res, "mean", "",
                           s->records[parity] ? s->sum[parity] / (double)s->records[parity] : 0.0);
    return rc;
}

static int count_finish(void *state, struct model_result *res, struct errmsg *e)
{
    struct count_state *s = state;
    int rc = count_row(s, res, 0);
    if (!rc && s->split)
        rc = count_row(s, res, 1);
    if (rc)
        return errmsg_set(e, rc, "cannot report results: %s", err_str(rc));
    return 0;
}

static void count_free(void *state)
{
    mem_free(state);
}

/* Checkpoint hooks (model.h): the counters consume changes, nothing else. */
static int count_save(const void *state, struct sink *k, struct errmsg *e)
{
    const struct count_state *s = state;
    int rc = sink_write(k, s->records, sizeof s->records);
    if (!rc)
        rc = sink_write(k, s->sum, sizeof s->sum);
    if (!rc)
        rc = sink_write(k, &s->spin_acc, sizeof s->spin_acc);
    return rc ? errmsg_set(e, rc, "out of memory") : 0;
}

static int count_load(void *state, struct model_ckpt_in *in, struct errmsg *e)
{
    struct count_state *s = state;
    int rc = model_ckpt_get(in, s->records, sizeof s->records);
    if (!rc)
        rc = model_ckpt_get(in, s->sum, sizeof s->sum);
    if (!rc)
        rc = model_ckpt_get(in, &s->spin_acc, sizeof s->spin_acc);
    if (rc)
        return errmsg_set(e, rc, "truncated count state");
    /* the sums are printed and scaled: finite, as consume makes them */
    for (int i = 0; i < 2; i++)
        if (!model_ckpt_in_range(s->sum[i], -DBL_MAX, DBL_MAX) || (!s->records[i] && s->sum[i]))
            return errmsg_set(e, ERR_DATA, "bad count state: sum %d is %g over %llu records", i,
                              s->sum[i], (unsigned long long)s->records[i]);
    return 0;
}

/*
 * Memory estimate (model.h; docs/models.md#memory-estimates-replay-engine-convention): the state
 * and its one row (two with split_rows) of at most 5 columns; nothing grows with the trace.
 */
static uint64_t count_estimate(const struct hw_config *cfg, const Acceltrace__TraceHeader *hdr)
{
    (void)hdr;
    uint64_t rows = hw_config_bool(cfg, "split_rows") ? 2 : 1;
    return sizeof(struct count_state) + rows * MODEL_RESULT_ROW_BYTES(5);
}

/* Pass estimate (model.h): nothing shared; a TestRecord in flight is about 1 KiB decoded
 * (the default 16 numbers and 64-byte blob take 200 bytes; --numbers/--blob-bytes grow it)
 * [decision]. */
static void count_estimate_pass(const Acceltrace__TraceHeader *hdr, uint64_t *shared_bytes,
                                uint64_t *per_record_bytes)
{
    (void)hdr;
    *shared_bytes = 0;
    *per_record_bytes = 1024;
}

const struct model_ops model_count_ops = {
    .name = "count",
    .workload = "test",
    .summary = "test model: counts TestRecords and sums one of their fields",
    .schema = &count_schema,
    .default_config = "configs/test-count.json",
    .default_energy_table = "configs/test-energy.json",
    .new = count_new,
    .consume = count_consume,
    .finish = count_finish,
    .free = count_free,
    .estimate_bytes = count_estimate,
    .estimate_pass = count_estimate_pass,
    .save = count_save,
    .load = count_load,
};
