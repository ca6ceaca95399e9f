/*
 * fuzz_side_files: libFuzzer target for the checkpoint side files: the Llama checkpoint
 * folder (capture/nn/nn_llama: config.json, model.safetensors or a sharded
 * model.safetensors.index.json) and the Kura score network (capture/kura/kura_net). The
 * input is a selector byte and parts separated by the 8 bytes "\0--part\0":
 *
 *   sel 0 mod 3   kura-score-v1 .safetensors; sel / 3 % 8 picks the schedule's step count
 *                 among {3, 4, 5, 8, 10, 16, 50, 1000}
 *   sel 1 mod 3   config.json [SEP model.safetensors]
 *   sel 2 mod 3   config.json SEP model.safetensors.index.json SEP shard (written as
 *                 model-00001-of-00001.safetensors; other names the index gives are missing)
 *
 * config.json is always parsed from memory; with weights it is written with them into a
 * fresh scratch folder that nn_llama_load reads, and a loaded model decodes one token. A
 * loaded Kura net scores a 2 x 3 phase field at step 1.
 * Under gcc, tests/fuzz/corpus_driver.c replays the corpus in `make test`.
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "capture/kura/kura_net.h"
#include "capture/nn/nn_llama.h"
#include "common/mem.h"
#include "tests/fuzz/fuzz_tmp.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define SEP "\0--part\0"
#define SEP_LEN 8
#define MAX_PARTS 3

/* Splits data into at most MAX_PARTS parts at SEP; returns the count. */
static size_t split(const uint8_t *data, size_t size, const uint8_t **part, size_t *len)
{
    size_t n = 0, start = 0;
    for (size_t i = 0; n + 1 < MAX_PARTS && i + SEP_LEN <= size; i++)
        if (data[i] == 0 && !memcmp(data + i, SEP, SEP_LEN)) {
            part[n] = data + start;
            len[n++] = i - start;
            start = i + SEP_LEN;
            i += SEP_LEN - 1;
        }
    part[n] = data + start;
    len[n++] = size - start;
    return n;
}

static void kura(const uint8_t *data, size_t size, int steps)
{
    char path[512];
    if (fuzz_tmp_write("net.safetensors", data, size, path, sizeof path))
        return;
    struct kura_net *n = NULL;
    struct errmsg e = {0, ""};
    if (kura_net_load(&n, path, steps, &e) != 0)
        return;
    (void)kura_net_metadata_json(n);
    (void)kura_net_sha256(n);
    double theta[6] = {0, 0.5, 1, 1.5, 2, 3}, s[6];
    (void)kura_net_score(n, theta, 2, 3, 1, s);
    kura_net_free(n);
}

/* One token through a loaded model, when it is small enough to be quick. */
static void decode_one(const struct nn_llama *m)
{
    const struct nn_llama_config *c = &m->cfg;
    if (nn_llama_param_floats(c) > (1u << 16) || c->d < 2 || c->d % 2 || c->max_pos < 1)
        return;
    struct nn_llama_cache cache;
    float *logits = mem_alloc((size_t)c->V * sizeof(float) + 1);
    struct errmsg e = {0, ""};
    if (logits && nn_llama_cache_init(&cache, c, 2) == 0) {
        if (nn_llama_decode(m, &cache, 0, 0, NULL, NULL, logits, &e) == 0)
            (void)nn_llama_argmax(logits, c->V);
        nn_llama_cache_release(&cache);
    }
    mem_free(logits);
}

static void llama(const uint8_t *const *part, const size_t *len, size_t n)
{
    char *text = mem_alloc(len[0] + 1);
    if (!text)
        return;
    memcpy(text, part[0], len[0]);
    text[len[0]] = 0;
    struct nn_llama_config c;
    struct errmsg e = {0, ""};
    (void)nn_llama_parse_config(text, &c, &e);
    mem_free(text);
    if (n < 2)
        return;
    char dir[512], path[512];
    if (fuzz_tmp_fresh_dir("ckpt", dir, sizeof dir) ||
        fuzz_tmp_write("ckpt/config.json", part[0], len[0], path, sizeof path))
        return;
    if (n == 2 && fuzz_tmp_write("ckpt/model.safetensors", part[1], len[1], path, sizeof path))
        return;
    if (n == 3 &&
        (fuzz_tmp_write("ckpt/model.safetensors.index.json", part[1], len[1], path, sizeof path) ||
         fuzz_tmp_write("ckpt/model-00001-of-00001.safetensors", part[2], len[2], path,
                        sizeof path)))
        return;
    struct nn_llama *m = NULL;
    if (nn_llama_load(&m, dir, &e) == 0) {
        decode_one(m);
        nn_llama_free(m);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const int steps[8] = {3, 4, 5, 8, 10, 16, 50, 1000};
    if (size < 1)
        return 0;
    unsigned sel = data[0];
    const uint8_t *part[MAX_PARTS];
    size_t len[MAX_PARTS];
    if (sel % 3 == 0) {
        kura(data + 1, size - 1, steps[sel / 3 % 8]);
        return 0;
    }
    size_t n = split(data + 1, size - 1, part, len);
    if (sel % 3 == 1 && n > 2)
        n = 2;
    if (sel % 3 == 2 && n < 3)
        n = 1;
    llama(part, len, n);
    return 0;
}
