/* An unmodified cuBLAS program, run with LD_PRELOAD=libblas_ft.so (suite 'cublas'): every
 * interposed GEMM entry point (real and complex types) against a host reference on fresh random
 * data (awkward shapes, transposes, lda > m, device pointer mode, batches), the counters of
 * protected and unprotected GEMMs, status codes of invalid calls, planted faults corrected, and
 * a CUDA graph capture.
 * --expect-off: run under BLASFT_MODE=off, every GEMM must pass through unprotected.
 * Exits 77 without a GPU. No cmocka (the device machine has none). */
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "app_probe.h"
#include "interpose_test.h"

#include <dlfcn.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

typedef enum { EP_V2, EP_V2_64, EP_EX, EP_EX_64, EP_STRIDED, EP_STRIDED_64, EP_STRIDED_EX,
               EP_STRIDED_EX_64, EP_PTRS, EP_PTRS_64, EP_PTRS_EX, EP_PTRS_EX_64, EP_COUNT } entry;
static const char *const entry_names[] = {"gemm_v2", "gemm_v2_64", "GemmEx", "GemmEx_64",
                                          "gemmStridedBatched", "gemmStridedBatched_64",
                                          "GemmStridedBatchedEx", "GemmStridedBatchedEx_64",
                                          "gemmBatched", "gemmBatched_64", "GemmBatchedEx",
                                          "GemmBatchedEx_64"};

/* Unprotected / protected counts since s0 as expected (a failed check named by what). */
static void counted(const stats_t *s0, uint64_t prot, uint64_t unprot, const char *what)
{
    const stats_t s1 = stats_now();
    CHECK(s1.protected_gemms - s0->protected_gemms == prot &&
              s1.unprotected_gemms - s0->unprotected_gemms == unprot,
          "%s: %llu protected, %llu unprotected (expected %llu, %llu)", what,
          (unsigned long long)(s1.protected_gemms - s0->protected_gemms),
          (unsigned long long)(s1.unprotected_gemms - s0->unprotected_gemms),
          (unsigned long long)prot, (unsigned long long)unprot);
}

/* The batched entry points that take device arrays of pointers: the arrays of a strided batch's
 * addresses (base + i stride, elements of es bytes) for A, B and C in one device buffer. */
typedef struct ptr_arrays {
    void **dev;
    const void *const *a, *const *b;
    void *const *c;
} ptr_arrays;

static ptr_arrays make_arrays(const void *A, long long sa, const void *B, long long sb, void *C,
                              long long sc, size_t es, int b)
{
    ptr_arrays p = {NULL, NULL, NULL, NULL};
    const size_t n = (size_t)(b > 0 ? b : 1);
    void **h = malloc(3 * n * sizeof *h);
    for (size_t i = 0; i < n; i++) {
        h[i] = (char *)A + es * (size_t)sa * i;
        h[n + i] = (char *)B + es * (size_t)sb * i;
        h[2 * n + i] = (char *)C + es * (size_t)sc * i;
    }
    cudaMalloc((void **)&p.dev, 3 * n * sizeof *h);
    cudaMemcpy(p.dev, h, 3 * n * sizeof *h, cudaMemcpyHostToDevice);
    free(h);
    p.a = (const void *const *)p.dev;
    p.b = (const void *const *)(p.dev + n);
    p.c = p.dev + 2 * n;
    return p;
}

/* cublasGemmBatchedEx and _64 on the arrays (any data type dt) */
static cublasStatus_t ptrs_ex(cublasHandle_t h, entry e, cublasOperation_t ta, cublasOperation_t tb,
                              int m, int n, int k, const void *alpha, const ptr_arrays *p,
                              cudaDataType dt, int lda, int ldb, const void *beta, int ldc, int b,
                              cublasComputeType_t ct)
{
    if (e == EP_PTRS_EX)
        return cublasGemmBatchedEx(h, ta, tb, m, n, k, alpha, p->a, dt, lda, p->b, dt, ldb, beta,
                                   p->c, dt, ldc, b, ct, CUBLAS_GEMM_DEFAULT);
    if (e == EP_PTRS_EX_64)
        return cublasGemmBatchedEx_64(h, ta, tb, m, n, k, alpha, p->a, dt, lda, p->b, dt, ldb,
                                      beta, p->c, dt, ldc, b, ct, CUBLAS_GEMM_DEFAULT);
    return CUBLAS_STATUS_INVALID_VALUE;
}

/* after the call: the GEMMs may still read the arrays */
static cublasStatus_t free_arrays(ptr_arrays *p, cublasStatus_t st)
{
    cudaDeviceSynchronize();
    cudaFree(p->dev);
    return st;
}

typedef struct gcase {
    int dbl;
    cublasOperation_t ta, tb;
    int m, n, k, lda_pad, batch;
    double alpha, beta;
} gcase;

/* The typed entry points of type X (element type ET): plain, 64-bit, strided and pointer-array
 * batches. The real and the complex suites call them through typed_call. */
#define TYPED_ENTRIES(X, ET)                                                                       \
    static cublasStatus_t call_##X(cublasHandle_t h, entry e, cublasOperation_t ta,                \
                                   cublasOperation_t tb, int m, int n, int k, int b,              \
                                   const void *alpha, const void *A, int lda, long long sa,       \
                                   const void *B, int ldb, long long sb, const void *beta,        \
                                   void *C, int ldc, long long sc)                                 \
    {                                                                                              \
        typedef const ET *const *cpa;                                                              \
        ptr_arrays p;                                                                              \
        switch (e) {                                                                               \
        case EP_V2:                                                                                \
            return cublas##X##gemm_v2(h, ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);   \
        case EP_V2_64:                                                                             \
            return cublas##X##gemm_v2_64(h, ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc); \
        case EP_STRIDED:                                                                           \
            return cublas##X##gemmStridedBatched(h, ta, tb, m, n, k, alpha, A, lda, sa, B, ldb,    \
                                                 sb, beta, C, ldc, sc, b);                         \
        case EP_STRIDED_64:                                                                        \
            return cublas##X##gemmStridedBatched_64(h, ta, tb, m, n, k, alpha, A, lda, sa, B, ldb, \
                                                    sb, beta, C, ldc, sc, b);                      \
        case EP_PTRS:                                                                              \
            p = make_arrays(A, sa, B, sb, C, sc, sizeof(ET), b);                                   \
            return free_arrays(&p, cublas##X##gemmBatched(h, ta, tb, m, n, k, alpha, (cpa)p.a,     \
                                                          lda, (cpa)p.b, ldb, beta,                \
                                                          (ET *const *)p.c, ldc, b));              \
        case EP_PTRS_64:                                                                           \
            p = make_arrays(A, sa, B, sb, C, sc, sizeof(ET), b);                                   \
            return free_arrays(&p, cublas##X##gemmBatched_64(h, ta, tb, m, n, k, alpha, (cpa)p.a,  \
                                                             lda, (cpa)p.b, ldb, beta,             \
                                                             (ET *const *)p.c, ldc, b));           \
        default:                                                                                   \
            return CUBLAS_STATUS_INVALID_VALUE;                                                    \
        }                                                                                          \
    }
TYPED_ENTRIES(S, float)
TYPED_ENTRIES(D, double)
TYPED_ENTRIES(C, cuComplex)
TYPED_ENTRIES(Z, cuDoubleComplex)

/* The GEMM of type X (S, D, C, Z) through entry point e on handle h; data in device memory. */
static cublasStatus_t typed_call(cublasHandle_t h, entry e, char X, cublasOperation_t ta,
                                 cublasOperation_t tb, int m, int n, int k, int b,
                                 const void *alpha, const void *A, int lda, long long sa,
                                 const void *B, int ldb, long long sb, const void *beta, void *C,
                                 int ldc, long long sc)
{
    const int cplx = X == 'C' || X == 'Z', dbl = X == 'D' || X == 'Z';
    const cudaDataType dt = cplx ? (dbl ? CUDA_C_64F : CUDA_C_32F) : (dbl ? CUDA_R_64F : CUDA_R_32F);
    const cublasComputeType_t ct = dbl ? CUBLAS_COMPUTE_64F : CUBLAS_COMPUTE_32F;
    switch (e) {
    case EP_EX:
        return cublasGemmEx(h, ta, tb, m, n, k, alpha, A, dt, lda, B, dt, ldb, beta, C, dt, ldc, ct,
                            CUBLAS_GEMM_DEFAULT);
    case EP_EX_64:
        return cublasGemmEx_64(h, ta, tb, m, n, k, alpha, A, dt, lda, B, dt, ldb, beta, C, dt, ldc,
                               ct, CUBLAS_GEMM_DEFAULT);
    case EP_STRIDED_EX:
        return cublasGemmStridedBatchedEx(h, ta, tb, m, n, k, alpha, A, dt, lda, sa, B, dt, ldb, sb,
                                          beta, C, dt, ldc, sc, b, ct, CUBLAS_GEMM_DEFAULT);
    case EP_STRIDED_EX_64:
        return cublasGemmStridedBatchedEx_64(h, ta, tb, m, n, k, alpha, A, dt, lda, sa, B, dt, ldb,
                                             sb, beta, C, dt, ldc, sc, b, ct, CUBLAS_GEMM_DEFAULT);
    case EP_PTRS_EX:
    case EP_PTRS_EX_64: {
        ptr_arrays p = make_arrays(A, sa, B, sb, C, sc, (size_t)(cplx ? 2 : 1) * (dbl ? 8 : 4), b);
        return free_arrays(&p, ptrs_ex(h, e, ta, tb, m, n, k, alpha, &p, dt, lda, ldb, beta, ldc, b,
                                       ct));
    }
    default:
        break;
    }
    switch (X) {
    case 'S': return call_S(h, e, ta, tb, m, n, k, b, alpha, A, lda, sa, B, ldb, sb, beta, C, ldc, sc);
    case 'D': return call_D(h, e, ta, tb, m, n, k, b, alpha, A, lda, sa, B, ldb, sb, beta, C, ldc, sc);
    case 'C': return call_C(h, e, ta, tb, m, n, k, b, alpha, A, lda, sa, B, ldb, sb, beta, C, ldc, sc);
    default: return call_Z(h, e, ta, tb, m, n, k, b, alpha, A, lda, sa, B, ldb, sb, beta, C, ldc, sc);
    }
}

/* The real suite's GEMM through entry point e; data in device memory. */
static cublasStatus_t call(cublasHandle_t h, entry e, const gcase *g, const void *alpha,
                           const void *A, int lda, long long sa, const void *B, int ldb,
                           long long sb, const void *beta, void *C, int ldc, long long sc)
{
    return typed_call(h, e, g->dbl ? 'D' : 'S', g->ta, g->tb, g->m, g->n, g->k, g->batch, alpha, A,
                      lda, sa, B, ldb, sb, beta, C, ldc, sc);
}

static int is_batched(entry e) { return e >= EP_STRIDED; }

/* Host data of one case, the reference and the error bound per element. */
typedef struct run {
    double *A, *B, *C0, *ref, *bound;
    int lda, ldb, ldc;
    long long sa, sb, sc;
    size_t na, nb, nc; /* elements per batch item */
} run;

/* A complex case (scalars re, im); in a tcase it carries a real one too, imaginary parts 0. */
typedef struct zcase {
    int dbl;
    cublasOperation_t ta, tb;
    int m, n, k, lda_pad, batch;
    double alpha[2], beta[2];
} zcase;

