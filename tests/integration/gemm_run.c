#include "gemm_run.h"

#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The Fortran interface has no standard C header; gfortran passes the string lengths last. */
void sgemm_(const char *, const char *, const int *, const int *, const int *, const float *,
            const float *, const int *, const float *, const int *, const float *, float *,
            const int *, size_t, size_t);
void dgemm_(const char *, const char *, const int *, const int *, const int *, const double *,
            const double *, const int *, const double *, const int *, const double *, double *,
            const int *, size_t, size_t);
void cgemm_(const char *, const char *, const int *, const int *, const int *, const void *,
            const void *, const int *, const void *, const int *, const void *, void *,
            const int *, size_t, size_t);
void zgemm_(const char *, const char *, const int *, const int *, const int *, const void *,
            const void *, const int *, const void *, const int *, const void *, void *,
            const int *, size_t, size_t);

const char *gr_routine(enum gemm_api api, enum gemm_type t)
{
    static const char *const cblas[] = {"cblas_sgemm", "cblas_dgemm", "cblas_cgemm", "cblas_zgemm"};
    static const char *const fortran[] = {"sgemm_", "dgemm_", "cgemm_", "zgemm_"};
    return api == API_CBLAS ? cblas[t] : fortran[t];
}

static enum CBLAS_TRANSPOSE cblas_trans(char t)
{
    return t == 'N' ? CblasNoTrans : t == 'T' ? CblasTrans : CblasConjTrans;
}

static void run_cblas(const gemm_case *g, const void *a, const void *b, void *c)
{
    enum CBLAS_ORDER o = g->order == ORDER_ROW ? CblasRowMajor : CblasColMajor;
    enum CBLAS_TRANSPOSE ta = cblas_trans(g->transa), tb = cblas_trans(g->transb);
    float fa[2] = {(float)g->alpha[0], (float)g->alpha[1]};
    float fb[2] = {(float)g->beta[0], (float)g->beta[1]};
    switch (g->type) {
    case TYPE_S:
        cblas_sgemm(o, ta, tb, g->m, g->n, g->k, fa[0], a, g->lda, b, g->ldb, fb[0], c, g->ldc);
        break;
    case TYPE_D:
        cblas_dgemm(o, ta, tb, g->m, g->n, g->k, g->alpha[0], a, g->lda, b, g->ldb, g->beta[0], c,
                    g->ldc);
        break;
    case TYPE_C:
        cblas_cgemm(o, ta, tb, g->m, g->n, g->k, fa, a, g->lda, b, g->ldb, fb, c, g->ldc);
        break;
    case TYPE_Z:
        cblas_zgemm(o, ta, tb, g->m, g->n, g->k, g->alpha, a, g->lda, b, g->ldb, g->beta, c, g->ldc);
        break;
    }
}

static void run_fortran(const gemm_case *g, const void *a, const void *b, void *c)
{
    float fa[2] = {(float)g->alpha[0], (float)g->alpha[1]};
    float fb[2] = {(float)g->beta[0], (float)g->beta[1]};
    const char *ta = &g->transa, *tb = &g->transb;
    switch (g->type) {
    case TYPE_S:
        sgemm_(ta, tb, &g->m, &g->n, &g->k, fa, a, &g->lda, b, &g->ldb, fb, c, &g->ldc, 1, 1);
        break;
    case TYPE_D:
        dgemm_(ta, tb, &g->m, &g->n, &g->k, g->alpha, a, &g->lda, b, &g->ldb, g->beta, c, &g->ldc,
               1, 1);
        break;
    case TYPE_C:
        cgemm_(ta, tb, &g->m, &g->n, &g->k, fa, a, &g->lda, b, &g->ldb, fb, c, &g->ldc, 1, 1);
        break;
    case TYPE_Z:
        zgemm_(ta, tb, &g->m, &g->n, &g->k, g->alpha, a, &g->lda, b, &g->ldb, g->beta, c, &g->ldc,
               1, 1);
        break;
    }
}

void gr_run(enum gemm_api api, const gemm_case *g, const void *a, const void *b, void *c)
{
    if (api == API_CBLAS)
        run_cblas(g, a, b, c);
    else
        run_fortran(g, a, b, c);
}

static void *alloc_elems(const gemm_case *g, size_t n)
{
    void *p = malloc((n ? n : 1) * gc_elem_size(g->type));
    if (!p) {
        perror("malloc");
        exit(2);
    }
    return p;
}

long gr_run_checked(enum gemm_api api, const gemm_case *g, uint64_t *state, int nan_c)
{
    size_t na = gc_a_elems(g), nb = gc_b_elems(g), nc = gc_c_elems(g);
    void *a = alloc_elems(g, na), *b = alloc_elems(g, nb);
    void *c = alloc_elems(g, nc), *c0 = alloc_elems(g, nc);
    gc_fill(g->type, a, na, state);
    gc_fill(g->type, b, nb, state);
    gc_fill(g->type, c0, nc, state);
    if (nan_c && g->beta[0] == 0 && g->beta[1] == 0) {
        /* Only the m x n part: the padding must stay exactly as it was. */
        int cplx = g->type == TYPE_C || g->type == TYPE_Z;
        int single = g->type == TYPE_S || g->type == TYPE_C;
        for (int i = 0; i < g->m; i++)
            for (int j = 0; j < g->n; j++) {
                size_t idx = g->order == ORDER_COL ? (size_t)i + (size_t)j * (size_t)g->ldc
                                                   : (size_t)i * (size_t)g->ldc + (size_t)j;
                for (int part = 0; part <= cplx; part++) {
                    size_t s = idx * (size_t)(cplx + 1) + (size_t)part;
                    if (single)
                        ((float *)c0)[s] = NAN;
                    else
                        ((double *)c0)[s] = NAN;
                }
            }
    }
    memcpy(c, c0, (nc ? nc : 1) * gc_elem_size(g->type));
    gr_run(api, g, a, b, c);
    char what[160];
    snprintf(what, sizeof what, "%s(%s, %c%c, m=%d n=%d k=%d lda=%d ldb=%d ldc=%d)",
             gr_routine(api, g->type), g->order == ORDER_ROW ? "row" : "col", g->transa, g->transb,
             g->m, g->n, g->k, g->lda, g->ldb, g->ldc);
    long bad = gc_check(g, a, b, c0, c, what);
    free(a);
    free(b);
    free(c);
    free(c0);
    return bad;
}
