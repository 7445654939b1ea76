/* Test fixture: stands in for an extension module such as numpy's _multiarray_umath. It is linked
 * against the bundled BLAS (bundled_blas.c) and loaded by the program with dlopen(RTLD_LOCAL), so
 * that library is in no global scope; it calls the bundled names directly, as numpy's matmul
 * calls scipy_cblas_dgemm64_. Under LD_PRELOAD those calls must reach libblas_ft. */
#include "gemm_check.h"

#include <stdint.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

#define DECLARE(prefix, fsuffix, csuffix, INT)                                                    \
    DECL_F(prefix##sgemm##fsuffix, INT) DECL_F(prefix##dgemm##fsuffix, INT)                       \
    DECL_F(prefix##cgemm##fsuffix, INT) DECL_F(prefix##zgemm##fsuffix, INT)                       \
    DECL_C(prefix##cblas_sgemm##csuffix, INT, float) DECL_C(prefix##cblas_dgemm##csuffix, INT, double) \
    DECL_C(prefix##cblas_cgemm##csuffix, INT, const void *)                                      \
    DECL_C(prefix##cblas_zgemm##csuffix, INT, const void *)
#define DECL_F(sym, INT)                                                                          \
    void sym(const char *, const char *, const INT *, const INT *, const INT *, const void *,     \
             const void *, const INT *, const void *, const INT *, const void *, void *,          \
             const INT *, size_t, size_t);
#define DECL_C(sym, INT, S_T)                                                                     \
    void sym(int, int, int, INT, INT, INT, S_T, const void *, INT, const void *, INT, S_T, void *, \
             INT);

#define FAMILIES(X) X(scipy_, _64_, 64_, int64_t) X(, _64_, 64_, int64_t) X(scipy_, _, , int)
FAMILIES(DECLARE)

/* Calls routine `name` (one of the 24) with the case's arguments; returns 0, or -1 for an unknown
 * name. The Fortran names take the case in column-major order. */
#define CALL_F(sym, INT)                                                                          \
    if (strcmp(name, #sym) == 0) {                                                                \
        const INT m = g->m, n = g->n, k = g->k, lda = g->lda, ldb = g->ldb, ldc = g->ldc;         \
        sym(&g->transa, &g->transb, &m, &n, &k, alpha, a, &lda, b, &ldb, beta, c, &ldc, 1, 1);    \
        return 0;                                                                                 \
    }
#define CALL_C(sym, INT, S_T, VAL)                                                                \
    if (strcmp(name, #sym) == 0) {                                                                \
        sym(g->order == ORDER_ROW ? 101 : 102, trans(g->transa), trans(g->transb), (INT)g->m,     \
            (INT)g->n, (INT)g->k, VAL(S_T, alpha), a, (INT)g->lda, b, (INT)g->ldb,                \
            VAL(S_T, beta), c, (INT)g->ldc);                                                      \
        return 0;                                                                                 \
    }
#define BY_VALUE(S_T, p) (*(const S_T *)(p))
#define BY_POINTER(S_T, p) (p)
#define CALLS(prefix, fsuffix, csuffix, INT)                                                      \
    CALL_F(prefix##sgemm##fsuffix, INT) CALL_F(prefix##dgemm##fsuffix, INT)                       \
    CALL_F(prefix##cgemm##fsuffix, INT) CALL_F(prefix##zgemm##fsuffix, INT)                       \
    CALL_C(prefix##cblas_sgemm##csuffix, INT, float, BY_VALUE)                                    \
    CALL_C(prefix##cblas_dgemm##csuffix, INT, double, BY_VALUE)                                   \
    CALL_C(prefix##cblas_cgemm##csuffix, INT, const void *, BY_POINTER)                           \
    CALL_C(prefix##cblas_zgemm##csuffix, INT, const void *, BY_POINTER)

static int trans(char t) { return t == 'N' ? 111 : t == 'T' ? 112 : 113; }

/* alpha and beta: the case's scalars in the routine's type (float, double, or a pair of them) */
EXPORT int user_gemm(const char *name, const gemm_case *g, const void *alpha, const void *a,
                     const void *b, const void *beta, void *c)
{
    FAMILIES(CALLS)
    return -1;
}

/* One Fortran ILP64 DGEMM with 64-bit leading dimensions (beyond a gemm_case's int). */
EXPORT void user_dgemm_64(int64_t m, int64_t n, int64_t k, const double *alpha, const double *a,
                          int64_t lda, const double *b, int64_t ldb, const double *beta, double *c,
                          int64_t ldc)
{
    scipy_dgemm_64_("N", "N", &m, &n, &k, alpha, a, &lda, b, &ldb, beta, c, &ldc, 1, 1);
}
