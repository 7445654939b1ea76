/* Batches of GEMMs (S, D, C, Z) checked together (BLASFT_GPU_BATCHED=fused): one cuBLAS batched
 * GEMM computes every matrix, one kernel checks every matrix's column checksums against NORM
 * thresholds, one kernel computes the matrices that flagged again and corrects them. A batch of
 * small matrices protected one matrix at a time pays the engine's chain of launches per matrix
 * (tens of microseconds each); here the batch pays four launches. docs/cublas-interpose.md,
 * "Batched GEMMs".
 *
 * Why NORM (docs/thresholds.md, "NORM"): a batched cuBLAS kernel's summation order (split-K,
 * blocking) is not known, and NORM's bound holds for any order, with or without FMA: every
 * partial sum of a_i . b_j is bounded by ||a_i|| ||b_j|| (Cauchy-Schwarz), and Azuma-Hoeffding
 * gives a false-alarm probability of at most 1e-12 per check under Higham and Mary's model. It
 * needs only the operands' norms, which the check kernel takes from the reads it makes anyway.
 * The second tier (every element of a flagged matrix computed again in compensated double and
 * compared with the GEMM's against the worst-case rounding of both) decides, so a false alarm
 * costs time and never changes C. */
#include "gpu_device.cuh"
#include "gpu_engine.h"
extern "C" {
#include "log.h"
}

#include <algorithm>
#include <cstring>

using namespace gpu_engine;

namespace {

/* the checks' arithmetic per element is O(k) per column: longer products keep the engine's passes */
constexpr int64_t kMaxK = 4096;
/* matrices of at most this m n k; larger ones keep the engine's own passes, whose cost the GEMM
 * hides. H200, m = n = k, time against plain (docs/cublas-interpose.md, "Batched GEMMs"): checked
 * as a whole D 1.59 at 1024^3 x 8 against 2.29 matrix by matrix, 1.45 / 1.43 at 2048^3 x 2; S
 * (promoted) 2.20 / 2.37 at 1024^3, 1.53 / 1.33 at 1536^3 */
constexpr double kMaxMnk = 0x1p30;
/* a chunk of the batch: its old C's copies (beta != 0) and op(A)'s checksums and squares */
constexpr size_t kChunkBytes = (size_t)64 << 20;
/* matrices per chunk at most (the per-matrix flags) */
constexpr int64_t kMaxChunk = (int64_t)1 << 20;

template <typename T> struct batch_args {
    int64_t m, n, k, lda, ldb, ldc;
    int64_t count;          /* matrices of this chunk */
    int64_t first;          /* the caller's index of its first matrix (events) */
    int64_t sa, sb, sc;     /* strides (elements), where the arrays are NULL */
    const T *A, *B;
    T *C;
    const T *const *Aa;     /* device arrays of pointers (this chunk's first), or NULL */
    const T *const *Ba;
    T *const *Ca;
    bool ta, tb;            /* op(A) = A^T or A^H, op(B) = B^T or B^H */
    bool ca, cb;            /* op(A) = A^H, op(B) = B^H (complex data) */
    T alpha_v, beta_v;      /* host pointer mode */
    const T *alpha_p, *beta_p; /* device pointer mode */
    const T *Cold;          /* the chunk's old C, m x n each (ld m), or NULL: beta is 0 */
    int bs;
    unsigned int *flags;    /* per matrix of the chunk: checks over their thresholds */
    /* per (matrix, block row, l): op(A)'s column checksum (P parts), the sum of its squares */
    double *acs, *asq;
    gk_counters *cnt;
    int action;             /* an element apart: GK_REC_CORRECTED (correct mode) or
                               GK_REC_DETECTED (detect mode: C stays) */
};

template <typename T> __device__ __forceinline__ const T *mat_a(const batch_args<T> &a, int64_t g)
{
    return a.Aa ? a.Aa[g] : a.A + g * a.sa;
}
template <typename T> __device__ __forceinline__ const T *mat_b(const batch_args<T> &a, int64_t g)
{
    return a.Ba ? a.Ba[g] : a.B + g * a.sb;
}
template <typename T> __device__ __forceinline__ T *mat_c(const batch_args<T> &a, int64_t g)
{
    return a.Ca ? a.Ca[g] : a.C + g * a.sc;
}
/* an element as (re, im) in double, im 0 for real data; conjugated where asked */
template <typename T> __device__ __forceinline__ double2 el(T x, bool conj = false)
{
    const double im = gk_el<T>::P == 2 ? part_of(x, 1) : 0.0;
    return make_double2(part_of(x, 0), conj ? -im : im);
}
__device__ __forceinline__ double2 cmul(double2 x, double2 y)
{
    return make_double2(x.x * y.x - x.y * y.y, x.x * y.y + x.y * y.x);
}
__device__ __forceinline__ bool nonzero(double2 x) { return x.x != 0.0 || x.y != 0.0; }
__device__ __forceinline__ double modulus(double2 x) { return hypot(x.x, x.y); }
/* |re| + |im|: the engine's bound of a complex scalar's modulus (abs1) */
__device__ __forceinline__ double abs1(double2 x) { return fabs(x.x) + fabs(x.y); }
template <typename T> __device__ __forceinline__ double2 alpha_of(const batch_args<T> &a)
{
    return el(a.alpha_p ? *a.alpha_p : a.alpha_v);
}
template <typename T> __device__ __forceinline__ double2 beta_of(const batch_args<T> &a)
{
    return a.Cold ? el(a.beta_p ? *a.beta_p : a.beta_v) : make_double2(0.0, 0.0);
}
/* the old C of matrix g, or NULL where beta is 0 (in device memory, where it was copied
 * anyway): BLAS does not read C then, and a NaN in it must not enter */
template <typename T>
__device__ __forceinline__ const T *old_of(const batch_args<T> &a, double2 beta, int64_t g)
{
    return a.Cold && nonzero(beta) ? a.Cold + g * a.m * a.n : nullptr;
}

/* x * y added to (s, c) without rounding error of its own (TwoProduct by FMA, then TwoSum) */
__device__ __forceinline__ void dot_add(blasft_csum *acc, double x, double y)
{
    const double p = x * y;
    const double e = fma(x, y, -p);
    blasft_csum_add(acc, p);
    acc->c += e;
}
/* the complex product x y into (re, im); for real data (im parts 0) re alone is x y */
template <int P>
__device__ __forceinline__ void cdot_add(blasft_csum *re, blasft_csum *im, double2 x, double2 y)
{
    dot_add(re, x.x, y.x);
    if (P == 2) {
        dot_add(re, -x.y, y.y);
        dot_add(im, x.x, y.y);
        dot_add(im, x.y, y.x);
    }
}

/* The old C of every matrix of the chunk into compact copies (ld m), before the GEMM. */
template <typename T> __global__ void save_old(batch_args<T> a, T *old)
{
    const int64_t per = a.m * a.n, total = per * a.count;
    for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < total;
         e += (int64_t)gridDim.x * blockDim.x) {
        /* 32-bit division: a chunk holds fewer than 2^31 elements (run_batched) */
        const uint32_t g = (uint32_t)e / (uint32_t)per, r = (uint32_t)e - g * (uint32_t)per;
        const uint32_t j = r / (uint32_t)a.m, i = r - j * (uint32_t)a.m;
        old[e] = mat_c(a, g)[i + j * a.ldc];
    }
}

