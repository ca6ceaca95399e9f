/*
 * bench_salca_llama: the Llama decoder of the Salca capture (capture/nn/nn_llama,
 * docs/salca.md#model-source) on the built-in tiny config: prefill of n tokens and a few cached decode
 * steps, in tokens/s on one core (BLAS single-threaded).
 *
 *   bench_salca_llama [--n N] [--steps S] [--write DIR]
 *
 * With --write DIR it also writes the model as a Hugging Face style checkpoint
 * (config.json + model.safetensors, F32), the tokens (tokens.bin, u32 LE) and the logits of
 * the last prompt token and of every decode step (logits.bin, f32 LE, (1 + S) x V), so
 * bench/peers/salca_llama_torch.py can run an independent PyTorch forward on the same
 * weights and compare logits and speed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "capture/nn/nn.h"
#include "capture/nn/nn_llama.h"
#include "capture/nn/safetensors.h"
#include "common/rng.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int write_ckpt(const char *dir, const struct nn_llama *m)
{
    const struct nn_llama_config *c = &m->cfg;
    size_t n = 0, cap = 3 + 9 * (size_t)c->L;
    struct st_write_item *it = calloc(cap, sizeof *it);
    char(*names)[96] = calloc(cap, sizeof *names);
    if (!it || !names)
        return -1;
    int64_t D = c->D, Hd = (int64_t)c->H * c->d, Gd = (int64_t)c->G * c->d, F = c->F;
#define ADD(ptr, a0, a1, nd, ...)                                                         \
    do {                                                                                   \
        snprintf(names[n], sizeof names[n], __VA_ARGS__);                                  \
        it[n] = (struct st_write_item){names[n], ptr, nd, {a0, a1}};                       \
        n++;                                                                               \
    } while (0)
    ADD(m->emb, c->V, D, 2, "model.embed_tokens.weight");
    ADD(m->g_final, D, 0, 1, "model.norm.weight");
    ADD(m->lm, c->V, D, 2, "lm_head.weight");
    for (uint32_t l = 0; l < c->L; l++) {
        const struct nn_llama_layer *y = &m->layers[l];
        ADD(y->g_in, D, 0, 1, "model.layers.%u.input_layernorm.weight", l);
        ADD(y->g_post, D, 0, 1, "model.layers.%u.post_attention_layernorm.weight", l);
        ADD(y->wq, Hd, D, 2, "model.layers.%u.self_attn.q_proj.weight", l);
        ADD(y->wk, Gd, D, 2, "model.layers.%u.self_attn.k_proj.weight", l);
        ADD(y->wv, Gd, D, 2, "model.layers.%u.self_attn.v_proj.weight", l);
        ADD(y->wo, D, Hd, 2, "model.layers.%u.self_attn.o_proj.weight", l);
        ADD(y->wgate, F, D, 2, "model.layers.%u.mlp.gate_proj.weight", l);
        ADD(y->wup, F, D, 2, "model.layers.%u.mlp.up_proj.weight", l);
        ADD(y->wdown, D, F, 2, "model.layers.%u.mlp.down_proj.weight", l);
    }
#undef ADD
    char path[4096];
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    struct errmsg e = {0};
    int rc = st_write(path, it, n, ST_F32, &e);
    free(it);
    free(names);
    if (rc) {
        fprintf(stderr, "bench_salca_llama: %s\n", errmsg_text(&e));
        return rc;
    }
    snprintf(path, sizeof path, "%s/config.json", dir);
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    fprintf(f, "{\"hidden_size\": %u, \"num_hidden_layers\": %u, \"num_attention_heads\": %u, "
               "\"num_key_value_heads\": %u, \"head_dim\": %u, \"intermediate_size\": %u, "
               "\"vocab_size\": %u, \"rms_norm_eps\": %g, \"rope_theta\": %g, "
               "\"rope_scaling\": null}\n",
            c->D, c->L, c->H, c->G, c->d, c->F, c->V, (double)c->eps, c->rope_theta);
    return fclose(f) ? -1 : 0;
}

static int write_bin(const char *dir, const char *name, const void *p, size_t bytes)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f)
        return -1;
    size_t w = fwrite(p, 1, bytes, f);
    return (fclose(f) || w != bytes) ? -1 : 0;
}

int main(int argc, char **argv)
{
    uint32_t n = 1024, steps = 8;
    const char *dir = NULL;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--n"))
            n = (uint32_t)strtoul(argv[i + 1], NULL, 10);
        else if (!strcmp(argv[i], "--steps"))
            steps = (uint32_t)strtoul(argv[i + 1], NULL, 10);
        else if (!strcmp(argv[i], "--write"))
            dir = argv[i + 1];
    }
    if (n < 1 || n > 60000 || steps > 1000) {
        fprintf(stderr, "bench_salca_llama: bad --n or --steps\n");
        return 2;
    }
    nn_set_threads(1);
    struct nn_llama *m;
    struct errmsg e = {0};
    if (nn_llama_new_tiny(&m, NULL, 1, 4, 8.0f, &e)) {
        fprintf(stderr, "bench_salca_llama: %s\n", errmsg_text(&e));
        return 1;
    }
    uint32_t V = m->cfg.V, total = n + steps;
    uint32_t *tok = malloc(total * sizeof *tok);
    float *logits = malloc((size_t)(1 + steps) * V * sizeof(float));
    struct nn_llama_cache cache;
    if (!tok || !logits || nn_llama_cache_init(&cache, &m->cfg, total)) {
        fprintf(stderr, "bench_salca_llama: out of memory\n");
        return 1;
    }
    struct rng r;
    rng_stream(&r, 1, "bench.llama.tokens", 0, 0);
    for (uint32_t i = 0; i < total; i++)
        tok[i] = i == 0 ? 1 : 16 + (uint32_t)rng_below(&r, V - 16);
    double t0 = now_s();
    if (nn_llama_prefill(m, &cache, tok, n, 0, logits, &e)) {
        fprintf(stderr, "bench_salca_llama: %s\n", errmsg_text(&e));
        return 1;
    }
    double t1 = now_s();
    for (uint32_t s = 0; s < steps; s++)
        if (nn_llama_decode(m, &cache, n + s, tok[n + s], NULL, NULL,
                            logits + (size_t)(1 + s) * V, &e)) {
            fprintf(stderr, "bench_salca_llama: %s\n", errmsg_text(&e));
            return 1;
        }
    double t2 = now_s();
    printf("bench_salca_llama: tiny L %u D %u H %u G %u d %u, prefill n=%u %.3f s "
           "(%.0f tokens/s), decode %u steps %.1f ms/token\n",
           m->cfg.L, m->cfg.D, m->cfg.H, m->cfg.G, m->cfg.d, n, t1 - t0, n / (t1 - t0), steps,
           steps ? 1e3 * (t2 - t1) / steps : 0.0);
    int rc = 0;
    if (dir) {
        rc = write_ckpt(dir, m) || write_bin(dir, "tokens.bin", tok, total * sizeof *tok) ||
             write_bin(dir, "logits.bin", logits, (size_t)(1 + steps) * V * sizeof(float));
        if (!rc)
            printf("bench_salca_llama: prefill_s=%.6f decode_ms=%.6f\n", t1 - t0,
                   steps ? 1e3 * (t2 - t1) / steps : 0.0);
    }
    nn_llama_cache_release(&cache);
    nn_llama_free(m);
    free(tok);
    free(logits);
    return rc ? 1 : 0;
}
