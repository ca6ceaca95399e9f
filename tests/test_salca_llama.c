/*
 * Tests of capture/nn/nn_llama (docs/salca.md#model-source, the Llama model check): cached decode
 * equals a full uncached forward; chunked prefill equals token-by-token; RoPE dot products depend
 * only on the position difference; GQA with duplicated KV heads equals MHA; checkpoints
 * written as F32/F16/BF16 safetensors load back exactly under the documented names; a
 * missing or misshapen tensor fails naming it; linear rope_scaling equals RoPE at m/f and
 * other types fail naming the type. Seed: ACCELTRACE_SEED (default 13).
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "capture/nn/nn.h"
#include "capture/nn/nn_llama.h"
#include "capture/nn/safetensors.h"
#include "common/rng.h"
#include "tests/helpers/test_helpers.h"

static uint64_t seed = 13;

static void small_cfg(struct nn_llama_config *c, uint32_t G)
{
    nn_llama_config_tiny(c);
    c->D = 64;
    c->L = 2;
    c->H = 4;
    c->G = G;
    c->d = 16;
    c->F = 128;
    c->V = 97;
    c->max_pos = 4096;
}

static struct nn_llama *small_model(uint32_t G)
{
    struct nn_llama_config c;
    small_cfg(&c, G);
    struct nn_llama *m;
    struct errmsg e = {0};
    assert_int_equal(nn_llama_new_tiny(&m, &c, seed, 2, 8.0f, &e), 0);
    /* give the norms some texture so the gains are exercised */
    for (uint32_t l = 0; l < c.L; l++)
        for (uint32_t j = 0; j < c.D; j++)
            m->layers[l].g_in[j] = 1.0f + 0.01f * (float)(j % 7);
    return m;
}

static double rel_diff(const float *a, const float *b, uint32_t n)
{
    double md = 0, mx = 0;
    for (uint32_t i = 0; i < n; i++) {
        md = fmax(md, fabs((double)a[i] - b[i]));
        mx = fmax(mx, fabs((double)b[i]));
    }
    return md / (mx > 0 ? mx : 1);
}

static void tokens_of(uint32_t *t, uint32_t n, uint32_t V)
{
    struct rng r;
    rng_stream(&r, seed, "test.tokens", 0, 0);
    for (uint32_t i = 0; i < n; i++)
        t[i] = (uint32_t)rng_below(&r, V);
}

static void test_cached_decode(void **state)
{
    (void)state;
    struct nn_llama *m = small_model(2);
    uint32_t tok[40], V = m->cfg.V;
    tokens_of(tok, 40, V);
    float *lc = malloc(V * sizeof(float)), *lf = malloc(V * sizeof(float));
    struct errmsg e = {0};
    struct nn_llama_cache cache, full;
    assert_int_equal(nn_llama_cache_init(&cache, &m->cfg, 40), 0);
    assert_int_equal(nn_llama_prefill(m, &cache, tok, 24, 5, lc, &e), 0);
    /* chunked prefill equals token-by-token within 1e-4 relative */
    assert_int_equal(nn_llama_cache_init(&full, &m->cfg, 40), 0);
    for (uint32_t i = 0; i < 24; i++)
        assert_int_equal(nn_llama_prefill(m, &full, tok + i, 1, 1, lf, &e), 0);
    assert_true(rel_diff(lc, lf, V) < 1e-4);
    assert_true(rel_diff(cache.k, full.k, 2 * 2 * 40 * 16) < 1e-4);
    nn_llama_cache_release(&full);
    for (uint32_t t = 24; t < 40; t++) {
        assert_int_equal(nn_llama_decode(m, &cache, t, tok[t], NULL, NULL, lc, &e), 0);
        assert_int_equal(nn_llama_cache_init(&full, &m->cfg, 40), 0);
        assert_int_equal(nn_llama_prefill(m, &full, tok, t + 1, 64, lf, &e), 0);
        double rd = rel_diff(lc, lf, V);
        if (rd >= 1e-4)
            fail_msg("step %u: cached vs uncached logits differ by %g", t, rd);
        nn_llama_cache_release(&full);
    }
    nn_llama_cache_release(&cache);
    free(lc);
    free(lf);
    nn_llama_free(m);
}

