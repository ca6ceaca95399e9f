/*
 * Tests of the DiSC capture as a whole (docs/disc.md#acceptance-checks):
 *   --ctr-tau 0 equals --ctr-off bit for bit in every x_k (micro and tiny at 128 px,
 *        ST off and on); with ST off that is the dense run, bit for bit;
 *   weights written as F32 safetensors give a bit-identical forward; F16/BF16 files
 *        load the rounded weights; original PixArt names (fused qkv/kv) are aliases; a
 *        missing tensor, wrong shape, wrong dtype, unknown name or truncated file is a
 *        data error naming the tensor;
 *   .npy (<f4, <f2; 2-D and 3-D) and raw text load identically; wrong sizes fail;
 *   --keep-masks parser counts and errors;
 *   two identical micro captures give identical record payloads;
 *   a run against itself: cosine 1, PSNR +inf, rel_err 0;
 *   the memory plan of pixart-sigma-xl at 2048 px spills to fit (the CLI refusal
 *        is in tests/sh/disc_capture.sh);
 *   a checkpoint taken at any step boundary resumes to the same records bit for bit (the
 *        killed-process version is tests/sh/capture_resume.sh); a checkpoint of another
 *        version, shape or unit, or a truncated one, is a data error naming the file and
 *        the offset.
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
#include "capture/disc/disc_inputs.h"
#include "capture/disc/disc_keep.h"
#include "capture/disc/dit.h"
#include "capture/nn/nn.h"
#include "capture/nn/safetensors.h"
#include "common/io.h"
#include "common/mem.h"
#include "tests/helpers/capture_helpers.h"
#include "tests/helpers/test_helpers.h"

/* capture disc with p in-process, every record to fn (NULL: none); the caller closes the
 * instance with capture_disc_ops.close. */
static struct disc_capture *run(const struct disc_params *p, test_emit_fn fn, void *ctx)
{
    struct errmsg e = {0};
    struct disc_capture *c;
    assert_int_equal(test_disc_open(p, &c, &e), 0);
    int rc = test_disc_run(c, fn, ctx, &e);
    if (rc)
        printf("run: %s\n", e.text);
    assert_int_equal(rc, 0);
    return c;
}

static void base(struct disc_params *p, const char *model)
{
    disc_params_default(p);
    snprintf(p->model, sizeof p->model, "%s", model);
    p->threads = 1;
}

/* the CTR tau-0 check. */
static void test_ctr_tau0_equals_off(void **state)
{
    (void)state;
    const char *models[2] = {"micro", "tiny"};
    for (int mi = 0; mi < 2; mi++)
        for (int st = 0; st < 2; st++) {
            struct disc_params p;
            base(&p, models[mi]);
            if (mi == 1) {
                p.image_size = 128; /* N = 64 keeps the test fast */
                p.steps = 3;
            }
            p.st = st ? DISC_ST_ALPHA : DISC_ST_OFF;
            p.ctr = DISC_CTR_OFF;
            p.compare_dense = false;
            struct disc_capture *a = run(&p, NULL, NULL);
            p.ctr = DISC_CTR_TAU;
            p.ctr_tau = 0.0f;
            p.compare_dense = st == 0; /* the dense reference run */
            struct disc_capture *b = run(&p, NULL, NULL);
            const struct disc_result *ra = disc_capture_result(a), *rb = disc_capture_result(b);
            assert_int_equal(ra->K, rb->K);
            assert_memory_equal(ra->traj, rb->traj, (size_t)ra->K * ra->n_latent * 4);
            for (int k = 0; k < rb->K; k++)
                assert_int_equal(rb->n_kept[k], disc_capture_config(b)->tokens);
            if (!st) {
                /* tau = 0 and ST off: the final latent equals the dense run bit for bit */
                assert_memory_equal(rb->latent, rb->latent_dense, rb->n_latent * 4);
                assert_true(rb->q_main.cosine == 1.0);
                assert_true(isinf(rb->q_main.psnr));
            }
            capture_disc_ops.close(a);
            capture_disc_ops.close(b);
        }
}