/* (s, c) summed over the L lanes of a group (L a power of two up to 32): lane 0 of the group
 * holds the sum */
__device__ __forceinline__ blasft_csum group_csum(blasft_csum v, int L)
{
    for (int off = L >> 1; off > 0; off >>= 1) {
        blasft_csum o;
        o.s = __shfl_down_sync(0xffffffffu, v.s, off, L);
        o.c = __shfl_down_sync(0xffffffffu, v.c, off, L);
        csum_merge(&v, o);
    }
    return v;
}

/* Unit w of a pass over (matrix g, block row I, index x < len) of a chunk: its matrix, block
 * row (gI counts both), first row and rows of the block (0 where the lane has no unit), and x (l
 * in the encoding, j in the check). 32-bit division: a chunk's units are fewer than 2^31. */
struct pass_unit {
    uint32_t gI, x, g;
    int64_t i0;
    int rows;
};
template <typename T>
__device__ __forceinline__ pass_unit unit_of(const batch_args<T> &a, int64_t mb, int64_t w,
                                             int64_t len, bool live)
{
    pass_unit q;
    q.gI = (uint32_t)w / (uint32_t)len;
    q.x = (uint32_t)w - q.gI * (uint32_t)len;
    q.g = q.gI / (uint32_t)mb;
    q.i0 = (int64_t)(q.gI - q.g * (uint32_t)mb) * a.bs;
    q.rows = live ? (int)(a.m - q.i0 < a.bs ? a.m - q.i0 : a.bs) : 0;
    return q;
}

/* op(A)'s column checksum of every block row of every matrix, s(g, I, l) = sum_{i in I}
 * op(A)(i, l) (compensated, each part), and the squares' sums q(g, I, l) = sum_{i in I}
 * |op(A)(i, l)|^2: a group of L lanes per (g, I, l) along the block's rows (batch_lanes). */
template <typename T>
__global__ void __launch_bounds__(kThreads, 4) batch_encode(batch_args<T> a, int L)
{
    constexpr int P = gk_el<T>::P;
    const int64_t mb = (a.m + a.bs - 1) / a.bs, units = a.count * mb * a.k;
    const int64_t tid = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    const int sub = (int)(tid & (L - 1));
    const int64_t step = ((int64_t)gridDim.x * blockDim.x) / L;
    const int64_t rounds = (units + step - 1) / step; /* the same for every lane of a warp */
    for (int64_t r = 0, u = tid / L; r < rounds; r++, u += step) {
        const bool live = u < units;
        const int64_t uu = live ? u : 0;
        const pass_unit pu = unit_of(a, mb, uu, a.k, live);
        const uint32_t l = pu.x;
        const int64_t i0 = pu.i0;
        const int rows = pu.rows;
        const T *A = mat_a(a, pu.g);
        A += a.ta ? l + i0 * a.lda : i0 + l * a.lda;
        const int64_t step_i = a.ta ? a.lda : 1;
        blasft_csum s = {0.0, 0.0}, si = {0.0, 0.0};
        double q = 0.0;
#pragma unroll 4
        for (int i = sub; i < rows; i += L) {
            const double2 x = el(A[i * step_i], a.ca);
            blasft_csum_add(&s, x.x);
            if (P == 2)
                blasft_csum_add(&si, x.y);
            q = fma(x.x, x.x, fma(x.y, x.y, q));
        }
        s = group_csum(s, L);
        if (P == 2)
            si = group_csum(si, L);
        q = group_sum(q, L);
        if (live && sub == 0) {
            a.acs[uu * P] = blasft_csum_value(&s);
            if (P == 2)
                a.acs[uu * P + 1] = blasft_csum_value(&si);
            a.asq[uu] = q;
        }
    }
}

