/*
 * cmd_export: `acceltrace export KIND ...`: exports data from a trace for other tools.
 * Each kind registers one row below and lives in its own cli/cmd_export_<name>.c; what
 * they share (cli/cmd_export.h) follows the dispatcher.
 */
#include "cli/cmd_export.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>

#include "cli/cli.h"
#include "cli/subverb.h"
#include "common/io.h"

int cmd_export_tiles(int argc, char **argv);
int cmd_export_hbm(int argc, char **argv);
int cmd_export_timeline(int argc, char **argv);
int cmd_export_scalesim(int argc, char **argv);
int cmd_export_chakra(int argc, char **argv);

static const struct subverb table[] = {
    {"tiles", cmd_export_tiles, "SA-Kura RTL stimulus ($readmemh) for one step and array shape"},
    {"hbm-trace", cmd_export_hbm, "Salca K/V gathers as Ramulator 2 / DRAMsim3 request traces"},
    {"timeline", cmd_export_timeline,
     "a replayed config's schedule as a Chrome/Perfetto timeline (JSON)"},
    {"scalesim", cmd_export_scalesim, "a DiT step's GEMMs as a SCALE-Sim v2 topology and config"},
    {"chakra", cmd_export_chakra,
     "a DiT's modelled ops with measured densities as a Chakra execution trace"},
    /* rows: {"name", cmd_export_name, "summary"}, */
    {NULL, NULL, NULL},
};

int cmd_export(int argc, char **argv);
int cmd_export(int argc, char **argv)
{
    /* --allow-partial applies to every sub-verb that opens a trace (cli.h) */
    argc = cli_take_trace_options(argc, argv);
    return subverb_dispatch("export", "kind", table, argc, argv, true);
}

int cmd_export_parse(const struct cli_spec *spec, int argc, char **argv, const char *noun,
                     const char *need, int (*opt)(void *ctx, int id, const char *arg), void *ctx,
                     struct cmd_export_args *a)
{
    *a = (struct cmd_export_args){0};
    struct cli_parser p;
    cli_parser_init(&p, spec, argc, argv);
    for (int id; (id = cli_next(&p)) != CLI_END;) {
        int rc = 0;
        if (id == CLI_HELP || id == CLI_BAD)
            return id == CLI_HELP ? -1 : cli_next_exit(id);
        if (id == CLI_POSITIONAL) {
            if (a->in)
                return cli_usage_error(spec->verb, "more than one %s ('%s')", noun, p.arg);
            a->in = p.arg;
        } else if (!cli_is_common(id) && (rc = opt(ctx, id, p.arg)) != 0) {
            return rc;
        }
    }
    a->out = p.common.output;
    a->json = p.common.json;
    a->quiet = p.common.quiet;
    if (!a->in || !a->out)
        return cli_usage_error(spec->verb, "%s", need);
    return 0;
}

bool cmd_export_parse_steps(const char *v, uint32_t *lo, uint32_t *hi)
{
    char *end;
    errno = 0;
    unsigned long long a = strtoull(v, &end, 10), b = a;
    bool ok = end != v && !errno && v[0] != '-';
    if (ok && *end == '-') {
        const char *q = end + 1;
        b = strtoull(q, &end, 10);
        ok = end != q && !errno && *q != '-';
    }
    if (!ok || *end || a > b || b > UINT32_MAX)
        return false;
    *lo = (uint32_t)a;
    *hi = (uint32_t)b;
    return true;
}

int cmd_export_check_outputs(const char *verb, const char *in, const char *const *outs, size_t n)
{
    const char *ins[1] = {in};
    struct errmsg e = {0};
    if (io_check_distinct(ins, 1, outs, n, &e))
        return cli_usage_error(verb, "%s", errmsg_text(&e));
    return 0;
}

int cmd_export_dit(const char *verb, const char *path, struct peer_dit *d,
                   int (*write)(const struct peer_dit *d, void *ctx, struct errmsg *e), void *ctx)
{
    struct errmsg e = {0};
    int rc = peer_dit_read(path, d, &e);
    if (!rc)
        rc = write(d, ctx, &e);
    if (!rc)
        return 0;
    int status = rc == ERR_USAGE ? cli_usage_error(verb, "%s ('%s')", errmsg_text(&e), path)
                                 : cli_fail(rc, errmsg_text(&e));
    peer_dit_release(d);
    return status;
}
