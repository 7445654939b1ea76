/* Encoding: checksums of op(A), op(B), the old and the new C, each computed twice and compared
 * (the redundancy of thesis 6.3 / Alg. A.1: a unit must not be the only one to check its own
 * result), and the reference checksum products on the host BLAS. All sums are Neumaier-compensated
 * in double with exact products (fma), so our side adds almost no rounding error. */
#include "abft/abft_inject.h"
#include "abft/abft_internal.h"
#include "abft/abft_keep.h"
#include "abft/abft_kernels.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Adds w*v exactly (product and its rounding error) to a compensated sum. */
static inline void add_prod(blasft_csum *s, double w, double v)
{
    double p = w * v;
    blasft_csum_add(s, p);
    blasft_csum_add(s, fma(w, v, -p));
}

/* Whether weight set r has a weight other than 1 (then each product's rounding error is added;
 * with weight 1 it is exactly zero). */
static int single_prec(const abft_ctx *x)
{
    return x->g->type == BLASFT_TYPE_S || x->g->type == BLASFT_TYPE_C;
}

/* Scalar (float or double) address of element idx, part `part`, of a stored matrix. */
static const void *scalar_at(const abft_ctx *x, const void *base, int64_t idx, int part)
{
    return (const char *)base + (idx * x->P + part) * (single_prec(x) ? 4 : 8);
}

/* Weighted sums down the columns [col0, col1) of a stored column-major matrix (leading dimension
 * ld elements), per row block b in [b0, b1) of rows_total rows: the sum of block b, weight set r,
 * column col, part goes to out[(b R + r) bstr + col cstr + part]. */
static void sums_down(const abft_ctx *x, const void *base, int64_t ld, int64_t col0, int64_t col1,
                      int64_t rows_total, int64_t b0, int64_t b1, double *out, int64_t bstr,
                      int64_t cstr)
{
    const int P = x->P, R = x->R, single = single_prec(x);
    const int64_t ns = (col1 - col0) * P; /* one stream per column and part */
    int wr[2] = {x->weighted[0], R > 1 ? x->weighted[1] : 0};
    for (int64_t q0 = 0; q0 < ns; q0 += ABFT_K_STREAMS)
        for (int64_t b = b0; b < b1; b++) {
            int64_t i0 = b * x->bs, len = abft_len(rows_total, b, x->bs);
            const void *p[ABFT_K_STREAMS];
            for (int q = 0; q < ABFT_K_STREAMS; q++) {
                int64_t s = q0 + q < ns ? q0 + q : ns - 1; /* spare lanes repeat the last stream */
                p[q] = scalar_at(x, base, (col0 + s / P) * ld + i0, (int)(s % P));
            }
            for (int r = 0; r < R; r++) {
                double o[ABFT_K_STREAMS];
                abft_k_down(p, single, P, len, x->w[r], wr[r], o);
                for (int q = 0; q < ABFT_K_STREAMS && q0 + q < ns; q++) {
                    int64_t s = q0 + q;
                    out[(b * R + r) * bstr + (col0 + s / P) * cstr + s % P] = o[q];
                }
            }
        }
}

/* Weighted sums across the columns of a stored matrix, per column block b in [b0, b1) of
 * cols_total columns, for rows [row0, row1): the sum of block b, weight set r, row i, part goes
 * to out[(b R + r) bstr + i cstr + part]. Returns -1 when out of memory. */
static int sums_across(const abft_ctx *x, const void *base, int64_t ld, int64_t row0, int64_t row1,
                       int64_t cols_total, int64_t b0, int64_t b1, double *out, int64_t bstr,
                       int64_t cstr)
{
    const int P = x->P, R = x->R, single = single_prec(x);
    const int64_t nreal = (row1 - row0) * P;
    /* the sums, then abft_k_across's work: two chunks of at most 512 rows; on the stack for a
     * small matrix (each protected GEMM makes several of these) */
    const size_t need = (size_t)(nreal + 2 * (nreal < 512 ? nreal : 512) + 1);
    double small[96];
    double *tmp = need <= sizeof small / sizeof small[0] ? small : malloc(need * sizeof *tmp);
    if (!tmp)
        return -1;
    int wr[2] = {x->weighted[0], R > 1 ? x->weighted[1] : 0};
    for (int64_t b = b0; b < b1; b++) {
        int64_t j0 = b * x->bs, len = abft_len(cols_total, b, x->bs);
        for (int r = 0; r < R; r++) {
            abft_k_across(scalar_at(x, base, row0 + j0 * ld, 0), single, ld * P, nreal, len,
                          x->w[r], wr[r], tmp, tmp + nreal);
            double *o = out + (b * R + r) * bstr;
            if (cstr == P)
                memcpy(o + row0 * P, tmp, (size_t)nreal * sizeof *tmp);
            else
                for (int64_t ri = 0; ri < nreal; ri++)
                    o[(row0 + ri / P) * cstr + ri % P] = tmp[ri];
        }
    }
    if (tmp != small)
        free(tmp);
    return 0;
}

