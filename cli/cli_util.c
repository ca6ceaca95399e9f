#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/cli.h"
#include "common/err.h"
#include "common/grow.h"
#include "common/mem.h"
#include "common/version.h"
#include "replay/results.h"
#include "traces/trace_reader.h"

void cli_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("acceltrace: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

void cli_warn(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("acceltrace: warning: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

int cli_usage_error(const char *verb, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "acceltrace %s: ", verb);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\ntry 'acceltrace %s --help'\n", verb);
    va_end(ap);
    return 2;
}

int cli_fail(int code, const char *msg)
{
    cli_error("%s", msg && *msg ? msg : err_str(code));
    return err_exit_code(code);
}

bool cli_is_help(const char *arg)
{
    return !strcmp(arg, "-h") || !strcmp(arg, "--help");
}

/* The reader's warning hook: damage accepted under --allow-partial, never hidden by -q. */
static void warn_damaged_trace(const char *msg)
{
    cli_warn("damaged trace read with --allow-partial: %s", msg);
}

bool cli_trace_option(const char *arg)
{
    if (strcmp(arg, "--allow-partial") != 0)
        return false;
    trace_reader_global_allow_partial = true;
    trace_reader_set_warn_hook(warn_damaged_trace);
    return true;
}

int cli_take_trace_options(int argc, char **argv)
{
    int n = 0;
    for (int i = 0; i < argc; i++)
        if (i == 0 || !cli_trace_option(argv[i]))
            argv[n++] = argv[i];
    argv[n] = NULL;
    return n;
}

bool cli_parse_i64(const char *s, int64_t *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 0);
    if (errno || end == s || *end)
        return false;
    *out = v;
    return true;
}

bool cli_parse_u64(const char *s, uint64_t *out)
{
    char *end;
    if (*s == '-')
        return false;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 0);
    if (errno || end == s || *end)
        return false;
    *out = v;
    return true;
}

bool cli_parse_f64(const char *s, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    /* strtod accepts "nan", "inf" and "infinity"; no option means them */
    if (errno || end == s || *end || !isfinite(v))
        return false;
    *out = v;
    return true;
}

bool cli_parse_shape(const char *s, int max, int *a, int *b)
{
    char *end;
    errno = 0;
    long x = strtol(s, &end, 10);
    if (errno || end == s || (*end != 'x' && *end != 'X') || x < 1 || x > max)
        return false;
    const char *t = end + 1;
    long y = strtol(t, &end, 10);
    if (errno || end == t || *end || y < 1 || y > max)
        return false;
    *a = (int)x;
    *b = (int)y;
    return true;
}

static char cmdline_buf[4096];

const char *cli_command_line(void)
{
    return cmdline_buf;
}

void cli_set_command_line(int argc, char **argv)
{
    size_t n = 0;
    cmdline_buf[0] = 0;
    for (int i = 0; i < argc && n + 2 < sizeof cmdline_buf; i++) {
        int w = snprintf(cmdline_buf + n, sizeof cmdline_buf - n, "%s%s", i ? " " : "", argv[i]);
        if (w < 0)
            break;
        n += (size_t)w;
        if (n >= sizeof cmdline_buf)
            n = sizeof cmdline_buf - 1;
    }
}

/* A string of j's key k, copied into out (n bytes); NULL when absent. */
static const char *jcopy(const json_t *j, const char *k, char *out, size_t n)
{
    const char *v = json_string_value(json_object_get(j, k));
    if (!v)
        return NULL;
    snprintf(out, n, "%s", v);
    return out;
}

/* The first trace of the pass: its header's source and its content hash. */
static int ident_begin(void *self, const struct trace_scan_pos *pos, struct errmsg *e)
{
    (void)e;
    struct cli_trace_ident *id = self;
    if (id->set)
        return 0;
    const Acceltrace__TraceHeader *h = trace_reader_header(pos->r);
    const char *hash = trace_reader_content_hash(pos->r);
    snprintf(id->hash, sizeof id->hash, "%s", hash ? hash : "");
    snprintf(id->source, sizeof id->source, "%s", h && h->source ? h->source : "");
    snprintf(id->detail, sizeof id->detail, "%s", h && h->source_detail ? h->source_detail : "");
    id->set = true;
    return 0;
}

const struct analyzer_ops cli_trace_ident_ops = {
    .name = "trace_ident",
    .begin = ident_begin,
};

int cli_write_output_manifest(const char *kind, const char *out, const char *results_dir,
                              const char *const *traces, size_t n_traces)
{
    return cli_write_output_manifest_id(kind, out, results_dir, traces, n_traces, NULL);
}

