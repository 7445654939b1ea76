/* Randomized differential test of the GPU engine: protected real GEMMs (S, D) of random shapes,
 * leading dimensions, scalars, data classes and engine parameters against an independent host
 * oracle in double-double, with plain cuBLAS on the same data as the second opinion where IEEE
 * special values or overflow make the reference BLAS's value unreachable.
 *
 *   test_gpu_fuzz [SEED [COUNT [FIRST]]]
 *
 * runs the cases FIRST .. FIRST + COUNT - 1 of SEED (defaults: kDefaultSeed, kDefaultCount, 0);
 * every case draws from its own generator (seeded from SEED and its index), so one failing case
 * runs again on its own as `test_gpu_fuzz SEED 1 INDEX`. Exits 77 where there is no GPU.
 *
 * A case: type S or D, transa/transb N or T, m, n, k from kDims (k = 0 included), leading
 * dimensions minimal or padded (padding of A and B holds NaN: reading it would show), alpha and
 * beta from the kinds of scalar_kind, the data class of A, B and C each from data_class (with
 * beta = 0 the old C is NaN in half the cases: it must not be read), block size, checksums,
 * PROJ, promotion (S), rows on demand, scalars on host or device, correct or detect mode. C lies
 * in a device buffer with kGuard sentinel elements before and after; C's padding rows hold the
 * sentinel too.
 *
 * Checks per case: blasft_gpu_gemm_run returns 0; every element of C is acceptable (below); the
 * guards and C's padding rows are bitwise unchanged; A, B (and the device scalars) are bitwise
 * unchanged; a "clean" case (categories, below) reports no error (errors_detected, errors_corrected,
 * blocks_recomputed and uncorrectable all 0). False alarms are counted, never failed.
 *
 * The oracle is the reference BLAS: C = alpha op(A) op(B) + beta C, where the old C is not read
 * if beta == 0 and the product is not computed if alpha == 0 or k == 0 (C = beta C; with beta = 0
 * also, C = +0). The sum is computed from the typed data as the device sees it (S rounded through
 * float) with Dot2 (error-free products and sums: a double-double accumulator), alpha and beta
 * applied with hpref's double-double helpers. An element is acceptable where it is finite and
 *   |c - ref| <= 2 gamma_(k+2) (|alpha| sum_l |a_il b_lj| + |beta c_ij|)
 *                + 2 (|alpha| (k + 1) + 2) * (the type's smallest normal number),
 * gamma_(k+2) = (k + 2) u, u the type's unit roundoff (2^-24, 2^-53). The second term is gradual
 * underflow: each of the k products and k sums loses at most the smallest normal number even
 * where subnormals are flushed, the sum is scaled by alpha, and alpha's product and beta's lose
 * one more each. A promoted S GEMM (p.promote = 1) is checked against the same bound (it is at
 * least as accurate). Where the reference BLAS's result is exactly zero by definition (alpha = 0
 * or k = 0, and beta = 0) and the scalars are on the host, C must also be +0, not -0.
 *
 * Known and accepted deviations from the reference BLAS:
 * (1) Scalars on the device with alpha = 0 (k > 0): cuBLAS multiplies the product by alpha, so
 *     0 times a negative product gives -0 and 0 times Inf/NaN or an overflowed product gives NaN,
 *     and the engine may keep that. There an element is also acceptable where it agrees with
 *     plain cuBLAS's on a fresh copy of the same data (blasft_gpu_gemm_plain): both not finite,
 *     or both finite and within twice the tolerance of each other; the sign of zero is not
 *     checked.
 * (2) Elements whose inputs hold NaN/Inf (alpha or beta not finite where used, a non-finite
 *     element in row i of op(A) or column j of op(B) where the product is computed, a non-finite
 *     old C(i,j) where beta != 0), or where the exact result or an intermediate may overflow (a
 *     product |a b|, the partial sums' bound sum |a b|, |alpha| sum |a b|, |beta c| or their sum
 *     above half the type's largest number): the reference BLAS value is either not finite or not
 *     what any IEEE evaluation order gives, so the element is compared with plain cuBLAS's, element
 *     by element: acceptable where both are non-finite, or both finite and within twice the
 *     tolerance of each other (any two finite values where the tolerance is not finite).
 *     Also acceptable there: a finite element within the tolerance of a finite exact result
 *     (where plain cuBLAS's partial sums overflow in float, the promoted S path computes in
 *     double, and the engine's recomputation of a flagged block also computes in double: both
 *     may return the right finite value where plain cuBLAS returns Inf).
 * (3) The tolerance above, for every finite result (cuBLAS's summation order is not known).
 *
 * Categories (the summary line): empty (m or n = 0), nonfinite (a non-finite scalar, element of
 * the A or B region that the device reads (k > 0) or old C read (beta != 0), or an element as in
 * (2) by overflow), clean (every such value and scalar finite, the nonzero ones, the products'
 * bounds (max |a| max |b|, min |a| min |b| over the nonzero ones of a row of op(A) and a column
 * of op(B)), sum |a b|, |alpha| sum |a b|, |beta c| and the nonzero exact results between lo and
 * hi: 1e-115..1e115 for D, 1e-30..1e30 for S), extreme (the rest: finite but outside that
 * range, e.g. subnormal scalars, huge times huge). Empty and clean cases must report no error.
 * The range for D is the one within which the engine's statistical thresholds are valid, element
 * magnitudes of 2^-400..2^400 (blasft_squares_in_range), with a margin. Outside it every block
 * flags and the second tier decides: a false alarm where the old C is known (beta 0, or kept to
 * correct), but a report in detect mode with beta != 0, where nothing can be recomputed. */