/* A case of either half as the steps they share see it: c, the type X (S, D, C, Z) and w values
 * per element (1 real, 2 complex: re, im interleaved). */
typedef struct tcase {
    zcase c;
    char X;
    int w;
} tcase;

static tcase gview(const gcase *g)
{
    const zcase c = {g->dbl, g->ta, g->tb, g->m, g->n, g->k, g->lda_pad, g->batch, {g->alpha, 0},
                     {g->beta, 0}};
    return (tcase){c, g->dbl ? 'D' : 'S', 1};
}

/* The leading dimensions (lda_pad above the least), sizes and strides of case t in r, and its
 * random host data; ref and bound allocated for the reference. */
static void layout(run *r, const tcase *t)
{
    const zcase *g = &t->c;
    int ar = g->ta == CUBLAS_OP_N ? g->m : g->k, ac = g->ta == CUBLAS_OP_N ? g->k : g->m;
    int br = g->tb == CUBLAS_OP_N ? g->k : g->n, bc = g->tb == CUBLAS_OP_N ? g->n : g->k;
    r->lda = (ar > 1 ? ar : 1) + g->lda_pad;
    r->ldb = (br > 1 ? br : 1) + g->lda_pad;
    r->ldc = (g->m > 1 ? g->m : 1) + g->lda_pad;
    r->na = (size_t)r->lda * (ac > 0 ? ac : 1);
    r->nb = (size_t)r->ldb * (bc > 0 ? bc : 1);
    r->nc = (size_t)r->ldc * (g->n > 0 ? g->n : 1);
    r->sa = (long long)r->na, r->sb = (long long)r->nb, r->sc = (long long)r->nc;
    const size_t B = (size_t)g->batch, w = (size_t)t->w;
    r->A = malloc(sizeof(double) * w * r->na * B);
    r->B = malloc(sizeof(double) * w * r->nb * B);
    r->C0 = malloc(sizeof(double) * w * r->nc * B);
    r->ref = malloc(sizeof(double) * w * r->nc * B);
    r->bound = malloc(sizeof(double) * r->nc * B);
    /* values exactly representable in float, so both precisions see the same data */
    for (size_t i = 0; i < w * r->na * B; i++) r->A[i] = (float)urand();
    for (size_t i = 0; i < w * r->nb * B; i++) r->B[i] = (float)urand();
    for (size_t i = 0; i < w * r->nc * B; i++) r->C0[i] = (float)urand();
}

/* The real reference in long double and its bound 2 (k + 3) u (|alpha| sum |a b| + |beta c|). */
static void reference(run *r, const zcase *g)
{
    const size_t B = (size_t)g->batch;
    const double u = g->dbl ? 0x1p-53 : 0x1p-24, alpha = g->alpha[0], beta = g->beta[0];
    for (size_t b = 0; b < B; b++) {
        const double *A = r->A + b * r->na, *Bm = r->B + b * r->nb, *C0 = r->C0 + b * r->nc;
        for (int j = 0; j < g->n; j++)
            for (int i = 0; i < g->m; i++) {
                long double s = 0, sa = 0;
                for (int l = 0; l < g->k; l++) {
                    double a = g->ta == CUBLAS_OP_N ? A[i + (size_t)l * r->lda] : A[l + (size_t)i * r->lda];
                    double x = g->tb == CUBLAS_OP_N ? Bm[l + (size_t)j * r->ldb] : Bm[j + (size_t)l * r->ldb];
                    s += (long double)a * x;
                    sa += fabsl((long double)a * x);
                }
                size_t o = b * r->nc + i + (size_t)j * r->ldc;
                r->ref[o] = (double)(alpha * s + beta * C0[i + (size_t)j * r->ldc]);
                r->bound[o] = 2.0 * (g->k + 3) * u *
                                  (double)(fabs(alpha) * sa + fabs(beta * C0[i + (size_t)j * r->ldc])) +
                              1e-300;
            }
    }
}

static void zreference(run *r, const zcase *g); /* with the complex half */

/* The host data of case t and the reference of its type. */
static void make_case(run *r, const tcase *t)
{
    layout(r, t);
    if (t->w == 2)
        zreference(r, &t->c);
    else
        reference(r, &t->c);
}

static void make(run *r, const gcase *g)
{
    const tcase t = gview(g);
    make_case(r, &t);
}

static void release(run *r)
{
    free(r->A); free(r->B); free(r->C0); free(r->ref); free(r->bound);
}

/* Worst |C - ref| / bound over the batch (> 1: wrong; complex: the modulus). Also checks the
 * padding is untouched. */
static double worst_error(const run *r, const tcase *t, const void *dC)
{
    const zcase *g = &t->c;
    const size_t es = g->dbl ? 8 : 4, w = (size_t)t->w, n = w * r->nc * (size_t)g->batch;
    void *h = malloc(es * (n ? n : 1));
    if (cudaMemcpy(h, dC, es * n, cudaMemcpyDeviceToHost) != cudaSuccess) {
        free(h);
        return INFINITY; /* nothing to judge: never a pass */
    }
    double worst = 0;
    for (size_t b = 0; b < (size_t)g->batch; b++)
        for (int j = 0; j < g->n; j++)
            for (int i = 0; i < r->ldc; i++) {
                const size_t o = b * r->nc + i + (size_t)j * r->ldc;
                const double *ref = r->ref + w * o, *c0 = r->C0 + w * o;
                double v[2] = {0, 0};
                for (size_t c = 0; c < w; c++)
                    v[c] = g->dbl ? ((double *)h)[w * o + c] : ((float *)h)[w * o + c];
                double q;
                if (i < g->m)
                    q = (w == 1 ? fabs(v[0] - ref[0]) : hypot(v[0] - ref[0], v[1] - ref[1])) /
                        r->bound[o];
                else
                    q = v[0] == c0[0] && (w == 1 || v[1] == c0[1]) ? 0 : INFINITY;
                if (!(q <= worst))
                    worst = isnan(q) ? INFINITY : q;
            }
    free(h);
    return worst;
}

static double compare(const run *r, const gcase *g, const void *dC)
{
    const tcase t = gview(g);
    return worst_error(r, &t, dC);
}

/* The scalars of t in its type, in host memory (dev = 0) or device memory (dev = 1). */
static void scalars(const tcase *t, int dev, float sf[4], double sd[4], void **dscal,
                    const void **alpha, const void **beta)
{
    const zcase *g = &t->c;
    for (int i = 0; i < t->w; i++) {
        sd[i] = g->alpha[i], sd[t->w + i] = g->beta[i];
        sf[i] = (float)g->alpha[i], sf[t->w + i] = (float)g->beta[i];
    }
    const void *src = g->dbl ? (const void *)sd : (const void *)sf;
    const size_t half = (g->dbl ? 8 : 4) * (size_t)t->w;
    *dscal = NULL;
    if (dev) {
        cudaMalloc(dscal, 2 * half);
        cudaMemcpy(*dscal, src, 2 * half, cudaMemcpyHostToDevice);
        src = *dscal;
    }
    *alpha = src;
    *beta = (const char *)src + half;
}

/* Case t through entry e on fresh data, scalars on the device where dev, faults planted first
 * where plant: the status, the counters around the call (s0, s1) and the worst error (*q). */
static cublasStatus_t run_case(cublasHandle_t h, entry e, const tcase *t, int dev, int plant,
                               stats_t *s0, stats_t *s1, double *q)
{
    const zcase *g = &t->c;
    run r;
    make_case(&r, t);
    const size_t w = (size_t)t->w, B = (size_t)g->batch;
    void *dA = to_device(r.A, w * r.na * B, g->dbl), *dB = to_device(r.B, w * r.nb * B, g->dbl);
    void *dC = to_device(r.C0, w * r.nc * B, g->dbl);
    float sf[4];
    double sd[4];
    void *dscal;
    const void *alpha, *beta;
    scalars(t, dev, sf, sd, &dscal, &alpha, &beta);
    if (dev)
        cublasSetPointerMode_v2(h, CUBLAS_POINTER_MODE_DEVICE);
    *s0 = stats_now();
    if (plant)
        CHECK(plant_fault(g->batch, 100, 200, g->dbl ? 61 : 29) == 0, "plant_fault");
    const cublasStatus_t st = typed_call(h, e, t->X, g->ta, g->tb, g->m, g->n, g->k, g->batch,
                                         alpha, dA, r.lda, r.sa, dB, r.ldb, r.sb, beta, dC, r.ldc,
                                         r.sc);
    *s1 = stats_now();
    if (dev)
        cublasSetPointerMode_v2(h, CUBLAS_POINTER_MODE_HOST);
    *q = worst_error(&r, t, dC);
    cudaFree(dA); cudaFree(dB); cudaFree(dC); cudaFree(dscal);
    release(&r);
    return st;
}

/* One case through entry e, of either half: status, result, the GEMMs counted protected (where
 * expected and k > 0) or unprotected, no false positive. Returns the number protected. */
static int one_case(cublasHandle_t h, entry e, tcase t, int device_scalars, int expect_protected)
{
    zcase *g = &t.c;
    if (!is_batched(e))
        g->batch = 1;
    stats_t s0, s1;
    double q;
    const cublasStatus_t st = run_case(h, e, &t, device_scalars, 0, &s0, &s1, &q);
    const int gemms = g->m && g->n ? g->batch : 0, prot = expect_protected && g->k ? gemms : 0;
    /* cuBLAS 13 itself answers NOT_SUPPORTED to cublasGemmBatchedEx on C data with k = 0 (seen
     * with BLASFT_MODE=off, where the call goes straight to it); k = 0 is passed on, and so is
     * that answer */
    const int lib_refuses = t.X == 'C' && (e == EP_PTRS_EX || e == EP_PTRS_EX_64) && g->k == 0 &&
                            st == CUBLAS_STATUS_NOT_SUPPORTED;
    char what[160];
    snprintf(what, sizeof what, "%s %c %c%c %dx%dx%d lda+%d batch %d dev %d", entry_names[e], t.X,
             "NTC"[g->ta], "NTC"[g->tb], g->m, g->n, g->k, g->lda_pad, g->batch, device_scalars);
    CHECK(st == CUBLAS_STATUS_SUCCESS || lib_refuses, "%s: status %d", what, (int)st);
    CHECK(lib_refuses || q <= 1.0, "%s: error %.3g x bound", what, q);
    CHECK(s1.protected_gemms - s0.protected_gemms == (uint64_t)prot,
          "%s: %llu protected, expected %d", what,
          (unsigned long long)(s1.protected_gemms - s0.protected_gemms), prot);
    CHECK(s1.unprotected_gemms - s0.unprotected_gemms == (uint64_t)(gemms - prot),
          "%s: %llu unprotected, expected %d", what,
          (unsigned long long)(s1.unprotected_gemms - s0.unprotected_gemms), gemms - prot);
    CHECK(s1.errors_detected == s0.errors_detected, "%s: false positive", what);
    return prot;
}

/* A real case through entry e (one_case). */
static int one(cublasHandle_t h, entry e, gcase g, int device_scalars, int expect_protected)
{
    return one_case(h, e, gview(&g), device_scalars, expect_protected);
}

