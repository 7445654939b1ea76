/* The 16-bit formats for the cuBLAS tests of half and bfloat16 GEMMs (test_cublas_lowp.c,
 * test_cublas_lowp_batched.c, test_cublaslt_entry.c): half (5 exponent bits, 10 mantissa bits),
 * bfloat16 (8, 7) and float, converted exactly on the host (cuda_fp16.h and cuda_bf16.h are C++
 * only); then what the cuBLAS tests of such GEMMs share: the types' and compute types' names, the
 * data's scale, the oracle's bound and sample, the scalars and the handle's math mode. */
#ifndef BLASFT_HALF_TEST_H
#define BLASFT_HALF_TEST_H

#include <cublas_api.h>

#include "interpose_test.h"

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

/* ---- the cuBLAS side ---- */

/* element types as cuBLAS names them: A and B half or bfloat16, C of their type or float */
static const char *const type_names[] = {"16F", "16BF", "32F"};
static const cudaDataType cuda_types[] = {CUDA_R_16F, CUDA_R_16BF, CUDA_R_32F};

/* GemmEx's compute types (SgemmEx: 32F implied; Hgemm: 16F) */
typedef enum { CT_32F, CT_32F_PEDANTIC, CT_16F, CT_16F_PEDANTIC } compute;
static const cublasComputeType_t compute_types[] = {CUBLAS_COMPUTE_32F, CUBLAS_COMPUTE_32F_PEDANTIC,
                                                    CUBLAS_COMPUTE_16F, CUBLAS_COMPUTE_16F_PEDANTIC};
static const char *const compute_names[] = {"32F", "32F_PEDANTIC", "16F", "16F_PEDANTIC"};

static inline int is_half_compute(compute ct) { return ct == CT_16F || ct == CT_16F_PEDANTIC; }

/* The mixed series (2) under a half C is scaled by 2^-s, s split between A (*scale_a) and B
 * (*scale_b), so that |alpha| k max|a| max|b| + |beta| max|C| stays below 2^14; else 1. */
static inline void lowp_scales(int series, etype out, int k, double *scale_a, double *scale_b)
{
    int s = 0;
    if (series == 2 && out == T_F16) {
        s = (int)ceil(log2(1.25 * k + 2.0)) - 2;
        s = s > 0 ? s : 0;
    }
    *scale_a = ldexp(1.0, -(s + 1) / 2);
    *scale_b = ldexp(1.0, -s / 2);
}

/* The oracle's bound on |c - v| for a result v = alpha sum_l a_il b_lj + beta c of type out over k
 * products: av = |v|, mag = |alpha| sum_l |a_il b_lj| + |beta c|. FP32 accumulation: u |v| +
 * (k + 4) 2^-22 mag + tiny, and 32 u mag more where `loose` and C is 16-bit (cuBLAS's own split-K
 * partial sums may be rounded to C's type); half accumulation (half_acc): u |v| + (k + 2) 2^-10
 * mag + tiny + k 2^-24 (half's subnormals). */
static inline double lowp_bound(etype out, int k, double av, double mag, int half_acc, int loose)
{
    const double u = unit_out(out);
    if (half_acc)
        return u * av + (double)(k + 2) * 0x1p-10 * mag + tiny_out(out) + (double)k * 0x1p-24;
    double bound = u * av + (double)(k + 4) * 0x1p-22 * mag + tiny_out(out);
    if (loose && out != T_F32)
        bound += 32.0 * u * mag;
    return bound;
}

/* The oracle's sample: every element up to ORACLE_FULL multiply-adds, above them a grid of
 * GRID x GRID over C and SAMPLES random elements; grid_pos: the g-th of GRID positions in 0 ..
 * dim - 1 */
enum { ORACLE_FULL = 1 << 27, SAMPLES = 2000, GRID = 5 };
static inline int grid_pos(int dim, int g) { return (int)((int64_t)(dim - 1) * g / (GRID - 1)); }

/* the scalars as the call takes them: float, or half where the compute type is */
typedef struct scalars {
    float f[2];
    uint16_t h[2];
    void *dev; /* alpha and beta in device memory (NULL: host) */
    const void *alpha, *beta;
} scalars;

/* alpha and beta in half (half) or float, in device memory where dev (the handle's pointer mode
 * then device: unset_scalars sets it back) */
static inline void set_scalars(scalars *s, cublasHandle_t h, double alpha, double beta, int half,
                               int dev)
{
    s->f[0] = (float)alpha, s->f[1] = (float)beta;
    s->h[0] = enc16(alpha, T_F16), s->h[1] = enc16(beta, T_F16);
    const size_t es = half ? 2 : 4;
    const char *host = half ? (const char *)s->h : (const char *)s->f;
    s->dev = NULL;
    s->alpha = host, s->beta = host + es;
    if (dev && (s->dev = upload(host, 2 * es))) {
        s->alpha = s->dev, s->beta = (const char *)s->dev + es;
        cublasSetPointerMode_v2(h, CUBLAS_POINTER_MODE_DEVICE);
    }
}

static inline void unset_scalars(scalars *s, cublasHandle_t h)
{
    if (s->dev)
        cublasSetPointerMode_v2(h, CUBLAS_POINTER_MODE_HOST);
    cudaFree(s->dev);
    s->dev = NULL;
}

/* the handle's math mode: CUBLAS_DEFAULT_MATH, or with
 * CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION where math */
static inline void set_math(cublasHandle_t h, int math)
{
    cublasSetMathMode(h, math ? (cublasMath_t)(CUBLAS_DEFAULT_MATH |
                                               CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION)
                              : CUBLAS_DEFAULT_MATH);
}

#endif