/* op(X) = conj(X): the sums of the imaginary parts change sign (exactly). */
static void negate_imag(double *v, int64_t nscalars)
{
    for (int64_t q = 1; q < nscalars; q += 2)
        v[q] = -v[q];
}

/* Column checksums of op(A) per row block, for kk in [k0, k1): out (R*nbr) x k. */
static int encode_a_pass(const abft_ctx *x, double *out, int64_t k0, int64_t k1)
{
    const blasft_gemm *g = x->g;
    const int P = x->P;
    const int64_t cstr = x->R * x->nbr * P;
    if (g->transa == 'N') {
        sums_down(x, g->a, g->lda, k0, k1, x->m, 0, x->nbr, out, P, cstr);
        return 0;
    }
    /* op(A)(i, kk) = A(kk, i): the row block is a block of A's columns */
    if (sums_across(x, g->a, g->lda, k0, k1, x->m, 0, x->nbr, out, P, cstr))
        return -1;
    if (g->transa == 'C' && P == 2)
        negate_imag(out + k0 * cstr, cstr * (k1 - k0));
    return 0;
}

/* Row checksums of op(B) per column block, for kk in [k0, k1): out k x (R*nbc). */
static int encode_b_pass(const abft_ctx *x, double *out, int64_t k0, int64_t k1)
{
    const blasft_gemm *g = x->g;
    const int P = x->P;
    const int64_t bstr = x->k * P;
    if (g->transb == 'N') {
        if (sums_across(x, g->b, g->ldb, k0, k1, x->n, 0, x->nbc, out, bstr, P))
            return -1;
    } else {
        /* op(B)(kk, j) = B(j, kk): the column block is a block of B's rows */
        sums_down(x, g->b, g->ldb, k0, k1, x->n, 0, x->nbc, out, bstr, P);
        if (g->transb == 'C' && P == 2)
            for (int64_t v = 0; v < x->R * x->nbc; v++)
                negate_imag(out + v * bstr + k0 * P, P * (k1 - k0));
    }
    return 0;
}

static int all_finite(const double *v, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        if (!isfinite(v[i]))
            return 0;
    return 1;
}

/* An encoding's two copies disagreed: the event names the block of the first entry that differs
 * (a row block of op(A) or a column block of op(B); the other coordinate -1). */
static void encoder_fault(abft_ctx *x, int is_b, const double *a, const double *b, int64_t n)
{
    int64_t e = 0;
    while (e < n && memcmp(&a[e], &b[e], sizeof *a) == 0)
        e++;
    const int64_t v = is_b ? e / (x->k * x->P) : e % (x->R * x->nbr * x->P) / x->P;
    x->encoder_faults++;
    abft_emit(x, BLASFT_EVENT_ENCODER_FAULT, is_b ? -1 : v / x->R, is_b ? v / x->R : -1, -1, -1,
              0.0, 0.0, "encoded again");
}

typedef struct pass_job {
    const abft_ctx *x;
    int (*pass)(const abft_ctx *, double *, int64_t, int64_t);
    double *out;
    int rc;
} pass_job;

static void run_pass(void *p, int64_t k0, int64_t k1)
{
    pass_job *j = p;
    if (j->pass(j->x, j->out, k0, k1))
        __atomic_store_n(&j->rc, -1, __ATOMIC_RELAXED); /* slices of one copy run side by side */
}

/* Runs pass twice, into out and a second buffer (in slices of k on x->threads threads, the two
 * copies of a slice on different threads: cores then check each other, as the thesis's
 * neighbouring lanes do; work: the operand elements a pass reads), and compares them; on disagreement reports an encoder fault and tries
 * again (three rounds at most, then keeps the last result). */
