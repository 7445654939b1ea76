/* Batches of reduced-precision GEMMs through the interposer (suite 'cublas', run with
 * LD_PRELOAD=libblas_ft.so): cublasGemmStridedBatchedEx, cublasGemmBatchedEx and the _64 form of
 * each with A and B in half (CUDA_R_16F) or bfloat16 (CUDA_R_16BF), C of their type or float,
 * compute type CUBLAS_COMPUTE_32F or CUBLAS_COMPUTE_32F_PEDANTIC, float scalars, on fresh seeded
 * data per case (test_cublas_lowp.c's series: uniform in [-1, 1], uniform in [0, 1], mixed
 * magnitudes 2^-6 .. 2^6 scaled down where C is half so that no sum can overflow it): batches of
 * 1, 2, 3, 5, 17, 40 and 300 matrices, awkward shapes (1x1x1, 1x7x3, 7x1x5, primes 37x41x43,
 * m not a multiple of the block size, k = 1), larger batches (4 x 512x384x640; 3 x 4096x4096x64
 * with odd gaps, which the engine takes one matrix at a time), every transpose
 * pair (C as T for real data), leading dimensions above the rows with NaN in A's and B's padding (a
 * read of it shows in C), scalars (1, 0), (0.5, -2), (-1.25, 1) and beta = 0 over a C of NaN (C
 * must not be read), scalars in device memory, the handle's math mode CUBLAS_DEFAULT_MATH or with
 * CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION; the layouts of the batch: strides of one
 * matrix, strides with an odd gap after each matrix (NaN in A's and B's gaps; matrices that start
 * at any element), a stride of 0 for A, for B or for both (one matrix for the whole batch);
 * pointer arrays (device arrays) in order, reversed or shuffled, all of A's (or B's) pointers the
 * same, or repeated (matrix i takes the (i mod 3)-th), every matrix 16 bytes aligned (as cuBLAS
 * asks of such pointers) with or without a gap. C's matrices never overlap.
 *
 * The oracle: long double on the exact 16-bit values, matrix by matrix (the matrices each call's
 * pointers or strides name), v = alpha sum_l op(A)(i,l) op(B)(l,j) + beta C(i,j). Every element
 * must hold |c - v| <= u |v| + (k + 4) 2^-22 (|alpha| sum_l |a_il b_lj| + |beta C(i,j)|) + tiny,
 * u = 2^-11 (half C), 2^-8 (bfloat16 C), 2^-24 (float C), tiny = 2^-24 for a half C, else 1e-38
 * (NaN or Inf fails; half_test.h's lowp_bound, as test_cublas_lowp.c). Everything else in C's
 * buffer (the padding rows, the gaps between matrices, the whole buffer where m, n or the batch
 * is 0) must stay as it was, bit for bit. Above 2^27 multiply-adds in the batch the oracle takes
 * per matrix 2000 random elements and a grid of 25 (the planted one among them), and every other
 * element must be finite. Results that cuBLAS computes itself (BLASFT_MODE=off)
 * with a 16-bit C and reductions in C's type allowed get 32 u (|alpha| sum |ab| + |beta C|) more.
 *
 * Counters: a protected batch is one protected call: it adds exactly batchCount protected GEMMs,
 * no unprotected one and exactly batchCount ceil(m / BS) n checks (BS: BLASFT_BLOCK_SIZE, else
 * 256; a batch of 1 is a single GEMM: 1 and ceil(m / BS) n); a fault-free one detects, corrects,
 * injects and finds uncorrectable nothing (a false alarm, a flag with nothing corrected, is
 * allowed: counted and printed at the end).
 * Planted faults (blasft_cublas_plant_fault(count, row, col, bit): one plant in each of the call's
 * first `count` matrices, count up to 16: 1 of 1, 2 of 2, 3 of 3, 3 of 5, 4 of 4, 16 of 40; at the
 * grid element whose results in those matrices are largest against their rounding bound, or at a
 * row and column beyond C, clamped to its last element): a flip of a high exponent bit (14 and 13
 * of a 16-bit C, 30 and 29 of a float C) must be injected `count` times, detected and corrected
 * exactly `count` times, nothing uncorrectable, at least the batch's own checks, every planted
 * element within the oracle's bound and every other element of every matrix too; a flip of a low
 * mantissa bit (0, 3) need not be detected (at most `count` detections), nothing is
 * uncorrectable, every other element is within the bound, the flipped ones too where all were
 * detected, else off by at most the flip's own size (2^(b - mantissa bits) of the element).
 * Not protected, counted batchCount unprotected with no checks, within the loose bound of half
 * accumulation ((k + 2) 2^-10 (|alpha| sum |ab| + |beta C|) + u |v| + tiny + k 2^-24): cublasHgemm-
 * StridedBatched, cublasHgemmBatched and their _64 forms, GemmStridedBatchedEx and GemmBatchedEx
 * (and _64) with CUBLAS_COMPUTE_16F(_PEDANTIC) (half scalars). A batch of each of the four
 * protected entry points captured into a graph (after one uncaptured call of the same shape;
 * one also on a fresh stream) with faults planted in two matrices is protected at each of two
 * replays, the faults corrected each time. Then edges (batchCount 0: success, C untouched,
 * nothing counted; k = 0: C = beta C per matrix; m = 0 and n = 0: C untouched; none of them
 * protected, checked or detected, at most batchCount unprotected) and a fault-free stress of 150
 * random calls (entry points protected or not, types, compute types, shapes up to 200, batches of
 * 1 to 20, transposes, layouts, pointer orders, scalars, math modes, seeds).
 * --expect-off: run under BLASFT_MODE=off, every batch passes through, counted batchCount
 * unprotected with no checks, no fault is planted, and the results are still judged.
 * LOWP_SEED=<n> changes the data (the default is fixed). Exits 77 without a GPU. */
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "half_test.h"
#include "interpose_test.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Declared by cuBLAS for C++ only; 16-bit words stand in for __half (data by pointer). */
cublasStatus_t cublasHgemmStridedBatched(cublasHandle_t, cublasOperation_t, cublasOperation_t, int,
                                         int, int, const uint16_t *, const uint16_t *, int,
                                         long long, const uint16_t *, int, long long,
                                         const uint16_t *, uint16_t *, int, long long, int);
cublasStatus_t cublasHgemmStridedBatched_64(cublasHandle_t, cublasOperation_t, cublasOperation_t,
                                            int64_t, int64_t, int64_t, const uint16_t *,
                                            const uint16_t *, int64_t, long long,
                                            const uint16_t *, int64_t, long long,
                                            const uint16_t *, uint16_t *, int64_t, long long,
                                            int64_t);
cublasStatus_t cublasHgemmBatched(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int,
                                  int, const uint16_t *, const uint16_t *const *, int,
                                  const uint16_t *const *, int, const uint16_t *,
                                  uint16_t *const *, int, int);
cublasStatus_t cublasHgemmBatched_64(cublasHandle_t, cublasOperation_t, cublasOperation_t, int64_t,
                                     int64_t, int64_t, const uint16_t *, const uint16_t *const *,
                                     int64_t, const uint16_t *const *, int64_t, const uint16_t *,
                                     uint16_t *const *, int64_t, int64_t);

/* E_PROTECTABLE: the entry points before it are the protected ones */
typedef enum { E_STRIDED, E_STRIDED_64, E_PTRS, E_PTRS_64, E_HSTRIDED, E_HSTRIDED_64, E_HPTRS,
               E_HPTRS_64, E_COUNT, E_PROTECTABLE = E_HSTRIDED } entry;
static const char *const entry_names[] = {"GemmStridedBatchedEx", "GemmStridedBatchedEx_64",
                                          "GemmBatchedEx", "GemmBatchedEx_64",
                                          "HgemmStridedBatched", "HgemmStridedBatched_64",
                                          "HgemmBatched", "HgemmBatched_64"};
static int is_ptrs(entry e)
{
    return e == E_PTRS || e == E_PTRS_64 || e == E_HPTRS || e == E_HPTRS_64;
}

