/* Host ABFT engine: arithmetic header, protected GEMM against a long-double oracle on random
 * shapes (no false positives), faults planted by hand and by BLASFT_INJECT with exact outcomes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "abft/abft_arith.h"
#include "abft/abft_engine.h"
#include "abft/abft_inject.h"
#include "abft/abft_keep.h"
#include "abft/abft_kernels.h"
#include "abft_test_gemm.h"
#include "abft_test_util.h"
#include "gemm.h"

#include <float.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---- arithmetic header ---- */

static void test_weights_and_locate(void **state)
{
    (void)state;
    assert_true(blasft_weight(BLASFT_W_LINEAR, 4, 32) == 5.0);
    assert_true(blasft_weight(BLASFT_W_MDR, 3, 32) == 4.0 / 32.0);
    assert_true(blasft_weight(BLASFT_W_EXPONENTIAL, 2, 32) == 8.0);
    assert_true(blasft_weight(BLASFT_W_PERIODIC, 3, 32) == -1.0);
    assert_true(blasft_weight(BLASFT_W_AVERAGE, 3, 32) == 1.0 / 32.0);
    assert_true(isfinite(blasft_weight(BLASFT_W_EXPONENTIAL, 1023, 1024)));
    int schemes[] = {BLASFT_W_LINEAR, BLASFT_W_MDR, BLASFT_W_EXPONENTIAL};
    int sizes[] = {2, 7, 32, 100, 1024};
    for (int s = 0; s < 3; s++)
        for (int z = 0; z < 5; z++)
            for (int i = 0; i < sizes[z]; i++) {
                double e = -3.7e-3 * (1 + urand());
                double su = -e, sw = -e * blasft_weight(schemes[s], i, sizes[z]);
                assert_int_equal(blasft_locate(schemes[s], su, sw, sizes[z], sizes[z]), i);
            }
    /* two errors in one vector give a ratio between positions: not located */
    assert_int_equal(blasft_locate(BLASFT_W_LINEAR, 2.0, 7.0, 8, 8), -1); /* ratio 3.5 */
    assert_int_equal(blasft_locate(BLASFT_W_LINEAR, 1.0, 9.0, 8, 8), -1); /* beyond the block */
    assert_int_equal(blasft_locate(BLASFT_W_NORMAL, 1.0, 1.0, 8, 8), -1);
    assert_int_equal(blasft_locate(BLASFT_W_LINEAR, 0.0, 1.0, 8, 8), -1);
    assert_int_equal(blasft_locate(BLASFT_W_LINEAR, NAN, 1.0, 8, 8), -1);
}

static void test_pea_sea(void **state)
{
    (void)state;
    /* eq. 5.41 with n = 1: sqrt((1*2*1.5 + 2)/24) y 2^-t */
    assert_true(fabs(blasft_pea_sigma(1, 1, 0, 0) - sqrt(5.0 / 24.0)) < 1e-15);
    assert_true(fabs(blasft_pea_sigma(1, 1, 0, 1) - sqrt(3.0 / 24.0)) < 1e-15);
    assert_true(fabs(blasft_pea_sigma(10, 2, 3, 0) - sqrt((10 * 11 * 10.5 + 20) / 24.0) * 2 / 8) < 1e-13);
    assert_true(fabs(blasft_sea_eps(10, 4, 2, 3, 5, 0.5) - ((10 + 8 - 2) * 2 * 3 + 10 * 5 * 2) * 0.5) < 1e-12);
    assert_true(fabs(blasft_pea_eps(3, 2, 4, 0) - 12.0) < 1e-12);
    assert_true(blasft_blas_var_add(2.0, 1) == 0.125 * 0.25 * 4.0);
    /* top-p bound: y >= max |a_k b_k| on random vectors, and exact when p covers everything */
    for (int trial = 0; trial < 2000; trial++) {
        int n = 1 + (int)(urand() * 40), p = 1 + (int)(urand() * 5);
        double a[40], b[40], av[8], bv[8];
        int64_t ap[8], bp[8];
        int na = 0, nb = 0;
        double truth = 0;
        for (int k = 0; k < n; k++) {
            a[k] = urand() < 0.1 ? 0 : urand();
            b[k] = urand() * 10;
            truth = fmax(truth, a[k] * b[k]);
            na = blasft_topp_insert(av, ap, na, p, a[k], k);
            nb = blasft_topp_insert(bv, bp, nb, p, b[k], k);
        }
        for (int i = 1; i < na; i++)
            assert_true(av[i - 1] >= av[i]);
        double y = blasft_pea_y(av, ap, na, n <= p, bv, bp, nb, n <= p);
        assert_true(y >= truth);
        if (n <= p)
            assert_true(y == truth);
    }
}

static void test_correct_rule_and_csum(void **state)
{
    (void)state;
    assert_false(blasft_correct_by_recompute(1.0 + 1e-9, -1e-9, 1e-12)); /* small: subtract */
    assert_true(blasft_correct_by_recompute(1e300, -1e300 + 1.0, 1e-12)); /* exponent flip up */
    assert_true(blasft_correct_by_recompute(1e-300, 1.0, 1e-12));         /* exponent flip down */
    assert_true(blasft_correct_by_recompute(NAN, 1.0, 1e-12));
    assert_true(blasft_correct_by_recompute(INFINITY, 1.0, 1e-12));
    /* near its threshold the syndrome is partly rounding: recompute */
    assert_true(blasft_correct_by_recompute(1.0 + 1e-9, -1e-9, 2e-10));
    assert_false(blasft_correct_by_recompute(1.0 + 1e-9, -1e-9, 1e-10));
    /* second computations beyond the range (blasft_parts_agree) */
    const double dmax = blasft_largest(0x1p-53), fmax_ = blasft_largest(0x1p-24);
    assert_true(dmax == DBL_MAX && fmax_ == FLT_MAX);
    assert_true(blasft_parts_agree(1.0, 1.0 + 1e-15, 1e-14, dmax));
    assert_false(blasft_parts_agree(1.0, 1.0 + 1e-13, 1e-14, dmax));
    assert_false(blasft_parts_agree(NAN, 1.0, 1e-14, dmax));          /* NaN against a value */
    assert_false(blasft_parts_agree(INFINITY, 3e307, 1e292, dmax));   /* an overflow of the BLAS */
    assert_true(blasft_parts_agree(INFINITY, DBL_MAX, 1e292, dmax));  /* an overflow in rounding */
    assert_false(blasft_parts_agree(-INFINITY, DBL_MAX, 1e292, dmax)); /* of the other sign */
    assert_true(blasft_parts_agree(-INFINITY, -FLT_MAX, 1e31, fmax_));
    assert_true(blasft_parts_agree(INFINITY, NAN, 0.0, dmax));        /* v cannot judge */
    assert_true(blasft_parts_agree(1.0, -INFINITY, 0.0, dmax));
    assert_true(blasft_parts_agree(NAN, NAN, 0.0, dmax));
    blasft_csum s = {0, 0};
    blasft_csum_add(&s, 1.0);
    blasft_csum_add(&s, 1e-20);
    blasft_csum_add(&s, -1.0);
    assert_true(blasft_csum_value(&s) == 1e-20);
}

/* ---- random shapes: results match the oracle and nothing is flagged ---- */

static void run_shape(blasft_type t, char ta, char tb, int64_t m, int64_t n, int64_t k, int64_t pad,
                      double alpha, double beta, int bs, int checksums, blasft_threshold th,
                      blasft_weights w, double lo)
{
    tgemm x = make(t, ta, tb, m, n, k, pad, alpha, beta, lo, 1.0);
    blasft_config cfg = abft_t_cfg(bs, checksums);
    cfg.threshold = th;
    cfg.weights = w;
    blasft_abft_diag d;
    int rc = blasft_abft_run(&x.g, &cfg, &d, 0);
    if (rc != 0 || d.detected != 0 || compare_oracle(&x, 2.0) != 0)
        fprintf(stderr, "FAIL %c %c%c m=%lld n=%lld k=%lld pad=%lld a=%g b=%g bs=%d r=%d th=%d w=%d: "
                "rc %d detected %llu\n", blasft_type_letter(t), ta, tb, (long long)m, (long long)n,
                (long long)k, (long long)pad, alpha, beta, bs, checksums, (int)th, (int)w, rc,
                (unsigned long long)d.detected);
    assert_int_equal(rc, 0);
    /* a GEMM without a product (k = 0, alpha = 0) is C = beta C, not checked */
    assert_int_equal(d.protected_run,
                     !(m > 0 && n > 0 &&
                       (k == 0 || (x.g.alpha[0] == 0.0 && x.g.alpha[1] == 0.0))));
    assert_int_equal(d.detected, 0);
    assert_int_equal(d.false_alarms, 0); /* two-tier methods: not even the first tier flagged */
    assert_int_equal(d.corrected + d.blocks_recomputed + d.uncorrectable, 0);
    assert_int_equal(compare_oracle(&x, 2.0), 0);
    drop(&x);
}

/* trials GEMMs of random shape, transposes, padding, alpha/beta, block size, checksums and
 * weights, every type, under threshold method th (other in a share of them); run_shape checks each */
static void random_shapes(int trials, blasft_threshold th, blasft_threshold other, double other_share)
{
    const int64_t dims[] = {0, 1, 2, 7, 13, 31, 64, 97};
    const char tr[] = {'N', 'T', 'C'};
    const int bss[] = {2, 3, 8, 32, 128, 1024};
    const double ab[][2] = {{1, 0}, {1, 1}, {-0.75, 0}, {2.5, -1.25}, {0, 1.5}};
    for (int trial = 0; trial < trials; trial++) {
        blasft_type t = (blasft_type)(trial % 4);
        int64_t m = dims[(int)(urand() * 8)], n = dims[(int)(urand() * 8)], k = dims[(int)(urand() * 8)];
        int ai = (int)(urand() * 5);
        run_shape(t, tr[(int)(urand() * 3)], tr[(int)(urand() * 3)], m, n, k, (int64_t)(urand() * 3),
                  ab[ai][0], ab[ai][1], bss[(int)(urand() * 6)], 1 + (trial / 4) % 2,
                  urand() < other_share ? other : th, (blasft_weights)(int)(urand() * 6),
                  urand() < 0.5 ? 0.0 : -1.0);
    }
}

static void test_random_shapes(void **state)
{
    (void)state;
    random_shapes(300, BLASFT_THRESHOLD_PEA, BLASFT_THRESHOLD_SEA, 0.25);
    /* larger, ragged, both precisions */
    run_shape(BLASFT_TYPE_S, 'N', 'N', 301, 257, 400, 1, 1, 0, 32, 2, BLASFT_THRESHOLD_PEA, BLASFT_WEIGHTS_LINEAR, -1);
    run_shape(BLASFT_TYPE_D, 'T', 'N', 263, 300, 511, 0, 1, 1, 64, 2, BLASFT_THRESHOLD_PEA, BLASFT_WEIGHTS_MDR, 0);
    run_shape(BLASFT_TYPE_Z, 'C', 'T', 130, 129, 200, 3, 1, 0, 100, 2, BLASFT_THRESHOLD_PEA, BLASFT_WEIGHTS_EXPONENTIAL, -1);
    run_shape(BLASFT_TYPE_C, 'N', 'C', 200, 70, 333, 0, 1, 0, 128, 1, BLASFT_THRESHOLD_PEA, BLASFT_WEIGHTS_LINEAR, 0);
}

