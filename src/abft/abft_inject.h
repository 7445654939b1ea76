/* Fault injection (BLASFT_INJECT), off unless asked for:
 *   faults=<n per GEMM>        number of bit flips (default 1)
 *   bits=sign|exponent|mantissa|any|<i>-<j>   which bit of the element (default mantissa; i-j
 *                              inclusive, 0 = least significant, clipped to the type's width)
 *   site=output|inner|encoder  output: flip elements of C after the GEMM; inner: split K, flip in
 *                              the partial product of the first k1 steps, accumulate the rest;
 *                              encoder: flip entries of the second copy of op(A)'s encoding (the
 *                              redundant computation's comparison must find it)
 *   seed=<s>                   deterministic, but each GEMM call draws from its own stream
 *   pattern=random|row|column|block   where the n faults go: anywhere; a burst along one row or
 *                              one column inside one block; n random elements of one block. Every
 *                              flip hits an element of its own (a burst is at most the block's
 *                              row or column long, the block pattern at most its size)
 * Complex types flip the real or the imaginary part at random. */
#ifndef BLASFT_ABFT_INJECT_H
#define BLASFT_ABFT_INJECT_H

#include "gemm.h"

#include <stddef.h>
#include <stdint.h>

typedef enum { BLASFT_BITS_SIGN, BLASFT_BITS_EXPONENT, BLASFT_BITS_MANTISSA, BLASFT_BITS_ANY,
               BLASFT_BITS_RANGE } blasft_bits_class;
typedef enum { BLASFT_SITE_OUTPUT, BLASFT_SITE_INNER, BLASFT_SITE_ENCODER } blasft_inject_site;
typedef enum { BLASFT_PATTERN_RANDOM, BLASFT_PATTERN_ROW, BLASFT_PATTERN_COLUMN,
               BLASFT_PATTERN_BLOCK } blasft_inject_pattern;

typedef struct blasft_inject_spec {
    int faults;
    blasft_bits_class bits;
    int bit_lo, bit_hi; /* BLASFT_BITS_RANGE */
    blasft_inject_site site;
    blasft_inject_pattern pattern;
    uint64_t seed;
} blasft_inject_spec;

/* Parses s ("" = off: faults 0). On a malformed value writes a message naming the key and its
 * accepted values into err and returns -1 (*out then injects nothing). */
int blasft_inject_parse(const char *s, blasft_inject_spec *out, char *err, size_t errlen);

/* The process's spec for the string s, parsed once per distinct string; a malformed one is named
 * on stderr once and injects nothing. */
const blasft_inject_spec *blasft_inject_get(const char *s);

/* A fresh random state for one GEMM call: seed mixed with a process-wide call counter. */
uint64_t blasft_inject_next_stream(const blasft_inject_spec *spec);

/* Flips spec->faults bits in the m x n matrix c (type t, leading dimension ldc) following the
 * pattern over blocks of size bs; state is advanced. Returns the number of flips. */
int blasft_inject_flip(const blasft_inject_spec *spec, uint64_t *state, blasft_type t, void *c,
                       int64_t ldc, int64_t m, int64_t n, int bs);

/* The same with the bits chosen as for type `bits` in a matrix stored as type t: where a single
 * precision type's GEMM runs in double (abft_promote.c), the element's value as a float has its
 * bit flipped and the difference is added to the double. */
int blasft_inject_flip_as(const blasft_inject_spec *spec, uint64_t *state, blasft_type bits,
                          blasft_type t, void *c, int64_t ldc, int64_t m, int64_t n, int bs);

/* Flips spec->faults bits (chosen as for type t) in random entries of the n doubles v, which hold
 * checksums of data of type t; state is advanced. Returns the number of flips. */
int blasft_inject_flip_checksums(const blasft_inject_spec *spec, uint64_t *state, blasft_type t,
                                 double *v, int64_t n);

/* Flips bit `bit` of element idx, part `part` (exposed for the tests). */
void blasft_flip_bit(blasft_type t, void *c, int64_t idx, int part, int bit);

/* The double v with bit `bit` of its value as a float flipped: v + (flipped - (float)v), so v's
 * digits beyond a float's stay (Inf or NaN where the flip makes one). */
double blasft_flip_float_bit_of(double v, int bit);

/* The float v with bit `bit` of its value as a half (bf16: a bfloat16) flipped, the same way
 * (v - rounded + flipped; the flipped value where it or the rounded one is not finite): a fault in
 * a 16-bit result that the engine checks in FP32 (cuda/gpu_lowp.cu). */
float blasft_flip_half_bit_of(float v, int bit, int bf16);

#endif
