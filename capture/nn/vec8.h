/*
 * vec8: eight floats as one value (the GCC and Clang vector extension), for the kernels that
 * spell their lanes out: the softmax exponential (nn.c) and the DiSC row kernels
 * (capture/disc/dit_attn.c). Every operation is the scalar IEEE operation per lane, with no
 * FMA contraction (-std=c11 keeps -ffp-contract=off) outside the functions that ask for it
 * (HOT_CLONES_FUSED, common/hot.h), so a lane's value is what the same scalar code would give;
 * compiled for AVX2 a v8f is one ymm register, elsewhere the compiler splits it.
 */
#ifndef ACCELTRACE_CAPTURE_NN_VEC8_H
#define ACCELTRACE_CAPTURE_NN_VEC8_H

#include <stdint.h>
#include <string.h>

typedef float v8f __attribute__((vector_size(32)));
typedef int32_t v8i __attribute__((vector_size(32)));
typedef uint32_t v8u __attribute__((vector_size(32)));

/* v8f passes by value only between static inline functions, so the note about the AVX
 * argument ABI does not apply (GCC prints it in spite of the pragma; the Makefile passes
 * -Wno-psabi) */
#if defined(__clang__)
#pragma clang diagnostic ignored "-Wunknown-warning-option"
#pragma clang diagnostic ignored "-Wpsabi"
#elif defined(__GNUC__)
#pragma GCC diagnostic ignored "-Wpsabi"
#endif

static inline __attribute__((always_inline)) v8f load8(const float *p)
{
    v8f v;
    memcpy(&v, p, sizeof v);
    return v;
}

static inline __attribute__((always_inline)) v8f splat8(float f)
{
    return (v8f){f, f, f, f, f, f, f, f};
}

/* a where mask lanes are all ones, else b (the lanes of a comparison) */
static inline __attribute__((always_inline)) v8f select8(v8i mask, v8f a, v8f b)
{
    return (v8f)(((v8i)a & mask) | ((v8i)b & ~mask));
}

#endif