static int redundant(abft_ctx *x, int (*pass)(const abft_ctx *, double *, int64_t, int64_t),
                     double *out, int64_t n, int64_t work, int is_b)
{
    double *second = malloc((size_t)(n > 0 ? n : 1) * sizeof *second);
    if (!second)
        return -1;
    int rc = 0;
    for (int round = 0; round < 3; round++) {
        pass_job j0 = {x, pass, out, 0}, j1 = {x, pass, second, 0};
        abft_k_pair_split(x->threads, run_pass, &j0, &j1, x->k, work);
        if (j0.rc || j1.rc) {
            rc = -1;
            break;
        }
        /* BLASFT_INJECT site=encoder: the first round's second copy is corrupted */
        const blasft_inject_spec *spec = !is_b && round == 0 && x->cfg->inject[0]
                                             ? blasft_inject_get(x->cfg->inject) : NULL;
        if (spec && spec->site == BLASFT_SITE_ENCODER && spec->faults > 0) {
            uint64_t st = blasft_inject_next_stream(spec);
            x->injected += (uint64_t)blasft_inject_flip_checksums(spec, &st, x->user_type, second, n);
        }
        if (memcmp(out, second, (size_t)n * sizeof *out) == 0)
            break;
        encoder_fault(x, is_b, out, second, n);
    }
    free(second);
    return rc;
}

/* Promotion of A and B (as stored) to double, columns [0, ca) of A then B's as one range; parts
 * interleaved: a complex matrix is a real one with P times the rows. */
typedef struct promote_job {
    const abft_ctx *x;
    const void *src[2];
    int64_t rows[2], ld[2], ca;
    double *out[2];
} promote_job;

static void run_promote(void *p, int64_t lo, int64_t hi)
{
    const promote_job *j = p;
    const abft_ctx *x = j->x;
    const int es = (single_prec(x) ? 4 : 8) * x->P;
    for (int o = 0; o < 2; o++) {
        int64_t off = o ? j->ca : 0, c0 = lo - off < 0 ? 0 : lo - off, c1 = hi - off;
        if (!o && c1 > j->ca)
            c1 = j->ca;
        if (c0 >= c1)
            continue;
        const int64_t rows = j->rows[o] > 0 ? j->rows[o] : 1;
        abft_k_promote(j->out[o] + c0 * rows * x->P, (const char *)j->src[o] + c0 * j->ld[o] * es,
                       single_prec(x), j->rows[o] * x->P, c1 - c0, j->ld[o] * x->P);
    }
}

int abft_encode_operands(abft_ctx *x)
{
    int64_t nac = x->R * x->nbr * x->k * x->P, nbc = x->k * x->R * x->nbc * x->P;
    x->ac = malloc((size_t)(nac > 0 ? nac : 1) * sizeof(double));
    x->bc = malloc((size_t)(nbc > 0 ? nbc : 1) * sizeof(double));
    if (!x->ac || !x->bc)
        return -1;
    if (redundant(x, encode_a_pass, x->ac, nac, x->m * x->k * x->P, 0) ||
        redundant(x, encode_b_pass, x->bc, nbc, x->k * x->n * x->P, 1))
        return -1;
    /* An Inf or NaN anywhere in A or B makes its block checksum non-finite: no check possible. */
    if (!all_finite(x->ac, nac) || !all_finite(x->bc, nbc))
        return -1;
    const blasft_gemm *g = x->g;
    if (g->type == BLASFT_TYPE_S || g->type == BLASFT_TYPE_C) {
        /* the checksum products run in double: promote the operands as stored (slices of
         * columns on the threads where allowed) */
        int64_t ar = blasft_gemm_a_rows(g), ac = blasft_gemm_a_cols(g);
        int64_t br = blasft_gemm_b_rows(g), bcols = blasft_gemm_b_cols(g);
        x->ad = abft_keep_get(0, (size_t)((ar > 0 ? ar : 1) * (ac > 0 ? ac : 1) * x->P));
        x->bd = abft_keep_get(1, (size_t)((br > 0 ? br : 1) * (bcols > 0 ? bcols : 1) * x->P));
        if (!x->ad || !x->bd)
            return -1;
        promote_job j = {x, {g->a, g->b}, {ar, br}, {g->lda, g->ldb}, ac, {x->ad, x->bd}};
        abft_k_for(x->threads, run_promote, &j, ac + bcols, ar * ac + br * bcols);
    }
    return 0;
}

static int64_t max1(int64_t v) { return v > 1 ? v : 1; }

