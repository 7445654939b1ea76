// How much of a memory-bound helper kernel hides under a compute-bound cuBLAS DGEMM when it runs
// on a high-priority stream beside it (the GPU engine's overlapped schedule)? Reads `passes`
// n x n double matrices (alternately A and B) with three kinds of reader and reports, per kind,
// the readers' time alone and how much they lengthen the GEMM ("stretch"), as medians of 11
// interleaved rounds:
//   add      256 threads, 8 loads in flight per lane, one plain FP64 add per element
//   twosum   the same loads, two compensated (TwoSum) adds per element, like an encoding pass
//            (two copies of one compensated sum)
//   twosum1  one TwoSum add per element (one copy)
//   kahan    two Kahan-compensated adds per element (4 FP64 operations each instead of 7)
//   onewarp  the TwoSum reader in CTAs of one warp, <= 64 registers and 80 KB of shared memory:
//            small enough to sit beside the two CTAs per SM of the sm90 DGEMM kernel cuBLAS
//            picks at n = 4096 (128 threads x 246 registers, 72 KB each) without displacing one
// Not part of the library or its tests; docs/gpu-benchmark.md quotes its output.
//   nvcc -O3 -std=c++17 -gencode arch=compute_90,code=sm_90 scripts/overlap_probe.cu -lcublas \
//        -o overlap_probe && ./overlap_probe 4096 4
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {

struct csum {
    double s, c;
};
__device__ __forceinline__ void two_sum_add(csum &a, double x)
{
    double t = a.s + x, bp = t - a.s;
    a.c += (a.s - (t - bp)) + (x - bp);
    a.s = t;
}

enum Kind { kAdd, kTwoSum, kTwoSum1, kKahan };

__device__ __forceinline__ void kahan_add(csum &a, double x)
{
    double y = x - a.c, t = a.s + y;
    a.c = (t - a.s) - y;
    a.s = t;
}

// each warp reads `per` consecutive elements, UNR loads in flight per lane
template <int UNR, int NT, Kind K>
__global__ void __launch_bounds__(NT, NT == 32 ? 32 : 3)
reader(const double *x, long n, long per, double *sink)
{
    extern __shared__ double reserved[]; // onewarp: only holds the SM's room
    const long w = (long)blockIdx.x * (NT / 32) + threadIdx.x / 32;
    const long b = w * per, e = b + per < n ? b + per : n;
    csum a{0, 0}, b2{0, 0};
    for (long i = b + (threadIdx.x & 31); i < e; i += 32L * UNR) {
        double v[UNR];
#pragma unroll
        for (int u = 0; u < UNR; u++)
            v[u] = i + 32L * u < e ? __ldg(x + i + 32L * u) : 0.0;
#pragma unroll
        for (int u = 0; u < UNR; u++) {
            if (K == kTwoSum) {
                two_sum_add(a, v[u]);
                two_sum_add(a, 0.5 * v[u]);
            } else if (K == kTwoSum1) {
                two_sum_add(a, v[u]);
            } else if (K == kKahan) {
                kahan_add(a, v[u]);
                kahan_add(b2, 0.5 * v[u]);
            } else {
                a.s += v[u];
            }
        }
    }
    if (NT == 32 && threadIdx.x == 0)
        reserved[0] = a.c;
    if (a.s + b2.s == 1234.5678) // never true for these data: keeps the loads
        sink[w] = a.s + a.c + b2.c;
}

} // namespace

