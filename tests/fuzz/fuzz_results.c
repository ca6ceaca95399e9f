/*
 * fuzz_results: libFuzzer target for the results readers: CSV tables (formats/csv), JSON
 * lines (formats/jsonl) and a results folder's resume and merge (replay/results). The input
 * is a selector byte and up to five parts separated by NUL bytes:
 *
 *   sel  CSV_A \0 JSONL_A \0 CSV_B \0 JSONL_B \0 OPS_JSONL
 *
 * CSV_A is parsed from memory (drop_torn from sel bit 0) and its columns looked up. Folders
 * A (results.csv, results.jsonl and, when OPS_JSONL is given, ops.jsonl and ops.csv as a
 * secondary table) and B (when CSV_B or JSONL_B is given) are written to a scratch folder;
 * A's results.jsonl is loaded, A is opened for resume under the trace hash and model named
 * on its first JSON line (or fixed ones when it names none) and, with sel bit 1, one row of
 * the count model's default config is appended; then A and B (or A alone) are merged.
 * Under gcc, tests/fuzz/corpus_driver.c replays the corpus in `make test`.
 */
#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "common/mem.h"
#include "formats/csv.h"
#include "formats/jsonl.h"
#include "replay/hw_config.h"
#include "replay/model_registry.h"
#include "replay/results.h"
#include "tests/fuzz/fuzz_tmp.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define N_PARTS 5

/* Trace hash and model from the first line of a JSON-lines text (defaults otherwise). */
static void first_line_keys(const uint8_t *text, size_t len, char *hash, size_t hn, char *model,
                            size_t mn)
{
    snprintf(hash, hn, "0123456789abcdef0123456789abcdef");
    snprintf(model, mn, "count");
    const uint8_t *nl = memchr(text, '\n', len);
    json_t *o = json_loadb((const char *)text, nl ? (size_t)(nl - text) : len, 0, NULL);
    if (!o)
        return;
    const char *h = json_string_value(json_object_get(o, "trace_hash"));
    const char *m = json_string_value(json_object_get(o, "model"));
    if (h && *h)
        snprintf(hash, hn, "%s", h);
    if (m && *m)
        snprintf(model, mn, "%s", m);
    json_decref(o);
}

/* Appends one row of the count model's defaults to r (errors are expected and ignored). */
static void append_row(struct results *r)
{
    const struct model_ops *m = model_registry_find("count");
    struct hw_config *cfg = NULL;
    struct model_result *res = model_result_new();
    struct errmsg e = {0, ""};
    if (m && res && hw_config_defaults(&cfg, m->schema) == 0 && result_row_begin(res, NULL) == 0 &&
        result_count(res, "records", "", 3) == 0 && result_metric(res, "seconds", "s", 0.5) == 0)
        (void)results_append(r, cfg, 0, res, NULL, &e);
    hw_config_free(cfg);
    model_result_free(res);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    unsigned sel = data[0];
    const uint8_t *part[N_PARTS]; /* absent parts are empty */
    size_t plen[N_PARTS] = {0};
    for (size_t i = 0; i < N_PARTS; i++)
        part[i] = data + size;
    size_t n_parts = 0;
    const uint8_t *p = data + 1, *end = data + size;
    while (n_parts < N_PARTS) {
        const uint8_t *z = n_parts + 1 < N_PARTS ? memchr(p, 0, (size_t)(end - p)) : NULL;
        part[n_parts] = p;
        plen[n_parts] = (size_t)((z ? z : end) - p);
        n_parts++;
        if (!z)
            break;
        p = z + 1;
    }

    /* CSV from memory */
    struct csv_table t;
    struct errmsg e = {0, ""};
    if (csv_table_parse(&t, (const char *)part[0], plen[0], "fuzz.csv", sel & 1, &e) == 0) {
        (void)csv_table_col(&t, "config_index");
        (void)csv_table_col(&t, "seconds");
        char name[64], unit[64];
        for (size_t i = 0; i < t.n_cols; i++)
            csv_split_unit(t.header[i], name, sizeof name, unit, sizeof unit);
        csv_table_release(&t);
    }

    /* folders A and B in the scratch folder */
    char dir_a[512], dir_b[512], dir_out[512], path[512];
    if (fuzz_tmp_fresh_dir("a", dir_a, sizeof dir_a) ||
        fuzz_tmp_write("a/results.csv", part[0], plen[0], path, sizeof path) ||
        fuzz_tmp_write("a/results.jsonl", part[1], plen[1], path, sizeof path))
        return 0;
    if (n_parts > 4 && (fuzz_tmp_write("a/ops.jsonl", part[4], plen[4], path, sizeof path) ||
                        fuzz_tmp_write("a/ops.csv", part[0], plen[0], path, sizeof path)))
        return 0;
    bool have_b = n_parts > 2;
    if (have_b && (fuzz_tmp_fresh_dir("b", dir_b, sizeof dir_b) ||
                   fuzz_tmp_write("b/results.csv", part[2], plen[2], path, sizeof path) ||
                   fuzz_tmp_write("b/results.jsonl", part[3], plen[3], path, sizeof path)))
        return 0;
    if (fuzz_tmp_name("out", dir_out, sizeof dir_out))
        return 0;
    (void)io_remove_tree(dir_out);

    /* JSON lines from a file */
    json_t *arr = NULL;
    size_t valid = 0;
    if (snprintf(path, sizeof path, "%s/results.jsonl", dir_a) < (int)sizeof path &&
        jsonl_load(&arr, path, &valid, &e) == 0)
        json_decref(arr);

    /* merge first (resume trims the folder it opens) */
    const char *dirs[2] = {dir_a, have_b ? dir_b : dir_a};
    (void)results_merge(dirs, have_b ? 2 : 1, dir_out, &e);

    /* resume */
    char hash[128], model[64];
    first_line_keys(part[1], plen[1], hash, sizeof hash, model, sizeof model);
    struct results *r = NULL;
    if (results_open(&r, dir_a, hash, model, &e) == 0) {
        (void)results_n_done(r);
        (void)results_done(r, "0123456789abcdef");
        if (sel & 2)
            append_row(r);
        (void)results_close(r);
    }
    return 0;
}
