#!/usr/bin/env python3
"""Writes the files made from the container table and the version header.

    scripts/gen_trace_format.py c       formats/trace_format.tab -> formats/trace_format.h
    scripts/gen_trace_format.py py      formats/trace_format.tab -> python/acceltrace/_format.py
    scripts/gen_trace_format.py version common/version.h -> python/acceltrace/_version.py
    scripts/gen_trace_format.py check   exit 1 naming each generated file that differs from
                                        what its source gives now (the freshness test)

Run from the repository root (`make format-tables` runs the first three). Each output is
written to a temporary name and renamed, so a failed run leaves the old file. The format
of the table is described at its top and in docs/trace-format.md#format-source.
"""
import os
import re
import shlex
import sys

TABLE = "formats/trace_format.tab"
VERSION_H = "common/version.h"
OUT_C = "formats/trace_format.h"
OUT_PY = "python/acceltrace/_format.py"
OUT_VERSION = "python/acceltrace/_version.py"


class TableError(Exception):
    pass


def parse_table(path):
    """(consts, keys, msgs): lists of (name, value, hex), (record, (step, layer, head)) with each
    key a (field, signed) pair or None, and (name, text), in table order."""
    consts, keys, msgs, seen = [], [], [], set()
    with open(path) as f:
        lines = f.read().splitlines()
    for no, line in enumerate(lines, 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        where = "%s line %d" % (path, no)
        try:
            w = shlex.split(line)
        except ValueError as e:
            raise TableError("%s: %s" % (where, e))
        kind = w[0]
        if len(w) < 3 or (w[0], w[1]) in seen:
            raise TableError("%s: missing fields or a name given twice" % where)
        seen.add((w[0], w[1]))
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", w[1]):
            raise TableError("%s: bad name '%s'" % (where, w[1]))
        if kind == "const" and len(w) == 3:
            quoted = line.split(None, 2)[2].startswith('"')
            if quoted:
                consts.append((w[1], w[2], False))
            elif re.fullmatch(r"[0-9]+|0x[0-9A-Fa-f]+", w[2]):
                consts.append((w[1], int(w[2], 0), w[2].startswith("0x")))
            else:
                raise TableError("%s: '%s' is neither an integer nor a \"string\"" % (where, w[2]))
        elif kind == "key" and len(w) == 5:
            ks = []
            for k in w[2:]:
                if k == "-":
                    ks.append(None)
                elif re.fullmatch(r"[a-z_][a-z0-9_]*(:s)?", k):
                    ks.append((k.split(":")[0], k.endswith(":s")))
                else:
                    raise TableError("%s: bad key field '%s'" % (where, k))
            keys.append((w[1], tuple(ks)))
        elif kind == "msg" and len(w) == 3:
            if re.search(r"%[^dsx%]", w[2]):
                raise TableError("%s: only %%d, %%s and %%x in messages" % where)
            msgs.append((w[1], w[2]))
        else:
            raise TableError("%s: unknown line kind '%s' or wrong field count" % (where, kind))
    return consts, keys, msgs


def c_string(s):
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def c_define(name, text):
    """#define name "text", within 100 columns as clang-format leaves it: on its own
    continuation line when too long, split into adjacent literals at spaces beyond that."""
    line = "#define %s %s" % (name, c_string(text))
    if len(line) <= 100:
        return line
    parts, cur = [], ""
    for word in re.split(r"(?<= )", text):
        if cur and len(c_string(cur + word)) + 4 + 2 > 100:
            parts.append(cur)
            cur = ""
        cur += word
    parts.append(cur)
    lines = ["#define " + name] + ["    " + c_string(p) for p in parts]
    # backslashes in column 100, where clang-format aligns them
    return "\n".join([ln.ljust(99) + "\\" for ln in lines[:-1]] + lines[-1:])


def gen_c(table):
    consts, keys, msgs = parse_table(table)
    out = ["/*",
           " * trace_format: the constants of the .atr container, GENERATED from %s by" % table,
           " * scripts/gen_trace_format.py (`make format-tables`); edit the table, not this file.",
           " * The Python package reads the same table as python/acceltrace/_format.py, so both",
           " * sides change together (docs/trace-format.md#format-source). traces/trace_internal.h",
           " * uses these values; tests/test_trace_format.c checks the ones other modules keep.",
           " */",
           "#ifndef ACCELTRACE_TRACE_FORMAT_H",
           "#define ACCELTRACE_TRACE_FORMAT_H",
           "",
           "#include <stdint.h>",
           "",
           "/* Integers above 0xffff are uint64_t. */"]
    for name, v, hexa in consts:
        if isinstance(v, str):
            val = c_string(v)
        else:
            num = ("0x%X" % v) if hexa else ("%d" % v)
            val = "UINT64_C(%s)" % num if v > 0xFFFF else num
        out.append("#define TRACE_FORMAT_%s %s" % (name, val))
    out.append("")
    out.append("/* Index keys (record, step field, layer field, head field; - where -1). */")
    for rec, ks in keys:
        txt = ", ".join("-" if k is None else k[0] + (" (signed)" if k[1] else "") for k in ks)
        out.append("/*   %s: %s */" % (rec, txt))
    out.append("")
    out.append("/* The reader's error texts with %d for any integer (C prints them with %u,")
    out.append(" * %llu or %zu). */")
    for name, text in msgs:
        out.append(c_define("TRACE_FORMAT_MSG_" + name, text))
    out += ["", "#endif", ""]
    return "\n".join(out)


def gen_py(table):
    consts, keys, msgs = parse_table(table)
    out = ['"""The constants of the .atr container, GENERATED from %s by' % table,
           "scripts/gen_trace_format.py (`make format-tables`); edit the table, not this file.",
           "The C side reads the same table as formats/trace_format.h",
           '(docs/trace-format.md#format-source)."""', ""]
    for name, v, hexa in consts:
        out.append("%s = %s" % (name, ("b" + c_string(v)) if isinstance(v, str) else
                                ("0x%X" % v) if hexa else v))
    out += ["", "#: record name -> ((field, signed) or None for step, layer, head)", "KEYS = {"]
    for rec, ks in keys:
        out.append("    %r: %r," % (rec, ks))
    out += ["}", "", "#: the reader's error texts (printf-style, % applied by the caller)",
            "MSG = {"]
    for name, text in msgs:
        out.append("    %r: %r," % (name, text))
    out += ["}", ""]
    return "\n".join(out)


def gen_version(header):
    with open(header) as f:
        m = re.search(r'^#define ACCELTRACE_VERSION "([^"]+)"$', f.read(), re.M)
    if not m:
        raise TableError("%s: no #define ACCELTRACE_VERSION \"X.Y.Z\"" % header)
    return ('"""The version of acceltrace, GENERATED from %s by scripts/gen_trace_format.py\n'
            '(`make format-tables`); change the version there."""\n\n__version__ = %r\n'
            % (header, m.group(1)))


JOBS = {"c": (OUT_C, gen_c, TABLE), "py": (OUT_PY, gen_py, TABLE),
        "version": (OUT_VERSION, gen_version, VERSION_H)}


def write(path, text):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def main(argv):
    if len(argv) != 2 or argv[1] not in list(JOBS) + ["check"]:
        print(__doc__, file=sys.stderr)
        return 2
    try:
        if argv[1] != "check":
            out, fn, src = JOBS[argv[1]]
            write(out, fn(src))
            return 0
        stale = 0
        for out, fn, src in JOBS.values():
            want = fn(src)
            have = open(out).read() if os.path.exists(out) else None
            if have != want:
                print("stale generated file '%s': run `make format-tables` (source '%s')"
                      % (out, src), file=sys.stderr)
                stale = 1
        return stale
    except (TableError, OSError) as e:
        print("gen_trace_format: %s" % e, file=sys.stderr)
        return 3


if __name__ == "__main__":
    sys.exit(main(sys.argv))