static const gcase shapes[] = {
    {0, CUBLAS_OP_N, CUBLAS_OP_N, 1, 1, 1, 0, 1, 1.0, 0.0},
    {0, CUBLAS_OP_N, CUBLAS_OP_N, 37, 53, 29, 0, 3, 1.5, -0.5},
    {0, CUBLAS_OP_T, CUBLAS_OP_N, 300, 257, 129, 5, 2, -1.0, 1.0},
    {0, CUBLAS_OP_N, CUBLAS_OP_T, 131, 1, 200, 2, 2, 0.75, 0.0},
    {0, CUBLAS_OP_C, CUBLAS_OP_T, 1, 97, 130, 0, 2, 1.0, 2.0},
    {0, CUBLAS_OP_N, CUBLAS_OP_N, 64, 64, 0, 0, 2, 1.0, 0.5},  /* k = 0: C = beta C */
    {0, CUBLAS_OP_N, CUBLAS_OP_N, 0, 17, 5, 0, 2, 1.0, 0.5},   /* empty */
};

/* Faults planted after the main GEMM of case t (either half) must be detected and corrected;
 * C ends as without them. */
static void planted_case(cublasHandle_t h, entry e, tcase t)
{
    zcase *g = &t.c;
    if (!is_batched(e))
        g->batch = 1;
    stats_t s0, s1;
    double q;
    const cublasStatus_t st = run_case(h, e, &t, 0, 1, &s0, &s1, &q);
    char what[160];
    snprintf(what, sizeof what, "planted %s %c %c%c %dx%dx%d batch %d", entry_names[e], t.X,
             "NTC"[g->ta], "NTC"[g->tb], g->m, g->n, g->k, g->batch);
    CHECK(st == CUBLAS_STATUS_SUCCESS, "%s: status %d", what, (int)st);
    CHECK(s1.faults_injected - s0.faults_injected == (uint64_t)g->batch, "%s: %llu injected", what,
          (unsigned long long)(s1.faults_injected - s0.faults_injected));
    CHECK(s1.errors_detected > s0.errors_detected, "%s: not detected", what);
    CHECK(s1.errors_corrected + s1.blocks_recomputed - s0.errors_corrected - s0.blocks_recomputed >=
              (uint64_t)g->batch, "%s: not corrected", what);
    CHECK(q <= 1.0, "%s: result off by %.3g x bound", what, q);
}

static void planted(cublasHandle_t h, entry e, int dbl, int batch)
{
    const gcase g = {dbl, CUBLAS_OP_N, CUBLAS_OP_T, 300, 257, 129, 3, batch, 1.0, 0.5};
    planted_case(h, e, gview(&g));
}

/* Capture and replay of a GEMM on a stream; warm: one GEMM of the shape ran there before. Cold,
 * the stream's context is made during the capture (allocations only); before 2026-11-27 such a
 * GEMM passed through unprotected. */
static void captured(cublasHandle_t h, int warm, int expect_protected)
{
    gcase g = {0, CUBLAS_OP_N, CUBLAS_OP_N, 200, 150, 170, 0, 1, 1.0, 0.0};
    run r;
    make(&r, &g);
    void *dA = to_device(r.A, r.na, 0), *dB = to_device(r.B, r.nb, 0), *dC = to_device(r.C0, r.nc, 0);
    float one_ = 1.0f, zero = 0.0f;
    cudaStream_t s;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    cublasSetStream_v2(h, s);
    if (warm)
        cublasSgemm_v2(h, CUBLAS_OP_N, CUBLAS_OP_N, g.m, g.n, g.k, &one_, dA, r.lda, dB, r.ldb,
                       &zero, dC, r.ldc);
    cudaStreamSynchronize(s);
    stats_t s0 = stats_now();
    cudaGraph_t graph = NULL;
    cudaGraphExec_t exec = NULL;
    CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal) == cudaSuccess, "begin capture");
    cublasStatus_t st = cublasSgemm_v2(h, CUBLAS_OP_N, CUBLAS_OP_N, g.m, g.n, g.k, &one_, dA,
                                       r.lda, dB, r.ldb, &zero, dC, r.ldc);
    cudaError_t ce = cudaStreamEndCapture(s, &graph);
    CHECK(st == CUBLAS_STATUS_SUCCESS && ce == cudaSuccess, "capture (warm %d): %d %s", warm,
          (int)st, cudaGetErrorString(ce));
    if (ce == cudaSuccess) {
        cudaMemset(dC, 0, sizeof(float) * r.nc);
        CHECK(cudaGraphInstantiate(&exec, graph, 0) == cudaSuccess, "instantiate");
        for (int i = 0; i < 2; i++)
            CHECK(cudaGraphLaunch(exec, s) == cudaSuccess, "launch");
        cudaStreamSynchronize(s);
        stats_t s1 = stats_now();
        double q = compare(&r, &g, dC);
        CHECK(q <= 1.0, "replayed GEMM (warm %d): error %.3g x bound", warm, q);
        uint64_t prot = s1.protected_gemms - s0.protected_gemms;
        CHECK(prot == (uint64_t)(expect_protected ? 2 : 0), "replay (warm %d): %llu protected",
              warm, (unsigned long long)prot);
        CHECK(s1.unprotected_gemms - s0.unprotected_gemms == (uint64_t)(expect_protected ? 0 : 1),
              "capture (warm %d): unprotected count", warm);
        cudaGraphExecDestroy(exec);
        cudaGraphDestroy(graph);
    }
    cublasSetStream_v2(h, NULL);
    cudaStreamDestroy(s);
    cudaFree(dA); cudaFree(dB); cudaFree(dC);
    release(&r);
}

/* Captures the GEMM g through gemm_v2 (double scalars sc) on stream s, the handle's stream, into
 * a graph, and instantiates it; 1 where every step succeeded. */
static int capture_gemm(cublasHandle_t h, cudaStream_t s, const gcase *g, const double sc[2],
                        const void *A, int lda, const void *B, int ldb, void *C, int ldc,
                        cudaGraph_t *graph, cudaGraphExec_t *exec)
{
    *graph = NULL;
    *exec = NULL;
    if (cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal) != cudaSuccess)
        return 0;
    const cublasStatus_t st = call(h, EP_V2, g, &sc[0], A, lda, 0, B, ldb, 0, &sc[1], C, ldc, 0);
    return cudaStreamEndCapture(s, graph) == cudaSuccess && st == CUBLAS_STATUS_SUCCESS &&
           cudaGraphInstantiate(exec, *graph, 0) == cudaSuccess;
}

/* Destroys an instance and its graph (if given), then runs the uncaptured GEMM g (double
 * scalars) on h until at least `enough` bytes of device memory come back (CUDA tells the library
 * of a graph's end asynchronously; its next call releases what no graph holds any more), 2 s at
 * most; returns the MiB that came back. */
static double graph_gone_mib(cublasHandle_t h, cudaGraphExec_t exec, cudaGraph_t graph,
                             const gcase *g, const double sc[2], const void *A, int lda,
                             const void *B, int ldb, void *C, int ldc, size_t enough)
{
    size_t held = 0, now = 0, total = 0;
    cudaMemGetInfo(&held, &total);
    cudaGraphExecDestroy(exec);
    if (graph)
        cudaGraphDestroy(graph);
    for (int i = 0; i < 100; i++) {
        call(h, EP_V2, g, &sc[0], A, lda, 0, B, ldb, 0, &sc[1], C, ldc, 0);
        cudaDeviceSynchronize();
        cudaMemGetInfo(&now, &total);
        if (now > held + enough)
            break;
        usleep(20000);
    }
    return ((double)now - (double)held) / 1048576.0;
}

/* A graph captured with a protected GEMM, then a larger GEMM outside the capture on the same
 * stream. The graph bakes in the workspace of its context, so the larger GEMM must neither grow
 * (reallocate) that workspace nor share it (the graph may be replayed on any stream). Before, it
 * grew it: the replays then wrote their checksums into freed memory, which the application may
 * have got back (here: buffers allocated after it, their pattern checked). Once the graph and
 * its instance are destroyed, the context they held is released. */
static void captured_then_grown(cublasHandle_t h, int prot)
{
    const gcase gs = {1, CUBLAS_OP_N, CUBLAS_OP_N, 200, 150, 170, 0, 1, 1.0, 0.0};
    const gcase gl = {1, CUBLAS_OP_T, CUBLAS_OP_N, 700, 600, 500, 1, 1, 1.0, 0.5};
    run rs, rl;
    make(&rs, &gs);
    make(&rl, &gl);
    void *sA = to_device(rs.A, rs.na, 1), *sB = to_device(rs.B, rs.nb, 1), *sC = to_device(rs.C0, rs.nc, 1);
    void *lA = to_device(rl.A, rl.na, 1), *lB = to_device(rl.B, rl.nb, 1), *lC = to_device(rl.C0, rl.nc, 1);
    const double sc[2] = {gs.alpha, gs.beta}, lc[2] = {gl.alpha, gl.beta};
    cudaStream_t s;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    cublasSetStream_v2(h, s);
    CHECK(call(h, EP_V2, &gs, &sc[0], sA, rs.lda, 0, sB, rs.ldb, 0, &sc[1], sC, rs.ldc, 0) ==
              CUBLAS_STATUS_SUCCESS, "grown: warm-up");
    cudaStreamSynchronize(s);
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    CHECK(capture_gemm(h, s, &gs, sc, sA, rs.lda, sB, rs.ldb, sC, rs.ldc, &graph, &exec),
          "grown: the GEMM captured and instantiated");
    if (!exec) {
        fprintf(stderr, "grown: no graph, the rest skipped\n");
        return;
    }
    stats_t s0 = stats_now();
    CHECK(call(h, EP_V2, &gl, &lc[0], lA, rl.lda, 0, lB, rl.ldb, 0, &lc[1], lC, rl.ldc, 0) ==
              CUBLAS_STATUS_SUCCESS, "grown: the larger GEMM");
    cudaStreamSynchronize(s);
    const double ql = compare(&rl, &gl, lC);
    CHECK(ql <= 1.0, "grown: the larger GEMM off by %.3g x bound", ql);
    /* memory the application allocates next, in sizes around any workspace given up */
    enum { FILL = 24 };
    void *fill[FILL];
    size_t fill_bytes[FILL];
    for (int i = 0; i < FILL; i++) {
        fill_bytes[i] = ((size_t)64 << 10) << (i / 2);
        fill[i] = NULL;
        if (cudaMalloc(&fill[i], fill_bytes[i]) == cudaSuccess)
            cudaMemset(fill[i], 0xa5, fill_bytes[i]);
        else
            fill[i] = NULL;
    }
    cudaGetLastError();
    /* NaN: a replay that did not run leaves C wrong */
    CHECK(cudaMemset(sC, 0xff, sizeof(double) * rs.nc) == cudaSuccess && cudaDeviceSynchronize() ==
              cudaSuccess, "grown: C cleared");
    for (int i = 0; i < 2; i++)
        CHECK(cudaGraphLaunch(exec, s) == cudaSuccess, "grown: replay %d", i);
    cudaStreamSynchronize(s);
    const double qs = compare(&rs, &gs, sC);
    CHECK(qs <= 1.0, "grown: the replayed GEMM off by %.3g x bound", qs);
    size_t touched = 0;
    unsigned char *back = malloc(fill_bytes[FILL - 1]);
    for (int i = 0; i < FILL; i++) {
        if (!fill[i])
            continue;
        cudaMemcpy(back, fill[i], fill_bytes[i], cudaMemcpyDeviceToHost);
        for (size_t b = 0; b < fill_bytes[i]; b++)
            touched += back[b] != 0xa5;
        cudaFree(fill[i]);
    }
    free(back);
    CHECK(touched == 0, "grown: the replays wrote %zu bytes of the application's memory", touched);
    stats_t s1 = stats_now();
    CHECK(s1.protected_gemms - s0.protected_gemms == (uint64_t)(prot ? 3 : 0) &&
              s1.unprotected_gemms - s0.unprotected_gemms == (uint64_t)(prot ? 0 : 1),
          "grown: %llu protected, %llu unprotected",
          (unsigned long long)(s1.protected_gemms - s0.protected_gemms),
          (unsigned long long)(s1.unprotected_gemms - s0.unprotected_gemms));
    const double back_mib = graph_gone_mib(h, exec, graph, &gs, sc, sA, rs.lda, sB, rs.ldb, sC,
                                           rs.ldc, (size_t)1 << 20);
    printf("captured then grown: replays right (%.3g x bound), %zu bytes touched, %.1f MiB back "
           "after the graph was destroyed\n", qs, touched, back_mib);
    if (prot)
        CHECK(back_mib > 1.0, "grown: the graph's context not released (%.1f MiB back)", back_mib);
    cublasSetStream_v2(h, NULL);
    cudaStreamDestroy(s);
    cudaFree(sA); cudaFree(sB); cudaFree(sC);
    cudaFree(lA); cudaFree(lB); cudaFree(lC);
    release(&rs);
    release(&rl);
}

