/* The real cuBLAS: the one place that finds it, for the GPU engine (the few entry points of
 * blasft_cublas_api) and for the cuBLAS interposer (blasft_cublas_sym), so both use the same
 * library instance by construction. libblas_ft.so must load on machines without cuBLAS or a
 * driver, so nothing of cuBLAS is linked: it is found on the first use. */
#ifndef BLASFT_GPU_CUBLAS_H
#define BLASFT_GPU_CUBLAS_H

#include <cublas_v2.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct blasft_cublas_api {
    cublasStatus_t (*create)(cublasHandle_t *);
    cublasStatus_t (*destroy)(cublasHandle_t);
    cublasStatus_t (*set_stream)(cublasHandle_t, cudaStream_t);
    cublasStatus_t (*set_pointer_mode)(cublasHandle_t, cublasPointerMode_t);
    cublasStatus_t (*sgemm)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                            const float *, const float *, int, const float *, int, const float *,
                            float *, int);
    cublasStatus_t (*dgemm)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                            const double *, const double *, int, const double *, int,
                            const double *, double *, int);
    cublasStatus_t (*cgemm)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                            const cuComplex *, const cuComplex *, int, const cuComplex *, int,
                            const cuComplex *, cuComplex *, int);
    cublasStatus_t (*zgemm)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                            const cuDoubleComplex *, const cuDoubleComplex *, int,
                            const cuDoubleComplex *, int, const cuDoubleComplex *,
                            cuDoubleComplex *, int);
    /* batches (gpu_batched.cu); NULL where this cuBLAS lacks them: batches go matrix by matrix */
    cublasStatus_t (*sgemm_strided)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int,
                                    int, const float *, const float *, int, long long int,
                                    const float *, int, long long int, const float *, float *, int,
                                    long long int, int);
    cublasStatus_t (*dgemm_strided)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int,
                                    int, const double *, const double *, int, long long int,
                                    const double *, int, long long int, const double *, double *,
                                    int, long long int, int);
    cublasStatus_t (*sgemm_batched)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int,
                                    int, const float *, const float *const[], int,
                                    const float *const[], int, const float *, float *const[], int,
                                    int);
    cublasStatus_t (*dgemm_batched)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int,
                                    int, const double *, const double *const[], int,
                                    const double *const[], int, const double *, double *const[],
                                    int, int);
    cublasStatus_t (*cgemm_strided)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int,
                                    int, const cuComplex *, const cuComplex *, int, long long int,
                                    const cuComplex *, int, long long int, const cuComplex *,
                                    cuComplex *, int, long long int, int);
    cublasStatus_t (*zgemm_strided)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int,
                                    int, const cuDoubleComplex *, const cuDoubleComplex *, int,
                                    long long int, const cuDoubleComplex *, int, long long int,
                                    const cuDoubleComplex *, cuDoubleComplex *, int, long long int,
                                    int);
    cublasStatus_t (*cgemm_batched)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int,
                                    int, const cuComplex *, const cuComplex *const[], int,
                                    const cuComplex *const[], int, const cuComplex *,
                                    cuComplex *const[], int, int);
    cublasStatus_t (*zgemm_batched)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int,
                                    int, const cuDoubleComplex *, const cuDoubleComplex *const[],
                                    int, const cuDoubleComplex *const[], int,
                                    const cuDoubleComplex *, cuDoubleComplex *const[], int, int);
    /* half and bfloat16 GEMMs (gpu_lowp.cu); NULL where missing: those pass through */
    cublasStatus_t (*gemm_ex)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                              const void *, const void *, cudaDataType, int, const void *,
                              cudaDataType, int, const void *, void *, cudaDataType, int,
                              cublasComputeType_t, cublasGemmAlgo_t);
    cublasStatus_t (*gemm_strided_ex)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int,
                                      int, int, const void *, const void *, cudaDataType, int,
                                      long long int, const void *, cudaDataType, int,
                                      long long int, const void *, void *, cudaDataType, int,
                                      long long int, int, cublasComputeType_t, cublasGemmAlgo_t);
    cublasStatus_t (*gemm_batched_ex)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int,
                                      int, int, const void *, const void *const[], cudaDataType,
                                      int, const void *const[], cudaDataType, int, const void *,
                                      void *const[], cudaDataType, int, int, cublasComputeType_t,
                                      cublasGemmAlgo_t);
    cublasStatus_t (*set_math_mode)(cublasHandle_t, cublasMath_t);
} blasft_cublas_api;

/* The resolved entry points, or NULL if no cuBLAS could be loaded (named on the log once).
 * Thread-safe. The instance is found once, in this order:
 *  1. the object that defines cublasGetStream_v2 next after libblas_ft in the global scope
 *     (dlsym(RTLD_NEXT); we do not export that symbol), reopened by its path with RTLD_NOLOAD;
 *  2. a cuBLAS already loaded under its soname libcublas.so.13 / .12 / libcublas.so
 *     (RTLD_NOLOAD: a copy loaded privately, as PyTorch's libtorch_cuda.so does, is found too);
 *  3. dlopen of those sonames.
 * Symbols are looked up through that instance's handle and refused if they resolve into
 * libblas_ft itself. */
const blasft_cublas_api *blasft_cublas(void);

/* A symbol of the same cuBLAS instance (NULL if there is none, the symbol is missing, or it would
 * resolve into libblas_ft). Thread-safe; dlsym on every call, so resolve once and keep. */
void *blasft_cublas_sym(const char *name);

/* A symbol of the application's cublasLt, found as cuBLAS is (probe cublasLtCreate, then
 * libcublasLt.so.13 / .12 / libcublasLt.so); NULL as above. */
void *blasft_cublaslt_sym(const char *name);

#ifdef __cplusplus
}
#endif
#endif
