/*
 * Tests of the class-conditional DiT family of the DiSC capture (docs/models.md#dit-xl2):
 *   - dit-xl-2 has the paper's 675M parameters (Peebles & Xie 2023, Table 1: DiT-XL/2
 *     675M; facebookresearch/DiT train.py counts 675,129,632 at 256 px, pos_embed included)
 *     and its 118.6 Gflops per forward pass at 256 px (multiply-adds, our MAC classes);
 *   - the seeded dit-micro tensor table sums to dit_param_count and uses the original DiT
 *     names and shapes;
 *   - a checkpoint written with the original names (dit_model_save) and one written here
 *     with the diffusers DiTTransformer2DModel names (to_q/to_k/to_v, per-block norm1.emb
 *     copies, proj_out_1/2) both load to a forward bit-identical to the seeded model's;
 *   - a norm1.emb copy that differs, a missing third of qkv and an unknown name are data
 *     errors naming the tensor;
 *   - the class label conditions the output, CFG batch element 0 equals the unbatched
 *     forward, labels out of range and --text are usage errors;
 *   - a dit-micro capture with CFG, CTR and ST runs, its FLOP tallies have no cross-attention
 *     and the embed class of the closed form;
 *   - --ctr-tau 0 equals --ctr-off bit for bit (the CTR caches without cache_ca).
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
#include <math.h>

#include "capture/disc/disc_capture.h"
#include "capture/disc/disc_flops.h"
#include "capture/disc/dit.h"
#include "capture/disc/dit_impl.h" /* the reuse kernel against its reference */
#include "capture/nn/nn.h"
#include "capture/nn/safetensors.h"
#include "common/io.h"
#include "common/threads.h"
#include "tests/helpers/capture_helpers.h"
#include "tests/helpers/test_helpers.h"

static void test_param_count(void **state)
{
    (void)state;
    struct dit_config c;
    struct errmsg e = {0};
    assert_int_equal(dit_config_get(&c, "dit-xl-2", 0, &e), 0);
    assert_int_equal(c.image, 256);
    assert_int_equal(c.tokens, 256);
    assert_int_equal(c.depth, 28);
    assert_int_equal(c.hidden, 1152);
    assert_int_equal(c.heads, 16);
    assert_int_equal(c.c_out, 8); /* learned sigma: eps and variance */
    /* derivation in docs/models.md#dit-xl2 */
    assert_int_equal(dit_param_count(&c), 674834720ull);
    /* DiT's train.py counts pos_embed, an nn.Parameter with requires_grad=False (N d) */
    uint64_t with_pe = dit_param_count(&c) + (uint64_t)c.tokens * c.hidden;
    assert_int_equal(with_pe, 675129632ull);
    /* Peebles & Xie 2023, Table 1: DiT-XL/2 675M parameters, to the nearest million */
    assert_true(fabs((double)with_pe - 675e6) < 0.5e6);
    assert_true(fabs((double)dit_param_count(&c) - 675e6) < 0.5e6);
    /* one dense forward, B = 1: the MAC classes (every class but the softmax, GELU and vector
     * ones) hold 2 FLOP per MAC; Table 1 gives 118.6 Gflops, counted as multiply-adds */
    uint64_t fd[DISC_F_COUNT] = {0}, fc[DISC_F_COUNT] = {0}, fa[DISC_F_COUNT] = {0};
    disc_flops_step(&c, 1, (uint64_t)c.tokens, DISC_FLOP_ST_OFF, NULL, fd, fc, fa);
    uint64_t mac2 = 0;
    for (int f = 0; f < DISC_F_COUNT; f++)
        if (f != DISC_F_SA_SOFTMAX && f != DISC_F_CA_SOFTMAX && f != DISC_F_FFN_ACT &&
            f != DISC_F_VEC)
            mac2 += fd[f];
    assert_int_equal(mac2 / 2, 118621421568ull); /* docs/models.md#dit-xl2 */
    assert_true(fabs((double)mac2 / 2 / 1e9 - 118.6) < 0.05);
    assert_int_equal(dit_config_get(&c, "dit-xl-2", 512, &e), 0);
    assert_int_equal(c.tokens, 1024);
    assert_int_equal(dit_param_count(&c), 674834720ull); /* size-independent */
    assert_int_equal(dit_config_get(&c, "dit-xl-2", 1024, &e), ERR_USAGE);
    assert_non_null(strstr(e.text, "256 or 512"));
}

