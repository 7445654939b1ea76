/* Hot loops of the host engine (see abft_kernels.h for the order-of-summation guarantee). On
 * x86-64 each kernel is also built for CPUs with FMA (and so AVX), picked at load time by CPU
 * feature: without hardware FMA every exact product error is a libm call, and without AVX the
 * independent sums run two at a time instead of four. */
#include "abft/abft_kernels.h"

#include "abft/abft_arith.h"

#include "hostblas.h"

#include <math.h>
#include <pthread.h>
#include <string.h>

/* Not under ThreadSanitizer: the clones' resolvers run during relocation, before its runtime
 * has started, and crash there. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_THREAD__)
#define ABFT_HOT __attribute__((target_clones("fma", "default")))
#else
#define ABFT_HOT
#endif

/* Neumaier's TwoSum step, the same operations as blasft_csum_add. */
#define TWO_SUM(s, c, x)                                                                          \
    do {                                                                                          \
        double t_ = (s) + (x), bp_ = t_ - (s);                                                    \
        (c) += ((s) - (t_ - bp_)) + ((x) - bp_);                                                  \
        (s) = t_;                                                                                 \
    } while (0)

/* w*v and its rounding error, each added: the exact product enters the sum. */
#define ADD_PROD(s, c, w, v, prod)                                                                \
    do {                                                                                          \
        double p_ = (w) * (v);                                                                    \
        TWO_SUM(s, c, p_);                                                                        \
        if (prod) {                                                                               \
            double e_ = fma((w), (v), -p_);                                                       \
            TWO_SUM(s, c, e_);                                                                    \
        }                                                                                         \
    } while (0)

#define DOWN_BODY(T)                                                                              \
    do {                                                                                          \
        const T *p0 = base[0], *p1 = base[1], *p2 = base[2], *p3 = base[3];                       \
        for (int64_t i = 0; i < len; i++) {                                                       \
            const double wi = w[i];                                                               \
            const double v[4] = {p0[i * stride], p1[i * stride], p2[i * stride], p3[i * stride]}; \
            for (int q = 0; q < 4; q++)                                                           \
                ADD_PROD(s[q], c[q], wi, v[q], prod);                                             \
        }                                                                                         \
    } while (0)

ABFT_HOT static void down_d(const void *const base[4], int64_t stride, int64_t len,
                            const double *w, int prod, double *s, double *c)
{
    if (prod)
        DOWN_BODY(double);
    else
        DOWN_BODY(double);
}

ABFT_HOT static void down_f(const void *const base[4], int64_t stride, int64_t len,
                            const double *w, int prod, double *s, double *c)
{
    if (prod)
        DOWN_BODY(float);
    else
        DOWN_BODY(float);
}

#if defined(__GNUC__) && !defined(__clang__)
/* Contiguous streams (stride 1): four rows of each of the four streams are loaded as one vector
 * each and transposed in registers, so every vector step adds row i of all four streams, the
 * same operations in the same order as DOWN_BODY without its element-by-element gathers. */
typedef double v4d __attribute__((vector_size(32)));
typedef float v4f __attribute__((vector_size(16)));
typedef int64_t v4i __attribute__((vector_size(32)));

/* Vectors go by pointer: by value they would change the ABI between the clones (-Wpsabi). */
static inline void v_two_sum(v4d *s, v4d *c, const v4d *x)
{
    v4d t = *s + *x, bp = t - *s;
    *c += (*s - (t - bp)) + (*x - bp);
    *s = t;
}

static inline void v_add_prod(v4d *s, v4d *c, double w, const v4d *v, int prod)
{
    if (!prod) { /* every weight is 1: w v is v, exactly */
        v_two_sum(s, c, v);
        return;
    }
    v4d p = w * *v;
    v_two_sum(s, c, &p);
    if (prod) {
        v4d e;
        for (int q = 0; q < 4; q++)
            e[q] = fma(w, (*v)[q], -p[q]);
        v_two_sum(s, c, &e);
    }
}

static inline void v_transpose(v4d r[4])
{
    const v4i lo = {0, 4, 2, 6}, hi = {1, 5, 3, 7}, first = {0, 1, 4, 5}, second = {2, 3, 6, 7};
    v4d a = __builtin_shuffle(r[0], r[1], lo), b = __builtin_shuffle(r[0], r[1], hi);
    v4d c = __builtin_shuffle(r[2], r[3], lo), d = __builtin_shuffle(r[2], r[3], hi);
    r[0] = __builtin_shuffle(a, c, first);
    r[1] = __builtin_shuffle(b, d, first);
    r[2] = __builtin_shuffle(a, c, second);
    r[3] = __builtin_shuffle(b, d, second);
}

