/* Randomized differential test of the GPU engine: protected GEMMs of the real types (S, D) and the
 * complex types (C, Z) of random shapes, leading dimensions, scalars, data classes and engine
 * parameters against an independent host oracle in double-double, with plain cuBLAS on the same
 * data as the second opinion where IEEE special values or overflow make the reference BLAS's
 * value unreachable.
 *
 *   test_gpu_fuzz [SEED [COUNT [FIRST]]]
 *
 * runs the cases FIRST .. FIRST + COUNT - 1 of SEED (defaults: kDefaultSeed, kDefaultCount, 0);
 * every case draws from its own generator (seeded from SEED and its index), so one failing case
 * runs again on its own as `test_gpu_fuzz SEED 1 INDEX`. Exits 77 where there is no GPU.
 *
 * A case: type S, D, C or Z (weights kTypeW: 60 % real), transa/transb N or T (complex: N, T or
 * C, the conjugate transpose), m, n, k from kDims (k = 0 included; complex types: the entries up
 * to kComplexMaxDim = 300), leading dimensions minimal or padded (padding of A and B holds NaN:
 * reading it would show), alpha and beta from the kinds of scalar_kind (complex: a form per
 * scalar first, real (imaginary part 0, 40 %), imaginary (real part 0, 15 %) or general (45 %),
 * then each part that its form does not make 0 drawn as a real scalar: alpha = 0 + 0i,
 * alpha = +-i, beta = 0 + 0i and NaN or Inf in one part all come up), the data class of A, B
 * and C each from data_class (complex: a class per part, the imaginary part's the same as the
 * real part's in half the cases and drawn on its own in the other half, e.g. zeros: real data
 * in complex storage; with beta = 0 (both parts) the old C is NaN in half the cases: it must not
 * be read), block size, checksums, PROJ (complex GEMMs get PEA whatever it says), promotion (S
 * and C: computed as D and Z), rows on demand, scalars on host or device, correct or detect
 * mode. Complex data are stored interleaved (re, im), the scalars as float2/double2 (the GEMM's
 * type, in host or device memory as the case says). C lies in a device buffer with kGuard
 * sentinel elements before and after; C's padding rows hold the sentinel too.
 *
 * Checks per case: blasft_gpu_gemm_run returns 0; every element (every part) of C is acceptable
 * (below); the guards and C's padding rows are bitwise unchanged; A, B (and the device scalars)
 * are bitwise unchanged; a "clean" case (categories, below) reports no error (errors_detected,
 * errors_corrected, blocks_recomputed and uncorrectable all 0). False alarms are counted, never
 * failed.
 *
 * The oracle is the reference BLAS: C = alpha op(A) op(B) + beta C, where the old C is not read
 * if beta == 0 and the product is not computed if alpha == 0 or k == 0 (C = beta C; with beta = 0
 * also, C = +0); for complex scalars "== 0" means both parts. The sum is computed from the typed
 * data as the device sees it (S and C rounded through float) with Dot2 (error-free products and
 * sums: a double-double accumulator); for complex types one accumulator per part, the real
 * part's summing ar br and -(ai bi), the imaginary part's ar bi and ai br, with op's conjugation
 * ('C') applied to the imaginary parts first. alpha and beta are applied with hpref's
 * double-double helpers (complex: (xr + i xi)(sr + i si) as two sums of two products each). An
 * element is acceptable where it is finite and, for every part,
 *   |c - ref| <= 2 gamma_(P k + 2) (|alpha| sum_l |a_il| |b_lj| + |beta| |c_ij|)
 *                + 2 (|alpha| (P k + 1) + 2 P) * (the type's smallest normal number),
 * P = 1 for real and 2 for complex types, |x| = |re x| + |im x| (so the sum bounds the sum of
 * the magnitudes of every real product in either part), gamma_j = j u, u the type's unit
 * roundoff (2^-24 for S and C, 2^-53 for D and Z): a part sums 2k products for complex types,
 * and complex alpha and beta add two products and a sum each. The second term is gradual
 * underflow: each of the P k products and P k sums of a part loses at most the smallest normal
 * number even where subnormals are flushed, the sum is scaled by alpha, and alpha's and beta's
 * products and sums lose P more each. Where alpha times an element of op(A) or op(B) underflows,
 * 2 P k (the smallest normal number) (the largest |part| of row i of op(A) and column j of
 * op(B)) is added: cuBLAS may scale an operand by alpha first, and the other factor multiplies
 * that underflow's loss. A promoted S or C GEMM (p.promote = 1) is checked against
 * the same bound (it is at least as accurate). Where the reference BLAS's result is exactly zero
 * by definition (alpha = 0 or k = 0, and beta = 0) and the scalars are on the host, C must also
 * be +0 (every part), not -0.
 *
 * Known and accepted deviations from the reference BLAS:
 * (1) Scalars on the device with alpha = 0 (k > 0): cuBLAS multiplies the product by alpha, so
 *     0 times a negative product gives -0 and 0 times Inf/NaN or an overflowed product gives NaN,
 *     and the engine may keep that. There a part is also acceptable where it agrees with plain
 *     cuBLAS's on a fresh copy of the same data (blasft_gpu_gemm_plain): both not finite, or both
 *     finite and within twice the tolerance of each other; the sign of zero is not checked. In
 *     correct mode the engine recomputes such a NaN into BLAS's C = beta C; in detect mode it
 *     reports the block and leaves the value of the GEMM it ran, which for a promoted S or C is
 *     another cuBLAS kernel than plain's: there a non-finite part is accepted where the call
 *     reported an error.
 * (2) Elements whose inputs hold NaN/Inf (a part of alpha or beta not finite where used, a
 *     non-finite part of an element in row i of op(A) or column j of op(B) where the product is
 *     computed, a non-finite part of the old C(i,j) where beta != 0), or where the exact result
 *     or an intermediate may overflow (a product of two parts, the partial sums' bound
 *     sum |a||b|, |alpha| sum |a||b|, |beta||c| or their sum above half the type's largest
 *     number; |x| as above, so this holds for either part): the reference BLAS value is either
 *     not finite or not what any IEEE evaluation order gives, so each part is compared with plain
 *     cuBLAS's, part by part: acceptable where both are non-finite, or both finite and within
 *     twice the tolerance of each other (any two finite values where the tolerance is not
 *     finite). Also acceptable there: a finite part within the tolerance of a finite exact result
 *     (where plain cuBLAS's partial sums overflow in float, the promoted S/C path computes in
 *     double, and the engine's recomputation of a flagged block also computes in double: both
 *     may return the right finite value where plain cuBLAS returns Inf). For complex types a
 *     part of the scalar that is 0 times Inf in the other part makes NaN, or not, by how the
 *     product is evaluated ((1 + 0i)(Inf + 1i) is Inf + NaN i as a full complex product, Inf + 1i
 *     where beta = 1 or a real scalar is taken as such, as the reference BLAS does for
 *     beta = 1): so the oracle leaves the terms of a scalar's zero part out (its finite part is
 *     the value without that NaN; the tolerance counts the old C's finite parts only), and a
 *     part that is not finite is also acceptable where plain cuBLAS's element has a part that
 *     is not finite.
 * (3) The tolerance above, for every finite result (cuBLAS's summation order is not known).
 *
 * Categories (the summary line): empty (m or n = 0), nonfinite (a non-finite part of a scalar, of
 * an element of the A or B region that the device reads (k > 0) or of the old C read
 * (beta != 0), or an element as in (2) by overflow), clean (every such value and scalar finite,
 * the nonzero parts, the products' bounds (max |part| of a row of op(A) times that of a column
 * of op(B), min |nonzero part| likewise, also times alpha's, and beta's times C's),
 * sum |a||b|, |alpha| sum |a||b|, |beta||c| and the nonzero parts of the exact results between
 * lo and hi: 1e-115..1e115 for D and Z, 1e-30..1e30 for S and C), extreme (the rest: finite but
 * outside that range, e.g. subnormal scalars, huge times huge). Empty and clean cases must report
 * no error. The range for D is the one within which the engine's statistical thresholds are
 * valid, element magnitudes of 2^-400..2^400 (blasft_squares_in_range), with a margin. Outside
 * it every block flags and the second tier decides: a false alarm where the old C is known (beta
 * 0, or kept to correct), but a report in detect mode with beta != 0, where nothing can be
 * recomputed. */
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
 * real case (mean m n k about 2.7e6 terms of Dot2 at about 2 ns) and about as much a complex one
 * (shapes capped at kComplexMaxDim: mean m n k about 6.5e5, four Dot2 terms each), the GPU side
 * a few ms more. */