/* ---- hot loops: the same sums, bit for bit, as the scalar definition ---- */

static double scalar_sum(const void *x, int single, int64_t stride, int64_t len, const double *w,
                         int prod)
{
    blasft_csum a = {0, 0};
    for (int64_t i = 0; i < len; i++) {
        double v = single ? ((const float *)x)[i * stride] : ((const double *)x)[i * stride];
        double p = w[i] * v;
        blasft_csum_add(&a, p);
        if (prod)
            blasft_csum_add(&a, fma(w[i], v, -p));
    }
    return blasft_csum_value(&a);
}

static void test_kernels_match_scalar(void **state)
{
    (void)state;
    enum { ROWS = 203, COLS = 11, LD = 600 };
    double *w = malloc(ROWS * sizeof *w), *out = malloc(2 * LD * sizeof *out);
    double *work = malloc((2 * LD + 2048) * sizeof *work);
    double *md = malloc((size_t)LD * COLS * sizeof *md);
    float *mf = malloc((size_t)LD * COLS * sizeof *mf);
    for (int64_t q = 0; q < (int64_t)LD * COLS; q++) {
        /* wide dynamic range and both signs, so rounding errors are everywhere */
        md[q] = (urand() - 0.5) * exp2(40.0 * urand() - 20.0);
        mf[q] = (float)md[q];
    }
    for (int single = 0; single < 2; single++) {
        const void *m = single ? (const void *)mf : (const void *)md;
        const int es = single ? 4 : 8;
        for (int prod = 0; prod < 2; prod++) {
            for (int i = 0; i < ROWS; i++)
                w[i] = prod ? blasft_weight(BLASFT_W_EXPONENTIAL, i % 60, 60) * (1.0 + urand())
                            : 1.0;
            for (int stride = 1; stride <= 2; stride++)
                for (int64_t len = 0; len <= ROWS / stride; len += len < 9 ? 1 : 37) {
                    const void *base[ABFT_K_STREAMS];
                    for (int q = 0; q < ABFT_K_STREAMS; q++)
                        base[q] = (const char *)m + ((q * 3 % COLS) * LD + q % 2) * es;
                    double o[ABFT_K_STREAMS];
                    abft_k_down(base, single, stride, len, w, prod, o);
                    for (int q = 0; q < ABFT_K_STREAMS; q++) {
                        double want = scalar_sum(base[q], single, stride, len, w, prod);
                        assert_memory_equal(&o[q], &want, sizeof want);
                    }
                }
            for (int64_t cols = 0; cols <= COLS; cols += 1) {
                int64_t nreal = cols % 2 ? ROWS : LD; /* LD: more rows than one chunk (512) */
                abft_k_across(m, single, LD, nreal, cols, w, prod, out, work);
                for (int64_t ri = 0; ri < nreal; ri++) {
                    double want = scalar_sum((const char *)m + ri * es, single, LD, cols, w, prod);
                    assert_memory_equal(&out[ri], &want, sizeof want);
                }
            }
        }
    }
    /* magnitudes, entry test, envelope and maximum */
    double lmin[ROWS], env[ROWS], mags[ROWS];
    for (int i = 0; i < ROWS; i++) {
        lmin[i] = i == 150 ? fabs(md[150]) * 0.5 : 1e300;
        env[i] = 0;
    }
    double mx = 0, want = 0;
    assert_true(abft_k_mags(md, 0, 1, ROWS, lmin, 1, mags, env, &mx));
    for (int i = 0; i < ROWS; i++) {
        assert_true(mags[i] == fabs(md[i]) && env[i] == mags[i]);
        want = fmax(want, mags[i]);
    }
    assert_true(mx == want);
    lmin[0] = 1e300;
    assert_false(abft_k_mags(mf, 1, 2, ROWS / 2, lmin, 0, mags, NULL, NULL));
    for (int i = 0; i < ROWS / 2; i++)
        assert_true(mags[i] == fmax(fabs((double)mf[2 * i]), fabs((double)mf[2 * i + 1])));
    free(w);
    free(out);
    free(work);
    free(md);
    free(mf);
}

/* ---- planted faults ---- */

typedef struct plant {
    int n;
    int64_t i[8], j[8];
    int part[8];
    double value[8];      /* replacement value (NaN/Inf allowed) */
    double mul[8];        /* or, when value is 0: multiply the element by mul */
    double add[8];        /* ... and add this */
} plant;

static void plant_fn(const blasft_gemm *g, void *user)
{
    const plant *p = user;
    for (int q = 0; q < p->n; q++) {
        int64_t idx = p->i[q] + p->j[q] * g->ldc;
        double v = p->value[q] != 0.0 ? p->value[q]
                                      : abft_ld(g->c, g->type, idx, p->part[q]) * p->mul[q] + p->add[q];
        abft_st(g->c, g->type, idx, p->part[q], v);
    }
}

static int events[8];
static int f1_events, f2_events; /* corrections of extended localization's classes F1, F2 */
static int64_t last_row = -1, last_col = -1; /* element of the last event */
static char last_action[32];
static int64_t last_brow = -2, last_bcol = -2; /* block of the last event */
static void count_event(const blasft_event *ev, void *user)
{
    (void)user;
    events[ev->kind]++;
    last_row = ev->row;
    last_col = ev->col;
    last_brow = ev->block_row;
    last_bcol = ev->block_col;
    snprintf(last_action, sizeof last_action, "%s", ev->action ? ev->action : "");
    f1_events += !strcmp(last_action, "corrected (F1)");
    f2_events += !strcmp(last_action, "corrected (F2)");
}

static blasft_threshold planted_threshold = BLASFT_THRESHOLD_PEA;

/* Runs a protected GEMM on positive data with the planted faults, returns the diag. */
static blasft_abft_diag run_planted(blasft_type t, int bs, int checksums, blasft_mode mode,
                                    blasft_on_error on_error, plant *p, int expect_oracle)
{
    tgemm x = make(t, 'N', 'T', 3 * bs, 2 * bs + 1, 50, 1, 1.0, 0.5, 0.5, 1.0);
    blasft_config cfg = abft_t_cfg(bs, checksums);
    cfg.mode = mode;
    cfg.on_error = on_error;
    cfg.threshold = planted_threshold;
    blasft_abft_set_plant_hook(plant_fn, p);
    memset(events, 0, sizeof events);
    f1_events = f2_events = 0;
    blasft_set_event_callback(count_event, NULL);
    blasft_abft_diag d;
    assert_int_equal(blasft_abft_run(&x.g, &cfg, &d, 1), 0);
    blasft_abft_set_plant_hook(NULL, NULL);
    blasft_set_event_callback(NULL, NULL);
    /* a corrected element carries the rounding of the others in its block vector */
    if (expect_oracle)
        assert_int_equal(compare_oracle(&x, 2.0 * bs), 0);
    else
        assert_true(compare_oracle(&x, 2.0 * bs) > 0);
    size_t flagged = 0;
    for (size_t q = 0; q < d.count; q++)
        flagged += d.checks_list[q].flagged;
    assert_true(flagged > 0);
    blasft_abft_diag_free(&d);
    drop(&x);
    return d;
}

static plant one(int64_t i, int64_t j, double value, double mul)
{
    plant p;
    memset(&p, 0, sizeof p);
    p.n = 1;
    p.i[0] = i;
    p.j[0] = j;
    p.value[0] = value;
    p.mul[0] = mul;
    return p;
}

/* Under threshold method `method`, one planted fault of each kind (small, sign, large, NaN, Inf;
 * either part of complex data) in every type is detected and corrected in place. */
static void planted_faults_corrected(blasft_threshold method)
{
    planted_threshold = method;
    for (int t = 0; t < 4; t++) {
        double values[] = {0, 0, 0, NAN, INFINITY};
        double muls[] = {1.001, -1.0, 0x1p40, 0, 0};
        for (int v = 0; v < 5; v++) {
            plant p = one(9, 20, values[v], muls[v]);
            p.part[0] = t >= 2 ? v % 2 : 0;
            blasft_abft_diag d = run_planted((blasft_type)t, 16, 1, BLASFT_MODE_CORRECT,
                                             BLASFT_ON_ERROR_RECOMPUTE, &p, 1);
            assert_int_equal(d.detected, 1);
            assert_int_equal(d.corrected, 1);
            assert_int_equal(d.false_alarms, 0);
            assert_int_equal(d.blocks_recomputed, 0);
        }
    }
    planted_threshold = BLASFT_THRESHOLD_PEA;
}

/* The vectorized top-p lists against blasft_topp_insert entry by entry: rows and columns, float
 * and double, ragged vector counts and lengths, p 1..8, and data with ties (few distinct
 * magnitudes) where the insertion order decides which position stays. */
static void test_topp_kernel_matches_insert(void **state)
{
    (void)state;
    enum { NV = 23, K = 77, LD = 90, PMAX = 8 };
    double *md = malloc((size_t)LD * LD * sizeof *md);
    float *mf = malloc((size_t)LD * LD * sizeof *mf);
    double vals[NV * PMAX], want_v[NV * PMAX], env[LD], want_env[LD];
    int64_t pos[NV * PMAX], want_p[NV * PMAX];
    int cnt[NV], want_c[NV];
    void *work = malloc((NV / 4) * PMAX * 64 + 32);
    uint64_t st = 12345;
    for (int ties = 0; ties < 2; ties++) {
        for (int64_t q = 0; q < (int64_t)LD * LD; q++) {
            st = st * 6364136223846793005ULL + 1442695040888963407ULL;
            double u = (double)(st >> 11) / 9007199254740992.0 * 2.0 - 1.0;
            if (ties)
                u = (double)((int)(u * 4.0)) / 4.0; /* magnitudes 0, 1/4, 1/2, 3/4 */
            md[q] = u;
            mf[q] = (float)u;
        }
        for (int single = 0; single < 2; single++)
            for (int by_col = 0; by_col < 2; by_col++)
                for (int p = 1; p <= PMAX; p++)
                    for (int64_t nv = 1; nv <= NV; nv += 7)
                        for (int64_t k = 0; k <= K; k += k < 9 ? 1 : 17) {
                            const void *x = single ? (const void *)mf : (const void *)md;
                            for (int64_t kk = 0; kk < LD; kk++)
                                env[kk] = want_env[kk] = by_col ? 0.5 * (double)(kk % 3) : -7.0;
                            for (int64_t v = 0; v < nv; v++) {
                                want_c[v] = 0;
                                for (int64_t kk = 0; kk < k; kk++) {
                                    int64_t at = by_col ? kk + v * LD : v + kk * LD;
                                    double m = fabs(single ? (double)mf[at] : md[at]);
                                    want_c[v] = blasft_topp_insert(want_v + v * p, want_p + v * p,
                                                                   want_c[v], p, m, kk);
                                    if (by_col || v > 0)
                                        want_env[kk] = fmax(want_env[kk], m);
                                    else
                                        want_env[kk] = m;
                                }
                            }
                            if (abft_k_topp(x, single, by_col, LD, nv, k, p, vals, pos, cnt, env,
                                            work) != 0) {
                                skip();
                                return;
                            }
                            for (int64_t v = 0; v < nv; v++) {
                                assert_int_equal(cnt[v], want_c[v]);
                                for (int e = 0; e < cnt[v]; e++) {
                                    assert_true(vals[v * p + e] == want_v[v * p + e]);
                                    assert_int_equal(pos[v * p + e], want_p[v * p + e]);
                                }
                            }
                            for (int64_t kk = 0; kk < k; kk++)
                                assert_true(env[kk] == want_env[kk]);
                        }
    }
    free(md);
    free(mf);
    free(work);
}