#include "gpu_harness.h"
#include "hpref.h"

#include <cuda_runtime_api.h>
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* About a minute on an H100 machine (estimated, not measured): the host oracle takes about 5 ms a
 * case (mean m n k about 2.7e6 terms of Dot2 at about 2 ns), the GPU side a few ms more. */
static const uint64_t kDefaultSeed = 20250601;
static const long kDefaultCount = 5000;
/* sentinel elements before and after C (a multiple of 32 elements: C stays 128-byte aligned) */
enum { kGuard = 64 };

static const int64_t kDims[] = {0, 1, 2, 3, 7, 16, 31, 32, 33, 64, 127, 128, 129, 255, 257, 300,
                                511, 600};
static const int kBs[] = {16, 32, 37, 64, 256};

typedef enum {
    SC_ONE, SC_MONE, SC_ZERO, SC_HALF, SC_M275, SC_NORMAL, SC_SUBN, SC_BIG, SC_NAN, SC_PINF,
    SC_NINF, SC_N
} scalar_kind;
static const char *const kScName[SC_N] = {"1",    "-1",  "0",   "0.5", "-2.75", "normal",
                                          "subnormal", "big", "NaN", "+Inf", "-Inf"};
/* realistic weights: mostly ordinary values, beta often 0 */
static const int kAlphaW[SC_N] = {25, 10, 6, 8, 8, 25, 5, 4, 3, 3, 3};
static const int kBetaW[SC_N] = {20, 6, 25, 8, 6, 20, 4, 4, 2, 3, 2};

typedef enum {
    DC_UNIFORM, DC_ZEROS, DC_INTEGERS, DC_HUGE, DC_TINY, DC_MIXED, DC_NONFINITE, DC_N
} data_class;
static const char *const kDcName[DC_N] = {"uniform", "zeros", "integers", "huge",
                                          "tiny",    "mixed", "nan/inf"};
static const int kDcW[DC_N] = {40, 5, 10, 10, 10, 15, 10};

typedef enum { CAT_EMPTY, CAT_CLEAN, CAT_EXTREME, CAT_NONFINITE, CAT_N } category;
static const char *const kCatName[CAT_N] = {"empty", "clean", "extreme", "nonfinite"};

typedef struct fz_case {
    long idx;
    int single;
    char ta, tb;
    int64_t m, n, k, lda, ldb, ldc;
    int ak, bk;          /* scalar kinds */
    double alpha, beta;  /* the typed values (S: exactly the floats) */
    int acls, bcls, ccls;
    int c_nan;           /* beta = 0 and the old C is all NaN */
    int bs, r, proj, promote, rows, dev, detect;
} fz_case;

static blasft_gpu_ctx *ctx;
/* the case in progress, named at exit if a CUDA failure ends the program inside it (the harness
 * exits on failed copies and allocations) */
static const char *running;

static void name_running_case(void)
{
    if (running)
        fprintf(stderr, "exit during case: %s\n", running);
}

static int pick(dg_rng *r, const int *w, int n)
{
    int total = 0;
    for (int i = 0; i < n; i++)
        total += w[i];
    int x = (int)dg_below(r, (uint64_t)total);
    for (int i = 0; i < n; i++) {
        if (x < w[i])
            return i;
        x -= w[i];
    }
    return n - 1;
}

