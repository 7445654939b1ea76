/* The exported cuBLAS GEMM entry points (issue 5): a program started with
 * LD_PRELOAD=libblas_ft.so calls these instead of cuBLAS's. Each describes its call as one
 * blasft_cublas_call; cuda/cublas_interpose.c runs it protected through the GPU engine on the
 * handle's stream, or it goes to the real cuBLAS unchanged (counted unprotected). Built only with
 * CUDA. */
#include "cublas_interpose.h"

#include <stddef.h>
#include <stdint.h>

#define EXPORT __attribute__((visibility("default")))

/* The call to the real function `field` of type T, inside the re-entry guard; a missing real
 * function reads as an uninitialised library. */
#define PASS(T, field, c, ...)                                                                     \
    do {                                                                                           \
        T fn_ = BLASFT_CUBLAS_REAL(T, field);                                                      \
        if (!fn_)                                                                                  \
            return CUBLAS_STATUS_NOT_INITIALIZED;                                                  \
        blasft_cublas_pass_begin();                                                                \
        cublasStatus_t st_ = fn_(__VA_ARGS__);                                                     \
        blasft_cublas_pass_end(c);                                                                 \
        return st_;                                                                                \
    } while (0)

/* The call run protected where blasft_cublas_protect takes it, else passed to the real one. */
#define PROTECT_OR_PASS(T, field, c, ...)                                                          \
    do {                                                                                           \
        cublasStatus_t pst_;                                                                       \
        if (blasft_cublas_protect(c, &pst_))                                                       \
            return pst_;                                                                           \
        PASS(T, field, c, __VA_ARGS__);                                                            \
    } while (0)

/* ---- cublas?gemm_v2 and their _64 variants ---- */

