/*
 * cmd_export_tiles: `acceltrace export tiles FILE.atr --shape NhxNw [--step i] -o DIR`:
 * RTL stimulus of the SA-Kura array for one reverse step (docs/models.md, 'Tile streams and
 * RTL export').
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/kura_pick.h"
#include "cli/cli.h"
#include "cli/cli_opt.h"
#include "cli/cmd_export.h"
#include "common/err.h"
#include "common/io.h"
#include "common/mem.h"
#include "common/progress.h"
#include "replay/kura_tiles.h"
#include "traces/trace_reader.h"
#include "traces/trace_writer.h"

#define VERB "export tiles"

enum { OPT_SHAPE = 1, OPT_STEP };

static const struct cli_opt opts[] = {
    {OPT_SHAPE, "shape", 0, CLI_ARG_STRING, "NhxNw", "array shape, e.g. 20x5 (required)", 0},
    {OPT_STEP, "step", 0, CLI_ARG_STRING, "i",
     "reverse step (default T-1, the first drift evaluation)", 0},
    CLI_OPT_OUTPUT("DIR", "output folder (created if missing; required)"),
    CLI_OPT_QUIET,
    {CLI_ID_JSON, "json", 0, CLI_ARG_NONE, NULL,
     "one JSON document on stdout: folder, files, step, shape,\ntiles, cycles", 0},
    CLI_OPT_ALLOW_PARTIAL,
    CLI_OPT_END,
};

const struct cli_spec cmd_export_tiles_spec = {
    .verb = VERB,
    .usage = "usage: acceltrace export tiles FILE.atr --shape NhxNw [--step i] -o DIR\n"
             "\n"
             "Writes the per-cycle interface of an N_h x N_w SA-Kura array for the reverse step i\n"
             "of a kura trace (default i = T-1) as $readmemh files (docs/models.md, 'Tile streams\n"
             "and RTL export'): in.hex (ctrl + N_h+4 sin/cos lanes per cycle), out.hex (valid +\n"
             "N_h drained u_q), lut.hex, phase.hex, drift.hex, meta.json and README.txt. The\n"
             "streams come from the checked cycle-accurate simulation; stored KuraTiles of the\n"
             "same step and shape are compared with them (a difference is a data error, exit 3).\n",
    .opts = opts,
    .positional = "FILE",
};

/* The files kura_tiles_export writes into DIR. */
static const char *const out_names[] = {"meta.json", "in.hex",    "out.hex",   "lut.hex",
                                        "phase.hex", "drift.hex", "README.txt"};
enum { N_OUT = sizeof out_names / sizeof out_names[0] };

/* The trace may not be one of the files written into dir: 0 or exit status 2 after the
 * message (verb names the command). */
int cli_export_tiles_check(const char *verb, const char *path, const char *dir)
{
    char outs[N_OUT][4096];
    const char *outp[N_OUT + 1];
    for (size_t k = 0; k < N_OUT; k++) {
        if (snprintf(outs[k], sizeof outs[k], "%s/%s", dir, out_names[k]) >= (int)sizeof outs[k])
            return cli_usage_error(verb, "output folder name too long");
        outp[k] = outs[k];
    }
    outp[N_OUT] = dir;
    return cmd_export_check_outputs(verb, path, outp, N_OUT + 1);
}

