/*
 * disc_structured_impl: the layout of the structured mask source, shared by
 * disc_structured.c (the generator, statistics and records) and disc_structured_setup.c
 * (parameters, shape checks, the header and the capture interface). Not a public interface.
 */
#ifndef ACCELTRACE_DISC_STRUCTURED_IMPL_H
#define ACCELTRACE_DISC_STRUCTURED_IMPL_H

#include <stdbool.h>
#include <stdint.h>

#include "capture/capture.h"
#include "capture/disc/disc_flops.h"
#include "capture/disc/disc_keep.h"
#include "capture/disc/disc_structured.h"
#include "capture/disc/dit.h"
#include "capture/disc/dit_sampler.h"
#include "common/threads.h"
#include "formats/disc_hash.h"

#define DISC_STRUCT_MAX_TOKENS (1u << 20) /* the replay's bound on N */

/* One offset of the locality window and its probability exp(-dist / decay). */
struct woff {
    int dy, dx;
    double p;
};

/* One (block, head) at one step: what generating its rows needs. */
struct head_ctx {
    uint64_t key;        /* stream key of (seed, block, head) */
    double density;      /* target (input) */
    double scale;        /* structural probabilities are scale * s0 (1 unless too dense) */
    double c;            /* background factor: b_i = min(1, c m_i) */
    double *q;           /* [N] re-draw probability per generation of each row (the head's) */
    double jaccard;      /* predicted expected Jaccard of consecutive generations */
    bool short_j;        /* the set Jaccard is out of reach (q = 1) */
    uint32_t *stripes;   /* [n_stripes] columns */
    int n_stripes;       /* min(stripes, N - 1) */
    uint64_t *stripe_bm; /* N bits: column is a stripe */
    uint64_t *b32;       /* [N] background probability per row, 32-bit fixed point */
    double *b;           /* [N] the same in double */
    double *m;           /* [N] row factors */
};

struct disc_structured {
    struct disc_struct_params p;
    struct dit_config cfg; /* depth = blocks written, heads as set */
    int K, L, H, N, G, words;
    uint64_t n_prune;
    struct disc_keep keep;
    struct woff *win; /* [n_win] window offsets (self excluded) */
    int n_win;
    double *targets; /* [L * H] head densities */
    double mem_est;
    int threads;
    /* run state (prepare) */
    struct thread_pool *pool;
    struct disc_lb *lb;
    struct head_ctx hc;
    uint32_t *row_gen;          /* [N] generation of each stored row */
    uint64_t *tokmask;          /* [words] CTR token mask of the step */
    int32_t *kept;              /* [N] computed rows, ascending */
    int nk;                     /* N_k */
    float *field, *ftmp;        /* [N] smooth field and its scratch */
    struct disc_lb_acc *acc;    /* [L * H] statistics of the step's masks */
    struct disc_lb_rowstat *rs; /* [N] per-row statistics of one mask */
    uint64_t *wrow;             /* [threads][words] row buffers */
    uint32_t *scratch;          /* [threads][disc_lb_scratch_len] */
    uint32_t *ejs;              /* [threads][n_win + stripes] entry columns */
    double *ess;                /* [threads][n_win + stripes] entry probabilities */
    size_t ecap;                /* entries per thread */
    uint64_t *kbits;            /* [N][words] a kept mask (NULL until one is kept) */
    uint32_t *krow_nnz;         /* [N] */
    /* pooled sparsity */
    double sum_nnz, sum_cells, gen_nnz, gen_cells, reuse_nnz, reuse_cells;
    double *blk_nnz, *blk_cells, *sparsity_block; /* [L] */
    uint64_t *nnz_block;                          /* [L] nnz of the step's masks */
    uint64_t flops_dense[DISC_F_COUNT], flops_ctr[DISC_F_COUNT], flops_all[DISC_F_COUNT];
    double prune_sum;
    /* header storage */
    Acceltrace__TraceHeader hdr;
    Acceltrace__DiscHeader dh;
    char *params_json, *model_json;
    char src_detail[1024];
    struct dit_schedule sched;
    char *lb_names[DISC_HASH_KINDS], *flop_names[DISC_F_COUNT];
    uint32_t lb_units[DISC_LB_STD_UNITS];
    struct disc_struct_result res;
};

/* The run of the capture interface (disc_structured.c). */
int disc_struct_run(void *inst, struct capture_sink *sink, struct errmsg *e);

#endif
