/* Batched cuBLAS GEMMs through the interposer (suite 'cublas', run with
 * LD_PRELOAD=libblas_ft.so): the strided and pointer-array batches of real float and double data
 * (cublas{S,D}gemmStridedBatched, cublas{S,D}gemmBatched, cublasGemmStridedBatchedEx,
 * cublasGemmBatchedEx, and the _64 form of each) against a host oracle in long double, on fresh
 * seeded data per case (uniform in [-1, 1], uniform in [0, 1], mixed magnitudes 2^-12 .. 2^13):
 * awkward shapes (1x1x1 to 300x257x129, more than one block row of C), batches of 2, 5 and 33,
 * every transpose (C as T for real data), leading dimensions above the rows with NaN in A's and
 * B's padding (a read of it shows in C), strides with gaps (and elements that are not aligned),
 * a stride of 0 for A, overlapping B, pointer arrays in reverse address order, scalars (1, 0),
 * (0.5, -2), (-1.25, 1) and beta = 0 over a C of NaN, scalars in device memory. C's padding and
 * the gaps between its matrices must stay as they were, bit for bit.
 *
 * Counters: a fault-free batch adds batch protected GEMMs, no unprotected one, no detection and
 * no false alarm. A batch the fused path takes (BLASFT_GPU_BATCHED unset or fused; S or D; at
 * least 2 matrices, m n k <= 2^30 and k <= 4096; under capture too) adds
 * exactly batch * ceil(m / BS) * n checks (BS: BLASFT_BLOCK_SIZE, else 256): that is how this test
 * knows the fused path ran (S promoted or not: BLASFT_PROMOTE decides as for one S GEMM); any
 * other batch (BLASFT_GPU_BATCHED=each included) only some.
 * Planted faults (blasft_cublas_plant_fault: one in each of the batch's first `count` matrices, a
 * high exponent or a high mantissa bit) must be corrected: C as the oracle's, each one injected,
 * detected and corrected (per matrix: corrected or its block recomputed), none uncorrectable.
 * Then a boundary list (k = 4096 / 4097, m n k = 2^30 / just above), batches captured into
 * graphs (strided and by arrays, warm and fresh streams, faults planted at the capture) and
 * replayed twice, strided batches whose C matrices overlap (computed in order) or are stacked by
 * rows (checked as a whole), exact data
 * (A = I, B = 1: a fault that makes an element Inf corrected; alpha 0 over NaN in A: C = beta C,
 * passed through), and a fault-free stress of random batches.
 * --expect-off: run under BLASFT_MODE=off, every GEMM passes through, counted unprotected, and
 * no fault is planted.
 * BATCHED_SEED=<n> changes the data (the default is fixed). Exits 77 without a GPU. */
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "interpose_test.h"

#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

typedef enum { E_STRIDED, E_STRIDED_64, E_STRIDED_EX, E_STRIDED_EX_64, E_PTRS, E_PTRS_64,
               E_PTRS_EX, E_PTRS_EX_64, E_COUNT } entry;
static const char *const entry_names[] = {"gemmStridedBatched", "gemmStridedBatched_64",
                                          "GemmStridedBatchedEx", "GemmStridedBatchedEx_64",
                                          "gemmBatched", "gemmBatched_64", "GemmBatchedEx",
                                          "GemmBatchedEx_64"};
static int is_ptrs(entry e) { return e >= E_PTRS; }

/* A case: type, entry point, shape, layout, scalars and data. */
typedef struct bcase {
    int dbl; /* D, else S */
    entry e;
    cublasOperation_t ta, tb;
    int m, n, k, batch;
    int pad_a, pad_b, pad_c; /* leading dimension above the stored rows */
    int smode_a;             /* 0 packed, 1 a gap after each matrix, 2 stride 0 (one A for all) */
    int smode_b;             /* 0 packed, 1 a gap, 2 overlapping (about half a matrix apart) */
    int smode_c;             /* 0 packed, 1 a gap */
    double alpha, beta;
    int nan_c;       /* C (all of its buffer) filled with NaN: beta must be 0 */
    int series;      /* 0 uniform [-1, 1], 1 uniform [0, 1], 2 mixed magnitudes */
    int dev_scalars; /* alpha and beta in device memory (CUBLAS_POINTER_MODE_DEVICE) */
    int reversed;    /* pointer arrays: the matrices in reverse address order */
    uint64_t seed;
} bcase;

/* ---- what the environment makes of a batch ---- */

static int expect_off, block_size = 256, fused_mode = 1, promote_on;
static uint64_t base_seed = 20261128;

static void read_env(void)
{
    const char *v = getenv("BLASFT_GPU_BATCHED");
    fused_mode = !(v && strcasecmp(v, "each") == 0); /* a malformed value leaves the default */
    v = getenv("BLASFT_PROMOTE");
    promote_on = v && strcasecmp(v, "on") == 0;
    block_size = env_block_size();
    v = getenv("BATCHED_SEED");
    if (v && *v)
        base_seed = strtoull(v, NULL, 0);
}

/* 1 where the fused path must take case c (and its checks are then counted exactly) */
static int fused_expected(const bcase *c)
{
    return !expect_off && fused_mode && c->batch >= 2 && c->m > 0 &&
           c->n > 0 && c->k > 0 && (double)c->m * c->n * c->k <= 0x1p30 && c->k <= 4096 &&
           8.0 * ((double)c->m * c->k + (double)c->k * c->n + (double)c->m * c->n) <= 0x1p28;
}

static uint64_t fused_checks(const bcase *c)
{
    return (uint64_t)c->batch * (uint64_t)((c->m + block_size - 1) / block_size) * (uint64_t)c->n;
}

/* ---- seeded data ---- */


/* one value of the series, exactly representable in the case's type */
static double value(rng_t *r, int series, int dbl)
{
    double x;
    if (series == 0)
        x = 2.0 * unit(r) - 1.0;
    else if (series == 1)
        x = unit(r);
    else
        x = ldexp(1.0 + unit(r), below(r, 25) - 12) * ((next_u64(r) & 1) ? -1.0 : 1.0);
    return dbl ? x : (double)(float)x;
}

/* ---- layout, data and the oracle ---- */

typedef struct bdata {
    int lda, ldb, ldc;
    long long sa, sb, sc;
    size_t na, nb, nc; /* elements of one matrix's storage: ld x columns */
    size_t la, lb, lc; /* elements of each whole buffer */
    double *A, *B, *C0; /* the buffers as uploaded (values of the type) */
    double *ref, *bound; /* per matrix m x n, column order, ld m */
} bdata;

static int imax(int a, int b) { return a > b ? a : b; }

static void layout(bdata *d, const bcase *c)
{
    const int ar = c->ta == CUBLAS_OP_N ? c->m : c->k, ac = c->ta == CUBLAS_OP_N ? c->k : c->m;
    const int br = c->tb == CUBLAS_OP_N ? c->k : c->n, bc = c->tb == CUBLAS_OP_N ? c->n : c->k;
    d->lda = imax(ar, 1) + c->pad_a;
    d->ldb = imax(br, 1) + c->pad_b;
    d->ldc = imax(c->m, 1) + c->pad_c;
    d->na = (size_t)d->lda * (size_t)imax(ac, 1);
    d->nb = (size_t)d->ldb * (size_t)imax(bc, 1);
    d->nc = (size_t)d->ldc * (size_t)imax(c->n, 1);
    d->sa = c->smode_a == 0 ? (long long)d->na : c->smode_a == 1 ? (long long)d->na + 5 : 0;
    d->sb = c->smode_b == 0   ? (long long)d->nb
            : c->smode_b == 1 ? (long long)d->nb + 3
                              : (long long)(d->nb / 2 + 1); /* overlapping, any alignment */
    d->sc = c->smode_c == 0 ? (long long)d->nc : (long long)d->nc + 7;
    const size_t B1 = (size_t)c->batch - 1;
    d->la = B1 * (size_t)d->sa + d->na;
    d->lb = B1 * (size_t)d->sb + d->nb;
    d->lc = B1 * (size_t)d->sc + d->nc;
}

