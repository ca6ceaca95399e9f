/*
 * report_scan: which folders a report covers and what is in them (analysis/report.h for
 * the rules; report_impl.h for the doc).
 */
#include <dirent.h>
#include <errno.h>
#include <fnmatch.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analysis/report_impl.h"
#include "common/grow.h"
#include "common/io.h"
#include "common/mem.h"
#include "formats/csv.h"
#include "traces/trace_reader.h"

#define DEMO_MARKER ".acceltrace-demo"
#define REPRO_MARKER_NAME ".acceltrace-reproduce"

static bool ends(const char *s, const char *suf)
{
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && !strcmp(s + a - b, suf);
}

static bool is_file(const char *path)
{
    struct stat st;
    return !stat(path, &st) && S_ISREG(st.st_mode);
}

static bool is_dir(const char *path)
{
    struct stat st;
    return !stat(path, &st) && S_ISDIR(st.st_mode);
}

/* A folder that is a workload by its own marker (demo or reproduce). */
static bool marked(const char *dir)
{
    char p[PATH_MAX + 64];
    if (snprintf(p, sizeof p, "%s/" DEMO_MARKER, dir) >= (int)sizeof p)
        return false; /* a path this long names no marker we wrote */
    if (is_file(p))
        return true;
    if (snprintf(p, sizeof p, "%s/" REPRO_MARKER_NAME, dir) >= (int)sizeof p)
        return false;
    return is_file(p);
}

static bool excluded(const struct report_opts *o, const char *rel, const char *name)
{
    for (size_t i = 0; i < o->n_exclude; i++)
        if (!fnmatch(o->exclude[i], rel, 0) || !fnmatch(o->exclude[i], name, 0))
            return true;
    return false;
}

void rep_join(const struct rep_section *s, const char *rel, char *out, size_t n)
{
    snprintf(out, n, "%s%s%s", s->path, rel[0] ? "/" : "", rel);
}

/* ---- files of a section ---- */

static int add_file(struct rep_section *s, const char *rel, int kind)
{
    if (s->n_files >= REP_MAX_FILES)
        return 0;
    if (grow((void **)&s->files, &s->cap_files, s->n_files + 1, sizeof *s->files))
        return ERR_NOMEM;
    struct rep_file *f = &s->files[s->n_files];
    memset(f, 0, sizeof *f);
    if (!(f->rel = mem_strdup(rel)))
        return ERR_NOMEM;
    f->kind = kind;
    s->n_files++;
    return 0;
}

static int walk(struct rep_section *s, const struct report_opts *o, const char *rel, int depth)
{
    char path[PATH_MAX];
    rep_join(s, rel, path, sizeof path);
    DIR *d = opendir(path);
    if (!d)
        return 0;
    int rc = 0;
    struct dirent *de;
    while (!rc && (de = readdir(d))) {
        if (de->d_name[0] == '.')
            continue;
        char r[PATH_MAX], full[PATH_MAX + 256], xrel[PATH_MAX + 256];
        snprintf(r, sizeof r, "%s%s%s", rel, rel[0] ? "/" : "", de->d_name);
        snprintf(full, sizeof full, "%s/%s", s->path, r);
        snprintf(xrel, sizeof xrel, "%s%s", s->prefix, r);
        if (excluded(o, xrel, de->d_name))
            continue;
        struct stat st;
        if (stat(full, &st))
            continue;
        if (S_ISDIR(st.st_mode)) {
            if (depth < REP_MAX_DEPTH)
                rc = walk(s, o, r, depth + 1);
        } else if (!S_ISREG(st.st_mode)) {
            continue; /* a FIFO named like a table would block the reader */
        } else if (ends(de->d_name, ".png") || ends(de->d_name, ".svg")) {
            char png[PATH_MAX + 256];
            snprintf(png, sizeof png, "%.*s.png", (int)(strlen(full) - 4), full);
            if (ends(de->d_name, ".svg") && is_file(png))
                continue; /* the PNG of the same figure is shown */
            rc = add_file(s, r, REP_FIGURE);
        } else if (ends(de->d_name, ".csv")) {
            rc = add_file(s, r, REP_TABLE);
        }
    }
    closedir(d);
    return rc;
}

