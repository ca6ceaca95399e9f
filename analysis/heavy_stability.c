/*
 * heavy_stability: heavy-channel stability of Salca's prefill, its table and plot (see the
 * header).
 */
#include "analysis/heavy_stability.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "analysis/analyzer.h"
#include "analysis/salca_out.h"
#include "common/grow.h"
#include "common/io.h"
#include "common/mem.h"
#include "traces/trace_reader.h"
#include "traces/trace_salca.h"

/* Heavy-channel stability of one (layer, prefix length m). */
struct stab {
    uint32_t l, m;
    uint64_t n, n_mass;
    double jsum, jmin;
    double msum; /* share of the final set's S mass the prefix set holds (n_mass sets) */
};

struct heavy_stability {
    struct stab *stab; /* sorted by (l, m) */
    size_t n_stab, cap_stab;
    uint64_t prefills, prefills_bare; /* SalcaPrefill records; those without the ladder */
    /* the analyzer form (heavy_stability_analyzer) */
    const char *dir;
    bool *rendered;
};

int heavy_stability_new(struct heavy_stability **out, struct errmsg *e)
{
    if (!(*out = mem_calloc(1, sizeof **out)))
        return errmsg_set(e, ERR_NOMEM, "out of memory");
    return 0;
}

void heavy_stability_free(struct heavy_stability *h)
{
    if (!h)
        return;
    mem_free(h->stab);
    mem_free(h);
}

double heavy_stability_jaccard(const uint8_t *a, size_t na, const uint8_t *b, size_t nb)
{
    bool in_a[256] = {false}, in_b[256] = {false};
    for (size_t i = 0; i < na; i++)
        in_a[a[i]] = true;
    for (size_t i = 0; i < nb; i++)
        in_b[b[i]] = true;
    unsigned inter = 0, uni = 0;
    for (int j = 0; j < 256; j++) {
        inter += in_a[j] && in_b[j];
        uni += in_a[j] || in_b[j];
    }
    return uni ? (double)inter / (double)uni : 1.0;
}

/* Strictly ascending channel list (a set written as the capture writes it). */
static bool ascending(const uint8_t *v, size_t n)
{
    for (size_t i = 1; i < n; i++)
        if (v[i] <= v[i - 1])
            return false;
    return true;
}

/* Row of (l, m) into *row, inserted in (l, m) order when new. 0, or ERR_LIMIT/ERR_NOMEM
 * with e set. */
static int stab_row(struct heavy_stability *c, uint32_t l, uint32_t m, struct stab **row,
                    struct errmsg *e)
{
    size_t i = 0;
    while (i < c->n_stab && (c->stab[i].l < l || (c->stab[i].l == l && c->stab[i].m < m)))
        i++;
    if (i < c->n_stab && c->stab[i].l == l && c->stab[i].m == m) {
        *row = &c->stab[i];
        return 0;
    }
    if (c->n_stab == HEAVY_STABILITY_MAX_ROWS)
        return errmsg_set(e, ERR_LIMIT, "more than %d (layer, prefix length) rows",
                          HEAVY_STABILITY_MAX_ROWS);
    if (grow((void **)&c->stab, &c->cap_stab, c->n_stab + 1, sizeof *c->stab))
        return errmsg_set(e, ERR_NOMEM, "out of memory");
    memmove(c->stab + i + 1, c->stab + i, (c->n_stab - i) * sizeof *c->stab);
    c->n_stab++;
    c->stab[i] = (struct stab){.l = l, .m = m, .jmin = 1.0};
    *row = &c->stab[i];
    return 0;
}

