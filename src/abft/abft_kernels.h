/* The host engine's hot loops: weighted compensated checksums along or across the columns of a
 * column-major matrix, the top-p magnitude lists of the PEA preprocessing, promotion to double,
 * and a helper that runs the two redundant passes on two threads.
 *
 * Every sum is formed element by element in the same order as the scalar definition (index
 * ascending; per element the product w*v, then its exact rounding error from fma, each added by
 * Neumaier's TwoSum), so the results are bit for bit those of a plain scalar loop: the kernels
 * only choose an order of *independent* sums that vectorizes (several columns side by side, or
 * every row of a column block at once) and contiguous memory traversal. */
#ifndef BLASFT_ABFT_KERNELS_H
#define BLASFT_ABFT_KERNELS_H

#include <stdint.h>

/* Streams summed side by side by abft_k_down. */
#define ABFT_K_STREAMS 8

/* out[q] = sum_{i < len} w[i] * base[q][i * stride] (compensated) for q < ABFT_K_STREAMS;
 * elements are float (single != 0) or double. prod = 0 when every w[i] is 1: then the products
 * are exact and their (zero) rounding errors are not added. */
void abft_k_down(const void *const base[ABFT_K_STREAMS], int single, int64_t stride, int64_t len,
                 const double *w, int prod, double out[ABFT_K_STREAMS]);

/* out[ri] = sum_{j < cols} w[j] * m[ri + j * ld] (compensated) for ri < nreal, scalars as float
 * or double, ld in scalars. work: 2 * nreal doubles. */
void abft_k_across(const void *m, int single, int64_t ld, int64_t nreal, int64_t cols,
                   const double *w, int prod, double *out, double *work);

/* dst[i + rows * j] = (double) src[i + ld * j], scalars as float (single) or double. */
void abft_k_promote(double *dst, const void *src, int single, int64_t rows, int64_t cols,
                    int64_t ld);

/* Magnitudes for the PEA top-p lists: mags[v] = |x_v| (complex: max(|re|, |im|)) for len
 * contiguous entries; returns whether some mags[v] > lmin[v] (per_entry) or > lmin[0]; with env,
 * env[v] = max(env[v], mags[v]); with maxv, *maxv = max(*maxv, max_v mags[v]). */
int abft_k_mags(const void *x, int single, int P, int64_t len, const double *lmin, int per_entry,
                double *mags, double *env, double *maxv);

/* Largest list length abft_k_topp handles. */
#define ABFT_K_TOPP_MAX 8

/* The PEA top-p lists of nvec real vectors of length k at once, by the insertion rule of
 * blasft_topp_insert with positions in ascending order (so the lists are exactly those of
 * inserting |x| entry by entry): vector v's list into vals[v p + s], pos[v p + s], cnt[v]
 * (= min(k, p)). by_col: vector v is the stored column v (entry kk at x[kk + v ld]), and
 * env[kk] = max(env[kk], max_v |entry kk|); else vector v is the stored row v (entry kk at
 * x[v + kk ld]), and env[kk] = max_v |entry kk| (written). work: (nvec / 4) p 64 + 32 bytes (rows
 * only). Returns -1 (nothing done) where it does not apply: p > ABFT_K_TOPP_MAX, or a compiler
 * without vector extensions. */
int abft_k_topp(const void *x, int single, int by_col, int64_t ld, int64_t nvec, int64_t k,
                int p, double *vals, int64_t *pos, int *cnt, double *env, void *work);

/* Elements of work a thread gets at least in abft_k_pair_split / abft_k_for: below that, waking
 * one costs more than it saves. Overridable at build time (-DABFT_K_MIN_WORK=...) to measure. */
#ifndef ABFT_K_MIN_WORK
#define ABFT_K_MIN_WORK ((int64_t)1 << 16)
#endif

/* Runs f(arg0) and f(arg1), on two threads when parallel is set, else one after the other. */
void abft_k_pair(int parallel, void (*f)(void *), void *arg0, void *arg1);
/* Two copies of a computation over [0, n), f(arg0, lo, hi) and f(arg1, lo, hi), spread over
 * `threads` threads: each copy cut into threads / 2 slices, copy 0's slices on even threads and
 * copy 1's on odd ones, so the two copies of every slice run on different threads (the thesis's
 * redundancy). work: the elements one copy reads; a thread gets at least ABFT_K_MIN_WORK of
 * them (two threads as long as threads >= 2). threads < 2 or n < 1: f(arg0, 0, n), then
 * f(arg1, 0, n), on the caller. */
void abft_k_pair_split(int threads, void (*f)(void *, int64_t, int64_t), void *arg0, void *arg1,
                       int64_t n, int64_t work);
/* One computation over [0, n) in slices f(arg, lo, hi) on up to `threads` threads, each with at
 * least ABFT_K_MIN_WORK of the `work` elements (no redundancy: for passes computed once). */
void abft_k_for(int threads, void (*f)(void *, int64_t, int64_t), void *arg, int64_t n,
                int64_t work);
/* Threads for the engine's redundant passes: the host BLAS's (at least 1). */
int abft_k_threads(void);

/* Whether the engine may use a second thread: the host BLAS itself runs on two or more. */
int abft_k_parallel(void);

#endif