/* A group of L lanes per (matrix g, block row I, column j) (L = 1 for short products: no
 * shuffles at all): the reference alpha s . b_j + beta (sum of the old C's column over I) with a
 * compensated dot product, C's column sum over I, and NORM's threshold (docs/thresholds.md,
 * "NORM") from ||b_j||^2 and sum_{i in I} ||op(A)(i, :)||^2; a check over its threshold flags
 * the matrix. Complex data: each part a real dot product of 2k terms whose vectors have the
 * complex vectors' norms, so one threshold serves both parts (NORM with n = 2k). */
template <typename T>
__global__ void __launch_bounds__(kThreads, 4) batch_check(batch_args<T> a, int L)
{
    constexpr int P = gk_el<T>::P;
    const double u = ldexp(1.0, -gk_el<T>::t), ud = 0x1p-53;
    const double2 alpha = alpha_of(a), beta = beta_of(a);
    const double abs_alpha = modulus(alpha), abs_beta = modulus(beta);
    const bool prod = nonzero(alpha); /* alpha 0: no product (BLAS), whatever A and B hold */
    const double nk = (double)(a.k * P);
    const double omega = blasft_norm_omega(BLASFT_NORM_FALSE_ALARM);
    const double terms = blasft_norm_terms(nk, P);
    const double second = blasft_norm_second_order(nk, u);
    const double gam = blasft_gamma(nk + 2.0, u);
    const int64_t mb = (a.m + a.bs - 1) / a.bs, units = a.count * mb * a.n;
    const int64_t tid = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    const int sub = (int)(tid & (L - 1));
    const int64_t step = ((int64_t)gridDim.x * blockDim.x) / L;
    /* every lane of a warp runs the same number of rounds (the shuffles need all 32) */
    const int64_t rounds = (units + step - 1) / step;
    for (int64_t r = 0, w = tid / L; r < rounds; r++, w += step) {
        const bool live = w < units;
        const int64_t wu = live ? w : 0;
        const pass_unit pu = unit_of(a, mb, wu, a.n, live);
        const uint32_t gI = pu.gI, j = pu.x, g = pu.g;
        const int64_t i0 = pu.i0;
        const int rows = pu.rows;
        const int64_t kk = live ? a.k : 0;
        const T *B = mat_b(a, g), *C = mat_c(a, g) + i0 + j * a.ldc;
        const double *acs = a.acs + gI * a.k * P, *asq = a.asq + gI * a.k;
        blasft_csum dot = {0.0, 0.0}, doti = {0.0, 0.0}, cs = {0.0, 0.0}, csi = {0.0, 0.0},
                    os = {0.0, 0.0}, osi = {0.0, 0.0};
        double bsq = 0.0, sq = 0.0, ssq = 0.0, osq = 0.0;
#pragma unroll 4
        for (int64_t l = sub; l < kk; l += L) {
            const double2 b = el(a.tb ? B[j + l * a.ldb] : B[l + j * a.ldb], a.cb);
            const double2 s = make_double2(acs[l * P], P == 2 ? acs[l * P + 1] : 0.0);
            cdot_add<P>(&dot, &doti, s, b);
            bsq = fma(b.x, b.x, fma(b.y, b.y, bsq));
            ssq = fma(s.x, s.x, fma(s.y, s.y, ssq));
            sq += asq[l];
        }
#pragma unroll 4
        for (int i = sub; i < rows; i += L) {
            const double2 c = el(C[i]);
            blasft_csum_add(&cs, c.x);
            if (P == 2)
                blasft_csum_add(&csi, c.y);
        }
        const T *old = live ? old_of(a, beta, g) : nullptr;
        if (old) {
            old += i0 + j * a.m;
            for (int i = sub; i < rows; i += L) {
                const double2 o = el(old[i]);
                blasft_csum_add(&os, o.x);
                if (P == 2)
                    blasft_csum_add(&osi, o.y);
                osq = fma(o.x, o.x, fma(o.y, o.y, osq));
            }
        }
        dot = group_csum(dot, L);
        cs = group_csum(cs, L);
        os = group_csum(os, L);
        if (P == 2) {
            doti = group_csum(doti, L);
            csi = group_csum(csi, L);
            osi = group_csum(osi, L);
        }
        bsq = group_sum(bsq, L);
        sq = group_sum(sq, L);
        ssq = group_sum(ssq, L);
        osq = group_sum(osq, L);
        if (live && sub == 0) {
            const double2 d = make_double2(blasft_csum_value(&dot), blasft_csum_value(&doti));
            const double2 o = make_double2(blasft_csum_value(&os), blasft_csum_value(&osi));
            const double2 c = make_double2(blasft_csum_value(&cs), blasft_csum_value(&csi));
            const double2 ad = prod ? cmul(alpha, d) : make_double2(0.0, 0.0), bo = cmul(beta, o);
            /* NORM: V = u^2 (1+gamma)^2 (|alpha|^2 terms ||b_j||^2 sum ||a_i||^2 + 3 |beta|^2
             * sum |c_old|^2); our side: the checksum's entries rounded once (u_d ||s|| ||b_j||,
             * doubled for the compensated sums' last rounding, and per part), the reference's
             * scaling and addition, C's and the old C's sums, gradual underflow */
            const double v = u * u * second *
                             ((prod ? abs_alpha * abs_alpha * terms * bsq * sq : 0.0) +
                              3.0 * abs_beta * abs_beta * osq);
            const double thr =
                omega * sqrt(v) + (prod ? 2.0 * P * ud * abs_alpha * sqrt(ssq) * sqrt(bsq) : 0.0) +
                2.0 * P * ud * (modulus(ad) + modulus(bo) + modulus(c)) +
                blasft_underflow_eps(gam, u, (double)rows, abs_alpha);
            /* squares out of the double range: the statistical threshold cannot be trusted;
             * the second tier decides (the roots taken apart, so that tiny data's product does
             * not underflow to 0, which would count as in range) */
            const bool range =
                (!prod || blasft_squares_in_range(abs_alpha * sqrt(sq) * sqrt(bsq))) &&
                blasft_squares_in_range(abs_beta * sqrt(osq));
            if (blasft_over(c.x - (ad.x + bo.x), thr) ||
                (P == 2 && blasft_over(c.y - (ad.y + bo.y), thr)) || !range)
                atomicAdd(&a.flags[g], 1u);
        }
    }
}

