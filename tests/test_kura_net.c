/*
 * Tests of capture/kura/kura_net (score network kura-score-v1, docs/kura.md#score-network):
 * the score network check. Zero weights = score none; out_conv.bias = (kappa, 0) gives -kappa sin
 * theta; the one-pixel path gives sin theta(r-1, c) cos theta(r, c); one random block matches a
 * float64 reference within 1e-4 relative; bad files (mis-shaped, missing, extra, non-F32
 * tensor, wrong steps) are data errors naming the tensor, and the CLI exits 3.
 * Weight files are written here byte by byte (safetensors with __metadata__).
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "capture/kura/kura_capture.h"
#include "capture/kura/kura_net.h"
#include "common/io.h"
#include "common/mem.h"
#include "common/rng.h"
#include "common/sha256.h"
#include "tests/helpers/capture_helpers.h"
#include "tests/helpers/test_helpers.h"

#define MAXT 64

struct wt {
    char name[48];
    int ndim;
    int64_t shape[4];
    float *data;
    const char *dtype; /* "F32" default; "F16" to test rejection (data then half size) */
};

struct model {
    int c, l, g, e, t;
    int n;
    struct wt w[MAXT];
};

static size_t numel(const struct wt *t)
{
    size_t n = 1;
    for (int i = 0; i < t->ndim; i++)
        n *= (size_t)t->shape[i];
    return n;
}

static struct wt *add(struct model *m, const char *name, int ndim, int64_t a, int64_t b, int64_t c,
                      int64_t d)
{
    struct wt *t = &m->w[m->n++];
    snprintf(t->name, sizeof t->name, "%s", name);
    t->ndim = ndim;
    int64_t s[4] = {a, b, c, d};
    memcpy(t->shape, s, sizeof s);
    t->data = mem_calloc(numel(t), sizeof(float));
    t->dtype = "F32";
    return t;
}

static struct wt *find(struct model *m, const char *name)
{
    for (int i = 0; i < m->n; i++)
        if (!strcmp(m->w[i].name, name))
            return &m->w[i];
    return NULL;
}

/* A zero model with the full tensor set. */
static void model_init(struct model *m, int c, int l, int g, int e, int t)
{
    memset(m, 0, sizeof *m);
    m->c = c, m->l = l, m->g = g, m->e = e, m->t = t;
    add(m, "in_conv.weight", 4, c, 2, 3, 3);
    add(m, "in_conv.bias", 1, c, 0, 0, 0);
    char nm[48];
    for (int k = 0; k < l; k++) {
        snprintf(nm, sizeof nm, "blocks.%d.norm.weight", k), add(m, nm, 1, c, 0, 0, 0);
        snprintf(nm, sizeof nm, "blocks.%d.norm.bias", k), add(m, nm, 1, c, 0, 0, 0);
        snprintf(nm, sizeof nm, "blocks.%d.emb.weight", k), add(m, nm, 2, c, e, 0, 0);
        snprintf(nm, sizeof nm, "blocks.%d.emb.bias", k), add(m, nm, 1, c, 0, 0, 0);
        snprintf(nm, sizeof nm, "blocks.%d.conv.weight", k), add(m, nm, 4, c, c, 3, 3);
        snprintf(nm, sizeof nm, "blocks.%d.conv.bias", k), add(m, nm, 1, c, 0, 0, 0);
    }
    add(m, "out_conv.weight", 4, 2, c, 3, 3);
    add(m, "out_conv.bias", 1, 2, 0, 0, 0);
}

static void model_free(struct model *m)
{
    for (int i = 0; i < m->n; i++)
        mem_free(m->w[i].data);
}

/* Writes m as safetensors with __metadata__ (header padded to 8 bytes). */
static void model_write(const struct model *m, const char *path)
{
    char *hdr = mem_alloc(65536);
    size_t off = 0, len = 0;
    len += (size_t)snprintf(hdr + len, 65536 - len,
                            "{\"__metadata__\":{\"arch\":\"kura-score-v1\",\"channels\":\"%d\","
                            "\"blocks\":\"%d\",\"groups\":\"%d\",\"emb_dim\":\"%d\","
                            "\"steps\":\"%d\"}",
                            m->c, m->l, m->g, m->e, m->t);
    for (int i = 0; i < m->n; i++) {
        const struct wt *t = &m->w[i];
        size_t bytes = numel(t) * (strcmp(t->dtype, "F16") ? 4 : 2);
        len += (size_t)snprintf(hdr + len, 65536 - len, ",\"%s\":{\"dtype\":\"%s\",\"shape\":[",
                                t->name, t->dtype);
        for (int k = 0; k < t->ndim; k++)
            len += (size_t)snprintf(hdr + len, 65536 - len, "%s%lld", k ? "," : "",
                                    (long long)t->shape[k]);
        len += (size_t)snprintf(hdr + len, 65536 - len, "],\"data_offsets\":[%zu,%zu]}", off,
                                off + bytes);
        off += bytes;
    }
    hdr[len++] = '}';
    while (len % 8)
        hdr[len++] = ' ';
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    uint8_t l8[8];
    for (int k = 0; k < 8; k++)
        l8[k] = (uint8_t)((uint64_t)len >> (8 * k));
    fwrite(l8, 1, 8, f);
    fwrite(hdr, 1, len, f);
    for (int i = 0; i < m->n; i++) {
        const struct wt *t = &m->w[i];
        size_t bytes = numel(t) * (strcmp(t->dtype, "F16") ? 4 : 2);
        fwrite(t->data, 1, bytes, f); /* little-endian host */
    }
    fclose(f);
    mem_free(hdr);
}

