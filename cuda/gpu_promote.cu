/* BLASFT_PROMOTE=on on the GPU (docs/promote.md): an S or C GEMM runs as a D or Z GEMM of
 * promoted copies, checked in double and rounded once into the caller's C. These are the
 * conversions; the orchestration is promoted_gemm in gpu_promoted_gemm.cu. A complex matrix is a
 * real one with twice the rows (parts interleaved), so one pair of kernels serves both. */
#include "gpu_promote.h"

namespace {

constexpr int kThreads = 256;

/* dst (rows x cols, ld rows) = src (ld lds), column by column; every CUDA block walks columns */
__global__ void promote_kernel(const float *src, int64_t lds, int64_t rows, int64_t cols,
                               double *dst)
{
    for (int64_t c = blockIdx.x; c < cols; c += gridDim.x)
        for (int64_t i = threadIdx.x; i < rows; i += blockDim.x)
            dst[i + c * rows] = (double)src[i + c * lds];
}

/* dst (ld ldd) = src rounded to float: the one rounding of the promoted result */
__global__ void round_kernel(const double *src, int64_t rows, int64_t cols, float *dst,
                             int64_t ldd)
{
    for (int64_t c = blockIdx.x; c < cols; c += gridDim.x)
        for (int64_t i = threadIdx.x; i < rows; i += blockDim.x)
            dst[i + c * ldd] = (float)src[i + c * rows];
}

__global__ void scalars_kernel(const float *alpha, const float *beta, int parts, double *out)
{
    const int i = threadIdx.x;
    if (i < parts)
        out[i] = (double)alpha[i];
    else if (i < 2 * parts)
        out[i] = (double)beta[i - parts];
    else if (i < 3 * parts)
        out[i] = i == 2 * parts ? 1.0 : 0.0;
}

unsigned int grid_of(int64_t cols) { return (unsigned int)(cols < 65535 ? cols : 65535); }

} // namespace

void gk_promote(const float *src, int64_t lds, int64_t rows, int64_t cols, double *dst,
                cudaStream_t st)
{
    if (rows > 0 && cols > 0)
        promote_kernel<<<grid_of(cols), kThreads, 0, st>>>(src, lds, rows, cols, dst);
}

void gk_round(const double *src, int64_t rows, int64_t cols, float *dst, int64_t ldd,
              cudaStream_t st)
{
    if (rows > 0 && cols > 0)
        round_kernel<<<grid_of(cols), kThreads, 0, st>>>(src, rows, cols, dst, ldd);
}

void gk_promote_scalars(const float *alpha, const float *beta, int parts, double *out,
                        cudaStream_t st)
{
    scalars_kernel<<<1, 32, 0, st>>>(alpha, beta, parts, out);
}