int heavy_stability_add(struct heavy_stability *c, const Acceltrace__SalcaPrefill *p,
                        struct errmsg *e)
{
    c->prefills++;
    if (p->n_prefix_len == 0 && p->prefix_heavy.len == 0) {
        c->prefills_bare++;
        return 0;
    }
    size_t r = p->heavy.len, np = p->n_prefix_len;
    const char *bad = NULL;
    if (r == 0 || r > 256)
        bad = "heavy set size outside [1, 256]";
    else if (np > HEAVY_STABILITY_MAX_PREFIX)
        bad = "more than 64 prefix lengths";
    else if (p->prefix_heavy.len != np * r)
        bad = "prefix_heavy is not r bytes per prefix length";
    else if (!ascending(p->heavy.data, r))
        bad = "heavy channels not strictly ascending";
    for (size_t a = 0; a < np && !bad; a++) {
        if (p->prefix_len[a] == 0 || (a && p->prefix_len[a] <= p->prefix_len[a - 1]) ||
            (p->n0 && p->prefix_len[a] > p->n0))
            bad = "prefix lengths not ascending within [1, n0]";
        else if (!ascending(p->prefix_heavy.data + a * r, r))
            bad = "prefix channels not strictly ascending";
    }
    if (!bad && p->l >= HEAVY_STABILITY_MAX_LAYERS)
        bad = "layer above the analyzer's limit";
    if (bad)
        return errmsg_set(e, ERR_DATA, "bad salca prefill at layer %u kv head %u: %s", p->l, p->g,
                          bad);
    /* final S mass of I_g, when chan_sum covers every channel index */
    double mass_final = 0;
    bool mass = p->n_chan_sum >= 256 || (p->n_chan_sum > 0 && p->heavy.data[r - 1] < p->n_chan_sum);
    for (size_t a = 0; a < np && mass; a++)
        mass = p->n_chan_sum >= 256 || p->prefix_heavy.data[a * r + r - 1] < p->n_chan_sum;
    for (size_t k = 0; k < r && mass; k++)
        mass_final += fabs((double)p->chan_sum[p->heavy.data[k]]);
    mass = mass && mass_final > 0;
    for (size_t a = 0; a < np; a++) {
        struct stab *row = NULL;
        int rc = stab_row(c, p->l, p->prefix_len[a], &row, e);
        if (rc < 0)
            return rc;
        /* docs/salca.md#figures plot 7: overlap of the prefix's top-r set with the final I_g */
        const uint8_t *set = p->prefix_heavy.data + a * r;
        double j = heavy_stability_jaccard(set, r, p->heavy.data, r);
        row->n++;
        row->jsum += j;
        if (j < row->jmin)
            row->jmin = j;
        if (mass) {
            /* decision: the final S_j mass the prefix set keeps, sum over the prefix set
             * / sum over I_g (1 when the prefix set is as heavy as I_g) */
            double ms = 0;
            for (size_t k = 0; k < r; k++)
                ms += fabs((double)p->chan_sum[set[k]]);
            row->msum += ms / mass_final;
            row->n_mass++;
        }
    }
    return 0;
}

size_t heavy_stability_n_rows(const struct heavy_stability *c)
{
    return c->n_stab;
}

int heavy_stability_row(const struct heavy_stability *c, size_t i, struct heavy_stability_row *s)
{
    memset(s, 0, sizeof *s);
    if (i >= c->n_stab)
        return ERR_USAGE;
    const struct stab *row = &c->stab[i];
    s->layer = row->l;
    s->prefix_len = row->m;
    s->sets = row->n;
    s->jaccard_mean = row->n ? row->jsum / (double)row->n : 0;
    s->jaccard_min = row->jmin;
    s->mass_kept_mean = row->n_mass ? row->msum / (double)row->n_mass : -1.0;
    return 0;
}

uint64_t heavy_stability_prefills(const struct heavy_stability *c, uint64_t *without_ladder)
{
    if (without_ladder)
        *without_ladder = c->prefills_bare;
    return c->prefills;
}

/* docs/salca.md#figures plot 7: heavy_stability.csv and a line per layer, x the prefix length
 * m (log2), y the mean Jaccard overlap of the prefix's top-r set with the final I_g. */