static int cmp_file(const void *a, const void *b)
{
    const struct rep_file *x = a, *y = b;
    return strcmp(x->rel, y->rel);
}

/* ---- captions ---- */

/* First line of a regular file into out; false if unreadable or empty. */
static bool first_line(const char *path, char *out, size_t n)
{
    int fd = io_open_input(path, NULL, NULL);
    if (fd < 0)
        return false;
    FILE *f = fdopen(fd, "r");
    if (!f) {
        close(fd);
        return false;
    }
    bool ok = fgets(out, (int)n, f) != NULL;
    fclose(f);
    if (ok)
        out[strcspn(out, "\r\n")] = 0;
    return ok && out[0];
}

/* Title from a gnuplot script: 'set title "..."' or 'set multiplot ... title "..."'. */
static bool gp_title(const char *path, char *out, size_t n)
{
    int fd = io_open_input(path, NULL, NULL);
    if (fd < 0)
        return false;
    FILE *f = fdopen(fd, "r");
    if (!f) {
        close(fd);
        return false;
    }
    char line[2048];
    bool found = false;
    while (!found && fgets(line, sizeof line, f)) {
        const char *t = NULL;
        bool multi = !strncmp(line, "set multiplot", 13);
        if (!strncmp(line, "set title \"", 11))
            t = line + 11;
        else if (multi && (t = strstr(line, " title \"")))
            t += 8;
        if (!t || *t == '"')
            continue;
        size_t k = 0;
        for (; *t && *t != '"' && k + 1 < n; t++) {
            if (*t == '\\' && t[1])
                t++;
            out[k++] = *t;
        }
        out[k] = 0;
        found = k > 0;
        if (multi)
            break;
    }
    fclose(f);
    return found;
}

static void base_of(const char *rel, char *out, size_t n)
{
    const char *slash = strrchr(rel, '/');
    snprintf(out, n, "%s", slash ? slash + 1 : rel);
    char *dot = strrchr(out, '.');
    if (dot)
        *dot = 0;
}

static void table_caption(struct rep_file *f, char *out, size_t n)
{
    if (!f->has_tab) {
        snprintf(out, n, "table (not previewed: unreadable or over %u MiB)",
                 REP_TABLE_MAX_BYTES >> 20);
        return;
    }
    const struct csv_table *t = &f->tab;
    size_t k = (size_t)snprintf(out, n, "table of %zu rows x %zu columns:", t->n_rows, t->n_cols);
    size_t shown = 0;
    for (size_t c = 0; c < t->n_cols && shown < 6 && k < n; c++) {
        if (!strcmp(t->header[c], "trace_hash") || !strcmp(t->header[c], "config_hash") ||
            !strcmp(t->header[c], "config_index"))
            continue;
        k += (size_t)snprintf(out + k, n - k, "%s %s", shown ? "," : "", t->header[c]);
        shown++;
    }
    if (shown < t->n_cols && k < n)
        snprintf(out + k, n - k, ", ...");
}

/* Loads a table when it is small enough; a table that does not parse is just listed. */
static void load_table(const struct rep_section *s, struct rep_file *f)
{
    char p[PATH_MAX];
    rep_join(s, f->rel, p, sizeof p);
    struct stat st;
    if (stat(p, &st) || (uint64_t)st.st_size > REP_TABLE_MAX_BYTES)
        return;
    struct errmsg e = {0};
    f->has_tab = csv_table_load(&f->tab, p, true, &e) == 0;
}