/* The buffers: NaN everywhere in A and B, then every matrix's elements (a GEMM that reads the
 * padding or a gap gets NaN); C random everywhere, or NaN everywhere where nan_c. */
static void fill(bdata *d, const bcase *c)
{
    rng_t r = {c->seed};
    const int ar = c->ta == CUBLAS_OP_N ? c->m : c->k, ac = c->ta == CUBLAS_OP_N ? c->k : c->m;
    const int br = c->tb == CUBLAS_OP_N ? c->k : c->n, bc = c->tb == CUBLAS_OP_N ? c->n : c->k;
    d->A = malloc(sizeof(double) * d->la);
    d->B = malloc(sizeof(double) * d->lb);
    d->C0 = malloc(sizeof(double) * d->lc);
    for (size_t i = 0; i < d->la; i++) d->A[i] = NAN;
    for (size_t i = 0; i < d->lb; i++) d->B[i] = NAN;
    for (int b = 0; b < c->batch; b++) {
        for (int j = 0; j < ac; j++)
            for (int i = 0; i < ar; i++)
                d->A[(size_t)b * (size_t)d->sa + (size_t)i + (size_t)j * (size_t)d->lda] =
                    value(&r, c->series, c->dbl);
        for (int j = 0; j < bc; j++)
            for (int i = 0; i < br; i++)
                d->B[(size_t)b * (size_t)d->sb + (size_t)i + (size_t)j * (size_t)d->ldb] =
                    value(&r, c->series, c->dbl);
    }
    for (size_t i = 0; i < d->lc; i++) d->C0[i] = c->nan_c ? NAN : value(&r, 0, c->dbl);
}

/* The oracle's work: op(A) of every matrix as rows of k, op(B) as columns of k, contiguous. */
typedef struct oracle_job {
    const bcase *c;
    bdata *d;
    double *At, *Bt;
    int next; /* the next (matrix, column) to compute */
} oracle_job;

static void *oracle_worker(void *p)
{
    oracle_job *o = p;
    const bcase *c = o->c;
    bdata *d = o->d;
    const int total = c->batch * c->n;
    const double u = c->dbl ? 0x1p-53 : 0x1p-24, tiny = c->dbl ? 1e-300 : 1e-37;
    for (;;) {
        const int w = __atomic_fetch_add(&o->next, 1, __ATOMIC_RELAXED);
        if (w >= total)
            break;
        const int b = w / c->n, j = w % c->n;
        const double *bt = o->Bt + ((size_t)b * (size_t)c->n + (size_t)j) * (size_t)c->k;
        for (int i = 0; i < c->m; i++) {
            const double *at = o->At + ((size_t)b * (size_t)c->m + (size_t)i) * (size_t)c->k;
            long double s = 0, t = 0;
            for (int l = 0; l < c->k; l++) {
                const long double x = (long double)at[l] * bt[l];
                s += x;
                t += fabsl(x);
            }
            long double r = (long double)c->alpha * s;
            /* worst-case rounding of any summation order: the dot product, alpha, beta C, the
             * sum; doubled */
            double bound = 2.0 * (c->k + 2) * u * fabs(c->alpha) * (double)t + tiny;
            if (c->beta != 0) { /* beta = 0: C is not read (it may be NaN) */
                const double c0 =
                    d->C0[(size_t)b * (size_t)d->sc + (size_t)i + (size_t)j * (size_t)d->ldc];
                r += (long double)c->beta * c0;
                bound += 2.0 * u * fabs(c->beta * c0);
            }
            const size_t o2 = ((size_t)b * (size_t)c->n + (size_t)j) * (size_t)c->m + (size_t)i;
            d->ref[o2] = (double)r;
            d->bound[o2] = bound;
        }
    }
    return NULL;
}

static int oracle_threads(void)
{
    static int n;
    if (!n) {
        long cores = sysconf(_SC_NPROCESSORS_ONLN);
        n = cores < 1 ? 1 : cores > 32 ? 32 : (int)cores;
    }
    return n;
}

static void oracle(bdata *d, const bcase *c)
{
    const size_t B = (size_t)c->batch, m = (size_t)c->m, n = (size_t)c->n, k = (size_t)c->k;
    d->ref = malloc(sizeof(double) * B * m * n);
    d->bound = malloc(sizeof(double) * B * m * n);
    oracle_job o = {c, d, malloc(sizeof(double) * B * m * k), malloc(sizeof(double) * B * n * k), 0};
    for (size_t b = 0; b < B; b++) {
        const double *A = d->A + b * (size_t)d->sa, *Bm = d->B + b * (size_t)d->sb;
        for (size_t i = 0; i < m; i++)
            for (size_t l = 0; l < k; l++)
                o.At[(b * m + i) * k + l] = c->ta == CUBLAS_OP_N ? A[i + l * (size_t)d->lda]
                                                                 : A[l + i * (size_t)d->lda];
        for (size_t j = 0; j < n; j++)
            for (size_t l = 0; l < k; l++)
                o.Bt[(b * n + j) * k + l] = c->tb == CUBLAS_OP_N ? Bm[l + j * (size_t)d->ldb]
                                                                 : Bm[j + l * (size_t)d->ldb];
    }
    const int nt = B * m * n * k < ((size_t)1 << 20) ? 1 : oracle_threads();
    pthread_t th[32];
    int started = 0;
    for (int t = 1; t < nt; t++)
        started += pthread_create(&th[started], NULL, oracle_worker, &o) == 0;
    oracle_worker(&o);
    for (int t = 0; t < started; t++)
        pthread_join(th[t], NULL);
    free(o.At);
    free(o.Bt);
}

static void release(bdata *d)
{
    free(d->A); free(d->B); free(d->C0); free(d->ref); free(d->bound);
}

/* ---- the call ---- */

