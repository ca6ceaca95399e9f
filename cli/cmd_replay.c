/*
 * cmd_replay: `acceltrace replay FILE.atr --hw CONFIG.json [--sweep GRID.json] [-j N]
 * [--shard I/N] [--energy E.json] -o DIR` (README.md, replay): replays a trace against
 * one config or a sweep in one pass and writes DIR/results.csv and DIR/results.jsonl.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cli.h"
#include "cli/cli_opt.h"
#include "cli/cli_set.h"
#include "common/err.h"
#include "common/io.h"
#include "common/mem.h"
#include "common/progress.h"
#include "common/threads.h"
#include "replay/engine.h"
#include "replay/model_registry.h"

#define VERB "replay"

enum {
    OPT_HW = 1,
    OPT_MODEL,
    OPT_SWEEP,
    OPT_ENERGY,
    OPT_SHARD,
    OPT_BATCH,
    OPT_CKPT_EVERY,
    OPT_CKPT_RECORDS,
    OPT_GROUP_RECORDS,
    OPT_TIME_LIMIT,
    OPT_DRY_RUN,
    OPT_SET,
};

static const struct cli_opt opts[] = {
    {OPT_HW, "hw", 0, CLI_ARG_STRING, "CONFIG.json",
     "base hardware config (its \"model\" picks the model)", 0},
    {OPT_MODEL, "model", 0, CLI_ARG_STRING, "NAME", "use NAME's defaults when no --hw is given", 0},
    {OPT_SWEEP, "sweep", 0, CLI_ARG_STRING, "GRID.json",
     "grid of values per key (lists, {\"range\": [a, b, step]},\n{\"zip\": {...}}); the "
     "cartesian product is replayed",
     0},
    {OPT_ENERGY, "energy", 0, CLI_ARG_STRING, "E.json",
     "energy table applied to the activity counts of every row", 0},
    CLI_OPT_SET(OPT_SET),
    CLI_OPT_THREADS("model instances split over N threads (default: CPUs)"),
    {OPT_SHARD, "shard", 0, CLI_ARG_STRING, "I/N", "replay only the I-th of N slices of the sweep",
     0},
    {OPT_BATCH, "batch", 0, CLI_ARG_INT, "N",
     "at most N model instances per pass over the trace (default:\nas many as --mem-limit "
     "holds; all, one pass, when they fit)",
     0},
    CLI_OPT_OUTPUT("DIR", "results folder (created)"),
    {OPT_CKPT_EVERY, "checkpoint-every", 0, CLI_ARG_DOUBLE, "S",
     "save the models' state to DIR/replay.ckpt every S seconds\n(default 0.25; 0 = never), so "
     "a killed replay resumes there",
     0},
    {OPT_CKPT_RECORDS, "checkpoint-records", 0, CLI_ARG_INT, "N", "also save every N records", 0},
    {OPT_GROUP_RECORDS, "group-records", 0, CLI_ARG_INT, "N",
     "records decoded per group (default 64); checkpoints fall\nbetween groups", 0},
    {OPT_TIME_LIMIT, "time-limit", 0, CLI_ARG_DOUBLE, "S",
     "stop at the first checkpoint after S seconds (exit 1); a\nrerun continues from it", 0},
    CLI_OPT_MEM_LIMIT("refuse to start when the estimated memory is above SIZE\n(default 8GiB; "
                      "units B, KB..TB, K..T, KiB..TiB); the default\nbatch is sized to fit it"),
    {OPT_DRY_RUN, "dry-run", 0, CLI_ARG_NONE, NULL,
     "print the configs (count, hashes), passes, estimated memory\nand time (from the first "
     "records), and exit writing nothing",
     0},
    {CLI_ID_JSON, "json", 0, CLI_ARG_NONE, NULL,
     "the summary of the run as one JSON object on stdout", 0},
    {CLI_ID_QUIET, "quiet", 'q', CLI_ARG_NONE, NULL,
     "no progress on stderr (warnings are still printed)", 0},
    {CLI_ID_ALLOW_PARTIAL, "allow-partial", 0, CLI_ARG_NONE, NULL,
     "replay a damaged trace (no or inconsistent index) with a\nwarning instead of refusing it "
     "(exit 3)",
     0},
    CLI_OPT_END,
};

/* The models, after the options. */
static void list_models(FILE *f)
{
    fputs("\nmodels:\n", f);
    for (size_t i = 0; i < model_registry_count(); i++) {
        const struct model_ops *m = model_registry_get(i);
        fprintf(f, "  %-10s %s\n", m->name, m->summary ? m->summary : "");
    }
}

