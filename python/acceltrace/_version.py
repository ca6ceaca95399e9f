"""The version of acceltrace, GENERATED from common/version.h by scripts/gen_trace_format.py
(`make format-tables`); change the version there."""

__version__ = '0.1.0'
