/* The double-double reference: exactly representable cases, and random (also cancelling and
 * heavy-tailed) dot products against MPFR's correctly rounded sum of the exact products. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "datagen.h"
#include "hpref.h"

#include <math.h>
#include <mpfr.h>
#include <stdlib.h>

static void test_exact_cases(void **state)
{
    (void)state;
    /* 2^60 + 1 - 2^60 = 1: a plain double sum gives 0 */
    double x[] = {0x1p60, 1.0, -0x1p60}, ones[] = {1.0, 1.0, 1.0};
    hp_dd s = hp_dot_d(3, x, 1, ones, 1);
    assert_true(s.hi == 1.0 && s.lo == 0.0);

    /* (1 + 2^-30)^2 = 1 + 2^-29 + 2^-60: the low part carries 2^-60 exactly */
    double y = 1.0 + 0x1p-30;
    s = hp_dot_d(1, &y, 1, &y, 1);
    assert_true(s.hi == 1.0 + 0x1p-29 && s.lo == 0x1p-60);
    assert_true(hp_dist(1.0 + 0x1p-29, s) == 0x1p-60);

    /* strides: x = (1, *, 2, *, 3), y = (4, 5, 6) -> 32 */
    double xs[] = {1, 99, 2, 99, 3}, ys[] = {4, 5, 6};
    s = hp_dot_d(3, xs, 2, ys, 1);
    assert_true(s.hi == 32.0 && s.lo == 0.0);
    assert_true(hp_dot_d(0, xs, 1, ys, 1).hi == 0.0);

    /* float: (1 + 2^-23)^2 = 1 + 2^-22 + 2^-46, exact in double */
    float f = 1.0f + 0x1p-23f;
    s = hp_dot_s(1, &f, 1, &f, 1);
    assert_true(hp_to_double(s) == 1.0 + 0x1p-22 + 0x1p-46);

    /* complex: (1 + 2i) * (3 + 4i) = -5 + 10i; conj(1 + 2i) * (3 + 4i) = 11 - 2i */
    double zx[] = {1, 2}, zy[] = {3, 4};
    hp_dd re, im;
    hp_dot_z(1, zx, 1, false, zy, 1, &re, &im);
    assert_true(re.hi == -5.0 && im.hi == 10.0 && re.lo == 0.0 && im.lo == 0.0);
    hp_dot_z(1, zx, 1, true, zy, 1, &re, &im);
    assert_true(re.hi == 11.0 && im.hi == -2.0);
    float cx[] = {1, 2}, cy[] = {3, 4};
    hp_dot_c(1, cx, 1, true, cy, 1, &re, &im);
    assert_true(re.hi == 11.0 && im.hi == -2.0);

    /* dd times double and the double-double dot: (1 + 2^-70) * 3 = 3 + 3 * 2^-70 */
    hp_dd one_eps = {1.0, 0x1p-70};
    hp_dd p = hp_mul_d(one_eps, 3.0);
    assert_true(p.hi == 3.0 && p.lo == 3 * 0x1p-70);
    double three = 3.0;
    s = hp_dot_dd(1, &three, 1, &one_eps, 1);
    assert_true(s.hi == 3.0 && s.lo == 3 * 0x1p-70);

    /* sum of large cancelling dd values keeps the low parts */
    hp_dd a = {0x1p80, 1.0}, b = {-0x1p80, 0x1p-40};
    s = hp_add(a, b);
    assert_true(s.hi == 1.0 + 0x1p-40 && s.lo == 0.0);
}

/* Correctly rounded (to prec bits) sum of the exact products x_k * y_k, y_k = yhi + ylo. */
static void exact_dot(mpfr_t out, int64_t n, const double *x, const double *yhi, const double *ylo)
{
    int terms = ylo ? 2 : 1;
    mpfr_t *t = malloc((size_t)(n * terms) * sizeof *t);
    mpfr_ptr *ptr = calloc((size_t)(n * terms) + 1, sizeof *ptr);
    for (int64_t k = 0; k < n; k++)
        for (int q = 0; q < terms; q++) {
            mpfr_t *e = &t[k * terms + q];
            mpfr_init2(*e, 120); /* a product of two doubles is exact in 106 bits */
            mpfr_set_d(*e, x[k], MPFR_RNDN);
            mpfr_mul_d(*e, *e, q ? ylo[k] : yhi[k], MPFR_RNDN);
            ptr[k * terms + q] = *e;
        }
    mpfr_sum(out, ptr, (unsigned long)(n * terms), MPFR_RNDN);
    for (int64_t k = 0; k < n * terms; k++)
        mpfr_clear(t[k]);
    free(t);
    free(ptr);
}

/* |hp - exact| from MPFR, in double. */
static double mpfr_gap(hp_dd v, mpfr_t exact)
{
    mpfr_t d;
    mpfr_init2(d, 300);
    mpfr_set_d(d, v.hi, MPFR_RNDN);
    mpfr_add_d(d, d, v.lo, MPFR_RNDN);
    mpfr_sub(d, d, exact, MPFR_RNDN);
    double g = fabs(mpfr_get_d(d, MPFR_RNDN));
    mpfr_clear(d);
    return g;
}

static double abs_sum(int64_t n, const double *x, const double *y)
{
    double s = 0;
    for (int64_t k = 0; k < n; k++)
        s += fabs(x[k] * y[k]);
    return s;
}

/* Random data of every series, real and complex, double and float, against MPFR: the error
 * stays below n * 2^-100 of the magnitude sum (the plain double sum's is near 2^-53 of it). */
