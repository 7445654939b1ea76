/* Reduced-precision GEMMs (half or bfloat16 A and B, C of their type or float, FP32
 * accumulation: cublasGemmEx with compute type 32F) checked around cuBLAS. docs/thresholds.md,
 * "Half and bfloat16 GEMMs".
 *
 * The reference side is computed without the data type's rounding: op(A)'s column sums per
 * block of BS rows are formed in double (exact for half data), split into two pieces of the
 * operands' type (scaled per block row by a power of two, so that the pieces stay in range) and
 * multiplied by op(B) in ONE cuBLAS GEMM of 2 ceil(m / BS) rows with FP32 accumulation. The
 * check compares them with C's column sums over each block (double) against a threshold of three
 * parts: C's own rounding to its type (each element's within u_o |c|, mean-independent of the
 * others': Hoeffding), the FP32 accumulation of the GEMM and of the reference, bounded as NORM
 * bounds a dot product (any order, Higham and Mary's model with FP32's unit doubled for
 * accumulators that truncate, as tensor cores do), and the reference's known leftovers (the
 * pieces' remainder, its FP32 results). The second tier computes every element of a flagged
 * block column again in double and compares it per element; one found apart is replaced by the
 * exact value rounded once to C's type, so even a false alarm that got that far leaves C no less
 * accurate than cuBLAS's.
 *
 * The caller's GEMM runs on the engine's handle with its output in FP32 (C's type where C is
 * float; else a buffer, rounded once into C after the check): split-K partial results are then
 * added in FP32, not in a 16-bit C's type, as the model needs.
 *
 * A batch (cublasGemmStridedBatchedEx, cublasGemmBatchedEx) runs the same passes over all its
 * matrices at once: every kernel takes (matrix, unit) from its index, both GEMMs are batched,
 * and the buffers hold a chunk of the batch's matrices at a time. */
#include "gpu_device.cuh"
#include "gpu_engine.h"
extern "C" {
#include "log.h"
}

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cfloat>
#include <cstring>

using namespace gpu_engine;