/* Where A's (B's) matrix of each of the call's matrices is: M_OWN its own, packed; M_GAP its own,
 * a gap of NaN after each; M_ONE one matrix for the whole batch (stride 0, or every pointer the
 * same); M_FEW (pointer arrays) matrix i takes the (i mod 3)-th of three. */
enum { M_OWN, M_GAP, M_ONE, M_FEW };
/* the order of a pointer-array batch's matrices in memory: as the call's, reversed, shuffled
 * (A's, B's and C's alike, where they have their own) */
enum { O_IN, O_REVERSED, O_SHUFFLED };

/* A case: entry point, types, shape, layout, scalars and data. */
typedef struct bcase {
    entry e;
    etype in, out; /* A's and B's type; C's */
    compute ct;
    cublasOperation_t ta, tb;
    int m, n, k, batch;
    int pad_a, pad_b, pad_c; /* leading dimension above the stored rows */
    int mode_a, mode_b;      /* M_OWN, M_GAP, M_ONE, M_FEW */
    int gap_c;               /* a gap after each of C's matrices */
    int order;               /* pointer arrays: O_IN, O_REVERSED, O_SHUFFLED */
    double alpha, beta;
    int nan_c;       /* C (all of its buffer) filled with NaN: beta must be 0 */
    int series;      /* 0 uniform [-1, 1], 1 uniform [0, 1], 2 mixed magnitudes */
    int dev_scalars; /* alpha and beta in device memory (CUBLAS_POINTER_MODE_DEVICE) */
    int math;        /* 1: CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION on the handle */
    uint64_t seed;
} bcase;

/* the fields an entry point fixes: Hgemm is half throughout, as is 16-bit compute; a strided
 * batch has no order and no repeated matrices */
static void normalize(bcase *c)
{
    if (c->e >= E_HSTRIDED && !is_half_compute(c->ct))
        c->ct = CT_16F;
    if (is_half_compute(c->ct))
        c->in = c->out = T_F16;
    if (c->out != T_F32)
        c->out = c->in;
    if (!is_ptrs(c->e)) {
        c->order = O_IN;
        c->mode_a = c->mode_a == M_FEW ? M_OWN : c->mode_a;
        c->mode_b = c->mode_b == M_FEW ? M_OWN : c->mode_b;
    }
}

/* ---- what the environment makes of a batch ---- */

static int expect_off, block_size = 256;
static uint64_t base_seed = 20261207;

/* 1 where case c must be protected (uncaptured, m n k >= 1, at least one matrix) */
static int protected_expected(const bcase *c)
{
    return !expect_off && c->e < E_PROTECTABLE && !is_half_compute(c->ct) && c->m > 0 &&
           c->n > 0 && c->k > 0 && c->batch > 0;
}

static uint64_t expected_checks(const bcase *c)
{
    return (uint64_t)c->batch * (uint64_t)((c->m + block_size - 1) / block_size) * (uint64_t)c->n;
}

static uint64_t case_seed(uint64_t a, uint64_t b, uint64_t c)
{
    return seed_of(base_seed, a, b, c);
}

/* ---- layout, data and the oracle ---- */

typedef struct bdata {
    int ar, ac, br, bc; /* stored rows and columns of each of A's and B's matrices */
    int lda, ldb, ldc;
    size_t na, nb, nc;  /* elements of one matrix's storage: ld x columns */
    size_t sa, sb, sc;  /* elements from one stored matrix to the next (strided: the strides) */
    int ga, gb, gc;     /* matrices stored */
    size_t la, lb, lc;  /* elements of each buffer */
    int *amap, *bmap, *cmap; /* the stored matrices of the call's matrix b */
    int *cinv;          /* the call's matrix of stored C g */
    void *A, *B, *C0;   /* the buffers as uploaded */
    double *ref, *bound; /* the call's matrix b's m x n (ld m) from b m n on; bound < 0: not in
                            the oracle's sample */
    int sampled;
} bdata;

static int imax(int a, int b) { return a > b ? a : b; }

static int stored_of(int mode, int batch)
{
    return mode == M_ONE ? 1 : mode == M_FEW ? (batch < 3 ? imax(batch, 1) : 3) : imax(batch, 1);
}

static void layout(bdata *d, const bcase *c)
{
    d->ar = c->ta == CUBLAS_OP_N ? c->m : c->k, d->ac = c->ta == CUBLAS_OP_N ? c->k : c->m;
    d->br = c->tb == CUBLAS_OP_N ? c->k : c->n, d->bc = c->tb == CUBLAS_OP_N ? c->n : c->k;
    d->lda = imax(d->ar, 1) + c->pad_a;
    d->ldb = imax(d->br, 1) + c->pad_b;
    d->ldc = imax(c->m, 1) + c->pad_c;
    d->na = (size_t)d->lda * (size_t)imax(d->ac, 1);
    d->nb = (size_t)d->ldb * (size_t)imax(d->bc, 1);
    d->nc = (size_t)d->ldc * (size_t)imax(c->n, 1);
    /* strided: odd gaps, matrices that start off any alignment wider than the element's; pointer
     * arrays: every matrix 16 bytes aligned (cuBLAS asks it of the arrays' pointers, which it
     * cannot see on the host) */
    d->sa = c->mode_a == M_ONE ? 0 : d->na + (c->mode_a == M_GAP ? 5 : 0);
    d->sb = c->mode_b == M_ONE ? 0 : d->nb + (c->mode_b == M_GAP ? 3 : 0);
    d->sc = d->nc + (c->gap_c ? 7 : 0);
    if (is_ptrs(c->e)) {
        const size_t ai = 16 / esize(c->in), ao = 16 / esize(c->out);
        d->sa = (d->sa + ai - 1) / ai * ai;
        d->sb = (d->sb + ai - 1) / ai * ai;
        d->sc = (d->sc + ao - 1) / ao * ao;
    }
    d->ga = stored_of(c->mode_a, c->batch);
    d->gb = stored_of(c->mode_b, c->batch);
    d->gc = imax(c->batch, 1);
    d->la = (size_t)(d->ga - 1) * d->sa + d->na;
    d->lb = (size_t)(d->gb - 1) * d->sb + d->nb;
    d->lc = (size_t)(d->gc - 1) * d->sc + d->nc;
    const int B = c->batch, n = imax(B, 1);
    d->amap = malloc(sizeof(int) * (size_t)n);
    d->bmap = malloc(sizeof(int) * (size_t)n);
    d->cmap = malloc(sizeof(int) * (size_t)n);
    d->cinv = malloc(sizeof(int) * (size_t)n);
    for (int b = 0; b < B; b++)
        d->cmap[b] = c->order == O_REVERSED ? B - 1 - b : b;
    if (c->order == O_SHUFFLED) {
        rng_t r = {c->seed ^ 0x632be59bd9b4e019ull};
        for (int b = B - 1; b > 0; b--) {
            const int o = below(&r, b + 1), t = d->cmap[b];
            d->cmap[b] = d->cmap[o], d->cmap[o] = t;
        }
    }
    for (int b = 0; b < B; b++) {
        d->cinv[d->cmap[b]] = b;
        d->amap[b] = c->mode_a == M_ONE ? 0 : c->mode_a == M_FEW ? b % d->ga : d->cmap[b];
        d->bmap[b] = c->mode_b == M_ONE ? 0 : c->mode_b == M_FEW ? b % d->gb : d->cmap[b];
    }
    d->ref = d->bound = NULL;
    d->sampled = 0;
}

/* A and B: NaN everywhere (padding, gaps), then every stored matrix's elements of the series (the
 * mixed one under a half C scaled: lowp_scales). C: uniform in [-1, 1] everywhere, or NaN
 * everywhere where nan_c. */
static void fill(bdata *d, const bcase *c)
{
    rng_t r = {c->seed};
    double scale_a, scale_b;
    lowp_scales(c->series, c->out, c->k, &scale_a, &scale_b);
    d->A = lowp_operand(d->la, c->in, d->ga, d->sa, d->ar, d->ac, d->lda, &r, c->series, scale_a);
    d->B = lowp_operand(d->lb, c->in, d->gb, d->sb, d->br, d->bc, d->ldb, &r, c->series, scale_b);
    d->C0 = malloc(esize(c->out) * d->lc);
    for (size_t i = 0; i < d->lc; i++)
        store(d->C0, i, c->nan_c ? NAN : lowp_value(&r, 0, 1.0), c->out);
}

