/* The GEMM entry points (Fortran ?gemm_/?gemm and cblas_?gemm, S/D/C/Z, and the same under the
 * names of BLAS builds that applications bundle privately). Each turns its calling convention
 * into one column-major blasft_gemm and hands it to the dispatch. Invalid arguments are passed to
 * the host BLAS unchanged, so that its xerbla reports them exactly as the reference does; under
 * a bundled name, to the application's own routine of that name. */
#include "bundled_names.h"
#include "config.h"
#include "foreign.h"
#include "gemm.h"
#include "hostblas.h"
#include "log.h"
#include "report.h"
#include "xerbla.h"

#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* Fills *g from a Fortran call; returns nonzero if the call is invalid. */
static int fortran_gemm_desc(blasft_gemm *g, blasft_type type, const char *routine, const char *ta,
                             const char *tb, int64_t m, int64_t n, int64_t k, const void *a,
                             int64_t lda, const void *b, int64_t ldb, void *c, int64_t ldc)
{
    *g = (blasft_gemm){.type = type, .transa = fortran_trans(ta), .transb = fortran_trans(tb),
                       .m = m, .n = n, .k = k, .a = a, .lda = lda, .b = b, .ldb = ldb, .c = c,
                       .ldc = ldc, .routine = routine};
    return blasft_gemm_check(g);
}

/* Fills *g from a CBLAS call; returns nonzero if the call is invalid. */
static int cblas_gemm_desc(blasft_gemm *g, blasft_type type, const char *routine, int layout,
                           int ta, int tb, int64_t m, int64_t n, int64_t k, const void *a,
                           int64_t lda, const void *b, int64_t ldb, void *c, int64_t ldc)
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
        blasft_gemm g;                                                                            \
        if (fortran_gemm_desc(&g, TYPE, stat.name, ta, tb, *m, *n, *k, a, *lda, b, *ldb, c,       \
                              *ldc)) {                                                            \
            ((fortran_gemm_fn *)blasft_host_sym(host))(ta, tb, m, n, k, alpha, a, lda, b, ldb,    \
                                                       beta, c, ldc, la, lb);                     \
            return;                                                                               \
        }                                                                                         \
        scalar(g.alpha, alpha);                                                                   \
        scalar(g.beta, beta);                                                                     \
        run_recorded(&stat, &g);                                                                  \
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

/* ---- the same GEMMs under the names of privately bundled BLAS builds ----
 * numpy's and scipy's wheels carry their own OpenBLAS under prefixed names, ILP64 (64-bit
 * integers) for numpy, and load it where no LD_PRELOAD reaches it by the usual names; Debian's
 * and Julia's ILP64 OpenBLAS use the suffix 64_. Exported under those names, libblas_ft takes the
 * calls before the bundled library does (the preloaded library comes first in every lookup) and
 * protects them with its own host BLAS (where there is none, with the bundled library's GEMM:
 * blasft_host_gemm). A call it does not take goes to the application's own routine of that name
 * (blasft_foreign_sym), unchanged: an invalid one (its xerbla reports it), one that does not fit
 * the host BLAS's 32-bit integers or finds no GEMM to compute with (unprotected, counted, one
 * warning), and every one under BLASFT_MODE=off. The families: src/bundled_names.h. */

/* The application's routine `name`, looked up once per entry point (*cache); NULL if the
 * process has none (a program linked against libblas_ft alone). */
static void *bundled_lookup(void **cache, const char *name)
{
    void *p = __atomic_load_n(cache, __ATOMIC_ACQUIRE);
    if (!p && (p = blasft_foreign_sym(name)))
        __atomic_store_n(cache, p, __ATOMIC_RELEASE);
    return p;
}

/* bundled_lookup for a call that cannot be taken here (info: its invalid parameter, else 0).
 * With no such routine, invalid arguments are reported as the reference BLAS reports them
 * (report_invalid: the xerbla in effect, which ends the program, else the call returns with C
 * unchanged: NULL); a valid call that cannot be computed (a dimension above 2^31 - 1, no GEMM to
 * compute with) is named and the process aborts, as for a routine the host BLAS lacks. */