/* The engine's thread pool: every slice of both copies runs exactly once, the two copies of a
 * slice on different threads, also when two callers run at once (one of them then starts its
 * own threads) and across many runs of changing width. */
enum { SPLIT_N = 64 };
typedef struct split_rec {
    pthread_t who[SPLIT_N];
    int runs[SPLIT_N];
} split_rec;

static void split_mark(void *p, int64_t lo, int64_t hi)
{
    split_rec *r = p;
    for (int64_t i = lo; i < hi; i++) {
        r->who[i] = pthread_self();
        __atomic_add_fetch(&r->runs[i], 1, __ATOMIC_RELAXED);
    }
}

static void *split_caller(void *arg)
{
    int *bad = arg;
    for (int round = 0; round < 300; round++) {
        split_rec a, b;
        memset(&a, 0, sizeof a);
        memset(&b, 0, sizeof b);
        int threads = 2 + round % 9;
        int64_t n = 1 + round % SPLIT_N;
        abft_k_pair_split(threads, split_mark, &a, &b, n, (int64_t)threads * ABFT_K_MIN_WORK);
        for (int64_t i = 0; i < n; i++)
            if (a.runs[i] != 1 || b.runs[i] != 1 || pthread_equal(a.who[i], b.who[i]))
                (*bad)++;
        split_rec c;
        memset(&c, 0, sizeof c);
        abft_k_for(threads, split_mark, &c, n, (int64_t)threads * ABFT_K_MIN_WORK);
        for (int64_t i = 0; i < n; i++)
            if (c.runs[i] != 1)
                (*bad)++;
    }
    return NULL;
}

/* Kept buffers: the same memory again for the thread's next GEMM (grown when asked for more), a
 * separate one while the slot is lent, nothing kept above the limit; a thread's buffers are freed
 * when it exits (the sanitizer build's leak check). */
static void *keep_worker(void *arg)
{
    double *p = abft_keep_get(0, 4096), *q = abft_keep_get(1, 100);
    if (!p || !q)
        return NULL;
    p[4095] = q[99] = 1.0;
    abft_keep_put(0, p);
    abft_keep_put(1, q);
    *(int *)arg = abft_keep_get(0, 10) == p; /* reused */
    abft_keep_put(0, p);
    return NULL;
}

static void test_keep_buffers(void **state)
{
    (void)state;
    double *p = abft_keep_get(0, 1000);
    assert_non_null(p);
    p[999] = 1.0;
    abft_keep_put(0, p);
    double *q = abft_keep_get(0, 500);
    assert_ptr_equal(q, p);
    double *r = abft_keep_get(0, 500); /* slot lent: a plain buffer */
    assert_non_null(r);
    assert_ptr_not_equal(r, q);
    r[499] = 2.0;
    abft_keep_put(0, r);
    abft_keep_put(0, q);
    double *g = abft_keep_get(0, 1 << 20); /* grown */
    assert_non_null(g);
    g[(1 << 20) - 1] = 3.0;
    abft_keep_put(0, g);
    assert_ptr_equal(abft_keep_get(0, 1 << 20), g);
    abft_keep_put(0, g);
    const size_t big = ABFT_KEEP_MAX_BYTES / sizeof(double) + 1;
    double *h = abft_keep_get(1, big), *h2 = abft_keep_get(1, 16);
    assert_non_null(h);
    assert_non_null(h2);
    h[big - 1] = 4.0;
    abft_keep_put(1, h2); /* the slot was free: h2 is the kept one, h is not */
    abft_keep_put(1, h);
    assert_ptr_equal(abft_keep_get(1, 16), h2);
    abft_keep_put(1, h2);
    abft_keep_put(0, NULL);
    pthread_t t[4];
    int reused[4] = {0};
    for (int i = 0; i < 4; i++)
        assert_int_equal(pthread_create(&t[i], NULL, keep_worker, &reused[i]), 0);
    for (int i = 0; i < 4; i++) {
        pthread_join(t[i], NULL);
        assert_int_equal(reused[i], 1);
    }
}

static void test_pool_pairs_on_distinct_threads(void **state)
{
    (void)state;
    int bad0 = 0, bad1 = 0;
    split_caller(&bad0);
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, split_caller, &bad1), 0);
    split_caller(&bad0);
    pthread_join(t, NULL);
    assert_int_equal(bad0, 0);
    assert_int_equal(bad1, 0);
}

static void test_single_error_corrected(void **state)
{
    (void)state;
    for (int t = 0; t < 4; t++)
        for (int r = 1; r <= 2; r++) {
            /* small error: subtraction; sign flip, exponent flip, NaN, Inf: recomputation */
            double values[] = {0, 0, 0, NAN, INFINITY};
            double muls[] = {1.001, -1.0, 0x1p40, 0, 0};
            for (int v = 0; v < 5; v++) {
                plant p = one(9, 20, values[v], muls[v]);
                p.part[0] = t >= 2 ? v % 2 : 0;
                blasft_abft_diag d = run_planted((blasft_type)t, 16, r, BLASFT_MODE_CORRECT,
                                                 BLASFT_ON_ERROR_RECOMPUTE, &p, 1);
                if (d.corrected != 1)
                    fprintf(stderr, "type %d r %d case %d: detected %llu corrected %llu recomputed %llu\n",
                            t, r, v, (unsigned long long)d.detected, (unsigned long long)d.corrected,
                            (unsigned long long)d.blocks_recomputed);
                assert_int_equal(d.detected, 1);
                assert_int_equal(d.corrected, 1);
                assert_int_equal(d.blocks_recomputed, 0);
                assert_int_equal(events[BLASFT_EVENT_CORRECTED], 1);
                /* with two checksums a finite error is seen and placed by both sides: F2 */
                if (r == 2 && v < 3)
                    assert_string_equal(last_action, "corrected (F2)");
                else if (r == 1)
                    assert_string_equal(last_action, "corrected");
            }
        }
}

/* A narrow rank-k update (C of 300 x n, k = n = 1 to 3, beta 1, signed data: the trailing
 * updates of LAPACK's recursive LU): an error located by its column checksum and corrected by
 * subtraction would keep that checksum's rounding, beyond the threshold of its row (n elements
 * of k products), and the row was then recomputed and counted as a second correction (469
 * corrections for 400 faults in dgesv under LD_PRELOAD). Such an element is now recomputed
 * exactly at once: one error, one correction, no line recomputed. Every type, one and two
 * checksums, every thresholds method, errors of 2^-5 to 2^-12 added. */
static void test_narrow_error_corrected_once(void **state)
{
    (void)state;
    const blasft_threshold methods[] = {BLASFT_THRESHOLD_PEA, BLASFT_THRESHOLD_SEA,
                                        BLASFT_THRESHOLD_NORM, BLASFT_THRESHOLD_PROJ};
    for (int t = 0; t < 4; t++)
        for (int r = 1; r <= 2; r++)
            for (int n = 1; n <= 3; n++)
                for (int mth = 0; mth < 4; mth++)
                    for (int e = 5; e <= 12; e++) {
                        tgemm x = make((blasft_type)t, 'N', 'N', 300, n, n, 0, -1.0, 1.0, -1.0, 1.0);
                        blasft_config cfg = abft_t_cfg(128, r);
                        cfg.threshold = methods[mth];
                        plant p = one(140, n - 1, 0, 1.0);
                        p.add[0] = ldexp(1.0, -e);
                        blasft_abft_set_plant_hook(plant_fn, &p);
                        memset(events, 0, sizeof events);
                        blasft_set_event_callback(count_event, NULL);
                        blasft_abft_diag d;
                        assert_int_equal(blasft_abft_run(&x.g, &cfg, &d, 0), 0);
                        blasft_abft_set_plant_hook(NULL, NULL);
                        blasft_set_event_callback(NULL, NULL);
                        if (d.detected != 1 || d.corrected != 1)
                            fprintf(stderr, "type %d r %d n %d method %d 2^-%d: detected %llu corrected %llu\n",
                                    t, r, n, mth, e, (unsigned long long)d.detected,
                                    (unsigned long long)d.corrected);
                        assert_int_equal(compare_oracle(&x, 2.0 * 128), 0);
                        assert_int_equal(d.detected, 1);
                        assert_int_equal(d.corrected, 1);
                        assert_int_equal(d.uncorrectable + d.blocks_recomputed + d.false_alarms, 0);
                        assert_int_equal(events[BLASFT_EVENT_CORRECTED], 1);
                        assert_int_equal(events[BLASFT_EVENT_RECOMPUTED] + d.lines_recomputed, 0);
                        blasft_abft_diag_free(&d);
                        drop(&x);
                    }
}

/* The first-tier threshold of the unweighted column checksum over element (i, j)'s block, part. */
static double column_threshold(const blasft_abft_diag *d, int64_t i, int64_t j, int bs, int part)
{
    for (size_t q = 0; q < d->count; q++) {
        const blasft_abft_check *c = &d->checks_list[q];
        if (c->side == 0 && c->weighted == 0 && c->part == part && c->index == j &&
            c->block_row == i / bs)
            return c->threshold;
    }
    return NAN;
}

/* One fault planted at a random element of random shapes, narrow ones included (a dimension of
 * 1 to 3, as LAPACK's recursive panels make), every type, transposes, padding, alpha/beta, block
 * sizes, one and two checksums, every thresholds method. Every other trial the fault is a tenth
 * of the largest |C| the data allow (beyond every method's threshold), else that scaled down by
 * up to 2^-60. A detected fault is corrected once (in place or by recomputation), nothing is left
 * uncorrectable or called a false alarm, and C is right; an undetected one is at most twice the
 * threshold of the checksum over it (below it the checksum's own rounding can hide it). The big
 * faults must all be detected. */
