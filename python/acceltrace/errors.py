"""The package's one exception type."""


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