static cublasStatus_t call(cublasHandle_t h, const bcase *c, const bdata *d, const void *alpha,
                           const void *beta, const void *A, const void *B, void *C,
                           void *const *arr)
{
    const cudaDataType dt = c->dbl ? CUDA_R_64F : CUDA_R_32F;
    const cublasComputeType_t ct = c->dbl ? CUBLAS_COMPUTE_64F : CUBLAS_COMPUTE_32F;
    const cublasOperation_t ta = c->ta, tb = c->tb;
    const int m = c->m, n = c->n, k = c->k, bt = c->batch;
    const int lda = d->lda, ldb = d->ldb, ldc = d->ldc;
    const long long sa = d->sa, sb = d->sb, sc = d->sc;
    void *const *pa = arr, *const *pb = arr ? arr + bt : NULL, *const *pc = arr ? arr + 2 * bt : NULL;
    switch (c->e) {
    case E_STRIDED:
        return c->dbl ? cublasDgemmStridedBatched(h, ta, tb, m, n, k, alpha, A, lda, sa, B, ldb, sb,
                                                  beta, C, ldc, sc, bt)
                      : cublasSgemmStridedBatched(h, ta, tb, m, n, k, alpha, A, lda, sa, B, ldb, sb,
                                                  beta, C, ldc, sc, bt);
    case E_STRIDED_64:
        return c->dbl ? cublasDgemmStridedBatched_64(h, ta, tb, m, n, k, alpha, A, lda, sa, B, ldb,
                                                     sb, beta, C, ldc, sc, bt)
                      : cublasSgemmStridedBatched_64(h, ta, tb, m, n, k, alpha, A, lda, sa, B, ldb,
                                                     sb, beta, C, ldc, sc, bt);
    case E_STRIDED_EX:
        return cublasGemmStridedBatchedEx(h, ta, tb, m, n, k, alpha, A, dt, lda, sa, B, dt, ldb, sb,
                                          beta, C, dt, ldc, sc, bt, ct, CUBLAS_GEMM_DEFAULT);
    case E_STRIDED_EX_64:
        return cublasGemmStridedBatchedEx_64(h, ta, tb, m, n, k, alpha, A, dt, lda, sa, B, dt, ldb,
                                             sb, beta, C, dt, ldc, sc, bt, ct, CUBLAS_GEMM_DEFAULT);
    case E_PTRS:
        return c->dbl ? cublasDgemmBatched(h, ta, tb, m, n, k, alpha, (const double *const *)pa,
                                           lda, (const double *const *)pb, ldb, beta,
                                           (double *const *)pc, ldc, bt)
                      : cublasSgemmBatched(h, ta, tb, m, n, k, alpha, (const float *const *)pa, lda,
                                           (const float *const *)pb, ldb, beta,
                                           (float *const *)pc, ldc, bt);
    case E_PTRS_64:
        return c->dbl ? cublasDgemmBatched_64(h, ta, tb, m, n, k, alpha, (const double *const *)pa,
                                              lda, (const double *const *)pb, ldb, beta,
                                              (double *const *)pc, ldc, bt)
                      : cublasSgemmBatched_64(h, ta, tb, m, n, k, alpha, (const float *const *)pa,
                                              lda, (const float *const *)pb, ldb, beta,
                                              (float *const *)pc, ldc, bt);
    case E_PTRS_EX:
        return cublasGemmBatchedEx(h, ta, tb, m, n, k, alpha, (const void *const *)pa, dt, lda,
                                   (const void *const *)pb, dt, ldb, beta, pc, dt, ldc, bt, ct,
                                   CUBLAS_GEMM_DEFAULT);
    case E_PTRS_EX_64:
        return cublasGemmBatchedEx_64(h, ta, tb, m, n, k, alpha, (const void *const *)pa, dt, lda,
                                      (const void *const *)pb, dt, ldb, beta, pc, dt, ldc, bt, ct,
                                      CUBLAS_GEMM_DEFAULT);
    default:
        return CUBLAS_STATUS_INVALID_VALUE;
    }
}

/* The device arrays of pointers of a pointer-array batch: A's, B's and C's, each batch long, in
 * one buffer; matrix i of the call is matrix i of the layout, or batch - 1 - i where reversed
 * (the oracle's matrix of each C is then still its own). */
static void **make_arrays(const bcase *c, const bdata *d, void *A, void *B, void *C)
{
    const size_t n = (size_t)c->batch, es = c->dbl ? 8 : 4;
    void **h = malloc(3 * n * sizeof *h), **dev = NULL;
    for (size_t i = 0; i < n; i++) {
        const size_t g = c->reversed ? n - 1 - i : i;
        h[i] = (char *)A + es * (size_t)d->sa * g;
        h[n + i] = (char *)B + es * (size_t)d->sb * g;
        h[2 * n + i] = (char *)C + es * (size_t)d->sc * g;
    }
    if (cudaMalloc((void **)&dev, 3 * n * sizeof *h) == cudaSuccess)
        cudaMemcpy(dev, h, 3 * n * sizeof *h, cudaMemcpyHostToDevice);
    else
        dev = NULL;
    free(h);
    return dev;
}

/* ---- one case ---- */

typedef struct outcome {
    cublasStatus_t st;
    double worst;       /* worst |C - ref| / bound (> 1: wrong; NaN counts as infinite) */
    size_t outside_bad; /* elements of C's padding or gaps changed */
    int wb, wi, wj;     /* the worst element */
    double wv, wref, wbound;
    int64_t prow, pcol; /* where faults were planted */
    stats_t s0, s1;
    int events_ok;      /* planted: the events name the batch's matrices (events_end) */
    char events_why[96];
} outcome;

/* C read back and judged: every result against the oracle, the rest unchanged bit for bit */
static void compare(outcome *o, const bcase *c, const bdata *d, const void *dC)
{
    const size_t es = c->dbl ? 8 : 4;
    unsigned char *h = malloc(es * d->lc);
    o->worst = 0;
    o->outside_bad = 0;
    o->wb = o->wi = o->wj = -1;
    if (cudaMemcpy(h, dC, es * d->lc, cudaMemcpyDeviceToHost) != cudaSuccess) {
        o->worst = INFINITY;
        free(h);
        return;
    }
    for (size_t p = 0; p < d->lc; p++) {
        const size_t b = d->sc ? p / (size_t)d->sc : 0, off = p - b * (size_t)d->sc;
        const int i = (int)(off % (size_t)d->ldc), j = (int)(off / (size_t)d->ldc);
        const double v = c->dbl ? ((double *)h)[p] : (double)((float *)h)[p];
        if (b < (size_t)c->batch && off < d->nc && i < c->m) {
            const size_t o2 = (b * (size_t)c->n + (size_t)j) * (size_t)c->m + (size_t)i;
            const double q = error_ratio(v, d->ref[o2], d->bound[o2]);
            if (q > o->worst || o->wb < 0) {
                o->worst = q > o->worst ? q : o->worst;
                o->wb = (int)b, o->wi = i, o->wj = j;
                o->wv = v, o->wref = d->ref[o2], o->wbound = d->bound[o2];
            }
        } else {
            int same;
            if (c->dbl) {
                const double was = d->C0[p];
                same = memcmp(&was, h + 8 * p, 8) == 0;
            } else {
                const float was = (float)d->C0[p];
                same = memcmp(&was, h + 4 * p, 4) == 0;
            }
            o->outside_bad += !same;
        }
    }
    free(h);
}

/* The element where faults go: the one of a few candidates whose results in the first `count`
 * matrices are largest against their rounding bound (a flip of a tiny element may change it by
 * less than a check can see). */
static void plant_site(const bcase *c, const bdata *d, int count, int64_t *row, int64_t *col)
{
    double best = -1;
    *row = c->m / 2, *col = c->n / 2;
    for (int a = 0; a < 5; a++)
        for (int bb = 0; bb < 5; bb++) {
            const int i = (c->m - 1) * a / 4, j = (c->n - 1) * bb / 4;
            double worst = INFINITY;
            for (int g = 0; g < count; g++) {
                const size_t o2 = ((size_t)g * (size_t)c->n + (size_t)j) * (size_t)c->m + (size_t)i;
                const double q = fabs(d->ref[o2]) / d->bound[o2];
                worst = q < worst ? q : worst;
            }
            if (worst > best)
                best = worst, *row = i, *col = j;
        }
}