/* The second tier: every element of a flagged matrix computed again (compensated dot product in
 * double) and compared with the GEMM's against the worst-case rounding of the two, part by part;
 * apart, it is replaced (correct mode) and counted. A flagged matrix with nothing apart was
 * flagged by rounding (or by data out of the thresholds' range): a false alarm. */
template <typename T> __global__ void __launch_bounds__(kThreads) batch_recompute(batch_args<T> a)
{
    constexpr int P = gk_el<T>::P;
    __shared__ double red[kThreads / 32];
    const double u = ldexp(1.0, -gk_el<T>::t);
    const double largest = blasft_largest(u);
    const double2 alpha = alpha_of(a), beta = beta_of(a);
    const bool prod = nonzero(alpha);
    const double aa = abs1(alpha), bb = abs1(beta);
    const double gam = blasft_gamma((double)(a.k * P) + 2.0, u);
    for (int64_t g = blockIdx.x; g < a.count; g += gridDim.x) {
        if (a.flags[g] == 0)
            continue; /* the same for every thread of the block */
        const T *A = mat_a(a, g), *B = mat_b(a, g);
        T *C = mat_c(a, g);
        const T *old = old_of(a, beta, g);
        double apart = 0.0;
        for (int64_t e = threadIdx.x; e < a.m * a.n; e += blockDim.x) {
            const uint32_t j = (uint32_t)e / (uint32_t)a.m, i = (uint32_t)e - j * (uint32_t)a.m;
            blasft_csum dot = {0.0, 0.0}, doti = {0.0, 0.0};
            double mass = 0.0;
            for (int64_t l = 0; l < (prod ? a.k : 0); l++) {
                const double2 x = el(a.ta ? A[l + i * a.lda] : A[i + l * a.lda], a.ca);
                const double2 y = el(a.tb ? B[j + l * a.ldb] : B[l + j * a.ldb], a.cb);
                cdot_add<P>(&dot, &doti, x, y);
                mass += abs1(x) * abs1(y);
            }
            const double2 o = old ? el(old[i + j * a.m]) : make_double2(0.0, 0.0);
            const double2 d = make_double2(blasft_csum_value(&dot), blasft_csum_value(&doti));
            const double2 ad = prod ? cmul(alpha, d) : make_double2(0.0, 0.0), bo = cmul(beta, o);
            const double2 v = make_double2(ad.x + bo.x, ad.y + bo.y);
            const double2 c = el(C[i + j * a.ldc]);
            /* the bound from the recomputed value, as the engine's (within_rounding): a C made
             * Inf by a fault would make its own bound infinite */
            bool same = true;
            double bound = 0.0;
            for (int p = 0; p < P; p++) {
                const double vp = p ? v.y : v.x, cp = p ? c.y : c.x;
                bound = 2.0 * blasft_element_rounding(gam, u, aa, aa * mass, bb, abs1(o), fabs(vp));
                same = same && blasft_parts_agree(cp, vp, bound, largest);
            }
            if (same)
                continue;
            apart += 1.0;
            if (a.action == GK_REC_CORRECTED)
                C[i + j * a.ldc] = make_el<T>(v.x, v.y);
            gk_add_record(a.cnt, a.action, i / a.bs, j / a.bs, i, j,
                          modulus(make_double2(c.x - v.x, c.y - v.y)), bound, a.first + g);
        }
        apart = block_reduce(apart, red); /* red may be used again: the next matrix's */
        if (threadIdx.x == 0)
            gk_count_apart(a.cnt, a.action, (unsigned long long)apart);
    }
}

#define BATCHED_GEMM(T, fs, fb)                                                                    \
    cublasStatus_t batched_gemm(cublasHandle_t h, const batch_args<T> &a, cublasOperation_t ta,    \
                                cublasOperation_t tb, const T *alpha, const T *beta)               \
    {                                                                                              \
        if (a.Aa)                                                                                  \
            return cb->fb(h, ta, tb, (int)a.m, (int)a.n, (int)a.k, alpha, a.Aa, (int)a.lda, a.Ba,  \
                          (int)a.ldb, beta, a.Ca, (int)a.ldc, (int)a.count);                        \
        return cb->fs(h, ta, tb, (int)a.m, (int)a.n, (int)a.k, alpha, a.A, (int)a.lda, a.sa, a.B,  \
                      (int)a.ldb, a.sb, beta, a.C, (int)a.ldc, a.sc, (int)a.count);                \
    }
BATCHED_GEMM(float, sgemm_strided, sgemm_batched)
BATCHED_GEMM(double, dgemm_strided, dgemm_batched)
BATCHED_GEMM(float2, cgemm_strided, cgemm_batched)
BATCHED_GEMM(double2, zgemm_strided, zgemm_batched)
#undef BATCHED_GEMM

/* Lanes per sum of `len` terms in the encoding and the check: about 16 terms per lane, a warp
 * at most. Small matrices' passes are bound by latency: a lane's chain of dependent compensated
 * additions, against the shuffles that join the lanes' parts. */
