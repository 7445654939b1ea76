/* The host engine out of memory: each allocation the library makes itself fails in turn (the
 * first of a protected GEMM, then the second, ... until a run makes fewer than that), as a
 * process near its memory limit would see them. The contract (abft_engine.h): either the GEMM
 * finishes protected with C right, or blasft_abft_run returns -1 with C exactly as it was, so
 * that the caller's plain GEMM is exact; never a crash, never a wrong C (in detect mode: never a
 * planted error unreported). Errors are planted after the multiplication, so that the check, the
 * location and the correction allocate too.
 * The failures come from fail_alloc.h (the library's own allocations only; not built with the
 * sanitizers). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "abft/abft_engine.h"
#include "abft_test_gemm.h"
#include "abft_test_util.h"

#include "fail_alloc.h"

/* the planted errors: 1e4 added to one part of two elements of different blocks, beyond every
 * threshold method's bound for this data (an exponent flip, as before, can shrink a small element
 * by less than SEA's bound: then nothing was detected, rightly, and C failed the test) */
static void plant(const blasft_gemm *g, void *user)
{
    (void)user;
    for (int e = 0; e < 2; e++) {
        const int64_t i = e ? g->m - 1 : 0, j = e ? g->n - 1 : 0;
        const int ts = blasft_type_size(g->type);
        char *el = (char *)g->c + (size_t)(i + j * g->ldc) * (size_t)ts;
        /* S, D: the element; C: its imaginary part; Z: its real part */
        if (ts == 4 || g->type == BLASFT_TYPE_C)
            ((float *)el)[g->type == BLASFT_TYPE_C] += 1e4f;
        else
            *(double *)el += 1e4;
    }
}

/* Every allocation of one configuration's GEMM fails once; returns how many runs that took.
 * big: a shape over ABFT_PARALLEL_MIN, whose passes run on the engine's threads where the host
 * BLAS has two or more. */
static int sweep_shape(blasft_type t, blasft_config cfg, double beta, int big)
{
    int n = 1;
    for (;; n++) {
        tgemm x = big ? make(t, 'T', 'N', 150, 131, 140, 1, 1.25, beta, -1.0, 1.0)
                      : make(t, 'N', 'T', 97, 83, 131, 2, 1.25, beta, -1.0, 1.0);
        blasft_abft_set_plant_hook(plant, NULL);
        fail_alloc_arm(n);
        blasft_abft_diag d;
        const int rc = blasft_abft_run(&x.g, &cfg, &d, 0);
        const int hit = fail_alloc_disarm();
        blasft_abft_set_plant_hook(NULL, NULL);
        if (rc != 0) {
            /* refused: C as it was (with beta = 0 not read), and the caller's plain GEMM exact */
            if (beta != 0.0) {
                if (memcmp(x.c, x.c0, (size_t)x.csize * (size_t)blasft_type_size(t)) != 0)
                    fprintf(stderr, "FAIL %c th %d allocation %d: refused with C changed\n",
                            blasft_type_letter(t), (int)cfg.threshold, n);
                assert_memory_equal(x.c, x.c0, (size_t)x.csize * (size_t)blasft_type_size(t));
            }
            blasft_host_gemm(&x.g);
            assert_int_equal(compare_oracle(&x, 2.0), 0);
        } else if (cfg.mode == BLASFT_MODE_DETECT) {
            /* the planted errors stay in C, but they must have been reported */
            if (d.detected + d.uncorrectable == 0)
                fprintf(stderr, "FAIL %c th %d allocation %d: detect mode reported nothing\n",
                        blasft_type_letter(t), (int)cfg.threshold, n);
            assert_true(d.detected + d.uncorrectable > 0);
        } else {
            if (compare_oracle(&x, 2.0 * cfg.block_size) != 0)
                fprintf(stderr, "FAIL %c th %d allocation %d: C wrong after a failed allocation\n",
                        blasft_type_letter(t), (int)cfg.threshold, n);
            assert_int_equal(compare_oracle(&x, 2.0 * cfg.block_size), 0);
        }
        drop(&x);
        if (!hit)
            return n; /* this run made fewer than n allocations: all were failed once */
        assert_true(n < 100000);
    }
}

static int sweep(blasft_type t, blasft_config cfg, double beta)
{
    return sweep_shape(t, cfg, beta, 0);
}

static void test_allocations_fail_in_turn(void **state)
{
    (void)state;
    const blasft_type types[] = {BLASFT_TYPE_S, BLASFT_TYPE_D, BLASFT_TYPE_C, BLASFT_TYPE_Z};
    const blasft_threshold ths[] = {BLASFT_THRESHOLD_PEA, BLASFT_THRESHOLD_PROJ,
                                    BLASFT_THRESHOLD_NORM, BLASFT_THRESHOLD_SEA};
    int runs = 0;
    for (int ti = 0; ti < 4; ti++)
        for (int hi = 0; hi < 4; hi++)
            for (int b = 0; b < 2; b++) {
                blasft_config cfg = abft_t_cfg(32, 1 + (ti + hi) % 2);
                cfg.threshold = ths[hi];
                runs += sweep(types[ti], cfg, b ? 0.5 : 0.0);
            }
    /* detect mode: nothing corrected, everything reported */
    for (int ti = 1; ti < 4; ti += 2)
        for (int hi = 0; hi < 2; hi++)
            for (int b = 0; b < 2; b++) {
                blasft_config cfg = abft_t_cfg(32, 2);
                cfg.threshold = ths[hi];
                cfg.mode = BLASFT_MODE_DETECT;
                runs += sweep(types[ti], cfg, b ? 0.5 : 0.0);
            }
    /* the passes on threads */
    for (int ti = 1; ti < 4; ti += 2)
        for (int hi = 0; hi < 2; hi++) {
            blasft_config cfg = abft_t_cfg(64, 2);
            cfg.threshold = ths[hi];
            runs += sweep_shape(types[ti], cfg, 0.5, 1);
        }
    /* S and C computed in double */
    blasft_config cfg = abft_t_cfg(32, 2);
    cfg.promote = BLASFT_PROMOTE_ON;
    runs += sweep(BLASFT_TYPE_S, cfg, 0.5);
    runs += sweep(BLASFT_TYPE_C, cfg, 0.0);
    printf("%d GEMMs, each with one of its allocations failed\n", runs);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_allocations_fail_in_turn),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
