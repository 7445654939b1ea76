/* Reduced-precision GEMMs through the interposer (suite 'cublas', run with
 * LD_PRELOAD=libblas_ft.so): cublasGemmEx, cublasGemmEx_64, cublasSgemmEx and cublasSgemmEx_64
 * with A and B in half (CUDA_R_16F) or bfloat16 (CUDA_R_16BF), C of their type or float, compute
 * type CUBLAS_COMPUTE_32F or CUBLAS_COMPUTE_32F_PEDANTIC (the SgemmEx: float implied), float
 * scalars, on fresh seeded data per case (uniform in [-1, 1], uniform in [0, 1], mixed
 * magnitudes: a random sign times 2^U, U uniform in [-6, 6], scaled down by a power of two where C
 * is half so that no sum can overflow it): awkward shapes (1x1x1, 1x7x3, primes, m not a multiple
 * of the block size, 300x200x1000), two large ones (1024^3, 513x1025x2049), every transpose pair
 * (C as T for real data), leading dimensions above the rows with NaN in A's and B's padding (a read
 * of it shows in C), scalars (1, 0), (0.5, -2), (-1.25, 1) and beta = 0 over a C of NaN (C must
 * not be read), scalars in device memory, and the handle's math mode CUBLAS_DEFAULT_MATH or with
 * CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION.
 *
 * The oracle: long double on the exact 16-bit values (this file's own conversions:
 * cuda_fp16.h's and cuda_bf16.h's are C++ only), v = alpha sum_l op(A)(i,l) op(B)(l,j) + beta C(i,j).
 * Every element must hold |c - v| <= u |v| + (k + 4) 2^-22 (|alpha| sum_l |a_il b_lj| + |beta C(i,j)|)
 * + tiny, u = 2^-11 (half C), 2^-8 (bfloat16 C), 2^-24 (float C), tiny = 2^-24 for a half C (its
 * subnormals), else 1e-38 (NaN or Inf fails). C's padding rows must stay as they were, bit for
 * bit. Above 2^27 multiply-adds the oracle takes 2000 random elements and a grid of 25 (the
 * planted one among them), and every other element must be finite.
 * Results that cuBLAS computes itself (BLASFT_MODE=off) with a 16-bit C and
 * reductions in C's type allowed (no CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION) get
 * 32 u (|alpha| sum |ab| + |beta C|) more: split-K partial sums may be rounded to C's type.
 *
 * Counters: a protected GEMM adds exactly 1 protected GEMM, no unprotected one and exactly
 * ceil(m / BS) n checks (BS: BLASFT_BLOCK_SIZE, else 256): that is how this test knows the
 * protected path ran; a fault-free one detects and corrects nothing (a false alarm is allowed:
 * counted and printed at the end).
 * Planted faults (blasft_cublas_plant_fault, one GEMM, at the element of the grid largest against
 * its rounding bound): a flip of a high exponent bit (14 and 13 of a 16-bit C, 30 and 29 of a
 * float C) must be injected, detected, corrected and leave C within the oracle's bound, none
 * uncorrectable; a flip of a low mantissa bit (0, 3) need not be detected, but nothing is
 * uncorrectable, every other element is within the bound and the flipped one too where it was
 * detected, else off by at most the flip's own size (2^(b - mantissa bits) of the element).
 * Not protected, counted unprotected with no checks: cublasHgemm and GemmEx with
 * CUBLAS_COMPUTE_16F(_PEDANTIC) (half scalars; within the loose bound (k + 2) 2^-10 (|alpha| sum
 * |ab| + |beta C|) + u |v| + (k + 1) 2^-24). A GemmEx captured into a graph with a planted fault
 * (on a warm stream and on a fresh one) is protected at each of two replays, the fault corrected
 * each time. Then edges (k = 0: C = beta C; m = 0 and n = 0: C untouched) and a fault-free
 * stress of 200 random calls (types, entry points, compute types, shapes up to 300, transposes,
 * scalars, layouts, math modes, seeds).
 * --expect-off: run under BLASFT_MODE=off, every GEMM passes through, counted unprotected with no
 * checks, no fault is planted, and the results are still judged.
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
cublasStatus_t cublasHgemm(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                           const uint16_t *, const uint16_t *, int, const uint16_t *, int,
                           const uint16_t *, uint16_t *, int);

/* E_PROTECTABLE: the entry points before it are the protected ones */
typedef enum { E_GEMMEX, E_GEMMEX_64, E_SGEMMEX, E_SGEMMEX_64, E_HGEMM, E_COUNT,
               E_PROTECTABLE = E_HGEMM } entry;
static const char *const entry_names[] = {"GemmEx", "GemmEx_64", "SgemmEx", "SgemmEx_64",
                                          "Hgemm"};

/* GemmEx's compute type (half_test.h's compute: SgemmEx 32F implied, Hgemm 16F); the element
 * types (half_test.h's type_names, cuda_types): A and B half or bfloat16, C of their type or
 * float */

/* A case: entry point, types, shape, layout, scalars and data. */
typedef struct lcase {
    entry e;
    etype in, out; /* A's and B's type; C's */
    compute ct;
    cublasOperation_t ta, tb;
    int m, n, k;
    int pad_a, pad_b, pad_c; /* leading dimension above the stored rows */
    double alpha, beta;
    int nan_c;       /* C (all of its buffer) filled with NaN: beta must be 0 */
    int series;      /* 0 uniform [-1, 1], 1 uniform [0, 1], 2 mixed magnitudes */
    int dev_scalars; /* alpha and beta in device memory (CUBLAS_POINTER_MODE_DEVICE) */
    int math;        /* 1: CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION on the handle */
    uint64_t seed;
} lcase;

/* the fields an entry point fixes: SgemmEx computes in float, Hgemm is half throughout */
static void normalize(lcase *c)
{
    if (c->e == E_SGEMMEX || c->e == E_SGEMMEX_64)
        c->ct = CT_32F;
    if (c->e == E_HGEMM) {
        c->ct = CT_16F;
        c->in = c->out = T_F16;
    }
    if (c->out != T_F32)
        c->out = c->in;
}

/* ---- what the environment makes of a GEMM ---- */

static int expect_off, block_size = 256;
static uint64_t base_seed = 20261205;

static int half_compute(const lcase *c) { return is_half_compute(c->ct); }

/* 1 where case c must be protected (uncaptured, m n k >= 1) */
static int protected_expected(const lcase *c)
{
    return !expect_off && c->e < E_PROTECTABLE && !half_compute(c) && c->m > 0 && c->n > 0 &&
           c->k > 0;
}

static uint64_t expected_checks(const lcase *c)
{
    return (uint64_t)((c->m + block_size - 1) / block_size) * (uint64_t)c->n;
}

/* ---- seeded data (interpose_test.h's lowp_value) ---- */

static uint64_t case_seed(uint64_t a, uint64_t b, uint64_t c)
{
    return seed_of(base_seed, a, b, c);
}

/* ---- layout, data and the oracle (its sample: half_test.h's ORACLE_FULL, SAMPLES, GRID) ---- */

