/* Helpers shared by the engine's kernel files (gpu_encode.cu, gpu_check.cu, both through
 * gpu_sum_steps.cuh): element parts, compensated sums of lane pairs, programmatic dependent
 * launch, the top-p lists' instantiated capacities. Without relocatable device code each file
 * compiles its own copy, hence the unnamed namespace. */
#ifndef BLASFT_GPU_DEVICE_CUH
#define BLASFT_GPU_DEVICE_CUH

#include "gpu_kernels.h"

extern "C" {
#include "abft/abft_arith.h"
}

#include <math.h>

#include <type_traits>

namespace {

constexpr int kThreads = 256;
constexpr int kSlice = 16; /* columns (or indices l) per slice of the sliced passes */

/* CUDA blocks of kThreads for `threads` threads, at most 65536 (kernels stride over the rest) */
inline unsigned int grid_for(int64_t threads)
{
    const int64_t b = (threads + kThreads - 1) / kThreads;
    return (unsigned int)(b < 65536 ? b : 65536);
}

/* Sums (largest values) over a warp: lane 0 holds them */
__device__ __forceinline__ double warp_sum(double v)
{
    for (int off = 16; off > 0; off >>= 1)
        v += __shfl_down_sync(0xffffffffu, v, off);
    return v;
}
/* v summed over the L lanes of a group (L a power of two up to 32): lane 0 of the group holds
 * the sum */
__device__ __forceinline__ double group_sum(double v, int L)
{
    for (int off = L >> 1; off > 0; off >>= 1)
        v += __shfl_down_sync(0xffffffffu, v, off, L);
    return v;
}
__device__ __forceinline__ double warp_max(double v)
{
    for (int off = 16; off > 0; off >>= 1)
        v = fmax(v, __shfl_down_sync(0xffffffffu, v, off));
    return v;
}
/* The sum (Max: the largest) over the CUDA block; every thread gets it; `red` holds one double
 * per warp and may be used again once this returns */
template <bool Max = false> __device__ double block_reduce(double v, double *red)
{
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
    v = Max ? warp_max(v) : warp_sum(v);
    __syncthreads();
    if (lane == 0)
        red[warp] = v;
    __syncthreads();
    double s = red[0];
    for (int w = 1; w < nw; w++)
        s = Max ? fmax(s, red[w]) : s + red[w];
    __syncthreads();
    return s;
}

/* An event described in the counters' records (the first GK_MAX_RECORDS of a call): kind
 * GK_REC_*; block and element -1 where not known. The second tiers of the batched and the half
 * paths (gpu_batched.cu, gpu_lowp.cu) record an element found apart from its recomputation
 * (action: GK_REC_CORRECTED or GK_REC_DETECTED) ... */
__device__ __forceinline__ void gk_add_record(gk_counters *cnt, int action, int64_t block_row,
                                                int64_t block_col, int64_t row, int64_t col,
                                                double syndrome, double bound,
                                                int64_t matrix = -1)
{
    const unsigned int r = atomicAdd(&cnt->nrec, 1u);
    if (r >= GK_MAX_RECORDS)
        return;
    gk_record &rec = cnt->rec[r];
    rec.kind = action;
    rec.block_row = block_row;
    rec.block_col = block_col;
    rec.row = row;
    rec.col = col;
    rec.matrix = matrix;
    rec.syndrome = syndrome;
    rec.threshold = bound;
}
/* ... and the outcome of one flagged unit with `apart` elements apart: as the engine's located
 * elements (gpu_check.cu, gk_correct), corrected in correct mode whatever BLASFT_ON_ERROR says
 * (each is known exactly), detected and uncorrectable in detect mode; none apart: the flag was a
 * false alarm */
__device__ __forceinline__ void gk_count_apart(gk_counters *cnt, int action,
                                               unsigned long long apart)
{
    if (apart == 0) {
        atomicAdd(&cnt->false_alarms, 1ull);
        return;
    }
    atomicAdd(&cnt->detected, apart);
    atomicAdd(action == GK_REC_CORRECTED ? &cnt->corrected : &cnt->uncorrectable, apart);
}

/* Programmatic dependent launch (sm_90): the kernels after the check (the fault path) are launched
 * while their predecessor still runs and wait for it here, so that where nothing flagged, and each
 * returns at once, their launch latencies overlap instead of adding up after the check. A kernel
 * launched so (after_launch) calls pdl_wait before it touches anything its predecessors write;
 * pdl_release lets the next one be launched once every block of this grid has started. */
__device__ __forceinline__ void pdl_release()
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}
__device__ __forceinline__ void pdl_wait()
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