/* The reference and bound of element (i, j) of the call's matrix b from its op(A) as rows of k
 * (At) and op(B) as columns of k (Bt). passthrough: cuBLAS computes it (see the header). */
static void oracle_at(bdata *d, const bcase *c, const double *At, const double *Bt, int b, int i,
                      int j, int passthrough)
{
    const size_t mn = (size_t)c->m * (size_t)c->n, k = (size_t)c->k;
    const size_t o = (size_t)b * mn + (size_t)i + (size_t)j * (size_t)c->m;
    if (d->bound[o] >= 0)
        return;
    /* beta = 0: C is not read (it may be NaN) */
    const size_t p = (size_t)d->cmap[b] * d->sc + (size_t)i + (size_t)j * (size_t)d->ldc;
    const double c0 = c->beta != 0 ? load(d->C0, p, c->out) : 0;
    double v, mag;
    lowp_element(At + (size_t)i * k, Bt + (size_t)j * k, k, c->alpha, c->beta, c0, &v, &mag);
    d->ref[o] = v;
    d->bound[o] = lowp_bound(c->out, c->k, fabs(v), mag, is_half_compute(c->ct),
                             passthrough && !c->math);
}

/* Every element of every matrix, or (above ORACLE_FULL multiply-adds in the batch) per matrix the
 * grid and SAMPLES random ones. */
static void oracle(bdata *d, const bcase *c, int passthrough)
{
    const size_t m = (size_t)c->m, n = (size_t)c->n, k = (size_t)c->k, mn = m * n;
    const size_t all = mn * (size_t)imax(c->batch, 0);
    d->ref = malloc(sizeof(double) * (all ? all : 1));
    d->bound = malloc(sizeof(double) * (all ? all : 1));
    for (size_t o = 0; o < all; o++) d->bound[o] = -1.0;
    if (!all)
        return;
    double *At = malloc(sizeof(double) * m * (k ? k : 1));
    double *Bt = malloc(sizeof(double) * n * (k ? k : 1));
    const size_t lda = (size_t)d->lda, ldb = (size_t)d->ldb;
    d->sampled = (double)m * (double)n * (double)k * (double)c->batch > ORACLE_FULL;
    for (int b = 0; b < c->batch; b++) {
        const size_t oa = (size_t)d->amap[b] * d->sa, ob = (size_t)d->bmap[b] * d->sb;
        for (size_t i = 0; i < m; i++)
            for (size_t l = 0; l < k; l++)
                At[i * k + l] =
                    load(d->A, oa + (c->ta == CUBLAS_OP_N ? i + l * lda : l + i * lda), c->in);
        for (size_t j = 0; j < n; j++)
            for (size_t l = 0; l < k; l++)
                Bt[j * k + l] =
                    load(d->B, ob + (c->tb == CUBLAS_OP_N ? l + j * ldb : j + l * ldb), c->in);
        if (!d->sampled) {
            for (int j = 0; j < c->n; j++)
                for (int i = 0; i < c->m; i++) oracle_at(d, c, At, Bt, b, i, j, passthrough);
            continue;
        }
        for (int gi = 0; gi < GRID; gi++)
            for (int gj = 0; gj < GRID; gj++)
                oracle_at(d, c, At, Bt, b, grid_pos(c->m, gi), grid_pos(c->n, gj), passthrough);
        rng_t r = {c->seed ^ 0x5851f42d4c957f2dull ^ ((uint64_t)b << 32)};
        for (int s = 0; s < SAMPLES; s++) {
            const int i = below(&r, c->m), j = below(&r, c->n);
            oracle_at(d, c, At, Bt, b, i, j, passthrough);
        }
    }
    free(At);
    free(Bt);
}

static void release(bdata *d)
{
    free(d->A); free(d->B); free(d->C0); free(d->ref); free(d->bound);
    free(d->amap); free(d->bmap); free(d->cmap); free(d->cinv);
}

/* ---- the call ---- */

/* The bytes of a pointer-array batch's arrays: A's, B's and C's, each batch long, in one buffer */
static size_t arrays_bytes(const bcase *c)
{
    return 3 * (size_t)imax(c->batch, 1) * sizeof(void *);
}

/* Those arrays for matrices in A, B and C, written to `dev` (NULL: a buffer of their own); the
 * device arrays, or NULL where they cannot be had */
static void **make_arrays(const bcase *c, const bdata *d, void *A, void *B, void *C, void **dev)
{
    const size_t n = (size_t)c->batch, ei = esize(c->in), eo = esize(c->out);
    void **h = malloc(arrays_bytes(c));
    if (!h)
        return NULL;
    for (size_t b = 0; b < n; b++) {
        h[b] = (char *)A + ei * d->sa * (size_t)d->amap[b];
        h[n + b] = (char *)B + ei * d->sb * (size_t)d->bmap[b];
        h[2 * n + b] = (char *)C + eo * d->sc * (size_t)d->cmap[b];
    }
    if (!n)
        h[0] = h[1] = h[2] = C;
    if (!dev)
        dev = upload(h, arrays_bytes(c));
    else if (cudaMemcpy(dev, h, arrays_bytes(c), cudaMemcpyHostToDevice) != cudaSuccess)
        dev = NULL;
    free(h);
    return dev;
}

static cublasStatus_t call(cublasHandle_t h, const bcase *c, const bdata *d, const void *alpha,
                           const void *beta, const void *A, const void *B, void *C,
                           void *const *arr)
{
    const cudaDataType ti = cuda_types[c->in], to = cuda_types[c->out];
    const cublasComputeType_t ct = compute_types[c->ct];
    const cublasOperation_t ta = c->ta, tb = c->tb;
    const int m = c->m, n = c->n, k = c->k, bt = c->batch, lda = d->lda, ldb = d->ldb,
              ldc = d->ldc;
    const long long sa = (long long)d->sa, sb = (long long)d->sb, sc = (long long)d->sc;
    void *const *pa = arr, *const *pb = arr ? arr + bt : NULL;
    void *const *pc = arr ? arr + 2 * bt : NULL;
    const uint16_t *ha = alpha, *hb = beta;
    switch (c->e) {
    case E_STRIDED:
        return cublasGemmStridedBatchedEx(h, ta, tb, m, n, k, alpha, A, ti, lda, sa, B, ti, ldb, sb,
                                          beta, C, to, ldc, sc, bt, ct, CUBLAS_GEMM_DEFAULT);
    case E_STRIDED_64:
        return cublasGemmStridedBatchedEx_64(h, ta, tb, m, n, k, alpha, A, ti, lda, sa, B, ti, ldb,
                                             sb, beta, C, to, ldc, sc, bt, ct, CUBLAS_GEMM_DEFAULT);
    case E_PTRS:
        return cublasGemmBatchedEx(h, ta, tb, m, n, k, alpha, (const void *const *)pa, ti, lda,
                                   (const void *const *)pb, ti, ldb, beta, pc, to, ldc, bt, ct,
                                   CUBLAS_GEMM_DEFAULT);
    case E_PTRS_64:
        return cublasGemmBatchedEx_64(h, ta, tb, m, n, k, alpha, (const void *const *)pa, ti, lda,
                                      (const void *const *)pb, ti, ldb, beta, pc, to, ldc, bt, ct,
                                      CUBLAS_GEMM_DEFAULT);
    case E_HSTRIDED:
        return cublasHgemmStridedBatched(h, ta, tb, m, n, k, ha, A, lda, sa, B, ldb, sb, hb, C, ldc,
                                         sc, bt);
    case E_HSTRIDED_64:
        return cublasHgemmStridedBatched_64(h, ta, tb, m, n, k, ha, A, lda, sa, B, ldb, sb, hb, C,
                                            ldc, sc, bt);
    case E_HPTRS:
        return cublasHgemmBatched(h, ta, tb, m, n, k, ha, (const uint16_t *const *)pa, lda,
                                  (const uint16_t *const *)pb, ldb, hb, (uint16_t *const *)pc, ldc,
                                  bt);
    case E_HPTRS_64:
        return cublasHgemmBatched_64(h, ta, tb, m, n, k, ha, (const uint16_t *const *)pa, lda,
                                     (const uint16_t *const *)pb, ldb, hb, (uint16_t *const *)pc,
                                     ldc, bt);
    default:
        return CUBLAS_STATUS_INVALID_VALUE;
    }
}