namespace {

/* op(A)'s block sums as pieces of the operands' type: two (22 bits of half, 16 of bfloat16);
 * what they leave is bounded in the threshold (rn), far below C's own rounding */
constexpr int kPieces = 2;
/* the accumulation's unit roundoff: FP32's doubled (truncating accumulators) */
constexpr double kUa = 0x1p-23;
/* largest scaled block sum: below half's range with room for the pieces' own rounding */
constexpr int kPieceExp = 13;

/* cuBLAS's name for the operands' type */
template <typename T> struct lp_dt;
template <> struct lp_dt<__half> {
    static constexpr cudaDataType dt = CUDA_R_16F;
};
template <> struct lp_dt<__nv_bfloat16> {
    static constexpr cudaDataType dt = CUDA_R_16BF;
};
/* The checked result is FP32: its unit roundoff, and the absolute rounding error among its
 * subnormals (a whole step, 2^-149: accumulators that truncate) */
constexpr double kUc = 0x1p-24, kSubC = 0x1p-149;

__device__ __forceinline__ double to_d(__half x) { return (double)__half2float(x); }
__device__ __forceinline__ double to_d(__nv_bfloat16 x) { return (double)__bfloat162float(x); }
__device__ __forceinline__ double to_d(float x) { return x; }
/* a number of the type near x (through float: the hardware's conversion; the pieces need not
 * be rounded correctly, what they leave is computed exactly) */
template <typename T> __device__ __forceinline__ T near(double x);
template <> __device__ __forceinline__ __half near<__half>(double x)
{
    return __float2half_rn((float)x);
}
template <> __device__ __forceinline__ __nv_bfloat16 near<__nv_bfloat16>(double x)
{
    return __float2bfloat16_rn((float)x);
}

/* the checked FP32 result rounded once into the caller's 16-bit C */
__device__ __forceinline__ void narrow(float x, __half *to) { *to = __float2half_rn(x); }
__device__ __forceinline__ void narrow(float x, __nv_bfloat16 *to) { *to = __float2bfloat16_rn(x); }

__device__ __forceinline__ unsigned short rounded_bits(__half h) { return __half_as_ushort(h); }
__device__ __forceinline__ unsigned short rounded_bits(__nv_bfloat16 h)
{
    return __bfloat16_as_ushort(h);
}

template <typename TA> struct lp_args {
    int64_t m, n, k, lda, ldb, ldc, ldo;
    int64_t mb; /* block rows */
    int bs;
    bool ta, tb; /* op(A) = A^T, op(B) = B^T */
    int bl;      /* lanes per column of op(B) = B in its norms' pass (bnorm_block) */
    /* 16 or 8 where every column of A (op(A) = A), B (op(B) = B), C and the old C starts at a
     * multiple of that many bytes and every block row too: the passes load that many bytes at
     * a time; else 0. The host sets what the leading dimensions and the block size allow and,
     * (calls not by arrays of pointers) what matrix 0's addresses allow; mat what each
     * matrix's addresses allow within that. */
    int vec_a, vec_b, vec_c;
    bool vec_out; /* out's columns and block rows at multiples of 8 bytes (with vec_c 16) */
    /* The chunk's matrices (count of them): A, B and the caller's C at strides sa, sb and sc
     * (elements) from these, or, where Aa is given, at Aa[g], Ba[g] and Ca[g]. The kernels
     * take matrix g's as these fields (mat), the buffers' too. */
    int64_t count, sa, sb, sc;
    int64_t first; /* the caller's index of the chunk's first matrix (events); -1: one GEMM */
    const TA *const *Aa, *const *Ba;
    void *const *Ca;
    bool one; /* the call is one matrix (not a chunk of one): the kernels' fast paths */
    int upg;  /* lp_check: units (I, j) a group of lanes sums per round, 1 or kGroup */
    /* elements from matrix to matrix in the buffers: the pieces, R, the FP32 result and the
     * old C (multiples of 16 bytes: cuBLAS's arrays of pointers to them) */
    int64_t sp, sr, sw;
    const TA *A, *B;
    bool wide;                   /* C is half or bfloat16: */
    float *C;                    /* the FP32 result that is checked: the caller's C, or ... */
    TA *out;                     /* ... where wide, the buffer, and the caller's C here (ld ldo) */
    float *old;                  /* the old C, m x n (ld m), or NULL: beta is a host zero */
    float alpha_v, beta_v;       /* host pointer mode */
    const float *alpha_p, *beta_p; /* device pointer mode */
    double *S;                   /* [I][l]: op(A)'s sum over block row I */
    double *Q, *pn, *rn;         /* [I]: the rows' squares; the scaled pieces', remainders' */
    int *e;                      /* [I]: the exponent of max_l |S(I, l)| (scale_exp) */
    unsigned int *bmax;          /* max |op(B)| as a float's bits */
    TA *pieces;                  /* (kPieces mb) x k, column-major: row p mb + I */
    float *R;                    /* (kPieces mb) x n: pieces x op(B) */
    double *bsq;                 /* [j]: ||op(B)(:, j)||^2 */
    unsigned int *nflag;         /* block columns over their thresholds ... */
    uint2 *flagged;              /* ... (I, j), mb n at most */
    float *one_zero;             /* the reference GEMM's scalars in device memory */
    double omega;                /* NORM's factor for BLASFT_NORM_FALSE_ALARM */
    double norm_terms;           /* NORM's terms of a k-long product (second order included) */
    gk_counters *cnt;
    int action;                  /* GK_REC_CORRECTED or GK_REC_DETECTED */
};

template <typename TA> __device__ __forceinline__ double alpha_of(const lp_args<TA> &a)
{
    return a.alpha_p ? *a.alpha_p : a.alpha_v;
}
template <typename TA> __device__ __forceinline__ double beta_of(const lp_args<TA> &a)
{
    return a.old ? (a.beta_p ? *a.beta_p : a.beta_v) : 0.0;
}
/* op(A)(i, l), op(B)(l, j) */
template <typename TA>
__device__ __forceinline__ double a_at(const lp_args<TA> &a, int64_t i, int64_t l)
{
    return to_d(a.ta ? a.A[l + i * a.lda] : a.A[i + l * a.lda]);
}
template <typename TA>
__device__ __forceinline__ double b_at(const lp_args<TA> &a, int64_t l, int64_t j)
{
    return to_d(a.tb ? a.B[j + l * a.ldb] : a.B[l + j * a.ldb]);
}

/* layout (16, 8 or 0: what the leading dimensions allow) where p is aligned to it, else the
 * next that p is aligned to */
__host__ __device__ __forceinline__ int aligned_to(const void *p, int layout)
{
    for (int w = layout; w >= 8; w /= 2)
        if ((uintptr_t)p % w == 0)
            return w;
    return 0;
}

/* Matrix g of the chunk: a's fields as that matrix's and its buffers' (the single GEMM is
 * matrix 0). */
template <typename TA> __device__ __forceinline__ lp_args<TA> mat(const lp_args<TA> &a, int64_t g)
{
    lp_args<TA> v = a;
    v.A = a.Aa ? a.Aa[g] : a.A + g * a.sa;
    v.B = a.Ba ? a.Ba[g] : a.B + g * a.sb;
    if (a.wide) { /* the result in the buffer, the caller's 16-bit C apart */
        v.C = a.C + g * a.sw;
        v.out = a.Ca ? (TA *)a.Ca[g] : a.out + g * a.sc;
    } else {
        v.C = a.Ca ? (float *)a.Ca[g] : a.C + g * a.sc;
    }
    v.old = a.old ? a.old + g * a.sw : nullptr;
    v.S = a.S + g * a.mb * a.k;
    v.Q = a.Q + g * a.mb;
    v.pn = a.pn + g * a.mb;
    v.rn = a.rn + g * a.mb;
    v.e = a.e + g * a.mb;
    v.bmax = a.bmax + g;
    v.pieces = a.pieces + g * a.sp;
    v.R = a.R + g * a.sr;
    v.bsq = a.bsq + g * a.n;
    v.vec_a = aligned_to(v.A, a.vec_a);
    v.vec_b = aligned_to(v.B, a.vec_b);
    v.vec_c = aligned_to(v.C, a.vec_c);
    if (v.old)
        v.vec_c = min(v.vec_c, aligned_to(v.old, a.vec_c));
    v.vec_out = a.vec_out && aligned_to(v.out, 8) == 8;
    return v;
}

/* Lanes that share one block column's sum (the encoding's and the check's): interleaved along
 * the contiguous rows, so that a load of a warp touches one 16-byte run per group */
constexpr int kGroup = 8;
/* l per CUDA block of the encoding (rounds of one per group), and of the split (one thread
 * each) */
constexpr int kEncL = 4 * (kThreads / kGroup);
constexpr int kChunk = kThreads;
/* op(B)'s columns up to this long are read by 8 lanes each, longer ones by a warp (bnorm_block) */
constexpr int64_t kShortK = 512;

/* Element t of the words w[0..] (32 bits each) as the type's number: in registers, no copies */
__device__ __forceinline__ double word_el(const uint32_t *w, int t, const __half *)
{
    return to_d(__ushort_as_half((unsigned short)(w[t / 2] >> (16 * (t % 2)))));
}
__device__ __forceinline__ double word_el(const uint32_t *w, int t, const __nv_bfloat16 *)
{
    return to_d(__ushort_as_bfloat16((unsigned short)(w[t / 2] >> (16 * (t % 2)))));
}
__device__ __forceinline__ double word_el(const uint32_t *w, int t, const float *)
{
    return __uint_as_float(w[t]);
}

/* Calls op(x) for the elements x of p[0, n), lane `sub` of `lanes` taking its share: W bytes
 * at a time (p W-byte aligned, as the run's every column), then the tail. Each lane issues U
 * loads before it uses the first: one load in flight per thread left these memory-bound passes
 * at about half the card's bandwidth (H200: lp_check 48 us for 96 MiB at 4096^3). The order of
 * op's calls is the loads' order, as one at a time. */
constexpr int kInFlight = 4;
template <int W> struct words_of {
    uint32_t w[W / 4];
};
template <int W> __device__ __forceinline__ words_of<W> load_words(const void *p, int64_t v)
{
    words_of<W> r;
    if constexpr (W == 16) {
        const uint4 x = reinterpret_cast<const uint4 *>(p)[v];
        r.w[0] = x.x;
        r.w[1] = x.y;
        r.w[2] = x.z;
        r.w[3] = x.w;
    } else {
        const uint2 x = reinterpret_cast<const uint2 *>(p)[v];
        r.w[0] = x.x;
        r.w[1] = x.y;
    }
    return r;
}
template <int W, int U, typename T, typename Op>
__device__ __forceinline__ int64_t run_words(const T *p, int64_t n, int sub, int lanes, Op op)
{
    constexpr int w = W / sizeof(T);
    const int64_t nv = n / w;
    for (int64_t v0 = sub; v0 < nv; v0 += (int64_t)U * lanes) {
        words_of<W> word[U];
#pragma unroll
        for (int u = 0; u < U; u++)
            if (v0 + u * lanes < nv)
                word[u] = load_words<W>(p, v0 + u * lanes);
#pragma unroll
        for (int u = 0; u < U; u++)
            if (v0 + u * lanes < nv)
#pragma unroll
                for (int t = 0; t < w; t++)
                    op(word_el(word[u].w, t, p));
    }
    return nv * w;
}
/* vec: 16 or 8 where p (and every column of its matrix) is aligned to that, else 0 */
template <int U = kInFlight, typename T, typename Op>
__device__ __forceinline__ void run_sum(const T *p, int64_t n, int sub, int lanes, int vec, Op op)
{
    const int64_t done = vec == 16 ? run_words<16, U>(p, n, sub, lanes, op)
                         : vec == 8 ? run_words<8, U>(p, n, sub, lanes, op) : 0;
    for (int64_t i = done + sub; i < n; i += lanes)
        op(to_d(p[i]));
}

/* S(I, l) = sum_{i in I} op(A)(i, l) in double (plain sums: exact for half data, whose partial
 * sums need at most 48 bits; for bfloat16 the threshold takes their rounding), with Q(I), the
 * block row's sum of squares, and the exponent of max_l |S(I, l)| (biased by kExpBias, 0: all
 * zero), both added in with one atomic per CUDA block. A CUDA block per block row I and
 * kEncL consecutive l. op(A) = A: a group of kGroup lanes per l along the block's contiguous
 * rows; op(A) = A^T: a warp per eighth of the rows, each lane an l (contiguous), the eighths
 * added in shared memory. */
constexpr int kExpBias = 2048;
template <typename TA>
__device__ __forceinline__ void encode_block(const lp_args<TA> &a, int64_t I, int64_t chunk)
{
    __shared__ double red[kThreads / 32];
    __shared__ double part[kThreads];
    const int64_t i0 = I * a.bs, l0 = chunk * kEncL;
    const int64_t rows = a.m - i0 < a.bs ? a.m - i0 : a.bs;
    const int64_t l1 = l0 + kEncL < a.k ? l0 + kEncL : a.k;
    double q = 0.0, mx = 0.0;
    /* the same rounds for every thread (the shuffles and barriers) */
    for (int64_t lb = l0; lb < l0 + kEncL; lb += kThreads / kGroup) {
        if (a.ta) {
            const int lx = threadIdx.x & 31, g = threadIdx.x >> 5, ng = blockDim.x >> 5;
            for (int64_t lc = lb; lc < lb + kThreads / kGroup; lc += 32) {
                const int64_t l = lc + lx;
                double s = 0.0;
                if (l < l1) {
                    const TA *A = a.A + l + i0 * a.lda;
                    for (int64_t i = g; i < rows; i += ng) {
                        const double x = to_d(A[i * a.lda]);
                        s += x;
                        q = fma(x, x, q);
                    }
                }
                part[threadIdx.x] = s;
                __syncthreads();
                if (g == 0 && l < l1) {
                    for (int h = 1; h < ng; h++)
                        s += part[h * 32 + lx];
                    a.S[I * a.k + l] = s;
                    mx = fmax(mx, fabs(s));
                }
                __syncthreads(); /* part is the next round's */
            }
        } else {
            const int sub = threadIdx.x & (kGroup - 1);
            const int64_t l = lb + threadIdx.x / kGroup;
            double s = 0.0;
            if (l < l1)
                run_sum(a.A + i0 + l * a.lda, rows, sub, kGroup, a.vec_a, [&](double x) {
                    s += x;
                    q = fma(x, x, q);
                });
            s = group_sum(s, kGroup);
            if (sub == 0 && l < l1) {
                a.S[I * a.k + l] = s;
                mx = fmax(mx, fabs(s));
            }
        }
    }
    q = block_reduce<false>(q, red);
    mx = block_reduce<true>(mx, red);
    if (threadIdx.x == 0) {
        atomicAdd(&a.Q[I], q);
        if (mx > 0.0) /* NaN and Inf: no scale (the check skips such blocks) */
            atomicMax(&a.e[I], isfinite(mx) ? ilogb(mx) + kExpBias : INT_MAX);
    }
}

/* 2^e for |e| well inside the double range (the pieces' scales) */
__device__ __forceinline__ double exp2i(int e)
{
    return __longlong_as_double((long long)(e + 1023) << 52);
}

/* The pieces' scale 2^e of block row I: the biased exponent of max |S| puts the pieces in range
 * (0: zero, NaN or Inf, no scale); bfloat16's range is FP32's, so for large op(B) e grows until
 * the reference's products and sums, at most k 2^(kPieceExp + 1) max|op(B)| (Cauchy-Schwarz),
 * stay below 2^125. */
template <typename TA> __device__ __forceinline__ int scale_exp(const lp_args<TA> &a, int64_t I)
{
    const int eb = a.e[I];
    if (eb <= 0 || eb == INT_MAX)
        return 0;
    int e = eb - kExpBias - kPieceExp;
    const float bm = __uint_as_float(*a.bmax);
    if (bm > 0.0f && isfinite(bm)) {
        const int log2k = 64 - __clzll((unsigned long long)a.k); /* 2^log2k > k */
        const int excess = kPieceExp + 1 + ilogbf(bm) + 1 + log2k - 125;
        if (excess > 0)
            e += excess;
    }
    return e;
}

/* The pieces of every scaled sum S(I, l) 2^-e(I), e(I) putting max_l |S(I, l)| below
 * 2^(kPieceExp + 1), with the squares of the pieces and of what they leave, added into pn(I)
 * and rn(I): a thread per (I, l), a CUDA block per I and kChunk l of matrix blockIdx.z. */
template <typename TA>
__global__ void __launch_bounds__(kThreads) lp_split(lp_args<TA> batch)
{
    pdl_wait(); /* launched as lp_prep's dependent (after_launch): its sums complete */
    __shared__ double red[kThreads / 32];
    const lp_args<TA> a = mat(batch, blockIdx.z);
    const int64_t I = blockIdx.x, l = (int64_t)blockIdx.y * kChunk + threadIdx.x;
    const int e = scale_exp(a, I);
    double pn = 0.0, rn = 0.0;
    if (l < a.k) {
        double x = a.S[I * a.k + l] * exp2i(-e);
        const int64_t ld = kPieces * a.mb;
        for (int p = 0; p < kPieces; p++) {
            const TA piece = near<TA>(x);
            const double pv = to_d(piece);
            a.pieces[p * a.mb + I + l * ld] = piece;
            pn = fma(pv, pv, pn);
            x -= pv; /* exact: pv is x rounded to fewer bits */
        }
        rn = x * x;
    }
    pn = block_reduce<false>(pn, red);
    rn = block_reduce<false>(rn, red);
    if (threadIdx.x == 0) {
        atomicAdd(&a.pn[I], pn);
        atomicAdd(&a.rn[I], rn);
    }
}

/* bsq(j) = ||op(B)(:, j)||^2 for CUDA block b of bnorm_blocks. op(B) = B: a group of bl lanes
 * per column (a warp for long columns; 8 lanes for short ones, k <= kShortK, so that the many
 * blocks of a batch of small matrices each do more than a warp's worth of latency); op(B) = B^T:
 * a thread per column and chunk of 256 rows (neighbouring threads on neighbouring j), added into
 * bsq (zeroed). */
template <typename TA> __host__ __device__ int64_t bnorm_blocks(const lp_args<TA> &a)
{
    return a.tb ? ((a.n + kThreads - 1) / kThreads) * ((a.k + 255) / 256)
                : (a.n + kThreads / a.bl - 1) / (kThreads / a.bl);
}
/* the largest |op(B)| so far (a non-negative float's bits order as its values) */
template <typename TA> __device__ __forceinline__ void note_bmax(const lp_args<TA> &a, double mx)
{
    const unsigned int bits = __float_as_uint((float)mx);
    if (bits > *(volatile unsigned int *)a.bmax) /* most calls see it raised already */
        atomicMax(a.bmax, bits);
}
template <typename TA>
__device__ __forceinline__ void bnorm_block(const lp_args<TA> &a, int64_t b)
{
    if (a.tb) {
        const int64_t cols = (a.n + kThreads - 1) / kThreads;
        const int64_t j = (b % cols) * kThreads + threadIdx.x, l0 = (b / cols) * 256;
        if (j >= a.n)
            return;
        const int64_t l1 = l0 + 256 < a.k ? l0 + 256 : a.k;
        double s = 0.0, mx = 0.0;
        for (int64_t l = l0; l < l1; l++) {
            const double x = to_d(a.B[j + l * a.ldb]);
            s = fma(x, x, s);
            mx = fmax(mx, fabs(x));
        }
        atomicAdd(&a.bsq[j], s);
        note_bmax(a, mx);
        return;
    }
    const int L = a.bl, sub = threadIdx.x & (L - 1);
    const int64_t j = b * (kThreads / L) + threadIdx.x / L;
    const bool live = j < a.n; /* the groups of a warp shuffle together */
    double s = 0.0;
    double mx = 0.0;
    if (live)
        run_sum(a.B + j * a.ldb, a.k, sub, L, a.vec_b, [&](double x) {
            s = fma(x, x, s);
            mx = fmax(mx, fabs(x));
        });
    s = group_sum(s, L);
    for (int off = L >> 1; off > 0; off >>= 1)
        mx = fmax(mx, __shfl_down_sync(0xffffffffu, mx, off, L));
    if (live && sub == 0) {
        a.bsq[j] = s;
        note_bmax(a, mx);
    }
}

/* CUDA blocks of lp_prep per matrix */
template <typename TA> __host__ __device__ int64_t prep_blocks(const lp_args<TA> &a)
{
    return a.mb * ((a.k + kEncL - 1) / kEncL) + bnorm_blocks(a);
}

/* One launch for the two reads of the operands before the GEMM, prep_blocks per matrix: op(A)'s
 * block sums (the first mb ceil(k / kEncL) CUDA blocks), then op(B)'s column norms. */
template <typename TA>
__device__ __forceinline__ void prep_matrix(const lp_args<TA> &a, int64_t b)
{
    const int64_t enc = a.mb * ((a.k + kEncL - 1) / kEncL);
    if (b < enc)
        encode_block(a, b % a.mb, b / a.mb);
    else
        bnorm_block(a, b - enc);
}
/* four CUDA blocks per SM (64 registers), as before its loads went kInFlight at a time */
template <typename TA> __global__ void __launch_bounds__(kThreads, 4) lp_prep(lp_args<TA> batch)
{
    pdl_release(); /* lp_split may be launched: it waits for this grid */
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        batch.one_zero[0] = 1.0f;
        batch.one_zero[1] = 0.0f;
    }
    /* one matrix from the parameters, as lp_check (Nsight Compute, H200, 4096^3: 27.1 us, as
     * before batches; 30.1 through mat) */
    if (batch.one) {
        prep_matrix(batch, blockIdx.x);
    } else {
        const int64_t per = prep_blocks(batch), g = blockIdx.x / per;
        prep_matrix(mat(batch, g), blockIdx.x - g * per);
    }
}

