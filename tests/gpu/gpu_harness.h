/* Shared helpers of the GPU tests (no cmocka: the device machine has none): data on host and
 * device, the double-double reference GEMM, running the engine, simple assertion counting. */
#ifndef BLASFT_TEST_GPU_HARNESS_H
#define BLASFT_TEST_GPU_HARNESS_H

#include "blasft_gpu.h"
#include "datagen.h"

#include <stddef.h>
#include <stdint.h>

extern int gh_checks, gh_failures;
#define GH_CHECK(cond, ...)                                                                        \
    do {                                                                                           \
        gh_checks++;                                                                               \
        if (!(cond)) {                                                                             \
            gh_failures++;                                                                         \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                                   \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fputc('\n', stderr);                                                                   \
        }                                                                                          \
    } while (0)

typedef struct gh_case {
    blasft_type t;
    char ta, tb;
    int64_t m, n, k, lda, ldb, ldc;
    double alpha, beta;
    int device_scalars;
    /* 1: the old C's columns all equal its first, which the engine gets as c_vector (the
     * device C then holds NaN: the engine must not read it) */
    int c_vector;
} gh_case;

/* A GEMM's data: host copies in double (values exactly those of the typed data), device copies
 * of the type, and the double-double reference of alpha op(A) op(B) + beta C with an error bound
 * per element (the standard gamma_(k+2) bound of the data type, doubled). */
typedef struct gh_data {
    gh_case c;
    double *A, *B, *C0;     /* host, double */
    void *hA, *hB, *hC0;    /* host, typed */
    void *dA, *dB, *dC;     /* device, typed */
    void *dalpha, *dbeta;   /* device scalars */
    void *dV;               /* device, typed: the old C's first column (c_vector) or NULL */
    double *ref, *bound;    /* m x n, ld m */
} gh_data;

int gh_gpu_present(void);
/* A GPU test's start and end: gh_start exits 77 (skipped) where there is no GPU and 1 where no
 * context can be made, else returns a context on the legacy default stream; gh_finish destroys
 * it, prints "N checks, N failures" and returns the exit status (1 on any failure). */
blasft_gpu_ctx *gh_start(void);
int gh_finish(blasft_gpu_ctx *ctx);
/* A malloc'd copy of x[0..count) as float (single) or double. */
void *gh_typed_copy(const double *x, int64_t count, int single);
/* A cudaMalloc'd copy of bytes of host memory h (exits on failure). */
void *gh_upload(const void *h, size_t bytes);
/* op(A)(i, l) and op(B)(l, j) of the host copies, as doubles */
double gh_opa(const gh_data *d, int64_t i, int64_t l);
double gh_opb(const gh_data *d, int64_t l, int64_t j);
void gh_make(gh_data *d, const gh_case *c, uint64_t seed);
/* The same with A, B and C drawn from `series` (a dg_series, exponent 0; cancelling pairs along
 * k where op is N) instead of T_full. */
void gh_make_series(gh_data *d, const gh_case *c, uint64_t seed, int series);
void gh_free(gh_data *d);
/* Restores the device C to the old C (c_vector: to NaN). */
void gh_reset_c(gh_data *d);
blasft_gpu_gemm gh_desc(const gh_data *d);
/* Downloads C into out (m x n, ld m, double). */
void gh_download_c(const gh_data *d, double *out);
/* Number of elements of out outside ref +- bound (NaN counts). */
int64_t gh_bad_elements(const gh_data *d, const double *out, int64_t *first_i, int64_t *first_j);
void gh_params(blasft_gpu_params *p, int bs, int r);
/* The host engine's configuration matching GPU parameters p (no environment read; PEA thresholds,
 * linear weights, p's block size, checksums, PEA p and omega): the oracle the kernels are
 * compared with. */
void gh_host_cfg(blasft_config *cfg, const blasft_gpu_params *p);
void gh_sync(void);
/* What the statistics gained since `before` (every counter). */
blasft_stats gh_stats_delta(const blasft_stats *before);
/* Runs g on ctx to completion and returns what it added to the statistics; a failed call is a
 * failed check named by `what`. */
blasft_stats gh_run_counted(blasft_gpu_ctx *ctx, const blasft_gpu_gemm *g,
                            const blasft_gpu_params *p, const char *what);

/* The column thresholds of ctx's last protected GEMM of type t (for a promoted S GEMM: D, one
 * part) that are not positive and finite, or -1 where they cannot be fetched; *count gets how
 * many there are. On random data none is 0, also after the fault path. */
int64_t gh_thresholds_lost(blasft_gpu_ctx *ctx, blasft_type t, int64_t m, int64_t n, int64_t k,
                           const blasft_gpu_params *p, int64_t *count);

/* Inside a fault hook (gpu_debug.h): writes v into part q of the caller's element (i, j) in the C
 * that the engine checks, through the pinned double *pin, on `stream`. That C must be of type
 * `want` (a promoted S or C GEMM's double copy: D or Z), else -1 (a failed check). A promoted
 * GEMM is checked tile by tile: returns 1 where the element was planted (its tile's last chunk
 * of k), 0 where this part of the GEMM does not hold it. */
int gh_plant_checked(blasft_gpu_ctx *ctx, void *stream, blasft_type want, int64_t i, int64_t j,
                     int q, double v, double *pin);

/* A GEMM in host doubles for the PROJ oracle: op(A)(i, l) is A[i + l lda] ('N') or A[l + i lda],
 * op(B)(l, j) likewise; C0 the old C (ld ldc), read where beta != 0. */
typedef struct gh_proj_gemm {
    int single;
    char ta, tb;
    int64_t m, k;
    const double *A, *B, *C0;
    int64_t lda, ldb, ldc;
    double alpha, beta;
    int bs, weights;
} gh_proj_gemm;

/* The exact partial-sum energies of column checksum (row block I, checksum r, column j) in the
 * two modelled orders (sequential, 2 lanes), the threshold PROJ gives them (blasft_proj_eps)
 * and the checksum's double-double value. parts (or NULL): e_seq, e_lane, products, last. */
void gh_proj_oracle(const gh_proj_gemm *g, int64_t I, int r, int64_t j, double *ref, double *eps,
                    double *parts);

#endif
