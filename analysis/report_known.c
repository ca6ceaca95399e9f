/*
 * report_known: what the report knows about the project's own outputs: the question each
 * built-in figure answers and what it shows, the galleries of raw images, and where the
 * headline numbers of each workload are read (analysis/report.h).
 */
#include <fnmatch.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "analysis/report_impl.h"
#include "common/grow.h"
#include "common/mem.h"
#include "traces/trace_reader.h"

const char *const rep_questions[] = {
    "Speedup and energy",
    "Where does time go?",
    "Load balance",
    "Utilization",
    "Quality vs sparsity",
    "Design space",
    "Sweeps: a metric against a setting",
    "Other figures",
};

size_t rep_question_count(void)
{
    return sizeof rep_questions / sizeof rep_questions[0];
}

enum { Q_SPEED, Q_TIME, Q_BALANCE, Q_UTIL, Q_QUALITY, Q_DESIGN, Q_SWEEP, Q_OTHER };

struct known_fig {
    const char *pattern; /* fnmatch on the base name */
    int question;
    const char *caption;
};

/* Built-in figures (analysis/disc_plots*.c, hash_lb.c, conflicts_*.c, select_quality.c,
 * overshoot.c, heavy_stability.c, kura_plots.c,
 * cli/cmd_model_salca.c, cli/cmd_plot.c); first match wins. */
static const struct known_fig figs[] = {
    {"speedup", Q_SPEED,
     "DiSC speedup over the GPU baseline (per-operator model) per config and mode (Baseline, CTR, "
     "All), the paper's "
     "Fig. 18a ranges shaded"},
    {"energy", Q_SPEED,
     "DiSC energy relative to the A100's per mode, by component (config 0), the paper's Fig. "
     "18b ranges shaded"},
    {"pareto", Q_DESIGN,
     "Salca Pareto front of memory parallelism: design points labelled by their minimum "
     "retention r_min (model salca)"},
    {"cycles_by_op", Q_TIME,
     "DiSC exposed cycles per op class and step (config 0): which operations the time goes to"},
    {"flops_self_attention", Q_TIME,
     "Self-attention FLOPs per class as % of dense, per mode (the paper's Fig. 17a)"},
    {"flops_network", Q_TIME,
     "Network FLOPs per part as % of dense, per mode (the paper's Fig. 17b)"},
    {"kura_cycles_shape", Q_TIME,
     "SA-Kura cycles per step against N_w: eq. 9 plus exposed prefill (lines) and the "
     "cycle-accurate simulation (points)"},
    {"timeline", Q_TIME,
     "Modelled schedule of config 0, the trace's first step (export timeline): one row per unit, "
     "each span an op (DiSC), a job's pipeline stage (Salca) or a tile's DMA and array sweep "
     "(SA-Kura) where the model placed it; the same slices as timeline.json, which "
     "ui.perfetto.dev opens"},
    {"kura_cpx_heatmap", Q_TIME, "SA-Kura effective cycles per pixel over (N_h, N_w) at 96x96"},
    {"hash_imbalance", Q_BALANCE,
     "DiSC hash load balance: imbalance (sum of max over sum of mean) against matrix sparsity"},
    {"hash_std_vs_sparsity", Q_BALANCE,
     "DiSC hash load balance: mean standard deviation of nonzeros per lane against sparsity"},
    {"hash_std_vs_row_sparsity", Q_BALANCE,
     "DiSC hash load balance: mean standard deviation per lane against row sparsity"},
    {"imbalance_*", Q_BALANCE, "DiSC load imbalance of one hash and lane count, per step"},
    {"alpha_vs_window", Q_BALANCE,
     "Salca bank-conflict overhead alpha (slots over ideal) against the reorder window"},
    {"conflict_occupancy", Q_BALANCE,
     "Salca per-pseudo-channel queue occupancy per slot, per issue policy"},
    {"conflict_per_batch", Q_BALANCE, "Salca conflicts per batch of p_iss requests under each map"},
    {"stage_utilization", Q_UTIL,
     "Salca stage utilization (busy over makespan) per reference config"},
    {"step_utilization", Q_UTIL,
     "Salca stage utilization per decode step (salca_final, in-order issue)"},
    {"kura_activity", Q_UTIL,
     "SA-Kura operand toggle rate alpha per reverse step (docs/kura.md#switching-activity)"},
    {"quality_per_step", Q_QUALITY,
     "DiSC relative L2 error of x_{k+1} against the dense run, per step"},
    {"latent_diff", Q_QUALITY,
     "DiSC CTR input change per step: per-token max |x_k - x_{k-1}| quantiles against the "
     "threshold tau_k"},
    {"prune_per_step", Q_QUALITY,
     "DiSC CTR token pruning per step, the paper's Table I band 25.3-62.6% shaded"},
    {"st_sparsity", Q_QUALITY,
     "DiSC ST mask sparsity per step, pooled, the paper's Table I band 56.2-66.1% shaded"},
    {"st_sparsity_heatmap*", Q_QUALITY, "DiSC ST mask sparsity per step and block"},
    {"overshoot", Q_QUALITY,
     "Salca selected-set overshoot (|S| - K)/n over the selections; dashed: the paper's 0.19%"},
    {"cosine_vs_retention", Q_QUALITY,
     "Salca output cosine against retention |S|/n (mean solid, 5th percentile dashed)"},
    {"recall_vs_retention", Q_QUALITY,
     "Salca top-k recall against retention |S|/n (mean solid, 5th percentile dashed)"},
    {"heavy_stability", Q_QUALITY,
     "Salca heavy-channel stability: overlap of a prefill prefix's top-r set with the final one"},
    {"kura_phase_error", Q_QUALITY, "SA-Kura phase error map of the final sample"},
    {"kura_drift_error", Q_QUALITY,
     "SA-Kura fixed-point against float64 drift error per reverse step "
     "(docs/kura.md#fixed-point-drift)"},
    {"kura_epx_heatmap", Q_DESIGN,
     "SA-Kura compute-only energy per pixel over (N_h, N_w) (eq. 11, fit4) with N_w*(N_h) "
     "(eq. 12)"},
    {"kura_epx_lines", Q_DESIGN,
     "SA-Kura energy per pixel against N_w (eq. 11, fit4) with the paper's compute-only points"},
    {"kura_area_epx", Q_DESIGN,
     "SA-Kura area against energy per pixel: compute-only (open) and system level (filled)"},
    {"*_vs_*", Q_SWEEP, NULL},
};