/* Case c on fresh data; `plant` faults of bit `bit` planted first (0: none). */
static void run_case(cublasHandle_t h, const bcase *c, int plant, int bit, outcome *o)
{
    bdata d;
    layout(&d, c);
    fill(&d, c);
    oracle(&d, c);
    o->prow = o->pcol = -1;
    if (plant)
        plant_site(c, &d, plant, &o->prow, &o->pcol);
    void *dA = to_device(d.A, d.la, c->dbl), *dB = to_device(d.B, d.lb, c->dbl);
    void *dC = to_device(d.C0, d.lc, c->dbl);
    void **arr = is_ptrs(c->e) ? make_arrays(c, &d, dA, dB, dC) : NULL;
    const double sd[2] = {c->alpha, c->beta};
    const float sf[2] = {(float)c->alpha, (float)c->beta};
    const void *host_sc = c->dbl ? (const void *)sd : (const void *)sf;
    const size_t es = c->dbl ? 8 : 4;
    void *dsc = NULL;
    const void *alpha = host_sc, *beta = (const char *)host_sc + es;
    if (c->dev_scalars) {
        cudaMalloc(&dsc, 2 * es);
        cudaMemcpy(dsc, host_sc, 2 * es, cudaMemcpyHostToDevice);
        alpha = dsc;
        beta = (const char *)dsc + es;
        cublasSetPointerMode_v2(h, CUBLAS_POINTER_MODE_DEVICE);
    }
    o->s0 = stats_now();
    if (plant) {
        events_begin();
        CHECK(plant_fault(plant, o->prow, o->pcol, bit) == 0, "plant_fault(%d)", plant);
    }
    o->st = is_ptrs(c->e) && !arr ? CUBLAS_STATUS_ALLOC_FAILED
                                  : call(h, c, &d, alpha, beta, dA, dB, dC, arr);
    o->s1 = stats_now();
    if (plant) {
        plant_fault(0, 0, 0, 0); /* what a wrong path left armed goes no further */
        /* each planted matrix named (a call records its first 16 events) */
        o->events_ok = events_end(c->batch, plant < 16 ? plant : 16, o->events_why,
                                  sizeof o->events_why);
    }
    if (c->dev_scalars)
        cublasSetPointerMode_v2(h, CUBLAS_POINTER_MODE_HOST);
    compare(o, c, &d, dC);
    cudaFree(dA); cudaFree(dB); cudaFree(dC); cudaFree(arr); cudaFree(dsc);
    release(&d);
}

static void describe(char *buf, size_t cap, const bcase *c)
{
    static const char *const sa[] = {"packed", "gap", "zero"}, *const sb[] = {"packed", "gap",
                                                                              "overlapping"};
    snprintf(buf, cap,
             "%s %c %c%c %dx%dx%d batch %d ld+%d/%d/%d strides A %s B %s C %s alpha %g beta %g%s "
             "series %d%s%s seed %llu",
             entry_names[c->e], c->dbl ? 'D' : 'S', "NTC"[c->ta], "NTC"[c->tb], c->m, c->n, c->k,
             c->batch, c->pad_a, c->pad_b, c->pad_c, sa[c->smode_a], sb[c->smode_b],
             sa[c->smode_c], c->alpha, c->beta, c->nan_c ? " (C NaN)" : "", c->series,
             c->dev_scalars ? " device scalars" : "",
             is_ptrs(c->e) && c->reversed ? " reversed" : "", (unsigned long long)c->seed);
}

static uint64_t cases_run, abft_checks;

/* The verdict on a case: status, result, C's padding and gaps, counters. plant: the faults
 * planted (0: fault-free). */
static void judge(const bcase *c, const outcome *o, int plant, int bit)
{
    char what[256];
    describe(what, sizeof what, c);
    if (plant) {
        const size_t len = strlen(what);
        snprintf(what + len, sizeof what - len, " planted %d bit %d at (%lld, %lld)", plant, bit,
                 (long long)o->prow, (long long)o->pcol);
    }
    const uint64_t B = (uint64_t)c->batch;
    cases_run++;
    abft_checks += DELTA(o, checks);
    CHECK(o->st == CUBLAS_STATUS_SUCCESS, "%s: status %d", what, (int)o->st);
    CHECK(o->worst <= 1.0,
          "%s: error %.3g x bound (matrix %d (%d, %d): %.17g, reference %.17g, bound %.3g)", what,
          o->worst, o->wb, o->wi, o->wj, o->wv, o->wref, o->wbound);
    CHECK(o->outside_bad == 0, "%s: %zu elements of C's padding or gaps changed", what,
          o->outside_bad);
    CHECK(DELTA(o, protected_gemms) == (expect_off ? 0 : B) &&
              DELTA(o, unprotected_gemms) == (expect_off ? B : 0),
          "%s: %llu protected, %llu unprotected (expected %llu, %llu)", what,
          (unsigned long long)DELTA(o, protected_gemms),
          (unsigned long long)DELTA(o, unprotected_gemms),
          (unsigned long long)(expect_off ? 0 : B), (unsigned long long)(expect_off ? B : 0));
    if (expect_off)
        CHECK(DELTA(o, checks) == 0, "%s: %llu checks with BLASFT_MODE=off", what,
              (unsigned long long)DELTA(o, checks));
    else if (fused_expected(c))
        CHECK(DELTA(o, checks) == fused_checks(c),
              "%s: %llu checks, the fused path's would be %llu", what,
              (unsigned long long)DELTA(o, checks), (unsigned long long)fused_checks(c));
    else
        CHECK(DELTA(o, checks) > 0, "%s: no checks", what);
    CHECK(DELTA(o, false_alarms) == 0, "%s: %llu false alarms", what,
          (unsigned long long)DELTA(o, false_alarms));
    CHECK(DELTA(o, uncorrectable) == 0, "%s: %llu uncorrectable", what,
          (unsigned long long)DELTA(o, uncorrectable));
    if (!plant) {
        CHECK(DELTA(o, errors_detected) == 0 && DELTA(o, errors_corrected) == 0,
              "%s: %llu detected, %llu corrected without a fault", what,
              (unsigned long long)DELTA(o, errors_detected),
              (unsigned long long)DELTA(o, errors_corrected));
        return;
    }
    const uint64_t P = (uint64_t)plant;
    CHECK(DELTA(o, faults_injected) == P, "%s: %llu injected", what,
          (unsigned long long)DELTA(o, faults_injected));
    CHECK(o->events_ok, "%s: events: %s", what, o->events_why);
    CHECK(DELTA(o, errors_detected) >= P, "%s: %llu detected", what,
          (unsigned long long)DELTA(o, errors_detected));
    if (fused_expected(c))
        CHECK(DELTA(o, errors_corrected) >= P, "%s: %llu corrected", what,
              (unsigned long long)DELTA(o, errors_corrected));
    else /* one protected GEMM per matrix: the element corrected, or its block recomputed */
        CHECK(DELTA(o, errors_corrected) + DELTA(o, blocks_recomputed) >= P,
              "%s: %llu corrected, %llu blocks recomputed", what,
              (unsigned long long)DELTA(o, errors_corrected),
              (unsigned long long)DELTA(o, blocks_recomputed));
}

static void one(cublasHandle_t h, const bcase *c)
{
    outcome o;
    run_case(h, c, 0, 0, &o);
    judge(c, &o, 0, 0);
}

/* ---- the sections ---- */

static const cublasOperation_t OPN = CUBLAS_OP_N, OPT = CUBLAS_OP_T, OPC = CUBLAS_OP_C;

static const int shapes[][3] = {{1, 1, 1},       {7, 5, 3},     {37, 53, 29},   {64, 64, 64},
                                {100, 3, 257},   {255, 17, 130}, {300, 257, 129}, {1, 200, 1}};