int main(int argc, char **argv)
{
    const int n = argc > 1 ? atoi(argv[1]) : 4096, passes = argc > 2 ? atoi(argv[2]) : 4;
    const size_t N = (size_t)n * n;
    double *A, *B, *C, *sink;
    if (cudaMalloc(&A, N * 8) || cudaMalloc(&B, N * 8) || cudaMalloc(&C, N * 8) ||
        cudaMalloc(&sink, N / 8 + 64)) {
        fprintf(stderr, "cudaMalloc failed\n");
        return 1;
    }
    std::vector<double> h(N);
    for (size_t i = 0; i < N; i++)
        h[i] = (double)rand() / RAND_MAX - 0.5;
    cudaMemcpy(A, h.data(), N * 8, cudaMemcpyHostToDevice);
    cudaMemcpy(B, h.data(), N * 8, cudaMemcpyHostToDevice);
    cublasHandle_t hd;
    cublasCreate(&hd);
    int lo, hi;
    cudaDeviceGetStreamPriorityRange(&lo, &hi);
    cudaStream_t s0, s1;
    cudaStreamCreateWithFlags(&s0, cudaStreamNonBlocking);
    cudaStreamCreateWithPriority(&s1, cudaStreamNonBlocking, hi);
    cublasSetStream(hd, s0);
    const int kReserve = 80 * 1024;
    cudaFuncSetAttribute(reader<16, 32, kTwoSum>, cudaFuncAttributeMaxDynamicSharedMemorySize, kReserve);
    cudaFuncAttributes fa;
    cudaFuncGetAttributes(&fa, reader<16, 32, kTwoSum>);
    printf("onewarp reader: %d registers\n", fa.numRegs);
    const double one = 1, zero = 0;
    cudaEvent_t e0, e1, fork, join;
    cudaEventCreate(&e0);
    cudaEventCreate(&e1);
    cudaEventCreate(&fork);
    cudaEventCreate(&join);
    auto readers = [&](int kind, cudaStream_t st) {
        for (int p = 0; p < passes; p++) {
            const double *x = p & 1 ? B : A;
            const long per = 32L * 8 * 8, nw = ((long)N + per - 1) / per;
            if (kind == 0)
                reader<8, 256, kAdd><<<(nw + 7) / 8, 256, 0, st>>>(x, (long)N, per, sink);
            if (kind == 1)
                reader<8, 256, kTwoSum><<<(nw + 7) / 8, 256, 0, st>>>(x, (long)N, per, sink);
            if (kind == 3)
                reader<8, 256, kTwoSum1><<<(nw + 7) / 8, 256, 0, st>>>(x, (long)N, per, sink);
            if (kind == 4)
                reader<8, 256, kKahan><<<(nw + 7) / 8, 256, 0, st>>>(x, (long)N, per, sink);
            if (kind == 2) {
                const long per1 = 32L * 16 * 8;
                reader<16, 32, kTwoSum><<<((long)N + per1 - 1) / per1, 32, kReserve, st>>>(
                    x, (long)N, per1, sink);
            }
        }
    };
    // kind -1: no readers
    auto run = [&](bool gemm, int kind) {
        cudaEventRecord(e0, s0);
        if (kind >= 0) {
            cudaEventRecord(fork, s0);
            cudaStreamWaitEvent(s1, fork, 0);
            readers(kind, s1);
            cudaEventRecord(join, s1);
        }
        if (gemm)
            cublasDgemm(hd, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, A, n, B, n, &zero, C, n);
        if (kind >= 0)
            cudaStreamWaitEvent(s0, join, 0);
        cudaEventRecord(e1, s0);
        cudaEventSynchronize(e1);
        float ms;
        cudaEventElapsedTime(&ms, e0, e1);
        return ms;
    };
    struct cfg {
        bool gemm;
        int kind;
    } cfgs[] = {{true, -1}, {true, 0}, {true, 1}, {true, 2}, {true, 3}, {true, 4},
                {false, 0}, {false, 1}, {false, 2}, {false, 3}, {false, 4}};
    const int nk = 5;
    const int nc = (int)(sizeof cfgs / sizeof cfgs[0]);
    std::vector<std::vector<float>> t(nc);
    for (int r = 0; r < 14; r++)
        for (int c = 0; c < nc; c++) {
            float ms = run(cfgs[c].gemm, cfgs[c].kind);
            if (r >= 3) // three warm-up rounds
                t[c].push_back(ms);
        }
    std::vector<float> med(nc);
    for (int c = 0; c < nc; c++) {
        std::sort(t[c].begin(), t[c].end());
        med[c] = t[c][t[c].size() / 2];
    }
    if (cudaGetLastError() != cudaSuccess) {
        fprintf(stderr, "CUDA error\n");
        return 1;
    }
    const char *kinds[] = {"add", "twosum", "onewarp", "twosum1", "kahan"};
    printf("n %d, %d passes of %.1f MB; DGEMM alone %.4f ms (median of %zu)\n", n, passes,
           N * 8 / 1e6, med[0], t[0].size());
    for (int k = 0; k < nk; k++)
        printf("%-8s alone %.4f ms (%.2f TB/s)  with the GEMM %.4f ms  stretch %.4f ms = %.0f %% of alone\n",
               kinds[k], med[1 + nk + k], passes * N * 8 / (med[1 + nk + k] * 1e9), med[1 + k],
               med[1 + k] - med[0], 100.0 * (med[1 + k] - med[0]) / med[1 + nk + k]);
    return 0;
}