/* Eight streams as two groups of four: the two groups' compensated sums are independent chains,
 * so one group's additions run while the other's wait on their latency (one group alone left
 * the adder idle most of the time). */
#define DOWN_TILE_BODY(LOAD)                                                                      \
    do {                                                                                          \
        v4d vs0 = {0, 0, 0, 0}, vc0 = {0, 0, 0, 0}, vs1 = {0, 0, 0, 0}, vc1 = {0, 0, 0, 0};       \
        int64_t i = 0;                                                                            \
        for (; i + 4 <= len; i += 4) {                                                            \
            v4d r0[4], r1[4];                                                                     \
            for (int q = 0; q < 4; q++) {                                                         \
                LOAD(&r0[q], q, i);                                                               \
                LOAD(&r1[q], q + 4, i);                                                           \
            }                                                                                     \
            v_transpose(r0);                                                                      \
            v_transpose(r1);                                                                      \
            for (int q = 0; q < 4; q++) {                                                         \
                v_add_prod(&vs0, &vc0, w[i + q], &r0[q], prod);                                   \
                v_add_prod(&vs1, &vc1, w[i + q], &r1[q], prod);                                   \
            }                                                                                     \
        }                                                                                         \
        for (; i < len; i++) {                                                                    \
            v4d v0, v1;                                                                           \
            for (int q = 0; q < 4; q++) {                                                         \
                v0[q] = (double)p[q][i];                                                          \
                v1[q] = (double)p[q + 4][i];                                                      \
            }                                                                                     \
            v_add_prod(&vs0, &vc0, w[i], &v0, prod);                                              \
            v_add_prod(&vs1, &vc1, w[i], &v1, prod);                                              \
        }                                                                                         \
        for (int q = 0; q < 4; q++) {                                                             \
            s[q] = vs0[q];                                                                        \
            c[q] = vc0[q];                                                                        \
            s[q + 4] = vs1[q];                                                                    \
            c[q + 4] = vc1[q];                                                                    \
        }                                                                                         \
    } while (0)

/* Unaligned, aliasing vector views of the data: one vector load each (a memcpy into the array
 * went through the stack in halves and stalled store forwarding). */
typedef double v4d_u __attribute__((vector_size(32), aligned(8), may_alias));
typedef float v4f_u __attribute__((vector_size(16), aligned(4), may_alias));

static inline void load_d(v4d *v, const double *x)
{
    *v = *(const v4d_u *)x;
}

static inline void load_f(v4d *v, const float *x)
{
    v4f f = *(const v4f_u *)x;
    *v = __builtin_convertvector(f, v4d);
}

#define LOAD_D(v, q, i) load_d(v, p[q] + (i))
#define LOAD_F(v, q, i) load_f(v, p[q] + (i))

ABFT_HOT static void down_tile_d(const void *const base[8], int64_t len, const double *w, int prod,
                                 double *s, double *c)
{
    const double *p[8] = {base[0], base[1], base[2], base[3], base[4], base[5], base[6], base[7]};
    if (prod)
        DOWN_TILE_BODY(LOAD_D);
    else
        DOWN_TILE_BODY(LOAD_D);
}

ABFT_HOT static void down_tile_f(const void *const base[8], int64_t len, const double *w, int prod,
                                 double *s, double *c)
{
    const float *p[8] = {base[0], base[1], base[2], base[3], base[4], base[5], base[6], base[7]};
    if (prod)
        DOWN_TILE_BODY(LOAD_F);
    else
        DOWN_TILE_BODY(LOAD_F);
}
#define HAVE_DOWN_TILE 1
#endif

