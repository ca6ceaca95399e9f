"""The record classes, built from the descriptor set shipped beside this file.

trace.desc is `protoc-c -I. --include_imports --descriptor_set_out=trace.desc
formats/*.proto` run at the repository root (tests/sh/python_pkg.sh checks it equals a
fresh one), so the package needs no generated modules and no protoc at install time.
"""
import os

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

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


def _k32(v):
    return -1 if v > 0x7FFFFFFF else v


def _ks32(v):
    return -1 if v > 0x7FFFFFFF or v < -0x80000000 else v


def record_key(name, body):
    """(step, layer, head) of a record body: traces/trace_key.c, -1 where a key does not apply."""
    if name == "disc_step":
        return _k32(body.k), -1, -1
    if name == "disc_mask":
        return _k32(body.step), _k32(body.block), _k32(body.head)
    if name == "salca_prefill":
        return -1, _k32(body.l), _k32(body.g)
    if name == "salca_select":
        return _k32(body.t), _k32(body.l), _k32(body.h)
    if name == "salca_token":
        return _k32(body.t), -1, -1
    if name in ("kura_step", "kura_tiles"):
        return _ks32(body.step), -1, -1
    if name == "test":
        return _k32(body.step), _ks32(body.layer), _ks32(body.head)
    return -1, -1, -1