/* One forward pass of model m on a fixed latent; eps (n floats) out. */
static void forward(struct dit_model *m, float *eps)
{
    const struct dit_config *c = dit_model_config(m);
    size_t n = (size_t)c->c_in * c->lat * c->lat, T = (size_t)c->text_tokens;
    float *x = malloc(n * 4), *text = malloc(T * (size_t)c->caption * 4);
    for (size_t i = 0; i < n; i++)
        x[i] = sinf((float)i * 0.37f);
    for (size_t i = 0; i < T * (size_t)c->caption; i++)
        text[i] = cosf((float)i * 0.11f);
    assert_int_equal(dit_model_set_text(m, 1, 0, text), 0);
    struct dit_state *s;
    assert_int_equal(dit_state_new(&s, m, 1, false, false), 0);
    struct dit_fwd f = {.t = 500, .n_kept = c->tokens, .st = DIT_ST_OFF, .st_target = -1};
    assert_int_equal(dit_forward(m, s, x, &f, eps), 0);
    dit_state_free(s);
    free(x);
    free(text);
}

/* Writes the tensors of m with original PixArt names (fused qkv and kv), skipping `skip`. */
static void write_original(const struct dit_model *m, const char *path)
{
    size_t n = dit_model_tensor_count(m);
    struct st_write_item *it = calloc(n, sizeof *it);
    char **names = calloc(n, sizeof *names);
    float **fused = calloc(n, sizeof *fused);
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        float *d;
        int nd;
        int64_t sh[4];
        const char *name = dit_model_tensor(m, i, &d, &nd, sh);
        char buf[160];
        int blk;
        char rest[128];
        const char *out = NULL;
        if (sscanf(name, "transformer_blocks.%d.%127s", &blk, rest) == 2) {
            const char *kind = strstr(rest, ".weight") ? "weight" : "bias";
            if (!strncmp(rest, "attn1.to_q.", 11) || !strncmp(rest, "attn2.to_k.", 11)) {
                /* fused: q,k,v (attn1) or k,v (attn2), concatenated along dim 0 */
                int parts = rest[4] == '1' ? 3 : 2;
                const char *pn3[] = {"q", "k", "v"}, *pn2[] = {"k", "v"};
                size_t per = 1;
                for (int j = 0; j < nd; j++)
                    per *= (size_t)sh[j];
                float *f = malloc(per * (size_t)parts * 4);
                for (int pi = 0; pi < parts; pi++) {
                    char nm[160];
                    snprintf(nm, sizeof nm, "transformer_blocks.%d.attn%c.to_%s.%s", blk, rest[4],
                             parts == 3 ? pn3[pi] : pn2[pi], kind);
                    for (size_t j = 0; j < n; j++) {
                        float *dj;
                        int ndj;
                        int64_t shj[4];
                        if (!strcmp(dit_model_tensor(m, j, &dj, &ndj, shj), nm))
                            memcpy(f + per * (size_t)pi, dj, per * 4);
                    }
                }
                snprintf(buf, sizeof buf, "blocks.%d.%s.%s", blk,
                         parts == 3 ? "attn.qkv" : "cross_attn.kv_linear", kind);
                fused[k] = f;
                it[k].data = f;
                it[k].ndim = nd;
                memcpy(it[k].shape, sh, sizeof sh);
                it[k].shape[0] *= parts;
                names[k] = strdup(buf);
                it[k].name = names[k];
                k++;
                continue;
            }
            if (!strncmp(rest, "attn1.to_k.", 11) || !strncmp(rest, "attn1.to_v.", 11) ||
                !strncmp(rest, "attn2.to_v.", 11))
                continue;
            static const char *map[][2] = {{"scale_shift_table", "scale_shift_table"},
                                           {"attn1.to_out.0.", "attn.proj."},
                                           {"attn2.to_q.", "cross_attn.q_linear."},
                                           {"attn2.to_out.0.", "cross_attn.proj."},
                                           {"ff.net.0.proj.", "mlp.fc1."},
                                           {"ff.net.2.", "mlp.fc2."}};
            for (size_t j = 0; j < 6; j++)
                if (!strncmp(rest, map[j][0], strlen(map[j][0]))) {
                    snprintf(buf, sizeof buf, "blocks.%d.%s%s", blk, map[j][1],
                             rest + strlen(map[j][0]));
                    out = buf;
                }
        } else {
            static const char *map[][2] = {
                {"pos_embed.proj.", "x_embedder.proj."},
                {"adaln_single.emb.timestep_embedder.linear_1.", "t_embedder.mlp.0."},
                {"adaln_single.emb.timestep_embedder.linear_2.", "t_embedder.mlp.2."},
                {"adaln_single.linear.", "t_block.1."},
                {"caption_projection.linear_1.", "y_embedder.y_proj.fc1."},
                {"caption_projection.linear_2.", "y_embedder.y_proj.fc2."},
                {"scale_shift_table", "final_layer.scale_shift_table"},
                {"proj_out.", "final_layer.linear."}};
            for (size_t j = 0; j < 8; j++)
                if (!strncmp(name, map[j][0], strlen(map[j][0]))) {
                    snprintf(buf, sizeof buf, "%s%s", map[j][1], name + strlen(map[j][0]));
                    out = buf;
                }
        }
        assert_non_null(out);
        names[k] = strdup(out);
        it[k].name = names[k];
        it[k].data = d;
        it[k].ndim = nd;
        memcpy(it[k].shape, sh, sizeof sh);
        k++;
    }
    struct errmsg e = {0};
    assert_int_equal(st_write(path, it, k, ST_F32, &e), 0);
    for (size_t i = 0; i < k; i++) {
        free(names[i]);
        free(fused[i]);
    }
    free(names);
    free(fused);
    free(it);
}