/* An instance updated (cudaGraphExecUpdate) to the nodes of a graph captured on another stream,
 * whose context is not the instance's own: CUDA's user objects go with the nodes (the new source
 * graph's references replace the instance's), so that context must outlive the graph it was
 * captured into and stay until the instance is destroyed, even where an uncaptured GEMM on that
 * stream retired it and the graph is gone. The replays then compute the second graph's product,
 * protected, and the context comes back once the instance is destroyed. */
static void exec_updated(cublasHandle_t h, int prot)
{
    const gcase g = {1, CUBLAS_OP_N, CUBLAS_OP_N, 200, 150, 170, 0, 1, 1.0, 0.0};
    run r1, r2;
    make(&r1, &g);
    make(&r2, &g);
    void *A1 = to_device(r1.A, r1.na, 1), *B1 = to_device(r1.B, r1.nb, 1), *C1 = to_device(r1.C0, r1.nc, 1);
    void *A2 = to_device(r2.A, r2.na, 1), *B2 = to_device(r2.B, r2.nb, 1), *C2 = to_device(r2.C0, r2.nc, 1);
    const double sc[2] = {g.alpha, g.beta};
    cudaStream_t s1, s2;
    cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking);
    cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking);
    cudaGraph_t g1 = NULL, g2 = NULL;
    cudaGraphExec_t e1 = NULL, e2 = NULL;
    int ok = 1;
    for (int i = 0; i < 2 && ok; i++) { /* each stream warmed, then captured */
        cudaStream_t s = i ? s2 : s1;
        cublasSetStream_v2(h, s);
        ok = call(h, EP_V2, &g, &sc[0], i ? A2 : A1, r1.lda, 0, i ? B2 : B1, r1.ldb, 0, &sc[1],
                  i ? C2 : C1, r1.ldc, 0) == CUBLAS_STATUS_SUCCESS &&
             cudaStreamSynchronize(s) == cudaSuccess &&
             capture_gemm(h, s, &g, sc, i ? A2 : A1, r1.lda, i ? B2 : B1, r1.ldb, i ? C2 : C1,
                          r1.ldc, i ? &g2 : &g1, i ? &e2 : &e1);
    }
    CHECK(ok, "exec update: both GEMMs captured and instantiated");
    cudaGraphExecUpdateResultInfo info;
    const cudaError_t up = ok ? cudaGraphExecUpdate(e1, g2, &info) : cudaErrorUnknown;
    cudaGetLastError();
    if (!ok || up != cudaSuccess) {
        /* nothing of the hazard: the instance keeps its own nodes */
        printf("exec update: not applied (%s), nothing to test\n", cudaGetErrorString(up));
    } else {
        cudaGraphExecDestroy(e2);
        cudaGraphDestroy(g1);
        cudaGraphDestroy(g2);
        e2 = NULL;
        g1 = g2 = NULL;
        /* uncaptured GEMMs on the second stream: its captured context is retired, and released
         * there as soon as nothing holds it */
        for (int i = 0; i < 10; i++) {
            call(h, EP_V2, &g, &sc[0], A1, r1.lda, 0, B1, r1.ldb, 0, &sc[1], C1, r1.ldc, 0);
            cudaStreamSynchronize(s2);
            usleep(20000);
        }
        CHECK(cudaMemset(C2, 0xff, sizeof(double) * r2.nc) == cudaSuccess &&
                  cudaDeviceSynchronize() == cudaSuccess, "exec update: C cleared");
        stats_t s0 = stats_now();
        for (int i = 0; i < 2; i++)
            CHECK(cudaGraphLaunch(e1, s1) == cudaSuccess, "exec update: replay %d", i);
        const cudaError_t done = cudaStreamSynchronize(s1);
        CHECK(done == cudaSuccess, "exec update: replays failed: %s", cudaGetErrorString(done));
        const double q = compare(&r2, &g, C2);
        CHECK(q <= 1.0, "exec update: the replayed GEMM off by %.3g x bound", q);
        stats_t s1c = stats_now();
        CHECK(s1c.protected_gemms - s0.protected_gemms == (uint64_t)(prot ? 2 : 0),
              "exec update: %llu replays protected",
              (unsigned long long)(s1c.protected_gemms - s0.protected_gemms));
        CHECK(s1c.errors_detected == s0.errors_detected, "exec update: false positive");
        const double back = graph_gone_mib(h, e1, NULL, &g, sc, A1, r1.lda, B1, r1.ldb, C1, r1.ldc,
                                           (size_t)1 << 20);
        e1 = NULL;
        printf("exec update: replays right (%.3g x bound), %.1f MiB back after the instance was "
               "destroyed\n", q, back);
        if (prot)
            CHECK(back > 1.0, "exec update: the context not released (%.1f MiB back)", back);
    }
    if (e1)
        cudaGraphExecDestroy(e1);
    if (e2)
        cudaGraphExecDestroy(e2);
    if (g1)
        cudaGraphDestroy(g1);
    if (g2)
        cudaGraphDestroy(g2);
    cublasSetStream_v2(h, NULL);
    cudaStreamDestroy(s1);
    cudaStreamDestroy(s2);
    cudaFree(A1); cudaFree(B1); cudaFree(C1);
    cudaFree(A2); cudaFree(B2); cudaFree(C2);
    release(&r1);
    release(&r2);
}

/* A thread captures a protected GEMM into a graph on a stream of its own and ends; the graph is
 * replayed afterwards by another thread. The context the graph baked in must outlive the thread
 * (its end releases the thread's contexts) and be released once the graph is destroyed. */
typedef struct ended_capture {
    cublasHandle_t h;
    const gcase *g;
    const run *r;
    void *dA, *dB, *dC;
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    int ok;
} ended_capture;

static void *capture_and_end(void *p)
{
    ended_capture *e = p;
    const double sc[2] = {e->g->alpha, e->g->beta};
    cudaStream_t s;
    if (cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) != cudaSuccess)
        return NULL;
    cublasSetStream_v2(e->h, s);
    e->ok = capture_gemm(e->h, s, e->g, sc, e->dA, e->r->lda, e->dB, e->r->ldb, e->dC, e->r->ldc,
                         &e->graph, &e->exec);
    cublasSetStream_v2(e->h, NULL);
    cudaStreamDestroy(s);
    return NULL;
}

static void captured_by_ended_thread(cublasHandle_t h, int prot)
{
    const gcase g = {1, CUBLAS_OP_N, CUBLAS_OP_T, 220, 130, 190, 0, 1, 1.0, 0.0};
    run r;
    make(&r, &g);
    ended_capture e = {h, &g, &r, to_device(r.A, r.na, 1), to_device(r.B, r.nb, 1),
                       to_device(r.C0, r.nc, 1), NULL, NULL, 0};
    pthread_t th;
    pthread_create(&th, NULL, capture_and_end, &e);
    pthread_join(th, NULL);
    CHECK(e.ok, "ended thread: capture");
    if (!e.ok) {
        release(&r);
        return;
    }
    cudaStream_t s;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    CHECK(cudaMemset(e.dC, 0xff, sizeof(double) * r.nc) == cudaSuccess, "ended thread: C cleared");
    cudaDeviceSynchronize();
    stats_t s0 = stats_now();
    for (int i = 0; i < 2; i++)
        CHECK(cudaGraphLaunch(e.exec, s) == cudaSuccess, "ended thread: replay %d", i);
    cudaStreamSynchronize(s);
    stats_t s1 = stats_now();
    const double q = compare(&r, &g, e.dC);
    CHECK(q <= 1.0, "ended thread: the replayed GEMM off by %.3g x bound", q);
    CHECK(s1.protected_gemms - s0.protected_gemms == (uint64_t)(prot ? 2 : 0),
          "ended thread: %llu replays protected",
          (unsigned long long)(s1.protected_gemms - s0.protected_gemms));
    /* this thread's context for s made first, so that the memory measured is the graph's */
    const double sc[2] = {g.alpha, g.beta};
    cublasSetStream_v2(h, s);
    call(h, EP_V2, &g, &sc[0], e.dA, r.lda, 0, e.dB, r.ldb, 0, &sc[1], e.dC, r.ldc, 0);
    cudaDeviceSynchronize();
    const double back_mib = graph_gone_mib(h, e.exec, e.graph, &g, sc, e.dA, r.lda, e.dB, r.ldb,
                                           e.dC, r.ldc, (size_t)64 << 20);
    printf("captured by an ended thread: replays right (%.3g x bound), %.1f MiB back after the "
           "graph was destroyed\n", q, back_mib);
    if (prot)
        CHECK(back_mib > 64.0, "ended thread: the graph's context not released (%.1f MiB back)",
              back_mib);
    cublasSetStream_v2(h, NULL);
    cudaStreamDestroy(s);
    cudaFree(e.dA); cudaFree(e.dB); cudaFree(e.dC);
    release(&r);
}

/* Arrays of pointers under capture, on a fresh stream: a batch checked as a whole reads them on
 * the device, so it is captured protected (since 2026-11-27, late night: nothing counted at the
 * capture, 3 protected GEMMs per replay); with BLASFT_GPU_BATCHED=each (or protection off) their
 * addresses would have to be read back, which a capture cannot, so the call is captured as
 * cuBLAS's own (counted unprotected at the capture). Each of two replays starts from the old C
 * (beta != 0 reads it) and computes the right C. */