enum { NSHAPES = sizeof shapes / sizeof shapes[0] };
static const cublasOperation_t pairs[8][2] = {{CUBLAS_OP_N, CUBLAS_OP_N}, {CUBLAS_OP_N, CUBLAS_OP_T},
                                              {CUBLAS_OP_T, CUBLAS_OP_N}, {CUBLAS_OP_T, CUBLAS_OP_T},
                                              {CUBLAS_OP_C, CUBLAS_OP_N}, {CUBLAS_OP_N, CUBLAS_OP_C},
                                              {CUBLAS_OP_C, CUBLAS_OP_C}, {CUBLAS_OP_T, CUBLAS_OP_C}};
static const int batches[] = {2, 5, 33};
static const int pads[] = {0, 1, 5};
/* (alpha, beta, C NaN) */
static const double scal[4][3] = {{1.0, 0.0, 0}, {0.5, -2.0, 0}, {-1.25, 1.0, 0}, {-1.25, 0.0, 1}};

static uint64_t case_seed(uint64_t a, uint64_t b, uint64_t c)
{
    return seed_of(base_seed, a, b, c);
}

/* Every (type, entry point, shape); the other parameters rotate so that each entry point of
 * each type meets every transpose pair, and the batches, leading dimensions, strides, scalars,
 * series, device scalars and pointer orders in turn. */
static void sweep(cublasHandle_t h)
{
    const uint64_t before = cases_run;
    for (int t = 0; t < 2; t++)
        for (int e = 0; e < E_COUNT; e++)
            for (int i = 0; i < NSHAPES; i++) {
                const int s = (i + 2 * e + t) % 4, p = (i + 3 * e + 5 * t) % 8;
                bcase c = {.dbl = t, .e = (entry)e, .ta = pairs[p][0], .tb = pairs[p][1],
                           .m = shapes[i][0], .n = shapes[i][1], .k = shapes[i][2],
                           .batch = batches[(i + e) % 3],
                           .pad_a = pads[(i + e) % 3], .pad_b = pads[(i + e + 1) % 3],
                           .pad_c = pads[(i + 2 * e + t) % 3],
                           .smode_a = (i + t + e) % 3, .smode_b = (i + 2 * t + e + 1) % 3,
                           .smode_c = (i + e) % 2,
                           .alpha = scal[s][0], .beta = scal[s][1], .nan_c = (int)scal[s][2],
                           .series = (i + e + 2 * t) % 3, .dev_scalars = (i + e + t) % 4 == 1,
                           .reversed = (i + t) % 2, .seed = case_seed(1, (uint64_t)(t * 64 + e), (uint64_t)i)};
                one(h, &c);
            }
    printf("sweep: %llu cases\n", (unsigned long long)(cases_run - before));
}

/* The fused path's limits from both sides (k = 4096 / 4097, m n k = 2^30 / just over), and
 * C of two and three block rows. */
static void boundaries(cublasHandle_t h)
{
    static const struct { int m, n, k, batch; entry e; } b[] = {
        {8, 8, 4096, 2, E_STRIDED},   {8, 8, 4097, 3, E_STRIDED_EX},
        {1024, 1024, 1024, 2, E_PTRS}, {1025, 1024, 1024, 2, E_STRIDED_64},
        {257, 31, 40, 4, E_PTRS_EX},  {513, 7, 9, 3, E_STRIDED},
        {512, 4, 8, 2, E_PTRS_64},    {64, 4096, 4096, 2, E_STRIDED_EX_64},
    };
    const uint64_t before = cases_run;
    for (int t = 0; t < 2; t++)
        for (size_t i = 0; i < sizeof b / sizeof b[0]; i++) {
            bcase c = {.dbl = t, .e = b[i].e, .ta = i % 2 ? OPT : OPN, .tb = i % 3 ? OPN : OPC,
                       .m = b[i].m, .n = b[i].n, .k = b[i].k, .batch = b[i].batch,
                       .pad_a = (int)(i % 2), .pad_b = 0, .pad_c = (int)(i % 3),
                       .smode_a = (int)(i % 3), .smode_b = (int)(i % 2), .smode_c = (int)(i % 2),
                       .alpha = i % 2 ? 0.5 : 1.0, .beta = i % 2 ? -2.0 : 0.0,
                       .series = (int)(i + (size_t)t) % 3, .dev_scalars = i == 3,
                       .seed = case_seed(2, (uint64_t)t, i)};
            one(h, &c);
        }
    printf("boundaries: %llu cases\n", (unsigned long long)(cases_run - before));
}

/* Faults planted in the first 1 and 3 matrices of a batch, a high exponent bit and a high
 * mantissa bit, through every entry point of both types. */
static void planted(cublasHandle_t h)
{
    static const int pshapes[][4] = {{64, 64, 64, 5}, {300, 257, 129, 3}, {37, 53, 29, 33},
                                     {100, 3, 257, 5}};
    const uint64_t before = cases_run;
    int n = 0;
    for (int t = 0; t < 2; t++)
        for (int e = 0; e < E_COUNT; e++)
            for (int count = 1; count <= 3; count += 2)
                for (int hi = 0; hi < 2; hi++, n++) {
                    const int *ps = pshapes[n % 4];
                    const int bit = t ? (hi ? 62 : 51) : (hi ? 30 : 22);
                    const int s = n % 4; /* beta = 0 over NaN too: recomputed without C */
                    bcase c = {.dbl = t, .e = (entry)e, .ta = pairs[n % 8][0],
                               .tb = pairs[n % 8][1], .m = ps[0], .n = ps[1], .k = ps[2],
                               .batch = ps[3], .pad_a = pads[n % 3], .pad_b = pads[(n + 1) % 3],
                               .pad_c = pads[(n + 2) % 3], .smode_a = n % 3,
                               .smode_b = (n + 1) % 3, .smode_c = n % 2, .alpha = scal[s][0],
                               .beta = scal[s][1], .nan_c = (int)scal[s][2], .series = n % 3,
                               .dev_scalars = n % 5 == 2,
                               .reversed = 0, .seed = case_seed(3, (uint64_t)n, 0)};
                    outcome o;
                    run_case(h, &c, count, bit, &o);
                    judge(&c, &o, count, bit);
                }
    printf("planted faults: %llu cases\n", (unsigned long long)(cases_run - before));
}

/* A batch captured into a graph on a stream of its own (warm: after one uncaptured call of the
 * same shape there; cold: its context and buffers made during the capture) and replayed twice
 * over a C of NaN, with a fault (a high exponent bit) planted in each of its first two matrices
 * at the capture (not by arrays: planting there reads an address back, which a capture cannot).
 * Checked as a whole (since 2026-11-27, late night; before, matrix by matrix): nothing counted
 * at the capture, each replay counts batch protected GEMMs and exactly their fused checks and
 * corrects both faults; otherwise (BLASFT_GPU_BATCHED=each) matrix by matrix, strided only (by
 * arrays the call passes through). C right after the replays. */
