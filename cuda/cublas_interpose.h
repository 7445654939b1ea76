/* The cuBLAS interposer (issue 5): the real cuBLAS behind the exported cublas* GEMM entry points
 * of shim/cublas_entry.c, and the decision and running of a protected call through the GPU
 * engine on the handle's own stream.
 *
 * An entry point fills a blasft_cublas_call and asks blasft_cublas_protect whether it ran the
 * call protected; if not, it calls the real function between blasft_cublas_pass_begin/_end (the
 * thread-local guard that keeps cuBLAS's own calls, and ours, out of our wrappers). */
#ifndef BLASFT_CUBLAS_INTERPOSE_H
#define BLASFT_CUBLAS_INTERPOSE_H

#include <cublas_v2.h>

#include "gemm.h"
#include "report.h"

#include <stdint.h>

/* The real cuBLAS functions the interposer wraps or asks, taken from the one cuBLAS instance
 * that gpu_cublas.c finds for the GPU engine too (so the engine works on the application's
 * handles' library by construction). */
typedef struct blasft_cublas_real {
    cublasStatus_t (*get_stream)(cublasHandle_t, cudaStream_t *);
    cublasStatus_t (*get_pointer_mode)(cublasHandle_t, cublasPointerMode_t *);
    cublasStatus_t (*get_math_mode)(cublasHandle_t, cublasMath_t *);
    void *sgemm_v2, *dgemm_v2, *cgemm_v2, *zgemm_v2;
    void *sgemm_v2_64, *dgemm_v2_64, *cgemm_v2_64, *zgemm_v2_64;
    void *cgemm3m, *zgemm3m, *cgemm3m_64, *zgemm3m_64;
    void *gemm_ex, *gemm_ex_64;
    void *sgemm_strided, *dgemm_strided, *cgemm_strided, *zgemm_strided;
    void *sgemm_strided_64, *dgemm_strided_64, *cgemm_strided_64, *zgemm_strided_64;
    void *cgemm3m_strided, *cgemm3m_strided_64;
    void *gemm_strided_ex, *gemm_strided_ex_64;
    void *sgemm_legacy, *dgemm_legacy;
} blasft_cublas_real;

/* The real cuBLAS (gpu_cublas.c: dlsym(RTLD_NEXT) first, then a cuBLAS already loaded under its
 * soname, then dlopen; never our own symbols). NULL if there is none. */
const blasft_cublas_real *blasft_cublas_real_api(void);

/* The real function pointer `fn` (a field of blasft_cublas_real) as type T, or NULL. */
#define BLASFT_CUBLAS_REAL(T, field)                                                               \
    __extension__({                                                                                \
        const blasft_cublas_real *r_ = blasft_cublas_real_api();                                   \
        union { void *p; T f; } u_ = {.p = r_ ? r_->field : NULL};                                 \
        u_.f;                                                                                      \
    })

/* One interposed call: a column-major GEMM, or a strided batch of them. */
typedef struct blasft_cublas_call {
    blasft_call_stat *stat;
    cublasHandle_t handle;
    blasft_type type;         /* S, D, C or Z where protectable */
    int protectable;          /* 0: a type / compute combination or algorithm (3M) the
                                 engine has no threshold for: counted unprotected */
    cublasOperation_t transa, transb;
    int64_t m, n, k;
    const void *alpha, *a, *b, *beta;
    void *c;
    int64_t lda, ldb, ldc;
    int64_t stride_a, stride_b, stride_c; /* elements */
    int64_t batch;            /* 1 for a single GEMM */
    /* cublasLt (shim/cublaslt_entry.c): the stream and the pointer mode come with the call (no
     * handle to ask). c is D; where C is another matrix (c_in) or a bias vector is added, D is
     * prepared on the stream first (D = C, or D = bias 1^T + beta C and then beta 1), and the
     * protected GEMM runs on D in place. Those two only with batch 1 and scalars in host memory
     * where a bias is added. */
    int lt;
    cudaStream_t lt_stream;
    int lt_on_device;
    const void *c_in;         /* C where it is not D, else NULL */
    int64_t ldc_in;
    const void *bias;         /* CUBLASLT_EPILOGUE_BIAS's vector of m elements, else NULL */
    /* filled by blasft_cublas_protect for blasft_cublas_pass_end */
    int nested, counted;
    uint64_t t0;
} blasft_cublas_call;

/* Runs the call protected if it can; returns 1 and sets *status then, else 0 (the caller must
 * call the real function between blasft_cublas_pass_begin and blasft_cublas_pass_end). */
int blasft_cublas_protect(blasft_cublas_call *c, cublasStatus_t *status);

/* A scalar of type t in host memory is zero (every part): beta = 0, the old C does not enter. */
int blasft_cublas_host_zero(blasft_type t, const void *x);

/* Nonzero where a call goes straight to the real library without being looked at: inside the
 * re-entry guard (a call from cuBLAS itself or from the engine), with BLASFT_CUBLAS=off, or
 * during the benchmark bypass. */
int blasft_cublas_untouched(void);

void blasft_cublas_pass_begin(void);
/* Ends the guard and records the call as unprotected (unless it was nested or not a GEMM). */
void blasft_cublas_pass_end(blasft_cublas_call *c);

#endif