static void captured_arrays(cublasHandle_t h, int prot)
{
    const char *bv = getenv("BLASFT_GPU_BATCHED");
    const int fused = prot && !(bv && strcasecmp(bv, "each") == 0);
    gcase g = {1, CUBLAS_OP_T, CUBLAS_OP_N, 70, 60, 50, 1, 3, 1.0, 0.5};
    run r;
    make(&r, &g);
    void *dA = to_device(r.A, r.na * g.batch, 1), *dB = to_device(r.B, r.nb * g.batch, 1);
    void *dC = to_device(r.C0, r.nc * g.batch, 1), *dC0 = to_device(r.C0, r.nc * g.batch, 1);
    ptr_arrays p = make_arrays(dA, r.sa, dB, r.sb, dC, r.sc, 8, g.batch);
    const double a = g.alpha, b = g.beta;
    cudaStream_t s;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    cublasSetStream_v2(h, s);
    cudaGraph_t graph = NULL;
    cudaGraphExec_t exec = NULL;
    stats_t s0 = stats_now();
    CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal) == cudaSuccess, "begin capture");
    cublasStatus_t st = cublasDgemmBatched(h, g.ta, g.tb, g.m, g.n, g.k, &a,
                                           (const double *const *)p.a, r.lda,
                                           (const double *const *)p.b, r.ldb, &b,
                                           (double *const *)p.c, r.ldc, g.batch);
    cudaError_t ce = cudaStreamEndCapture(s, &graph);
    counted(&s0, 0, fused ? 0 : (uint64_t)g.batch, "captured gemmBatched");
    CHECK(st == CUBLAS_STATUS_SUCCESS && ce == cudaSuccess, "captured gemmBatched: %d %s", (int)st,
          cudaGetErrorString(ce));
    if (ce == cudaSuccess && cudaGraphInstantiate(&exec, graph, 0) == cudaSuccess) {
        for (int i = 0; i < 2; i++) {
            stats_t s1 = stats_now();
            cudaMemcpy(dC, dC0, sizeof(double) * r.nc * g.batch, cudaMemcpyDeviceToDevice);
            CHECK(cudaGraphLaunch(exec, s) == cudaSuccess, "launch");
            cudaStreamSynchronize(s);
            CHECK(compare(&r, &g, dC) <= 1.0, "replayed gemmBatched result (replay %d)", i);
            counted(&s1, fused ? (uint64_t)g.batch : 0, 0, "replayed gemmBatched");
        }
        cudaGraphExecDestroy(exec);
    }
    if (graph)
        cudaGraphDestroy(graph);
    cublasSetStream_v2(h, NULL);
    cudaStreamDestroy(s);
    free_arrays(&p, CUBLAS_STATUS_SUCCESS);
    cudaFree(dA); cudaFree(dB); cudaFree(dC); cudaFree(dC0);
    release(&r);
}

/* ---- complex types (C, Z): the same entry points, complex data ---- */

static tcase zview(const zcase *g) { return (tcase){*g, g->dbl ? 'Z' : 'C', 2}; }

/* The complex reference (re, im interleaved) in long double and a bound per element:
 * 2 (k + 5) u (|alpha| sum |a||b| + |beta||c|), moduli of complex numbers. */
static void zreference(run *r, const zcase *g)
{
    size_t B = (size_t)g->batch;
    double u = g->dbl ? 0x1p-53 : 0x1p-24;
    long double are = g->alpha[0], aim = g->alpha[1], bre = g->beta[0], bim = g->beta[1];
    for (size_t b = 0; b < B; b++) {
        const double *A = r->A + 2 * b * r->na, *Bm = r->B + 2 * b * r->nb;
        const double *C0 = r->C0 + 2 * b * r->nc;
        for (int j = 0; j < g->n; j++)
            for (int i = 0; i < g->m; i++) {
                long double sr = 0, si = 0, mag = 0;
                for (int l = 0; l < g->k; l++) {
                    size_t ia = g->ta == CUBLAS_OP_N ? i + (size_t)l * r->lda : l + (size_t)i * r->lda;
                    size_t ib = g->tb == CUBLAS_OP_N ? l + (size_t)j * r->ldb : j + (size_t)l * r->ldb;
                    long double xr = A[2 * ia], xi = g->ta == CUBLAS_OP_C ? -A[2 * ia + 1] : A[2 * ia + 1];
                    long double yr = Bm[2 * ib], yi = g->tb == CUBLAS_OP_C ? -Bm[2 * ib + 1] : Bm[2 * ib + 1];
                    sr += xr * yr - xi * yi;
                    si += xr * yi + xi * yr;
                    mag += sqrtl((xr * xr + xi * xi) * (yr * yr + yi * yi));
                }
                size_t oc = i + (size_t)j * r->ldc, o = b * r->nc + oc;
                long double cr = C0[2 * oc], ci = C0[2 * oc + 1];
                r->ref[2 * o] = (double)(are * sr - aim * si + bre * cr - bim * ci);
                r->ref[2 * o + 1] = (double)(are * si + aim * sr + bre * ci + bim * cr);
                r->bound[o] = 2.0 * (g->k + 5) * u *
                                  (double)(sqrtl(are * are + aim * aim) * mag +
                                           sqrtl((bre * bre + bim * bim) * (cr * cr + ci * ci))) +
                              1e-300;
            }
    }
}

static void zmake(run *r, const zcase *g)
{
    const tcase t = zview(g);
    make_case(r, &t);
}

/* complex data to the device in its type (C: floats, Z: doubles) */
static void *zto_device(const double *x, size_t n, int dbl) { return to_device(x, 2 * n, dbl); }

static double zcompare(const run *r, const zcase *g, const void *dC)
{
    const tcase t = zview(g);
    return worst_error(r, &t, dC);
}

static void zscalars(const zcase *g, int dev, float sf[4], double sd[4], void **dscal,
                     const void **alpha, const void **beta)
{
    const tcase t = zview(g);
    scalars(&t, dev, sf, sd, dscal, alpha, beta);
}

static void zone(cublasHandle_t h, entry e, zcase g, int device_scalars, int expect_protected)
{
    one_case(h, e, zview(&g), device_scalars, expect_protected);
}

static const zcase zshapes[] = {
    {0, CUBLAS_OP_N, CUBLAS_OP_N, 1, 1, 1, 0, 1, {1.0, 0.0}, {0.0, 0.0}},
    {0, CUBLAS_OP_N, CUBLAS_OP_C, 37, 53, 29, 0, 3, {1.5, -0.5}, {-0.25, 0.75}},
    {0, CUBLAS_OP_T, CUBLAS_OP_N, 300, 257, 129, 5, 2, {-1.0, 0.5}, {1.0, 0.0}},
    {0, CUBLAS_OP_C, CUBLAS_OP_T, 131, 1, 200, 2, 2, {0.75, 0.0}, {0.0, 0.0}},
    {0, CUBLAS_OP_C, CUBLAS_OP_C, 1, 97, 130, 0, 2, {0.0, 1.0}, {0.0, 2.0}},
    {0, CUBLAS_OP_N, CUBLAS_OP_N, 64, 64, 0, 0, 2, {1.0, 0.0}, {0.5, -0.5}}, /* k = 0 */
    {0, CUBLAS_OP_N, CUBLAS_OP_N, 0, 17, 5, 0, 2, {1.0, 0.0}, {0.5, 0.0}},   /* empty */
};

/* A fault planted in the real part of C after the main GEMM must be corrected. */
static void zplanted(cublasHandle_t h, entry e, int dbl, int batch)
{
    const zcase g = {dbl, CUBLAS_OP_C, CUBLAS_OP_N, 300, 257, 129, 3, batch, {1.0, -0.5}, {0.5, 0.25}};
    planted_case(h, e, zview(&g));
}

/* Complex calls the thresholds do not cover (3M algorithm, TF32 compute): correct results,
 * counted unprotected. */
static void zunprotected(cublasHandle_t h)
{
    zcase g = {0, CUBLAS_OP_N, CUBLAS_OP_T, 70, 45, 33, 0, 1, {1.0, 0.5}, {0.0, 0.0}};
    run r;
    zmake(&r, &g);
    void *dA = zto_device(r.A, r.na, 0), *dB = zto_device(r.B, r.nb, 0), *dC = zto_device(r.C0, r.nc, 0);
    float sf[4];
    double sd[4];
    void *dscal;
    const void *alpha, *beta;
    zscalars(&g, 0, sf, sd, &dscal, &alpha, &beta);
    stats_t s0 = stats_now();
    CHECK(cublasCgemm3m(h, g.ta, g.tb, g.m, g.n, g.k, alpha, dA, r.lda, dB, r.ldb, beta, dC,
                        r.ldc) == CUBLAS_STATUS_SUCCESS, "Cgemm3m");
    counted(&s0, 0, 1, "Cgemm3m");
    const stats_t s1 = stats_now();
    /* 3M: other rounding; a loose absolute bound still catches a wrong product */
    double worst = 0;
    {
        cuComplex *hc = malloc(sizeof(cuComplex) * r.nc);
        cudaMemcpy(hc, dC, sizeof(cuComplex) * r.nc, cudaMemcpyDeviceToHost);
        for (int j = 0; j < g.n; j++)
            for (int i = 0; i < g.m; i++) {
                size_t o = i + (size_t)j * r.ldc;
                worst = fmax(worst, hypot(hc[o].x - r.ref[2 * o], hc[o].y - r.ref[2 * o + 1]));
            }
        free(hc);
    }
    CHECK(worst < 1e-3, "Cgemm3m result off by %g", worst);
    CHECK(cublasGemmEx(h, g.ta, g.tb, g.m, g.n, g.k, alpha, dA, CUDA_C_32F, r.lda, dB, CUDA_C_32F,
                       r.ldb, beta, dC, CUDA_C_32F, r.ldc, CUBLAS_COMPUTE_32F_FAST_TF32,
                       CUBLAS_GEMM_DEFAULT) == CUBLAS_STATUS_SUCCESS, "GemmEx C TF32");
    counted(&s1, 0, 1, "GemmEx C TF32");
    const stats_t s2 = stats_now();
    /* 3M by arrays of pointers: two GEMMs, counted unprotected */
    ptr_arrays p = make_arrays(dA, 0, dB, 0, dC, 0, 8, 2);
    CHECK(cublasCgemm3mBatched(h, g.ta, g.tb, g.m, g.n, g.k, alpha, (const cuComplex *const *)p.a,
                               r.lda, (const cuComplex *const *)p.b, r.ldb, beta,
                               (cuComplex *const *)p.c, r.ldc, 2) == CUBLAS_STATUS_SUCCESS,
          "Cgemm3mBatched");
    free_arrays(&p, CUBLAS_STATUS_SUCCESS);
    counted(&s2, 0, 2, "Cgemm3mBatched");
    cudaFree(dA); cudaFree(dB); cudaFree(dC);
    release(&r);
}

/* Declared by cuBLAS for C++ only; 16-bit words stand in for __half (data by pointer). */
cublasStatus_t cublasHgemm(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                           const uint16_t *, const uint16_t *, int, const uint16_t *, int,
                           const uint16_t *, uint16_t *, int);
cublasStatus_t cublasHgemmStridedBatched(cublasHandle_t, cublasOperation_t, cublasOperation_t, int,
                                         int, int, const uint16_t *, const uint16_t *, int,
                                         long long, const uint16_t *, int, long long,
                                         const uint16_t *, uint16_t *, int, long long, int);
cublasStatus_t cublasHgemmBatched(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int,
                                  int, const uint16_t *, const uint16_t *const[], int,
                                  const uint16_t *const[], int, const uint16_t *,
                                  uint16_t *const[], int, int);

/* cublasSgemmEx / cublasCgemmEx (protected where A, B and C are all of their compute type, and
 * SgemmEx where A and B are half), cublasCgemm3mEx and cublasHgemm (16-bit compute: counted
 * unprotected): results against the reference, counts. prot 0: everything unprotected
 * (BLASFT_MODE=off). */
