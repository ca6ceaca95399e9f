/*
 * salca_perf: the Salca analytic performance model (docs/salca.md#analytic-performance-model; paper
 * section 4, "performance model"). Formulas cite the paper or docs/salca.md; see
 * docs/models.md#salca-replay for the derivations.
 */
#include "replay/salca_perf.h"

#include <ctype.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

__extension__ typedef __int128 salca_i128;

/* ---- exact rationals ---- */

static int rat_make(salca_i128 num, salca_i128 den, struct salca_rat *out)
{
    if (den == 0)
        return ERR_LIMIT;
    if (den < 0) {
        num = -num;
        den = -den;
    }
    salca_i128 a = num < 0 ? -num : num, b = den;
    while (b) {
        salca_i128 t = a % b;
        a = b;
        b = t;
    }
    if (a > 1) {
        num /= a;
        den /= a;
    }
    if (num > INT64_MAX || num < -INT64_MAX || den > INT64_MAX)
        return ERR_LIMIT;
    out->num = (int64_t)num;
    out->den = (int64_t)den;
    return 0;
}

struct salca_rat salca_rat_int(int64_t v)
{
    struct salca_rat r = {v, 1};
    return r;
}

int salca_rat_mul(struct salca_rat a, struct salca_rat b, struct salca_rat *out)
{
    return rat_make((salca_i128)a.num * b.num, (salca_i128)a.den * b.den, out);
}

int salca_rat_div(struct salca_rat a, struct salca_rat b, struct salca_rat *out)
{
    if (b.num == 0)
        return ERR_LIMIT;
    return rat_make((salca_i128)a.num * b.den, (salca_i128)a.den * b.num, out);
}

int salca_rat_add(struct salca_rat a, struct salca_rat b, struct salca_rat *out)
{
    return rat_make((salca_i128)a.num * b.den + (salca_i128)b.num * a.den,
                    (salca_i128)a.den * b.den, out);
}

int salca_rat_sub(struct salca_rat a, struct salca_rat b, struct salca_rat *out)
{
    return rat_make((salca_i128)a.num * b.den - (salca_i128)b.num * a.den,
                    (salca_i128)a.den * b.den, out);
}

int salca_rat_cmp(struct salca_rat a, struct salca_rat b)
{
    salca_i128 l = (salca_i128)a.num * b.den, r = (salca_i128)b.num * a.den;
    return l < r ? -1 : l > r ? 1 : 0;
}

int64_t salca_rat_floor(struct salca_rat a)
{
    int64_t q = a.num / a.den;
    if (a.num % a.den != 0 && a.num < 0)
        q--;
    return q;
}

int64_t salca_rat_ceil(struct salca_rat a)
{
    int64_t q = a.num / a.den;
    if (a.num % a.den != 0 && a.num > 0)
        q++;
    return q;
}

double salca_rat_d(struct salca_rat a)
{
    return (double)a.num / (double)a.den;
}

static int parse_decimal(const char *s, const char *end, salca_i128 *num, salca_i128 *den)
{
    bool neg = false, dot = false, any = false;
    int digits = 0;
    salca_i128 n = 0, d = 1;
    if (s < end && (*s == '-' || *s == '+')) {
        neg = *s == '-';
        s++;
    }
    for (; s < end; s++) {
        if (*s == '.') {
            if (dot)
                return ERR_USAGE;
            dot = true;
            continue;
        }
        if (!isdigit((unsigned char)*s))
            return ERR_USAGE;
        any = true;
        if (n != 0 || *s != '0')
            digits++;
        if (digits > 18)
            return ERR_USAGE;
        n = n * 10 + (*s - '0');
        if (dot) {
            if (d > (salca_i128)1000000000000000000LL)
                return ERR_USAGE;
            d *= 10;
        }
    }
    if (!any)
        return ERR_USAGE;
    *num = neg ? -n : n;
    *den = d;
    return 0;
}

int salca_rat_of_double(double v, struct salca_rat *out)
{
    char s[64];
    snprintf(s, sizeof s, "%.9f", v);
    size_t len = strlen(s);
    while (len > 0 && s[len - 1] == '0')
        s[--len] = 0;
    if (len > 0 && s[len - 1] == '.')
        s[--len] = 0;
    return salca_rat_parse(s, out);
}

