/* S and C GEMMs computed in double (BLASFT_PROMOTE=on, src/abft/abft_promote.c): on random shapes
 * every element is one rounding from the exact product (the long-double oracle); faults of FP32
 * size planted in the double result, and sign and exponent flips of elements that nearly cancel,
 * are found and corrected; events name the caller's type; non-finite input is left to the plain
 * GEMM with C untouched. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "abft/abft_engine.h"
#include "abft/abft_inject.h"
#include "abft_test_gemm.h"
#include "abft_test_util.h"

static blasft_config promoted_cfg(int bs, int checksums)
{
    blasft_config c = abft_t_cfg(bs, checksums);
    c.promote = BLASFT_PROMOTE_ON;
    return c;
}

/* One rounding to float of a double-precision product: 2^-24 |exact| per part, plus the double
 * GEMM's own error. */
static int one_rounding(const tgemm *x) { return compare_oracle_tol(x, 4.0, 0x1p-53, 0x1p-24, 0.0); }

static void test_shapes_one_rounding(void **state)
{
    (void)state;
    const int64_t dims[] = {0, 1, 2, 7, 13, 31, 64, 97, 130};
    const char tr[] = {'N', 'T', 'C'};
    const int bss[] = {2, 3, 8, 32, 128};
    const double ab[][2] = {{1, 0}, {1, 1}, {-0.75, 0}, {2.5, -1.25}, {0, 1.5}};
    const blasft_threshold ths[] = {BLASFT_THRESHOLD_PEA, BLASFT_THRESHOLD_SEA,
                                    BLASFT_THRESHOLD_NORM, BLASFT_THRESHOLD_PROJ};
    for (int trial = 0; trial < 240; trial++) {
        blasft_type t = trial % 2 ? BLASFT_TYPE_C : BLASFT_TYPE_S;
        int ai = (int)(urand() * 5);
        tgemm x = make(t, tr[(int)(urand() * 3)], tr[(int)(urand() * 3)], dims[(int)(urand() * 9)],
                       dims[(int)(urand() * 9)], dims[(int)(urand() * 9)], (int64_t)(urand() * 3),
                       ab[ai][0], ab[ai][1], urand() < 0.5 ? 0.0 : -1.0, 1.0);
        blasft_config cfg = promoted_cfg(bss[(int)(urand() * 5)], 1 + (trial / 2) % 2);
        cfg.threshold = ths[(trial / 4) % 4];
        cfg.weights = (blasft_weights)(int)(urand() * 6);
        blasft_abft_diag d;
        int rc = blasft_abft_run(&x.g, &cfg, &d, 0);
        int bad = one_rounding(&x);
        if (rc || d.detected || d.false_alarms || bad)
            fprintf(stderr, "FAIL %c %c%c %lldx%lldx%lld ld+%lld bs %d r %d th %d: rc %d det %llu bad %d\n",
                    blasft_type_letter(t), x.g.transa, x.g.transb, (long long)x.g.m,
                    (long long)x.g.n, (long long)x.g.k, (long long)(x.g.ldc - x.g.m),
                    cfg.block_size, cfg.checksums, (int)cfg.threshold, rc,
                    (unsigned long long)d.detected, bad);
        assert_int_equal(rc, 0);
        /* a GEMM without a product (k = 0, alpha = 0) is C = beta C, not checked */
        assert_int_equal(d.protected_run,
                         !(x.g.m > 0 && x.g.n > 0 &&
                           (x.g.k == 0 || (x.g.alpha[0] == 0.0 && x.g.alpha[1] == 0.0))));
        assert_int_equal(d.detected + d.false_alarms + d.corrected + d.blocks_recomputed, 0);
        assert_int_equal(bad, 0);
        drop(&x);
    }
}

/* Planted by hand: bit `bit` of one element's value as a float, in the engine's double C. */
typedef struct float_flip {
    int64_t i, j;
    int bit;
    int seen_double; /* the hook saw the D/Z GEMM it was promoted to */
} float_flip;