int cli_export_tiles_write(const struct kura_pick *tp, const char *path, const char *dir, int nh,
                           int nw, bool json)
{
    int status = 0, rc;
    struct kura_streams st = {0};
    int32_t *d = NULL;
    struct errmsg em = {0};
    int64_t step = tp->step;
    int found = tp->found;
    const struct kura_step_info info = tp->info;
    const int16_t *q = tp->q;
    const Acceltrace__Record *stored = tp->stored;
    if (!found) {
        cli_error("no reverse step %lld in '%s'", (long long)step, path);
        status = 3;
        goto done;
    }
    d = mem_alloc((size_t)info.h * info.w * sizeof *d);
    if (!d) {
        status = cli_fail(ERR_NOMEM, "out of memory");
        goto done;
    }
    if ((rc = kura_tiles_derive(q, info.h, info.w, &info.regs, nh, nw, &st, NULL, d, &em))) {
        cli_error("%s ('%s' step %d)", errmsg_text(&em), path, info.step);
        status = err_exit_code(rc);
        goto done;
    }
    if (stored && stored->kura_tiles->step == info.step &&
        (rc = kura_tiles_compare(&st, stored->kura_tiles, &em))) {
        cli_error("%s ('%s')", errmsg_text(&em), path);
        status = 3;
        goto done;
    }
    if ((rc = kura_tiles_export(dir, &info, q, d, &st, tp->hash, &em))) {
        status = cli_fail(rc, errmsg_text(&em));
        goto done;
    }
    if (json) {
        json_t *files = json_array();
        for (size_t k = 0; k < N_OUT; k++)
            json_array_append_new(files, json_string(out_names[k]));
        status = cli_print_json(json_pack("{s:s,s:o,s:i,s:i,s:i,s:I,s:I,s:b}", "dir", dir, "files",
                                          files, "step", info.step, "n_h", nh, "n_w", nw, "tiles",
                                          (json_int_t)st.n_tiles, "cycles", (json_int_t)st.n_cyc,
                                          "stored_tiles_match", stored != NULL));
    } else {
        printf("wrote %s: step %d, H%dW%d, %lld tiles, %lld cycles%s\n", dir, info.step, nh, nw,
               (long long)st.n_tiles, (long long)st.n_cyc, stored ? ", stored tiles match" : "");
    }
done:
    kura_streams_release(&st);
    mem_free(d);
    return status;
}

/* The command line of the verb besides the input and -o. */
struct tiles_args {
    int nh, nw;   /* --shape, 0 when not given */
    int64_t step; /* --step, INT64_MIN for the default */
};

/* The options of the verb into the tiles_args ctx; 0 or exit status 2. */
static int parse_opt(void *ctx, int id, const char *v)
{
    struct tiles_args *t = ctx;
    if (id == OPT_SHAPE) {
        if (!cli_parse_shape(v, 4096, &t->nh, &t->nw))
            return cli_usage_error(VERB, "bad --shape (want NhxNw, e.g. 20x5)");
    } else if (id == OPT_STEP) {
        if (!cli_parse_i64(v, &t->step) || t->step < 0 || t->step > INT32_MAX)
            return cli_usage_error(VERB, "bad --step");
    }
    return 0;
}

int cmd_export_tiles(int argc, char **argv);
int cmd_export_tiles(int argc, char **argv)
{
    static const char need[] = "need FILE.atr, --shape and -o";
    struct tiles_args t = {.step = INT64_MIN};
    struct cmd_export_args a;
    int status =
        cmd_export_parse(&cmd_export_tiles_spec, argc, argv, "trace", need, parse_opt, &t, &a);
    if (status)
        return status < 0 ? 0 : status; /* -1: the help */
    if (!t.nh)
        return cli_usage_error(VERB, "%s", need);
    const char *path = a.in, *dir = a.out;
    const int nh = t.nh, nw = t.nw;
    const int64_t step = t.step;
    const bool json = a.json;
    status = cli_export_tiles_check(VERB, path, dir);
    if (status)
        return status;
    struct kura_pick tp = {.step = step, .nh = nh, .nw = nw};
    const struct analyzer an = {&kura_pick_ops, &tp};
    struct errmsg em = {0};
    int rc = analyzer_run(path, &an, 1, NULL, &em);
    status = rc < 0 ? cli_fail(rc, errmsg_text(&em))
                    : cli_export_tiles_write(&tp, path, dir, nh, nw, json);
    kura_pick_release(&tp);
    return status;
}
