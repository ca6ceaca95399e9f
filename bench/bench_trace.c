/*
 * bench_trace: throughput of the .atr container.
 *
 * Writes and reads a stream of DiscMask-like bitset frames (1024 x 1024 bits = 128 KiB,
 * 50% density, spatially clustered: runs of geometric length along a row, rows copied
 * from the row above with a few runs moved) at zstd level 3, and compares:
 *   - write and read MB/s of raw payload vs `zstd -b3 -B<frame bytes>` single-threaded on
 *     the same payload bytes (ratio, target >= 0.8);
 *   - reading with 2 decoding threads vs 1 (target >= 1.7x);
 *   - stored size vs `zstd -19` and `xz -9` on the same payload bytes (whole-sample).
 * Total size: ACCELTRACE_BENCH_TRACE_MB (default 1024). The frames cycle through a sample
 * of 64 distinct frames; every frame is an independent zstd frame, so this does not help
 * compression. Temporary files go to $TMPDIR (default /tmp) and are removed.
 * Prints one line per figure, prefixed "bench_trace:".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <zstd.h>

#include "common/rng.h"
#include "formats/bitset.h"
#include "traces/trace_reader.h"
#include "traces/trace_writer.h"

#define ROWS 1024
#define COLS 1024
#define SAMPLE 64

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* One clustered 50%-density matrix. */
static void make_mask(struct bitset *b, struct rng *r)
{
    for (uint32_t i = 0; i < ROWS; i++) {
        uint64_t *row = bitset_row(b, i);
        if (i > 0 && rng_uniform(r) < 0.9) {
            memcpy(row, bitset_row(b, i - 1), b->words_per_row * 8);
            /* move a few run edges: flip short spans */
            int k = (int)rng_below(r, 4);
            for (int j = 0; j < k; j++) {
                uint32_t c = (uint32_t)rng_below(r, COLS - 16), len = 1 + (uint32_t)rng_below(r, 16);
                for (uint32_t x = c; x < c + len; x++)
                    row[x >> 6] ^= (uint64_t)1 << (x & 63);
            }
            continue;
        }
        bool on = rng_uniform(r) < 0.5;
        uint32_t c = 0;
        while (c < COLS) {
            /* geometric run length, mean 40 columns */
            uint32_t len = 1;
            while (len < 400 && rng_uniform(r) > 1.0 / 40)
                len++;
            for (uint32_t x = c; x < c + len && x < COLS; x++)
                if (on)
                    row[x >> 6] |= (uint64_t)1 << (x & 63);
            c += len;
            on = !on;
        }
    }
}

/* Runs a shell command and returns its first output line (static storage), or "". */
static const char *run_line(const char *cmd, const char *grep)
{
    static char line[1024];
    line[0] = 0;
    FILE *p = popen(cmd, "r");
    if (!p)
        return line;
    char buf[1024];
    while (fgets(buf, sizeof buf, p)) {
        if (!grep || strstr(buf, grep))
            snprintf(line, sizeof line, "%s", buf);
    }
    pclose(p);
    return line;
}

/* Parses the last "X MB/s" pair of `zstd -b` output: compression and decompression. */
static int parse_zstd_b(const char *line, double *c_mbs, double *d_mbs)
{
    const char *p = strstr(line, ")");
    if (!p)
        return -1;
    return sscanf(p + 1, " %lf MB/s %lf MB/s", c_mbs, d_mbs) == 2 ? 0 : -1;
}

