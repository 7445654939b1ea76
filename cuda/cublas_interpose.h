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
/* The wrapped functions: X(field, cuBLAS symbol), one list for the table and its lookup. */
#define BLASFT_CUBLAS_GEMMS(X)                                                                     \
    X(sgemm_v2, cublasSgemm_v2) X(dgemm_v2, cublasDgemm_v2)                                        \
    X(cgemm_v2, cublasCgemm_v2) X(zgemm_v2, cublasZgemm_v2)                                        \
    X(sgemm_v2_64, cublasSgemm_v2_64) X(dgemm_v2_64, cublasDgemm_v2_64)                            \
    X(cgemm_v2_64, cublasCgemm_v2_64) X(zgemm_v2_64, cublasZgemm_v2_64)                            \
    X(cgemm3m, cublasCgemm3m) X(zgemm3m, cublasZgemm3m)                                            \
    X(cgemm3m_64, cublasCgemm3m_64) X(zgemm3m_64, cublasZgemm3m_64)                                \
    X(gemm_ex, cublasGemmEx) X(gemm_ex_64, cublasGemmEx_64)                                        \
    X(sgemm_strided, cublasSgemmStridedBatched) X(dgemm_strided, cublasDgemmStridedBatched)        \
    X(cgemm_strided, cublasCgemmStridedBatched) X(zgemm_strided, cublasZgemmStridedBatched)        \
    X(sgemm_strided_64, cublasSgemmStridedBatched_64)                                              \
    X(dgemm_strided_64, cublasDgemmStridedBatched_64)                                              \
    X(cgemm_strided_64, cublasCgemmStridedBatched_64)                                              \
    X(zgemm_strided_64, cublasZgemmStridedBatched_64)                                              \
    X(cgemm3m_strided, cublasCgemm3mStridedBatched)                                                \
    X(cgemm3m_strided_64, cublasCgemm3mStridedBatched_64)                                          \
    X(gemm_strided_ex, cublasGemmStridedBatchedEx)                                                 \
    X(gemm_strided_ex_64, cublasGemmStridedBatchedEx_64)                                           \
    X(sgemm_batched, cublasSgemmBatched) X(dgemm_batched, cublasDgemmBatched)                      \
    X(cgemm_batched, cublasCgemmBatched) X(zgemm_batched, cublasZgemmBatched)                      \
    X(sgemm_batched_64, cublasSgemmBatched_64) X(dgemm_batched_64, cublasDgemmBatched_64)          \
    X(cgemm_batched_64, cublasCgemmBatched_64) X(zgemm_batched_64, cublasZgemmBatched_64)          \
    X(cgemm3m_batched, cublasCgemm3mBatched) X(cgemm3m_batched_64, cublasCgemm3mBatched_64)        \
    X(gemm_batched_ex, cublasGemmBatchedEx) X(gemm_batched_ex_64, cublasGemmBatchedEx_64)          \
    X(sgemm_ex, cublasSgemmEx) X(sgemm_ex_64, cublasSgemmEx_64)                                    \
    X(cgemm_ex, cublasCgemmEx) X(cgemm_ex_64, cublasCgemmEx_64)                                    \
    X(cgemm3m_ex, cublasCgemm3mEx) X(cgemm3m_ex_64, cublasCgemm3mEx_64)                            \
    X(hgemm, cublasHgemm) X(hgemm_64, cublasHgemm_64)                                              \
    X(hgemm_strided, cublasHgemmStridedBatched)                                                    \
    X(hgemm_strided_64, cublasHgemmStridedBatched_64)                                              \
    X(hgemm_batched, cublasHgemmBatched) X(hgemm_batched_64, cublasHgemmBatched_64)                \
    X(sgemm_grouped, cublasSgemmGroupedBatched) X(dgemm_grouped, cublasDgemmGroupedBatched)        \
    X(sgemm_grouped_64, cublasSgemmGroupedBatched_64)                                              \
    X(dgemm_grouped_64, cublasDgemmGroupedBatched_64)                                              \
    X(gemm_grouped_ex, cublasGemmGroupedBatchedEx)                                                 \
    X(gemm_grouped_ex_64, cublasGemmGroupedBatchedEx_64)                                           \
    X(sgemm_legacy, cublasSgemm) X(dgemm_legacy, cublasDgemm)

typedef struct blasft_cublas_real {
    cublasStatus_t (*get_stream)(cublasHandle_t, cudaStream_t *);
    cublasStatus_t (*get_pointer_mode)(cublasHandle_t, cublasPointerMode_t *);
    cublasStatus_t (*get_math_mode)(cublasHandle_t, cublasMath_t *);
#define BLASFT_CUBLAS_FIELD_(field, sym) void *field;
    BLASFT_CUBLAS_GEMMS(BLASFT_CUBLAS_FIELD_)
#undef BLASFT_CUBLAS_FIELD_
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

/* One interposed call: a column-major GEMM, or a strided batch of them, or a batch given by
 * device arrays of pointers. */
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
    /* cublas?gemmBatched (arrays 1): the matrices' addresses in device arrays of batch
     * pointers (a, b, c and the strides unused). Batches checked as a whole and half batches
     * read them on the device; otherwise they are read back on the host before the protected
     * GEMMs, which waits for the stream (while it is captured such calls pass through). */
    int arrays;
    const void *const *a_arr, *const *b_arr;
    void *const *c_arr;
    /* cublasLt (shim/cublaslt_entry.c): the stream and the pointer mode come with the call (no
     * handle to ask). c is D; where C is another matrix (c_in) or a bias vector is added, D is
     * prepared on the stream first (D = C, or D = bias 1^T + beta C and then beta 1), and the
     * protected GEMM runs on D in place. Those two only with batch 1 and scalars in host memory
     * where a bias is added; for half and bfloat16 data (lowp) the engine reads C itself, at
     * stride_c_in from matrix to matrix in a batch (no bias there). */
    int lt;
    cudaStream_t lt_stream;
    int lt_on_device;
    const void *c_in;         /* C where it is not D, else NULL */
    int64_t ldc_in, stride_c_in;
    const void *bias;         /* CUBLASLT_EPILOGUE_BIAS's vector of m elements, else NULL */
    /* half or bfloat16 A and B with FP32 accumulation (cuda/gpu_lowp.cu; type unused): their
     * type, C's (theirs or float), the compute type and algorithm passed on; single GEMMs and
     * batches (strided or by arrays) */
    int lowp;
    cudaDataType ab_type, c_type;
    cublasComputeType_t compute;
    cublasGemmAlgo_t algo;
    /* filled by blasft_cublas_protect for blasft_cublas_pass_end */
    int nested, counted;
    uint64_t t0;
} blasft_cublas_call;

/* Half or bfloat16 A and B with FP32 accumulation, C of their type or float: the types the
 * engine's half path takes (cuda/gpu_lowp.cu). */
int blasft_cublas_lowp_types(cudaDataType at, cudaDataType bt, cudaDataType ct,
                             cublasComputeType_t comp);

/* Runs the call protected if it can; returns 1 and sets *status then, else 0 (the caller must
 * call the real function between blasft_cublas_pass_begin and blasft_cublas_pass_end). */
int blasft_cublas_protect(blasft_cublas_call *c, cublasStatus_t *status);

/* The call's arguments pass the checks cuBLAS makes of them (a handle, valid operations,
 * dimensions, batch count and leading dimensions, scalars given); else cuBLAS reports it. */
int blasft_cublas_valid(const blasft_cublas_call *c);

/* The handle's pointer mode is host (the grouped batches' scalar arrays live there). */
int blasft_cublas_host_scalars(cublasHandle_t handle);

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
