"""Long runs of the project's seeded generator (common/rng.c), vectorized and bit for bit.

xoshiro256** is linear over GF(2) in its 256 state bits, so the state B steps ahead is a
256 x 256 bit matrix J = M^B times the state. A stream of n outputs is cut into lanes of
B outputs; the lanes' start states are J^i s_0, and all lanes then step together in numpy.
The outputs equal Rng(...).u64() called n times (tests/sh/torch_capture_salca.sh checks
it). Normals follow rng_normal: Box-Muller on consecutive output pairs, cos first. numpy's
log, cos and sin may differ from libm in the last bit (SIMD versions), so every value that
lies within 64 double ulps of a float32 rounding midpoint after scaling is recomputed with
Python's math module (libm, as the C code): the float32 results then equal C's exactly.
"""
import math

import numpy as np

from .inputs import Rng, fnv1a64, mix64

_M64 = (1 << 64) - 1
LANE = 512  # outputs per lane
_mats = {}


def _step(s0, s1, s2, s3):
    t = s1 << np.uint64(17)
    s2 = s2 ^ s0
    s3 = s3 ^ s1
    s1 = s1 ^ s2
    s0 = s0 ^ s3
    s2 = s2 ^ t
    s3 = (s3 << np.uint64(45)) | (s3 >> np.uint64(19))
    return s0, s1, s2, s3


def _out(s1):
    x = s1 * np.uint64(5)
    r = (x << np.uint64(7)) | (x >> np.uint64(57))
    return r * np.uint64(9)


def _to_bits(words):
    """(4, L) uint64 -> (256, L) float32 bits, bit 64w + b = bit b of word w."""
    b = np.unpackbits(words.astype("<u8").view(np.uint8).reshape(4, -1, 8), axis=2,
                      bitorder="little")  # (4, L, 64)
    return b.transpose(0, 2, 1).reshape(256, -1).astype(np.float32)


def _from_bits(bits):
    """(256, L) 0/1 -> (4, L) uint64."""
    L = bits.shape[1]
    b = bits.astype(np.uint8).reshape(4, 64, L).transpose(0, 2, 1)  # (4, L, 64)
    by = np.packbits(b, axis=2, bitorder="little")  # (4, L, 8)
    return np.ascontiguousarray(by).view("<u8").reshape(4, L).astype(np.uint64)


def _gf2(a, b):
    return np.mod(a @ b, 2.0).astype(np.float32)


def _step_matrix():
    if "M" not in _mats:
        eye = np.eye(256, dtype=np.float32)
        w = _from_bits(eye)
        _mats["M"] = _to_bits(np.stack(_step(*w)))  # column c = step(e_c)
    return _mats["M"]


def _jump_powers(k):
    """[J, J^2, J^4, ...] (k entries), J = M^LANE."""
    pw = _mats.setdefault("pow", [])
    if not pw:
        J = _step_matrix()
        for _ in range(int(math.log2(LANE))):
            J = _gf2(J, J)
        pw.append(J)
    while len(pw) < k:
        pw.append(_gf2(pw[-1], pw[-1]))
    return pw


def u64s(state, n):
    """n outputs of the generator in `state` (4 ints) as uint64; state is not advanced."""
    lanes = max(1, -(-n // LANE))
    v = _to_bits(np.array(state, dtype=np.uint64).reshape(4, 1))
    pw = _jump_powers(max(1, (lanes - 1).bit_length()))
    a = 0
    while v.shape[1] < lanes:
        v = np.concatenate([v, _gf2(pw[a], v)], axis=1)
        a += 1
    s = list(_from_bits(v[:, :lanes]))
    out = np.empty((LANE, lanes), dtype=np.uint64)
    with np.errstate(over="ignore"):
        for i in range(LANE):
            out[i] = _out(s[1])
            s = list(_step(*s))
    return out.T.reshape(-1)[:n]


def stream_state(seed, purpose, a=0, b=0):
    x = seed & _M64
    x = mix64(x ^ fnv1a64(purpose))
    x = mix64(x ^ (a & _M64))
    x = mix64(x ^ (b & _M64))
    return Rng(x).s


def _scalar_pair(u1, u2):
    rad = math.sqrt(-2.0 * math.log(u1))
    ang = 2.0 * math.pi * u2
    return rad * math.cos(ang), rad * math.sin(ang)


def normals_f32(state, n, scale=1.0):
    """(float)(scale * rng_normal()) n times from a fresh generator in `state`."""
    m = n + (n & 1)
    x = u64s(state, m)
    u = (x >> np.uint64(11)).astype(np.float64) * (1.0 / 9007199254740992.0)
    u1, u2 = 1.0 - u[0::2], u[1::2]
    with np.errstate(all="ignore"):
        rad = np.sqrt(-2.0 * np.log(u1))
        ang = (2.0 * math.pi) * u2
        z = np.empty(m, dtype=np.float64)
        z[0::2] = rad * np.cos(ang)
        z[1::2] = rad * np.sin(ang)
    w = scale * z
    f = w.astype(np.float32)
    f64 = f.astype(np.float64)
    up = np.nextafter(f, np.float32(np.inf)).astype(np.float64)
    dn = np.nextafter(f, np.float32(-np.inf)).astype(np.float64)
    dist = np.minimum(np.abs(w - (f64 + up) * 0.5), np.abs(w - (f64 + dn) * 0.5))
    near = np.flatnonzero(~(dist > 64.0 * np.spacing(np.abs(w))))
    for i in near.tolist():
        p = i // 2
        c, s = _scalar_pair(float(u1[p]), float(u2[p]))
        f[i] = np.float32(scale * (c if i % 2 == 0 else s))
    return f[:n]


def fill_normal(seed, name, n, scale):
    """wg_fill(WG_NORMAL, scale) of capture/nn/weightgen.c: stream (seed, name, 0, 0)."""
    return normals_f32(stream_state(seed, name), n, scale)