static double to_type(double v, int single) { return single ? (double)(float)v : v; }

static double scalar_value(int kind, int single, dg_rng *r)
{
    double v;
    switch (kind) {
    case SC_ONE: v = 1.0; break;
    case SC_MONE: v = -1.0; break;
    case SC_ZERO: v = 0.0; break;
    case SC_HALF: v = 0.5; break;
    case SC_M275: v = -2.75; break;
    case SC_NORMAL: v = dg_normal(r); break;
    case SC_SUBN: /* the smallest subnormal and a few ulps up, either sign */
        v = (single ? 0x1p-149 : 0x1p-1074) * (double)(1 + dg_below(r, 4));
        if (dg_below(r, 2))
            v = -v;
        break;
    case SC_BIG: v = (single ? 1e30 : 1e300) * (dg_below(r, 2) ? -1.0 : 1.0); break;
    case SC_NAN: v = NAN; break;
    case SC_PINF: v = INFINITY; break;
    default: v = -INFINITY; break;
    }
    return to_type(v, single);
}

/* rows x cols of x (ld) from class cls, as typed values */
static void fill(double *x, int64_t rows, int64_t cols, int64_t ld, int cls, int single, dg_rng *r)
{
    const double huge = single ? 1e15 : 1e150, tiny = single ? 1e-15 : 1e-150;
    const double width = single ? 15.0 : 100.0; /* decades either side of 1 for "mixed" */
    for (int64_t j = 0; j < cols; j++)
        for (int64_t i = 0; i < rows; i++) {
            double v;
            switch (cls) {
            case DC_ZEROS: v = 0.0; break;
            case DC_INTEGERS: v = (double)((int64_t)dg_below(r, 33) - 16); break;
            case DC_HUGE: v = huge * dg_range(r, -1.0, 1.0); break;
            case DC_TINY: v = tiny * dg_range(r, -1.0, 1.0); break;
            case DC_MIXED:
                v = pow(10.0, dg_range(r, -width, width)) * (dg_below(r, 2) ? -1.0 : 1.0);
                break;
            default: v = dg_range(r, -1.0, 1.0); break; /* uniform, and the base of nan/inf */
            }
            x[i + j * ld] = to_type(v, single);
        }
    if (cls == DC_NONFINITE && rows > 0 && cols > 0) {
        const int count = 1 + (int)dg_below(r, 3);
        for (int q = 0; q < count; q++) {
            const int64_t i = (int64_t)dg_below(r, (uint64_t)rows);
            const int64_t j = (int64_t)dg_below(r, (uint64_t)cols);
            const int what = (int)dg_below(r, 3);
            x[i + j * ld] = what == 0 ? NAN : what == 1 ? INFINITY : -INFINITY;
        }
    }
}

static int64_t pad_ld(dg_rng *r, int64_t rows)
{
    const int64_t min = rows > 1 ? rows : 1;
    return dg_below(r, 2) ? min : min + 1 + (int64_t)dg_below(r, 9);
}

static void draw_case(fz_case *c, long idx, dg_rng *r)
{
    memset(c, 0, sizeof *c);
    c->idx = idx;
    c->single = (int)dg_below(r, 2);
    c->ta = dg_below(r, 2) ? 'T' : 'N';
    c->tb = dg_below(r, 2) ? 'T' : 'N';
    const int nd = (int)(sizeof kDims / sizeof kDims[0]);
    c->m = kDims[dg_below(r, (uint64_t)nd)];
    c->n = kDims[dg_below(r, (uint64_t)nd)];
    c->k = kDims[dg_below(r, (uint64_t)nd)];
    c->lda = pad_ld(r, c->ta == 'N' ? c->m : c->k);
    c->ldb = pad_ld(r, c->tb == 'N' ? c->k : c->n);
    c->ldc = pad_ld(r, c->m);
    c->ak = pick(r, kAlphaW, SC_N);
    c->bk = pick(r, kBetaW, SC_N);
    c->alpha = scalar_value(c->ak, c->single, r);
    c->beta = scalar_value(c->bk, c->single, r);
    c->acls = pick(r, kDcW, DC_N);
    c->bcls = pick(r, kDcW, DC_N);
    c->ccls = pick(r, kDcW, DC_N);
    c->c_nan = c->beta == 0.0 && dg_below(r, 2);
    c->bs = kBs[dg_below(r, sizeof kBs / sizeof kBs[0])];
    c->r = 1 + (int)dg_below(r, 2);
    c->proj = (int)dg_below(r, 2);
    c->promote = c->single ? (int)dg_below(r, 2) : 0;
    c->rows = (int)dg_below(r, 2);
    c->dev = (int)dg_below(r, 2);
    c->detect = dg_below(r, 10) == 0;
}