static void captured(cublasHandle_t h, int dbl, entry e, int warm, double beta)
{
    const bcase c = {.dbl = dbl, .e = e, .ta = OPN, .tb = OPT, .m = 37, .n = 53, .k = 29,
                     .batch = 5, .pad_a = 1, .pad_b = 0, .pad_c = 2, .smode_c = 1,
                     .alpha = 1.0, .beta = beta, .series = 0,
                     .seed = case_seed(4, (uint64_t)(dbl + 2 * e), (uint64_t)warm)};
    const char *what = entry_names[e];
    bdata d;
    layout(&d, &c);
    fill(&d, &c);
    oracle(&d, &c);
    const int fused = fused_expected(&c);
    const int prot = !expect_off && (fused || !is_ptrs(e));
    const int np = prot && !is_ptrs(e) ? 2 : 0;
    int64_t prow = -1, pcol = -1;
    if (np)
        plant_site(&c, &d, np, &prow, &pcol);
    const int bit = dbl ? 62 : 30;
    void *dA = to_device(d.A, d.la, dbl), *dB = to_device(d.B, d.lb, dbl);
    void *dC = to_device(d.C0, d.lc, dbl), *dC0 = to_device(d.C0, d.lc, dbl);
    void **arr = is_ptrs(e) ? make_arrays(&c, &d, dA, dB, dC) : NULL;
    const double sd[2] = {1.0, beta};
    const float sf[2] = {1.0f, (float)beta};
    const void *al = dbl ? (const void *)&sd[0] : (const void *)&sf[0];
    const void *be = dbl ? (const void *)&sd[1] : (const void *)&sf[1];
    cudaStream_t s;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    cublasSetStream_v2(h, s);
    if (warm)
        CHECK(call(h, &c, &d, al, be, dA, dB, dC, arr) == CUBLAS_STATUS_SUCCESS,
              "captured %s: warm-up", what);
    cudaStreamSynchronize(s);
    stats_t s0 = stats_now();
    cudaGraph_t graph = NULL;
    cudaGraphExec_t exec = NULL;
    cublasStatus_t st = CUBLAS_STATUS_NOT_INITIALIZED;
    cudaError_t ce = cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal);
    if (ce == cudaSuccess) {
        if (np)
            CHECK(plant_fault(np, prow, pcol, bit) == 0, "captured %s: plant_fault", what);
        st = call(h, &c, &d, al, be, dA, dB, dC, arr);
        plant_fault(0, 0, 0, 0);
        ce = cudaStreamEndCapture(s, &graph);
    }
    CHECK(st == CUBLAS_STATUS_SUCCESS && ce == cudaSuccess,
          "captured %s %c (warm %d): status %d, %s", what, dbl ? 'D' : 'S', warm, (int)st,
          cudaGetErrorString(ce));
    const int captured_ok = ce == cudaSuccess && st == CUBLAS_STATUS_SUCCESS;
    const int inst = captured_ok && cudaGraphInstantiate(&exec, graph, 0) == cudaSuccess;
    if (captured_ok)
        CHECK(inst, "captured %s: instantiate", what);
    if (inst) {
        /* NaN over the results where beta is 0 (a replay that did not run leaves them wrong);
         * else the old C again before each replay (each must read it once) */
        const size_t es = dbl ? 8 : 4;
        if (beta == 0.0)
            for (int b = 0; b < c.batch; b++)
                cudaMemset2D((char *)dC + es * (size_t)d.sc * (size_t)b, es * (size_t)d.ldc,
                             0xff, es * (size_t)c.m, (size_t)c.n);
        cudaDeviceSynchronize();
        stats_t s1 = stats_now();
        for (int i = 0; i < 2; i++) {
            if (beta != 0.0)
                cudaMemcpyAsync(dC, dC0, es * d.lc, cudaMemcpyDeviceToDevice, s);
            CHECK(cudaGraphLaunch(exec, s) == cudaSuccess, "captured: launch %d", i);
        }
        cudaStreamSynchronize(s);
        stats_t s2 = stats_now();
        outcome o;
        compare(&o, &c, &d, dC);
        CHECK(o.worst <= 1.0 && o.outside_bad == 0,
              "captured %s %c (warm %d): replayed batch off by %.3g x bound, %zu outside changed",
              what, dbl ? 'D' : 'S', warm, o.worst, o.outside_bad);
        const uint64_t B = (uint64_t)c.batch, R = prot ? 2 : 0, F = R * (uint64_t)np;
        CHECK(s1.protected_gemms == s0.protected_gemms && s1.checks == s0.checks &&
                  s2.protected_gemms - s1.protected_gemms == R * B &&
                  s2.unprotected_gemms - s0.unprotected_gemms == (prot ? 0 : B) &&
                  (!fused || s2.checks - s1.checks == R * fused_checks(&c)) &&
                  (!prot || s2.checks > s1.checks) &&
                  s2.errors_detected - s1.errors_detected == F &&
                  s2.errors_corrected + s2.blocks_recomputed - s1.errors_corrected -
                          s1.blocks_recomputed >= F &&
                  s2.uncorrectable == s0.uncorrectable,
              "captured %s %c (warm %d): %llu protected at the capture, %llu in two replays "
              "(expected %llu), %llu unprotected, %llu checks (fused: %llu), %llu detected "
              "(expected %llu), %llu uncorrectable", what, dbl ? 'D' : 'S', warm,
              (unsigned long long)(s1.protected_gemms - s0.protected_gemms),
              (unsigned long long)(s2.protected_gemms - s1.protected_gemms),
              (unsigned long long)(R * B),
              (unsigned long long)(s2.unprotected_gemms - s0.unprotected_gemms),
              (unsigned long long)(s2.checks - s1.checks),
              (unsigned long long)(fused ? R * fused_checks(&c) : 0),
              (unsigned long long)(s2.errors_detected - s1.errors_detected),
              (unsigned long long)F, (unsigned long long)(s2.uncorrectable - s0.uncorrectable));
        cudaGraphExecDestroy(exec);
    }
    if (graph)
        cudaGraphDestroy(graph);
    cublasSetStream_v2(h, NULL);
    cudaStreamDestroy(s);
    cudaFree(dA); cudaFree(dB); cudaFree(dC); cudaFree(dC0); cudaFree(arr);
    release(&d);
    cases_run++;
    printf("captured %s %c (warm %d, beta %g): done\n", what, dbl ? 'D' : 'S', warm, beta);
}

/* Fault-free batches of random shapes, layouts, scalars and data. */
static void stress(cublasHandle_t h, int rounds)
{
    const uint64_t before = cases_run, checks_before = abft_checks;
    uint64_t fused = 0;
    seed_urand(base_seed);
    const cublasOperation_t ops[3] = {OPN, OPT, OPC};
    for (int r = 0; r < rounds; r++) {
        const int s = draw(4);
        bcase c = {.dbl = draw(2), .e = (entry)draw(E_COUNT), .ta = ops[draw(3)],
                   .tb = ops[draw(3)], .m = draw_dim(), .n = draw_dim(), .k = draw_dim(),
                   .batch = 2 + draw(19), .pad_a = draw(4), .pad_b = draw(4), .pad_c = draw(4),
                   .smode_a = draw(3), .smode_b = draw(3), .smode_c = draw(2),
                   .alpha = scal[s][0], .beta = scal[s][1], .nan_c = (int)scal[s][2],
                   .series = draw(3), .dev_scalars = draw(4) == 0, .reversed = draw(2),
                   .seed = case_seed(5, (uint64_t)r, 0)};
        fused += (uint64_t)fused_expected(&c);
        one(h, &c);
    }
    printf("stress: %llu random batches (%llu of them fused), %llu checks of the library\n",
           (unsigned long long)(cases_run - before), (unsigned long long)fused,
           (unsigned long long)(abft_checks - checks_before));
}

/* Exact data, where every result is an integer: A = I, B = 1, so C = 1 everywhere.
 * - A fault that makes an element Inf (an exponent bit of 1.0) must be corrected, not taken for
 *   rounding (a bound computed from the faulty value would be infinite and let it through).
 * - alpha = 0 with NaN in A: no product (BLAS), C = beta C exactly; nothing to protect, so every
 *   matrix goes to cuBLAS and counts as unprotected (as one GEMM with alpha 0 does). */
