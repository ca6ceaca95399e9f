#!/usr/bin/env bash
# `make bench`: runs every benchmark program build/bench/bench_* in turn and prints their
# lines (each line starts with the program's name). Record the figures in
# docs/performance.md. BENCH_ONLY=name1,name2 runs a subset (names without "bench_").
set -u
BUILD=${BUILD:-build}
export OPENBLAS_NUM_THREADS=${OPENBLAS_NUM_THREADS:-1}
# OpenBLAS's worker threads spin after each call (default 2^28 cycles), taking the cores the
# worker pool's row kernels want between GEMMs; the shortest spin is what a capture should
# run with (docs/performance.md, "OpenBLAS thread timeout")
export OPENBLAS_THREAD_TIMEOUT=${OPENBLAS_THREAD_TIMEOUT:-4}
status=0
for b in "$BUILD"/bench/bench_*; do
    [ -x "$b" ] || continue
    case "$b" in *.o|*.d) continue;; esac
    name=$(basename "$b"); short=${name#bench_}
    if [ -n "${BENCH_ONLY:-}" ] && ! [[ ",$BENCH_ONLY," == *",$short,"* ]]; then continue; fi
    echo "== $name"
    if ! "$b"; then echo "$name: FAILED"; status=1; fi
done
# Salca conflicts vs the numpy peer on the same selections (speed ratio; target >= 50x).
if [[ -z "${BENCH_ONLY:-}" || ",$BENCH_ONLY," == *",conflicts,"* ]] && [ -x "$BUILD/bench/bench_conflicts" ]; then echo "== conflicts_numpy"; /usr/bin/python3 bench/peers/conflicts_numpy.py --vs "$BUILD/bench/bench_conflicts" || status=1; fi
# DiSC hash load balance vs the numpy peer on the same 16384 x 16384 mask (target >= 10x; same checksum).
if [[ -z "${BENCH_ONLY:-}" || ",$BENCH_ONLY," == *",hash_lb,"* ]] && [ -x "$BUILD/bench/bench_hash_lb" ]; then echo "== hash_lb_numpy"; m=$(mktemp); { "$BUILD/bench/bench_hash_lb" --reps 1 --write-mask "$m" > /dev/null && /usr/bin/python3 bench/peers/hash_lb_numpy.py "$m" 16384; } || status=1; rm -f "$m"; fi
# Kuramoto drift vs the numpy peer (direct 5x5 and box sums) on the same 1024x1024 map (targets >= 20x, >= 3x; 2 threads >= 1.8x).
if [[ -z "${BENCH_ONLY:-}" || ",$BENCH_ONLY," == *",kura,"* ]] && [ -x "$BUILD/bench/bench_kura" ]; then echo "== kura_numpy"; m=$(mktemp); p=$(mktemp); { "$BUILD/bench/bench_kura" --reps 1 --write-map "$m" > /dev/null && /usr/bin/python3 bench/peers/kura_drift_numpy.py --map "$m" > "$p" && cat "$p" && "$BUILD/bench/bench_kura" --peer "$p"; } || status=1; rm -f "$m" "$p"; fi
# Salca selection: histogram threshold vs numpy exact top-k on one head (target >= 5x over sorting at 32K).
if [[ -z "${BENCH_ONLY:-}" || ",$BENCH_ONLY," == *",salca,"* ]] && [ -x "$BUILD/bench/bench_salca" ]; then echo "== salca_topk_numpy"; /usr/bin/python3 bench/peers/salca_topk_numpy.py --vs "$BUILD/bench/bench_salca" || status=1; fi
# DiSC DiT forward (tiny, N = 1024) vs the PyTorch peer on the same weights and threads (target >= 1.0x; max diff <= 1e-4).
if [[ -z "${BENCH_ONLY:-}" || ",$BENCH_ONLY," == *",disc,"* ]] && [ -x "$BUILD/bench/bench_disc" ]; then echo "== disc_torch"; d=$(mktemp -d); th=${ACCELTRACE_THREADS:-$(nproc)}; { c=$("$BUILD/bench/bench_disc" --forward-only --threads "$th" --dump "$d" | sed -n 's/.*forward N=.*: \([0-9.]*\) s$/\1/p') && /usr/bin/python3 bench/peers/dit_torch.py "$d" --threads "$th" --c-seconds "$c"; } || status=1; rm -rf "$d"; fi
# DiSC sparse kernels again at the papers' 1k shape (tiny at 1024 px, N = 4096): there the self-attention share of a dense step is about twice that at 512 px, which bounds the ST reuse step's gain (docs/performance.md, "DiSC sparse kernels and memory plan").
if [[ -z "${BENCH_ONLY:-}" || ",$BENCH_ONLY," == *",disc,"* || ",$BENCH_ONLY," == *",disc_1k,"* ]] && [ -x "$BUILD/bench/bench_disc" ]; then echo "== bench_disc --image-size 1024"; "$BUILD/bench/bench_disc" --image-size 1024 --reps 1 || status=1; fi
# Salca Llama decoder vs an independent PyTorch forward on the same tiny checkpoint (logits within 1e-4; speed ratio).
if [[ -z "${BENCH_ONLY:-}" || ",$BENCH_ONLY," == *",salca_llama,"* ]] && [ -x "$BUILD/bench/bench_salca_llama" ]; then echo "== salca_llama_torch"; d=$(mktemp -d); /usr/bin/python3 bench/peers/salca_llama_torch.py "$d" --vs "$BUILD/bench/bench_salca_llama" || status=1; rm -rf "$d"; fi
exit $status