typedef struct ldata {
    int ar, ac, br, bc; /* stored rows and columns of A and B */
    int lda, ldb, ldc;
    size_t la, lb, lc;  /* elements of each buffer: ld x columns */
    void *A, *B, *C0;   /* the buffers as uploaded */
    double *ref, *bound; /* m x n, column order, ld m; bound < 0: not in the oracle's sample */
    int sampled;
} ldata;

static int imax(int a, int b) { return a > b ? a : b; }

static void layout(ldata *d, const lcase *c)
{
    d->ar = c->ta == CUBLAS_OP_N ? c->m : c->k, d->ac = c->ta == CUBLAS_OP_N ? c->k : c->m;
    d->br = c->tb == CUBLAS_OP_N ? c->k : c->n, d->bc = c->tb == CUBLAS_OP_N ? c->n : c->k;
    d->lda = imax(d->ar, 1) + c->pad_a;
    d->ldb = imax(d->br, 1) + c->pad_b;
    d->ldc = imax(c->m, 1) + c->pad_c;
    d->la = (size_t)d->lda * (size_t)imax(d->ac, 1);
    d->lb = (size_t)d->ldb * (size_t)imax(d->bc, 1);
    d->lc = (size_t)d->ldc * (size_t)imax(c->n, 1);
    d->ref = d->bound = NULL;
    d->sampled = 0;
}

/* A and B: NaN everywhere, then the stored elements of the series; the mixed series under a half
 * C scaled by 2^-s (s split between A and B) so that |alpha| k max|a| max|b| + |beta| max|C| stays
 * below 2^14. C: uniform in [-1, 1] everywhere, or NaN everywhere where nan_c. */
static void fill(ldata *d, const lcase *c)
{
    rng_t r = {c->seed};
    double scale_a, scale_b;
    lowp_scales(c->series, c->out, c->k, &scale_a, &scale_b);
    d->A = lowp_operand(d->la, c->in, 1, 0, d->ar, d->ac, d->lda, &r, c->series, scale_a);
    d->B = lowp_operand(d->lb, c->in, 1, 0, d->br, d->bc, d->ldb, &r, c->series, scale_b);
    d->C0 = malloc(esize(c->out) * d->lc);
    for (size_t i = 0; i < d->lc; i++)
        store(d->C0, i, c->nan_c ? NAN : lowp_value(&r, 0, 1.0), c->out);
}

/* The reference and bound of element (i, j) from op(A) as rows of k (At) and op(B) as columns of
 * k (Bt). passthrough: cuBLAS computes it (see the header). */
static void oracle_at(ldata *d, const lcase *c, const double *At, const double *Bt, int i, int j,
                      int passthrough)
{
    const size_t o = (size_t)i + (size_t)j * (size_t)c->m, k = (size_t)c->k;
    if (d->bound[o] >= 0)
        return;
    /* beta = 0: C is not read (it may be NaN) */
    const double c0 =
        c->beta != 0 ? load(d->C0, (size_t)i + (size_t)j * (size_t)d->ldc, c->out) : 0;
    double v, mag;
    lowp_element(At + (size_t)i * k, Bt + (size_t)j * k, k, c->alpha, c->beta, c0, &v, &mag);
    d->ref[o] = v;
    d->bound[o] = lowp_bound(c->out, c->k, fabs(v), mag, half_compute(c), passthrough && !c->math);
}

/* The grid's element (gi, gj) of GRID x GRID over C */
static int grid_i(const lcase *c, int g) { return grid_pos(c->m, g); }
static int grid_j(const lcase *c, int g) { return grid_pos(c->n, g); }

/* Every element, or (above ORACLE_FULL multiply-adds) the grid and SAMPLES random ones. */
static void oracle(ldata *d, const lcase *c, int passthrough)
{
    const size_t m = (size_t)c->m, n = (size_t)c->n, k = (size_t)c->k, mn = m * n;
    d->ref = malloc(sizeof(double) * (mn ? mn : 1));
    d->bound = malloc(sizeof(double) * (mn ? mn : 1));
    for (size_t o = 0; o < mn; o++) d->bound[o] = -1.0;
    if (!mn)
        return;
    double *At = malloc(sizeof(double) * m * (k ? k : 1)), *Bt = malloc(sizeof(double) * n * (k ? k : 1));
    const size_t lda = (size_t)d->lda, ldb = (size_t)d->ldb;
    for (size_t i = 0; i < m; i++)
        for (size_t l = 0; l < k; l++)
            At[i * k + l] = load(d->A, c->ta == CUBLAS_OP_N ? i + l * lda : l + i * lda, c->in);
    for (size_t j = 0; j < n; j++)
        for (size_t l = 0; l < k; l++)
            Bt[j * k + l] = load(d->B, c->tb == CUBLAS_OP_N ? l + j * ldb : j + l * ldb, c->in);
    d->sampled = (double)m * (double)n * (double)k > ORACLE_FULL;
    if (!d->sampled) {
        for (int j = 0; j < c->n; j++)
            for (int i = 0; i < c->m; i++) oracle_at(d, c, At, Bt, i, j, passthrough);
    } else {
        for (int gi = 0; gi < GRID; gi++)
            for (int gj = 0; gj < GRID; gj++)
                oracle_at(d, c, At, Bt, grid_i(c, gi), grid_j(c, gj), passthrough);
        rng_t r = {c->seed ^ 0x5851f42d4c957f2dull};
        for (int s = 0; s < SAMPLES; s++) {
            const int i = below(&r, c->m), j = below(&r, c->n);
            oracle_at(d, c, At, Bt, i, j, passthrough);
        }
    }
    free(At);
    free(Bt);
}

static void release(ldata *d)
{
    free(d->A); free(d->B); free(d->C0); free(d->ref); free(d->bound);
}

/* ---- the call ---- */

