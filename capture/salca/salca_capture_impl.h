/*
 * salca_capture_impl: the state of a `capture salca` instance shared by the files of the
 * capture (salca_capture.c: the ops and the decode loop; salca_json.c: params_json and
 * model_json; salca_report.c: the aggregates, CSV, table and Summary record;
 * salca_ckpt.c: checkpoints and resume). Not a public interface: only these files include it.
 */
#ifndef ACCELTRACE_SALCA_CAPTURE_IMPL_H
#define ACCELTRACE_SALCA_CAPTURE_IMPL_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "capture/capture.h"
#include "capture/nn/nn_llama.h"
#include "capture/salca/salca_capture.h"
#include "capture/salca/salca_kv.h"
#include "capture/salca/salca_source.h"
#include "capture/salca/salca_task.h"
#include "common/buf.h"
#include "common/threads.h"
#include "traces/trace_salca.h"

#define ALL_METHODS                                                                                \
    ((1u << SALCA_M_SALCA) | (1u << SALCA_M_STD_TOPK) | (1u << SALCA_M_PL_TOPK) |                  \
     (1u << SALCA_M_FULL_FEAT) | (1u << SALCA_M_QUEST))
#define MAX_NEEDLES 8

/* Slot s runs in this capture: a selected built-in method or a configured variant. */
static inline bool slot_on(const struct salca_capture_params *p, int s)
{
    if (s < SALCA_M_DENSE)
        return (p->methods >> s) & 1u;
    return s >= SALCA_M_COUNT && (uint32_t)(s - SALCA_M_COUNT) < p->n_variants;
}

/* Method id of slot s in the trace: the enum for built-ins, 16 + k for variant k. */
static inline uint32_t slot_id(int s)
{
    return s < SALCA_M_COUNT ? (uint32_t)s : 16u + (uint32_t)(s - SALCA_M_COUNT);
}

static inline void slot_name(int s, char *out, size_t n)
{
    if (s < SALCA_M_COUNT)
        snprintf(out, n, "%s", salca_method_name(s));
    else
        snprintf(out, n, "abl%u", slot_id(s));
}

/* Name of a K rule in params_json and the header: the trace's own (traces/trace_salca). */
static inline const char *k_rule_name(enum salca_k_mode m)
{
    return trace_salca_k_mode_name((enum trace_salca_k_mode)m);
}

/* Result of one (job, method) kept until the step's records are written. */
struct job_res {
    uint32_t K, T, count, runs;
    double recall, cosine, overlap;
    bool has_hist;
    uint32_t hist[256];
    struct buf sel;
    float cov[MAX_NEEDLES]; /* share of each needle span's dense mass selected */
};

struct cap {
    const struct salca_capture_params *p;
    uint32_t L, H, G, d, r, n0, N, cap_tokens;
    struct salca_kv *kv;      /* (L*G) dense-run stores */
    struct salca_scratch *sc; /* (threads) */
    struct thread_pool *pool;
    float *q;           /* (L*H*d) queries of the step */
    struct job_res *jr; /* (L*H*SALCA_NSLOT) */
    uint8_t *vheavy;    /* (variants, L*G, 256) heavy channels per variant */
    struct salca_variant var[SALCA_MAX_VARIANTS];
    const struct salca_span *needles[MAX_NEEDLES];
    uint32_t n_needles;
    int enc_err;
    /* the memory plan (docs/models.md#salca-memory-plan): the stores, queries and job
     * results hold layers [l_lo, l_lo + n_l); all L (resident, step-major records) or one
     * at a time (layer_major: records per layer, then per step) */
    bool layer_major;
    uint32_t l_lo, n_l;
};

/* Layer of job j of the aggregates: step-major (t, l, h) or layer-major (l, t, h). */
static inline uint32_t salca_job_layer(const struct cap *c, uint64_t j)
{
    return c->layer_major ? (uint32_t)(j / ((uint64_t)c->N * c->H)) : (uint32_t)((j / c->H) % c->L);
}

/* Substituted run of one method (docs/salca.md#metrics, top-1 agreement): per-method stores. */
struct subst {
    struct cap *c;
    int method;          /* slot */
    struct salca_kv *kv; /* (L*G) this run's own decode-time cache */
};