/* Parts of an element (real types: one part, the imaginary part reads 0). */
__device__ __forceinline__ double part_of(float x, int) { return x; }
__device__ __forceinline__ double part_of(double x, int) { return x; }
__device__ __forceinline__ double part_of(float2 x, int p) { return p ? x.y : x.x; }
__device__ __forceinline__ double part_of(double2 x, int p) { return p ? x.y : x.x; }
template <typename T> __device__ __forceinline__ double im_of(T x)
{
    return gk_el<T>::P == 2 ? part_of(x, 1) : 0.0;
}
/* The magnitude of the top-p lists: max(|re|, |im|) bounds every real product of a part. */
template <typename T> __device__ __forceinline__ double mag(T x)
{
    return gk_el<T>::P == 2 ? fmax(fabs(part_of(x, 0)), fabs(part_of(x, 1))) : fabs(part_of(x, 0));
}
/* |re| + |im|: the host engine's bound of a complex scalar's modulus */
template <typename T> __device__ __forceinline__ double abs1(T x)
{
    return fabs(part_of(x, 0)) + fabs(im_of(x));
}
template <typename T> __device__ __forceinline__ bool is_zero(T x)
{
    return part_of(x, 0) == 0.0 && im_of(x) == 0.0;
}
template <typename T> __device__ __forceinline__ bool is_finite_el(T x)
{
    return isfinite(part_of(x, 0)) && isfinite(im_of(x));
}
template <typename T> __device__ __forceinline__ bool is_one(T x)
{
    return part_of(x, 0) == 1.0 && im_of(x) == 0.0;
}
template <typename T> __device__ __forceinline__ T make_el(double re, double im);
template <> __device__ __forceinline__ float make_el<float>(double re, double) { return (float)re; }
template <> __device__ __forceinline__ double make_el<double>(double re, double) { return re; }
template <> __device__ __forceinline__ float2 make_el<float2>(double re, double im)
{
    return make_float2((float)re, (float)im);
}
template <> __device__ __forceinline__ double2 make_el<double2>(double re, double im)
{
    return make_double2(re, im);
}

/* Scheme of checksum w: w = 0 is the unweighted one. */
__device__ __forceinline__ double weight_of(int w, int wscheme, int i, int bs)
{
    return w == 0 ? 1.0 : blasft_weight(wscheme, i, bs);
}

__device__ __forceinline__ void csum_merge(blasft_csum *a, const blasft_csum &b)
{
    blasft_csum_add(a, b.s);
    blasft_csum_add(a, b.c);
}

/* Shuffle-reduces the compensated sums over the 16 lane pairs of a warp (xor 2..16 keeps both
 * lanes of a pair on identical operands), then compares the pair (xor 1). Returns the value;
 * *bad is set where the pair disagreed. */
__device__ __forceinline__ double pair_reduce(blasft_csum acc, bool reduce, bool *bad)
{
    if (reduce) {
        for (int off = 2; off < 32; off <<= 1) {
            blasft_csum o;
            o.s = __shfl_xor_sync(0xffffffffu, acc.s, off);
            o.c = __shfl_xor_sync(0xffffffffu, acc.c, off);
            csum_merge(&acc, o);
        }
    }
    double v = blasft_csum_value(&acc);
    double twin = __shfl_xor_sync(0xffffffffu, v, 1);
    *bad = !(v == twin) && !(v != v && twin != twin);
    return v;
}

inline unsigned int blocks_for(int64_t n, int64_t per) { return (unsigned int)((n + per - 1) / per); }

/* a kernel launched as a programmatic dependent of the one before it on st (pdl_wait) */
template <typename... Params, typename... Args>
void after_launch(void (*kernel)(Params...), dim3 grid, cudaStream_t st, Args... args)
{
    cudaLaunchAttribute attr[1] = {};
    attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr[0].val.programmaticStreamSerializationAllowed = 1;
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = grid;
    cfg.blockDim = dim3(kThreads);
    cfg.stream = st;
    cfg.attrs = attr;
    cfg.numAttrs = 1;
    cudaLaunchKernelEx(&cfg, kernel, args...);
}

/* f(std::integral_constant<int, P>{}) for the capacity P >= p of the top-p lists that the kernels
 * are instantiated with (1, 2, 4, GK_PMAX). */
template <typename F> auto with_capacity(int p, F f)
{
    if (p <= 1)
        return f(std::integral_constant<int, 1>{});
    if (p <= 2)
        return f(std::integral_constant<int, 2>{});
    if (p <= 4)
        return f(std::integral_constant<int, 4>{});
    return f(std::integral_constant<int, GK_PMAX>{});
}

} // namespace

#endif
