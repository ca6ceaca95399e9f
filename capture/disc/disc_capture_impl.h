/*
 * disc_capture_impl: the layout of struct disc_capture, shared by disc_capture.c (parameters,
 * setup, loading, header, the capture interface) and disc_capture_run.c (the sampler runs and
 * their records). Not a public interface.
 */
#ifndef ACCELTRACE_DISC_CAPTURE_IMPL_H
#define ACCELTRACE_DISC_CAPTURE_IMPL_H

#include "capture/disc/disc_capture.h"
#include "capture/disc/disc_keep.h"
#include "capture/disc/dit.h"
#include "capture/disc/dit_sampler.h"
#include "formats/disc_hash.h"

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
};

/* Frees what a result owns (not r itself). */
void disc_result_release(struct disc_result *r);

/* The ops' run (disc_capture_run.c): the sampler runs of a prepared capture, every record
 * through sink, progress on the sink. 0 or a negative err with the message in e. */
int disc_capture_run(struct disc_capture *c, struct capture_sink *sink, struct errmsg *e);

#endif
