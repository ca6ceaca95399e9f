/*
 * cmd_recover: `acceltrace recover FILE.atr.partial [-o FILE.atr]` turns the file a killed
 * capture left into a valid trace with every complete frame (traces/trace_recover.h).
 */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/cli_opt.h"
#include "common/mem.h"
#include "traces/trace_recover.h"

static const struct cli_opt opts[] = {
    CLI_OPT_OUTPUT("FILE", "the trace to write (default: the input without '.partial');\n"
                           "written as FILE.recovering, then renamed; exit 2 when the\n"
                           "input is FILE or FILE.recovering"),
    CLI_OPT_JSON,
    CLI_OPT_QUIET,
    CLI_OPT_END,
};

const struct cli_spec cmd_recover_spec = {
    .verb = "recover",
    .usage = "usage: acceltrace recover FILE.atr.partial [-o FILE.atr]\n\n"
             "copies every complete, intact frame of a trace whose writer was killed (or of\n"
             "any trace with an intact header frame) into a new, valid trace with a fresh\n"
             "index; the copy stops at the first incomplete or damaged frame\n",
    .opts = opts,
    .positional = "FILE",
};

int cmd_recover(int argc, char **argv)
{
    const char *in = NULL, *out = NULL;
    bool json = false;
    struct cli_parser p;
    cli_parser_init(&p, &cmd_recover_spec, argc, argv);
    for (int id; (id = cli_next(&p)) != CLI_END;) {
        if (id == CLI_HELP || id == CLI_BAD)
            return cli_next_exit(id);
        if (id == CLI_POSITIONAL) {
            if (in)
                return cli_usage_error("recover", "more than one input file");
            in = p.arg;
        } /* -q: the summary is the result; recover prints no progress */
    }
    out = p.common.output;
    json = p.common.json;
    if (!in)
        return cli_usage_error("recover", "no input file given");
    char *def = NULL;
    if (!out) {
        size_t n = strlen(in);
        if (n <= 8 || strcmp(in + n - 8, ".partial") != 0)
            return cli_usage_error("recover", "'%s' does not end in .partial: give -o FILE.atr",
                                   in);
        def = mem_alloc(n - 7);
        if (!def)
            return cli_fail(ERR_NOMEM, "out of memory");
        memcpy(def, in, n - 8);
        def[n - 8] = 0;
        out = def;
    }
    struct trace_recover_result res;
    struct errmsg e = {0, ""};
    int rc = trace_recover(in, out, &res, &e);
    if (rc) {
        mem_free(def);
        return cli_fail(rc, errmsg_text(&e));
    }
    if (json) {
        rc = cli_print_json(json_pack("{s:s,s:s,s:I,s:I,s:I,s:s}", "input", in, "output", out,
                                      "frames", (json_int_t)res.frames, "kept_bytes",
                                      (json_int_t)res.kept_bytes, "dropped_bytes",
                                      (json_int_t)res.dropped_bytes, "stopped_at", res.stop));
        mem_free(def);
        return rc;
    }
    printf("recovered %llu frames into %s (%llu bytes kept, %llu dropped; stopped at: %s)\n",
           (unsigned long long)res.frames, out, (unsigned long long)res.kept_bytes,
           (unsigned long long)res.dropped_bytes, res.stop);
    mem_free(def);
    return 0;
}