static void flip_hook(const blasft_gemm *g, void *user)
{
    float_flip *f = user;
    f->seen_double = g->type == BLASFT_TYPE_D || g->type == BLASFT_TYPE_Z;
    if (!f->seen_double)
        return;
    double *e = (double *)g->c + (g->type == BLASFT_TYPE_Z ? 2 : 1) * (f->i + f->j * g->ldc);
    *e = blasft_flip_float_bit_of(*e, f->bit);
}

static char event_type;
static int event_count;
static void note_event(const blasft_event *ev, void *user)
{
    (void)user;
    event_type = ev->type;
    event_count++;
}

/* Every bit of an FP32 element, mantissa bit 0 included, changes it by far more than the double
 * thresholds: detected, located and corrected, the result as without the fault to within one
 * float rounding; the events say S or C. */
static void test_float_flips_found(void **state)
{
    (void)state;
    const int bits[] = {0, 3, 8, 12, 16, 20, 22, 23, 26, 30, 31};
    for (int ti = 0; ti < 2; ti++)
        for (int r = 1; r <= 2; r++)
            for (size_t b = 0; b < sizeof bits / sizeof bits[0]; b++) {
                blasft_type t = ti ? BLASFT_TYPE_C : BLASFT_TYPE_S;
                tgemm x = make(t, 'N', 'T', 96, 80, 300, 1, 1.0, 0.5, -1.0, 1.0);
                blasft_config cfg = promoted_cfg(32, r);
                const int64_t i = 37 + (int64_t)b, j = 41;
                float_flip f = {i, j, bits[b], 0};
                blasft_abft_set_plant_hook(flip_hook, &f);
                event_count = 0;
                event_type = 0;
                blasft_set_event_callback(note_event, NULL);
                blasft_abft_diag d;
                assert_int_equal(blasft_abft_run(&x.g, &cfg, &d, 0), 0);
                blasft_abft_set_plant_hook(NULL, NULL);
                blasft_set_event_callback(NULL, NULL);
                if (d.corrected != 1)
                    fprintf(stderr, "%c r %d bit %d: detected %llu corrected %llu recomputed %llu\n",
                            blasft_type_letter(t), r, bits[b], (unsigned long long)d.detected,
                            (unsigned long long)d.corrected,
                            (unsigned long long)d.blocks_recomputed);
                assert_true(f.seen_double);
                assert_true(d.detected >= 1);
                assert_int_equal(d.corrected, 1);
                assert_int_equal(d.blocks_recomputed + d.uncorrectable, 0);
                assert_int_equal(event_count, 1);
                assert_int_equal(event_type, blasft_type_letter(t));
                assert_int_equal(one_rounding(&x), 0);
                drop(&x);
            }
}

/* A and B whose products cancel in pairs (b_{2t+1,j} = b_{2t,j}, a_{i,2t+1} = -a_{i,2t} (1 + d),
 * d up to 1e-4): |c| is about 1e-4 of the sum of the terms' magnitudes, below what a checksum of
 * FP32 results can resolve, so the native path misses sign flips here
 * (docs/campaign-host.md). */
static tgemm cancelling(blasft_type t, int64_t m, int64_t n, int64_t k)
{
    tgemm x = make(t, 'N', 'N', m, n, k, 0, 1.0, 0.0, 0.5, 1.0);
    const int P = blasft_type_is_complex(t) ? 2 : 1;
    float *a = x.a, *b = x.b;
    for (int64_t kk = 0; kk + 1 < k; kk += 2)
        for (int p = 0; p < P; p++) {
            for (int64_t i = 0; i < m; i++)
                a[P * (i + (kk + 1) * m) + p] =
                    -a[P * (i + kk * m) + p] * (float)(1.0 + 1e-4 * urand());
            for (int64_t j = 0; j < n; j++)
                b[P * (kk + 1 + j * k) + p] = b[P * (kk + j * k) + p];
        }
    return x;
}