/* One forward pass (B batch elements with the given labels) on a fixed latent. */
static void forward(struct dit_model *m, int B, const int *labels, float *eps)
{
    const struct dit_config *c = dit_model_config(m);
    size_t n = (size_t)c->c_in * c->lat * c->lat;
    float *x = malloc(n * 4);
    for (size_t i = 0; i < n; i++)
        x[i] = sinf((float)i * 0.37f);
    for (int b = 0; b < B; b++)
        assert_int_equal(dit_model_set_class(m, B, b, labels[b]), 0);
    struct dit_state *s;
    assert_int_equal(dit_state_new(&s, m, B, false, false), 0);
    struct dit_fwd f = {.t = 500, .n_kept = c->tokens, .st = DIT_ST_OFF, .st_target = -1};
    assert_int_equal(dit_forward(m, s, x, &f, eps), 0);
    dit_state_free(s);
    free(x);
}

static size_t numel(int nd, const int64_t *shape)
{
    size_t n = 1;
    for (int i = 0; i < nd; i++)
        n *= (size_t)shape[i];
    return n;
}

static const float *tensor(const struct dit_model *m, const char *name, int *nd, int64_t shape[4])
{
    for (size_t i = 0; i < dit_model_tensor_count(m); i++) {
        float *d;
        const char *nm = dit_model_tensor(m, i, &d, nd, shape);
        if (!strcmp(nm, name))
            return d;
    }
    return NULL;
}

static void test_table(void **state)
{
    (void)state;
    struct dit_config c;
    struct errmsg e = {0};
    assert_int_equal(dit_config_get(&c, "dit-micro", 0, &e), 0);
    struct dit_model *m;
    assert_int_equal(dit_model_new_seeded(&m, &c, 0, &e), 0);
    uint64_t sum = 0;
    for (size_t i = 0; i < dit_model_tensor_count(m); i++) {
        float *d;
        int nd;
        int64_t sh[4];
        dit_model_tensor(m, i, &d, &nd, sh);
        sum += numel(nd, sh);
    }
    assert_int_equal(sum, dit_param_count(&c));
    /* 6 non-block tensors pairs + 5 linears per block, weight and bias each */
    assert_int_equal(dit_model_tensor_count(m), (size_t)(2 + 4 + 1 + 10 * c.depth + 4));
    static const struct {
        const char *name;
        int nd;
        int64_t s0, s1;
    } want[] = {
        {"x_embedder.proj.weight", 4, 64, 4},
        {"t_embedder.mlp.0.weight", 2, 64, 256},
        {"t_embedder.mlp.2.bias", 1, 64, 0},
        {"y_embedder.embedding_table.weight", 2, 1001, 64},
        {"blocks.0.attn.qkv.weight", 2, 192, 64},
        {"blocks.1.attn.qkv.bias", 1, 192, 0},
        {"blocks.1.attn.proj.weight", 2, 64, 64},
        {"blocks.0.mlp.fc1.weight", 2, 256, 64},
        {"blocks.0.mlp.fc2.weight", 2, 64, 256},
        {"blocks.1.adaLN_modulation.1.weight", 2, 384, 64},
        {"final_layer.adaLN_modulation.1.weight", 2, 128, 64},
        {"final_layer.linear.weight", 2, 32, 64},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        int nd;
        int64_t sh[4];
        const float *d = tensor(m, want[i].name, &nd, sh);
        if (!d)
            printf("missing %s\n", want[i].name);
        assert_non_null(d);
        assert_int_equal(nd, want[i].nd);
        assert_int_equal(sh[0], want[i].s0);
        if (nd > 1)
            assert_int_equal(sh[1], want[i].s1);
    }
    /* nothing zero-initialised except biases: the adaLN and final weights are drawn */
    int nd;
    int64_t sh[4];
    const float *ada = tensor(m, "blocks.0.adaLN_modulation.1.weight", &nd, sh);
    const float *fin = tensor(m, "final_layer.linear.weight", &nd, sh);
    assert_true(ada[0] != 0.0f && ada[1] != 0.0f && fin[0] != 0.0f);
    dit_model_free(m);
}

