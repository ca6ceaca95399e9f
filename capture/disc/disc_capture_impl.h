/*
 * disc_capture_impl: the layout of struct disc_capture, shared by disc_capture.c (parameters,
 * setup, loading, header, the capture interface) and disc_capture_run.c (the sampler runs and
 * their records). Not a public interface.
 */
#ifndef ACCELTRACE_DISC_CAPTURE_IMPL_H
#define ACCELTRACE_DISC_CAPTURE_IMPL_H

#include <stdio.h>

#include "capture/disc/disc_capture.h"
#include "capture/disc/disc_keep.h"
#include "capture/disc/dit.h"
#include "capture/disc/dit_sampler.h"
#include "formats/disc_hash.h"

/* The sampler runs of a capture, in order: those on of dense, CTR-only and main. */
enum disc_run_kind { DISC_RUN_DENSE = 0, DISC_RUN_CTR = 1, DISC_RUN_MAIN = 2 };

/* Pooled sums of the main run over its steps (the Summary's sparsity and prune figures). */
struct disc_sums {
    double sum_nnz, sum_cells, gen_nnz, gen_cells, reuse_nnz, reuse_cells, prune_sum;
    int64_t prune_cnt;
    double *blk_nnz, *blk_cells; /* [L] */
};

/* The sampler run in progress as a checkpoint sees it; disc_capture_run.c keeps it current
 * (st NULL outside a run). */
struct disc_live {
    int run;                     /* index into the capture's runs */
    int k;                       /* steps of it done */
    bool ctr, st_on;             /* the shape of its dit_state */
    const float *x, *x0p, *prev; /* (n_latent): x_k, x0hat_{k-1}, the latent CTR compares to */
    const float *theta;          /* [L] effective theta */
    const struct disc_sums *sums;
    struct dit_state *st;
};

/* What checkpoint_load read for run() to continue from (unit 0: a fresh run). */
struct disc_resume {
    uint64_t unit;
    int run, k;
    float *x, *x0p, *prev, *theta; /* as in struct disc_live; owned */
    struct disc_sums sums;         /* blk_* owned */
    struct dit_state *st;          /* the run's CTR caches and ST masks, loaded; owned */
};

struct disc_capture {
    struct disc_params p;
    struct dit_config cfg;
    int K, B;
    double mem_est;
    struct disc_mem_plan plan;
    uint64_t tgt_num;
    int tgt_frac;
    uint64_t n_prune;
    struct disc_keep keep;
    struct dit_model *model;
    float *text;   /* (B, T, D_c) */
    float *x_init; /* (C_in, H, W) */
    struct dit_schedule sched;
    struct thread_pool *pool;
    struct disc_lb *lb;
    bool loaded;
    /* header storage */
    Acceltrace__TraceHeader hdr;
    Acceltrace__DiscHeader dh;
    char *params_json, *model_json;
    char weights_source[64], text_source[512], text_sha[65];
    char null_source[512], null_sha[65];
    char src_detail[2048];
    char *wfiles[DISC_MAX_WEIGHT_FILES], *wsha[DISC_MAX_WEIGHT_FILES];
    char shipped_path[4096], shipped_sha[65]; /* disc_models: trained-small's own weights */
    char *lb_names[DISC_HASH_KINDS], *flop_names[DISC_F_COUNT];
    uint32_t lb_units[DISC_LB_STD_UNITS];
    struct disc_result res;
    /* the sampler runs: kinds, trajectories of the reference runs (K, n_latent) */
    enum disc_run_kind runs[3];
    int n_runs;
    float *dense_traj, *ctr_traj;
    struct disc_live live;
    struct disc_resume rs;
};

/* Frees what a result owns (not r itself). */
void disc_result_release(struct disc_result *r);

/* The runs of c into c->runs / c->n_runs, and their dit_state shape (ctr, st) of kind. */
void disc_runs_plan(struct disc_capture *c);
void disc_run_shape(const struct disc_capture *c, enum disc_run_kind kind, bool *ctr, bool *st);
/* The trajectory (K, n_latent) of run kind. */
float *disc_run_traj(struct disc_capture *c, enum disc_run_kind kind);

/* (Re)allocates the result and the trajectories of a run from scratch (disc_capture_run.c).
 * 0 or ERR_NOMEM with e set. */
int disc_run_alloc(struct disc_capture *c, struct errmsg *e);

/* Frees what a struct disc_resume owns and zeroes it. */
void disc_resume_release(struct disc_resume *rs);

/* Bytes the workload part of a checkpoint of c holds at most, from the layout (disc_ckpt.c):
 * the free space a checkpoint needs. */
uint64_t disc_ckpt_bytes(const struct disc_capture *c);

/* Opens the dit_state of run ri as the memory plan shapes it (held or spilled). 0 or an
 * err with e set; free with dit_state_free. */
int disc_run_state_open(struct disc_capture *c, int ri, struct dit_state **st, struct errmsg *e);

/* The ops' checkpoint_save and checkpoint_load (disc_ckpt.c; capture/capture.h). */
int disc_ckpt_save(void *inst, uint64_t unit, FILE *f, struct errmsg *e);
int disc_ckpt_load(void *inst, uint64_t unit, FILE *f, const char *path, struct errmsg *e);

/* The ops' run (disc_capture_run.c): the sampler runs of a prepared capture, every record
 * through sink, progress on the sink. 0 or a negative err with the message in e. */
int disc_capture_run(struct disc_capture *c, struct capture_sink *sink, struct errmsg *e);

#endif
