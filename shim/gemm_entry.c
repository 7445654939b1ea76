/* The GEMM entry points (Fortran ?gemm_/?gemm and cblas_?gemm, S/D/C/Z). Each turns its calling
 * convention into one column-major blasft_gemm and hands it to the dispatch. Invalid arguments
 * are passed to the host BLAS unchanged, so that its xerbla reports them exactly as the
 * reference does. */
#include "gemm.h"
#include "hostblas.h"
#include "report.h"

#include <stddef.h>

#define EXPORT __attribute__((visibility("default")))

enum { CblasRowMajor = 101, CblasColMajor = 102 };
enum { CblasNoTrans = 111, CblasTrans = 112, CblasConjTrans = 113 };

static blasft_trans fortran_trans(const char *t)
{
    switch (*t) {
    case 'N': case 'n': return 'N';
    case 'T': case 't': return 'T';
    case 'C': case 'c': return 'C';
    default: return '?';
    }
}

static blasft_trans cblas_trans(int t)
{
    return t == CblasNoTrans ? 'N' : t == CblasTrans ? 'T' : t == CblasConjTrans ? 'C' : '?';
}

static void scalar_real_f(double out[2], const void *p) { out[0] = *(const float *)p; out[1] = 0; }
static void scalar_real_d(double out[2], const void *p) { out[0] = *(const double *)p; out[1] = 0; }
static void scalar_cplx_f(double out[2], const void *p)
{
    out[0] = ((const float *)p)[0];
    out[1] = ((const float *)p)[1];
}
static void scalar_cplx_d(double out[2], const void *p)
{
    out[0] = ((const double *)p)[0];
    out[1] = ((const double *)p)[1];
}

typedef void fortran_gemm_fn(const char *, const char *, const int *, const int *, const int *,
                             const void *, const void *, const int *, const void *, const int *,
                             const void *, void *, const int *, size_t, size_t);
typedef void cblas_gemm_real_s_fn(int, int, int, int, int, int, float, const void *, int,
                                  const void *, int, float, void *, int);
typedef void cblas_gemm_real_d_fn(int, int, int, int, int, int, double, const void *, int,
                                  const void *, int, double, void *, int);
typedef void cblas_gemm_cplx_fn(int, int, int, int, int, int, const void *, const void *, int,
                                const void *, int, const void *, void *, int);

static void run_recorded(blasft_call_stat *stat, const blasft_gemm *g)
{
    uint64_t t0 = blasft_timing_enabled() ? blasft_now_ns() : 0;
    blasft_where where = blasft_gemm_run(g);
    blasft_call_record(stat, where, t0 ? blasft_now_ns() - t0 + 1 : 0);
}

static void fortran_gemm(blasft_type type, blasft_call_stat *stat, const char *host_name,
                         void (*scalar)(double[2], const void *), const char *ta, const char *tb,
                         const int *m, const int *n, const int *k, const void *alpha,
                         const void *a, const int *lda, const void *b, const int *ldb,
                         const void *beta, void *c, const int *ldc, size_t la, size_t lb)
{
    blasft_gemm g = {.type = type, .transa = fortran_trans(ta), .transb = fortran_trans(tb),
                     .m = *m, .n = *n, .k = *k, .a = a, .lda = *lda, .b = b, .ldb = *ldb,
                     .c = c, .ldc = *ldc, .routine = stat->name};
    if (blasft_gemm_check(&g)) {
        ((fortran_gemm_fn *)blasft_host_sym(host_name))(ta, tb, m, n, k, alpha, a, lda, b, ldb,
                                                        beta, c, ldc, la, lb);
        return;
    }
    scalar(g.alpha, alpha);
    scalar(g.beta, beta);
    run_recorded(stat, &g);
}