static void exact_cases(cublasHandle_t h, int dbl)
{
    enum { M = 16, G = 4 };
    const size_t es = dbl ? 8 : 4, per = (size_t)M * M;
    unsigned char *ha = malloc(es * per * G), *hb = malloc(es * per * G), *hc = malloc(es * per * G);
    void *dA = NULL, *dB = NULL, *dC = NULL;
    if (!ha || !hb || !hc || cudaMalloc(&dA, es * per * G) != cudaSuccess ||
        cudaMalloc(&dB, es * per * G) != cudaSuccess || cudaMalloc(&dC, es * per * G) != cudaSuccess) {
        CHECK(0, "exact %c: no memory", dbl ? 'D' : 'S');
        goto out;
    }
    for (size_t e = 0; e < per * G; e++) {
        const size_t i = e % M, j = (e / M) % M;
        const double a = i == j, b = 1.0;
        if (dbl) {
            ((double *)ha)[e] = a;
            ((double *)hb)[e] = b;
        } else {
            ((float *)ha)[e] = (float)a;
            ((float *)hb)[e] = (float)b;
        }
    }
    cudaMemcpy(dA, ha, es * per * G, cudaMemcpyHostToDevice);
    cudaMemcpy(dB, hb, es * per * G, cudaMemcpyHostToDevice);
    const double one = 1.0, zero = 0.0, half = 0.5;
    const float one_f = 1.0f, zero_f = 0.0f, half_f = 0.5f;
    /* 1: a flip to Inf in two of the four matrices */
    stats_t s0 = stats_now();
    if (!expect_off)
        plant_fault(2, 3, 5, dbl ? 62 : 30);
    cublasStatus_t st =
        dbl ? cublasDgemmStridedBatched(h, CUBLAS_OP_N, CUBLAS_OP_N, M, M, M, &one, dA, M, (long long)per,
                                        dB, M, (long long)per, &zero, dC, M, (long long)per, G)
            : cublasSgemmStridedBatched(h, CUBLAS_OP_N, CUBLAS_OP_N, M, M, M, &one_f, dA, M,
                                        (long long)per, dB, M, (long long)per, &zero_f, dC, M,
                                        (long long)per, G);
    cudaDeviceSynchronize();
    stats_t s1 = stats_now();
    cudaMemcpy(hc, dC, es * per * G, cudaMemcpyDeviceToHost);
    size_t wrong = 0;
    for (size_t e = 0; e < per * G; e++)
        wrong += (dbl ? ((double *)hc)[e] : (double)((float *)hc)[e]) != 1.0;
    CHECK(st == CUBLAS_STATUS_SUCCESS && wrong == 0, "exact %c, flip to Inf: status %d, %zu wrong",
          dbl ? 'D' : 'S', (int)st, wrong);
    if (!expect_off)
        CHECK(s1.errors_corrected - s0.errors_corrected >= 2 && s1.uncorrectable == s0.uncorrectable &&
                  s1.false_alarms == s0.false_alarms,
              "exact %c, flip to Inf: %llu corrected, %llu uncorrectable, %llu false alarms",
              dbl ? 'D' : 'S', (unsigned long long)(s1.errors_corrected - s0.errors_corrected),
              (unsigned long long)(s1.uncorrectable - s0.uncorrectable),
              (unsigned long long)(s1.false_alarms - s0.false_alarms));
    /* 2: alpha 0 over NaN in A, C = 2 and beta 0.5 */
    for (size_t e = 0; e < per * G; e++) {
        if (dbl) {
            ((double *)ha)[e] = NAN;
            ((double *)hc)[e] = 2.0;
        } else {
            ((float *)ha)[e] = NAN;
            ((float *)hc)[e] = 2.0f;
        }
    }
    cudaMemcpy(dA, ha, es * per * G, cudaMemcpyHostToDevice);
    cudaMemcpy(dC, hc, es * per * G, cudaMemcpyHostToDevice);
    s0 = stats_now();
    st = dbl ? cublasDgemmStridedBatched(h, CUBLAS_OP_N, CUBLAS_OP_T, M, M, M, &zero, dA, M,
                                         (long long)per, dB, M, (long long)per, &half, dC, M,
                                         (long long)per, G)
             : cublasSgemmStridedBatched(h, CUBLAS_OP_N, CUBLAS_OP_T, M, M, M, &zero_f, dA, M,
                                         (long long)per, dB, M, (long long)per, &half_f, dC, M,
                                         (long long)per, G);
    cudaDeviceSynchronize();
    s1 = stats_now();
    cudaMemcpy(hc, dC, es * per * G, cudaMemcpyDeviceToHost);
    wrong = 0;
    for (size_t e = 0; e < per * G; e++)
        wrong += (dbl ? ((double *)hc)[e] : (double)((float *)hc)[e]) != 1.0;
    /* cuBLAS's own answer (pass-through) is not this test's to judge */
    CHECK(st == CUBLAS_STATUS_SUCCESS && (expect_off || wrong == 0),
          "exact %c, alpha 0 over NaN: status %d, %zu wrong", dbl ? 'D' : 'S', (int)st, wrong);
    /* nothing to protect (C = beta C): every matrix plain and counted unprotected, in either
     * mode, as one GEMM with alpha 0 */
    CHECK(s1.protected_gemms == s0.protected_gemms &&
              s1.unprotected_gemms - s0.unprotected_gemms == G &&
              s1.errors_detected == s0.errors_detected && s1.false_alarms == s0.false_alarms,
          "exact %c, alpha 0 over NaN: %llu protected, %llu unprotected, %llu detected, %llu false "
          "alarms", dbl ? 'D' : 'S', (unsigned long long)(s1.protected_gemms - s0.protected_gemms),
          (unsigned long long)(s1.unprotected_gemms - s0.unprotected_gemms),
          (unsigned long long)(s1.errors_detected - s0.errors_detected),
          (unsigned long long)(s1.false_alarms - s0.false_alarms));
out:
    cudaFree(dA);
    cudaFree(dB);
    cudaFree(dC);
    free(ha);
    free(hb);
    free(hc);
}

/* A strided batch of 4 C matrices of 37 x 20 at ldc and stride_c sc, with beta 0.5. Where they
 * overlap (sc below ldc (n - 1) + m, 0 included, and not stacked by rows) cuBLAS leaves the
 * result undefined; protected, the matrices are computed and checked one after the other, so C
 * is what computing them in order gives (the oracle: the same order in long double, each
 * element's bound carried over into the next matrix's beta C), and nothing is detected or taken
 * for a false alarm (checked together, a matrix's check would see its successors' elements).
 * Stacked by rows within one column's stride (sc >= m, 3 sc + m <= ldc) they share nothing and
 * the batch is checked as a whole (exactly its checks counted, where the fused path is on).
 * Under --expect-off only the counts. */
