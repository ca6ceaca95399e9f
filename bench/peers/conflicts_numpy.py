#!/usr/bin/python3
"""numpy/Python peer of bench/bench_conflicts.c: the same Salca channel-conflict simulation
(docs/salca.md#conflict-analyzer) of selections written by `bench_conflicts --write FILE`
(per job: u32 layer, u32 head, u32 count, then count u32 indices; little-endian), 16 PCs,
mod map, issue width 16, in-order issue with FIFO depth 1 and reorder windows
16, 32, 64, 128, 256. The mapping and the per-PC queues are built with numpy; the
slot-by-slot issue is a straightforward Python loop (the policies are sequential by
nature). Prints selected indices per second and the checksum (total slots per policy)
that the C benchmark prints.

usage: /usr/bin/python3 conflicts_numpy.py SEL_FILE [MAX_INDICES]
       /usr/bin/python3 conflicts_numpy.py --vs BUILD/bench/bench_conflicts
The second form runs the C benchmark with --write to a temporary file, runs this peer on
the same selections, checks that the checksums agree and prints the speed ratio
(bench/run.sh uses it; the target is >= 50x).
"""
import os
import re
import subprocess
import tempfile
import sys
import time

import numpy as np

H_ATT = 16
P_ISS = 16
WINDOWS = (16, 32, 64, 128, 256)


def inorder_d1(pc):
    """Each slot issue in order until a PC repeats (FIFO depth 1) or P_ISS are issued."""
    n = len(pc)
    nxt = 0
    slots = 0
    while nxt < n:
        slots += 1
        busy = np.zeros(H_ATT, dtype=bool)
        k = 0
        while k < P_ISS and nxt < n and not busy[pc[nxt]]:
            busy[pc[nxt]] = True
            nxt += 1
            k += 1
    return slots


def window(pc, w):
    """Each slot every PC serves its oldest request among the oldest w unserved."""
    n = len(pc)
    order = np.argsort(pc, kind="stable")
    counts = np.bincount(pc, minlength=H_ATT)
    starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
    queues = [order[starts[p]:starts[p] + counts[p]] for p in range(H_ATT)]
    head = np.zeros(H_ATT, dtype=np.int64)
    inwin = np.zeros(H_ATT, dtype=np.int64)
    nxt = min(w, n)
    np.add.at(inwin, pc[:nxt], 1)
    left = nxt
    slots = 0
    while left > 0:
        slots += 1
        cand = np.nonzero(inwin)[0]
        if len(cand) > P_ISS:
            heads = np.array([queues[p][head[p]] for p in cand])
            cand = cand[np.argsort(heads, kind="stable")[:P_ISS]]
        for p in cand:
            head[p] += 1
            inwin[p] -= 1
        left -= len(cand)
        while left < w and nxt < n:
            inwin[pc[nxt]] += 1
            nxt += 1
            left += 1
    return slots


def simulate(path, limit):
    raw = np.fromfile(path, dtype="<u4")
    jobs = []
    pos = 0
    total = 0
    while pos < raw.size:
        cnt = int(raw[pos + 2])
        jobs.append(raw[pos + 3:pos + 3 + cnt].astype(np.int64))
        pos += 3 + cnt
        total += cnt
        if limit is not None and total >= limit:
            break
    t0 = time.perf_counter()
    check = [0] * (1 + len(WINDOWS))
    for idx in jobs:
        pc = idx % H_ATT  # mod map
        check[0] += inorder_d1(pc)
        for k, w in enumerate(WINDOWS):
            check[1 + k] += window(pc, w)
    dt = time.perf_counter() - t0
    return len(jobs), total, dt, check


def versus(bench):
    with tempfile.TemporaryDirectory() as tmp:
        sel = os.path.join(tmp, "sel.bin")
        out = subprocess.run([bench, "--write", sel], check=True, capture_output=True,
                             text=True).stdout
        sys.stdout.write(out)
        rate_c = float(re.search(r"([0-9.]+) M indices/s", out).group(1))
        check_c = re.search(r"checksum slots: (.*)", out).group(1).split()
        jobs, total, dt, check = simulate(sel, None)
    rate_py = total / dt / 1e6
    print("conflicts_numpy: %d jobs, %d selected indices, %.3f s, %.4f M indices/s" %
          (jobs, total, dt, rate_py))
    print("checksum slots: " + " ".join(str(c) for c in check))
    same = [str(c) for c in check] == check_c
    print("conflicts_numpy: C/numpy speed ratio %.1fx (target >= 50x), checksums %s" %
          (rate_c / rate_py, "agree" if same else "DIFFER"))
    return 0 if same else 1


def main():
    if len(sys.argv) > 2 and sys.argv[1] == "--vs":
        sys.exit(versus(sys.argv[2]))
    path = sys.argv[1]
    limit = int(sys.argv[2]) if len(sys.argv) > 2 else None
    jobs, total, dt, check = simulate(path, limit)
    print("conflicts_numpy: %d jobs, %d selected indices, %.3f s, %.4f M indices/s" %
          (jobs, total, dt, total / dt / 1e6))
    print("checksum slots: " + " ".join(str(c) for c in check))


if __name__ == "__main__":
    main()