/* diffusers DiTTransformer2DModel names for the original name `nm` (tensor data d, shape
 * sh); appends the items (splitting qkv, copying the embedder into every block). */
static size_t diffusers_items(const struct dit_config *c, const char *nm, const float *d, int nd,
                              const int64_t *sh, struct st_write_item *it, char names[][128],
                              int alter_copy)
{
    static const struct {
        const char *from, *to;
    } flat[] = {
        {"x_embedder.proj.", "pos_embed.proj."},
        {"final_layer.adaLN_modulation.1.", "proj_out_1."},
        {"final_layer.linear.", "proj_out_2."},
    };
    static const struct {
        const char *from, *to;
    } shared[] = {
        {"t_embedder.mlp.0.", "norm1.emb.timestep_embedder.linear_1."},
        {"t_embedder.mlp.2.", "norm1.emb.timestep_embedder.linear_2."},
        {"y_embedder.embedding_table.", "norm1.emb.class_embedder.embedding_table."},
    };
    static const struct {
        const char *from, *to;
    } blk[] = {
        {"attn.proj.", "attn1.to_out.0."},
        {"mlp.fc1.", "ff.net.0.proj."},
        {"mlp.fc2.", "ff.net.2."},
        {"adaLN_modulation.1.", "norm1.linear."},
    };
    size_t k = 0;
    for (size_t i = 0; i < 3; i++) {
        size_t l = strlen(flat[i].from);
        if (!strncmp(nm, flat[i].from, l)) {
            snprintf(names[k], 128, "%s%s", flat[i].to, nm + l);
            it[k] = (struct st_write_item){names[k], d, nd, {sh[0], sh[1], sh[2], sh[3]}};
            return 1;
        }
    }
    for (size_t i = 0; i < 3; i++) {
        size_t l = strlen(shared[i].from);
        if (!strncmp(nm, shared[i].from, l)) {
            for (int b = 0; b < c->depth; b++) {
                snprintf(names[k], 128, "transformer_blocks.%d.%s%s", b, shared[i].to, nm + l);
                const float *src = d;
                if (alter_copy && b == 1 && i == 0) {
                    /* a copy that differs from block 0's in one element */
                    size_t n = numel(nd, sh);
                    float *cp = malloc(n * 4);
                    memcpy(cp, d, n * 4);
                    cp[n - 1] += 1.0f;
                    src = cp;
                }
                it[k] = (struct st_write_item){names[k], src, nd, {sh[0], sh[1], sh[2], sh[3]}};
                k++;
            }
            return k;
        }
    }
    int bi, used = 0;
    assert_int_equal(sscanf(nm, "blocks.%d.%n", &bi, &used), 1);
    const char *rest = nm + used;
    if (!strncmp(rest, "attn.qkv.", 9)) {
        static const char *qkv[3] = {"to_q", "to_k", "to_v"};
        size_t per = numel(nd, sh) / 3;
        for (int j = 0; j < 3; j++) {
            snprintf(names[k], 128, "transformer_blocks.%d.attn1.%s.%s", bi, qkv[j], rest + 9);
            it[k] = (struct st_write_item){
                names[k], d + per * (size_t)j, nd, {sh[0] / 3, sh[1], sh[2], sh[3]}};
            k++;
        }
        return k;
    }
    for (size_t i = 0; i < sizeof blk / sizeof blk[0]; i++) {
        size_t l = strlen(blk[i].from);
        if (!strncmp(rest, blk[i].from, l)) {
            snprintf(names[k], 128, "transformer_blocks.%d.%s%s", bi, blk[i].to, rest + l);
            it[k] = (struct st_write_item){names[k], d, nd, {sh[0], sh[1], sh[2], sh[3]}};
            return 1;
        }
    }
    fail_msg("no diffusers name for '%s'", nm);
    return 0;
}

enum edit { ED_NONE, ED_COPY_DIFFERS, ED_DROP_TO_V, ED_UNKNOWN };

