/*
 * bench_trace: throughput of the .atr container (issue 2, "Performance").
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

static double read_trace(const char *path, int threads, uint64_t *raw_out)
{
    struct trace_reader_opts o;
    trace_reader_opts_default(&o);
    o.threads = threads;
    struct trace_reader *r;
    char err[512];
    double t0 = now_s();
    if (trace_reader_open(&r, path, &o, err, sizeof err)) {
        fprintf(stderr, "bench_trace: %s\n", err);
        exit(1);
    }
    Acceltrace__Record *rec;
    uint64_t raw = 0;
    int rc;
    while ((rc = trace_reader_next(r, &rec, NULL)) == 1) {
        raw += trace_reader_last_frame(r)->raw_bytes;
        trace_record_free(rec);
    }
    double dt = now_s() - t0;
    if (rc < 0) {
        fprintf(stderr, "bench_trace: %s\n", trace_reader_errmsg(r));
        exit(1);
    }
    trace_reader_free(r);
    *raw_out = raw;
    return dt;
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
    uint8_t *bytes[SAMPLE];
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
        bytes[i] = malloc(nbytes);
        bitset_to_bytes(&bs[i], bytes[i], nbytes);
        acceltrace__disc_mask__init(&masks[i]);
        masks[i].step = (uint32_t)i;
        masks[i].head = (uint32_t)(i % 16);
        masks[i].rows = ROWS;
        masks[i].n_cols = COLS;
        masks[i].kept = 1;
        masks[i].bits.data = bytes[i];
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

    /* write */
    struct trace_writer_opts wo;
    trace_writer_opts_default(&wo);
    wo.zstd_level = 3;
    Acceltrace__TraceHeader h = ACCELTRACE__TRACE_HEADER__INIT;
    h.workload = "bench";
    struct trace_writer *w;
    char err[512];
    double t0 = now_s();
    if (trace_writer_open(&w, path, &wo, &h, err, sizeof err)) {
        fprintf(stderr, "bench_trace: %s\n", err);
        return 1;
    }
    for (uint64_t f = 0; f < frames; f++) {
        masks[f % SAMPLE].step = (uint32_t)(f / 16);
        if (trace_writer_append(w, &recs[f % SAMPLE], NULL)) {
            fprintf(stderr, "bench_trace: %s\n", trace_writer_errmsg(w));
            return 1;
        }
    }
    if (trace_writer_finish(w)) {
        fprintf(stderr, "bench_trace: %s\n", trace_writer_errmsg(w));
        return 1;
    }
    trace_writer_free(w);
    double t_write = now_s() - t0;

    uint64_t raw1, raw2;
    double t_read1 = read_trace(path, 1, &raw1);
    double t_read2 = read_trace(path, 2, &raw2);
    FILE *f = fopen(path, "rb");
    fseek(f, 0, SEEK_END);
    double stored = (double)ftell(f);
    fclose(f);
    double mb = (double)raw1 / 1e6;
    double w_mbs = mb / t_write, r1_mbs = mb / t_read1, r2_mbs = mb / t_read2;

    /* peers on the sample bytes */
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "zstd -q -b3 -e3 -i3 -T1 -B%zu '%s' 2>&1 | tr '\\r' '\\n'",
             (size_t)(payload_per_cycle / SAMPLE), sample_path);
    double zc = 0, zd = 0;
    int zok = parse_zstd_b(run_line(cmd, "MB/s"), &zc, &zd) == 0;
    snprintf(cmd, sizeof cmd, "zstd -q -19 -T1 -c '%s' | wc -c", sample_path);
    double z19 = atof(run_line(cmd, NULL)) * (double)frames / SAMPLE;
    snprintf(cmd, sizeof cmd, "xz -9 -T1 -c '%s' | wc -c", sample_path);
    double xz9 = atof(run_line(cmd, NULL)) * (double)frames / SAMPLE;

    printf("bench_trace: write level 3: %.1f MB/s; zstd -b3 -T1 compress %.1f MB/s; ratio %.2f "
           "(target >= 0.8)\n", w_mbs, zc, zok ? w_mbs / zc : 0.0);
    printf("bench_trace: read 1 thread: %.1f MB/s; zstd -b3 -T1 decompress %.1f MB/s; ratio %.2f "
           "(target >= 0.8)\n", r1_mbs, zd, zok ? r1_mbs / zd : 0.0);
    printf("bench_trace: read 2 threads: %.1f MB/s; %.2fx of 1 thread (target >= 1.7)\n", r2_mbs,
           r2_mbs / r1_mbs);
    printf("bench_trace: size: raw %.1f MB, trace %.1f MB (%.2fx); zstd -19 %.1f MB (trace/zstd19 "
           "%.2f); xz -9 %.1f MB (trace/xz9 %.2f)\n",
           mb, stored / 1e6, (double)raw1 / stored, z19 / 1e6, stored / z19, xz9 / 1e6,
           stored / xz9);
    unlink(path);
    unlink(sample_path);
    for (int i = 0; i < SAMPLE; i++) {
        free(bytes[i]);
        bitset_release(&bs[i]);
    }
    return 0;
}
