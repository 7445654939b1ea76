/* Reduced-precision GEMMs (half or bfloat16 A and B, C of their type or float, FP32
 * accumulation: cublasGemmEx with compute type 32F) checked around cuBLAS. docs/thresholds.md,
 * "Half and bfloat16 GEMMs".
 *
 * The reference side is computed without the data type's rounding: op(A)'s column sums per
 * block of BS rows are formed in double (exact for half data), split into three pieces of the
 * operands' type (scaled per block row by a power of two, so that the pieces stay in range) and
 * multiplied by op(B) in ONE cuBLAS GEMM of 3 ceil(m / BS) rows with FP32 accumulation. The
 * check compares them with C's column sums over each block (double) against a threshold of three
 * parts: C's own rounding to its type, bounded exactly by u_o sum |c| (no model), the FP32
 * accumulation of the GEMM and of the reference, bounded as NORM bounds a dot product (any order,
 * Higham and Mary's model with FP32's unit doubled for accumulators that truncate, as tensor
 * cores do), and the reference's known leftovers (the pieces' remainder, its FP32 results). The
 * second tier computes every element of a flagged block column again in double and compares it
 * per element; one found apart is replaced by the exact value rounded once to C's type, so even
 * a false alarm that got that far leaves C no less accurate than cuBLAS's.
 *
 * The caller's GEMM runs on the engine's handle with reduced-precision reductions disallowed
 * (CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION): split-K partial results are then added
 * in FP32, not in C's type, which the model needs; the caller allowed those reductions, it did
 * not ask for them. */
#include "gpu_device.cuh"
#include "gpu_engine.h"
extern "C" {
#include "log.h"
}

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cfloat>
#include <cstring>

using namespace gpu_engine;