static const char *describe(const fz_case *c, uint64_t seed)
{
    static char buf[640];
    const char *fmt = c->single ? "%.9g" : "%.17g";
    char a[48], b[48];
    snprintf(a, sizeof a, fmt, c->alpha);
    snprintf(b, sizeof b, fmt, c->beta);
    snprintf(buf, sizeof buf,
             "seed=%" PRIu64 " case=%ld %c %c%c m=%" PRId64 " n=%" PRId64 " k=%" PRId64
             " lda=%" PRId64 " ldb=%" PRId64 " ldc=%" PRId64
             " alpha=%s(%s) beta=%s(%s) A=%s B=%s C=%s bs=%d r=%d proj=%d promote=%d rows=%s "
             "scalars=%s mode=%s",
             seed, c->idx, c->single ? 'S' : 'D', c->ta, c->tb, c->m, c->n, c->k, c->lda, c->ldb,
             c->ldc, a, kScName[c->ak], b, kScName[c->bk], kDcName[c->acls], kDcName[c->bcls],
             c->c_nan ? "NaN(beta=0)" : kDcName[c->ccls], c->bs, c->r, c->proj, c->promote,
             c->rows ? "flagged" : "all", c->dev ? "device" : "host",
             c->detect ? "detect" : "correct");
    return buf;
}

static void die_cuda(cudaError_t e, const char *what)
{
    if (e != cudaSuccess) {
        fprintf(stderr, "CUDA %s: %s\n", what, cudaGetErrorString(e));
        exit(1);
    }
}

/* a typed buffer of count elements with the sentinel bit pattern (a quiet NaN with a payload) */
static void *sentinel_buffer(int64_t count, int single)
{
    const size_t ts = single ? 4 : 8;
    unsigned char *h = malloc(ts * (size_t)(count > 0 ? count : 1));
    for (int64_t e = 0; e < count; e++) {
        if (single) {
            const uint32_t s = 0x7FC5A5A5u;
            memcpy(h + 4 * e, &s, 4);
        } else {
            const uint64_t s = 0x7FF8A5A5A5A5A5A5ull;
            memcpy(h + 8 * e, &s, 8);
        }
    }
    return h;
}

static void *download(const void *d, size_t bytes)
{
    void *h = malloc(bytes ? bytes : 1);
    if (bytes)
        die_cuda(cudaMemcpy(h, d, bytes, cudaMemcpyDeviceToHost), "download");
    return h;
}

static int bytes_equal(const void *d, const void *h, size_t bytes)
{
    void *x = download(d, bytes);
    const int eq = bytes == 0 || memcmp(x, h, bytes) == 0;
    free(x);
    return eq;
}

/* magnitudes of the finite nonzero values of a row or column of op(A) / op(B) */
typedef struct line_stats {
    int nonfinite;
    double max, min; /* max |x|, min nonzero |x| (INFINITY if none) */
} line_stats;

static void line_scan(const double *x, int64_t k, line_stats *s)
{
    s->nonfinite = 0;
    s->max = 0.0;
    s->min = INFINITY;
    for (int64_t l = 0; l < k; l++) {
        const double a = fabs(x[l]);
        if (!isfinite(a))
            s->nonfinite = 1;
        else if (a != 0.0) {
            if (a > s->max)
                s->max = a;
            if (a < s->min)
                s->min = a;
        }
    }
}

/* Dot2 (Ogita, Rump, Oishi): sum_l x_l y_l with error-free products (fma; exact without it for
 * floats held in doubles) and sums, returned as a double-double; *mag gets sum |x_l y_l|. */
static hp_dd dot2(const double *x, const double *y, int64_t k, int single, double *mag)
{
    double hi = 0.0, lo = 0.0, m = 0.0;
    for (int64_t l = 0; l < k; l++) {
        const double p = x[l] * y[l];
        const double e = single ? 0.0 : fma(x[l], y[l], -p);
        const double s = hi + p, bb = s - hi;
        lo += ((hi - (s - bb)) + (p - bb)) + e;
        hi = s;
        m += fabs(p);
    }
    *mag = m;
    const double s = hi + lo;
    return (hp_dd){s, lo - (s - hi)};
}

