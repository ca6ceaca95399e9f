"""acceltrace: read and write acceltrace .atr traces from Python (docs/python.md).

    import acceltrace
    t = acceltrace.open("out/disc/disc.atr")
    for rec in t.records("disc_mask"):
        mask = rec.to_numpy()              # bool (rows, N)
    sel = t.find("salca_select", 0, 1, 2).indices()
    rows = acceltrace.load_results("out/disc/results")   # Results: list of dicts
    df = rows.to_pandas()                                 # needs pandas
    with acceltrace.Writer("copy.atr", t.header) as w:
        for rec in t.records():
            w.append(rec.msg)

Pure Python over numpy, protobuf, zstandard and xxhash; the record schema is the
descriptor set of formats/*.proto shipped as trace.desc.
"""
from . import _schema
from .errors import MaskNotKeptError, TraceError, TraceNotFoundError
from .reader import DamagedTraceWarning, Record, Trace, decode_indices, open
from .results import Results, load_results
from .writer import Writer

from ._version import __version__  # noqa: F401 (generated from common/version.h)

#: the message class of one frame (acceltrace.Record) and of its bodies, by name
messages = {name: _schema.message_class("acceltrace." + name) for name in (
    "Record", "TraceHeader", "TraceIndex", "IndexEntry", "Summary", "TestRecord",
    "DiscStep", "DiscMask", "SalcaPrefill", "SalcaSelect", "SalcaToken", "KuraStep",
    "KuraTiles")}
RECORD_TYPES = dict(_schema.TYPE_NAMES)

__all__ = ["open", "Trace", "Record", "Writer", "TraceError", "TraceNotFoundError",
           "MaskNotKeptError", "DamagedTraceWarning", "load_results", "Results",
           "decode_indices", "messages", "RECORD_TYPES"]