/* Writes m's tensors as F32 with a change: drop `drop`, rename/reshape/retype one, or add. */
enum edit { E_NONE, E_DROP, E_SHAPE, E_UNKNOWN };
static void write_edited(const struct dit_model *m, const char *path, enum edit ed,
                         const char *victim)
{
    size_t n = dit_model_tensor_count(m), k = 0;
    struct st_write_item *it = calloc(n + 1, sizeof *it);
    for (size_t i = 0; i < n; i++) {
        float *d;
        int nd;
        int64_t sh[4];
        const char *name = dit_model_tensor(m, i, &d, &nd, sh);
        if (ed == E_DROP && !strcmp(name, victim))
            continue;
        it[k].name = name;
        it[k].data = d;
        it[k].ndim = nd;
        memcpy(it[k].shape, sh, sizeof sh);
        if (ed == E_SHAPE && !strcmp(name, victim)) {
            it[k].shape[0] = sh[1];
            it[k].shape[1] = sh[0] > 1 ? sh[0] : 1;
            if (nd == 1)
                it[k].shape[0] = 1, it[k].shape[1] = sh[0], it[k].ndim = 2;
        }
        k++;
    }
    if (ed == E_UNKNOWN) {
        float *d;
        int nd;
        int64_t sh[4];
        dit_model_tensor(m, 0, &d, &nd, sh);
        it[k] = it[0];
        it[k].name = victim;
        k++;
    }
    struct errmsg e = {0};
    assert_int_equal(st_write(path, it, k, ST_F32, &e), 0);
    free(it);
}

static void expect_load_error(const struct dit_config *c, const char *path, const char *needle,
                              int code)
{
    struct dit_model *m;
    struct errmsg e = {0};
    const char *paths[1] = {path};
    assert_int_equal(dit_model_new_files(&m, c, paths, 1, &e), code);
    assert_null(m);
    printf("expected error: %s\n", e.text);
    assert_non_null(strstr(e.text, needle));
}

