/*
 * cmd_analyze_hash: `acceltrace analyze hash FILE.atr -o DIR`: the DiSC hash load-balance
 * study (paper Fig. 15; specs/disc.md sections 8-9) over a disc trace's ST masks.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "analysis/hash_lb.h"
#include "cli/cli.h"
#include "common/err.h"
#include "common/threads.h"

#define VERB "analyze hash"

static void usage(FILE *f)
{
    fputs("usage: acceltrace analyze hash FILE.atr -o DIR [options]\n"
          "\n"
          "Load balance of the DiSC key-index hashes (mod, mul, range) over the ST masks of a\n"
          "disc trace (specs/disc.md section 8, paper Fig. 15): per row the std-dev and the max\n"
          "of nonzeros per unit, pooled by matrix and by row sparsity. Uses the recorded\n"
          "statistics, or recounts kept masks for other unit counts or constants.\n"
          "Writes hash_matrix.csv, hash_row.csv, hash_masks.csv and the plots\n"
          "hash_std_vs_sparsity, hash_std_vs_row_sparsity and hash_imbalance to DIR.\n"
          "\n"
          "options:\n"
          "  -o DIR          output folder (required; created if missing)\n"
          "  --units LIST    unit counts U, powers of two >= 2 (8,16,32,64)\n"
          "  --k-odd X       multiplicative-hash constant, odd, decimal or 0x hex (0x9E3779B1)\n"
          "  -j N            threads for recounted masks (all CPUs); results do not depend on it\n"
          "  --no-plots      CSV only\n"
          "  -h, --help      this help\n",
          f);
}

int cmd_analyze_hash(int argc, char **argv);
int cmd_analyze_hash(int argc, char **argv)
{
    struct hash_lb_opts o;
    hash_lb_opts_default(&o);
    o.threads = threads_default();
    const char *in = NULL, *dir = NULL;
    bool plots = true;
    struct errmsg e = {0};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (cli_is_help(a)) {
            usage(stdout);
            return 0;
        }
        bool has_val = i + 1 < argc;
        if (!strcmp(a, "-o") && has_val) {
            dir = argv[++i];
        } else if (!strcmp(a, "--units") && has_val) {
            if (hash_lb_parse_units(&o, argv[++i], &e) < 0)
                return cli_usage_error(VERB, "%s", e.text);
        } else if (!strcmp(a, "--k-odd") && has_val) {
            const char *v = argv[++i];
            char *end;
            errno = 0;
            unsigned long long k = strtoull(v, &end, 0);
            if (errno || end == v || *end || *v == '-' || k > 0xFFFFFFFFull || (k & 1) == 0)
                return cli_usage_error(VERB, "--k-odd needs an odd 32-bit number ('%s')", v);
            o.k_odd = (uint32_t)k;
        } else if (!strcmp(a, "-j") && has_val) {
            int64_t j;
            if (!cli_parse_i64(argv[++i], &j) || j < 1 || j > 1024)
                return cli_usage_error(VERB, "-j needs a thread count in 1..1024 ('%s')", argv[i]);
            o.threads = (int)j;
        } else if (!strcmp(a, "--no-plots")) {
            plots = false;
        } else if (a[0] == '-' && a[1]) {
            return cli_usage_error(VERB, "unknown option or missing value '%s'", a);
        } else if (!in) {
            in = a;
        } else {
            return cli_usage_error(VERB, "more than one trace ('%s')", a);
        }
    }
    if (!in)
        return cli_usage_error(VERB, "missing FILE.atr");
    if (!dir)
        return cli_usage_error(VERB, "missing -o DIR");
    if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
        cli_error("cannot create folder '%s': %s", dir, strerror(errno));
        return 1;
    }
    bool rendered = true;
    struct hash_lb *a = NULL;
    int rc = hash_lb_run_file(in, &o, dir, plots, &rendered, &a, &e);
    if (rc < 0)
        return cli_fail(rc, e.text);
    if (plots && !rendered)
        cli_warn("gnuplot not found: run 'gnuplot NAME.gp' in %s to render", dir);
    if (hash_lb_masks_skipped(a))
        cli_warn("%llu of %llu masks of '%s' have neither recorded statistics for these unit "
                 "counts and k-odd nor kept bits: left out of the tables (source 'none' in "
                 "hash_masks.csv)",
                 (unsigned long long)hash_lb_masks_skipped(a),
                 (unsigned long long)hash_lb_masks_seen(a), in);
    printf("masks %llu, recounted from kept bits %llu, without statistics %llu\n",
           (unsigned long long)hash_lb_masks_seen(a),
           (unsigned long long)hash_lb_masks_recounted(a),
           (unsigned long long)hash_lb_masks_skipped(a));
    /* the Fig. 15 summary: mean std-dev per hash at each U over all pooled masks */
    printf("%-6s", "U");
    for (int h = 0; h < DISC_HASH_KINDS; h++)
        printf(" %12s", disc_hash_name(h));
    printf("   (mean std-dev of nonzeros per unit over all rows)\n");
    for (int i = 0; i < o.n_units; i++) {
        printf("%-6u", 1u << o.bits[i]);
        for (int h = 0; h < DISC_HASH_KINDS; h++) {
            double s = 0;
            uint64_t rows = 0;
            for (int b = 0; b < DISC_LB_BINS; b++) {
                s += hash_lb_matrix_bin(a, b)->std_sum[h][i];
                rows += hash_lb_matrix_bin(a, b)->rows;
            }
            printf(" %12.4f", rows ? s / (double)rows : 0.0);
        }
        printf("\n");
    }
    hash_lb_free(a);
    return 0;
}