const struct cli_spec cmd_replay_spec = {
    .verb = VERB,
    .usage = "usage: acceltrace replay FILE.atr --hw CONFIG.json [--sweep GRID.json] [options] "
             "-o DIR\n"
             "\n"
             "Replays a trace against a hardware config, or every config of a sweep grid, reading\n"
             "the trace once. Rows go to DIR/results.csv and DIR/results.jsonl keyed by (trace\n"
             "hash, config hash); a rerun into the same DIR skips configs already there.\n"
             "DIR is locked while replay runs (a second writer exits 2) and DIR/manifest.json\n"
             "records the trace, config, grid, energy table, shard and version: a rerun with any\n"
             "of them changed exits 2 naming it, and resume warns about the rows it drops.\n",
    .opts = opts,
    .more = list_models,
    .positional = "FILE",
};

/* Decimal digits only, at most 1000000: sscanf's %u took signs and wrapped values past
 * 32 bits (4294967297/4294967299 read as 1/3). */
static bool parse_shard_part(const char *s, size_t len, unsigned *out)
{
    if (len == 0 || len > 7)
        return false;
    unsigned v = 0;
    for (size_t k = 0; k < len; k++) {
        if (s[k] < '0' || s[k] > '9')
            return false;
        v = v * 10 + (unsigned)(s[k] - '0');
    }
    *out = v;
    return true;
}

static bool parse_shard(const char *s, unsigned *i, unsigned *n)
{
    const char *slash = strchr(s, '/');
    unsigned a, b;
    if (!slash || !parse_shard_part(s, (size_t)(slash - s), &a) ||
        !parse_shard_part(slash + 1, strlen(slash + 1), &b) || b == 0 || a == 0 || a > b ||
        b > 1000000)
        return false;
    *i = a;
    *n = b;
    return true;
}

/* Bytes of the program itself while it replays: code, libraries, the reader's buffers and
 * one group of decoded records [measured: 10 MiB RSS for a 1-config replay of a test
 * trace]. */
#define REPLAY_BASE_BYTES ((uint64_t)10 << 20)
/* Bytes per config of the run in the results folder's index of finished config hashes
 * (a 17-byte string and up to 4 slots of its open-addressing table, replay/results.c; the
 * old table during a rehash) [measured: 128 MB peak after 391683 of 10^6 count configs
 * under --mem-limit 100MiB before it was counted]. */
#define REPLAY_DONE_INDEX_BYTES 80u
/* Configs listed by --dry-run before it only counts the rest. */
#define REPLAY_DRY_RUN_LIST 1000u
/* --dry-run times at most this many records, for about this many seconds [decision]. */
#define REPLAY_PROBE_RECORDS 512u
#define REPLAY_PROBE_S 0.5
/* ... or the whole trace when that looks like at most this many seconds, so finish() runs
 * on every record (some models refuse a cut trace) and the average is the trace's own
 * [decision]. */
#define REPLAY_PROBE_WHOLE_S 2.0
/* Configs the dry run times, and records it decodes at once (as the engine's groups). */
#define REPLAY_PROBE_CONFIGS 16
#define REPLAY_PROBE_GROUP 64

/* CPU seconds of the calling thread: what the probe's work costs, whatever else the
 * machine runs (wall-clock timings on a busy machine overstate it many times). */