static int in_range(double x, double lo, double hi)
{
    const double a = fabs(x);
    return a == 0.0 || (a >= lo && a <= hi);
}

/* the counters that name an error (false alarms and encoder faults are not among them) */
static int errors_reported(const blasft_stats *s)
{
    return s->errors_detected || s->errors_corrected || s->blocks_recomputed || s->uncorrectable;
}

typedef struct totals {
    long cases, cat[CAT_N], plain_runs, any_report, clean_with_false_alarm, single, promoted,
        detect, device, k_or_alpha_zero;
    uint64_t false_alarms, encoder_faults;
} totals;

static void run_case(uint64_t seed, long idx, totals *tot)
{
    dg_rng rng;
    dg_seed(&rng, seed + (uint64_t)idx * 0x9E3779B97F4A7C15ull);
    fz_case c;
    draw_case(&c, idx, &rng);
    const char *what = describe(&c, seed);
    running = what;
    const int single = c.single;
    const size_t ts = single ? 4 : 8;
    const int64_t m = c.m, n = c.n, k = c.k;
    const int64_t ar = c.ta == 'N' ? m : k, ac = c.ta == 'N' ? k : m;
    const int64_t br = c.tb == 'N' ? k : n, bc = c.tb == 'N' ? n : k;
    const int64_t na = c.lda * ac, nb = c.ldb * bc, nc = c.ldc * n;

    /* host data in double (exactly the typed values), padding NaN */
    double *A = malloc(8 * (size_t)(na + 1)), *B = malloc(8 * (size_t)(nb + 1));
    double *C = malloc(8 * (size_t)(nc + 1));
    for (int64_t e = 0; e < na; e++) A[e] = NAN;
    for (int64_t e = 0; e < nb; e++) B[e] = NAN;
    for (int64_t e = 0; e < nc; e++) C[e] = NAN;
    fill(A, ar, ac, c.lda, c.acls, single, &rng);
    fill(B, br, bc, c.ldb, c.bcls, single, &rng);
    if (!c.c_nan)
        fill(C, m, n, c.ldc, c.ccls, single, &rng);
    void *hA = gh_typed_copy(A, na, single), *hB = gh_typed_copy(B, nb, single);
    /* C in the middle of a sentinel buffer; its padding rows keep the sentinel */
    unsigned char *hCg = sentinel_buffer(nc + 2 * kGuard, single);
    for (int64_t j = 0; j < n; j++)
        for (int64_t i = 0; i < m; i++) {
            unsigned char *at = hCg + ts * (size_t)(kGuard + i + j * c.ldc);
            if (single) {
                const float f = (float)C[i + j * c.ldc];
                memcpy(at, &f, 4);
            } else {
                memcpy(at, &C[i + j * c.ldc], 8);
            }
        }
    const size_t cbytes = ts * (size_t)(nc + 2 * kGuard);
    void *dA = gh_upload(hA, ts * (size_t)na), *dB = gh_upload(hB, ts * (size_t)nb);
    void *dCg = gh_upload(hCg, cbytes);
    const float af = (float)c.alpha, bf = (float)c.beta;
    const void *halpha = single ? (const void *)&af : (const void *)&c.alpha;
    const void *hbeta = single ? (const void *)&bf : (const void *)&c.beta;
    void *dal = gh_upload(halpha, ts), *dbe = gh_upload(hbeta, ts);

    blasft_gpu_gemm g;
    memset(&g, 0, sizeof g);
    g.type = single ? BLASFT_TYPE_S : BLASFT_TYPE_D;
    g.transa = c.ta;
    g.transb = c.tb;
    g.m = m; g.n = n; g.k = k;
    g.alpha = c.dev ? dal : halpha;
    g.beta = c.dev ? dbe : hbeta;
    g.scalars_on_device = c.dev;
    g.a = dA; g.lda = c.lda;
    g.b = dB; g.ldb = c.ldb;
    g.c = (char *)dCg + ts * kGuard; g.ldc = c.ldc;
    g.routine = "test_gpu_fuzz";
    blasft_gpu_params p;
    gh_params(&p, c.bs, c.r);
    p.proj = c.proj;
    p.promote = c.promote;
    p.rows_on_demand = c.rows;
    if (c.detect)
        p.mode = BLASFT_MODE_DETECT;

    const blasft_stats st = gh_run_counted(ctx, &g, &p, what);
    unsigned char *out = download(dCg, cbytes);

    /* the guards and C's padding rows: bitwise unchanged */
    {
        int64_t bad = 0, first = -1;
        for (int64_t e = 0; e < nc + 2 * kGuard; e++) {
            const int64_t ce = e - kGuard; /* index into C, or outside */
            const int inside = ce >= 0 && ce < nc && ce % c.ldc < m;
            if (!inside && memcmp(out + ts * e, hCg + ts * e, ts) != 0) {
                if (first < 0)
                    first = ce;
                bad++;
            }
        }
        GH_CHECK(bad == 0,
                 "%s: %" PRId64 " elements of the guards or C's padding rows written, the first "
                 "at C offset %" PRId64,
                 what, bad, first);
    }
    /* the operands (and scalars) on the device: bitwise unchanged */
    GH_CHECK(bytes_equal(dA, hA, ts * (size_t)na) && bytes_equal(dB, hB, ts * (size_t)nb) &&
                 bytes_equal(dal, halpha, ts) && bytes_equal(dbe, hbeta, ts),
             "%s: A, B or the device scalars changed", what);

    /* the oracle */
    const double u = single ? 0x1p-24 : 0x1p-53, tn = single ? FLT_MIN : DBL_MIN;
    const double lim = 0.5 * (single ? FLT_MAX : DBL_MAX);
    const double lo = single ? 1e-30 : 1e-115, hi = single ? 1e30 : 1e115;
    const int prod_used = c.alpha != 0.0 && k > 0; /* NaN != 0: used */
    const int cold_used = c.beta != 0.0;
    const int dev0 = c.dev && c.alpha == 0.0 && k > 0; /* deviation (1) */
    const double aa = fabs(c.alpha), ab = fabs(c.beta);
    /* alpha counts only where k > 0 (with k = 0 nothing multiplies by it) */
    int clean = isfinite(c.beta) && in_range(c.beta, lo, hi) &&
                (k == 0 || (isfinite(c.alpha) && in_range(c.alpha, lo, hi)));
    int nonfinite = !isfinite(c.beta) || (k > 0 && !isfinite(c.alpha));
    category cat = CAT_CLEAN;
    int plain_ran = 0;
    if (m > 0 && n > 0) {
        /* op(A) by rows and op(B) by columns, contiguous along k */
        double *At = malloc(8 * (size_t)(m * k + 1)), *Bt = malloc(8 * (size_t)(n * k + 1));
        for (int64_t i = 0; i < m; i++)
            for (int64_t l = 0; l < k; l++)
                At[i * k + l] = c.ta == 'N' ? A[i + l * c.lda] : A[l + i * c.lda];
        for (int64_t j = 0; j < n; j++)
            for (int64_t l = 0; l < k; l++)
                Bt[j * k + l] = c.tb == 'N' ? B[l + j * c.ldb] : B[j + l * c.ldb];
        line_stats *rs = malloc(sizeof *rs * (size_t)m), *cs = malloc(sizeof *cs * (size_t)n);
        for (int64_t i = 0; i < m; i++) {
            line_scan(At + i * k, k, &rs[i]);
            nonfinite |= rs[i].nonfinite;
            clean &= !rs[i].nonfinite && (rs[i].min == INFINITY || rs[i].min >= lo) &&
                     rs[i].max <= hi;
        }
        for (int64_t j = 0; j < n; j++) {
            line_scan(Bt + j * k, k, &cs[j]);
            nonfinite |= cs[j].nonfinite;
            clean &= !cs[j].nonfinite && (cs[j].min == INFINITY || cs[j].min >= lo) &&
                     cs[j].max <= hi;
        }
        double *ref = malloc(8 * (size_t)(m * n)), *bound = malloc(8 * (size_t)(m * n));
        unsigned char *special = malloc((size_t)(m * n));
        int any_special = 0;
        for (int64_t j = 0; j < n; j++)
            for (int64_t i = 0; i < m; i++) {
                const int64_t e = i + j * m;
                const double cold = C[i + j * c.ldc];
                double mag = 0.0;
                hp_dd s = hp_from(0.0);
                const int line_nf = rs[i].nonfinite || cs[j].nonfinite;
                if (k > 0 && !line_nf)
                    s = dot2(At + i * k, Bt + j * k, k, single, &mag);
                if (!prod_used)
                    s = hp_from(0.0);
                else if (line_nf)
                    s = hp_from(NAN);
                else
                    s = hp_mul_d(s, c.alpha);
                if (cold_used)
                    s = hp_add(s, hp_mul_d(hp_from(cold), c.beta));
                ref[e] = hp_to_double(s);
                const double mag_a = prod_used ? aa * mag : 0.0, mag_c = cold_used ? ab * fabs(cold) : 0.0;
                const double pmax = rs[i].max * cs[j].max, pmin = rs[i].min * cs[j].min;
                const int nf = (prod_used && (!isfinite(c.alpha) || line_nf)) ||
                               (cold_used && (!isfinite(c.beta) || !isfinite(cold)));
                const int ovf = (prod_used && (pmax > lim || mag > lim || mag_a > lim)) ||
                                mag_c > lim || mag_a + mag_c > lim;
                special[e] = (unsigned char)(nf || ovf);
                any_special |= special[e];
                nonfinite |= nf || ovf;
                bound[e] = 2.0 * (double)(k + 2) * u * (mag_a + mag_c) +
                           2.0 * (prod_used ? aa * (double)(k + 1) + 2.0 : 2.0) * tn;
                if (cold_used)
                    clean &= isfinite(cold) && in_range(cold, lo, hi) && in_range(mag_c, lo, hi);
                if (k > 0)
                    clean &= pmax <= hi && (pmin == INFINITY || pmin >= lo) && mag <= hi;
                if (prod_used)
                    clean &= mag_a <= hi && (pmin == INFINITY || aa * pmin >= lo);
                clean &= !special[e] && in_range(ref[e], lo, hi);
            }
        /* plain cuBLAS on a fresh copy of the same C, where a deviation needs its opinion */
        double *plain = NULL;
        if (any_special || dev0) {
            void *dCp = gh_upload(hCg, cbytes);
            blasft_gpu_gemm gp = g;
            gp.c = (char *)dCp + ts * kGuard;
            const int rc = blasft_gpu_gemm_plain(ctx, &gp);
            GH_CHECK(rc == 0, "%s: blasft_gpu_gemm_plain returned %d", what, rc);
            gh_sync();
            unsigned char *po = download(dCp, cbytes);
            plain = malloc(8 * (size_t)(m * n));
            for (int64_t j = 0; j < n; j++)
                for (int64_t i = 0; i < m; i++) {
                    const unsigned char *at = po + ts * (size_t)(kGuard + i + j * c.ldc);
                    if (single) {
                        float f;
                        memcpy(&f, at, 4);
                        plain[i + j * m] = f;
                    } else {
                        memcpy(&plain[i + j * m], at, 8);
                    }
                }
            free(po);
            cudaFree(dCp);
            plain_ran = 1;
        }
        /* every element of C */
        int64_t bad = 0, fi = -1, fj = -1;
        double fgot = 0, fref = 0, fbound = 0, fplain = 0;
        int fspecial = 0;
        for (int64_t j = 0; j < n; j++)
            for (int64_t i = 0; i < m; i++) {
                const int64_t e = i + j * m;
                const unsigned char *at = out + ts * (size_t)(kGuard + i + j * c.ldc);
                double got;
                if (single) {
                    float f;
                    memcpy(&f, at, 4);
                    got = f;
                } else {
                    memcpy(&got, at, 8);
                }
                const double pl = plain ? plain[e] : NAN;
                /* deviations (1), (2): plain cuBLAS's value, non-finite alike or finite close */
                const int like_plain =
                    plain && ((!isfinite(got) && !isfinite(pl)) ||
                              (isfinite(got) && isfinite(pl) && !(fabs(got - pl) > 2.0 * bound[e])));
                const int near_ref =
                    isfinite(got) && isfinite(ref[e]) && fabs(got - ref[e]) <= bound[e];
                int ok;
                if (special[e]) {
                    ok = near_ref || like_plain;
                } else {
                    /* BLAS's exact zero (product not computed, beta 0) is +0 */
                    const int zero_sign_ok =
                        prod_used || cold_used || c.dev || (got == 0.0 && !signbit(got));
                    ok = (near_ref && zero_sign_ok) || (dev0 && like_plain);
                }
                if (!ok) {
                    if (!bad) {
                        fi = i;
                        fj = j;
                        fgot = got;
                        fref = ref[e];
                        fbound = bound[e];
                        fplain = pl;
                        fspecial = special[e];
                    }
                    bad++;
                }
            }
        GH_CHECK(bad == 0,
                 "%s: %" PRId64 " elements of C wrong, the first (%" PRId64 ",%" PRId64
                 ") %.17g vs reference %.17g (tolerance %.3g, %s, plain cuBLAS %s%.17g)",
                 what, bad, fi, fj, fgot, fref, fbound, fspecial ? "special" : "ordinary",
                 plain ? "" : "not run: ", fplain);
        free(At); free(Bt); free(rs); free(cs);
        free(ref); free(bound); free(special); free(plain);
        cat = nonfinite ? CAT_NONFINITE : clean ? CAT_CLEAN : CAT_EXTREME;
    } else {
        cat = CAT_EMPTY;
    }
    if (cat == CAT_EMPTY || cat == CAT_CLEAN)
        GH_CHECK(!errors_reported(&st),
                 "%s: %s case reported detected %" PRIu64 " corrected %" PRIu64 " recomputed %" PRIu64
                 " uncorrectable %" PRIu64 " (false alarms %" PRIu64 ", encoder faults %" PRIu64 ")",
                 what, kCatName[cat], st.errors_detected, st.errors_corrected,
                 st.blocks_recomputed, st.uncorrectable, st.false_alarms, st.encoder_faults);

    tot->cases++;
    tot->cat[cat]++;
    tot->plain_runs += plain_ran;
    tot->false_alarms += st.false_alarms;
    tot->encoder_faults += st.encoder_faults;
    tot->any_report += errors_reported(&st) || st.false_alarms || st.encoder_faults;
    tot->clean_with_false_alarm += cat == CAT_CLEAN && st.false_alarms;
    tot->single += single;
    tot->promoted += c.promote;
    tot->detect += c.detect;
    tot->device += c.dev;
    tot->k_or_alpha_zero += m > 0 && n > 0 && (k == 0 || c.alpha == 0.0);

    free(A); free(B); free(C); free(hA); free(hB); free(hCg); free(out);
    cudaFree(dA); cudaFree(dB); cudaFree(dCg); cudaFree(dal); cudaFree(dbe);
    running = NULL;
}

