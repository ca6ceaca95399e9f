"""The one interface of a torch capture, as capture/capture.h is for the C captures.

A workload subclasses Capture and is listed once in CAPTURES (capture/__init__.py); the
driver, run_capture(), owns what every capture shares: the memory estimate and its
refusal, the trace Writer (NAME.atr.partial, fsync and rename at finish: writer.py), the
progress callback and the common header fields: producer, workload, command line, UTC
time and params hash (sha256 hex of params_json + model_json).

Call sequence (python -m acceltrace.capture, a test):

    cap = DiscCapture(args)          open: validates the parameters (UsageError) and
                                     reads what the estimate needs (salca: the
                                     checkpoint's config and weights, the task)
    result = run_capture(cap, path, mem_limit, argv, progress)
                                     refuse above mem_limit (MemoryLimit) before any
                                     weight is made, cap.prepare(), header, Writer,
                                     cap.run(sink), finish; returns cap.run's result
    cap.close()

A capture never prints: progress goes through the sink to the caller's callback, and
errors are exceptions (UsageError exit 2, MemoryLimit and the model's input errors exit 3).
"""
import hashlib
import time

from .. import messages
from ..writer import Writer


class UsageError(Exception):
    """Bad parameters (exit 2)."""


class MemoryLimit(Exception):
    """The estimate is above --mem-limit (exit 3); the message is the C capture's."""

    def __init__(self, what, need, limit, hint):
        super().__init__("%s needs about %s, above --mem-limit %s; %s"
                         % (what, size_text(need), size_text(limit), hint))
        self.need, self.limit = need, limit


def size_text(b):
    """mem_size_text of common/mem.c: '22.2 GiB', '512 MiB'."""
    names = ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"]
    v, u = float(b), 0
    while v >= 1024.0 and u + 1 < len(names):
        v /= 1024.0
        u += 1
    return "%.0f %s" % (v, names[u]) if v >= 100 else "%s %s" % ("%.3g" % v, names[u])


class Sink:
    """Where a running capture sends its records: the driver's appends them to the trace
    Writer. append(msg) takes a body message (or a whole Record), as Writer.append does;
    progress(done, total) reports units of work to the caller's callback."""

    def __init__(self, writer, progress=None):
        self._writer = writer
        self._progress = progress
        self.records = 0

    def append(self, msg):
        self._writer.append(msg)
        self.records += 1

    def progress(self, done, total):
        if self._progress is not None:
            self._progress(done, total)


class Capture:
    """A torch capture (the capture_ops of capture/capture.h). Subclasses set name and
    mem_hint and implement mem_estimate, mem_what, header and run; prepare, producer and
    close have defaults."""

    name = None        # TraceHeader.workload and the `python -m acceltrace.capture NAME` verb
    summary = ""       # one line for listings
    mem_hint = ""      # end of the memory refusal: "use a smaller --size or raise --mem-limit"

    def mem_estimate(self):
        """Estimated peak bytes of the run (arithmetic; nothing allocated)."""
        raise NotImplementedError

    def mem_what(self):
        """What the estimate is of, for the refusal: "capture disc of tiny at 512 px"."""
        return "capture " + self.name

    def prepare(self):
        """Makes the model and the run's state (after the memory check)."""

    def producer(self):
        """TraceHeader.producer."""
        raise NotImplementedError

    def header(self, hdr):
        """Fills the workload part of hdr (a TraceHeader the driver made): params_json,
        model_json, seed, source and source_detail (provenance, docs/trace-format.md)
        and the workload's header message."""
        raise NotImplementedError

    def run(self, sink):
        """Runs the capture, sending every record after the header to sink.append in the
        workload's order; returns the workload's result (a dict for the summary line)."""
        raise NotImplementedError

    def close(self):
        """Releases the model and state."""


def make_header(cap, argv):
    """The TraceHeader of cap: its workload part, then the common fields."""
    hdr = messages["TraceHeader"]()
    cap.header(hdr)
    if not hdr.source:
        raise RuntimeError("capture %s made a header without a source" % cap.name)
    hdr.producer = cap.producer()
    hdr.workload = cap.name
    hdr.command_line = " ".join(argv)
    hdr.utc_time = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    hdr.params_hash = hashlib.sha256((hdr.params_json + hdr.model_json).encode()).hexdigest()
    return hdr


def run_capture(cap, path, mem_limit=0, argv=(), progress=None, zstd_level=3):
    """The driver (capture_run of capture/capture.c): refuses with MemoryLimit when
    mem_limit (bytes; 0 none) is below cap.mem_estimate(), prepares, writes the header and
    every record cap.run emits into path (path.partial until finished; a failed run
    removes it and leaves path as it was). Returns what cap.run returns."""
    need = cap.mem_estimate()
    if mem_limit and need > mem_limit:
        raise MemoryLimit(cap.mem_what(), need, mem_limit, cap.mem_hint)
    cap.prepare()
    hdr = make_header(cap, list(argv))
    with Writer(path, hdr, level=zstd_level) as w:
        return cap.run(Sink(w, progress))