namespace {

/* op(A)'s block sums as pieces of the operands' type: 3 x 11 bits (half) cover the 48 bits a
 * sum of 256 half numbers can need */
constexpr int kPieces = 3;
/* the accumulation's unit roundoff: FP32's doubled (truncating accumulators) */
constexpr double kUa = 0x1p-23;
/* largest scaled block sum: below half's range with room for the pieces' own rounding */
constexpr int kPieceExp = 13;

/* Per type: unit roundoff, half the spacing of its subnormals (the absolute rounding error
 * there), its largest finite number, cuBLAS's name for it, the report's letter. */
template <typename T> struct lp;
template <> struct lp<__half> {
    static constexpr double u = 0x1p-11, sub = 0x1p-25, largest = 65504.0;
    static constexpr cudaDataType dt = CUDA_R_16F;
};
template <> struct lp<__nv_bfloat16> {
    static constexpr double u = 0x1p-8, sub = 0x1p-134, largest = 0x1.fep127;
    static constexpr cudaDataType dt = CUDA_R_16BF;
};
template <> struct lp<float> {
    static constexpr double u = 0x1p-24, sub = 0x1p-150, largest = FLT_MAX;
    static constexpr cudaDataType dt = CUDA_R_32F;
};

__device__ __forceinline__ double to_d(__half x) { return (double)__half2float(x); }
__device__ __forceinline__ double to_d(__nv_bfloat16 x) { return (double)__bfloat162float(x); }
__device__ __forceinline__ double to_d(float x) { return x; }
/* rounded once, to nearest */
template <typename T> __device__ __forceinline__ T from_d(double v);
template <> __device__ __forceinline__ __half from_d<__half>(double v) { return __double2half(v); }
template <> __device__ __forceinline__ __nv_bfloat16 from_d<__nv_bfloat16>(double v)
{
    return __double2bfloat16(v);
}
template <> __device__ __forceinline__ float from_d<float>(double v) { return (float)v; }

template <typename TA, typename TC> struct lp_args {
    int64_t m, n, k, lda, ldb, ldc;
    int64_t mb; /* block rows */
    int bs;
    bool ta, tb; /* op(A) = A^T, op(B) = B^T */
    const TA *A, *B;
    TC *C;
    const TC *old;               /* the old C, m x n (ld m), or NULL: beta is a host zero */
    float alpha_v, beta_v;       /* host pointer mode */
    const float *alpha_p, *beta_p; /* device pointer mode */
    double *S, *q;               /* [I][l]: op(A)'s sum over block row I and its squares' sum */
    double *Q, *pn, *rn;         /* [I]: sum of q; the scaled pieces' squares, remainders' */
    int *e;                      /* [I]: the pieces' scale 2^e */
    TA *pieces;                  /* (kPieces mb) x k, column-major: row p mb + I */
    float *R;                    /* (kPieces mb) x n: pieces x op(B) */
    double *bsq;                 /* [j]: ||op(B)(:, j)||^2 */
    unsigned int *nflag;         /* block columns over their thresholds ... */
    uint2 *flagged;              /* ... (I, j), mb n at most */
    gk_counters *cnt;
    int action;                  /* GK_REC_CORRECTED or GK_REC_DETECTED */
};

template <typename TA, typename TC> __device__ __forceinline__ double alpha_of(const lp_args<TA, TC> &a)
{
    return a.alpha_p ? *a.alpha_p : a.alpha_v;
}
template <typename TA, typename TC> __device__ __forceinline__ double beta_of(const lp_args<TA, TC> &a)
{
    return a.old ? (a.beta_p ? *a.beta_p : a.beta_v) : 0.0;
}
/* op(A)(i, l), op(B)(l, j) */
template <typename TA, typename TC>
__device__ __forceinline__ double a_at(const lp_args<TA, TC> &a, int64_t i, int64_t l)
{
    return to_d(a.ta ? a.A[l + i * a.lda] : a.A[i + l * a.lda]);
}
template <typename TA, typename TC>
__device__ __forceinline__ double b_at(const lp_args<TA, TC> &a, int64_t l, int64_t j)
{
    return to_d(a.tb ? a.B[j + l * a.ldb] : a.B[l + j * a.ldb]);
}

__device__ __forceinline__ double warp_sum(double v)
{
    for (int off = 16; off > 0; off >>= 1)
        v += __shfl_down_sync(0xffffffffu, v, off);
    return v;
}
__device__ __forceinline__ double warp_max(double v)
{
    for (int off = 16; off > 0; off >>= 1)
        v = fmax(v, __shfl_down_sync(0xffffffffu, v, off));
    return v;
}
__device__ __forceinline__ blasft_csum warp_csum(blasft_csum v)
{
    for (int off = 16; off > 0; off >>= 1) {
        blasft_csum o;
        o.s = __shfl_down_sync(0xffffffffu, v.s, off);
        o.c = __shfl_down_sync(0xffffffffu, v.c, off);
        csum_merge(&v, o);
    }
    return v;
}
/* over the CUDA block, every thread gets it; `red` one double per warp */
template <bool Max> __device__ double block_reduce(double v, double *red)
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

/* S(I, l) = sum_{i in I} op(A)(i, l) (compensated: exact for half data) and q(I, l), the sum of
 * squares. op(A) = A: a warp per (I, l) along the block's contiguous rows; op(A) = A^T: a
 * thread per (I, l), neighbouring threads on neighbouring l (contiguous in memory). */
template <typename TA, typename TC> __global__ void __launch_bounds__(kThreads) lp_encode(lp_args<TA, TC> a)
{
    const int64_t units = a.mb * a.k;
    const int64_t tid = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    const int64_t all = (int64_t)gridDim.x * blockDim.x;
    if (a.ta) {
        for (int64_t u = tid; u < units; u += all) {
            const int64_t I = u / a.k, l = u - I * a.k, i0 = I * a.bs;
            const int64_t rows = a.m - i0 < a.bs ? a.m - i0 : a.bs;
            blasft_csum s = {0.0, 0.0};
            double q = 0.0;
            for (int64_t i = 0; i < rows; i++) {
                const double x = to_d(a.A[l + (i0 + i) * a.lda]);
                blasft_csum_add(&s, x);
                q = fma(x, x, q);
            }
            a.S[u] = blasft_csum_value(&s);
            a.q[u] = q;
        }
        return;
    }
    const int lane = threadIdx.x & 31;
    const int64_t rounds = (units + all / 32 - 1) / (all / 32); /* the same for the whole warp */
    for (int64_t r = 0, u = tid / 32; r < rounds; r++, u += all / 32) {
        const bool live = u < units;
        const int64_t uu = live ? u : 0;
        const int64_t I = uu / a.k, l = uu - I * a.k, i0 = I * a.bs;
        const int64_t rows = live ? (a.m - i0 < a.bs ? a.m - i0 : a.bs) : 0;
        blasft_csum s = {0.0, 0.0};
        double q = 0.0;
        for (int64_t i = lane; i < rows; i += 32) {
            const double x = to_d(a.A[i0 + i + l * a.lda]);
            blasft_csum_add(&s, x);
            q = fma(x, x, q);
        }
        s = warp_csum(s);
        q = warp_sum(q);
        if (live && lane == 0) {
            a.S[uu] = blasft_csum_value(&s);
            a.q[uu] = q;
        }
    }
}

/* One CUDA block per block row I: Q(I), the scale 2^e(I) that puts max_l |S(I, l)| below
 * 2^(kPieceExp + 1), and the three pieces of each scaled sum with the squares of the pieces and
 * of what they leave. */
template <typename TA, typename TC> __global__ void __launch_bounds__(kThreads) lp_split(lp_args<TA, TC> a)
{
    __shared__ double red[kThreads / 32];
    const int64_t I = blockIdx.x;
    const double *S = a.S + I * a.k, *q = a.q + I * a.k;
    double mx = 0.0, qs = 0.0;
    for (int64_t l = threadIdx.x; l < a.k; l += blockDim.x) {
        mx = fmax(mx, fabs(S[l]));
        qs += q[l];
    }
    mx = block_reduce<true>(mx, red);
    qs = block_reduce<false>(qs, red);
    const int e = mx > 0.0 && isfinite(mx) ? ilogb(mx) - kPieceExp : 0;
    double pn = 0.0, rn = 0.0;
    const int64_t ld = kPieces * a.mb;
    for (int64_t l = threadIdx.x; l < a.k; l += blockDim.x) {
        double x = ldexp(S[l], -e);
        for (int p = 0; p < kPieces; p++) {
            const TA piece = from_d<TA>(x);
            const double pv = to_d(piece);
            a.pieces[p * a.mb + I + l * ld] = piece;
            pn = fma(pv, pv, pn);
            x -= pv; /* exact: pv is x rounded to fewer bits */
        }
        rn = fma(x, x, rn);
    }
    pn = block_reduce<false>(pn, red);
    rn = block_reduce<false>(rn, red);
    if (threadIdx.x == 0) {
        a.Q[I] = qs;
        a.e[I] = e;
        a.pn[I] = pn;
        a.rn[I] = rn;
    }
}

/* bsq(j) = ||op(B)(:, j)||^2. op(B) = B: a warp per column; op(B) = B^T: a thread per column
 * and chunk of 256 rows (neighbouring threads on neighbouring j), added into bsq (zeroed). */
template <typename TA, typename TC> __global__ void __launch_bounds__(kThreads) lp_bnorm(lp_args<TA, TC> a)
{
    if (a.tb) {
        const int64_t j = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
        if (j >= a.n)
            return;
        const int64_t l0 = blockIdx.y * (int64_t)256, l1 = l0 + 256 < a.k ? l0 + 256 : a.k;
        double s = 0.0;
        for (int64_t l = l0; l < l1; l++) {
            const double x = to_d(a.B[j + l * a.ldb]);
            s = fma(x, x, s);
        }
        atomicAdd(&a.bsq[j], s);
        return;
    }
    const int lane = threadIdx.x & 31;
    const int64_t warps = ((int64_t)gridDim.x * blockDim.x) / 32;
    for (int64_t j = (blockIdx.x * (int64_t)blockDim.x + threadIdx.x) / 32; j < a.n; j += warps) {
        double s = 0.0;
        for (int64_t l = lane; l < a.k; l += 32) {
            const double x = to_d(a.B[l + j * a.ldb]);
            s = fma(x, x, s);
        }
        s = warp_sum(s);
        if (lane == 0)
            a.bsq[j] = s;
    }
}

/* A warp per (I, j): C's column sum over block row I against alpha 2^e(I) sum_p R(p, I, j) +
 * beta (the old C's sum); over the threshold, (I, j) goes on the list for the second tier. */
template <typename TA, typename TC> __global__ void __launch_bounds__(kThreads) lp_check(lp_args<TA, TC> a)
{
    const double alpha = alpha_of(a), beta = beta_of(a);
    const double aa = fabs(alpha), bb = fabs(beta);
    const double uo = lp<TC>::u, ud = 0x1p-53;
    const double nk = (double)a.k;
    const double omega = blasft_norm_omega(BLASFT_NORM_FALSE_ALARM);
    const double acc = kUa * kUa * blasft_norm_second_order(nk, kUa) * blasft_norm_terms(nk, 1);
    const int lane = threadIdx.x & 31;
    const int64_t units = a.mb * a.n, all = ((int64_t)gridDim.x * blockDim.x) / 32;
    const int64_t ldr = kPieces * a.mb;
    const int64_t rounds = (units + all - 1) / all;
    for (int64_t r = 0, w = (blockIdx.x * (int64_t)blockDim.x + threadIdx.x) / 32; r < rounds;
         r++, w += all) {
        const bool live = w < units;
        const int64_t ww = live ? w : 0;
        const int64_t j = ww / a.mb, I = ww - j * a.mb, i0 = I * a.bs;
        const int64_t rows = live ? (a.m - i0 < a.bs ? a.m - i0 : a.bs) : 0;
        blasft_csum cs = {0.0, 0.0}, os = {0.0, 0.0};
        double cabs = 0.0, osq = 0.0;
        const TC *C = a.C + i0 + j * a.ldc;
        for (int64_t i = lane; i < rows; i += 32) {
            const double c = to_d(C[i]);
            blasft_csum_add(&cs, c);
            cabs += fabs(c);
        }
        if (a.old && beta != 0.0) {
            const TC *O = a.old + i0 + j * a.m;
            for (int64_t i = lane; i < rows; i += 32) {
                const double o = to_d(O[i]);
                blasft_csum_add(&os, o);
                osq = fma(o, o, osq);
            }
        }
        cs = warp_csum(cs);
        os = warp_csum(os);
        cabs = warp_sum(cabs);
        osq = warp_sum(osq);
        if (!live || lane != 0)
            continue;
        const double scale = ldexp(1.0, a.e[I]);
        double rsum = 0.0, rabs = 0.0;
        for (int p = 0; p < kPieces; p++) {
            const double x = a.R[p * a.mb + I + j * ldr];
            rsum += x;
            rabs += fabs(x);
        }
        const double ref = alpha == 0.0 ? 0.0 : alpha * scale * rsum;
        const double bo = beta * blasft_csum_value(&os), c = blasft_csum_value(&cs);
        const double bj = a.bsq[j];
        /* the GEMM's and the reference's FP32 accumulations (NORM), the scaling and addition of
         * the old C; C's rounding to its type (exact bound); the pieces' remainder and the
         * reference's FP32 results; our double sums; gradual underflow in FP32 and in C */
        const double v = acc * aa * aa * bj * (a.Q[I] + scale * scale * a.pn[I]) +
                         3.0 * kUa * kUa * bb * bb * osq;
        const double thr = omega * sqrt(v) + uo * cabs + (double)rows * lp<TC>::sub +
                           aa * scale * (sqrt(a.rn[I]) * sqrt(bj) + 0x1p-24 * rabs) +
                           4.0 * ud * (fabs(ref) + fabs(bo) + fabs(c) + cabs) +
                           (double)(rows + 1) * (nk + 4.0) * 0x1p-150 * (1.0 + aa);
        const bool range = blasft_squares_in_range(aa * sqrt(a.Q[I]) * sqrt(bj)) &&
                           blasft_squares_in_range(bb * sqrt(osq));
        if (blasft_over(c - (ref + bo), thr) || !range) {
            const unsigned int f = atomicAdd(a.nflag, 1u);
            a.flagged[f] = make_uint2((unsigned int)I, (unsigned int)j);
        }
    }
}

/* The second tier: a CUDA block per flagged (I, j), a warp per element of the block column: the
 * element again in double and compared with C's against its own rounding (exact bound) and the
 * FP32 accumulation (NORM per element; the worst case where the squares leave the double range);
 * apart, replaced by the value rounded once (correct mode) and counted. */
template <typename TA, typename TC> __global__ void __launch_bounds__(kThreads) lp_recompute(lp_args<TA, TC> a)
{
    __shared__ double red[kThreads / 32];
    const double alpha = alpha_of(a), beta = beta_of(a);
    const double aa = fabs(alpha), bb = fabs(beta);
    const double uo = lp<TC>::u, ud = 0x1p-53;
    const double nk = (double)a.k;
    const double omega = blasft_norm_omega(BLASFT_NORM_FALSE_ALARM);
    const double acc = blasft_norm_second_order(nk, kUa) * blasft_norm_terms(nk, 1);
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
    const unsigned int nf = *a.nflag;
    for (unsigned int f = blockIdx.x; f < nf; f += gridDim.x) {
        const uint2 ij = a.flagged[f];
        const int64_t I = ij.x, j = ij.y, i0 = I * a.bs;
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
            TC *cp = a.C + i + j * a.ldc;
            const double c = to_d(*cp);
            const double mag = aa * sqrt(asq) * sqrt(bj);
            const double fp32 = blasft_squares_in_range(mag) && blasft_squares_in_range(bb * o)
                                    ? omega * kUa * sqrt(acc * mag * mag + 3.0 * bb * bb * o * o)
                                    : blasft_gamma(nk + 4.0, 2.0 * kUa) * (aa * mass + bb * fabs(o));
            const double bound = fp32 * (1.0 + uo) + uo * fabs(v) + lp<TC>::sub +
                                 2.0 * (nk + 2.0) * ud * (aa * mass + bb * fabs(o)) +
                                 (nk + 4.0) * 0x1p-150 * (1.0 + aa);
            const TC vt = from_d<TC>(v);
            if (to_d(vt) == c || blasft_parts_agree(c, v, bound, lp<TC>::largest))
                continue;
            apart += 1.0;
            if (a.action == GK_REC_CORRECTED)
                *cp = vt;
            const unsigned int rr = atomicAdd(&a.cnt->nrec, 1u);
            if (rr < GK_MAX_RECORDS) {
                gk_record &rec = a.cnt->rec[rr];
                rec.kind = a.action;
                rec.block_row = I;
                rec.block_col = j / a.bs;
                rec.row = i;
                rec.col = j;
                rec.syndrome = fabs(c - v);
                rec.threshold = bound;
            }
        }
        apart = block_reduce<false>(apart, red);
        if (threadIdx.x == 0) {
            const unsigned long long nap = (unsigned long long)apart;
            /* as the batches' second tier: corrected in correct mode (each known exactly),
             * detected and uncorrectable in detect mode */
            if (nap == 0) {
                atomicAdd(&a.cnt->false_alarms, 1ull);
            } else {
                atomicAdd(&a.cnt->detected, nap);
                atomicAdd(a.action == GK_REC_CORRECTED ? &a.cnt->corrected : &a.cnt->uncorrectable,
                          nap);
            }
        }
    }
}

