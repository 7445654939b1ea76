/* Forwarding test: every exported BLAS/CBLAS routine of libblas_ft, called through dlsym with
 * distinct arguments, must reach the fake host BLAS (BLASFT_HOST_BLAS) exactly once, with exactly
 * those arguments (the same pointers for Fortran by-reference arguments, the same values for
 * CBLAS by-value ones and hidden string lengths), and its return value must come back.
 * The generated part (generated/forward_cases.c) covers the forwarders; the GEMM entry points,
 * which go through the dispatch (BLASFT_MODE=off: plain host GEMM), are checked here by value. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "fake_host.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

static void *blas_ft;
static fake_call *last;

static void *shim_symbol(const char *name)
{
    void *p = dlsym(blas_ft, name);
    if (!p)
        fail_msg("libblas_ft does not export %s", name);
    return p;
}

/* ------------------------------------------------------------------ arguments of one case */

static int case_index;
static unsigned long calls_before;
static _Alignas(16) unsigned char buffers[FAKE_MAX_ARGS][64];

/* Fresh contents for every case, so a pointee from an earlier case cannot match. */
static void case_begin(int index)
{
    case_index = index;
    for (int i = 0; i < FAKE_MAX_ARGS; i++)
        for (int j = 0; j < 64; j++)
            buffers[i][j] = (unsigned char)(index * 7 + i * 13 + j * 3 + 1);
    calls_before = last->calls;
}

static void *case_buffer(int i) { return buffers[i]; }
static int case_int(int i) { return case_index * 32 + i + 1; }
static size_t case_size(int i) { return (size_t)(case_index * 32 + i + 7); }
static float case_float(int i) { return (float)(case_index * 32 + i) + 0.5f; }
static double case_double(int i) { return (double)(case_index * 32 + i) + 0.25; }

static void expect_host_call(const char *routine, int nargs)
{
    assert_int_equal(last->calls, calls_before + 1);
    assert_string_equal(last->routine, routine);
    assert_int_equal(last->nargs, nargs);
}

static void expect_arg_pointer(int i, const void *p, size_t pointee_bytes)
{
    assert_true(last->value[i] == (uint64_t)(uintptr_t)p);
    assert_memory_equal(last->pointee[i], p, pointee_bytes);
}

static void expect_arg_value(int i, uint64_t v) { assert_true(last->value[i] == v); }

static void expect_int_result(long long r, const char *routine)
{
    assert_int_equal(r, fake_return_int(routine));
}

static void expect_float_result(float r, const char *routine)
{
    assert_true(r == (float)fake_return_real(routine));
}

static void expect_double_result(double r, const char *routine)
{
    assert_true(r == fake_return_real(routine));
}

static void expect_complex_float_result(float _Complex r, const char *routine)
{
    double _Complex want = fake_return_complex(routine);
    assert_true(crealf(r) == (float)creal(want) && cimagf(r) == (float)cimag(want));
}

static void expect_complex_double_result(double _Complex r, const char *routine)
{
    double _Complex want = fake_return_complex(routine);
    assert_true(creal(r) == creal(want) && cimag(r) == cimag(want));
}

#include "generated/forward_cases.c"

/* ------------------------------------------------------------------ GEMM entry points */

enum { ROW_MAJOR = 101, COL_MAJOR = 102, NO_TRANS = 111, TRANS = 112 };

/* The column-major call the host must receive; alpha and beta as stored in memory. */
typedef struct {
    char transa, transb;
    int m, n, k, lda, ldb, ldc;
    const void *a, *b, *c;
    const void *alpha, *beta;
    size_t scalar_bytes;
} expected_gemm;

static void expect_gemm(const char *host, const expected_gemm *e)
{
    expect_host_call(host, 15);
    assert_int_equal(last->pointee[0][0], e->transa);
    assert_int_equal(last->pointee[1][0], e->transb);
    const int ints[] = {e->m, e->n, e->k};
    for (int i = 0; i < 3; i++)
        assert_memory_equal(last->pointee[2 + i], &ints[i], sizeof(int));
    assert_memory_equal(last->pointee[5], e->alpha, e->scalar_bytes);
    assert_true(last->value[6] == (uint64_t)(uintptr_t)e->a);
    assert_memory_equal(last->pointee[7], &e->lda, sizeof(int));
    assert_true(last->value[8] == (uint64_t)(uintptr_t)e->b);
    assert_memory_equal(last->pointee[9], &e->ldb, sizeof(int));
    assert_memory_equal(last->pointee[10], e->beta, e->scalar_bytes);
    assert_true(last->value[11] == (uint64_t)(uintptr_t)e->c);
    assert_memory_equal(last->pointee[12], &e->ldc, sizeof(int));
    /* the dispatch passes its own one-character strings */
    expect_arg_value(13, 1);
    expect_arg_value(14, 1);
}

typedef void fortran_gemm_fn(const char *, const char *, const int *, const int *, const int *,
                             const void *, const void *, const int *, const void *, const int *,
                             const void *, void *, const int *, size_t, size_t);

/* Fortran ?gemm_ and ?gemm with op(A) = A (2 x 4), op(B) = B^T (B 3 x 4), C 2 x 3, lda > m. */
static void check_fortran_gemm(const char *symbol, const char *host, const void *alpha,
                               const void *beta, size_t scalar_bytes)
{
    fortran_gemm_fn *fn = (fortran_gemm_fn *)shim_symbol(symbol);
    case_begin(9000);
    const int m = 2, n = 3, k = 4, lda = 5, ldb = 6, ldc = 7;
    fn("n", "T", &m, &n, &k, alpha, buffers[0], &lda, buffers[1], &ldb, beta, buffers[2], &ldc,
       9, 11);
    expected_gemm e = {'N', 'T', m, n, k, lda, ldb, ldc, buffers[0], buffers[1], buffers[2],
                       alpha, beta, scalar_bytes};
    expect_gemm(host, &e);
}