/* ---- one case ---- */

enum { PLANT_MAX = 16 };

typedef struct outcome {
    cublasStatus_t st;
    double worst;       /* worst |C - ref| / bound but the planted elements' (> 1: wrong) */
    int wb, wi, wj;     /* where: the call's matrix, row, column */
    double wv, wref, wbound;
    size_t judged, nonfinite; /* elements against the oracle; others of the results not finite */
    size_t outside_bad; /* elements of C's padding and gaps (all of C's buffer where m, n or the
                           batch is 0) changed */
    int nplant;         /* faults planted: in the call's matrices 0 .. nplant - 1 */
    int64_t prow, pcol; /* at this element of each (-1: none) */
    double pq[PLANT_MAX], pv[PLANT_MAX], pref[PLANT_MAX], pbound[PLANT_MAX];
    stats_t s0, s1;
    int events_ok;      /* planted: the events name the batch's matrices (events_end) */
    char events_why[96];
} outcome;

/* C read back and judged: the oracle's elements against it, the rest of the results finite, the
 * rest of the buffer unchanged bit for bit */
static void compare(outcome *o, const bcase *c, const bdata *d, const void *dC)
{
    const size_t es = esize(c->out);
    unsigned char *h = malloc(es * d->lc);
    o->worst = 0;
    o->wb = o->wi = o->wj = -1;
    o->wv = o->wref = o->wbound = 0;
    o->judged = o->nonfinite = o->outside_bad = 0;
    for (int p = 0; p < PLANT_MAX; p++)
        o->pq[p] = INFINITY, o->pv[p] = o->pref[p] = o->pbound[p] = NAN;
    if (!h || cudaMemcpy(h, dC, es * d->lc, cudaMemcpyDeviceToHost) != cudaSuccess) {
        o->worst = INFINITY;
        free(h);
        return;
    }
    const size_t ldc = (size_t)d->ldc, mn = (size_t)c->m * (size_t)c->n;
    for (size_t p = 0; p < d->lc; p++) {
        const size_t g = p / d->sc, off = p % d->sc, i = off % ldc, j = off / ldc;
        if (g >= (size_t)c->batch || off >= d->nc || i >= (size_t)c->m || j >= (size_t)c->n) {
            o->outside_bad += memcmp(h + es * p, (const unsigned char *)d->C0 + es * p, es) != 0;
            continue;
        }
        const int b = d->cinv[g];
        const size_t o2 = (size_t)b * mn + i + j * (size_t)c->m;
        const double v = load(h, p, c->out);
        if (d->bound[o2] < 0) {
            o->nonfinite += !isfinite(v);
            continue;
        }
        o->judged++;
        const double q = error_ratio(v, d->ref[o2], d->bound[o2]);
        if (b < o->nplant && (int64_t)i == o->prow && (int64_t)j == o->pcol) {
            o->pq[b] = q, o->pv[b] = v, o->pref[b] = d->ref[o2], o->pbound[b] = d->bound[o2];
        } else if (q > o->worst || o->wb < 0) {
            o->worst = q > o->worst ? q : o->worst;
            o->wb = b, o->wi = (int)i, o->wj = (int)j;
            o->wv = v, o->wref = d->ref[o2], o->wbound = d->bound[o2];
        }
    }
    free(h);
}

/* The element where faults go: the grid's element whose results in the call's first `count`
 * matrices are largest against their rounding bound (a flip of a tiny element may change it by
 * less than a check can see). */
static void plant_site(const bcase *c, const bdata *d, int count, int64_t *row, int64_t *col)
{
    const size_t mn = (size_t)c->m * (size_t)c->n;
    double best = -1;
    *row = c->m / 2, *col = c->n / 2;
    for (int gi = 0; gi < GRID; gi++)
        for (int gj = 0; gj < GRID; gj++) {
            const int i = grid_pos(c->m, gi), j = grid_pos(c->n, gj);
            double worst = INFINITY;
            for (int b = 0; b < count; b++) {
                const size_t o2 = (size_t)b * mn + (size_t)i + (size_t)j * (size_t)c->m;
                const double q = d->bound[o2] < 0 ? 0 : fabs(d->ref[o2]) / d->bound[o2];
                worst = q < worst ? q : worst;
            }
            if (worst > best)
                best = worst, *row = i, *col = j;
        }
}

/* Case c on fresh data; `plant` faults (0: none) of bit `bit` planted first, at the plant site
 * or (clamp) at a row and column beyond C, which the interposer clamps to its last element. */
/* Device buffers a case runs in, kept from call to call (run_case_in): A, B, C, the arrays */
typedef struct dbufs {
    void *A, *B, *C;
    void **arr;
} dbufs;

/* Case c on fresh data, in buffers of its own, or in `keep`'s (not NULL: a call repeated on the
 * same buffers); `plant` faults of bit `bit` planted first (clamp: asked outside C). */
static void run_case_in(cublasHandle_t h, const bcase *c, int plant, int bit, int clamp,
                        outcome *o, const dbufs *keep)
{
    bdata d;
    layout(&d, c);
    fill(&d, c);
    oracle(&d, c, !protected_expected(c));
    o->nplant = plant;
    o->prow = o->pcol = -1;
    int64_t ask_row = -1, ask_col = -1;
    if (plant) {
        plant_site(c, &d, plant, &o->prow, &o->pcol);
        ask_row = o->prow, ask_col = o->pcol;
        if (clamp) {
            o->prow = c->m - 1, o->pcol = c->n - 1;
            ask_row = (int64_t)c->m + 1000, ask_col = (int64_t)c->n + 12345;
        }
    }
    const size_t ei = esize(c->in), eo = esize(c->out);
    void *dA, *dB, *dC;
    if (keep) {
        const int in =
            cudaMemcpy(keep->A, d.A, ei * d.la, cudaMemcpyHostToDevice) == cudaSuccess &&
            cudaMemcpy(keep->B, d.B, ei * d.lb, cudaMemcpyHostToDevice) == cudaSuccess &&
            cudaMemcpy(keep->C, d.C0, eo * d.lc, cudaMemcpyHostToDevice) == cudaSuccess;
        dA = in ? keep->A : NULL, dB = in ? keep->B : NULL, dC = in ? keep->C : NULL;
    } else {
        dA = upload(d.A, ei * d.la), dB = upload(d.B, ei * d.lb), dC = upload(d.C0, eo * d.lc);
    }
    void **arr = is_ptrs(c->e) && dA && dB && dC
                     ? make_arrays(c, &d, dA, dB, dC, keep ? keep->arr : NULL)
                     : NULL;
    scalars sc;
    set_scalars(&sc, h, c->alpha, c->beta, is_half_compute(c->ct), c->dev_scalars);
    set_math(h, c->math);
    o->s0 = stats_now();
    if (plant) {
        events_begin();
        CHECK(plant_fault(plant, ask_row, ask_col, bit) == 0, "plant_fault(%d, %lld, %lld, %d)",
              plant, (long long)ask_row, (long long)ask_col, bit);
    }
    o->st = dA && dB && dC && (!is_ptrs(c->e) || arr) && (!c->dev_scalars || sc.dev)
                ? call(h, c, &d, sc.alpha, sc.beta, dA, dB, dC, arr)
                : CUBLAS_STATUS_ALLOC_FAILED;
    o->s1 = stats_now();
    if (plant) {
        plant_fault(0, 0, 0, 0); /* what a wrong path left armed goes no further */
        /* each planted matrix named where every fault must be found (a call records its first
         * 16 events); a low bit's flip may go unseen, and with it its event */
        o->events_ok = events_end(c->batch, plant < 16 ? plant : 16, o->events_why,
                                  sizeof o->events_why);
    }
    unset_scalars(&sc, h);
    set_math(h, 0);
    compare(o, c, &d, dC); /* no C: everything wrong */
    if (!keep) {
        cudaFree(dA); cudaFree(dB); cudaFree(dC); cudaFree(arr);
    }
    release(&d);
}

