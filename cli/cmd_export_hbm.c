/*
 * cmd_export_hbm: `acceltrace export hbm-trace FILE.atr --format ramulator|dramsim3|both
 * -o DIR`: the K/V gather streams of a Salca trace's decode jobs as Ramulator 2 and DRAMsim3
 * request traces (replay/hbm_export; issue 19 item 5), with DIR/README.md and DIR/jobs.csv.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/cli.h"
#include "common/err.h"
#include "common/io.h"
#include "common/mem.h"
#include "common/progress.h"
#include "formats/varint.h"
#include "replay/hbm_export.h"
#include "replay/hw_config.h"
#include "traces/trace_reader.h"

#define VERB "export hbm-trace"

static void usage(FILE *f)
{
    fputs("usage: acceltrace export hbm-trace FILE.atr -o DIR [options]\n"
          "\n"
          "Writes the K/V gathers of the selected Salca decode jobs (the jobs of `analyze\n"
          "conflicts --steps/--method`) as DRAM request traces, one 32-byte read per line,\n"
          "under the configured pseudo-channel map and layout (docs/models.md, \"HBM timing\n"
          "mode\"): DIR/ramulator.trace (Ramulator 2 LoadStoreTrace, \"LD 0xADDR\"),\n"
          "DIR/dramsim3.trace (\"0xADDR READ CYCLE\"), DIR/jobs.csv (the jobs and their\n"
          "line ranges) and DIR/README.md (address bit map, how to run both simulators,\n"
          "how to compare with hbm_time.csv). Prints jobs, tokens, requests, bytes and the\n"
          "write rate.\n"
          "\n"
          "options:\n"
          "  -o DIR                      output folder (created if missing; required)\n"
          "  --hw CONFIG.json            take h_att, map, map_seed, p_iss, method, hbm.preset,\n"
          "                              hbm.layout and hbm.token_bytes from a salca replay\n"
          "                              config (options given here override it)\n"
          "  --format ramulator|dramsim3|both  which traces (both)\n"
          "  --steps A-B                 only decode steps A..B\n"
          "  --method NAME|ID            selection method (salca)\n"
          "  --pcs N                     attention pseudo-channels h_att, a power of two (16)\n"
          "  --map mod|xor|hash          token-to-PC map (mod)\n"
          "  --seed N                    hash map seed (0)\n"
          "  --layout kv_bg|one_bg|same_bank  K/V placement in a PC (kv_bg)\n"
          "  --p-iss N                   tokens issued per token time, DRAMsim3 cycles (h_att)\n"
          "  -h, --help                  this help\n",
          f);
}

static const char *const method_names[] = {"salca",     "std_topk", "pl_topk",
                                           "full_feat", "quest",    "dense"};

static bool parse_steps(const char *v, uint32_t *lo_out, uint32_t *hi_out)
{
    char *end;
    errno = 0;
    unsigned long lo = strtoul(v, &end, 10), hi = lo;
    bool ok = end != v && !errno && v[0] != '-';
    if (ok && *end == '-') {
        const char *b = end + 1;
        hi = strtoul(b, &end, 10);
        ok = end != b && !errno && *b != '-';
    }
    if (!ok || *end || lo > hi || hi > UINT32_MAX)
        return false;
    *lo_out = (uint32_t)lo;
    *hi_out = (uint32_t)hi;
    return true;
}

struct out_file {
    const char *name;
    char path[4096];
    struct sink k;
    bool open;
    struct hbm_export *x;
};

int cmd_export_hbm(int argc, char **argv);
int cmd_export_hbm(int argc, char **argv)
{
    const char *path = NULL, *dir = NULL, *fmt = "both";
    bool steps = false;
    uint32_t step_lo = 0, step_hi = 0, p_iss = 0;
    int64_t method = 0;
    struct hbm_pc_mapping pm = {HBM_PC_MAP_MOD, 16, 0};
    struct hbm_timing_cfg tc;
    hbm_timing_cfg_default(&tc);
    const char *hw = NULL;
    /* options given on the command line, which a --hw config does not override */
    bool g_pcs = false, g_map = false, g_seed = false, g_layout = false, g_piss = false,
         g_method = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (cli_is_help(a)) {
            usage(stdout);
            return 0;
        }
        if (a[0] != '-' || !a[1]) {
            if (path)
                return cli_usage_error(VERB, "more than one trace ('%s')", a);
            path = a;
            continue;
        }
        if (!v)
            return cli_usage_error(VERB, "option '%s' needs a value", a);
        i++;
        int64_t n;
        if (!strcmp(a, "-o")) {
            dir = v;
        } else if (!strcmp(a, "--hw")) {
            hw = v;
        } else if (!strcmp(a, "--format")) {
            if (strcmp(v, "ramulator") && strcmp(v, "dramsim3") && strcmp(v, "both"))
                return cli_usage_error(VERB, "bad --format '%s' (ramulator, dramsim3 or both)", v);
            fmt = v;
        } else if (!strcmp(a, "--steps")) {
            if (!parse_steps(v, &step_lo, &step_hi))
                return cli_usage_error(VERB, "bad --steps '%s' (A-B or A, A <= B)", v);
            steps = true;
        } else if (!strcmp(a, "--method")) {
            method = -1;
            for (size_t k = 0; k < sizeof method_names / sizeof method_names[0]; k++)
                if (!strcmp(v, method_names[k]))
                    method = (int64_t)k;
            if (method < 0 && (!cli_parse_i64(v, &method) || method < 0 || method > 65535))
                return cli_usage_error(VERB, "bad --method '%s' (a name or an id)", v);
            g_method = true;
        } else if (!strcmp(a, "--pcs")) {
            if (!cli_parse_i64(v, &n) || n < 2 || n > HBM_PC_MAX_PCS || (n & (n - 1)))
                return cli_usage_error(VERB, "bad --pcs '%s' (a power of two, 2..%d)", v,
                                       HBM_PC_MAX_PCS);
            pm.h_att = (uint32_t)n;
            g_pcs = true;
        } else if (!strcmp(a, "--map")) {
            if (hbm_pc_map_parse(v, &pm.map) < 0)
                return cli_usage_error(VERB, "bad --map '%s' (mod, xor or hash)", v);
            g_map = true;
        } else if (!strcmp(a, "--seed")) {
            if (!cli_parse_u64(v, &pm.seed))
                return cli_usage_error(VERB, "bad --seed '%s'", v);
            g_seed = true;
        } else if (!strcmp(a, "--layout")) {
            if (hbm_timing_layout_parse(v, &tc.layout) < 0)
                return cli_usage_error(VERB, "bad --layout '%s' (kv_bg, one_bg or same_bank)", v);
            g_layout = true;
        } else if (!strcmp(a, "--p-iss")) {
            if (!cli_parse_i64(v, &n) || n < 1 || n > 4096)
                return cli_usage_error(VERB, "bad --p-iss '%s' (1..4096)", v);
            p_iss = (uint32_t)n;
            g_piss = true;
        } else {
            return cli_usage_error(VERB, "unknown option '%s'", a);
        }
    }
    if (!path || !dir)
        return cli_usage_error(VERB, "need FILE.atr and -o DIR");
    struct errmsg e = {0};
    if (hw) {
        struct hw_config *cfg = NULL;
        int lrc = hw_config_load(&cfg, hw, NULL, &e);
        if (lrc < 0)
            return cli_fail(lrc, errmsg_text(&e));
        if (strcmp(hw_config_schema(cfg)->model, "salca") ||
            !strcmp(hw_config_str(cfg, "variant"), "dense")) {
            cli_error("'%s' is not a salca config of the salca variant (model %s)", hw,
                      hw_config_schema(cfg)->model);
            hw_config_free(cfg);
            return 3;
        }
        /* the salca model's keys (replay/salca_model.c); hbm.token_bytes 0 = b_att/8 = 2·d */
        if (!g_pcs)
            pm.h_att = (uint32_t)hw_config_int(cfg, "h_att");
        if (!g_map)
            hbm_pc_map_parse(hw_config_str(cfg, "map"), &pm.map);
        if (!g_seed)
            pm.seed = (uint64_t)hw_config_int(cfg, "map_seed");
        if (!g_piss)
            p_iss = (uint32_t)hw_config_int(cfg, "p_iss");
        if (!g_method)
            method = hw_config_int(cfg, "method");
        if (!g_layout)
            hbm_timing_layout_parse(hw_config_str(cfg, "hbm.layout"), &tc.layout);
        hbm_timing_preset(hw_config_str(cfg, "hbm.preset"), &tc.t);
        int64_t tb = hw_config_int(cfg, "hbm.token_bytes");
        tc.token_bytes = (uint32_t)(tb ? tb : 2 * hw_config_int(cfg, "d"));
        hw_config_free(cfg);
        if (hbm_pc_mapping_check(&pm, &e) < 0 || hbm_timing_check(&tc, &e) < 0 ||
            hbm_export_map_init(&(struct hbm_export_map){0}, &tc, pm.h_att, &e) < 0) {
            cli_error("%s ('%s')", errmsg_text(&e), hw);
            return 3;
        }
    }
    if (hbm_pc_mapping_check(&pm, &e) < 0 || hbm_timing_check(&tc, &e) < 0)
        return cli_usage_error(VERB, "%s", errmsg_text(&e));
    struct hbm_export_map bm;
    if (hbm_export_map_init(&bm, &tc, pm.h_att, &e) < 0)
        return cli_usage_error(VERB, "%s", errmsg_text(&e));

    struct out_file outs[4] = {{.name = "ramulator.trace"},
                               {.name = "dramsim3.trace"},
                               {.name = "jobs.csv"},
                               {.name = "README.md"}};
    bool want[2] = {strcmp(fmt, "dramsim3") != 0, strcmp(fmt, "ramulator") != 0};
    const char *outp[5];
    size_t n_out = 0;
    for (size_t k = 0; k < 4; k++) {
        if (snprintf(outs[k].path, sizeof outs[k].path, "%s/%s", dir, outs[k].name) >=
            (int)sizeof outs[k].path)
            return cli_usage_error(VERB, "output folder name too long");
        if (k >= 2 || want[k])
            outp[n_out++] = outs[k].path;
    }
    outp[n_out++] = dir;
    const char *ins[1] = {path};
    if (io_check_distinct(ins, 1, outp, n_out, &e))
        return cli_usage_error(VERB, "%s", errmsg_text(&e));

    struct trace_reader *r = NULL;
    struct errmsg oe = {0};
    int rc = trace_reader_open(&r, path, NULL, &oe);
    if (rc < 0)
        return cli_fail(rc, oe.text);
    const Acceltrace__TraceHeader *hdr = trace_reader_header(r);
    int status = 0;
    uint32_t *idx = NULL;
    size_t idx_cap = 0;
    Acceltrace__Record *rec = NULL;
    char line[160];
    if (!hdr || strcmp(hdr->workload, "salca") != 0) {
        cli_error("not a salca trace ('%s' workload '%s')", path, hdr ? hdr->workload : "");
        status = 3;
        goto done;
    }
    if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
        cli_error("cannot create folder '%s': %s", dir, strerror(errno));
        status = 1;
        goto done;
    }
    for (size_t k = 0; k < 3; k++) {
        if (k < 2 && !want[k])
            continue;
        if ((rc = sink_open_file(&outs[k].k, outs[k].path, &e)) < 0) {
            status = cli_fail(rc, errmsg_text(&e));
            goto done;
        }
        outs[k].open = true;
        if (k < 2 && (rc = hbm_export_new(&outs[k].x, &outs[k].k, (enum hbm_export_format)k, &tc,
                                          &pm, p_iss, &e)) < 0) {
            status = cli_fail(rc, errmsg_text(&e));
            goto done;
        }
    }
    const char *hdr_line = "job,step,layer,head,tokens,first_request,requests\n";
    if ((rc = sink_write(&outs[2].k, hdr_line, strlen(hdr_line))) < 0)
        goto io_fail;
    uint64_t jobs = 0, tokens = 0, requests = 0, rec_no = 0;
    uint32_t per_token = tc.token_bytes / tc.t.burst_bytes;
    double t_start = progress_now_s(), t_write = 0;
    while ((rc = trace_reader_next(r, &rec, NULL)) == 1) {
        rec_no++;
        if (rec->body_case != ACCELTRACE__RECORD__BODY_SALCA_SELECT) {
            trace_record_free(rec);
            rec = NULL;
            continue;
        }
        const Acceltrace__SalcaSelect *s = rec->salca_select;
        if (s->method != (uint32_t)method || (steps && (s->t < step_lo || s->t > step_hi))) {
            trace_record_free(rec);
            rec = NULL;
            continue;
        }
        if (s->count > s->n_ctx || s->n_ctx > (1u << 26)) {
            cli_error("selection of %u tokens in a context of %u ('%s' record %llu)", s->count,
                      s->n_ctx, path, (unsigned long long)rec_no);
            status = 3;
            goto done;
        }
        if (s->count > idx_cap) {
            uint32_t *p = mem_realloc(idx, (size_t)s->count * sizeof *p);
            if (!p) {
                status = cli_fail(ERR_NOMEM, "out of memory");
                goto done;
            }
            idx = p;
            idx_cap = s->count;
        }
        size_t got = 0;
        int drc = varint_decode_indices(s->sel.data, s->sel.len, s->n_ctx, idx, s->count, &got);
        if (drc < 0 || got != s->count) {
            cli_error("bad selection list (%zu of %u indices) at step %u layer %u head %u "
                      "('%s' record %llu)",
                      got, s->count, s->t, s->l, s->h, path, (unsigned long long)rec_no);
            status = 3;
            goto done;
        }
        double t0 = progress_now_s();
        for (size_t k = 0; k < 2; k++)
            if (want[k] && (rc = hbm_export_job(outs[k].x, s->l, s->h, idx, got)) < 0)
                goto io_fail;
        t_write += progress_now_s() - t0;
        int len = snprintf(line, sizeof line, "%llu,%u,%u,%u,%zu,%llu,%llu\n",
                           (unsigned long long)jobs, s->t, s->l, s->h, got,
                           (unsigned long long)requests + 1, (unsigned long long)got * per_token);
        if ((rc = sink_write(&outs[2].k, line, (size_t)len)) < 0)
            goto io_fail;
        jobs++;
        tokens += got;
        requests += (uint64_t)got * per_token;
        trace_record_free(rec);
        rec = NULL;
    }
    rec = NULL;
    if (rc < 0) {
        status = cli_fail(rc, trace_reader_errmsg(r));
        goto done;
    }
    if (jobs == 0) {
        cli_error("no selections of method %lld%s in '%s'", (long long)method,
                  steps ? " in the given steps" : "", path);
        status = 3;
        goto done;
    }
    uint64_t bytes = 0;
    double t0 = progress_now_s();
    for (size_t k = 0; k < 2; k++)
        if (want[k]) {
            if ((rc = hbm_export_finish(outs[k].x)) < 0)
                goto io_fail;
            bytes += hbm_export_bytes(outs[k].x);
        }
    t_write += progress_now_s() - t0;
    const char *names[3] = {NULL, NULL, NULL};
    size_t nn = 0;
    for (size_t k = 0; k < 2; k++)
        if (want[k])
            names[nn++] = outs[k].name;
    if ((rc = sink_open_file(&outs[3].k, outs[3].path, &e)) < 0) {
        status = cli_fail(rc, errmsg_text(&e));
        goto done;
    }
    outs[3].open = true;
    if ((rc = hbm_export_readme(&outs[3].k, &tc, &pm, p_iss, names)) < 0)
        goto io_fail;
    for (size_t k = 0; k < 4; k++) {
        if (!outs[k].open)
            continue;
        outs[k].open = false;
        if ((rc = sink_close(&outs[k].k)) < 0)
            goto io_fail;
    }
    printf("jobs=%llu\ntokens=%llu\nrequests=%llu\nbytes=%llu\n", (unsigned long long)jobs,
           (unsigned long long)tokens, (unsigned long long)requests, (unsigned long long)bytes);
    /* formatting and write(2) of the trace files only, not the trace decoding */
    printf("write_mb_per_s=%.1f\n", t_write > 0 ? (double)bytes / 1e6 / t_write : 0.0);
    fprintf(stderr, "acceltrace: wrote %s in %.2f s\n", dir, progress_now_s() - t_start);
    goto done;
io_fail:
    cli_error("cannot write in '%s': %s", dir, strerror(errno));
    status = 1;
done:
    trace_record_free(rec);
    for (size_t k = 0; k < 4; k++) {
        hbm_export_free(outs[k].x);
        if (outs[k].open)
            sink_close(&outs[k].k);
    }
    mem_free(idx);
    trace_reader_free(r);
    return status;
}