static void strided_c(cublasHandle_t h, int dbl, int ldc, long long sc)
{
    const int m = 37, n = 20, k = 29, batch = 4;
    const int lda = m + 1, ldb = k;
    const long long sa = (long long)lda * k, sb = (long long)ldb * n;
    const int stacked = sc >= m && 3 * sc + m <= ldc;
    const size_t la = (size_t)sa * batch, lb = (size_t)sb * batch;
    const size_t lc = (size_t)sc * (batch - 1) + (size_t)ldc * n;
    const double alpha = dbl ? 1.25 : 0.75, beta = 0.5, u = dbl ? 0x1p-53 : 0x1p-24;
    rng_t r = {case_seed(9, (uint64_t)dbl, (uint64_t)(sc * 1000 + ldc))};
    double *A = malloc(sizeof(double) * la), *B = malloc(sizeof(double) * lb);
    double *C0 = malloc(sizeof(double) * lc), *bound = calloc(lc, sizeof(double));
    long double *ref = malloc(sizeof(long double) * lc);
    for (size_t i = 0; i < la; i++) A[i] = value(&r, 0, dbl);
    for (size_t i = 0; i < lb; i++) B[i] = value(&r, 0, dbl);
    for (size_t i = 0; i < lc; i++) C0[i] = value(&r, 0, dbl), ref[i] = C0[i];
    for (int b = 0; b < batch; b++)
        for (int j = 0; j < n; j++)
            for (int i = 0; i < m; i++) {
                long double s = 0, t = 0;
                for (int l = 0; l < k; l++) {
                    const long double x = (long double)A[(size_t)b * sa + i + (size_t)l * lda] *
                                          B[(size_t)b * sb + l + (size_t)j * ldb];
                    s += x;
                    t += fabsl(x);
                }
                const size_t e = (size_t)b * (size_t)sc + (size_t)i + (size_t)j * ldc;
                const long double v = (long double)alpha * s + (long double)beta * ref[e];
                bound[e] = 2.0 * (k + 2) * u * fabs(alpha) * (double)t +
                           2.0 * u * fabs(beta * (double)ref[e]) + fabs(beta) * bound[e] +
                           (dbl ? 1e-300 : 1e-37);
                ref[e] = v;
            }
    void *dA = to_device(A, la, dbl), *dB = to_device(B, lb, dbl), *dC = to_device(C0, lc, dbl);
    const double sd[2] = {alpha, beta};
    const float sf[2] = {(float)alpha, (float)beta};
    const void *al = dbl ? (const void *)&sd[0] : (const void *)&sf[0];
    const void *be = dbl ? (const void *)&sd[1] : (const void *)&sf[1];
    const stats_t s0 = stats_now();
    const cublasStatus_t st =
        dbl ? cublasDgemmStridedBatched(h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, al, dA, lda, sa, dB,
                                        ldb, sb, be, dC, ldc, sc, batch)
            : cublasSgemmStridedBatched(h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, al, dA, lda, sa, dB,
                                        ldb, sb, be, dC, ldc, sc, batch);
    const size_t es = dbl ? 8 : 4;
    unsigned char *hc = malloc(es * lc);
    const int got = st == CUBLAS_STATUS_SUCCESS &&
                    cudaMemcpy(hc, dC, es * lc, cudaMemcpyDeviceToHost) == cudaSuccess;
    const stats_t s1 = stats_now();
    CHECK(got, "C at ldc %d, stride %lld, %c: status %d", ldc, sc, dbl ? 'D' : 'S', (int)st);
    if (got && !expect_off) {
        double worst = 0;
        size_t wi = 0, outside = 0;
        for (size_t e = 0; e < lc; e++) {
            const double v = dbl ? ((double *)hc)[e] : (double)((float *)hc)[e];
            if (bound[e] == 0.0) { /* no matrix's element (padding rows): never written */
                outside += dbl ? memcmp(&C0[e], hc + 8 * e, 8) != 0
                               : ((float *)hc)[e] != (float)C0[e];
                continue;
            }
            const double q = error_ratio(v, (double)ref[e], bound[e]);
            if (q > worst)
                worst = q, wi = e;
        }
        CHECK(worst <= 1.0 && outside == 0,
              "C at ldc %d, stride %lld, %c: element %zu off by %.3g x bound (%.9g, in order "
              "%.9Lg), %zu padding elements changed", ldc, sc, dbl ? 'D' : 'S', wi,
              worst, dbl ? ((double *)hc)[wi] : (double)((float *)hc)[wi], ref[wi], outside);
        CHECK(s1.protected_gemms - s0.protected_gemms == (uint64_t)batch &&
                  s1.unprotected_gemms == s0.unprotected_gemms &&
                  s1.errors_detected == s0.errors_detected && s1.false_alarms == s0.false_alarms &&
                  s1.checks > s0.checks &&
                  (!stacked || !fused_mode ||
                   s1.checks - s0.checks == (uint64_t)batch *
                                               (uint64_t)((m + block_size - 1) / block_size) *
                                               (uint64_t)n),
              "C at ldc %d, stride %lld, %c: %llu protected (expected %d), %llu unprotected, "
              "%llu detected, %llu false alarms, %llu checks%s", ldc, sc, dbl ? 'D' : 'S',
              (unsigned long long)(s1.protected_gemms - s0.protected_gemms), batch,
              (unsigned long long)(s1.unprotected_gemms - s0.unprotected_gemms),
              (unsigned long long)(s1.errors_detected - s0.errors_detected),
              (unsigned long long)(s1.false_alarms - s0.false_alarms),
              (unsigned long long)(s1.checks - s0.checks),
              stacked && fused_mode ? " (checked as a whole: each matrix's)" : "");
    } else if (got) {
        CHECK(s1.unprotected_gemms - s0.unprotected_gemms == (uint64_t)batch &&
                  s1.protected_gemms == s0.protected_gemms,
              "C at ldc %d, stride %lld, %c: not passed through", ldc, sc, dbl ? 'D' : 'S');
    }
    cases_run++;
    cudaFree(dA); cudaFree(dB); cudaFree(dC);
    free(A); free(B); free(C0); free(bound); free(ref); free(hc);
    printf("C at ldc %d, stride %lld (%s), %c: done\n", ldc, sc,
           stacked ? "stacked by rows" : "overlapping", dbl ? 'D' : 'S');
}

int main(int argc, char **argv)
{
    const int start = test_start(argc, argv, &expect_off);
    if (start)
        return start;
    read_env();
    cublasHandle_t h;
    if (cublasCreate_v2(&h) != CUBLAS_STATUS_SUCCESS) {
        fprintf(stderr, "cublasCreate failed\n");
        return 1;
    }
    printf("batched: BLASFT_GPU_BATCHED %s, block size %d, promote %s, %s, seed %llu, %d oracle "
           "threads\n", fused_mode ? "fused" : "each", block_size, promote_on ? "on" : "auto/off",
           expect_off ? "expecting pass-through" : "expecting protection",
           (unsigned long long)base_seed, oracle_threads());
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    sweep(h);
    boundaries(h);
    if (!expect_off)
        planted(h);
    /* fresh streams first: a stream made after another was destroyed may take its handle
     * value, and with it that stream's context */
    for (int dbl = 0; dbl < 2; dbl++)
        captured(h, dbl, E_STRIDED_EX, 0, 0.0);
    for (int dbl = 0; dbl < 2; dbl++) {
        captured(h, dbl, E_STRIDED, 1, -0.5);
        captured(h, dbl, E_PTRS_EX_64, 1, 0.0);
    }
    for (int dbl = 0; dbl < 2; dbl++) {
        strided_c(h, dbl, 40, 0);
        strided_c(h, dbl, 40, 13 * 40);
        strided_c(h, dbl, 151, 37);
        strided_c(h, dbl, 151, 38);
    }
    exact_cases(h, 0);
    exact_cases(h, 1);
    stress(h, 200);
    const double seconds = seconds_since(&t0);
    cublasDestroy_v2(h);
    printf("%llu cases, %llu checks of the library in them, %.1f s; %d checks, %d failures\n",
           (unsigned long long)cases_run, (unsigned long long)abft_checks, seconds, checks,
           failures);
    return failures ? 1 : 0;
}