/* Writes m with diffusers names, edited as asked; returns the number of tensors. */
static size_t write_diffusers(const struct dit_model *m, const char *path, enum edit ed)
{
    const struct dit_config *c = dit_model_config(m);
    size_t n = dit_model_tensor_count(m), cap = n * 4 + (size_t)c->depth * 8 + 2;
    struct st_write_item *it = calloc(cap, sizeof *it);
    char(*names)[128] = calloc(cap, sizeof *names);
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        float *d;
        int nd;
        int64_t sh[4];
        const char *nm = dit_model_tensor(m, i, &d, &nd, sh);
        k += diffusers_items(c, nm, d, nd, sh, it + k, names + k, ed == ED_COPY_DIFFERS);
    }
    /* the fixed position embedding is a buffer in diffusers; the loader ignores it */
    static float pe[4];
    snprintf(names[k], 128, "pos_embed.pos_embed");
    it[k++] = (struct st_write_item){names[k - 1], pe, 2, {2, 2, 0, 0}};
    if (ed == ED_DROP_TO_V)
        for (size_t i = 0; i < k; i++)
            if (!strcmp(it[i].name, "transformer_blocks.1.attn1.to_v.weight")) {
                it[i] = it[--k];
                break;
            }
    if (ed == ED_UNKNOWN) {
        snprintf(names[k], 128, "transformer_blocks.0.attn2.to_q.weight");
        it[k] = it[0];
        it[k].name = names[k];
        k++;
    }
    struct errmsg e = {0};
    assert_int_equal(st_write(path, it, k, ST_F32, &e), 0);
    if (ed == ED_COPY_DIFFERS)
        for (size_t i = 0; i < k; i++)
            if (strstr(it[i].name, "transformer_blocks.1.norm1.emb.timestep_embedder.linear_1"))
                free((void *)it[i].data);
    free(it);
    free(names);
    return k;
}

static void expect_error(const struct dit_config *c, const char *path, const char *needle)
{
    struct dit_model *m = NULL;
    struct errmsg e = {0};
    const char *paths[1] = {path};
    assert_int_equal(dit_model_new_files(&m, c, paths, 1, &e), ERR_DATA);
    assert_null(m);
    if (!strstr(e.text, needle))
        printf("error '%s' lacks '%s'\n", e.text, needle);
    assert_non_null(strstr(e.text, needle));
}

static void test_checkpoints(void **state)
{
    (void)state;
    struct dit_config c;
    struct errmsg e = {0};
    nn_set_threads(1);
    assert_int_equal(dit_config_get(&c, "dit-micro", 0, &e), 0);
    struct dit_model *seeded, *loaded;
    assert_int_equal(dit_model_new_seeded(&seeded, &c, 3, &e), 0);
    size_t n = (size_t)c.c_in * c.lat * c.lat;
    float *e1 = malloc(2 * n * 4), *e2 = malloc(2 * n * 4);
    int labels[2] = {207, 1000};
    forward(seeded, 2, labels, e1);
    char p[256];
    const char *paths[1] = {p};
    /* original facebookresearch/DiT names */
    th_path(p, sizeof p, "dit_orig.safetensors");
    assert_int_equal(dit_model_save(seeded, p, ST_F32, &e), 0);
    assert_int_equal(dit_model_new_files(&loaded, &c, paths, 1, &e), 0);
    forward(loaded, 2, labels, e2);
    assert_memory_equal(e1, e2, 2 * n * 4);
    dit_model_free(loaded);
    /* diffusers names */
    th_path(p, sizeof p, "dit_diffusers.safetensors");
    size_t k = write_diffusers(seeded, p, ED_NONE);
    /* patch, proj_out_1 and proj_out_2 pairs; per block to_q/to_k/to_v, to_out.0, fc1, fc2
     * and norm1.linear pairs plus 5 embedder copies; pos_embed.pos_embed */
    assert_int_equal(k, (size_t)(6 + c.depth * (14 + 5) + 1));
    memset(e2, 0, 2 * n * 4);
    int rc = dit_model_new_files(&loaded, &c, paths, 1, &e);
    if (rc)
        printf("load: %s\n", e.text);
    assert_int_equal(rc, 0);
    forward(loaded, 2, labels, e2);
    assert_memory_equal(e1, e2, 2 * n * 4);
    dit_model_free(loaded);
    /* errors */
    th_path(p, sizeof p, "dit_bad_copy.safetensors");
    write_diffusers(seeded, p, ED_COPY_DIFFERS);
    expect_error(&c, p, "transformer_blocks.1.norm1.emb.timestep_embedder.linear_1.");
    expect_error(&c, p, "differs from block 0");
    th_path(p, sizeof p, "dit_no_v.safetensors");
    write_diffusers(seeded, p, ED_DROP_TO_V);
    expect_error(&c, p, "missing tensor 'blocks.1.attn.qkv.weight' (part of it)");
    th_path(p, sizeof p, "dit_unknown.safetensors");
    write_diffusers(seeded, p, ED_UNKNOWN);
    expect_error(&c, p, "unknown tensor 'transformer_blocks.0.attn2.to_q.weight'");
    /* a PixArt checkpoint is not a DiT one */
    struct dit_config pc;
    assert_int_equal(dit_config_get(&pc, "micro", 0, &e), 0);
    struct dit_model *pm;
    assert_int_equal(dit_model_new_seeded(&pm, &pc, 0, &e), 0);
    th_path(p, sizeof p, "pixart.safetensors");
    assert_int_equal(dit_model_save(pm, p, ST_F32, &e), 0);
    dit_model_free(pm);
    expect_error(&c, p, "unknown tensor '");
    dit_model_free(seeded);
    free(e1);
    free(e2);
}