static void test_planted_fault_random_shapes(void **state)
{
    (void)state;
    const int64_t dims[] = {1, 2, 3, 5, 17, 64, 97, 130};
    const char tr[] = {'N', 'T', 'C'};
    const int bss[] = {3, 8, 32, 128};
    const double ab[][2] = {{1, 0}, {-1, 1}, {0.75, 0.5}};
    const blasft_threshold methods[] = {BLASFT_THRESHOLD_PEA, BLASFT_THRESHOLD_SEA,
                                        BLASFT_THRESHOLD_NORM, BLASFT_THRESHOLD_PROJ};
    int scaled_detected = 0;
    for (int trial = 0; trial < 800; trial++) {
        const blasft_type t = (blasft_type)(trial % 4);
        const int64_t m = dims[(int)(urand() * 8)], n = dims[(int)(urand() * 8)],
                      k = dims[(int)(urand() * 8)];
        const int ai = (int)(urand() * 3), bs = bss[(int)(urand() * 4)], r = 1 + (trial / 4) % 2;
        const int mth = (int)(urand() * 4), big = trial % 2 == 0;
        tgemm x = make(t, tr[(int)(urand() * 3)], tr[(int)(urand() * 3)], m, n, k,
                       (int64_t)(urand() * 3), ab[ai][0], ab[ai][1], -1.0, 1.0);
        /* a tenth of the largest |C| an element can reach: k products of |alpha| plus |beta| */
        const double top = 0.1 * ((double)k * fabs(ab[ai][0]) + fabs(ab[ai][1]));
        plant p = one((int64_t)(urand() * (double)m), (int64_t)(urand() * (double)n), 0, 1.0);
        p.add[0] = ldexp(urand() < 0.5 ? top : -top, big ? 0 : -(int)(urand() * 61));
        p.part[0] = blasft_type_is_complex(t) ? (int)(urand() * 2) : 0;
        blasft_config cfg = abft_t_cfg(bs, r);
        cfg.threshold = methods[mth];
        blasft_abft_set_plant_hook(plant_fn, &p);
        blasft_abft_diag d;
        assert_int_equal(blasft_abft_run(&x.g, &cfg, &d, 1), 0);
        blasft_abft_set_plant_hook(NULL, NULL);
        const int wrong = compare_oracle(&x, 2.0 * bs);
        const double thr = column_threshold(&d, p.i[0], p.j[0], bs, p.part[0]);
        const int bad = d.detected ? wrong || d.corrected > 1 || d.uncorrectable || d.false_alarms ||
                                         d.corrected + d.blocks_recomputed + d.lines_recomputed < 1
                                   : big || !(fabs(p.add[0]) <= 2.0 * thr);
        if (bad)
            fprintf(stderr, "trial %d: %c %c%c %lldx%lldx%lld bs %d r %d method %d at (%lld, %lld) "
                    "+%g (threshold %g): wrong %d detected %llu corrected %llu blocks %llu lines "
                    "%llu uncorrectable %llu false alarms %llu\n", trial, blasft_type_letter(t),
                    x.g.transa, x.g.transb, (long long)m, (long long)n, (long long)k, bs, r, mth,
                    (long long)p.i[0], (long long)p.j[0], p.add[0], thr, wrong,
                    (unsigned long long)d.detected, (unsigned long long)d.corrected,
                    (unsigned long long)d.blocks_recomputed, (unsigned long long)d.lines_recomputed,
                    (unsigned long long)d.uncorrectable, (unsigned long long)d.false_alarms);
        assert_false(bad);
        scaled_detected += !big && d.detected;
        blasft_abft_diag_free(&d);
        drop(&x);
    }
    /* the scaled faults reached the detection limit from both sides */
    assert_true(scaled_detected > 100 && scaled_detected < 380);
}

static void fill_kind(void *p, blasft_type t, int64_t n, int kind)
{
    for (int64_t i = 0; i < n; i++) {
        double v;
        if (kind == 0)
            v = 0.5 + 0.5 * urand();
        else if (kind == 1)
            v = (urand() < 0.5 ? -1 : 1) * pow(10.0, 12.0 * urand() - 6.0);
        else /* pairs x, -x(1 + d): every dot product nearly cancels */
            v = (i & 1) ? -abft_ld(p, t, i - 1, 0) * (1.0 + 1e-4 * urand()) : 0.5 + urand();
        if (t == BLASFT_TYPE_S)
            ((float *)p)[i] = (float)v;
        else
            ((double *)p)[i] = v;
    }
}

/* NORM: random shapes and alpha/beta/transposes/padding as test_random_shapes; adversarial data
 * (all positive with long k, heavy-tailed over 12 decades, cancelling pairs) never flags a check,
 * and every threshold covers the syndrome it guards; planted faults are found by the exact second
 * tier and corrected. */
static void test_norm_threshold(void **state)
{
    (void)state;
    random_shapes(200, BLASFT_THRESHOLD_NORM, BLASFT_THRESHOLD_NORM, 0.0);
    for (int kind = 0; kind < 3; kind++)
        for (int ti = 0; ti < 2; ti++) {
            blasft_type t = ti ? BLASFT_TYPE_D : BLASFT_TYPE_S;
            tgemm x = make(t, 'N', 'N', 67, 61, 2048, 0, 1.0, 0.0, 0.0, 1.0);
            fill_kind(x.a, t, x.g.lda * 2048, kind);
            fill_kind(x.b, t, x.g.ldb * 61, kind);
            blasft_config cfg = abft_t_cfg(32, 2);
            cfg.threshold = BLASFT_THRESHOLD_NORM;
            blasft_abft_diag d;
            assert_int_equal(blasft_abft_run(&x.g, &cfg, &d, 1), 0);
            size_t flagged = 0;
            for (size_t q = 0; q < d.count; q++) {
                const blasft_abft_check *c = &d.checks_list[q];
                flagged += c->flagged;
                assert_true(fabs(c->reference - c->recomputed) <= c->threshold);
            }
            assert_int_equal(flagged, 0);
            assert_int_equal(d.detected + d.false_alarms + d.corrected, 0);
            blasft_abft_diag_free(&d);
            drop(&x);
        }
    planted_faults_corrected(BLASFT_THRESHOLD_NORM);
}

/* PROJ: data of one kind for A (m x k, lda) and B (k x n, ldb), real types: 0 uniform [-1, 1],
 * 1 uniform [0, 1], 2 heavy-tailed (12 decades, random sign), 3 cancelling pairs along k (A has
 * x, -x(1+d) in adjacent columns, B y, y(1+d') in adjacent rows). */
static double kind_value(int kind)
{
    if (kind == 0)
        return 2.0 * urand() - 1.0;
    if (kind == 1)
        return urand();
    if (kind == 2)
        return (urand() < 0.5 ? -1 : 1) * pow(10.0, 12.0 * urand() - 6.0);
    return (urand() < 0.5 ? -1 : 1) * (0.5 + urand());
}

static void fill_pairs(tgemm *x, int kind)
{
    blasft_gemm *g = &x->g;
    for (int64_t kk = 0; kk < g->k; kk++)
        for (int64_t i = 0; i < g->m; i++) {
            double v = kind == 3 && (kk & 1) ? -abft_ld(x->a, g->type, i + (kk - 1) * g->lda, 0) *
                                                   (1.0 + pow(10.0, -3.0 - 3.0 * urand()))
                                             : kind_value(kind);
            if (g->type == BLASFT_TYPE_S)
                ((float *)x->a)[i + kk * g->lda] = (float)v;
            else
                ((double *)x->a)[i + kk * g->lda] = v;
        }
    for (int64_t j = 0; j < g->n; j++)
        for (int64_t kk = 0; kk < g->k; kk++) {
            double v = kind == 3 && (kk & 1) ? abft_ld(x->b, g->type, kk - 1 + j * g->ldb, 0) *
                                                   (1.0 + pow(10.0, -3.0 - 3.0 * urand()))
                                             : kind_value(kind);
            if (g->type == BLASFT_TYPE_S)
                ((float *)x->b)[kk + j * g->ldb] = (float)v;
            else
                ((double *)x->b)[kk + j * g->ldb] = v;
        }
}

/* Oracle of the C side of a PROJ column-checksum threshold, in long double, by definition: the
 * data GEMM runs in slices of BLASFT_PROJ_SLICE along k; per slice, for the block's rows i with
 * weights w, the exact partial sums of each element from the slice's start accumulated in 1, 2,
 * 4 and 8 lanes; the slice's energy = largest over the lane counts of sum_i w_i^2 (sum_t lane
 * partial^2 + L(L-1) sum_lanes end^2); from the second slice on, plus sum_i w_i^2 (slice sum^2 +
 * prefix over all k so far^2) (the slice result scaled and added to C, which with beta != 0 also
 * holds beta c_old: the prefix then has (beta / alpha) c_old added); all slices summed, plus
 * sum_i w_i^2 (sum_t products^2 + 4 c_i^2), times alpha^2, plus 3 beta^2 sum_i w_i^2 c_old^2
 * (its scaling); the threshold omega sqrt(u^2/3 energy). */