int salca_rat_parse(const char *s, struct salca_rat *out)
{
    if (!s || !*s)
        return ERR_USAGE;
    const char *slash = strchr(s, '/');
    const char *end = s + strlen(s);
    salca_i128 n1, d1, n2 = 1, d2 = 1;
    if (parse_decimal(s, slash ? slash : end, &n1, &d1) < 0)
        return ERR_USAGE;
    if (slash && parse_decimal(slash + 1, end, &n2, &d2) < 0)
        return ERR_USAGE;
    if (n2 == 0)
        return ERR_USAGE;
    if (rat_make(n1 * d2, d1 * n2, out) < 0)
        return ERR_USAGE;
    return 0;
}

/* ---- the solver ---- */

void salca_perf_in_paper(struct salca_perf_in *in)
{
    memset(in, 0, sizeof *in);
    in->d = salca_rat_int(128);          /* [derived] docs/salca.md#notation */
    in->s_f = (struct salca_rat){1, 2};  /* [paper] */
    in->w_k = salca_rat_int(2);          /* [paper] */
    in->factor_bits = salca_rat_int(32); /* [paper] two FP16 factors */
    in->chn = salca_rat_int(32);         /* [paper] one HBM2, 32 PCs */
    /* [derived] docs/salca.md#analytic-performance-model */
    in->bw = salca_rat_int(128);
    in->f_hbm_ghz = salca_rat_int(1);                /* [paper] */
    in->f_cmp_ghz = (struct salca_rat){1, 2};        /* [paper] 500 MHz */
    in->alpha = (struct salca_rat){117, 100};        /* [paper] */
    in->alpha_inorder = (struct salca_rat){109, 50}; /* [paper] 2.18 */
    in->beta_pre = (struct salca_rat){19, 20};       /* [paper] 0.95 */
    in->beta_att = (struct salca_rat){11, 20};       /* [paper] 0.55 */
    in->r_q = (struct salca_rat){1, 20};             /* [paper] 5% */
}

#define TRY(x)                                                                                     \
    do {                                                                                           \
        if ((rc = (x)) < 0)                                                                        \
            goto overflow;                                                                         \
    } while (0)

static bool rat_pos(struct salca_rat a)
{
    return a.num > 0;
}

/* r_min = beta_att·m_att/(beta_pre·m_pre·alpha) [paper section 4]. */
static int r_min_of(const struct salca_perf_in *in, struct salca_rat m_pre, struct salca_rat m_att,
                    struct salca_rat *out)
{
    struct salca_rat a, b;
    int rc;
    if ((rc = salca_rat_mul(in->beta_att, m_att, &a)) < 0)
        return rc;
    if ((rc = salca_rat_mul(in->beta_pre, m_pre, &b)) < 0)
        return rc;
    if ((rc = salca_rat_mul(b, in->alpha, &b)) < 0)
        return rc;
    return salca_rat_div(a, b, out);
}

/* The inputs of salca_perf_solve: positive, whole where they must be; ERR_USAGE naming
 * the first that is not. */
static int check_inputs(const struct salca_perf_in *in, struct errmsg *e)
{
    const struct {
        const char *name;
        struct salca_rat v;
    } pos[] = {{"d", in->d},
               {"s_f", in->s_f},
               {"w_k", in->w_k},
               {"chn", in->chn},
               {"bw", in->bw},
               {"f_hbm_ghz", in->f_hbm_ghz},
               {"f_cmp_ghz", in->f_cmp_ghz},
               {"alpha", in->alpha},
               {"alpha_inorder", in->alpha_inorder},
               {"beta_pre", in->beta_pre},
               {"beta_att", in->beta_att},
               {"r_q", in->r_q}};
    for (size_t i = 0; i < sizeof pos / sizeof pos[0]; i++)
        if (!rat_pos(pos[i].v))
            return errmsg_set(e, ERR_USAGE, "%s must be positive", pos[i].name);
    if (in->factor_bits.num < 0)
        return errmsg_set(e, ERR_USAGE, "factor_bits must not be negative");
    if (in->chn.den != 1)
        return errmsg_set(e, ERR_USAGE, "chn must be a whole number of pseudo-channels");
    if (salca_rat_cmp(in->beta_pre, salca_rat_int(1)) > 0 ||
        salca_rat_cmp(in->beta_att, salca_rat_int(1)) > 0)
        return errmsg_set(e, ERR_USAGE, "beta_pre and beta_att must lie in (0, 1]");
    if (in->p_pre < 0 || in->p_att < 0 || in->h_pre < 0 || in->h_att < 0)
        return errmsg_set(e, ERR_USAGE, "p and h must be positive");
    return 0;
}

