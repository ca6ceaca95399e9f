/*
 * hbm_export: K/V gather streams as Ramulator 2 / DRAMsim3 request traces
 * (docs/models.md "HBM timing mode").
 */
#include "replay/hbm_export.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "common/mem.h"

#define BUF_BYTES (1u << 16)
#define LINE_MAX_BYTES 64 /* "0x" + 16 hex + " READ " + 20 digits + "\n" < 64 */

struct hbm_export {
    struct sink *k;
    enum hbm_export_format f;
    struct hbm_timing_cfg c;
    struct hbm_pc_mapping pm;
    struct hbm_export_map m;
    uint32_t p_iss;
    uint64_t t_tok;  /* DRAM cycles per token on its PC */
    uint64_t tokens; /* tokens written (DRAMsim3 issue cycles) */
    uint64_t requests, bytes;
    size_t len;
    char buf[BUF_BYTES];
};

int hbm_export_format_parse(const char *s, enum hbm_export_format *out)
{
    if (!s)
        return ERR_USAGE;
    if (!strcmp(s, "ramulator"))
        *out = HBM_EXPORT_RAMULATOR;
    else if (!strcmp(s, "dramsim3"))
        *out = HBM_EXPORT_DRAMSIM3;
    else
        return ERR_USAGE;
    return 0;
}

const char *hbm_export_format_name(enum hbm_export_format f)
{
    return f == HBM_EXPORT_DRAMSIM3 ? "dramsim3" : "ramulator";
}

/* log2 of a power of two >= 1, or -1. */
static int log2_exact(uint64_t v)
{
    if (v == 0 || (v & (v - 1)))
        return -1;
    int b = 0;
    while (v > 1) {
        v >>= 1;
        b++;
    }
    return b;
}

int hbm_export_map_init(struct hbm_export_map *m, const struct hbm_timing_cfg *c, uint32_t h_att,
                        struct errmsg *e)
{
    const struct hbm_timing_params *t = &c->t;
    int off = log2_exact(t->burst_bytes), col = log2_exact(t->page_bytes / t->burst_bytes);
    int pc = log2_exact(h_att), bg = log2_exact(t->n_bg), ba = log2_exact(t->n_banks);
    int sid = log2_exact(t->n_sid);
    if (off < 0 || col < 0 || t->page_bytes % t->burst_bytes)
        return errmsg_set(e, ERR_CONFIG,
                          "burst of %u bytes and page of %u bytes: both powers of two for an "
                          "address map",
                          t->burst_bytes, t->page_bytes);
    if (pc < 1)
        return errmsg_set(e, ERR_CONFIG,
                          "h_att %u: an exported address map needs a power of two >= 2 "
                          "(channels of two pseudo-channels)",
                          h_att);
    if (bg < 0 || ba < 0 || sid < 0)
        return errmsg_set(e, ERR_CONFIG,
                          "SIDs %u x bank groups %u x banks %u: powers of two for an address map",
                          t->n_sid, t->n_bg, t->n_banks);
    m->off_bits = (uint32_t)off;
    m->col_bits = (uint32_t)col;
    m->pc_bits = (uint32_t)pc;
    m->sid_bits = (uint32_t)sid;
    m->bg_bits = (uint32_t)bg;
    m->ba_bits = (uint32_t)ba;
    return 0;
}

uint64_t hbm_export_addr(const struct hbm_export_map *m, uint32_t pc, uint32_t bank_id,
                         uint64_t row, uint32_t col)
{
    uint64_t g = bank_id >> m->ba_bits, ba = bank_id & ((1u << m->ba_bits) - 1);
    uint64_t bg = g & ((1u << m->bg_bits) - 1), sid = g >> m->bg_bits;
    uint64_t a = row;
    a = (a << m->ba_bits) | ba;
    a = (a << m->bg_bits) | bg;
    a = (a << m->sid_bits) | sid;
    a = (a << m->pc_bits) | pc;
    a = (a << m->col_bits) | col;
    return a << m->off_bits;
}