static const uint64_t kDefaultSeed = 20250601;
static const long kDefaultCount = 5000;
/* sentinel elements before and after C (a multiple of 32 elements: C stays 128-byte aligned) */
enum { kGuard = 64 };

static const int64_t kDims[] = {0, 1, 2, 3, 7, 16, 31, 32, 33, 64, 127, 128, 129, 255, 257, 300,
                                511, 600};
/* complex cases draw m, n, k from the entries of kDims up to this (their oracle costs four real
 * Dot2 terms per complex one) */
static const int64_t kComplexMaxDim = 300;
static const int kBs[] = {16, 32, 37, 64, 256};
/* S, D, C, Z (the order of blasft_type) */
static const int kTypeW[4] = {3, 3, 2, 2};
static const char kTypeName[4] = {'S', 'D', 'C', 'Z'};

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
    blasft_type t;
    int single;          /* S or C: float parts */
    int parts;           /* 1 (S, D) or 2 (C, Z: re, im) */
    char ta, tb;
    int64_t m, n, k, lda, ldb, ldc;
    int ak[2], bk[2];            /* scalar kinds of the parts (real types: im SC_ZERO) */
    double alpha[2], beta[2];    /* the typed values (S, C: exactly the floats); real: im 0 */
    int acls[2], bcls[2], ccls[2]; /* data classes of the parts (real types: [0]) */
    int c_nan;           /* beta = 0 and the old C is all NaN */
    int bs, r, proj, promote, rows, dev, detect;
} fz_case;