/*
 * The Pareto front [paper; docs/models.md#salca-replay]: for m_att = 1, 2, ... the largest m_pre
 * with (b_pre·m_pre + b_att·m_att)·f_CMP <= B_HBM and ceil(h_pre) + ceil(h_att) <= chn
 * (decision: the PC sum is checked on the ceilings), until that m_pre is 0. budget is
 * B_HBM/f_CMP bits per compute cycle, cyc f_CMP/(bw·f_HBM).
 */
static int pareto_front(const struct salca_perf_in *in, struct salca_perf_out *out,
                        struct salca_rat bpre, struct salca_rat batt, struct salca_rat cyc,
                        struct salca_rat budget, struct errmsg *e)
{
    int rc = 0;
    struct salca_rat t, u;
    int64_t chn = in->chn.num;
    for (int64_t m_att = 1;; m_att++) {
        struct salca_rat h_att_real, rest, pc_rest;
        TRY(salca_rat_mul(batt, salca_rat_int(m_att), &t));
        TRY(salca_rat_mul(t, cyc, &h_att_real));
        int64_t h_att = salca_rat_ceil(h_att_real);
        if (h_att >= chn)
            break;
        TRY(salca_rat_sub(budget, t, &rest)); /* t = b_att·m_att */
        TRY(salca_rat_div(rest, bpre, &rest));
        int64_t m_bw = rest.num > 0 ? salca_rat_floor(rest) : 0;
        TRY(salca_rat_mul(bpre, cyc, &u));
        TRY(salca_rat_div(salca_rat_int(chn - h_att), u, &pc_rest));
        int64_t m_pc = salca_rat_floor(pc_rest);
        int64_t m_pre = m_bw < m_pc ? m_bw : m_pc;
        if (m_pre <= 0)
            break;
        if (out->n_front == SALCA_PERF_MAX_FRONT)
            return errmsg_set(e, ERR_LIMIT, "pareto front longer than %d points",
                              SALCA_PERF_MAX_FRONT);
        struct salca_perf_front *f = &out->front[out->n_front++];
        f->m_att = m_att;
        f->m_pre = m_pre;
        f->h_att = h_att;
        TRY(salca_rat_mul(u, salca_rat_int(m_pre), &t));
        f->h_pre = salca_rat_ceil(t);
        TRY(r_min_of(in, salca_rat_int(m_pre), salca_rat_int(m_att), &f->r_min));
    }
    return 0;

overflow:
    return errmsg_set(e, rc, "arithmetic overflow in the performance model (inputs too large)");
}

/*
 * Final design for a user's p: 1 <= p <= p' [paper]; m = ceil(p/beta) [paper];
 * h = ceil(b·m·f_CMP/(bw·f_HBM)) on the integer m [decision]; constraints re-checked.
 */
