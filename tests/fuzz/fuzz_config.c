/*
 * fuzz_config: libFuzzer target for hardware configs and sweep grids (replay/hw_config,
 * replay/sweep). The input is
 *
 *   byte 0      selector: bits 0-2 pick the registry model whose defaults are the base
 *               when the config part is empty or refused; bits 3-7 a shard I/N
 *   CONFIG      JSON text of a config file, up to the first NUL byte
 *   \0 GRID     (optional) JSON text of a grid, expanded against the base config
 *
 * A config without "extends" is parsed from memory; one with "extends" is written to a
 * scratch folder and loaded from there, so its relative extends resolve to the scratch
 * folder's base.json (a valid config), loop.json (extends itself) or the input itself
 * (a cycle). Configs that could name any other file (a '/' or a JSON escape with
 * "extends") take the defaults instead, so the fuzzer never reads outside the folder.
 * Every config is printed canonically, hashed, cloned and listed key by key; a grid is
 * counted and its first, second, middle and last configs are built, plus a shard slice.
 * Under gcc, tests/fuzz/corpus_driver.c replays the corpus in `make test`.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/mem.h"
#include "replay/hw_config.h"
#include "replay/model_registry.h"
#include "replay/sweep.h"
#include "tests/fuzz/fuzz_tmp.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Reads every key of c as text, and its canonical form and hash. */
static void touch_config(const struct hw_config *c)
{
    const struct hw_schema *s = hw_config_schema(c);
    char text[128];
    for (size_t i = 0; s && i < s->n_keys; i++)
        hw_config_value_text(c, i, text, sizeof text);
    (void)hw_config_canonical(c);
    (void)hw_config_hash(c);
    struct hw_config *copy = NULL;
    if (hw_config_clone(&copy, c) == 0) {
        struct errmsg e = {0, ""};
        (void)hw_config_check(copy, &e);
        hw_config_free(copy);
    }
}

/* True when the scratch folder holds base.json and loop.json (written once). */
static int scratch_ready(void)
{
    static int ready = -1;
    if (ready >= 0)
        return ready;
    static const char base[] = "{\"model\": \"count\", \"scale\": 2, \"min_step\": 1}\n";
    static const char loop[] = "{\"extends\": \"loop.json\", \"scale\": 3}\n";
    char p[512];
    ready = fuzz_tmp_write("base.json", (const uint8_t *)base, sizeof base - 1, p, sizeof p) == 0 &&
            fuzz_tmp_write("loop.json", (const uint8_t *)loop, sizeof loop - 1, p, sizeof p) == 0;
    return ready;
}

/* Config from text (NUL-terminated, len bytes): parsed, loaded from scratch, or NULL. */
static struct hw_config *config_from_text(const char *text, size_t len)
{
    struct hw_config *c = NULL;
    struct errmsg e = {0, ""};
    bool has_esc = memchr(text, '\\', len) != NULL;
    bool has_slash = memchr(text, '/', len) != NULL;
    bool has_ext = strstr(text, "extends") != NULL;
    if (!has_esc && !has_ext) {
        if (hw_config_parse(&c, text, "fuzz.json", NULL, &e) != 0)
            c = NULL;
    } else if (!has_esc && !has_slash && scratch_ready()) {
        char p[512];
        if (fuzz_tmp_write("input.json", (const uint8_t *)text, len, p, sizeof p) == 0 &&
            hw_config_load(&c, p, NULL, &e) != 0)
            c = NULL;
    }
    return c;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    unsigned sel = data[0];
    char *text = mem_alloc(size); /* size - 1 bytes and a NUL */
    if (!text)
        return 0;
    memcpy(text, data + 1, size - 1);
    text[size - 1] = 0;
    size_t cfg_len = strlen(text);
    const char *grid = cfg_len + 1 < size ? text + cfg_len + 1 : NULL;

    struct hw_config *base = cfg_len ? config_from_text(text, cfg_len) : NULL;
    if (!base) {
        const struct model_ops *m = model_registry_get((sel & 7) % model_registry_count());
        if (!m || hw_config_defaults(&base, m->schema) != 0)
            base = NULL;
    }
    if (base)
        touch_config(base);

    struct sweep *s = NULL;
    struct errmsg e = {0, ""};
    if (base && grid && sweep_parse(&s, grid, "grid.json", base, &e) == 0) {
        size_t n = sweep_count(s);
        (void)sweep_axes(s);
        size_t pick[4] = {0, 1, n / 2, n ? n - 1 : 0};
        for (size_t k = 0; k < 4; k++) {
            if (pick[k] >= n || (k > 0 && pick[k] == pick[k - 1]))
                continue;
            struct hw_config *c = NULL;
            if (sweep_config(s, pick[k], &c, &e) == 0) {
                touch_config(c);
                hw_config_free(c);
            }
        }
        unsigned shard_n = (sel >> 3) & 7, shard_i = sel >> 6;
        size_t b0, b1;
        sweep_shard(n, shard_i, shard_n, &b0, &b1);
        if (b0 > b1 || b1 > n)
            abort(); /* a slice outside the grid */
        sweep_free(s);
    }
    hw_config_free(base);
    mem_free(text);
    return 0;
}
