/* Hot loops of the host engine (see abft_kernels.h for the order-of-summation guarantee). On
 * x86-64 each kernel is also built for CPUs with FMA (and so AVX) and picked at load time by CPU feature:
 * without hardware FMA every exact product error is a libm call, and without AVX the independent
 * sums run two at a time instead of four. */
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

void abft_k_down(const void *const base[ABFT_K_STREAMS], int single, int64_t stride, int64_t len,
                 const double *w, int prod, double out[ABFT_K_STREAMS])
{
    double s[4] = {0, 0, 0, 0}, c[4] = {0, 0, 0, 0};
    /* the two branches above differ only in the constant prod, so each loop is specialised */
    if (single)
        down_f(base, stride, len, w, prod != 0, s, c);
    else
        down_d(base, stride, len, w, prod != 0, s, c);
    for (int q = 0; q < 4; q++)
        out[q] = s[q] + c[q];
}

/* Rows per chunk of abft_k_across: the accumulators and the chunk of a column stay in L1. */
#define ACROSS_CHUNK 512

#define ACROSS_BODY(T)                                                                            \
    do {                                                                                          \
        const T *mm = m;                                                                          \
        for (int64_t j = 0; j < cols; j++) {                                              \
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