void hbm_export_decode(const struct hbm_export_map *m, uint64_t addr, uint32_t *pc, uint32_t *bg,
                       uint32_t *bank, uint64_t *row, uint32_t *col)
{
    uint64_t a = addr >> m->off_bits;
    *col = (uint32_t)(a & ((1ull << m->col_bits) - 1));
    a >>= m->col_bits;
    *pc = (uint32_t)(a & ((1ull << m->pc_bits) - 1));
    a >>= m->pc_bits;
    uint32_t sid = (uint32_t)(a & ((1ull << m->sid_bits) - 1));
    a >>= m->sid_bits;
    *bg = (uint32_t)(a & ((1ull << m->bg_bits) - 1)) | sid << m->bg_bits;
    a >>= m->bg_bits;
    *bank = (uint32_t)(a & ((1ull << m->ba_bits) - 1));
    *row = a >> m->ba_bits;
}

int hbm_export_new(struct hbm_export **out, struct sink *k, enum hbm_export_format f,
                   const struct hbm_timing_cfg *c, const struct hbm_pc_mapping *pm, uint32_t p_iss,
                   struct errmsg *e)
{
    *out = NULL;
    struct hbm_export_map m;
    int rc = hbm_export_map_init(&m, c, pm->h_att, e);
    if (rc < 0)
        return rc;
    struct hbm_export *x = mem_calloc(1, sizeof *x);
    if (!x)
        return errmsg_set(e, ERR_NOMEM, "out of memory");
    x->k = k;
    x->f = f;
    x->c = *c;
    x->pm = *pm;
    x->m = m;
    x->p_iss = p_iss ? p_iss : pm->h_att;
    x->t_tok = hbm_timing_token_cycles(c);
    *out = x;
    return 0;
}

static int flush(struct hbm_export *x)
{
    int rc = x->len ? sink_write(x->k, x->buf, x->len) : 0;
    x->len = 0;
    return rc;
}

/* Appends "0x<hex>" (no leading zeros) at p; returns the bytes written. */
static size_t put_hex(char *p, uint64_t v)
{
    static const char hex[] = "0123456789abcdef";
    char t[16];
    size_t n = 0;
    do {
        t[n++] = hex[v & 15];
        v >>= 4;
    } while (v);
    p[0] = '0';
    p[1] = 'x';
    for (size_t i = 0; i < n; i++)
        p[2 + i] = t[n - 1 - i];
    return n + 2;
}

