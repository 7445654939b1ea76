/* Test fixture: a BLAS that an application bundles privately under other names, as numpy's and
 * scipy's wheels bundle OpenBLAS (scipy_cblas_dgemm64_, ...). Naive GEMMs under every name of
 * the three families shim/gemm_entry.c exports, which count the calls that reach them and record
 * the parameter number of an invalid one (where a real BLAS's xerbla would report it). */
#include <stddef.h>
#include <stdint.h>

#define EXPORT __attribute__((visibility("default")))

EXPORT long bundled_calls;  /* calls that reached this library */
EXPORT int bundled_invalid; /* parameter number of the last invalid call (Fortran numbering) */

enum { S, D, C, Z };

static int upper(char t) { return t >= 'a' ? t - 'a' + 'A' : t; }

static void get(int type, const void *x, int64_t i, double v[2])
{
    switch (type) {
    case S: v[0] = ((const float *)x)[i]; v[1] = 0; break;
    case D: v[0] = ((const double *)x)[i]; v[1] = 0; break;
    case C: v[0] = ((const float *)x)[2 * i]; v[1] = ((const float *)x)[2 * i + 1]; break;
    default: v[0] = ((const double *)x)[2 * i]; v[1] = ((const double *)x)[2 * i + 1]; break;
    }
}

static void put(int type, void *x, int64_t i, const double v[2])
{
    switch (type) {
    case S: ((float *)x)[i] = (float)v[0]; break;
    case D: ((double *)x)[i] = v[0]; break;
    case C: ((float *)x)[2 * i] = (float)v[0]; ((float *)x)[2 * i + 1] = (float)v[1]; break;
    default: ((double *)x)[2 * i] = v[0]; ((double *)x)[2 * i + 1] = v[1]; break;
    }
}

/* op(X)(r, c) of a column-major X */
static void op_at(int type, char t, const void *x, int64_t ld, int64_t r, int64_t c, double v[2])
{
    get(type, x, t == 'N' ? r + c * ld : c + r * ld, v);
    if (t == 'C')
        v[1] = -v[1];
}

/* Column-major GEMM; returns the Fortran number of the first invalid parameter, 0 if valid. */
static int gemm(int type, char ta, char tb, int64_t m, int64_t n, int64_t k, const double al[2],
                const void *a, int64_t lda, const void *b, int64_t ldb, const double be[2],
                void *c, int64_t ldc)
{
    ta = (char)upper(ta);
    tb = (char)upper(tb);
    const int64_t arows = ta == 'N' ? m : k, brows = tb == 'N' ? k : n;
    const int bad = ta != 'N' && ta != 'T' && ta != 'C' ? 1
                    : tb != 'N' && tb != 'T' && tb != 'C' ? 2
                    : m < 0 ? 3 : n < 0 ? 4 : k < 0 ? 5
                    : lda < (arows > 1 ? arows : 1) ? 8
                    : ldb < (brows > 1 ? brows : 1) ? 10
                    : ldc < (m > 1 ? m : 1) ? 13 : 0;
    bundled_calls++;
    if (bad) {
        bundled_invalid = bad;
        return bad;
    }
    for (int64_t j = 0; j < n; j++)
        for (int64_t i = 0; i < m; i++) {
            double s[2] = {0, 0}, x[2], y[2], o[2];
            for (int64_t l = 0; l < k; l++) {
                op_at(type, ta, a, lda, i, l, x);
                op_at(type, tb, b, ldb, l, j, y);
                s[0] += x[0] * y[0] - x[1] * y[1];
                s[1] += x[0] * y[1] + x[1] * y[0];
            }
            double r[2] = {al[0] * s[0] - al[1] * s[1], al[0] * s[1] + al[1] * s[0]};
            if (be[0] != 0 || be[1] != 0) {
                get(type, c, i + j * ldc, o);
                r[0] += be[0] * o[0] - be[1] * o[1];
                r[1] += be[0] * o[1] + be[1] * o[0];
            }
            put(type, c, i + j * ldc, r);
        }
    return 0;
}

static const char letters[] = "NTC";

#define SCALAR_REAL(v, p) double v[2] = {(double)(p), 0}
#define SCALAR_CPLX_F(v, p) double v[2] = {((const float *)(p))[0], ((const float *)(p))[1]}
#define SCALAR_CPLX_D(v, p) double v[2] = {((const double *)(p))[0], ((const double *)(p))[1]}

#define FORTRAN(sym, TYPE, SCAL, INT, R)                                                          \
    EXPORT void sym(const char *ta, const char *tb, const INT *m, const INT *n, const INT *k,     \
                    const R *alpha, const void *a, const INT *lda, const void *b,                 \
                    const INT *ldb, const R *beta, void *c, const INT *ldc, size_t la, size_t lb) \
    {                                                                                             \
        (void)la;                                                                                 \
        (void)lb;                                                                                 \
        SCAL(al, alpha);                                                                          \
        SCAL(be, beta);                                                                           \
        gemm(TYPE, *ta, *tb, *m, *n, *k, al, a, *lda, b, *ldb, be, c, *ldc);                      \
    }

/* CBLAS: row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T */
#define CBLAS(sym, TYPE, SCAL, INT, S_T)                                                          \
    EXPORT void sym(int layout, int ta, int tb, INT m, INT n, INT k, S_T alpha, const void *a,    \
                    INT lda, const void *b, INT ldb, S_T beta, void *c, INT ldc)                  \
    {                                                                                             \
        SCAL(al, alpha);                                                                          \
        SCAL(be, beta);                                                                           \
        char cta = ta >= 111 && ta <= 113 ? letters[ta - 111] : '?';                              \
        char ctb = tb >= 111 && tb <= 113 ? letters[tb - 111] : '?';                              \
        if (layout == 102)                                                                        \
            gemm(TYPE, cta, ctb, m, n, k, al, a, lda, b, ldb, be, c, ldc);                        \
        else                                                                                      \
            gemm(TYPE, ctb, cta, n, m, k, al, b, ldb, a, lda, be, c, ldc);                        \
    }

#define FAMILY(prefix, fsuffix, csuffix, INT)                                                     \
    FORTRAN(prefix##sgemm##fsuffix, S, SCALAR_REAL_P, INT, float)                                 \
    FORTRAN(prefix##dgemm##fsuffix, D, SCALAR_REAL_P, INT, double)                                \
    FORTRAN(prefix##cgemm##fsuffix, C, SCALAR_CPLX_F, INT, void)                                  \
    FORTRAN(prefix##zgemm##fsuffix, Z, SCALAR_CPLX_D, INT, void)                                  \
    CBLAS(prefix##cblas_sgemm##csuffix, S, SCALAR_REAL, INT, float)                               \
    CBLAS(prefix##cblas_dgemm##csuffix, D, SCALAR_REAL, INT, double)                              \
    CBLAS(prefix##cblas_cgemm##csuffix, C, SCALAR_CPLX_F, INT, const void *)                      \
    CBLAS(prefix##cblas_zgemm##csuffix, Z, SCALAR_CPLX_D, INT, const void *)

#define SCALAR_REAL_P(v, p) double v[2] = {(double)*(p), 0}

FAMILY(scipy_, _64_, 64_, int64_t)
FAMILY(, _64_, 64_, int64_t)
FAMILY(scipy_, _, , int)