static blasft_gpu_ctx *ctx;
/* the case in progress, named at exit if a CUDA failure ends the program inside it (the harness
 * exits on failed copies and allocations) */
static const char *running;
static int trace;

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

/* alpha or beta (kinds weighted by w): a real scalar, or a complex one of a form drawn first,
 * real (imaginary part 0), imaginary (real part 0) or general, each part not 0 by its form drawn
 * as a real scalar */
static void draw_scalar(dg_rng *r, const int *w, int parts, int single, int *kind, double *v)
{
    kind[0] = kind[1] = SC_ZERO;
    if (parts == 1) {
        kind[0] = pick(r, w, SC_N);
    } else {
        const int form = (int)dg_below(r, 20); /* 0-7 real, 8-10 imaginary, 11-19 general */
        if (form < 8 || form >= 11)
            kind[0] = pick(r, w, SC_N);
        if (form >= 8)
            kind[1] = pick(r, w, SC_N);
    }
    for (int q = 0; q < 2; q++)
        v[q] = scalar_value(kind[q], single, r);
}

/* part q of rows x cols of x (ld, parts per element) from class cls, as typed values */
static void fill(double *x, int64_t rows, int64_t cols, int64_t ld, int parts, int q, int cls,
                 int single, dg_rng *r)
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
            x[parts * (i + j * ld) + q] = to_type(v, single);
        }
    if (cls == DC_NONFINITE && rows > 0 && cols > 0) {
        const int count = 1 + (int)dg_below(r, 3);
        for (int c = 0; c < count; c++) {
            const int64_t i = (int64_t)dg_below(r, (uint64_t)rows);
            const int64_t j = (int64_t)dg_below(r, (uint64_t)cols);
            const int what = (int)dg_below(r, 3);
            x[parts * (i + j * ld) + q] = what == 0 ? NAN : what == 1 ? INFINITY : -INFINITY;
        }
    }
}

static int64_t pad_ld(dg_rng *r, int64_t rows)
{
    const int64_t min = rows > 1 ? rows : 1;
    return dg_below(r, 2) ? min : min + 1 + (int64_t)dg_below(r, 9);
}

static char draw_trans(dg_rng *r, int parts)
{
    static const char ops[3] = {'N', 'T', 'C'};
    return ops[dg_below(r, parts == 2 ? 3 : 2)];
}

static void draw_case(fz_case *c, long idx, dg_rng *r)
{
    memset(c, 0, sizeof *c);
    c->idx = idx;
    c->t = (blasft_type)pick(r, kTypeW, 4);
    c->single = c->t == BLASFT_TYPE_S || c->t == BLASFT_TYPE_C;
    c->parts = c->t == BLASFT_TYPE_C || c->t == BLASFT_TYPE_Z ? 2 : 1;
    c->ta = draw_trans(r, c->parts);
    c->tb = draw_trans(r, c->parts);
    int nd = (int)(sizeof kDims / sizeof kDims[0]);
    if (c->parts == 2)
        while (nd > 1 && kDims[nd - 1] > kComplexMaxDim)
            nd--;
    c->m = kDims[dg_below(r, (uint64_t)nd)];
    c->n = kDims[dg_below(r, (uint64_t)nd)];
    c->k = kDims[dg_below(r, (uint64_t)nd)];
    c->lda = pad_ld(r, c->ta == 'N' ? c->m : c->k);
    c->ldb = pad_ld(r, c->tb == 'N' ? c->k : c->n);
    c->ldc = pad_ld(r, c->m);
    draw_scalar(r, kAlphaW, c->parts, c->single, c->ak, c->alpha);
    draw_scalar(r, kBetaW, c->parts, c->single, c->bk, c->beta);
    int *const cls[3] = {c->acls, c->bcls, c->ccls};
    for (int x = 0; x < 3; x++) {
        cls[x][0] = pick(r, kDcW, DC_N);
        /* complex: the imaginary part's class the real part's in half the cases, else its own */
        if (c->parts == 2)
            cls[x][1] = dg_below(r, 2) ? cls[x][0] : pick(r, kDcW, DC_N);
    }
    c->c_nan = c->beta[0] == 0.0 && c->beta[1] == 0.0 && dg_below(r, 2);
    c->bs = kBs[dg_below(r, sizeof kBs / sizeof kBs[0])];
    c->r = 1 + (int)dg_below(r, 2);
    c->proj = (int)dg_below(r, 2);
    c->promote = c->single ? (int)dg_below(r, 2) : 0;
    c->rows = (int)dg_below(r, 2);
    c->dev = (int)dg_below(r, 2);
    c->detect = dg_below(r, 10) == 0;
}

