/* The 16-bit formats for the cuBLAS tests of half and bfloat16 GEMMs (test_cublas_lowp.c,
 * test_cublaslt_entry.c): half (5 exponent bits, 10 mantissa bits), bfloat16 (8, 7) and float,
 * converted exactly on the host (cuda_fp16.h and cuda_bf16.h are C++ only). */
#ifndef BLASFT_HALF_TEST_H
#define BLASFT_HALF_TEST_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef enum { T_F16, T_BF16, T_F32 } etype;

static inline int mant_bits(etype t) { return t == T_F16 ? 10 : t == T_BF16 ? 7 : 23; }
static inline int exp_bits(etype t) { return t == T_F16 ? 5 : 8; }
static inline size_t esize(etype t) { return t == T_F32 ? 4 : 2; }
static inline double unit_out(etype t)
{
    return t == T_F16 ? 0x1p-11 : t == T_BF16 ? 0x1p-8 : 0x1p-24;
}
static inline double tiny_out(etype t) { return t == T_F16 ? 0x1p-24 : 1e-38; }

/* the value of the 16-bit word h of type t, exactly */
static inline double dec16(uint16_t h, etype t)
{
    const int p = mant_bits(t), eb = exp_bits(t), bias = (1 << (eb - 1)) - 1;
    const int ef = (h >> p) & ((1 << eb) - 1), f = h & ((1 << p) - 1);
    double v;
    if (ef == (1 << eb) - 1)
        v = f ? NAN : INFINITY;
    else if (ef == 0)
        v = ldexp(f, 1 - bias - p); /* subnormal */
    else
        v = ldexp(f + (1 << p), ef - bias - p);
    return (h & 0x8000) ? -v : v;
}

/* x rounded to the nearest value of the 16-bit type t (ties to even), as its word; NaN as the
 * positive quiet NaN */
static inline uint16_t enc16(double x, etype t)
{
    const int p = mant_bits(t), eb = exp_bits(t), bias = (1 << (eb - 1)) - 1;
    const unsigned inf = ((1u << eb) - 1) << p, sign = signbit(x) ? 0x8000u : 0;
    if (isnan(x))
        return (uint16_t)(inf | (1u << (p - 1)));
    const double a = fabs(x);
    if (a >= ldexp(2.0 - ldexp(1.0, -p - 1), bias)) /* rounds past the largest finite value */
        return (uint16_t)(sign | inf);
    if (a == 0)
        return (uint16_t)sign;
    int ex;
    (void)frexp(a, &ex); /* a in [2^(ex - 1), 2^ex) */
    const int E = ex - 1 < 1 - bias ? 1 - bias : ex - 1;
    /* a / 2^(E - p): exact; one rounding to an integer in [0, 2^(p + 1)]; a carry out of the
     * mantissa goes into the exponent field */
    const unsigned q = (unsigned)nearbyint(ldexp(a, p - E));
    return (uint16_t)(sign | (((unsigned)(E + bias - 1) << p) + q));
}

static inline double load(const void *buf, size_t i, etype t)
{
    if (t == T_F32) {
        float f;
        memcpy(&f, (const char *)buf + 4 * i, 4);
        return f;
    }
    uint16_t h;
    memcpy(&h, (const char *)buf + 2 * i, 2);
    return dec16(h, t);
}

/* x rounded to type t into element i of buf */
static inline void store(void *buf, size_t i, double x, etype t)
{
    if (t == T_F32) {
        const float f = (float)x;
        memcpy((char *)buf + 4 * i, &f, 4);
    } else {
        const uint16_t h = enc16(x, t);
        memcpy((char *)buf + 2 * i, &h, 2);
    }
}

#endif