/* the weights check. */
static void test_weights_files(void **state)
{
    (void)state;
    struct dit_config c;
    struct errmsg e = {0};
    nn_set_threads(1);
    assert_int_equal(dit_config_get(&c, "micro", 0, &e), 0);
    struct dit_model *seeded, *loaded;
    assert_int_equal(dit_model_new_seeded(&seeded, &c, 0, &e), 0);
    size_t n = (size_t)c.c_in * c.lat * c.lat;
    float *e1 = malloc(n * 4), *e2 = malloc(n * 4);
    forward(seeded, e1);
    char p[256];
    th_path(p, sizeof p, "micro_f32.safetensors");
    assert_int_equal(dit_model_save(seeded, p, ST_F32, &e), 0);
    const char *paths[1] = {p};
    assert_int_equal(dit_model_new_files(&loaded, &c, paths, 1, &e), 0);
    forward(loaded, e2);
    assert_memory_equal(e1, e2, n * 4); /* bit-identical forward */
    dit_model_free(loaded);
    /* F16 / BF16: the loaded weights are the rounded FP32 weights */
    for (int dt = ST_F16; dt <= ST_BF16; dt++) {
        th_path(p, sizeof p, "micro_half.safetensors");
        assert_int_equal(dit_model_save(seeded, p, dt, &e), 0);
        assert_int_equal(dit_model_new_files(&loaded, &c, paths, 1, &e), 0);
        for (size_t i = 0; i < dit_model_tensor_count(seeded); i++) {
            float *a, *b;
            int nd;
            int64_t sh[4];
            dit_model_tensor(seeded, i, &a, &nd, sh);
            dit_model_tensor(loaded, i, &b, &nd, sh);
            size_t cnt = 1;
            for (int j = 0; j < nd; j++)
                cnt *= (size_t)sh[j];
            for (size_t j = 0; j < cnt; j++) {
                float want = dt == ST_F16 ? st_f16_to_f32(st_f32_to_f16(a[j]))
                                          : st_bf16_to_f32(st_f32_to_bf16(a[j]));
                assert_true(b[j] == want);
            }
        }
        dit_model_free(loaded);
    }
    /* Original PixArt names with fused qkv and kv */
    th_path(p, sizeof p, "micro_orig.safetensors");
    write_original(seeded, p);
    assert_int_equal(dit_model_new_files(&loaded, &c, paths, 1, &e), 0);
    forward(loaded, e2);
    assert_memory_equal(e1, e2, n * 4);
    dit_model_free(loaded);
    /* Errors naming the tensor */
    th_path(p, sizeof p, "micro_bad.safetensors");
    write_edited(seeded, p, E_DROP, "transformer_blocks.1.attn2.to_k.weight");
    expect_load_error(&c, p, "missing tensor 'transformer_blocks.1.attn2.to_k.weight'", ERR_DATA);
    write_edited(seeded, p, E_SHAPE, "proj_out.weight");
    expect_load_error(&c, p, "tensor 'proj_out.weight'", ERR_DATA);
    write_edited(seeded, p, E_UNKNOWN, "transformer_blocks.0.attn1.norm_q.weight");
    expect_load_error(&c, p, "unknown tensor 'transformer_blocks.0.attn1.norm_q.weight'", ERR_DATA);
    /* truncated: cut the F32 file in the middle of its data */
    th_path(p, sizeof p, "micro_f32.safetensors");
    FILE *f = fopen(p, "rb");
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    rewind(f);
    char *buf = malloc((size_t)len);
    assert_int_equal(fread(buf, 1, (size_t)len, f), (size_t)len);
    fclose(f);
    char q[256];
    th_path(q, sizeof q, "micro_cut.safetensors");
    f = fopen(q, "wb");
    fwrite(buf, 1, (size_t)len / 2, f);
    fclose(f);
    expect_load_error(&c, q, "truncated", ERR_DATA);
    /* wrong dtype: patch the first "F32" of the header to "I32" */
    char *hit = strstr(buf + 8, "\"F32\"");
    assert_non_null(hit);
    hit[1] = 'I';
    f = fopen(q, "wb");
    fwrite(buf, 1, (size_t)len, f);
    fclose(f);
    expect_load_error(&c, q, "dtype I32", ERR_DATA);
    free(buf);
    dit_model_free(seeded);
    free(e1);
    free(e2);
}

/* .npy with a padded header (format 1.0) of descr, shape, and payload. */
static void write_npy(const char *p, const char *descr, const char *shape, const void *data,
                      size_t n)
{
    char hdr[256];
    int hl = snprintf(hdr, sizeof hdr, "{'descr': '%s', 'fortran_order': False, 'shape': %s, }",
                      descr, shape);
    int total = 10 + hl + 1;
    int pad = (64 - total % 64) % 64;
    unsigned char pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, 0, 0};
    uint16_t len = (uint16_t)(hl + pad + 1);
    pre[8] = (unsigned char)len;
    pre[9] = (unsigned char)(len >> 8);
    FILE *f = fopen(p, "wb");
    fwrite(pre, 1, 10, f);
    fwrite(hdr, 1, (size_t)hl, f);
    for (int i = 0; i < pad; i++)
        fputc(' ', f);
    fputc('\n', f);
    fwrite(data, 1, n, f);
    fclose(f);
}

/* the text input check */
static void test_text_inputs(void **state)
{
    (void)state;
    enum { T = 16, DC = 32 };
    float raw[T * DC], got[T * DC];
    uint16_t half[T * DC];
    for (int i = 0; i < T * DC; i++) {
        raw[i] = sinf((float)i) * 3.0f;
        half[i] = st_f32_to_f16(raw[i]);
    }
    char p[256];
    struct errmsg e = {0};
    th_path(p, sizeof p, "text.f32");
    th_write_file(p, raw, sizeof raw);
    assert_int_equal(disc_text_load(p, T, DC, got, &e), 0);
    assert_memory_equal(raw, got, sizeof raw);
    th_path(p, sizeof p, "text2.npy");
    write_npy(p, "<f4", "(16, 32)", raw, sizeof raw);
    memset(got, 0, sizeof got);
    assert_int_equal(disc_text_load(p, T, DC, got, &e), 0);
    assert_memory_equal(raw, got, sizeof raw);
    th_path(p, sizeof p, "text3.npy");
    write_npy(p, "<f4", "(1, 16, 32)", raw, sizeof raw);
    memset(got, 0, sizeof got);
    assert_int_equal(disc_text_load(p, T, DC, got, &e), 0);
    assert_memory_equal(raw, got, sizeof raw);
    th_path(p, sizeof p, "texth.npy");
    write_npy(p, "<f2", "(16, 32)", half, sizeof half);
    assert_int_equal(disc_text_load(p, T, DC, got, &e), 0);
    for (int i = 0; i < T * DC; i++)
        assert_true(got[i] == st_f16_to_f32(half[i]));
    /* wrong sizes are data errors */
    th_path(p, sizeof p, "bad.f32");
    th_write_file(p, raw, sizeof raw - 4);
    assert_int_equal(disc_text_load(p, T, DC, got, &e), ERR_DATA);
    assert_non_null(strstr(e.text, "bad.f32"));
    th_path(p, sizeof p, "bad.npy");
    write_npy(p, "<f4", "(16, 31)", raw, 16 * 31 * 4);
    assert_int_equal(disc_text_load(p, T, DC, got, &e), ERR_DATA);
    write_npy(p, "<f8", "(16, 32)", raw, sizeof raw);
    assert_int_equal(disc_text_load(p, T, DC, got, &e), ERR_DATA);
}