int main(int argc, char **argv)
{
    uint64_t seed = kDefaultSeed;
    long count = kDefaultCount, first = 0;
    if (argc > 1)
        seed = strtoull(argv[1], NULL, 0);
    if (argc > 2)
        count = strtol(argv[2], NULL, 0);
    if (argc > 3)
        first = strtol(argv[3], NULL, 0);
    if (argc > 4 || count < 0 || first < 0) {
        fprintf(stderr, "usage: %s [SEED [COUNT [FIRST]]]\n", argv[0]);
        return 2;
    }
    ctx = gh_start();
    atexit(name_running_case);
    printf("gpu fuzz: seed %" PRIu64 ", cases %ld..%ld (one case again: %s %" PRIu64 " 1 INDEX)\n",
           seed, first, first + count - 1, argv[0], seed);
    fflush(stdout);
    totals tot;
    memset(&tot, 0, sizeof tot);
    for (long i = first; i < first + count; i++) {
        run_case(seed, i, &tot);
        if ((i - first + 1) % 1000 == 0) {
            printf("gpu fuzz: %ld cases, %d failures so far\n", i - first + 1, gh_failures);
            fflush(stdout);
        }
    }
    printf("gpu fuzz: seed %" PRIu64 ": %ld cases (S %ld, D %ld; promoted %ld, detect %ld, device "
           "scalars %ld, k or alpha 0 %ld): empty %ld, clean %ld, extreme %ld, nonfinite %ld; "
           "plain cuBLAS runs %ld; false alarms %" PRIu64 " (clean cases with one %ld), encoder "
           "faults %" PRIu64 "; cases with any report %ld\n",
           seed, tot.cases, tot.single, tot.cases - tot.single, tot.promoted, tot.detect,
           tot.device, tot.k_or_alpha_zero, tot.cat[CAT_EMPTY], tot.cat[CAT_CLEAN],
           tot.cat[CAT_EXTREME], tot.cat[CAT_NONFINITE], tot.plain_runs, tot.false_alarms,
           tot.clean_with_false_alarm, tot.encoder_faults, tot.any_report);
    return gh_finish(ctx);
}