static void forward_fortran_gemm(void **state)
{
    (void)state;
    const float s[2] = {1.5f, -2.25f}, c[2][2] = {{1.5f, -0.5f}, {-2.25f, 0.75f}};
    const double d[2] = {3.5, -4.25}, z[2][2] = {{3.5, -0.125}, {-4.25, 8.5}};
    const char *const letters[] = {"s", "d", "c", "z"};
    for (int under = 0; under < 2; under++) {
        for (int t = 0; t < 4; t++) {
            char symbol[16], host[16];
            snprintf(symbol, sizeof symbol, "%sgemm%s", letters[t], under ? "_" : "");
            snprintf(host, sizeof host, "%sgemm_", letters[t]);
            if (t == 0)
                check_fortran_gemm(symbol, host, &s[0], &s[1], sizeof(float));
            else if (t == 1)
                check_fortran_gemm(symbol, host, &d[0], &d[1], sizeof(double));
            else if (t == 2)
                check_fortran_gemm(symbol, host, c[0], c[1], 2 * sizeof(float));
            else
                check_fortran_gemm(symbol, host, z[0], z[1], 2 * sizeof(double));
        }
    }
}

typedef void cblas_sgemm_fn(int, int, int, int, int, int, float, const void *, int, const void *,
                            int, float, void *, int);
typedef void cblas_dgemm_fn(int, int, int, int, int, int, double, const void *, int,
                            const void *, int, double, void *, int);
typedef void cblas_zgemm_fn(int, int, int, int, int, int, const void *, const void *, int,
                            const void *, int, const void *, void *, int);

/* C = A B^T with A 2 x 4, B 3 x 4; row-major it is the column-major C^T = B A^T. */
static expected_gemm cblas_expectation(int layout, const void *alpha, const void *beta,
                                       size_t scalar_bytes)
{
    if (layout == COL_MAJOR)
        return (expected_gemm){'N', 'T', 2, 3, 4, 5, 6, 7, buffers[0], buffers[1], buffers[2],
                               alpha, beta, scalar_bytes};
    return (expected_gemm){'T', 'N', 3, 2, 4, 6, 5, 7, buffers[1], buffers[0], buffers[2],
                           alpha, beta, scalar_bytes};
}

static void forward_cblas_gemm(void **state)
{
    (void)state;
    const int layouts[] = {COL_MAJOR, ROW_MAJOR};
    for (int l = 0; l < 2; l++) {
        int layout = layouts[l];
        const float s[2] = {1.5f, -2.25f};
        case_begin(9100 + l);
        ((cblas_sgemm_fn *)shim_symbol("cblas_sgemm"))(layout, NO_TRANS, TRANS, 2, 3, 4, s[0],
                                                       buffers[0], 5, buffers[1], 6, s[1],
                                                       buffers[2], 7);
        expected_gemm e = cblas_expectation(layout, &s[0], &s[1], sizeof(float));
        expect_gemm("sgemm_", &e);

        const double d[2] = {3.5, -4.25};
        case_begin(9200 + l);
        ((cblas_dgemm_fn *)shim_symbol("cblas_dgemm"))(layout, NO_TRANS, TRANS, 2, 3, 4, d[0],
                                                       buffers[0], 5, buffers[1], 6, d[1],
                                                       buffers[2], 7);
        e = cblas_expectation(layout, &d[0], &d[1], sizeof(double));
        expect_gemm("dgemm_", &e);

        const float c[2][2] = {{1.5f, -0.5f}, {-2.25f, 0.75f}};
        case_begin(9300 + l);
        ((cblas_zgemm_fn *)shim_symbol("cblas_cgemm"))(layout, NO_TRANS, TRANS, 2, 3, 4, c[0],
                                                       buffers[0], 5, buffers[1], 6, c[1],
                                                       buffers[2], 7);
        e = cblas_expectation(layout, c[0], c[1], 2 * sizeof(float));
        expect_gemm("cgemm_", &e);

        const double z[2][2] = {{3.5, -0.125}, {-4.25, 8.5}};
        case_begin(9400 + l);
        ((cblas_zgemm_fn *)shim_symbol("cblas_zgemm"))(layout, NO_TRANS, TRANS, 2, 3, 4, z[0],
                                                       buffers[0], 5, buffers[1], 6, z[1],
                                                       buffers[2], 7);
        e = cblas_expectation(layout, z[0], z[1], 2 * sizeof(double));
        expect_gemm("zgemm_", &e);
    }
}

/* ------------------------------------------------------------------ main */

int main(void)
{
    const char *lib = getenv("LIBBLAS_FT_SO"), *fake = getenv("BLASFT_HOST_BLAS");
    if (!lib || !fake) {
        fprintf(stderr, "test_forward: LIBBLAS_FT_SO and BLASFT_HOST_BLAS must be set\n");
        return 1;
    }
    blas_ft = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    /* the same object libblas_ft loads as its host, so its record is the one we read */
    void *host = dlopen(fake, RTLD_NOW | RTLD_LOCAL);
    if (!blas_ft || !host) {
        fprintf(stderr, "test_forward: %s\n", dlerror());
        return 1;
    }
    last = dlsym(host, "fake_last_call");
    if (!last) {
        fprintf(stderr, "test_forward: the fake host has no fake_last_call\n");
        return 1;
    }
    const struct CMUnitTest tests[] = {
        GENERATED_FORWARD_TESTS
        cmocka_unit_test(forward_fortran_gemm),
        cmocka_unit_test(forward_cblas_gemm),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