static void run_case(cublasHandle_t h, const bcase *c, int plant, int bit, int clamp, outcome *o)
{
    run_case_in(h, c, plant, bit, clamp, o, NULL);
}

static void describe(char *buf, size_t cap, const bcase *c)
{
    static const char *const modes[] = {"own", "gap", "one", "few"};
    static const char *const orders[] = {"", " reversed", " shuffled"};
    snprintf(buf, cap,
             "%s %s->%s compute %s %c%c %dx%dx%d batch %d ld+%d/%d/%d A %s B %s C %s%s alpha %g "
             "beta %g%s series %d%s%s seed %llu",
             entry_names[c->e], type_names[c->in], type_names[c->out], compute_names[c->ct],
             "NTC"[c->ta], "NTC"[c->tb], c->m, c->n, c->k, c->batch, c->pad_a, c->pad_b, c->pad_c,
             modes[c->mode_a], modes[c->mode_b], c->gap_c ? "gap" : "own", orders[c->order],
             c->alpha, c->beta, c->nan_c ? " (C NaN)" : "", c->series,
             c->dev_scalars ? " device scalars" : "", c->math ? " disallow-reduced-reduction" : "",
             (unsigned long long)c->seed);
}

/* The verdict on a case: status, results, the rest of C's buffer, counters. plant: the faults
 * planted (0: fault-free), of bit `bit`. */
static void judge(const bcase *c, const outcome *o, int plant, int bit)
{
    char what[400];
    describe(what, sizeof what, c);
    if (plant) {
        const size_t len = strlen(what);
        snprintf(what + len, sizeof what - len, " planted %d bit %d at (%lld, %lld)", plant, bit,
                 (long long)o->prow, (long long)o->pcol);
    }
    const int prot = protected_expected(c);
    char at[160];
    snprintf(at, sizeof at, "matrix %d (%d, %d): %.9g, reference %.9g, bound %.3g", o->wb, o->wi,
             o->wj, o->wv, o->wref, o->wbound);
    judge_results(what, o->st, o->worst, at, o->nonfinite, o->outside_bad,
                  "C's padding or gaps");
    judge_counters(what, &o->s0, &o->s1, prot, (uint64_t)c->batch);
    if (!plant) {
        judge_fault_free(what, &o->s0, &o->s1, prot ? expected_checks(c) : 0);
        CHECK(DELTA(o, faults_injected) == 0, "%s: %llu faults injected", what,
              (unsigned long long)DELTA(o, faults_injected));
        return;
    }
    judge_planted(what, &o->s0, &o->s1, expected_checks(c), plant);
    const int p = mant_bits(c->out), high = bit >= p;
    if (high && !expect_off)
        CHECK(o->events_ok, "%s: events: %s", what, o->events_why);
    if (high) {
        CHECK(DELTA(o, errors_detected) == (uint64_t)plant &&
                  DELTA(o, errors_corrected) == (uint64_t)plant,
              "%s: %llu detected, %llu corrected (expected %d)", what,
              (unsigned long long)DELTA(o, errors_detected),
              (unsigned long long)DELTA(o, errors_corrected), plant);
        for (int b = 0; b < plant; b++)
            CHECK(o->pq[b] <= 1.0,
                  "%s: matrix %d's planted element %.9g, reference %.9g, bound %.3g", what, b,
                  o->pv[b], o->pref[b], o->pbound[b]);
        return;
    }
    const int all = DELTA(o, errors_detected) == (uint64_t)plant;
    CHECK(DELTA(o, errors_detected) <= (uint64_t)plant, "%s: %llu detected for %d faults", what,
          (unsigned long long)DELTA(o, errors_detected), plant);
    for (int b = 0; b < plant; b++) {
        /* each detected one corrected; an undetected one off by the flip at most */
        const double flip = all ? 0 : ldexp(1.0, bit - p) * (fabs(o->pref[b]) + o->pbound[b]);
        CHECK(fabs(o->pv[b] - o->pref[b]) <= o->pbound[b] + flip,
              "%s: matrix %d's planted element %.9g, reference %.9g, bound %.3g + flip %.3g (%llu "
              "detected)", what, b, o->pv[b], o->pref[b], o->pbound[b], flip,
              (unsigned long long)DELTA(o, errors_detected));
    }
}

static void one(cublasHandle_t h, const bcase *c)
{
    outcome o;
    run_case(h, c, 0, -1, 0, &o);
    judge(c, &o, 0, -1);
}

/* ---- the sections (their rotations: half_test.h's pairs, pads, scal) ---- */

/* (m, n, k, batch) */
static const int shapes[][4] = {{1, 1, 1, 1},       {1, 1, 1, 17},    {7, 1, 5, 3},
                                {1, 7, 3, 2},       {16, 16, 16, 2},  {16, 16, 16, 300},
                                {37, 41, 43, 3},    {64, 64, 32, 17}, {64, 64, 32, 300},
                                {257, 33, 40, 2},   {300, 7, 1, 5},   {100, 3, 257, 1}};
enum { NSHAPES = sizeof shapes / sizeof shapes[0] };

/* Every (protected entry point, A's type, C's type, shape); the other parameters rotate so that
 * each meets every transpose pair, both compute types, the leading dimensions, the layouts of
 * the batch, scalars, series, device scalars and math modes in turn. */
static void sweep(cublasHandle_t h)
{
    const uint64_t before = cases_run;
    for (int e = 0; e < E_PROTECTABLE; e++)
        for (int in = 0; in < 2; in++)
            for (int f32 = 0; f32 < 2; f32++)
                for (int i = 0; i < NSHAPES; i++) {
                    const int s = (i + 2 * e + in + f32) % 4;
                    const int p = (i + 3 * e + 5 * in + 2 * f32) % 6;
                    bcase c = {.e = (entry)e, .in = (etype)in, .out = f32 ? T_F32 : (etype)in,
                               .ct = (compute)((i + e + in) % 2), .ta = pairs[p][0],
                               .tb = pairs[p][1], .m = shapes[i][0], .n = shapes[i][1],
                               .k = shapes[i][2], .batch = shapes[i][3],
                               .pad_a = pads[(i + e) % 3], .pad_b = pads[(i + e + 1) % 3],
                               .pad_c = pads[(i + 2 * e + f32) % 3],
                               .mode_a = (i + e + 2 * in) % 4, .mode_b = (i + 2 * e + f32 + 1) % 4,
                               .gap_c = (i + in + e) % 2, .order = (i + e + f32) % 3,
                               .alpha = scal[s][0], .beta = scal[s][1], .nan_c = (int)scal[s][2],
                               .series = (i + e + in) % 3,
                               .dev_scalars = (i + e + in + f32) % 4 == 1,
                               .math = (i + e + f32) % 3 == 2,
                               .seed = case_seed(1, (uint64_t)(e * 4 + in * 2 + f32), (uint64_t)i)};
                    normalize(&c);
                    one(h, &c);
                }
    printf("sweep: %llu cases\n", (unsigned long long)(cases_run - before));
}

