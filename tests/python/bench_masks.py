#!/usr/bin/python3
"""Speed of the Python package on the masks of a disc trace (docs/performance.md "Python
package"); not a test. Usage: bench_masks.py TRACE.atr [ROUNDS]

Prints, best of ROUNDS (default 5): a full read of the trace through acceltrace.open()
(frame checks, CRC-32C, zstd, protobuf, content hash), then to_numpy() of every kept
disc_mask record alone (the records already in memory), in MB/s of stored mask bits
(the bitset bytes: rows padded to 64 bits) and in mask elements per second.
"""
import sys
import time

import acceltrace
import acceltrace._crc32c


def best(f, rounds):
    t = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        f()
        t.append(time.perf_counter() - t0)
    return min(t)


def main():
    path = sys.argv[1]
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    tr = acceltrace.open(path)
    recs = [r for r in tr.records("disc_mask") if r.msg.kept]
    bits_bytes = sum(len(r.msg.bits) for r in recs)
    elems = sum(r.to_numpy().size for r in recs)
    size = tr.size

    def read():
        for _ in acceltrace.open(path).records():
            pass

    def masks():
        for r in recs:
            r.to_numpy()

    def both():
        for r in acceltrace.open(path).records("disc_mask"):
            if r.msg.kept:
                r.to_numpy()

    t_read = best(read, rounds)
    t_both = best(both, rounds)
    t_np = best(masks, rounds)
    crc = acceltrace._crc32c
    fast = crc._crcmod
    crc._crcmod = None  # the portable CRC-32C (numpy), as without python3-crcmod
    t_portable = best(read, rounds)
    crc._crcmod = fast
    print("trace %s: %d bytes, %d kept masks, %d bytes of mask bits, %d elements" % (
        path, size, len(recs), bits_bytes, elems))
    print("full read (open + records()): %.3f s, %.1f MB/s of file" % (t_read, size / t_read / 1e6))
    print("read + to_numpy() of every mask: %.3f s, %.0f MB/s of mask bits" % (
        t_both, bits_bytes / t_both / 1e6))
    print("full read with the portable CRC-32C (no crcmod): %.3f s, %.1f MB/s of file" % (
        t_portable, size / t_portable / 1e6))
    print("to_numpy() of every mask: %.4f s, %.0f MB/s of mask bits, %.2f G elements/s" % (
        t_np, bits_bytes / t_np / 1e6, elems / t_np / 1e9))


if __name__ == "__main__":
    main()
