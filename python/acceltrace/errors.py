"""The package's exceptions: TraceError and the two kinds of it callers may want apart."""
import errno as _errno
import os as _os


class TraceError(Exception):
    """A trace that cannot be read: damaged, truncated, not a trace, or refused by the
    damaged-trace policy (docs/trace-format.md "Damaged traces").

    str(e) is the message the C reader gives: what is wrong, then
    "('FILE' frame N at offset O)". Attributes: path (the file), frame (frame number
    counting the header as 0, or None), offset (byte offset of the frame header or of the
    problem, or None).
    """

    def __init__(self, what, path, frame=None, offset=None, position=True):
        if position and frame is not None:
            msg = "%s ('%s' frame %d at offset %d)" % (what, path, frame, offset)
        elif position and offset is not None:
            msg = "%s ('%s' offset %d)" % (what, path, offset)
        else:
            msg = what
        super().__init__(msg)
        self.what = what
        self.path = path
        self.frame = frame
        self.offset = offset


class TraceNotFoundError(TraceError, FileNotFoundError):
    """A trace or results file that does not exist. Both a TraceError (one `except` for
    every input problem) and a FileNotFoundError (errno ENOENT, filename the path), so
    `except FileNotFoundError` and `except OSError` catch it too."""

    def __init__(self, what, path):
        TraceError.__init__(self, what, path, position=False)
        self.errno = _errno.ENOENT
        self.strerror = _os.strerror(_errno.ENOENT)
        self.filename = path

    def __str__(self):
        return self.what


class MaskNotKeptError(ValueError):
    """Record.to_numpy() of a DiSC mask whose bits the capture did not store (not selected
    by `acceltrace capture disc --keep-masks SEL`; rec.msg.kept is false)."""


def open_error(path, e):
    """The error for an OSError e raised opening path: TraceNotFoundError when the file
    does not exist, else TraceError; both say "cannot open 'PATH': REASON"."""
    what = "cannot open '%s': %s" % (path, e.strerror)
    if isinstance(e, FileNotFoundError):
        return TraceNotFoundError(what, path)
    return TraceError(what, path, position=False)