static double proj_oracle_col(const tgemm *x, int64_t i0, int64_t len, const double *w, int64_t j)
{
    const blasft_gemm *g = &x->g;
    const int64_t S = BLASFT_PROJ_SLICE > 0 ? BLASFT_PROJ_SLICE : g->k;
    const int beta = g->beta[0] != 0.0 && g->alpha[0] != 0.0;
    long double total = 0, rest = 0, old = 0;
    for (int64_t p0 = 0; p0 < g->k; p0 += S) {
        int64_t p1 = p0 + S < g->k ? p0 + S : g->k;
        long double eh[4] = {0}, joins = 0;
        for (int64_t i = i0; i < i0 + len; i++) {
            long double lane[15] = {0}, el[4] = {0}, w2 = (long double)w[i - i0] * w[i - i0];
            long double prefix = beta ? (long double)g->beta[0] / g->alpha[0] *
                                            abft_ld(x->c0, g->type, i + j * g->ldc, 0)
                                      : 0;
            for (int64_t kk = 0; kk < p1; kk++) {
                long double p = (long double)abft_ld(x->a, g->type, i + kk * g->lda, 0) *
                                abft_ld(x->b, g->type, kk + j * g->ldb, 0);
                prefix += p;
                if (kk < p0)
                    continue;
                for (int h = 0; h < 4; h++) {
                    int li = (1 << h) - 1 + (int)((kk - p0) & ((1 << h) - 1));
                    lane[li] += p;
                    el[h] += lane[li] * lane[li];
                }
            }
            for (int h = 0; h < 4; h++) {
                long double L = 1 << h, ends = 0;
                for (int l = 0; l < (1 << h); l++)
                    ends += lane[(1 << h) - 1 + l] * lane[(1 << h) - 1 + l];
                eh[h] += w2 * (el[h] + L * (L - 1) * ends);
            }
            if (p0 > 0)
                joins += w2 * (lane[0] * lane[0] + prefix * prefix);
        }
        long double best = eh[0];
        for (int h = 1; h < 4; h++)
            if (eh[h] > best)
                best = eh[h];
        total += best + joins;
    }
    for (int64_t i = i0; i < i0 + len; i++) {
        long double pr = 0, full = 0, w2 = (long double)w[i - i0] * w[i - i0];
        for (int64_t kk = 0; kk < g->k; kk++) {
            long double p = (long double)abft_ld(x->a, g->type, i + kk * g->lda, 0) *
                            abft_ld(x->b, g->type, kk + j * g->ldb, 0);
            pr += p * p;
            full += p;
        }
        rest += w2 * (pr + 4 * full * full);
        if (beta) {
            long double c = abft_ld(x->c0, g->type, i + j * g->ldc, 0);
            old += w2 * c * c;
        }
    }
    double u = g->type == BLASFT_TYPE_S ? 0x1p-24 : 0x1p-53;
    long double a2 = (long double)g->alpha[0] * g->alpha[0], b2 = (long double)g->beta[0] * g->beta[0];
    return blasft_proj_omega(BLASFT_PROJ_FALSE_ALARM) * u *
           sqrt((double)((a2 * (total + rest) + 3 * b2 * old) / 3));
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* PROJ: random shapes, transposes, padding, alpha/beta, every type (complex keeps NORM's bounds)
 * without a single first-tier flag; the estimated energies against the long-double oracle (FP32,
 * where the double reference's share is 2^-58 of the threshold): the threshold over the oracle's
 * is about 1/sqrt(C) = 2 and below 1 only rarely; adversarial data never flags, planted faults are
 * found by the exact second tier. */
static void test_proj_threshold(void **state)
{
    (void)state;
    random_shapes(200, BLASFT_THRESHOLD_PROJ, BLASFT_THRESHOLD_PROJ, 0.0);
    run_shape(BLASFT_TYPE_S, 'T', 'N', 301, 257, 1031, 1, 1, 0, 32, 2, BLASFT_THRESHOLD_PROJ, BLASFT_WEIGHTS_LINEAR, -1);
    run_shape(BLASFT_TYPE_D, 'N', 'T', 263, 300, 997, 2, -1.5, 0.75, 64, 1, BLASFT_THRESHOLD_PROJ, BLASFT_WEIGHTS_NORMAL, 0);

    /* estimate against the oracle, and no flags, on every kind of data */
    double *ratio = malloc(sizeof(double) * 4 * 2 * 3 * 256);
    size_t nr = 0, below = 0;
    for (int kind = 0; kind < 4; kind++)
        for (int ti = 0; ti < 2; ti++) {
            blasft_type t = ti ? BLASFT_TYPE_D : BLASFT_TYPE_S;
            const int64_t m = 97, n = 61, k = 1501;
            tgemm x = make(t, 'N', 'N', m, n, k, 3, 1.0, 0.0, 0.0, 1.0);
            fill_pairs(&x, kind);
            blasft_config cfg = abft_t_cfg(32, 2);
            cfg.threshold = BLASFT_THRESHOLD_PROJ;
            blasft_abft_diag d;
            assert_int_equal(blasft_abft_run(&x.g, &cfg, &d, 1), 0);
            for (size_t q = 0; q < d.count; q++) {
                const blasft_abft_check *c = &d.checks_list[q];
                assert_int_equal(c->flagged, 0);
                assert_true(fabs(c->reference - c->recomputed) <= c->threshold);
                if (t == BLASFT_TYPE_S && c->side == 0) {
                    double w[32];
                    int64_t i0 = c->block_row * 32, len = m - i0 < 32 ? m - i0 : 32;
                    for (int i = 0; i < len; i++)
                        w[i] = c->weighted ? blasft_weight(BLASFT_W_LINEAR, i, 32) : 1.0;
                    double r = c->threshold / proj_oracle_col(&x, i0, len, w, c->index);
                    assert_true(r >= 0.5); /* the estimate is never far below the truth */
                    below += r < 1.0;
                    ratio[nr++] = r;
                }
            }
            assert_int_equal(d.detected + d.false_alarms + d.corrected, 0);
            blasft_abft_diag_free(&d);
            drop(&x);
        }
    qsort(ratio, nr, sizeof *ratio, cmp_double);
    fprintf(stderr, "proj/oracle over %zu FP32 column checks: min %.3f median %.3f max %.3f, %zu below 1\n",
            nr, ratio[0], ratio[nr / 2], ratio[nr - 1], below);
    assert_true(nr == 4 * 4 * 61 * 2);
    assert_true(below * 50 <= nr);                       /* at most 2 % under the truth */
    assert_true(ratio[nr / 2] >= 1.2 && ratio[nr / 2] <= 3.0); /* about 1/sqrt(C) = 2 */
    free(ratio);

    /* beta != 0 over many slices: every later slice is added to a C that holds beta c_old, so
     * the joins round values of the old C's size. Positive data (the mean walk, computed exactly,
     * carries the energy) and an old C ten times the product's size: the threshold must not fall
     * below the oracle's (before the joins knew of c_old it was 0.4-0.5 of it here). */
    {
        const int64_t m = 64, n = 24, k = 16 * BLASFT_PROJ_SLICE + 3;
        tgemm x = make(BLASFT_TYPE_S, 'N', 'N', m, n, k, 1, 0.75, 1.5, 0.0, 1.0);
        fill_pairs(&x, 1);
        for (int64_t j = 0; j < n; j++)
            for (int64_t i = 0; i < m; i++)
                ((float *)x.c0)[i + j * x.g.ldc] = ((float *)x.c)[i + j * x.g.ldc] =
                    (float)(2.5 * (double)k * (0.9 + 0.2 * urand()));
        blasft_config cfg = abft_t_cfg(32, 1);
        cfg.threshold = BLASFT_THRESHOLD_PROJ;
        blasft_abft_diag d;
        assert_int_equal(blasft_abft_run(&x.g, &cfg, &d, 1), 0);
        double lo = 1e300;
        for (size_t q = 0; q < d.count; q++) {
            const blasft_abft_check *c = &d.checks_list[q];
            assert_int_equal(c->flagged, 0);
            if (c->side == 0) {
                double w[32];
                for (int i = 0; i < 32; i++)
                    w[i] = 1.0;
                lo = fmin(lo, c->threshold / proj_oracle_col(&x, c->block_row * 32, 32, w, c->index));
            }
        }
        fprintf(stderr, "proj/oracle with beta over %d slices: min %.3f\n",
                (int)(k / BLASFT_PROJ_SLICE) + 1, lo);
        assert_true(lo >= 0.9 && lo < 1e300);
        assert_int_equal(d.detected + d.false_alarms + d.corrected, 0);
        blasft_abft_diag_free(&d);
        drop(&x);
    }

    planted_faults_corrected(BLASFT_THRESHOLD_PROJ);
}

static void test_two_errors_one_row(void **state)
{
    (void)state;
    for (int t = 0; t < 4; t++) {
        plant p = one(5, 3, 0, -1.0);
        p.n = 2;
        p.i[1] = 5;
        p.j[1] = 11;
        p.mul[1] = 3.0;
        /* one checksum: two flagged columns, one row -> block recomputed */
        blasft_abft_diag d = run_planted((blasft_type)t, 16, 1, BLASFT_MODE_CORRECT,
                                         BLASFT_ON_ERROR_RECOMPUTE, &p, 1);
        assert_int_equal(d.corrected, 0);
        assert_int_equal(d.blocks_recomputed, 1);
        assert_int_equal(events[BLASFT_EVENT_RECOMPUTED], 1);
        /* two checksums, locating weights: each column locates its row (F1) -> both corrected */
        d = run_planted((blasft_type)t, 16, 2, BLASFT_MODE_CORRECT, BLASFT_ON_ERROR_RECOMPUTE, &p, 1);
        assert_int_equal(d.corrected, 2);
        assert_int_equal(d.blocks_recomputed, 0);
        assert_int_equal(f1_events, 2);
        assert_int_equal(f2_events, 0);
        /* same along a column: each row locates its column (F1) */
        p.i[1] = 12;
        p.j[1] = 3;
        d = run_planted((blasft_type)t, 16, 2, BLASFT_MODE_CORRECT, BLASFT_ON_ERROR_RECOMPUTE, &p, 1);
        assert_int_equal(d.corrected, 2);
        assert_int_equal(d.blocks_recomputed, 0);
        assert_int_equal(f1_events, 2);
        assert_int_equal(f2_events, 0);
        /* F2: one error per row and column (a diagonal), both sides locate */
        p.i[1] = 10;
        p.j[1] = 12;
        d = run_planted((blasft_type)t, 16, 2, BLASFT_MODE_CORRECT, BLASFT_ON_ERROR_RECOMPUTE, &p, 1);
        assert_int_equal(d.corrected, 2);
        assert_int_equal(d.blocks_recomputed, 0);
        assert_int_equal(f2_events, 2);
        assert_int_equal(f1_events, 0);
        /* F0: four errors on a rectangle cannot be located -> recomputed, nothing corrected */
        p.n = 4;
        p.i[1] = 5; p.j[1] = 11; p.mul[1] = 3.0;
        p.i[2] = 9; p.j[2] = 3; p.mul[2] = 2.0;
        p.i[3] = 9; p.j[3] = 11; p.mul[3] = -2.0;
        d = run_planted((blasft_type)t, 16, 2, BLASFT_MODE_CORRECT, BLASFT_ON_ERROR_RECOMPUTE, &p, 1);
        assert_int_equal(d.blocks_recomputed, 1);
        assert_int_equal(d.corrected, 0);
        assert_int_equal(events[BLASFT_EVENT_RECOMPUTED], 1);
    }
}

/* Extended localization's agreement rule: where an element is placed by its column (ratio of the
 * column's syndromes) and its flagged row names the same column, the row and column syndromes
 * must agree (one error behind both lines). Errors e = 3 at (5, 6) and d = 1 at (5, 5) and
 * (5, 7), each d cancelled in its column by -1 at (9, 5) and (12, 7): with linear weights
 * (positions 6, 7, 8) row 5's ratio is (7 e + 6 d + 8 d) / (e + 2 d) = 7, so row 5 names column
 * 6, and column 6 names row 5; columns 5 and 7 sum to zero, rows 9 and 12 each place their own
 * error. Every line agrees on where, but row 5 carries e + 2 d and column 6 only e: more than one
 * error behind (5, 6), so the block is recomputed and nothing is "corrected". */
static void test_f2_lines_disagree(void **state)
{
    (void)state;
    for (int t = 0; t < 4; t++) {
        plant p;
        memset(&p, 0, sizeof p);
        p.n = 5;
        const int64_t is[5] = {5, 5, 5, 9, 12}, js[5] = {6, 5, 7, 5, 7};
        const double adds[5] = {3.0, 1.0, 1.0, -1.0, -1.0};
        for (int q = 0; q < 5; q++) {
            p.i[q] = is[q];
            p.j[q] = js[q];
            p.mul[q] = 1.0;
            p.add[q] = adds[q];
        }
        blasft_abft_diag d = run_planted((blasft_type)t, 16, 2, BLASFT_MODE_CORRECT,
                                         BLASFT_ON_ERROR_RECOMPUTE, &p, 1);
        assert_true(d.detected >= 1);
        assert_int_equal(d.corrected, 0);
        assert_int_equal(d.blocks_recomputed, 1);
        assert_int_equal(events[BLASFT_EVENT_RECOMPUTED], 1);
        assert_int_equal(f1_events + f2_events, 0);
        /* e alone: one error, both lines agree, corrected as F2 */
        p.n = 1;
        d = run_planted((blasft_type)t, 16, 2, BLASFT_MODE_CORRECT, BLASFT_ON_ERROR_RECOMPUTE, &p, 1);
        assert_int_equal(d.corrected, 1);
        assert_int_equal(d.blocks_recomputed, 0);
        assert_int_equal(f2_events, 1);
    }
}

/* A single error between the two thresholds of its element (over the smaller of the column and
 * the row checksum's, under the larger) flags one line only; with one checksum nothing places it
 * along that line. The campaign's 119 "detected, not located" cases were all of this kind: the
 * line is recomputed (bs elements), not the whole block, and C matches the oracle. */
/* An error between an element's two thresholds flags one line of its block (one checksum cannot
 * place it along the line): the line is recomputed, and its old values against the new ones
 * locate the element (it carries the line's difference): reported as corrected, at (i, j). */
static void test_one_sided_error_located_by_its_line(void **state)
{
    (void)state;
    const int bs = 16;
    for (int t = 0; t < 2; t++) {
        tgemm x = make((blasft_type)t, 'N', 'T', 3 * bs, 2 * bs + 1, 50, 1, 1.0, 0.5, 0.5, 1.0);
        blasft_config cfg = abft_t_cfg(bs, 1);
        blasft_abft_diag d;
        /* thresholds of every element from a clean run (they never depend on the new C) */
        assert_int_equal(blasft_abft_run(&x.g, &cfg, &d, 1), 0);
        int64_t m = x.g.m, n = x.g.n, nbr = (m + bs - 1) / bs, nbc = (n + bs - 1) / bs;
        double *tc = calloc((size_t)(nbr * n), sizeof *tc), *tr = calloc((size_t)(m * nbc), sizeof *tr);
        for (size_t q = 0; q < d.count; q++) {
            const blasft_abft_check *c = &d.checks_list[q];
            if (c->side == 0)
                tc[c->block_row + nbr * c->index] = c->threshold;
            else
                tr[c->index + m * c->block_col] = c->threshold;
        }
        blasft_abft_diag_free(&d);
        int64_t bi = 0, bj = 0;
        double best = 0;
        for (int64_t j = 0; j < n; j++)
            for (int64_t i = 0; i < m; i++) {
                double a = tc[i / bs + nbr * j], b = tr[i + m * (j / bs)];
                double ratio = a > b ? a / b : b / a;
                if (ratio > best) {
                    best = ratio;
                    bi = i;
                    bj = j;
                }
            }
        assert_true(best >= 1.5); /* the sides' thresholds differ enough to plant between them */
        plant p;
        memset(&p, 0, sizeof p);
        p.n = 1;
        p.i[0] = bi;
        p.j[0] = bj;
        p.mul[0] = 1.0;
        p.add[0] = sqrt(tc[bi / bs + nbr * bj] * tr[bi + m * (bj / bs)]);
        free(tc);
        free(tr);
        memcpy(x.c, x.c0, (size_t)(x.csize * blasft_type_size(x.g.type)));
        blasft_abft_set_plant_hook(plant_fn, &p);
        memset(events, 0, sizeof events);
        blasft_set_event_callback(count_event, NULL);
        assert_int_equal(blasft_abft_run(&x.g, &cfg, &d, 0), 0);
        blasft_abft_set_plant_hook(NULL, NULL);
        blasft_set_event_callback(NULL, NULL);
        assert_int_equal(d.detected, 1);
        assert_int_equal(d.corrected, 1);
        assert_int_equal(d.lines_recomputed, 0);
        assert_int_equal(d.blocks_recomputed, 0);
        assert_int_equal(d.false_alarms, 0);
        assert_int_equal(events[BLASFT_EVENT_CORRECTED], 1);
        assert_int_equal(events[BLASFT_EVENT_RECOMPUTED], 0);
        assert_int_equal(last_row, bi);
        assert_int_equal(last_col, bj);
        assert_int_equal(compare_oracle(&x, 2.0 * bs), 0);
        drop(&x);
    }
}

static void test_detect_and_report(void **state)
{
    (void)state;
    plant p = one(4, 4, 0, 1.5);
    blasft_abft_diag d = run_planted(BLASFT_TYPE_D, 8, 1, BLASFT_MODE_DETECT,
                                     BLASFT_ON_ERROR_RECOMPUTE, &p, 0);
    assert_int_equal(d.detected, 1);
    assert_int_equal(d.corrected, 0);
    assert_int_equal(d.uncorrectable, 1);
    assert_int_equal(events[BLASFT_EVENT_DETECTED], 1);
    p.n = 2;
    p.i[1] = 4;
    p.j[1] = 6;
    p.mul[1] = 1.5;
    d = run_planted(BLASFT_TYPE_S, 8, 1, BLASFT_MODE_CORRECT, BLASFT_ON_ERROR_REPORT, &p, 0);
    assert_int_equal(d.uncorrectable, 1);
    assert_int_equal(d.blocks_recomputed, 0);
    assert_int_equal(events[BLASFT_EVENT_UNCORRECTABLE], 1);
}

/* BLASFT_ON_ERROR=abort: an error that cannot be corrected ends the process with SIGABRT (a child
 * process here); a clean run in the same configuration does not. */
static int run_in_child(int faults)
{
    plant p = one(5, 3, 0, -1.0);
    p.n = faults;
    p.i[1] = 5; /* a second error in the same row: one checksum cannot correct it */
    p.j[1] = 11;
    p.mul[1] = 3.0;
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        tgemm x = make(BLASFT_TYPE_D, 'N', 'T', 48, 33, 50, 1, 1.0, 0.5, 0.5, 1.0);
        blasft_config cfg = abft_t_cfg(16, 1);
        cfg.on_error = BLASFT_ON_ERROR_ABORT;
        blasft_abft_set_plant_hook(plant_fn, &p);
        blasft_abft_diag d;
        int rc = blasft_abft_run(&x.g, &cfg, &d, 0);
        _exit(rc == 0 ? 0 : 3);
    }
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) != pid)
        return -1;
    return status;
}

