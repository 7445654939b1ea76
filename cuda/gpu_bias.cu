/* cublasLt's bias epilogue for the protected path (cuda/cublas_interpose.c): D = alpha op(A)
 * op(B) + beta C + bias 1^T runs as a protected GEMM with beta 1 over an old C prepared here as
 * bias 1^T + beta C. With beta = 0 that old C is the bias itself, so D is rounded once, as
 * cublasLt rounds it; otherwise bias + beta C is rounded once more before the GEMM adds to it. */
#include "blasft_gpu.h"
#include "cuda_errors.h"

#include <cuda_runtime_api.h>

namespace {

constexpr int kThreads = 256;

/* d(i, j) = bias(i) [+ beta c(i, j)]; every CUDA block walks columns */
template <typename T>
__global__ void bias_kernel(int64_t m, int64_t n, const T *bias, T beta, const T *c, int64_t ldc,
                            T *d, int64_t ldd)
{
    for (int64_t j = blockIdx.x; j < n; j += gridDim.x)
        for (int64_t i = threadIdx.x; i < m; i += blockDim.x)
            d[i + j * ldd] = c ? bias[i] + beta * c[i + j * ldc] : bias[i];
}

template <typename T>
int launch(int64_t m, int64_t n, const void *bias, const void *beta, const void *c_in,
           int64_t ldc_in, void *d, int64_t ldd, cudaStream_t st)
{
    const cudaError_t before = blasft_err_pending();
    const T b = beta ? *(const T *)beta : T(0);
    const unsigned int grid = (unsigned int)(n < 65535 ? n : 65535);
    bias_kernel<T><<<grid, kThreads, 0, st>>>(m, n, (const T *)bias, b,
                                              b != T(0) ? (const T *)c_in : nullptr, ldc_in,
                                              (T *)d, ldd);
    return blasft_launched_ok(before) ? 0 : -2;
}

} // namespace

extern "C" int blasft_gpu_bias_into(blasft_type t, int64_t m, int64_t n, const void *bias,
                                    const void *beta, const void *c_in, int64_t ldc_in, void *d,
                                    int64_t ldd, void *stream)
{
    if (m <= 0 || n <= 0)
        return 0;
    const cudaStream_t st = (cudaStream_t)stream;
    if (t == BLASFT_TYPE_S)
        return launch<float>(m, n, bias, beta, c_in, ldc_in, d, ldd, st);
    if (t == BLASFT_TYPE_D)
        return launch<double>(m, n, bias, beta, c_in, ldc_in, d, ldd, st);
    return -1;
}
