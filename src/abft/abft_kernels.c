/* Hot loops of the host engine (see abft_kernels.h for the order-of-summation guarantee). On
 * x86-64 each kernel is also built for CPUs with FMA (and so AVX), picked at load time by CPU
 * feature: without hardware FMA every exact product error is a libm call, and without AVX the
 * independent sums run two at a time instead of four. */
#include "abft/abft_kernels.h"

#include "hostblas.h"

#include <math.h>
#include <pthread.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
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

#define DOWN_TILE_BODY(LOAD)                                                                      \
    do {                                                                                          \
        v4d vs = {0, 0, 0, 0}, vc = {0, 0, 0, 0};                                                 \
        int64_t i = 0;                                                                            \
        for (; i + 4 <= len; i += 4) {                                                            \
            v4d r[4];                                                                             \
            for (int q = 0; q < 4; q++)                                                           \
                LOAD(&r[q], q, i);                                                                \
            v_transpose(r);                                                                       \
            for (int q = 0; q < 4; q++)                                                           \
                v_add_prod(&vs, &vc, w[i + q], &r[q], prod);                                      \
        }                                                                                         \
        for (; i < len; i++) {                                                                    \
            v4d v;                                                                                \
            for (int q = 0; q < 4; q++)                                                           \
                v[q] = (double)p[q][i];                                                           \
            v_add_prod(&vs, &vc, w[i], &v, prod);                                                 \
        }                                                                                         \
        for (int q = 0; q < 4; q++) {                                                             \
            s[q] = vs[q];                                                                         \
            c[q] = vc[q];                                                                         \
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

ABFT_HOT static void down_tile_d(const void *const base[4], int64_t len, const double *w, int prod,
                                 double *s, double *c)
{
    const double *p[4] = {base[0], base[1], base[2], base[3]};
    if (prod)
        DOWN_TILE_BODY(LOAD_D);
    else
        DOWN_TILE_BODY(LOAD_D);
}

ABFT_HOT static void down_tile_f(const void *const base[4], int64_t len, const double *w, int prod,
                                 double *s, double *c)
{
    const float *p[4] = {base[0], base[1], base[2], base[3]};
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
    double s[4] = {0, 0, 0, 0}, c[4] = {0, 0, 0, 0};
    /* the two branches of each body differ only in the constant prod, so each is specialised */
#ifdef HAVE_DOWN_TILE
    if (stride == 1) {
        if (single)
            down_tile_f(base, len, w, prod != 0, s, c);
        else
            down_tile_d(base, len, w, prod != 0, s, c);
    } else
#endif
    if (single)
        down_f(base, stride, len, w, prod != 0, s, c);
    else
        down_d(base, stride, len, w, prod != 0, s, c);
    for (int q = 0; q < 4; q++)
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

typedef struct pair_job {
    void (*f)(void *);
    void *arg;
} pair_job;

static void *pair_main(void *p)
{
    pair_job *j = p;
    j->f(j->arg);
    return NULL;
}

void abft_k_pair(int parallel, void (*f)(void *), void *arg0, void *arg1)
{
    pthread_t th;
    pair_job job = {f, arg1};
    if (parallel && pthread_create(&th, NULL, pair_main, &job) == 0) {
        f(arg0);
        pthread_join(th, NULL);
        return;
    }
    f(arg0);
    f(arg1);
}

typedef struct split_job {
    void (*f)(void *, int64_t, int64_t);
    void *arg;
    int64_t lo, hi;
} split_job;

static void *split_main(void *p)
{
    split_job *j = p;
    j->f(j->arg, j->lo, j->hi);
    return NULL;
}

#define ABFT_MAX_THREADS 64

void abft_k_pair_split(int threads, void (*f)(void *, int64_t, int64_t), void *arg0, void *arg1,
                       int64_t n, int64_t work)
{
    /* measured on 16 cores (docs/host-overhead.md): one thread per copy below ~2^19 elements */
    int64_t most = work >> 18;
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
    split_job jobs[ABFT_MAX_THREADS] = {{0}};
    pthread_t th[ABFT_MAX_THREADS];
    int started[ABFT_MAX_THREADS] = {0};
    for (int t = 0; t < 2 * half; t++) {
        int64_t s = t / 2;
        jobs[t] = (split_job){f, t % 2 ? arg1 : arg0, n * s / half, n * (s + 1) / half};
    }
    for (int t = 1; t < 2 * half; t++)
        started[t] = pthread_create(&th[t], NULL, split_main, &jobs[t]) == 0;
    split_main(&jobs[0]);
    /* a thread that could not start: its slice on the caller (after the others' started) */
    for (int t = 1; t < 2 * half; t++)
        if (started[t])
            pthread_join(th[t], NULL);
        else
            split_main(&jobs[t]);
}

static int (*host_threads)(void);
static pthread_once_t host_threads_once = PTHREAD_ONCE_INIT;

static void find_host_threads(void)
{
    host_threads = (int (*)(void))blasft_host_sym_optional("openblas_get_num_threads");
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
