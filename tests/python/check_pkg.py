#!/usr/bin/python3
"""Checks of the acceltrace Python package (python/acceltrace), run by tests/sh/python_pkg.sh.

    check_pkg.py descriptor FRESH.desc         shipped trace.desc == a fresh protoc-c one
    check_pkg.py agree TRACE DUMP.jsonl        every record equals the C reader's dump
    check_pkg.py arrays TRACE DUMP.jsonl       to_numpy()/indices() against the dump's bytes
    check_pkg.py copy TRACE OUT                Python reader -> Python Writer
    check_pkg.py bad FILE...                   each damaged file raises TraceError
    check_pkg.py matrix TRACE                  truncation at every offset, every bit flipped
    check_pkg.py api TRACE.atr                 find(), filters, errors, Writer refusals
    check_pkg.py results DIR                   load_results(): Results, cells, units, pandas
    check_pkg.py notkept DISC.atr              to_numpy() of a mask --keep-masks left out
    check_pkg.py missing DIR                   missing trace/results: TraceNotFoundError
Exit 0 when every check passes; each failure prints a line "FAIL ...".
"""
import base64
import json
import math
import os
import signal
import sys
import tempfile
import time
import warnings

import numpy as np

import acceltrace
from acceltrace import _schema
from google.protobuf import descriptor_pb2
from google.protobuf.descriptor import FieldDescriptor as FD

failures = 0


def fail(msg):
    global failures
    failures += 1
    print("FAIL " + msg)


def check_descriptor(fresh):
    def files(path):
        s = descriptor_pb2.FileDescriptorSet()
        with open(path, "rb") as f:
            s.ParseFromString(f.read())
        return {fd.name: fd for fd in s.file}

    shipped = files(_schema._DESC)
    new = files(fresh)
    if shipped != new:
        fail("python/acceltrace/trace.desc is stale: regenerate it with `protoc-c -I. "
             "--include_imports --descriptor_set_out=python/acceltrace/trace.desc "
             "formats/*.proto` (files %s vs %s)" % (sorted(shipped), sorted(new)))
    else:
        print("descriptor: %d files equal" % len(new))


# ---- record values against `acceltrace dump` (docs/trace-format.md "JSON form") ----

_FLOATS = (FD.TYPE_FLOAT, FD.TYPE_DOUBLE)


def _special(v):
    if isinstance(v, str) and v in ("NaN", "Infinity", "-Infinity"):
        return float(v.replace("Infinity", "inf"))
    return v


def same_scalar(fd, py, js, where):
    if fd.type == FD.TYPE_BYTES:
        return base64.b64decode(js) == py or fail("%s: bytes differ" % where)
    if fd.type == FD.TYPE_ENUM:
        name = fd.enum_type.values_by_number[py].name if py in fd.enum_type.values_by_number \
            else py
        return name == js or fail("%s: enum %r vs %r" % (where, name, js))
    if fd.type in _FLOATS:
        js = _special(js)
        if not isinstance(js, (int, float)):
            return fail("%s: %r is not a number" % (where, js))
        if math.isnan(py) and math.isnan(js):
            return True
        if fd.type == FD.TYPE_FLOAT:  # dump prints 9 significant digits: exact in float32
            ok = np.float32(py) == np.float32(js)
        else:  # 17 digits: exact in double
            ok = py == float(js)
        return ok or fail("%s: %r vs %r" % (where, py, js))
    return py == js or fail("%s: %r vs %r" % (where, py, js))