void rep_known_figure(const char *base, int *question, const char **caption)
{
    for (size_t i = 0; i < sizeof figs / sizeof figs[0]; i++)
        if (!fnmatch(figs[i].pattern, base, 0)) {
            *question = figs[i].question;
            *caption = figs[i].caption;
            return;
        }
    *question = Q_OTHER;
    *caption = NULL;
}

const struct rep_gallery rep_galleries[] = {
    {"token_mask_k*", "Token masks",
     "DiSC CTR token masks, one G x G image per step k (white: token kept and computed, black: "
     "pruned; docs/disc.md#trace-records)"},
    {"kura_phase_*", "Phase maps",
     "SA-Kura oscillator phase maps: the data, reverse steps and the final map"},
    {"attn_k*", "Attention masks",
     "DiSC ST attention masks kept per step k, batch, block and head, OR-downsampled to at "
     "most 2048 px (white = kept; docs/disc.md#trace-records)"},
    {"latent_*", "Latents",
     "DiSC latent channels in grey (c0..c3) and channels 0-2 as RGB, each min-max scaled; "
     "latent_dense_*: the dense run's"},
    {"*", "Images", "Raw images written by the run (no plotting script beside them)"},
};

size_t rep_gallery_count(void)
{
    return sizeof rep_galleries / sizeof rep_galleries[0];
}

int rep_known_gallery(const char *base)
{
    for (size_t i = 0; i + 1 < rep_gallery_count(); i++)
        if (!fnmatch(rep_galleries[i].pattern, base, 0))
            return (int)i;
    return (int)rep_gallery_count() - 1;
}