/* The check of block column (I, j) of matrix g from its sums (lp_check); over its threshold,
 * (g mb + I, j) goes on the list for the second tier. */
template <typename TA>
__device__ __forceinline__ void over_threshold(const lp_args<TA> &a, int64_t g, int64_t I,
                                               int64_t j, int64_t rows, double cs, double cabs,
                                               double csq, double os, double oabs, double osq)
{
    const double alpha = alpha_of(a), beta = beta_of(a);
    const double aa = fabs(alpha), bb = fabs(beta);
    const double uo = kUc, ud = 0x1p-53;
    const double nk = (double)a.k, acc = kUa * kUa * a.norm_terms;
    const bool dbl = a.old && beta != 0.0;
    const int64_t ldr = kPieces * a.mb;
    const double scale = exp2i(scale_exp(a, I));
    double rsum = 0.0, rabs = 0.0;
    for (int p = 0; p < kPieces; p++) {
        const double x = a.R[p * a.mb + I + j * ldr];
        rsum += x;
        rabs += fabs(x);
    }
    const double bj = a.bsq[j];
    /* Inf or NaN in op(A)'s block rows or op(B)'s column (a loss scaler's overflow): the block
     * column's values are not finite where they enter, its sums cannot be judged, and the
     * second tier could not judge those elements either (blasft_parts_agree): not checked, so
     * that such data costs no recomputation of every block it reaches */
    if (alpha != 0.0 && !(isfinite(a.Q[I]) && isfinite(bj)))
        return;
    const double ref = alpha == 0.0 ? 0.0 : alpha * scale * rsum;
    const double bo = beta * os, c = cs;
    /* The GEMM's and the reference's FP32 accumulations (NORM), the scaling and addition of
     * the old C, and the result's rounding to FP32: each element's within u |c| (Hoeffding,
     * the roundings of different elements mean-independent, as NORM's). With beta != 0,
     * cuBLAS may round alpha op(A) op(B) before adding beta C (seen for m = 1, into a 16-bit
     * C): a second rounding, at most u (|c| + |beta c_old|), so u (2 |c| + |beta c_old|) per
     * element. Then what is known exactly: the pieces' remainder and the reference's FP32
     * results; our double sums; gradual underflow. */
    const double uo2 = uo * uo * (1.0 + 4.0 * uo) * (1.0 + 4.0 * uo);
    const double v = acc * aa * aa * bj * (a.Q[I] + scale * scale * a.pn[I]) +
                     3.0 * kUa * kUa * bb * bb * osq +
                     uo2 * (dbl ? 8.0 * csq + 2.0 * bb * bb * osq : csq);
    const double nr = (double)rows, rb = sqrt(bj), qb = sqrt(a.Q[I]) * rb;
    const double thr = a.omega * sqrt(v) + nr * kSubC +
                       aa * scale * (sqrt(a.rn[I]) * rb + 0x1p-24 * rabs) +
                       ud * (nr + 4.0) * (fabs(ref) + aa * nr * sqrt(nr) * qb + cabs + bb * oabs) +
                       (nr + 1.0) * (nk + 4.0) * 0x1p-149 * (1.0 + aa) +
                       aa * scale * kPieces * (nk + 2.0) * 0x1p-149;
    /* the roots taken apart: tiny data's products must not underflow to 0, "in range" */
    const bool range = blasft_squares_in_range(aa * qb) &&
                       (!dbl || blasft_squares_in_range(bb * sqrt(osq))) &&
                       blasft_squares_in_range(sqrt(csq));
    if (!blasft_over(c - (ref + bo), thr) && range)
        return;
    const unsigned int f = atomicAdd(a.nflag, 1u);
    a.flagged[f] = make_uint2((unsigned int)(g * a.mb + I), (unsigned int)j);
}