static void typed_ex_and_half(cublasHandle_t h, int prot)
{
    /* SgemmEx on float data: as cublasSgemm_v2 */
    gcase g = {0, CUBLAS_OP_T, CUBLAS_OP_N, 45, 38, 71, 2, 1, 1.5, -0.5};
    run r;
    make(&r, &g);
    void *dA = to_device(r.A, r.na, 0), *dB = to_device(r.B, r.nb, 0), *dC = to_device(r.C0, r.nc, 0);
    const float a = 1.5f, b = -0.5f;
    stats_t s0 = stats_now();
    CHECK(cublasSgemmEx(h, g.ta, g.tb, g.m, g.n, g.k, &a, dA, CUDA_R_32F, r.lda, dB, CUDA_R_32F,
                        r.ldb, &b, dC, CUDA_R_32F, r.ldc) == CUBLAS_STATUS_SUCCESS, "SgemmEx");
    counted(&s0, (uint64_t)prot, (uint64_t)!prot, "SgemmEx float");
    CHECK(compare(&r, &g, dC) <= 1.0, "SgemmEx float result");
    cudaFree(dA); cudaFree(dB); cudaFree(dC);
    release(&r);

    /* CgemmEx on complex float data: as cublasCgemm_v2; Cgemm3mEx: 3M, unprotected */
    zcase z = {0, CUBLAS_OP_N, CUBLAS_OP_C, 33, 41, 57, 1, 1, {1.0, -0.5}, {0.5, 0.25}};
    zmake(&r, &z);
    dA = zto_device(r.A, r.na, 0), dB = zto_device(r.B, r.nb, 0), dC = zto_device(r.C0, r.nc, 0);
    float sf[4];
    double sd[4];
    void *dscal;
    const void *alpha, *beta;
    zscalars(&z, 0, sf, sd, &dscal, &alpha, &beta);
    s0 = stats_now();
    CHECK(cublasCgemmEx(h, z.ta, z.tb, z.m, z.n, z.k, alpha, dA, CUDA_C_32F, r.lda, dB, CUDA_C_32F,
                        r.ldb, beta, dC, CUDA_C_32F, r.ldc) == CUBLAS_STATUS_SUCCESS, "CgemmEx");
    counted(&s0, (uint64_t)prot, (uint64_t)!prot, "CgemmEx");
    CHECK(zcompare(&r, &z, dC) <= 1.0, "CgemmEx result");
    s0 = stats_now();
    CHECK(cublasCgemm3mEx(h, z.ta, z.tb, z.m, z.n, z.k, alpha, dA, CUDA_C_32F, r.lda, dB,
                          CUDA_C_32F, r.ldb, beta, dC, CUDA_C_32F, r.ldc) == CUBLAS_STATUS_SUCCESS,
          "Cgemm3mEx");
    counted(&s0, 0, 1, "Cgemm3mEx");
    cudaFree(dA); cudaFree(dB); cudaFree(dC); cudaFree(dscal);
    release(&r);

    /* half data, all ones: C = k exactly (16 in half is 0x4C00); SgemmEx with half A and B
     * into float C */
    enum { M = 8, N = 6, K = 16, HB = 2 };
    uint16_t ones[HB * M * K], hc[HB * M * N];
    for (int i = 0; i < HB * M * K; i++)
        ones[i] = 0x3C00; /* 1.0 */
    const uint16_t one_h = 0x3C00, zero_h = 0;
    void *dH = NULL, *dHC = NULL, *dF = NULL;
    cudaMalloc(&dH, sizeof ones);
    cudaMalloc(&dHC, sizeof hc);
    cudaMalloc(&dF, sizeof(float) * M * N);
    cudaMemcpy(dH, ones, sizeof ones, cudaMemcpyHostToDevice);
    s0 = stats_now();
    CHECK(cublasHgemm(h, CUBLAS_OP_N, CUBLAS_OP_T, M, N, K, &one_h, dH, M, dH, N, &zero_h, dHC,
                      M) == CUBLAS_STATUS_SUCCESS, "Hgemm");
    counted(&s0, 0, 1, "Hgemm");
    s0 = stats_now();
    CHECK(cublasHgemmStridedBatched(h, CUBLAS_OP_N, CUBLAS_OP_T, M, N, K, &one_h, dH, M, M * K, dH,
                                    N, M * K, &zero_h, dHC, M, M * N, HB) == CUBLAS_STATUS_SUCCESS,
          "HgemmStridedBatched");
    counted(&s0, 0, HB, "HgemmStridedBatched");
    ptr_arrays p = make_arrays(dH, M * K, dH, M * K, dHC, M * N, 2, HB);
    s0 = stats_now();
    CHECK(cublasHgemmBatched(h, CUBLAS_OP_N, CUBLAS_OP_T, M, N, K, &one_h,
                             (const uint16_t *const *)p.a, M, (const uint16_t *const *)p.b, N,
                             &zero_h, (uint16_t *const *)p.c, M, HB) == CUBLAS_STATUS_SUCCESS,
          "HgemmBatched");
    free_arrays(&p, CUBLAS_STATUS_SUCCESS);
    counted(&s0, 0, HB, "HgemmBatched");
    cudaMemcpy(hc, dHC, sizeof hc, cudaMemcpyDeviceToHost);
    int wrong = 0;
    for (int i = 0; i < HB * M * N; i++)
        wrong += hc[i] != 0x4C00;
    CHECK(wrong == 0, "half GEMMs: %d of %d elements not 16", wrong, HB * M * N);
    const float one_f = 1.0f, zero_f = 0.0f;
    s0 = stats_now();
    CHECK(cublasSgemmEx(h, CUBLAS_OP_N, CUBLAS_OP_T, M, N, K, &one_f, dH, CUDA_R_16F, M, dH,
                        CUDA_R_16F, N, &zero_f, dF, CUDA_R_32F, M) == CUBLAS_STATUS_SUCCESS,
          "SgemmEx half");
    counted(&s0, (uint64_t)prot, (uint64_t)!prot, "SgemmEx half"); /* cuda/gpu_lowp.cu */
    float hf[M * N];
    cudaMemcpy(hf, dF, sizeof hf, cudaMemcpyDeviceToHost);
    wrong = 0;
    for (int i = 0; i < M * N; i++)
        wrong += hf[i] != (float)K;
    CHECK(wrong == 0, "SgemmEx half: %d of %d elements not %d", wrong, M * N, K);
    cudaFree(dH); cudaFree(dHC); cudaFree(dF);
}

/* Grouped batches: two groups of different shapes, transposes and scalars (2 and 3 matrices),
 * through cublas{S,D}gemmGroupedBatched, _64 and cublasGemmGroupedBatchedEx against the
 * reference; every matrix one protected GEMM (prot), or all counted unprotected. A grouped Ex
 * call on half data goes to cuBLAS whole, counted unprotected. */
static void grouped(cublasHandle_t h, int prot)
{
    enum { G = 2 };
    for (int variant = 0; variant < 4; variant++) {
        const int dbl = variant % 2; /* 0, 1: S / D by name; 2, 3: Ex with S / D data */
        gcase gc[G] = {{dbl, CUBLAS_OP_N, CUBLAS_OP_T, 37, 29, 41, 2, 2, 1.5, 0.5},
                       {dbl, CUBLAS_OP_T, CUBLAS_OP_N, 20, 33, 17, 0, 3, -1.0, 0.0}};
        run r[G];
        void *dA[G], *dB[G], *dC[G];
        const size_t es = dbl ? 8 : 4;
        void *hp[3][5];
        int at = 0;
        for (int g = 0; g < G; g++) {
            make(&r[g], &gc[g]);
            dA[g] = to_device(r[g].A, r[g].na * gc[g].batch, dbl);
            dB[g] = to_device(r[g].B, r[g].nb * gc[g].batch, dbl);
            dC[g] = to_device(r[g].C0, r[g].nc * gc[g].batch, dbl);
            for (int i = 0; i < gc[g].batch; i++, at++) {
                hp[0][at] = (char *)dA[g] + es * r[g].na * (size_t)i;
                hp[1][at] = (char *)dB[g] + es * r[g].nb * (size_t)i;
                hp[2][at] = (char *)dC[g] + es * r[g].nc * (size_t)i;
            }
        }
        void **dp = NULL;
        cudaMalloc((void **)&dp, sizeof hp);
        for (int q = 0; q < 3; q++)
            cudaMemcpy(dp + 5 * q, hp[q], sizeof hp[q], cudaMemcpyHostToDevice);
        const cublasOperation_t ta[G] = {gc[0].ta, gc[1].ta}, tb[G] = {gc[0].tb, gc[1].tb};
        const int m[G] = {gc[0].m, gc[1].m}, n[G] = {gc[0].n, gc[1].n}, k[G] = {gc[0].k, gc[1].k};
        const int lda[G] = {r[0].lda, r[1].lda}, ldb[G] = {r[0].ldb, r[1].ldb},
                  ldc[G] = {r[0].ldc, r[1].ldc}, size[G] = {gc[0].batch, gc[1].batch};
        const int64_t m64[G] = {m[0], m[1]}, n64[G] = {n[0], n[1]}, k64[G] = {k[0], k[1]},
                      lda64[G] = {lda[0], lda[1]}, ldb64[G] = {ldb[0], ldb[1]},
                      ldc64[G] = {ldc[0], ldc[1]}, size64[G] = {size[0], size[1]};
        const float af[G] = {1.5f, -1.0f}, bf[G] = {0.5f, 0.0f};
        const double ad[G] = {1.5, -1.0}, bd[G] = {0.5, 0.0};
        const cudaDataType dt = dbl ? CUDA_R_64F : CUDA_R_32F;
        const cublasComputeType_t ct = dbl ? CUBLAS_COMPUTE_64F : CUBLAS_COMPUTE_32F;
        const void *const *pa = (const void *const *)dp, *const *pb = (const void *const *)(dp + 5);
        void *const *pc = dp + 10;
        stats_t s0 = stats_now();
        cublasStatus_t st;
        const char *name;
        if (variant == 0) {
            name = "SgemmGroupedBatched";
            st = cublasSgemmGroupedBatched(h, ta, tb, m, n, k, af, (const float *const *)pa, lda,
                                           (const float *const *)pb, ldb, bf, (float *const *)pc,
                                           ldc, G, size);
        } else if (variant == 1) {
            name = "DgemmGroupedBatched_64";
            st = cublasDgemmGroupedBatched_64(h, ta, tb, m64, n64, k64, ad,
                                              (const double *const *)pa, lda64,
                                              (const double *const *)pb, ldb64, bd,
                                              (double *const *)pc, ldc64, G, size64);
        } else if (variant == 2) {
            name = "GemmGroupedBatchedEx S";
            st = cublasGemmGroupedBatchedEx(h, ta, tb, m, n, k, af, pa, dt, lda, pb, dt, ldb, bf,
                                            pc, dt, ldc, G, size, ct);
        } else {
            name = "GemmGroupedBatchedEx_64 D";
            st = cublasGemmGroupedBatchedEx_64(h, ta, tb, m64, n64, k64, ad, pa, dt, lda64, pb, dt,
                                               ldb64, bd, pc, dt, ldc64, G, size64, ct);
        }
        CHECK(st == CUBLAS_STATUS_SUCCESS, "%s: status %d", name, (int)st);
        counted(&s0, prot ? 5 : 0, prot ? 0 : 5, name);
        for (int g = 0; g < G; g++) {
            const double q = compare(&r[g], &gc[g], dC[g]);
            CHECK(q <= 1.0, "%s group %d: error %.3g x bound", name, g, q);
            cudaFree(dA[g]); cudaFree(dB[g]); cudaFree(dC[g]);
            release(&r[g]);
        }
        cudaFree(dp);
    }
    /* half data (all ones, so C = k = 16 exactly, 0x4C00): the whole call to cuBLAS */
    enum { M = 8, N = 6, K = 16 };
    uint16_t ones[M * K], hc[2 * M * N];
    for (int i = 0; i < M * K; i++)
        ones[i] = 0x3C00;
    void *dH = NULL, *dHC = NULL;
    cudaMalloc(&dH, sizeof ones);
    cudaMalloc(&dHC, sizeof hc);
    cudaMemcpy(dH, ones, sizeof ones, cudaMemcpyHostToDevice);
    ptr_arrays p = make_arrays(dH, 0, dH, 0, dHC, M * N, 2, 2);
    const cublasOperation_t ta[2] = {CUBLAS_OP_N, CUBLAS_OP_N}, tb[2] = {CUBLAS_OP_T, CUBLAS_OP_T};
    const int m[2] = {M, M}, n[2] = {N, N}, k[2] = {K, K}, lda[2] = {M, M}, ldb[2] = {N, N},
              ldc[2] = {M, M}, size[2] = {1, 1};
    const float a[2] = {1.0f, 1.0f}, b[2] = {0.0f, 0.0f};
    stats_t s0 = stats_now();
    const cublasStatus_t st = cublasGemmGroupedBatchedEx(h, ta, tb, m, n, k, a, p.a, CUDA_R_16F, lda,
                                                         p.b, CUDA_R_16F, ldb, b, p.c, CUDA_R_16F,
                                                         ldc, 2, size, CUBLAS_COMPUTE_32F);
    free_arrays(&p, CUBLAS_STATUS_SUCCESS);
    counted(&s0, 0, 2, "GemmGroupedBatchedEx half");
    /* this combination may be one cuBLAS does not offer: its answer is passed on */
    CHECK(st == CUBLAS_STATUS_SUCCESS || st == CUBLAS_STATUS_NOT_SUPPORTED,
          "GemmGroupedBatchedEx half: status %d", (int)st);
    if (st == CUBLAS_STATUS_SUCCESS) {
        cudaMemcpy(hc, dHC, sizeof hc, cudaMemcpyDeviceToHost);
        int wrong = 0;
        for (int i = 0; i < 2 * M * N; i++)
            wrong += hc[i] != 0x4C00;
        CHECK(wrong == 0, "GemmGroupedBatchedEx half: %d of %d elements not 16", wrong, 2 * M * N);
    }
    cudaFree(dH); cudaFree(dHC);
}