bool rep_in_named_gallery(const char *base)
{
    return rep_known_gallery(base) + 1 < (int)rep_gallery_count();
}

const char *rep_status_class(const char *s)
{
    if (!strcmp(s, "predicted"))
        return "st-pred";
    if (!strcmp(s, "recomputed"))
        return "st-recomp";
    if (!strcmp(s, "calibrated"))
        return "st-calib";
    if (!strcmp(s, "input"))
        return "st-input";
    if (!strcmp(s, "not-modelled"))
        return "st-nm";
    return "st-unknown";
}

/* The vocabulary of analysis/reproduce.h. */
const char *rep_status_meaning(const char *s)
{
    if (!strcmp(s, "predicted"))
        return "our model computes it from inputs not fitted to this number";
    if (!strcmp(s, "recomputed"))
        return "the paper's own formula on the paper's own inputs: checks arithmetic and "
               "reading, not a model";
    if (!strcmp(s, "calibrated"))
        return "a parameter of ours was solved or fitted so this number comes out (the basis "
               "names it)";
    if (!strcmp(s, "input"))
        return "it equals a setting we chose";
    if (!strcmp(s, "not-modelled"))
        return "nothing of ours computes it (the basis says why)";
    return "unknown status word";
}

/* ---- headline numbers ---- */

/*
 * Where a headline number is read. Results specs (model set) read results.csv of a results
 * folder whose manifest names that model: the row matching row_where (else config_index
 * 0), and the range over rows matching range_where. File specs (file set) read every row of
 * an analyzer's table matching row_where, one headline per row named by per_row.
 */
struct head_spec {
    const char *model, *file;
    const char *row_where, *range_where, *per_row;
    const char *column, *quantity, *status, *basis;
    const char *calib_col, *calib_val, *calib_basis; /* status calibrated when matched */
};

#define KURA_CAL                                                                                   \
    "t_marsh (DMA marshalling cycles per pixel) solved so that H20W5 at 96x96 takes 641.3 us "     \
    "(docs/models.md, SA-Kura); power fit4 through the paper's compute-only points"
#define DISC_CAL                                                                                   \
    "vpu_width 24 is calibrated: the smallest width with DiSC_All >= DiSC_CTR at "                 \
    "pixart-sigma-xl 512 px (docs/models.md, VPU width); the GPU side is the per-operator GPU "    \
    "model"

