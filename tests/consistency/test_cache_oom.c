/* The consistency layer out of memory: random GEMM-like uses of a cache (host backend) and host
 * writes between them, with one of the library's own allocations failing now and then
 * (fail_alloc.h, at a random point of a step). A failed acquire or download is handled as the
 * offload path does (everything released as unchanged, C marked changed on the host, the GEMM
 * computed on the host). The property: whenever an acquire succeeds, the device copies and
 * encodings are those of the current host data (zero stale), every result in C is right, and
 * nothing of the device budget stays held at the end. Not built with the sanitizers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "blas_ft_cache.h"
#include "datagen.h"
#include "fail_alloc.h"
#include "test_support.h"

enum { STEPS = 20000, DIM = 6 };

static uint64_t encodes;
static const blasft_cache_codec codec = {&encodes, test_codec_bytes, test_codec_encode};

/* C = A B (+ C), column-major, ld = DIM for the host and rows for device copies */
static void gemm(const double *a, int64_t lda, const double *b, int64_t ldb, double *c,
                 int64_t ldc, int acc)
{
    for (int64_t j = 0; j < DIM; j++)
        for (int64_t i = 0; i < DIM; i++) {
            double s = acc ? c[i + j * ldc] : 0.0;
            for (int64_t l = 0; l < DIM; l++)
                s += a[i + l * lda] * b[l + j * ldb];
            c[i + j * ldc] = s;
        }
}

static void run(blasft_cache_mode mode, uint64_t seed, uint64_t *stale, uint64_t *failures)
{
    dg_rng r;
    dg_seed(&r, seed);
    blasft_devmem *dev = blasft_devmem_host_create(-1);
    blasft_cache_opts o = {mode, 0, 1, &codec};
    blasft_cache *c = blasft_cache_create(dev, &o);
    assert_non_null(c);
    static double host[3][DIM * DIM], want[DIM * DIM];
    for (int s = 0; s < 3; s++)
        for (int e = 0; e < DIM * DIM; e++)
            host[s][e] = (double)(int)dg_range(&r, -8, 8); /* small integers: exact products */
    blasft_cache_key keys[3];
    for (int s = 0; s < 3; s++)
        keys[s] = (blasft_cache_key){host[s], BLASFT_TYPE_D, DIM, DIM, DIM};
    for (int step = 0; step < STEPS; step++) {
        if (dg_below(&r, 2))
            fail_alloc_arm(1 + (long)dg_below(&r, 12));
        if (dg_below(&r, 3) == 0) {
            /* a host write into A or B (declared where the mode wants it) */
            const int s = (int)dg_below(&r, 2);
            const int e = (int)dg_below(&r, DIM * DIM);
            host[s][e] = (double)(int)dg_range(&r, -8, 8);
            if (mode == BLASFT_CACHE_DECLARED)
                blasft_cache_mark_changed(&host[s][e], sizeof(double));
        } else {
            const int acc = (int)dg_below(&r, 2);
            memcpy(want, host[2], sizeof want);
            gemm(host[0], DIM, host[1], DIM, want, DIM, acc);
            blasft_cache_ref ref[3];
            int held = 0, ok = 1;
            const unsigned fl[3] = {BLASFT_CACHE_ENC(0), BLASFT_CACHE_ENC(1),
                                    BLASFT_CACHE_WRITE | (acc ? 0 : BLASFT_CACHE_NO_LOAD)};
            for (; held < 3 && ok; held++)
                ok = blasft_cache_acquire(c, &keys[held], fl[held], &ref[held]) == 0;
            if (!ok)
                held--; /* the failed one holds nothing */
            if (ok) {
                for (int s = 0; s < 2; s++) {
                    *stale += !test_same_as_host(&keys[s], ref[s].data);
                    *stale += ref[s].enc[s] && !test_encoding_current(&keys[s], s, ref[s].enc[s]);
                }
                if (acc)
                    *stale += !test_same_as_host(&keys[2], ref[2].data);
                gemm(ref[0].data, ref[0].ld, ref[1].data, ref[1].ld, ref[2].data, ref[2].ld, acc);
                ok = blasft_cache_download(c, &ref[2]) == 0;
            }
            for (int s = 0; s < held; s++)
                blasft_cache_release(c, &ref[s], ok && s == 2 ? BLASFT_CACHE_DEVICE_WROTE : 0);
            if (!ok) { /* the caller's way out: C on the host */
                ++*failures;
                blasft_cache_mark_host_changed(c, host[2], sizeof host[2]);
                gemm(host[0], DIM, host[1], DIM, host[2], DIM, acc);
            }
            *stale += memcmp(host[2], want, sizeof want) != 0;
            /* keep C's values small: the next products stay exact */
            for (int e = 0; e < DIM * DIM; e++)
                if (host[2][e] > 1e6 || host[2][e] < -1e6) {
                    host[2][e] = 1.0;
                    if (mode == BLASFT_CACHE_DECLARED)
                        blasft_cache_mark_changed(&host[2][e], sizeof(double));
                }
        }
        fail_alloc_disarm();
    }
    blasft_cache_destroy(c);
    blasft_devmem_host_stats hs;
    blasft_devmem_host_stats_get(dev, &hs);
    assert_int_equal(hs.held, 0);
    dev->ops->destroy(dev);
}

static void test_allocations_fail_now_and_then(void **state)
{
    (void)state;
    uint64_t stale = 0, failures = 0;
    run(BLASFT_CACHE_HASH, 71, &stale, &failures);
    run(BLASFT_CACHE_DECLARED, 72, &stale, &failures);
    run(BLASFT_CACHE_OFF, 73, &stale, &failures);
    printf("# %d steps in each of 3 modes: %llu GEMMs taken to the host after a failed "
           "allocation, %llu stale\n", STEPS, (unsigned long long)failures,
           (unsigned long long)stale);
    assert_int_equal(stale, 0);
    assert_true(failures > 100); /* the failures did reach the cache */
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_allocations_fail_now_and_then)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
