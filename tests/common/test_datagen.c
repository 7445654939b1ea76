/* The test-data generators: determinism, ranges and moments of the elementwise series, padding
 * left alone, orthogonality and singular values (kappa) of T_orth against a one-sided Jacobi SVD,
 * tails of the heavy series, and that the cancelling pair really cancels. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "datagen.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Singular values of a (m x n, m >= n, column-major, overwritten) by one-sided Jacobi rotations:
 * an oracle independent of the Householder construction. Sorted ascending into s. */
static void jacobi_svd(double *a, int64_t m, int64_t n, double *s)
{
    for (int sweep = 0; sweep < 60; sweep++) {
        double off = 0.0;
        for (int64_t p = 0; p < n; p++)
            for (int64_t q = p + 1; q < n; q++) {
                double *x = a + p * m, *y = a + q * m;
                double alpha = 0, beta = 0, gamma = 0;
                for (int64_t i = 0; i < m; i++) {
                    alpha += x[i] * x[i];
                    beta += y[i] * y[i];
                    gamma += x[i] * y[i];
                }
                if (gamma == 0.0)
                    continue;
                double c2 = fabs(gamma) / sqrt(alpha * beta);
                if (c2 > off)
                    off = c2;
                double zeta = (beta - alpha) / (2.0 * gamma);
                double t = copysign(1.0, zeta) / (fabs(zeta) + sqrt(1.0 + zeta * zeta));
                double c = 1.0 / sqrt(1.0 + t * t), sn = c * t;
                for (int64_t i = 0; i < m; i++) {
                    double xi = x[i], yi = y[i];
                    x[i] = c * xi - sn * yi;
                    y[i] = sn * xi + c * yi;
                }
            }
        if (off < 1e-15)
            break;
    }
    for (int64_t j = 0; j < n; j++) {
        double nrm = 0;
        for (int64_t i = 0; i < m; i++)
            nrm += a[i + j * m] * a[i + j * m];
        s[j] = sqrt(nrm);
    }
    qsort(s, (size_t)n, sizeof *s, cmp_double);
}

static void test_rng_deterministic_and_uniform(void **state)
{
    (void)state;
    dg_rng a, b, c;
    dg_seed(&a, 42);
    dg_seed(&b, 42);
    dg_seed(&c, 43);
    int differ = 0;
    for (int i = 0; i < 1000; i++) {
        uint64_t x = dg_next(&a), y = dg_next(&b), z = dg_next(&c);
        assert_true(x == y);
        differ += x != z;
    }
    assert_true(differ > 990);

    /* Moments of 10^6 draws: mean 1/2 and variance 1/12 of U[0,1); N(0,1) mean 0, variance 1;
     * tolerances are about 6 standard errors. */
    const int N = 1000000;
    double su = 0, su2 = 0, sn = 0, sn2 = 0;
    long counts[10] = {0};
    for (int i = 0; i < N; i++) {
        double u = dg_uniform(&a);
        assert_true(u >= 0.0 && u < 1.0);
        su += u;
        su2 += u * u;
        double g = dg_normal(&a);
        sn += g;
        sn2 += g * g;
        counts[dg_below(&a, 10)]++;
    }
    double mu = su / N, vu = su2 / N - mu * mu;
    assert_true(fabs(mu - 0.5) < 6 * sqrt(1.0 / 12 / N));
    assert_true(fabs(vu - 1.0 / 12) < 2e-3);
    assert_true(fabs(sn / N) < 6.0 / sqrt(N));
    assert_true(fabs(sn2 / N - 1.0) < 6 * sqrt(2.0 / N));
    /* chi-square with 9 degrees of freedom: 40 is far beyond the 0.9999 quantile (33.7) */
    double chi = 0;
    for (int k = 0; k < 10; k++)
        chi += (counts[k] - N / 10.0) * (counts[k] - N / 10.0) / (N / 10.0);
    assert_true(chi < 40.0);
}

/* Reads element (i, j), real part or imaginary part, of any type as double. */
static double get(dg_type t, const void *a, int64_t ld, int64_t i, int64_t j, int part)
{
    int step = (t == DG_C || t == DG_Z) ? 2 : 1;
    int64_t o = (i + j * ld) * step + part;
    return (t == DG_S || t == DG_C) ? ((const float *)a)[o] : ((const double *)a)[o];
}

static size_t elem_size(dg_type t) { return (size_t[]){4, 8, 8, 16}[t]; }