static const struct head_spec heads[] = {
    {"count", NULL, NULL, NULL, NULL, "sum", "sum of the trace's numbers (count model)",
     "predicted", "the count model sums the trace's records (replay/model_count.c)", 0, 0, 0},
    {"count", NULL, NULL, NULL, NULL, "records", "records counted", "predicted",
     "the count model counts the records it keeps", 0, 0, 0},
    {"count", NULL, NULL, NULL, NULL, "energy_j", "energy of the counted operations", "predicted",
     "count model with the energy table of the manifest", 0, 0, 0},
    {"disc", NULL, "mode=all", "mode=all", NULL, "speedup",
     "DiSC_All speedup over the GPU baseline (the config's gpu key, default A100 80 GB PCIe)",
     "predicted", "disc model against the per-operator GPU model (replay/gpu_model.c)", "vpu_width",
     "24", DISC_CAL},
    {"disc", NULL, "mode=all", "mode=all", NULL, "reduction_vs_gpu",
     "DiSC_All energy reduction vs the GPU baseline (1 - E_DiSC/E_GPU)", "predicted",
     "disc model energy against the GPU model's power x time", "vpu_width", "24", DISC_CAL},
    {"disc", NULL, "mode=all", "mode=all", NULL, "seconds", "DiSC_All time for the trace",
     "predicted", "disc model (replay/disc_model.c)", "vpu_width", "24", DISC_CAL},
    {"disc", NULL, "mode=all", "mode=all", NULL, "model_j", "DiSC_All energy for the trace",
     "predicted", "disc model with the energy table of the manifest", "vpu_width", "24", DISC_CAL},
    {"salca", NULL, NULL, NULL, NULL, "alpha_measured", "Salca alpha (HBM slots over ideal)",
     "predicted", "salca model on the trace's selections (replay/salca_model.c), nothing fitted", 0,
     0, 0},
    {"salca", NULL, NULL, NULL, NULL, "speedup_vs_dense", "Salca speedup over dense attention",
     "predicted", "salca model (replay/salca_model.c)", 0, 0, 0},
    {"salca", NULL, NULL, NULL, NULL, "energy_gain_vs_dense", "Salca energy gain over dense",
     "predicted", "salca model with the energy table of the manifest", 0, 0, 0},
    {"salca", NULL, NULL, NULL, NULL, "tokens_per_s", "Salca decode throughput", "predicted",
     "salca model (replay/salca_model.c)", 0, 0, 0},
    {"kura", NULL, "n_h=20,n_w=5", NULL, NULL, "sys_step_s", "SA-Kura system time per step",
     "calibrated", KURA_CAL, 0, 0, 0},
    {"kura", NULL, "n_h=20,n_w=5", NULL, NULL, "sys_e_px_nj", "SA-Kura system energy per pixel",
     "calibrated", KURA_CAL, 0, 0, 0},
    {"kura", NULL, "n_h=20,n_w=5", NULL, NULL, "e_px_pj", "SA-Kura compute-only energy per pixel",
     "calibrated", KURA_CAL, 0, 0, 0},
    {NULL, "alpha.csv", "group=all", NULL, "policy", "alpha",
     "Salca bank-conflict alpha (slots over ideal), policy", "predicted",
     "analyze conflicts on the trace's selections (analysis/conflicts_*.c), nothing fitted", 0, 0,
     0},
};

static int push_head(struct rep_section *s, struct rep_headline **out)
{
    if (grow((void **)&s->heads, &s->cap_heads, s->n_heads + 1, sizeof *s->heads))
        return ERR_NOMEM;
    *out = &s->heads[s->n_heads++];
    memset(*out, 0, sizeof **out);
    return 0;
}

/* True when row r matches every "k=v" of where (a key the table lacks is ignored). */
static bool row_matches(const struct csv_table *t, size_t r, const char *where)
{
    if (!where)
        return true;
    char w[256];
    snprintf(w, sizeof w, "%s", where);
    char *save = NULL;
    for (char *kv = strtok_r(w, ",", &save); kv; kv = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(kv, '=');
        if (!eq)
            continue;
        *eq = 0;
        long c = csv_table_col(t, kv);
        if (c >= 0 && strcmp(t->rows[r][c], eq + 1))
            return false;
    }
    return true;
}

static bool num(const char *s, double *v)
{
    char *end;
    *v = strtod(s, &end);
    return end != s && !*end && isfinite(*v);
}

static void unit_of(const struct csv_table *t, long c, char *out, size_t n)
{
    char name[128];
    csv_split_unit(t->header[c], name, sizeof name, out, n);
    if (!strcmp(out, "1"))
        out[0] = 0;
}

/* The manifest model of the results folder holding rel ("" when it has no manifest). */
static void folder_model(const struct rep_section *s, const char *rel, char *model, size_t n)
{
    model[0] = 0;
    char folder[4096], p[8192];
    snprintf(folder, sizeof folder, "%s", rel);
    char *slash = strrchr(folder, '/');
    if (slash)
        *slash = 0;
    else
        folder[0] = 0;
    rep_join(s, folder, p, sizeof p - 16);
    strcat(p, "/manifest.json");
    json_error_t je;
    json_t *j = json_load_file(p, 0, &je);
    const char *m = json_string_value(json_object_get(j, "model"));
    if (m)
        snprintf(model, n, "%s", m);
    json_decref(j);
}

/* Says which named sweep row a headline value belongs to: "QUANTITY (NAME)" and the name
 * in its source line. */
static void name_headline(struct rep_headline *h, const char *name)
{
    size_t q = strlen(h->quantity), r = strlen(h->source);
    snprintf(h->quantity + q, sizeof h->quantity - q, " (%s)", name);
    snprintf(h->source + r, sizeof h->source - r, ", sweep row '%s'", name);
}