int batch_lanes(int64_t len)
{
    int L = 1;
    while (L < 32 && (int64_t)L * 16 < len)
        L <<= 1;
    return L;
}

/* C of matrix g, for a planted fault (tests): with arrays of pointers read back (waits) */
template <typename T> T *host_mat_c(const blasft_gpu_batch *b, int64_t g, cudaStream_t s)
{
    if (!b->c_arr)
        return (T *)b->g.c + g * b->stride_c;
    return (T *)device_ptr_at(b->c_arr, g, s);
}

/* The batch's shape, layout and scalars as the kernels take them (T: the caller's data) */
template <typename T> batch_args<T> args_of(const blasft_gpu_batch *b)
{
    const blasft_gpu_gemm &g = b->g;
    batch_args<T> a;
    memset(&a, 0, sizeof a);
    a.m = g.m;
    a.n = g.n;
    a.k = g.k;
    a.lda = g.lda;
    a.ldb = g.ldb;
    a.ldc = g.ldc;
    a.sa = b->stride_a;
    a.sb = b->stride_b;
    a.sc = b->stride_c;
    a.ta = op_of(g.transa) != CUBLAS_OP_N;
    a.tb = op_of(g.transb) != CUBLAS_OP_N;
    a.ca = gk_el<T>::P == 2 && op_of(g.transa) == CUBLAS_OP_C;
    a.cb = gk_el<T>::P == 2 && op_of(g.transb) == CUBLAS_OP_C;
    if (g.scalars_on_device) {
        a.alpha_p = (const T *)g.alpha;
        a.beta_p = (const T *)g.beta;
    } else {
        memcpy(&a.alpha_v, g.alpha, sizeof(T));
        memcpy(&a.beta_v, g.beta, sizeof(T));
    }
    return a;
}

/* a's matrices: the chunk of `count` from matrix g0 on */
template <typename T>
void chunk_of(batch_args<T> &a, const blasft_gpu_batch *b, int64_t g0, int64_t count)
{
    a.count = count;
    if (b->a_arr) {
        a.Aa = (const T *const *)b->a_arr + g0;
        a.Ba = (const T *const *)b->b_arr + g0;
        a.Ca = (T *const *)b->c_arr + g0;
    } else {
        a.A = (const T *)b->g.a + g0 * b->stride_a;
        a.B = (const T *)b->g.b + g0 * b->stride_b;
        a.C = (T *)b->g.c + g0 * b->stride_c;
    }
}

/* The batch buffer's layout for a batch of b's shape with elements T: matrices per chunk and
 * where each part lies */
struct batch_layout {
    bool keep_old;
    int64_t chunk;
    size_t flags_at, acs_at, asq_at, old_at, need;
};
template <typename T> batch_layout layout_of(const blasft_gpu_batch *b, const blasft_gpu_params *p)
{
    const blasft_gpu_gemm &g = b->g;
    batch_layout L;
    /* the old C is kept wherever beta may be nonzero, so that a flagged matrix can always be
     * computed again (small matrices: a copy per chunk) */
    L.keep_old = g.scalars_on_device || scalar_nonzero(g.type, g.beta);
    const int64_t m = g.m, n = g.n, k = g.k, count = b->count;
    const int64_t mb = (m + p->block_size - 1) / p->block_size;
    const size_t mat_bytes = sizeof(T) * (size_t)m * (size_t)n;
    constexpr int P = gk_el<T>::P;
    const size_t enc_bytes = sizeof(double) * (size_t)(mb * k);
    const size_t per = (L.keep_old ? mat_bytes : 0) + (P + 1) * enc_bytes + sizeof(unsigned int);
    int64_t chunk = (int64_t)(kChunkBytes / per);
    chunk = chunk < 1 ? 1 : chunk > kMaxChunk ? kMaxChunk : chunk;
    chunk = chunk < count ? chunk : count;
    /* the kernels' element and unit indices within a chunk in 32 bits: m n k <= 2^30 keeps one
     * matrix's (m n, mb k, mb n) below 2^31, and the chunk is cut to keep their sum there */
    const int64_t widest = std::max({m * n, mb * k, mb * n});
    L.chunk = std::min(chunk, std::max<int64_t>(1, INT32_MAX / widest));
    /* counters, then the flags (one memset for both), op(A)'s checksums and squares, old C */
    L.flags_at = gk_align(sizeof(gk_counters));
    L.acs_at = L.flags_at + gk_align(sizeof(unsigned int) * (size_t)L.chunk);
    L.asq_at = L.acs_at + gk_align(P * enc_bytes * (size_t)L.chunk);
    L.old_at = L.asq_at + gk_align(enc_bytes * (size_t)L.chunk);
    L.need = L.old_at + (L.keep_old ? mat_bytes * (size_t)L.chunk : 0);
    return L;
}

/* Under graph capture, which keeps the buffer's address: a buffer to grow (first freed) refuses
 * the batch (its report slots are the graph's own: take_slot) */
template <typename T>
bool capture_refuses(const blasft_gpu_ctx *ctx, const blasft_gpu_batch *b,
                     const blasft_gpu_params *p)
{
    return ctx->batch_ws && layout_of<T>(b, p).need > ctx->batch_bytes;
}

/* caller: the type the caller asked for (the report names it; D where an S batch runs
 * promoted); first: the caller's index of b's first matrix (a promoted chunk's) */
