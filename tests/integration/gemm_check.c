#include "gemm_check.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

uint64_t gc_rand_next(uint64_t *s)
{
    uint64_t x = *s ? *s : 0x9e3779b97f4a7c15u;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *s = x;
}

double gc_rand_uniform(uint64_t *s) { return (double)(gc_rand_next(s) >> 11) * 0x1p-52 - 1.0; }

size_t gc_elem_size(enum gemm_type t)
{
    static const size_t sizes[] = {sizeof(float), sizeof(double), 2 * sizeof(float),
                                   2 * sizeof(double)};
    return sizes[t];
}

static int is_complex(enum gemm_type t) { return t == TYPE_C || t == TYPE_Z; }

/* Elements of a rows x cols matrix with leading dimension ld in the given storage order. */
static size_t stored_elems(enum gemm_order o, int rows, int cols, int ld)
{
    size_t outer = (size_t)(o == ORDER_COL ? cols : rows);
    return outer * (size_t)ld;
}

static int a_rows(const gemm_case *g) { return g->transa == 'N' ? g->m : g->k; }
static int a_cols(const gemm_case *g) { return g->transa == 'N' ? g->k : g->m; }
static int b_rows(const gemm_case *g) { return g->transb == 'N' ? g->k : g->n; }
static int b_cols(const gemm_case *g) { return g->transb == 'N' ? g->n : g->k; }

size_t gc_a_elems(const gemm_case *g) { return stored_elems(g->order, a_rows(g), a_cols(g), g->lda); }
size_t gc_b_elems(const gemm_case *g) { return stored_elems(g->order, b_rows(g), b_cols(g), g->ldb); }
size_t gc_c_elems(const gemm_case *g) { return stored_elems(g->order, g->m, g->n, g->ldc); }

void gc_fill(enum gemm_type t, void *x, size_t n, uint64_t *s)
{
    size_t scalars = n * (is_complex(t) ? 2 : 1);
    for (size_t i = 0; i < scalars; i++) {
        if (t == TYPE_S || t == TYPE_C)
            ((float *)x)[i] = (float)gc_rand_uniform(s);
        else
            ((double *)x)[i] = gc_rand_uniform(s);
    }
}

static size_t index_of(enum gemm_order o, int i, int j, int ld)
{
    return o == ORDER_COL ? (size_t)i + (size_t)j * (size_t)ld : (size_t)i * (size_t)ld + (size_t)j;
}

/* Element (i, j) of a stored matrix as a long double complex pair. */
static void load(enum gemm_type t, const void *x, size_t idx, long double out[2])
{
    out[1] = 0;
    if (t == TYPE_S)
        out[0] = ((const float *)x)[idx];
    else if (t == TYPE_D)
        out[0] = ((const double *)x)[idx];
    else if (t == TYPE_C) {
        out[0] = ((const float *)x)[2 * idx];
        out[1] = ((const float *)x)[2 * idx + 1];
    } else {
        out[0] = ((const double *)x)[2 * idx];
        out[1] = ((const double *)x)[2 * idx + 1];
    }
}

/* op(X)(i, l) where X is stored rows x cols: transposing swaps the indices, 'C' also conjugates. */
static void load_op(const gemm_case *g, char trans, const void *x, int ld, int i, int l,
                    long double out[2])
{
    if (trans == 'N')
        load(g->type, x, index_of(g->order, i, l, ld), out);
    else
        load(g->type, x, index_of(g->order, l, i, ld), out);
    if (trans == 'C')
        out[1] = -out[1];
}

long gc_check(const gemm_case *g, const void *a, const void *b, const void *c0, const void *c,
              const char *what)
{
    const long double eps = (g->type == TYPE_S || g->type == TYPE_C) ? FLT_EPSILON : DBL_EPSILON;
    const long double tol = 4.0L * (g->k + 3) * eps * (is_complex(g->type) ? 2 : 1);
    const long double al[2] = {g->alpha[0], g->alpha[1]}, be[2] = {g->beta[0], g->beta[1]};
    const long double abs_alpha = fabsl(al[0]) + fabsl(al[1]);
    const long double abs_beta = fabsl(be[0]) + fabsl(be[1]);
    const size_t esz = gc_elem_size(g->type);
    long bad = 0;

    for (int i = 0; i < g->m; i++) {
        for (int j = 0; j < g->n; j++) {
            long double sum[2] = {0, 0}, mag = 0;
            if (abs_alpha != 0) {
                for (int l = 0; l < g->k; l++) {
                    long double x[2], y[2];
                    load_op(g, g->transa, a, g->lda, i, l, x);
                    load_op(g, g->transb, b, g->ldb, l, j, y);
                    sum[0] += x[0] * y[0] - x[1] * y[1];
                    sum[1] += x[0] * y[1] + x[1] * y[0];
                    mag += (fabsl(x[0]) + fabsl(x[1])) * (fabsl(y[0]) + fabsl(y[1]));
                }
            }
            size_t idx = index_of(g->order, i, j, g->ldc);
            long double ref[2] = {al[0] * sum[0] - al[1] * sum[1], al[0] * sum[1] + al[1] * sum[0]};
            long double bound = abs_alpha * mag;
            if (abs_beta != 0) { /* beta = 0: C0 is not read, as the reference says */
                long double z[2];
                load(g->type, c0, idx, z);
                ref[0] += be[0] * z[0] - be[1] * z[1];
                ref[1] += be[0] * z[1] + be[1] * z[0];
                bound += abs_beta * (fabsl(z[0]) + fabsl(z[1]));
            }
            long double got[2];
            load(g->type, c, idx, got);
            long double err = fabsl(got[0] - ref[0]) + fabsl(got[1] - ref[1]);
            if (!(err <= tol * bound + 1e-300L)) {
                if (bad < 5)
                    fprintf(stderr,
                            "%s: C(%d,%d) = (%.10Lg, %.10Lg), expected (%.10Lg, %.10Lg), error %.3Lg > "
                            "bound %.3Lg\n",
                            what, i, j, got[0], got[1], ref[0], ref[1], err, tol * bound);
                bad++;
            }
        }
    }
    /* Everything of C outside its m x n part must be exactly as it was. */
    size_t total = gc_c_elems(g);
    for (size_t idx = 0; idx < total; idx++) {
        size_t inner = idx % (size_t)g->ldc;
        size_t inner_dim = (size_t)(g->order == ORDER_COL ? g->m : g->n);
        if (inner < inner_dim)
            continue;
        if (memcmp((const char *)c + idx * esz, (const char *)c0 + idx * esz, esz) != 0) {
            if (bad < 5)
                fprintf(stderr, "%s: padding element %zu of C was changed\n", what, idx);
            bad++;
        }
    }
    return bad;
}