static cublasStatus_t call(cublasHandle_t h, const lcase *c, const ldata *d, const void *alpha,
                           const void *beta, const void *A, const void *B, void *C)
{
    const cudaDataType ti = cuda_types[c->in], to = cuda_types[c->out];
    const cublasOperation_t ta = c->ta, tb = c->tb;
    const int m = c->m, n = c->n, k = c->k, lda = d->lda, ldb = d->ldb, ldc = d->ldc;
    switch (c->e) {
    case E_GEMMEX:
        return cublasGemmEx(h, ta, tb, m, n, k, alpha, A, ti, lda, B, ti, ldb, beta, C, to, ldc,
                            compute_types[c->ct], CUBLAS_GEMM_DEFAULT);
    case E_GEMMEX_64:
        return cublasGemmEx_64(h, ta, tb, m, n, k, alpha, A, ti, lda, B, ti, ldb, beta, C, to, ldc,
                               compute_types[c->ct], CUBLAS_GEMM_DEFAULT);
    case E_SGEMMEX:
        return cublasSgemmEx(h, ta, tb, m, n, k, alpha, A, ti, lda, B, ti, ldb, beta, C, to, ldc);
    case E_SGEMMEX_64:
        return cublasSgemmEx_64(h, ta, tb, m, n, k, alpha, A, ti, lda, B, ti, ldb, beta, C, to,
                                ldc);
    case E_HGEMM:
        return cublasHgemm(h, ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
    default:
        return CUBLAS_STATUS_INVALID_VALUE;
    }
}

/* the scalars (half_test.h's scalars: float, or half where the compute type is) and the math
 * mode (set_math) */

/* ---- one case ---- */

typedef struct outcome {
    cublasStatus_t st;
    double worst;       /* worst |C - ref| / bound but the planted element's (> 1: wrong) */
    int wi, wj;
    double wv, wref, wbound;
    size_t judged, nonfinite; /* elements against the oracle; others of C not finite */
    size_t outside_bad; /* elements of C's padding changed */
    int64_t prow, pcol; /* where the fault was planted (-1: none) */
    double pq, pv, pref, pbound; /* the planted element */
    stats_t s0, s1;
} outcome;

/* C read back and judged: the oracle's elements against it, the rest finite, the padding (and
 * all of C where m or n is 0) unchanged bit for bit */
static void compare(outcome *o, const lcase *c, const ldata *d, const void *dC)
{
    const size_t es = esize(c->out);
    unsigned char *h = malloc(es * d->lc);
    o->worst = 0;
    o->wi = o->wj = -1;
    o->wv = o->wref = o->wbound = 0;
    o->judged = o->nonfinite = o->outside_bad = 0;
    o->pq = INFINITY, o->pv = o->pref = o->pbound = NAN;
    if (!h || cudaMemcpy(h, dC, es * d->lc, cudaMemcpyDeviceToHost) != cudaSuccess) {
        o->worst = o->pq = INFINITY;
        free(h);
        return;
    }
    const size_t ldc = (size_t)d->ldc, cols = (size_t)imax(c->n, 1);
    for (size_t j = 0; j < cols; j++)
        for (size_t i = 0; i < ldc; i++) {
            const size_t p = i + j * ldc;
            if (i >= (size_t)c->m || j >= (size_t)c->n) {
                o->outside_bad += memcmp(h + es * p, (const unsigned char *)d->C0 + es * p, es) != 0;
                continue;
            }
            const double v = load(h, p, c->out);
            const size_t o2 = i + j * (size_t)c->m;
            if (d->bound[o2] < 0) {
                o->nonfinite += !isfinite(v);
                continue;
            }
            o->judged++;
            const double q = error_ratio(v, d->ref[o2], d->bound[o2]);
            if ((int64_t)i == o->prow && (int64_t)j == o->pcol) {
                o->pq = q, o->pv = v, o->pref = d->ref[o2], o->pbound = d->bound[o2];
            } else if (q > o->worst || o->wi < 0) {
                o->worst = q > o->worst ? q : o->worst;
                o->wi = (int)i, o->wj = (int)j;
                o->wv = v, o->wref = d->ref[o2], o->wbound = d->bound[o2];
            }
        }
    free(h);
}

/* The element where a fault goes: the grid's largest against its rounding bound (a flip of a
 * tiny element may change it by less than a check can see). */
static void plant_site(const lcase *c, const ldata *d, int64_t *row, int64_t *col)
{
    double best = -1;
    *row = c->m / 2, *col = c->n / 2;
    for (int gi = 0; gi < GRID; gi++)
        for (int gj = 0; gj < GRID; gj++) {
            const int i = grid_i(c, gi), j = grid_j(c, gj);
            const size_t o2 = (size_t)i + (size_t)j * (size_t)c->m;
            if (d->bound[o2] < 0)
                continue;
            const double q = fabs(d->ref[o2]) / d->bound[o2];
            if (q > best)
                best = q, *row = i, *col = j;
        }
}

/* Device buffers a case runs in, kept from call to call (run_case_in) */
typedef struct dbufs {
    void *A, *B, *C;
} dbufs;

/* Copies of the host buffers into `keep`'s (1), or 0 where one failed */
static int copy_in(const dbufs *keep, const ldata *d, size_t ei, size_t eo)
{
    return cudaMemcpy(keep->A, d->A, ei * d->la, cudaMemcpyHostToDevice) == cudaSuccess &&
           cudaMemcpy(keep->B, d->B, ei * d->lb, cudaMemcpyHostToDevice) == cudaSuccess &&
           cudaMemcpy(keep->C, d->C0, eo * d->lc, cudaMemcpyHostToDevice) == cudaSuccess;
}

/* Case c on fresh data, in buffers of its own, or in `keep`'s (not NULL: a call repeated on the
 * same buffers); a fault of bit `bit` planted first (-1: none). */
static void run_case_in(cublasHandle_t h, const lcase *c, int bit, outcome *o, const dbufs *keep)
{
    ldata d;
    layout(&d, c);
    fill(&d, c);
    oracle(&d, c, !protected_expected(c));
    o->prow = o->pcol = -1;
    if (bit >= 0)
        plant_site(c, &d, &o->prow, &o->pcol);
    const size_t ei = esize(c->in), eo = esize(c->out);
    void *dA, *dB, *dC;
    if (keep) {
        const int in = copy_in(keep, &d, ei, eo);
        dA = in ? keep->A : NULL, dB = in ? keep->B : NULL, dC = in ? keep->C : NULL;
    } else {
        dA = upload(d.A, ei * d.la), dB = upload(d.B, ei * d.lb), dC = upload(d.C0, eo * d.lc);
    }
    scalars sc;
    set_scalars(&sc, h, c->alpha, c->beta, half_compute(c), c->dev_scalars);
    set_math(h, c->math);
    o->s0 = stats_now();
    if (bit >= 0)
        CHECK(plant_fault(1, o->prow, o->pcol, bit) == 0, "plant_fault(1, %lld, %lld, %d)",
              (long long)o->prow, (long long)o->pcol, bit);
    o->st = dA && dB && dC && (!c->dev_scalars || sc.dev)
                ? call(h, c, &d, sc.alpha, sc.beta, dA, dB, dC)
                : CUBLAS_STATUS_ALLOC_FAILED;
    o->s1 = stats_now();
    if (bit >= 0)
        plant_fault(0, 0, 0, 0); /* what a wrong path left armed goes no further */
    if (sc.dev)
        cublasSetPointerMode_v2(h, CUBLAS_POINTER_MODE_HOST);
    set_math(h, 0);
    if (dC)
        compare(o, c, &d, dC);
    else
        o->worst = o->pq = INFINITY, o->judged = o->nonfinite = o->outside_bad = 0;
    if (!keep) {
        cudaFree(dA); cudaFree(dB); cudaFree(dC);
    }
    cudaFree(sc.dev);
    release(&d);
}

static void run_case(cublasHandle_t h, const lcase *c, int bit, outcome *o)
{
    run_case_in(h, c, bit, o, NULL);
}

static void describe(char *buf, size_t cap, const lcase *c)
{
    snprintf(buf, cap,
             "%s %s->%s compute %s %c%c %dx%dx%d ld+%d/%d/%d alpha %g beta %g%s series %d%s%s "
             "seed %llu",
             entry_names[c->e], type_names[c->in], type_names[c->out], compute_names[c->ct],
             "NTC"[c->ta], "NTC"[c->tb], c->m, c->n, c->k, c->pad_a, c->pad_b, c->pad_c,
             c->alpha, c->beta, c->nan_c ? " (C NaN)" : "", c->series,
             c->dev_scalars ? " device scalars" : "", c->math ? " disallow-reduced-reduction" : "",
             (unsigned long long)c->seed);
}

/* The verdict on a case: status, result, C's padding, counters. bit: the planted fault's bit
 * (-1: fault-free). */
static void judge(const lcase *c, const outcome *o, int bit)
{
    char what[320];
    describe(what, sizeof what, c);
    if (bit >= 0) {
        const size_t len = strlen(what);
        snprintf(what + len, sizeof what - len, " planted bit %d at (%lld, %lld)", bit,
                 (long long)o->prow, (long long)o->pcol);
    }
    const int prot = protected_expected(c);
    char at[160];
    snprintf(at, sizeof at, "(%d, %d): %.9g, reference %.9g, bound %.3g", o->wi, o->wj, o->wv,
             o->wref, o->wbound);
    judge_results(what, o->st, o->worst, at, o->nonfinite, o->outside_bad, "C's padding");
    judge_counters(what, &o->s0, &o->s1, prot, 1);
    if (bit < 0) {
        judge_fault_free(what, &o->s0, &o->s1, prot ? expected_checks(c) : 0);
        return;
    }
    judge_planted(what, &o->s0, &o->s1, expected_checks(c), 1);
    const int p = mant_bits(c->out), high = bit >= p;
    if (high) {
        CHECK(DELTA(o, errors_detected) >= 1 && DELTA(o, errors_corrected) >= 1,
              "%s: %llu detected, %llu corrected", what,
              (unsigned long long)DELTA(o, errors_detected),
              (unsigned long long)DELTA(o, errors_corrected));
        CHECK(o->pq <= 1.0, "%s: the planted element %.9g, reference %.9g, bound %.3g", what,
              o->pv, o->pref, o->pbound);
    } else if (DELTA(o, errors_detected) > 0) {
        CHECK(o->pq <= 1.0, "%s: detected, the planted element %.9g, reference %.9g, bound %.3g",
              what, o->pv, o->pref, o->pbound);
    } else { /* not detected: off by the flip at most */
        const double flip = ldexp(1.0, bit - p) * (fabs(o->pref) + o->pbound);
        CHECK(fabs(o->pv - o->pref) <= o->pbound + flip,
              "%s: undetected, the planted element %.9g, reference %.9g, bound %.3g + flip %.3g",
              what, o->pv, o->pref, o->pbound, flip);
    }
}

static void one(cublasHandle_t h, const lcase *c)
{
    outcome o;
    run_case(h, c, -1, &o);
    judge(c, &o, -1);
}

/* ---- the sections (their rotations: half_test.h's pairs, pads, scal) ---- */

/* The formats' conversions: every half and bfloat16 word back to itself, known values, and
 * bfloat16 against the rounding of float's bits. */
static void formats(void)
{
    size_t bad = 0;
    for (int t = T_F16; t <= T_BF16; t++)
        for (unsigned b = 0; b < 0x10000; b++) {
            const double v = dec16((uint16_t)b, (etype)t);
            bad += !isnan(v) && enc16(v, (etype)t) != b;
        }
    CHECK(bad == 0, "formats: %zu 16-bit words not their own round trip", bad);
    static const struct { double x; uint16_t h; } known[] = {
        {1.0, 0x3c00},          {-2.0, 0xc000},         {65504.0, 0x7bff},
        {65519.0, 0x7bff},      {65520.0, 0x7c00},      {0x1p-24, 0x0001},
        {0x1p-25, 0x0000},      {0x1.8p-25, 0x0001},    {0x1p-14, 0x0400},
        {1.0 + 0x1p-11, 0x3c00}, {1.0 + 0x3p-11, 0x3c02}, {0.1, 0x2e66},
    };
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
        CHECK(enc16(known[i].x, T_F16) == known[i].h, "formats: half of %a is 0x%04x, not 0x%04x",
              known[i].x, enc16(known[i].x, T_F16), known[i].h);
    rng_t r = {base_seed};
    bad = 0;
    for (int i = 0; i < 100000; i++) {
        const uint32_t bits = (uint32_t)next_u64(&r);
        float f;
        memcpy(&f, &bits, 4);
        if (!isfinite(f))
            continue;
        const uint16_t want = (uint16_t)((bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16);
        bad += enc16(f, T_BF16) != want;
    }
    CHECK(bad == 0, "formats: %zu floats rounded to bfloat16 wrong", bad);
}

static const int shapes[][3] = {{1, 1, 1},       {1, 7, 3},     {7, 1, 5},    {17, 13, 31},
                                {64, 64, 64},    {100, 3, 257}, {255, 257, 129},
                                {257, 65, 96},   {300, 200, 1000}, {513, 31, 40}};
enum { NSHAPES = sizeof shapes / sizeof shapes[0] };

/* Every (protected entry point, A's type, C's type, shape); the other parameters rotate so that
 * each meets every transpose pair, both compute types, the leading dimensions, scalars, series,
 * device scalars and math modes in turn. */
static void sweep(cublasHandle_t h)
{
    const uint64_t before = cases_run;
    for (int e = 0; e < E_PROTECTABLE; e++)
        for (int in = 0; in < 2; in++)
            for (int f32 = 0; f32 < 2; f32++)
                for (int i = 0; i < NSHAPES; i++) {
                    const int s = (i + 2 * e + in + f32) % 4, p = (i + 3 * e + 5 * in + 2 * f32) % 6;
                    lcase c = {.e = (entry)e, .in = (etype)in, .out = f32 ? T_F32 : (etype)in,
                               .ct = (compute)((i + e + in) % 2), .ta = pairs[p][0],
                               .tb = pairs[p][1], .m = shapes[i][0], .n = shapes[i][1],
                               .k = shapes[i][2], .pad_a = pads[(i + e) % 3],
                               .pad_b = pads[(i + e + 1) % 3], .pad_c = pads[(i + 2 * e + f32) % 3],
                               .alpha = scal[s][0], .beta = scal[s][1], .nan_c = (int)scal[s][2],
                               .series = (i + e + in) % 3, .dev_scalars = (i + e + in + f32) % 4 == 1,
                               .math = (i + e + f32) % 3 == 2,
                               .seed = case_seed(1, (uint64_t)(e * 4 + in * 2 + f32), (uint64_t)i)};
                    normalize(&c);
                    one(h, &c);
                }
    printf("sweep: %llu cases\n", (unsigned long long)(cases_run - before));
}

/* 1024^3 and 513x1025x2049 for each pair of types (the oracle on a sample). */
static void large(cublasHandle_t h)
{
    /* the third: more than 2^17 threads of lp_check at one per block column of the default
     * block size, so that each group of its lanes sums several (a tail of 4 rows) */
    static const int big[3][3] = {{1024, 1024, 1024}, {513, 1025, 2049}, {4100, 4100, 33}};
    const uint64_t before = cases_run;
    for (int b = 0; b < 3; b++)
        for (int t = 0; t < 4; t++) {
            const int n = b * 4 + t, s = n % 4, in = t / 2, f32 = t % 2;
            lcase c = {.e = (entry)(n % E_PROTECTABLE), .in = (etype)in,
                       .out = f32 ? T_F32 : (etype)in, .ct = (compute)(n % 2),
                       .ta = pairs[n % 4][0], .tb = pairs[n % 4][1], .m = big[b][0],
                       .n = big[b][1], .k = big[b][2], .pad_a = n % 3, .pad_b = 3,
                       .pad_c = (n + 1) % 3, .alpha = scal[s][0], .beta = scal[s][1],
                       .nan_c = (int)scal[s][2], .series = n % 3, .dev_scalars = n == 5,
                       .math = n == 2 || n == 7, .seed = case_seed(2, (uint64_t)n, 0)};
            normalize(&c);
            one(h, &c);
            if (b == 2 && !expect_off) { /* a fault there: flagged from such a group's list */
                outcome o;
                c.seed = case_seed(2, (uint64_t)n, 1);
                run_case(h, &c, high_bit(c.out), &o);
                judge(&c, &o, high_bit(c.out));
            }
        }
    printf("large: %llu cases\n", (unsigned long long)(cases_run - before));
}

/* The handle's math mode: CUBLAS_DEFAULT_MATH and with
 * CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION, both protected, through every entry point,
 * on a square-ish C and on a small C over a long k (where cuBLAS splits k). */
static void math_modes(cublasHandle_t h)
{
    static const int ms[2][3] = {{255, 257, 129}, {16, 16, 2048}};
    const uint64_t before = cases_run;
    for (int math = 0; math < 2; math++)
        for (int e = 0; e < E_PROTECTABLE; e++)
            for (int i = 0; i < 2; i++) {
                const int n = math * 8 + e * 2 + i;
                lcase c = {.e = (entry)e, .in = (etype)((e + i) % 2), .out = T_F16,
                           .ct = (compute)(n % 2), .ta = pairs[n % 4][0], .tb = pairs[n % 4][1],
                           .m = ms[i][0], .n = ms[i][1], .k = ms[i][2], .pad_a = 1, .pad_c = 2,
                           .alpha = scal[n % 3][0], .beta = scal[n % 3][1], .series = n % 3,
                           .math = math, .seed = case_seed(3, (uint64_t)n, 0)};
                normalize(&c);
                one(h, &c);
            }
    printf("math modes: %llu cases\n", (unsigned long long)(cases_run - before));
}

/* Faults planted in one GEMM: for each pair of types a high exponent bit (two of them) and a low
 * mantissa bit (two), on a rotation of shapes (a large one with the sampled oracle among them),
 * entry points, transposes, scalars (beta = 0 over NaN too: the correction must not read C),
 * layouts and math modes. */
static void planted(cublasHandle_t h)
{
    static const int pshapes[][3] = {{64, 64, 64}, {300, 257, 129}, {37, 53, 29}, {100, 3, 257},
                                     {1024, 1024, 1024}};
    const uint64_t before = cases_run;
    int n = 0;
    for (int t = 0; t < 4; t++)
        for (int b = 0; b < 4; b++)
            for (int r = 0; r < 2; r++, n++) {
                const int in = t / 2, f32 = t % 2, s = n % 4;
                const int *ps = pshapes[n % 5];
                lcase c = {.e = (entry)(n % E_PROTECTABLE), .in = (etype)in,
                           .out = f32 ? T_F32 : (etype)in, .ct = (compute)((n / 4) % 2),
                           .ta = pairs[n % 6][0], .tb = pairs[n % 6][1], .m = ps[0], .n = ps[1],
                           .k = ps[2], .pad_a = pads[n % 3], .pad_b = pads[(n + 1) % 3],
                           .pad_c = pads[(n + 2) % 3], .alpha = scal[s][0], .beta = scal[s][1],
                           .nan_c = (int)scal[s][2], .series = n % 3, .dev_scalars = n % 5 == 2,
                           .math = n % 3 == 1, .seed = case_seed(4, (uint64_t)n, 0)};
                normalize(&c);
                const int hi = f32 ? 30 : 14;
                const int bit = b == 0 ? hi : b == 1 ? hi - 1 : b == 2 ? 0 : 3;
                outcome o;
                run_case(h, &c, bit, &o);
                judge(&c, &o, bit);
            }
    printf("planted faults: %llu cases\n", (unsigned long long)(cases_run - before));
}

/* A call repeated on the same buffers with fresh data each time (a framework's loop): from its
 * second sighting on the engine replays its own graph of it (BLASFT_GPU_GRAPHS on or exact), so
 * each result is judged against its own data's oracle and every call counted as one protected
 * GEMM with its checks; the fourth call plants a fault (such a call runs directly), corrected,
 * and the replays after it are right again. The graphs made and replayed are counted. */
static void replayed(cublasHandle_t h)
{
    static const lcase base[] = {
        {.e = E_GEMMEX, .in = T_F16, .out = T_F16, .ct = CT_32F, .ta = OPN, .tb = OPN, .m = 300,
         .n = 257, .k = 129, .alpha = 1.0},
        {.e = E_GEMMEX_64, .in = T_BF16, .out = T_F32, .ct = CT_32F, .ta = OPT, .tb = OPN,
         .m = 64, .n = 100, .k = 513, .pad_a = 1, .pad_c = 5, .alpha = -1.25, .beta = 1.0,
         .series = 2},
        {.e = E_SGEMMEX, .in = T_F16, .out = T_F32, .ta = OPN, .tb = OPC, .m = 513, .n = 31,
         .k = 64, .pad_b = 3, .alpha = 0.5, .beta = -2.0, .series = 1},
        {.e = E_GEMMEX, .in = T_BF16, .out = T_BF16, .ct = CT_32F_PEDANTIC, .ta = OPT, .tb = OPT,
         .m = 17, .n = 1, .k = 1000, .alpha = 1.0, .beta = 0.5, .math = 1},
    };
    enum { CALLS = 6, PLANTED = 3 };
    for (size_t i = 0; i < sizeof base / sizeof base[0]; i++) {
        lcase c = base[i];
        normalize(&c);
        ldata d;
        layout(&d, &c);
        const size_t ei = esize(c.in), eo = esize(c.out);
        dbufs keep = {NULL, NULL, NULL};
        if (cudaMalloc(&keep.A, ei * d.la) != cudaSuccess ||
            cudaMalloc(&keep.B, ei * d.lb) != cudaSuccess ||
            cudaMalloc(&keep.C, eo * d.lc) != cudaSuccess) {
            CHECK(0, "replayed: cudaMalloc");
            cudaFree(keep.A); cudaFree(keep.B); cudaFree(keep.C);
            return;
        }
        const graph_mark before = graphs_now();
        for (int r = 0; r < CALLS; r++) {
            c.seed = case_seed(13, (uint64_t)i, (uint64_t)r);
            const int bit = r == PLANTED && !expect_off ? high_bit(c.out) : -1;
            outcome o;
            run_case_in(h, &c, bit, &o, &keep);
            judge(&c, &o, bit);
        }
        char what[320];
        describe(what, sizeof what, &c);
        check_graph_counts(what, protected_expected(&c), CALLS, &before);
        cudaFree(keep.A); cudaFree(keep.B); cudaFree(keep.C);
    }
}

/* Not protected: cublasHgemm and GemmEx (and _64) with CUBLAS_COMPUTE_16F or its _PEDANTIC
 * form, half scalars; counted unprotected with no checks, the result within the loose bound. */
static void unprotected(cublasHandle_t h)
{
    static const int us[][3] = {{17, 13, 31}, {100, 3, 257}, {255, 257, 129}, {64, 64, 64}};
    static const struct { entry e; compute ct; } who[] = {
        {E_HGEMM, CT_16F}, {E_GEMMEX, CT_16F}, {E_GEMMEX_64, CT_16F_PEDANTIC}, {E_GEMMEX, CT_16F_PEDANTIC}};
    const uint64_t before = cases_run;
    for (int w = 0; w < 4; w++)
        for (int i = 0; i < 4; i++) {
            const int n = w * 4 + i, s = n % 4;
            lcase c = {.e = who[w].e, .in = T_F16, .out = T_F16, .ct = who[w].ct,
                       .ta = pairs[n % 6][0], .tb = pairs[n % 6][1], .m = us[i][0], .n = us[i][1],
                       .k = us[i][2], .pad_a = pads[n % 3], .pad_b = pads[(n + 2) % 3],
                       .pad_c = pads[(n + 1) % 3], .alpha = scal[s][0], .beta = scal[s][1],
                       .nan_c = (int)scal[s][2], .series = n % 3, .dev_scalars = n % 5 == 3,
                       .math = n % 2, .seed = case_seed(5, (uint64_t)n, 0)};
            normalize(&c);
            one(h, &c);
        }
    printf("unprotected: %llu cases\n", (unsigned long long)(cases_run - before));
}

/* A GemmEx captured into a graph on a stream of its own and replayed twice over a C whose results
 * were made NaN, with a fault (a high exponent bit) planted at the capture: the graph replays
 * the checks, so each replay counts 1 protected GEMM and ceil(m / BS) n checks and corrects the
 * fault it plants; nothing is counted at the capture; C right after the replays. warm: one
 * uncaptured call of the shape ran on the stream before; cold: its context and buffer are made
 * during the capture (allocations only). --expect-off: passed through, counted unprotected once,
 * no fault planted. */
static void captured(cublasHandle_t h, int variant, int warm)
{
    lcase c = variant ? (lcase){.e = E_GEMMEX_64, .in = T_BF16, .out = T_F32, .ct = CT_32F_PEDANTIC,
                                .ta = OPT, .tb = OPN, .m = 129, .n = 65, .k = 200, .pad_a = 1,
                                .pad_c = 3, .alpha = 0.5, .beta = 0.0, .series = 1}
                      : (lcase){.e = E_GEMMEX, .in = T_F16, .out = T_F16, .ct = CT_32F,
                                .ta = OPN, .tb = OPT, .m = 37, .n = 53, .k = 29, .pad_b = 2,
                                .pad_c = 1, .alpha = -1.25, .beta = 0.0, .series = 2};
    c.seed = case_seed(6, (uint64_t)variant, (uint64_t)warm);
    char what[320];
    describe(what, sizeof what, &c);
    ldata d;
    layout(&d, &c);
    fill(&d, &c);
    oracle(&d, &c, expect_off);
    int64_t prow = -1, pcol = -1;
    plant_site(&c, &d, &prow, &pcol);
    const int bit = high_bit(c.out);
    const size_t ei = esize(c.in), eo = esize(c.out);
    void *dA = upload(d.A, ei * d.la), *dB = upload(d.B, ei * d.lb), *dC = upload(d.C0, eo * d.lc);
    const float sf[2] = {(float)c.alpha, (float)c.beta};
    capture g;
    capture_open(&g, h);
    const int ok = dA && dB && dC;
    if (warm)
        CHECK(ok && call(h, &c, &d, &sf[0], &sf[1], dA, dB, dC) == CUBLAS_STATUS_SUCCESS,
              "captured %s: warm-up", what);
    cublasStatus_t st = CUBLAS_STATUS_NOT_INITIALIZED;
    if (capture_begin(&g, ok, what, expect_off ? 0 : 1, prow, pcol, bit))
        st = call(h, &c, &d, &sf[0], &sf[1], dA, dB, dC);
    if (capture_end(&g, st, what, warm)) {
        /* NaN over the results (all ones is NaN in every type): a replay that did not run leaves
         * them wrong */
        cudaMemset2D(dC, eo * (size_t)d.ldc, 0xff, eo * (size_t)c.m, (size_t)c.n);
        capture_replays(&g, what);
        outcome o = {.prow = -1, .pcol = -1};
        compare(&o, &c, &d, dC);
        CHECK(o.worst <= 1.0 && o.nonfinite == 0 && o.outside_bad == 0,
              "captured %s (warm %d): replayed GEMM off by %.3g x bound ((%d, %d): %.9g, "
              "reference %.9g), %zu outside changed", what, warm, o.worst, o.wi, o.wj, o.wv,
              o.wref, o.outside_bad);
        const uint64_t P = expect_off ? 0 : 2;
        char label[400];
        snprintf(label, sizeof label, "captured %s (warm %d)", what, warm);
        check_replays(label, &g.s0, &g.s1, &g.s2, P, P * expected_checks(&c), P,
                      expect_off ? 1 : 0);
    }
    capture_close(&g, h);
    cudaFree(dA); cudaFree(dB); cudaFree(dC);
    release(&d);
    cases_run++;
    printf("captured %s->%s (warm %d): done\n", type_names[c.in], type_names[c.out], warm);
}

/* A half GEMM and then a float one (cublasSgemm_v2) captured into one graph on a fresh stream:
 * the half path joins the engine's helper stream to the capture first, and the float GEMM's
 * workspace, the context's first, is then made without touching that stream (before 2026-11-27,
 * late night, its set-up synchronised the helper stream, which ended the application's capture
 * with an error). Both protected at each of two replays, nothing counted at the capture, both
 * results right; --expect-off: both passed through at the capture. */
static void captured_mixed(cublasHandle_t h)
{
    lcase c = {.e = E_GEMMEX, .in = T_F16, .out = T_F16, .ct = CT_32F, .ta = OPN, .tb = OPN,
               .m = 37, .n = 53, .k = 29, .alpha = 1.0, .beta = 0.0, .series = 0,
               .seed = case_seed(8, 0, 0)};
    ldata d;
    layout(&d, &c);
    fill(&d, &c);
    oracle(&d, &c, expect_off);
    void *dA = upload(d.A, esize(c.in) * d.la), *dB = upload(d.B, esize(c.in) * d.lb);
    void *dC = upload(d.C0, esize(c.out) * d.lc);
    enum { M = 64, N = 48, K = 40 };
    float *fa = malloc(sizeof(float) * M * K), *fb = malloc(sizeof(float) * K * N);
    double *ref = malloc(sizeof(double) * M * N), *bnd = malloc(sizeof(double) * M * N);
    rng_t r = {case_seed(8, 1, 0)};
    for (int i = 0; i < M * K; i++) fa[i] = (float)(2.0 * unit(&r) - 1.0);
    for (int i = 0; i < K * N; i++) fb[i] = (float)(2.0 * unit(&r) - 1.0);
    for (int j = 0; j < N; j++)
        for (int i = 0; i < M; i++) {
            long double sum = 0, mag = 0;
            for (int l = 0; l < K; l++) {
                sum += (long double)fa[i + l * M] * fb[l + j * K];
                mag += fabsl((long double)fa[i + l * M] * fb[l + j * K]);
            }
            ref[i + j * M] = (double)sum;
            bnd[i + j * M] = 2.0 * (K + 3) * 0x1p-24 * (double)mag + 1e-37;
        }
    float *dfa = upload(fa, sizeof(float) * M * K), *dfb = upload(fb, sizeof(float) * K * N);
    float *dfc = NULL;
    cudaMalloc((void **)&dfc, sizeof(float) * M * N);
    const float sf[2] = {1.0f, 0.0f};
    cudaStream_t s;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    cublasSetStream_v2(h, s);
    const stats_t s0 = stats_now();
    cudaGraph_t graph = NULL;
    cudaGraphExec_t exec = NULL;
    cublasStatus_t st1 = CUBLAS_STATUS_NOT_INITIALIZED, st2 = st1;
    const int ok = dA && dB && dC && dfa && dfb && dfc;
    cudaError_t ce = ok ? cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal)
                        : cudaErrorMemoryAllocation;
    if (ce == cudaSuccess) {
        st1 = call(h, &c, &d, &sf[0], &sf[1], dA, dB, dC);
        st2 = cublasSgemm_v2(h, CUBLAS_OP_N, CUBLAS_OP_N, M, N, K, &sf[0], dfa, M, dfb, K, &sf[1],
                             dfc, M);
        ce = cudaStreamEndCapture(s, &graph);
    }
    const stats_t s1 = stats_now();
    CHECK(st1 == CUBLAS_STATUS_SUCCESS && st2 == CUBLAS_STATUS_SUCCESS && ce == cudaSuccess,
          "captured half + float: status %d, %d, %s", (int)st1, (int)st2, cudaGetErrorString(ce));
    const int inst = ce == cudaSuccess && st1 == CUBLAS_STATUS_SUCCESS &&
                     st2 == CUBLAS_STATUS_SUCCESS &&
                     cudaGraphInstantiate(&exec, graph, 0) == cudaSuccess;
    if (ce == cudaSuccess && st1 == CUBLAS_STATUS_SUCCESS && st2 == CUBLAS_STATUS_SUCCESS)
        CHECK(inst, "captured half + float: instantiate");
    if (inst) {
        cudaMemset2D(dC, esize(c.out) * (size_t)d.ldc, 0xff, esize(c.out) * (size_t)c.m,
                     (size_t)c.n);
        cudaMemset(dfc, 0xff, sizeof(float) * M * N);
        replay_twice(exec, s, "half + float");
        const stats_t s2 = stats_now();
        outcome o = {.prow = -1, .pcol = -1};
        compare(&o, &c, &d, dC);
        float hc[M * N];
        double worst = INFINITY;
        if (cudaMemcpy(hc, dfc, sizeof hc, cudaMemcpyDeviceToHost) == cudaSuccess) {
            worst = 0;
            for (int e = 0; e < M * N; e++) {
                const double q = error_ratio(hc[e], ref[e], bnd[e]);
                worst = q > worst ? q : worst;
            }
        }
        CHECK(o.worst <= 1.0 && o.nonfinite == 0 && worst <= 1.0,
              "captured half + float: results off by %.3g and %.3g x bound", o.worst, worst);
        const uint64_t P = expect_off ? 0 : 4;
        CHECK(s1.protected_gemms == s0.protected_gemms &&
                  s2.protected_gemms - s1.protected_gemms == P &&
                  s2.unprotected_gemms - s0.unprotected_gemms == (expect_off ? 2u : 0u) &&
                  s2.errors_detected == s0.errors_detected,
              "captured half + float: %llu protected in two replays (expected %llu), %llu "
              "unprotected, %llu detected",
              (unsigned long long)(s2.protected_gemms - s1.protected_gemms),
              (unsigned long long)P,
              (unsigned long long)(s2.unprotected_gemms - s0.unprotected_gemms),
              (unsigned long long)(s2.errors_detected - s0.errors_detected));
        cudaGraphExecDestroy(exec);
    }
    if (graph)
        cudaGraphDestroy(graph);
    cublasSetStream_v2(h, NULL);
    cudaStreamDestroy(s);
    cudaFree(dA); cudaFree(dB); cudaFree(dC); cudaFree(dfa); cudaFree(dfb); cudaFree(dfc);
    free(fa); free(fb); free(ref); free(bnd);
    release(&d);
    cases_run++;
    printf("captured half + float: done\n");
}

/* Two graphs on one stream: A (one half GEMM of 37 x 53) captured and replayed, then B (70 half
 * GEMMs of 20 x 30) captured there, then A replayed again: A's report is its own (1 protected
 * GEMM, 53 checks), not one of B's. Before 2026-11-27, late night, captured calls took the
 * context's ring of 64 report slots, which a replay freed: B's capture took A's slot over and
 * A's replays then reported B's calls. */
static void two_graphs(cublasHandle_t h)
{
    if (expect_off)
        return; /* nothing is reported */
    lcase ca = {.e = E_GEMMEX, .in = T_F16, .out = T_F16, .ct = CT_32F, .ta = OPN, .tb = OPN,
                .m = 37, .n = 53, .k = 29, .alpha = 1.0, .beta = 0.0, .series = 0,
                .seed = case_seed(9, 0, 0)};
    lcase cb = ca;
    cb.m = 20;
    cb.n = 30;
    cb.seed = case_seed(9, 1, 0);
    ldata da, db;
    layout(&da, &ca);
    fill(&da, &ca);
    oracle(&da, &ca, 0);
    layout(&db, &cb);
    fill(&db, &cb);
    const size_t es = esize(T_F16);
    void *aA = upload(da.A, es * da.la), *aB = upload(da.B, es * da.lb);
    void *aC = upload(da.C0, es * da.lc);
    void *bA = upload(db.A, es * db.la), *bB = upload(db.B, es * db.lb);
    void *bC = upload(db.C0, es * db.lc);
    const float sf[2] = {1.0f, 0.0f};
    cudaStream_t s;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    cublasSetStream_v2(h, s);
    cudaGraph_t ga = NULL, gb = NULL;
    cudaGraphExec_t ea = NULL, eb = NULL;
    int ok = aA && aB && aC && bA && bB && bC;
    ok = ok && cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal) == cudaSuccess;
    if (ok) {
        ok = call(h, &ca, &da, &sf[0], &sf[1], aA, aB, aC) == CUBLAS_STATUS_SUCCESS;
        ok = cudaStreamEndCapture(s, &ga) == cudaSuccess && ok;
    }
    ok = ok && cudaGraphInstantiate(&ea, ga, 0) == cudaSuccess &&
         cudaGraphLaunch(ea, s) == cudaSuccess && cudaStreamSynchronize(s) == cudaSuccess;
    ok = ok && cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal) == cudaSuccess;
    if (ok) {
        for (int i = 0; i < 70; i++)
            ok = call(h, &cb, &db, &sf[0], &sf[1], bA, bB, bC) == CUBLAS_STATUS_SUCCESS && ok;
        ok = cudaStreamEndCapture(s, &gb) == cudaSuccess && ok;
    }
    ok = ok && cudaGraphInstantiate(&eb, gb, 0) == cudaSuccess;
    CHECK(ok, "two graphs: captures, instantiations and A's first replay");
    if (ok) {
        const stats_t s0 = stats_now();
        cudaMemset2D(aC, es * (size_t)da.ldc, 0xff, es * (size_t)ca.m, (size_t)ca.n);
        CHECK(cudaGraphLaunch(ea, s) == cudaSuccess, "two graphs: A's replay");
        cudaStreamSynchronize(s);
        const stats_t s1 = stats_now();
        CHECK(cudaGraphLaunch(eb, s) == cudaSuccess, "two graphs: B's replay");
        cudaStreamSynchronize(s);
        const stats_t s2 = stats_now();
        outcome o = {.prow = -1, .pcol = -1};
        compare(&o, &ca, &da, aC);
        CHECK(o.worst <= 1.0 && o.nonfinite == 0, "two graphs: A's result off by %.3g x bound",
              o.worst);
        CHECK(s1.protected_gemms - s0.protected_gemms == 1 &&
                  s1.checks - s0.checks == expected_checks(&ca) &&
                  s2.protected_gemms - s1.protected_gemms == 70 &&
                  s2.checks - s1.checks == 70 * expected_checks(&cb),
              "two graphs: A's replay %llu protected, %llu checks (expected 1, %llu); B's %llu, "
              "%llu (expected 70, %llu)",
              (unsigned long long)(s1.protected_gemms - s0.protected_gemms),
              (unsigned long long)(s1.checks - s0.checks),
              (unsigned long long)expected_checks(&ca),
              (unsigned long long)(s2.protected_gemms - s1.protected_gemms),
              (unsigned long long)(s2.checks - s1.checks),
              (unsigned long long)(70 * expected_checks(&cb)));
    }
    if (ea)
        cudaGraphExecDestroy(ea);
    if (eb)
        cudaGraphExecDestroy(eb);
    if (ga)
        cudaGraphDestroy(ga);
    if (gb)
        cudaGraphDestroy(gb);
    cublasSetStream_v2(h, NULL);
    cudaStreamDestroy(s);
    cudaFree(aA); cudaFree(aB); cudaFree(aC); cudaFree(bA); cudaFree(bB); cudaFree(bC);
    release(&da);
    release(&db);
    cases_run++;
    printf("two graphs: done\n");
}