/* parser counts and errors; a micro run keeps exactly the selected masks. */
struct keepc {
    int kept, total;
    int wrong;
};

static int keep_hook(void *ctx, const Acceltrace__Record *rec)
{
    struct keepc *t = ctx;
    if (rec->body_case != ACCELTRACE__RECORD__BODY_DISC_MASK)
        return 0;
    const Acceltrace__DiscMask *m = rec->disc_mask;
    bool want = m->block == 0 && (m->head == 1 || m->head == 2) && (m->step == 0 || m->step == 3);
    t->total++;
    t->kept += m->kept;
    t->wrong += want != (bool)m->kept;
    if (m->kept && (m->n_row_nnz != 64 || m->bits.len != 64 * 8))
        t->wrong++;
    return 0;
}

static void test_keep_masks(void **state)
{
    (void)state;
    struct disc_keep k;
    struct errmsg e = {0};
    assert_int_equal(disc_keep_parse(&k, "blocks=0,13,27;heads=all;steps=all", 28, 16, 20, 2, &e),
                     0);
    assert_int_equal(disc_keep_count(&k), 3 * 16 * 20 * 2);
    assert_true(disc_keep_has(&k, 5, 1, 13, 15));
    assert_false(disc_keep_has(&k, 5, 1, 12, 15));
    disc_keep_release(&k);
    assert_int_equal(disc_keep_parse(&k, "blocks=28", 28, 16, 20, 1, &e), ERR_USAGE);
    assert_non_null(strstr(e.text, "28"));
    disc_keep_release(&k);
    const char *bad[] = {"blocks=3-1",
                         "blocks=0;;heads=1",
                         "blocks=0;blocks=1",
                         "rows=1",
                         "blocks=",
                         "blocks=a",
                         ""};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(disc_keep_parse(&k, bad[i], 28, 16, 20, 1, &e), ERR_USAGE);
        disc_keep_release(&k);
    }
    assert_int_equal(disc_keep_parse(&k, "none", 2, 4, 4, 1, &e), 0);
    assert_int_equal(disc_keep_count(&k), 0);
    disc_keep_release(&k);
    assert_int_equal(disc_keep_parse(&k, "heads=none", 2, 4, 4, 1, &e), 0);
    assert_int_equal(disc_keep_count(&k), 0);
    disc_keep_release(&k);
    assert_int_equal(disc_keep_parse(&k, "steps=1,1-2,2", 2, 4, 4, 1, &e), 0);
    assert_int_equal(disc_keep_count(&k), 2 * 4 * 2);
    disc_keep_release(&k);
    struct disc_params p;
    base(&p, "micro");
    p.compare_dense = false;
    snprintf(p.keep_masks, sizeof p.keep_masks, "blocks=0;heads=1-2;steps=0,3");
    struct keepc t = {0};
    struct disc_capture *c = run(&p, keep_hook, &t);
    assert_int_equal(t.total, 4 * 2 * 4);
    assert_int_equal(t.kept, 4);
    assert_int_equal(t.wrong, 0);
    assert_int_equal(disc_capture_result(c)->masks_kept, 4);
    capture_disc_ops.close(c);
}

/* identical options give identical record payloads. */
struct packs {
    size_t n;
    uint8_t *buf[512];
    size_t len[512];
};