static double cpu_now_s(void)
{
    struct timespec ts;
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0)
        return progress_now_s();
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* What a replay of configs [begin, end) needs
 * (docs/models.md#memory-estimates-replay-engine-convention). */
struct replay_budget {
    size_t begin, end, n;
    struct model_estimate est;
    uint64_t mean_bytes;     /* per instance, engine bookkeeping included */
    uint64_t records_bytes;  /* shared state and a group of records in flight, per pass */
    uint64_t fixed_bytes;    /* those, the program, the results' index of done configs */
    uint64_t limit_bytes;    /* --mem-limit, or the engine's default */
    uint64_t instance_bytes; /* what the instances of a pass may take: limit - fixed */
    size_t batch;            /* instances per pass (--batch, or what fits instance_bytes) */
    size_t passes;
    uint64_t need_bytes; /* fixed + one pass of `batch` instances */
};

static uint64_t sat_add(uint64_t a, uint64_t b)
{
    return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

static uint64_t sat_mul(uint64_t a, uint64_t b)
{
    return a && b > UINT64_MAX / a ? UINT64_MAX : a * b;
}

/*
 * Estimates the replay (docs/models.md#memory-estimates-replay-engine-convention) and refuses it
 * (ERR_LIMIT, the one message shape of common/mem.h) when its smallest pass is above the limit: the
 * program, the results' index of finished configs (it grows over the whole run) and what
 * a pass holds once (shared state, records in flight), plus --batch N
 * instances, or plus the largest single instance when the batch is the engine's to
 * choose. What is left of the limit (instance_bytes) is the engine's budget for the
 * instances of a pass (engine_opts.mem_limit_bytes), so its batches keep the whole run
 * under the limit.
 */
static int replay_budget(struct replay_budget *b, const struct model_ops *m, const struct sweep *sw,
                         const struct engine_opts *o, const Acceltrace__TraceHeader *hdr,
                         struct errmsg *e)
{
    memset(b, 0, sizeof *b);
    sweep_shard(sweep_count(sw), o->shard_i, o->shard_n, &b->begin, &b->end);
    b->n = b->end - b->begin;
    b->limit_bytes = o->mem_limit_bytes ? o->mem_limit_bytes : ENGINE_DEFAULT_MEM_LIMIT;
    int rc = model_estimate_sweep(m, sw, b->begin, b->end, hdr, &b->est, e);
    if (rc || b->n == 0)
        return rc;
    b->mean_bytes = b->est.total_bytes / b->n;
    b->records_bytes = model_estimate_pass_bytes(m, hdr, o->group_records ? o->group_records : 64);
    b->fixed_bytes = sat_add(sat_add(REPLAY_BASE_BYTES, b->records_bytes),
                             sat_mul(b->n, REPLAY_DONE_INDEX_BYTES));
    b->instance_bytes = b->limit_bytes > b->fixed_bytes ? b->limit_bytes - b->fixed_bytes : 0;
    if (o->batch_configs) {
        b->batch = o->batch_configs < b->n ? o->batch_configs : b->n;
    } else {
        /* the engine adds instances while their estimates fit instance_bytes (at least 1,
         * at most ENGINE_MAX_BATCH_CONFIGS) */
        uint64_t fit = b->mean_bytes ? b->instance_bytes / b->mean_bytes : b->n;
        if (fit > ENGINE_MAX_BATCH_CONFIGS)
            fit = ENGINE_MAX_BATCH_CONFIGS; /* the engine's cap on a default pass */
        b->batch = fit < 1 ? 1 : fit < b->n ? (size_t)fit : b->n;
    }
    b->passes = (b->n + b->batch - 1) / b->batch;
    uint64_t pass = b->batch == 1 ? b->est.max_instance_bytes : sat_mul(b->batch, b->mean_bytes);
    b->need_bytes = sat_add(b->fixed_bytes, pass);
    uint64_t smallest =
        o->batch_configs ? b->need_bytes : sat_add(b->fixed_bytes, b->est.max_instance_bytes);
    if (smallest <= b->limit_bytes)
        return 0;
    char what[160];
    if (o->batch_configs)
        snprintf(what, sizeof what, "replay of %zu '%s' configs in passes of %zu", b->n, m->name,
                 b->batch);
    else
        snprintf(what, sizeof what, "replay of %zu '%s' configs, even one instance per pass,", b->n,
                 m->name);
    return mem_budget_refuse(e, what, smallest, b->limit_bytes,
                             o->batch_configs
                                 ? "use a smaller --batch or none (batches are then sized to "
                                   "fit), or raise --mem-limit"
                                 : "raise --mem-limit");
}

/* What --dry-run measured on the first records of the trace. */
struct replay_probe {
    size_t records;   /* records timed */
    size_t configs;   /* configs whose instances consumed them */
    double decode_s;  /* per record: decode and prepare (once for all instances) */
    double consume_s; /* per record and config: consume */
    double config_s;  /* per config: build it, hash it, new() and free its instance */
    double finish_s;  /* per config: finish() after the records timed */
    double row_s;     /* per config: writing its rows (results_append) */
    double results_s; /* once: opening and closing a results folder (manifest, fsyncs) */
    bool rows_timed;  /* finish and rows could be timed (finish may refuse a cut trace) */
};

/*
 * Times finish() of the probe's k instances and the writing of their rows into a scratch
 * results folder in $TMPDIR (or /tmp), removed at once: the run's -o folder is never
 * touched. Leaves rows_timed false when a finish fails on the records timed (a model may
 * need the whole trace) or the folder cannot be made.
 */
static void probe_rows(struct replay_probe *p, const struct model_ops *m, void *const *st,
                       struct hw_config *const *cfg, size_t k, const char *trace_hash)
{
    struct model_result *res[REPLAY_PROBE_CONFIGS] = {0};
    struct results *r = NULL;
    struct errmsg e = {0, ""};
    char dir[512], out[600];
    const char *tmp = getenv("TMPDIR") && *getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    snprintf(dir, sizeof dir, "%s/acceltrace-dry-run-XXXXXX", tmp);
    bool ok = mkdtemp(dir) != NULL, made = ok;
    double t0 = cpu_now_s();
    for (size_t j = 0; j < k && ok; j++)
        ok = (res[j] = model_result_new()) && m->finish(st[j], res[j], &e) == 0 &&
             result_err(res[j], &e) == 0;
    p->finish_s = (cpu_now_s() - t0) / (double)k;
    snprintf(out, sizeof out, "%s/r", dir);
    struct results_manifest man = {.version = ACCELTRACE_VERSION,
                                   .model = m->name,
                                   .trace_hash = trace_hash,
                                   .config_hash = hw_config_hash(cfg[0]),
                                   .n_configs = k,
                                   .command = "acceltrace replay --dry-run"};
    double t1 = progress_now_s();
    ok = ok && results_open_manifest(&r, out, &man, &e) == 0;
    double t2 = progress_now_s(), c2 = cpu_now_s();
    for (size_t j = 0; j < k && ok; j++)
        ok = results_append(r, cfg[j], j, res[j], NULL, &e) == 0;
    double t3 = progress_now_s(), c3 = cpu_now_s();
    ok = results_close(r) == 0 && ok;
    p->row_s = (c3 - c2) / (double)k;
    p->results_s = (t2 - t1) + (progress_now_s() - t3); /* fsyncs: wall clock */
    p->rows_timed = ok;
    for (size_t j = 0; j < k; j++)
        model_result_free(res[j]);
    if (made)
        (void)io_remove_tree(dir);
}

/*
 * The k configs of [begin, end) the probe times (k = min(n, REPLAY_PROBE_CONFIGS)): all
 * of a small slice, else the golden-ratio sequence over it, so no grid axis is sampled at
 * one value only (evenly spaced indices of a 4x4x4 grid all share its fastest key).
 */
static size_t probe_pick(size_t begin, size_t end, size_t *idx)
{
    size_t n = end - begin, k = 0;
    for (size_t j = 0; k < REPLAY_PROBE_CONFIGS && j < 4 * REPLAY_PROBE_CONFIGS && k < n; j++) {
        size_t i = n <= REPLAY_PROBE_CONFIGS
                       ? j
                       : (size_t)(fmod(0.6180339887498949 * (double)j, 1.0) * (double)n);
        bool seen = false;
        for (size_t q = 0; q < k; q++)
            seen = seen || idx[q] == begin + i;
        if (!seen && i < n)
            idx[k++] = begin + i;
    }
    return k;
}

/*
 * Times the first records of the trace (at most REPLAY_PROBE_RECORDS, about
 * REPLAY_PROBE_S seconds, or all of them when that projects to REPLAY_PROBE_WHOLE_S at
 * most) through the instances of up to REPLAY_PROBE_CONFIGS configs (probe_pick), as the
 * engine runs them: a group of records decoded and prepared once, then consumed by each
 * instance; then their finish() and rows (probe_rows). Times are CPU time of this thread
 * over whole groups (a clock read per record would cost more than a record). Nothing is
 * written but probe_rows' scratch folder. 0, or the model's or source's error (e set).
 */
static int replay_probe(struct replay_probe *p, const struct model_ops *m, const struct sweep *sw,
                        size_t begin, size_t end, struct record_source *src, struct errmsg *e)
{
    memset(p, 0, sizeof *p);
    struct hw_config *cfg[REPLAY_PROBE_CONFIGS] = {0};
    void *st[REPLAY_PROBE_CONFIGS] = {0};
    size_t pick[REPLAY_PROBE_CONFIGS];
    size_t k = probe_pick(begin, end, pick);
    struct model_env env = {.hdr = src->header(src->ctx), .trace_path = src->name};
    const Acceltrace__TraceHeader *hdr = env.hdr;
    if (k == 0)
        return 0;
    if (m->workload && hdr && hdr->workload && strcmp(m->workload, hdr->workload))
        return errmsg_set(e, ERR_DATA, "model '%s' replays '%s' traces, '%s' is a '%s' trace",
                          m->name, m->workload, src->name, hdr->workload);
    void *shared = NULL;
    int rc = m->shared_new ? m->shared_new(&shared, &env, e) : 0;
    if (rc)
        return rc;
    env.shared = shared;
    double t_cfg = cpu_now_s();
    for (size_t j = 0; j < k && !rc; j++)
        if (!(rc = sweep_config(sw, pick[j], &cfg[j], e))) {
            (void)hw_config_hash(cfg[j]); /* the engine hashes every config (resume keys) */
            rc = m->new (&st[j], cfg[j], &env, e);
        }
    t_cfg = cpu_now_s() - t_cfg;
    const uint64_t nrec = src->n_records ? src->n_records(src->ctx) : 0;
    Acceltrace__Record *recs[REPLAY_PROBE_GROUP];
    struct model_record group[REPLAY_PROBE_GROUP];
    void *aux[REPLAY_PROBE_GROUP];
    double spent = 0;
    for (bool end_seen = false; !rc && !end_seen;) {
        /* past the first slice: on to the end only when the whole trace is cheap */
        if ((p->records >= REPLAY_PROBE_RECORDS || spent > REPLAY_PROBE_S) &&
            !(nrec && spent / (double)p->records * (double)nrec <= REPLAY_PROBE_WHOLE_S))
            break;
        size_t n = 0;
        double t0 = cpu_now_s();
        while (!rc && n < REPLAY_PROBE_GROUP) {
            int got = src->next(src->ctx, &recs[n]);
            if (got <= 0) {
                if (got < 0)
                    rc = errmsg_set(e, got, "%s", src->errmsg(src->ctx));
                end_seen = true;
                break;
            }
            group[n] = (struct model_record){recs[n], NULL, p->records + n};
            aux[n] = NULL;
            if (m->prepare)
                rc = m->prepare(shared, &group[n], &aux[n], e);
            group[n].aux = aux[n];
            n++;
        }
        double t1 = cpu_now_s();
        for (size_t j = 0; j < k && !rc; j++)
            for (size_t r = 0; r < n && !rc; r++)
                rc = m->consume(st[j], &group[r], e);
        double t2 = cpu_now_s();
        for (size_t r = 0; r < n; r++) {
            if (aux[r] && m->aux_free)
                m->aux_free(shared, aux[r]);
            src->record_free(src->ctx, recs[r]);
        }
        p->decode_s += t1 - t0;
        p->consume_s += (t2 - t1) / (double)k;
        p->records += n;
        spent += cpu_now_s() - t0;
    }
    if (p->records) {
        p->decode_s /= (double)p->records;
        p->consume_s /= (double)p->records;
    }
    p->configs = k;
    if (!rc && p->records)
        probe_rows(p, m, st, cfg, k, src->content_hash(src->ctx));
    double t_free = cpu_now_s();
    for (size_t j = 0; j < k; j++) {
        if (st[j])
            m->free(st[j]);
        hw_config_free(cfg[j]);
    }
    p->config_s = (t_cfg + cpu_now_s() - t_free) / (double)k;
    if (shared && m->shared_free)
        m->shared_free(shared);
    return rc;
}

/*
 * --dry-run: the configs of the slice with their hashes (the first REPLAY_DRY_RUN_LIST),
 * the passes, the memory and a time estimate, on stdout; nothing is written. The time is
 * extrapolated from replay_probe: passes x records x (decode + prepare) + configs x (records
 * x consume + set-up + finish) / threads + configs x rows + one results folder
 * (docs/models.md#time-estimates); "unknown" without a record count.
 */
static int replay_dry_run(const struct replay_budget *b, const struct model_ops *m,
                          const struct sweep *sw, struct record_source *src, const char *trace,
                          int threads, bool batch_given, struct errmsg *e)
{
    char t1[32], t2[32], t3[32], t4[32], t5[32], t6[32];
    uint64_t nrec = src->n_records ? src->n_records(src->ctx) : 0;
    printf("trace: %s (content hash %s, %llu records per pass%s)\n", trace,
           src->content_hash(src->ctx), (unsigned long long)nrec,
           nrec ? "" : ", count unknown without an index");
    printf("model: %s\n", m->name);
    printf("configs: %zu (indices %zu..%zu of %zu)\n", b->n, b->begin, b->n ? b->end - 1 : b->begin,
           sweep_count(sw));
    for (size_t i = b->begin; i < b->end && i - b->begin < REPLAY_DRY_RUN_LIST; i++) {
        struct hw_config *c;
        int rc = sweep_config(sw, i, &c, e);
        if (rc)
            return rc;
        printf("config %zu %s\n", i, hw_config_hash(c));
        hw_config_free(c);
    }
    if (b->n > REPLAY_DRY_RUN_LIST)
        printf("... %zu more configs (acceltrace sweep GRID --hw CONFIG lists them all)\n",
               b->n - REPLAY_DRY_RUN_LIST);
    printf("passes: %zu of up to %zu configs (%s), %llu records read in all\n", b->passes, b->batch,
           batch_given ? "--batch" : "what fits --mem-limit by this estimate, at most 16384",
           (unsigned long long)(nrec * b->passes));
    printf("memory: about %s per instance (largest %s), %s shared and records in flight, "
           "%s index of finished configs, %s for the run (--mem-limit %s)%s\n",
           mem_size_text(b->mean_bytes, t1, sizeof t1),
           mem_size_text(b->est.max_instance_bytes, t2, sizeof t2),
           mem_size_text(b->records_bytes, t5, sizeof t5),
           mem_size_text(sat_mul(b->n, REPLAY_DONE_INDEX_BYTES), t6, sizeof t6),
           mem_size_text(b->need_bytes, t3, sizeof t3),
           mem_size_text(b->limit_bytes, t4, sizeof t4),
           b->est.sampled ? ", from a sample of the configs" : "");
    struct timespec ts;
    /* what the program took to get here (start, configs, grid, trace opened): the run
     * does the same before its first record */
    double start_s = clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts) == 0
                         ? (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec
                         : 0;
    struct replay_probe pr;
    int rc = replay_probe(&pr, m, sw, b->begin, b->end, src, e);
    if (rc)
        return rc;
    if (nrec && pr.records) {
        /* decode once per pass; consume, set-up and finish split over the threads; rows
         * written by one thread; the start and one results folder opened and closed */
        double t = (double)b->passes * (double)nrec * pr.decode_s +
                   (double)b->n * ((double)nrec * pr.consume_s + pr.config_s + pr.finish_s) /
                       (threads > 0 ? threads : 1) +
                   (double)b->n * pr.row_s + pr.results_s + start_s;
        char rows[96] = "finish and rows not timed (finish refused the first records alone)";
        if (pr.rows_timed)
            snprintf(rows, sizeof rows, "%.3g ms finish, %.3g ms writing rows per config",
                     pr.finish_s * 1e3, pr.row_s * 1e3);
        printf("time: about %.3g s (%s %zu records: %.3g ms decode and prepare, %.3g ms "
               "consume per config; %.3g ms to set up a config; %s; %.3g ms results folder; "
               "%.3g ms start; %zu configs timed; %zu pass(es), %zu configs on %d threads)\n",
               t, pr.records == nrec ? "all" : "first", pr.records, pr.decode_s * 1e3,
               pr.consume_s * 1e3, pr.config_s * 1e3, rows, pr.results_s * 1e3, start_s * 1e3,
               pr.configs, b->passes, b->n, threads);
    } else {
        printf("time: unknown (%s)\n", nrec ? "no record to time" : "no record count");
    }
    printf("dry run: nothing written\n");
    return 0;
}

/* The summary of a finished replay: text on stderr (none with -q), or --json on stdout. 0
 * or the exit status of a failed write. */
static int replay_summary(const struct engine_stats *st, const char *trace, const char *out,
                          const char *model, bool json, bool quiet)
{
    if (json) {
        json_t *j = json_pack(
            "{s:s,s:s,s:s,s:I,s:I,s:I,s:I,s:I,s:I,s:f,s:I,s:I,s:b,s:s+}", "trace", trace, "output",
            out, "model", model, "configs_run", (json_int_t)st->configs_run, "configs_total",
            (json_int_t)st->configs_total, "configs_skipped", (json_int_t)st->configs_skipped,
            "passes", (json_int_t)st->passes, "records", (json_int_t)st->records, "bytes_read",
            (json_int_t)st->bytes_read, "seconds", st->seconds, "resumed_records",
            (json_int_t)st->resumed_records, "checkpoints", (json_int_t)st->checkpoints, "stopped",
            st->stopped, "results", out, "/results.csv");
        return cli_print_json(j);
    }
    if (quiet)
        return 0;
    fprintf(stderr,
            "acceltrace: replayed %zu of %zu configs (%zu already done) with model '%s' in %zu "
            "pass(es): %llu records, %llu bytes read, %.2f s -> %s/results.csv\n",
            st->configs_run, st->configs_total, st->configs_skipped, model, st->passes,
            (unsigned long long)st->records, (unsigned long long)st->bytes_read, st->seconds, out);
    if (st->resumed_records)
        fprintf(stderr, "acceltrace: resumed from checkpoint after %llu records\n",
                (unsigned long long)st->resumed_records);
    if (st->checkpoints)
        fprintf(stderr, "acceltrace: %zu checkpoint(s) written, the last %llu bytes\n",
                st->checkpoints, (unsigned long long)st->checkpoint_bytes);
    return 0;
}

/* What the command line of replay asks for. */
struct replay_args {
    const char *trace, *hw, *grid, *out, *energy_path, *model_name;
    bool dry_run, json;
    struct engine_opts o;
    struct cli_sets sets; /* --set KEY=VALUE, applied to the base config */
};

/* Parses the options into a; -1 to go on, else the exit status (help printed, usage error). */
static int replay_parse(struct replay_args *a, int argc, char **argv)
{
    memset(a, 0, sizeof *a);
    engine_opts_default(&a->o);
    a->o.threads = threads_default();
    struct cli_parser p;
    cli_parser_init(&p, &cmd_replay_spec, argc, argv);
    for (int id; (id = cli_next(&p)) != CLI_END;) {
        const char *v = p.arg;
        switch (id) {
        case CLI_HELP:
        case CLI_BAD:
            return cli_next_exit(id);
        case OPT_HW:
            a->hw = v;
            break;
        case OPT_MODEL:
            a->model_name = v;
            break;
        case OPT_SWEEP:
            a->grid = v;
            break;
        case OPT_ENERGY:
            a->energy_path = v;
            break;
        case OPT_SET:
            if (cli_sets_add(&a->sets, VERB, v))
                return 2;
            break;
        case CLI_ID_THREADS:
            if (p.i64 < 1 || p.i64 > 1024)
                return cli_usage_error(VERB, "bad thread count '%s'", v);
            a->o.threads = (int)p.i64;
            break;
        case OPT_SHARD:
            if (!parse_shard(v, &a->o.shard_i, &a->o.shard_n))
                return cli_usage_error(VERB, "bad shard '%s' (want I/N with 1 <= I <= N)", v);
            break;
        case OPT_BATCH:
            if (p.i64 < 1)
                return cli_usage_error(VERB, "bad batch size '%s'", v);
            a->o.batch_configs = (size_t)p.i64;
            break;
        case OPT_CKPT_EVERY:
            if (!(p.f64 >= 0) || p.f64 > 1e9)
                return cli_usage_error(VERB, "bad --checkpoint-every '%s'", v);
            a->o.checkpoint_s = p.f64;
            break;
        case OPT_CKPT_RECORDS:
            if (p.i64 < 1)
                return cli_usage_error(VERB, "bad --checkpoint-records '%s'", v);
            a->o.checkpoint_records = (uint64_t)p.i64;
            break;
        case OPT_GROUP_RECORDS:
            if (p.i64 < 1 || p.i64 > 1000000)
                return cli_usage_error(VERB, "bad --group-records '%s'", v);
            a->o.group_records = (size_t)p.i64;
            break;
        case OPT_TIME_LIMIT:
            if (!(p.f64 >= 0) || p.f64 > 1e9)
                return cli_usage_error(VERB, "bad --time-limit '%s'", v);
            a->o.stop_after_s = p.f64;
            break;
        case CLI_ID_MEM_LIMIT:
            if (!p.u64)
                return cli_usage_error(VERB, "bad --mem-limit '%s' (a size like 8GiB)", v);
            a->o.mem_limit_bytes = p.u64;
            break;
        case OPT_DRY_RUN:
            a->dry_run = true;
            break;
        case CLI_POSITIONAL:
            if (a->trace)
                return cli_usage_error(VERB, "more than one trace ('%s')", v);
            a->trace = v;
            break;
        default:
            break;
        }
    }
    a->out = p.common.output;
    a->json = p.common.json;
    a->o.quiet = p.common.quiet;
    if (a->json && a->dry_run)
        return cli_usage_error(VERB, "--dry-run prints text only: drop --json");
    if (!a->trace)
        return cli_usage_error(VERB, "no trace given");
    if (!a->out && !a->dry_run)
        return cli_usage_error(VERB, "no results folder given (-o DIR)");
    if (!a->hw && !a->model_name)
        return cli_usage_error(VERB, "no hardware config given (--hw CONFIG.json)");
    if (a->o.stop_after_s >= 0 && a->o.checkpoint_s <= 0 && !a->o.checkpoint_records)
        return cli_usage_error(VERB, "--time-limit stops at a checkpoint, and "
                                     "--checkpoint-every 0 turns them off");
    return -1;
}

/* Refuses --model NAME of no replay model, with the closest one; exit 2. */
static int unknown_model(const char *name)
{
    const char *near = model_registry_closest(name);
    if (near)
        return cli_usage_error(VERB, "unknown model '%s'; did you mean '%s'?", name, near);
    return cli_usage_error(VERB, "unknown model '%s' (see 'acceltrace config list')", name);
}

int cmd_replay(int argc, char **argv)
{
    struct replay_args args;
    int prc = replay_parse(&args, argc, argv);
    if (prc >= 0)
        return prc;
    const char *trace = args.trace, *hw = args.hw, *grid = args.grid, *out = args.out;
    const char *energy_path = args.energy_path, *model_name = args.model_name;
    bool dry_run = args.dry_run, json = args.json;
    struct engine_opts o = args.o;

    struct errmsg e = {0};
    struct hw_config *base = NULL;
    struct sweep *sw = NULL;
    struct results *res = NULL;
    struct record_source src = {0};
    struct energy_table et = {0};
    bool have_et = false;
    const struct model_ops *m = NULL;
    int rc;
    if (hw) {
        const struct hw_schema *schema = NULL;
        if (model_name) {
            m = model_registry_find(model_name);
            if (!m) {
                rc = unknown_model(model_name);
                goto done;
            }
            schema = m->schema;
        }
        if ((rc = hw_config_load(&base, hw, schema, &e)))
            goto fail;
        m = model_registry_find(hw_config_schema(base)->model);
    } else {
        m = model_registry_find(model_name);
        if (!m) {
            rc = unknown_model(model_name);
            goto done;
        }
        if ((rc = hw_config_defaults(&base, m->schema)))
            goto fail;
    }
    if ((rc = cli_sets_apply(&args.sets, VERB, base)))
        goto done;
    if (grid ? (rc = sweep_load(&sw, grid, base, &e)) : (rc = sweep_single(&sw, base)))
        goto fail;
    if (energy_path) {
        if ((rc = energy_table_load(&et, energy_path, &e)))
            goto fail;
        have_et = true;
        o.energy = &et;
    }
    if ((rc = record_source_trace(&src, trace, 1, &e)))
        goto fail;
    { /* estimate before anything is built or written */
        struct replay_budget bud;
        if ((rc = replay_budget(&bud, m, sw, &o, src.header(src.ctx), &e)))
            goto fail;
        /* the instances' share of the limit is the engine's batch budget */
        o.mem_limit_bytes = bud.instance_bytes ? bud.instance_bytes : 1;
        if (dry_run) {
            rc = replay_dry_run(&bud, m, sw, &src, trace, o.threads, o.batch_configs != 0, &e);
            if (rc)
                goto fail;
            goto done;
        }
    }
    {
        /* what makes this folder's rows: a rerun with any of it changed is refused */
        char grid_hash[RESULTS_HASH_HEX], energy_hash[RESULTS_HASH_HEX], shard[32];
        char command[1024] = "acceltrace";
        for (int i = 0; i < argc; i++) {
            size_t used = strlen(command);
            snprintf(command + used, sizeof command - used, " %s", argv[i]);
        }
        snprintf(shard, sizeof shard, "%u/%u", o.shard_i, o.shard_n);
        if ((grid && (rc = results_hash_json_file(grid, grid_hash, &e))) ||
            (energy_path && (rc = results_hash_json_file(energy_path, energy_hash, &e))))
            goto fail;
        const Acceltrace__TraceHeader *hd = src.header(src.ctx);
        char *trace_abs = realpath(trace, NULL); /* NULL: not recorded */
        struct results_manifest man = {
            .version = ACCELTRACE_VERSION,
            .model = m->name,
            .trace_hash = src.content_hash(src.ctx),
            .config_hash = hw_config_hash(base),
            .grid_hash = grid ? grid_hash : NULL,
            .n_configs = sweep_count(sw),
            .energy_hash = energy_path ? energy_hash : NULL,
            .energy_path = energy_path,
            .shard = o.shard_n ? shard : NULL,
            .command = command,
            .trace_source = hd ? hd->source : NULL,
            .trace_source_detail = hd ? hd->source_detail : NULL,
            .trace_path = trace_abs,
        };
        rc = results_open_manifest(&res, out, &man, &e);
        free(trace_abs);
        if (rc)
            goto fail;
        if (results_dropped(res))
            cli_warn("resuming '%s': dropped %s", out, results_dropped(res));
        results_set_names(res, sw);
    }
    struct engine_stats st;
    o.checkpoint_dir = out;
    rc = engine_run(m, &src, sw, res, &o, &st, &e);
    if (st.note[0])
        cli_warn("%s", st.note);
    int crc = results_close(res);
    res = NULL;
    if (rc)
        goto fail;
    if (crc) {
        rc = crc;
        errmsg_set(&e, rc, "cannot close results in '%s'", out);
        goto fail;
    }
    if ((rc = replay_summary(&st, trace, out, m->name, json, o.quiet)))
        goto done;
    rc = 0;
    if (st.stopped) {
        fprintf(stderr,
                "acceltrace: stopped at a checkpoint (--time-limit) with %zu configs "
                "unfinished; rerun the same command to continue\n",
                st.configs_total - st.configs_skipped - st.configs_run);
        rc = 1;
    }
    goto done;
fail:
    rc = cli_fail(rc, errmsg_text(&e));
done:
    results_close(res);
    record_source_close(&src);
    if (have_et)
        energy_table_release(&et);
    sweep_free(sw);
    hw_config_free(base);
    return rc;
}