/* 4 x 512x384x640 for each pair of types (the oracle on a sample). */
static void large(cublasHandle_t h)
{
    const uint64_t before = cases_run;
    for (int t = 0; t < 4; t++) {
        const int in = t / 2, f32 = t % 2;
        bcase c = {.e = (entry)(t % E_PROTECTABLE), .in = (etype)in,
                   .out = f32 ? T_F32 : (etype)in, .ct = (compute)(t % 2), .ta = pairs[t][0],
                   .tb = pairs[t][1], .m = 512, .n = 384, .k = 640, .batch = 4, .pad_a = t % 3,
                   .pad_b = 3, .pad_c = (t + 1) % 3, .mode_a = t == 1 ? M_ONE : t % 2,
                   .mode_b = t == 2 ? M_ONE : M_OWN, .gap_c = t % 2, .order = t % 3,
                   .alpha = scal[t][0], .beta = scal[t][1], .nan_c = (int)scal[t][2],
                   .series = t % 3, .dev_scalars = t == 2, .math = t == 3,
                   .seed = case_seed(2, (uint64_t)t, 0)};
        normalize(&c);
        one(h, &c);
    }
    /* matrices large enough that the engine's buffers hold one at a time (a chunk of one), a
     * gap of an odd number of elements after each: matrix 1's A, B and C are not 16-byte
     * aligned where matrix 0's are */
    for (int t = 0; t < 2; t++) {
        bcase c = {.e = t ? E_STRIDED_64 : E_STRIDED, .in = (etype)t, .out = (etype)t,
                   .ct = CT_32F, .ta = CUBLAS_OP_N, .tb = CUBLAS_OP_N, .m = 4096, .n = 4096,
                   .k = 64, .batch = 3, .mode_a = M_GAP, .mode_b = M_GAP, .gap_c = 1,
                   .alpha = 1.0, .beta = 0.5, .seed = case_seed(2, 4 + (uint64_t)t, 0)};
        normalize(&c);
        one(h, &c);
    }
    printf("large: %llu cases\n", (unsigned long long)(cases_run - before));
}

/* The handle's math mode: CUBLAS_DEFAULT_MATH and with
 * CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION, both protected, through every entry point,
 * on a square-ish C and on a small C over a long k (where cuBLAS splits k), a 16-bit C. */
static void math_modes(cublasHandle_t h)
{
    static const int ms[2][4] = {{255, 257, 129, 3}, {16, 16, 2048, 5}};
    const uint64_t before = cases_run;
    for (int math = 0; math < 2; math++)
        for (int e = 0; e < E_PROTECTABLE; e++)
            for (int i = 0; i < 2; i++) {
                const int n = math * 8 + e * 2 + i;
                bcase c = {.e = (entry)e, .in = (etype)((e + i) % 2), .out = T_F16,
                           .ct = (compute)(n % 2), .ta = pairs[n % 4][0], .tb = pairs[n % 4][1],
                           .m = ms[i][0], .n = ms[i][1], .k = ms[i][2], .batch = ms[i][3],
                           .pad_a = 1, .pad_c = 2, .mode_a = n % 3, .gap_c = i,
                           .order = n % 3, .alpha = scal[n % 3][0], .beta = scal[n % 3][1],
                           .series = n % 3, .math = math, .seed = case_seed(3, (uint64_t)n, 0)};
                normalize(&c);
                one(h, &c);
            }
    printf("math modes: %llu cases\n", (unsigned long long)(cases_run - before));
}

/* The layouts of a batch through every protected entry point: strides of 0 for A, for B and for
 * both, gaps everywhere; pointer arrays reversed and shuffled, one A (or B) for all, repeated
 * pointers. */
static void layouts(cublasHandle_t h)
{
    static const struct { int mode_a, mode_b, gap_c, order; } lay[] = {
        {M_ONE, M_OWN, 0, O_IN},       {M_OWN, M_ONE, 1, O_IN},       {M_ONE, M_ONE, 0, O_IN},
        {M_GAP, M_GAP, 1, O_IN},       {M_OWN, M_OWN, 0, O_REVERSED}, {M_GAP, M_OWN, 1, O_SHUFFLED},
        {M_ONE, M_GAP, 0, O_REVERSED}, {M_FEW, M_OWN, 1, O_SHUFFLED}, {M_OWN, M_FEW, 0, O_REVERSED},
        {M_FEW, M_ONE, 1, O_IN}};
    static const int ls[][4] = {{37, 41, 43, 5}, {64, 64, 32, 17}, {16, 16, 16, 40},
                                {257, 33, 40, 3}};
    const uint64_t before = cases_run;
    int n = 0;
    for (int e = 0; e < E_PROTECTABLE; e++)
        for (size_t v = 0; v < sizeof lay / sizeof lay[0]; v++) {
            if (!is_ptrs((entry)e) && (lay[v].order != O_IN || lay[v].mode_a == M_FEW ||
                                       lay[v].mode_b == M_FEW))
                continue;
            const int *ps = ls[n % 4];
            const int s = (3 * n + 1) % 4, t = n % 4;
            bcase c = {.e = (entry)e, .in = (etype)(t / 2), .out = t % 2 ? T_F32 : (etype)(t / 2),
                       .ct = (compute)(n % 2), .ta = pairs[n % 6][0], .tb = pairs[n % 6][1],
                       .m = ps[0], .n = ps[1], .k = ps[2], .batch = ps[3], .pad_a = pads[n % 3],
                       .pad_b = pads[(n + 1) % 3], .pad_c = pads[(n + 2) % 3],
                       .mode_a = lay[v].mode_a, .mode_b = lay[v].mode_b, .gap_c = lay[v].gap_c,
                       .order = lay[v].order, .alpha = scal[s][0], .beta = scal[s][1],
                       .nan_c = (int)scal[s][2], .series = n % 3, .dev_scalars = n % 5 == 3,
                       .math = n % 3 == 2, .seed = case_seed(4, (uint64_t)n, 0)};
            n++;
            normalize(&c);
            one(h, &c);
        }
    printf("layouts: %llu cases\n", (unsigned long long)(cases_run - before));
}

/* Faults planted in the first `count` matrices of a batch: for each pair of types a high exponent
 * bit (two of them) and a low mantissa bit (two), on a rotation of shapes and counts (3 of 5, 16
 * of 40, a large batch with the sampled oracle), entry points, transposes, layouts, scalars (beta
 * = 0 over NaN too: the correction must not read C), math modes; then for each pair of types the
 * top exponent bit at a row and column beyond C (clamped into it). */
static void planted(cublasHandle_t h)
{
    static const int pshapes[][5] = {{64, 64, 64, 5, 3},     {37, 53, 29, 40, 16},
                                     {300, 257, 129, 3, 3},  {100, 3, 257, 2, 2},
                                     {16, 16, 16, 1, 1},     {512, 384, 640, 4, 4}};
    const uint64_t before = cases_run;
    int n = 0;
    for (int t = 0; t < 4; t++)
        for (int b = 0; b < 4; b++)
            for (int r = 0; r < 2; r++, n++) {
                const int in = t / 2, f32 = t % 2, s = n % 4;
                const int *ps = pshapes[n % 6];
                bcase c = {.e = (entry)(n % E_PROTECTABLE), .in = (etype)in,
                           .out = f32 ? T_F32 : (etype)in, .ct = (compute)((n / 4) % 2),
                           .ta = pairs[n % 6][0], .tb = pairs[n % 6][1], .m = ps[0], .n = ps[1],
                           .k = ps[2], .batch = ps[3], .pad_a = pads[n % 3],
                           .pad_b = pads[(n + 1) % 3], .pad_c = pads[(n + 2) % 3],
                           .mode_a = (n / 3) % 4, .mode_b = (n / 2 + 1) % 4, .gap_c = n % 2,
                           .order = (n / 5) % 3, .alpha = scal[s][0], .beta = scal[s][1],
                           .nan_c = (int)scal[s][2], .series = n % 3, .dev_scalars = n % 5 == 2,
                           .math = n % 3 == 1, .seed = case_seed(5, (uint64_t)n, 0)};
                normalize(&c);
                const int hi = f32 ? 30 : 14;
                const int bit = b == 0 ? hi : b == 1 ? hi - 1 : b == 2 ? 0 : 3;
                outcome o;
                run_case(h, &c, ps[4], bit, 0, &o);
                judge(&c, &o, ps[4], bit);
            }
    for (int t = 0; t < 4; t++, n++) {
        const int in = t / 2, f32 = t % 2;
        bcase c = {.e = (entry)((t + 2) % E_PROTECTABLE), .in = (etype)in,
                   .out = f32 ? T_F32 : (etype)in, .ct = (compute)(t % 2), .ta = pairs[t][0],
                   .tb = pairs[t][1], .m = 45, .n = 29, .k = 70, .batch = 5, .pad_c = 2,
                   .mode_a = t == 1 ? M_ONE : M_OWN, .order = O_REVERSED, .alpha = 1.0,
                   .beta = t % 2 ? 0.5 : 0.0, .series = t % 2,
                   .seed = case_seed(5, (uint64_t)n, 1)};
        normalize(&c);
        const int bit = f32 ? 30 : 14;
        outcome o;
        run_case(h, &c, 3, bit, 1, &o);
        judge(&c, &o, 3, bit);
    }
    printf("planted faults: %llu cases\n", (unsigned long long)(cases_run - before));
}