static void test_rope(void **state)
{
    (void)state;
    struct rng r;
    rng_stream(&r, seed, "test.rope", 0, 0);
    for (int trial = 0; trial < 200; trial++) {
        float q[128], k[128], a[128], b[128], c[128], d[128];
        double nq = 0, nk = 0;
        for (int j = 0; j < 128; j++) {
            q[j] = (float)rng_normal(&r);
            k[j] = (float)rng_normal(&r);
            nq += q[j] * q[j];
            nk += k[j] * k[j];
        }
        double m = (double)rng_below(&r, 30000), n = (double)rng_below(&r, 30000);
        double s = (double)rng_below(&r, 30000);
        memcpy(a, q, sizeof q);
        memcpy(b, k, sizeof k);
        memcpy(c, q, sizeof q);
        memcpy(d, k, sizeof k);
        nn_llama_rope(a, 128, m, 10000, 1);
        nn_llama_rope(b, 128, n, 10000, 1);
        nn_llama_rope(c, 128, m + s, 10000, 1);
        nn_llama_rope(d, 128, n + s, 10000, 1);
        double x = 0, y = 0;
        for (int j = 0; j < 128; j++) {
            x += (double)a[j] * b[j];
            y += (double)c[j] * d[j];
        }
        assert_true(fabs(x - y) <= 1e-5 * sqrt(nq * nk));
        /* linear scaling by f equals unscaled RoPE at m/f */
        memcpy(a, q, sizeof q);
        memcpy(c, q, sizeof q);
        nn_llama_rope(a, 128, m, 10000, 4.0);
        nn_llama_rope(c, 128, m / 4.0, 10000, 1.0);
        assert_memory_equal(a, c, sizeof a);
    }
    /* rotate_half pairing: channel 0 pairs with d/2, turning by m at theta_0 = 1 */
    float x[8] = {1, 0, 0, 0, 0, 0, 0, 0};
    nn_llama_rope(x, 8, 1.0, 10000, 1);
    assert_true(fabs(x[0] - cos(1.0)) < 1e-6 && fabs(x[4] - sin(1.0)) < 1e-6);
}

static void test_gqa_equals_mha(void **state)
{
    (void)state;
    struct nn_llama *g = small_model(2), *h = small_model(4);
    /* copy every weight of g into h, then expand K/V heads in repeat_kv order */
    size_t D = 64, d = 16;
    memcpy(h->emb, g->emb, 97 * D * 4);
    memcpy(h->lm, g->lm, 97 * D * 4);
    for (uint32_t l = 0; l < 2; l++) {
        struct nn_llama_layer *a = &g->layers[l], *b = &h->layers[l];
        memcpy(b->g_in, a->g_in, D * 4);
        memcpy(b->g_post, a->g_post, D * 4);
        memcpy(b->wq, a->wq, 4 * d * D * 4);
        memcpy(b->wo, a->wo, D * 4 * d * 4);
        memcpy(b->wgate, a->wgate, 128 * D * 4);
        memcpy(b->wup, a->wup, 128 * D * 4);
        memcpy(b->wdown, a->wdown, D * 128 * 4);
        for (uint32_t hh = 0; hh < 4; hh++) {
            uint32_t src = hh * 2 / 4;
            memcpy(b->wk + hh * d * D, a->wk + src * d * D, d * D * 4);
            memcpy(b->wv + hh * d * D, a->wv + src * d * D, d * D * 4);
        }
    }
    uint32_t tok[30];
    tokens_of(tok, 30, 97);
    float lg[97], lh[97];
    struct nn_llama_cache cg, ch;
    struct errmsg e = {0};
    assert_int_equal(nn_llama_cache_init(&cg, &g->cfg, 30), 0);
    assert_int_equal(nn_llama_cache_init(&ch, &h->cfg, 30), 0);
    assert_int_equal(nn_llama_prefill(g, &cg, tok, 20, 8, lg, &e), 0);
    assert_int_equal(nn_llama_prefill(h, &ch, tok, 20, 8, lh, &e), 0);
    assert_true(rel_diff(lg, lh, 97) < 1e-5);
    for (uint32_t t = 20; t < 30; t++) {
        assert_int_equal(nn_llama_decode(g, &cg, t, tok[t], NULL, NULL, lg, &e), 0);
        assert_int_equal(nn_llama_decode(h, &ch, t, tok[t], NULL, NULL, lh, &e), 0);
        assert_true(rel_diff(lg, lh, 97) < 1e-5);
    }
    nn_llama_cache_release(&cg);
    nn_llama_cache_release(&ch);
    nn_llama_free(g);
    nn_llama_free(h);
}

/* Writes model m as a checkpoint directory; skip (NULL) omits one tensor, bad_shape
 * writes that tensor with a wrong shape. */
