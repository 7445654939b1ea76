/* The real cuBLAS, loaded privately on the first GPU GEMM: libblas_ft.so must load on machines
 * without cuBLAS or a driver, so nothing of cuBLAS is linked. Only the few entry points the GPU
 * engine needs are resolved. */
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
} blasft_cublas_api;

/* The resolved entry points, or NULL if no cuBLAS could be loaded (named on the log once).
 * Looks in this order: a cuBLAS the process already has loaded (RTLD_NOLOAD, so an application's
 * private copy is shared), then libcublas.so.13 / .12 / libcublas.so. Never our own symbols:
 * the lookup goes through the loaded library's handle. Thread-safe. */
const blasft_cublas_api *blasft_cublas(void);

#ifdef __cplusplus
}
#endif
#endif