static int final_design(const struct salca_perf_in *in, struct salca_perf_out *out,
                        struct salca_rat bpre, struct salca_rat batt, struct salca_rat cyc,
                        struct errmsg *e)
{
    int rc = 0;
    struct salca_rat t;
    int64_t chn = in->chn.num;
    out->has_final = true;
    out->p_pre = in->p_pre ? in->p_pre : out->p_prime_pre;
    out->p_att = in->p_att ? in->p_att : out->p_prime_att;
    if (out->p_pre < 1 || out->p_pre > out->p_prime_pre)
        return errmsg_set(e, ERR_USAGE, "p_pre %lld outside [1, %lld] (p' at the design point)",
                          (long long)out->p_pre, (long long)out->p_prime_pre);
    if (out->p_att < 1 || out->p_att > out->p_prime_att)
        return errmsg_set(e, ERR_USAGE, "p_att %lld outside [1, %lld] (p' at the design point)",
                          (long long)out->p_att, (long long)out->p_prime_att);
    TRY(salca_rat_div(salca_rat_int(out->p_pre), in->beta_pre, &t));
    out->final_m_pre = salca_rat_ceil(t);
    TRY(salca_rat_div(salca_rat_int(out->p_att), in->beta_att, &t));
    out->final_m_att = salca_rat_ceil(t);
    struct salca_rat bp, ba;
    TRY(salca_rat_mul(bpre, salca_rat_int(out->final_m_pre), &bp));
    TRY(salca_rat_mul(batt, salca_rat_int(out->final_m_att), &ba));
    TRY(salca_rat_mul(bp, cyc, &t));
    out->final_h_pre = salca_rat_ceil(t);
    TRY(salca_rat_mul(ba, cyc, &t));
    out->final_h_att = salca_rat_ceil(t);
    TRY(salca_rat_add(bp, ba, &t));
    TRY(salca_rat_mul(t, in->f_cmp_ghz, &out->final_b_req));
    /* The paper's direct formula h = ceil(b·p·f_CMP/(beta·bw·f_HBM)) [paper]. */
    TRY(salca_rat_mul(bpre, salca_rat_int(out->p_pre), &t));
    TRY(salca_rat_mul(t, cyc, &t));
    TRY(salca_rat_div(t, in->beta_pre, &t));
    out->final_h_pre_direct = salca_rat_ceil(t);
    TRY(salca_rat_mul(batt, salca_rat_int(out->p_att), &t));
    TRY(salca_rat_mul(t, cyc, &t));
    TRY(salca_rat_div(t, in->beta_att, &t));
    out->final_h_att_direct = salca_rat_ceil(t);
    bool bw_bad = salca_rat_cmp(out->final_b_req, out->hbm_bits_per_ns) > 0;
    bool pc_bad = out->final_h_pre + out->final_h_att > chn;
    if (bw_bad || pc_bad) {
        char a[160] = "", b[160] = "";
        if (bw_bad)
            snprintf(a, sizeof a, "bandwidth constraint (%g > %g bits/ns)",
                     salca_rat_d(out->final_b_req), salca_rat_d(out->hbm_bits_per_ns));
        if (pc_bad)
            snprintf(b, sizeof b, "pseudo-channel constraint (%lld + %lld > %lld)",
                     (long long)out->final_h_pre, (long long)out->final_h_att, (long long)chn);
        return errmsg_set(e, ERR_USAGE, "p = (%lld, %lld) violates the %s%s%s at m = (%lld, %lld)",
                          (long long)out->p_pre, (long long)out->p_att, a,
                          bw_bad && pc_bad ? " and the " : "", b, (long long)out->final_m_pre,
                          (long long)out->final_m_att);
    }
    TRY(r_min_of(in, salca_rat_int(out->final_m_pre), salca_rat_int(out->final_m_att),
                 &out->final_r_min));
    return 0;

overflow:
    return errmsg_set(e, rc, "arithmetic overflow in the performance model (inputs too large)");
}

