#!/usr/bin/env bash
# `acceltrace export scalesim` and `export chakra` (docs/interop.md#peer-tools) on small disc
# traces (micro with CFG, so batch 2, and the class-conditional dit-micro):
# - scalesim: the topology's header and rows parse as SCALE-Sim's GEMM loader reads them;
#   per FLOP class, sum 2 M N K over the rows equals the trace's own DiscStep tally
#   (flops_ctr of the step with --step K, flops_dense without); the .cfg parses with
#   configparser and carries the options.
# - chakra: the file decodes as length-framed protobuf messages (a wire decoder written
#   here); one node per model op, each depending on the one before; kept_fraction equals
#   N_k / N of the step and each self-attention node's mask_density per head equals sum nnz /
#   sum rows x n_cols of the trace's DiscMask records; the summed `cycles` equal the
#   `cycles` of `acceltrace replay` with configs/disc-a100-matched.json per mode.
# - errors: a salca trace is exit 3 naming the file, a bad option or step exit 2.
# When ACCELTRACE_PEER_SCALESIM names a SCALE-Sim v2 checkout, its scale.py runs on the
# topology; when ACCELTRACE_PEER_CHAKRA names a Chakra checkout (and protoc is installed),
# its jsonizer reads the trace. Otherwise those two parts print SKIP and the rest is the pass.
set -eu
A=${ACCELTRACE:?}
PY=/usr/bin/python3
here=$(cd "$(dirname "$0")/../.." && pwd)
"$PY" -c "import google.protobuf" 2> /dev/null || { echo "SKIP: no python3-protobuf"; exit 77; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
export PYTHONPATH=$here/python${PYTHONPATH:+:$PYTHONPATH}
fail=0
bad() { echo "FAIL $*"; fail=1; }

"$A" capture disc --model micro --steps 3 --cfg 4 --threads 1 -q -o m.atr
"$A" capture disc --model dit-micro --steps 2 --threads 1 -q -o dm.atr
"$A" capture salca -q --length 512 --steps 2 --layers 1 --heads 2 -o s.atr > /dev/null

for t in m dm; do
    "$A" export scalesim $t.atr --step 1 --array 16x8 --dataflow os --sram-kb 32 -q \
        -o "$t/topo.csv" > "$t.ss.out" || bad "export scalesim $t step 1: exit $?"
    "$A" export scalesim $t.atr --json -o "$t/dense.csv" > "$t.ss.json" || bad "export scalesim $t dense"
    for mode in baseline ctr; do
        "$A" export chakra $t.atr --mode $mode -q -o "$t.$mode.et" > /dev/null \
            || bad "export chakra $t $mode: exit $?"
    done
    "$A" replay $t.atr --hw "$here/configs/disc-a100-matched.json" -q -o "res_$t" > /dev/null \
        || bad "replay $t"
done

"$PY" - <<'PY' || bad "structure and values"
import configparser, csv, json, struct, sys
import acceltrace

def trace(path):
    t = acceltrace.open(path)
    steps = {r.msg.k: r.msg for r in t.records("disc_step")}
    dens = {}
    for r in t.records("disc_mask"):
        m = r.msg
        a = dens.setdefault((m.step, m.block, m.head), [0, 0])
        a[0] += m.nnz
        a[1] += m.rows * m.n_cols
    return t.header.disc, steps, dens

# the topology's rows by FLOP class of the capture's tally (capture/disc/disc_flops.h)
CLASS = {"sa_q": "sa_qkv", "sa_kv": "sa_qkv", "sa_qk": "sa_qk", "sa_pv": "sa_pv",
         "sa_o": "sa_proj", "ca_q": "ca_q", "ca_kv": "ca_kv", "ca_qk": "ca_qk", "ca_pv": "ca_pv",
         "ca_o": "ca_proj", "ff_up": "ffn_up", "ff_down": "ffn_down"}

def check_topology(path, hdr, flops):
    lines = open(path).read().splitlines()
    assert lines[0] == "Layer,M,N,K,", lines[0]
    got = {}
    for row in lines[1:]:
        e = row.split(",")
        assert len(e) == 5 and e[4] == "", row          # SCALE-Sim drops the last field
        name, m, n, k = e[0], int(e[1]), int(e[2]), int(e[3])
        assert m > 0 and n > 0 and k > 0, row
        op = name.split(".")[1] if name.startswith("b") and "." in name else name
        cls = CLASS.get(op, "embed")
        got[cls] = got.get(cls, 0) + 2 * m * n * k
    classes = list(hdr.flop_classes)
    for cls, v in got.items():
        want = flops[classes.index(cls)]
        assert v == want, (path, cls, v, want)
    for cls in CLASS.values():                            # every GEMM class has its rows
        want = flops[classes.index(cls)]
        assert got.get(cls, 0) == want, (path, cls, got.get(cls), want)
    return len(lines) - 1

def pb_fields(b):
    """(field, wire type, value) of one protobuf message; varints as ints, LEN as bytes."""
    i, out = 0, []
    def varint():
        nonlocal i
        v = s = 0
        while True:
            c = b[i]; i += 1
            v |= (c & 0x7F) << s; s += 7
            if not c & 0x80:
                return v
    while i < len(b):
        key = varint(); f, wt = key >> 3, key & 7
        if wt == 0:
            out.append((f, 0, varint()))
        elif wt == 1:
            out.append((f, 1, struct.unpack("<d", b[i:i + 8])[0])); i += 8
        elif wt == 2:
            n = varint(); out.append((f, 2, b[i:i + n])); i += n
        else:
            raise ValueError("wire type %d" % wt)
    return out

def attr(raw):
    f = pb_fields(raw)
    name = [v for k, _, v in f if k == 1][0].decode()
    k, wt, v = [x for x in f if x[0] != 1][0]
    if k == 4:                                            # DoubleList{values packed}
        p = [x for x in pb_fields(v) if x[0] == 1][0][2]
        v = list(struct.unpack("<%dd" % (len(p) // 8), p))
    elif k in (29,):
        v = v.decode()
    elif k == 9 and v >= 1 << 63:
        v -= 1 << 64
    return name, v

def read_et(path):
    data, i, msgs = open(path, "rb").read(), 0, []
    while i < len(data):
        n = s = 0
        while True:
            c = data[i]; i += 1
            n |= (c & 0x7F) << s; s += 7
            if not c & 0x80:
                break
        msgs.append(pb_fields(data[i:i + n])); i += n
    return msgs

for t in ("m", "dm"):
    hdr, steps, dens = trace(t + ".atr")
    assert hdr.batch == (2 if t == "m" else 1), hdr.batch
    rows = check_topology(t + "/topo.csv", hdr, list(steps[1].flops_ctr))
    check_topology(t + "/dense.csv", hdr, list(steps[0].flops_dense))
    out = open(t + ".ss.out").read()
    assert "%d GEMM layers" % rows in out and "B x %d tokens" % steps[1].n_kept in out, out
    j = json.load(open(t + ".ss.json"))
    assert j["tokens"] == hdr.tokens and j["status"] == "input", j
    cp = configparser.ConfigParser(); cp.read(t + "/topo.cfg")
    a = cp["architecture_presets"]
    assert (a["ArrayHeight"], a["ArrayWidth"], a["Dataflow"], a["IfmapSramSzkB"]) == \
        ("16", "8", "os", "32"), dict(a)
    assert cp["general"]["run_name"] == "topo" and cp["run_presets"]["InterfaceBandwidth"] == "CALC"

    res = {r["mode"]: r for r in csv.DictReader(open("res_%s/results.csv" % t))}
    for mode in ("baseline", "ctr"):
        msgs = read_et("%s.%s.et" % (t, mode))
        meta = dict(attr(v) for k, _, v in msgs[0] if k == 2)
        assert [v for k, _, v in msgs[0] if k == 1] == [b"0.0.4"], msgs[0][:1]
        assert meta["mode"] == mode and meta["tokens"] == hdr.tokens, meta
        cycles, nd = 0, 0
        for idx, m in enumerate(msgs[1:]):
            f = {}
            for k, _, v in m:
                f.setdefault(k, []).append(v)
            assert f.get(1, [0])[0] == idx and f[3] == [4], (idx, f.get(1), f.get(3))
            if idx:                                       # packed data_deps = [idx - 1]
                assert pb_fields(b"\x08" + f[5][0]) == [(1, 0, idx - 1)], (idx, f[5])
            at = dict(attr(v) for v in f[10])
            k = at["step"]
            assert abs(at["kept_fraction"] - steps[k].n_kept / hdr.tokens) < 1e-15, at
            assert at["num_ops"] == 2 * at["macs"] + at["vpu_ops"], at
            assert abs(at["duration_ns"] - at["cycles"]) < 1e-6 * max(1, at["cycles"]), at  # 1 GHz
            cycles += at["cycles"]
            op = f[2][0].decode().split()[-1]
            if op in ("sa_qk", "sa_softmax", "sa_pv") and any(x[0] == k for x in dens):
                want = [dens[(k, at["block"], h)][0] / dens[(k, at["block"], h)][1]
                        for h in range(hdr.heads)]
                assert at["mask_density"] == want, (at["mask_density"], want)
                nd += 1
        want_c = int(res[mode]["cycles [cycles]"])
        assert cycles == want_c, (t, mode, cycles, want_c)
        assert nd > 0, "no node carries mask densities"
        print("%s %s: %d nodes, %d cycles = replay, %d with densities" %
              (t, mode, len(msgs) - 1, cycles, nd))
PY

# errors: a trace of another workload is exit 3 naming it; bad options exit 2
rc=0
"$A" export scalesim s.atr -o x.csv > /dev/null 2> err || rc=$?
[ $rc -eq 3 ] && grep -q "s.atr" err && grep -q "not a disc trace" err || bad "salca trace to scalesim: exit $rc $(cat err)"
rc=0
"$A" export chakra s.atr -o x.et > /dev/null 2> err || rc=$?
[ $rc -eq 3 ] && grep -q "s.atr" err || bad "salca trace to chakra: exit $rc $(cat err)"
rc=0
"$A" export scalesim m.atr --dataflow xx -o x.csv > /dev/null 2> err || rc=$?
[ $rc -eq 2 ] || bad "bad --dataflow: exit $rc"
rc=0
"$A" export scalesim m.atr --step 9 -o x.csv > /dev/null 2> err || rc=$?
[ $rc -eq 2 ] && grep -q "beyond" err || bad "--step past the trace: exit $rc $(cat err)"
rc=0
"$A" export chakra m.atr --mode all -o x.et > /dev/null 2> err || rc=$?
[ $rc -eq 2 ] || bad "--mode all: exit $rc"
rc=0
"$A" export chakra m.atr --steps 5-6 -o x.et > /dev/null 2> err || rc=$?
[ $rc -eq 2 ] || bad "--steps outside: exit $rc"
[ ! -e x.csv ] && [ ! -e x.et ] && [ ! -e x.csv.tmp ] || bad "a failed export left a file"

# the peers' own readers, when a checkout is named
if [ -n "${ACCELTRACE_PEER_SCALESIM:-}" ] && [ -f "$ACCELTRACE_PEER_SCALESIM/scalesim/scale.py" ]; then
    (cd "$ACCELTRACE_PEER_SCALESIM" && PYTHONPATH=$ACCELTRACE_PEER_SCALESIM "$PY" scalesim/scale.py \
        -t "$tmp/m/topo.csv" -c "$tmp/m/topo.cfg" -p "$tmp/ssrun" -i gemm > "$tmp/ss.log" 2>&1) \
        || bad "SCALE-Sim on the topology: $(tail -3 "$tmp/ss.log")"
    rep=$tmp/ssrun/topo/COMPUTE_REPORT.csv
    [ "$(($(wc -l < "$rep") - 1))" -eq "$(($(wc -l < m/topo.csv) - 1))" ] \
        || bad "SCALE-Sim reported $(wc -l < "$rep") lines for $(wc -l < m/topo.csv) rows"
    echo "SCALE-Sim ran $(($(wc -l < "$rep") - 1)) layers"
else
    echo "SKIP: SCALE-Sim run (set ACCELTRACE_PEER_SCALESIM to a scale-sim-v2 checkout)"
fi
if [ -n "${ACCELTRACE_PEER_CHAKRA:-}" ] && [ -f "$ACCELTRACE_PEER_CHAKRA/schema/protobuf/et_def.proto" ] \
    && command -v protoc > /dev/null; then
    P=$tmp/chakrapkg
    mkdir -p "$P/chakra/schema/protobuf" "$P/chakra/src"
    touch "$P/chakra/__init__.py" "$P/chakra/schema/__init__.py" \
        "$P/chakra/schema/protobuf/__init__.py" "$P/chakra/src/__init__.py"
    ln -s "$ACCELTRACE_PEER_CHAKRA/src/jsonizer" "$ACCELTRACE_PEER_CHAKRA/src/third_party" "$P/chakra/src/"
    protoc -I"$ACCELTRACE_PEER_CHAKRA/schema/protobuf" --python_out="$P/chakra/schema/protobuf" \
        "$ACCELTRACE_PEER_CHAKRA/schema/protobuf/et_def.proto"
    PYTHONPATH=$P "$PY" -m chakra.src.jsonizer.jsonizer --input_filename m.ctr.et \
        --output_filename m.ctr.json || bad "Chakra jsonizer on the trace"
    # one JSON object per message: the metadata and every node
    n=$(grep -c '"type": "COMP_NODE"' m.ctr.json || true)
    want=$("$A" export chakra m.atr --json -o y.et | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["nodes"])')
    [ "$n" = "$want" ] || bad "Chakra jsonizer read $n nodes, the export wrote $want"
    echo "Chakra jsonizer read $n nodes"
else
    echo "SKIP: Chakra jsonizer (set ACCELTRACE_PEER_CHAKRA to a chakra checkout; needs protoc)"
fi
[ $fail -eq 0 ] && echo "peer_export: ok"
exit $fail
