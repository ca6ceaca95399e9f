"""CRC-32C (Castagnoli, reflected 0x82F63B78, init and final xor 0xFFFFFFFF), the frame
checksum of docs/trace-format.md.

crc32c() uses Debian's python3-crcmod C extension when it is installed (about 450 MB/s);
otherwise crc32c_portable(): short inputs go through a byte-at-a-time table in Python. Long ones are cut into `lanes`
equal slices whose CRC registers numpy advances together (one table step per byte column),
then the registers are folded pairwise: the register update is linear over GF(2), so the
register after A||B is shift_{|B|}(reg after A) xor (reg of B from 0), where shift_n is
the 32x32 matrix "feed n zero bytes" applied through four byte tables.
"""
import numpy as np

# the polynomial and check value of the container table (formats/trace_format.tab)
from ._format import CRC32C_CHECK, CRC32C_POLY as POLY


def _table():
    t = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ POLY if c & 1 else c >> 1
        t.append(c)
    return t


TABLE = _table()
_NP_TABLE = np.array(TABLE, dtype=np.uint32)
_SMALL = 4096  # below this, the Python loop is faster than numpy's per-call overhead


def _update_py(reg, data):
    t = TABLE
    for b in data:
        reg = (reg >> 8) ^ t[(reg ^ b) & 0xFF]
    return reg


def _zeros_matrix(n):
    """Columns (uint32 each) of the matrix that feeds n zero bytes into a register."""
    # one zero byte: reg -> (reg >> 8) ^ T[reg & 0xff]; column j = image of bit j
    one = [(1 << j) >> 8 ^ TABLE[(1 << j) & 0xFF] for j in range(32)]

    def apply(cols, x):
        r = 0
        j = 0
        while x:
            if x & 1:
                r ^= cols[j]
            x >>= 1
            j += 1
        return r

    result = [1 << j for j in range(32)]  # identity
    base = one
    while n:
        if n & 1:
            result = [apply(base, c) for c in result]
        n >>= 1
        if n:
            base = [apply(base, c) for c in base]
    return result


_SHIFT_CACHE = {}


def _shift_tables(n):
    """Four 256-entry tables applying the n-zero-byte matrix one register byte at a time."""
    tabs = _SHIFT_CACHE.get(n)
    if tabs is None:
        cols = _zeros_matrix(n)
        tabs = np.zeros((4, 256), dtype=np.uint32)
        for k in range(4):
            for v in range(256):
                r = 0
                for bit in range(8):
                    if v >> bit & 1:
                        r ^= cols[8 * k + bit]
                tabs[k, v] = r
        _SHIFT_CACHE[n] = tabs
    return tabs


def _shift(regs, n):
    t = _shift_tables(n)
    return (t[0][regs & 0xFF] ^ t[1][(regs >> 8) & 0xFF] ^ t[2][(regs >> 16) & 0xFF]
            ^ t[3][regs >> 24])


_BLOCK = 1 << 20  # bytes per numpy pass: the lane registers stay in cache


def _update_np(reg, data):
    """The register after data (len >= 256) starting from reg; returns (reg, bytes used)."""
    width = 16  # bytes per lane: few numpy steps, many lanes (the fold costs log2(lanes))
    lanes = len(data) // width
    p = 1 << (lanes.bit_length() - 1)  # a power of two, for the pairwise fold
    body = np.frombuffer(data, dtype=np.uint8, count=p * width).reshape(p, width)
    cols = np.ascontiguousarray(body.T).astype(np.uint32)
    regs = np.zeros(p, dtype=np.uint32)
    regs[0] = reg
    t = _NP_TABLE
    for j in range(width):
        regs = (regs >> 8) ^ t[(regs ^ cols[j]) & 0xFF]
    span = width
    while regs.size > 1:
        regs = _shift(regs[0::2], span) ^ regs[1::2]
        span *= 2
    return int(regs[0]), p * width


def crc32c_portable(data, crc=0):
    """CRC-32C of data (bytes-like), continuing from a previous crc (0 to start), with
    numpy and Python only."""
    reg = crc ^ 0xFFFFFFFF
    mv = memoryview(data).cast("B")
    pos, n = 0, len(mv)
    while n - pos >= _SMALL:
        reg, used = _update_np(reg, mv[pos:pos + _BLOCK])
        pos += used
    return _update_py(reg, bytes(mv[pos:])) ^ 0xFFFFFFFF


def _fast():
    try:
        import crcmod.predefined
        import crcmod._crcfunext  # noqa: F401  (the C extension, not crcmod's Python loop)
    except ImportError:
        return None
    f = crcmod.predefined.mkCrcFun("crc-32c")
    return f if f(b"123456789") == CRC32C_CHECK else None


_crcmod = _fast()
FAST = _crcmod is not None


def crc32c(data, crc=0):
    """CRC-32C of data (bytes-like), continuing from a previous crc (0 to start)."""
    if _crcmod is not None:
        return _crcmod(data, crc)
    return crc32c_portable(data, crc)
