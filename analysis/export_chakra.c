/* export_chakra: the disc model's ops as a Chakra execution trace (protobuf, hand-encoded). */
#include "analysis/export_chakra.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "common/buf.h"
#include "common/mem.h"
#include "formats/varint.h"

/* Protobuf wire types. */
enum { WT_VARINT = 0, WT_I64 = 1, WT_LEN = 2 };
enum { CHAKRA_COMP_NODE = 4 };

static void pb_key(struct buf *b, uint32_t field, int wt)
{
    varint_append_u64(b, ((uint64_t)field << 3) | (uint64_t)wt);
}

static void pb_varint(struct buf *b, uint32_t field, uint64_t v)
{
    pb_key(b, field, WT_VARINT);
    varint_append_u64(b, v);
}

static void pb_bytes(struct buf *b, uint32_t field, const void *p, size_t n)
{
    pb_key(b, field, WT_LEN);
    varint_append_u64(b, n);
    buf_append(b, p, n);
}

static void pb_str(struct buf *b, uint32_t field, const char *s)
{
    pb_bytes(b, field, s, strlen(s));
}

/* A double as protobuf's little-endian 64-bit word. */
static void put_f64(struct buf *b, double v)
{
    uint64_t u;
    memcpy(&u, &v, sizeof u);
    uint8_t le[8];
    for (int i = 0; i < 8; i++)
        le[i] = (uint8_t)(u >> (8 * i));
    buf_append(b, le, sizeof le);
}

/* AttributeProto values: the oneof field numbers of et_def.proto. */
enum {
    AT_DOUBLE = 3,
    AT_DOUBLE_LIST = 4,
    AT_INT64 = 9,
    AT_UINT64 = 13,
    AT_BOOL = 27,
    AT_STRING = 29
};

/* Appends one AttributeProto as field `field` of the enclosing message; tmp is scratch. */
static void attr_begin(struct buf *tmp, const char *name)
{
    buf_clear(tmp);
    pb_str(tmp, 1, name);
}

static void attr_end(struct buf *b, uint32_t field, struct buf *tmp)
{
    if (buf_err(tmp))
        b->err = buf_err(tmp);
    pb_bytes(b, field, tmp->data, tmp->len);
}

static void attr_u64(struct buf *b, uint32_t field, struct buf *tmp, const char *name, int at,
                     uint64_t v)
{
    attr_begin(tmp, name);
    pb_varint(tmp, (uint32_t)at, v);
    attr_end(b, field, tmp);
}

static void attr_f64(struct buf *b, uint32_t field, struct buf *tmp, const char *name, double v)
{
    attr_begin(tmp, name);
    pb_key(tmp, AT_DOUBLE, WT_I64);
    put_f64(tmp, v);
    attr_end(b, field, tmp);
}

static void attr_str(struct buf *b, uint32_t field, struct buf *tmp, const char *name,
                     const char *v)
{
    attr_begin(tmp, name);
    pb_str(tmp, AT_STRING, v);
    attr_end(b, field, tmp);
}

/* A DoubleList attribute: AttributeProto{name, double_list = DoubleList{values packed}}. */
static void attr_f64_list(struct buf *b, uint32_t field, struct buf *tmp, struct buf *tmp2,
                          const char *name, const double *v, size_t n)
{
    buf_clear(tmp2);
    pb_key(tmp2, 1, WT_LEN);
    varint_append_u64(tmp2, 8 * (uint64_t)n);
    for (size_t i = 0; i < n; i++)
        put_f64(tmp2, v[i]);
    attr_begin(tmp, name);
    pb_bytes(tmp, AT_DOUBLE_LIST, tmp2->data, tmp2->len);
    if (buf_err(tmp2))
        tmp->err = buf_err(tmp2);
    attr_end(b, field, tmp);
}

/* Appends a length-delimited message (Chakra's protolib framing: varint32 size, bytes). */
static void frame(struct buf *out, const struct buf *msg)
{
    if (buf_err(msg))
        out->err = buf_err(msg);
    varint_append_u64(out, msg->len);
    buf_append(out, msg->data, msg->len);
}

/* Scratch of the node encoder. */
struct enc {
    struct buf node, tmp, tmp2;
    double *dens; /* [heads] */
};

/* The attention ops whose work the mask density of ST would set (docs/interop.md#chakra). */
static bool is_self_attention(const char *name)
{
    return !strcmp(name, "sa_qk") || !strcmp(name, "sa_softmax") || !strcmp(name, "sa_pv");
}