static void write_ckpt(const char *dir, const struct nn_llama *m, enum st_dtype dt,
                       const char *skip, const char *bad_shape, const char *rope_json)
{
    char path[512], names[32][96];
    struct st_write_item it[32];
    size_t n = 0;
    const struct nn_llama_config *c = &m->cfg;
    int64_t D = c->D, Hd = (int64_t)c->H * c->d, Gd = (int64_t)c->G * c->d, F = c->F;
#define ADD(nm, ptr, a0, a1, nd)                                                                   \
    do {                                                                                           \
        snprintf(names[n], sizeof names[n], "%s", nm);                                             \
        if (!skip || strcmp(skip, names[n])) {                                                     \
            it[n] = (struct st_write_item){names[n], ptr, nd, {a0, a1}};                           \
            if (bad_shape && !strcmp(bad_shape, names[n]))                                         \
                it[n].shape[0] = a0 + 1 > 1 ? (a0)-1 : 1;                                          \
            n++;                                                                                   \
        }                                                                                          \
    } while (0)
    ADD("model.embed_tokens.weight", m->emb, c->V, D, 2);
    ADD("model.norm.weight", m->g_final, D, 0, 1);
    ADD("lm_head.weight", m->lm, c->V, D, 2);
    for (uint32_t l = 0; l < c->L; l++) {
        const struct nn_llama_layer *y = &m->layers[l];
        char b[96];
#define L_ADD(suffix, ptr, a0, a1, nd)                                                             \
    do {                                                                                           \
        snprintf(b, sizeof b, "model.layers.%u.%s", l, suffix);                                    \
        ADD(b, ptr, a0, a1, nd);                                                                   \
    } while (0)
        L_ADD("input_layernorm.weight", y->g_in, D, 0, 1);
        L_ADD("post_attention_layernorm.weight", y->g_post, D, 0, 1);
        L_ADD("self_attn.q_proj.weight", y->wq, Hd, D, 2);
        L_ADD("self_attn.k_proj.weight", y->wk, Gd, D, 2);
        L_ADD("self_attn.v_proj.weight", y->wv, Gd, D, 2);
        L_ADD("self_attn.o_proj.weight", y->wo, D, Hd, 2);
        L_ADD("mlp.gate_proj.weight", y->wgate, F, D, 2);
        L_ADD("mlp.up_proj.weight", y->wup, F, D, 2);
        L_ADD("mlp.down_proj.weight", y->wdown, D, F, 2);
#undef L_ADD
    }
#undef ADD
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    struct errmsg e = {0};
    assert_int_equal(st_write(path, it, n, dt, &e), 0);
    snprintf(path, sizeof path, "%s/config.json", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f,
            "{\"architectures\": [\"LlamaForCausalLM\"], \"hidden_size\": %u, "
            "\"num_hidden_layers\": %u, \"num_attention_heads\": %u, "
            "\"num_key_value_heads\": %u, \"intermediate_size\": %u, \"vocab_size\": %u, "
            "\"rms_norm_eps\": 1e-05, \"rope_theta\": 10000.0, "
            "\"max_position_embeddings\": 4096, \"rope_scaling\": %s}\n",
            c->D, c->L, c->H, c->G, c->F, c->V, rope_json ? rope_json : "null");
    fclose(f);
}

static float round_dt(float x, enum st_dtype dt)
{
    if (dt == ST_F16)
        return st_f16_to_f32(st_f32_to_f16(x));
    if (dt == ST_BF16)
        return st_bf16_to_f32(st_f32_to_bf16(x));
    return x;
}

static void check_same(const float *a, const float *b, size_t n, enum st_dtype dt)
{
    for (size_t i = 0; i < n; i++)
        if (round_dt(a[i], dt) != b[i])
            fail_msg("element %zu: %g vs %g", i, (double)round_dt(a[i], dt), (double)b[i]);
}

static char tmpdir[256];

