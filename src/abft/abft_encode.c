/* Encoding: checksums of op(A), op(B), the old and the new C, each computed twice and compared
 * (the redundancy of thesis 6.3 / Alg. A.1: a unit must not be the only one to check its own
 * result), and the reference checksum products on the host BLAS. All sums are Neumaier-compensated
 * in double with exact products (fma), so our side adds almost no rounding error. */
#include "abft/abft_internal.h"

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

/* Column checksums of op(A) per row block: out (R*nbr) x k. */
__attribute__((noinline)) static void encode_a_pass(const abft_ctx *x, double *out)
{
    const int R = x->R, P = x->P;
    for (int64_t kk = 0; kk < x->k; kk++)
        for (int64_t bi = 0; bi < x->nbr; bi++) {
            blasft_csum acc[2][2];
            memset(acc, 0, sizeof acc);
            int64_t i0 = bi * x->bs, len = abft_len(x->m, bi, x->bs);
            for (int64_t i = 0; i < len; i++)
                for (int part = 0; part < P; part++) {
                    double v = abft_opa(x, i0 + i, kk, part);
                    for (int r = 0; r < R; r++)
                        add_prod(&acc[r][part], x->w[r][i], v);
                }
            for (int r = 0; r < R; r++)
                for (int part = 0; part < P; part++)
                    out[((bi * R + r) + R * x->nbr * kk) * P + part] = blasft_csum_value(&acc[r][part]);
        }
}

/* Row checksums of op(B) per column block: out k x (R*nbc). */
__attribute__((noinline)) static void encode_b_pass(const abft_ctx *x, double *out)
{
    const int R = x->R, P = x->P;
    for (int64_t bj = 0; bj < x->nbc; bj++) {
        int64_t j0 = bj * x->bs, len = abft_len(x->n, bj, x->bs);
        for (int64_t kk = 0; kk < x->k; kk++) {
            blasft_csum acc[2][2];
            memset(acc, 0, sizeof acc);
            for (int64_t j = 0; j < len; j++)
                for (int part = 0; part < P; part++) {
                    double v = abft_opb(x, kk, j0 + j, part);
                    for (int r = 0; r < R; r++)
                        add_prod(&acc[r][part], x->w[r][j], v);
                }
            for (int r = 0; r < R; r++)
                for (int part = 0; part < P; part++)
                    out[(kk + x->k * (bj * R + r)) * P + part] = blasft_csum_value(&acc[r][part]);
        }
    }
}

static int all_finite(const double *v, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        if (!isfinite(v[i]))
            return 0;
    return 1;
}

static void encoder_fault(abft_ctx *x)
{
    x->encoder_faults++;
    abft_emit(x, BLASFT_EVENT_ENCODER_FAULT, -1, -1, -1, -1, 0.0, 0.0, "recomputed");
}

/* Runs pass twice into out and a scratch buffer; on disagreement reports an encoder fault and
 * tries again (three rounds at most, then keeps the last result). */
static int redundant(abft_ctx *x, void (*pass)(const abft_ctx *, double *), double *out, int64_t n)
{
    double *second = malloc((size_t)(n > 0 ? n : 1) * sizeof *second);
    if (!second)
        return -1;
    for (int round = 0; round < 3; round++) {
        pass(x, out);
        __asm__ volatile("" ::: "memory"); /* keeps the two passes separate computations */
        pass(x, second);
        if (memcmp(out, second, (size_t)n * sizeof *out) == 0)
            break;
        encoder_fault(x);
    }
    free(second);
    return 0;
}

static double *promote(const abft_ctx *x, const void *src, int64_t rows, int64_t cols, int64_t ld)
{
    int64_t r1 = rows > 0 ? rows : 1, c1 = cols > 0 ? cols : 1;
    double *d = malloc((size_t)(r1 * c1 * x->P) * sizeof *d);
    if (!d)
        return NULL;
    for (int64_t j = 0; j < cols; j++)
        for (int64_t i = 0; i < rows; i++)
            for (int part = 0; part < x->P; part++)
                d[(i + rows * j) * x->P + part] = abft_ld(src, x->g->type, i + ld * j, part);
    return d;
}