#define GEMM_V2(sym, field, S, TYPE, I, PROT)                                                          \
    typedef cublasStatus_t sym##_fn(cublasHandle_t, cublasOperation_t, cublasOperation_t, I, I, I, \
                                    const S *, const S *, I, const S *, I, const S *, S *, I);     \
    EXPORT cublasStatus_t sym(cublasHandle_t handle, cublasOperation_t transa,                     \
                              cublasOperation_t transb, I m, I n, I k, const S *alpha,             \
                              const S *A, I lda, const S *B, I ldb, const S *beta, S *C, I ldc)    \
    {                                                                                              \
        static blasft_call_stat stat = {.name = #sym};                                             \
        blasft_cublas_call c = {.stat = &stat, .handle = handle, .type = TYPE,                     \
                                .protectable = PROT, .transa = transa, .transb = transb, .m = m,   \
                                .n = n, .k = k, .alpha = alpha, .a = A, .lda = lda, .b = B,        \
                                .ldb = ldb, .beta = beta, .c = C, .ldc = ldc, .batch = 1};         \
        PROTECT_OR_PASS(sym##_fn *, field, &c, handle, transa, transb, m, n, k, alpha, A, lda, B,  \
                        ldb, beta, C, ldc);                                                        \
    }

GEMM_V2(cublasSgemm_v2, sgemm_v2, float, BLASFT_TYPE_S, int, 1)
GEMM_V2(cublasDgemm_v2, dgemm_v2, double, BLASFT_TYPE_D, int, 1)
GEMM_V2(cublasCgemm_v2, cgemm_v2, cuComplex, BLASFT_TYPE_C, int, 1)
GEMM_V2(cublasZgemm_v2, zgemm_v2, cuDoubleComplex, BLASFT_TYPE_Z, int, 1)
GEMM_V2(cublasSgemm_v2_64, sgemm_v2_64, float, BLASFT_TYPE_S, int64_t, 1)
GEMM_V2(cublasDgemm_v2_64, dgemm_v2_64, double, BLASFT_TYPE_D, int64_t, 1)
GEMM_V2(cublasCgemm_v2_64, cgemm_v2_64, cuComplex, BLASFT_TYPE_C, int64_t, 1)
GEMM_V2(cublasZgemm_v2_64, zgemm_v2_64, cuDoubleComplex, BLASFT_TYPE_Z, int64_t, 1)
/* the Gauss (3M) algorithm: other rounding than the thresholds model, counted unprotected */
GEMM_V2(cublasCgemm3m, cgemm3m, cuComplex, BLASFT_TYPE_C, int, 0)
GEMM_V2(cublasZgemm3m, zgemm3m, cuDoubleComplex, BLASFT_TYPE_Z, int, 0)
GEMM_V2(cublasCgemm3m_64, cgemm3m_64, cuComplex, BLASFT_TYPE_C, int64_t, 0)
GEMM_V2(cublasZgemm3m_64, zgemm3m_64, cuDoubleComplex, BLASFT_TYPE_Z, int64_t, 0)
/* half precision (declared by cuBLAS for C++ only; the data are passed by pointer, so 16-bit
 * words stand in for __half): no thresholds for it, counted unprotected */
typedef uint16_t half_word;
GEMM_V2(cublasHgemm, hgemm, half_word, BLASFT_TYPE_S, int, 0)
GEMM_V2(cublasHgemm_64, hgemm_64, half_word, BLASFT_TYPE_S, int64_t, 0)

/* ---- cublas?gemmStridedBatched and _64 ---- */

#define GEMM_STRIDED(sym, field, S, TYPE, I, PROT)                                                  \
    typedef cublasStatus_t sym##_fn(cublasHandle_t, cublasOperation_t, cublasOperation_t, I, I, I, \
                                    const S *, const S *, I, long long, const S *, I, long long,   \
                                    const S *, S *, I, long long, I);                              \
    EXPORT cublasStatus_t sym(cublasHandle_t handle, cublasOperation_t transa,                     \
                              cublasOperation_t transb, I m, I n, I k, const S *alpha,             \
                              const S *A, I lda, long long strideA, const S *B, I ldb,             \
                              long long strideB, const S *beta, S *C, I ldc, long long strideC,    \
                              I batchCount)                                                        \
    {                                                                                              \
        static blasft_call_stat stat = {.name = #sym};                                             \
        blasft_cublas_call c = {.stat = &stat, .handle = handle, .type = TYPE,                     \
                                .protectable = PROT, .transa = transa, .transb = transb, .m = m,   \
                                .n = n, .k = k, .alpha = alpha, .a = A, .lda = lda, .b = B,        \
                                .ldb = ldb, .beta = beta, .c = C, .ldc = ldc, .stride_a = strideA, \
                                .stride_b = strideB, .stride_c = strideC, .batch = batchCount};    \
        PROTECT_OR_PASS(sym##_fn *, field, &c, handle, transa, transb, m, n, k, alpha, A, lda,     \
                        strideA, B, ldb, strideB, beta, C, ldc, strideC, batchCount);              \
    }

GEMM_STRIDED(cublasSgemmStridedBatched, sgemm_strided, float, BLASFT_TYPE_S, int, 1)
GEMM_STRIDED(cublasDgemmStridedBatched, dgemm_strided, double, BLASFT_TYPE_D, int, 1)
GEMM_STRIDED(cublasCgemmStridedBatched, cgemm_strided, cuComplex, BLASFT_TYPE_C, int, 1)
GEMM_STRIDED(cublasZgemmStridedBatched, zgemm_strided, cuDoubleComplex, BLASFT_TYPE_Z, int, 1)
GEMM_STRIDED(cublasSgemmStridedBatched_64, sgemm_strided_64, float, BLASFT_TYPE_S, int64_t, 1)
GEMM_STRIDED(cublasDgemmStridedBatched_64, dgemm_strided_64, double, BLASFT_TYPE_D, int64_t, 1)
GEMM_STRIDED(cublasCgemmStridedBatched_64, cgemm_strided_64, cuComplex, BLASFT_TYPE_C, int64_t, 1)
GEMM_STRIDED(cublasZgemmStridedBatched_64, zgemm_strided_64, cuDoubleComplex, BLASFT_TYPE_Z,
             int64_t, 1)
GEMM_STRIDED(cublasHgemmStridedBatched, hgemm_strided, half_word, BLASFT_TYPE_S, int, 0)
GEMM_STRIDED(cublasHgemmStridedBatched_64, hgemm_strided_64, half_word, BLASFT_TYPE_S, int64_t, 0)
GEMM_STRIDED(cublasCgemm3mStridedBatched, cgemm3m_strided, cuComplex, BLASFT_TYPE_C, int, 0)
GEMM_STRIDED(cublasCgemm3mStridedBatched_64, cgemm3m_strided_64, cuComplex, BLASFT_TYPE_C,
             int64_t, 0)

/* ---- cublas?gemmBatched and _64: device arrays of pointers ---- */

#define GEMM_PTRS(sym, field, S, TYPE, I, PROT)                                                     \
    typedef cublasStatus_t sym##_fn(cublasHandle_t, cublasOperation_t, cublasOperation_t, I, I, I, \
                                    const S *, const S *const[], I, const S *const[], I,           \
                                    const S *, S *const[], I, I);                                  \
    EXPORT cublasStatus_t sym(cublasHandle_t handle, cublasOperation_t transa,                     \
                              cublasOperation_t transb, I m, I n, I k, const S *alpha,             \
                              const S *const Aarray[], I lda, const S *const Barray[], I ldb,      \
                              const S *beta, S *const Carray[], I ldc, I batchCount)               \
    {                                                                                              \
        static blasft_call_stat stat = {.name = #sym};                                             \
        blasft_cublas_call c = {.stat = &stat, .handle = handle, .type = TYPE,                     \
                                .protectable = PROT, .transa = transa, .transb = transb, .m = m,   \
                                .n = n, .k = k, .alpha = alpha, .lda = lda, .ldb = ldb,            \
                                .beta = beta, .ldc = ldc, .batch = batchCount, .arrays = 1,        \
                                .a_arr = (const void *const *)Aarray,                              \
                                .b_arr = (const void *const *)Barray,                              \
                                .c_arr = (void *const *)Carray};                                   \
        PROTECT_OR_PASS(sym##_fn *, field, &c, handle, transa, transb, m, n, k, alpha, Aarray,     \
                        lda, Barray, ldb, beta, Carray, ldc, batchCount);                          \
    }

GEMM_PTRS(cublasSgemmBatched, sgemm_batched, float, BLASFT_TYPE_S, int, 1)
GEMM_PTRS(cublasDgemmBatched, dgemm_batched, double, BLASFT_TYPE_D, int, 1)
GEMM_PTRS(cublasCgemmBatched, cgemm_batched, cuComplex, BLASFT_TYPE_C, int, 1)
GEMM_PTRS(cublasZgemmBatched, zgemm_batched, cuDoubleComplex, BLASFT_TYPE_Z, int, 1)
GEMM_PTRS(cublasSgemmBatched_64, sgemm_batched_64, float, BLASFT_TYPE_S, int64_t, 1)
GEMM_PTRS(cublasDgemmBatched_64, dgemm_batched_64, double, BLASFT_TYPE_D, int64_t, 1)
GEMM_PTRS(cublasCgemmBatched_64, cgemm_batched_64, cuComplex, BLASFT_TYPE_C, int64_t, 1)
GEMM_PTRS(cublasZgemmBatched_64, zgemm_batched_64, cuDoubleComplex, BLASFT_TYPE_Z, int64_t, 1)
GEMM_PTRS(cublasHgemmBatched, hgemm_batched, half_word, BLASFT_TYPE_S, int, 0)
GEMM_PTRS(cublasHgemmBatched_64, hgemm_batched_64, half_word, BLASFT_TYPE_S, int64_t, 0)
GEMM_PTRS(cublasCgemm3mBatched, cgemm3m_batched, cuComplex, BLASFT_TYPE_C, int, 0)
GEMM_PTRS(cublasCgemm3mBatched_64, cgemm3m_batched_64, cuComplex, BLASFT_TYPE_C, int64_t, 0)

/* ---- cublasGemmEx, cublasGemmStridedBatchedEx, cublasGemmBatchedEx and _64 ---- */

/* Protected here: IEEE real or complex float / double data with a compute type of the same
 * precision (the thresholds' model); half and bfloat16 with FP32 compute:
 * blasft_cublas_lowp_types; everything else (int8, TF32, 16F or emulated compute) is not. */
static int ex_type(cudaDataType at, cudaDataType bt, cudaDataType ct, cublasComputeType_t comp,
                   blasft_type *t)
{
    if (at != bt || at != ct)
        return 0;
    const int c32 = comp == CUBLAS_COMPUTE_32F || comp == CUBLAS_COMPUTE_32F_PEDANTIC;
    const int c64 = comp == CUBLAS_COMPUTE_64F || comp == CUBLAS_COMPUTE_64F_PEDANTIC;
    if (at == CUDA_R_32F && c32)
        *t = BLASFT_TYPE_S;
    else if (at == CUDA_R_64F && c64)
        *t = BLASFT_TYPE_D;
    else if (at == CUDA_C_32F && c32)
        *t = BLASFT_TYPE_C;
    else if (at == CUDA_C_64F && c64)
        *t = BLASFT_TYPE_Z;
    else
        return 0;
    return 1;
}

#define GEMM_EX(sym, field, I)                                                                     \
    typedef cublasStatus_t sym##_fn(cublasHandle_t, cublasOperation_t, cublasOperation_t, I, I, I, \
                                    const void *, const void *, cudaDataType, I, const void *,     \
                                    cudaDataType, I, const void *, void *, cudaDataType, I,        \
                                    cublasComputeType_t, cublasGemmAlgo_t);                        \
    EXPORT cublasStatus_t sym(cublasHandle_t handle, cublasOperation_t transa,                     \
                              cublasOperation_t transb, I m, I n, I k, const void *alpha,          \
                              const void *A, cudaDataType Atype, I lda, const void *B,             \
                              cudaDataType Btype, I ldb, const void *beta, void *C,                \
                              cudaDataType Ctype, I ldc, cublasComputeType_t computeType,          \
                              cublasGemmAlgo_t algo)                                               \
    {                                                                                              \
        static blasft_call_stat stat = {.name = #sym};                                             \
        blasft_type t = BLASFT_TYPE_S;                                                             \
        int ok = ex_type(Atype, Btype, Ctype, computeType, &t);                                    \
        int lp = !ok && blasft_cublas_lowp_types(Atype, Btype, Ctype, computeType);               \
        blasft_cublas_call c = {.stat = &stat, .handle = handle, .type = t,                        \
                                .protectable = ok || lp, .transa = transa, .transb = transb,       \
                                .m = m, .n = n, .k = k, .alpha = alpha, .a = A, .lda = lda,        \
                                .b = B, .ldb = ldb, .beta = beta, .c = C, .ldc = ldc, .batch = 1,  \
                                .lowp = lp, .ab_type = Atype, .c_type = Ctype,                     \
                                .compute = computeType, .algo = algo};                             \
        PROTECT_OR_PASS(sym##_fn *, field, &c, handle, transa, transb, m, n, k, alpha, A, Atype,   \
                        lda, B, Btype, ldb, beta, C, Ctype, ldc, computeType, algo);               \
    }

GEMM_EX(cublasGemmEx, gemm_ex, int)
GEMM_EX(cublasGemmEx_64, gemm_ex_64, int64_t)

/* cublasSgemmEx / cublasCgemmEx: float (complex) compute with the data types given; protected
 * where A, B and C are all of that type (DT), as cublas{S,C}gemm_v2, and (SgemmEx) where A and B
 * are half or bfloat16 (blasft_cublas_lowp_types) */
#define GEMM_TYPED_EX(sym, field, S, DT, TYPE, I, PROT)                                             \
    typedef cublasStatus_t sym##_fn(cublasHandle_t, cublasOperation_t, cublasOperation_t, I, I, I, \
                                    const S *, const void *, cudaDataType, I, const void *,        \
                                    cudaDataType, I, const S *, void *, cudaDataType, I);          \
    EXPORT cublasStatus_t sym(cublasHandle_t handle, cublasOperation_t transa,                     \
                              cublasOperation_t transb, I m, I n, I k, const S *alpha,             \
                              const void *A, cudaDataType Atype, I lda, const void *B,             \
                              cudaDataType Btype, I ldb, const S *beta, void *C,                   \
                              cudaDataType Ctype, I ldc)                                           \
    {                                                                                              \
        static blasft_call_stat stat = {.name = #sym};                                             \
        const int lp = PROT && DT == CUDA_R_32F &&                                                 \
                       blasft_cublas_lowp_types(Atype, Btype, Ctype, CUBLAS_COMPUTE_32F);         \
        blasft_cublas_call c = {.stat = &stat, .handle = handle, .type = TYPE,                     \
                                .protectable = lp || (PROT && Atype == DT && Btype == DT &&        \
                                                      Ctype == DT),                                \
                                .transa = transa, .transb = transb, .m = m, .n = n, .k = k,        \
                                .alpha = alpha, .a = A, .lda = lda, .b = B, .ldb = ldb,            \
                                .beta = beta, .c = C, .ldc = ldc, .batch = 1, .lowp = lp,          \
                                .ab_type = Atype, .c_type = Ctype,                                 \
                                .compute = CUBLAS_COMPUTE_32F, .algo = CUBLAS_GEMM_DEFAULT};       \
        PROTECT_OR_PASS(sym##_fn *, field, &c, handle, transa, transb, m, n, k, alpha, A, Atype,   \
                        lda, B, Btype, ldb, beta, C, Ctype, ldc);                                  \
    }

GEMM_TYPED_EX(cublasSgemmEx, sgemm_ex, float, CUDA_R_32F, BLASFT_TYPE_S, int, 1)
GEMM_TYPED_EX(cublasSgemmEx_64, sgemm_ex_64, float, CUDA_R_32F, BLASFT_TYPE_S, int64_t, 1)
GEMM_TYPED_EX(cublasCgemmEx, cgemm_ex, cuComplex, CUDA_C_32F, BLASFT_TYPE_C, int, 1)
GEMM_TYPED_EX(cublasCgemmEx_64, cgemm_ex_64, cuComplex, CUDA_C_32F, BLASFT_TYPE_C, int64_t, 1)
GEMM_TYPED_EX(cublasCgemm3mEx, cgemm3m_ex, cuComplex, CUDA_C_32F, BLASFT_TYPE_C, int, 0)
GEMM_TYPED_EX(cublasCgemm3mEx_64, cgemm3m_ex_64, cuComplex, CUDA_C_32F, BLASFT_TYPE_C, int64_t, 0)

#define GEMM_STRIDED_EX(sym, field, I)                                                             \
    typedef cublasStatus_t sym##_fn(cublasHandle_t, cublasOperation_t, cublasOperation_t, I, I, I, \
                                    const void *, const void *, cudaDataType, I, long long,        \
                                    const void *, cudaDataType, I, long long, const void *,        \
                                    void *, cudaDataType, I, long long, I, cublasComputeType_t,    \
                                    cublasGemmAlgo_t);                                             \
    EXPORT cublasStatus_t sym(cublasHandle_t handle, cublasOperation_t transa,                     \
                              cublasOperation_t transb, I m, I n, I k, const void *alpha,          \
                              const void *A, cudaDataType Atype, I lda, long long strideA,         \
                              const void *B, cudaDataType Btype, I ldb, long long strideB,         \
                              const void *beta, void *C, cudaDataType Ctype, I ldc,                \
                              long long strideC, I batchCount, cublasComputeType_t computeType,    \
                              cublasGemmAlgo_t algo)                                               \
    {                                                                                              \
        static blasft_call_stat stat = {.name = #sym};                                             \
        blasft_type t = BLASFT_TYPE_S;                                                             \
        int ok = ex_type(Atype, Btype, Ctype, computeType, &t);                                    \
        int lp = !ok && blasft_cublas_lowp_types(Atype, Btype, Ctype, computeType);               \
        blasft_cublas_call c = {.stat = &stat, .handle = handle, .type = t,                        \
                                .protectable = ok || lp, .transa = transa, .transb = transb,       \
                                .m = m, .n = n, .k = k, .alpha = alpha, .a = A, .lda = lda,        \
                                .b = B, .ldb = ldb, .beta = beta, .c = C, .ldc = ldc,              \
                                .stride_a = strideA, .stride_b = strideB, .stride_c = strideC,     \
                                .batch = batchCount, .lowp = lp, .ab_type = Atype,                 \
                                .c_type = Ctype, .compute = computeType, .algo = algo};            \
        PROTECT_OR_PASS(sym##_fn *, field, &c, handle, transa, transb, m, n, k, alpha, A, Atype,   \
                        lda, strideA, B, Btype, ldb, strideB, beta, C, Ctype, ldc, strideC,        \
                        batchCount, computeType, algo);                                            \
    }

GEMM_STRIDED_EX(cublasGemmStridedBatchedEx, gemm_strided_ex, int)
GEMM_STRIDED_EX(cublasGemmStridedBatchedEx_64, gemm_strided_ex_64, int64_t)

#define GEMM_PTRS_EX(sym, field, I)                                                                \
    typedef cublasStatus_t sym##_fn(cublasHandle_t, cublasOperation_t, cublasOperation_t, I, I, I, \
                                    const void *, const void *const[], cudaDataType, I,            \
                                    const void *const[], cudaDataType, I, const void *,            \
                                    void *const[], cudaDataType, I, I, cublasComputeType_t,        \
                                    cublasGemmAlgo_t);                                             \
    EXPORT cublasStatus_t sym(cublasHandle_t handle, cublasOperation_t transa,                     \
                              cublasOperation_t transb, I m, I n, I k, const void *alpha,          \
                              const void *const Aarray[], cudaDataType Atype, I lda,               \
                              const void *const Barray[], cudaDataType Btype, I ldb,               \
                              const void *beta, void *const Carray[], cudaDataType Ctype, I ldc,   \
                              I batchCount, cublasComputeType_t computeType,                       \
                              cublasGemmAlgo_t algo)                                               \
    {                                                                                              \
        static blasft_call_stat stat = {.name = #sym};                                             \
        blasft_type t = BLASFT_TYPE_S;                                                             \
        int ok = ex_type(Atype, Btype, Ctype, computeType, &t);                                    \
        int lp = !ok && blasft_cublas_lowp_types(Atype, Btype, Ctype, computeType);               \
        blasft_cublas_call c = {.stat = &stat, .handle = handle, .type = t,                        \
                                .protectable = ok || lp, .transa = transa, .transb = transb,       \
                                .m = m, .n = n, .k = k, .alpha = alpha, .lda = lda, .ldb = ldb,    \
                                .beta = beta, .ldc = ldc, .batch = batchCount, .arrays = 1,        \
                                .a_arr = Aarray, .b_arr = Barray, .c_arr = Carray, .lowp = lp,     \
                                .ab_type = Atype, .c_type = Ctype, .compute = computeType,         \
                                .algo = algo};                                                     \
        PROTECT_OR_PASS(sym##_fn *, field, &c, handle, transa, transb, m, n, k, alpha, Aarray,     \
                        Atype, lda, Barray, Btype, ldb, beta, Carray, Ctype, ldc, batchCount,      \
                        computeType, algo);                                                        \
    }

GEMM_PTRS_EX(cublasGemmBatchedEx, gemm_batched_ex, int)
GEMM_PTRS_EX(cublasGemmBatchedEx_64, gemm_batched_ex_64, int64_t)

/* ---- grouped batches: cublas{S,D}gemmGroupedBatched, cublasGemmGroupedBatchedEx and _64 ----
 * Group g is a pointer-array batch of group_size[g] GEMMs whose matrices follow the earlier
 * groups' in the arrays, with its own shapes and scalars (host arrays). Each group runs protected
 * as such a batch, or alone through the real function (one call recorded per group). A call
 * cuBLAS would reject, one with scalars in device memory and (Ex) one of data other than real
 * float or double go to cuBLAS whole (the valid ones counted unprotected). A group cuBLAS
 * refuses on its own (an unsupported combination) stops the call there with cuBLAS's answer. */

/* group g's call; its scalars sc bytes apart in the arrays, its matrices from index off */
#define GROUP_CALL(g, off, TYPE, PROT, SC)                                                         \
    ((blasft_cublas_call){.stat = &stat, .handle = handle, .type = TYPE, .protectable = PROT,      \
                          .transa = transa_array[g], .transb = transb_array[g],                  \
                          .m = m_array[g], .n = n_array[g], .k = k_array[g],                      \
                          .alpha = (const char *)alpha_array + (size_t)(g) * (SC),               \
                          .lda = lda_array[g], .ldb = ldb_array[g],                               \
                          .beta = (const char *)beta_array + (size_t)(g) * (SC),                 \
                          .ldc = ldc_array[g], .batch = group_size[g], .arrays = 1,              \
                          .a_arr = (const void *const *)(Aarray + (off)),                        \
                          .b_arr = (const void *const *)(Barray + (off)),                        \
                          .c_arr = (void *const *)(Carray + (off))})

/* valid_: every array given and every group valid; total_: the GEMMs of all groups */
#define GROUP_CHECK(TYPE, SC)                                                                      \
    int valid_ = group_count > 0 && transa_array && transb_array && m_array && n_array &&         \
                 k_array && alpha_array && Aarray && lda_array && Barray && ldb_array &&          \
                 beta_array && Carray && ldc_array && group_size;                                 \
    int64_t total_ = 0;                                                                            \
    for (int64_t g_ = 0; valid_ && g_ < (int64_t)group_count; g_++) {                             \
        const blasft_cublas_call v_ = GROUP_CALL(g_, 0, TYPE, 0, SC);                              \
        valid_ = blasft_cublas_valid(&v_);                                                         \
        total_ += group_size[g_];                                                                  \
    }

/* the whole call to cuBLAS, its arguments following T and field */
#define GROUP_WHOLE(T, field, ...)                                                                 \
    do {                                                                                           \
        blasft_cublas_call w_ = {.stat = &stat, .batch = total_, .counted = valid_,               \
                                 .nested = blasft_cublas_untouched()};                            \
        PASS(T, field, &w_, __VA_ARGS__);                                                          \
    } while (0)

/* every group: protected, else that group alone through real_ (REAL: the call, arguments of
 * group g_ whose matrices start at off_) */
#define GROUP_EACH(TYPE, SC, I, REAL)                                                              \
    int64_t off_ = 0;                                                                              \
    for (I g_ = 0; g_ < group_count; off_ += group_size[g_], g_++) {                               \
        blasft_cublas_call c = GROUP_CALL(g_, off_, TYPE, 1, SC);                                  \
        cublasStatus_t st_;                                                                        \
        if (!blasft_cublas_protect(&c, &st_)) {                                                    \
            blasft_cublas_pass_begin();                                                            \
            st_ = REAL;                                                                            \
            blasft_cublas_pass_end(&c);                                                            \
        }                                                                                          \
        if (st_ != CUBLAS_STATUS_SUCCESS)                                                          \
            return st_;                                                                            \
    }                                                                                              \
    return CUBLAS_STATUS_SUCCESS;

#define GEMM_GROUPED(sym, field, S, TYPE, I)                                                       \
    typedef cublasStatus_t sym##_fn(cublasHandle_t, const cublasOperation_t *,                     \
                                    const cublasOperation_t *, const I *, const I *, const I *,    \
                                    const S *, const S *const *, const I *, const S *const *,      \
                                    const I *, const S *, S *const *, const I *, I, const I *);    \
    EXPORT cublasStatus_t sym(cublasHandle_t handle, const cublasOperation_t transa_array[],       \
                              const cublasOperation_t transb_array[], const I m_array[],           \
                              const I n_array[], const I k_array[], const S alpha_array[],         \
                              const S *const Aarray[], const I lda_array[],                        \
                              const S *const Barray[], const I ldb_array[], const S beta_array[],  \
                              S *const Carray[], const I ldc_array[], I group_count,               \
                              const I group_size[])                                                \
    {                                                                                              \
        static blasft_call_stat stat = {.name = #sym};                                             \
        GROUP_CHECK(TYPE, sizeof(S))                                                               \
        if (!valid_ || blasft_cublas_untouched() || !blasft_cublas_host_scalars(handle))          \
            GROUP_WHOLE(sym##_fn *, field, handle, transa_array, transb_array, m_array, n_array,   \
                        k_array, alpha_array, Aarray, lda_array, Barray, ldb_array, beta_array,    \
                        Carray, ldc_array, group_count, group_size);                               \
        sym##_fn *real_ = BLASFT_CUBLAS_REAL(sym##_fn *, field);                                   \
        if (!real_)                                                                                \
            return CUBLAS_STATUS_NOT_INITIALIZED;                                                  \
        GROUP_EACH(TYPE, sizeof(S), I,                                                             \
                   real_(handle, transa_array + g_, transb_array + g_, m_array + g_, n_array + g_, \
                         k_array + g_, alpha_array + g_, Aarray + off_, lda_array + g_,            \
                         Barray + off_, ldb_array + g_, beta_array + g_, Carray + off_,            \
                         ldc_array + g_, 1, group_size + g_))                                      \
    }

GEMM_GROUPED(cublasSgemmGroupedBatched, sgemm_grouped, float, BLASFT_TYPE_S, int)
GEMM_GROUPED(cublasDgemmGroupedBatched, dgemm_grouped, double, BLASFT_TYPE_D, int)
GEMM_GROUPED(cublasSgemmGroupedBatched_64, sgemm_grouped_64, float, BLASFT_TYPE_S, int64_t)
GEMM_GROUPED(cublasDgemmGroupedBatched_64, dgemm_grouped_64, double, BLASFT_TYPE_D, int64_t)

#define GEMM_GROUPED_EX(sym, field, I)                                                             \
    typedef cublasStatus_t sym##_fn(cublasHandle_t, const cublasOperation_t *,                     \
                                    const cublasOperation_t *, const I *, const I *, const I *,    \
                                    const void *, const void *const *, cudaDataType_t, const I *,  \
                                    const void *const *, cudaDataType_t, const I *, const void *,  \
                                    void *const *, cudaDataType_t, const I *, I, const I *,        \
                                    cublasComputeType_t);                                          \
    EXPORT cublasStatus_t sym(cublasHandle_t handle, const cublasOperation_t transa_array[],       \
                              const cublasOperation_t transb_array[], const I m_array[],           \
                              const I n_array[], const I k_array[], const void *alpha_array,       \
                              const void *const Aarray[], cudaDataType_t Atype,                    \
                              const I lda_array[], const void *const Barray[],                     \
                              cudaDataType_t Btype, const I ldb_array[], const void *beta_array,   \
                              void *const Carray[], cudaDataType_t Ctype, const I ldc_array[],     \
                              I group_count, const I group_size[],                                 \
                              cublasComputeType_t computeType)                                     \
    {                                                                                              \
        static blasft_call_stat stat = {.name = #sym};                                             \
        blasft_type t = BLASFT_TYPE_S;                                                             \
        /* real data only (as tested); complex data get cuBLAS's own handling */                 \
        const int ok = ex_type(Atype, Btype, Ctype, computeType, &t) &&                            \
                       (t == BLASFT_TYPE_S || t == BLASFT_TYPE_D);                                 \
        const size_t sc = ok ? (size_t)blasft_type_size(t) : 0;                                    \
        GROUP_CHECK(t, sc)                                                                         \
        if (!ok || !valid_ || blasft_cublas_untouched() || !blasft_cublas_host_scalars(handle))   \
            GROUP_WHOLE(sym##_fn *, field, handle, transa_array, transb_array, m_array, n_array,   \
                        k_array, alpha_array, Aarray, Atype, lda_array, Barray, Btype, ldb_array,  \
                        beta_array, Carray, Ctype, ldc_array, group_count, group_size,             \
                        computeType);                                                              \
        sym##_fn *real_ = BLASFT_CUBLAS_REAL(sym##_fn *, field);                                   \
        if (!real_)                                                                                \
            return CUBLAS_STATUS_NOT_INITIALIZED;                                                  \
        GROUP_EACH(t, sc, I,                                                                       \
                   real_(handle, transa_array + g_, transb_array + g_, m_array + g_, n_array + g_, \
                         k_array + g_, (const char *)alpha_array + g_ * sc, Aarray + off_, Atype,  \
                         lda_array + g_, Barray + off_, Btype, ldb_array + g_,                     \
                         (const char *)beta_array + g_ * sc, Carray + off_, Ctype,                 \
                         ldc_array + g_, 1, group_size + g_, computeType))                         \
    }

GEMM_GROUPED_EX(cublasGemmGroupedBatchedEx, gemm_grouped_ex, int)
GEMM_GROUPED_EX(cublasGemmGroupedBatchedEx_64, gemm_grouped_ex_64, int64_t)

/* ---- the legacy API (cublas.h: no handle, the stream set by cublasSetKernelStream, which
 * cannot be read back): passed through, counted unprotected ---- */

#undef cublasSgemm
#undef cublasDgemm

#define GEMM_LEGACY(sym, field, S)                                                                 \
    typedef void sym##_fn(char, char, int, int, int, S, const S *, int, const S *, int, S, S *,    \
                          int);                                                                    \
    EXPORT void sym(char transa, char transb, int m, int n, int k, S alpha, const S *A, int lda,   \
                    const S *B, int ldb, S beta, S *C, int ldc);                                   \
    void sym(char transa, char transb, int m, int n, int k, S alpha, const S *A, int lda,          \
             const S *B, int ldb, S beta, S *C, int ldc)                                           \
    {                                                                                              \
        static blasft_call_stat stat = {.name = #sym};                                             \
        sym##_fn *fn = BLASFT_CUBLAS_REAL(sym##_fn *, field);                                      \
        if (!fn)                                                                                   \
            return;                                                                                \
        /* protectable = 0: only recorded and counted, never run by the engine */                  \
        blasft_cublas_call c = {.stat = &stat, .handle = (cublasHandle_t)&stat,                    \
                                .transa = CUBLAS_OP_N, .transb = CUBLAS_OP_N, .m = m, .n = n,      \
                                .k = k, .alpha = &alpha, .lda = m > 1 ? m : 1, .ldb = k > 1 ? k : 1, \
                                .beta = &beta, .ldc = m > 1 ? m : 1, .batch = 1};                  \
        cublasStatus_t st;                                                                         \
        blasft_cublas_protect(&c, &st);                                                            \
        blasft_cublas_pass_begin();                                                                \
        fn(transa, transb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);                          \
        blasft_cublas_pass_end(&c);                                                                \
    }

GEMM_LEGACY(cublasSgemm, sgemm_legacy, float)
GEMM_LEGACY(cublasDgemm, dgemm_legacy, double)