/* Appends "k=v" of JSON object o's keys among `keys` (values printed as in the JSON). */
static void append_keys(const json_t *o, const char *const *keys, size_t nk, char *out, size_t n)
{
    for (size_t i = 0; i < nk; i++) {
        json_t *v = json_object_get(o, keys[i]);
        if (!v || json_is_null(v))
            continue;
        char *t =
            json_is_string(v) ? NULL : json_dumps(v, JSON_ENCODE_ANY | JSON_REAL_PRECISION(6));
        size_t used = strlen(out);
        snprintf(out + used, n - used, "%s%s=%s", out[0] ? " " : "", keys[i],
                 t ? t : json_string_value(v));
        free(t);
    }
}

/* What the capture made (model, size, steps) from the header of the trace at path. */
static void trace_setting(struct rep_trace_cache *tc, const char *path, char *out, size_t n)
{
    static const char *const keys[] = {"model",  "image_size", "h",      "w",    "t",
                                       "length", "steps",      "layers", "task", "data"};
    const struct rep_trace_head *t = rep_trace_head(tc, path);
    if (!t || !t->opened)
        return;
    json_error_t je;
    json_t *pj = t->params_json ? json_loads(t->params_json, 0, &je) : NULL;
    append_keys(pj, keys, sizeof keys / sizeof keys[0], out, n);
    json_decref(pj);
}

/* The config keys whose values differ among the first rows of DIR/results.jsonl, with
 * their values in row `row` ("dpu_count=16 vpu_width=8"; nothing for one config). */
static void swept_setting(const char *dir, size_t row, char *out, size_t n)
{
    char path[6100];
    snprintf(path, sizeof path, "%.6000s/results.jsonl", dir);
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    json_t *first = NULL, *mine = NULL, *varies = json_object();
    char *line = NULL;
    size_t cap = 0;
    for (size_t i = 0; i < 4096 && getline(&line, &cap, f) > 0; i++) {
        json_error_t je;
        json_t *j = json_loads(line, 0, &je);
        json_t *c = json_object_get(j, "config");
        const char *k;
        json_t *v;
        if (c && !first)
            first = json_incref(c);
        if (c && i == row)
            mine = json_incref(c);
        json_object_foreach(c, k, v)
        {
            if (!json_equal(v, json_object_get(first, k)))
                json_object_set_new(varies, k, json_true());
        }
        json_decref(j);
    }
    free(line);
    fclose(f);
    const char *k;
    json_t *v;
    json_object_foreach(varies, k, v)
    {
        append_keys(mine, &k, 1, out, n);
    }
    json_decref(first);
    json_decref(mine);
    json_decref(varies);
}

/*
 * h->setting for a number of row `row` of results folder rel's folder: the folder, the
 * hardware config (--hw of the manifest's command), what the trace holds (its header's
 * capture parameters) and the swept settings of the row, so that two numbers of one
 * quantity from two folders say what each is of.
 */