/* k = 0 (C = beta C; beta = 0 over NaN: zeros) and m = 0, n = 0 (C untouched), through GemmEx and
 * SgemmEx: as cuBLAS, success, nothing detected (how they are counted is not judged). */
static void edges(cublasHandle_t h)
{
    static const struct { int m, n, k, s; } ed[] = {
        {37, 21, 0, 1}, {300, 5, 0, 3}, {0, 9, 13, 2}, {11, 0, 7, 1}};
    for (int e = 0; e < 4; e += 2)
        for (size_t i = 0; i < sizeof ed / sizeof ed[0]; i++) {
            const int s = ed[i].s, n = e * 4 + (int)i;
            lcase c = {.e = (entry)e, .in = (etype)(n % 2), .out = i % 2 ? T_F32 : (etype)(n % 2),
                       .ct = CT_32F, .ta = pairs[n % 4][0], .tb = pairs[n % 4][1], .m = ed[i].m,
                       .n = ed[i].n, .k = ed[i].k, .pad_a = 1, .pad_b = 2, .pad_c = 3,
                       .alpha = scal[s][0], .beta = scal[s][1], .nan_c = (int)scal[s][2],
                       .series = n % 3, .seed = case_seed(7, (uint64_t)n, 0)};
            normalize(&c);
            char what[320];
            describe(what, sizeof what, &c);
            outcome o;
            run_case(h, &c, -1, &o);
            cases_run++;
            CHECK(o.st == CUBLAS_STATUS_SUCCESS && o.worst <= 1.0 && o.outside_bad == 0,
                  "edge %s: status %d, error %.3g x bound ((%d, %d): %.9g, reference %.9g), %zu "
                  "outside changed", what, (int)o.st, o.worst, o.wi, o.wj, o.wv, o.wref,
                  o.outside_bad);
            CHECK(DELTA(&o, errors_detected) == 0 && DELTA(&o, uncorrectable) == 0 &&
                      DELTA(&o, protected_gemms) + DELTA(&o, unprotected_gemms) <= 1 &&
                      (!expect_off || DELTA(&o, protected_gemms) == 0),
                  "edge %s: %llu protected, %llu unprotected, %llu detected, %llu uncorrectable",
                  what, (unsigned long long)DELTA(&o, protected_gemms),
                  (unsigned long long)DELTA(&o, unprotected_gemms),
                  (unsigned long long)DELTA(&o, errors_detected),
                  (unsigned long long)DELTA(&o, uncorrectable));
        }
    printf("edges: done\n");
}

