/*
 * kura_header: the workload part of a kura trace's header (see kura_capture_impl.h).
 */
#include "capture/kura/kura_capture_impl.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capture/kura/kura_data.h"
#include "capture/kura/kura_net.h"
#include "capture/kura/kura_sde.h"
#include "common/mem.h"
#include "formats/kura_fixed.h"

const char *kura_score_name(enum kura_score s)
{
    static const char *n[] = {"oracle", "prior", "net", "none"};
    return (unsigned)s < 4 ? n[s] : "unknown";
}

void kura_header_store_release(struct kura_header_store *s)
{
    free(s->params_json); /* jansson allocations */
    free(s->model_json);
    mem_free(s->gen_params);
    free(s->weights_meta);
    mem_free(s->tile_shape_buf);
    mem_free(s->tile_shapes);
    memset(s, 0, sizeof *s);
}

int kura_header_build(const struct kura_params *p, Acceltrace__TraceHeader *hdr,
                      Acceltrace__KuraHeader *kh, struct kura_header_store *st, struct errmsg *e)
{
    memset(st, 0, sizeof *st);
    struct kura_schedule sch;
    int rc = kura_schedule_init(&sch, p->preset, p->t, p->c0, p->c_end, p->beta0, p->beta_end, e);
    if (rc)
        return rc;
    double kappa = sch.kappa;
    kura_schedule_release(&sch);
    json_t *pj = NULL, *mj = NULL;
    rc = ERR_NOMEM;
    st->gen_params = mem_alloc(1024);
    st->tile_shape_buf = mem_calloc((size_t)KURA_MAX_TILE_SHAPES, 16);
    st->tile_shapes = mem_calloc((size_t)KURA_MAX_TILE_SHAPES + 1, sizeof(char *));
    if (!st->gen_params || !st->tile_shape_buf || !st->tile_shapes)
        goto fail;
    kura_data_describe(&p->data, p->h, p->w, st->gen_params, 1024);
    for (int i = 0; i < p->n_tile_shapes; i++) {
        st->tile_shapes[i] = st->tile_shape_buf + 16 * i;
        snprintf(st->tile_shapes[i], 16, "%ux%u", p->tile_nh[i], p->tile_nw[i]);
    }
    if (p->score == KURA_SCORE_NET) {
        struct kura_net *net = NULL;
        rc = kura_net_load(&net, p->weights_path, p->t, e);
        if (rc)
            goto fail;
        memcpy(st->weights_sha, kura_net_sha256(net), 65);
        st->weights_meta = strdup(kura_net_metadata_json(net));
        kura_net_free(net);
        const char *base = strrchr(p->weights_path, '/');
        snprintf(st->weights_name, sizeof st->weights_name, "%s",
                 base ? base + 1 : p->weights_path);
        rc = ERR_NOMEM;
        if (!st->weights_meta)
            goto fail;
    }
    /* Only parameters that change the trace's records enter params_json (see header). */
    pj = json_object();
    json_t *shapes = json_array();
    if (!pj || !shapes)
        goto fail;
    for (int i = 0; i < p->n_tile_shapes; i++)
        json_array_append_new(shapes, json_string(st->tile_shapes[i]));
    json_object_set_new(pj, "h", json_integer((json_int_t)p->h));
    json_object_set_new(pj, "w", json_integer((json_int_t)p->w));
    json_object_set_new(pj, "t", json_integer(p->t));
    json_object_set_new(pj, "preset", json_string(p->preset));
    json_object_set_new(pj, "c0", json_real(p->c0));
    json_object_set_new(pj, "c_end", json_real(p->c_end));
    json_object_set_new(pj, "beta0", json_real(p->beta0));
    json_object_set_new(pj, "beta_end", json_real(p->beta_end));
    json_object_set_new(pj, "data", json_string(kura_data_name(p->data.kind)));
    json_object_set_new(pj, "data_params", json_string(st->gen_params));
    json_object_set_new(pj, "seed", json_integer((json_int_t)p->seed));
    json_object_set_new(pj, "score", json_string(kura_score_name(p->score)));
    json_object_set_new(pj, "weights_sha256", json_string(st->weights_sha));
    json_object_set_new(pj, "drift", json_string(p->drift == KURA_DRIFT_FIXED ? "fixed" : "float"));
    json_object_set_new(pj, "check_drift", json_boolean(p->check_drift));
    json_object_set_new(pj, "start",
                        json_string(p->start == KURA_START_FORWARD ? "forward" : "vonmises"));
    json_object_set_new(pj, "tile_streams", shapes);
    st->params_json = json_dumps(pj, JSON_SORT_KEYS | JSON_COMPACT);
    mj = json_object();
    if (!mj || !st->params_json)
        goto fail;
    json_object_set_new(mj, "workload", json_string("kura"));
    json_object_set_new(mj, "window_m", json_integer(KURA_WINDOW_M));
    json_object_set_new(mj, "boundary", json_string("periodic"));
    json_object_set_new(mj, "kref_gain", json_real(KURA_KREF_GAIN));
    json_object_set_new(mj, "psi_ref", json_real(KURA_PSI_REF));
    json_object_set_new(mj, "r_end", json_real(KURA_R_END));
    json_object_set_new(mj, "x_to_theta", json_real(KURA_X_TO_THETA));
    json_object_set_new(mj, "kappa", json_real(kappa));
    json_object_set_new(mj, "phase_format", json_string("q1.15"));
    if (st->weights_meta) {
        json_t *meta = json_loads(st->weights_meta, 0, NULL);
        if (meta)
            json_object_set_new(mj, "weights_metadata", meta);
    }
    st->model_json = json_dumps(mj, JSON_SORT_KEYS | JSON_COMPACT);
    if (!st->model_json)
        goto fail;
    hdr->params_json = st->params_json;
    hdr->model_json = st->model_json;
    /* provenance: the data are generated; the score is analytic or a net from a file */
    hdr->source = "synthetic";
    snprintf(st->src_detail, sizeof st->src_detail, "generator %s (%s), seed %llu; score %s%s%s%s",
             kura_data_name(p->data.kind), st->gen_params, (unsigned long long)p->seed,
             kura_score_name(p->score), p->score == KURA_SCORE_NET ? " " : "",
             p->score == KURA_SCORE_NET ? st->weights_name : "",
             p->score == KURA_SCORE_NET ? " sha256 " : "");
    if (p->score == KURA_SCORE_NET) {
        size_t o = strlen(st->src_detail);
        snprintf(st->src_detail + o, sizeof st->src_detail - o, "%s", st->weights_sha);
    }
    hdr->source_detail = st->src_detail;
    hdr->seed = p->seed;
    hdr->kura = kh;
    kh->h = (uint32_t)p->h;
    kh->w = (uint32_t)p->w;
    kh->t = (uint32_t)p->t;
    kh->preset = (char *)p->preset;
    kh->c0 = p->c0;
    kh->c_end = p->c_end;
    kh->beta0 = p->beta0;
    kh->beta_end = p->beta_end;
    kh->kref_gain = KURA_KREF_GAIN;
    kh->psi_ref = KURA_PSI_REF;
    kh->r_end = KURA_R_END;
    kh->kappa = kappa;
    kh->window_m = KURA_WINDOW_M;
    kh->boundary = "periodic";
    kh->x_to_theta = KURA_X_TO_THETA;
    kh->generator = (char *)kura_data_name(p->data.kind);
    kh->generator_params = st->gen_params;
    kh->generator_seed = p->seed;
    kh->score = (char *)kura_score_name(p->score);
    kh->weights_name = st->weights_name;
    kh->weights_sha256 = st->weights_sha;
    kh->weights_metadata = st->weights_meta ? st->weights_meta : "";
    kh->drift = p->drift == KURA_DRIFT_FIXED ? "fixed" : "float";
    kh->check_drift = p->check_drift;
    kh->start = p->start == KURA_START_FORWARD ? "forward" : "vonmises";
    kh->n_tile_shapes = (size_t)p->n_tile_shapes;
    kh->tile_shapes = st->tile_shapes;
    json_decref(pj);
    json_decref(mj);
    return 0;
fail:
    json_decref(pj);
    json_decref(mj);
    kura_header_store_release(st);
    if (rc == ERR_NOMEM)
        errmsg_set(e, rc, "out of memory building the trace header");
    return rc;
}