static void head_setting(struct rep_trace_cache *tc, const struct rep_section *s, const char *rel,
                         size_t row, struct rep_headline *h)
{
    char folder[4096], dir[6000], path[6100], trace[4096] = "", hw[256] = "", tr[300] = "",
                                              sw[300] = "";
    snprintf(folder, sizeof folder, "%s", rel);
    char *slash = strrchr(folder, '/');
    if (slash)
        *slash = 0;
    else
        folder[0] = 0;
    rep_join(s, folder, dir, sizeof dir);
    snprintf(path, sizeof path, "%s/manifest.json", dir);
    json_error_t je;
    json_t *m = json_load_file(path, 0, &je);
    const char *c = json_string_value(json_object_get(m, "command"));
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "%s", c ? c : "");
    json_decref(m);
    char *save = NULL, *prev = NULL;
    bool verb_seen = false;
    for (char *t = strtok_r(cmd, " ", &save); t; prev = t, t = strtok_r(NULL, " ", &save)) {
        if (prev && !strcmp(prev, "--hw")) {
            const char *b = strrchr(t, '/');
            snprintf(hw, sizeof hw, "%s", b ? b + 1 : t);
            char *dot = strstr(hw, ".json");
            if (dot)
                *dot = 0;
        } else if (verb_seen && !trace[0] && t[0] != '-' && prev && prev[0] != '-') {
            snprintf(trace, sizeof trace, "%s", t); /* the first positional after the verb */
        }
        verb_seen |= !strcmp(t, "replay");
    }
    if (trace[0])
        trace_setting(tc, trace, tr, sizeof tr);
    swept_setting(dir, row, sw, sizeof sw);
    snprintf(h->setting, sizeof h->setting, "%.200s%s%s%.100s%s%.140s%s%.140s",
             folder[0] ? folder : ".", "/", hw[0] ? ", hw " : "", hw, tr[0] ? ", trace " : "", tr,
             sw[0] ? ", config " : "", sw);
}

static int results_heads(struct rep_trace_cache *tc, struct rep_section *s,
                         const struct rep_file *f, const char *model)
{
    const struct csv_table *t = &f->tab;
    struct rep_headline *h;
    int rc = push_head(s, &h);
    if (rc)
        return rc;
    snprintf(h->quantity, sizeof h->quantity, "rows replayed (model %s)", model);
    snprintf(h->value, sizeof h->value, "%zu", t->n_rows);
    snprintf(h->status, sizeof h->status, "input");
    snprintf(h->basis, sizeof h->basis, "the sweep grid chosen for the run (manifest.json)");
    snprintf(h->source, sizeof h->source, "%s: rows", f->rel);
    long ci = csv_table_col(t, "config_index");
    long nc = csv_table_col(t, "name"); /* the sweep's row names, when it names them */
    for (size_t k = 0; k < sizeof heads / sizeof heads[0]; k++) {
        const struct head_spec *sp = &heads[k];
        long c = csv_table_col(t, sp->column);
        if (!sp->model || strcmp(sp->model, model) || c < 0 || !t->n_rows)
            continue;
        size_t row = t->n_rows, first0 = t->n_rows;
        for (size_t r = 0; r < t->n_rows && row == t->n_rows; r++) {
            bool zero = ci >= 0 && !strcmp(t->rows[r][ci], "0");
            if (zero && first0 == t->n_rows && row_matches(t, r, sp->range_where))
                first0 = r;
            if (sp->row_where && row_matches(t, r, sp->row_where) &&
                row_matches(t, r, sp->range_where))
                row = r;
        }
        bool by_where = row < t->n_rows;
        if (!by_where)
            row = first0 < t->n_rows ? first0 : 0;
        double v, lo = INFINITY, hi = -INFINITY, x;
        size_t nr = 0;
        if (!num(t->rows[row][c], &v))
            continue;
        for (size_t r = 0; r < t->n_rows; r++)
            if (row_matches(t, r, sp->range_where) && num(t->rows[r][c], &x))
                lo = fmin(lo, x), hi = fmax(hi, x), nr++;
        if ((rc = push_head(s, &h)) != 0)
            return rc;
        snprintf(h->quantity, sizeof h->quantity, "%s", sp->quantity);
        head_setting(tc, s, f->rel, row, h);
        snprintf(h->value, sizeof h->value, "%.5g", v);
        if (nr > 1)
            snprintf(h->range, sizeof h->range, "%.5g .. %.5g over %zu rows", lo, hi, nr);
        unit_of(t, c, h->unit, sizeof h->unit);
        long cc = sp->calib_col ? csv_table_col(t, sp->calib_col) : -1;
        bool cal = cc >= 0 && !strcmp(t->rows[row][cc], sp->calib_val);
        snprintf(h->status, sizeof h->status, "%s", cal ? "calibrated" : sp->status);
        snprintf(h->basis, sizeof h->basis, "%s", cal ? sp->calib_basis : sp->basis);
        snprintf(h->source, sizeof h->source, "%s: row %zu (config_index %s%s%s), column '%s'",
                 f->rel, row + 1, ci >= 0 ? t->rows[row][ci] : "?", by_where ? ", " : "",
                 by_where ? sp->row_where : "", sp->column);
        if (nc >= 0 && t->rows[row][nc][0]) /* the value is this named row's */
            name_headline(h, t->rows[row][nc]);
    }
    return 0;
}