static void *bundled_original(void **cache, const char *name, int info,
                              void (*report_invalid)(const char *name, int info))
{
    void *p = bundled_lookup(cache, name);
    if (!p && info) {
        report_invalid(name, info);
        return NULL;
    }
    if (!p) {
        fprintf(stderr, "libblas_ft: fatal: %s was called in a way libblas_ft does not take "
                        "(a dimension above 2^31 - 1, or no GEMM to compute with), and the "
                        "process has no other %s\n",
                name, name);
        abort();
    }
    return p;
}

/* The reference's report of a Fortran GEMM's invalid parameter info: XERBLA with the routine's
 * reference name ("DGEMM" for scipy_dgemm_64_: the type letter before "gemm"). */
static void invalid_fortran(const char *name, int info)
{
    const char *g = strstr(name, "gemm");
    const char srname[] = {g && g > name ? (char)(g[-1] - 'a' + 'A') : '?', 'G', 'E', 'M', 'M', 0};
    blasft_xerbla_fortran(srname, info);
}

/* The same for a CBLAS GEMM, whose info is cblas_gemm_desc's: the parameter of the column-major
 * call it makes (1 also for an invalid layout, checked here first). CBLAS numbers from the
 * layout (parameter 1), and a row-major call swaps M with N and A with B (as netlib CBLAS maps
 * its Fortran call's numbers back). The checks of layout and transposes come first, as there. */
static int cblas_gemm_position(int layout, int ta, int tb, int info)
{
    if (layout != CblasRowMajor && layout != CblasColMajor)
        return 1;
    if (cblas_trans(ta) == '?')
        return 2;
    if (cblas_trans(tb) == '?')
        return 3;
    const int pos = info + 1;
    if (layout == CblasRowMajor)
        return pos == 4 ? 5 : pos == 5 ? 4 : pos == 9 ? 11 : pos == 11 ? 9 : pos;
    return pos;
}

static void invalid_cblas(const char *name, int position) { blasft_xerbla_cblas(position, name); }

/* Whether a valid call under a bundled name runs here; if not, it is counted unprotected. Under
 * BLASFT_MODE=off it goes to the application's routine as if libblas_ft were not there (where
 * there is one; else it runs here, unprotected as every call in that mode). */
static int bundled_takes(const blasft_gemm *g, const char *routine, void **original)
{
    static int once_size, once_host;
    if (blasft_cfg()->mode == BLASFT_MODE_OFF)
        return bundled_lookup(original, routine) == NULL;
    const int64_t dims[] = {g->m, g->n, g->k, g->lda, g->ldb, g->ldc};
    for (size_t i = 0; i < sizeof dims / sizeof dims[0]; i++)
        if (dims[i] > INT_MAX) {
            blasft_log_once(&once_size, BLASFT_LOG_WARN,
                            "%s: a dimension or leading dimension above 2^31 - 1 does not fit the "
                            "host BLAS: such GEMMs run unprotected in the application's own BLAS",
                            routine);
            blasft_stat_add(BLASFT_STAT_UNPROTECTED_GEMMS, 1);
            return 0;
        }
    if (!blasft_host_gemm_ready(g->type)) {
        blasft_log_once(&once_host, BLASFT_LOG_WARN,
                        "%s: no host BLAS could be loaded and the application's BLAS has no "
                        "Fortran GEMM under a bundled name (install OpenBLAS, Debian: "
                        "libopenblas0, or set BLASFT_HOST_BLAS): such GEMMs run unprotected in "
                        "the application's own BLAS", routine);
        blasft_stat_add(BLASFT_STAT_UNPROTECTED_GEMMS, 1);
        return 0;
    }
    return 1;
}