def same_message(msg, js, where):
    """Every field of msg against the dump's object: all proto3 scalars, set submessages,
    repeated fields; no field of the dump missing from the message."""
    if not isinstance(js, dict):
        return fail("%s: not an object in the dump" % where)
    names = set()
    for fd in sorted(msg.DESCRIPTOR.fields, key=lambda f: f.number):
        w = "%s.%s" % (where, fd.name)
        if fd.label == FD.LABEL_REPEATED:
            names.add(fd.name)
            vals = getattr(msg, fd.name)
            arr = js.get(fd.name)
            if arr is None:
                if len(vals):
                    fail("%s: missing in the dump" % w)
                continue
            if len(arr) != len(vals):
                fail("%s: %d values vs %d" % (w, len(vals), len(arr)))
                continue
            for i, (a, b) in enumerate(zip(vals, arr)):
                if fd.type == FD.TYPE_MESSAGE:
                    same_message(a, b, "%s[%d]" % (w, i))
                else:
                    same_scalar(fd, a, b, "%s[%d]" % (w, i))
        elif fd.type == FD.TYPE_MESSAGE:
            if msg.HasField(fd.name):
                names.add(fd.name)
                if fd.name not in js:
                    fail("%s: set, missing in the dump" % w)
                else:
                    same_message(getattr(msg, fd.name), js[fd.name], w)
        else:
            names.add(fd.name)
            if fd.name not in js:
                fail("%s: missing in the dump" % w)
            else:
                same_scalar(fd, getattr(msg, fd.name), js[fd.name], w)
    extra = set(js) - names
    if extra:
        fail("%s: the dump has fields %s the Python record lacks" % (where, sorted(extra)))