static int describe(struct rep_section *s, struct rep_file *f)
{
    char base[PATH_MAX], stem[PATH_MAX], p[PATH_MAX + 64], cap[2048] = "", title[1024] = "";
    base_of(f->rel, base, sizeof base);
    snprintf(stem, sizeof stem, "%s/%s", s->path, f->rel);
    char *dot = strrchr(stem, '.');
    if (dot)
        *dot = 0;
    snprintf(p, sizeof p, "%s.caption", stem);
    bool own = first_line(p, cap, sizeof cap);
    if (f->kind == REP_TABLE) {
        load_table(s, f);
        if (!own)
            table_caption(f, cap, sizeof cap);
    } else {
        snprintf(p, sizeof p, "%s.gp", stem);
        bool has_gp = gp_title(p, title, sizeof title) || is_file(p);
        const char *known = NULL;
        rep_known_figure(base, &f->question, &known);
        /* a known figure stays a figure, and so does any image with a gnuplot script
         * beside it (a plot, even of a mask or a phase map); raw images go to galleries */
        bool other = f->question == (int)rep_question_count() - 1;
        if (other && !has_gp) { /* a scripted image is a plot: a figure with its caption */
            f->kind = REP_IMAGE;
            f->question = rep_known_gallery(base);
        }
        if (!own) {
            if (known)
                snprintf(cap, sizeof cap, "%s", known);
            else if (title[0])
                snprintf(cap, sizeof cap, "%s", title);
            else
                snprintf(cap, sizeof cap, "%.1000s", base);
        }
    }
    f->caption = mem_strdup(cap);
    f->title = mem_strdup(title);
    return f->caption && f->title ? 0 : ERR_NOMEM;
}

/* ---- numbers in text ---- */