template <typename T>
int run_batched(blasft_gpu_ctx *ctx, const blasft_gpu_batch *b, const blasft_gpu_params *p,
                blasft_type caller, bool capturing, int64_t first = 0)
{
    const blasft_gpu_gemm &g = b->g;
    const bool on_dev = g.scalars_on_device != 0;
    batch_args<T> a = args_of<T>(b);
    const int64_t m = g.m, n = g.n, k = g.k, count = b->count;
    const int64_t mb = (m + p->block_size - 1) / p->block_size;
    if (capturing && capture_refuses<T>(ctx, b, p))
        return -1;
    const batch_layout L = layout_of<T>(b, p);
    const bool keep_old = L.keep_old;
    const int64_t chunk = L.chunk;
    const size_t flags_at = L.flags_at, acs_at = L.acs_at, asq_at = L.asq_at, old_at = L.old_at;
    const size_t need = L.need;
    /* made before anything is enqueued: without it the batch goes matrix by matrix (-1) */
    const int got = ensure_buf(ctx, &ctx->batch_ws, &ctx->batch_bytes, need, nullptr);
    if (got == -3) {
        static int once;
        blasft_log_once(&once, BLASFT_LOG_WARN,
                        "GPU: no device memory for %zu bytes of a batch's checks: such batches "
                        "run matrix by matrix", need);
        return -1;
    }
    if (got)
        return got;
    if (set_mode(ctx, on_dev))
        return -2;
    report_slot *slot = take_slot(ctx);
    if (!slot)
        return -2;
    const cudaStream_t s0 = ctx->s0;
    char *w = (char *)ctx->batch_ws;
    gk_counters *cnt = (gk_counters *)w;

    a.Cold = keep_old ? (const T *)(w + old_at) : nullptr;
    a.bs = p->block_size;
    a.flags = (unsigned int *)(w + flags_at);
    a.acs = (double *)(w + acs_at);
    a.asq = (double *)(w + asq_at);
    a.cnt = cnt;
    a.action = p->mode == BLASFT_MODE_CORRECT ? GK_REC_CORRECTED : GK_REC_DETECTED;
    const int64_t rows = m < p->block_size ? m : p->block_size;
    const int le = batch_lanes(rows), lc = batch_lanes(k > rows ? k : rows);
    int plant = 0;
    for (int64_t g0 = 0; g0 < count; g0 += chunk) {
        chunk_of(a, b, g0, count - g0 < chunk ? count - g0 : chunk);
        a.first = first + g0;
        /* the first chunk clears the counters too */
        cudaMemsetAsync(g0 ? (char *)a.flags : w, 0,
                        (g0 ? 0 : flags_at) + sizeof(unsigned int) * (size_t)a.count, s0);
        const int64_t elems = m * n * a.count;
        if (keep_old)
            save_old<T><<<grid_for(elems), kThreads, 0, s0>>>(a, (T *)(w + old_at));
        if (!blas_ok(batched_gemm(ctx->h0, a, op_of(g.transa), op_of(g.transb),
                                  (const T *)g.alpha, (const T *)g.beta),
                     "cublas batched gemm"))
            return -2;
        /* tests: one planted fault per matrix, from the batch's first on */
        for (; plant < b->nplants && plant - g0 < a.count; plant++) {
            T *c = host_mat_c<T>(b, plant, s0);
            if (!c)
                return -2;
            ctx->checked_c = c;
            ctx->checked_type = g.type;
            ctx->checked_ldc = g.ldc;
            ctx->checked_rows = m;
            ctx->checked_cols = n;
            ctx->part = kWholeCall;
            b->plant((void *)s0, b->plant_user[plant]);
        }
        batch_encode<T><<<grid_for(a.count * mb * k * le), kThreads, 0, s0>>>(a, le);
        batch_check<T><<<grid_for(a.count * mb * n * lc), kThreads, 0, s0>>>(a, lc);
        batch_recompute<T><<<a.count < 512 ? (unsigned int)a.count : 512u, kThreads, 0, s0>>>(a);
    }
    report_meta rm;
    rm.checks = (uint64_t)(count * mb * n);
    rm.type = "SDCZ"[caller == BLASFT_TYPE_S ? 0 : caller == BLASFT_TYPE_D ? 1
                     : caller == BLASFT_TYPE_C ? 2 : 3];
    rm.routine = g.routine ? g.routine : "gpu_gemm_batched";
    rm.on_error = p->on_error;
    rm.row0 = 0;
    rm.col0 = 0;
    rm.bs = p->block_size;
    rm.gemms = (int)count;
    rm.matrix = -1;
    return enqueue_report(ctx, slot, rm, cnt);
}

/* BLASFT_PROMOTE (S and C batches, as for one such GEMM: gpu_promoted_gemm.cu): the chunk's
 * operands as double copies in their stored layouts (compact), C's too where beta may be nonzero,
 * and scalars in device memory as doubles into sc[0..1]. F: float or float2, D: double or
 * double2. */
template <typename D> D host_el(double re, double im);
template <> double host_el<double>(double re, double) { return re; }
template <> double2 host_el<double2>(double re, double im) { return make_double2(re, im); }

template <typename F, typename D> __device__ __forceinline__ D widen(F x)
{
    const double2 v = el(x);
    return make_el<D>(v.x, v.y);
}