static void test_safetensors(void **state)
{
    (void)state;
    snprintf(tmpdir, sizeof tmpdir, "/tmp/acceltrace_salca_llama_XXXXXX");
    assert_non_null(mkdtemp(tmpdir));
    struct nn_llama *m = small_model(2);
    const enum st_dtype dts[3] = {ST_F32, ST_F16, ST_BF16};
    for (int a = 0; a < 3; a++) {
        write_ckpt(tmpdir, m, dts[a], NULL, NULL, NULL);
        struct nn_llama *x;
        struct errmsg e = {0};
        int rc = nn_llama_load(&x, tmpdir, &e);
        if (rc)
            fail_msg("load: %s", errmsg_text(&e));
        assert_int_equal(x->cfg.G, 2);
        assert_int_equal(x->cfg.d, 16);
        check_same(m->emb, x->emb, 97 * 64, dts[a]);
        check_same(m->lm, x->lm, 97 * 64, dts[a]);
        for (uint32_t l = 0; l < 2; l++) {
            check_same(m->layers[l].wq, x->layers[l].wq, 64 * 64, dts[a]);
            check_same(m->layers[l].wk, x->layers[l].wk, 32 * 64, dts[a]);
            check_same(m->layers[l].wdown, x->layers[l].wdown, 64 * 128, dts[a]);
            check_same(m->layers[l].g_in, x->layers[l].g_in, 64, dts[a]);
        }
        nn_llama_free(x);
    }
    /* sharded checkpoint: two files and model.safetensors.index.json */
    {
        char p1[512], p2[512], pi[512];
        write_ckpt(tmpdir, m, ST_F32, NULL, NULL, NULL);
        snprintf(p1, sizeof p1, "%s/model.safetensors", tmpdir);
        snprintf(p2, sizeof p2, "%s/model-00001-of-00002.safetensors", tmpdir);
        assert_int_equal(rename(p1, p2), 0);
        struct st_write_item extra = {"model.layers.9.unused.weight", m->g_final, 1, {64}};
        struct errmsg we = {0};
        snprintf(p1, sizeof p1, "%s/model-00002-of-00002.safetensors", tmpdir);
        assert_int_equal(st_write(p1, &extra, 1, ST_F32, &we), 0);
        snprintf(pi, sizeof pi, "%s/model.safetensors.index.json", tmpdir);
        FILE *f = fopen(pi, "w");
        assert_non_null(f);
        fprintf(f, "{\"metadata\": {}, \"weight_map\": {"
                   "\"model.embed_tokens.weight\": \"model-00001-of-00002.safetensors\", "
                   "\"model.layers.9.unused.weight\": \"model-00002-of-00002.safetensors\"}}");
        fclose(f);
        struct nn_llama *x;
        struct errmsg e2 = {0};
        int rc = nn_llama_load(&x, tmpdir, &e2);
        if (rc)
            fail_msg("sharded load: %s", errmsg_text(&e2));
        check_same(m->layers[1].wv, x->layers[1].wv, 32 * 64, ST_F32);
        nn_llama_free(x);
        unlink(p1);
        unlink(p2);
        unlink(pi);
    }
    /* missing tensor: named */
    struct nn_llama *x = NULL;
    struct errmsg e = {0};
    write_ckpt(tmpdir, m, ST_F32, "model.layers.1.mlp.up_proj.weight", NULL, NULL);
    assert_int_equal(nn_llama_load(&x, tmpdir, &e), ERR_DATA);
    assert_non_null(strstr(errmsg_text(&e), "model.layers.1.mlp.up_proj.weight"));
    assert_null(x);
    /* wrong shape: named */
    write_ckpt(tmpdir, m, ST_F32, NULL, "model.layers.0.self_attn.k_proj.weight", NULL);
    assert_true(nn_llama_load(&x, tmpdir, &e) < 0);
    assert_non_null(strstr(errmsg_text(&e), "model.layers.0.self_attn.k_proj.weight"));
    /* absent lm_head: tied to the embedding */
    write_ckpt(tmpdir, m, ST_F32, "lm_head.weight", NULL, NULL);
    assert_int_equal(nn_llama_load(&x, tmpdir, &e), 0);
    assert_true(x->tied && x->lm == x->emb);
    nn_llama_free(x);
    /* rope_scaling: linear is accepted with its factor, other types fail naming them */
    write_ckpt(tmpdir, m, ST_F32, NULL, NULL, "{\"type\": \"linear\", \"factor\": 8.0}");
    assert_int_equal(nn_llama_load(&x, tmpdir, &e), 0);
    assert_true(x->cfg.rope_factor == 8.0);
    nn_llama_free(x);
    write_ckpt(tmpdir, m, ST_F32, NULL, NULL, "{\"rope_type\": \"dynamic\", \"factor\": 2.0}");
    assert_int_equal(nn_llama_load(&x, tmpdir, &e), ERR_FORMAT);
    assert_non_null(strstr(errmsg_text(&e), "unsupported rope_scaling type 'dynamic'"));
    /* truncated safetensors file: a clear data error */
    char path[512];
    write_ckpt(tmpdir, m, ST_F32, NULL, NULL, NULL);
    snprintf(path, sizeof path, "%s/model.safetensors", tmpdir);
    assert_int_equal(truncate(path, 1000), 0);
    assert_true(nn_llama_load(&x, tmpdir, &e) < 0);
    assert_non_null(strstr(errmsg_text(&e), "model.safetensors"));
    /* no config.json */
    snprintf(path, sizeof path, "%s/config.json", tmpdir);
    unlink(path);
    assert_true(nn_llama_load(&x, tmpdir, &e) < 0);
    assert_non_null(strstr(errmsg_text(&e), "config.json"));
    snprintf(path, sizeof path, "%s/model.safetensors", tmpdir);
    unlink(path);
    rmdir(tmpdir);
    nn_llama_free(m);
}

int main(void)
{
    seed = th_seed(seed);
    nn_set_threads(1);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cached_decode),
        cmocka_unit_test(test_rope),
        cmocka_unit_test(test_gqa_equals_mha),
        cmocka_unit_test(test_safetensors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
