/*
 * cmd_verify: `acceltrace verify FILE...` checks every frame and the index of each trace
 * (traces/trace_verify.h). Exit 0 when all are intact, 3 when one is damaged.
 */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/cli_opt.h"
#include "traces/trace_verify.h"

static const struct cli_opt opts[] = {
    CLI_OPT_THREADS("decode frames with N threads (1..64, default 1)"),
    {CLI_ID_QUIET, "quiet", 'q', CLI_ARG_NONE, NULL, "print nothing on success", 0},
    {CLI_ID_JSON, "json", 0, CLI_ARG_NONE, NULL,
     "one JSON array on stdout: per file ok, frames, bytes, hash or\nerror", 0},
    CLI_OPT_END,
};

const struct cli_spec cmd_verify_spec = {
    .verb = "verify",
    .usage = "usage: acceltrace verify [options] FILE.atr...\n\n"
             "checks the preamble, every frame (length, codec, crc32c, zstd, protobuf), the\n"
             "trailer and the index (entries, frame count, content hash) of each trace\n",
    .opts = opts,
    .epilog = "prints 'ok FILE (N frames, B bytes, xxh3-128 HASH)' per intact trace (sha256 for\n"
              "traces written before XXH3); on a damaged one the first problem, naming the file,\n"
              "frame number and byte offset, and exit 3\n",
    .positional = "FILE",
};

int cmd_verify(int argc, char **argv)
{
    struct trace_reader_opts o;
    trace_reader_opts_default(&o);
    bool quiet = false;
    int n_files = 0;
    char *files[argc > 0 ? argc : 1];
    bool json = false;
    struct cli_parser p;
    cli_parser_init(&p, &cmd_verify_spec, argc, argv);
    for (int id; (id = cli_next(&p)) != CLI_END;) {
        if (id == CLI_HELP || id == CLI_BAD)
            return cli_next_exit(id);
        if (id == CLI_ID_THREADS) {
            if (p.i64 < 1 || p.i64 > 64)
                return cli_usage_error("verify", "--threads needs a thread count 1..64");
            o.threads = (int)p.i64;
        } else if (id == CLI_POSITIONAL) {
            files[n_files++] = (char *)p.arg;
        }
    }
    quiet = p.common.quiet;
    json = p.common.json;
    if (n_files == 0)
        return cli_usage_error("verify", "no trace file given");
    int status = 0;
    json_t *arr = json ? json_array() : NULL;
    for (int k = 0; k < n_files; k++) {
        struct trace_verify_result res;
        struct errmsg e = {0, ""};
        int rc = trace_verify(files[k], &o, &res, &e);
        if (rc) {
            int st = cli_fail(rc, errmsg_text(&e));
            if (st > status)
                status = st;
            json_array_append_new(arr, json_pack("{s:s,s:b,s:s}", "file", files[k], "ok", 0,
                                                 "error", errmsg_text(&e)));
            continue;
        }
        if (json)
            json_array_append_new(arr, json_pack("{s:s,s:b,s:I,s:I,s:s,s:s}", "file", files[k],
                                                 "ok", 1, "frames", (json_int_t)res.frames, "bytes",
                                                 (json_int_t)res.intact_bytes, "hash_algorithm",
                                                 res.hash_name, "content_hash", res.content_hash));
        else if (!quiet)
            printf("ok %s (%llu frames, %llu bytes, %s %s)\n", files[k],
                   (unsigned long long)res.frames, (unsigned long long)(res.intact_bytes),
                   res.hash_name, res.content_hash);
    }
    if (json) {
        int jrc = cli_print_json(arr);
        if (jrc > status)
            status = jrc;
    }
    return status;
}