/* CPU seconds of the whole process (every thread). */
static double cpu_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, size_t n)
{
    if (n == 0)
        return 0;
    qsort(v, n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

int main(void)
{
    const char *mb_env = getenv("ACCELTRACE_BENCH_TRACE_MB");
    uint64_t total_mb = mb_env ? strtoull(mb_env, NULL, 10) : 1024;
    if (total_mb < 1)
        total_mb = 1;
    const char *tmp = getenv("TMPDIR");
    if (!tmp || !*tmp)
        tmp = "/tmp";
    char path[512], sample_path[512];
    snprintf(path, sizeof path, "%s/bench_trace_%d.atr", tmp, (int)getpid());
    snprintf(sample_path, sizeof sample_path, "%s/bench_trace_%d.bin", tmp, (int)getpid());

    /* the sample: SAMPLE records, packed once to know the payload bytes */
    struct rng r;
    rng_seed(&r, 42);
    Acceltrace__DiscMask masks[SAMPLE];
    Acceltrace__Record recs[SAMPLE];
    struct bitset bs[SAMPLE];
    uint8_t *bits[SAMPLE];
    size_t nbytes;
    bitset_bytes_for(ROWS, COLS, &nbytes);
    FILE *sf = fopen(sample_path, "wb");
    if (!sf)
        return 1;
    uint64_t ones = 0, payload_per_cycle = 0;
    for (int i = 0; i < SAMPLE; i++) {
        bitset_init(&bs[i], ROWS, COLS);
        make_mask(&bs[i], &r);
        ones += bitset_popcount(&bs[i]);
        bits[i] = malloc(nbytes);
        bitset_to_bytes(&bs[i], bits[i], nbytes);
        acceltrace__disc_mask__init(&masks[i]);
        masks[i].step = (uint32_t)i;
        masks[i].head = (uint32_t)(i % 16);
        masks[i].rows = ROWS;
        masks[i].n_cols = COLS;
        masks[i].kept = 1;
        masks[i].bits.data = bits[i];
        masks[i].bits.len = nbytes;
        acceltrace__record__init(&recs[i]);
        recs[i].body_case = ACCELTRACE__RECORD__BODY_DISC_MASK;
        recs[i].disc_mask = &masks[i];
        size_t n = protobuf_c_message_get_packed_size(&recs[i].base);
        uint8_t *p = malloc(n);
        protobuf_c_message_pack(&recs[i].base, p);
        fwrite(p, 1, n, sf);
        free(p);
        payload_per_cycle += n;
    }
    fclose(sf);
    double density = (double)ones / ((double)SAMPLE * ROWS * COLS);
    uint64_t frames = total_mb * 1024 * 1024 / (payload_per_cycle / SAMPLE);
    printf("bench_trace: %llu frames of %zu KiB bitsets (density %.3f), %.0f MiB raw payload\n",
           (unsigned long long)frames, nbytes / 1024, density,
           (double)frames * (double)payload_per_cycle / SAMPLE / 1048576.0);

    /*
     * The machine is shared, so every figure is a median over rounds that interleave our
     * code with the peer on the same frames: each round times BLOCK frames of ours, then
     * the same frames through libzstd alone (ZSTD_compressCCtx / ZSTD_decompressDCtx at
     * level 3, one thread: what `zstd -b3 -T1 -B<frame>` measures), so both see the same
     * load. The zstd command line's own figures on the sample are printed for reference.
     */
    enum { BLOCK = 256 };
    size_t frame_raw = (size_t)(payload_per_cycle / SAMPLE);
    uint8_t *packed[SAMPLE], *comp[SAMPLE];
    size_t packed_n[SAMPLE], comp_n[SAMPLE];
    ZSTD_CCtx *cc = ZSTD_createCCtx();
    ZSTD_DCtx *dc = ZSTD_createDCtx();
    size_t bound = ZSTD_compressBound(frame_raw + 64);
    uint8_t *scratch = malloc(bound > frame_raw + 64 ? bound : frame_raw + 64);
    for (int i = 0; i < SAMPLE; i++) {
        packed_n[i] = protobuf_c_message_get_packed_size(&recs[i].base);
        packed[i] = malloc(packed_n[i]);
        protobuf_c_message_pack(&recs[i].base, packed[i]);
        comp[i] = malloc(bound);
        comp_n[i] = ZSTD_compressCCtx(cc, comp[i], bound, packed[i], packed_n[i], 3);
    }
    size_t n_rounds = (size_t)((frames + BLOCK - 1) / BLOCK);
    double *w_ratio = calloc(n_rounds, sizeof(double)), *w_ours = calloc(n_rounds, sizeof(double));
    double *w_peer = calloc(n_rounds, sizeof(double));
    double w_cpu_ours = 0, w_cpu_peer = 0, r_cpu_ours = 0, r_cpu_peer = 0;

    struct trace_writer_opts wo;
    trace_writer_opts_default(&wo);
    wo.zstd_level = 3;
    Acceltrace__TraceHeader h = ACCELTRACE__TRACE_HEADER__INIT;
    h.workload = "bench";
    struct trace_writer *w;
    struct errmsg err = {0};
    if (trace_writer_open(&w, path, &wo, &h, &err)) {
        fprintf(stderr, "bench_trace: %s\n", err.text);
        return 1;
    }
    uint64_t f = 0;
    for (size_t round = 0; round < n_rounds; round++) {
        uint64_t f0 = f, bytes = 0;
        double t0 = now_s(), c0 = cpu_s();
        for (; f < frames && f < f0 + BLOCK; f++) {
            masks[f % SAMPLE].step = (uint32_t)(f / 16);
            if (trace_writer_append(w, &recs[f % SAMPLE], NULL)) {
                fprintf(stderr, "bench_trace: %s\n", trace_writer_errmsg(w));
                return 1;
            }
            bytes += packed_n[f % SAMPLE];
        }
        if (f == frames && trace_writer_finish(w)) {
            fprintf(stderr, "bench_trace: %s\n", trace_writer_errmsg(w));
            return 1;
        }
        double t_ours = now_s() - t0;
        t0 = now_s();
        double c1 = cpu_s();
        w_cpu_ours += c1 - c0;
        for (uint64_t g = f0; g < f; g++)
            ZSTD_compressCCtx(cc, scratch, bound, packed[g % SAMPLE], packed_n[g % SAMPLE], 3);
        double t_peer = now_s() - t0;
        w_cpu_peer += cpu_s() - c1;
        w_ours[round] = (double)bytes / 1e6 / t_ours;
        w_peer[round] = (double)bytes / 1e6 / t_peer;
        w_ratio[round] = t_peer / t_ours;
    }
    trace_writer_free(w);

    /*
     * reads: 1 thread and the peer, interleaved by blocks. The 2-thread reader is timed
     * apart below, over whole passes: it decodes ahead of the caller in the background, so
     * interleaved with other timed blocks it would do part of its work outside its own
     * timing (and inside theirs).
     */
    double *r1_ratio = calloc(n_rounds, sizeof(double)), *r1_mbs = calloc(n_rounds, sizeof(double));
    double *rp_mbs = calloc(n_rounds, sizeof(double));
    struct trace_reader *rd[1];
    for (int k = 0; k < 1; k++) {
        struct trace_reader_opts o;
        trace_reader_opts_default(&o);
        o.threads = k + 1;
        if (trace_reader_open(&rd[k], path, &o, &err)) {
            fprintf(stderr, "bench_trace: %s\n", err.text);
            return 1;
        }
    }
    uint64_t raw_total = 0;
    size_t rounds_done = 0;
    for (size_t round = 0; round < n_rounds; round++) {
        double t[1];
        uint64_t bytes = 0;
        int got = 0;
        for (int k = 0; k < 1; k++) {
            double t0 = now_s(), c0 = cpu_s();
            uint64_t b = 0;
            got = 0;
            Acceltrace__Record *rec;
            while (got < BLOCK && trace_reader_next(rd[k], &rec, NULL) == 1) {
                b += trace_reader_last_frame(rd[k])->raw_bytes;
                trace_record_free(rec);
                got++;
            }
            t[k] = now_s() - t0;
            if (k == 0)
                r_cpu_ours += cpu_s() - c0;
            bytes = b;
        }
        if (got == 0)
            break;
        raw_total += bytes;
        double t0 = now_s(), c0 = cpu_s();
        for (int g = 0; g < got; g++) {
            size_t i = (round * BLOCK + (size_t)g) % SAMPLE;
            ZSTD_decompressDCtx(dc, scratch, frame_raw + 64, comp[i], comp_n[i]);
        }
        double tp = now_s() - t0;
        r_cpu_peer += cpu_s() - c0;
        r1_mbs[round] = (double)bytes / 1e6 / t[0];
        rp_mbs[round] = (double)bytes / 1e6 / tp;
        r1_ratio[round] = tp / t[0];
        rounds_done++;
    }
    trace_reader_free(rd[0]);

    /*
     * 2 threads vs 1: whole-file passes (open, read every record, free: the reader's
     * worker is joined inside the timing), alternating 1 and 2 threads so that both see
     * the same load; the median of the per-pair ratios.
     */
    enum { PASSES = 5 };
    double r2_speedup[PASSES], r2_mbs[PASSES];
    for (int pass = 0; pass < PASSES; pass++) {
        double t[2];
        uint64_t b = 0;
        for (int k = 0; k < 2; k++) {
            struct trace_reader_opts o;
            trace_reader_opts_default(&o);
            o.threads = k + 1;
            double t0 = now_s();
            struct trace_reader *rp;
            if (trace_reader_open(&rp, path, &o, &err)) {
                fprintf(stderr, "bench_trace: %s\n", err.text);
                return 1;
            }
            Acceltrace__Record *rec;
            b = 0;
            while (trace_reader_next(rp, &rec, NULL) == 1) {
                b += trace_reader_last_frame(rp)->raw_bytes;
                trace_record_free(rec);
            }
            trace_reader_free(rp);
            t[k] = now_s() - t0;
        }
        r2_mbs[pass] = (double)b / 1e6 / t[1];
        r2_speedup[pass] = t[0] / t[1];
    }
    FILE *fs = fopen(path, "rb");
    fseek(fs, 0, SEEK_END);
    double stored = (double)ftell(fs);
    fclose(fs);
    double mb = (double)raw_total / 1e6;

    /* peers on the sample bytes */
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "zstd -q -b3 -e3 -i3 -T1 -B%zu '%s' 2>&1 | tr '\\r' '\\n'",
             frame_raw, sample_path);
    double zc = 0, zd = 0;
    int zok = parse_zstd_b(run_line(cmd, "MB/s"), &zc, &zd) == 0;
    snprintf(cmd, sizeof cmd, "zstd -q -19 -T1 -c '%s' | wc -c", sample_path);
    double z19 = atof(run_line(cmd, NULL)) * (double)frames / SAMPLE;
    snprintf(cmd, sizeof cmd, "xz -9 -T1 -c '%s' | wc -c", sample_path);
    double xz9 = atof(run_line(cmd, NULL)) * (double)frames / SAMPLE;

    printf("bench_trace: write level 3: %.1f MB/s; libzstd level 3 alone %.1f MB/s; ratio %.2f "
           "(target >= 0.8; medians of %zu interleaved rounds)\n",
           median(w_ours, n_rounds), median(w_peer, n_rounds), median(w_ratio, n_rounds),
           n_rounds);
    printf("bench_trace: read 1 thread: %.1f MB/s; libzstd decompress alone %.1f MB/s; ratio "
           "%.2f (target >= 0.8)\n",
           median(r1_mbs, rounds_done), median(rp_mbs, rounds_done),
           median(r1_ratio, rounds_done));
    printf("bench_trace: CPU time (all threads) per byte, libzstd alone / ours: write %.2f, "
           "read 1 thread %.2f (load-independent; our write includes the XXH3-128 content hash)\n",
           w_cpu_peer / w_cpu_ours, r_cpu_peer / r_cpu_ours);
    printf("bench_trace: read 2 threads: %.1f MB/s; %.2fx of 1 thread (target >= 1.7; medians "
           "of %d alternating whole-file passes)\n",
           median(r2_mbs, PASSES), median(r2_speedup, PASSES), (int)PASSES);
    if (zok)
        printf("bench_trace: zstd -b3 -T1 -B%zu on the sample (reference): compress %.1f MB/s, "
               "decompress %.1f MB/s\n", frame_raw, zc, zd);
    printf("bench_trace: size: raw %.1f MB, trace %.1f MB (%.2fx); zstd -19 %.1f MB (trace/zstd19 "
           "%.2f); xz -9 %.1f MB (trace/xz9 %.2f)\n",
           mb, stored / 1e6, (double)raw_total / stored, z19 / 1e6, stored / z19, xz9 / 1e6,
           stored / xz9);
    for (int i = 0; i < SAMPLE; i++) {
        free(packed[i]);
        free(comp[i]);
    }
    free(scratch);
    free(w_ratio); free(w_ours); free(w_peer);
    free(r1_ratio); free(r1_mbs); free(rp_mbs);
    ZSTD_freeCCtx(cc);
    ZSTD_freeDCtx(dc);
    unlink(path);
    unlink(sample_path);
    for (int i = 0; i < SAMPLE; i++) {
        free(bits[i]);
        bitset_release(&bs[i]);
    }
    return 0;
}