unsigned int grid_for(int64_t threads)
{
    const int64_t b = (threads + kThreads - 1) / kThreads;
    return (unsigned int)(b < 65536 ? b : 65536);
}

template <typename TA, typename TC>
int run_lowp(blasft_gpu_ctx *ctx, const blasft_gpu_lowp *l, const blasft_gpu_params *p)
{
    const blasft_gpu_gemm &g = l->g;
    const bool on_dev = g.scalars_on_device != 0;
    float beta_h = 0.0f;
    if (!on_dev)
        memcpy(&beta_h, g.beta, sizeof beta_h);
    /* the old C is kept wherever beta may be nonzero, so that a flagged block can be computed
     * again */
    const bool keep_old = on_dev || beta_h != 0.0f;
    const int64_t m = g.m, n = g.n, k = g.k, bs = p->block_size;
    const int64_t mb = (m + bs - 1) / bs;
    gk_carve w{0};
    const size_t cnt_at = w.take(sizeof(gk_counters)), nflag_at = w.take(sizeof(unsigned int));
    const size_t bsq_at = w.take(sizeof(double) * (size_t)n);
    const size_t zero_bytes = w.o; /* counters, the list's length and bsq start at zero */
    const size_t S_at = w.take(sizeof(double) * (size_t)(mb * k));
    const size_t q_at = w.take(sizeof(double) * (size_t)(mb * k));
    const size_t Q_at = w.take(sizeof(double) * (size_t)mb);
    const size_t pn_at = w.take(sizeof(double) * (size_t)mb);
    const size_t rn_at = w.take(sizeof(double) * (size_t)mb);
    const size_t e_at = w.take(sizeof(int) * (size_t)mb);
    const size_t pieces_at = w.take(sizeof(TA) * (size_t)(kPieces * mb * k));
    const size_t R_at = w.take(sizeof(float) * (size_t)(kPieces * mb * n));
    const size_t list_at = w.take(sizeof(uint2) * (size_t)(mb * n));
    const size_t old_at = w.take(keep_old ? sizeof(TC) * (size_t)(m * n) : 0);
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
    report_slot *slot = take_slot(ctx);
    if (!slot)
        return -2;
    char *b = (char *)ctx->lowp_ws;
    lp_args<TA, TC> a;
    memset(&a, 0, sizeof a);
    a.m = m;
    a.n = n;
    a.k = k;
    a.lda = g.lda;
    a.ldb = g.ldb;
    a.ldc = g.ldc;
    a.mb = mb;
    a.bs = (int)bs;
    a.ta = op_of(g.transa) != CUBLAS_OP_N;
    a.tb = op_of(g.transb) != CUBLAS_OP_N;
    a.A = (const TA *)g.a;
    a.B = (const TA *)g.b;
    a.C = (TC *)g.c;
    a.old = keep_old ? (const TC *)(b + old_at) : nullptr;
    if (on_dev) {
        a.alpha_p = (const float *)g.alpha;
        a.beta_p = (const float *)g.beta;
    } else {
        memcpy(&a.alpha_v, g.alpha, sizeof(float));
        a.beta_v = beta_h;
    }
    a.S = (double *)(b + S_at);
    a.q = (double *)(b + q_at);
    a.Q = (double *)(b + Q_at);
    a.pn = (double *)(b + pn_at);
    a.rn = (double *)(b + rn_at);
    a.e = (int *)(b + e_at);
    a.pieces = (TA *)(b + pieces_at);
    a.R = (float *)(b + R_at);
    a.bsq = (double *)(b + bsq_at);
    a.nflag = (unsigned int *)(b + nflag_at);
    a.flagged = (uint2 *)(b + list_at);
    a.cnt = (gk_counters *)(b + cnt_at);
    a.action = p->mode == BLASFT_MODE_CORRECT ? GK_REC_CORRECTED : GK_REC_DETECTED;

    const cudaStream_t s0 = ctx->s0;
    const cudaDataType dta = lp<TA>::dt, dtc = lp<TC>::dt;
    cudaMemsetAsync(b, 0, zero_bytes, s0);
    if (keep_old)
        cudaMemcpy2DAsync(b + old_at, sizeof(TC) * (size_t)m, g.c, sizeof(TC) * (size_t)g.ldc,
                          sizeof(TC) * (size_t)m, (size_t)n, cudaMemcpyDeviceToDevice, s0);
    lp_encode<TA, TC><<<grid_for(a.ta ? mb * k : 32 * mb * k), kThreads, 0, s0>>>(a);
    lp_split<TA, TC><<<(unsigned int)mb, kThreads, 0, s0>>>(a);
    if (a.tb)
        lp_bnorm<TA, TC><<<dim3((unsigned int)((n + kThreads - 1) / kThreads),
                                (unsigned int)((k + 255) / 256)),
                           kThreads, 0, s0>>>(a);
    else
        lp_bnorm<TA, TC><<<grid_for(32 * n), kThreads, 0, s0>>>(a);
    /* the reference: pieces x op(B), host scalars; then the caller's GEMM with its own */
    static const float one = 1.0f, zero = 0.0f;
    const cublasComputeType_t comp = (cublasComputeType_t)l->compute;
    if (set_mode(ctx, 0) ||
        !blas_ok(cb->set_math_mode(ctx->h0, (cublasMath_t)(CUBLAS_DEFAULT_MATH |
                                                           CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION)),
                 "cublasSetMathMode"))
        return -2;
    const bool ref_ok =
        blas_ok(cb->gemm_ex(ctx->h0, CUBLAS_OP_N, op_of(g.transb), (int)(kPieces * mb), (int)n,
                            (int)k, &one, a.pieces, dta, (int)(kPieces * mb), g.b, dta,
                            (int)g.ldb, &zero, a.R, CUDA_R_32F, (int)(kPieces * mb), comp,
                            CUBLAS_GEMM_DEFAULT),
                "cublasGemmEx (reference)");
    const bool main_ok =
        ref_ok && set_mode(ctx, on_dev) == 0 &&
        blas_ok(cb->gemm_ex(ctx->h0, op_of(g.transa), op_of(g.transb), (int)m, (int)n, (int)k,
                            g.alpha, g.a, dta, (int)g.lda, g.b, dta, (int)g.ldb, g.beta, g.c, dtc,
                            (int)g.ldc, comp, (cublasGemmAlgo_t)l->algo),
                "cublasGemmEx");
    /* the engine's other GEMMs keep the default math */
    if (!blas_ok(cb->set_math_mode(ctx->h0, CUBLAS_DEFAULT_MATH), "cublasSetMathMode") || !main_ok)
        return -2;
    if (l->plant)
        l->plant((void *)s0, l->plant_user);
    lp_check<TA, TC><<<grid_for(32 * mb * n), kThreads, 0, s0>>>(a);
    lp_recompute<TA, TC><<<1024, kThreads, 0, s0>>>(a);
    report_meta rm;
    rm.checks = (uint64_t)(mb * n);
    rm.type = l->ab == BLASFT_LOWP_F16 ? 'H' : 'B';
    rm.routine = g.routine ? g.routine : "gpu_gemm_lowp";
    rm.on_error = p->on_error;
    rm.row0 = 0;
    rm.col0 = 0;
    rm.bs = bs;
    rm.gemms = 1;
    return enqueue_report(ctx, slot, rm, a.cnt);
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
    /* cuBLAS's int dimensions, and the list of (I, j) in 32 bits */
    if (g.m < 1 || g.n < 1 || g.k < 1 || g.m > INT32_MAX || g.n > INT32_MAX || g.k > INT32_MAX ||
        g.lda > INT32_MAX || g.ldb > INT32_MAX || g.ldc > INT32_MAX || g.c_vector || g.prep_a ||
        g.prep_b)
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
    if (!ctx || !l || !p || !blasft_gpu_lowp_supported(l))
        return -1;
    if (blasft_gpu_ctx_stale(ctx))
        return -2;
    /* a graph being captured would keep the buffer's address, which may grow later */
    cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
    if (cudaStreamIsCapturing(ctx->s0, &cs) != cudaSuccess || cs != cudaStreamCaptureStatusNone)
        return -1;
    const bool half = l->ab == BLASFT_LOWP_F16, f32 = l->c == BLASFT_LOWP_F32;
    if (half)
        return f32 ? run_lowp<__half, float>(ctx, l, p) : run_lowp<__half, __half>(ctx, l, p);
    return f32 ? run_lowp<__nv_bfloat16, float>(ctx, l, p)
               : run_lowp<__nv_bfloat16, __nv_bfloat16>(ctx, l, p);
}