/* The entry points eps on shapes 1-3, S and D (device scalars on shape 2): a short sweep for a
 * handle made in a new situation (another device, after a reset). */
static void sweep(cublasHandle_t h, const entry *eps, size_t n, int prot)
{
    for (size_t e = 0; e < n; e++)
        for (int dbl = 0; dbl < 2; dbl++)
            for (size_t i = 1; i < 4; i++) {
                gcase g = shapes[i];
                g.dbl = dbl;
                one(h, eps[e], g, (int)(i == 2), prot);
            }
}

/* With two GPUs: a handle on device 1 (the engine's contexts are per device), host and device
 * scalars, planted faults there; then h, on device 0, again. */
static void other_device(cublasHandle_t h, int prot)
{
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess || count < 2) {
        printf("one GPU: the second device's cases skipped\n");
        return;
    }
    CHECK(cudaSetDevice(1) == cudaSuccess, "cudaSetDevice(1)");
    cublasHandle_t h1;
    CHECK(cublasCreate_v2(&h1) == CUBLAS_STATUS_SUCCESS, "cublasCreate on device 1");
    const entry eps[] = {EP_V2, EP_EX, EP_STRIDED, EP_PTRS_EX_64};
    sweep(h1, eps, sizeof eps / sizeof eps[0], prot);
    if (prot) {
        planted(h1, EP_V2, 1, 1);
        planted(h1, EP_STRIDED_EX_64, 0, 3);
        zplanted(h1, EP_EX, 1, 1);
    }
    cublasDestroy_v2(h1);
    CHECK(cudaSetDevice(0) == cudaSuccess, "cudaSetDevice(0)");
    gcase g = shapes[2];
    g.dbl = 1;
    one(h, EP_V2, g, 0, prot);
    if (prot)
        planted(h, EP_V2, 1, 1);
    printf("device 1: done\n");
}

/* Another application thread captures a graph (app_probe.h) while this one runs GEMMs on a
 * new handle and stream of its own (the engine makes its context and workspace then): the GEMMs
 * protected and right, the capture ending in a graph that replays right. Nothing here
 * synchronises until the capture ended, as an application must not. */
static void while_captured(int prot)
{
    enum { N = 3 };
    gcase gs[N] = {shapes[1], shapes[2], {1, CUBLAS_OP_N, CUBLAS_OP_N, 700, 600, 500, 0, 1, 1.0, 0.5}};
    gs[0].dbl = 1;
    run r[N];
    void *dA[N], *dB[N], *dC[N];
    for (int i = 0; i < N; i++) {
        gs[i].batch = 1; /* cublas{S,D}gemm_v2 */
        make(&r[i], &gs[i]);
        dA[i] = to_device(r[i].A, r[i].na, gs[i].dbl);
        dB[i] = to_device(r[i].B, r[i].nb, gs[i].dbl);
        dC[i] = to_device(r[i].C0, r[i].nc, gs[i].dbl);
    }
    cudaStream_t s;
    cublasHandle_t h;
    CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) == cudaSuccess &&
              cublasCreate_v2(&h) == CUBLAS_STATUS_SUCCESS &&
              cublasSetStream_v2(h, s) == CUBLAS_STATUS_SUCCESS,
          "while captured: handle and stream");
    stats_t s0 = stats_now();
    capture_probe probe;
    capture_probe_start(&probe, NULL, NULL);
    for (int i = 0; i < N; i++) {
        double sc[2] = {gs[i].alpha, gs[i].beta};
        float scf[2] = {(float)gs[i].alpha, (float)gs[i].beta};
        const void *al = gs[i].dbl ? (const void *)&sc[0] : (const void *)&scf[0];
        const void *be = gs[i].dbl ? (const void *)&sc[1] : (const void *)&scf[1];
        CHECK(call(h, EP_V2, &gs[i], al, dA[i], r[i].lda, r[i].sa, dB[i], r[i].ldb, r[i].sb, be,
                   dC[i], r[i].ldc, r[i].sc) == CUBLAS_STATUS_SUCCESS,
              "while captured: GEMM %d refused", i);
    }
    const char *fault = capture_probe_finish(&probe);
    CHECK(!fault, "while captured: the other thread's graph failed at %s", fault);
    CHECK(cudaStreamSynchronize(s) == cudaSuccess, "while captured: the GEMMs' stream");
    stats_t s1 = stats_now();
    for (int i = 0; i < N; i++) {
        const double q = compare(&r[i], &gs[i], dC[i]);
        CHECK(q <= 1.0, "while captured: GEMM %d off by %.3g x bound", i, q);
        cudaFree(dA[i]); cudaFree(dB[i]); cudaFree(dC[i]);
        release(&r[i]);
    }
    CHECK(s1.protected_gemms - s0.protected_gemms == (uint64_t)(prot ? N : 0),
          "while captured: %llu protected, expected %d",
          (unsigned long long)(s1.protected_gemms - s0.protected_gemms), prot ? N : 0);
    cublasDestroy_v2(h);
    cudaStreamDestroy(s);
    printf("while captured: done\n");
}

/* The application resets the device (every allocation, stream and handle on it is gone, the
 * interposer's contexts included) and goes on with a new handle: protected, right, planted faults
 * corrected, and the application's new memory untouched. */
static void after_reset(int prot)
{
    CHECK(cudaDeviceReset() == cudaSuccess, "cudaDeviceReset");
    const size_t nb = (size_t)64 << 20;
    unsigned char *own = sentinel_alloc(nb, 0x5a);
    CHECK(own != NULL, "after reset: the application's buffer");
    cublasHandle_t h;
    CHECK(cublasCreate_v2(&h) == CUBLAS_STATUS_SUCCESS, "cublasCreate after reset");
    const entry eps[] = {EP_V2, EP_EX, EP_STRIDED};
    sweep(h, eps, sizeof eps / sizeof eps[0], prot);
    if (prot) {
        planted(h, EP_V2, 1, 1);
        planted(h, EP_STRIDED, 0, 2);
    }
    const size_t bad = sentinel_free(own, nb, 0x5a);
    CHECK(bad == 0, "after reset: %zu bytes of the application's buffer changed", bad);
    cublasDestroy_v2(h);
    printf("after reset: done\n");
}

/* The application holds nearly all device memory (a framework's memory cache) and calls a GEMM
 * of a shape larger than any before, so the interposer's workspace cannot grow: the call must
 * succeed with the right result (protected or passed through, counted either way), and once
 * the memory is back the same call is protected again. */
static void on_full_device(cublasHandle_t h, int prot)
{
    const gcase g = {1, CUBLAS_OP_N, CUBLAS_OP_T, 900, 700, 600, 3, 1, 1.25, 0.5};
    run r;
    make(&r, &g);
    void *dA = to_device(r.A, r.na, 1), *dB = to_device(r.B, r.nb, 1), *dC = to_device(r.C0, r.nc, 1);
    const double alpha = g.alpha, beta = g.beta;
    static void *held[4096];
    for (int round = 0; round < 2; round++) {
        const int nh = round ? 0 : device_fill(held, 4096);
        stats_t s0 = stats_now();
        cublasStatus_t st = call(h, EP_V2, &g, &alpha, dA, r.lda, r.sa, dB, r.ldb, r.sb, &beta, dC,
                                 r.ldc, r.sc);
        const cudaError_t left = cudaGetLastError(); /* the application's view */
        cudaDeviceSynchronize();
        stats_t s1 = stats_now();
        device_unfill(held, nh);
        CHECK(left == cudaSuccess, "%s: the call left the application's last error at %s",
              round ? "memory back" : "full device", cudaGetErrorName(left));
        const double q = compare(&r, &g, dC);
        const uint64_t p1 = s1.protected_gemms - s0.protected_gemms,
                       u1 = s1.unprotected_gemms - s0.unprotected_gemms;
        printf("on a full device (%d buffers held): status %d, %llu protected, %llu unprotected\n",
               nh, (int)st, (unsigned long long)p1, (unsigned long long)u1);
        CHECK(st == CUBLAS_STATUS_SUCCESS && q <= 1.0, "%s: status %d, error %.3g x bound",
              round ? "memory back" : "full device", (int)st, q);
        CHECK(p1 + u1 == 1, "%s: %llu + %llu GEMMs counted", round ? "memory back" : "full device",
              (unsigned long long)p1, (unsigned long long)u1);
        if (round)
            CHECK(p1 == (uint64_t)prot, "memory back: %llu protected, want %d",
                  (unsigned long long)p1, prot);
        cudaMemcpy(dC, r.C0, sizeof(double) * r.nc, cudaMemcpyHostToDevice);
    }
    /* an error the application left pending (a refused allocation of its own) is still its
     * own to read after a protected call, and does not fail that call */
    void *huge = NULL;
    CHECK(cudaMalloc(&huge, (size_t)1 << 50) != cudaSuccess, "a 1 PiB cudaMalloc succeeded");
    stats_t s0 = stats_now();
    const cublasStatus_t st = call(h, EP_V2, &g, &alpha, dA, r.lda, r.sa, dB, r.ldb, r.sb, &beta,
                                   dC, r.ldc, r.sc);
    const cudaError_t left = cudaGetLastError();
    stats_t s1 = stats_now();
    CHECK(st == CUBLAS_STATUS_SUCCESS && compare(&r, &g, dC) <= 1.0,
          "with the application's error pending: status %d", (int)st);
    CHECK(s1.protected_gemms - s0.protected_gemms == (uint64_t)prot,
          "with the application's error pending: %llu protected, want %d",
          (unsigned long long)(s1.protected_gemms - s0.protected_gemms), prot);
    CHECK(left == cudaErrorMemoryAllocation && cudaGetLastError() == cudaSuccess,
          "the application's pending error read back as %s", cudaGetErrorName(left));
    cudaFree(dA); cudaFree(dB); cudaFree(dC);
    release(&r);
}