/* ref[e] += beta * old[e] (eq. 6.3); returns whether the result is finite. */
static int add_beta_old(const abft_ctx *x, double *refv, const double *oldv, int64_t e)
{
    double *ref = refv + e * x->P;
    if (!x->beta_zero) {
        const double *old = oldv + e * x->P;
        const double br = x->g->beta[0], bim = x->g->beta[1];
        if (x->P == 1)
            ref[0] += br * old[0];
        else {
            double re = br * old[0] - bim * old[1], im = br * old[1] + bim * old[0];
            ref[0] += re;
            ref[1] += im;
        }
    }
    for (int part = 0; part < x->P; part++)
        if (!isfinite(ref[part]))
            return 0;
    return 1;
}

int abft_reference(abft_ctx *x, int64_t bi0, int64_t bi1, int64_t bj0, int64_t bj1)
{
    const blasft_gemm *g = x->g;
    const int R = x->R, P = x->P;
    int64_t i0 = bi0 * x->bs, i1 = bi1 * x->bs < x->m ? bi1 * x->bs : x->m;
    int64_t j0 = bj0 * x->bs, j1 = bj1 * x->bs < x->n ? bj1 * x->bs : x->n;
    blasft_type dt = P == 2 ? BLASFT_TYPE_Z : BLASFT_TYPE_D;
    const double *a = x->ad ? x->ad : (const double *)g->a;
    const double *b = x->bd ? x->bd : (const double *)g->b;
    int64_t lda = x->ad ? max1(blasft_gemm_a_rows(g)) : g->lda;
    int64_t ldb = x->bd ? max1(blasft_gemm_b_rows(g)) : g->ldb;

    /* column checksums: AC(rows of the row blocks) * op(B)(:, j0:j1) */
    blasft_gemm d;
    memset(&d, 0, sizeof d);
    d.type = dt;
    d.transa = 'N';
    d.transb = g->transb;
    d.m = (bi1 - bi0) * R;
    d.n = j1 - j0;
    d.k = x->k;
    d.a = x->ac + bi0 * R * P;
    d.lda = R * x->nbr;
    d.b = b + (g->transb == 'N' ? j0 * ldb : j0) * P;
    d.ldb = ldb;
    d.c = x->refc + (bi0 * R + R * x->nbr * j0) * P;
    d.ldc = R * x->nbr;
    memcpy(d.alpha, g->alpha, sizeof d.alpha);
    d.routine = g->routine;
    if (d.m > 0 && d.n > 0)
        abft_sliced_gemm(&d, x->slice);

    /* row checksums: op(A)(i0:i1, :) * BC(:, column-block checksums) */
    d.transa = g->transa;
    d.transb = 'N';
    d.m = i1 - i0;
    d.n = (bj1 - bj0) * R;
    d.a = a + (g->transa == 'N' ? i0 : i0 * lda) * P;
    d.lda = lda;
    d.b = x->bc + x->k * bj0 * R * P;
    d.ldb = max1(x->k);
    d.c = x->refr + (i0 + x->m * bj0 * R) * P;
    d.ldc = x->m;
    if (d.m > 0 && d.n > 0)
        abft_sliced_gemm(&d, x->slice);

    int fin = 1;
    for (int64_t j = j0; j < j1; j++)
        for (int64_t bi = bi0; bi < bi1; bi++)
            for (int r = 0; r < R; r++)
            {
                x->exc[abft_ci(x, bi, r, j)] = 0;
                fin &= add_beta_old(x, x->refc, x->oldc, abft_ci(x, bi, r, j));
            }
    for (int64_t i = i0; i < i1; i++)
        for (int64_t bj = bj0; bj < bj1; bj++)
            for (int r = 0; r < R; r++)
            {
                x->exr[abft_ri(x, i, bj, r)] = 0;
                fin &= add_beta_old(x, x->refr, x->oldr, abft_ri(x, i, bj, r));
            }
    return fin ? 0 : -1;
}

/* Checksums of C over blocks [bi0,bi1) x [bj0,bj1) (compensated), one pass. */
typedef struct cs_job {
    const abft_ctx *x;
    const void *c;
    int64_t ldc, bi0, bi1, bj0, bj1;
    double *colv, *rowv;
    int rc;
} cs_job;

