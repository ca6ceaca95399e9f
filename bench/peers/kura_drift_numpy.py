#!/usr/bin/python3
"""numpy peer of bench/bench_kura.c: the Kuramoto drift of SA-Kura eq. 3 (docs/kura.md
sections 2 and 5) on a periodic N x N map, K = 0.03, K_ref = 0.045, psi_ref = 0.

  direct: u = K/25 * sum over the 25 offsets of sin(roll(theta) - theta) + K_ref sin(-theta)
  box:    S, C = separable 5x5 box sums (np.roll) of sin/cos minus the centre,
          u = K/25 (cos theta S - sin theta C) + K_ref sin(-theta)

Reads the map bench_kura --write-map wrote (float64 LE, row-major), or draws its own with
--n when no file is given. Prints key=value lines: direct_evals_per_s, box_evals_per_s
(best of --reps, wall), the same per second of process CPU time (*_cpu_*), and the checksums (sum of u) to compare with bench_kura's.
"""
import argparse
import time

import numpy as np

K, KREF = 0.03, 0.045


def direct(t):
    s = np.zeros_like(t)
    for dy in range(-2, 3):
        for dx in range(-2, 3):
            # value at (r + dy, c + dx), periodic
            s += np.sin(np.roll(t, (-dy, -dx), axis=(0, 1)) - t)
    return K / 25.0 * s + KREF * np.sin(-t)


def box(t):
    sn, cs = np.sin(t), np.cos(t)

    def box5(a):
        h = a.copy()
        for d in (1, 2):
            h += np.roll(a, d, axis=1) + np.roll(a, -d, axis=1)
        v = h.copy()
        for d in (1, 2):
            v += np.roll(h, d, axis=0) + np.roll(h, -d, axis=0)
        return v

    s = box5(sn) - sn
    c = box5(cs) - cs
    return K / 25.0 * (cs * s - sn * c) + KREF * np.sin(-t)


def best_rate(fn, t, reps):
    """Best-of-reps evaluations per second: (wall, process CPU time), and the result."""
    best, best_cpu = 1e30, 1e30
    u = None
    for _ in range(reps):
        t0, c0 = time.perf_counter(), time.process_time()
        u = fn(t)
        best = min(best, time.perf_counter() - t0)
        best_cpu = min(best_cpu, time.process_time() - c0)
    return 1.0 / best, 1.0 / best_cpu, u


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--map", help="float64 map written by bench_kura --write-map")
    ap.add_argument("--n", type=int, default=1024)
    ap.add_argument("--reps", type=int, default=3)
    a = ap.parse_args()
    if a.map:
        t = np.fromfile(a.map, dtype="<f8")
        n = int(round(t.size ** 0.5))
        t = t.reshape(n, n)
    else:
        t = np.random.default_rng(1).uniform(-np.pi, np.pi, (a.n, a.n))
    rd, cd, ud = best_rate(direct, t, max(1, a.reps // 2))
    rb, cb, ub = best_rate(box, t, a.reps)
    print(f"numpy={np.__version__}")
    print(f"map={t.shape[0]}x{t.shape[1]}")
    print(f"direct_evals_per_s={rd:.6g}")
    print(f"box_evals_per_s={rb:.6g}")
    print(f"direct_cpu_evals_per_s={cd:.6g}")
    print(f"box_cpu_evals_per_s={cb:.6g}")
    print(f"direct_checksum={ud.sum():.12g}")
    print(f"box_checksum={ub.sum():.12g}")
    print(f"max_abs_box_minus_direct={np.abs(ub - ud).max():.3g}")


if __name__ == "__main__":
    main()