/* The stress section's round r (lowp_stress): a fault-free protected GEMM of random type, entry
 * point, compute type, shape, layout, scalars, data and math mode; it adds exactly its checks,
 * nothing detected or corrected. */
static void stress_round(cublasHandle_t h, int r)
{
    const int s = draw(4), in = draw(2);
    lcase c = {.e = (entry)draw(E_PROTECTABLE), .in = (etype)in,
               .out = draw(2) ? T_F32 : (etype)in, .ct = (compute)draw(2), .ta = ops[draw(3)],
               .tb = ops[draw(3)], .m = draw_dim(), .n = draw_dim(), .k = draw_dim(),
               .pad_a = draw(4), .pad_b = draw(4), .pad_c = draw(4), .alpha = scal[s][0],
               .beta = scal[s][1], .nan_c = (int)scal[s][2], .series = draw(3),
               .dev_scalars = draw(4) == 0, .math = draw(2), .seed = case_seed(8, (uint64_t)r, 0)};
    normalize(&c);
    one(h, &c);
}

/* The sections in their order (lowp_main runs and times them) */
static void sections(cublasHandle_t h)
{
    formats();
    sweep(h);
    large(h);
    math_modes(h);
    if (!expect_off)
        planted(h);
    unprotected(h);
    /* fresh streams first: a stream made after another was destroyed may take its handle
     * value, and with it that stream's context */
    captured(h, 0, 0);
    captured_mixed(h);
    captured(h, 0, 1);
    captured(h, 1, 1);
    two_graphs(h);
    replayed(h);
    edges(h);
    lowp_stress(h, 200, base_seed, "GEMMs", stress_round);
}

int main(int argc, char **argv)
{
    return lowp_main(argc, argv, "lowp", &expect_off, &block_size, &base_seed, sections);
}