def dump_lines(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def check_agree(trace, dump):
    t = acceltrace.open(trace)
    lines = dump_lines(dump)
    before = failures
    ours = [("header", (-1, -1, -1), t.header, 0, 16)]
    ours += [(r.type, (r.step, r.layer, r.head), r.msg, r.frame, r.offset) for r in t.records()]
    if len(ours) != len(lines):
        fail("%s: %d records in Python, %d in the C dump" % (trace, len(ours), len(lines)))
    for (typ, key, msg, frame, off), js in zip(ours, lines):
        where = "%s frame %d" % (os.path.basename(trace), frame)
        got = (frame, off, typ) + key
        want = (js["frame"], js["offset"], js["type"], js["step"], js["layer"], js["head"])
        if got != want:
            fail("%s: frame/offset/type/keys %s vs C %s" % (where, got, want))
        same_message(msg, js["record"], where)
    # the index through the Python reader equals the one the C reader checked
    counts = t.counts()
    print("agree %s: %d records %s (%s), hash %s" % (
        os.path.basename(trace), len(lines), "equal" if failures == before else "DIFFER", ", ".join("%s %d" % kv for kv in counts.items()),
        t.content_hash))


# ---- arrays against the bytes of the dump (bit by bit in plain Python) ----

def bit(b, i):
    return (b[i >> 3] >> (i & 7)) & 1


def check_arrays(trace, dump):
    t = acceltrace.open(trace)
    by_frame = {js["frame"]: js for js in dump_lines(dump)}
    n_mask = n_step = n_sel = n_kura = 0
    masks, tokens = [], {}
    for r in t.records():
        js = by_frame[r.frame]["record"]
        where = "%s frame %d" % (os.path.basename(trace), r.frame)
        if r.type == "disc_mask" and r.msg.kept:
            m = r.to_numpy()
            b = base64.b64decode(js["bits"])
            cols = js["n_cols"]
            wb = (cols + 63) // 64 * 8
            rows = len(b) // wb
            if m.shape != (rows, cols) or m.dtype != np.bool_:
                fail("%s: mask shape %s %s, want (%d, %d) bool" % (where, m.shape, m.dtype,
                                                                    rows, cols))
                continue
            ref = [[bit(b, rr * wb * 8 + c) for c in range(cols)] for rr in range(rows)]
            if not np.array_equal(m, np.array(ref, dtype=bool)):
                fail("%s: mask bits differ from the C record" % where)
            if m.sum(axis=1).tolist() != list(js["row_nnz"]):
                fail("%s: mask row counts differ from the capture's row_nnz" % where)
            masks.append((where, r.msg.step, m, js["nnz"]))
            n_mask += 1
        elif r.type == "disc_step":
            m = r.to_numpy()
            b = base64.b64decode(js["token_mask"])
            n = t.header.disc.tokens
            if m.tolist() != [bool(bit(b, i)) for i in range(n)]:
                fail("%s: token mask differs" % where)
            tokens[r.msg.k] = m
            if int(m.sum()) != js["n_kept"]:
                fail("%s: token mask holds %d tokens, n_kept %d" % (where, m.sum(), js["n_kept"]))
            n_step += 1
        elif r.type == "salca_select":
            idx = r.indices()
            b = base64.b64decode(js["sel"])
            ref, v, shift, prev = [], 0, 0, -1  # formats/varint.h, byte by byte
            for x in b:
                v |= (x & 0x7F) << shift
                shift += 7
                if not x & 0x80:
                    prev = v if prev < 0 else prev + v + 1
                    ref.append(prev)
                    v = shift = 0
            runs = int(idx.size > 0) + int(np.count_nonzero(np.diff(idx) != 1))
            if idx.dtype != np.int64 or idx.tolist() != ref or len(ref) != js["count"] \
                    or runs != js["runs"] or (idx.size > 1 and np.any(np.diff(idx) <= 0)):
                fail("%s: selected indices differ (count %d, runs %d vs %d)" % (
                    where, idx.size, runs, js["runs"]))
            n_sel += 1
        elif r.type == "kura_step":
            ph = r.to_numpy()
            b = base64.b64decode(js["phase_q15"])
            q = [int.from_bytes(b[i:i + 2], "little", signed=True) for i in range(0, len(b), 2)]
            ref = np.array(q, dtype=np.float64).reshape(js["h"], js["w"]) * math.pi / 32768
            if ph.dtype != np.float64 or not np.array_equal(ph, ref):
                fail("%s: phase map differs" % where)
            n_kura += 1
    for where, step, m, nnz in masks:  # nnz counts the rows computed at that step
        if step in tokens and int(m[tokens[step]].sum()) != nnz:
            fail("%s: %d mask bits on the step's computed rows, nnz %d" % (
                where, m[tokens[step]].sum(), nnz))
    print("arrays %s: %d masks, %d token masks, %d selections, %d phase maps equal" % (
        os.path.basename(trace), n_mask, n_step, n_sel, n_kura))
    return n_mask + n_step + n_sel + n_kura


def check_copy(src, out):
    t = acceltrace.open(src)
    with acceltrace.Writer(out, t.header) as w:
        for r in t.records():
            w.append(r.msg)
    # the Writer always hashes with XXH3-128, as `recover` does: a legacy SHA-256 trace's
    # copy has a new hash (verify checks it)
    if len(t.content_hash) == 32 and w.content_hash != t.content_hash:
        fail("copy of %s: content hash %s, original %s" % (src, w.content_hash, t.content_hash))


# ---- damaged input ----

def read_all(path, **kw):
    t = acceltrace.open(path, **kw)
    n = sum(1 for _ in t.records())
    t.close()
    return n


def check_bad(paths):
    for p in paths:
        if not os.path.isfile(p):
            fail("%s: no such file" % p)
            continue
        try:
            read_all(p)
            fail("%s: read without error" % p)
        except acceltrace.TraceError as e:
            if p not in str(e) or e.path != p:
                fail("%s: message does not name the file: %s" % (p, e))
            print("bad %s: %s" % (os.path.basename(p), e))
            same_as_c(p, e)


def same_as_c(p, e):
    """The message equals the C reader's (tests/golden/bad/NAME.err, what `verify` prints,
    which reads damaged traces): as is, or, for a trace refused as damaged, the what part
    (no index) or the message of the read with allow_partial=True (a damaged frame)."""
    err = os.path.splitext(p)[0] + ".err"
    if not os.path.exists(err):
        return
    rel = "tests/golden/bad/" + os.path.basename(p)  # the path the .err files name
    want = open(err).read().splitlines()[0].replace("acceltrace: ", "", 1)
    want = want.replace("'%s'" % rel, "'%s'" % p)
    got = str(e).replace("; allow_partial=True reads it anyway", "")
    if got == want:
        return
    if got.startswith("damaged trace: "):
        if want.split(" ('")[0] in got:
            return
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", acceltrace.DamagedTraceWarning)
                read_all(p, allow_partial=True)
        except acceltrace.TraceError as e2:
            if str(e2) == want:
                return
            got = str(e2)
    fail("%s: message differs from the C reader's:\n  python: %s\n  C:      %s" % (p, got, want))


class Hang(Exception):
    pass


def _alarm(sig, frm):
    raise Hang()


def check_matrix(trace):
    data = open(trace, "rb").read()
    n = len(data)
    signal.signal(signal.SIGALRM, _alarm)
    d = tempfile.mkdtemp()
    path = os.path.join(d, "m.atr")
    counts = {"ok": 0, "error": 0}
    t0 = time.time()
    warnings.simplefilter("ignore", acceltrace.DamagedTraceWarning)

    def one(buf, what, must_fail, **kw):
        with open(path, "wb") as f:
            f.write(buf)
        signal.alarm(5)
        try:
            read_all(path, **kw)
            counts["ok"] += 1
            if must_fail:
                fail("%s: read without error" % what)
        except acceltrace.TraceError as e:
            counts["error"] += 1
            if e.path != path or path not in str(e):
                fail("%s: message does not name the file: %s" % (what, e))
        except Hang:
            fail("%s: no result within 5 s" % what)
        except Exception as e:  # the point of the test: nothing but TraceError
            fail("%s: %s: %s" % (what, type(e).__name__, e))
        finally:
            signal.alarm(0)

    for cut in range(n):
        one(data[:cut], "cut at %d" % cut, True)
        one(data[:cut], "cut at %d (allow_partial)" % cut, False, allow_partial=True)
    for i in range(n):
        for b in range(8):
            buf = bytearray(data)
            buf[i] ^= 1 << b
            # bytes 10-11 are the minor version: a reader accepts every minor of its major
            one(bytes(buf), "bit %d of byte %d" % (b, i), i not in (10, 11))
    os.unlink(path)
    os.rmdir(d)
    print("matrix %s: %d bytes, %d cuts x 2 + %d flips: %d TraceError, %d read (partial "
          "prefixes), %.1f s" % (os.path.basename(trace), n, n, 8 * n, counts["error"],
                                 counts["ok"], time.time() - t0))


# ---- API details ----

def check_api(trace):
    t = acceltrace.open(trace)
    recs = list(t.records())
    for r in recs:
        f = t.find(r.type, r.step, r.layer, r.head)
        first = next(x for x in recs if (x.type, x.step, x.layer, x.head) ==
                     (r.type, r.step, r.layer, r.head))
        if f is None or f.frame != first.frame or f.msg != first.msg:
            fail("find(%s, %d, %d, %d) gave %r, want frame %d" % (r.type, r.step, r.layer,
                                                                   r.head, f, first.frame))
    if t.find("disc_mask", 99999, 0, 0) is not None:
        fail("find of a missing key returned a record")
    types = {r.type for r in recs}
    for ty in types:
        got = [r.frame for r in t.records(ty)]
        if got != [r.frame for r in recs if r.type == ty]:
            fail("records(%r) frames differ" % ty)
    try:
        acceltrace.open(os.path.dirname(os.path.abspath(trace)))
        fail("a folder opened as a trace")
    except acceltrace.TraceError as e:
        print("api folder: %s" % e)
    d = tempfile.mkdtemp()
    out = os.path.join(d, "w.atr")
    open(out + ".partial", "wb").close()
    try:
        acceltrace.Writer(out, t.header)
        fail("Writer ignored an existing .partial")
    except acceltrace.TraceError as e:
        print("api lock: %s" % e)
    os.unlink(out + ".partial")
    try:
        with acceltrace.Writer(out, t.header) as w:
            w.append(recs[0].msg)
            raise KeyError("stop")
    except KeyError:
        pass
    if os.path.exists(out) or os.path.exists(out + ".partial"):
        fail("an unfinished Writer left a file")
    w = acceltrace.Writer(out, t.header)
    try:
        w.append(t.header)
        fail("Writer accepted a second header")
    except ValueError:
        pass
    w.close()
    t2 = acceltrace.open(out)
    if list(t2.records()) or t2.counts() != {"header": 1}:
        fail("a header-only trace does not read back")
    os.unlink(out)
    os.rmdir(d)
    print("api %s: find on %d records, type filters, refusals ok" % (os.path.basename(trace),
                                                                     len(recs)))


def check_crc():
    """The portable CRC-32C (numpy lanes + Python tail) against the check value, a plain
    table loop and, when installed, crcmod's C extension; seeded sizes around the
    thresholds."""
    from acceltrace import _crc32c as c
    rng = np.random.default_rng(15)
    sizes = [0, 1, 255, 4095, 4096, 4097, 5000, 65536 + 17, (1 << 20) + 12345]
    for n in sizes:
        d = rng.integers(0, 256, n, dtype=np.uint8).tobytes()
        want = c._update_py(0xFFFFFFFF, d) ^ 0xFFFFFFFF
        got = (c.crc32c_portable(d), c.crc32c(d),
               c.crc32c_portable(d[n // 3:], c.crc32c_portable(d[:n // 3])))
        if any(g != want for g in got):
            fail("crc32c of %d bytes: %s, want %08x" % (n, [hex(g) for g in got], want))
    if c.crc32c(b"123456789") != 0xE3069283 or c.crc32c_portable(b"123456789") != 0xE3069283:
        fail("crc32c check value")
    print("crc32c: %d sizes agree, seed 15 (crcmod extension %s)" % (len(sizes),
                                                              "used" if c.FAST else "absent"))


def check_results(d):
    """load_results() rows against results.csv, cell by cell, and its units; the one
    documented type (Results, a list of dicts) and its .to_pandas() DataFrame."""
    import csv
    rows = acceltrace.load_results(d)
    if type(rows) is not acceltrace.Results or not isinstance(rows, list):
        return fail("load_results returned %s, not acceltrace.Results" % type(rows).__name__)
    with open(os.path.join(d, "results.csv")) as f:
        table = list(csv.reader(f))
    head = [c.split(" [")[0] for c in table[0]]
    if len(rows) != len(table) - 1 or not rows:
        return fail("load_results: %d rows, results.csv %d" % (len(rows), len(table) - 1))
    for i, (row, cells) in enumerate(zip(rows, table[1:])):
        for name, cell in zip(head, cells):
            v = row.get(name)
            ok = (str(v).lower() == cell.lower() if isinstance(v, (bool, str))
                  else v is not None and float(cell) == float(v))
            if not ok:
                fail("load_results row %d %s: %r, results.csv %r" % (i, name, v, cell))
    for c in table[0]:
        if " [" in c:
            name, unit = c[:-1].split(" [", 1)
            if rows.units.get(name) != unit:
                fail("load_results units[%s] = %r, results.csv says %r" % (
                    name, rows.units.get(name), unit))
    print("results: %d rows x %d columns equal results.csv, units %s" % (
        len(rows), len(head), rows.units))
    try:
        import pandas as pd
    except ImportError:
        return fail("pandas missing (scripts/deps.sh installs python3-pandas)")
    df = rows.to_pandas()
    if not isinstance(df, pd.DataFrame) or df.shape != (len(rows), len(rows.columns())):
        return fail("to_pandas(): %r, want a DataFrame of %d x %d" % (
            type(df), len(rows), len(rows.columns())))
    if list(df.columns) != rows.columns() or df.attrs.get("units") != rows.units:
        fail("to_pandas(): columns %s / units %s differ from the rows'" % (
            list(df.columns), df.attrs.get("units")))
    for i, row in enumerate(rows):
        for k, v in row.items():
            got = df.iloc[i][k]
            same = got == v or (isinstance(v, float) and math.isnan(v) and math.isnan(got))
            if not same:
                fail("to_pandas() row %d %s: %r, rows say %r" % (i, k, got, v))
    # a numeric column is numeric in pandas, so analysis code can compute on it
    if "config_index" in df and df["config_index"].sum() != sum(r["config_index"] for r in rows):
        fail("to_pandas(): config_index sums differ")
    print("results to_pandas: DataFrame %d x %d equals the rows, units in attrs" % df.shape)


def check_notkept(trace):
    """to_numpy() of a disc_mask the capture did not keep raises MaskNotKeptError naming
    --keep-masks (it returned an empty array before); kept ones still give their bits."""
    kept = skipped = 0
    for r in acceltrace.open(trace).records("disc_mask"):
        if r.msg.kept:
            if r.to_numpy().shape[1] != r.msg.n_cols:
                fail("kept mask frame %d: shape %s" % (r.frame, r.to_numpy().shape))
            kept += 1
            continue
        try:
            a = r.to_numpy()
            fail("to_numpy() of the mask not kept at frame %d returned %r" % (r.frame, a.shape))
        except acceltrace.MaskNotKeptError as e:
            if "--keep-masks" not in str(e) or not isinstance(e, ValueError):
                fail("MaskNotKeptError does not name --keep-masks: %s" % e)
            if skipped == 0:
                print("notkept: %s" % e)
        skipped += 1
    if not kept or not skipped:
        fail("notkept: %d kept and %d not kept masks; the check needs both" % (kept, skipped))
    print("notkept: %d masks not kept raise MaskNotKeptError, %d kept read" % (skipped, kept))


def check_missing(d):
    """A missing trace or results file raises TraceNotFoundError: a TraceError and a
    FileNotFoundError (errno ENOENT, filename), message "cannot open 'PATH': ..."."""
    import errno
    for what, call, path in (
            ("open", lambda: acceltrace.open(os.path.join(d, "nosuch.atr")),
             os.path.join(d, "nosuch.atr")),
            ("load_results", lambda: acceltrace.load_results(os.path.join(d, "nosuch")),
             os.path.join(d, "nosuch", "results.jsonl"))):
        try:
            call()
            fail("%s of a missing file raised nothing" % what)
            continue
        except FileNotFoundError as e:
            ok = (isinstance(e, acceltrace.TraceError) and isinstance(e, acceltrace.TraceNotFoundError)
                  and e.errno == errno.ENOENT and e.filename == path and e.path == path
                  and str(e).startswith("cannot open '%s'" % path))
            if not ok:
                fail("%s of a missing file: %r (errno %s, filename %r): want a "
                     "TraceNotFoundError naming the file" % (what, e, e.errno, e.filename))
        except Exception as e:
            fail("%s of a missing file raised %s, not a FileNotFoundError" % (
                what, type(e).__name__))
            continue
        try:
            call()
        except acceltrace.TraceError as e:
            print("missing %s: %s" % (what, e))
    if not issubclass(acceltrace.TraceNotFoundError, OSError):
        fail("TraceNotFoundError is not an OSError")


def check_partial(trace, tool):
    """A trace cut at every offset after the preamble: the records the Python reader gives
    with allow_partial=True before it stops equal the intact prefix `acceltrace dump`
    prints (dump reads damaged traces), and both stop with an error exactly when a frame
    is cut (dump exits 3 then; a cut at a frame boundary reads whole)."""
    import subprocess
    data = open(trace, "rb").read()
    d = tempfile.mkdtemp()
    path = os.path.join(d, "cut.atr")
    warnings.simplefilter("ignore", acceltrace.DamagedTraceWarning)
    checked = 0
    for cut in range(16, len(data) + 1):
        with open(path, "wb") as f:
            f.write(data[:cut])
        c = subprocess.run([tool, "dump", path], capture_output=True, text=True)
        c_lines = [json.loads(x) for x in c.stdout.splitlines() if x.strip()]
        got, err = [], None
        try:
            t = acceltrace.open(path, allow_partial=True)
            got.append(0)
            for r in t.records():
                got.append(r.frame)
        except acceltrace.TraceError as e:
            err = e
        want = [x["frame"] for x in c_lines]
        if got != want or (err is None) != (c.returncode == 0):
            fail("cut at %d: Python read frames %s (%s), C dump %s (exit %d: %s)" % (
                cut, got[-3:], err, want[-3:], c.returncode, c.stderr.strip()))
        checked += 1
    os.unlink(path)
    os.rmdir(d)
    print("partial %s: %d cuts read the same frames as `dump`" % (os.path.basename(trace),
                                                                   checked))


def main():
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "crc":
        check_crc()
    elif cmd == "results":
        check_results(args[0])
    elif cmd == "notkept":
        check_notkept(args[0])
    elif cmd == "missing":
        check_missing(args[0])
    elif cmd == "descriptor":
        check_descriptor(args[0])
    elif cmd == "agree":
        check_agree(args[0], args[1])
    elif cmd == "arrays":
        if check_arrays(args[0], args[1]) == 0 and "--some" in args:
            fail("%s: no array records checked" % args[0])
    elif cmd == "copy":
        check_copy(args[0], args[1])
    elif cmd == "bad":
        check_bad(args)
    elif cmd == "partial":
        check_partial(args[0], args[1])
    elif cmd == "matrix":
        check_matrix(args[0])
    elif cmd == "api":
        check_api(args[0])
    else:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