static int file_heads(struct rep_section *s, const struct rep_file *f, const char *name)
{
    const struct csv_table *t = &f->tab;
    for (size_t k = 0; k < sizeof heads / sizeof heads[0]; k++) {
        const struct head_spec *sp = &heads[k];
        if (!sp->file || strcmp(sp->file, name))
            continue;
        long c = csv_table_col(t, sp->column);
        long pc = sp->per_row ? csv_table_col(t, sp->per_row) : -1;
        if (c < 0)
            continue;
        size_t shown = 0;
        for (size_t r = 0; r < t->n_rows && shown < 8; r++) {
            double v;
            if (!row_matches(t, r, sp->row_where) || !num(t->rows[r][c], &v))
                continue;
            struct rep_headline *h;
            int rc = push_head(s, &h);
            if (rc)
                return rc;
            shown++;
            snprintf(h->quantity, sizeof h->quantity, "%s%s%s", sp->quantity, pc >= 0 ? " " : "",
                     pc >= 0 ? t->rows[r][pc] : "");
            snprintf(h->value, sizeof h->value, "%.5g", v);
            unit_of(t, c, h->unit, sizeof h->unit);
            snprintf(h->status, sizeof h->status, "%s", sp->status);
            snprintf(h->basis, sizeof h->basis, "%s", sp->basis);
            snprintf(h->source, sizeof h->source, "%s: row %zu%s%s, column '%s'", f->rel, r + 1,
                     sp->row_where ? ", " : "", sp->row_where ? sp->row_where : "", sp->column);
        }
    }
    return 0;
}

/* reproduce.csv: how many paper numbers it lines up, by status. */
static int repro_heads(struct rep_section *s, const struct rep_file *f)
{
    const struct csv_table *t = &f->tab;
    long sc = csv_table_col(t, "status");
    if (sc < 0)
        return 0;
    static const char *const words[] = {"predicted", "recomputed", "calibrated", "input",
                                        "not-modelled"};
    struct rep_headline *h;
    int rc = push_head(s, &h);
    if (rc)
        return rc;
    size_t k = 0;
    for (size_t w = 0; w < 5; w++) {
        size_t n = 0;
        for (size_t r = 0; r < t->n_rows; r++)
            n += !strcmp(t->rows[r][sc], words[w]);
        if (n && k < sizeof h->basis)
            k += (size_t)snprintf(h->basis + k, sizeof h->basis - k, "%s%zu %s", k ? ", " : "", n,
                                  words[w]);
    }
    snprintf(h->quantity, sizeof h->quantity, "paper numbers lined up with ours");
    snprintf(h->value, sizeof h->value, "%zu", t->n_rows);
    snprintf(h->status, sizeof h->status, "input");
    snprintf(h->source, sizeof h->source, "%s: rows (the table below)", f->rel);
    return 0;
}

int rep_headlines(struct rep_section *s, struct rep_trace_cache *tc)
{
    size_t n_files = s->n_files;
    for (size_t i = 0; i < n_files; i++) {
        const struct rep_file *f = &s->files[i];
        if (f->kind != REP_TABLE || !f->has_tab)
            continue;
        const char *name = strrchr(f->rel, '/');
        name = name ? name + 1 : f->rel;
        int rc = 0;
        if (!strcmp(name, "results.csv")) {
            char model[64];
            folder_model(s, f->rel, model, sizeof model);
            if (model[0])
                rc = results_heads(tc, s, f, model);
        } else if (!strcmp(name, "reproduce.csv")) {
            rc = repro_heads(s, f);
        } else {
            rc = file_heads(s, f, name);
        }
        if (rc)
            return rc;
    }
    return 0;
}