int salca_perf_solve(const struct salca_perf_in *in, struct salca_perf_out *out, struct errmsg *e)
{
    int rc = 0;
    struct salca_rat t, u, bpre, batt;
    /* Zero everything but the (large) front array, which is filled up to n_front. */
    memset(out, 0, offsetof(struct salca_perf_out, front));
    memset(&out->design_idx, 0, sizeof *out - offsetof(struct salca_perf_out, design_idx));

    if ((rc = check_inputs(in, e)))
        return rc;

    /* b_pre = w_k·d·s_f + 32, b_att = 16·d [paper section 4]. */
    TRY(salca_rat_mul(in->w_k, in->d, &t));
    TRY(salca_rat_mul(t, in->s_f, &t));
    TRY(salca_rat_add(t, in->factor_bits, &bpre));
    TRY(salca_rat_mul(salca_rat_int(16), in->d, &batt));
    if (bpre.den != 1 || batt.den != 1)
        return errmsg_set(e, ERR_USAGE, "bits per key (w_k·d·s_f + 32 = %g) must be whole",
                          salca_rat_d(bpre));
    out->b_pre = bpre.num;
    out->b_att = batt.num;

    /* B_HBM = bw·chn·f_HBM [paper]; in bits/ns with f in GHz. */
    TRY(salca_rat_mul(in->bw, in->chn, &t));
    TRY(salca_rat_mul(t, in->f_hbm_ghz, &out->hbm_bits_per_ns));
    /* h = b·m·f_CMP/(bw·f_HBM) [paper]: cyc = f_CMP/(bw·f_HBM). */
    TRY(salca_rat_mul(in->bw, in->f_hbm_ghz, &t));
    TRY(salca_rat_div(in->f_cmp_ghz, t, &out->cyc_ratio));
    struct salca_rat cyc = out->cyc_ratio;
    /* Bandwidth budget per compute cycle: B_HBM/f_CMP bits. */
    struct salca_rat budget;
    TRY(salca_rat_div(out->hbm_bits_per_ns, in->f_cmp_ghz, &budget));
    int64_t chn = in->chn.num;

    if ((rc = pareto_front(in, out, bpre, batt, cyc, budget, e)))
        return rc;
    if (out->n_front == 0) {
        TRY(salca_rat_mul(batt, cyc, &t));
        return errmsg_set(e, ERR_USAGE,
                          "no feasible (m_pre, m_att): one K-V pair per cycle needs %.4f of %lld "
                          "pseudo-channels",
                          salca_rat_d(t), (long long)chn);
    }

    /* Design point: the front point with the largest m_att whose r_min <= r_q [derived:
     * matches the paper's pick of (25, 2)]; without one, the smallest r_min (flagged). */
    out->design_meets_r_q = false;
    size_t best = 0;
    for (size_t i = 0; i < out->n_front; i++) {
        if (salca_rat_cmp(out->front[i].r_min, in->r_q) <= 0) {
            out->design_idx = i;
            out->design_meets_r_q = true;
        }
        if (salca_rat_cmp(out->front[i].r_min, out->front[best].r_min) < 0)
            best = i;
    }
    if (!out->design_meets_r_q)
        out->design_idx = best;
    const struct salca_perf_front *dp = &out->front[out->design_idx];
    struct salca_rat dm_pre = salca_rat_int(dp->m_pre), dm_att = salca_rat_int(dp->m_att);
    TRY(salca_rat_mul(bpre, dm_pre, &t));
    TRY(salca_rat_mul(t, cyc, &out->design_h_pre_real));
    TRY(salca_rat_mul(batt, dm_att, &u));
    TRY(salca_rat_mul(u, cyc, &out->design_h_att_real));
    TRY(salca_rat_add(t, u, &t));
    TRY(salca_rat_mul(t, in->f_cmp_ghz, &out->design_b_req));

    /* Fixed-PC view: m_x = h_x·bw·f_HBM/(b_x·f_CMP) [docs/salca.md#analytic-performance-model, from
     * paper's h]. */
    out->fixed_h_pre = in->h_pre ? in->h_pre : dp->h_pre;
    out->fixed_h_att = in->h_att ? in->h_att : dp->h_att;
    /* more pseudo-channels than the stack has is an impossible input [decision] */
    if ((in->h_pre || in->h_att) && out->fixed_h_pre + out->fixed_h_att > in->chn.num)
        return errmsg_set(e, ERR_USAGE, "fixed-PC view: h_pre + h_att = %lld + %lld > chn = %lld",
                          (long long)out->fixed_h_pre, (long long)out->fixed_h_att,
                          (long long)in->chn.num);
    TRY(salca_rat_mul(bpre, cyc, &t));
    TRY(salca_rat_div(salca_rat_int(out->fixed_h_pre), t, &out->fixed_m_pre));
    TRY(salca_rat_mul(batt, cyc, &t));
    TRY(salca_rat_div(salca_rat_int(out->fixed_h_att), t, &out->fixed_m_att));
    TRY(r_min_of(in, out->fixed_m_pre, out->fixed_m_att, &out->fixed_r_min));

    /* p' = ceil(m'·beta), u = m'·beta/p' [paper]. */
    TRY(salca_rat_mul(dm_pre, in->beta_pre, &out->m_pre_beta_pre));
    TRY(salca_rat_mul(dm_att, in->beta_att, &out->m_att_beta_att));
    out->p_prime_pre = salca_rat_ceil(out->m_pre_beta_pre);
    out->p_prime_att = salca_rat_ceil(out->m_att_beta_att);
    TRY(salca_rat_div(out->m_pre_beta_pre, salca_rat_int(out->p_prime_pre), &out->u_pre));
    TRY(salca_rat_div(out->m_att_beta_att, salca_rat_int(out->p_prime_att), &out->u_att));

    if ((in->p_pre || in->p_att) && (rc = final_design(in, out, bpre, batt, cyc, e)))
        return rc;

    /* ASIC_S_4: w_k 4, s_f 1 [paper: Energon/Sanger style], fixed-PC mode with the fixed
     * view's PCs [derived, docs/salca.md#analytic-performance-model]; r_min_int uses floor(m_pre).
     */
    struct salca_rat basic;
    TRY(salca_rat_mul(salca_rat_int(4), in->d, &t));
    TRY(salca_rat_add(t, in->factor_bits, &basic));
    out->asic_b_pre = salca_rat_floor(basic);
    TRY(salca_rat_mul(basic, cyc, &t));
    TRY(salca_rat_div(salca_rat_int(out->fixed_h_pre), t, &out->asic_m_pre));
    TRY(r_min_of(in, out->asic_m_pre, out->fixed_m_att, &out->asic_r_min));
    out->asic_m_pre_int = salca_rat_floor(out->asic_m_pre);
    if (out->asic_m_pre_int > 0)
        TRY(r_min_of(in, salca_rat_int(out->asic_m_pre_int), out->fixed_m_att,
                     &out->asic_r_min_int));

    /* Conflict gain alpha_inorder/alpha: 2.18/1.17 [paper: "1.87x"]. */
    TRY(salca_rat_div(in->alpha_inorder, in->alpha, &out->conflict_gain));
    return 0;

overflow:
    return errmsg_set(e, rc, "arithmetic overflow in the performance model (inputs too large)");
}

