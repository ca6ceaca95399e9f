/*
 * fuzz_ckpt: libFuzzer target for replay checkpoints (replay.ckpt, replay/engine.h): the
 * engine's reading of the file and the load hooks of the disc, salca, kura and a100 models
 * (replay/model.h), followed by the rest of the replay, as a rerun after a kill does it.
 *
 * The traces are fixed, small captures committed beside this file (tests/fuzz/ckpt/; the
 * folder is $FUZZ_CKPT_DIR when set, else found from the working folder, which is the
 * repository root under `make test` and `make fuzz`); a missing one aborts the run, so an
 * empty replay can never pass for a clean one. The input:
 *
 *   sel   model sel % 4 (disc, salca, kura on kura.atr, the dense baseline of disc traces
 *         on disc.atr: a100, or gpu where that is its name);
 *         sel / 4 % 2 picks the form
 *   form 0: u8 records  state  [SEP shared]
 *         the harness writes a well-formed checkpoint of this build, trace, model and the
 *         model's default config: records % (trace records) records consumed, at that
 *         record's frame, with one instance whose saved state is `state` and whose shared
 *         state is `shared` (empty without SEP)
 *   form 1: body
 *         the bytes after the model name (records, position, instances, shared state,
 *         entries), between the identity the engine requires and a correct CRC
 *
 * Either way the engine runs the default config with the checkpoint folder set, so it reads
 * the file, loads the instance and goes on to finish (or refuses: ignored file, or an
 * error naming it). SEP is the 8 bytes "\0--part\0".
 *
 * Seeds: real checkpoints (replay --checkpoint-records 1 --time-limit 0 on the traces
 * above with --model NAME), converted to both forms by scripts/fuzz_ckpt_seeds.py.
 * Under gcc, tests/fuzz/corpus_driver.c replays the corpus in `make test`.
 *
 * The traces were made with:
 *   acceltrace capture disc --model micro --steps 3 \
 *       --keep-masks 'blocks=0;heads=all;steps=all' -q -o tests/fuzz/ckpt/disc.atr
 *   acceltrace capture salca --source synthetic -q -q --length 512 --steps 3 --layers 2 \
 *       --heads 2 --threads 1 -o tests/fuzz/ckpt/salca.atr
 *   acceltrace capture kura --size 8x8 --steps 6 --data uniform --tile-streams 4x4 -q \
 *       -o tests/fuzz/ckpt/kura.atr
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/crc32c.h"
#include "common/mem.h"
#include "replay/engine.h"
#include "replay/hw_config.h"
#include "replay/model_registry.h"
#include "tests/fuzz/fuzz_tmp.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define SEP "\0--part\0"
#define SEP_LEN 8
#define BUILD_ID "fuzz-ckpt"
#define N_MODELS 4

/* One model on one trace: its source (kept open; the engine rewinds it), the record
 * positions and the default config. */
struct target {
    const char *model, *alt, *trace; /* alt: the model's other name, tried when model is absent */
    const struct model_ops *m;
    struct record_source src;
    uint64_t *pos; /* (n + 1) position() before record i */
    size_t n;
    struct hw_config *cfg;
};

static struct target targets[N_MODELS] = {
    {"disc", NULL, "disc.atr", NULL, {0}, NULL, 0, NULL},
    {"salca", NULL, "salca.atr", NULL, {0}, NULL, 0, NULL},
    {"kura", NULL, "kura.atr", NULL, {0}, NULL, 0, NULL},
    {"a100", "gpu", "disc.atr", NULL, {0}, NULL, 0, NULL},
};

/* Stops the run: a fuzz target without its traces tests nothing. */
static void die(const char *what, const char *detail)
{
    fprintf(stderr, "fuzz_ckpt: %s: %s\n", what, detail);
    abort();
}

/* Opens t's trace and records where each record starts. */
static void target_open(struct target *t)
{
    const char *dir = getenv("FUZZ_CKPT_DIR") ? getenv("FUZZ_CKPT_DIR") : "tests/fuzz/ckpt";
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, t->trace);
    struct errmsg e = {0};
    if (!(t->m = model_registry_find(t->model)) && t->alt)
        t->m = model_registry_find(t->alt);
    if (!t->m)
        die("no model", t->model);
    if (record_source_trace(&t->src, path, 1, &e))
        die(path, e.text);
    if (hw_config_defaults(&t->cfg, t->m->schema))
        die("no default config", t->model);
    size_t cap = 16;
    t->pos = malloc(cap * sizeof *t->pos);
    for (;;) {
        if (t->n + 1 >= cap)
            t->pos = realloc(t->pos, (cap *= 2) * sizeof *t->pos);
        if (!t->pos)
            die("out of memory", path);
        t->pos[t->n] = t->src.position(t->src.ctx);
        Acceltrace__Record *rec = NULL;
        int k = t->src.next(t->src.ctx, &rec);
        if (k < 0)
            die(path, t->src.errmsg(t->src.ctx));
        if (k == 0)
            break;
        t->src.record_free(t->src.ctx, rec);
        t->n++;
    }
    if (t->n == 0)
        die(path, "no records");
}

