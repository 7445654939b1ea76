/* Conversions of BLASFT_PROMOTE on the GPU (gpu_promote.cu): single-precision matrices (a complex
 * one as a real matrix of twice the rows) to packed double copies and back, on a stream. */
#ifndef BLASFT_GPU_PROMOTE_H
#define BLASFT_GPU_PROMOTE_H

#include <cuda_runtime.h>
#include <stdint.h>

/* dst (rows x cols, leading dimension rows) = src (leading dimension lds), exactly */
void gk_promote(const float *src, int64_t lds, int64_t rows, int64_t cols, double *dst,
                cudaStream_t st);
/* dst (leading dimension ldd) = src (rows x cols, leading dimension rows) rounded to float */
void gk_round(const double *src, int64_t rows, int64_t cols, float *dst, int64_t ldd,
              cudaStream_t st);
/* out[0 .. parts) = alpha, out[parts .. 2 parts) = beta, from device memory, and
 * out[2 parts .. 3 parts) = 1 (the beta of a promoted GEMM's later chunks of k) */
void gk_promote_scalars(const float *alpha, const float *beta, int parts, double *out,
                        cudaStream_t st);

#endif