/* The check's read of block column (I, j) of the FP32 result, lane `sub` of the group taking its
 * share: op(x) of each element; where the caller's C is 16-bit, each element also rounded into
 * it (a block column that flags is written again by the second tier after its corrections). */
template <typename TA, typename Op>
__device__ __forceinline__ void c_pass(const lp_args<TA> &a, int64_t i0, int64_t j, int64_t rows,
                                       int sub, Op op)
{
    const float *C = a.C + i0 + j * a.ldc;
    TA *out = a.out ? a.out + i0 + j * a.ldo : nullptr;
    const auto bits = [](float x) { /* x rounded into C's type, as its 16 bits */
        TA h;
        narrow(x, &h);
        return (uint32_t)rounded_bits(h);
    };
    int64_t done = 0;
    if (a.vec_c == 16) {
        /* a block column of BS 256 is 8 loads per lane: all in flight before the first is used
         * (run_words) */
        constexpr int U = 2 * kInFlight;
        const int64_t nv = rows / 4;
        for (int64_t v0 = sub; v0 < nv; v0 += U * kGroup) {
            float4 xs[U];
#pragma unroll
            for (int u = 0; u < U; u++)
                if (v0 + u * kGroup < nv)
                    xs[u] = reinterpret_cast<const float4 *>(C)[v0 + u * kGroup];
#pragma unroll
            for (int u = 0; u < U; u++) {
                const int64_t v = v0 + u * kGroup;
                if (v >= nv)
                    break;
                const float4 x = xs[u];
                op(x.x);
                op(x.y);
                op(x.z);
                op(x.w);
                if (!out)
                    continue;
                if (a.vec_out) {
                    reinterpret_cast<uint2 *>(out)[v] =
                        make_uint2(bits(x.x) | bits(x.y) << 16, bits(x.z) | bits(x.w) << 16);
                } else {
                    narrow(x.x, out + 4 * v);
                    narrow(x.y, out + 4 * v + 1);
                    narrow(x.z, out + 4 * v + 2);
                    narrow(x.w, out + 4 * v + 3);
                }
            }
        }
        done = nv * 4;
    }
    for (int64_t i = done + sub; i < rows; i += kGroup) {
        op(C[i]);
        if (out)
            narrow(C[i], out + i);
    }
}

/* The sum of v over the group of L lanes, in every lane: the same additions in the same order
 * as group_sum's lane 0 (a butterfly pairs the lanes as group_sum does, and each addition's two
 * operands are the same in every lane, only swapped) */
__device__ __forceinline__ double group_allsum(double v, int L)
{
    for (int off = L >> 1; off > 0; off >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, off, L);
    return v;
}

/* A group of kGroup lanes per (I, j) of matrix blockIdx.y: C's column sum over block row I
 * against alpha 2^e(I) sum_p R(p, I, j) + beta (the old C's sum); over the threshold, it goes on
 * the list for the second tier. Each round a group sums a.upg units one after the other, lane u
 * keeping unit u's sums, then its lanes compare theirs at once: with one unit per group (a.upg
 * 1) seven of its eight lanes idled through the threshold's arithmetic, and a large C took
 * several waves of CUDA blocks, each loading, then computing. */
