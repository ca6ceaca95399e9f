/*
 * salca_json: params_json and model_json of a salca trace's header (see salca_capture_impl.h).
 */
#include <jansson.h>

#include "capture/salca/salca_capture_impl.h"
#include "common/mem.h"

/* The calibrated source's parameters and its per-head map (head_class: 'R' retrieval or
 * 'S' streaming per capture (l, h), row-major; head_pattern: the MInference budget code). */
json_t *salca_calib_json(const struct salca_capture_params *p, const struct salca_source *src,
                         uint32_t L, uint32_t H, uint32_t G)
{
    const struct salca_calib_params *c = &p->calib;
    json_t *o = json_object();
    json_object_set_new(o, "model", json_string("Llama-3.1-8B-Instruct"));
    json_object_set_new(o, "data", json_string(salca_calib_sources));
    json_object_set_new(o, "retrieval_frac", json_real(c->retrieval_frac));
    json_object_set_new(o, "logit_std", json_real(c->logit_std));
    json_object_set_new(o, "sink_tokens", json_integer(c->sink_tokens));
    json_object_set_new(o, "c_sink", json_real(c->c_sink));
    json_object_set_new(o, "local_tokens", json_integer(c->local_tokens));
    json_object_set_new(o, "c_local", json_real(c->c_local));
    json_object_set_new(o, "stream_window", json_integer(c->stream_window));
    json_object_set_new(o, "search_tokens", json_integer(c->search_tokens));
    json_object_set_new(o, "c_needle", json_real(c->c_needle));
    json_object_set_new(o, "query_jitter", json_real(c->query_jitter));
    /* the base keys' heavy structure (docs/salca.md#synthetic-source defaults) */
    struct salca_synth_params bk;
    salca_synth_params_default(&bk);
    json_object_set_new(o, "base_heavy_pairs", json_integer(bk.heavy_pairs));
    json_object_set_new(o, "base_gain_median", json_real(bk.gain_median));
    json_object_set_new(o, "base_gain_sigma", json_real(bk.gain_sigma));
    json_object_set_new(o, "base_heavy_mean", json_real(bk.heavy_mean));
    json_t *ml = json_array(), *mh = json_array(), *boost = json_object();
    for (uint32_t l = 0; l < L; l++)
        json_array_append_new(ml, json_integer(salca_calib_model_layer(l, L)));
    for (uint32_t h = 0; h < H; h++)
        json_array_append_new(mh, json_integer(salca_calib_model_q(h, H, G)));
    json_object_set_new(o, "model_layers", ml);
    json_object_set_new(o, "model_q_heads", mh);
    char *cls = mem_alloc((size_t)L * H + 1), *pat = mem_alloc((size_t)L * H + 1);
    for (uint32_t i = 0; cls && pat && i < L * H; i++) {
        cls[i] = salca_source_head_retrieval(src, i / H, i % H, &pat[i]) ? 'R' : 'S';
        char key[2] = {pat[i], 0};
        const struct salca_calib_pattern *pt = salca_calib_pattern(
            salca_calib_model_layer(i / H, L), salca_calib_model_q(i % H, H, G));
        json_object_set_new(boost, key, json_real(salca_calib_boost(pt, c)));
    }
    if (cls && pat) {
        cls[L * H] = pat[L * H] = 0;
        json_object_set_new(o, "head_class", json_string(cls));
        json_object_set_new(o, "head_pattern", json_string(pat));
    }
    json_object_set_new(o, "pattern_boost", boost);
    mem_free(cls);
    mem_free(pat);
    return o;
}