/* Block columns bj0 + [lo, hi) of a checksum pass over C (a slice: the slices write apart). */
static void c_pass(void *p, int64_t lo, int64_t hi)
{
    cs_job *a = p;
    const abft_ctx *x = a->x;
    const int P = x->P, R = x->R;
    int64_t i0 = a->bi0 * x->bs, i1 = a->bi1 * x->bs < x->m ? a->bi1 * x->bs : x->m;
    /* one block column at a time, both directions: the second reads it from cache */
    for (int64_t bj = a->bj0 + lo; bj < a->bj0 + hi; bj++) {
        int64_t j0 = bj * x->bs, j1 = j0 + abft_len(x->n, bj, x->bs);
        sums_down(x, a->c, a->ldc, j0, j1, x->m, a->bi0, a->bi1, a->colv, P, R * x->nbr * P);
        if (sums_across(x, a->c, a->ldc, i0, i1, x->n, bj, bj + 1, a->rowv, x->m * P, P)) {
            __atomic_store_n(&a->rc, -1, __ATOMIC_RELAXED);
            return;
        }
    }
}

/* The old C's columns [j0, j1) copied into x->cold with their threshold aids, per checksum
 * element sum (w c)^2 and sum |w c| over the parts, each column while it is in cache. Block by
 * block down each column: every column checksum element gets the same terms in the same order as
 * element by element (so the same sums, bit for bit), without a division and a type switch per
 * element; the row sums run vectorized in a loop of their own. (Element by element, in a pass of
 * its own over the copy, it was a fifth of a protected LU's time through the reference LAPACK,
 * whose updates have beta 1.) */
static void save_old_columns(abft_ctx *x, int64_t j0, int64_t j1)
{
    const int P = x->P, R = x->R, sz = blasft_type_size(x->g->type);
    const int64_t m = x->m, bs = x->bs;
    const blasft_type t = x->g->type;
    for (int64_t j = j0; j < j1; j++) {
        memcpy((char *)x->cold + j * m * sz, (const char *)x->g->c + j * x->g->ldc * sz,
               (size_t)(m * sz));
        const int64_t bj = j / bs, jq = j % bs;
        for (int r = 0; r < R; r++) {
            double *rsq = x->osqr + m * (bj * R + r), *rab = x->oabsr + m * (bj * R + r);
            const double wj = x->w[r][jq], *wr = x->w[r];
            for (int64_t i0 = 0; i0 < m; i0 += bs) {
                const int64_t len = m - i0 < bs ? m - i0 : bs, e = abft_ci(x, i0 / bs, r, j);
                double sq = 0.0, ab = 0.0;
                if (t == BLASFT_TYPE_D) {
                    const double *v = (const double *)x->cold + i0 + m * j;
                    for (int64_t q = 0; q < len; q++) {
                        const double a = wr[q] * v[q];
                        sq += a * a;
                        ab += fabs(a);
                    }
                    for (int64_t q = 0; q < len; q++) {
                        const double b = wj * v[q];
                        rsq[i0 + q] += b * b;
                        rab[i0 + q] += fabs(b);
                    }
                } else {
                    for (int64_t q = 0; q < len; q++)
                        for (int part = 0; part < P; part++) {
                            const double v = abft_ld(x->cold, t, i0 + q + m * j, part);
                            const double a = wr[q] * v, b = wj * v;
                            sq += a * a;
                            ab += fabs(a);
                            rsq[i0 + q] += b * b;
                            rab[i0 + q] += fabs(b);
                        }
                }
                x->osqc[e] = sq;
                x->oabsc[e] = ab;
            }
        }
    }
}

/* Block columns [lo, hi): the row sums of each block column are its own, so slices of them run
 * side by side with the same sums as one after the other. */
static void save_old_blocks(void *p, int64_t lo, int64_t hi)
{
    abft_ctx *x = p;
    const int64_t j1 = hi * x->bs < x->n ? hi * x->bs : x->n;
    save_old_columns(x, lo * x->bs, j1);
}

/* The old C copied into x->cold, with its sums of squares and magnitudes (osqc ... oabsr). */
void abft_save_old_c(abft_ctx *x)
{
    memset(x->osqc, 0, (size_t)abft_nc(x) * sizeof *x->osqc);
    memset(x->oabsc, 0, (size_t)abft_nc(x) * sizeof *x->oabsc);
    memset(x->osqr, 0, (size_t)abft_nr(x) * sizeof *x->osqr);
    memset(x->oabsr, 0, (size_t)abft_nr(x) * sizeof *x->oabsr);
    abft_k_for(x->threads, save_old_blocks, x, x->nbc, x->m * x->n * x->P);
}

