"""The record classes, built from the descriptor set shipped beside this file.

trace.desc is `protoc-c -I. --include_imports --descriptor_set_out=trace.desc
formats/*.proto` run at the repository root (tests/sh/python_pkg.sh checks it equals a
fresh one), so the package needs no generated modules and no protoc at install time.
"""
import os

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

from ._format import KEYS, TYPE_HEADER, TYPE_INDEX

_DESC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "trace.desc")


def _load():
    fds = descriptor_pb2.FileDescriptorSet()
    with open(_DESC, "rb") as f:
        fds.ParseFromString(f.read())
    pool = descriptor_pool.DescriptorPool()
    for fd in fds.file:
        pool.Add(fd)
    return pool


POOL = _load()


def message_class(full_name):
    """The message class of `full_name` ("acceltrace.Record")."""
    desc = POOL.FindMessageTypeByName(full_name)
    if hasattr(message_factory, "GetMessageClass"):
        return message_factory.GetMessageClass(desc)
    return message_factory.MessageFactory(POOL).GetPrototype(desc)


Record = message_class("acceltrace.Record")
TraceIndex = message_class("acceltrace.TraceIndex")
RECORD_DESC = Record.DESCRIPTOR

# record_type (Record.body field number) -> name as `acceltrace info` prints it
TYPE_NAMES = {f.number: f.name for f in RECORD_DESC.oneofs_by_name["body"].fields}
TYPE_NUMBERS = {name: num for num, name in TYPE_NAMES.items()}
# body message full name -> Record field name, so a body message knows its record type
BODY_FIELD = {f.message_type.full_name: f.name for f in RECORD_DESC.oneofs_by_name["body"].fields}

HEADER, INDEX = TYPE_NUMBERS["header"], TYPE_NUMBERS["index"]
# the container table and the schema must agree on these (formats/trace_format.tab)
if (HEADER, INDEX) != (TYPE_HEADER, TYPE_INDEX) or not set(KEYS) <= set(TYPE_NUMBERS):
    raise ImportError("acceltrace: trace.desc and _format.py disagree on record types")


def _k32(v):
    return -1 if v > 0x7FFFFFFF else v


def _ks32(v):
    return -1 if v > 0x7FFFFFFF or v < -0x80000000 else v


def record_key(name, body):
    """(step, layer, head) of a record body by the key table of formats/trace_format.tab
    (docs/trace-format.md#index-keys; traces/trace_key.c in C), -1 where a key does not
    apply or its value does not fit 32 signed bits."""
    keys = KEYS.get(name)
    if keys is None:
        return -1, -1, -1
    return tuple(-1 if k is None else (_ks32 if k[1] else _k32)(getattr(body, k[0]))
                 for k in keys)