static void test_abort_on_uncorrectable(void **state)
{
    (void)state;
    int status = run_in_child(2);
    assert_true(WIFSIGNALED(status));
    assert_int_equal(WTERMSIG(status), SIGABRT);
    status = run_in_child(0);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
}

/* Data of extreme magnitude (operands around 2^-280, 2^300, 2^450, or alpha 2^-700 and 2^700 with
 * operands in [0.5, 1]; beta 0 and 0.5): the thresholds' sums of squares leave the double range
 * (infinite from about 2^270 on, zero from about 2^-250 down), so the first tier flags such blocks
 * and the worst-case bounds decide. Every method: a planted error is corrected, and a clean GEMM
 * is left within rounding with no error reported. */
static void test_extreme_magnitudes(void **state)
{
    (void)state;
    static const blasft_threshold methods[] = {BLASFT_THRESHOLD_PEA, BLASFT_THRESHOLD_PROJ,
                                               BLASFT_THRESHOLD_NORM, BLASFT_THRESHOLD_SEA};
    static const int scales[] = {-280, 300, 450, -700, 700};
    for (size_t mi = 0; mi < sizeof methods / sizeof methods[0]; mi++)
        for (int t = BLASFT_TYPE_D; t <= BLASFT_TYPE_Z; t += 2)
            for (size_t si = 0; si < sizeof scales / sizeof scales[0]; si++)
                for (int v = 0; v < 4; v++) {
                    /* v & 2: beta 0.5, the old C of the operands' magnitude (far from the
                     * product's: both parts of the thresholds out of range, or one of them) */
                    const int planted = v & 1;
                    /* scale 700: the data in [0.5, 1], alpha 2^+-700 instead */
                    const int by_alpha = abs(scales[si]) == 700;
                    const int ds = by_alpha ? 0 : scales[si];
                    tgemm x = make((blasft_type)t, 'N', 'T', 48, 33, 50, 1,
                                   by_alpha ? ldexp(1.0, scales[si]) : 1.0, v & 2 ? 0.5 : 0.0,
                                   ldexp(0.5, ds), ldexp(1.0, ds));
                    blasft_config cfg = abft_t_cfg(16, 1);
                    cfg.threshold = methods[mi];
                    plant p = one(9, 20, 0, 1.001);
                    if (planted)
                        blasft_abft_set_plant_hook(plant_fn, &p);
                    blasft_abft_diag d;
                    assert_int_equal(blasft_abft_run(&x.g, &cfg, &d, 0), 0);
                    blasft_abft_set_plant_hook(NULL, NULL);
                    const int off = compare_oracle(&x, 2.0 * 16);
                    if (off || (planted ? d.detected < 1 || d.corrected + d.blocks_recomputed < 1
                                        : d.detected || d.corrected || d.blocks_recomputed))
                        fprintf(stderr, "method %d type %d 2^%d case %d: off %d detected %llu "
                                "corrected %llu recomputed %llu false alarms %llu\n",
                                (int)methods[mi], t, scales[si], v, off,
                                (unsigned long long)d.detected, (unsigned long long)d.corrected,
                                (unsigned long long)d.blocks_recomputed,
                                (unsigned long long)d.false_alarms);
                    assert_int_equal(off, 0);
                    if (planted) {
                        assert_true(d.detected >= 1);
                        assert_true(d.corrected + d.blocks_recomputed >= 1);
                    } else {
                        assert_int_equal(d.detected, 0);
                        assert_int_equal(d.corrected, 0);
                        assert_int_equal(d.blocks_recomputed, 0);
                    }
                    blasft_abft_diag_free(&d);
                    drop(&x);
                }
}

/* Scalars at the edges: k = 0 or alpha = 0 leave C = beta C, computed as the reference BLAS does
 * (alpha unused, even NaN; beta 0 gives exact zeros) with nothing reported; a subnormal alpha
 * (results in the subnormal range, where rounding is absolute) reports no error either. */
static void test_edge_scalars(void **state)
{
    (void)state;
    for (int t = 0; t < 4; t++) {
        const blasft_type ty = (blasft_type)t;
        const int P = blasft_type_is_complex(ty) ? 2 : 1;
        for (int v = 0; v < 3; v++) {
            /* v 0: k = 0, alpha NaN, beta 0.5; v 1: alpha 0 over huge data, beta 0 (C all
             * +0); v 2: alpha the smallest subnormal of the type */
            const double tiny = t == BLASFT_TYPE_S || t == BLASFT_TYPE_C ? 0x1p-149 : 0x1p-1074;
            tgemm x = make(ty, 'N', 'T', 40, 33, v == 0 ? 0 : 20, 1, v == 0 ? NAN : v == 1 ? 0.0 : tiny,
                           v == 0 ? 0.5 : 0.0, v == 1 ? 1e30 : 0.5, v == 1 ? 2e30 : 1.0);
            x.g.alpha[1] = 0.0; /* make() gives complex types an imaginary part */
            if (v == 1) /* an old C of NaN: beta 0 must not read it */
                for (int64_t e = 0; e < x.csize * P; e++)
                    abft_st(x.c, ty, e / P, (int)(e % P), NAN);
            blasft_config cfg = abft_t_cfg(16, 1);
            blasft_abft_diag d;
            assert_int_equal(blasft_abft_run(&x.g, &cfg, &d, 0), 0);
            if (d.detected || d.corrected || d.blocks_recomputed || d.uncorrectable || d.false_alarms)
                fprintf(stderr, "type %d case %d: detected %llu corrected %llu recomputed %llu "
                        "uncorrectable %llu false alarms %llu\n", t, v, (unsigned long long)d.detected,
                        (unsigned long long)d.corrected, (unsigned long long)d.blocks_recomputed,
                        (unsigned long long)d.uncorrectable, (unsigned long long)d.false_alarms);
            /* not even a false alarm: results of subnormals are within the first tier's
             * thresholds (blasft_underflow_eps) */
            assert_int_equal(d.detected + d.corrected + d.blocks_recomputed + d.uncorrectable +
                                 d.false_alarms,
                             0);
            if (v == 1) {
                for (int64_t j = 0; j < x.g.n; j++)
                    for (int64_t i = 0; i < x.g.m; i++)
                        for (int part = 0; part < P; part++) {
                            const double c = abft_ld(x.c, ty, i + j * x.g.ldc, part);
                            assert_true(c == 0.0 && !signbit(c));
                        }
            } else if (v == 0) { /* beta C, whatever alpha is */
                const double u = t == BLASFT_TYPE_S || t == BLASFT_TYPE_C ? 0x1p-23 : 0x1p-52;
                const double br = x.g.beta[0], bi = x.g.beta[1];
                for (int64_t j = 0; j < x.g.n; j++)
                    for (int64_t i = 0; i < x.g.m; i++) {
                        const int64_t e = i + j * x.g.ldc;
                        const double cr = abft_ld(x.c0, ty, e, 0), ci = P == 2 ? abft_ld(x.c0, ty, e, 1) : 0;
                        const double want[2] = {br * cr - bi * ci, br * ci + bi * cr};
                        for (int part = 0; part < P; part++)
                            assert_true(fabs(abft_ld(x.c, ty, e, part) - want[part]) <=
                                        u * (fabs(br * cr) + fabs(bi * ci) + fabs(br * ci) + fabs(bi * cr)));
                    }
            } else { /* results in the subnormal range: rounding is absolute there */
                assert_int_equal(compare_oracle_tol(&x, 0.0, 0.0, 0.0, (x.g.k + 2) * 2 * tiny), 0);
            }
            blasft_abft_diag_free(&d);
            drop(&x);
        }
    }
}