static void test_sign_and_exponent_flips_on_cancelling_data(void **state)
{
    (void)state;
    const char *const specs[] = {"bits=sign,site=output", "bits=sign,site=inner",
                                 "bits=exponent,site=output", "bits=exponent,site=inner"};
    for (int ti = 0; ti < 2; ti++)
        for (int s = 0; s < 4; s++)
            for (int seed = 0; seed < 25; seed++) {
                blasft_type t = ti ? BLASFT_TYPE_C : BLASFT_TYPE_S;
                tgemm x = cancelling(t, 70, 66, 400);
                blasft_config cfg = promoted_cfg(32, 1 + seed % 2);
                snprintf(cfg.inject, sizeof cfg.inject, "faults=1,%s,seed=%d", specs[s], seed);
                blasft_abft_diag d;
                assert_int_equal(blasft_abft_run(&x.g, &cfg, &d, 0), 0);
                if (d.detected == 0 || one_rounding(&x) != 0)
                    fprintf(stderr, "%c %s seed %d: injected %llu detected %llu\n",
                            blasft_type_letter(t), specs[s], seed,
                            (unsigned long long)d.faults_injected, (unsigned long long)d.detected);
                assert_int_equal(d.faults_injected, 1);
                assert_true(d.detected >= 1);
                assert_int_equal(d.uncorrectable, 0);
                assert_int_equal(one_rounding(&x), 0);
                drop(&x);
            }
}

/* site=encoder on a promoted GEMM: one copy of the encoding corrupted at FP32 bit positions (placed
 * in the double's fields of the same kind), found by the redundant computation. */
static void test_encoder_fault_found(void **state)
{
    (void)state;
    for (int seed = 0; seed < 10; seed++) {
        tgemm x = make(BLASFT_TYPE_S, 'T', 'N', 64, 64, 64, 0, 1.0, 0.0, 0.5, 1.0);
        blasft_config cfg = promoted_cfg(32, 1);
        snprintf(cfg.inject, sizeof cfg.inject, "faults=1,bits=any,site=encoder,seed=%d", seed);
        blasft_abft_diag d;
        assert_int_equal(blasft_abft_run(&x.g, &cfg, &d, 0), 0);
        assert_int_equal(d.faults_injected, 1);
        assert_true(d.encoder_faults >= 1);
        assert_int_equal(d.detected, 0);
        assert_int_equal(one_rounding(&x), 0);
        drop(&x);
    }
}

/* Inf or NaN in A, or in the old C with beta != 0: not protected (the caller runs the plain GEMM),
 * and C is not touched. */
static void test_nonfinite_left_to_plain_gemm(void **state)
{
    (void)state;
    for (int ti = 0; ti < 2; ti++)
        for (int where = 0; where < 2; where++) {
            blasft_type t = ti ? BLASFT_TYPE_C : BLASFT_TYPE_S;
            tgemm x = make(t, 'N', 'N', 40, 33, 20, 2, 1.0, where ? 0.5 : 0.0, -1.0, 1.0);
            float *p = where ? x.c : x.a;
            p[5] = where ? NAN : INFINITY;
            if (where)
                memcpy(x.c0, x.c, (size_t)(x.csize * blasft_type_size(t)));
            blasft_config cfg = promoted_cfg(16, 2);
            blasft_abft_diag d;
            assert_int_equal(blasft_abft_run(&x.g, &cfg, &d, 0), -1);
            assert_memory_equal(x.c, x.c0, (size_t)(x.csize * blasft_type_size(t)));
            drop(&x);
        }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shapes_one_rounding),
        cmocka_unit_test(test_float_flips_found),
        cmocka_unit_test(test_sign_and_exponent_flips_on_cancelling_data),
        cmocka_unit_test(test_encoder_fault_found),
        cmocka_unit_test(test_nonfinite_left_to_plain_gemm),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