static size_t put_dec(char *p, uint64_t v)
{
    char t[20];
    size_t n = 0;
    do {
        t[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    for (size_t i = 0; i < n; i++)
        p[i] = t[n - 1 - i];
    return n;
}

/* One read line. */
static int put_line(struct hbm_export *x, uint64_t addr, uint64_t cycle)
{
    if (x->len + LINE_MAX_BYTES > BUF_BYTES) {
        int rc = flush(x);
        if (rc < 0)
            return rc;
    }
    char *p = x->buf + x->len;
    size_t n = 0;
    if (x->f == HBM_EXPORT_RAMULATOR) {
        memcpy(p, "LD ", 3);
        n = 3 + put_hex(p + 3, addr);
    } else {
        n = put_hex(p, addr);
        memcpy(p + n, " READ ", 6);
        n += 6;
        n += put_dec(p + n, cycle);
    }
    p[n++] = '\n';
    x->len += n;
    x->bytes += n;
    x->requests++;
    return 0;
}

int hbm_export_job(struct hbm_export *x, uint32_t l, uint32_t h, const uint32_t *idx, size_t n)
{
    uint32_t ha = x->pm.h_att, bursts = x->c.token_bytes / 2 / x->c.t.burst_bytes;
    for (size_t k = 0; k < n; k++) {
        uint32_t pc = hbm_pc_of(&x->pm, l, h, idx[k]);
        uint64_t j = idx[k] / ha;
        uint32_t bank[2], col[2];
        int64_t row[2];
        hbm_timing_place(&x->c, j, 0, &bank[0], &row[0], &col[0]);
        hbm_timing_place(&x->c, j, 1, &bank[1], &row[1], &col[1]);
        /* issue cycle of this token in the ideal front end (header comment) */
        uint64_t cyc = x->tokens * x->t_tok / x->p_iss;
        x->tokens++;
        int rc = 0;
        if (bank[0] == bank[1]) {
            /* K's reads, then V's: the order hbm_timing serves one bank in */
            for (uint32_t half = 0; half < 2 && rc == 0; half++)
                for (uint32_t b = 0; b < bursts && rc == 0; b++)
                    rc = put_line(
                        x,
                        hbm_export_addr(&x->m, pc, bank[half], (uint64_t)row[half], col[half] + b),
                        cyc);
        } else {
            for (uint32_t r = 0; r < 2 * bursts && rc == 0; r++) {
                uint32_t half = r & 1;
                rc = put_line(
                    x,
                    hbm_export_addr(&x->m, pc, bank[half], (uint64_t)row[half], col[half] + r / 2),
                    cyc);
            }
        }
        if (rc < 0)
            return rc;
    }
    return 0;
}

uint64_t hbm_export_requests(const struct hbm_export *x)
{
    return x->requests;
}

uint64_t hbm_export_bytes(const struct hbm_export *x)
{
    return x->bytes;
}

int hbm_export_finish(struct hbm_export *x)
{
    return flush(x);
}

void hbm_export_free(struct hbm_export *x)
{
    mem_free(x);
}

/* printf into a sink (README text; short lines only). */
static int kprintf(struct sink *k, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int kprintf(struct sink *k, const char *fmt, ...)
{
    char line[4096];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= sizeof line)
        return ERR_INTERNAL; /* the README's paragraphs are far shorter */
    return sink_write(k, line, (size_t)n);
}

/* Whether c's preset is simulated with Ramulator's HBM3 standard (more than one SID or a
 * 32-bit PC) rather than HBM2. */
static bool is_hbm3(const struct hbm_timing_cfg *c)
{
    return c->t.dq_bits == 32 || c->t.n_sid > 1;
}

/* Front-end requests per Ramulator memory tick at the PCs' peak (h_att reads per nBL
 * clocks): Ramulator 2.1's HBM3 ticks are half clocks (tick_multiplier 2 in hbm3.py). */
static uint32_t ramulator_clock_ratio(const struct hbm_timing_cfg *c, uint32_t h_att)
{
    uint32_t r = h_att / c->t.nBL / (is_hbm3(c) ? 2 : 1);
    return r ? r : 1;
}

/* The Ramulator 2.1 Python configuration (no fence). The HBM3 standard gets every timing
 * the model uses as an override, so the simulator runs the preset's numbers whatever its own
 * preset holds; HBM2 runs its own HBM2_2000Mbps preset (docs/models.md). */
static int put_ramulator_py(struct sink *k, const struct hbm_timing_cfg *c,
                            const struct hbm_pc_mapping *pm, const struct hbm_export_map *m,
                            const char *trace)
{
    const struct hbm_timing_params *t = &c->t;
    uint32_t chn = pm->h_att / 2;
    int rc = kprintf(k,
                     "import ramulator\n"
                     "fe = ramulator.frontend.LoadStoreTrace(clock_ratio=%u, path=\"%s\")\n"
                     "def ctrl():\n",
                     ramulator_clock_ratio(c, pm->h_att), trace);
    if (rc == 0 && !is_hbm3(c))
        rc = kprintf(k, "    dram = ramulator.dram.HBM2(org_preset=\"HBM2_8Gb\", "
                        "timing_preset=\"HBM2_2000Mbps\")\n"
                        "    return ramulator.controller.HBM12(dram=dram,\n"
                        "        scheduler=ramulator.scheduler.FRFCFS(),\n"
                        "        refresh_manager=ramulator.refresh_manager.AllBank(),\n");
    else if (rc == 0)
        rc = kprintf(k,
                     "    # preset '%s': every timing of the model (cycles of tCK %.4f ns)\n"
                     "    dram = ramulator.dram.HBM3(org_preset=\"HBM3_16Gb_8hi\", "
                     "timing_preset=\"HBM3_6400Mbps\",\n"
                     "        rate=%.0f, tCK_ps=%.0f, nBL=%u, nCL=%u, nRCDRD=%u, nRP=%u, nRAS=%u, "
                     "nRC=%u,\n"
                     "        nRTP=%u, nCCDS=%u, nCCDL=%u, nCCDR=%u, nRRDS=%u, nRRDL=%u, nFAW=%u,\n"
                     "        nRFC=%u, nREFI=%u, nRFCpb=%u, nREFIpb=%u)\n"
                     "    return ramulator.controller.HBM34(dram=dram,\n"
                     "        scheduler=ramulator.scheduler.FRFCFS(),\n"
                     "        refresh_manager=ramulator.refresh_manager.%s(),\n",
                     t->name, t->tck_ns, t->gbps * 1000, t->tck_ns * 1000, t->nBL, t->nCL, t->nRCD,
                     t->nRP, t->nRAS, t->nRC, t->nRTP, t->nCCDS, t->nCCDL, t->nCCDR, t->nRRD,
                     t->nRRDL, t->nFAW, t->nRFC, t->nREFI, t->nRFCpb, t->nREFIpb,
                     c->per_bank ? "HBM34PerBankRefresh" : "AllBank");
    return rc ? rc
              : kprintf(k,
                        "        row_policy=ramulator.row_policy.Open(),\n"
                        "        addr_mapper=ramulator.addr_mapper.RoBaRaCoCh())\n"
                        "mem = ramulator.memory_system.GenericDRAM(clock_ratio=1,\n"
                        "    controllers=[ctrl() for _ in range(%u)],\n"
                        "    channel_mapper=ramulator.channel_mapper.CacheLineInterleave("
                        "interleave_bits=%u))\n"
                        "sim = ramulator.Simulation(fe, mem)\n"
                        "sim.run()\n"
                        "print(sim.stats[\"memory_system\"])\n",
                        chn, m->col_bits);
}

int hbm_export_ramulator_py(struct sink *k, const struct hbm_timing_cfg *c,
                            const struct hbm_pc_mapping *pm, uint32_t p_iss)
{
    (void)p_iss; /* LoadStoreTrace has no issue rate: it sends at clock_ratio */
    struct hbm_export_map m;
    if (hbm_export_map_init(&m, c, pm->h_att, NULL) < 0)
        return ERR_CONFIG;
    int rc = kprintf(k, "# Ramulator 2.1 configuration written by `acceltrace export hbm-trace` "
                        "(docs/models.md,\n# \"HBM timing mode\"); run beside ramulator.trace.\n");
    return rc ? rc : put_ramulator_py(k, c, pm, &m, "ramulator.trace");
}

/* DRAMsim3's device width for t: it moves two beats per clock, so a PC of dq_bits pins at
 * gbps x tCK beats per clock is dq_bits x beats / 2 bits wide to it (same bytes per read and
 * the same nBL). */
static uint32_t dramsim3_width(const struct hbm_timing_params *t)
{
    return (uint32_t)(t->dq_bits * t->gbps * t->tck_ns / 2.0 + 0.5);
}

int hbm_export_dramsim3_ini(struct sink *k, const struct hbm_timing_cfg *c, uint32_t h_att)
{
    struct hbm_export_map m;
    if (hbm_export_map_init(&m, c, h_att, NULL) < 0)
        return ERR_CONFIG;
    const struct hbm_timing_params *t = &c->t;
    uint32_t groups = t->n_sid * t->n_bg, w = dramsim3_width(t), bl = t->burst_bytes * 8 / w;
    /* DRAMsim3's HBM "columns" are two device_width columns each (its prefetch of 2): a
     * page of page_bytes is page_bytes x 8 / w / 2 of them */
    uint32_t cols = t->page_bytes * 8 / w / 2;
    /* channel_size in MB: one PC of 32768 rows of every bank */
    uint64_t mb = (uint64_t)t->page_bytes * 32768 * hbm_timing_banks(t) / (1024 * 1024);
    return kprintf(
        k,
        "; DRAMsim3 configuration written by `acceltrace export hbm-trace` (docs/models.md,\n"
        "; \"HBM timing mode\"): preset '%s', one DRAMsim3 channel per pseudo-channel, %u SID(s)\n"
        "; x %u bank groups as %u bank groups (DRAMsim3 has no SID: tCCDR is not expressed).\n"
        "; Timing in cycles of tCK %.4f ns; write timings are not used by the read traces.\n"
        "[dram_structure]\nprotocol = HBM\nbankgroups = %u\nbanks_per_group = %u\n"
        "rows = 32768\ncolumns = %u\ndevice_width = %u\nBL = %u\nnum_dies = 1\n\n"
        "[timing]\ntCK = %.4f\nCL = %u\nCWL = %u\ntRCDRD = %u\ntRCDWR = %u\ntRP = %u\n"
        "tRAS = %u\ntRFC = %u\ntREFI = %u\ntREFIb = %u\ntRPRE = 1\ntWPRE = 1\ntRRD_S = %u\n"
        "tRRD_L = %u\ntWTR_S = 6\ntWTR_L = 8\ntFAW = %u\ntWR = 16\ntCCD_S = %u\ntCCD_L = %u\n"
        "tXS = %u\ntCKE = 8\ntCKSRE = 10\ntXP = 8\ntRTP_L = %u\ntRTP_S = %u\n\n"
        "[system]\nchannel_size = %llu\nchannels = %u\nbus_width = %u\n"
        "address_mapping = robabgrachco\nqueue_structure = PER_BANK\n"
        "row_buf_policy = OPEN_PAGE\ncmd_queue_size = 8\ntrans_queue_size = 32\n"
        "unified_queue = False\n\n[other]\nepoch_period = 1000000\noutput_level = 1\n",
        t->name, t->n_sid, t->n_bg, groups, t->tck_ns, groups, t->n_banks, cols, w, bl, t->tck_ns,
        t->nCL, t->nCL / 2, t->nRCD, t->nRCD, t->nRP, t->nRAS, t->nRFC, t->nREFI,
        t->nREFIpb ? t->nREFIpb : t->nREFI / hbm_timing_banks(t), t->nRRD, t->nRRDL, t->nFAW,
        t->nCCDS, t->nCCDL, t->nRFC + 10, t->nRTP, t->nRTP, (unsigned long long)mb, h_att, w);
}

int hbm_export_readme(struct sink *k, const struct hbm_timing_cfg *c,
                      const struct hbm_pc_mapping *pm, uint32_t p_iss,
                      const char *const *trace_names)
{
    struct hbm_export_map m;
    if (hbm_export_map_init(&m, c, pm->h_att, NULL) < 0)
        return ERR_CONFIG;
    const struct hbm_timing_params *t = &c->t;
    uint32_t ha = pm->h_att, chn = ha / 2;
    uint32_t b0 = m.off_bits, b1 = b0 + m.col_bits, b2 = b1 + m.pc_bits, bs = b2 + m.sid_bits,
             b3 = bs + m.bg_bits, b4 = b3 + m.ba_bits;
    if (!p_iss)
        p_iss = ha;
    int rc = kprintf(k, "# K/V gather traces for DRAM simulators\n\n"
                        "Written by `acceltrace export hbm-trace` (docs/models.md, \"HBM timing "
                        "mode\"). Files:\n\n");
    for (size_t i = 0; trace_names && trace_names[i] && rc == 0; i++)
        rc = kprintf(k, "- `%s`\n", trace_names[i]);
    rc = rc ? rc
            : kprintf(k,
                      "- `jobs.csv`: one row per exported job (step, layer, head, tokens, first "
                      "request line, requests)\n"
                      "- `ramulator_config.py`, `dramsim3.ini`: the simulators' configurations "
                      "of the preset (with their trace)\n\n"
                      "Every line is one %u-byte read. A token is %u bytes on its PC (K half, "
                      "then V half), so %u reads; tokens follow in index order, job after job. "
                      "Map `%s` over %u pseudo-channels (seed %llu), layout `%s`, preset `%s`.\n\n",
                      t->burst_bytes, c->token_bytes, c->token_bytes / t->burst_bytes,
                      hbm_pc_map_name(pm->map), ha, (unsigned long long)pm->seed,
                      hbm_timing_layout_name(c->layout), t->name);
    rc = rc ? rc
            : kprintf(k,
                      "## Address bit map\n\n"
                      "| bits | field |\n|---|---|\n"
                      "| %u-%u | byte in the read (0) |\n"
                      "| %u-%u | column: read index in the %u-byte row |\n"
                      "| %u-%u | pseudo-channel p (0..%u, the attention PC of the model) |\n",
                      0, b0 ? b0 - 1 : 0, b0, b1 - 1, t->page_bytes, b1, b2 - 1, ha - 1);
    if (rc == 0 && m.sid_bits)
        rc = kprintf(k, "| %u-%u | stack ID (SID) |\n", b2, bs - 1);
    rc = rc ? rc
            : kprintf(k,
                      "| %u-%u | bank group |\n"
                      "| %u-%u | bank in the group |\n"
                      "| %u- | row |\n\n",
                      bs, b3 - 1, b3, b4 - 1, b4);
    rc = rc ? rc
            : kprintf(k,
                      "## Ramulator 2\n\n"
                      "%s with %u channels of 2 pseudo-channels: channel = p mod %u, "
                      "pseudo-channel = p / %u. A Python configuration (Ramulator 2.1; also "
                      "written as `ramulator_config.py`):\n\n```python\n",
                      is_hbm3(c) ? "HBM3" : "HBM2", chn, chn, chn);
    rc = rc ? rc : put_ramulator_py(k, c, pm, &m, "ramulator.trace");
    rc = rc ? rc
            : kprintf(k,
                      "```\n\n"
                      "CacheLineInterleave with interleave_bits = %u takes the channel from bits "
                      "%u-%u and keeps the rest; RoBaRaCoCh then reads column, pseudo-channel, "
                      "%sbank group, bank and row from the low bits up, as in the table. The "
                      "front end sends up to %u reads per memory tick (clock_ratio %u against "
                      "1: the peak of %u PCs at one read per nBL = %u cycles%s) and stalls in "
                      "order when a controller's read queue is full. LoadStoreTrace ends when "
                      "its last read was accepted, not when its data is back. The timing "
                      "mode's in-order D_f at its default occupancy (request) corresponds to "
                      "`read_buffer_size = 16 * D_f` per controller (8 x D_f reads per PC, "
                      "the buffer shared by the channel's two PCs; the default 32 is D_f 2); "
                      "its window W, and `--occupancy data`, count tokens until their data is "
                      "back, which LoadStoreTrace cannot express (docs/models.md, \"HBM "
                      "timing mode\").\n\n",
                      m.col_bits, b1, b2 - 2, m.sid_bits ? "SID, " : "",
                      ramulator_clock_ratio(c, ha), ramulator_clock_ratio(c, ha), ha, t->nBL,
                      is_hbm3(c) ? "; Ramulator's HBM3 ticks are half clocks, so its cycle "
                                   "counts are twice the preset's"
                                 : "");
    rc =
        rc ? rc
           : kprintf(k,
                     "## DRAMsim3\n\n"
                     "`dramsim3.ini` holds the preset as a DRAMsim3 configuration: each "
                     "pseudo-channel one DRAMsim3 channel (`channels = %u`, "
                     "`address_mapping = robabgrachco`, one rank, so the `ra` field has no "
                     "bits), %u bank groups of %u banks (%u SID(s) folded into bank groups: "
                     "DRAMsim3 has no SID), reads of %u bytes over %u cycles, and the timing "
                     "of the preset (CL %u, tRCDRD %u, tRP %u, tRAS %u, tRRD_S %u, tRRD_L %u, "
                     "tFAW %u, tCCD_S %u, tCCD_L %u, tRTP %u, tRFC %u, tREFI %u). DRAMsim3 "
                     "counts two data beats per clock, so a PC of %u pins at %.1f beats per "
                     "clock is written as %u bits wide. Then\n\n"
                     "    ./build/dramsim3main dramsim3.ini -t dramsim3.trace -c CYCLES -o OUT\n\n"
                     "The third column is the cycle a read may enter: the reads of the k-th "
                     "token (k from 0) at floor(k x %llu / %u). DRAMsim3's trace CPU adds at "
                     "most one read per cycle, 1/%u of the peak here, so compare its per-PC "
                     "and row statistics rather than its total time.\n\n",
                     ha, t->n_sid * t->n_bg, t->n_banks, t->n_sid, t->burst_bytes, t->nBL, t->nCL,
                     t->nRCD, t->nRP, t->nRAS, t->nRRD, t->nRRDL, t->nFAW, t->nCCDS, t->nCCDL,
                     t->nRTP, t->nRFC, t->nREFI, t->dq_bits, t->gbps * t->tck_ns, dramsim3_width(t),
                     (unsigned long long)hbm_timing_token_cycles(c), p_iss, ha / t->nBL);
    rc = rc ? rc
            : kprintf(k,
                      "## Compare with the timing mode\n\n"
                      "    acceltrace analyze conflicts TRACE --timing --layout %s "
                      "--pcs %u --map %s [--steps A-B] [--method M] -o DIR\n\n"
                      "(with the --steps, --method, --map, --pcs and --layout given to the "
                      "export) writes DIR/hbm_time.csv: `cycles` per policy over the same "
                      "jobs (run back "
                      "to back), `ideal_cycles` = ceil(N_sel/h_att) x %llu per job. The "
                      "simulators' in-order front ends compare with the in-order rows; "
                      "divide their cycles by the sum of ideal_cycles for time_over_ideal. Row "
                      "hits and misses there count K and V halves, not reads.\n",
                      hbm_timing_layout_name(c->layout), ha, hbm_pc_map_name(pm->map),
                      (unsigned long long)hbm_timing_token_cycles(c));
    return rc;
}