/* Threads that each make a stream, run a GEMM on it through the shared handle and end (a thread
 * per task): the interposer's context for each thread and stream (handles, streams, workspace)
 * must go with the thread, so device memory does not shrink with the number of threads. */
typedef struct thread_end_arg {
    cublasHandle_t h;
    const gcase *g;
    run *r;
    void *dA, *dB, *dC;
    cublasStatus_t st;
} thread_end_arg;

static void *thread_end_gemm(void *p)
{
    thread_end_arg *a = p;
    cudaStream_t s;
    const double alpha = a->g->alpha, beta = a->g->beta;
    a->st = CUBLAS_STATUS_NOT_INITIALIZED;
    if (cudaStreamCreate(&s) == cudaSuccess) {
        cublasSetStream_v2(a->h, s);
        a->st = call(a->h, EP_V2, a->g, &alpha, a->dA, a->r->lda, a->r->sa, a->dB, a->r->ldb,
                     a->r->sb, &beta, a->dC, a->r->ldc, a->r->sc);
        cudaStreamSynchronize(s);
        cublasSetStream_v2(a->h, NULL);
        cudaStreamDestroy(s);
    }
    return NULL;
}

static void thread_end(cublasHandle_t h, int prot)
{
    enum { THREADS = 16 };
    const gcase g = {1, CUBLAS_OP_T, CUBLAS_OP_N, 300, 257, 129, 2, 1, 1.0, 0.0};
    run r;
    make(&r, &g);
    thread_end_arg a = {h, &g, &r, to_device(r.A, r.na, 1), to_device(r.B, r.nb, 1),
                        to_device(r.C0, r.nc, 1), CUBLAS_STATUS_SUCCESS};
    size_t free_at[THREADS + 1], total = 0;
    stats_t s0 = stats_now();
    int bad = 0;
    for (int i = 0; i <= THREADS; i++) {
        pthread_t th;
        pthread_create(&th, NULL, thread_end_gemm, &a);
        pthread_join(th, NULL);
        bad += a.st != CUBLAS_STATUS_SUCCESS || compare(&r, &g, a.dC) > 1.0;
        cudaDeviceSynchronize();
        cudaMemGetInfo(&free_at[i], &total);
    }
    stats_t s1 = stats_now();
    const double lost = ((double)free_at[0] - (double)free_at[THREADS]) / (1 << 20);
    printf("thread ends: %.2f MiB of device memory per ended thread kept\n", lost / THREADS);
    CHECK(bad == 0, "thread ends: %d of %d GEMMs failed or wrong", bad, THREADS + 1);
    CHECK(s1.protected_gemms - s0.protected_gemms == (uint64_t)(prot ? THREADS + 1 : 0),
          "thread ends: %llu protected", (unsigned long long)(s1.protected_gemms - s0.protected_gemms));
    CHECK(lost < 8.0, "thread ends: %.1f MiB of device memory kept for %d threads that ended",
          lost, THREADS);
    cudaFree(a.dA); cudaFree(a.dB); cudaFree(a.dC);
    release(&r);
}

int main(int argc, char **argv)
{
    int expect_off = 0;
    const int start = test_start(argc, argv, &expect_off);
    if (start)
        return start;
    cublasHandle_t h;
    if (cublasCreate_v2(&h) != CUBLAS_STATUS_SUCCESS) {
        fprintf(stderr, "cublasCreate failed\n");
        return 1;
    }
    const int prot = !expect_off;
    if (argc > 1 && strcmp(argv[argc - 1], "--graphs") == 0) { /* (for compute-sanitizer) */
        captured(h, 0, prot);
        captured(h, 1, prot);
        captured_then_grown(h, prot);
        captured_by_ended_thread(h, prot);
        exec_updated(h, prot);
        cublasDestroy_v2(h);
        printf("%d checks, %d failures\n", checks, failures);
        return failures ? 1 : 0;
    }
    for (int e = 0; e < EP_COUNT; e++)
        for (int dbl = 0; dbl < 2; dbl++)
            for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
                gcase g = shapes[i];
                g.dbl = dbl;
                one(h, (entry)e, g, (int)(i == 2), prot);
            }

    for (int e = 0; e < EP_COUNT; e++)
        for (int dbl = 0; dbl < 2; dbl++)
            for (size_t i = 0; i < sizeof zshapes / sizeof zshapes[0]; i++) {
                zcase g = zshapes[i];
                g.dbl = dbl;
                zone(h, (entry)e, g, (int)(i == 2), prot);
            }
    zunprotected(h);
    typed_ex_and_half(h, prot);
    grouped(h, prot);

    /* not protected: TF32 math mode, TF32 compute type, half data */
    cublasSetMathMode(h, CUBLAS_TF32_TENSOR_OP_MATH);
    {
        gcase g = {0, CUBLAS_OP_N, CUBLAS_OP_N, 64, 48, 32, 0, 1, 1.0, 0.0};
        run r;
        make(&r, &g);
        void *dA = to_device(r.A, r.na, 0), *dB = to_device(r.B, r.nb, 0), *dC = to_device(r.C0, r.nc, 0);
        float a = 1, b = 0;
        stats_t s0 = stats_now();
        CHECK(cublasSgemm_v2(h, CUBLAS_OP_N, CUBLAS_OP_N, 64, 48, 32, &a, dA, r.lda, dB, r.ldb, &b,
                             dC, r.ldc) == CUBLAS_STATUS_SUCCESS, "TF32 sgemm");
        cublasSetMathMode(h, CUBLAS_DEFAULT_MATH);
        CHECK(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, 64, 48, 32, &a, dA, CUDA_R_32F, r.lda, dB,
                           CUDA_R_32F, r.ldb, &b, dC, CUDA_R_32F, r.ldc,
                           CUBLAS_COMPUTE_32F_FAST_TF32, CUBLAS_GEMM_DEFAULT) == CUBLAS_STATUS_SUCCESS,
              "TF32 GemmEx");
        counted(&s0, 0, 2, "TF32 calls");
        /* TF32 keeps about 10 bits: a loose bound */
        void *hc = malloc(sizeof(float) * r.nc);
        cudaMemcpy(hc, dC, sizeof(float) * r.nc, cudaMemcpyDeviceToHost);
        double worst = 0;
        for (int j = 0; j < 48; j++)
            for (int i = 0; i < 64; i++)
                worst = fmax(worst, fabs(((float *)hc)[i + j * r.ldc] - r.ref[i + j * r.ldc]));
        CHECK(worst < 0.1, "TF32 GemmEx result off by %g", worst);
        free(hc);
        cudaFree(dA); cudaFree(dB); cudaFree(dC);
        release(&r);
    }

    /* invalid calls: cuBLAS's own status codes, nothing counted */
    {
        stats_t s0 = stats_now();
        float a = 1, b = 0;
        CHECK(cublasSgemm_v2(h, CUBLAS_OP_N, CUBLAS_OP_N, -1, 4, 4, &a, NULL, 1, NULL, 4, &b, NULL,
                             1) == CUBLAS_STATUS_INVALID_VALUE, "m < 0");
        CHECK(cublasDgemm_v2(h, CUBLAS_OP_N, CUBLAS_OP_N, 8, 4, 4, (double *)&a, NULL, 7, NULL, 4,
                             (double *)&b, NULL, 8) == CUBLAS_STATUS_INVALID_VALUE, "lda < m");
        CHECK(cublasSgemmStridedBatched(h, CUBLAS_OP_N, CUBLAS_OP_N, 4, 4, 4, &a, NULL, 4, 16, NULL,
                                        4, 16, &b, NULL, 4, 16, -1) == CUBLAS_STATUS_INVALID_VALUE,
              "batch < 0");
        CHECK(cublasSgemm_v2(NULL, CUBLAS_OP_N, CUBLAS_OP_N, 4, 4, 4, &a, NULL, 4, NULL, 4, &b, NULL,
                             4) == CUBLAS_STATUS_NOT_INITIALIZED, "NULL handle");
        stats_t s1 = stats_now();
        CHECK(s1.protected_gemms == s0.protected_gemms && s1.unprotected_gemms == s0.unprotected_gemms,
              "invalid calls counted");
    }

    /* the legacy API (cublas.h) is passed through: declared here, cublas.h clashes with v2 */
    {
        int (*init)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "cublasInit");
        void (*legacy)(char, char, int, int, int, float, const float *, int, const float *, int,
                       float, float *, int) =
            (void (*)(char, char, int, int, int, float, const float *, int, const float *, int,
                      float, float *, int))dlsym(RTLD_DEFAULT, "cublasSgemm");
        if (init && legacy && init() == 0) {
            gcase g = {0, CUBLAS_OP_N, CUBLAS_OP_T, 33, 20, 41, 0, 1, 2.0, 1.0};
            run r;
            make(&r, &g);
            void *dA = to_device(r.A, r.na, 0), *dB = to_device(r.B, r.nb, 0),
                 *dC = to_device(r.C0, r.nc, 0);
            stats_t s0 = stats_now();
            legacy('N', 'T', 33, 20, 41, 2.0f, dA, r.lda, dB, r.ldb, 1.0f, dC, r.ldc);
            stats_t s1 = stats_now();
            CHECK(compare(&r, &g, dC) <= 1.0, "legacy cublasSgemm result");
            CHECK(s1.unprotected_gemms - s0.unprotected_gemms == 1, "legacy counted unprotected");
            cudaFree(dA); cudaFree(dB); cudaFree(dC);
            release(&r);
        }
    }

    if (!expect_off) {
        planted(h, EP_V2, 0, 1);
        planted(h, EP_V2, 1, 1);
        planted(h, EP_EX, 0, 1);
        planted(h, EP_STRIDED, 1, 2);
        planted(h, EP_STRIDED_EX_64, 0, 3);
        planted(h, EP_PTRS, 1, 2);
        planted(h, EP_PTRS_EX_64, 0, 3);
        zplanted(h, EP_V2, 0, 1);
        zplanted(h, EP_V2_64, 1, 1);
        zplanted(h, EP_EX, 1, 1);
        zplanted(h, EP_STRIDED, 1, 2);
        zplanted(h, EP_STRIDED_EX_64, 0, 3);
        zplanted(h, EP_PTRS, 0, 2);
        zplanted(h, EP_PTRS_EX, 1, 2);
    }
    captured_arrays(h, prot);
    /* cold first: a stream created after another was destroyed may reuse its handle value */
    captured(h, 0, prot);
    captured(h, 1, prot);
    captured_then_grown(h, prot);
    captured_by_ended_thread(h, prot);
    exec_updated(h, prot);
    other_device(h, prot);
    while_captured(prot);
    on_full_device(h, prot);
    thread_end(h, prot);
    cublasDestroy_v2(h);
    after_reset(prot);
    printf("%d checks, %d failures\n", checks, failures);
    return failures ? 1 : 0;
}