static bool alnum_c(char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

void rep_tidy_numbers(const char *s, char *out, size_t n)
{
    size_t o = 0;
    if (!n)
        return;
    for (size_t i = 0; s[i] && o + 1 < n;) {
        /* a token [-]D+.D+[eE[+-]D+] standing alone (not inside a hash or a word) */
        size_t j = i + (s[i] == '-');
        size_t d0 = j, digits = 0, sig = 0;
        bool lead = true;
        for (; s[j] >= '0' && s[j] <= '9'; j++, digits++)
            sig += !(lead &= s[j] == '0');
        bool frac = digits && s[j] == '.' && s[j + 1] >= '0' && s[j + 1] <= '9';
        if (frac) {
            for (j++; s[j] >= '0' && s[j] <= '9'; j++)
                sig += !(lead &= s[j] == '0');
            if ((s[j] == 'e' || s[j] == 'E') &&
                ((s[j + 1] >= '0' && s[j + 1] <= '9') ||
                 ((s[j + 1] == '-' || s[j + 1] == '+') && s[j + 2] >= '0' && s[j + 2] <= '9')))
                for (j += 2; s[j] >= '0' && s[j] <= '9'; j++)
                    ;
        }
        bool alone = (i == 0 || (!alnum_c(s[i - 1]) && s[i - 1] != '.')) && !alnum_c(s[j]) &&
                     !(s[j] == '.' && s[j + 1] >= '0' && s[j + 1] <= '9');
        if (frac && alone && sig > 6 && d0 < j) {
            char num[64], t[40];
            size_t l = j - i < sizeof num - 1 ? j - i : sizeof num - 1;
            memcpy(num, s + i, l);
            num[l] = 0;
            int w = snprintf(t, sizeof t, "%.6g", strtod(num, NULL));
            for (int k = 0; k < w && o + 1 < n; k++)
                out[o++] = t[k];
            i = j;
            continue;
        }
        /* copy up to the next character that can start a number token */
        size_t k = digits ? j : i + 1;
        for (; i < k && s[i] && o + 1 < n; i++)
            out[o++] = s[i];
    }
    out[o] = 0;
}

/* ---- provenance ---- */

/* p->data = "SOURCE (DETAIL)" from a trace header's or manifest's source fields. */
static void data_source(struct rep_prov *p, const char *src, const char *detail)
{
    if (!src || !src[0])
        return;
    int n = detail && detail[0] ? snprintf(p->data, sizeof p->data, "%s (%s)", src, detail)
                                : snprintf(p->data, sizeof p->data, "%s", src);
    if (n >= (int)sizeof p->data)
        p->data[sizeof p->data - 1] = 0; /* a caption: cut, never overrun */
    char t[sizeof p->data];
    rep_tidy_numbers(p->data, t, sizeof t); /* "core_r=0.4", not 0.40000000000000002 */
    memcpy(p->data, t, sizeof t);
}

static void read_manifest(const char *path, struct rep_prov *p)
{
    json_error_t je;
    json_t *j = json_load_file(path, 0, &je);
    if (!j)
        return;
    const char *c = json_string_value(json_object_get(j, "command"));
    const char *ch = json_string_value(json_object_get(j, "config_hash"));
    const char *th = json_string_value(json_object_get(j, "trace_hash"));
    if (c)
        snprintf(p->command, sizeof p->command, "%s", c);
    if (ch)
        snprintf(p->config_hash, sizeof p->config_hash, "%s", ch);
    if (th)
        snprintf(p->trace_hash, sizeof p->trace_hash, "%s", th);
    data_source(p, json_string_value(json_object_get(j, "trace_source")),
                json_string_value(json_object_get(j, "trace_source_detail")));
    json_decref(j);
}

/* A copy of s (NULL stays NULL); *oom set when the copy fails. */
static char *dup_field(const char *s, bool *oom)
{
    char *d = s ? mem_strdup(s) : NULL;
    *oom |= s && !d;
    return d;
}

static void trace_head_release(struct rep_trace_head *t)
{
    mem_free(t->path);
    mem_free(t->source);
    mem_free(t->detail);
    mem_free(t->params_json);
    memset(t, 0, sizeof *t);
}

/* Every figure of a workload names the same trace: one open of it per report run. */
const struct rep_trace_head *rep_trace_head(struct rep_trace_cache *c, const char *path)
{
    char key[PATH_MAX];
    if (!realpath(path, key))
        snprintf(key, sizeof key, "%s", path);
    for (size_t i = 0; i < c->n; i++)
        if (!strcmp(c->v[i].path, key))
            return &c->v[i];
    if (grow((void **)&c->v, &c->cap, c->n + 1, sizeof *c->v))
        return NULL;
    struct rep_trace_head *t = &c->v[c->n];
    memset(t, 0, sizeof *t);
    bool oom = false;
    t->path = dup_field(key, &oom);
    struct trace_reader *r = NULL;
    if (!oom && trace_reader_open(&r, path, NULL, NULL) >= 0 && r) {
        const Acceltrace__TraceHeader *h = trace_reader_header(r);
        t->opened = true;
        t->has_header = h != NULL;
        t->source = dup_field(h ? h->source : NULL, &oom);
        t->detail = dup_field(h ? h->source_detail : NULL, &oom);
        t->params_json = dup_field(h ? h->params_json : NULL, &oom);
    }
    trace_reader_free(r);
    if (oom) {
        trace_head_release(t);
        return NULL;
    }
    return &c->v[c->n++];
}

void rep_trace_cache_release(struct rep_trace_cache *c)
{
    for (size_t i = 0; i < c->n; i++)
        trace_head_release(&c->v[i]);
    mem_free(c->v);
    memset(c, 0, sizeof *c);
}

/* p->data from the header of the trace at path, when it opens ("" otherwise). */
static void trace_source(struct rep_trace_cache *tc, const char *path, struct rep_prov *p)
{
    const struct rep_trace_head *t = rep_trace_head(tc, path);
    if (!t || !t->opened)
        return;
    data_source(p, t->source, t->detail);
    if (t->has_header && !p->data[0])
        snprintf(p->data, sizeof p->data, "not recorded (a trace older than the source field)");
}

/* The path as the demo saw it: relative ones against the folder it ran in. */
static void demo_path(const char *cwd, const char *arg, char *out, size_t n)
{
    if (arg[0] == '/' || !cwd[0])
        snprintf(out, n, "%s", arg);
    else
        snprintf(out, n, "%s/%s", cwd, arg);
}

/*
 * The demo step whose output option names folder `dir`: the marker of a demo workload
 * holds "cwd\tPATH" and one "step\tacceltrace ARGS" line per step (cli/cmd_demo.c).
 */
static bool demo_step(struct rep_trace_cache *tc, const char *marker, const char *dir,
                      struct rep_prov *p)
{
    char *text = NULL;
    size_t len = 0;
    if (io_read_file(marker, 1u << 20, &text, &len, NULL))
        return false;
    char cwd[PATH_MAX] = "";
    bool found = false;
    char *save_line = NULL;
    for (char *line = strtok_r(text, "\n", &save_line); line && !found;
         line = strtok_r(NULL, "\n", &save_line)) {
        if (!strncmp(line, "cwd\t", 4)) {
            snprintf(cwd, sizeof cwd, "%s", line + 4);
            continue;
        }
        if (strncmp(line, "step\t", 5))
            continue;
        char args[1600];
        snprintf(args, sizeof args, "%s", line + 5);
        char *av[64], *save_arg = NULL;
        int ac = 0;
        for (char *t = strtok_r(args, " ", &save_arg); t && ac < 64;
             t = strtok_r(NULL, " ", &save_arg))
            av[ac++] = t;
        const char *input = NULL;
        for (int i = 1; i + 1 < ac && !found; i++) {
            char q[PATH_MAX];
            demo_path(cwd, av[i + 1], q, sizeof q);
            if ((!strcmp(av[i], "-o") || !strcmp(av[i], "--plots") || !strcmp(av[i], "--plot") ||
                 !strcmp(av[i], "--png")) &&
                io_same_file(q, dir))
                found = true;
        }
        if (!found)
            continue;
        snprintf(p->command, sizeof p->command, "%s", line + 5);
        for (int i = 2; i < ac && !input; i++) {
            char q[PATH_MAX], m[PATH_MAX + 32];
            demo_path(cwd, av[i], q, sizeof q);
            snprintf(m, sizeof m, "%s/manifest.json", q);
            if (av[i][0] != '-' && is_file(m)) {
                input = av[i];
                struct rep_prov mp = {0};
                read_manifest(m, &mp);
                snprintf(p->config_hash, sizeof p->config_hash, "%s", mp.config_hash);
                snprintf(p->trace_hash, sizeof p->trace_hash, "%s", mp.trace_hash);
                if (mp.data[0])
                    snprintf(p->data, sizeof p->data, "%s", mp.data);
            }
        }
        for (int i = 2; i < ac && !p->data[0]; i++) {
            char q[PATH_MAX];
            demo_path(cwd, av[i], q, sizeof q);
            if (av[i][0] != '-' && ends(av[i], ".atr") && is_file(q))
                trace_source(tc, q, p);
        }
        snprintf(p->from, sizeof p->from, "the demo step that wrote the folder (" DEMO_MARKER ")%s",
                 input ? "; hashes from its input's manifest.json" : "");
    }
    mem_free(text);
    return found;
}

void rep_data_sources(const struct rep_section *s, char *out, size_t n)
{
    size_t used = 0;
    out[0] = 0;
    for (size_t i = 0; i < s->n_files && used + 1 < n; i++) {
        const char *d = s->files[i].prov.data;
        bool seen = !d[0];
        for (size_t j = 0; j < i && !seen; j++)
            seen = !strcmp(s->files[j].prov.data, d);
        if (seen)
            continue;
        int k = snprintf(out + used, n - used, "%s%s", used ? "; " : "", d);
        used = k < 0 ? n : used + (size_t)k;
    }
    if (!out[0])
        snprintf(out, n, "not recorded (no trace header or manifest.json names its source)");
}

/* p->data from a reproduce folder's sources.csv: "SOURCE: DATA; ..." (nothing when absent). */
static void repro_sources(const char *dir, struct rep_prov *p)
{
    char path[PATH_MAX + 32];
    struct csv_table t = {0};
    if (snprintf(path, sizeof path, "%s/sources.csv", dir) >= (int)sizeof path || !is_file(path) ||
        csv_table_load(&t, path, false, NULL))
        return;
    long cd = csv_table_col(&t, "data"), cs = csv_table_col(&t, "source");
    size_t used = 0;
    for (size_t r = 0; r < t.n_rows && cd >= 0 && cs >= 0 && used < sizeof p->data; r++) {
        int n = snprintf(p->data + used, sizeof p->data - used, "%s%s: %s", r ? "; " : "",
                         t.rows[r][cs], t.rows[r][cd]);
        used = n < 0 ? sizeof p->data : used + (size_t)n;
    }
    if (used >= sizeof p->data)
        p->data[sizeof p->data - 1] = 0; /* a caption: cut, never overrun */
    if (!t.n_rows)
        snprintf(p->data, sizeof p->data, "no capture (solver lines and the papers' inputs)");
    csv_table_release(&t);
}

/* Provenance of file rel: nearest manifest.json at or above its folder, else a demo step. */
static void provenance(struct rep_trace_cache *tc, const struct rep_section *s, const char *rel,
                       struct rep_prov *p)
{
    char folder[PATH_MAX];
    snprintf(folder, sizeof folder, "%s", rel);
    char *slash = strrchr(folder, '/');
    if (slash)
        *slash = 0;
    else
        folder[0] = 0;
    for (;;) {
        char m[PATH_MAX + 64], d[PATH_MAX];
        rep_join(s, folder, d, sizeof d);
        snprintf(m, sizeof m, "%s/manifest.json", d);
        if (is_file(m)) {
            read_manifest(m, p);
            if (snprintf(p->from, sizeof p->from, "%s%smanifest.json", folder,
                         folder[0] ? "/" : "") >= (int)sizeof p->from)
                p->from[sizeof p->from - 1] = 0; /* a caption: cut, never overrun */
            return;
        }
        snprintf(m, sizeof m, "%s/" DEMO_MARKER, d);
        char fd[PATH_MAX];
        rep_join(s, rel, fd, sizeof fd);
        char *fs = strrchr(fd, '/');
        if (fs)
            *fs = 0;
        if (is_file(m) && demo_step(tc, m, fd, p))
            return;
        snprintf(m, sizeof m, "%s/" REPRO_MARKER_NAME, d);
        if (!p->data[0] && is_file(m))
            repro_sources(d, p); /* and on up: a demo step may have run the reproduce */
        if (!folder[0])
            break;
        slash = strrchr(folder, '/');
        if (slash)
            *slash = 0;
        else
            folder[0] = 0;
    }
}

/* ---- sections ---- */

static int add_section(struct rep_doc *d, const char *path, const char *label, const char *prefix,
                       struct errmsg *e)
{
    if (grow((void **)&d->secs, &d->cap_secs, d->n_secs + 1, sizeof *d->secs))
        return errmsg_set(e, ERR_NOMEM, "out of memory");
    struct rep_section *s = &d->secs[d->n_secs++];
    memset(s, 0, sizeof *s);
    char abs[PATH_MAX];
    if (!realpath(path, abs))
        snprintf(abs, sizeof abs, "%s", path);
    s->path = mem_strdup(path);
    s->abs = mem_strdup(abs);
    s->label = mem_strdup(label);
    s->prefix = mem_strdup(prefix);
    if (!s->path || !s->abs || !s->label || !s->prefix)
        return errmsg_set(e, ERR_NOMEM, "out of memory");
    int rc = walk(s, d->opts, "", 0);
    if (rc)
        return errmsg_set(e, rc, "out of memory listing '%s'", path);
    if (s->n_files)
        qsort(s->files, s->n_files, sizeof *s->files, cmp_file);
    for (size_t i = 0; i < s->n_files; i++) {
        if ((rc = describe(s, &s->files[i])) != 0)
            return errmsg_set(e, rc, "out of memory describing '%s'", path);
        provenance(&d->traces, s, s->files[i].rel, &s->files[i].prov);
    }
    if ((rc = rep_headlines(s, &d->traces)) != 0)
        return errmsg_set(e, rc, "out of memory reading the headline numbers of '%s'", path);
    return 0;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The marked children of dir, sorted (caller frees); *n = 0 when none. */
static int children(const char *dir, char ***out, size_t *n)
{
    *out = NULL;
    *n = 0;
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    size_t cap = 0;
    int rc = 0;
    struct dirent *de;
    while (!rc && (de = readdir(d))) {
        if (de->d_name[0] == '.')
            continue;
        char p[PATH_MAX];
        if (snprintf(p, sizeof p, "%s/%s", dir, de->d_name) >= (int)sizeof p || !is_dir(p))
            continue;
        if (grow((void **)out, &cap, *n + 1, sizeof **out)) {
            rc = ERR_NOMEM;
            break;
        }
        if (!((*out)[*n] = mem_strdup(de->d_name)))
            rc = ERR_NOMEM;
        else
            (*n)++;
    }
    closedir(d);
    if (*n)
        qsort(*out, *n, sizeof **out, cmp_str);
    return rc;
}

static int add_dir(struct rep_doc *d, const char *dir, struct errmsg *e)
{
    struct stat st;
    if (stat(dir, &st))
        return errmsg_set(e, ERR_NOINPUT, "cannot open folder '%s': %s", dir, strerror(errno));
    if (!S_ISDIR(st.st_mode))
        return errmsg_set(e, ERR_USAGE, "'%s' is not a folder", dir);
    char label[PATH_MAX];
    snprintf(label, sizeof label, "%s", dir);
    for (size_t l = strlen(label); l > 1 && label[l - 1] == '/'; l--)
        label[l - 1] = 0;
    char **kids = NULL;
    size_t n = 0;
    int rc = marked(label) ? 0 : children(label, &kids, &n);
    if (rc)
        return errmsg_set(e, rc, "out of memory listing '%s'", dir);
    size_t n_marked = 0;
    for (size_t i = 0; i < n; i++) {
        char p[PATH_MAX * 2];
        snprintf(p, sizeof p, "%s/%s", label, kids[i]);
        n_marked += marked(p);
    }
    if (!n_marked) {
        rc = add_section(d, label, label, "", e);
    } else {
        for (size_t i = 0; i < n && !rc; i++) {
            char p[PATH_MAX * 2], pre[PATH_MAX];
            snprintf(p, sizeof p, "%s/%s", label, kids[i]);
            snprintf(pre, sizeof pre, "%s/", kids[i]);
            if (excluded(d->opts, kids[i], kids[i]))
                buf_printf(&d->skipped, "%s%s (--exclude)", d->skipped.len ? "; " : "", p);
            else if (!marked(p))
                buf_printf(&d->skipped, "%s%s (no demo or reproduce marker)",
                           d->skipped.len ? "; " : "", p);
            else
                rc = add_section(d, p, p, pre, e);
        }
    }
    for (size_t i = 0; i < n; i++)
        mem_free(kids[i]);
    mem_free(kids);
    return rc;
}

int rep_doc_build(struct rep_doc *doc, const struct report_opts *opts, struct errmsg *e)
{
    memset(doc, 0, sizeof *doc);
    doc->opts = opts;
    buf_init(&doc->skipped);
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", opts->html_path);
    char *slash = strrchr(dir, '/');
    if (slash)
        *slash = 0;
    else
        snprintf(dir, sizeof dir, ".");
    if (!dir[0])
        snprintf(dir, sizeof dir, "/");
    for (size_t i = 0; i < opts->n_dirs; i++) {
        int rc = add_dir(doc, opts->dirs[i], e);
        if (rc)
            return rc;
    }
    if (!realpath(dir, doc->out_dir))
        return errmsg_set(e, ERR_IO, "cannot open the output folder '%s': %s", dir,
                          strerror(errno));
    return buf_err(&doc->skipped) ? errmsg_set(e, ERR_NOMEM, "out of memory") : 0;
}

void rep_doc_release(struct rep_doc *doc)
{
    for (size_t i = 0; i < doc->n_secs; i++) {
        struct rep_section *s = &doc->secs[i];
        for (size_t k = 0; k < s->n_files; k++) {
            mem_free(s->files[k].rel);
            mem_free(s->files[k].caption);
            mem_free(s->files[k].title);
            if (s->files[k].has_tab)
                csv_table_release(&s->files[k].tab);
        }
        mem_free(s->files);
        mem_free(s->heads);
        mem_free(s->path);
        mem_free(s->abs);
        mem_free(s->label);
        mem_free(s->prefix);
    }
    mem_free(doc->secs);
    rep_trace_cache_release(&doc->traces);
    buf_release(&doc->skipped);
    memset(doc, 0, sizeof *doc);
}

void rep_link(const struct rep_doc *d, const struct rep_section *s, const char *rel, char *out,
              size_t n)
{
    char target[PATH_MAX * 2];
    snprintf(target, sizeof target, "%s/%s", s->abs, rel);
    const char *a = d->out_dir, *b = target;
    /* longest common prefix ending at a folder boundary */
    size_t i = 0, cut = 0;
    while (a[i] && a[i] == b[i]) {
        if (a[i] == '/')
            cut = i;
        i++;
    }
    if (!a[i] && (b[i] == '/' || !b[i]))
        cut = i;
    if (!strcmp(a, "/")) {
        snprintf(out, n, "%s", b + 1);
        return;
    }
    size_t k = 0;
    out[0] = 0;
    for (const char *p = a + cut; *p && k + 4 < n; p++)
        if (*p == '/')
            k += (size_t)snprintf(out + k, n - k, "../");
    snprintf(out + k, n - k, "%s", b[cut] == '/' ? b + cut + 1 : b + cut);
}