static void test_conditioning(void **state)
{
    (void)state;
    struct dit_config c;
    struct errmsg e = {0};
    nn_set_threads(1);
    assert_int_equal(dit_config_get(&c, "dit-micro", 0, &e), 0);
    struct dit_model *m;
    assert_int_equal(dit_model_new_seeded(&m, &c, 0, &e), 0);
    size_t n = (size_t)c.c_in * c.lat * c.lat;
    float *a = malloc(2 * n * 4), *b = malloc(2 * n * 4), *u = malloc(n * 4);
    int cfg[2] = {207, 1000}, one[1] = {207}, other[1] = {3}, null[1] = {1000};
    forward(m, 2, cfg, a);
    forward(m, 1, one, b);
    assert_memory_equal(a, b, n * 4); /* batch element 0 is the unbatched forward */
    forward(m, 1, null, u);
    assert_memory_equal(a + n, u, n * 4); /* batch element 1 is the null class */
    assert_memory_not_equal(b, u, n * 4);
    forward(m, 1, other, u);
    assert_memory_not_equal(b, u, n * 4);
    double s = 0;
    for (size_t i = 0; i < n; i++)
        s += fabs(b[i]);
    assert_true(s > 0.0 && isfinite(s)); /* nothing zero-initialised: eps is not 0 */
    assert_int_equal(dit_model_set_class(m, 1, 0, 1001), ERR_USAGE);
    assert_int_equal(dit_model_set_class(m, 1, 0, -1), ERR_USAGE);
    float text[1] = {0};
    assert_int_equal(dit_model_set_text(m, 1, 0, text), ERR_USAGE);
    dit_model_free(m);
    /* and a PixArt model refuses a class label */
    assert_int_equal(dit_config_get(&c, "micro", 0, &e), 0);
    assert_int_equal(dit_model_new_seeded(&m, &c, 0, &e), 0);
    assert_int_equal(dit_model_set_class(m, 1, 0, 1), ERR_USAGE);
    dit_model_free(m);
    free(a);
    free(b);
    free(u);
}