template <typename TA>
__device__ __forceinline__ void check_matrix(const lp_args<TA> &a, int64_t g)
{
    const bool dbl = a.old && beta_of(a) != 0.0; /* the old C enters */
    const int sub = threadIdx.x & (kGroup - 1);
    const int64_t units = a.mb * a.n;
    const int64_t groups = ((int64_t)gridDim.x * blockDim.x) / kGroup;
    const int64_t group = (blockIdx.x * (int64_t)blockDim.x + threadIdx.x) / kGroup;
    const int64_t per_round = groups * a.upg;
    const int64_t rounds = (units + per_round - 1) / per_round; /* the same for every lane */
    for (int64_t r = 0; r < rounds; r++) {
        int64_t mine = -1; /* the unit whose sums this lane keeps */
        double ks = 0.0, kabs = 0.0, ksq = 0.0, kos = 0.0, koabs = 0.0, kosq = 0.0;
        for (int u = 0; u < a.upg; u++) {
            /* neighbouring groups on neighbouring units: a warp's loads in one run of C */
            const int64_t w = r * per_round + u * groups + group;
            const bool live = w < units;
            const int64_t ww = live ? w : 0;
            const int64_t j = ww / a.mb, I = ww - j * a.mb, i0 = I * a.bs;
            const int64_t rows = live ? (a.m - i0 < a.bs ? a.m - i0 : a.bs) : 0;
            double cs = 0.0, cabs = 0.0, csq = 0.0, os = 0.0, oabs = 0.0, osq = 0.0;
            c_pass(a, i0, j, rows, sub, [&](double c) {
                cs += c;
                cabs += fabs(c);
                csq = fma(c, c, csq);
            });
            if (dbl) {
                /* one load at a time: more would take the kernel past its 128 registers */
                run_sum<1>(a.old + i0 + j * a.m, rows, sub, kGroup, a.vec_c, [&](double o) {
                    os += o;
                    oabs += fabs(o);
                    osq = fma(o, o, osq);
                });
                os = group_allsum(os, kGroup);
                oabs = group_allsum(oabs, kGroup);
                osq = group_allsum(osq, kGroup);
            }
            cs = group_allsum(cs, kGroup);
            cabs = group_allsum(cabs, kGroup);
            csq = group_allsum(csq, kGroup);
            if (sub == u) {
                mine = live ? w : -1;
                ks = cs, kabs = cabs, ksq = csq, kos = os, koabs = oabs, kosq = osq;
            }
        }
        if (mine >= 0) {
            const int64_t j = mine / a.mb, I = mine - j * a.mb, i0 = I * a.bs;
            const int64_t rows = a.m - i0 < a.bs ? a.m - i0 : a.bs;
            over_threshold(a, g, I, j, rows, ks, kabs, ksq, kos, koabs, kosq);
        }
    }
}
/* two CUDA blocks per SM (128 registers): eight loads in flight per lane outweigh the occupancy
 * (H200, 4096^3: 48 us with one load and three blocks, 37.5 with eight and two, 45 with four
 * and three, spilling) */
template <typename TA> __global__ void __launch_bounds__(kThreads, 2) lp_check(lp_args<TA> batch)
{
    pdl_release(); /* lp_recompute may be launched: it waits for this grid */
    /* one matrix: its fields as the kernel's parameters (its alignment set by the host), as
     * before batches came: mat's copies live in registers */
    if (batch.one)
        check_matrix(batch, 0);
    else
        check_matrix(mat(batch, blockIdx.y), blockIdx.y);
}

/* The second tier: a CUDA block per flagged (I, j), a warp per element of the block column: the
 * element again in double and compared with C's against its own rounding (exact bound) and the
 * FP32 accumulation (NORM per element; the worst case where the squares leave the double range);
 * apart, replaced by the value rounded once (correct mode) and counted. */
template <typename TA> __global__ void __launch_bounds__(kThreads) lp_recompute(lp_args<TA> batch)
{
    pdl_wait(); /* launched as lp_check's dependent: its list complete */
    __shared__ double red[kThreads / 32];
    const double alpha = alpha_of(batch), beta = beta_of(batch);
    const double aa = fabs(alpha), bb = fabs(beta);
    const double uo = kUc, ud = 0x1p-53;
    const double nk = (double)batch.k;
    const double omega = batch.omega, acc = batch.norm_terms;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
    const unsigned int nf = *batch.nflag;
    for (unsigned int f = blockIdx.x; f < nf; f += gridDim.x) {
        const uint2 ij = batch.flagged[f];
        const int64_t g = ij.x / batch.mb, I = ij.x - g * batch.mb, j = ij.y;
        const lp_args<TA> a = mat(batch, g);
        const int64_t i0 = I * a.bs;
        const int64_t rows = a.m - i0 < a.bs ? a.m - i0 : a.bs;
        const double bj = a.bsq[j];
        double apart = 0.0;
        for (int64_t i = i0 + warp; i < i0 + rows; i += nw) {
            double dot = 0.0, mass = 0.0, asq = 0.0;
            for (int64_t l = lane; l < (alpha != 0.0 ? a.k : 0); l += 32) {
                const double x = a_at(a, i, l), y = b_at(a, l, j);
                dot = fma(x, y, dot);
                mass += fabs(x * y);
                asq = fma(x, x, asq);
            }
            dot = warp_sum(dot);
            mass = warp_sum(mass);
            asq = warp_sum(asq);
            if (lane != 0)
                continue;
            const double o = a.old && beta != 0.0 ? to_d(a.old[i + j * a.m]) : 0.0;
            const double v = (alpha != 0.0 ? alpha * dot : 0.0) + beta * o;
            float *cp = a.C + i + j * a.ldc;
            const double c = to_d(*cp);
            const double mag = aa * sqrt(asq) * sqrt(bj);
            const double fp32 = blasft_squares_in_range(mag) && blasft_squares_in_range(bb * o)
                                    ? omega * kUa * sqrt(acc * mag * mag + 3.0 * bb * bb * o * o)
                                    : blasft_gamma(nk + 4.0, 2.0 * kUa) *
                                          (aa * mass + bb * fabs(o));
            /* C's rounding, twice where beta != 0 (lp_check) */
            const double out = uo * (1.0 + 4.0 * uo) *
                               (fabs(v) + (beta != 0.0 && alpha != 0.0 ? fabs(alpha * dot) : 0.0));
            const double bound = fp32 * (1.0 + uo) + out + kSubC +
                                 2.0 * (nk + 2.0) * ud * (aa * mass + bb * fabs(o)) +
                                 (nk + 4.0) * 0x1p-149 * (1.0 + aa);
            const float vt = (float)v;
            if (to_d(vt) == c || blasft_parts_agree(c, v, bound, (double)FLT_MAX))
                continue;
            apart += 1.0;
            if (a.action == GK_REC_CORRECTED)
                *cp = vt;
            gk_add_record(a.cnt, a.action, I, j / a.bs, i, j, fabs(c - v), bound,
                          a.first < 0 ? -1 : a.first + g);
        }
        apart = block_reduce<false>(apart, red); /* and the corrections seen by the block */
        if (a.out)
            for (int64_t i = i0 + threadIdx.x; i < i0 + rows; i += blockDim.x)
                narrow(a.C[i + j * a.ldc], a.out + i + j * a.ldo);
        if (threadIdx.x == 0)
            gk_count_apart(a.cnt, a.action, (unsigned long long)apart);
    }
}

/* Where the old C enters (of C's type TS): its matrices (ld lds, ss apart; or at sarr[g]) */
template <typename TS> struct lp_src {
    const TS *p;
    int64_t ld, stride;
    const TS *const *arr;
};

/* The old C in FP32 twice: the copy the second tier reads (a.old) and the result the GEMM adds
 * beta C into (a.C): from src (C, or cublasLt's C apart from D) times src_scale, plus a bias
 * vector of m elements (TS) where one is added; a thread per element of the chunk. */
template <typename TA, typename TS>
__global__ void __launch_bounds__(kThreads)
    lp_widen(lp_args<TA> batch, lp_src<TS> src, float src_scale, const TS *bias)
{
    const int64_t per = batch.m * batch.n, total = batch.count * per;
    for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < total;
         e += (int64_t)gridDim.x * blockDim.x) {
        const int64_t g = e / per, r = e - g * per, j = r / batch.m, i = r - j * batch.m;
        const TS *sp = src.arr ? src.arr[g] : src.p + g * src.stride;
        float x = src_scale == 0.0f ? 0.0f : src_scale * (float)to_d(sp[i + j * src.ld]);
        if (bias)
            x += (float)to_d(bias[i]);
        batch.old[g * batch.sw + r] = x;
        float *C = batch.wide ? batch.C + g * batch.sw
                   : batch.Ca ? (float *)batch.Ca[g] : batch.C + g * batch.sc;
        C[i + j * batch.ldc] = x;
    }
}

/* For a batch by arrays of pointers: the addresses of the chunk's pieces, reference results
 * and FP32 results (where those are the context's buffer), cuBLAS's arrays */