/* Products that underflow before alpha scales them: v 0, alpha the smallest subnormal over
 * op(B) of 2^500 (S: 2^60), beta 1e-300 (S: 1e-30) over an old C of 2^500 (2^60) whose first
 * rows are 0, so those rows are alpha op(A) op(B) alone, of magnitude 1e-172 (S: 1e-27); v 1,
 * alpha 1e300 (S: 1e30) over subnormal op(B). Results of normal magnitude carry the products'
 * absolute rounding times |alpha|: no threshold may call that an error (before, such blocks
 * were reported uncorrectable, and BLASFT_ON_ERROR=abort stopped the program), and C must be
 * BLAS's. A false alarm (the second tier recomputing) is allowed: the thresholds' squares leave
 * the double range here. */
static void test_underflow_before_alpha(void **state)
{
    (void)state;
    const blasft_threshold ths[3] = {BLASFT_THRESHOLD_PEA, BLASFT_THRESHOLD_PROJ, BLASFT_THRESHOLD_NORM};
    const blasft_on_error oes[2] = {BLASFT_ON_ERROR_RECOMPUTE, BLASFT_ON_ERROR_REPORT};
    for (int t = 0; t < 4; t++)
        for (int v = 0; v < 2; v++)
            for (int h = 0; h < 6; h++) {
                const blasft_type ty = (blasft_type)t;
                const int P = blasft_type_is_complex(ty) ? 2 : 1;
                const int single = ty == BLASFT_TYPE_S || ty == BLASFT_TYPE_C;
                const double tiny = single ? 0x1p-149 : 0x1p-1074, big = single ? 0x1p60 : 0x1p500;
                const double alpha = v == 0 ? tiny : single ? 1e30 : 1e300;
                const double beta = v == 0 ? (single ? 1e-30 : 1e-300) : 0.0;
                tgemm x = make(ty, h % 2 ? 'T' : 'N', 'N', 40, 5, 129, 1, alpha, beta, -1.0, 1.0);
                x.g.alpha[1] = 0.0;
                x.g.beta[1] = 0.0;
                const int64_t brows = x.g.k, bcols = x.g.n;
                for (int64_t j = 0; j < bcols; j++)
                    for (int64_t i = 0; i < brows; i++)
                        for (int part = 0; part < P; part++)
                            abft_st(x.b, ty, i + j * x.g.ldb, part,
                                    v == 0 ? (double)((int)(urand() * 5) - 2) * big
                                           : (double)((int)(urand() * 2001) - 1000) * tiny);
                if (v == 0)
                    for (int64_t j = 0; j < x.g.n; j++)
                        for (int64_t i = 0; i < x.g.m; i++)
                            for (int part = 0; part < P; part++) {
                                const double c = i < 20 ? 0.0 : (double)((int)(urand() * 5) - 2) * big;
                                abft_st(x.c, ty, i + j * x.g.ldc, part, c);
                                abft_st(x.c0, ty, i + j * x.g.ldc, part, c);
                            }
                blasft_config cfg = abft_t_cfg(16, 2);
                cfg.threshold = ths[h / 2];
                cfg.on_error = oes[h % 2];
                blasft_abft_diag d;
                assert_int_equal(blasft_abft_run(&x.g, &cfg, &d, 0), 0);
                if (d.detected || d.corrected || d.blocks_recomputed || d.uncorrectable)
                    fprintf(stderr, "type %d case %d threshold %d: detected %llu corrected %llu "
                            "recomputed %llu uncorrectable %llu\n", t, v, h / 2,
                            (unsigned long long)d.detected, (unsigned long long)d.corrected,
                            (unsigned long long)d.blocks_recomputed, (unsigned long long)d.uncorrectable);
                assert_int_equal(d.detected + d.corrected + d.blocks_recomputed + d.uncorrectable, 0);
                /* C against the oracle: the products' and scalings' rounding, plus each
                 * product's underflow (u times the smallest normal number) times |alpha| */
                const double u = single ? 0x1p-24 : 0x1p-53, fmin = single ? 0x1p-126 : 0x1p-1022;
                for (int64_t j = 0; j < x.g.n; j++)
                    for (int64_t i = 0; i < x.g.m; i++) {
                        long double re = 0, im = 0, mass = 0;
                        for (int64_t kk = 0; kk < x.g.k; kk++) {
                            const long double ar = opel(x.g.a, ty, x.g.transa, x.g.lda, i, kk, 0);
                            const long double br = opel(x.g.b, ty, 'N', x.g.ldb, kk, j, 0);
                            const long double ai = P == 2 ? opel(x.g.a, ty, x.g.transa, x.g.lda, i, kk, 1) : 0;
                            const long double bi = P == 2 ? opel(x.g.b, ty, 'N', x.g.ldb, kk, j, 1) : 0;
                            re += ar * br - ai * bi;
                            im += ar * bi + ai * br;
                            mass += fabsl(ar * br) + fabsl(ai * bi) + fabsl(ar * bi) + fabsl(ai * br);
                        }
                        const long double want[2] = {(long double)alpha * re, (long double)alpha * im};
                        for (int part = 0; part < P; part++) {
                            const long double old =
                                beta == 0.0 ? 0.0L : (long double)beta * abft_ld(x.c0, ty, i + j * x.g.ldc, part);
                            const long double tol = (x.g.k * P + 4) * u *
                                                        ((long double)alpha * mass + fabsl(old)) +
                                                    (x.g.k * P + 4) * u * fmin * (1.0L + alpha);
                            assert_true(fabsl(abft_ld(x.c, ty, i + j * x.g.ldc, part) - (want[part] + old)) <= tol);
                        }
                    }
                blasft_abft_diag_free(&d);
                drop(&x);
            }
}

/* Results near the largest number of the type whose checksums overflow while the elements and
 * the reference stay finite: alpha 1e308 (S: 3e38) times a column of op(A) of +-0.9 and a row of
 * op(B) of +-1, both in the sign pattern + + - - (two neighbours add up beyond the range, a
 * block's sum is 0), k 1.
 * The element comparison decides: no report (before, such blocks were reported uncorrectable
 * with a NaN syndrome). Detect and correct mode, report and recompute. */
static void test_checksums_overflow(void **state)
{
    (void)state;
    for (int t = 0; t < 4; t++)
        for (int h = 0; h < 4; h++) {
            const blasft_type ty = (blasft_type)t;
            const int P = blasft_type_is_complex(ty) ? 2 : 1;
            const int single = ty == BLASFT_TYPE_S || ty == BLASFT_TYPE_C;
            const double alpha = single ? 3e38 : 1e308, beta = -0.35;
            tgemm x = make(ty, 'N', 'N', 40, 20, 1, 2, alpha, beta, -0.5, 0.5);
            x.g.alpha[1] = 0.0;
            x.g.beta[1] = 0.0;
            for (int64_t i = 0; i < x.g.m; i++)
                for (int part = 0; part < P; part++)
                    abft_st(x.a, ty, i, part, part ? 0.0 : i % 4 < 2 ? 0.9 : -0.9);
            for (int64_t j = 0; j < x.g.n; j++)
                for (int part = 0; part < P; part++)
                    abft_st(x.b, ty, j * x.g.ldb, part, part ? 0.0 : j % 4 < 2 ? 1.0 : -1.0);
            blasft_config cfg = abft_t_cfg(32, 1);
            cfg.mode = h / 2 ? BLASFT_MODE_DETECT : BLASFT_MODE_CORRECT;
            cfg.on_error = h % 2 ? BLASFT_ON_ERROR_REPORT : BLASFT_ON_ERROR_RECOMPUTE;
            blasft_abft_diag d;
            assert_int_equal(blasft_abft_run(&x.g, &cfg, &d, 0), 0);
            assert_int_equal(d.detected + d.corrected + d.blocks_recomputed + d.uncorrectable, 0);
            const double u = single ? 0x1p-24 : 0x1p-53;
            for (int64_t j = 0; j < x.g.n; j++)
                for (int64_t i = 0; i < x.g.m; i++)
                    for (int part = 0; part < P; part++) {
                        const long double want =
                            part ? 0.0L : (long double)alpha * abft_ld(x.a, ty, i, 0) * abft_ld(x.b, ty, j * x.g.ldb, 0);
                        const long double old = beta * abft_ld(x.c0, ty, i + j * x.g.ldc, part);
                        const double c = abft_ld(x.c, ty, i + j * x.g.ldc, part);
                        assert_true(isfinite(c));
                        assert_true(fabsl(c - (want + old)) <= 4 * u * (fabsl(want) + fabsl(old)));
                    }
            blasft_abft_diag_free(&d);
            drop(&x);
        }
}

static void test_nonfinite_inputs_unprotected(void **state)
{
    (void)state;
    tgemm x = make(BLASFT_TYPE_D, 'N', 'N', 10, 10, 10, 0, 1.0, 0.0, 0.5, 1.0);
    ((double *)x.a)[3] = INFINITY;
    blasft_config cfg = abft_t_cfg(4, 1);
    assert_int_equal(blasft_abft_run(&x.g, &cfg, NULL, 0), -1);
    assert_memory_equal(x.c, x.c0, (size_t)x.csize * sizeof(double)); /* untouched */
    drop(&x);
    x = make(BLASFT_TYPE_S, 'N', 'N', 10, 10, 10, 0, 1.0, 1.0, 0.5, 1.0);
    ((float *)x.c)[7] = NAN; /* old C read with beta != 0 */
    assert_int_equal(blasft_abft_run(&x.g, &cfg, NULL, 0), -1);
    drop(&x);
}

/* ---- injection ---- */

static void test_inject_parser(void **state)
{
    (void)state;
    blasft_inject_spec s;
    char err[512];
    assert_int_equal(blasft_inject_parse("faults=3,bits=exponent,site=inner,seed=7,pattern=row", &s, err, sizeof err), 0);
    assert_int_equal(s.faults, 3);
    assert_int_equal(s.bits, BLASFT_BITS_EXPONENT);
    assert_int_equal(s.site, BLASFT_SITE_INNER);
    assert_int_equal(s.pattern, BLASFT_PATTERN_ROW);
    assert_true(s.seed == 7);
    assert_int_equal(blasft_inject_parse("site=encoder", &s, err, sizeof err), 0);
    assert_int_equal(s.site, BLASFT_SITE_ENCODER);
    assert_int_equal(blasft_inject_parse("bits=3-9", &s, err, sizeof err), 0);
    assert_int_equal(s.bits, BLASFT_BITS_RANGE);
    assert_int_equal(s.bit_lo, 3);
    assert_int_equal(s.bit_hi, 9);
    assert_int_equal(s.faults, 1);
    assert_int_equal(blasft_inject_parse("", &s, err, sizeof err), 0);
    assert_int_equal(s.faults, 0);
    const char *bad[] = {"faults=x", "bits=sideways", "site=middle", "color=red", "faults", "bits=9-3",
                         "pattern=diagonal", "seed=-1"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = 0;
        assert_int_equal(blasft_inject_parse(bad[i], &s, err, sizeof err), -1);
        assert_non_null(strstr(err, "accepted"));
        assert_int_equal(s.faults, 0);
    }
}