static void test_capture(void **state)
{
    (void)state;
    struct disc_params p;
    struct errmsg e = {0};
    struct disc_capture *c;
    disc_params_default(&p);
    snprintf(p.model, sizeof p.model, "dit-micro");
    assert_int_equal(p.class_label, 207);
    p.threads = 1;
    p.steps = 3;
    p.cfg_on = true;
    p.cfg_scale = 4.0;
    p.class_label = 1000; /* the null class is not a label */
    assert_int_equal(test_disc_open(&p, &c, &e), ERR_USAGE);
    p.class_label = 88;
    p.text_file = "x.npy";
    assert_int_equal(test_disc_open(&p, &c, &e), ERR_USAGE);
    assert_non_null(strstr(e.text, "class-conditional"));
    p.text_file = NULL;
    assert_int_equal(test_disc_open(&p, &c, &e), 0);
    int rc = test_disc_run(c, NULL, NULL, &e);
    if (rc)
        printf("capture: %s\n", e.text);
    assert_int_equal(rc, 0);
    const struct disc_result *r = disc_capture_result(c);
    const struct dit_config *g = disc_capture_config(c);
    assert_int_equal(r->B, 2);
    assert_true(r->q_main.valid && isfinite(r->q_main.cosine));
    assert_true(r->sparsity > 0.0 && r->sparsity < 1.0);
    for (int f = DISC_F_CA_Q; f <= DISC_F_CA_PROJ; f++)
        assert_int_equal(r->flops_dense[f], 0);
    /* embed per step: 2B(N C p^2 d + N d p^2 C_out) + 2(256 d + d^2) + 2B(6 L d^2 + 2 d^2) */
    uint64_t N = (uint64_t)g->tokens, d = 64, B = 2, L = 2;
    uint64_t embed = 2 * B * (N * 16 * d + N * d * 32) + 2 * (256 * d + d * d) +
                     2 * B * (6 * L * d * d + 2 * d * d);
    assert_int_equal(r->flops_dense[DISC_F_EMBED], 3 * embed);
    /* self-attention QK^T dense: 2 N N d per block and batch element */
    assert_int_equal(r->flops_dense[DISC_F_SA_QK], 3 * B * L * 2 * N * N * d);
    capture_disc_ops.close(c);
}

/* CTR caches without a cross-attention cache: --ctr-tau 0 equals --ctr-off bit for bit in
 * every x_k (as the CTR tau-0 check for the PixArt configs), with ST off and on, with CFG. */
static void test_ctr_tau0(void **state)
{
    (void)state;
    for (int st = 0; st < 2; st++) {
        struct disc_params p;
        struct errmsg e = {0};
        struct disc_capture *a, *b;
        disc_params_default(&p);
        snprintf(p.model, sizeof p.model, "dit-micro");
        p.threads = 1;
        p.steps = 3;
        p.cfg_on = true;
        p.cfg_scale = 1.5;
        p.st = st ? DISC_ST_ALPHA : DISC_ST_OFF;
        p.ctr = DISC_CTR_OFF;
        p.compare_dense = false;
        assert_int_equal(test_capture_disc(&p, NULL, NULL, &a, &e), 0);
        p.ctr = DISC_CTR_TAU;
        p.ctr_tau = 0.0f;
        assert_int_equal(test_capture_disc(&p, NULL, NULL, &b, &e), 0);
        const struct disc_result *ra = disc_capture_result(a), *rb = disc_capture_result(b);
        assert_memory_equal(ra->traj, rb->traj, (size_t)ra->K * ra->n_latent * 4);
        capture_disc_ops.close(a);
        capture_disc_ops.close(b);
    }
}

/* The row-compressed ST reuse kernel (dit_attn.c) gives the bits of the reference masked
 * attention (nn_attention with a mask: nn_sddmm_row + nn_attention_row_sparse) for head
 * widths with and without a tail of the register-blocked SpMM (16, 72, 64), two heads whose
 * K and V rows it packs from the activations' stride, a token count that is not a multiple
 * of 64 or 8 and spans several column tiles, rows with one, some and all columns (list
 * lengths with and without a partial group of eight), on two workers that share each head's
 * row blocks, by each path that builds the column lists on this CPU (AVX-512, AVX2, the
 * portable byte table); and on one worker. */
