#include "hpref.h"

#include <math.h>

/* Error-free transformations (Knuth's TwoSum, Dekker's Fast2Sum, fma TwoProd). The compiler must
 * not contract or reassociate here: the build uses standard C semantics (no -ffast-math). */
static inline hp_dd two_sum(double a, double b)
{
    double s = a + b;
    double bb = s - a;
    double err = (a - (s - bb)) + (b - bb);
    return (hp_dd){s, err};
}

static inline hp_dd fast_two_sum(double a, double b) /* |a| >= |b| or a == 0 */
{
    double s = a + b;
    return (hp_dd){s, b - (s - a)};
}

static inline hp_dd two_prod(double a, double b)
{
    double p = a * b;
    return (hp_dd){p, fma(a, b, -p)};
}

/* Accurate double-double addition: both the high and the low parts are summed error-free, so the
 * relative error is about 2^-104 even when the operands nearly cancel. */
hp_dd hp_add(hp_dd a, hp_dd b)
{
    hp_dd s = two_sum(a.hi, b.hi);
    hp_dd t = two_sum(a.lo, b.lo);
    s.lo += t.hi;
    s = fast_two_sum(s.hi, s.lo);
    s.lo += t.lo;
    return fast_two_sum(s.hi, s.lo);
}

hp_dd hp_neg(hp_dd a) { return (hp_dd){-a.hi, -a.lo}; }

hp_dd hp_sub(hp_dd a, hp_dd b) { return hp_add(a, hp_neg(b)); }

hp_dd hp_add_prod(hp_dd a, double x, double y) { return hp_add(a, two_prod(x, y)); }

hp_dd hp_mul_d(hp_dd a, double x)
{
    hp_dd p = two_prod(a.hi, x);
    p.lo += a.lo * x;
    return fast_two_sum(p.hi, p.lo);
}

double hp_dist(double computed, hp_dd ref) { return fabs(hp_to_double(hp_sub(hp_from(computed), ref))); }

hp_dd hp_dot_d(int64_t n, const double *x, int64_t incx, const double *y, int64_t incy)
{
    hp_dd s = {0.0, 0.0};
    for (int64_t k = 0; k < n; k++)
        s = hp_add_prod(s, x[k * incx], y[k * incy]);
    return s;
}

hp_dd hp_dot_s(int64_t n, const float *x, int64_t incx, const float *y, int64_t incy)
{
    /* A product of two floats is exact in double (24 + 24 <= 53 bits). */
    hp_dd s = {0.0, 0.0};
    for (int64_t k = 0; k < n; k++)
        s = hp_add(s, hp_from((double)x[k * incx] * (double)y[k * incy]));
    return s;
}

hp_dd hp_dot_dd(int64_t n, const double *x, int64_t incx, const hp_dd *y, int64_t incy)
{
    hp_dd s = {0.0, 0.0};
    for (int64_t k = 0; k < n; k++)
        s = hp_add(s, hp_mul_d(y[k * incy], x[k * incx]));
    return s;
}

hp_dd hp_dot_sdd(int64_t n, const float *x, int64_t incx, const hp_dd *y, int64_t incy)
{
    hp_dd s = {0.0, 0.0};
    for (int64_t k = 0; k < n; k++)
        s = hp_add(s, hp_mul_d(y[k * incy], (double)x[k * incx]));
    return s;
}

void hp_dot_z(int64_t n, const double *x, int64_t incx, bool conjx, const double *y, int64_t incy,
              hp_dd *re, hp_dd *im)
{
    hp_dd r = {0.0, 0.0}, i = {0.0, 0.0};
    for (int64_t k = 0; k < n; k++) {
        double xr = x[2 * k * incx], xi = x[2 * k * incx + 1];
        double yr = y[2 * k * incy], yi = y[2 * k * incy + 1];
        if (conjx)
            xi = -xi;
        r = hp_add_prod(r, xr, yr);
        r = hp_add_prod(r, -xi, yi);
        i = hp_add_prod(i, xr, yi);
        i = hp_add_prod(i, xi, yr);
    }
    *re = r;
    *im = i;
}

void hp_dot_c(int64_t n, const float *x, int64_t incx, bool conjx, const float *y, int64_t incy,
              hp_dd *re, hp_dd *im)
{
    hp_dd r = {0.0, 0.0}, i = {0.0, 0.0};
    for (int64_t k = 0; k < n; k++) {
        double xr = x[2 * k * incx], xi = x[2 * k * incx + 1];
        double yr = y[2 * k * incy], yi = y[2 * k * incy + 1];
        if (conjx)
            xi = -xi;
        r = hp_add(r, hp_from(xr * yr));
        r = hp_add(r, hp_from(-xi * yi));
        i = hp_add(i, hp_from(xr * yi));
        i = hp_add(i, hp_from(xi * yr));
    }
    *re = r;
    *im = i;
}

/* Complex x (double or float parts) against a double-double y: the same arithmetic for both. */
#define HP_DOT_COMPLEX_DD(name, T)                                                                 \
    void name(int64_t n, const T *x, int64_t incx, bool conjx, const hp_dd *yre,                   \
              const hp_dd *yim, int64_t incy, hp_dd *re, hp_dd *im)                                \
    {                                                                                              \
        hp_dd r = {0.0, 0.0}, i = {0.0, 0.0};                                                      \
        for (int64_t k = 0; k < n; k++) {                                                          \
            double xr = x[2 * k * incx], xi = x[2 * k * incx + 1];                                 \
            if (conjx)                                                                             \
                xi = -xi;                                                                          \
            hp_dd br = yre[k * incy], bi = yim[k * incy];                                          \
            r = hp_add(r, hp_mul_d(br, xr));                                                       \
            r = hp_sub(r, hp_mul_d(bi, xi));                                                       \
            i = hp_add(i, hp_mul_d(bi, xr));                                                       \
            i = hp_add(i, hp_mul_d(br, xi));                                                       \
        }                                                                                          \
        *re = r;                                                                                   \
        *im = i;                                                                                   \
    }

HP_DOT_COMPLEX_DD(hp_dot_zdd, double)
HP_DOT_COMPLEX_DD(hp_dot_cdd, float)
