/* The BLAS error handlers and the globals of the reference CBLAS.
 *
 * xerbla_ behaves as reference BLAS 3.11's XERBLA compiled by gfortran: it writes
 *   " ** On entry to <NAME> parameter number <n> had an illegal value"
 * (NAME without trailing blanks, n in Fortran format I2, "**" when it does not fit) to standard
 * output and ends the program with Fortran STOP, i.e. exit status 0. The host BLAS (OpenBLAS)
 * reaches it through the global symbol xerbla_, so a program's own xerbla_ takes precedence.
 *
 * cblas_xerbla behaves as netlib CBLAS's: with RowMajorStrg set it maps the parameter number of
 * the column-major call back to the row-major argument order, writes
 *   "Parameter <n> to routine <rout> was incorrect" (only if n != 0)
 * and the caller's formatted message to standard error, then exits with status -1 (255). */
#include "forward.h"
#include "xerbla.h"

#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Set by netlib-style CBLAS wrappers and testers; libblas_ft only provides them. */
BLASFT_SHIM_EXPORT int RowMajorStrg;
BLASFT_SHIM_EXPORT int CBLAS_CallFromC;

BLASFT_SHIM_EXPORT void xerbla_(const char *srname, const int *info, size_t srname_len)
{
    size_t len = srname_len;
    while (len > 0 && (srname[len - 1] == ' ' || srname[len - 1] == '\0'))
        len--;
    char number[3] = "**";
    if (*info >= -9 && *info <= 99)
        snprintf(number, sizeof number, "%2d", *info);
    printf(" ** On entry to %.*s parameter number %s had an illegal value\n", (int)len, srname,
           number);
    fflush(stdout);
    exit(0);
}
BLASFT_SHIM_ALIAS(xerbla, xerbla_)

typedef void xerbla_fn(const char *, const int *, size_t);
typedef void cblas_xerbla_fn(int, const char *, const char *, ...);

/* The handler `name` that is in effect for the process: a program's own one, if it has one,
 * else libblas_ft's (`ours`). Looked up by name, so no direct call binds to ours. */
static void *effective(void **cache, const char *name, void *ours)
{
    void *fn = __atomic_load_n(cache, __ATOMIC_ACQUIRE);
    if (!fn) {
        fn = dlsym(RTLD_DEFAULT, name);
        if (!fn)
            fn = ours; /* libblas_ft was loaded with RTLD_LOCAL */
        __atomic_store_n(cache, fn, __ATOMIC_RELEASE);
    }
    return fn;
}

static xerbla_fn *effective_xerbla(void)
{
    static void *cached;
    return (xerbla_fn *)effective(&cached, "xerbla_", (void *)&xerbla_);
}

/* As the reference: the name (an array of single characters, as C callers pass it) is copied
 * into a blank-padded CHARACTER*32 and handed to XERBLA. */
BLASFT_SHIM_EXPORT void xerbla_array_(const char *srname_array, const int *srname_len,
                                      const int *info, size_t srname_array_len)
{
    (void)srname_array_len; /* each element is one character */
    char srname[32];
    memset(srname, ' ', sizeof srname);
    int n = *srname_len < (int)sizeof srname ? *srname_len : (int)sizeof srname;
    for (int i = 0; i < n; i++)
        srname[i] = srname_array[i];
    effective_xerbla()(srname, info, sizeof srname);
}
BLASFT_SHIM_ALIAS(xerbla_array, xerbla_array_)

/* Parameter numbers that differ between the column-major call CBLAS makes and the row-major
 * call the user made: pairs swapped when RowMajorStrg is set. The first matching entry wins. */
typedef struct {
    const char *routine_part; /* substring of the routine name */
    const char *unless_part;  /* ... unless it also contains this one (NULL: no exception) */
    int swap[4][2];
} row_major_swap;

static const row_major_swap row_major_swaps[] = {
    {"gemm", NULL, {{4, 5}, {9, 11}}},
    {"symm", NULL, {{4, 5}}},
    {"hemm", NULL, {{4, 5}}},
    {"trmm", NULL, {{6, 7}}},
    {"trsm", NULL, {{6, 7}}},
    {"gemv", NULL, {{3, 4}}},
    {"gbmv", NULL, {{3, 4}, {5, 6}}},
    {"ger", NULL, {{2, 3}, {6, 8}}},
    {"her2", "her2k", {{6, 8}}},
    {"hpr2", NULL, {{6, 8}}},
};

static int row_major_parameter(const char *rout, int info)
{
    for (size_t i = 0; i < sizeof row_major_swaps / sizeof row_major_swaps[0]; i++) {
        const row_major_swap *s = &row_major_swaps[i];
        if (!strstr(rout, s->routine_part) || (s->unless_part && strstr(rout, s->unless_part)))
            continue;
        for (int j = 0; j < 4 && s->swap[j][0]; j++) {
            if (info == s->swap[j][0])
                return s->swap[j][1];
            if (info == s->swap[j][1])
                return s->swap[j][0];
        }
        return info;
    }
    return info;
}

BLASFT_SHIM_EXPORT void cblas_xerbla(int info, const char *rout, const char *form, ...);

void blasft_xerbla_fortran(const char *srname, int info)
{
    effective_xerbla()(srname, &info, strlen(srname));
}

void blasft_xerbla_cblas(int position, const char *rout)
{
    static void *cached;
    ((cblas_xerbla_fn *)effective(&cached, "cblas_xerbla", (void *)&cblas_xerbla))(position, rout,
                                                                                  "");
}

BLASFT_SHIM_EXPORT void cblas_xerbla(int info, const char *rout, const char *form, ...)
{
    if (RowMajorStrg)
        info = row_major_parameter(rout, info);
    if (info)
        fprintf(stderr, "Parameter %d to routine %s was incorrect\n", info, rout);
    va_list ap;
    va_start(ap, form);
    vfprintf(stderr, form, ap);
    va_end(ap);
    exit(-1);
}