template <typename TA>
__global__ void lp_ptrs(lp_args<TA> a, const void **pieces, void **R, void **wide)
{
    for (int64_t g = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; g < a.count;
         g += (int64_t)gridDim.x * blockDim.x) {
        pieces[g] = a.pieces + g * a.sp;
        R[g] = a.R + g * a.sr;
        if (wide)
            wide[g] = a.C + g * a.sw;
    }
}

/* lp_check's threads (kGroup a unit) up to which each group sums one unit a round: about two
 * waves of its CUDA blocks (two per SM) on 132 SMs */
constexpr int64_t kCheckOneUnit = (int64_t)1 << 17;

/* A chunk of a batch holds at most this many bytes of buffers (one matrix always fits: its
 * size is the single GEMM's) */
constexpr size_t kChunkBytes = (size_t)256 << 20;

/* Matrix b's FP32 result that is checked, for a planted fault (tests): the caller's float C
 * read back from an array of pointers (waits) */
template <typename TA>
float *host_checked(const lp_args<TA> &a, const blasft_gpu_lowp *l, int64_t b, int64_t g0,
                    cudaStream_t s)
{
    if (a.wide)
        return a.C + (b - g0) * a.sw;
    if (!l->c_arr)
        return (float *)l->g.c + b * l->stride_c;
    return (float *)device_ptr_at(l->c_arr, b, s);
}

/* wide: C is half or bfloat16 (the GEMM's FP32 result checked in a buffer, then rounded into C
 * once); else float (checked where it is). A batch runs chunk by chunk, each the single GEMM's
 * steps on all its matrices. */