/* Per-slot aggregates over the jobs (docs/salca.md#metrics). */
struct salca_acc {
    double *recall[SALCA_NSLOT], *cos[SALCA_NSLOT]; /* (N L H) per job */
    double *ret[SALCA_NSLOT], *over[SALCA_NSLOT];   /* (N L H) per job */
    double *runlen[SALCA_NSLOT];                    /* (N L H) per job: count / runs */
    uint64_t agree[SALCA_NSLOT];                    /* substituted runs' top-1 agreements */
    double ldiff[SALCA_NSLOT];
    float cov_min[SALCA_NSLOT][MAX_NEEDLES];
    double cov_sum[SALCA_NSLOT][MAX_NEEDLES];
    uint64_t cov_n[MAX_NEEDLES];
    uint64_t jobs_done;
};

/* Storage behind the SalcaHeader. */
struct salca_hdr_store {
    Acceltrace__SalcaHeader sh;
    Acceltrace__SalcaSynthParams sy;
    Acceltrace__SalcaMethodInfo mi[SALCA_NSLOT], *mip[SALCA_NSLOT];
    Acceltrace__SalcaSpan *spans, **spp;
    char src_detail[1024];
};

/* One capture (capture_salca_ops instance). */
struct salca_capture {
    struct salca_capture_params p;
    double t_start;
    struct cap c;
    const struct salca_task_info *ti;
    struct salca_task task;
    struct salca_source *src;
    const struct nn_llama *mdl; /* the source's model; NULL for synthetic */
    bool subst_on;              /* substituted runs for top-1 agreement */
    uint32_t threads;
    uint64_t need; /* memory estimate (bytes): plan.held_bytes */
    struct salca_mem_plan plan;
    struct subst sub[SALCA_NSLOT];
    struct salca_acc acc;
    uint32_t token;        /* the next decode input token */
    bool resumed;          /* checkpoint_load ran: run() starts at the sink's resume_unit */
    uint32_t resume_token; /* the checkpoint's next input token (checked after the replay) */
    char *pj, *mj;         /* params and model JSON (jansson's malloc) */
    char *pj_final;        /* layer-major plan: params_json of the step-ordered trace */
    struct salca_hdr_store hs;
    struct salca_capture_result res;
};

/* salca_json.c: the calibrated source's parameters and per-head map (for params_json). */
json_t *salca_calib_json(const struct salca_capture_params *p, const struct salca_source *src,
                         uint32_t L, uint32_t H, uint32_t G);
/* Which header params_json describes: a step-major capture; the .partial of a layer-major
 * one (records layer first, "record_order"); the trace it ends as (step order, the plan
 * named as "memory_plan"). */
enum salca_pj_plan {
    SALCA_PJ_STEP_MAJOR,
    SALCA_PJ_LAYER_MAJOR_PARTIAL,
    SALCA_PJ_LAYER_MAJOR_FINAL
};
/* params_json and model_json of the header (jansson's malloc; free with free). cal (may be
 * NULL) is taken over. */
char *salca_params_json(const struct salca_capture_params *p, const struct salca_task *t,
                        uint32_t N, enum salca_pj_plan plan, json_t *cal);
char *salca_model_json(const struct salca_capture_params *p, uint32_t L, uint32_t H, uint32_t G,
                       uint32_t d, const struct nn_llama *m);

/* salca_report.c: mean, median and 5th percentile of v[0..n) (sorts v). */
void salca_stats(double *v, uint64_t n, double *mean, double *median, double *p5);
/* The result, the CSV and the Summary record after the last decode step. 0 or an err. */
int salca_emit_summary(struct salca_capture *x, struct capture_sink *sink, struct errmsg *e);

/* salca_decode.c: capture_salca_ops.run: every record after the header. */
int salca_run(void *inst, struct capture_sink *sink, struct errmsg *e);
/* salca_decode.c: capture_salca_ops.final_order: a layer-major capture's records end in the
 * step-major plan's order (docs/models.md#salca-memory-plan). */
bool salca_final_order(void *inst, struct capture_order *o);

/* salca_ckpt.c: the checkpoint hooks of capture_salca_ops (docs/trace-format.md#checkpoints). */
int salca_ckpt_save(void *inst, uint64_t unit, FILE *f, struct errmsg *e);
int salca_ckpt_load(void *inst, uint64_t unit, FILE *f, const char *path, struct errmsg *e);

#endif
