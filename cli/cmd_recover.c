/*
 * cmd_recover: `acceltrace recover FILE.atr.partial [-o FILE.atr]` turns the file a killed
 * capture left into a valid trace with every complete frame (traces/trace_recover.h).
 */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "common/mem.h"
#include "traces/trace_recover.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: acceltrace recover FILE.atr.partial [-o FILE.atr]\n\n"
               "copies every complete, intact frame of a trace whose writer was killed (or of\n"
               "any trace with an intact header frame) into a new, valid trace with a fresh\n"
               "index; the copy stops at the first incomplete or damaged frame\n\n"
               "options:\n"
               "  -o, --output FILE  the trace to write (default: the input without '.partial');\n"
               "                     written as FILE.recovering, then renamed; exit 2 when the\n"
               "                     input is FILE or FILE.recovering\n"
               "  -h, --help         this text\n");
}

int cmd_recover(int argc, char **argv);
int cmd_recover(int argc, char **argv)
{
    const char *in = NULL, *out = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (cli_is_help(a)) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "-o") || !strcmp(a, "--output")) {
            if (i + 1 >= argc)
                return cli_usage_error("recover", "%s needs a file name", a);
            out = argv[++i];
        } else if (a[0] == '-' && a[1]) {
            return cli_usage_error("recover", "unknown option '%s'", a);
        } else if (!in) {
            in = a;
        } else {
            return cli_usage_error("recover", "more than one input file");
        }
    }
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
    printf("recovered %llu frames into %s (%llu bytes kept, %llu dropped; stopped at: %s)\n",
           (unsigned long long)res.frames, out, (unsigned long long)res.kept_bytes,
           (unsigned long long)res.dropped_bytes, res.stop);
    mem_free(def);
    return 0;
}