#define BUNDLED_FORTRAN_ENTRY(sym, TYPE, scalar, INT)                                             \
    EXPORT void sym(const char *ta, const char *tb, const INT *m, const INT *n, const INT *k,     \
                    const void *alpha, const void *a, const INT *lda, const void *b,              \
                    const INT *ldb, const void *beta, void *c, const INT *ldc, size_t la,         \
                    size_t lb)                                                                    \
    {                                                                                             \
        static blasft_call_stat stat = {.name = #sym};                                            \
        static void *original;                                                                    \
        blasft_gemm g;                                                                            \
        const int info = fortran_gemm_desc(&g, TYPE, stat.name, ta, tb, *m, *n, *k, a, *lda, b,   \
                                           *ldb, c, *ldc);                                        \
        if (info || !bundled_takes(&g, stat.name, &original)) {                                   \
            typedef void fn(const char *, const char *, const INT *, const INT *, const INT *,    \
                            const void *, const void *, const INT *, const void *, const INT *,   \
                            const void *, void *, const INT *, size_t, size_t);                   \
            fn *f = (fn *)bundled_original(&original, stat.name, info, invalid_fortran);          \
            if (f)                                                                                \
                f(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, la, lb);                  \
            return;                                                                               \
        }                                                                                         \
        scalar(g.alpha, alpha);                                                                   \
        scalar(g.beta, beta);                                                                     \
        run_recorded(&stat, &g);                                                                  \
    }

#define BUNDLED_CBLAS_ENTRY(sym, TYPE, scalar, S, PASS, INT)                                      \
    EXPORT void sym(int layout, int ta, int tb, INT m, INT n, INT k, S alpha, const void *a,      \
                    INT lda, const void *b, INT ldb, S beta, void *c, INT ldc)                    \
    {                                                                                             \
        static blasft_call_stat stat = {.name = #sym};                                            \
        static void *original;                                                                    \
        blasft_gemm g;                                                                            \
        const int info = cblas_gemm_desc(&g, TYPE, stat.name, layout, ta, tb, m, n, k, a, lda, b, \
                                         ldb, c, ldc);                                            \
        if (info || !bundled_takes(&g, stat.name, &original)) {                                   \
            typedef void fn(int, int, int, INT, INT, INT, S, const void *, INT, const void *,     \
                            INT, S, void *, INT);                                                 \
            fn *f = (fn *)bundled_original(&original, stat.name,                                  \
                                           info ? cblas_gemm_position(layout, ta, tb, info) : 0,  \
                                           invalid_cblas);                                        \
            if (f)                                                                                \
                f(layout, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);                  \
            return;                                                                               \
        }                                                                                         \
        scalar(g.alpha, PASS alpha);                                                              \
        scalar(g.beta, PASS beta);                                                                \
        run_recorded(&stat, &g);                                                                  \
    }

/* Every type of one family: prefix ?gemm fsuffix and prefix cblas_?gemm csuffix. */
#define BUNDLED_FAMILY(prefix, fsuffix, csuffix, INT)                                             \
    BUNDLED_FORTRAN_ENTRY(prefix##sgemm##fsuffix, BLASFT_TYPE_S, scalar_real_f, INT)              \
    BUNDLED_FORTRAN_ENTRY(prefix##dgemm##fsuffix, BLASFT_TYPE_D, scalar_real_d, INT)              \
    BUNDLED_FORTRAN_ENTRY(prefix##cgemm##fsuffix, BLASFT_TYPE_C, scalar_cplx_f, INT)              \
    BUNDLED_FORTRAN_ENTRY(prefix##zgemm##fsuffix, BLASFT_TYPE_Z, scalar_cplx_d, INT)              \
    BUNDLED_CBLAS_ENTRY(prefix##cblas_sgemm##csuffix, BLASFT_TYPE_S, scalar_real_f,               \
                        float, &, INT)                                                            \
    BUNDLED_CBLAS_ENTRY(prefix##cblas_dgemm##csuffix, BLASFT_TYPE_D, scalar_real_d,               \
                        double, &, INT)                                                           \
    BUNDLED_CBLAS_ENTRY(prefix##cblas_cgemm##csuffix, BLASFT_TYPE_C, scalar_cplx_f,               \
                        const void *, , INT)                                                      \
    BUNDLED_CBLAS_ENTRY(prefix##cblas_zgemm##csuffix, BLASFT_TYPE_Z, scalar_cplx_d,               \
                        const void *, , INT)

BLASFT_BUNDLED_FAMILIES(BUNDLED_FAMILY)