char *salca_params_json(const struct salca_capture_params *p, const struct salca_task *t,
                        uint32_t N, enum salca_pj_plan plan, json_t *cal)
{
    json_t *o = json_object();
    /* only the layer-major plan says so, the step-major traces keep their bytes: its
     * .partial (and a trace recovered from it) holds the records layer first; the trace it
     * ends as is in step order and names the plan only (docs/trace-format.md#reordered-traces) */
    if (plan == SALCA_PJ_LAYER_MAJOR_PARTIAL)
        json_object_set_new(o, "record_order", json_string("layer-major"));
    if (plan != SALCA_PJ_STEP_MAJOR)
        json_object_set_new(o, "memory_plan", json_string("layer-major"));
    const struct salca_synth_params *s = &p->synth;
    json_object_set_new(o, "source",
                        json_string(p->model        ? "model"
                                    : p->calibrated ? "calibrated"
                                                    : "synthetic"));
    json_object_set_new(o, "checkpoint", json_string(p->checkpoint ? p->checkpoint : ""));
    json_object_set_new(o, "seed", json_integer((json_int_t)p->seed));
    json_object_set_new(o, "task", json_string(t->info->name));
    json_object_set_new(o, "sample", json_integer(p->sample));
    json_object_set_new(o, "length", json_integer(p->length));
    json_object_set_new(o, "max_ctx", json_integer(p->max_len));
    json_object_set_new(o, "max_new", json_integer(p->max_new));
    json_object_set_new(o, "steps", json_integer(N));
    json_object_set_new(o, "retention", json_string(p->rho_text));
    json_object_set_new(o, "k_min", json_integer(p->sel.k_min));
    json_object_set_new(o, "k_rule", json_string(k_rule_name(p->sel.k_mode)));
    json_object_set_new(o, "p_mass", json_real(p->sel.p_mass));
    json_object_set_new(o, "pool", json_integer(p->sel.pool));
    json_object_set_new(o, "threshold_cmp", json_string(p->sel.cmp == SALCA_CMP_GT ? "gt" : "ge"));
    json_object_set_new(o, "attn_precision", json_string(p->sel.attn_fp32 ? "fp32" : "int8"));
    json_object_set_new(o, "methods", json_integer(p->methods));
    json_object_set_new(o, "no_hist", json_boolean(p->no_hist));
    json_object_set_new(o, "top1", json_boolean(p->top1));
    json_object_set_new(o, "quest_page", json_integer(p->quest_page));
    json_object_set_new(o, "quest_dense_layers", json_integer(p->quest_dense_layers));
    json_object_set_new(o, "quest_min_pages", json_integer(p->sel.quest_min_pages));
    json_object_set_new(o, "tiny_outlier_pairs", json_integer(p->tiny_outlier_pairs));
    json_object_set_new(o, "tiny_outlier_gain", json_real(p->tiny_outlier_gain));
    json_t *sy = json_object();
    json_object_set_new(sy, "heavy_pairs", json_integer(s->heavy_pairs));
    json_object_set_new(sy, "heavy_band_lo", json_integer(s->heavy_band_lo));
    json_object_set_new(sy, "gain_median", json_real(s->gain_median));
    json_object_set_new(sy, "gain_sigma", json_real(s->gain_sigma));
    json_object_set_new(sy, "heavy_mean", json_real(s->heavy_mean));
    json_object_set_new(sy, "head_spread", json_real(s->head_spread));
    json_object_set_new(sy, "query_jitter", json_real(s->query_jitter));
    json_object_set_new(sy, "logit_std", json_real(s->logit_std));
    json_object_set_new(sy, "sink_tokens", json_integer(s->sink_tokens));
    json_object_set_new(sy, "c_sink", json_real(s->c_sink));
    json_object_set_new(sy, "c_loc", json_real(s->c_loc));
    json_object_set_new(sy, "tau_loc", json_real(s->tau_loc));
    json_object_set_new(sy, "c_needle", json_real(s->c_needle));
    json_object_set_new(sy, "early_layer_scale", json_real(s->early_layer_scale));
    json_object_set_new(sy, "early_layers", json_integer(s->early_layers));
    json_object_set_new(o, "synthetic", sy);
    if (cal)
        json_object_set_new(o, "calibrated", cal);
    char *txt = json_dumps(o, JSON_SORT_KEYS | JSON_COMPACT);
    json_decref(o);
    return txt;
}

char *salca_model_json(const struct salca_capture_params *p, uint32_t L, uint32_t H, uint32_t G,
                       uint32_t d, const struct nn_llama *m)
{
    json_t *o = json_object();
    json_object_set_new(o, "L", json_integer(L));
    json_object_set_new(o, "H", json_integer(H));
    json_object_set_new(o, "G", json_integer(G));
    json_object_set_new(o, "d", json_integer(d));
    if (m) {
        json_object_set_new(o, "D", json_integer(m->cfg.D));
        json_object_set_new(o, "F", json_integer(m->cfg.F));
        json_object_set_new(o, "V", json_integer(m->cfg.V));
        json_object_set_new(o, "rope_theta", json_real(m->cfg.rope_theta));
        json_object_set_new(o, "rope_factor", json_real(m->cfg.rope_factor));
        json_object_set_new(o, "name", json_string(p->checkpoint ? p->checkpoint : "tiny"));
    } else {
        json_object_set_new(o, "name", json_string("synthetic"));
    }
    char *txt = json_dumps(o, JSON_SORT_KEYS | JSON_COMPACT);
    json_decref(o);
    return txt;
}