/* A batch repeated on the same buffers (and arrays) with fresh data each time, shuffled arrays
 * included: from its second sighting on the engine replays its own graph of it
 * (BLASFT_GPU_GRAPHS on or exact), which must read the data and the arrays of each call; every
 * result judged, every call counted; the fourth call plants faults (run directly), corrected.
 * The graphs made and replayed are counted. */
static void replayed(cublasHandle_t h)
{
    static const bcase base[] = {
        {.e = E_STRIDED, .in = T_F16, .out = T_F16, .ct = CT_32F, .ta = OPN, .tb = OPT, .m = 64,
         .n = 48, .k = 80, .batch = 7, .mode_a = M_GAP, .gap_c = 1, .alpha = 1.0},
        {.e = E_PTRS_64, .in = T_BF16, .out = T_F32, .ct = CT_32F, .ta = OPT, .tb = OPN, .m = 37,
         .n = 53, .k = 29, .batch = 9, .pad_c = 2, .mode_b = M_FEW, .order = O_SHUFFLED,
         .alpha = -1.25, .beta = 1.0, .series = 2},
        {.e = E_PTRS, .in = T_F16, .out = T_F16, .ct = CT_32F_PEDANTIC, .ta = OPN, .tb = OPN,
         .m = 100, .n = 3, .k = 257, .batch = 4, .order = O_REVERSED, .alpha = 0.5, .beta = -2.0,
         .math = 1},
    };
    enum { CALLS = 6, PLANTED = 3 };
    for (size_t i = 0; i < sizeof base / sizeof base[0]; i++) {
        bcase c = base[i];
        normalize(&c);
        bdata d;
        layout(&d, &c);
        const size_t ei = esize(c.in), eo = esize(c.out);
        dbufs keep = {NULL, NULL, NULL, NULL};
        const int got = cudaMalloc(&keep.A, ei * d.la) == cudaSuccess &&
                        cudaMalloc(&keep.B, ei * d.lb) == cudaSuccess &&
                        cudaMalloc(&keep.C, eo * d.lc) == cudaSuccess &&
                        cudaMalloc((void **)&keep.arr, arrays_bytes(&c)) == cudaSuccess;
        free(d.amap); free(d.bmap); free(d.cmap); free(d.cinv); /* layout's (sizes only) */
        CHECK(got, "replayed: cudaMalloc");
        const graph_mark before = graphs_now();
        for (int r = 0; r < CALLS && got; r++) {
            c.seed = case_seed(14, (uint64_t)i, (uint64_t)r);
            const int plant = r == PLANTED && !expect_off ? 2 : 0;
            const int bit = plant ? high_bit(c.out) : -1;
            outcome o;
            run_case_in(h, &c, plant, bit, 0, &o, &keep);
            judge(&c, &o, plant, bit);
        }
        char what[320];
        describe(what, sizeof what, &c);
        if (got)
            check_graph_counts(what, protected_expected(&c), CALLS, &before);
        cudaFree(keep.A); cudaFree(keep.B); cudaFree(keep.C); cudaFree(keep.arr);
    }
}

/* Not protected: cublasHgemmStridedBatched, cublasHgemmBatched (and _64), and the Ex entry points
 * with CUBLAS_COMPUTE_16F or its _PEDANTIC form, half scalars; counted batchCount unprotected
 * with no checks, the result within the loose bound. */
static void unprotected(cublasHandle_t h)
{
    static const int us[][4] = {{17, 13, 31, 3}, {64, 64, 64, 2}, {100, 3, 257, 17}};
    static const struct { entry e; compute ct; } who[] = {
        {E_HSTRIDED, CT_16F}, {E_HSTRIDED_64, CT_16F}, {E_HPTRS, CT_16F},
        {E_HPTRS_64, CT_16F}, {E_STRIDED, CT_16F},     {E_STRIDED_64, CT_16F_PEDANTIC},
        {E_PTRS, CT_16F_PEDANTIC}, {E_PTRS_64, CT_16F}};
    const uint64_t before = cases_run;
    for (int w = 0; w < 8; w++)
        for (int i = 0; i < 3; i++) {
            const int n = w * 3 + i, s = n % 4;
            bcase c = {.e = who[w].e, .in = T_F16, .out = T_F16, .ct = who[w].ct,
                       .ta = pairs[n % 6][0], .tb = pairs[n % 6][1], .m = us[i][0], .n = us[i][1],
                       .k = us[i][2], .batch = us[i][3], .pad_a = pads[n % 3],
                       .pad_b = pads[(n + 2) % 3], .pad_c = pads[(n + 1) % 3],
                       .mode_a = n % 4, .mode_b = (n + 1) % 3, .gap_c = n % 2, .order = n % 3,
                       .alpha = scal[s][0], .beta = scal[s][1], .nan_c = (int)scal[s][2],
                       .series = n % 3, .dev_scalars = n % 5 == 3, .math = n % 2,
                       .seed = case_seed(6, (uint64_t)n, 0)};
            normalize(&c);
            one(h, &c);
        }
    printf("unprotected: %llu cases\n", (unsigned long long)(cases_run - before));
}

/* A batch through protected entry point e captured into a graph on a stream of its own (after
 * one uncaptured call of the same shape there; for e = 0 also on a fresh stream, whose context
 * and buffer are made during the capture) and replayed twice over a C whose results were made
 * NaN, with faults (a high exponent bit) planted in its first two matrices at the capture: each
 * replay counts batchCount protected GEMMs and their checks and corrects both faults; nothing is
 * counted at the capture; C right after the replays. A float C by arrays of pointers gets no
 * fault (planting one there reads an address back, which a capture cannot). --expect-off: passed
 * through, batchCount unprotected once, no fault planted. */
