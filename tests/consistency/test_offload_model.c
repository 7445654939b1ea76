/* The auto-dispatch model (consistency/offload_model.h): with its defaults small GEMMs stay on
 * the host and large ones go to the GPU; measured host and GPU times move the crossover the way
 * they should; one absurd GPU measurement cannot push the model beyond its bound. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "consistency/offload_model.h"

#include <string.h>

static blasft_gemm square(blasft_type t, int64_t n, double beta)
{
    blasft_gemm g;
    memset(&g, 0, sizeof g);
    g.type = t;
    g.transa = g.transb = 'N';
    g.m = g.n = g.k = n;
    g.lda = g.ldb = g.ldc = n;
    g.alpha[0] = 1;
    g.beta[0] = beta;
    return g;
}

static int gpu_wins(const blasft_gemm *g)
{
    return blasft_model_gpu_seconds(g) < blasft_model_host_seconds(g);
}

/* the smallest power-of-two n that the model sends to the GPU */
static int64_t crossover(blasft_type t)
{
    for (int64_t n = 8; n <= 65536; n *= 2) {
        blasft_gemm g = square(t, n, 0);
        if (gpu_wins(&g))
            return n;
    }
    return -1;
}

static void test_model(void **state)
{
    (void)state;
    blasft_gemm tiny = square(BLASFT_TYPE_D, 32, 0), big = square(BLASFT_TYPE_D, 8192, 0);
    assert_false(gpu_wins(&tiny));
    assert_true(gpu_wins(&big));
    assert_true(blasft_model_flops(&big) == 2.0 * 8192.0 * 8192.0 * 8192.0);
    blasft_gemm z = square(BLASFT_TYPE_Z, 100, 0);
    assert_true(blasft_model_flops(&z) == 8e6);
    /* beta != 0 moves C up as well: the GPU costs more */
    blasft_gemm b1 = square(BLASFT_TYPE_D, 1024, 1.0), b0 = square(BLASFT_TYPE_D, 1024, 0);
    assert_true(blasft_model_gpu_seconds(&b1) > blasft_model_gpu_seconds(&b0));
    int64_t x0 = crossover(BLASFT_TYPE_D);
    assert_true(x0 > 32 && x0 <= 8192);
    /* a host measured 10x slower than the default assumes: the crossover comes down */
    blasft_gemm m = square(BLASFT_TYPE_D, 2048, 0);
    double h = blasft_model_host_seconds(&m);
    blasft_model_host_ran(&m, 10 * h);
    blasft_model_host_ran(&m, 10 * h);
    assert_true(blasft_model_host_seconds(&m) > 5 * h);
    int64_t x1 = crossover(BLASFT_TYPE_D);
    assert_true(x1 > 0 && x1 < x0);
    /* GPU calls measured far slower than predicted: the crossover goes up again, but an absurd
     * measurement counts at most 8x (one odd call cannot lock the model to the host) */
    double gp = blasft_model_gpu_seconds(&m);
    for (int i = 0; i < 20; i++)
        blasft_model_gpu_ran(&m, 1000 * gp);
    assert_true(blasft_model_gpu_seconds(&m) <= 8.001 * gp);
    assert_true(blasft_model_gpu_seconds(&m) >= 4 * gp);
    int64_t x2 = crossover(BLASFT_TYPE_D);
    assert_true(x2 > x1 || x2 == -1);
    /* calls too small to time are ignored */
    blasft_gemm small = square(BLASFT_TYPE_D, 64, 0);
    double before = blasft_model_host_seconds(&small);
    blasft_model_host_ran(&small, 1.0);
    assert_true(blasft_model_host_seconds(&small) == before);
    /* FP32 has a rate of its own (not changed by the FP64 measurements) */
    blasft_gemm s = square(BLASFT_TYPE_S, 8192, 0);
    assert_true(gpu_wins(&s));
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_model)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