void abft_k_down(const void *const base[ABFT_K_STREAMS], int single, int64_t stride, int64_t len,
                 const double *w, int prod, double out[ABFT_K_STREAMS])
{
    double s[8] = {0, 0, 0, 0, 0, 0, 0, 0}, c[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    /* the two branches of each body differ only in the constant prod, so each is specialised */
#ifdef HAVE_DOWN_TILE
    if (stride == 1) {
        if (single)
            down_tile_f(base, len, w, prod != 0, s, c);
        else
            down_tile_d(base, len, w, prod != 0, s, c);
    } else
#endif
        for (int h = 0; h < 8; h += 4) {
            if (single)
                down_f(base + h, stride, len, w, prod != 0, s + h, c + h);
            else
                down_d(base + h, stride, len, w, prod != 0, s + h, c + h);
        }
    for (int q = 0; q < 8; q++)
        out[q] = s[q] + c[q];
}

/* Rows per chunk of abft_k_across: the accumulators and the chunk of a column stay in L1. */
#define ACROSS_CHUNK 512

/* Four columns per sweep, added to each row's sum in column order: the accumulators are loaded
 * and stored once per four columns instead of once per column. */
#define ACROSS_BODY(T)                                                                            \
    do {                                                                                          \
        const T *mm = m;                                                                          \
        int64_t j = 0;                                                                            \
        for (; j + 4 <= cols; j += 4) {                                                           \
            const T *c0 = mm + j * ld, *c1 = c0 + ld, *c2 = c1 + ld, *c3 = c2 + ld;               \
            const double w0 = w[j], w1 = w[j + 1], w2 = w[j + 2], w3 = w[j + 3];                  \
            for (int64_t ri = 0; ri < n; ri++) {                                                  \
                double sr = s[ri], cr = c[ri];                                                    \
                ADD_PROD(sr, cr, w0, (double)c0[ri], prod);                                       \
                ADD_PROD(sr, cr, w1, (double)c1[ri], prod);                                       \
                ADD_PROD(sr, cr, w2, (double)c2[ri], prod);                                       \
                ADD_PROD(sr, cr, w3, (double)c3[ri], prod);                                       \
                s[ri] = sr;                                                                       \
                c[ri] = cr;                                                                       \
            }                                                                                     \
        }                                                                                         \
        for (; j < cols; j++) {                                                                   \
            const T *col = mm + j * ld;                                                           \
            const double wj = w[j];                                                               \
            for (int64_t ri = 0; ri < n; ri++)                                                    \
                ADD_PROD(s[ri], c[ri], wj, (double)col[ri], prod);                                \
        }                                                                                         \
    } while (0)

ABFT_HOT static void across_d(const double *m, int64_t ld, int64_t n, int64_t cols,
                              const double *w, int prod, double *restrict s, double *restrict c)
{
    if (prod)
        ACROSS_BODY(double);
    else
        ACROSS_BODY(double);
}

ABFT_HOT static void across_f(const float *m, int64_t ld, int64_t n, int64_t cols,
                              const double *w, int prod, double *restrict s, double *restrict c)
{
    if (prod)
        ACROSS_BODY(float);
    else
        ACROSS_BODY(float);
}

void abft_k_across(const void *m, int single, int64_t ld, int64_t nreal, int64_t cols,
                   const double *w, int prod, double *out, double *work)
{
    for (int64_t r0 = 0; r0 < nreal; r0 += ACROSS_CHUNK) {
        int64_t n = nreal - r0 < ACROSS_CHUNK ? nreal - r0 : ACROSS_CHUNK;
        double *s = work, *c = work + n;
        memset(work, 0, (size_t)(2 * n) * sizeof *work);
        if (single)
            across_f((const float *)m + r0, ld, n, cols, w, prod != 0, s, c);
        else
            across_d((const double *)m + r0, ld, n, cols, w, prod != 0, s, c);
        for (int64_t ri = 0; ri < n; ri++)
            out[r0 + ri] = s[ri] + c[ri];
    }
}

ABFT_HOT void abft_k_promote(double *dst, const void *src, int single, int64_t rows, int64_t cols,
                             int64_t ld)
{
    for (int64_t j = 0; j < cols; j++) {
        double *d = dst + rows * j;
        if (single) {
            const float *s = (const float *)src + ld * j;
            for (int64_t i = 0; i < rows; i++)
                d[i] = (double)s[i];
        } else
            memcpy(d, (const double *)src + ld * j, (size_t)rows * sizeof *d);
    }
}

/* mags[v] = |x_v|, the larger part's for complex data (P = 2, parts interleaved). */
#define MAGS_BODY(T)                                                                              \
    do {                                                                                          \
        const T *xx = x;                                                                          \
        if (P == 1)                                                                               \
            for (int64_t v = 0; v < len; v++)                                                     \
                mags[v] = fabs((double)xx[v]);                                                    \
        else                                                                                      \
            for (int64_t v = 0; v < len; v++) {                                                   \
                double re = fabs((double)xx[2 * v]), im = fabs((double)xx[2 * v + 1]);            \
                mags[v] = re > im ? re : im;                                                      \
            }                                                                                     \
    } while (0)

ABFT_HOT static void mags_f(const float *x, int P, int64_t len, double *mags)
{
    MAGS_BODY(float);
}

ABFT_HOT static void mags_d(const double *x, int P, int64_t len, double *mags)
{
    MAGS_BODY(double);
}

/* Written as independent lanes and a bit-or so the compiler vectorizes them (a floating-point
 * max reduction it would not reorder); magnitudes are finite and >= 0, so max is exact in any
 * order. */
ABFT_HOT static int mags_scan(const double *mags, int64_t len, const double *lmin, int per_entry,
                              double *env, double *maxv)
{
    int64_t hit = 0;
    if (per_entry)
        for (int64_t v = 0; v < len; v++)
            hit |= mags[v] > lmin[v];
    else {
        const double t = lmin[0];
        for (int64_t v = 0; v < len; v++)
            hit |= mags[v] > t;
    }
    if (env)
        for (int64_t v = 0; v < len; v++)
            env[v] = env[v] > mags[v] ? env[v] : mags[v];
    if (maxv) {
        double e[4] = {*maxv, *maxv, *maxv, *maxv};
        int64_t v = 0;
        for (; v + 4 <= len; v += 4)
            for (int q = 0; q < 4; q++)
                e[q] = e[q] > mags[v + q] ? e[q] : mags[v + q];
        for (; v < len; v++)
            e[0] = e[0] > mags[v] ? e[0] : mags[v];
        double m = e[0];
        for (int q = 1; q < 4; q++)
            m = m > e[q] ? m : e[q];
        *maxv = m;
    }
    return hit != 0;
}

int abft_k_mags(const void *x, int single, int P, int64_t len, const double *lmin, int per_entry,
                double *mags, double *env, double *maxv)
{
    if (single)
        mags_f(x, P, len, mags);
    else
        mags_d(x, P, len, mags);
    return mags_scan(mags, len, lmin, per_entry, env, maxv);
}

#ifdef HAVE_DOWN_TILE
static inline void v_abs(v4d *v)
{
    const v4i mask = {INT64_MAX, INT64_MAX, INT64_MAX, INT64_MAX};
    *v = (v4d)((v4i)*v & mask);
}

/* acc = max(acc, v) lane by lane (values finite and >= 0: exact in any order) */
static inline void v_max(v4d *acc, const v4d *v)
{
    v4i gt = *v > *acc;
    *acc = (v4d)(((v4i)*v & gt) | ((v4i)*acc & ~gt));
}

/* Whether some lane of m exceeds the same lane of lim. */
static inline int v_any_gt(const v4d *m, const v4d *lim)
{
    v4i gt = *m > *lim;
    return (gt[0] | gt[1] | gt[2] | gt[3]) != 0;
}

/* The insertion rule above for four lists side by side, without branches: slot s takes the old
 * slot s - 1 where m exceeds it, else m where m exceeds the old slot s, else keeps its own. A
 * list that is not full holds -1 in its empty slots (every magnitude exceeds it), which gives
 * the same entries in the same order. Positions are carried as doubles (exact below 2^53). */
static inline void v_topp(v4d *val, v4d *pos, int p, const v4d *m, const v4d *at)
{
    for (int s = p - 1; s >= 0; s--) {
        v4i gt = *m > val[s];
        v4d nv = (v4d)(((v4i)*m & gt) | ((v4i)val[s] & ~gt));
        v4d np = (v4d)(((v4i)*at & gt) | ((v4i)pos[s] & ~gt));
        if (s > 0) {
            v4i up = *m > val[s - 1];
            nv = (v4d)(((v4i)val[s - 1] & up) | ((v4i)nv & ~up));
            np = (v4d)(((v4i)pos[s - 1] & up) | ((v4i)np & ~up));
        }
        val[s] = nv;
        pos[s] = np;
    }
}

/* One lane group's lists (st: p pairs of values and positions) take m at position at. */
static inline void topp_group(v4d *st, int p, const v4d *m, const v4d *at)
{
    if (!v_any_gt(m, &st[2 * (p - 1)]))
        return; /* below every list's smallest entry: no change */
    v4d val[ABFT_K_TOPP_MAX], pos[ABFT_K_TOPP_MAX];
    for (int s = 0; s < p; s++) {
        val[s] = st[2 * s];
        pos[s] = st[2 * s + 1];
    }
    v_topp(val, pos, p, m, at);
    for (int s = 0; s < p; s++) {
        st[2 * s] = val[s];
        st[2 * s + 1] = pos[s];
    }
}

/* Vectors as rows: four rows per lane group, one position (a stored column) at a time. */
#define TOPP_ACROSS_BODY(T, LOADV)                                                                \
    do {                                                                                          \
        const int64_t ng = nvec / 4;                                                              \
        for (int64_t g = 0; g < ng * p; g++) {                                                    \
            st[2 * g] = (v4d){-1, -1, -1, -1};                                                    \
            st[2 * g + 1] = (v4d){0, 0, 0, 0};                                                    \
        }                                                                                         \
        for (int64_t kk = 0; kk < k; kk++) {                                                      \
            const T *col = x + kk * ld;                                                           \
            const double a = (double)kk;                                                          \
            const v4d at = {a, a, a, a};                                                          \
            v4d mx = {0, 0, 0, 0}, my = {0, 0, 0, 0};                                             \
            int64_t g = 0;                                                                        \
            /* four groups per test: most positions change no list */                             \
            for (; g + 4 <= ng; g += 4) {                                                         \
                v4d m[4];                                                                         \
                v4i any = {0, 0, 0, 0};                                                           \
                for (int b = 0; b < 4; b++) {                                                     \
                    LOADV(&m[b], col + 4 * (g + b));                                              \
                    v_abs(&m[b]);                                                                 \
                    any |= m[b] > st[2 * ((g + b) * p + p - 1)];                                  \
                }                                                                                 \
                v_max(&mx, &m[0]);                                                                \
                v_max(&my, &m[1]);                                                                \
                v_max(&mx, &m[2]);                                                                \
                v_max(&my, &m[3]);                                                                \
                if (any[0] | any[1] | any[2] | any[3])                                            \
                    for (int b = 0; b < 4; b++)                                                   \
                        topp_group(st + 2 * (g + b) * p, p, &m[b], &at);                          \
            }                                                                                     \
            for (; g < ng; g++) {                                                                 \
                v4d m;                                                                            \
                LOADV(&m, col + 4 * g);                                                           \
                v_abs(&m);                                                                        \
                v_max(&mx, &m);                                                                   \
                topp_group(st + 2 * g * p, p, &m, &at);                                           \
            }                                                                                     \
            v_max(&mx, &my);                                                                      \
            double e = 0;                                                                         \
            for (int q = 0; q < 4; q++)                                                           \
                e = e > mx[q] ? e : mx[q];                                                        \
            for (int64_t v = 4 * ng; v < nvec; v++) {                                             \
                double mv = fabs((double)col[v]);                                                 \
                e = e > mv ? e : mv;                                                              \
                cnt[v] = blasft_topp_insert(vals + v * p, pos + v * p, cnt[v], p, mv, kk);        \
            }                                                                                     \
            envmax[kk] = e;                                                                       \
        }                                                                                         \
        for (int64_t g = 0; g < ng; g++)                                                          \
            for (int q = 0; q < 4; q++) {                                                         \
                int64_t v = 4 * g + q;                                                            \
                for (int s = 0; s < p; s++) {                                                     \
                    vals[v * p + s] = st[2 * (g * p + s)][q];                                     \
                    pos[v * p + s] = (int64_t)st[2 * (g * p + s) + 1][q];                         \
                }                                                                                 \
                cnt[v] = k < p ? (int)k : p;                                                      \
            }                                                                                     \
    } while (0)

static inline void loadv_d(v4d *v, const double *x) { load_d(v, x); }
static inline void loadv_f(v4d *v, const float *x) { load_f(v, x); }

ABFT_HOT static void topp_across_d(const double *x, int64_t ld, int64_t nvec, int64_t k, int p,
                                   double *vals, int64_t *pos, int *cnt, double *envmax, v4d *st)
{
    TOPP_ACROSS_BODY(double, loadv_d);
}

ABFT_HOT static void topp_across_f(const float *x, int64_t ld, int64_t nvec, int64_t k, int p,
                                   double *vals, int64_t *pos, int *cnt, double *envmax, v4d *st)
{
    TOPP_ACROSS_BODY(float, loadv_f);
}

/* Vectors as columns: four columns side by side, four positions loaded per column and
 * transposed in registers (as down_tile), the envelope taken before the transpose. */
#define TOPP_DOWN_BODY(T, LOADV)                                                                  \
    do {                                                                                          \
        int64_t v = 0;                                                                            \
        for (; v + 4 <= nvec; v += 4) {                                                           \
            const T *c[4] = {x + v * ld, x + (v + 1) * ld, x + (v + 2) * ld, x + (v + 3) * ld};   \
            v4d val[ABFT_K_TOPP_MAX], ps[ABFT_K_TOPP_MAX];                                        \
            for (int s = 0; s < p; s++) {                                                         \
                val[s] = (v4d){-1, -1, -1, -1};                                                   \
                ps[s] = (v4d){0, 0, 0, 0};                                                        \
            }                                                                                     \
            int64_t kk = 0;                                                                       \
            for (; kk + 4 <= k; kk += 4) {                                                        \
                v4d r[4], e;                                                                      \
                load_d(&e, env + kk);                                                             \
                for (int q = 0; q < 4; q++) {                                                     \
                    LOADV(&r[q], c[q] + kk);                                                      \
                    v_abs(&r[q]);                                                                 \
                    v_max(&e, &r[q]);                                                             \
                }                                                                                 \
                *(v4d_u *)(env + kk) = e;                                                         \
                v_transpose(r); /* now r[q]: the four columns' entries kk + q */                  \
                v4i any = (r[0] > val[p - 1]) | (r[1] > val[p - 1]) | (r[2] > val[p - 1]) |       \
                          (r[3] > val[p - 1]);                                                    \
                if (!(any[0] | any[1] | any[2] | any[3]))                                         \
                    continue; /* below every list's smallest entry at all four: no change */      \
                for (int q = 0; q < 4; q++) {                                                     \
                    const double a = (double)(kk + q);                                            \
                    const v4d at = {a, a, a, a};                                                  \
                    v_topp(val, ps, p, &r[q], &at);                                               \
                }                                                                                 \
            }                                                                                     \
            for (; kk < k; kk++) {                                                                \
                v4d m;                                                                            \
                for (int q = 0; q < 4; q++) {                                                     \
                    m[q] = fabs((double)c[q][kk]);                                                \
                    env[kk] = env[kk] > m[q] ? env[kk] : m[q];                                    \
                }                                                                                 \
                const double a = (double)kk;                                                      \
                const v4d at = {a, a, a, a};                                                      \
                v_topp(val, ps, p, &m, &at);                                                      \
            }                                                                                     \
            for (int q = 0; q < 4; q++) {                                                         \
                for (int s = 0; s < p; s++) {                                                     \
                    vals[(v + q) * p + s] = val[s][q];                                            \
                    pos[(v + q) * p + s] = (int64_t)ps[s][q];                                     \
                }                                                                                 \
                cnt[v + q] = k < p ? (int)k : p;                                                  \
            }                                                                                     \
        }                                                                                         \
        for (; v < nvec; v++) {                                                                   \
            const T *c0 = x + v * ld;                                                             \
            for (int64_t kk = 0; kk < k; kk++) {                                                  \
                double mv = fabs((double)c0[kk]);                                                 \
                env[kk] = env[kk] > mv ? env[kk] : mv;                                            \
                cnt[v] = blasft_topp_insert(vals + v * p, pos + v * p, cnt[v], p, mv, kk);        \
            }                                                                                     \
        }                                                                                         \
    } while (0)

ABFT_HOT static void topp_down_d(const double *x, int64_t ld, int64_t nvec, int64_t k, int p,
                                 double *vals, int64_t *pos, int *cnt, double *env)
{
    TOPP_DOWN_BODY(double, loadv_d);
}

ABFT_HOT static void topp_down_f(const float *x, int64_t ld, int64_t nvec, int64_t k, int p,
                                 double *vals, int64_t *pos, int *cnt, double *env)
{
    TOPP_DOWN_BODY(float, loadv_f);
}
#endif

int abft_k_topp(const void *x, int single, int by_col, int64_t ld, int64_t nvec, int64_t k,
                int p, double *vals, int64_t *pos, int *cnt, double *env, void *work)
{
#ifdef HAVE_DOWN_TILE
    if (p < 1 || p > ABFT_K_TOPP_MAX)
        return -1;
    for (int64_t v = 0; v < nvec; v++)
        cnt[v] = 0;
    if (by_col) {
        if (single)
            topp_down_f(x, ld, nvec, k, p, vals, pos, cnt, env);
        else
            topp_down_d(x, ld, nvec, k, p, vals, pos, cnt, env);
    } else {
        v4d *st = (v4d *)(((uintptr_t)work + 31) & ~(uintptr_t)31);
        if (single)
            topp_across_f(x, ld, nvec, k, p, vals, pos, cnt, env, st);
        else
            topp_across_d(x, ld, nvec, k, p, vals, pos, cnt, env, st);
    }
    return 0;
#else
    (void)x, (void)single, (void)by_col, (void)ld, (void)nvec, (void)k, (void)p, (void)vals;
    (void)pos, (void)cnt, (void)env, (void)work;
    return -1;
#endif
}

/* The engine's threads: a persistent pool, each worker with its own job slot, so job t of a run
 * always runs on worker t (job 0 on the caller) and two jobs of one run never share a thread.
 * Starting threads per pass cost tens of microseconds each (several passes per GEMM); a parked
 * worker is woken in a few. One run at a time: a caller that finds the pool busy (another
 * thread's GEMM) starts threads of its own for that run, as before. */
#define ABFT_MAX_THREADS 64

typedef struct split_job {
    void (*f)(void *, int64_t, int64_t);
    void *arg;
    int64_t lo, hi;
} split_job;

static pthread_mutex_t pool_run = PTHREAD_MUTEX_INITIALIZER;  /* held by the run in progress */
static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER; /* guards the fields below */
static pthread_cond_t pool_wake = PTHREAD_COND_INITIALIZER;
static pthread_cond_t pool_done = PTHREAD_COND_INITIALIZER;
static split_job pool_jobs[ABFT_MAX_THREADS];
static unsigned long pool_gen;  /* runs posted; a worker's job is new when its gen differs */
static int pool_active;         /* workers 1 .. pool_active - 1 have a job in this run */
static int pool_left;           /* of those, still working */
static int pool_workers;        /* started (workers 1 .. pool_workers) */
static pthread_once_t pool_once = PTHREAD_ONCE_INIT;

/* Polls before parking (tens of microseconds): the engine's passes follow each other closely,
 * but a worker must not keep a core from the host BLAS's GEMM that comes next. */
#define POOL_SPIN 256

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

static void *pool_main(void *p)
{
    const int id = (int)(intptr_t)p;
    unsigned long seen = 0;
    for (;;) {
        for (int i = 0; i < POOL_SPIN && __atomic_load_n(&pool_gen, __ATOMIC_ACQUIRE) == seen; i++)
            cpu_relax();
        pthread_mutex_lock(&pool_lock);
        while (pool_gen == seen || id >= pool_active) {
            seen = pool_gen; /* a run without a job for this worker */
            pthread_cond_wait(&pool_wake, &pool_lock);
        }
        seen = pool_gen;
        split_job j = pool_jobs[id];
        pthread_mutex_unlock(&pool_lock);
        j.f(j.arg, j.lo, j.hi);
        pthread_mutex_lock(&pool_lock);
        if (--pool_left == 0)
            pthread_cond_signal(&pool_done);
        pthread_mutex_unlock(&pool_lock);
    }
    return NULL;
}

/* A forked child has none of the workers: it starts its own. */
static void pool_after_fork(void)
{
    pthread_mutex_init(&pool_run, NULL);
    pthread_mutex_init(&pool_lock, NULL);
    pthread_cond_init(&pool_wake, NULL);
    pthread_cond_init(&pool_done, NULL);
    pool_workers = 0;
    pool_active = 0;
    pool_left = 0;
}

static void pool_setup(void)
{
    pthread_atfork(NULL, NULL, pool_after_fork);
}

static void *split_main(void *p)
{
    split_job *j = p;
    j->f(j->arg, j->lo, j->hi);
    return NULL;
}

/* Runs jobs[0 .. n) on n distinct threads (job 0 on the caller) and returns when all are done. */
static void run_jobs(split_job *jobs, int n)
{
    if (n == 1) {
        split_main(&jobs[0]);
        return;
    }
    pthread_once(&pool_once, pool_setup);
    if (pthread_mutex_trylock(&pool_run) == 0) {
        pthread_mutex_lock(&pool_lock);
        while (pool_workers < n - 1) {
            pthread_t t;
            pthread_attr_t at;
            pthread_attr_init(&at);
            pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
            int rc = pthread_create(&t, &at, pool_main, (void *)(intptr_t)(pool_workers + 1));
            pthread_attr_destroy(&at);
            if (rc != 0)
                break;
            pool_workers++;
        }
        int have = pool_workers + 1 < n ? pool_workers + 1 : n;
        for (int t = 1; t < have; t++)
            pool_jobs[t] = jobs[t];
        pool_active = have;
        pool_left = have - 1;
        __atomic_add_fetch(&pool_gen, 1, __ATOMIC_RELEASE);
        if (have > 1)
            pthread_cond_broadcast(&pool_wake);
        pthread_mutex_unlock(&pool_lock);
        split_main(&jobs[0]);
        /* jobs without a worker (a start failed): on the caller, after the others started */
        for (int t = have; t < n; t++)
            split_main(&jobs[t]);
        pthread_mutex_lock(&pool_lock);
        while (pool_left > 0)
            pthread_cond_wait(&pool_done, &pool_lock);
        pool_active = 0;
        pthread_mutex_unlock(&pool_lock);
        pthread_mutex_unlock(&pool_run);
        return;
    }
    pthread_t th[ABFT_MAX_THREADS];
    int started[ABFT_MAX_THREADS] = {0};
    for (int t = 1; t < n; t++)
        started[t] = pthread_create(&th[t], NULL, split_main, &jobs[t]) == 0;
    split_main(&jobs[0]);
    for (int t = 1; t < n; t++)
        if (started[t])
            pthread_join(th[t], NULL);
        else
            split_main(&jobs[t]);
}

typedef struct pair_job {
    void (*f)(void *);
    void *arg;
} pair_job;

static void pair_main(void *p, int64_t lo, int64_t hi)
{
    (void)lo, (void)hi;
    pair_job *j = p;
    j->f(j->arg);
}

void abft_k_pair(int parallel, void (*f)(void *), void *arg0, void *arg1)
{
    if (!parallel) {
        f(arg0);
        f(arg1);
        return;
    }
    pair_job p0 = {f, arg0}, p1 = {f, arg1};
    split_job jobs[2] = {{pair_main, &p0, 0, 0}, {pair_main, &p1, 0, 0}};
    run_jobs(jobs, 2);
}

void abft_k_pair_split(int threads, void (*f)(void *, int64_t, int64_t), void *arg0, void *arg1,
                       int64_t n, int64_t work)
{
    int64_t most = work / ABFT_K_MIN_WORK;
    if (threads > 2 && threads > most)
        threads = most > 2 ? (int)most : 2;
    int half = threads / 2;
    if (half > ABFT_MAX_THREADS / 2)
        half = ABFT_MAX_THREADS / 2;
    if (half > n)
        half = (int)n;
    if (half < 1) {
        f(arg0, 0, n);
        f(arg1, 0, n);
        return;
    }
    split_job jobs[ABFT_MAX_THREADS];
    for (int t = 0; t < 2 * half; t++) {
        int64_t s = t / 2;
        jobs[t] = (split_job){f, t % 2 ? arg1 : arg0, n * s / half, n * (s + 1) / half};
    }
    run_jobs(jobs, 2 * half);
}

void abft_k_for(int threads, void (*f)(void *, int64_t, int64_t), void *arg, int64_t n,
                int64_t work)
{
    int64_t most = work / ABFT_K_MIN_WORK;
    if (threads > most)
        threads = most > 1 ? (int)most : 1;
    if (threads > ABFT_MAX_THREADS)
        threads = ABFT_MAX_THREADS;
    if (threads > n)
        threads = (int)n;
    if (threads <= 1) {
        f(arg, 0, n);
        return;
    }
    split_job jobs[ABFT_MAX_THREADS];
    for (int t = 0; t < threads; t++)
        jobs[t] = (split_job){f, arg, n * t / threads, n * (t + 1) / threads};
    run_jobs(jobs, threads);
}

static int (*host_threads)(void);
static pthread_once_t host_threads_once = PTHREAD_ONCE_INIT;

static void find_host_threads(void)
{
    /* also a bundled OpenBLAS's where that computes the GEMMs (BLASFT_HOST_BLAS=none) */
    union {
        void *p;
        int (*f)(void);
    } fn = {.p = blasft_host_threads_fn()};
    host_threads = fn.f;
}

int abft_k_parallel(void)
{
    pthread_once(&host_threads_once, find_host_threads);
    return host_threads && host_threads() >= 2;
}

int abft_k_threads(void)
{
    pthread_once(&host_threads_once, find_host_threads);
    int t = host_threads ? host_threads() : 1;
    return t < 1 ? 1 : t;
}