static int pack_hook(void *ctx, const Acceltrace__Record *rec)
{
    struct packs *t = ctx;
    if (t->n >= 512)
        return 0;
    size_t len = acceltrace__record__get_packed_size(rec);
    t->buf[t->n] = malloc(len ? len : 1);
    acceltrace__record__pack(rec, t->buf[t->n]);
    t->len[t->n++] = len;
    return 0;
}

static void test_determinism_and_self_compare(void **state)
{
    (void)state;
    struct disc_params p;
    base(&p, "micro");
    snprintf(p.keep_masks, sizeof p.keep_masks, "steps=1");
    struct packs *a = calloc(1, sizeof *a), *b = calloc(1, sizeof *b);
    struct disc_capture *c1 = run(&p, pack_hook, a), *c2 = run(&p, pack_hook, b);
    assert_true(a->n > 4 * 8);
    assert_int_equal(a->n, b->n);
    for (size_t i = 0; i < a->n; i++) {
        assert_int_equal(a->len[i], b->len[i]);
        assert_memory_equal(a->buf[i], b->buf[i], a->len[i]);
        free(a->buf[i]);
        free(b->buf[i]);
    }
    /* the self-comparison check */
    const struct disc_result *r = disc_capture_result(c1);
    assert_true(disc_cosine(r->latent, r->latent, r->n_latent) == 1.0);
    assert_true(isinf(disc_psnr(r->latent, r->latent, r->n_latent)));
    assert_true(disc_psnr(r->latent, r->latent, r->n_latent) > 0);
    assert_true(disc_rel_err(r->latent, r->latent, r->n_latent) == 0.0);
    /* and a real comparison: main run against dense */
    assert_true(r->q_main.valid && r->q_ctr.valid);
    assert_true(r->q_main.cosine > 0.9 && r->q_main.cosine < 1.0);
    capture_disc_ops.close(c1);
    capture_disc_ops.close(c2);
    free(a);
    free(b);
}

/* XL at 2048 px: the memory plan (docs/models.md#disc-memory-plan). Everything held
 * needs weights 4 B x 610,856,096 + block outputs L N d 4 + masks h L N ceil(N/64) 8 and
 * more; the default limit (16 GiB) spills the masks, 8 GiB still fits with them spilled,
 * 4 GiB spills the block outputs too and still does not fit. */
static const struct disc_mem_item *plan_item(const struct disc_mem_plan *pl, const char *name)
{
    for (int i = 0; i < pl->n_items; i++)
        if (!strcmp(pl->item[i].name, name))
            return &pl->item[i];
    fail_msg("no plan item '%s'", name);
    return NULL;
}

static void test_mem_limit(void **state)
{
    (void)state;
    struct disc_params p;
    base(&p, "pixart-sigma-xl");
    p.image_size = 2048;
    struct disc_capture *c;
    struct errmsg e = {0};
    const double gib = 1073741824.0;
    assert_int_equal(test_disc_open(&p, &c, &e), 0);
    const struct disc_mem_plan *pl = disc_capture_mem_plan(c);
    assert_true(plan_item(pl, "weights")->total_bytes == 4.0 * 610856096.0);
    assert_true(plan_item(pl, "ctr block outputs")->total_bytes == 28.0 * 16384 * 1152 * 4);
    const struct disc_mem_item *mk = plan_item(pl, "st masks");
    assert_true(mk->total_bytes == 16.0 * 28 * 16384 * 256 * 8);
    assert_true(pl->all_bytes > 19.0 * gib && pl->all_bytes < 21.0 * gib);
    assert_true(pl->spill_masks && !pl->spill_ctr && pl->fits);
    assert_int_equal(mk->place, DISC_MEM_SPILLED);
    assert_true(mk->held_bytes == 16.0 * 16384 * 256 * 8); /* one block's group */
    assert_true(pl->spill_bytes == mk->total_bytes);
    assert_true(disc_capture_mem_estimate(c) == pl->held_bytes);
    assert_true(pl->held_bytes < 8.0 * gib);
    capture_disc_ops.close(c);
    p.mem_limit_bytes = 4.0 * gib;
    assert_int_equal(test_disc_open(&p, &c, &e), 0);
    pl = disc_capture_mem_plan(c);
    assert_true(pl->spill_masks && pl->spill_ctr && !pl->fits);
    assert_true(pl->held_bytes > 4.0 * gib);
    capture_disc_ops.close(c);
    double v;
    assert_int_equal(disc_parse_mem("1GiB", &v), 0);
    assert_true(v == 1073741824.0);
    assert_int_equal(disc_parse_mem("2.5GB", &v), 0);
    assert_true(v == 2.5e9);
    assert_int_equal(disc_parse_mem("512", &v), 0);
    assert_true(v == 512.0);
    assert_int_equal(disc_parse_mem("1 GiB", &v), ERR_USAGE);
    assert_int_equal(disc_parse_mem("1TB", &v), ERR_USAGE);
    assert_int_equal(disc_parse_mem("1.5KiB", &v), 0);
    assert_true(v == 1536.0);
    /* docs/disc.md#model-configurations: a plain decimal number, so no hex, exponent, sign, white
     * space or bare point */
    static const char *const bad[] = {"0x10", "1e9", "\t1GiB", " 1GiB", "+1GB",  "-1",
                                      ".5GB", "5.",  "",       "GiB",   "1.2.3", "1GiB "};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_int_equal(disc_parse_mem(bad[i], &v), ERR_USAGE);
    struct dit_config cfg;
    assert_int_equal(dit_config_get(&cfg, "pixart-sigma-xl", 1024, &e), 0);
    assert_int_equal(dit_param_count(&cfg), 610856096ull);
    assert_int_equal(cfg.tokens, 4096);
    assert_int_equal(dit_config_get(&cfg, "pixart-sigma-xl", 768, &e), ERR_USAGE);
    assert_int_equal(dit_config_get(&cfg, "tiny", 100, &e), ERR_USAGE);
}