static double *rand_theta(struct rng *r, size_t n)
{
    double *t = mem_alloc(n * 8);
    for (size_t i = 0; i < n; i++)
        t[i] = -M_PI + 2 * M_PI * rng_uniform(r);
    return t;
}

/* Hashes each packed record. */
static int emit(void *ctx, const Acceltrace__Record *rec)
{
    size_t len = acceltrace__record__get_packed_size(rec);
    uint8_t *buf = mem_alloc(len + 1);
    acceltrace__record__pack(rec, buf);
    sha256_update(ctx, buf, len);
    mem_free(buf);
    return 0;
}

/* zero weights give the same records as --score none. */
static void test_zero_equals_none(void **state)
{
    (void)state;
    struct model m;
    model_init(&m, 8, 2, 4, 8, 20);
    char path[256];
    th_path(path, sizeof path, "zero.safetensors");
    model_write(&m, path);
    model_free(&m);
    struct kura_params p;
    kura_params_default(&p);
    p.quiet = true;
    p.reproducible = true;
    p.h = 20;
    p.w = 17;
    p.t = 20;
    uint8_t d[2][32];
    for (int k = 0; k < 2; k++) {
        p.score = k ? KURA_SCORE_NONE : KURA_SCORE_NET;
        p.weights_path = k ? NULL : path;
        struct sha256 h;
        sha256_init(&h);
        struct errmsg e = {0};
        assert_int_equal(test_capture_kura(&p, emit, &h, NULL, &e), 0);
        sha256_final(&h, d[k]);
    }
    assert_memory_equal(d[0], d[1], 32);
    unlink(path);
}

/* out_conv.bias = (kappa, 0) alone gives s = -kappa sin theta within 1e-6. */
static void test_bias_only(void **state)
{
    (void)state;
    struct model m;
    model_init(&m, 4, 1, 2, 4, 100);
    find(&m, "out_conv.bias")->data[0] = 1.2f;
    char path[256];
    th_path(path, sizeof path, "bias.safetensors");
    model_write(&m, path);
    model_free(&m);
    struct kura_net *net;
    struct errmsg e = {0};
    assert_int_equal(kura_net_load(&net, path, 100, &e), 0);
    struct rng r;
    rng_stream(&r, 3, "net", 0, 0);
    size_t h = 9, w = 11, n = h * w;
    double *t = rand_theta(&r, n), *s = mem_alloc(n * 8);
    assert_int_equal(kura_net_score(net, t, h, w, 57, s), 0);
    for (size_t i = 0; i < n; i++)
        assert_true(fabs(s[i] - (-(double)1.2f * sin(t[i]))) < 1e-6);
    kura_net_free(net);
    mem_free(t);
    mem_free(s);
    unlink(path);
}

/* in_conv.weight[0,1,0,1] = out_conv.weight[1,0,1,1] = 1 gives
 * s(r, c) = sin theta(r-1, c) cos theta(r, c) (circular padding). */
static void test_shift_path(void **state)
{
    (void)state;
    struct model m;
    model_init(&m, 4, 1, 2, 4, 100);
    find(&m, "in_conv.weight")->data[((0 * 2 + 1) * 3 + 0) * 3 + 1] = 1.0f;
    find(&m, "out_conv.weight")->data[((1 * 4 + 0) * 3 + 1) * 3 + 1] = 1.0f;
    char path[256];
    th_path(path, sizeof path, "shift.safetensors");
    model_write(&m, path);
    model_free(&m);
    struct kura_net *net;
    struct errmsg e = {0};
    assert_int_equal(kura_net_load(&net, path, 100, &e), 0);
    struct rng r;
    rng_stream(&r, 4, "net", 0, 0);
    size_t h = 7, w = 6, n = h * w;
    double *t = rand_theta(&r, n), *s = mem_alloc(n * 8);
    assert_int_equal(kura_net_score(net, t, h, w, 3, s), 0);
    for (size_t rr = 0; rr < h; rr++)
        for (size_t c = 0; c < w; c++) {
            double ref = sin(t[((rr + h - 1) % h) * w + c]) * cos(t[rr * w + c]);
            assert_true(fabs(s[rr * w + c] - ref) < 1e-6);
        }
    kura_net_free(net);
    mem_free(t);
    mem_free(s);
    unlink(path);
}