static void test_reuse_kernel_bits(void **state)
{
    (void)state;
    struct dit_config cfg;
    struct errmsg e = {0};
    assert_int_equal(dit_config_get(&cfg, "micro", 0, &e), 0);
    struct dit_model *m = NULL;
    assert_int_equal(dit_model_new_seeded(&m, &cfg, 0, &e), 0);
    struct thread_pool *pool = pool_new(2), *pool1 = pool_new(1);
    assert_non_null(pool);
    assert_non_null(pool1);
    /* the kernel uses the model only for its worker scratch, sized by the token count */
    const int n = 603, H = 2;
    m->cfg.tokens = n;
    assert_int_equal(dit_ensure_wscratch(m, pool), 0);
    const int dhs[3] = {16, 72, 64};
    size_t words = ((size_t)n + 63) / 64;
    unsigned seed = 12345;
    for (int di = 0; di < 3; di++) {
        int dh = dhs[di], d = H * dh; /* q, k, v, o rows of stride d, head h at h * dh */
        float *q = malloc((size_t)n * d * 4), *k = malloc((size_t)n * d * 4);
        float *v = malloc((size_t)n * d * 4), *o1 = calloc((size_t)n * d, 4);
        float *o2 = calloc((size_t)n * d, 4), *scr = malloc((size_t)n * n * 4);
        float *kp = malloc((size_t)n * dh * 4), *vp = malloc((size_t)n * dh * 4);
        uint64_t *mask = calloc((size_t)H * n * words, 8);
        for (int i = 0; i < n * d; i++)
            q[i] = (float)((seed = seed * 1103515245u + 12345u) >> 8) / 16777216.0f - 0.5f;
        for (int i = 0; i < n * d; i++) {
            k[i] = (float)((seed = seed * 1103515245u + 12345u) >> 8) / 16777216.0f - 0.5f;
            v[i] = (float)((seed = seed * 1103515245u + 12345u) >> 8) / 16777216.0f - 0.5f;
        }
        for (int r = 0; r < H * n; r++)
            for (int j = 0; j < n; j++) {
                bool set = r % n == 0   ? j == 7
                           : r % n == 1 ? true
                                        : ((seed = seed * 1103515245u + 12345u) >> 16) % 5 < 2;
                if (set)
                    mask[(size_t)r * words + j / 64] |= 1ull << (j % 64);
            }
        for (int h = 0; h < H; h++) {
            struct nn_attn a = {.n_q = n,
                                .n_k = n,
                                .dh = dh,
                                .q = q + h * dh,
                                .ldq = d,
                                .k = k + h * dh,
                                .ldk = d,
                                .v = v + h * dh,
                                .ldv = d,
                                .o = o1 + h * dh,
                                .ldo = d,
                                .scale = 0.117851f,
                                .causal_offset = -1,
                                .mask = mask + (size_t)h * n * words,
                                .mask_words = words,
                                .scratch = scr};
            nn_attention(&a);
        }
        struct dit_reuse_ctx g = {.m = m,
                                  .mask = mask,
                                  .words = words,
                                  .q = q,
                                  .k = k,
                                  .v = v,
                                  .o = o2,
                                  .d = d,
                                  .dh = dh,
                                  .N = n,
                                  .heads = H,
                                  .scale = 0.117851f,
                                  .kp = kp,
                                  .vp = vp};
        /* each path down to the byte table: the CPU's best first */
        enum dit_list_path want = DIT_LIST_BEST;
        for (;;) {
            enum dit_list_path took = dit_set_list_path(want);
            memset(o2, 0, (size_t)n * d * 4);
            dit_attn_reuse(pool, &g, (size_t)n);
            assert_memory_equal(o1, o2, (size_t)n * d * 4);
            if (di == 0)
                printf("reuse kernel bits: column lists by path %d held\n", (int)took);
            if (took == DIT_LIST_BYTES)
                break;
            want = took == DIT_LIST_AVX512 ? DIT_LIST_AVX2 : DIT_LIST_BYTES;
        }
        dit_set_list_path(DIT_LIST_BEST);
        memset(o2, 0, (size_t)n * d * 4);
        dit_attn_reuse(pool1, &g, (size_t)n);
        assert_memory_equal(o1, o2, (size_t)n * d * 4);
        free(q), free(k), free(v), free(o1), free(o2), free(scr), free(mask), free(kp), free(vp);
    }
    pool_free(pool);
    pool_free(pool1);
    dit_model_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_param_count),       cmocka_unit_test(test_table),
        cmocka_unit_test(test_checkpoints),       cmocka_unit_test(test_conditioning),
        cmocka_unit_test(test_capture),           cmocka_unit_test(test_ctr_tau0),
        cmocka_unit_test(test_reuse_kernel_bits),
    };
    return cmocka_run_group_tests(tests, th_group_setup, th_group_teardown);
}