/* Every record of a run, packed, and the bytes of one checkpoint taken at unit `at`. */
struct ckrun {
    struct disc_capture *c;
    struct capture_sink *sink;
    uint64_t at, records_at;
    char *ck;
    size_t ck_len;
    size_t n;
    uint8_t *buf[1024];
    size_t len[1024];
};

static int ck_emit(void *ctx, const Acceltrace__Record *rec)
{
    struct ckrun *t = ctx;
    assert_true(t->n < 1024);
    size_t len = acceltrace__record__get_packed_size(rec);
    t->buf[t->n] = malloc(len ? len : 1);
    acceltrace__record__pack(rec, t->buf[t->n]);
    t->len[t->n++] = len;
    return 0;
}

/* The sink's checkpoint writer: the workload part at unit t->at, as the driver takes it. */
static int ck_save(void *ctx, uint64_t unit, struct errmsg *e)
{
    struct ckrun *t = ctx;
    if (unit != t->at)
        return 0;
    FILE *f = open_memstream(&t->ck, &t->ck_len);
    assert_non_null(f);
    int rc = capture_disc_ops.checkpoint_save(t->c, unit, f, e);
    assert_int_equal(fclose(f), 0);
    t->records_at = t->sink->records;
    return rc;
}

static void ck_free(struct ckrun *t)
{
    for (size_t i = 0; i < t->n; i++)
        free(t->buf[i]);
    free(t->ck);
    capture_disc_ops.close(t->c);
}

/* Runs p (resumed from the checkpoint bytes ck at unit `at` when ck is not NULL) into t,
 * taking a checkpoint at unit t->at. */
static void ck_run(const struct disc_params *p, struct ckrun *t, const char *ck, size_t ck_len,
                   uint64_t at)
{
    struct errmsg e = {0};
    struct test_emit_sink es;
    struct capture_sink sink;
    test_emit_sink_init(&sink, &es, ck_emit, t);
    sink.checkpoint = ck_save;
    sink.checkpoint_ctx = t;
    t->sink = &sink;
    assert_int_equal(test_disc_open(p, &t->c, &e), 0);
    assert_int_equal(capture_disc_ops.prepare(t->c, &e), 0);
    if (ck) {
        FILE *f = fmemopen((void *)ck, ck_len, "rb");
        int rc = capture_disc_ops.checkpoint_load(t->c, at, f, "mem.ckpt", &e);
        if (rc)
            fail_msg("load at %llu: %s", (unsigned long long)at, e.text);
        fclose(f);
        sink.resume_unit = at;
    }
    int rc = capture_disc_ops.run(t->c, &sink, &e);
    if (rc)
        fail_msg("run: %s", e.text);
    capture_progress_end(&sink);
    t->sink = NULL;
}

/* A checkpoint at each step boundary of the three runs (dense, CTR-only, main) resumes to
 * the uninterrupted run's records and result. */