/* Fills *g from a CBLAS call; returns nonzero if the call is invalid. */
static int cblas_gemm_desc(blasft_gemm *g, blasft_type type, const char *routine, int layout,
                           int ta, int tb, int m, int n, int k, const void *a, int lda,
                           const void *b, int ldb, void *c, int ldc)
{
    if (layout == CblasColMajor) {
        *g = (blasft_gemm){.type = type, .transa = cblas_trans(ta), .transb = cblas_trans(tb),
                           .m = m, .n = n, .k = k, .a = a, .lda = lda, .b = b, .ldb = ldb,
                           .c = c, .ldc = ldc, .routine = routine};
    } else if (layout == CblasRowMajor) {
        /* Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T. */
        *g = (blasft_gemm){.type = type, .transa = cblas_trans(tb), .transb = cblas_trans(ta),
                           .m = n, .n = m, .k = k, .a = b, .lda = ldb, .b = a, .ldb = lda,
                           .c = c, .ldc = ldc, .routine = routine};
    } else {
        return 1;
    }
    return blasft_gemm_check(g);
}

/* Fortran entry points per type: ?gemm_ (gfortran) and ?gemm (no underscore). */
#define FORTRAN_GEMM_ENTRY(sym, host, TYPE, scalar)                                               \
    EXPORT void sym(const char *ta, const char *tb, const int *m, const int *n, const int *k,     \
                    const void *alpha, const void *a, const int *lda, const void *b,              \
                    const int *ldb, const void *beta, void *c, const int *ldc, size_t la,         \
                    size_t lb)                                                                    \
    {                                                                                             \
        static blasft_call_stat stat = {.name = #sym};                                            \
        fortran_gemm(TYPE, &stat, host, scalar, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c,  \
                     ldc, la, lb);                                                                \
    }

FORTRAN_GEMM_ENTRY(sgemm_, "sgemm_", BLASFT_TYPE_S, scalar_real_f)
FORTRAN_GEMM_ENTRY(sgemm, "sgemm_", BLASFT_TYPE_S, scalar_real_f)
FORTRAN_GEMM_ENTRY(dgemm_, "dgemm_", BLASFT_TYPE_D, scalar_real_d)
FORTRAN_GEMM_ENTRY(dgemm, "dgemm_", BLASFT_TYPE_D, scalar_real_d)
FORTRAN_GEMM_ENTRY(cgemm_, "cgemm_", BLASFT_TYPE_C, scalar_cplx_f)
FORTRAN_GEMM_ENTRY(cgemm, "cgemm_", BLASFT_TYPE_C, scalar_cplx_f)
FORTRAN_GEMM_ENTRY(zgemm_, "zgemm_", BLASFT_TYPE_Z, scalar_cplx_d)
FORTRAN_GEMM_ENTRY(zgemm, "zgemm_", BLASFT_TYPE_Z, scalar_cplx_d)

/* cblas_?gemm: real types take alpha and beta by value, complex ones by pointer. */
#define CBLAS_GEMM_ENTRY(p, TYPE, scalar, S, fn_t, PASS)                                          \
    EXPORT void cblas_##p##gemm(int layout, int ta, int tb, int m, int n, int k, S alpha,         \
                                const void *a, int lda, const void *b, int ldb, S beta, void *c,  \
                                int ldc)                                                          \
    {                                                                                             \
        static blasft_call_stat stat = {.name = "cblas_" #p "gemm"};                              \
        blasft_gemm g;                                                                            \
        if (cblas_gemm_desc(&g, TYPE, stat.name, layout, ta, tb, m, n, k, a, lda, b, ldb, c,      \
                            ldc)) {                                                               \
            ((fn_t *)blasft_host_sym(stat.name))(layout, ta, tb, m, n, k, alpha, a, lda, b, ldb,  \
                                                 beta, c, ldc);                                   \
            return;                                                                               \
        }                                                                                         \
        scalar(g.alpha, PASS alpha);                                                              \
        scalar(g.beta, PASS beta);                                                                \
        run_recorded(&stat, &g);                                                                  \
    }

CBLAS_GEMM_ENTRY(s, BLASFT_TYPE_S, scalar_real_f, float, cblas_gemm_real_s_fn, &)
CBLAS_GEMM_ENTRY(d, BLASFT_TYPE_D, scalar_real_d, double, cblas_gemm_real_d_fn, &)
CBLAS_GEMM_ENTRY(c, BLASFT_TYPE_C, scalar_cplx_f, const void *, cblas_gemm_cplx_fn, )
CBLAS_GEMM_ENTRY(z, BLASFT_TYPE_Z, scalar_cplx_d, const void *, cblas_gemm_cplx_fn, )
