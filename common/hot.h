/*
 * hot: function multi-versioning for the hot loops. HOT_CLONES compiles a function again
 * for x86-64-v3 (AVX2, FMA) and x86-64-v4 (AVX-512) at -O3, next to the default build, and
 * the loader picks the clone for the CPU it runs on (GCC target_clones, an ifunc resolved
 * once at load time). So the default -O2 build vectorises these loops too, and the binary
 * still runs on any x86-64 CPU.
 *
 * The clones compute the same bits as the default: -std=c11 keeps -ffp-contract=off, so no
 * multiply-add is fused, and a loop whose sums are written in a fixed order is not
 * reassociated. HOT_CLONES_FUSED is the one exception: its v3 and v4 clones contract each
 * a * b + c into one fused multiply-add (one rounding) and its default clone does not, so
 * its results depend on whether the CPU has FMA. It is for kernels whose reference is
 * compiled the same way (the DiSC masked attention and its reference rows in capture/nn),
 * so kernel and reference still agree bit for bit on any one CPU.
 *
 * Without GCC on x86-64 Linux both expand to nothing (the plain build of the function), and
 * so they do under AddressSanitizer, so `make asan` checks the one plain build.
 */
#ifndef ACCELTRACE_HOT_H
#define ACCELTRACE_HOT_H

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__) &&       \
    !defined(__SANITIZE_ADDRESS__)
#define HOT_CLONES                                                                                 \
    __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default"), optimize("O3")))
#define HOT_CLONES_FUSED                                                                           \
    __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default"),                   \
                   optimize("O3", "fp-contract=fast")))
#else
#define HOT_CLONES
#define HOT_CLONES_FUSED
#endif

#endif