template <typename F, typename D>
__global__ void __launch_bounds__(kThreads) promote_in(batch_args<F> a, D *ad, D *bd, D *cd,
                                                       bool copy_c, D *sc)
{
    const int64_t ra = a.ta ? a.k : a.m, rb = a.tb ? a.n : a.k;
    const int64_t na = a.m * a.k, nb = a.k * a.n, nc = copy_c ? a.m * a.n : 0;
    const int64_t per = na + nb + nc, total = per * a.count;
    const int64_t tid = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (tid == 0 && a.alpha_p) {
        sc[0] = widen<F, D>(*a.alpha_p);
        sc[1] = widen<F, D>(*a.beta_p);
    }
    for (int64_t e = tid; e < total; e += (int64_t)gridDim.x * blockDim.x) {
        const uint32_t g = (uint32_t)e / (uint32_t)per;
        uint32_t r = (uint32_t)e - g * (uint32_t)per;
        if (r < na) {
            const uint32_t j = r / (uint32_t)ra, i = r - j * (uint32_t)ra;
            ad[g * na + r] = widen<F, D>(mat_a(a, g)[i + j * a.lda]);
        } else if ((r -= (uint32_t)na) < nb) {
            const uint32_t j = r / (uint32_t)rb, i = r - j * (uint32_t)rb;
            bd[g * nb + r] = widen<F, D>(mat_b(a, g)[i + j * a.ldb]);
        } else {
            r -= (uint32_t)nb;
            const uint32_t j = r / (uint32_t)a.m, i = r - j * (uint32_t)a.m;
            cd[g * nc + r] = widen<F, D>(mat_c(a, g)[i + j * a.ldc]);
        }
    }
}

/* the checked (and corrected) double results rounded once into the caller's C */
template <typename F, typename D>
__global__ void __launch_bounds__(kThreads) promote_out(batch_args<F> a, const D *cd)
{
    const int64_t per = a.m * a.n, total = per * a.count;
    for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < total;
         e += (int64_t)gridDim.x * blockDim.x) {
        const uint32_t g = (uint32_t)e / (uint32_t)per, r = (uint32_t)e - g * (uint32_t)per;
        const uint32_t j = r / (uint32_t)a.m, i = r - j * (uint32_t)a.m;
        const double2 v = el(cd[e]);
        mat_c(a, g)[i + j * a.ldc] = make_el<F>(v.x, v.y);
    }
}

/* An S (C) batch computed as a D (Z) batch of double copies in a buffer of the context's,
 * checked at double resolution and rounded once into C, chunk by chunk. 0, -2 on a CUDA/cuBLAS
 * error, 1 where the copies' buffer cannot be had (the batch then runs natively), -1 where the
 * checks' cannot (matrix by matrix). */
template <typename F, typename D>
int run_promoted(blasft_gpu_ctx *ctx, const blasft_gpu_batch *b, const blasft_gpu_params *p,
                 bool capturing)
{
    const blasft_gpu_gemm &g = b->g;
    const bool on_dev = g.scalars_on_device != 0;
    batch_args<F> src = args_of<F>(b);
    const bool copy_c = on_dev || scalar_nonzero(g.type, g.beta);
    const int64_t m = g.m, n = g.n, k = g.k, count = b->count;
    const size_t per = sizeof(D) * (size_t)(m * k + k * n + m * n);
    int64_t chunk = (int64_t)(kChunkBytes / per);
    chunk = chunk < 1 ? 1 : chunk < count ? chunk : count; /* elements below 2^31, as above */
    const size_t a_at = gk_align(2 * sizeof(D));
    const size_t b_at = a_at + gk_align(sizeof(D) * (size_t)(chunk * m * k));
    const size_t c_at = b_at + gk_align(sizeof(D) * (size_t)(chunk * k * n));
    const size_t need = c_at + gk_align(sizeof(D) * (size_t)(chunk * m * n));
    /* host scalars in double: read as the GEMM is enqueued */
    D alpha_d = D(), beta_d = D();
    if (!on_dev) {
        float f[2] = {0.0f, 0.0f};
        memcpy(f, g.alpha, sizeof(F));
        alpha_d = host_el<D>(f[0], f[1]);
        memcpy(f, g.beta, sizeof(F));
        beta_d = host_el<D>(f[0], f[1]);
    }
    /* the D (Z) batch of `cnt` matrices on the copies at w (scalars there where on the device) */
    const auto promoted = [&](char *w, int64_t cnt) {
        D *sc = (D *)w;
        blasft_gpu_batch d;
        memset(&d, 0, sizeof d);
        d.g = g;
        d.g.type = promoted_type(g.type);
        d.g.a = w ? w + a_at : nullptr;
        d.g.lda = src.ta ? k : m;
        d.g.b = w ? w + b_at : nullptr;
        d.g.ldb = src.tb ? n : k;
        d.g.c = w ? w + c_at : nullptr;
        d.g.ldc = m;
        d.g.alpha = on_dev ? (const void *)sc : (const void *)&alpha_d;
        d.g.beta = on_dev ? (const void *)(sc + 1) : (const void *)&beta_d;
        d.count = cnt;
        d.stride_a = m * k;
        d.stride_b = k * n;
        d.stride_c = m * n;
        return d;
    };
    /* under capture: no buffer of either kind to grow (capture_refuses), and the chunks' batch
     * buffer made now, so that no chunk's batch refuses after the copies are enqueued (at a
     * later chunk, after C is written) */
    if (capturing) {
        const blasft_gpu_batch probe = promoted(nullptr, chunk);
        if ((ctx->batch_promo && need > ctx->batch_promo_bytes) ||
            capture_refuses<D>(ctx, &probe, p) ||
            ensure_buf(ctx, &ctx->batch_ws, &ctx->batch_bytes, layout_of<D>(&probe, p).need,
                       nullptr))
            return -1;
    }
    /* a buffer of the batches' own: the single GEMMs' copies (ctx->promo) stay as a capture
     * prepared them (blasft_gpu_workspace_bytes) */
    const int have = ensure_buf(ctx, &ctx->batch_promo, &ctx->batch_promo_bytes, need, nullptr);
    if (have == -3) {
        static int once;
        blasft_log_once(&once, BLASFT_LOG_WARN,
                        "GPU: no device memory for %zu bytes of a batch's promoted copies: such "
                        "S and C batches run natively protected", need);
        return 1;
    }
    if (have)
        return have;
    char *w = (char *)ctx->batch_promo;
    D *sc = (D *)w, *ad = (D *)(w + a_at), *bd = (D *)(w + b_at), *cd = (D *)(w + c_at);
    const cudaStream_t s0 = ctx->s0;
    for (int64_t g0 = 0; g0 < count; g0 += chunk) {
        chunk_of(src, b, g0, count - g0 < chunk ? count - g0 : chunk);
        const int64_t elems = src.count * (m * k + k * n + (copy_c ? m * n : 0));
        promote_in<F, D><<<grid_for(elems), kThreads, 0, s0>>>(src, ad, bd, cd, copy_c, sc);
        blasft_gpu_batch d = promoted(w, src.count);
        /* planted faults go into the double copy (a float's bit of it, as for one promoted GEMM) */
        const int64_t left = b->nplants > g0 ? b->nplants - g0 : 0;
        d.nplants = (int)(left < src.count ? left : src.count);
        d.plant = b->plant;
        d.plant_user = d.nplants ? b->plant_user + g0 : nullptr;
        /* -1 (no buffer for the checks) only at the first chunk, before C is written */
        const int rc = run_batched<D>(ctx, &d, p, g.type, capturing, g0);
        if (rc)
            return rc;
        promote_out<F, D><<<grid_for(src.count * m * n), kThreads, 0, s0>>>(src, cd);
    }
    return launches_ok() ? 0 : -2;
}

} // namespace