#undef TRY

#define P(...)                                                                                     \
    do {                                                                                           \
        if (buf_printf(b, __VA_ARGS__) < 0)                                                        \
            return ERR_NOMEM;                                                                      \
    } while (0)

int salca_perf_format(const struct salca_perf_out *o, struct buf *b)
{
    const struct salca_perf_front *dp = &o->front[o->design_idx];
    /* The docs/salca.md#analytic-performance-model table, in its order. */
    P("b_pre=%lld\nb_att=%lld\n", (long long)o->b_pre, (long long)o->b_att);
    P("hbm_bits_per_ns=%.4f\n", salca_rat_d(o->hbm_bits_per_ns));
    for (size_t i = 0; i < o->n_front; i++) {
        P("front.%lld.m_pre=%lld\n", (long long)o->front[i].m_att, (long long)o->front[i].m_pre);
        P("front.%lld.r_min=%.4f\n", (long long)o->front[i].m_att, salca_rat_d(o->front[i].r_min));
    }
    P("design.m_pre=%lld\ndesign.m_att=%lld\n", (long long)dp->m_pre, (long long)dp->m_att);
    P("design.h_pre=%lld\n", (long long)dp->h_pre);
    P("design.h_pre_real=%.4f\n", salca_rat_d(o->design_h_pre_real));
    P("design.h_att=%lld\n", (long long)dp->h_att);
    P("design.B_req_bits_per_ns=%.4f\n", salca_rat_d(o->design_b_req));
    P("design.r_min=%.4f\n", salca_rat_d(dp->r_min));
    P("fixed.m_pre=%.4f\n", salca_rat_d(o->fixed_m_pre));
    P("fixed.r_min=%.4f\n", salca_rat_d(o->fixed_r_min));
    P("p_prime_pre=%lld\np_prime_att=%lld\n", (long long)o->p_prime_pre, (long long)o->p_prime_att);
    P("u_pre=%.4f\nu_att=%.4f\n", salca_rat_d(o->u_pre), salca_rat_d(o->u_att));
    P("m_att_beta_att=%.4f\n", salca_rat_d(o->m_att_beta_att));
    if (o->has_final) {
        P("final.m_pre=%lld\nfinal.m_att=%lld\n", (long long)o->final_m_pre,
          (long long)o->final_m_att);
        P("final.h_pre=%lld\nfinal.h_att=%lld\n", (long long)o->final_h_pre,
          (long long)o->final_h_att);
        P("final.h_pre_direct=%lld\nfinal.h_att_direct=%lld\n", (long long)o->final_h_pre_direct,
          (long long)o->final_h_att_direct);
        P("final.B_req_bits_per_ns=%.4f\n", salca_rat_d(o->final_b_req));
        P("final.r_min=%.4f\n", salca_rat_d(o->final_r_min));
    }
    P("asic_s4.b_pre=%lld\n", (long long)o->asic_b_pre);
    P("asic_s4.m_pre=%.4f\n", salca_rat_d(o->asic_m_pre));
    P("asic_s4.r_min=%.4f\n", salca_rat_d(o->asic_r_min));
    if (o->asic_m_pre_int > 0)
        P("asic_s4.r_min_int=%.4f\n", salca_rat_d(o->asic_r_min_int));
    else
        P("asic_s4.r_min_int=inf\n");
    P("conflict_gain=%.4f\n", salca_rat_d(o->conflict_gain));

    /* Further keys. */
    P("front.count=%zu\n", o->n_front);
    for (size_t i = 0; i < o->n_front; i++)
        P("front.%lld.h_pre=%lld\nfront.%lld.h_att=%lld\n", (long long)o->front[i].m_att,
          (long long)o->front[i].h_pre, (long long)o->front[i].m_att, (long long)o->front[i].h_att);
    P("design.meets_r_q=%d\n", o->design_meets_r_q ? 1 : 0);
    P("design.h_att_real=%.4f\n", salca_rat_d(o->design_h_att_real));
    P("design.m_pre_beta_pre=%.4f\n", salca_rat_d(o->m_pre_beta_pre));
    P("fixed.h_pre=%lld\nfixed.h_att=%lld\n", (long long)o->fixed_h_pre, (long long)o->fixed_h_att);
    P("fixed.m_att=%.4f\n", salca_rat_d(o->fixed_m_att));
    if (o->has_final) {
        P("final.p_pre=%lld\nfinal.p_att=%lld\n", (long long)o->p_pre, (long long)o->p_att);
        /* The direct formula can differ from the integer-m rule (15 vs 16 for the paper's
         * inputs); the integer-m rule is used since it gives the paper's stated 16. */
        P("final.h_att_rule=integer_m\n");
        P("final.h_direct_differs=%d\n",
          (o->final_h_pre_direct != o->final_h_pre || o->final_h_att_direct != o->final_h_att) ? 1
                                                                                               : 0);
    }
    P("asic_s4.m_pre_int=%lld\n", (long long)o->asic_m_pre_int);
    P("asic_s4.h_pre=%lld\nasic_s4.h_att=%lld\n", (long long)o->fixed_h_pre,
      (long long)o->fixed_h_att);
    P("units.b=bits_per_key_or_kv_pair\n");
    P("units.m=keys_per_compute_cycle\n");
    P("units.p=keys_per_compute_cycle\n");
    P("units.h=pseudo_channels\n");
    P("units.r_min=fraction_of_context\n");
    P("units.u=fraction_busy\n");
    return 0;
}

#undef P

double salca_perf_t_pre_per_n(const struct salca_perf_in *in, double m_pre)
{
    return 1.0 / (salca_rat_d(in->beta_pre) * m_pre); /* T_pre = n/(beta_pre·m_pre) [paper] */
}

double salca_perf_t_att_per_n(const struct salca_perf_in *in, double m_att, double r, double alpha)
{
    /* T_att = n·r_q·alpha/(beta_att·m_att) [paper] */
    return r * alpha / (salca_rat_d(in->beta_att) * m_att);
}
