/*
 * salca_task: the LongBench-style task generator of docs/salca.md#task-generator.
 *
 * A task (name from LongBench, or one of the seven family names, which pick the family's
 * first task) yields a prompt of n0 tokens: model token ids (BOS 1 at position 0, 2 =
 * document separator, 3 = question marker, content Zipf(1.1) over [16, V)) and, for the
 * synthetic source, a per-token relevance c_i in logit units (the task profile only; sinks
 * and locality are added by the source) with the list of planted spans. Lengths are drawn
 * like LongBench's averages (lognormal, sigma 0.6) and truncated in the middle to max_len
 * as LongBench does, unless `length` fixes n0. Output is fully determined by (task,
 * sample, seed): every draw comes from the substream ("task:<name>", sample).
 */
#ifndef ACCELTRACE_SALCA_TASK_H
#define ACCELTRACE_SALCA_TASK_H

#include <stdbool.h>
#include <stdint.h>

#include "common/err.h"

enum salca_family {
    SALCA_FAM_SINGLE_DOC_QA = 0,
    SALCA_FAM_MULTI_DOC_QA,
    SALCA_FAM_SUMMARIZATION,
    SALCA_FAM_FEW_SHOT,
    SALCA_FAM_CODE,
    SALCA_FAM_SYNTHETIC,
    SALCA_FAM_PASSKEY,
    SALCA_FAM_COUNT
};

/* Span kinds (formats/salca_records.proto SalcaSpan.kind). */
enum salca_span_kind {
    SALCA_SPAN_NEEDLE = 0,
    SALCA_SPAN_DIFFUSE = 1,
    SALCA_SPAN_TEMPLATE = 2,
    SALCA_SPAN_LABEL = 3,
    SALCA_SPAN_COPY = 4,
    SALCA_SPAN_PASSAGE = 5,
    SALCA_SPAN_KEY = 6
};

struct salca_task_info {
    const char *name; /* LongBench task name, or "passkey" */
    enum salca_family family;
    uint32_t avg_len; /* LongBench average length (words; zh: characters) */
    uint32_t max_gen; /* LongBench max generation length */
    bool zh;          /* length factor 1.0 instead of 1.3 */
};

/* Number of known tasks and the i-th one (i < count). */
uint32_t salca_task_count(void);
const struct salca_task_info *salca_task_at(uint32_t i);
/* A task by name, or a family by name ("single_doc_qa", ..., "passkey"): its first task. */
const struct salca_task_info *salca_task_find(const char *name);
/* Family name ("single_doc_qa", "multi_doc_qa", "summarization", "few_shot", "code",
 * "synthetic", "passkey"). */
const char *salca_family_name(enum salca_family f);
/* Target length in tokens: avg_len * 1.3 (English, code) or * 1.0 (zh),
 * docs/salca.md#task-generator. */
double salca_task_target(const struct salca_task_info *t);

struct salca_task_params {
    uint64_t seed;
    uint32_t sample;  /* sample index */
    uint32_t length;  /* 0: draw n_raw; else n0 exactly (>= 256) */
    uint32_t max_len; /* M, truncation limit (31500) */
    uint32_t max_new; /* cap of N (128) */
    uint32_t vocab;   /* V for model ids (>= 64) */
    double c_needle;  /* needle relevance (docs/salca.md#synthetic-source) */
};

void salca_task_params_default(struct salca_task_params *p);

struct salca_span {
    uint32_t start, len; /* tokens, in the final prompt */
    uint32_t kind;       /* enum salca_span_kind */
    float c;             /* its relevance */
};

struct salca_task {
    const struct salca_task_info *info;
    uint64_t n_raw;           /* prompt length before truncation */
    uint32_t n0;              /* prompt tokens after truncation */
    uint32_t n_steps;         /* N = min(max_gen, max_new) */
    uint64_t truncated;       /* tokens cut from the middle */
    uint32_t lost_spans;      /* spans cut (wholly or partly) by the truncation */
    uint32_t *tokens;         /* (n0) model ids */
    float *c;                 /* (n0) task relevance in logit units */
    struct salca_span *spans; /* surviving spans, ascending start */
    uint32_t n_spans;
};

/* n_raw of (task, sample, seed) as drawn by salca_task_generate (no length override). */
uint64_t salca_task_draw_n_raw(const struct salca_task_info *t, uint64_t seed, uint32_t sample);

/*
 * Generates the task into out (caller storage; release with salca_task_release).
 * 0, ERR_USAGE (length < 256 or vocab too small, message in e), ERR_LIMIT, ERR_NOMEM.
 */
int salca_task_generate(const struct salca_task_info *t, const struct salca_task_params *p,
                        struct salca_task *out, struct errmsg *e);
void salca_task_release(struct salca_task *t);

#endif