/* "v(kind)" for a real scalar, "(re,im)(kind,kind)" for a complex one */
static void scalar_text(char *buf, size_t size, const fz_case *c, const double *v, const int *kind)
{
    const char *fmt = c->single ? "%.9g" : "%.17g";
    char re[40], im[40];
    snprintf(re, sizeof re, fmt, v[0]);
    snprintf(im, sizeof im, fmt, v[1]);
    if (c->parts == 1)
        snprintf(buf, size, "%s(%s)", re, kScName[kind[0]]);
    else
        snprintf(buf, size, "(%s,%s)(%s,%s)", re, im, kScName[kind[0]], kScName[kind[1]]);
}

/* "class" for real data, "(class,class)" (re, im) for complex data */
static void class_text(char *buf, size_t size, const fz_case *c, const int *cls)
{
    if (c->parts == 1)
        snprintf(buf, size, "%s", kDcName[cls[0]]);
    else
        snprintf(buf, size, "(%s,%s)", kDcName[cls[0]], kDcName[cls[1]]);
}

static const char *describe(const fz_case *c, uint64_t seed)
{
    static char buf[800];
    char a[120], b[120], ca[24], cb[24], cc[24];
    scalar_text(a, sizeof a, c, c->alpha, c->ak);
    scalar_text(b, sizeof b, c, c->beta, c->bk);
    class_text(ca, sizeof ca, c, c->acls);
    class_text(cb, sizeof cb, c, c->bcls);
    class_text(cc, sizeof cc, c, c->ccls);
    snprintf(buf, sizeof buf,
             "seed=%" PRIu64 " case=%ld %c %c%c m=%" PRId64 " n=%" PRId64 " k=%" PRId64
             " lda=%" PRId64 " ldb=%" PRId64 " ldc=%" PRId64
             " alpha=%s beta=%s A=%s B=%s C=%s bs=%d r=%d proj=%d promote=%d rows=%s "
             "scalars=%s mode=%s",
             seed, c->idx, kTypeName[c->t], c->ta, c->tb, c->m, c->n, c->k, c->lda, c->ldb,
             c->ldc, a, b, ca, cb, c->c_nan ? "NaN(beta=0)" : cc, c->bs, c->r, c->proj,
             c->promote, c->rows ? "flagged" : "all", c->dev ? "device" : "host",
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

/* count parts (float or double) with the sentinel bit pattern (a quiet NaN with a payload) */
static void *sentinel_buffer(int64_t count, int single)
{
    const size_t es = single ? 4 : 8;
    unsigned char *h = malloc(es * (size_t)(count > 0 ? count : 1));
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

/* part number e (float or double) of a typed buffer, as a double */
static double part_at(const unsigned char *x, int64_t e, int single)
{
    if (single) {
        float f;
        memcpy(&f, x + 4 * e, 4);
        return f;
    }
    double d;
    memcpy(&d, x + 8 * e, 8);
    return d;
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

/* magnitudes of the finite nonzero parts of a row or column of op(A) / op(B) */
typedef struct line_stats {
    int nonfinite;
    double max, min; /* max |part|, min nonzero |part| (INFINITY if none) */
} line_stats;

static void line_scan(const double *x, int64_t count, line_stats *s)
{
    s->nonfinite = 0;
    s->max = 0.0;
    s->min = INFINITY;
    for (int64_t l = 0; l < count; l++) {
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

/* Dot2 (Ogita, Rump, Oishi): a double-double accumulator of products x y, each error-free (fma;
 * exact without it for floats held in doubles), each sum error-free (TwoSum). */
typedef struct dot2_acc {
    double hi, lo;
} dot2_acc;

static inline void dot2_add(dot2_acc *s, double x, double y, int exact)
{
    const double p = x * y;
    const double e = exact ? 0.0 : fma(x, y, -p);
    const double t = s->hi + p, bb = t - s->hi;
    s->lo += ((s->hi - (t - bb)) + (p - bb)) + e;
    s->hi = t;
}

static inline hp_dd dot2_value(const dot2_acc *s)
{
    const double t = s->hi + s->lo;
    return (hp_dd){t, s->lo - (t - s->hi)};
}

/* sum_l x_l y_l (real), returned as a double-double; *mag gets sum |x_l y_l| */
static hp_dd dot2(const double *x, const double *y, int64_t k, int single, double *mag)
{
    dot2_acc s = {0.0, 0.0};
    double m = 0.0;
    for (int64_t l = 0; l < k; l++) {
        dot2_add(&s, x[l], y[l], single);
        m += fabs(x[l] * y[l]);
    }
    *mag = m;
    return dot2_value(&s);
}

/* The same for complex x and y (parts interleaved, conjugation already applied): s[0] the real
 * part (ar br - ai bi), s[1] the imaginary part (ar bi + ai br); *mag gets
 * sum (|xr| + |xi|) (|yr| + |yi|) */
static void zdot2(const double *x, const double *y, int64_t k, int single, hp_dd *s, double *mag)
{
    dot2_acc re = {0.0, 0.0}, im = {0.0, 0.0};
    double m = 0.0;
    for (int64_t l = 0; l < k; l++) {
        const double xr = x[2 * l], xi = x[2 * l + 1], yr = y[2 * l], yi = y[2 * l + 1];
        dot2_add(&re, xr, yr, single);
        dot2_add(&re, -xi, yi, single);
        dot2_add(&im, xr, yi, single);
        dot2_add(&im, xi, yr, single);
        m += (fabs(xr) + fabs(xi)) * (fabs(yr) + fabs(yi));
    }
    *mag = m;
    s[0] = dot2_value(&re);
    s[1] = dot2_value(&im);
}

static int in_range(double x, double lo, double hi)
{
    const double a = fabs(x);
    return a == 0.0 || (a >= lo && a <= hi);
}

/* of the parts x[0..parts): any not finite; |x| = sum |part|; the smallest nonzero |part|
 * (INFINITY if none) */
static int any_nonfinite(const double *x, int parts)
{
    for (int q = 0; q < parts; q++)
        if (!isfinite(x[q]))
            return 1;
    return 0;
}

static double abs1(const double *x, int parts)
{
    double s = 0.0;
    for (int q = 0; q < parts; q++)
        s += fabs(x[q]);
    return s;
}

static double min_nonzero(const double *x, int parts)
{
    double m = INFINITY;
    for (int q = 0; q < parts; q++)
        if (x[q] != 0.0 && fabs(x[q]) < m)
            m = fabs(x[q]);
    return m;
}

static int all_in_range(const double *x, int parts, double lo, double hi)
{
    for (int q = 0; q < parts; q++)
        if (!in_range(x[q], lo, hi))
            return 0;
    return 1;
}

/* acc + x s in double-double, the term left out where s (a part of a complex scalar) is 0: the
 * value of an evaluation that does not let 0 times Inf in one part of x make the other part of
 * the result NaN (deviation (2)) */
static hp_dd add_scaled(hp_dd acc, hp_dd x, double s)
{
    return s == 0.0 ? acc : hp_add(acc, hp_mul_d(x, s));
}

/* the counters that name an error (false alarms and encoder faults are not among them) */
static int errors_reported(const blasft_stats *s)
{
    return s->errors_detected || s->errors_corrected || s->blocks_recomputed || s->uncorrectable;
}

typedef struct totals {
    long cases, cat[CAT_N], plain_runs, any_report, clean_with_false_alarm, type[4], promoted,
        detect, device, k_or_alpha_zero, clean_complex;
    uint64_t false_alarms, encoder_faults;
} totals;

/* lines (rows of op(A) or columns of op(B)) of length k out of X (ld, P parts per element),
 * contiguous in out: element l of line r is X's (r, l) where the lines run across X's columns
 * (across = 1), else X's (l, r); conj negates the imaginary parts ('C') */
static void gather_lines(const double *X, int64_t ld, int across, int conj, int64_t lines,
                         int64_t k, int P, double *out)
{
    for (int64_t r = 0; r < lines; r++)
        for (int64_t l = 0; l < k; l++)
            for (int q = 0; q < P; q++) {
                const double x = X[P * (across ? r + l * ld : l + r * ld) + q];
                out[P * (r * k + l) + q] = conj && q == 1 ? -x : x;
            }
}

static void run_case(uint64_t seed, long idx, totals *tot)
{
    dg_rng rng;
    dg_seed(&rng, seed + (uint64_t)idx * 0x9E3779B97F4A7C15ull);
    fz_case c;
    draw_case(&c, idx, &rng);
    const char *what = describe(&c, seed);
    running = what;
    if (trace) /* FUZZ_TRACE: every case named before it runs (a crash names its case) */
        fprintf(stderr, "case: %s\n", what);
    const int single = c.single, P = c.parts;
    const size_t es = single ? 4 : 8, ts = es * (size_t)P; /* bytes of a part, of an element */
    const int64_t m = c.m, n = c.n, k = c.k;
    const int64_t ar = c.ta == 'N' ? m : k, ac = c.ta == 'N' ? k : m;
    const int64_t br = c.tb == 'N' ? k : n, bc = c.tb == 'N' ? n : k;
    const int64_t na = c.lda * ac, nb = c.ldb * bc, nc = c.ldc * n; /* elements */

    /* host data in double (exactly the typed values; complex: re, im interleaved), padding NaN */
    double *A = malloc(8 * (size_t)(P * na + 1)), *B = malloc(8 * (size_t)(P * nb + 1));
    double *C = malloc(8 * (size_t)(P * nc + 1));
    for (int64_t e = 0; e < P * na; e++) A[e] = NAN;
    for (int64_t e = 0; e < P * nb; e++) B[e] = NAN;
    for (int64_t e = 0; e < P * nc; e++) C[e] = NAN;
    for (int q = 0; q < P; q++) {
        fill(A, ar, ac, c.lda, P, q, c.acls[q], single, &rng);
        fill(B, br, bc, c.ldb, P, q, c.bcls[q], single, &rng);
        if (!c.c_nan)
            fill(C, m, n, c.ldc, P, q, c.ccls[q], single, &rng);
    }
    void *hA = gh_typed_copy(A, P * na, single), *hB = gh_typed_copy(B, P * nb, single);
    /* C in the middle of a sentinel buffer; its padding rows keep the sentinel */
    unsigned char *hCg = sentinel_buffer(P * (nc + 2 * kGuard), single);
    for (int64_t j = 0; j < n; j++)
        for (int64_t i = 0; i < m; i++)
            for (int q = 0; q < P; q++) {
                const int64_t e = P * (i + j * c.ldc) + q;
                unsigned char *at = hCg + es * (size_t)(P * kGuard + e);
                if (single) {
                    const float f = (float)C[e];
                    memcpy(at, &f, 4);
                } else {
                    memcpy(at, &C[e], 8);
                }
            }
    const size_t cbytes = ts * (size_t)(nc + 2 * kGuard);
    void *dA = gh_upload(hA, ts * (size_t)na), *dB = gh_upload(hB, ts * (size_t)nb);
    void *dCg = gh_upload(hCg, cbytes);
    /* the scalars in the GEMM's type (complex: float2, double2) */
    const float af[2] = {(float)c.alpha[0], (float)c.alpha[1]};
    const float bf[2] = {(float)c.beta[0], (float)c.beta[1]};
    const void *halpha = single ? (const void *)af : (const void *)c.alpha;
    const void *hbeta = single ? (const void *)bf : (const void *)c.beta;
    void *dal = gh_upload(halpha, ts), *dbe = gh_upload(hbeta, ts);

    blasft_gpu_gemm g;
    memset(&g, 0, sizeof g);
    g.type = c.t;
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
    /* "!= 0": some part not 0 (NaN != 0: used) */
    const int alpha_nz = c.alpha[0] != 0.0 || c.alpha[1] != 0.0;
    const int prod_used = alpha_nz && k > 0;
    const int cold_used = c.beta[0] != 0.0 || c.beta[1] != 0.0;
    const int dev0 = c.dev && !alpha_nz && k > 0; /* deviation (1) */
    const int alpha_nf = any_nonfinite(c.alpha, P), beta_nf = any_nonfinite(c.beta, P);
    const double aa = abs1(c.alpha, P), ab = abs1(c.beta, P);
    const double amin = min_nonzero(c.alpha, P), bmin = min_nonzero(c.beta, P);
    /* alpha counts only where k > 0 (with k = 0 nothing multiplies by it) */
    int clean = !beta_nf && all_in_range(c.beta, P, lo, hi) &&
                (k == 0 || (!alpha_nf && all_in_range(c.alpha, P, lo, hi)));
    int nonfinite = beta_nf || (k > 0 && alpha_nf);
    category cat = CAT_CLEAN;
    int plain_ran = 0;
    if (m > 0 && n > 0) {
        /* op(A) by rows and op(B) by columns, contiguous along k (complex: parts interleaved,
         * conjugated for 'C') */
        double *At = malloc(8 * (size_t)(P * m * k + 1)), *Bt = malloc(8 * (size_t)(P * n * k + 1));
        gather_lines(A, c.lda, c.ta == 'N', c.ta == 'C', m, k, P, At);
        gather_lines(B, c.ldb, c.tb != 'N', c.tb == 'C', n, k, P, Bt);
        line_stats *rs = malloc(sizeof *rs * (size_t)m), *cs = malloc(sizeof *cs * (size_t)n);
        for (int64_t i = 0; i < m; i++) {
            line_scan(At + P * i * k, P * k, &rs[i]);
            nonfinite |= rs[i].nonfinite;
            clean &= !rs[i].nonfinite && (rs[i].min == INFINITY || rs[i].min >= lo) &&
                     rs[i].max <= hi;
        }
        for (int64_t j = 0; j < n; j++) {
            line_scan(Bt + P * j * k, P * k, &cs[j]);
            nonfinite |= cs[j].nonfinite;
            clean &= !cs[j].nonfinite && (cs[j].min == INFINITY || cs[j].min >= lo) &&
                     cs[j].max <= hi;
        }
        double *ref = malloc(8 * (size_t)(P * m * n)), *bound = malloc(8 * (size_t)(m * n));
        unsigned char *special = malloc((size_t)(m * n));
        int any_special = 0;
        for (int64_t j = 0; j < n; j++)
            for (int64_t i = 0; i < m; i++) {
                const int64_t e = i + j * m;
                const double *cold = C + P * (i + j * c.ldc);
                double mag = 0.0;
                hp_dd s[2] = {hp_from(0.0), hp_from(0.0)};
                const int line_nf = rs[i].nonfinite || cs[j].nonfinite;
                if (k > 0 && !line_nf) {
                    if (P == 1)
                        s[0] = dot2(At + i * k, Bt + j * k, k, single, &mag);
                    else
                        zdot2(At + 2 * i * k, Bt + 2 * j * k, k, single, s, &mag);
                }
                hp_dd x[2] = {hp_from(0.0), hp_from(0.0)};
                if (!prod_used) {
                    /* C = beta C */
                } else if (line_nf) {
                    x[0] = x[1] = hp_from(NAN);
                } else if (P == 1) {
                    x[0] = hp_mul_d(s[0], c.alpha[0]);
                } else {
                    x[0] = add_scaled(add_scaled(x[0], s[0], c.alpha[0]), s[1], -c.alpha[1]);
                    x[1] = add_scaled(add_scaled(x[1], s[1], c.alpha[0]), s[0], c.alpha[1]);
                }
                if (cold_used) {
                    if (P == 1) {
                        x[0] = hp_add(x[0], hp_mul_d(hp_from(cold[0]), c.beta[0]));
                    } else {
                        const hp_dd c0 = hp_from(cold[0]), c1 = hp_from(cold[1]);
                        x[0] = add_scaled(add_scaled(x[0], c0, c.beta[0]), c1, -c.beta[1]);
                        x[1] = add_scaled(add_scaled(x[1], c1, c.beta[0]), c0, c.beta[1]);
                    }
                }
                for (int q = 0; q < P; q++)
                    ref[P * e + q] = hp_to_double(x[q]);
                const double mag_a = prod_used ? aa * mag : 0.0;
                const double mag_c = cold_used ? ab * abs1(cold, P) : 0.0;
                const double pmax = rs[i].max * cs[j].max, pmin = rs[i].min * cs[j].min;
                const int nf = (prod_used && (alpha_nf || line_nf)) ||
                               (cold_used && (beta_nf || any_nonfinite(cold, P)));
                /* alpha times one operand as well: a kernel may scale an operand first (seen
                 * at k = 1: alpha -1e300 over operands of 1e10, Inf in plain cuBLAS too) */
                const int ovf = (prod_used && (pmax > lim || mag > lim || mag_a > lim ||
                                               aa * rs[i].max > lim || aa * cs[j].max > lim)) ||
                                mag_c > lim || mag_a + mag_c > lim;
                special[e] = (unsigned char)(nf || ovf);
                any_special |= special[e];
                nonfinite |= nf || ovf;
                /* complex: the bound counts the old C's finite parts only (a part of the result
                 * that a non-finite one enters is not finite; with a zero part of beta the other
                 * part of the result may be, see add_scaled) */
                double mag_cb = mag_c;
                if (cold_used && P == 2 && any_nonfinite(cold, P))
                    mag_cb = ab * ((isfinite(cold[0]) ? fabs(cold[0]) : 0.0) +
                                   (isfinite(cold[1]) ? fabs(cold[1]) : 0.0));
                bound[e] = 2.0 * (double)(P * k + 2) * u * (mag_a + mag_cb) +
                           2.0 * ((prod_used ? aa * (double)(P * k + 1) : 0.0) + 2.0 * P) * tn;
                /* a kernel that scales an operand by alpha first (as above) loses up to the
                 * smallest normal number where alpha times an element underflows, and the other
                 * factor multiplies that loss (seen: a subnormal alpha over data of 2^+-600) */
                if (prod_used && (aa * rs[i].min < tn || aa * cs[j].min < tn))
                    bound[e] += 2.0 * (double)(P * k) * tn * fmax(rs[i].max, cs[j].max);
                if (cold_used) {
                    const double cmin = min_nonzero(cold, P);
                    clean &= !any_nonfinite(cold, P) && all_in_range(cold, P, lo, hi) &&
                             in_range(mag_c, lo, hi) &&
                             (bmin == INFINITY || cmin == INFINITY || bmin * cmin >= lo);
                }
                if (k > 0)
                    clean &= pmax <= hi && (pmin == INFINITY || pmin >= lo) && mag <= hi;
                if (prod_used)
                    clean &= mag_a <= hi && (pmin == INFINITY || amin * pmin >= lo);
                clean &= !special[e] && all_in_range(ref + P * e, P, lo, hi);
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
            plain = malloc(8 * (size_t)(P * m * n));
            for (int64_t j = 0; j < n; j++)
                for (int64_t i = 0; i < m; i++)
                    for (int q = 0; q < P; q++)
                        plain[P * (i + j * m) + q] =
                            part_at(po, P * (kGuard + i + j * c.ldc) + q, single);
            free(po);
            cudaFree(dCp);
            plain_ran = 1;
        }
        /* every element of C, every part */
        int64_t bad = 0, fi = -1, fj = -1;
        int fq = 0, fspecial = 0;
        double fgot = 0, fref = 0, fbound = 0, fplain = 0;
        /* BLAS's exact zero (product not computed, beta 0) is +0 */
        const int any_zero_sign = prod_used || cold_used || c.dev;
        for (int64_t j = 0; j < n; j++)
            for (int64_t i = 0; i < m; i++) {
                const int64_t e = i + j * m;
                int elem_bad = 0;
                /* complex: a part of plain cuBLAS's element not finite (deviation (2)) */
                const int plain_nf = plain && P == 2 && any_nonfinite(plain + P * e, P);
                for (int q = 0; q < P; q++) {
                    const double got = part_at(out, P * (kGuard + i + j * c.ldc) + q, single);
                    const double r = ref[P * e + q];
                    const double pl = plain ? plain[P * e + q] : NAN;
                    /* deviations (1), (2): plain cuBLAS's, non-finite alike or finite close */
                    const int like_plain =
                        plain && ((!isfinite(got) && !isfinite(pl)) ||
                                  (isfinite(got) && isfinite(pl) &&
                                   !(fabs(got - pl) > 2.0 * bound[e])));
                    const int near_ref = isfinite(got) && isfinite(r) && fabs(got - r) <= bound[e];
                    int ok;
                    if (special[e]) {
                        ok = near_ref || like_plain || (!isfinite(got) && plain_nf);
                    } else {
                        const int zero_sign_ok = any_zero_sign || (got == 0.0 && !signbit(got));
                        /* detect mode leaves the value of the GEMM the engine ran (for a
                         * promoted S or C another cuBLAS kernel than plain's) where it reported */
                        ok = (near_ref && zero_sign_ok) || (dev0 && like_plain) ||
                             (dev0 && c.detect && st.errors_detected > 0 && !isfinite(got));
                    }
                    if (!ok && !bad && !elem_bad) {
                        fi = i;
                        fj = j;
                        fq = q;
                        fgot = got;
                        fref = r;
                        fbound = bound[e];
                        fplain = pl;
                        fspecial = special[e];
                    }
                    elem_bad |= !ok;
                }
                bad += elem_bad;
            }
        GH_CHECK(bad == 0,
                 "%s: %" PRId64 " elements of C wrong, the first (%" PRId64 ",%" PRId64
                 ")%s %.17g vs reference %.17g (tolerance %.3g, %s, plain cuBLAS %s%.17g)",
                 what, bad, fi, fj, P == 1 ? "" : fq ? " imaginary part" : " real part", fgot,
                 fref, fbound, fspecial ? "special" : "ordinary", plain ? "" : "not run: ",
                 fplain);
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
    tot->type[c.t]++;
    tot->clean_complex += cat == CAT_CLEAN && P == 2;
    tot->promoted += c.promote;
    tot->detect += c.detect;
    tot->device += c.dev;
    tot->k_or_alpha_zero += m > 0 && n > 0 && (k == 0 || !alpha_nz);

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
    trace = getenv("FUZZ_TRACE") != NULL;
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
    printf("gpu fuzz: seed %" PRIu64 ": %ld cases (S %ld, D %ld, C %ld, Z %ld; promoted %ld, "
           "detect %ld, device scalars %ld, k or alpha 0 %ld): empty %ld, clean %ld (C or Z %ld), "
           "extreme %ld, nonfinite %ld; plain cuBLAS runs %ld; false alarms %" PRIu64 " (clean "
           "cases with one %ld), encoder faults %" PRIu64 "; cases with any report %ld\n",
           seed, tot.cases, tot.type[BLASFT_TYPE_S], tot.type[BLASFT_TYPE_D],
           tot.type[BLASFT_TYPE_C], tot.type[BLASFT_TYPE_Z], tot.promoted, tot.detect, tot.device,
           tot.k_or_alpha_zero, tot.cat[CAT_EMPTY], tot.cat[CAT_CLEAN], tot.clean_complex,
           tot.cat[CAT_EXTREME], tot.cat[CAT_NONFINITE], tot.plain_runs, tot.false_alarms,
           tot.clean_with_false_alarm, tot.encoder_faults, tot.any_report);
    return gh_finish(ctx);
}
