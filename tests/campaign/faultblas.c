#include "faultblas.h"

#include <dlfcn.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

typedef void gemm_fn(const char *, const char *, const int *, const int *, const int *, const void *,
                     const void *, const int *, const void *, const int *, const void *, void *,
                     const int *, size_t, size_t);

static campaign_fault plan;

EXPORT campaign_fault *campaign_fault_plan(void) { return &plan; }

/* The real routine, from OpenBLAS's own handle (never this module's symbol of the same name). */
static gemm_fn *real(const char *name)
{
    static void *h;
    if (!h)
        h = dlopen("libopenblas.so.0", RTLD_NOW | RTLD_LOCAL);
    gemm_fn *f = h ? (gemm_fn *)dlsym(h, name) : NULL;
    if (!f) {
        fprintf(stderr, "faultblas: no %s in libopenblas.so.0\n", name);
        abort();
    }
    return f;
}

static uint64_t mix(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static double flip(void *c, int single, int bit)
{
    if (single) {
        uint32_t u;
        memcpy(&u, c, 4);
        u ^= (uint32_t)1 << bit;
        memcpy(c, &u, 4);
        return *(float *)c;
    }
    uint64_t u;
    memcpy(&u, c, 8);
    u ^= (uint64_t)1 << bit;
    memcpy(c, &u, 8);
    return *(double *)c;
}

/* The FP32 flip of a value the engine holds in double: (float) v with the bit flipped, the
 * difference added to v. */
static double flip_as_single(void *c, int bit)
{
    double v;
    memcpy(&v, c, 8);
    float f = (float)v, g = f;
    uint32_t u;
    memcpy(&u, &g, 4);
    u ^= (uint32_t)1 << bit;
    memcpy(&g, &u, 4);
    v = isfinite(g) ? v + ((double)g - (double)f) : (double)g;
    memcpy(c, &v, 8);
    return v;
}

static void gemm(int single, const char *ta, const char *tb, const int *m, const int *n, const int *k,
                 const void *alpha, const void *a, const int *lda, const void *b, const int *ldb,
                 const void *beta, void *c, const int *ldc, size_t la, size_t lb)
{
    static gemm_fn *fn[2];
    gemm_fn *f = fn[single];
    if (!f)
        f = fn[single] = real(single ? "sgemm_" : "dgemm_");
    int match = plan.target ? c == plan.target
                            : !single && *m == plan.match_m && *n == plan.match_n;
    if (!plan.armed || !match || *m < 1 || *n < 1 || plan.skip-- > 0) {
        f(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, la, lb);
        return;
    }
    plan.armed = 0;
    uint64_t s = plan.seed;
    plan.row = (int64_t)(mix(&s) % (uint64_t)*m);
    plan.col = (int64_t)(mix(&s) % (uint64_t)*n);
    size_t es = single ? 4 : 8;
    char *elem = (char *)c + (size_t)(plan.row + plan.col * (int64_t)*ldc) * es;
    if (plan.site == FAULT_SITE_INNER && *k >= 2) {
        /* Split the inner dimension: C = alpha*A1*B1 + beta*C, flip, C += alpha*A2*B2. */
        int k1 = 1 + (int)(mix(&s) % (uint64_t)(*k - 1)), k2 = *k - k1;
        int an = (*ta == 'N' || *ta == 'n');
        int bn = (*tb == 'N' || *tb == 'n');
        const char *a2 = (const char *)a + (size_t)(an ? (int64_t)k1 * *lda : k1) * es;
        const char *b2 = (const char *)b + (size_t)(bn ? k1 : (int64_t)k1 * *ldb) * es;
        float one_s = 1.0f;
        double one_d = 1.0;
        f(ta, tb, m, n, &k1, alpha, a, lda, b, ldb, beta, c, ldc, la, lb);
        plan.before = single ? *(float *)elem : *(double *)elem;
        plan.after = plan.as_single ? flip_as_single(elem, plan.bit) : flip(elem, single, plan.bit);
        f(ta, tb, m, n, &k2, alpha, a2, lda, b2, ldb, single ? (const void *)&one_s : (const void *)&one_d,
          c, ldc, la, lb);
        plan.k1 = k1;
    } else {
        f(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, la, lb);
        plan.before = single ? *(float *)elem : *(double *)elem;
        plan.after = plan.as_single ? flip_as_single(elem, plan.bit) : flip(elem, single, plan.bit);
        plan.k1 = *k;
    }
    plan.fired = 1;
}

EXPORT void sgemm_(const char *ta, const char *tb, const int *m, const int *n, const int *k,
                   const float *alpha, const float *a, const int *lda, const float *b, const int *ldb,
                   const float *beta, float *c, const int *ldc, size_t la, size_t lb)
{
    gemm(1, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, la, lb);
}

EXPORT void dgemm_(const char *ta, const char *tb, const int *m, const int *n, const int *k,
                   const double *alpha, const double *a, const int *lda, const double *b,
                   const int *ldb, const double *beta, double *c, const int *ldc, size_t la, size_t lb)
{
    gemm(0, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, la, lb);
}