int abft_encode_operands(abft_ctx *x)
{
    int64_t nac = x->R * x->nbr * x->k * x->P, nbc = x->k * x->R * x->nbc * x->P;
    x->ac = malloc((size_t)(nac > 0 ? nac : 1) * sizeof(double));
    x->bc = malloc((size_t)(nbc > 0 ? nbc : 1) * sizeof(double));
    if (!x->ac || !x->bc)
        return -1;
    if (redundant(x, encode_a_pass, x->ac, nac) || redundant(x, encode_b_pass, x->bc, nbc))
        return -1;
    /* An Inf or NaN anywhere in A or B makes its block checksum non-finite: no check possible. */
    if (!all_finite(x->ac, nac) || !all_finite(x->bc, nbc))
        return -1;
    const blasft_gemm *g = x->g;
    if (g->type == BLASFT_TYPE_S || g->type == BLASFT_TYPE_C) {
        /* the checksum products run in double: promote the operands as stored */
        x->ad = promote(x, g->a, blasft_gemm_a_rows(g), blasft_gemm_a_cols(g), g->lda);
        x->bd = promote(x, g->b, blasft_gemm_b_rows(g), blasft_gemm_b_cols(g), g->ldb);
        if (!x->ad || !x->bd)
            return -1;
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
        blasft_host_gemm(&d);

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
        blasft_host_gemm(&d);

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

/* Sums of C over blocks [bi0,bi1) x [bj0,bj1): checksum values (compensated), and per element
 * sum (w c)^2 and sum |w c| (parts together) for the thresholds. */
typedef struct cs_out {
    double *colv, *rowv, *colsq, *rowsq, *colabs, *rowabs;
} cs_out;

typedef struct cs_args {
    const void *c;
    int64_t ldc, bi0, bi1, bj0, bj1;
} cs_args;

__attribute__((noinline)) static int c_pass(const abft_ctx *x, const cs_args *a, const cs_out *o)
{
    const int R = x->R, P = x->P;
    const blasft_type t = x->g->type;
    int64_t i0 = a->bi0 * x->bs, i1 = a->bi1 * x->bs < x->m ? a->bi1 * x->bs : x->m;
    int64_t rows = i1 - i0;
    blasft_csum *racc = calloc((size_t)(rows * R * P + 1), sizeof *racc);
    double *rsq = calloc((size_t)(rows * R * 2 + 1), sizeof *rsq);
    if (!racc || !rsq) {
        free(racc);
        free(rsq);
        return -1;
    }
    for (int64_t bj = a->bj0; bj < a->bj1; bj++) {
        int64_t j0 = bj * x->bs, jl = abft_len(x->n, bj, x->bs);
        memset(racc, 0, (size_t)(rows * R * P) * sizeof *racc);
        memset(rsq, 0, (size_t)(rows * R * 2) * sizeof *rsq);
        for (int64_t j = 0; j < jl; j++)
            for (int64_t bi = a->bi0; bi < a->bi1; bi++) {
                int64_t ib = bi * x->bs, il = abft_len(x->m, bi, x->bs);
                blasft_csum acc[2][2];
                double sq[2] = {0, 0}, ab[2] = {0, 0};
                memset(acc, 0, sizeof acc);
                for (int64_t i = 0; i < il; i++) {
                    int64_t ri = (ib + i - i0) * R;
                    for (int part = 0; part < P; part++) {
                        double v = abft_ld(a->c, t, (ib + i) + (j0 + j) * a->ldc, part);
                        for (int r = 0; r < R; r++) {
                            double wc = x->w[r][i] * v, wr = x->w[r][j] * v;
                            add_prod(&acc[r][part], x->w[r][i], v);
                            sq[r] += wc * wc;
                            ab[r] += fabs(wc);
                            add_prod(&racc[(ri + r) * P + part], x->w[r][j], v);
                            rsq[(ri + r) * 2] += wr * wr;
                            rsq[(ri + r) * 2 + 1] += fabs(wr);
                        }
                    }
                }
                for (int r = 0; r < R; r++) {
                    int64_t e = abft_ci(x, bi, r, j0 + j);
                    for (int part = 0; part < P; part++)
                        o->colv[e * P + part] = blasft_csum_value(&acc[r][part]);
                    o->colsq[e] = sq[r];
                    o->colabs[e] = ab[r];
                }
            }
        for (int64_t i = 0; i < rows; i++)
            for (int r = 0; r < R; r++) {
                int64_t e = abft_ri(x, i0 + i, bj, r);
                for (int part = 0; part < P; part++)
                    o->rowv[e * P + part] = blasft_csum_value(&racc[((i * R) + r) * P + part]);
                o->rowsq[e] = rsq[(i * R + r) * 2];
                o->rowabs[e] = rsq[(i * R + r) * 2 + 1];
            }
    }
    free(racc);
    free(rsq);
    return 0;
}

int abft_c_checksums(abft_ctx *x, const void *c, int64_t ldc, int old, int64_t bi0, int64_t bi1,
                     int64_t bj0, int64_t bj1)
{
    cs_out o;
    if (old) {
        o.colv = x->oldc; o.rowv = x->oldr; o.colsq = x->osqc; o.rowsq = x->osqr;
        o.colabs = x->oabsc; o.rowabs = x->oabsr;
    } else {
        o.colv = x->recc; o.rowv = x->recr; o.colsq = x->sqc; o.rowsq = x->sqr;
        o.colabs = x->absc; o.rowabs = x->absr;
    }
    cs_args a = {c, ldc, bi0, bi1, bj0, bj1};
    int64_t nc = abft_nc(x) * x->P, nr = abft_nr(x) * x->P;
    /* second pass writes into copies, so untouched entries compare equal */
    double *sc = x->scratch, *sr = x->scratch + nc;
    for (int round = 0; round < 3; round++) {
        if (c_pass(x, &a, &o))
            return -1;
        __asm__ volatile("" ::: "memory");
        memcpy(sc, o.colv, (size_t)nc * sizeof *sc);
        memcpy(sr, o.rowv, (size_t)nr * sizeof *sr);
        cs_out o2 = o;
        o2.colv = sc;
        o2.rowv = sr;
        /* sq/abs are threshold aids, not compared: the second pass recomputes them in place */
        if (c_pass(x, &a, &o2))
            return -1;
        if (memcmp(sc, o.colv, (size_t)nc * sizeof *sc) == 0 &&
            memcmp(sr, o.rowv, (size_t)nr * sizeof *sr) == 0)
            break;
        encoder_fault(x);
    }
    if (old)
        return all_finite(o.colv, nc) && all_finite(o.rowv, nr) ? 0 : -1;
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
