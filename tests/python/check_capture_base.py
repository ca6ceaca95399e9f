"""The torch captures' interface, acceltrace.capture.base, with a capture that needs no
torch (docs/python.md "Torch capture interface"). Run from the repository root:

    check_capture_base.py DIR ACCELTRACE

  a. run_capture writes the header's common fields (producer, workload, command line, UTC
     time, params hash = sha256 of params_json + model_json) and every record run() sends,
     in order; progress reaches the callback; the trace verifies with the C tool;
  b. above mem_limit it raises MemoryLimit with the C capture's message before prepare()
     and leaves no file; a run() that fails leaves neither the trace nor its .partial;
  c. a header without a source is refused; CAPTURES lists disc and salca, each class a
     Capture subclass with a name equal to its key (checked without importing torch when
     torch is missing).
"""
import hashlib
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "python"))
import acceltrace  # noqa: E402
from acceltrace.capture import CAPTURES, base  # noqa: E402

failures = 0


def fail(msg):
    global failures
    failures += 1
    print("FAIL " + msg)


class Counting(base.Capture):
    name = "test"
    mem_hint = "use fewer --records or raise --mem-limit"

    def __init__(self, n, need=1000, boom=None, source="synthetic"):
        self.n, self.need, self.boom, self.source = n, need, boom, source
        self.prepared = False

    def mem_estimate(self):
        return self.need

    def prepare(self):
        self.prepared = True

    def producer(self):
        return "check_capture_base"

    def header(self, hdr):
        hdr.params_json, hdr.model_json = '{"n":%d}' % self.n, "{}"
        hdr.source, hdr.source_detail = self.source, "tests/python/check_capture_base.py"

    def run(self, sink):
        for i in range(self.n):
            if i == self.boom:
                raise RuntimeError("boom at %d" % i)
            r = acceltrace.messages["TestRecord"]()
            r.step, r.value = i, 10 * i
            sink.append(r)
            sink.progress(i + 1, self.n)
        return {"records": sink.records}


def main():
    d, tool = sys.argv[1], sys.argv[2]
    path = os.path.join(d, "t.atr")
    seen = []
    cap = Counting(7)
    res = base.run_capture(cap, path, 10000, ["prog", "--x", "1"],
                           lambda done, total: seen.append((done, total)))
    if res != {"records": 7} or seen[-1] != (7, 7) or len(seen) != 7 or not cap.prepared:
        fail("run result %s, progress %s, prepared %s" % (res, seen, cap.prepared))
    t = acceltrace.open(path)
    h = t.header
    want_hash = hashlib.sha256(('{"n":7}' + "{}").encode()).hexdigest()
    if (h.producer, h.workload, h.command_line, h.params_hash) != (
            "check_capture_base", "test", "prog --x 1", want_hash) or len(h.utc_time) != 20:
        fail("header common fields: %r %r %r %r %r" % (h.producer, h.workload,
                                                       h.command_line, h.params_hash,
                                                       h.utc_time))
    steps = [r.msg.value for r in t.records("test")]
    if steps != [10 * i for i in range(7)]:
        fail("records %s" % steps)
    v = subprocess.run([tool, "verify", path], capture_output=True, text=True)
    if v.returncode != 0:
        fail("verify: %s" % v.stdout + v.stderr)
    # b. the memory refusal, before prepare, no file
    p2 = os.path.join(d, "big.atr")
    cap = Counting(3, need=3 << 30)
    try:
        base.run_capture(cap, p2, 1 << 30)
        fail("no MemoryLimit")
    except base.MemoryLimit as e:
        want = ("capture test needs about 3 GiB, above --mem-limit 1 GiB; use fewer "
                "--records or raise --mem-limit")
        if str(e) != want or cap.prepared:
            fail("MemoryLimit %r (prepared %s), want %r" % (str(e), cap.prepared, want))
    if os.path.exists(p2) or os.path.exists(p2 + ".partial"):
        fail("a refused capture left a file")
    p3 = os.path.join(d, "boom.atr")
    try:
        base.run_capture(Counting(5, boom=3), p3)
        fail("run() error not raised")
    except RuntimeError:
        pass
    if os.path.exists(p3) or os.path.exists(p3 + ".partial"):
        fail("a failed capture left a file")
    # c.
    try:
        base.run_capture(Counting(1, source=""), os.path.join(d, "nosrc.atr"))
        fail("a header without a source was written")
    except RuntimeError as e:
        if "without a source" not in str(e):
            fail("no-source message: %s" % e)
    if sorted(CAPTURES) != ["disc", "salca"]:
        fail("CAPTURES %s" % sorted(CAPTURES))
    try:
        import torch  # noqa: F401
        from acceltrace.capture import capture_class
        for name in CAPTURES:
            cls = capture_class(name)
            if not issubclass(cls, base.Capture) or cls.name != name:
                fail("%s: %s is not a Capture named %s" % (name, cls, name))
    except ImportError:
        print("torch missing: CAPTURES classes not imported")
    print("capture base: run, header, progress, memory refusal, cleanup: %s"
          % ("ok" if not failures else "%d failures" % failures))
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
