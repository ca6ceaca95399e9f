#!/usr/bin/python3
"""Peer for bench_salca: exact top-k of one head's FP32 scores with numpy (argpartition,
the nth_element-style peer, and a full argsort), at n = 32K and 128K with K = ceil(0.05 n).
With --vs BENCH it runs bench/bench_salca and prints the speed ratio of our histogram
threshold over each numpy path (the target: >= 5x over sorting at 32K)."""
import re
import subprocess
import sys
import time

import numpy as np


def best_ms(fn, reps):
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    ts.sort()
    return 1e3 * ts[len(ts) // 2]


def main():
    ours = {}
    if len(sys.argv) == 3 and sys.argv[1] == "--vs":
        out = subprocess.run([sys.argv[2]], check=True, capture_output=True, text=True).stdout
        for m in re.finditer(r"n=(\d+) K=\d+ \|S\|=\d+ hist_select_ms=([\d.]+)", out):
            ours[int(m.group(1))] = float(m.group(2))
    rng = np.random.default_rng(1)
    for n in (32768, 131072):
        s = rng.standard_normal(n).astype(np.float32)
        k = max(64, -(-n * 5 // 100))
        part = best_ms(lambda: np.sort(np.argpartition(-s, k - 1)[:k]), 15)
        full = best_ms(lambda: np.sort(np.argsort(-s, kind="stable")[:k]), 15)
        line = f"salca_topk_numpy: n={n} K={k} argpartition_ms={part:.3f} argsort_ms={full:.3f}"
        if n in ours:
            line += (f" hist_select_ms={ours[n]:.3f} speedup_vs_argpartition={part / ours[n]:.1f}x"
                     f" speedup_vs_argsort={full / ours[n]:.1f}x")
        print(line)


if __name__ == "__main__":
    main()
