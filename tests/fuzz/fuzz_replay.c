/*
 * fuzz_replay: libFuzzer target that feeds trace records through every replay model
 * (replay/model_registry) and the analyzers that take records (analysis/hash_lb,
 * analysis/conflicts). The input is one of
 *
 *   sel  varint(len) TraceHeader  { varint(len) Record }     records, decoded
 *   "ACCTRACE" ...                                            a whole .atr trace
 *
 * The first form skips the container (CRCs, compression, index) that rejects nearly every
 * mutation of a real trace, so the fuzzer reaches the models: each length-prefixed message
 * is unpacked as protobuf; the stream ends at the first one that does not parse, and
 * records the reader never returns (no body, a header, an index) are dropped. The second
 * form goes through the reader (traces/trace_reader) from memory. Either way every model
 * whose workload matches the header's (the engine refuses the others) runs one instance
 * with its default config (its default_config file when one loads, else the schema
 * defaults) through shared_new, new, prepare/consume per record, finish and free, in the
 * order replay/engine.c calls them, and stops at the first error as the engine does; with
 * sel bit 0 the rows go to a scratch results folder (FUZZ_VERBOSE=1 in the environment
 * prints each model's outcome, to check what a seed reaches). DiSC headers also feed hash_lb and
 * Salca selections and prefills feed conflicts, as `analyze` does.
 *
 * Seeds: real captures converted by this file built as a program:
 *   gcc -std=c11 -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE -I. -Ibuild/gen
 *       -DFUZZ_REPLAY_SEED_MAIN tests/fuzz/fuzz_replay.c build/libacceltrace.a
 *       $(pkg-config --libs libzstd libprotobuf-c libpng jansson libxxhash) -lopenblas
 *       -lpthread -lm -o replay_seed
 *   replay_seed TRACE.atr [SEL] > tests/fuzz/corpus/replay/NAME
 * Under gcc, tests/fuzz/corpus_driver.c replays the corpus in `make test`.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/conflicts.h"
#include "analysis/hash_lb.h"
#include "analysis/heavy_stability.h"
#include "analysis/overshoot.h"
#include "analysis/select_quality.h"
#include "common/buf.h"
#include "common/io.h"
#include "common/mem.h"
#include "formats/trace.pb-c.h"
#include "formats/varint.h"
#include "replay/hw_config.h"
#include "replay/model.h"
#include "replay/model_registry.h"
#include "replay/results.h"
#include "tests/fuzz/fuzz_tmp.h"
#include "traces/trace_reader.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_RECORDS 100000
#define MAX_MODELS 16
#define GROUP_RECORDS 64 /* engine_opts.group_records' default */

/* A decoded input: header and records, freed with trace_free. */
struct trace {
    Acceltrace__TraceHeader *hdr;
    Acceltrace__Record **recs;
    size_t n, cap;
    bool from_reader; /* records owned by the reader's allocator (trace_record_free) */
};

static void trace_free(struct trace *t)
{
    for (size_t i = 0; i < t->n; i++) {
        if (t->from_reader)
            trace_record_free(t->recs[i]);
        else
            acceltrace__record__free_unpacked(t->recs[i], NULL);
    }
    mem_free(t->recs);
    if (t->hdr)
        acceltrace__trace_header__free_unpacked(t->hdr, NULL);
}

static int trace_push(struct trace *t, Acceltrace__Record *r)
{
    if (t->n == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 64;
        Acceltrace__Record **p = mem_realloc(t->recs, cap * sizeof *p);
        if (!p)
            return -1;
        t->recs = p;
        t->cap = cap;
    }
    t->recs[t->n++] = r;
    return 0;
}

/* True for the records trace_reader_next can return. */
static bool returnable(const Acceltrace__Record *r)
{
    return r->body_case != ACCELTRACE__RECORD__BODY__NOT_SET &&
           r->body_case != ACCELTRACE__RECORD__BODY_HEADER &&
           r->body_case != ACCELTRACE__RECORD__BODY_INDEX;
}

/* The length-prefixed form; 0 with t->hdr set, -1 when there is no header. */
static int decode_messages(const uint8_t *p, size_t n, struct trace *t)
{
    uint64_t len;
    size_t used;
    if (varint_get_u64(p, n, &len, &used) || len > n - used)
        return -1;
    t->hdr = acceltrace__trace_header__unpack(NULL, (size_t)len, p + used);
    if (!t->hdr)
        return -1;
    p += used + len;
    n -= used + len;
    while (n && t->n < MAX_RECORDS) {
        if (varint_get_u64(p, n, &len, &used) || len > n - used)
            break;
        Acceltrace__Record *r = acceltrace__record__unpack(NULL, (size_t)len, p + used);
        if (!r)
            break;
        if (!returnable(r) || trace_push(t, r))
            acceltrace__record__free_unpacked(r, NULL);
        p += used + len;
        n -= used + len;
    }
    return 0;
}

