#include "datagen.h"

#include <complex.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

void dg_seed(dg_rng *r, uint64_t seed)
{
    uint64_t x = seed;
    for (int i = 0; i < 4; i++)
        r->s[i] = splitmix64(&x);
}

static inline uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

uint64_t dg_next(dg_rng *r)
{
    uint64_t *s = r->s;
    const uint64_t result = rotl(s[1] * 5, 7) * 9;
    const uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

double dg_uniform(dg_rng *r) { return (double)(dg_next(r) >> 11) * 0x1.0p-53; }

double dg_range(dg_rng *r, double lo, double hi) { return lo + (hi - lo) * dg_uniform(r); }

double dg_normal(dg_rng *r)
{
    for (;;) {
        double u = 2.0 * dg_uniform(r) - 1.0, v = 2.0 * dg_uniform(r) - 1.0;
        double s = u * u + v * v;
        if (s > 0.0 && s < 1.0)
            return u * sqrt(-2.0 * log(s) / s);
    }
}

uint64_t dg_below(dg_rng *r, uint64_t n)
{
    /* Rejection keeps the result exactly uniform for every n. */
    uint64_t limit = UINT64_MAX - UINT64_MAX % n;
    uint64_t x;
    do
        x = dg_next(r);
    while (x >= limit);
    return x % n;
}

static const char *const series_names[] = {"pos", "full", "orth", "heavy", "cauchy", "cancel"};

const char *dg_series_name(dg_series s)
{
    return (unsigned)s < sizeof series_names / sizeof *series_names ? series_names[s] : "?";
}

int dg_series_from_name(const char *name)
{
    for (unsigned i = 0; i < sizeof series_names / sizeof *series_names; i++)
        if (strcmp(name, series_names[i]) == 0)
            return (int)i;
    return -1;
}

/* The unit Householder vector of a reflection that maps the first unit vector of a subspace of
 * length len to a uniformly random direction (Stewart 1980): v ~ x + sign(x_0) |x| e_0 with x
 * Gaussian. A reflection of a random unit vector instead would stay close to the identity. */
static void random_householder(dg_rng *r, double *v, int64_t len)
{
    double nrm;
    do {
        nrm = 0.0;
        for (int64_t i = 0; i < len; i++) {
            v[i] = dg_normal(r);
            nrm += v[i] * v[i];
        }
    } while (nrm == 0.0);
    v[0] += copysign(sqrt(nrm), v[0]);
    nrm = 0.0;
    for (int64_t i = 0; i < len; i++)
        nrm += v[i] * v[i];
    nrm = 1.0 / sqrt(nrm);
    for (int64_t i = 0; i < len; i++)
        v[i] *= nrm;
}

/* a <- (I - 2 v v^T) a on rows off..off+len-1 (v unit); column by column, contiguous. */
static void reflect_left(double *a, int64_t ld, int64_t n, const double *v, int64_t off, int64_t len)
{
    for (int64_t j = 0; j < n; j++) {
        double *col = a + j * ld + off;
        double s = 0.0;
        for (int64_t i = 0; i < len; i++)
            s += v[i] * col[i];
        s *= 2.0;
        for (int64_t i = 0; i < len; i++)
            col[i] -= s * v[i];
    }
}

/* a <- a (I - 2 v v^T) on columns off..off+len-1; w (m) is scratch. */
static void reflect_right(double *a, int64_t ld, int64_t m, const double *v, int64_t off, int64_t len,
                          double *w)
{
    memset(w, 0, (size_t)m * sizeof *w);
    for (int64_t j = 0; j < len; j++) {
        const double *col = a + (off + j) * ld;
        for (int64_t i = 0; i < m; i++)
            w[i] += col[i] * v[j];
    }
    for (int64_t j = 0; j < len; j++) {
        double *col = a + (off + j) * ld;
        double f = 2.0 * v[j];
        for (int64_t i = 0; i < m; i++)
            col[i] -= f * w[i];
    }
}

/* Applies the reflections of one orthogonal factor of dimension dim, from the left or right. */
static void apply_orthogonal(dg_rng *r, double *a, int64_t ld, int64_t m, int64_t n, int left,
                             int reflections, double *v, double *w)
{
    int64_t dim = left ? m : n;
    if (dim < 2)
        return;
    /* reflections == 0: Q = H_0 H_1 ... H_{dim-2}, H_k acting on coordinates k.. (the Q of a
     * Householder QR of a Gaussian matrix): dense and, up to column signs, Haar-distributed. Q a
     * is applied as H_{dim-2} first, and a Q^T likewise ends with H_0. A positive count applies
     * that many reflections of the whole space instead: cheaper, but a rank-count perturbation
     * of the identity. */
    int64_t count = reflections > 0 ? reflections : dim - 1;
    for (int64_t step = 0; step < count; step++) {
        int64_t off = reflections > 0 ? 0 : count - 1 - step;
        int64_t len = dim - off;
        random_householder(r, v, len);
        if (left)
            reflect_left(a, ld, n, v, off, len);
        else
            reflect_right(a, ld, m, v, off, len, w);
    }
}

int dg_orth_from_diag(dg_rng *r, int64_t m, int64_t n, const double *d, double scale,
                      int reflections, double *a, int64_t ld)
{
    if (m < 0 || n < 0 || ld < (m > 1 ? m : 1) || reflections < 0)
        return -1;
    int64_t p = m < n ? m : n;
    int64_t big = m > n ? m : n;
    double *v = malloc((size_t)(big > 0 ? big : 1) * sizeof *v);
    double *w = malloc((size_t)(m > 0 ? m : 1) * sizeof *w);
    if (!v || !w) {
        free(v);
        free(w);
        return -1;
    }
    for (int64_t j = 0; j < n; j++)
        for (int64_t i = 0; i < m; i++)
            a[i + j * ld] = (i == j && i < p) ? d[i] : 0.0;
    apply_orthogonal(r, a, ld, m, n, 1, reflections, v, w);
    apply_orthogonal(r, a, ld, m, n, 0, reflections, v, w);
    for (int64_t j = 0; j < n; j++)
        for (int64_t i = 0; i < m; i++)
            a[i + j * ld] *= scale;
    free(v);
    free(w);
    return 0;
}

/* One element of the elementwise series (all but T_orth and cancel). */
static double scalar_element(dg_rng *r, const dg_params *p, double scale)
{
    switch (p->series) {
    case DG_POS:
        return dg_range(r, 0.0, scale);
    case DG_FULL:
        return dg_range(r, -scale, scale);
    case DG_HEAVY: {
        double dec = p->decades > 0.0 ? p->decades : 12.0;
        double mag = scale * pow(10.0, dg_range(r, -0.5 * dec, 0.5 * dec));
        return (dg_next(r) >> 63) ? -mag : mag;
    }
    case DG_CAUCHY: {
        /* u in (0, 1): the tails reach about 3e15 * scale, finite in double and float. */
        double u = ((double)(dg_next(r) >> 11) + 0.5) * 0x1.0p-53;
        return scale * tan(M_PI * (u - 0.5));
    }
    default:
        return 0.0;
    }
}

/* The relative offset d of a cancelling pair: random sign, |d| in [10^-cd, 10^-cd/2]. */
static double cancel_offset(dg_rng *r, const dg_params *p)
{
    double cd = p->cancel_decades > 0.0 ? p->cancel_decades : 6.0;
    double mag = pow(10.0, -cd * (0.5 + 0.5 * dg_uniform(r)));
    return (dg_next(r) >> 63) ? -mag : mag;
}

static double cancel_base(dg_rng *r, double scale)
{
    double mag = scale * pow(10.0, dg_range(r, -1.0, 1.0));
    return (dg_next(r) >> 63) ? -mag : mag;
}

/* Fills component comp (0 real, 1 imaginary) of a double matrix with stride `step` doubles per
 * element, for every series except T_orth. */
static void fill_component(dg_rng *r, const dg_params *p, int64_t m, int64_t n, double *a, int64_t ld,
                           int step, int comp)
{
    double scale = pow(10.0, p->exponent);
#define AT(i, j) a[((i) + (j) * ld) * step + comp]
    if (p->series != DG_CANCEL) {
        for (int64_t j = 0; j < n; j++)
            for (int64_t i = 0; i < m; i++)
                AT(i, j) = scalar_element(r, p, scale);
        return;
    }
    double leftover = scale * pow(10.0, -(p->cancel_decades > 0.0 ? p->cancel_decades : 6.0));
    if (p->role == DG_LEFT) {
        /* Pairs along the columns (the inner dimension of a left operand). */
        for (int64_t i = 0; i < m; i++) {
            int64_t j = 0;
            for (; j + 1 < n; j += 2) {
                double x = cancel_base(r, scale);
                AT(i, j) = x;
                AT(i, j + 1) = -x * (1.0 + cancel_offset(r, p));
            }
            if (j < n)
                AT(i, j) = leftover * dg_normal(r);
        }
    } else {
        for (int64_t j = 0; j < n; j++) {
            int64_t i = 0;
            for (; i + 1 < m; i += 2) {
                double y = cancel_base(r, scale);
                AT(i, j) = y;
                AT(i + 1, j) = y * (1.0 + cancel_offset(r, p));
            }
            if (i < m)
                AT(i, j) = leftover * dg_normal(r);
        }
    }
#undef AT
}

static int orth_diag(dg_rng *r, double kappa, int64_t len, double *d)
{
    if (!(kappa >= 1.0))
        return -1;
    /* Uniform values scaled so that the smallest is 1/kappa and the largest kappa (thesis 7.1.2):
     * both ends are attained, the rest uniform between them, in random order. */
    for (int64_t i = 0; i < len; i++)
        d[i] = dg_range(r, 1.0 / kappa, kappa);
    if (len >= 1)
        d[0] = kappa;
    if (len >= 2)
        d[1] = 1.0 / kappa;
    for (int64_t i = len - 1; i > 0; i--) {
        int64_t k = (int64_t)dg_below(r, (uint64_t)i + 1);
        double t = d[i];
        d[i] = d[k];
        d[k] = t;
    }
    return 0;
}

int dg_fill(dg_rng *r, dg_type t, const dg_params *p, int64_t m, int64_t n, void *out, int64_t ld)
{
    if (!r || !p || m < 0 || n < 0 || ld < (m > 1 ? m : 1) || (unsigned)t > DG_Z || (!out && m && n))
        return -1;
    if ((unsigned)p->series > DG_CANCEL)
        return -1;
    if (m == 0 || n == 0)
        return 0;
    const int cplx = (t == DG_C || t == DG_Z);
    const int step = cplx ? 2 : 1;
    /* Generate in double, packed with ld = m, then convert into the caller's layout. */
    double *tmp = malloc((size_t)m * (size_t)n * (size_t)step * sizeof *tmp);
    if (!tmp)
        return -1;
    int rc = 0;
    if (p->series == DG_ORTH) {
        int64_t len = m < n ? m : n;
        double *d = malloc((size_t)len * 2 * sizeof *d);
        double *part = cplx ? malloc((size_t)m * (size_t)n * sizeof *part) : NULL;
        if (!d || (cplx && !part) || orth_diag(r, p->kappa, len, d) != 0) {
            free(d);
            free(part);
            free(tmp);
            return -1;
        }
        double scale = pow(10.0, p->exponent);
        if (!cplx) {
            rc = dg_orth_from_diag(r, m, n, d, scale, p->reflections, tmp, m);
        } else {
            /* Same U and V for both parts: replay the generator state. */
            double *ds = d + len;
            for (int64_t i = 0; i < len; i++) {
                double phi = dg_range(r, 0.0, 2.0 * M_PI);
                ds[i] = d[i] * sin(phi);
                d[i] *= cos(phi);
            }
            dg_rng saved = *r;
            rc = dg_orth_from_diag(r, m, n, d, scale, p->reflections, part, m);
            for (int64_t i = 0; rc == 0 && i < m * n; i++)
                tmp[2 * i] = part[i];
            *r = saved;
            if (rc == 0)
                rc = dg_orth_from_diag(r, m, n, ds, scale, p->reflections, part, m);
            for (int64_t i = 0; rc == 0 && i < m * n; i++)
                tmp[2 * i + 1] = part[i];
        }
        free(d);
        free(part);
    } else {
        for (int comp = 0; comp < step; comp++)
            fill_component(r, p, m, n, tmp, m, step, comp);
    }
    if (rc == 0) {
        for (int64_t j = 0; j < n; j++)
            for (int64_t i = 0; i < m * step; i++) {
                double x = tmp[i + j * m * step];
                int64_t o = i + j * ld * step;
                if (t == DG_S || t == DG_C)
                    ((float *)out)[o] = (float)x;
                else
                    ((double *)out)[o] = x;
            }
    }
    free(tmp);
    return rc;
}
