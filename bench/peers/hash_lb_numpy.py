#!/usr/bin/python3
"""numpy peer of bench/bench_hash_lb.c: the same per-row load-balance counts (docs/disc.md
section 8) for 3 hashes (mod, mul with k_odd = 0x9E3779B1, range) x U = 8, 16, 32, 64 over a
mask file written by `bench_hash_lb --write-mask FILE` (little-endian 64-bit words,
row-major, LSB-first). Counts come from a one-hot matrix product at U = 64, folded for the
smaller U, the idiomatic vectorised numpy way. Prints MB/s of mask bits and the checksum
(sum over hashes and U of sum max + sum sigma) that the C benchmark prints.

usage: /usr/bin/python3 hash_lb_numpy.py MASK_FILE N [CHUNK_ROWS]
"""
import sys
import time

import numpy as np


def main():
    path, n = sys.argv[1], int(sys.argv[2])
    chunk = int(sys.argv[3]) if len(sys.argv) > 3 else 512
    words = np.fromfile(path, dtype="<u8")
    assert words.size == n * n // 64
    packed = words.view(np.uint8).reshape(n, n // 8)
    j = np.arange(n, dtype=np.uint64)
    b = 6
    buckets = {
        "mod": (j & np.uint64(63)).astype(np.int64),
        "mul": (((j * np.uint64(0x9E3779B1)) & np.uint64(0xFFFFFFFF)) >> np.uint64(32 - b)).astype(np.int64),
        "range": ((j << np.uint64(b)) // np.uint64(n)).astype(np.int64),
    }
    onehot = {}
    for h, v in buckets.items():
        m = np.zeros((n, 64), dtype=np.float32)
        m[np.arange(n), v] = 1.0
        onehot[h] = m
    t0, c0 = time.perf_counter(), time.process_time()
    check = 0.0
    for r0 in range(0, n, chunk):
        rows = np.unpackbits(packed[r0:r0 + chunk], axis=1, bitorder="little").astype(np.float32)
        nnz = rows.sum(axis=1, dtype=np.float64)
        for h in ("mod", "mul", "range"):
            c = rows @ onehot[h]  # (chunk, 64) counts at U = 64
            for u in (64, 32, 16, 8):
                if u < 64:
                    if h == "mod":
                        c = c[:, : u] + c[:, u: 2 * u]
                    else:
                        c = c.reshape(c.shape[0], u, 2).sum(axis=2)
                mu = nnz / u
                sigma = np.sqrt(((c.astype(np.float64) - mu[:, None]) ** 2).sum(axis=1) / u)
                check += float(c.max(axis=1).sum()) + float(sigma.sum())
    dt, dc = time.perf_counter() - t0, time.process_time() - c0
    mb = n * n / 8 / 1e6
    print(f"hash_lb_numpy n={n}: {dt:.3f} s wall ({dc:.3f} s cpu), {mb / dt:.1f} MB/s of mask bits, "
          f"checksum {check:.6f}")


if __name__ == "__main__":
    main()