/* A whole trace through the reader; 0 with t->hdr set, -1 when it does not open. */
static int decode_atr(const uint8_t *data, size_t size, struct trace *t)
{
    struct src s;
    src_init_mem(&s, data, size);
    struct trace_reader_opts o;
    trace_reader_opts_default(&o);
    o.max_record_bytes = 8u << 20;
    struct trace_reader *r;
    struct errmsg err = {0};
    if (trace_reader_open_src(&r, &s, "fuzz", &o, &err) != 0)
        return -1;
    /* the header is the reader's: copy it so the trace owns what it frees */
    const Acceltrace__TraceHeader *h = trace_reader_header(r);
    size_t hl = h ? acceltrace__trace_header__get_packed_size(h) : 0;
    uint8_t *hb = h ? mem_alloc(hl + 1) : NULL;
    if (hb) {
        acceltrace__trace_header__pack(h, hb);
        t->hdr = acceltrace__trace_header__unpack(NULL, hl, hb);
        mem_free(hb);
    }
    t->from_reader = true;
    Acceltrace__Record *rec;
    while (t->hdr && t->n < MAX_RECORDS && trace_reader_next(r, &rec, NULL) == 1)
        if (trace_push(t, rec))
            trace_record_free(rec);
    trace_reader_free(r);
    return t->hdr ? 0 : -1;
}

/* The config a model replays with by default (cached per model; NULL when none builds). */
static const struct hw_config *default_config(size_t i, const struct model_ops *m)
{
    static struct hw_config *cfg[MAX_MODELS];
    static bool tried[MAX_MODELS];
    if (i >= MAX_MODELS)
        return NULL;
    if (!tried[i]) {
        tried[i] = true;
        struct errmsg e = {0, ""};
        if (!m->default_config || hw_config_load(&cfg[i], m->default_config, m->schema, &e))
            if (hw_config_defaults(&cfg[i], m->schema))
                cfg[i] = NULL;
    }
    return cfg[i];
}

/* One model over the trace, as the engine drives one instance. */
static void run_model(const struct model_ops *m, const struct hw_config *cfg, const struct trace *t,
                      bool write_rows)
{
    struct model_env env = {.hdr = t->hdr, .trace_path = "(memory)", .shared = NULL};
    struct errmsg e = {0, ""};
    void *shared = NULL, *state = NULL;
    struct model_result *res = NULL;
    if (m->shared_new && m->shared_new(&shared, &env, &e))
        goto done;
    env.shared = shared;
    if (m->new (&state, cfg, &env, &e))
        goto done;
    /* groups as in engine.c: prepare every record of a group, then consume them */
    struct model_record group[GROUP_RECORDS];
    void *aux[GROUP_RECORDS];
    int rc = 0;
    for (size_t g = 0; g < t->n && !rc; g += GROUP_RECORDS) {
        size_t n = t->n - g < GROUP_RECORDS ? t->n - g : GROUP_RECORDS, k = 0;
        for (; k < n && !rc; k++) {
            group[k] = (struct model_record){t->recs[g + k], NULL, g + k};
            aux[k] = NULL;
            if (m->prepare)
                rc = m->prepare(shared, &group[k], &aux[k], &e);
            group[k].aux = aux[k];
        }
        for (size_t j = 0; j < k && !rc; j++)
            rc = m->consume(state, &group[j], &e);
        for (size_t j = 0; j < k; j++)
            if (aux[j] && m->aux_free)
                m->aux_free(shared, aux[j]);
    }
    if (rc)
        goto done;
    if (!(res = model_result_new()) || m->finish(state, res, &e))
        goto done;
    size_t rows = model_result_rows(res);
    double v;
    for (size_t i = 0; i < rows; i++)
        (void)model_result_get(res, i, "seconds", &v);
    char dir[512];
    struct results *out = NULL;
    if (write_rows && fuzz_tmp_name("res", dir, sizeof dir) == 0) {
        (void)io_remove_tree(dir);
        if (results_open(&out, dir, "0123456789abcdef0123456789abcdef", m->name, &e) == 0) {
            (void)results_append(out, cfg, 0, res, NULL, &e);
            (void)results_close(out);
        }
    }
done:
    if (getenv("FUZZ_VERBOSE"))
        fprintf(stderr, "fuzz_replay: model %s, %zu records: %s\n", m->name, t->n,
                e.code ? errmsg_text(&e) : "ok");
    model_result_free(res);
    if (state)
        m->free(state);
    if (shared && m->shared_free)
        m->shared_free(shared);
}

