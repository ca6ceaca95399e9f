/* disc_flops: the closed forms of docs/disc.md#quality-and-flop-accounting (table "class / dense /
 * CTR / ST"). */
#include "capture/disc/disc_flops.h"

static const char *names[DISC_F_COUNT] = {
    "sa_qkv",     "sa_qk", "sa_softmax", "sa_pv",  "sa_proj", "ca_q",     "ca_kv", "ca_qk",
    "ca_softmax", "ca_pv", "ca_proj",    "ffn_up", "ffn_act", "ffn_down", "vec",   "embed"};

const char *disc_flop_name(int cls)
{
    return cls >= 0 && cls < DISC_F_COUNT ? names[cls] : "?";
}

/* One block, one batch element, Nk computed rows, dense attention
 * (docs/disc.md#quality-and-flop-accounting, CTR column; Nk = N gives the dense column). */
static void block_ctr(const struct dit_config *c, uint64_t Nk, uint64_t *f)
{
    uint64_t N = (uint64_t)c->tokens, d = (uint64_t)c->hidden, h = (uint64_t)c->heads;
    uint64_t T = (uint64_t)c->text_tokens, d2 = d * d;
    f[DISC_F_SA_QKV] += 2 * (Nk + 2 * N) * d2;
    f[DISC_F_SA_QK] += 2 * Nk * N * d;
    f[DISC_F_SA_SOFTMAX] += 5 * h * Nk * N;
    f[DISC_F_SA_PV] += 2 * Nk * N * d;
    f[DISC_F_SA_PROJ] += 2 * Nk * d2;
    f[DISC_F_FFN_UP] += 8 * Nk * d2;
    f[DISC_F_FFN_ACT] += 32 * Nk * d;
    f[DISC_F_FFN_DOWN] += 8 * Nk * d2;
    if (c->class_cond) {
        /* DiT block (docs/models.md#dit-xl2): no cross-attention and no residual after it */
        f[DISC_F_VEC] += 7 * N * d + 11 * Nk * d;
        return;
    }
    f[DISC_F_CA_Q] += 2 * Nk * d2;
    f[DISC_F_CA_KV] += 4 * T * d2;
    f[DISC_F_CA_QK] += 2 * Nk * T * d;
    f[DISC_F_CA_SOFTMAX] += 5 * h * Nk * T;
    f[DISC_F_CA_PV] += 2 * Nk * T * d;
    f[DISC_F_CA_PROJ] += 2 * Nk * d2;
    f[DISC_F_VEC] += 7 * N * d + 12 * Nk * d;
}

/* Once per forward pass: embed and the final LN (docs/disc.md#quality-and-flop-accounting). */
static void per_pass(const struct dit_config *c, uint64_t B, uint64_t *f)
{
    uint64_t N = (uint64_t)c->tokens, d = (uint64_t)c->hidden, T = (uint64_t)c->text_tokens;
    uint64_t p2 = (uint64_t)c->patch * c->patch;
    if (c->class_cond) {
        /* DiT: patch embedding and final linear per batch element, the timestep MLP once,
         * the per-block (6d) and final (2d) adaLN modulations per batch element (their
         * conditioning c_b differs); the class embedding is a table lookup. */
        uint64_t io = N * (uint64_t)c->c_in * p2 * d + N * d * p2 * (uint64_t)c->c_out;
        f[DISC_F_EMBED] += 2 * B * io + 2 * (256 * d + d * d) +
                           2 * B * (6 * (uint64_t)c->depth * d * d + 2 * d * d);
        f[DISC_F_VEC] += 7 * B * N * d;
        return;
    }
    f[DISC_F_EMBED] += 2 * B *
                           (N * (uint64_t)c->c_in * p2 * d + T * (uint64_t)c->caption * d +
                            T * d * d + N * d * p2 * (uint64_t)c->c_out) +
                       2 * (256 * d + 7 * d * d);
    f[DISC_F_VEC] += 7 * B * N * d;
}

void disc_flops_step(const struct dit_config *c, int B, uint64_t n_kept, enum disc_flop_st st,
                     const uint64_t *nnz_block, uint64_t *dense, uint64_t *ctr, uint64_t *all)
{
    uint64_t N = (uint64_t)c->tokens, d = (uint64_t)c->hidden, h = (uint64_t)c->heads;
    uint64_t dh = (uint64_t)c->head_dim;
    for (int blk = 0; blk < c->depth; blk++) {
        for (int b = 0; b < B; b++) {
            block_ctr(c, N, dense);
            block_ctr(c, n_kept, ctr);
            block_ctr(c, n_kept, all);
        }
        if (st == DISC_FLOP_ST_OFF)
            continue;
        /* Replace the dense attention terms of "all" by the ST column
         * (docs/disc.md#quality-and-flop-accounting). */
        uint64_t nnz = nnz_block[blk], Bu = (uint64_t)B;
        all[DISC_F_SA_SOFTMAX] -= Bu * 5 * h * n_kept * N;
        all[DISC_F_SA_PV] -= Bu * 2 * n_kept * N * d;
        if (st == DISC_FLOP_ST_GEN) {
            all[DISC_F_SA_SOFTMAX] += Bu * 6 * h * n_kept * N + 2 * nnz;
        } else {
            all[DISC_F_SA_QK] -= Bu * 2 * n_kept * N * d;
            all[DISC_F_SA_QK] += 2 * dh * nnz;
            all[DISC_F_SA_SOFTMAX] += 5 * nnz;
        }
        all[DISC_F_SA_PV] += 2 * dh * nnz;
    }
    per_pass(c, (uint64_t)B, dense);
    per_pass(c, (uint64_t)B, ctr);
    per_pass(c, (uint64_t)B, all);
}

uint64_t disc_flops_total(const uint64_t *f)
{
    uint64_t s = 0;
    for (int i = 0; i < DISC_F_COUNT; i++)
        s += f[i];
    return s;
}
