/*
 * cmd_verify: `acceltrace verify FILE...` checks every frame and the index of each trace
 * (traces/trace_verify.h). Exit 0 when all are intact, 3 when one is damaged.
 */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "traces/trace_verify.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: acceltrace verify [options] FILE.atr...\n\n"
               "checks the preamble, every frame (length, codec, crc32c, zstd, protobuf), the\n"
               "trailer and the index (entries, frame count, content hash) of each trace\n\n"
               "options:\n"
               "  -j, --threads N   decode frames with N threads (default 1)\n"
               "  -q, --quiet       print nothing on success\n"
               "  -h, --help        this text\n\n"
               "prints 'ok FILE (N frames, B bytes, xxh3-128 HASH)' per intact trace (sha256 for\n"
               "traces written before XXH3); on a damaged one the first problem, naming the file,\n"
               "frame number and byte offset, and exit 3\n");
}

int cmd_verify(int argc, char **argv);
int cmd_verify(int argc, char **argv)
{
    struct trace_reader_opts o;
    trace_reader_opts_default(&o);
    bool quiet = false;
    int n_files = 0;
    char *files[argc > 0 ? argc : 1];
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (cli_is_help(a)) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "-q") || !strcmp(a, "--quiet")) {
            quiet = true;
        } else if (!strcmp(a, "-j") || !strcmp(a, "--threads")) {
            int64_t v;
            if (i + 1 >= argc || !cli_parse_i64(argv[i + 1], &v) || v < 1 || v > 64)
                return cli_usage_error("verify", "%s needs a thread count 1..64", a);
            o.threads = (int)v;
            i++;
        } else if (a[0] == '-' && a[1]) {
            return cli_usage_error("verify", "unknown option '%s'", a);
        } else {
            files[n_files++] = argv[i];
        }
    }
    if (n_files == 0)
        return cli_usage_error("verify", "no trace file given");
    int status = 0;
    for (int k = 0; k < n_files; k++) {
        struct trace_verify_result res;
        struct errmsg e = {0, ""};
        int rc = trace_verify(files[k], &o, &res, &e);
        if (rc) {
            int st = cli_fail(rc, errmsg_text(&e));
            if (st > status)
                status = st;
            continue;
        }
        if (!quiet)
            printf("ok %s (%llu frames, %llu bytes, %s %s)\n", files[k],
                   (unsigned long long)res.frames, (unsigned long long)(res.intact_bytes),
                   res.hash_name, res.content_hash);
    }
    return status;
}