/* The analyzers `analyze hash` and `analyze conflicts` run on records. */
static void run_analyzers(const struct trace *t)
{
    struct errmsg e = {0, ""};
    if (t->hdr->disc) {
        struct hash_lb_opts o;
        hash_lb_opts_default(&o);
        struct hash_lb *a = NULL;
        if (hash_lb_new(&a, &o, t->hdr, NULL, &e) == 0) {
            size_t i = 0;
            while (i < t->n && hash_lb_record(a, t->recs[i], &e) == 0)
                i++;
            if (i == t->n && hash_lb_finish(a, &e) == 0) {
                (void)hash_lb_masks_seen(a);
                (void)hash_lb_matrix_bin(a, 0);
            }
            hash_lb_free(a);
        }
    }
    if (!strcmp(t->hdr->workload, "salca")) {
        /* the four analyzers of `analyze conflicts`, fed as one pass feeds them */
        struct conflicts_opts o;
        conflicts_opts_default(&o);
        struct conflicts *c = NULL;
        struct select_quality *q = NULL;
        struct overshoot *ov = NULL;
        struct heavy_stability *hs = NULL;
        if (conflicts_new(&c, &o, &e) == 0 && select_quality_new(&q, o.method, &e) == 0 &&
            overshoot_new(&ov, &e) == 0 && heavy_stability_new(&hs, &e) == 0 &&
            select_quality_begin_trace(q, t->hdr, &e) == 0) {
            int rc = 0;
            for (size_t i = 0; i < t->n && rc >= 0; i++) {
                const Acceltrace__Record *r = t->recs[i];
                if (r->body_case == ACCELTRACE__RECORD__BODY_SALCA_SELECT) {
                    rc = conflicts_add_select(c, "all", r->salca_select, &e);
                    if (rc >= 0)
                        rc = select_quality_add(q, "all", r->salca_select, &e);
                    if (rc >= 0)
                        rc = overshoot_add(ov, r->salca_select, &e);
                } else if (r->body_case == ACCELTRACE__RECORD__BODY_SALCA_PREFILL) {
                    rc = heavy_stability_add(hs, r->salca_prefill, &e);
                }
            }
            struct conflicts_totals tot;
            for (size_t p = 0; p < conflicts_n_policies(c); p++)
                (void)conflicts_totals(c, -1, p, &tot);
            (void)select_quality_n_rows(q);
            struct overshoot_stats ost;
            overshoot_stats(ov, &ost);
            struct heavy_stability_row st;
            for (size_t i = 0; i < heavy_stability_n_rows(hs); i++)
                (void)heavy_stability_row(hs, i, &st);
            (void)heavy_stability_prefills(hs, NULL);
        }
        conflicts_free(c);
        select_quality_free(q);
        overshoot_free(ov);
        heavy_stability_free(hs);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    struct trace t = {0};
    int rc = size >= 8 && !memcmp(data, "ACCTRACE", 8) ? decode_atr(data, size, &t)
                                                       : decode_messages(data + 1, size - 1, &t);
    bool write_rows = data[0] & 1;
    if (rc == 0) {
        for (size_t i = 0; i < model_registry_count(); i++) {
            const struct model_ops *m = model_registry_get(i);
            if (m->workload && strcmp(m->workload, t.hdr->workload))
                continue; /* engine_run refuses it */
            const struct hw_config *cfg = default_config(i, m);
            if (cfg)
                run_model(m, cfg, &t, write_rows);
        }
        run_analyzers(&t);
    }
    trace_free(&t);
    return 0;
}

#ifdef FUZZ_REPLAY_SEED_MAIN
/* replay_seed TRACE.atr [SEL]: writes TRACE's header and records in the first form. */
int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: replay_seed TRACE.atr [SEL] > SEED\n");
        return 2;
    }
    struct trace_reader *r;
    struct errmsg err = {0};
    if (trace_reader_open(&r, argv[1], NULL, &err) != 0) {
        fprintf(stderr, "replay_seed: %s\n", err);
        return 3;
    }
    struct buf b;
    buf_init(&b);
    uint8_t sel = argc > 2 ? (uint8_t)atoi(argv[2]) : 0;
    int rc = buf_append(&b, &sel, 1);
    const Acceltrace__TraceHeader *h = trace_reader_header(r);
    size_t hl = acceltrace__trace_header__get_packed_size(h);
    uint8_t *tmp = mem_alloc(hl + 1);
    acceltrace__trace_header__pack(h, tmp);
    rc |= varint_append_u64(&b, hl) | buf_append(&b, tmp, hl);
    mem_free(tmp);
    Acceltrace__Record *rec;
    while (rc == 0 && trace_reader_next(r, &rec, NULL) == 1) {
        size_t n = acceltrace__record__get_packed_size(rec);
        tmp = mem_alloc(n + 1);
        acceltrace__record__pack(rec, tmp);
        rc |= varint_append_u64(&b, n) | buf_append(&b, tmp, n);
        mem_free(tmp);
        trace_record_free(rec);
    }
    trace_reader_free(r);
    fwrite(b.data, 1, b.len, stdout);
    buf_release(&b);
    return rc ? 1 : 0;
}
#endif