static void test_uniform_series_ranges_moments_padding(void **state)
{
    (void)state;
    const int64_t shapes[][3] = {{1, 1, 1}, {37, 53, 41}, {200, 150, 203}, {0, 5, 1}, {5, 0, 7}};
    dg_rng r;
    dg_seed(&r, 7);
    for (int t = DG_S; t <= DG_Z; t++)
        for (int series = DG_POS; series <= DG_FULL; series++)
            for (int e = 0; e <= 5; e++)
                for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
                    int64_t m = shapes[s][0], n = shapes[s][1], ld = shapes[s][2];
                    int parts = (t == DG_C || t == DG_Z) ? 2 : 1;
                    size_t bytes = elem_size(t) * (size_t)ld * (size_t)(n ? n : 1);
                    unsigned char *a = malloc(bytes);
                    memset(a, 0xff, bytes); /* NaN pattern in every type */
                    dg_params p = {.series = series, .exponent = e};
                    assert_int_equal(dg_fill(&r, t, &p, m, n, a, ld), 0);
                    double hi = pow(10.0, e), lo = series == DG_POS ? 0.0 : -hi;
                    double sum = 0, sum2 = 0;
                    long cnt = 0;
                    for (int64_t j = 0; j < n; j++)
                        for (int64_t i = 0; i < ld; i++)
                            for (int q = 0; q < parts; q++) {
                                double x = get(t, a, ld, i, j, q);
                                if (i >= m) {
                                    assert_true(isnan(x)); /* padding untouched */
                                    continue;
                                }
                                assert_true(x >= lo && x <= hi);
                                sum += x;
                                sum2 += x * x;
                                cnt++;
                            }
                    if (cnt >= 1000) {
                        /* mean (lo+hi)/2, variance (hi-lo)^2/12, within 6 standard errors */
                        double mean = sum / cnt, var = sum2 / cnt - mean * mean;
                        double sd = (hi - lo) / sqrt(12.0);
                        assert_true(fabs(mean - 0.5 * (lo + hi)) < 6 * sd / sqrt((double)cnt));
                        assert_true(fabs(var / (sd * sd) - 1.0) < 0.05);
                    }
                    free(a);
                }
}

static void test_invalid_arguments_write_nothing(void **state)
{
    (void)state;
    dg_rng r;
    dg_seed(&r, 1);
    double a[16];
    for (int i = 0; i < 16; i++)
        a[i] = -7.0;
    dg_params p = {.series = DG_FULL};
    assert_int_equal(dg_fill(&r, DG_D, &p, 4, 4, a, 3), -1);  /* ld < m */
    assert_int_equal(dg_fill(&r, DG_D, &p, -1, 4, a, 4), -1);
    dg_params bad_kappa = {.series = DG_ORTH, .kappa = 0.5};
    assert_int_equal(dg_fill(&r, DG_D, &bad_kappa, 4, 4, a, 4), -1);
    dg_params bad_series = {.series = (dg_series)99};
    assert_int_equal(dg_fill(&r, DG_D, &bad_series, 4, 4, a, 4), -1);
    for (int i = 0; i < 16; i++)
        assert_true(a[i] == -7.0);
    assert_string_equal(dg_series_name(DG_ORTH), "orth");
    assert_int_equal(dg_series_from_name("cancel"), DG_CANCEL);
    assert_int_equal(dg_series_from_name("nope"), -1);
}

/* ||A^T A - I||_max for an m x n (m >= n) double matrix. */
static double orthogonality_defect(const double *a, int64_t m, int64_t n, int64_t ld)
{
    double worst = 0;
    for (int64_t p = 0; p < n; p++)
        for (int64_t q = 0; q < n; q++) {
            double s = 0;
            for (int64_t i = 0; i < m; i++)
                s += a[i + p * ld] * a[i + q * ld];
            double d = fabs(s - (p == q ? 1.0 : 0.0));
            if (d > worst)
                worst = d;
        }
    return worst;
}