/* Appends bytes to a growing buffer (b, *len, *cap); aborts when out of memory. */
static void put(uint8_t **b, size_t *len, size_t *cap, const void *p, size_t n)
{
    while (*len + n > *cap)
        if (!(*b = realloc(*b, *cap = *cap ? 2 * *cap : 4096)))
            die("out of memory", "checkpoint");
    if (n)
        memcpy(*b + *len, p, n);
    *len += n;
}

static void put_u(uint8_t **b, size_t *len, size_t *cap, uint64_t v, int n)
{
    uint8_t x[8];
    for (int i = 0; i < n; i++)
        x[i] = (uint8_t)(v >> (8 * i));
    put(b, len, cap, x, (size_t)n);
}

static void put_str(uint8_t **b, size_t *len, size_t *cap, const char *s)
{
    put_u(b, len, cap, strlen(s), 4);
    put(b, len, cap, s, strlen(s));
}

/* Finds SEP in data; its offset or size when absent. */
static size_t find_sep(const uint8_t *data, size_t size)
{
    for (size_t i = 0; i + SEP_LEN <= size; i++)
        if (data[i] == 0 && !memcmp(data + i, SEP, SEP_LEN))
            return i;
    return size;
}

/* The checkpoint file of input (form 0 or 1) for t into *out (*out_len); caller frees. */
static void make_ckpt(struct target *t, int form, const uint8_t *d, size_t n, uint8_t **out,
                      size_t *out_len)
{
    uint8_t *b = NULL;
    size_t len = 0, cap = 0;
    put(&b, &len, &cap, "ATCKPT02", 8);
    put_str(&b, &len, &cap, BUILD_ID);
    put_str(&b, &len, &cap, t->src.content_hash(t->src.ctx));
    put_str(&b, &len, &cap, t->m->name);
    if (form == 1) {
        put(&b, &len, &cap, d, n);
    } else {
        size_t records = n ? d[0] % t->n : 0;
        const uint8_t *state = n ? d + 1 : d;
        size_t rest = n ? n - 1 : 0, sep = find_sep(state, rest);
        const uint8_t *shared = sep < rest ? state + sep + SEP_LEN : NULL;
        size_t shared_len = sep < rest ? rest - sep - SEP_LEN : 0;
        put_u(&b, &len, &cap, records, 8);
        put_u(&b, &len, &cap, t->pos[records], 8);
        put_u(&b, &len, &cap, 1, 8);
        put_u(&b, &len, &cap, shared_len, 8);
        put(&b, &len, &cap, shared, shared_len);
        put_u(&b, &len, &cap, 0, 8);
        put_str(&b, &len, &cap, hw_config_hash(t->cfg));
        put_u(&b, &len, &cap, sep, 8);
        put(&b, &len, &cap, state, sep);
    }
    put_u(&b, &len, &cap, crc32c_update(0, b, len), 4);
    *out = b;
    *out_len = len;
}

/* Rows are dropped: the run is what is tested. */
static int drop_rows(void *ctx, const struct hw_config *cfg, size_t config_index,
                     struct model_result **res, const struct energy_table *energy, struct errmsg *e)
{
    (void)ctx, (void)cfg, (void)config_index, (void)res, (void)energy, (void)e;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int opened;
    if (!opened) {
        for (int i = 0; i < N_MODELS; i++)
            target_open(&targets[i]);
        opened = 1;
    }
    if (size < 1)
        return 0;
    struct target *t = &targets[data[0] % N_MODELS];
    int form = data[0] / N_MODELS % 2;
    char dir[512], path[600];
    if (fuzz_tmp_fresh_dir("ckpt", dir, sizeof dir))
        die("no scratch folder", "ckpt");
    uint8_t *file = NULL;
    size_t len = 0;
    make_ckpt(t, form, data + 1, size - 1, &file, &len);
    snprintf(path, sizeof path, "%s/replay.ckpt", dir);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(file, 1, len, f) != len || fclose(f))
        die("cannot write", path);
    free(file);
    struct engine_opts o;
    engine_opts_default(&o);
    o.threads = 1;
    o.quiet = true;
    o.checkpoint_dir = dir;
    o.checkpoint_s = 0;
    o.checkpoint_records = UINT64_MAX / 2; /* read the checkpoint, write none */
    o.build_id = BUILD_ID;
    struct hw_config *const list[1] = {t->cfg};
    const struct engine_configs configs = {NULL, list, 1};
    const struct engine_sink sink = {NULL, NULL, drop_rows};
    struct engine_stats st;
    struct errmsg e = {0};
    (void)engine_run_to(t->m, &t->src, &configs, &sink, &o, &st, &e);
    if (getenv("FUZZ_VERBOSE"))
        fprintf(stderr, "fuzz_ckpt: %s form %d: resumed %llu records; %s%s\n", t->model, form,
                (unsigned long long)st.resumed_records, e.text, st.note);
    return 0;
}