int blasft_gpu_batch_fused(const blasft_gpu_batch *b, const blasft_gpu_params *p)
{
    const blasft_gpu_gemm &g = b->g;
    if (!p->batched || b->count < 2 || b->count > INT32_MAX)
        return 0;
    const bool cplx = g.type == BLASFT_TYPE_C || g.type == BLASFT_TYPE_Z;
    if (g.c_vector || g.prep_a || g.prep_b || g.m < 1 || g.n < 1 || g.k < 1 || g.k > kMaxK ||
        (double)g.m * (double)g.n * (double)g.k > kMaxMnk)
        return 0;
    if (b->a_arr && (!b->b_arr || !b->c_arr))
        return 0;
    /* strided C matrices that overlap (cuBLAS leaves the result undefined): checked together,
     * each matrix's check would see another's elements and "correct" them; matrix by matrix,
     * each is checked before the next writes */
    if (!b->a_arr && !strided_apart(g.m, g.n, g.ldc, b->stride_c, b->count))
        return 0;
    /* one matrix's copies (old C; promoted S: A, B and C in double) within four chunks' budget:
     * thin shapes of many elements (2^30 x 1 x 1) go matrix by matrix */
    if (8.0 * ((double)g.m * g.k + (double)g.k * g.n + (double)g.m * g.n) > 4.0 * kChunkBytes)
        return 0;
    /* alpha 0 in host memory: nothing to protect (C = beta C), as for one GEMM
     * (blasft_gpu_gemm_run: plain, counted unprotected) */
    if (!g.scalars_on_device && !scalar_nonzero(g.type, g.alpha))
        return 0;
    /* one matrix's copies in double counted per part */
    if (cplx && 16.0 * ((double)g.m * g.k + (double)g.k * g.n + (double)g.m * g.n) > 4.0 * kChunkBytes)
        return 0;
    if (!cb)
        return 0;
    switch (g.type) {
    case BLASFT_TYPE_S: /* promoted ones run as D batches */
        return cb->sgemm_strided && cb->sgemm_batched && cb->dgemm_strided && cb->dgemm_batched;
    case BLASFT_TYPE_D: return cb->dgemm_strided && cb->dgemm_batched;
    case BLASFT_TYPE_C:
        return cb->cgemm_strided && cb->cgemm_batched && cb->zgemm_strided && cb->zgemm_batched;
    case BLASFT_TYPE_Z: return cb->zgemm_strided && cb->zgemm_batched;
    default: return 0;
    }
}

int blasft_gpu_gemm_batched(blasft_gpu_ctx *ctx, const blasft_gpu_batch *b,
                            const blasft_gpu_params *p)
{
    if (!ctx || !b || !p || !blasft_gpu_batch_fused(b, p) || b->nplants > b->count ||
        (b->nplants && !b->plant))
        return -1;
    bool cap = false;
    if (const int rc = whole_call_entered(ctx, &cap))
        return rc;
    /* a planted fault by arrays reads its matrix's address back, which a capture cannot */
    if (cap && b->nplants && b->c_arr)
        return -1;
    const blasft_type t = b->g.type;
    if (t == BLASFT_TYPE_D)
        return run_batched<double>(ctx, b, p, t, cap);
    if (t == BLASFT_TYPE_Z)
        return run_batched<double2>(ctx, b, p, t, cap);
    /* S and C as one such GEMM would run: promoted where BLASFT_PROMOTE says so for the shape,
     * natively where it does not or where the copies' buffer cannot be had */
    if (blasft_gpu_promotes(t, b->g.m, b->g.n, b->g.k, p)) {
        const int rc = t == BLASFT_TYPE_S ? run_promoted<float, double>(ctx, b, p, cap)
                                          : run_promoted<float2, double2>(ctx, b, p, cap);
        if (rc != 1)
            return rc;
    }
    return t == BLASFT_TYPE_S ? run_batched<float>(ctx, b, p, t, cap)
                              : run_batched<float2>(ctx, b, p, t, cap);
}