static void test_orth_factors_are_orthogonal_and_dense(void **state)
{
    (void)state;
    dg_rng r;
    dg_seed(&r, 99);
    const int64_t shapes[][2] = {{1, 1}, {2, 2}, {31, 31}, {64, 64}, {97, 61}};
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
        int64_t m = shapes[s][0], n = shapes[s][1], ld = m + 3;
        double *d = malloc((size_t)n * sizeof *d), *a = malloc((size_t)(ld * n) * sizeof *a);
        for (int64_t i = 0; i < n; i++)
            d[i] = 1.0;
        assert_int_equal(dg_orth_from_diag(&r, m, n, d, 1.0, 0, a, ld), 0);
        /* U * I * V^T has orthonormal columns */
        assert_true(orthogonality_defect(a, m, n, ld) < 1e-13 * (double)m);
        if (n >= 31) {
            /* dense: no entry close to the +-1 of an identity-like factor, and no zero pattern */
            double amax = 0;
            long zeros = 0;
            for (int64_t j = 0; j < n; j++)
                for (int64_t i = 0; i < m; i++) {
                    amax = fmax(amax, fabs(a[i + j * ld]));
                    zeros += a[i + j * ld] == 0.0;
                }
            assert_true(amax < 0.8);
            assert_true(zeros == 0);
        }
        free(d);
        free(a);
    }
}

/* Singular values of T_orth equal 10^alpha * D_kappa: largest kappa, smallest 1/kappa. */
static void test_orth_kappa(void **state)
{
    (void)state;
    dg_rng r;
    dg_seed(&r, 2024);
    const double kappas[] = {2, 16, 128, 1024, 8192, 65536};
    for (size_t k = 0; k < sizeof kappas / sizeof *kappas; k++) {
        double kappa = kappas[k];
        for (int shape = 0; shape < 2; shape++) {
            int64_t m = shape ? 53 : 40, n = 40, ld = m + 1;
            double *a = malloc((size_t)(ld * n) * sizeof *a), *packed = malloc((size_t)(m * n) * sizeof *a);
            double s[40];
            dg_params p = {.series = DG_ORTH, .exponent = 1, .kappa = kappa};
            assert_int_equal(dg_fill(&r, DG_D, &p, m, n, a, ld), 0);
            for (int64_t j = 0; j < n; j++)
                memcpy(packed + j * m, a + j * ld, (size_t)m * sizeof *a);
            jacobi_svd(packed, m, n, s);
            double scale = 10.0;
            assert_true(fabs(s[n - 1] / (scale * kappa) - 1.0) < 1e-10);
            /* the construction's absolute error is about n * 2^-53 * kappa * scale */
            assert_true(fabs(s[0] / (scale / kappa) - 1.0) < 1e-14 * n * kappa * kappa + 1e-10);
            for (int64_t i = 0; i < n; i++)
                assert_true(s[i] > 0.99 * scale / kappa && s[i] < 1.0001 * scale * kappa);
            free(a);
            free(packed);
        }
    }
}

/* Float and complex T_orth: singular values through the real embedding [[Re, -Im], [Im, Re]],
 * which has each singular value of the complex matrix twice. */
static void test_orth_float_and_complex(void **state)
{
    (void)state;
    dg_rng r;
    dg_seed(&r, 5);
    const int64_t n = 24;
    for (int t = DG_S; t <= DG_Z; t++) {
        int cplx = t == DG_C || t == DG_Z;
        double kappa = (t == DG_S || t == DG_C) ? 16.0 : 1024.0; /* float resolves small kappa only */
        dg_params p = {.series = DG_ORTH, .exponent = 0, .kappa = kappa};
        void *a = malloc(elem_size(t) * (size_t)(n * n));
        assert_int_equal(dg_fill(&r, t, &p, n, n, a, n), 0);
        int64_t big = cplx ? 2 * n : n;
        double *e = malloc((size_t)(big * big) * sizeof *e), *s = malloc((size_t)big * sizeof *s);
        for (int64_t j = 0; j < n; j++)
            for (int64_t i = 0; i < n; i++) {
                double re = get(t, a, n, i, j, 0);
                if (!cplx) {
                    e[i + j * n] = re;
                    continue;
                }
                double im = get(t, a, n, i, j, 1);
                e[i + j * big] = re;
                e[(i + n) + (j + n) * big] = re;
                e[(i + n) + j * big] = im;
                e[i + (j + n) * big] = -im;
            }
        jacobi_svd(e, big, big, s);
        double tol = (t == DG_S || t == DG_C) ? 1e-5 * kappa * kappa : 1e-9;
        assert_true(fabs(s[big - 1] / kappa - 1.0) < tol);
        assert_true(fabs(s[0] * kappa - 1.0) < tol);
        if (cplx) {
            for (int64_t i = 0; i + 1 < big; i += 2)
                assert_true(fabs(s[i] - s[i + 1]) <= 1e-5 * s[big - 1]);
            /* the imaginary part is not zero: the phases are random */
            double imax = 0;
            for (int64_t i = 0; i < n * n; i++)
                imax = fmax(imax, fabs(get(t, a, n, i, 0, 1)));
            assert_true(imax > 1e-3);
        }
        free(a);
        free(e);
        free(s);
    }
}