static void test_checkpoint_resume(void **state)
{
    (void)state;
    struct disc_params p;
    base(&p, "micro");
    p.cfg_on = true;
    p.cfg_scale = 2.0;
    p.st_refresh = 3;
    snprintf(p.keep_masks, sizeof p.keep_masks, "blocks=1;heads=0;steps=all;batch=all");
    const uint64_t units = 3 * 4; /* three runs of 4 steps */
    for (uint64_t at = 1; at <= units; at++) {
        struct ckrun *a = calloc(1, sizeof *a), *b = calloc(1, sizeof *b);
        a->at = at;
        ck_run(&p, a, NULL, 0, 0);
        assert_non_null(a->ck);
        b->at = 0;
        ck_run(&p, b, a->ck, a->ck_len, at);
        /* the resumed run emits exactly the records after the checkpoint */
        assert_int_equal(b->n, a->n - a->records_at);
        for (size_t i = 0; i < b->n; i++) {
            assert_int_equal(b->len[i], a->len[a->records_at + i]);
            assert_memory_equal(b->buf[i], a->buf[a->records_at + i], b->len[i]);
        }
        const struct disc_result *ra = disc_capture_result(a->c), *rb = disc_capture_result(b->c);
        assert_memory_equal(ra->traj, rb->traj, (size_t)ra->K * ra->n_latent * 4);
        assert_memory_equal(ra->latent_dense, rb->latent_dense, ra->n_latent * 4);
        assert_true(ra->q_ctr.cosine == rb->q_ctr.cosine && ra->sparsity == rb->sparsity);
        assert_int_equal(ra->masks_kept, rb->masks_kept);
        ck_free(a);
        ck_free(b);
        free(a);
        free(b);
    }
}

/* Loads the bytes ck (at unit `at`) into a fresh prepared capture of p; returns the err. */
static int ck_load(const struct disc_params *p, const char *ck, size_t n, uint64_t at,
                   struct errmsg *e)
{
    struct disc_capture *c;
    assert_int_equal(test_disc_open(p, &c, e), 0);
    assert_int_equal(capture_disc_ops.prepare(c, e), 0);
    FILE *f = fmemopen((void *)ck, n, "rb");
    int rc = capture_disc_ops.checkpoint_load(c, at, f, "run.atr.ckpt", e);
    fclose(f);
    capture_disc_ops.close(c);
    return rc;
}

/* A checkpoint of another version, shape or unit, or a short or long one, is refused. */
static void test_checkpoint_refused(void **state)
{
    (void)state;
    struct disc_params p;
    base(&p, "micro");
    struct ckrun *a = calloc(1, sizeof *a);
    a->at = 6;
    ck_run(&p, a, NULL, 0, 0);
    struct errmsg e = {0};
    assert_int_equal(ck_load(&p, a->ck, a->ck_len, 6, &e), 0);
    char *bad = malloc(a->ck_len + 1);
    memcpy(bad, a->ck, a->ck_len);
    bad[0] ^= 1; /* the version word */
    assert_int_equal(ck_load(&p, bad, a->ck_len, 6, &e), ERR_DATA);
    assert_non_null(strstr(e.text, "'run.atr.ckpt'"));
    assert_non_null(strstr(e.text, "offset 0"));
    memcpy(bad, a->ck, a->ck_len);
    assert_int_equal(ck_load(&p, bad, a->ck_len, 7, &e), ERR_DATA); /* not the recorded unit */
    assert_non_null(strstr(e.text, "offset 44"));
    /* short or long in the ST masks at the end: named with the offset where the part ends */
    assert_int_equal(ck_load(&p, bad, a->ck_len - 1, 6, &e), ERR_DATA);
    assert_non_null(strstr(e.text, "truncated"));
    assert_non_null(strstr(e.text, "'run.atr.ckpt'"));
    assert_non_null(strstr(e.text, "offset"));
    bad[a->ck_len] = 0;
    assert_int_equal(ck_load(&p, bad, a->ck_len + 1, 6, &e), ERR_DATA);
    assert_non_null(strstr(e.text, "too long"));
    char where[64];
    snprintf(where, sizeof where, "at offset %zu", a->ck_len);
    assert_non_null(strstr(e.text, where));
    p.steps = 5; /* another shape */
    assert_int_equal(ck_load(&p, a->ck, a->ck_len, 6, &e), ERR_DATA);
    assert_non_null(strstr(e.text, "shape"));
    free(bad);
    ck_free(a);
    free(a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ctr_tau0_equals_off),
        cmocka_unit_test(test_weights_files),
        cmocka_unit_test(test_text_inputs),
        cmocka_unit_test(test_keep_masks),
        cmocka_unit_test(test_determinism_and_self_compare),
        cmocka_unit_test(test_mem_limit),
        cmocka_unit_test(test_checkpoint_resume),
        cmocka_unit_test(test_checkpoint_refused),
    };
    return cmocka_run_group_tests(tests, th_group_setup, th_group_teardown);
}