/* The checksums of C disagreed between their two copies: the event names the block of C of the
 * first column checksum that differs, else of the first row checksum. */
static void c_checksum_fault(abft_ctx *x, const double *colv, const double *sc, int64_t nc,
                             const double *rowv, const double *sr, int64_t nr)
{
    int64_t e = 0, bi = -1, bj = -1;
    while (e < nc && memcmp(&colv[e], &sc[e], sizeof *sc) == 0)
        e++;
    if (e < nc) {
        const int64_t v = e / x->P, rows = x->R * x->nbr;
        bi = v % rows / x->R;
        bj = v / rows / x->bs;
    } else {
        for (e = 0; e < nr && memcmp(&rowv[e], &sr[e], sizeof *sr) == 0;)
            e++;
        const int64_t v = e / x->P;
        bi = v % x->m / x->bs;
        bj = v / x->m / x->R;
    }
    x->encoder_faults++;
    abft_emit(x, BLASFT_EVENT_ENCODER_FAULT, bi, bj, -1, -1, 0.0, 0.0, "computed again");
}

int abft_c_checksums(abft_ctx *x, const void *c, int64_t ldc, int old, int64_t bi0, int64_t bi1,
                     int64_t bj0, int64_t bj1)
{
    double *colv = old ? x->oldc : x->recc, *rowv = old ? x->oldr : x->recr;
    int64_t nc = abft_nc(x) * x->P, nr = abft_nr(x) * x->P;
    /* the second pass writes into copies, so entries outside the blocks compare equal */
    double *sc = x->scratch, *sr = x->scratch + nc;
    int64_t area = (bi1 - bi0) * (bj1 - bj0) * x->bs * x->bs;
    for (int round = 0; round < 3; round++) {
        memcpy(sc, colv, (size_t)nc * sizeof *sc);
        memcpy(sr, rowv, (size_t)nr * sizeof *sr);
        cs_job j0 = {x, c, ldc, bi0, bi1, bj0, bj1, colv, rowv, 0}, j1 = j0;
        j1.colv = sc;
        j1.rowv = sr;
        abft_k_pair_split(x->parallel && area >= ABFT_PARALLEL_MIN ? x->threads : 1, c_pass, &j0, &j1,
                          bj1 - bj0, area);
        if (j0.rc || j1.rc)
            return -1;
        if (memcmp(sc, colv, (size_t)nc * sizeof *sc) == 0 &&
            memcmp(sr, rowv, (size_t)nr * sizeof *sr) == 0)
            break;
        c_checksum_fault(x, colv, sc, nc, rowv, sr, nr);
    }
    if (old)
        return all_finite(colv, nc) && all_finite(rowv, nr) ? 0 : -1;
    return 0;
}

void abft_refine_reference(abft_ctx *x, int row_side, int64_t e)
{
    const int P = x->P;
    blasft_csum re, im;
    memset(&re, 0, sizeof re);
    memset(&im, 0, sizeof im);
    int64_t s = row_side ? e / x->m : e % (x->R * x->nbr); /* checksum vector */
    int64_t v = row_side ? e % x->m : e / (x->R * x->nbr); /* data row i / column j */
    for (int64_t kk = 0; kk < x->k; kk++) {
        const double *cs = row_side ? x->bc + (kk + x->k * s) * P : x->ac + (s + x->R * x->nbr * kk) * P;
        double dr = row_side ? abft_opa(x, v, kk, 0) : abft_opb(x, kk, v, 0);
        add_prod(&re, cs[0], dr);
        if (P == 2) {
            double di = row_side ? abft_opa(x, v, kk, 1) : abft_opb(x, kk, v, 1);
            add_prod(&re, -cs[1], di);
            add_prod(&im, cs[0], di);
            add_prod(&im, cs[1], dr);
        }
    }
    const double *al = x->g->alpha;
    double dr = blasft_csum_value(&re), di = blasft_csum_value(&im);
    double *ref = (row_side ? x->refr : x->refc) + e * P;
    ref[0] = al[0] * dr - al[1] * di;
    if (P == 2)
        ref[1] = al[0] * di + al[1] * dr;
    add_beta_old(x, row_side ? x->refr : x->refc, row_side ? x->oldr : x->oldc, e);
    (row_side ? x->exr : x->exc)[e] = 1;
}