static void encode_node(struct enc *x, const struct peer_dit *d, const struct disc_hw *hw,
                        const struct disc_op *op, uint32_t k, uint64_t id, int mode,
                        struct export_chakra_stats *st)
{
    struct buf *b = &x->node;
    char name[96];
    buf_clear(b);
    if (op->block >= 0)
        snprintf(name, sizeof name, "step %u block %d %s", k, op->block, op->name);
    else
        snprintf(name, sizeof name, "step %u %s", k, op->name);
    pb_varint(b, 1, id);
    pb_str(b, 2, name);
    pb_varint(b, 3, CHAKRA_COMP_NODE);
    if (id > 0) { /* data_deps, packed: the op runs after the one before */
        pb_key(b, 5, WT_LEN);
        varint_append_u64(b, varint_size(id - 1));
        varint_append_u64(b, id - 1);
    }
    const double t_s = (double)op->exposed / (hw->clock_ghz * 1e9);
    pb_varint(b, 7, (uint64_t)llround(t_s * 1e6));
    /* the attrs ASTRA-sim's feeder reads, then ours */
    attr_u64(b, 10, &x->tmp, "is_cpu_op", AT_BOOL, 0);
    attr_u64(b, 10, &x->tmp, "num_ops", AT_INT64, 2 * op->a.mac + op->a.vpu_op);
    attr_u64(b, 10, &x->tmp, "tensor_size", AT_UINT64, op->a.hbm);
    attr_str(b, 10, &x->tmp, "op_class", op->cls);
    attr_str(b, 10, &x->tmp, "unit", op->unit == DISC_UNIT_DPU ? "dpu" : "vpu");
    attr_str(b, 10, &x->tmp, "mode", disc_mode_name(mode));
    attr_u64(b, 10, &x->tmp, "step", AT_INT64, k);
    attr_u64(b, 10, &x->tmp, "block", AT_INT64, (uint64_t)(int64_t)op->block);
    attr_u64(b, 10, &x->tmp, "cycles", AT_UINT64, op->exposed);
    attr_f64(b, 10, &x->tmp, "duration_ns", t_s * 1e9);
    attr_u64(b, 10, &x->tmp, "macs", AT_UINT64, op->a.mac);
    attr_u64(b, 10, &x->tmp, "vpu_ops", AT_UINT64, op->a.vpu_op);
    attr_f64(b, 10, &x->tmp, "kept_fraction", (double)d->n_kept[k] / d->dm.n);
    if (op->block >= 0 && is_self_attention(op->name) && d->masks) {
        bool any = false;
        for (uint32_t h = 0; h < d->dm.h; h++) {
            x->dens[h] = peer_dit_density(d, k, (uint32_t)op->block, h);
            any |= !isnan(x->dens[h]);
        }
        if (any) {
            attr_f64_list(b, 10, &x->tmp, &x->tmp2, "mask_density", x->dens, d->dm.h);
            st->density_nodes++;
        }
    }
    st->nodes++;
    st->cycles += op->exposed;
    st->seconds += t_s;
}

static void encode_metadata(struct enc *x, const struct peer_dit *d, int mode, struct buf *out)
{
    struct buf *b = &x->node;
    buf_clear(b);
    pb_str(b, 1, "0.0.4");
    attr_str(b, 2, &x->tmp, "producer", "acceltrace export chakra");
    attr_str(b, 2, &x->tmp, "model", d->model);
    attr_str(b, 2, &x->tmp, "trace_hash", d->trace_hash);
    attr_str(b, 2, &x->tmp, "mode", disc_mode_name(mode));
    attr_str(b, 2, &x->tmp, "hw", "disc defaults (configs/disc-a100-matched.json)");
    attr_str(b, 2, &x->tmp, "status",
             "durations, cycles, num_ops, tensor_size: predicted; kept_fraction, "
             "mask_density: input");
    attr_u64(b, 2, &x->tmp, "tokens", AT_UINT64, d->dm.n);
    attr_u64(b, 2, &x->tmp, "batch", AT_UINT64, d->dm.batch);
    frame(out, b);
}

int export_chakra_write(const struct peer_dit *d, const struct export_chakra_opts *o,
                        struct export_chakra_stats *st, struct errmsg *e)
{
    memset(st, 0, sizeof *st);
    if (o->mode != DISC_MODE_BASELINE && o->mode != DISC_MODE_CTR)
        return errmsg_set(e, ERR_USAGE, "mode '%s' is not exported (baseline or ctr)",
                          disc_mode_name(o->mode));
    if (o->step_lo >= d->steps || o->step_lo > o->step_hi)
        return errmsg_set(e, ERR_USAGE, "steps %u-%u are outside the trace's 0-%u", o->step_lo,
                          o->step_hi, d->steps - 1);
    const uint32_t hi = o->step_hi < d->steps ? o->step_hi : d->steps - 1;
    struct disc_hw hw;
    disc_hw_default(&hw);
    const size_t cap = disc_step_ops_max(d->dm.depth);
    struct enc x = {0};
    struct buf out;
    buf_init(&out);
    buf_init(&x.node);
    buf_init(&x.tmp);
    buf_init(&x.tmp2);
    struct disc_op *ops = mem_calloc(cap, sizeof *ops);
    x.dens = mem_calloc(d->dm.h, sizeof *x.dens);
    int rc = 0;
    if (!ops || !x.dens) {
        rc = errmsg_set(e, ERR_NOMEM, "out of memory");
        goto fail;
    }
    encode_metadata(&x, d, o->mode, &out);
    uint64_t id = 0;
    for (uint32_t k = o->step_lo; k <= hi; k++) {
        const struct disc_step_in in = {k, d->n_kept[k], d->generated[k], NULL};
        size_t n = disc_step_ops(&hw, &d->dm, o->mode, &in, ops, cap);
        for (size_t i = 0; i < n; i++) {
            encode_node(&x, d, &hw, &ops[i], k, id++, o->mode, st);
            frame(&out, &x.node);
        }
    }
    st->bytes = out.len;
    rc = peer_write_file(o->out_path, &out, e);
fail:
    mem_free(ops);
    mem_free(x.dens);
    buf_release(&x.node);
    buf_release(&x.tmp);
    buf_release(&x.tmp2);
    buf_release(&out);
    return rc;
}
