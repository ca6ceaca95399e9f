"""Checks that the container table is the one source of the format (docs/trace-format.md
#format-source). Run from the repository root with /usr/bin/python3:

    check_format.py fresh     formats/trace_format.h, python/acceltrace/_format.py and
                              _version.py equal what scripts/gen_trace_format.py makes now
    check_format.py messages  every reader message of the table is a string the C code of
                              traces/ prints (adjacent literals joined, %u %llu %zu read
                              as %d), and every message the Python reader raises comes
                              from the table (no second copy of a text in reader.py)
    check_format.py version   no version literal in python/ but the generated _version.py;
                              the example dump of docs/trace-format.md is the bytes of
                              tests/golden/ok/raw.atr and names common/version.h's version
Exit 1 naming each problem.
"""
import glob
import re
import subprocess
import sys

failures = 0


def fail(msg):
    global failures
    failures += 1
    print("FAIL " + msg)


def load_format():
    ns = {}
    exec(open("python/acceltrace/_format.py").read(), ns)
    return ns


def check_fresh():
    r = subprocess.run([sys.executable, "scripts/gen_trace_format.py", "check"],
                       capture_output=True, text=True)
    if r.returncode != 0:
        fail("generated files are stale: " + r.stderr.strip())
    else:
        print("fresh: trace_format.h, _format.py and _version.py match their sources")


_LIT = re.compile(r'"((?:[^"\\\n]|\\.)*)"')


def c_strings(paths):
    """Every string of the C files, adjacent literals joined (PRIu64 and the like read as
    %d), format conversions normalised to %d / %s / %x."""
    out = []
    for p in paths:
        src = open(p).read()
        src = re.sub(r'%"\s*PRI[diux](8|16|32|64)\s*"', "%d", src)
        src = re.sub(r"/\*.*?\*/", " ", src, flags=re.S)
        pos, cur = 0, None
        for m in _LIT.finditer(src):
            between = src[pos:m.start()]
            if cur is not None and between.strip() == "":
                cur += m.group(1)
            else:
                if cur is not None:
                    out.append(cur)
                cur = m.group(1)
            pos = m.end()
        if cur is not None:
            out.append(cur)
    return [re.sub(r"%(?:ll|l|z|h|hh)?[uid]", "%d", s).replace("\\'", "'") for s in out]


def check_messages():
    msg = load_format()["MSG"]
    strings = c_strings(sorted(glob.glob("traces/*.c")))
    n = 0
    for name, text in msg.items():
        if not any(text in s for s in strings):
            fail("message %s %r is printed by no C code in traces/*.c" % (name, text))
        n += 1
    # the Python reader raises no literal that duplicates a table text
    py = [ln for ln in open("python/acceltrace/reader.py")
          if re.search(r"_err\(|TraceError\(|_problem\(|what = ", ln)]
    for name, text in msg.items():
        head = text.split("%")[0].strip()
        if len(head) >= 12 and any(head in ln for ln in py):
            fail("python/acceltrace/reader.py spells the text of %s (%r) itself; use "
                 "MSG[%r]" % (name, head, name))
    print("messages: %d table texts found in the C reader, none copied in reader.py" % n)


def check_version():
    v = re.search(r'#define ACCELTRACE_VERSION "([^"]+)"', open("common/version.h").read())
    version = v.group(1)
    pat = re.compile(r"""["'][^"'\n]*\b%s\b""" % re.escape(version))
    for p in sorted(glob.glob("python/**/*.py", recursive=True)) + ["python/pyproject.toml"]:
        if p.endswith("_version.py"):
            continue
        for no, line in enumerate(open(p), 1):
            if pat.search(line):
                fail("%s:%d holds the version literal %s (common/version.h is its source)"
                     % (p, no, version))
    doc = open("docs/trace-format.md").read()
    sec = doc[doc.index("## Example"):]
    sec = sec[sec.index("```") + 3:]
    sec = sec[:sec.index("```")]
    raw = open("tests/golden/ok/raw.atr", "rb").read()
    rows = 0
    for line in sec.strip("\n").splitlines():
        m = re.match(r"([0-9a-f]{8}): ((?:[0-9a-f]{4} ){1,8})", line)
        if not m:
            fail("example line is not a dump row: %r" % line)
            continue
        off = int(m.group(1), 16)
        hexs = m.group(2).replace(" ", "")
        want = raw[off:off + len(hexs) // 2].hex()
        if hexs != want:
            fail("example row %08x differs from tests/golden/ok/raw.atr (%s)" % (off, want))
        rows += 1
    producer = ("acceltrace " + version).encode()
    if producer not in raw[:0x70]:
        fail("the example's producer is not %r: rewrite tests/golden/ok/raw.atr and the "
             "example of docs/trace-format.md after a version change" % producer.decode())
    print("version %s: in _version.py only; the example dump equals raw.atr over %d rows"
          % (version, rows))


def main():
    what = sys.argv[1:] or ["fresh", "messages", "version"]
    for w in what:
        {"fresh": check_fresh, "messages": check_messages, "version": check_version}[w]()
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