/* float64 reference of one conv (circular) */
static void ref_conv(const double *in, int cin, size_t h, size_t w, const float *wt, const float *b,
                     int cout, double *out)
{
    for (int o = 0; o < cout; o++)
        for (size_t r = 0; r < h; r++)
            for (size_t c = 0; c < w; c++) {
                double acc = b[o];
                for (int i = 0; i < cin; i++)
                    for (int ky = 0; ky < 3; ky++)
                        for (int kx = 0; kx < 3; kx++)
                            acc += (double)wt[((o * cin + i) * 3 + ky) * 3 + kx] *
                                   in[(size_t)i * h * w + ((r + h + ky - 1) % h) * w +
                                      (c + w + kx - 1) % w];
                out[(size_t)o * h * w + r * w + c] = acc;
            }
}

/* one random block against a float64 implementation of section 3.1, 1e-4 relative. */
static void test_random_block(void **state)
{
    (void)state;
    const int C = 8, L = 1, G = 4, E = 8, step = 41;
    struct model m;
    model_init(&m, C, L, G, E, 100);
    struct rng r;
    uint64_t seed = 77;
    printf("seed %llu\n", (unsigned long long)seed);
    rng_stream(&r, seed, "net-weights", 0, 0);
    for (int i = 0; i < m.n; i++)
        for (size_t k = 0; k < numel(&m.w[i]); k++)
            m.w[i].data[k] = (float)(0.5 * rng_normal(&r));
    char path[256];
    th_path(path, sizeof path, "rand.safetensors");
    model_write(&m, path);
    struct kura_net *net;
    struct errmsg e = {0};
    assert_int_equal(kura_net_load(&net, path, 100, &e), 0);
    size_t h = 10, w = 9, n = h * w;
    double *t = rand_theta(&r, n), *s = mem_alloc(n * 8);
    assert_int_equal(kura_net_score(net, t, h, w, step, s), 0);
    /* reference */
    double *x = mem_alloc(2 * n * 8), *hb = mem_alloc(C * n * 8), *tb = mem_alloc(C * n * 8);
    double *ub = mem_alloc(C * n * 8), emb[8], embv[8];
    for (size_t p = 0; p < n; p++)
        x[p] = cos(t[p]), x[n + p] = sin(t[p]);
    ref_conv(x, 2, h, w, find(&m, "in_conv.weight")->data, find(&m, "in_conv.bias")->data, C, hb);
    for (int k = 0; k < E / 2; k++) {
        double om = pow(10000.0, -2.0 * k / E);
        emb[k] = sin(step * om);
        emb[k + E / 2] = cos(step * om);
    }
    for (int k = 0; k < E; k++)
        emb[k] = emb[k] / (1 + exp(-emb[k]));
    const float *nw = find(&m, "blocks.0.norm.weight")->data,
                *nb = find(&m, "blocks.0.norm.bias")->data;
    const float *ew = find(&m, "blocks.0.emb.weight")->data,
                *eb = find(&m, "blocks.0.emb.bias")->data;
    for (int c = 0; c < C; c++) {
        embv[c] = eb[c];
        for (int k = 0; k < E; k++)
            embv[c] += (double)ew[c * E + k] * emb[k];
    }
    int cg = C / G;
    for (int g = 0; g < G; g++) {
        double sum = 0, sq = 0, cnt = (double)cg * n;
        for (size_t i = 0; i < (size_t)cg * n; i++)
            sum += hb[(size_t)g * cg * n + i];
        double mean = sum / cnt;
        for (size_t i = 0; i < (size_t)cg * n; i++) {
            double d = hb[(size_t)g * cg * n + i] - mean;
            sq += d * d;
        }
        double inv = 1 / sqrt(sq / cnt + 1e-5);
        for (int cc = 0; cc < cg; cc++) {
            int c = g * cg + cc;
            for (size_t p = 0; p < n; p++) {
                double v = (hb[(size_t)c * n + p] - mean) * inv * nw[c] + nb[c] + embv[c];
                tb[(size_t)c * n + p] = 0.5 * v * (1 + erf(v / sqrt(2.0)));
            }
        }
    }
    ref_conv(tb, C, h, w, find(&m, "blocks.0.conv.weight")->data,
             find(&m, "blocks.0.conv.bias")->data, C, ub);
    for (size_t i = 0; i < (size_t)C * n; i++)
        hb[i] += ub[i];
    ref_conv(hb, C, h, w, find(&m, "out_conv.weight")->data, find(&m, "out_conv.bias")->data, 2,
             ub);
    double maxref = 0, maxdiff = 0;
    for (size_t p = 0; p < n; p++) {
        double ref = -ub[p] * sin(t[p]) + ub[n + p] * cos(t[p]);
        maxref = fmax(maxref, fabs(ref));
        maxdiff = fmax(maxdiff, fabs(ref - s[p]));
    }
    printf("random block: max |s - ref| = %.3g, max |ref| = %.3g\n", maxdiff, maxref);
    assert_true(maxdiff <= 1e-4 * maxref);
    kura_net_free(net);
    model_free(&m);
    mem_free(t);
    mem_free(s);
    mem_free(x);
    mem_free(hb);
    mem_free(tb);
    mem_free(ub);
    unlink(path);
}