template <typename TA>
int run_lowp(blasft_gpu_ctx *ctx, const blasft_gpu_lowp *l, const blasft_gpu_params *p, bool wide,
             bool capturing)
{
    const blasft_gpu_gemm &g = l->g;
    const bool on_dev = g.scalars_on_device != 0;
    float beta_h = 0.0f;
    if (!on_dev)
        memcpy(&beta_h, g.beta, sizeof beta_h);
    /* the old C is kept wherever beta may be nonzero, so that a flagged block can be computed
     * again; with a bias it is bias 1^T + beta C, and the GEMM's beta 1 */
    const bool keep_old = on_dev || beta_h != 0.0f || l->bias;
    const int64_t m = g.m, n = g.n, k = g.k, bs = p->block_size;
    const int64_t mb = (m + bs - 1) / bs;
    const int64_t count = l->count > 1 ? l->count : 1;
    /* by arrays of pointers even for one matrix: the batched GEMMs take its addresses */
    const bool arrays = l->a_arr != nullptr, batch = count > 1 || arrays;
    lp_args<TA> a;
    memset(&a, 0, sizeof a);
    a.m = m;
    a.n = n;
    a.k = k;
    a.lda = g.lda;
    a.ldb = g.ldb;
    a.mb = mb;
    a.bs = (int)bs;
    a.ta = op_of(g.transa) != CUBLAS_OP_N;
    a.tb = op_of(g.transb) != CUBLAS_OP_N;
    a.one = !batch;
    a.bl = k <= kShortK ? 8 : 32;
    const auto round16 = [](int64_t elems, size_t es) {
        const int64_t per = 16 / (int64_t)es;
        return (elems + per - 1) / per * per;
    };
    a.sp = round16(kPieces * mb * k, sizeof(TA));
    a.sr = round16(kPieces * mb * n, sizeof(float));
    a.sw = round16(m * n, sizeof(float));
    /* matrices per chunk: the buffers' bytes per matrix within kChunkBytes; the kernels' grids
     * (lp_split's grid.z, lp_prep's grid.x) and the list's (g mb + I) in range */
    const size_t mat_bytes =
        gk_align(sizeof(double) * (size_t)(n + 3 * mb + mb * k)) + sizeof(int) * (size_t)mb +
        sizeof(TA) * (size_t)a.sp + sizeof(float) * (size_t)a.sr +
        sizeof(uint2) * (size_t)(mb * n) +
        sizeof(float) * (size_t)a.sw * ((keep_old ? 1 : 0) + (wide ? 1 : 0)) +
        sizeof(unsigned int) + (arrays ? 3 * sizeof(void *) : 0);
    int64_t chunk = std::max<int64_t>(1, (int64_t)(kChunkBytes / mat_bytes));
    chunk = std::min({chunk, count, (int64_t)65535, (int64_t)UINT32_MAX / mb,
                      (int64_t)INT32_MAX / prep_blocks(a)});
    gk_carve w{0};
    const size_t cnt_at = w.take(sizeof(gk_counters)), nflag_at = w.take(sizeof(unsigned int));
    const size_t bsq_at = w.take(sizeof(double) * (size_t)(chunk * n));
    const size_t Q_at = w.take(sizeof(double) * (size_t)(chunk * mb));
    const size_t pn_at = w.take(sizeof(double) * (size_t)(chunk * mb));
    const size_t rn_at = w.take(sizeof(double) * (size_t)(chunk * mb));
    const size_t e_at = w.take(sizeof(int) * (size_t)(chunk * mb));
    const size_t one_at = w.take(2 * sizeof(float));
    const size_t bmax_at = w.take(sizeof(unsigned int) * (size_t)chunk);
    /* counters, the list's length, bsq and the block rows' sums start at zero (the counters
     * once per call, the rest once per chunk) */
    const size_t zero_bytes = w.o;
    const size_t S_at = w.take(sizeof(double) * (size_t)(chunk * mb * k));
    const size_t pieces_at = w.take(sizeof(TA) * (size_t)(chunk * a.sp));
    const size_t R_at = w.take(sizeof(float) * (size_t)(chunk * a.sr));
    const size_t list_at = w.take(sizeof(uint2) * (size_t)(chunk * mb * n));
    const size_t old_at = w.take(keep_old ? sizeof(float) * (size_t)(chunk * a.sw) : 0);
    const size_t wide_at = w.take(wide ? sizeof(float) * (size_t)(chunk * a.sw) : 0);
    const size_t ptrs_at = w.take(arrays ? 3 * sizeof(void *) * (size_t)chunk : 0);
    /* a graph being captured keeps the buffer's address: a buffer to grow (first freed) refuses
     * the call (its report slot is the graph's own: take_slot) */
    if (capturing && ctx->lowp_ws && w.o > ctx->lowp_bytes)
        return -1;
    const int got = ensure_buf(ctx, &ctx->lowp_ws, &ctx->lowp_bytes, w.o, nullptr);
    if (got == -3) {
        static int once;
        blasft_log_once(&once, BLASFT_LOG_WARN,
                        "GPU: no device memory for %zu bytes of a half or bfloat16 GEMM's checks: "
                        "such GEMMs pass through unprotected", w.o);
        return -1;
    }
    if (got)
        return got;
    /* captured into the engine's own graph: the report is enqueued at each launch (deferred) */
    report_slot *slot = nullptr;
    if (!ctx->deferring && !(slot = take_slot(ctx)))
        return -2;
    char *b = (char *)ctx->lowp_ws;
    a.wide = wide;
    a.C = wide ? (float *)(b + wide_at) : (float *)g.c;
    a.ldc = wide ? m : g.ldc;
    a.sc = l->stride_c;
    a.out = wide ? (TA *)g.c : nullptr;
    a.ldo = g.ldc;
    a.old = keep_old ? (float *)(b + old_at) : nullptr;
    /* what the leading dimensions (and the block size, rows_too) allow and matrix 0's address
     * (arrays: unknown here); mat adds each matrix's own (the buffers' are compact, ld m,
     * matrices m n apart) */
    const auto layout = [&](int64_t ld, size_t es, bool rows_too) {
        for (int v = 16; v >= 8; v /= 2)
            if ((ld * (int64_t)es) % v == 0 && (!rows_too || (bs * (int64_t)es) % v == 0))
                return v;
        return 0;
    };
    const void *const none = nullptr; /* aligned to anything */
    a.vec_a = aligned_to(arrays ? none : g.a, layout(g.lda, sizeof(TA), true));
    a.vec_b = aligned_to(arrays ? none : g.b, layout(g.ldb, sizeof(TA), false));
    a.vec_c = aligned_to(arrays ? none : (const void *)a.C, layout(a.ldc, sizeof(float), true));
    if (keep_old)
        a.vec_c = std::min(a.vec_c, aligned_to(a.old, layout(m, sizeof(float), true)));
    a.vec_out = wide && aligned_to(arrays ? none : g.c, layout(g.ldc, sizeof(TA), true)) >= 8;
    if (on_dev) {
        a.alpha_p = (const float *)g.alpha;
        a.beta_p = (const float *)g.beta;
    } else {
        memcpy(&a.alpha_v, g.alpha, sizeof(float));
        a.beta_v = l->bias ? 1.0f : beta_h;
    }
    a.S = (double *)(b + S_at);
    a.Q = (double *)(b + Q_at);
    a.pn = (double *)(b + pn_at);
    a.rn = (double *)(b + rn_at);
    a.e = (int *)(b + e_at);
    a.bmax = (unsigned int *)(b + bmax_at);
    a.pieces = (TA *)(b + pieces_at);
    a.R = (float *)(b + R_at);
    a.bsq = (double *)(b + bsq_at);
    a.nflag = (unsigned int *)(b + nflag_at);
    a.flagged = (uint2 *)(b + list_at);
    a.cnt = (gk_counters *)(b + cnt_at);
    a.action = p->mode == BLASFT_MODE_CORRECT ? GK_REC_CORRECTED : GK_REC_DETECTED;
    a.omega = blasft_norm_omega(BLASFT_NORM_FALSE_ALARM);
    a.norm_terms = blasft_norm_second_order((double)k, kUa) * blasft_norm_terms((double)k, 1);
    a.sa = l->stride_a;
    a.sb = l->stride_b;
    /* arrays of pointers: cuBLAS's for the pieces, the reference results and the FP32 results
     * in the buffer, the same for every chunk */
    const void **pieces_arr = (const void **)(b + ptrs_at);
    void **R_arr = (void **)(b + ptrs_at) + chunk, **wide_arr = R_arr + chunk;

    const cudaStream_t s0 = ctx->s0, s1 = ctx->s1;
    const cudaDataType dta = lp_dt<TA>::dt;
    const cublasComputeType_t comp = (cublasComputeType_t)l->compute;
    const cublasGemmAlgo_t algo = (cublasGemmAlgo_t)l->algo;
    /* both handles in the caller's pointer mode: the reference's scalars 1 and 0 are the
     * workspace's (written by lp_prep) where it is the device's */
    a.one_zero = (float *)(b + one_at);
    static const float one_zero[2] = {1.0f, 0.0f};
    const float *rs = on_dev ? a.one_zero : one_zero;
    if (set_mode(ctx, on_dev))
        return -2;
    static const float one = 1.0f;
    const void *gemm_beta = l->bias ? (const void *)&one : g.beta;
    const int ldr = (int)(kPieces * mb);
    /* the caller's math mode (pedantic) on the engine's handle for its GEMMs only; reductions
     * in the output type need no switching off: the output is FP32, the compute type */
    const cublasMath_t math = (cublasMath_t)l->math;
    const bool own_math = math != CUBLAS_DEFAULT_MATH;
    /* the report of the first `done` matrices: all of them, or those a failure mid-batch left
     * checked (their detections and corrections are not lost; the call still fails) */
    const auto report = [&](int64_t done) {
        report_meta rm;
        rm.checks = (uint64_t)(done * mb * n);
        rm.type = l->ab == BLASFT_LOWP_F16 ? 'H' : 'B';
        rm.routine = g.routine ? g.routine : "gpu_gemm_lowp";
        rm.on_error = p->on_error;
        rm.row0 = 0;
        rm.col0 = 0;
        rm.bs = bs;
        rm.gemms = (int)done;
        rm.matrix = -1;
        if (!ctx->deferring)
            return enqueue_report(ctx, slot, rm, a.cnt);
        ctx->deferred = rm;
        ctx->deferred_counters = a.cnt;
        ctx->deferred_n++;
        return 0;
    };
    const auto failed = [&](int64_t g0) {
        if (g0)
            report(g0);
        return -2;
    };
    int nplanted = 0;
    for (int64_t g0 = 0; g0 < count; g0 += chunk) {
        const int64_t cg = std::min(chunk, count - g0);
        a.count = cg;
        a.first = l->count > 1 ? g0 : -1;
        if (arrays) {
            a.Aa = (const TA *const *)l->a_arr + g0;
            a.Ba = (const TA *const *)l->b_arr + g0;
            a.Ca = l->c_arr + g0;
        } else {
            a.A = (const TA *)g.a + g0 * l->stride_a;
            a.B = (const TA *)g.b + g0 * l->stride_b;
            if (wide)
                a.out = (TA *)g.c + g0 * l->stride_c;
            else
                a.C = (float *)g.c + g0 * l->stride_c;
        }
        cudaMemsetAsync(g0 ? b + nflag_at : b, 0, zero_bytes - (g0 ? nflag_at : 0), s0);
        if (arrays && g0 == 0)
            lp_ptrs<TA><<<grid_for(chunk), kThreads, 0, s0>>>(a, pieces_arr, R_arr,
                                                               wide ? wide_arr : nullptr);
        /* op(A)'s and op(B)'s reads and the reference GEMM on the helper stream, beside the
         * caller's GEMM (bound by its arithmetic) */
        cudaEventRecord(ctx->ev_fork, s0);
        cudaStreamWaitEvent(s1, ctx->ev_fork, 0);
        lp_prep<TA><<<(unsigned int)(cg * prep_blocks(a)), kThreads, 0, s1>>>(a);
        /* the kernels after the first of a chain are launched as programmatic dependents
         * (after_launch): their launch latencies overlap their predecessors' runs, which in the
         * chain of a small call (or a graph of one) add up */
        after_launch(lp_split<TA>,
                     dim3((unsigned int)mb, (unsigned int)((k + kChunk - 1) / kChunk),
                          (unsigned int)cg),
                     s1, a);
        cublasStatus_t rst;
        if (!batch)
            rst = cb->gemm_ex(ctx->h1, CUBLAS_OP_N, op_of(g.transb), ldr, (int)n, (int)k, rs,
                              a.pieces, dta, ldr, g.b, dta, (int)g.ldb, rs + 1, a.R, CUDA_R_32F,
                              ldr, comp, CUBLAS_GEMM_DEFAULT);
        else if (arrays)
            rst = cb->gemm_batched_ex(ctx->h1, CUBLAS_OP_N, op_of(g.transb), ldr, (int)n, (int)k,
                                      rs, pieces_arr, dta, ldr, (const void *const *)a.Ba, dta,
                                      (int)g.ldb, rs + 1, R_arr, CUDA_R_32F, ldr, (int)cg, comp,
                                      CUBLAS_GEMM_DEFAULT);
        else
            rst = cb->gemm_strided_ex(ctx->h1, CUBLAS_OP_N, op_of(g.transb), ldr, (int)n, (int)k,
                                      rs, a.pieces, dta, ldr, a.sp, a.B, dta, (int)g.ldb,
                                      l->stride_b, rs + 1, a.R, CUDA_R_32F, ldr, a.sr, (int)cg,
                                      comp, CUBLAS_GEMM_DEFAULT);
        const bool ref_ok = blas_ok(rst, "cublasGemmEx (reference)");
        cudaEventRecord(ctx->ev_ref, s1);
        /* s0 waits for the helper stream on every way out from here (the next call's or
         * chunk's zeroing must not meet this one's sums), after the caller's GEMM is enqueued
         * where it is */
        const auto join = [&] { cudaStreamWaitEvent(s0, ctx->ev_ref, 0); };
        if (!ref_ok) {
            join();
            /* at the first chunk nothing of the caller's has run: cuBLAS computes it,
             * unprotected; later, C is partly written */
            return g0 ? failed(g0) : -1;
        }
        /* the caller's GEMMs, their results in FP32: the old C first where it enters (where it
         * is C, a float C needs no copy of its own into the result) */
        const float src_scale = l->bias ? beta_h : 1.0f;
        if (keep_old && !wide && !l->bias && !l->c_in && !batch) {
            cudaMemcpy2DAsync(a.old, sizeof(float) * (size_t)m, g.c,
                              sizeof(float) * (size_t)g.ldc, sizeof(float) * (size_t)m,
                              (size_t)n, cudaMemcpyDeviceToDevice, s0);
        } else if (keep_old) {
            /* from cublasLt's C apart from D, else from C itself (arrays: a.Ca) */
            const int64_t es = wide ? (int64_t)sizeof(TA) : (int64_t)sizeof(float);
            const void *from = l->c_in ? (const char *)l->c_in + g0 * l->stride_c_in * es
                               : arrays ? nullptr
                                        : (const char *)g.c + g0 * l->stride_c * es;
            const int64_t lds = l->c_in ? l->ldc_in : g.ldc;
            const int64_t ss = l->c_in ? l->stride_c_in : l->stride_c;
            if (wide)
                lp_widen<TA, TA><<<grid_for(cg * m * n), kThreads, 0, s0>>>(
                    a, lp_src<TA>{(const TA *)from, lds, ss, (const TA *const *)a.Ca},
                    src_scale, (const TA *)l->bias);
            else
                lp_widen<TA, float><<<grid_for(cg * m * n), kThreads, 0, s0>>>(
                    a, lp_src<float>{(const float *)from, lds, ss, (const float *const *)a.Ca},
                    src_scale, (const float *)l->bias);
        }
        bool main_ok =
            !own_math || blas_ok(cb->set_math_mode(ctx->h0, math), "cublasSetMathMode");
        if (main_ok) {
            cublasStatus_t st;
            if (!batch)
                st = cb->gemm_ex(ctx->h0, op_of(g.transa), op_of(g.transb), (int)m, (int)n,
                                 (int)k, g.alpha, g.a, dta, (int)g.lda, g.b, dta, (int)g.ldb,
                                 gemm_beta, a.C, CUDA_R_32F, (int)a.ldc, comp, algo);
            else if (arrays)
                st = cb->gemm_batched_ex(ctx->h0, op_of(g.transa), op_of(g.transb), (int)m,
                                         (int)n, (int)k, g.alpha, (const void *const *)a.Aa, dta,
                                         (int)g.lda, (const void *const *)a.Ba, dta, (int)g.ldb,
                                         gemm_beta, wide ? wide_arr : a.Ca, CUDA_R_32F,
                                         (int)a.ldc, (int)cg, comp, algo);
            else
                st = cb->gemm_strided_ex(ctx->h0, op_of(g.transa), op_of(g.transb), (int)m,
                                         (int)n, (int)k, g.alpha, a.A, dta, (int)g.lda,
                                         l->stride_a, a.B, dta, (int)g.ldb, l->stride_b,
                                         gemm_beta, a.C, CUDA_R_32F, (int)a.ldc,
                                         wide ? a.sw : l->stride_c, (int)cg, comp, algo);
            main_ok = blas_ok(st, "cublasGemmEx");
        }
        if (own_math &&
            !blas_ok(cb->set_math_mode(ctx->h0, CUBLAS_DEFAULT_MATH), "cublasSetMathMode"))
            main_ok = false;
        if (!main_ok) {
            join();
            return failed(g0);
        }
        /* tests: into the FP32 results that are checked, from the batch's first matrix on */
        for (; l->plant && nplanted < l->nplants && nplanted < g0 + cg; nplanted++) {
            float *c = host_checked(a, l, nplanted, g0, s0);
            if (!c) {
                join();
                return failed(g0);
            }
            ctx->checked_c = c;
            ctx->checked_type = BLASFT_TYPE_S;
            ctx->checked_ldc = a.ldc;
            ctx->checked_rows = m;
            ctx->checked_cols = n;
            ctx->part = kWholeCall;
            l->plant((void *)s0, l->plant_users[nplanted]);
        }
        join();
        /* a C of more than about two waves of groups: a group sums kGroup units a round */
        a.upg = kGroup * mb * n * cg > kCheckOneUnit ? kGroup : 1;
        lp_check<TA><<<dim3(grid_for(kGroup * ((mb * n + a.upg - 1) / a.upg)), (unsigned int)cg),
                       kThreads, 0, s0>>>(a);
        /* most calls flag nothing: few blocks, each a stride over the list */
        after_launch(lp_recompute<TA>, 256u, s0, a);
    }
    return report(count);
}

