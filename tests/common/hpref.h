/* High-precision reference for dot products and checksum elements: double-double arithmetic
 * (about 106 significant bits, error-free transformations with fma).
 *
 * Why double-double and not MPFR: the campaign needs the true value of every checksum element of
 * every GEMM it runs (about m*k*(n/BS) + n*k*(m/BS) terms per GEMM, 10^7..10^8 at n = 1024), which
 * double-double does at a few ns per term, MPFR at about a hundred. The precision is what matters
 * and is enough: the errors we measure are rounding errors of FP64 (2^-53 relative to the sum of
 * the magnitudes of the terms, times sqrt(n)); the reference's own error is below
 * about n * 2^-104 of that same sum, which leaves more than 2^40 of margin at n = 1024 (the thesis
 * used 100-bit GMP for the same purpose). The unit tests check these functions against MPFR's
 * correctly rounded sums (mpfr_sum) and against exactly representable cases. */
#ifndef BLASFT_TEST_HPREF_H
#define BLASFT_TEST_HPREF_H

#include <stdbool.h>
#include <stdint.h>

typedef struct hp_dd {
    double hi, lo; /* value = hi + lo, |lo| <= ulp(hi)/2 */
} hp_dd;

static inline hp_dd hp_from(double x) { return (hp_dd){x, 0.0}; }
static inline double hp_to_double(hp_dd x) { return x.hi + x.lo; }

hp_dd hp_add(hp_dd a, hp_dd b);
hp_dd hp_sub(hp_dd a, hp_dd b);
hp_dd hp_neg(hp_dd a);
/* a + x*y with x*y exact (fma two-product). */
hp_dd hp_add_prod(hp_dd a, double x, double y);
/* a * x (x a double), error about 2^-104 |a x|. */
hp_dd hp_mul_d(hp_dd a, double x);
/* |a - b| rounded to double: the distance of a computed value to the reference. */
double hp_dist(double computed, hp_dd ref);

/* Dot products sum_k x[k*incx] * y[k*incy] (real), accurate to about n * 2^-104 * sum |x_k y_k|. */
hp_dd hp_dot_d(int64_t n, const double *x, int64_t incx, const double *y, int64_t incy);
hp_dd hp_dot_s(int64_t n, const float *x, int64_t incx, const float *y, int64_t incy);
/* x real double, y given in double-double (a checksum vector computed by hp_*). */
hp_dd hp_dot_dd(int64_t n, const double *x, int64_t incx, const hp_dd *y, int64_t incy);
hp_dd hp_dot_sdd(int64_t n, const float *x, int64_t incx, const hp_dd *y, int64_t incy);

/* Complex: x and y interleaved (re, im); conjx conjugates x. Strides count complex elements. */
void hp_dot_z(int64_t n, const double *x, int64_t incx, bool conjx, const double *y, int64_t incy,
              hp_dd *re, hp_dd *im);
void hp_dot_c(int64_t n, const float *x, int64_t incx, bool conjx, const float *y, int64_t incy,
              hp_dd *re, hp_dd *im);
/* Complex x times a complex double-double vector y (yre, yim, stride incy). */
void hp_dot_zdd(int64_t n, const double *x, int64_t incx, bool conjx, const hp_dd *yre,
                const hp_dd *yim, int64_t incy, hp_dd *re, hp_dd *im);
void hp_dot_cdd(int64_t n, const float *x, int64_t incx, bool conjx, const hp_dd *yre,
                const hp_dd *yim, int64_t incy, hp_dd *re, hp_dd *im);

#endif