static void expect_bad(struct model *m, const char *needle, int t)
{
    char path[256];
    th_path(path, sizeof path, "bad.safetensors");
    model_write(m, path);
    struct kura_net *net = NULL;
    struct errmsg e = {0};
    assert_int_equal(kura_net_load(&net, path, t, &e), ERR_DATA);
    assert_null(net);
    printf("rejected: %s\n", errmsg_text(&e));
    assert_non_null(strstr(errmsg_text(&e), needle));
    unlink(path);
}

/* bad weights are data errors naming the tensor; the CLI exits 3. */
static void test_bad_files(void **state)
{
    (void)state;
    struct model m;
    model_init(&m, 4, 1, 2, 4, 100);
    struct wt *t = find(&m, "blocks.0.conv.weight");
    t->shape[1] = 3; /* mis-shaped */
    mem_free(t->data);
    t->data = mem_calloc(numel(t), 4);
    expect_bad(&m, "blocks.0.conv.weight", 100);
    model_free(&m);

    model_init(&m, 4, 1, 2, 4, 100);
    find(&m, "in_conv.bias")->dtype = "F16";
    expect_bad(&m, "in_conv.bias", 100);
    model_free(&m);

    model_init(&m, 4, 1, 2, 4, 100);
    add(&m, "blocks.1.norm.weight", 1, 4, 0, 0, 0); /* extra */
    expect_bad(&m, "blocks.1.norm.weight", 100);
    model_free(&m);

    model_init(&m, 4, 1, 2, 4, 100);
    m.n--; /* drop out_conv.bias: missing */
    expect_bad(&m, "out_conv.bias", 100);
    m.n++;
    model_free(&m);

    model_init(&m, 4, 1, 2, 4, 50);
    expect_bad(&m, "steps", 100); /* T_train != T */
    model_free(&m);

    /* CLI: a mis-shaped tensor exits 3 and names it */
    const char *a = getenv("ACCELTRACE");
    if (!a) {
        printf("ACCELTRACE not set: CLI part skipped\n");
        return;
    }
    model_init(&m, 4, 1, 2, 4, 100);
    t = find(&m, "out_conv.weight");
    t->shape[0] = 3;
    mem_free(t->data);
    t->data = mem_calloc(numel(t), 4);
    char path[256], errp[256], cmd[1024];
    th_path(path, sizeof path, "cli.safetensors");
    th_path(errp, sizeof errp, "cli.err");
    model_write(&m, path);
    model_free(&m);
    snprintf(cmd, sizeof cmd,
             "'%s' capture kura -q --size 8x8 --score net --weights '%s' -o '%s/x.atr' 2> '%s'", a,
             path, th_tmpdir(), errp);
    int st = system(cmd);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 3);
    FILE *f = fopen(errp, "r");
    assert_non_null(f);
    char msg[1024] = "";
    size_t got = fread(msg, 1, sizeof msg - 1, f);
    msg[got] = 0;
    fclose(f);
    printf("cli: %s", msg);
    assert_non_null(strstr(msg, "out_conv.weight"));
    unlink(path);
    unlink(errp);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_zero_equals_none), cmocka_unit_test(test_bias_only),
        cmocka_unit_test(test_shift_path),       cmocka_unit_test(test_random_block),
        cmocka_unit_test(test_bad_files),
    };
    return cmocka_run_group_tests(tests, th_group_setup, th_group_teardown);
}