int heavy_stability_write(struct heavy_stability *c, const char *dir, bool *rendered,
                          struct errmsg *e)
{
    bool r = true;
    if (!rendered)
        rendered = &r;
    if (!c->n_stab)
        return 0;
    int rc = io_mkdir_p(dir, 0777, e);
    if (rc)
        return rc;
    struct csv_writer *w;
    if ((rc = salca_out_csv_open(dir, "heavy_stability.csv", &w, e)) < 0)
        return rc;
    static const char *const cols[] = {"layer",        "prefix_len_tokens", "sets",
                                       "jaccard_mean", "jaccard_min",       "s_mass_kept_mean"};
    for (size_t k = 0; k < sizeof cols / sizeof cols[0]; k++)
        csv_str(w, cols[k]);
    csv_end_row(w);
    for (size_t i = 0; i < c->n_stab; i++) {
        const struct stab *row = &c->stab[i];
        csv_u64(w, row->l);
        csv_u64(w, row->m);
        csv_u64(w, row->n);
        csv_f64_fixed(w, row->jsum / (double)row->n, 6);
        csv_f64_fixed(w, row->jmin, 6);
        if (row->n_mass)
            csv_f64_fixed(w, row->msum / (double)row->n_mass, 6);
        else
            csv_str(w, ""); /* no chan_sum: the mass is not known */
        csv_end_row(w);
    }
    if ((rc = salca_out_csv_close(w, dir, "heavy_stability.csv", e)) < 0)
        return rc;
    struct plot *p = plot_new("heavy_stability", PLOT_LINE);
    double *x = mem_alloc(c->n_stab * sizeof *x), *y = mem_alloc(c->n_stab * sizeof *y);
    double *wt = mem_alloc(c->n_stab * sizeof *wt);
    if (!p || !x || !y || !wt) {
        plot_free(p);
        mem_free(x);
        mem_free(y);
        mem_free(wt);
        return errmsg_set(e, ERR_NOMEM, "out of memory");
    }
    plot_title(p, "Heavy-channel stability: top-r set of a prefill prefix vs the final I_{g}");
    plot_xlabel(p, "prefix length m used to find I_{g}", "tokens");
    plot_ylabel(p, "Jaccard overlap with the final set, mean over KV heads", "");
    plot_extra(p, "set yrange [0:1.1]");
    plot_extra(p, "set key bottom right");
    bool many_m = false;
    for (size_t i = 0, k; i < c->n_stab && rc == 0; i += k) {
        char name[32];
        for (k = 0; i + k < c->n_stab && c->stab[i + k].l == c->stab[i].l; k++) {
            x[k] = c->stab[i + k].m;
            y[k] = c->stab[i + k].jsum / (double)c->stab[i + k].n;
        }
        many_m = many_m || k > 1;
        snprintf(name, sizeof name, "layer %u", c->stab[i].l);
        rc = plot_series(p, 0, name, x, y, k);
    }
    /* the S mass kept, over every layer per m: near 1 when the sets differ only in
     * channels of near-equal magnitude */
    size_t nm = 0;
    for (size_t i = 0; i < c->n_stab && rc == 0; i++) {
        const struct stab *row = &c->stab[i];
        if (!row->n_mass)
            continue;
        size_t k = 0;
        while (k < nm && x[k] < row->m)
            k++;
        if (k == nm || x[k] != row->m) {
            memmove(x + k + 1, x + k, (nm - k) * sizeof *x);
            memmove(y + k + 1, y + k, (nm - k) * sizeof *y);
            memmove(wt + k + 1, wt + k, (nm - k) * sizeof *wt);
            x[k] = row->m;
            y[k] = 0;
            wt[k] = 0;
            nm++;
        }
        y[k] += row->msum;
        wt[k] += (double)row->n_mass;
    }
    for (size_t k = 0; k < nm; k++)
        y[k] /= wt[k];
    if (nm && rc == 0)
        rc = plot_series(p, 0, "S mass kept, all layers", x, y, nm);
    if (many_m)
        plot_extra(p, "set logscale x 2");
    mem_free(wt);
    mem_free(x);
    mem_free(y);
    if (rc < 0) {
        plot_free(p);
        return errmsg_set(e, rc, "cannot build the heavy-stability plot");
    }
    return salca_out_plot(p, dir, rendered, e);
}

/* ---- the analyzer of a trace pass ---- */

static int hs_begin(void *self, const struct trace_scan_pos *pos, struct errmsg *e)
{
    (void)self;
    return trace_salca_header_check(trace_reader_header(pos->r), pos->path, e);
}

static int hs_record(void *self, const struct trace_scan_pos *pos, Acceltrace__Record **rec,
                     struct errmsg *e)
{
    const Acceltrace__Record *r = *rec;
    if (r->body_case != ACCELTRACE__RECORD__BODY_SALCA_PREFILL)
        return 0;
    int rc = heavy_stability_add(self, r->salca_prefill, e);
    return rc < 0 ? analyzer_record_error(rc, pos, e) : 0;
}

static int hs_finish(void *self, struct errmsg *e)
{
    struct heavy_stability *h = self;
    return h->dir ? heavy_stability_write(h, h->dir, h->rendered, e) : 0;
}

static const struct analyzer_ops heavy_stability_ops = {
    .name = "heavy_stability",
    .begin = hs_begin,
    .record = hs_record,
    .finish = hs_finish,
};

void heavy_stability_analyzer(struct heavy_stability *h, const char *dir, bool *rendered,
                              struct analyzer *out)
{
    h->dir = dir;
    h->rendered = rendered;
    out->ops = &heavy_stability_ops;
    out->self = h;
}