static void run_injected(blasft_type t, const char *spec, int checksums, int expect_detect)
{
    tgemm x = make(t, 'T', 'N', 64, 64, 64, 0, 1.0, 0.0, 0.5, 1.0);
    blasft_config cfg = abft_t_cfg(32, checksums);
    snprintf(cfg.inject, sizeof cfg.inject, "%s", spec);
    blasft_abft_diag d;
    assert_int_equal(blasft_abft_run(&x.g, &cfg, &d, 0), 0);
    assert_true(d.faults_injected >= 1);
    if (expect_detect)
        assert_true(d.detected >= 1);
    assert_int_equal(d.uncorrectable, 0);
    assert_int_equal(compare_oracle(&x, 64.0), 0);
    drop(&x);
}

static void test_injection_sites(void **state)
{
    (void)state;
    for (int t = 0; t < 4; t++)
        for (int seed = 0; seed < 20; seed++) {
            char s[128];
            snprintf(s, sizeof s, "faults=1,bits=sign,site=output,seed=%d", seed);
            run_injected((blasft_type)t, s, 1, 1);
            snprintf(s, sizeof s, "faults=1,bits=exponent,site=output,seed=%d", seed);
            run_injected((blasft_type)t, s, 2, 1);
            snprintf(s, sizeof s, "faults=1,bits=sign,site=inner,seed=%d", seed);
            run_injected((blasft_type)t, s, 1, 1);
            snprintf(s, sizeof s, "faults=1,bits=mantissa,site=inner,seed=%d", seed);
            run_injected((blasft_type)t, s, 2, 0);
            snprintf(s, sizeof s, "faults=4,bits=any,site=output,pattern=row,seed=%d", seed);
            run_injected((blasft_type)t, s, 2, 0);
            snprintf(s, sizeof s, "faults=3,bits=exponent,pattern=block,seed=%d", seed);
            run_injected((blasft_type)t, s, 1, 0);
        }
}

/* site=encoder corrupts one copy of op(A)'s redundant encoding: the comparison must see it (an
 * encoder fault, the encoding computed again), and the GEMM stays clean and correct */
static void test_injection_encoder(void **state)
{
    (void)state;
    for (int t = 0; t < 4; t++)
        for (int seed = 0; seed < 10; seed++) {
            static const char *const bits[] = {"sign", "exponent", "mantissa", "any", "0-0"};
            char s[128];
            snprintf(s, sizeof s, "faults=%d,bits=%s,site=encoder,seed=%d", 1 + seed % 3, bits[seed % 5], seed);
            tgemm x = make((blasft_type)t, seed % 2 ? 'N' : 'T', 'N', 61, 47, 33, 2, 1.0, 0.0, 0.5, 1.0);
            blasft_config cfg = abft_t_cfg(16, 1 + seed % 2);
            snprintf(cfg.inject, sizeof cfg.inject, "%s", s);
            blasft_abft_diag d;
            memset(events, 0, sizeof events);
            blasft_set_event_callback(count_event, NULL);
            assert_int_equal(blasft_abft_run(&x.g, &cfg, &d, 0), 0);
            blasft_set_event_callback(NULL, NULL);
            assert_int_equal(d.faults_injected, (uint64_t)(1 + seed % 3));
            assert_int_equal(d.encoder_faults, 1);
            assert_int_equal(d.detected, 0);
            /* the event names the row block of op(A) whose encoding disagreed */
            assert_int_equal(events[BLASFT_EVENT_ENCODER_FAULT], 1);
            assert_true(last_brow >= 0 && last_brow < (61 + 15) / 16);
            assert_int_equal(last_bcol, -1);
            assert_string_equal(last_action, "encoded again");
            assert_int_equal(compare_oracle(&x, 2.0), 0);
            drop(&x);
        }
}

static void test_inject_flip_patterns(void **state)
{
    (void)state;
    blasft_inject_spec s;
    char err[256];
    double c[40 * 40], c0[40 * 40];
    for (int i = 0; i < 40 * 40; i++)
        c[i] = c0[i] = 1.0 + i;
    assert_int_equal(blasft_inject_parse("faults=5,bits=sign,pattern=row,seed=3", &s, err, sizeof err), 0);
    uint64_t st = blasft_inject_next_stream(&s);
    assert_int_equal(blasft_inject_flip(&s, &st, BLASFT_TYPE_D, c, 40, 40, 40, 8), 5);
    int changed = 0, row = -1;
    for (int j = 0; j < 40; j++)
        for (int i = 0; i < 40; i++)
            if (c[i + 40 * j] != c0[i + 40 * j]) {
                assert_true(c[i + 40 * j] == -c0[i + 40 * j]);
                if (row < 0)
                    row = i;
                assert_int_equal(i, row); /* a burst along one row */
                changed++;
            }
    assert_int_equal(changed, 5);
    /* more faults than the block holds: each element once, none flipped back */
    static const char *const pats[] = {"row", "column", "block", "random"};
    static const int most[] = {8, 8, 64, 40 * 40};
    for (int q = 0; q < 4; q++)
        for (int seed = 0; seed < 20; seed++) {
            char sp[96];
            snprintf(sp, sizeof sp, "faults=%d,bits=sign,pattern=%s,seed=%d", q < 3 ? 100 : 30, pats[q], seed);
            assert_int_equal(blasft_inject_parse(sp, &s, err, sizeof err), 0);
            for (int i = 0; i < 40 * 40; i++)
                c[i] = c0[i];
            st = blasft_inject_next_stream(&s);
            int made = blasft_inject_flip(&s, &st, BLASFT_TYPE_D, c, 40, 40, 40, 8);
            int want = q < 3 ? most[q] : 30;
            assert_int_equal(made, want);
            changed = 0;
            for (int i = 0; i < 40 * 40; i++)
                changed += c[i] != c0[i];
            assert_int_equal(changed, want);
        }
    /* different calls draw different streams */
    assert_true(blasft_inject_next_stream(&s) != blasft_inject_next_stream(&s));
}

/* A fault in a 16-bit result that the GPU checks in FP32 (cuda/gpu_lowp.cu): the bit of the value
 * as a half or bfloat16 flipped, the digits beyond it kept. Words and values worked out by hand. */
static void test_flip_half_bit(void **state)
{
    (void)state;
    /* half: 1.0 is 0x3c00 */
    assert_true(blasft_flip_half_bit_of(1.0f, 0, 0) == 1.0f + 0x1p-10f);
    assert_true(blasft_flip_half_bit_of(1.0f, 10, 0) == 0.5f);  /* 0x3800 */
    assert_true(blasft_flip_half_bit_of(1.0f, 13, 0) == 0x1p-8f); /* 0x1c00: exponent 7 - 15 */
    assert_true(isinf(blasft_flip_half_bit_of(1.0f, 14, 0)));    /* 0x7c00 */
    assert_true(blasft_flip_half_bit_of(1.0f, 15, 0) == -1.0f);
    assert_true(blasft_flip_half_bit_of(1.0f, 31, 0) == -1.0f);  /* the bit taken mod 16 */
    /* what half does not hold stays: 1 + 2^-20 rounds to 1, its 2^-20 rides along */
    assert_true(blasft_flip_half_bit_of(1.0f + 0x1p-20f, 9, 0) == 1.5f + 0x1p-20f);
    /* rounding to nearest even at a tie: 1 + 2^-11 rounds to 1, 1 + 3 2^-11 to 1 + 2^-9 */
    assert_true(blasft_flip_half_bit_of(1.0f + 0x1p-11f, 0, 0) == 1.0f + 0x1p-11f + 0x1p-10f);
    assert_true(blasft_flip_half_bit_of(1.0f + 0x3p-11f, 1, 0) == 1.0f + 0x3p-11f - 0x1p-9f);
    /* subnormal: 2^-24 is 0x0001; its bit 1 makes 3 2^-24 */
    assert_true(blasft_flip_half_bit_of(0x1p-24f, 1, 0) == 0x3p-24f);
    /* above half's range: 65520 rounds to Inf, whose flipped bit 0 is a NaN */
    assert_true(isnan(blasft_flip_half_bit_of(65520.0f, 0, 0)));
    assert_true(blasft_flip_half_bit_of(65504.0f, 15, 0) == -65504.0f);
    /* bfloat16: 1.0 is 0x3f80 */
    assert_true(blasft_flip_half_bit_of(1.0f, 0, 1) == 1.0f + 0x1p-7f);
    assert_true(blasft_flip_half_bit_of(1.0f, 7, 1) == 0.5f);    /* 0x3f00 */
    assert_true(blasft_flip_half_bit_of(1.0f, 13, 1) == 0x1p-64f); /* exponent 127 - 64 */
    assert_true(isinf(blasft_flip_half_bit_of(1.0f, 14, 1)));      /* exponent 255 */
    assert_true(blasft_flip_half_bit_of(-3.0f, 15, 1) == 3.0f);
    assert_true(blasft_flip_half_bit_of(1.0f + 0x1p-12f, 6, 1) == 1.5f + 0x1p-12f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_weights_and_locate),
        cmocka_unit_test(test_pea_sea),
        cmocka_unit_test(test_correct_rule_and_csum),
        cmocka_unit_test(test_kernels_match_scalar),
        cmocka_unit_test(test_topp_kernel_matches_insert),
        cmocka_unit_test(test_pool_pairs_on_distinct_threads),
        cmocka_unit_test(test_random_shapes),
        cmocka_unit_test(test_single_error_corrected),
        cmocka_unit_test(test_narrow_error_corrected_once),
        cmocka_unit_test(test_planted_fault_random_shapes),
        cmocka_unit_test(test_two_errors_one_row),
        cmocka_unit_test(test_f2_lines_disagree),
        cmocka_unit_test(test_norm_threshold),
        cmocka_unit_test(test_proj_threshold),
        cmocka_unit_test(test_keep_buffers),
        cmocka_unit_test(test_one_sided_error_located_by_its_line),
        cmocka_unit_test(test_detect_and_report),
        cmocka_unit_test(test_abort_on_uncorrectable),
        cmocka_unit_test(test_extreme_magnitudes),
        cmocka_unit_test(test_edge_scalars),
        cmocka_unit_test(test_underflow_before_alpha),
        cmocka_unit_test(test_checksums_overflow),
        cmocka_unit_test(test_nonfinite_inputs_unprotected),
        cmocka_unit_test(test_inject_parser),
        cmocka_unit_test(test_injection_sites),
        cmocka_unit_test(test_injection_encoder),
        cmocka_unit_test(test_inject_flip_patterns),
        cmocka_unit_test(test_flip_half_bit),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