static void test_random_against_mpfr(void **state)
{
    (void)state;
    dg_rng r;
    dg_seed(&r, 12345);
    const int64_t lengths[] = {1, 2, 7, 64, 1000, 4099};
    const dg_series series[] = {DG_POS, DG_FULL, DG_HEAVY, DG_CAUCHY, DG_CANCEL};
    mpfr_t exact, exact2;
    mpfr_init2(exact, 300);
    mpfr_init2(exact2, 300);
    int plain_worse = 0, cases = 0;
    for (size_t li = 0; li < sizeof lengths / sizeof *lengths; li++)
        for (size_t si = 0; si < sizeof series / sizeof *series; si++) {
            int64_t n = lengths[li];
            double *x = malloc((size_t)n * 2 * sizeof *x), *y = malloc((size_t)n * 2 * sizeof *y);
            double *ylo = malloc((size_t)n * sizeof *ylo);
            float *xf = malloc((size_t)n * sizeof *xf), *yf = malloc((size_t)n * sizeof *yf);
            dg_params pa = {.series = series[si], .exponent = 2, .role = DG_LEFT};
            dg_params pb = pa;
            pb.role = DG_RIGHT;
            dg_fill(&r, DG_D, &pa, 1, n, x, 1); /* a row: inner dimension along columns */
            dg_fill(&r, DG_D, &pb, n, 1, y, n);
            double tol = (double)n * 0x1p-100 * abs_sum(n, x, y);

            exact_dot(exact, n, x, y, NULL);
            assert_true(mpfr_gap(hp_dot_d(n, x, 1, y, 1), exact) <= tol);
            double plain = 0;
            for (int64_t k = 0; k < n; k++)
                plain += x[k] * y[k];
            plain_worse += mpfr_gap(hp_from(plain), exact) > mpfr_gap(hp_dot_d(n, x, 1, y, 1), exact);
            cases++;

            /* double-double second operand: y + ylo with |ylo| ~ 2^-60 |y| */
            hp_dd *ydd = malloc((size_t)n * sizeof *ydd);
            for (int64_t k = 0; k < n; k++) {
                ylo[k] = y[k] * 0x1p-60 * dg_range(&r, -1.0, 1.0);
                ydd[k] = (hp_dd){y[k], ylo[k]};
            }
            exact_dot(exact, n, x, y, ylo);
            assert_true(mpfr_gap(hp_dot_dd(n, x, 1, ydd, 1), exact) <= tol);

            /* float inputs: the exact products of the rounded data */
            for (int64_t k = 0; k < n; k++) {
                xf[k] = (float)x[k];
                yf[k] = (float)y[k];
                x[k] = xf[k];
                y[k] = yf[k];
                ydd[k] = (hp_dd){y[k], ylo[k]};
            }
            exact_dot(exact, n, x, y, NULL);
            assert_true(mpfr_gap(hp_dot_s(n, xf, 1, yf, 1), exact) <= (double)n * 0x1p-100 * abs_sum(n, x, y));
            exact_dot(exact, n, x, y, ylo);
            assert_true(mpfr_gap(hp_dot_sdd(n, xf, 1, ydd, 1), exact) <= (double)n * 0x1p-100 * abs_sum(n, x, y) * 2);

            /* complex, conjugated: re = sum xr yr + xi yi, im = sum xr yi - xi yr */
            double *zx = malloc((size_t)n * 2 * sizeof *zx), *zy = malloc((size_t)n * 2 * sizeof *zy);
            dg_fill(&r, DG_Z, &pa, 1, n, zx, 1);
            dg_fill(&r, DG_Z, &pb, n, 1, zy, n);
            double *xr = malloc((size_t)n * 2 * sizeof *xr), *yr = malloc((size_t)n * 2 * sizeof *yr);
            for (int64_t k = 0; k < n; k++) {
                xr[2 * k] = zx[2 * k];
                yr[2 * k] = zy[2 * k];
                xr[2 * k + 1] = zx[2 * k + 1];
                yr[2 * k + 1] = zy[2 * k + 1];
            }
            hp_dd re, im;
            hp_dot_z(n, zx, 1, true, zy, 1, &re, &im);
            exact_dot(exact, 2 * n, xr, yr, NULL); /* xr yr + xi yi */
            double ztol = 2.0 * (double)n * 0x1p-100 * abs_sum(2 * n, xr, yr);
            assert_true(mpfr_gap(re, exact) <= ztol);
            for (int64_t k = 0; k < n; k++) { /* pair xr with yi and -xi with yr */
                yr[2 * k] = zy[2 * k + 1];
                yr[2 * k + 1] = -zy[2 * k];
            }
            exact_dot(exact2, 2 * n, xr, yr, NULL);
            assert_true(mpfr_gap(im, exact2) <= 2.0 * (double)n * 0x1p-100 * abs_sum(2 * n, xr, yr));

            /* the same against the double-double complex dot with zero low parts */
            hp_dd *yre = malloc((size_t)n * sizeof *yre), *yim = malloc((size_t)n * sizeof *yim);
            for (int64_t k = 0; k < n; k++) {
                yre[k] = hp_from(zy[2 * k]);
                yim[k] = hp_from(zy[2 * k + 1]);
            }
            hp_dd re2, im2;
            hp_dot_zdd(n, zx, 1, true, yre, yim, 1, &re2, &im2);
            assert_true(mpfr_gap(re2, exact) <= ztol);
            assert_true(mpfr_gap(im2, exact2) <= 2.0 * (double)n * 0x1p-100 * abs_sum(2 * n, xr, yr));

            free(x), free(y), free(ylo), free(xf), free(yf), free(ydd), free(zx), free(zy);
            free(xr), free(yr), free(yre), free(yim);
        }
    /* the reference is never worse and usually much better than the plain sum */
    assert_true(plain_worse > cases / 2);
    mpfr_clear(exact);
    mpfr_clear(exact2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_exact_cases),
        cmocka_unit_test(test_random_against_mpfr),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