static void test_heavy_and_cauchy_tails(void **state)
{
    (void)state;
    dg_rng r;
    dg_seed(&r, 11);
    const int64_t m = 500, n = 400;
    double *a = malloc((size_t)(m * n) * sizeof *a);
    /* log-uniform magnitudes: log10|x| uniform in [3 - 6, 3 + 6], signs balanced */
    dg_params h = {.series = DG_HEAVY, .exponent = 3, .decades = 12};
    assert_int_equal(dg_fill(&r, DG_D, &h, m, n, a, m), 0);
    long per_decade[12] = {0}, neg = 0;
    double N = (double)(m * n);
    for (int64_t i = 0; i < m * n; i++) {
        double l = log10(fabs(a[i]));
        assert_true(l >= -3.0 - 1e-12 && l <= 9.0 + 1e-12);
        per_decade[(int)fmin(11.0, floor(l + 3.0))]++;
        neg += a[i] < 0;
    }
    for (int k = 0; k < 12; k++)
        assert_true(fabs(per_decade[k] / N - 1.0 / 12) < 0.01);
    assert_true(fabs(neg / N - 0.5) < 0.01);

    /* standard Cauchy scaled by 10^2: median |x| = 100, P(|x| > 100 t) = 2/pi * atan(1/t) */
    dg_params c = {.series = DG_CAUCHY, .exponent = 2};
    assert_int_equal(dg_fill(&r, DG_D, &c, m, n, a, m), 0);
    long above_median = 0, far = 0;
    for (int64_t i = 0; i < m * n; i++) {
        assert_true(isfinite(a[i]));
        above_median += fabs(a[i]) > 100.0;
        far += fabs(a[i]) > 100.0 * 100.0;
    }
    assert_true(fabs(above_median / N - 0.5) < 0.01);
    double pfar = 2.0 / M_PI * atan(0.01);
    assert_true(fabs(far / N - pfar) < 6 * sqrt(pfar / N));
    free(a);
}

/* Every dot product of a left row with a right column of the cancelling pair is much smaller than
 * the sum of the magnitudes of its terms (the condition number of the sum is large). */
static void test_cancel_pair_cancels(void **state)
{
    (void)state;
    dg_rng r;
    dg_seed(&r, 3);
    const int64_t m = 17, k = 101, n = 13; /* odd k: one leftover term */
    for (int t = DG_S; t <= DG_D; t++) {
        void *a = malloc(elem_size(t) * (size_t)(m * k)), *b = malloc(elem_size(t) * (size_t)(k * n));
        dg_params pa = {.series = DG_CANCEL, .exponent = 0, .cancel_decades = 6, .role = DG_LEFT};
        dg_params pb = pa;
        pb.role = DG_RIGHT;
        assert_int_equal(dg_fill(&r, t, &pa, m, k, a, m), 0);
        assert_int_equal(dg_fill(&r, t, &pb, k, n, b, k), 0);
        double worst = 0;
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++) {
                long double s = 0, mag = 0;
                for (int64_t q = 0; q < k; q++) {
                    long double x = get(t, a, m, i, q, 0), y = get(t, b, k, q, j, 0);
                    s += x * y;
                    mag += fabsl(x * y);
                }
                assert_true(mag > 0);
                worst = fmax(worst, (double)(fabsl(s) / mag));
            }
        /* |d| <= 10^-3 per pair; float rounding of 1+d adds 2^-24 */
        assert_true(worst < 3e-3);
        free(a);
        free(b);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rng_deterministic_and_uniform),
        cmocka_unit_test(test_uniform_series_ranges_moments_padding),
        cmocka_unit_test(test_invalid_arguments_write_nothing),
        cmocka_unit_test(test_orth_factors_are_orthogonal_and_dense),
        cmocka_unit_test(test_orth_kappa),
        cmocka_unit_test(test_orth_float_and_complex),
        cmocka_unit_test(test_heavy_and_cauchy_tails),
        cmocka_unit_test(test_cancel_pair_cancels),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