static void captured(cublasHandle_t h, entry e, int warm)
{
    static const bcase variants[4] = {
        {.in = T_F16, .out = T_F16, .ct = CT_32F, .ta = OPN, .tb = OPT, .m = 37, .n = 53, .k = 29,
         .batch = 3, .pad_b = 2, .pad_c = 1, .mode_a = M_ONE, .gap_c = 1, .alpha = -1.25,
         .beta = 0.0, .series = 2},
        {.in = T_BF16, .out = T_F32, .ct = CT_32F_PEDANTIC, .ta = OPT, .tb = OPN, .m = 129,
         .n = 65, .k = 200, .batch = 4, .pad_a = 1, .pad_c = 3, .mode_b = M_GAP, .alpha = 0.5,
         .beta = 0.0, .series = 1},
        {.in = T_BF16, .out = T_BF16, .ct = CT_32F, .ta = OPN, .tb = OPN, .m = 64, .n = 64,
         .k = 32, .batch = 17, .pad_a = 1, .mode_a = M_FEW, .order = O_REVERSED, .alpha = 1.0,
         .beta = 0.0, .series = 0},
        {.in = T_F16, .out = T_F32, .ct = CT_32F_PEDANTIC, .ta = OPT, .tb = OPT, .m = 45, .n = 29,
         .k = 70, .batch = 5, .pad_c = 2, .gap_c = 1, .order = O_SHUFFLED, .alpha = 0.5,
         .beta = 0.0, .series = 0},
    };
    bcase c = variants[e];
    c.e = e;
    c.seed = case_seed(7, (uint64_t)e, (uint64_t)warm);
    normalize(&c);
    char what[400];
    describe(what, sizeof what, &c);
    bdata d;
    layout(&d, &c);
    fill(&d, &c);
    oracle(&d, &c, expect_off);
    const int np = expect_off || (is_ptrs(e) && c.out == T_F32) ? 0 : 2;
    int64_t prow = -1, pcol = -1;
    if (np)
        plant_site(&c, &d, np, &prow, &pcol);
    const int bit = high_bit(c.out);
    const size_t ei = esize(c.in), eo = esize(c.out);
    void *dA = upload(d.A, ei * d.la), *dB = upload(d.B, ei * d.lb), *dC = upload(d.C0, eo * d.lc);
    void **arr = is_ptrs(e) && dA && dB && dC ? make_arrays(&c, &d, dA, dB, dC, NULL) : NULL;
    const float sf[2] = {(float)c.alpha, (float)c.beta};
    capture g;
    capture_open(&g, h);
    const int ok = dA && dB && dC && (!is_ptrs(e) || arr);
    if (warm)
        CHECK(ok && call(h, &c, &d, &sf[0], &sf[1], dA, dB, dC, arr) == CUBLAS_STATUS_SUCCESS,
              "captured %s: warm-up", what);
    cublasStatus_t st = CUBLAS_STATUS_NOT_INITIALIZED;
    if (capture_begin(&g, ok, what, np, prow, pcol, bit))
        st = call(h, &c, &d, &sf[0], &sf[1], dA, dB, dC, arr);
    if (capture_end(&g, st, what, warm)) {
        /* NaN over the results (all ones is NaN in every type): a replay that did not run leaves
         * them wrong */
        for (int b = 0; b < c.batch; b++)
            cudaMemset2D((char *)dC + eo * d.sc * (size_t)b, eo * (size_t)d.ldc, 0xff,
                         eo * (size_t)c.m, (size_t)c.n);
        capture_replays(&g, what);
        outcome o = {.prow = -1, .pcol = -1};
        compare(&o, &c, &d, dC);
        CHECK(o.worst <= 1.0 && o.nonfinite == 0 && o.outside_bad == 0,
              "captured %s (warm %d): replayed batch off by %.3g x bound (matrix %d (%d, %d): "
              "%.9g, reference %.9g), %zu outside changed", what, warm, o.worst, o.wb, o.wi,
              o.wj, o.wv, o.wref, o.outside_bad);
        const uint64_t B = (uint64_t)c.batch, R = expect_off ? 0 : 2;
        char label[480];
        snprintf(label, sizeof label, "captured %s (warm %d)", what, warm);
        check_replays(label, &g.s0, &g.s1, &g.s2, R * B, R * expected_checks(&c),
                      R * (uint64_t)np, expect_off ? B : 0);
    }
    capture_close(&g, h);
    cudaFree(dA); cudaFree(dB); cudaFree(dC); cudaFree(arr);
    release(&d);
    cases_run++;
    printf("captured %s %s->%s (warm %d): done\n", entry_names[e], type_names[c.in],
           type_names[c.out], warm);
}

/* Batches of 0 matrices (success, C untouched, nothing counted), k = 0 (C = beta C per matrix;
 * beta = 0 over NaN: zeros), m = 0 and n = 0 (C untouched), through every protected entry point:
 * none protected, checked or detected, at most batchCount unprotected. */
static void edges(cublasHandle_t h)
{
    static const struct { int m, n, k, batch, s; } ed[] = {
        {37, 21, 0, 3, 1}, {300, 5, 0, 2, 3},    {0, 9, 13, 4, 2},
        {11, 0, 7, 2, 1},  {16, 16, 16, 0, 0},   {37, 41, 43, 0, 3}};
    for (int e = 0; e < E_PROTECTABLE; e++)
        for (size_t i = 0; i < sizeof ed / sizeof ed[0]; i++) {
            const int s = ed[i].s, n = e * 6 + (int)i;
            bcase c = {.e = (entry)e, .in = (etype)(n % 2),
                       .out = i % 2 ? T_F32 : (etype)(n % 2), .ct = (compute)(n % 2),
                       .ta = pairs[n % 4][0], .tb = pairs[n % 4][1], .m = ed[i].m, .n = ed[i].n,
                       .k = ed[i].k, .batch = ed[i].batch, .pad_a = 1, .pad_b = 2, .pad_c = 3,
                       .mode_a = n % 3, .gap_c = n % 2, .order = n % 3, .alpha = scal[s][0],
                       .beta = scal[s][1], .nan_c = (int)scal[s][2], .series = n % 3,
                       .seed = case_seed(8, (uint64_t)n, 0)};
            normalize(&c);
            char what[400];
            describe(what, sizeof what, &c);
            outcome o;
            run_case(h, &c, 0, -1, 0, &o);
            cases_run++;
            CHECK(o.st == CUBLAS_STATUS_SUCCESS && o.worst <= 1.0 && o.outside_bad == 0,
                  "edge %s: status %d, error %.3g x bound (matrix %d (%d, %d): %.9g, reference "
                  "%.9g), %zu outside changed", what, (int)o.st, o.worst, o.wb, o.wi, o.wj, o.wv,
                  o.wref, o.outside_bad);
            const uint64_t B = (uint64_t)c.batch;
            CHECK(DELTA(&o, protected_gemms) == 0 && DELTA(&o, checks) == 0 &&
                      DELTA(&o, errors_detected) == 0 && DELTA(&o, uncorrectable) == 0 &&
                      DELTA(&o, unprotected_gemms) <= B,
                  "edge %s: %llu protected, %llu unprotected (at most %llu), %llu checks, %llu "
                  "detected, %llu uncorrectable", what,
                  (unsigned long long)DELTA(&o, protected_gemms),
                  (unsigned long long)DELTA(&o, unprotected_gemms), (unsigned long long)B,
                  (unsigned long long)DELTA(&o, checks),
                  (unsigned long long)DELTA(&o, errors_detected),
                  (unsigned long long)DELTA(&o, uncorrectable));
        }
    printf("edges: done\n");
}

/* The stress section's round r (lowp_stress): a fault-free batch of random entry point (one in
 * ten not protected: Hgemm or 16-bit compute), types, compute type, shape up to 200, batch of 1
 * to 20, layout, pointer order, scalars, data and math mode; a protected one adds exactly its
 * checks, nothing detected or corrected. */
static void stress_round(cublasHandle_t h, int r)
{
    const int s = draw(4), in = draw(2), plain = draw(10) == 0;
    bcase c = {.e = (entry)(plain ? draw(E_COUNT) : draw(E_PROTECTABLE)), .in = (etype)in,
               .out = draw(2) ? T_F32 : (etype)in, .ct = (compute)(plain ? 2 + draw(2) : draw(2)),
               .ta = ops[draw(3)], .tb = ops[draw(3)], .m = draw_dim_to(200),
               .n = draw_dim_to(200), .k = draw_dim_to(200), .batch = 1 + draw(20),
               .pad_a = draw(4), .pad_b = draw(4), .pad_c = draw(4), .mode_a = draw(4),
               .mode_b = draw(4), .gap_c = draw(2), .order = draw(3), .alpha = scal[s][0],
               .beta = scal[s][1], .nan_c = (int)scal[s][2], .series = draw(3),
               .dev_scalars = draw(4) == 0, .math = draw(2), .seed = case_seed(9, (uint64_t)r, 0)};
    normalize(&c);
    one(h, &c);
}

/* The sections in their order (lowp_main runs and times them) */
static void sections(cublasHandle_t h)
{
    sweep(h);
    large(h);
    math_modes(h);
    layouts(h);
    if (!expect_off)
        planted(h);
    unprotected(h);
    for (int e = 0; e < E_PROTECTABLE; e++)
        captured(h, (entry)e, 1);
    captured(h, E_STRIDED, 0);
    replayed(h);
    edges(h);
    lowp_stress(h, 150, base_seed, "batches", stress_round);
}

int main(int argc, char **argv)
{
    return lowp_main(argc, argv, "lowp-batched", &expect_off, &block_size, &base_seed,
                     sections);
}