int run_lowp_call(blasft_gpu_ctx *ctx, const blasft_gpu_lowp *l, const blasft_gpu_params *p,
                  bool capturing)
{
    const bool wide = l->c != BLASFT_LOWP_F32;
    return l->ab == BLASFT_LOWP_F16 ? run_lowp<__half>(ctx, l, p, wide, capturing)
                                    : run_lowp<__nv_bfloat16>(ctx, l, p, wide, capturing);
}

} // namespace

int blasft_gpu_lowp_supported(const blasft_gpu_lowp *l)
{
    const blasft_gpu_gemm &g = l->g;
    if (!cb || !cb->gemm_ex || !cb->set_math_mode)
        return 0;
    if (l->ab != BLASFT_LOWP_F16 && l->ab != BLASFT_LOWP_BF16)
        return 0;
    if (l->c != l->ab && l->c != BLASFT_LOWP_F32)
        return 0;
    if (l->compute != CUBLAS_COMPUTE_32F && l->compute != CUBLAS_COMPUTE_32F_PEDANTIC)
        return 0;
    if (l->math != CUBLAS_DEFAULT_MATH && l->math != CUBLAS_PEDANTIC_MATH)
        return 0;
    /* cuBLAS's int dimensions, the list of (I, j) in 32 bits, k in 65535 chunks (grid.y) */
    if (g.m < 1 || g.n < 1 || g.k < 1 || g.m > INT32_MAX || g.n > INT32_MAX ||
        g.k > (int64_t)65535 * kEncL ||
        g.lda > INT32_MAX || g.ldb > INT32_MAX || g.ldc > INT32_MAX || g.c_vector || g.prep_a ||
        g.prep_b)
        return 0;
    if (l->bias && g.scalars_on_device) /* the GEMM's beta 1 is the host's */
        return 0;
    /* batches: by strides, or by arrays of pointers (all three, no cublasLt C apart); no bias */
    if ((l->count > 1 || l->a_arr) &&
        (l->count > INT32_MAX || l->bias ||
         (l->a_arr ? !l->b_arr || !l->c_arr || l->c_in || !cb->gemm_batched_ex
                   : !cb->gemm_strided_ex)))
        return 0;
    /* strided C matrices that overlap (cuBLAS leaves the result undefined): each check would
     * see another matrix's elements and "correct" them; they pass through */
    if (!l->a_arr && !strided_apart(g.m, g.n, g.ldc, l->stride_c, l->count))
        return 0;
    /* alpha 0 in host memory: nothing to protect (C = beta C), as for one GEMM */
    if (!g.scalars_on_device) {
        float al;
        memcpy(&al, g.alpha, sizeof al);
        if (al == 0.0f)
            return 0;
    }
    return 1;
}

int blasft_gpu_gemm_lowp(blasft_gpu_ctx *ctx, const blasft_gpu_lowp *l, const blasft_gpu_params *p)
{
    if (!ctx || !l || !p || !blasft_gpu_lowp_supported(l) || l->nplants < 0 ||
        l->nplants > (l->count > 1 ? l->count : 1) || (l->nplants && !l->plant))
        return -1;
    bool capturing = false;
    if (const int rc = whole_call_entered(ctx, &capturing))
        return rc;
    /* a planted fault in a float C by arrays reads its address back, which a capture cannot */
    if (capturing && l->nplants && l->c_arr && l->c == BLASFT_LOWP_F32)
        return -1;
    if (!capturing) { /* a repeated call: the engine's own graph (host time) */
        const int rc = run_lowp_by_graph(ctx, l, p, run_lowp_call);
        if (rc != kNoGraph)
            return rc;
    }
    return run_lowp_call(ctx, l, p, capturing);
}
