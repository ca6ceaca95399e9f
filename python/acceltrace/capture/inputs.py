"""Inputs of the DiSC capture, as capture/disc/disc_capture.c makes them.

The project's seeded random numbers (common/rng.[ch]) re-implemented bit for bit:
xoshiro256** seeded by four splitmix64 outputs, substreams (seed, purpose, a, b) by a
splitmix64 chain over FNV-1a of the purpose, uniform doubles from the top 53 bits and
normals by Box-Muller with the second value of a pair cached (libm's log, sqrt, sin and
cos through Python's math module, the same functions the C code calls). The initial latent
is N(0, I) from substream "latent" of --seed in (c, y, x) order; seeded text is N(0, 1)
from substream "text" of the text seed; both are rounded to float32 as in C.
Text files: raw little-endian float32 (T x D_c) or .npy ('<f4' or '<f2', C order, shape
(T, D_c) or (1, T, D_c)), checked as capture/disc/disc_inputs.c checks them.
"""
import ast
import math
import os

import numpy as np

_M64 = (1 << 64) - 1


def splitmix64(x):
    """(next state, output) of splitmix64 from state x."""
    x = (x + 0x9E3779B97F4A7C15) & _M64
    z = x
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _M64
    return x, z ^ (z >> 31)


def mix64(x):
    return splitmix64(x)[1]


def fnv1a64(s):
    h = 0xCBF29CE484222325
    for ch in s.encode():
        h = ((h ^ ch) * 0x100000001B3) & _M64
    return h


class Rng:
    """The generator of common/rng.c (struct rng): seed() or stream(), then u64(),
    uniform(), normal()."""

    def __init__(self, seed=0):
        self.seed(seed)

    def seed(self, seed):
        x = seed & _M64
        s = []
        for _ in range(4):
            x, v = splitmix64(x)
            s.append(v)
        self.s = s
        self.spare = None

    @classmethod
    def stream(cls, seed, purpose, a=0, b=0):
        x = seed & _M64
        x = mix64(x ^ fnv1a64(purpose))
        x = mix64(x ^ (a & _M64))
        x = mix64(x ^ (b & _M64))
        return cls(x)

    def u64(self):
        s0, s1, s2, s3 = self.s
        r = (((s1 * 5) & _M64) << 7 | ((s1 * 5) & _M64) >> 57) & _M64
        result = (r * 9) & _M64
        t = (s1 << 17) & _M64
        s2 ^= s0
        s3 ^= s1
        s1 ^= s2
        s0 ^= s3
        s2 ^= t
        s3 = ((s3 << 45) | (s3 >> 19)) & _M64
        self.s = [s0, s1, s2, s3]
        return result

    def uniform(self):
        return (self.u64() >> 11) * (1.0 / 9007199254740992.0)

    def normal(self):
        if self.spare is not None:
            v, self.spare = self.spare, None
            return v
        u1 = 1.0 - self.uniform()
        u2 = self.uniform()
        rad = math.sqrt(-2.0 * math.log(u1))
        ang = 2.0 * math.pi * u2
        self.spare = rad * math.sin(ang)
        return rad * math.cos(ang)

    def normals_f32(self, n):
        """n normals rounded to float32 (the C code's (float)rng_normal(&r))."""
        out = np.empty(n, dtype=np.float64)
        for i in range(n):
            out[i] = self.normal()
        return out.astype(np.float32)


def seeded_latent(seed, c_in, lat):
    """x_0 of the capture: (C_in, H, W) float32 from substream "latent" of seed."""
    return Rng.stream(seed, "latent").normals_f32(c_in * lat * lat).reshape(c_in, lat, lat)


def seeded_text(seed, T, Dc):
    """The seeded text embedding: (T, D_c) float32 from substream "text" of seed."""
    return Rng.stream(seed, "text").normals_f32(T * Dc).reshape(T, Dc)


class InputError(Exception):
    """Bad input data (a message naming the file); the command exits 3."""


def load_text(path, T, Dc):
    """A text embedding file as (T, D_c) float32; InputError as disc_inputs.c words it."""
    try:
        with open(path, "rb") as f:
            d = f.read()
    except OSError as ex:
        raise InputError("cannot open '%s': %s" % (path, ex.strerror)) from None
    want = T * Dc
    if len(d) >= 10 and d[:6] == b"\x93NUMPY":
        major = d[6]
        if major == 1:
            hl, off = d[8] | d[9] << 8, 10
        elif major in (2, 3):
            if len(d) < 12:
                raise InputError("truncated .npy header in '%s'" % path)
            hl, off = int.from_bytes(d[8:12], "little"), 12
        else:
            raise InputError("unsupported .npy version %d in '%s'" % (major, path))
        if hl > len(d) - off:
            raise InputError("truncated .npy header in '%s'" % path)
        try:
            hdr = ast.literal_eval(d[off:off + hl].decode("latin1").strip())
            descr, fortran, shape = hdr["descr"], hdr["fortran_order"], tuple(hdr["shape"])
        except (ValueError, SyntaxError, KeyError, TypeError):
            raise InputError("bad .npy header in '%s'" % path) from None
        if descr not in ("<f4", "<f2") or fortran:
            raise InputError("'%s' must hold '<f4' or '<f2' in C order" % path)
        if shape not in ((T, Dc), (1, T, Dc)):
            raise InputError("text embedding '%s' has the wrong shape (need (%d, %d))"
                             % (path, T, Dc))
        esz = 4 if descr == "<f4" else 2
        data = d[off + hl:]
        if len(data) != want * esz:
            raise InputError("text embedding '%s' has %d data bytes, need %d"
                             % (path, len(data), want * esz))
        x = np.frombuffer(data, dtype=descr).astype(np.float32)
    else:
        if len(d) != want * 4:
            raise InputError("text embedding '%s' has %d bytes, need %d (%d x %d float32)"
                             % (path, len(d), want * 4, T, Dc))
        x = np.frombuffer(d, dtype="<f4").astype(np.float32)
    bad = np.flatnonzero(~np.isfinite(x))
    if bad.size:
        raise InputError("text embedding '%s' has a non-finite value at element %d"
                         % (path, bad[0]))
    return x.reshape(T, Dc)


def file_sha256(path):
    import hashlib
    h = hashlib.sha256()
    with open(os.fspath(path), "rb") as f:
        for b in iter(lambda: f.read(1 << 20), b""):
            h.update(b)
    return h.hexdigest()