int cli_write_output_manifest_id(const char *kind, const char *out, const char *results_dir,
                                 const char *const *traces, size_t n_traces,
                                 const struct cli_trace_ident *id)
{
    const char *inputs[66];
    size_t n_in = 0;
    if (results_dir)
        inputs[n_in++] = results_dir;
    for (size_t i = 0; i < n_traces && n_in < 66; i++)
        inputs[n_in++] = traces[i];
    /* "acceltrace ARGS": the program as a user types it, whatever path ran it */
    char command[4096];
    const char *args = strchr(cli_command_line(), ' ');
    snprintf(command, sizeof command, "acceltrace%s", args ? args : "");
    char th[128] = "", ch[128] = "", src[512] = "", det[1024] = "";
    struct results_output_manifest m = {.kind = kind,
                                        .version = ACCELTRACE_VERSION,
                                        .command = command,
                                        .inputs = inputs,
                                        .n_inputs = n_in};
    if (results_dir) { /* the hashes behind the rows plotted */
        char path[4096];
        snprintf(path, sizeof path, "%s/manifest.json", results_dir);
        json_error_t je;
        json_t *j = json_load_file(path, 0, &je);
        m.trace_hash = jcopy(j, "trace_hash", th, sizeof th);
        m.config_hash = jcopy(j, "config_hash", ch, sizeof ch);
        m.trace_source = jcopy(j, "trace_source", src, sizeof src);
        m.trace_source_detail = jcopy(j, "trace_source_detail", det, sizeof det);
        json_decref(j);
    }
    struct trace_reader *r = NULL;
    if (!m.trace_hash && n_traces && id && id->set) {
        m.trace_hash = id->hash[0] ? id->hash : NULL;
        m.trace_source = id->source;
        m.trace_source_detail = id->detail;
    } else if (!m.trace_hash && n_traces && trace_reader_open(&r, traces[0], NULL, NULL) >= 0 &&
               r) {
        const Acceltrace__TraceHeader *h = trace_reader_header(r);
        const char *hash = trace_reader_content_hash(r);
        if (hash)
            m.trace_hash = strncpy(th, hash, sizeof th - 1);
        if (h && h->source)
            m.trace_source = strncpy(src, h->source, sizeof src - 1);
        if (h && h->source_detail)
            m.trace_source_detail = strncpy(det, h->source_detail, sizeof det - 1);
    }
    trace_reader_free(r);
    struct errmsg e = {0};
    int rc = results_write_output_manifest(out, &m, &e);
    return rc ? cli_fail(rc, errmsg_text(&e)) : 0;
}

int cli_print_json(json_t *j)
{
    if (!j)
        return cli_fail(ERR_NOMEM, "out of memory");
    int rc = json_dumpf(j, stdout, JSON_COMPACT | JSON_ENSURE_ASCII | JSON_REAL_PRECISION(17));
    json_decref(j);
    if (rc || fputc('\n', stdout) == EOF || fflush(stdout))
        return cli_fail(ERR_IO, "cannot write the JSON output");
    return 0;
}

/* qsort order of json strings */
static int cmp_json_str(const void *a, const void *b)
{
    return strcmp(json_string_value(*(json_t *const *)a), json_string_value(*(json_t *const *)b));
}

json_t *cli_json_dir_files(const char *dir)
{
    DIR *d = opendir(dir);
    json_t *arr = json_array();
    if (!d || !arr) {
        if (d)
            closedir(d);
        return arr;
    }
    size_t n = 0, cap = 0;
    json_t **names = NULL;
    for (struct dirent *de; (de = readdir(d));) {
        char path[4096];
        struct stat st;
        if (snprintf(path, sizeof path, "%s/%s", dir, de->d_name) >= (int)sizeof path ||
            stat(path, &st) || !S_ISREG(st.st_mode))
            continue;
        if (grow((void **)&names, &cap, n + 1, sizeof *names))
            break;
        names[n++] = json_string(de->d_name);
    }
    closedir(d);
    size_t kept = 0;
    for (size_t i = 0; i < n; i++)
        if (names[i])
            names[kept++] = names[i];
    if (kept)
        qsort(names, kept, sizeof *names, cmp_json_str);
    for (size_t i = 0; i < kept; i++)
        json_array_append_new(arr, names[i]);
    mem_free(names);
    return arr;
}

json_t *cli_kv_json(const char *text, size_t len)
{
    json_t *j = json_object();
    const char *p = text, *end = text + len;
    while (j && p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
        const char *eq = memchr(p, '=', n);
        if (eq) {
            char key[256], val[4096];
            snprintf(key, sizeof key, "%.*s", (int)(eq - p), p);
            snprintf(val, sizeof val, "%.*s", (int)(n - (size_t)(eq - p) - 1), eq + 1);
            double d;
            int64_t i;
            json_t *v = cli_parse_i64(val, &i)   ? json_integer((json_int_t)i)
                        : cli_parse_f64(val, &d) ? json_real(d)
                                                 : json_string(val);
            if (json_object_set_new(j, key, v)) {
                json_decref(j);
                return NULL;
            }
        }
        p += n + 1;
    }
    return j;
}

int cli_kv_run_json(int (*fn)(void *ctx, FILE *f), void *ctx, json_t *(*extra)(void *ctx))
{
    char *text = NULL;
    size_t len = 0;
    FILE *mf = open_memstream(&text, &len);
    if (!mf)
        return cli_fail(ERR_NOMEM, "out of memory");
    int status = fn(ctx, mf);
    if (fclose(mf) != 0 && !status)
        status = cli_fail(ERR_NOMEM, "out of memory");
    if (!status) {
        json_t *j = cli_kv_json(text, len);
        json_t *x = extra ? extra(ctx) : NULL;
        if (j && x)
            json_object_update(j, x);
        json_decref(x);
        status = cli_print_json(j);
    }
    free(text);
    return status;
}

json_t *cli_json_trace_file(const char *path)
{
    struct trace_reader *r = NULL;
    struct errmsg e = {0};
    struct stat st;
    json_t *j = json_pack("{s:s}", "file", path);
    if (j && stat(path, &st) == 0)
        json_object_set_new(j, "bytes", json_integer((json_int_t)st.st_size));
    if (!j || trace_reader_open(&r, path, NULL, &e) < 0)
        return j;
    const Acceltrace__TraceIndex *ix = trace_reader_index(r);
    if (ix && ix->frame_count > 0)
        json_object_set_new(j, "records", json_integer((json_int_t)(ix->frame_count - 1)));
    const char *h = trace_reader_content_hash(r);
    if (h)
        json_object_set_new(j, "content_hash", json_string(h));
    trace_reader_free(r);
    return j;
}
