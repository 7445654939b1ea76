/* A test GEMM of the host engine's tests with its own buffers (values uniform in [lo, hi), C
 * NaN where beta = 0), and the long-double oracle it is checked against. */
#ifndef BLASFT_ABFT_TEST_GEMM_H
#define BLASFT_ABFT_TEST_GEMM_H

#include "abft/abft_internal.h"
#include "gemm.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng = 12345;
static inline double urand(void) /* [0, 1) */
{
    rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
    return (double)(rng >> 11) * 0x1.0p-53;
}


/* A test GEMM with its own buffers; values in [lo, hi). */
typedef struct tgemm {
    blasft_gemm g;
    void *a, *b, *c, *c0;
    int64_t csize;
} tgemm;

static inline void fill(void *p, blasft_type t, int64_t n, double lo, double hi)
{
    int P = blasft_type_is_complex(t) ? 2 : 1;
    for (int64_t i = 0; i < n * P; i++) {
        double v = lo + (hi - lo) * urand();
        if (t == BLASFT_TYPE_S || t == BLASFT_TYPE_C)
            ((float *)p)[i] = (float)v;
        else
            ((double *)p)[i] = v;
    }
}

static inline tgemm make(blasft_type t, char ta, char tb, int64_t m, int64_t n, int64_t k, int64_t pad,
                  double alpha, double beta, double lo, double hi)
{
    tgemm x;
    memset(&x, 0, sizeof x);
    blasft_gemm *g = &x.g;
    g->type = t;
    g->transa = ta;
    g->transb = tb;
    g->m = m;
    g->n = n;
    g->k = k;
    g->alpha[0] = alpha;
    g->alpha[1] = blasft_type_is_complex(t) ? 0.25 : 0.0;
    g->beta[0] = beta;
    g->beta[1] = blasft_type_is_complex(t) && beta != 0.0 ? -0.5 : 0.0;
    int64_t ar = blasft_gemm_a_rows(g), ac = blasft_gemm_a_cols(g);
    int64_t br = blasft_gemm_b_rows(g), bc = blasft_gemm_b_cols(g);
    g->lda = (ar > 0 ? ar : 1) + pad;
    g->ldb = (br > 0 ? br : 1) + pad;
    g->ldc = (m > 0 ? m : 1) + pad;
    int sz = blasft_type_size(t);
    x.a = calloc((size_t)(g->lda * (ac > 0 ? ac : 1)), (size_t)sz);
    x.b = calloc((size_t)(g->ldb * (bc > 0 ? bc : 1)), (size_t)sz);
    x.csize = g->ldc * (n > 0 ? n : 1);
    x.c = calloc((size_t)x.csize, (size_t)sz);
    x.c0 = calloc((size_t)x.csize, (size_t)sz);
    fill(x.a, t, g->lda * ac, lo, hi);
    fill(x.b, t, g->ldb * bc, lo, hi);
    fill(x.c, t, x.csize, lo, hi);
    if (beta == 0.0) /* BLAS semantics: C is never read with beta = 0 */
        for (int64_t i = 0; i < x.csize * (blasft_type_is_complex(t) ? 2 : 1); i++) {
            if (t == BLASFT_TYPE_S || t == BLASFT_TYPE_C)
                ((float *)x.c)[i] = NAN;
            else
                ((double *)x.c)[i] = NAN;
        }
    memcpy(x.c0, x.c, (size_t)(x.csize * sz));
    g->a = x.a;
    g->b = x.b;
    g->c = x.c;
    g->routine = "test";
    return x;
}

static inline void drop(tgemm *x)
{
    free(x->a);
    free(x->b);
    free(x->c);
    free(x->c0);
}


static inline double opel(const void *p, blasft_type t, char tr, int64_t ld, int64_t r, int64_t c, int part)
{
    double v = abft_ld(p, t, tr == 'N' ? r + c * ld : c + r * ld, part);
    return part && tr == 'C' ? -v : v;
}

/* Checks C against a long-double oracle: |c - true| <= tol_factor * (k+4) * u * scale + rel *
 * |true| + abs_tol, scale the sum of the terms' magnitudes (abs_tol: rounding that is absolute,
 * as in the subnormal range). */
static inline int compare_oracle_tol(const tgemm *x, double tol_factor, double u, double rel,
                                     double abs_tol)
{
    const blasft_gemm *g = &x->g;
    int P = blasft_type_is_complex(g->type) ? 2 : 1;
    int bad = 0;
    for (int64_t j = 0; j < g->n; j++)
        for (int64_t i = 0; i < g->m; i++) {
            long double re = 0, im = 0, sc = 0;
            for (int64_t kk = 0; kk < g->k; kk++) {
                long double ar = opel(g->a, g->type, g->transa, g->lda, i, kk, 0);
                long double br = opel(g->b, g->type, g->transb, g->ldb, kk, j, 0);
                long double ai = P == 2 ? opel(g->a, g->type, g->transa, g->lda, i, kk, 1) : 0;
                long double bi = P == 2 ? opel(g->b, g->type, g->transb, g->ldb, kk, j, 1) : 0;
                re += ar * br - ai * bi;
                im += ar * bi + ai * br;
                sc += (fabsl(ar) + fabsl(ai)) * (fabsl(br) + fabsl(bi));
            }
            long double cr = g->alpha[0] * re - g->alpha[1] * im;
            long double ci = g->alpha[0] * im + g->alpha[1] * re;
            sc *= fabs(g->alpha[0]) + fabs(g->alpha[1]);
            if (g->beta[0] != 0.0 || g->beta[1] != 0.0) {
                long double orr = abft_ld(x->c0, g->type, i + j * g->ldc, 0);
                long double oi = P == 2 ? abft_ld(x->c0, g->type, i + j * g->ldc, 1) : 0;
                cr += g->beta[0] * orr - g->beta[1] * oi;
                ci += g->beta[0] * oi + g->beta[1] * orr;
                sc += (fabs(g->beta[0]) + fabs(g->beta[1])) * (fabsl(orr) + fabsl(oi));
            }
            long double tol = tol_factor * (g->k + 4) * u * (sc + 1e-300L);
            for (int part = 0; part < P; part++) {
                long double got = abft_ld(g->c, g->type, i + j * g->ldc, part);
                long double want = part ? ci : cr;
                if (!(fabsl(got - want) <= tol + rel * fabsl(want) + abs_tol)) {
                    if (bad < 3)
                        fprintf(stderr, "  C(%lld,%lld)[%d] = %Lg, oracle %Lg, tol %Lg\n",
                                (long long)i, (long long)j, part, got, want, tol);
                    bad++;
                }
            }
        }
    /* padding rows below m must be untouched */
    int sz = blasft_type_size(g->type);
    for (int64_t j = 0; j < g->n; j++)
        if (g->ldc > g->m &&
            memcmp((char *)g->c + (g->m + j * g->ldc) * sz, (char *)x->c0 + (g->m + j * g->ldc) * sz,
                   (size_t)((g->ldc - g->m) * sz)) != 0)
            bad++;
    return bad;
}

/* The same with the type's own unit roundoff and no relative or absolute term. */
static inline int compare_oracle(const tgemm *x, double tol_factor)
{
    const blasft_type t = x->g.type;
    return compare_oracle_tol(x, tol_factor,
                              t == BLASFT_TYPE_S || t == BLASFT_TYPE_C ? 0x1p-24 : 0x1p-53, 0.0, 0.0);
}

#endif
