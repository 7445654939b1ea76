/* PROJ thresholds on the GPU (docs/thresholds.md, "PROJ on the GPU"): the lite variant of the
 * host's PROJ for the column checksums of real data, with the reference computed here in
 * compensated double so that only cuBLAS's own rounding has to be bounded.
 *
 * Two implementations of the same model: the tensor-core walks (proj_prep_walk, proj_pack,
 * proj_walk; BLASFT_PROJ_GPU_K = 7 projections, C = 0.22; used where the build has sm_80 or
 * later) and, for older builds, the scalar scan below (proj_prep, proj_scan; the host's K = 8,
 * C = 0.25). The orders modelled are sequential and 2-lane accumulation (the host adds 4 and 8
 * lanes for OpenBLAS's kernels).
 *
 * The scan. Per checksum vector u = (row block I of op(A), checksum w) and k index l (proj_prep):
 *   mean_l = sum_i w_i^2 a_il / W,  W = sum_i w_i^2 (the w^2-weighted mean of the block's rows),
 *   prod_l = sum_i (w_i a_il)^2 (the products' rounding, no FMA assumed),
 *   enc_l  = sum_i w_i a_il as an unevaluated pair hi + lo (compensated: the reference's operand),
 *   g_ql   = sum_i r_qi w_i (a_il - mean_l), q < K, r_qi random signs drawn per GEMM.
 * Per (vector u, column j of op(B)) one walk along k (proj_scan) accumulates the energies of the
 * mean walk and of the K projected deviation walks, for sequential and 2-lane accumulation (lane
 * l mod 2), the products' energy and the reference dot product enc . b_j; the threshold is
 * blasft_proj_eps (abft_arith.h, shared with the host engine) of
 *   vd = max(sequential, 2-lane + 2 * ends) + products + 4 * last  (alpha, final addition).
 * Assumptions (stated in docs/thresholds.md): every rounding uniform within half an ulp and
 * mean-independent of the earlier ones; cuBLAS accumulates each element along k in one chain or
 * two interleaved lanes, or in split-K parts whose walks restart (energy below the chain's for
 * walks that do not reverse within a part); no TF32 (the engine's own handles, default math).
 * The order assumption holds for a block's energy, which averages many elements' walks and whose
 * projected part is inflated by 1/C; a block of fewer than blasft_proj_min_rows rows takes the
 * order-free bound instead (NORM's, Cauchy-Schwarz on every partial sum), as single elements'
 * walks in cuBLAS's own order exceeded the modelled ones (docs/thresholds.md). */
#include "blasft_gpu.h"
#include "gpu_kernels.h"

#include <atomic>
#include <climits>
#include <cuda_pipeline.h>
#include <cuda_fp16.h>
#include <mma.h>

/* The tensor-core path needs sm_80 (FP16, TF32 and FP64 MMA, __reduce_max_sync): in a build for an
 * older architecture its kernels trap, and gk_proj takes the scan there (walk_available). */
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
#define PROJ_TC 0
#else
#define PROJ_TC 1
#endif

extern "C" {
#include "abft/abft_arith.h"
}

namespace {

constexpr int K = BLASFT_PROJ_K;
static_assert(K + 4 == GK_PROJ_NV, "vector layout: mean, products, encoding hi and lo, projections");
static_assert(K <= 8, "proj_prep keeps the signs of a row in one byte");
constexpr int NV = GK_PROJ_NV;
constexpr int kThreads = 256;
constexpr int kPrepK = 32; /* k indices per CUDA block of proj_prep */
constexpr int kCols = 32;  /* columns j per CUDA block of proj_scan (one per lane) */
constexpr int kVecs = 8;   /* checksum vectors per CUDA block of proj_scan (one per warp) */
constexpr int kChunk = 32; /* k indices staged in shared memory at a time (even: lane = t & 1) */
/* exponents per checksum vector (gk_gemm::Pexp): the walk rows (mean, projections), products,
 * encoding */
constexpr int kExpKinds = GK_PROJ_EXP_KINDS;
static_assert(kExpKinds == 1 + BLASFT_PROJ_GPU_K + 2, "walk rows, products, encoding");
static_assert(BLASFT_PROJ_GPU_K + 1 == 8 && BLASFT_PROJ_GPU_K <= K,
              "proj_walk's rows: the mean and 7 projections (signs in one byte)");

/* A row block's weights w (R x bs), its rows' random signs for NQ projections (bit q of sgn,
 * the host's seeding: one stream per checksum vector) and, per checksum, the signed weight sums
 * ssum (R x NQ) and W = sum w^2 (wsum), a warp per sum. Every thread of the CUDA block calls it. */
template <int NQ>
__device__ void row_block_signs(uint64_t pseed, int wscheme, int bs, int R, int64_t I, int len,
                                double *w, unsigned char *sgn, double *ssum, double *wsum)
{
    for (int x = threadIdx.x; x < R * len; x += blockDim.x) {
        const int r = x / len, i = x % len;
        w[r * bs + i] = r == 0 ? 1.0 : blasft_weight(wscheme, i, bs);
        const uint64_t vs = pseed + (uint64_t)(I * R + r) * 0x2545f4914f6cdd1dULL;
        unsigned char b = 0;
        for (int q = 0; q < NQ; q++)
            if (blasft_proj_sign(vs, (uint64_t)(q * 1024 + i)) > 0.0)
                b |= (unsigned char)(1u << q);
        sgn[r * bs + i] = b;
    }
    __syncthreads();
    for (int wq = threadIdx.x >> 5; wq < R * (NQ + 1); wq += blockDim.x >> 5) {
        const int r = wq / (NQ + 1), q = wq % (NQ + 1);
        double s = 0.0;
        for (int i = threadIdx.x & 31; i < len; i += 32) {
            const double wi = w[r * bs + i];
            s += q < NQ ? ((sgn[r * bs + i] >> q) & 1 ? wi : -wi) : wi * wi;
        }
        for (int off = 16; off > 0; off >>= 1)
            s += __shfl_xor_sync(0xffffffffu, s, off);
        if ((threadIdx.x & 31) == 0) {
            if (q < NQ)
                ssum[r * NQ + q] = s;
            else
                wsum[r] = s;
        }
    }
    __syncthreads();
}

/* One element a of a block row with weight wi and sign bits b into a checksum vector's sums:
 * the encoding (compensated), the w^2-weighted mean's numerator, the products' weights and the
 * NQ signed sums. Returns w a. */
template <int NQ>
__device__ __forceinline__ double add_element(double wi, double a, unsigned char b, blasft_csum &cs,
                                              double &mw, double &pr, double *sg)
{
    const double wa = wi * a;
    blasft_csum_add(&cs, wa);
    mw = fma(wi, wa, mw);
    pr = fma(wa, wa, pr);
#pragma unroll
    for (int q = 0; q < NQ; q++)
        sg[q] += (b >> q) & 1 ? wa : -wa;
    return wa;
}

/* Shared memory of proj_prep: weights R x bs, sign sums R x K, W per checksum, sign bits. */
size_t prep_smem(int bs, int r) { return (size_t)8 * (r * bs + r * K + r) + (size_t)r * bs; }

template <typename T> __global__ void __launch_bounds__(kThreads) proj_prep(gk_gemm<T> g)
{
    extern __shared__ double sm[];
    const int bs = g.bs, R = g.r;
    const int64_t I = blockIdx.x, i0 = I * bs;
    const int len = (int)(g.m - i0 < bs ? g.m - i0 : bs);
    double *w = sm, *ssum = sm + R * bs, *wsum = ssum + R * K;
    unsigned char *sgn = (unsigned char *)(wsum + R);
    row_block_signs<K>(g.pseed, g.wscheme, bs, R, I, len, w, sgn, ssum, wsum);
    const int wp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int64_t kend = (int64_t)(blockIdx.y + 1) * kPrepK < g.k ? (int64_t)(blockIdx.y + 1) * kPrepK : g.k;
    for (int64_t l = (int64_t)blockIdx.y * kPrepK + wp; l < kend; l += kThreads / 32) {
        double mw[2] = {0.0, 0.0}, pr[2] = {0.0, 0.0}, lo[2] = {0.0, 0.0}, sg[2][K];
        blasft_csum cs[2] = {{0.0, 0.0}, {0.0, 0.0}};
        for (int r = 0; r < 2; r++)
            for (int q = 0; q < K; q++)
                sg[r][q] = 0.0;
        for (int i = lane; i < len; i += 32) {
            const double a = g.ta == 'N' ? (double)g.A[(i0 + i) + l * g.lda]
                                         : (double)g.A[l + (i0 + i) * g.lda];
            for (int r = 0; r < R; r++) {
                const double wi = w[r * bs + i];
                const double wa = add_element<K>(wi, a, sgn[r * bs + i], cs[r], mw[r], pr[r], sg[r]);
                lo[r] += fma(wi, a, -wa); /* the product's rounding error, exactly */
            }
        }
        for (int off = 16; off > 0; off >>= 1)
            for (int r = 0; r < R; r++) {
                mw[r] += __shfl_xor_sync(0xffffffffu, mw[r], off);
                pr[r] += __shfl_xor_sync(0xffffffffu, pr[r], off);
                lo[r] += __shfl_xor_sync(0xffffffffu, lo[r], off);
                blasft_csum o;
                o.s = __shfl_xor_sync(0xffffffffu, cs[r].s, off);
                o.c = __shfl_xor_sync(0xffffffffu, cs[r].c, off);
                blasft_csum_add(&cs[r], o.s);
                blasft_csum_add(&cs[r], o.c);
#pragma unroll
                for (int q = 0; q < K; q++)
                    sg[r][q] += __shfl_xor_sync(0xffffffffu, sg[r][q], off);
            }
        if (lane == 0)
            for (int r = 0; r < R; r++) {
                double *out = g.Pvec + ((I * R + r) * g.k + l) * NV;
                const double W = wsum[r], mean = W > 0.0 ? mw[r] / W : 0.0;
                const double hi = cs[r].s + cs[r].c;
                out[0] = mean;
                out[1] = pr[r];
                out[2] = hi;
                out[3] = ((cs[r].s - hi) + cs[r].c) + lo[r];
#pragma unroll
                for (int q = 0; q < K; q++)
                    out[4 + q] = sg[r][q] - mean * ssum[r * K + q];
            }
    }
}

/* The walks of one (vector, column): lane L of the 2-lane order takes step t when t % 2 == L; the
 * sequential partial sums are the two lanes' sum. */
struct walk {
    double m[2], y[2][K];
    double em_seq, ey_seq, em_lane, ey_lane, prod, enc, lo;
    double xx, pe; /* sum x^2 and sum of the product weights: the order-free bound */
    blasft_csum dot;
};

template <int L> __device__ __forceinline__ void step(walk &s, double x, const double *v)
{
    s.m[L] = fma(v[0], x, s.m[L]);
    const double ms = s.m[0] + s.m[1];
    s.em_seq = fma(ms, ms, s.em_seq);
    s.em_lane = fma(s.m[L], s.m[L], s.em_lane);
#pragma unroll
    for (int q = 0; q < K; q++) {
        s.y[L][q] = fma(v[4 + q], x, s.y[L][q]);
        const double ys = s.y[0][q] + s.y[1][q];
        s.ey_seq = fma(ys, ys, s.ey_seq);
        s.ey_lane = fma(s.y[L][q], s.y[L][q], s.ey_lane);
    }
    s.prod = fma(v[1] * x, x, s.prod);
    s.xx = fma(x, x, s.xx);
    s.pe += v[1];
    const double p = v[2] * x;
    s.lo += fma(v[2], x, -p) + v[3] * x;
    blasft_csum_add(&s.dot, p);
    s.enc = fma(p, p, s.enc);
}

/* blasft_underflow_eps for column checksum r of a block (sum |w| <= sqrt(BS sum w^2)) */
template <typename T>
__device__ double proj_underflow_eps(const gk_gemm<T> &g, int r, int ragged)
{
    const double uu = ldexp(1.0, -gk_el<T>::t);
    return blasft_underflow_eps(blasft_gamma((double)g.k + 2.0, uu), uu,
                                sqrt((double)g.bs * g.w2[0][r][ragged]),
                                fabs((double)alpha_of(g)));
}

template <typename T> __global__ void __launch_bounds__(kCols *kVecs) proj_scan(gk_gemm<T> g)
{
    __shared__ double xs[kChunk][kCols + 1];
    __shared__ double vs[kVecs][kChunk * NV];
    const int lane = threadIdx.x & 31, wp = threadIdx.x >> 5;
    const int64_t j0 = (int64_t)blockIdx.x * kCols, v0 = (int64_t)blockIdx.y * kVecs;
    const int64_t nvec = (int64_t)g.r * g.mb, j = j0 + lane, u = v0 + wp;
    const bool live = j < g.n && u < nvec;
    walk s{};
    for (int64_t k0 = 0; k0 < g.k; k0 += kChunk) {
        const int kc = (int)(g.k - k0 < kChunk ? g.k - k0 : kChunk);
        for (int x = threadIdx.x; x < kChunk * kCols; x += blockDim.x) {
            /* coalesced along op(B)'s storage order */
            const int jj = g.tb == 'N' ? x / kChunk : x % kCols;
            const int t = g.tb == 'N' ? x % kChunk : x / kCols;
            double b = 0.0;
            if (t < kc && j0 + jj < g.n)
                b = g.tb == 'N' ? (double)g.B[(k0 + t) + (j0 + jj) * g.ldb]
                                : (double)g.B[(j0 + jj) + (k0 + t) * g.ldb];
            xs[t][jj] = b;
        }
        for (int x = threadIdx.x; x < kVecs * kChunk * NV; x += blockDim.x) {
            const int vv = x / (kChunk * NV), o = x % (kChunk * NV);
            const int64_t uu = v0 + vv;
            vs[vv][o] = uu < nvec && o < kc * NV ? g.Pvec[(uu * g.k + k0) * NV + o] : 0.0;
        }
        __syncthreads();
        if (live) {
            const double *v = vs[wp];
            int t = 0;
            for (; t + 1 < kc; t += 2) {
                step<0>(s, xs[t][lane], v + t * NV);
                step<1>(s, xs[t + 1][lane], v + (t + 1) * NV);
            }
            if (t < kc)
                step<0>(s, xs[t][lane], v + t * NV);
        }
        __syncthreads();
    }
    if (!live)
        return;
    const int64_t I = u / g.r;
    const int r = (int)(u % g.r), ragged = I == g.mb - 1;
    const double W = g.w2[0][r][ragged], ck = 1.0 / (K * BLASFT_PROJ_C);
    double ys = 0.0, y0 = 0.0, y1 = 0.0;
#pragma unroll
    for (int q = 0; q < K; q++) {
        const double t = s.y[0][q] + s.y[1][q];
        ys += t * t;
        y0 += s.y[0][q] * s.y[0][q];
        y1 += s.y[1][q] * s.y[1][q];
    }
    const double ms = s.m[0] + s.m[1];
    const double e_seq = W * s.em_seq + ck * s.ey_seq;
    /* two lanes: their sums of squares, plus L (L - 1) = 2 times their final partial sums
     * squared (the one addition joining them) */
    const double ends = W * (s.m[0] * s.m[0] + s.m[1] * s.m[1]) + ck * (y0 + y1);
    const double e_lane = W * s.em_lane + ck * s.ey_lane + 2.0 * ends;
    const double last = W * ms * ms + ck * ys;
    double vd = fmax(e_seq, e_lane) + s.prod + 4.0 * last;
    /* a block of too few rows (blasft_proj_min_rows): the order-free bound terms(k) ||b_j||^2
     * sum_i w_i^2 ||a_i||^2 (Cauchy-Schwarz on every partial sum). Seen on the H200 without it:
     * single-row blocks of 129 x 4099 x 2049 at up to 10 sigma of the modelled orders, and
     * 4-row blocks of heavy-tailed data whose projections had all but vanished */
    if (g.m - I * g.bs < blasft_proj_min_rows(K))
        vd = fmax(vd, blasft_norm_terms((double)g.k, 1) * s.xx * s.pe);
    const double al = (double)alpha_of(g), be = (double)beta_of(g);
    const int64_t e = u + j * nvec;
    /* beta = 0: the old C is not read (it may hold NaN) */
    double bo = 0.0, osq = 0.0;
    if (g.Pold && be != 0.0) {
        bo = be * g.Pold[e];
        osq = g.wmax2[0][r][ragged] * g.Ccs_sq[I + j * g.mb];
    }
    const double ad = al * (s.dot.s + (s.dot.c + s.lo)), ref = ad + bo;
    g.Pref[e] = ref;
    g.Ccs_eps[e] = blasft_proj_eps(gk_el<T>::t, (double)g.k, fabs(al), fabs(be), vd, osq, s.enc,
                                   0.0, fabs(ref) + fabs(ad) + 2.0 * fabs(bo)) +
                   proj_underflow_eps(g, r, ragged);
}

#if PROJ_TC
/* d += a b: m16n8k8, TF32 inputs, FP32 accumulation */
__device__ __forceinline__ void mma_tf32(float (&d)[4], uint4 a, uint2 b)
{
    asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a.x), "r"(a.y), "r"(a.z), "r"(a.w), "r"(b.x), "r"(b.y));
}
/* d += a b: m16n8k16, FP16 inputs, FP32 accumulation */
__device__ __forceinline__ void mma_f16(float (&d)[4], uint4 a, uint2 b)
{
    asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a.x), "r"(a.y), "r"(a.z), "r"(a.w), "r"(b.x), "r"(b.y));
}
/* d += a b: m8n8k4 in FP64 */
__device__ __forceinline__ void mma_f64(double (&d)[2], double a, double b)
{
    asm("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%0,%1}, {%2}, {%3}, {%0,%1};"
        : "+d"(d[0]), "+d"(d[1])
        : "d"(a), "d"(b));
}
#endif

/* proj_prep for the tensor-core walks: what proj_walk uses (kWalkNV doubles per vector and k):
 * the mean, the products, the encoding (summed compensated) and BLASFT_PROJ_GPU_K projections,
 * with each kind's largest exponent per vector for proj_pack's scales. A warp takes 8 k indices
 * across the block's rows, 4 rows at a time: the mean's numerator and the projections are one
 * FP64 MMA (m8n8k4) of the 8 rows [w^2; r_q w] (in shared memory in the MMA's operand order)
 * with those 4 x 8 elements of A, which each lane also adds to its column's products and
 * compensated encoding; the 4 lanes of a column then meet by shuffles. */
constexpr int KG = BLASFT_PROJ_GPU_K;
[[maybe_unused]] constexpr int kWalkNV = 3 + KG; /* mean, products, encoding, projections */
static_assert(KG + 1 == 8, "the mean's weights and the projections' are the 8 rows of an MMA");
constexpr int kPrepWarps = 8, kPrepT = kPrepWarps * 32;
constexpr int kPrepL = 8 * kPrepWarps;         /* k indices per CUDA block and round */
[[maybe_unused]] constexpr int kPrepBatch = 8; /* row quads loaded together per lane */

/* Shared memory of proj_prep_walk: weights R x bs, sign sums R x KG, W per checksum, the MMA
 * operand R x (quads x 32), the MMA's results per warp (R x 8 x 8), the exponents, sign bits. */
size_t prep_walk_smem(int bs, int r)
{
    const size_t quads = (size_t)(bs + 3) / 4;
    return 8 * ((size_t)r * bs + (size_t)r * KG + r + (size_t)r * quads * 32 + (size_t)kPrepWarps * r * 64) +
           4 * (size_t)r * GK_PROJ_EXP_KINDS + (size_t)r * bs;
}

template <typename T> __global__ void __launch_bounds__(kPrepT, 3) proj_prep_walk(gk_gemm<T> g)
{
#if PROJ_TC
    extern __shared__ double sm[];
    const int bs = g.bs, R = g.r;
    const int64_t I = blockIdx.x, i0 = I * bs;
    const int len = (int)(g.m - i0 < bs ? g.m - i0 : bs), nq = (len + 3) / 4;
    const int qs = (bs + 3) / 4; /* quads per checksum in the operand */
    double *w = sm, *ssum = w + R * bs, *wsum = ssum + R * KG, *G = wsum + R;
    double *Cw = G + R * qs * 32; /* [warp][checksum][row][column] */
    int *exs = (int *)(Cw + kPrepWarps * R * 64);
    unsigned char *sgn = (unsigned char *)(exs + R * kExpKinds);
    row_block_signs<KG>(g.pseed, g.wscheme, bs, R, I, len, w, sgn, ssum, wsum);
    /* the operand: lane (row gg, quad slot t) of quad kq holds row gg of [w^2; r_q w] at
     * element i = 4 kq + t (zero past the block) */
    for (int x = threadIdx.x; x < R * nq * 32; x += kPrepT) {
        const int r = x / (nq * 32), kq = (x / 32) % nq, gg = (x % 32) / 4, i = 4 * kq + x % 4;
        double v = 0.0;
        if (i < len) {
            const double wi = w[r * bs + i];
            v = gg == 0 ? wi * wi : ((sgn[r * bs + i] >> (gg - 1)) & 1 ? wi : -wi);
        }
        G[(r * qs + kq) * 32 + x % 32] = v;
    }
    for (int x = threadIdx.x; x < R * kExpKinds; x += kPrepT)
        exs[x] = INT_MIN;
    __syncthreads();
    const int warp = threadIdx.x >> 5, ln = threadIdx.x & 31, gq = ln / 4, tq = ln % 4;
    const bool an = g.ta == 'N';
    double *C = Cw + warp * R * 64;
    /* the block's operand serves gridDim.y groups of kPrepL k indices in turn */
    for (int64_t y = blockIdx.y; y * kPrepL < g.k; y += gridDim.y) {
        const int64_t l0 = y * kPrepL + warp * 8, l = l0 + gq; /* this lane's column */
        const bool lok = l < g.k;
        double c[2][2][2] = {}; /* [checksum][chain][element] */
        double pr[2] = {0.0, 0.0};
        blasft_csum cs[2] = {{0.0, 0.0}, {0.0, 0.0}};
        /* this lane's elements: rows i0 + 4 kq + tq of column l, a quad apart */
        const int64_t qstep = an ? 4 : 4 * g.lda;
        const T *ap = g.A + (lok ? (an ? (i0 + tq) + l * g.lda : l + (i0 + tq) * g.lda) : 0);
        for (int kb = 0; kb < nq; kb += kPrepBatch, ap += kPrepBatch * qstep) {
            /* kPrepBatch loads in flight before their sums */
            double a[kPrepBatch];
#pragma unroll
            for (int b = 0; b < kPrepBatch; b++)
                a[b] = lok && 4 * (kb + b) + tq < len ? (double)ap[b * qstep] : 0.0;
#pragma unroll
            for (int b = 0; b < kPrepBatch; b++) {
                const int kq = kb + b, i = 4 * kq + tq;
                if (kq >= nq)
                    break;
#pragma unroll
                for (int r = 0; r < 2; r++) {
                    if (r >= R)
                        break;
                    mma_f64(c[r][b & 1], G[(r * qs + kq) * 32 + ln], a[b]);
                    /* (past the block, w holds the next checksum's weights) */
                    const double wa = (i < len ? w[r * bs + i] : 0.0) * a[b];
                    blasft_csum_add(&cs[r], wa);
                    pr[r] = fma(wa, wa, pr[r]);
                }
            }
        }
#pragma unroll
        for (int r = 0; r < 2; r++) {
            if (r >= R)
                break;
            /* the column's 4 lanes meet; the MMA's rows gq, columns 2 tq, 2 tq + 1 to C */
            for (int off = 1; off < 4; off <<= 1) {
                pr[r] += __shfl_xor_sync(0xffffffffu, pr[r], off);
                const double s = __shfl_xor_sync(0xffffffffu, cs[r].s, off);
                const double cc = __shfl_xor_sync(0xffffffffu, cs[r].c, off);
                blasft_csum_add(&cs[r], s);
                blasft_csum_add(&cs[r], cc);
            }
            C[r * 64 + gq * 8 + 2 * tq] = c[r][0][0] + c[r][1][0];
            C[r * 64 + gq * 8 + 2 * tq + 1] = c[r][0][1] + c[r][1][1];
        }
        __syncwarp();
#pragma unroll
        for (int r = 0; r < 2; r++) {
            if (r >= R)
                break;
            int ex[kExpKinds];
#pragma unroll
            for (int q = 0; q < kExpKinds; q++)
                ex[q] = INT_MIN;
            if (tq == 0 && lok) {
                double *out = g.Pvec + ((I * R + r) * g.k + l) * kWalkNV;
                const double W = wsum[r], mean = W > 0.0 ? C[r * 64 + gq] / W : 0.0;
                const double hi = cs[r].s + cs[r].c;
                double kinds[kExpKinds];
                out[0] = kinds[0] = mean;
                out[1] = kinds[1 + KG] = pr[r];
                out[2] = kinds[2 + KG] = hi;
#pragma unroll
                for (int q = 0; q < KG; q++)
                    out[3 + q] = kinds[1 + q] = C[r * 64 + (q + 1) * 8 + gq] - mean * ssum[r * KG + q];
#pragma unroll
                for (int q = 0; q < kExpKinds; q++)
                    if (kinds[q] != 0.0 && isfinite(kinds[q]))
                        ex[q] = ilogb(kinds[q]);
            }
            /* the largest exponent of each kind: the warp's, then the block's */
#pragma unroll
            for (int q = 0; q < kExpKinds; q++) {
                const int e = __reduce_max_sync(0xffffffffu, ex[q]);
                if (ln == 0 && e != INT_MIN)
                    atomicMax(&exs[r * kExpKinds + q], e);
            }
        }
        __syncwarp(); /* C is reused by the next group */
    }
    /* one atomic per block and kind */
    __syncthreads();
    for (int x = threadIdx.x; x < R * kExpKinds; x += kPrepT)
        if (exs[x] != INT_MIN)
            atomicMax(&g.Pexp[(I * R + x / kExpKinds) * kExpKinds + x % kExpKinds], exs[x]);
#else
    (void)g;
    __trap();
#endif
}

/* ---- The tensor-core walks (sm_80 and later; proj_scan above is the fallback) ----
 *
 * Per checksum vector u the walks of WR = 8 rows (the mean, BLASFT_PROJ_GPU_K projections), the
 * squares rows (products, encoding^2) and the encoding are packed per group of VG vectors
 * (proj_pack), scaled per row by a power of two (walks FP16, squares TF32), and laid out in the
 * order in which the MMA instructions take their operands: a thread loads its fragment with one
 * 16- or 8-byte access, and a stage of KS k indices is one contiguous copy. One CUDA block of
 * proj_walk takes VG vectors x CT columns of op(B) along all of k, a stage at a time:
 *  - walks (FP16 MMA, FP32 accumulation; kHalfExp): lane L of the 2-lane order takes the stage's
 *    k indices of parity L in one MMA per column fragment; after each stage the lanes' partial
 *    sums a0, a1 and the sequential one a0 + a1 are squared into their energies. The energies
 *    are the trapezoid rule over the stages (KC = KS = 32 steps; 16 per lane), the first stage
 *    the partial one (k is padded in front); what varies inside a stage is covered by the
 *    products' energy, which the threshold adds;
 *  - squares (TF32 MMA): sum_l prod_l b_l^2 and sum_l (enc_l b_l)^2;
 *  - the reference enc . b_j (FP64 MMA): runs of 8 products (32 beyond k = 2048), summed in two
 *    chains of half a run that are then added, go into a compensated sum (blasft_csum_add), so
 *    its error is that of those runs' partial sums, at most 28 (304) times the encoding's
 *    products energy by Cauchy-Schwarz, within the 36 (528) of 8-term (32-term) walks that the
 *    threshold carries; so does the encoding's own rounding (enc_lo, under u |enc| per term),
 *    which is left out.
 * The sums over k are order-free except the walks, so all three take the k indices of a stage
 * in the walks' order. The block's end turns the energies into PROJ's thresholds as proj_scan
 * does. */
constexpr int WR = 1 + BLASFT_PROJ_GPU_K; /* walk rows per vector */
constexpr int CT = 32;                    /* columns per CUDA block */
constexpr int KS = 32;                    /* k per stage of the copy pipeline */
[[maybe_unused]] constexpr int KC = KS;   /* k per energy sample: one per stage */
/* k groups of 8 per stage (one TF32 MMA of the squares each, two FP64 MMAs) and column
 * fragments (8 columns) */
constexpr int kKg = KS / 8, kNf = CT / 8;
static_assert(KS % 16 == 0, "a stage holds whole pairs of the lanes' k groups");
/* A group of VG checksum vectors per CUDA block of proj_walk: 32, or 16 where the GEMM has no
 * more (a row of blocks of n = 4096 at BS 256), so that no warp walks empty rows. Row fragments
 * of the walks and the squares (16 rows) and of the reference (8 rows, FP64). Both take 16
 * warps, so that each scheduler has four to hide latency with: in a group of 32 a warp takes one
 * walk row fragment across the columns (kNw = kNf column fragments), one squares fragment and
 * one reference fragment; in a group of 16 (kWpf = 2 warps per walk row fragment) half the
 * columns and one squares or one reference fragment (kDual false). With 8 warps, one per walk
 * row fragment, the group of 16 took 170 us at D 4096 (now 153) against 818 us for eight times
 * its work at D 8192. */
template <int G> struct wcfg {
    static constexpr int VG = G, kWalkWarps = 16;
    static constexpr int kWalkRows = VG * WR, kSqRows = VG * 2;
    static constexpr int kWf = kWalkRows / 16, kSf = kSqRows / 16, kHf = VG / 8;
    static constexpr int kWpf = kWalkWarps / kWf, kNw = kNf / kWpf;
    static constexpr bool kDual = kSf * kNf == kWalkWarps;
    static_assert(kWf * kWpf == kWalkWarps && kNw * kWpf == kNf, "walk fragments spread evenly");
    static_assert(kSf == kHf && (kDual || 2 * kSf * kNf == kWalkWarps),
                  "a squares and a reference fragment per warp, or one of them");
    /* one stage of a packed group, in bytes: walks [lane L][kWf][lane][8] half, squares
     * [kg][kSf][lane][4] float, encoding [kg][half][kHf][lane] double */
    static constexpr int kPackWalk = 2 * kWf * 32 * 16, kPackSq = kKg * kSf * 32 * 16,
                         kPackHi = kKg * 2 * kHf * 32 * 8;
    static constexpr int kPackStage = kPackWalk + kPackSq + kPackHi;
    static_assert(kPackStage % (16 * kWalkWarps * 32) == 0,
                  "a stage's copy: the same 16-byte pieces per thread");
    /* op(B)'s elements per thread and stage */
    static constexpr int kNB = KS * CT / (kWalkWarps * 32);
    static_assert(kNB * kWalkWarps * 32 == KS * CT, "op(B)'s tile spread evenly");
};
/* bytes per (vector, k) in a packed group, the same for both group sizes */
constexpr int kPackBytes = wcfg<32>::kPackStage / (KS * 32);
static_assert(kPackBytes * KS * 16 == wcfg<16>::kPackStage && kPackBytes == 2 * WR + 4 * 2 + 8,
              "walks as half, squares as float, the encoding (hi) as double");
/* The walks run in FP16 with FP32 accumulation, both operands scaled by powers of two to a
 * largest magnitude in [2^kHalfExp, 2^(kHalfExp + 1)): FP16 keeps TF32's 11 significant bits
 * down to 2^-28 of the largest value (its smallest normal is 2^-14), and what lies below changes
 * a product by at most 2^-40 of the largest product, far under the products' energy that the
 * threshold adds. */
[[maybe_unused]] constexpr int kHalfExp = 14;

int64_t walk_kpad(int64_t k) { return (k + KS - 1) / KS * KS; }

/* Where k index t of a stage sits in the squares' TF32 and the reference's FP64 operands (the
 * walks' order, hslot below, split in groups of 8): k group kg = 2 (t / 16) + t % 2, and inside
 * the group kappa = (t % 16) / 2, which is the TF32 fragment's column tig = kappa % 4 of its
 * first (half 0) or second (half 1) register pair. The FP64 MMA (k = 4) takes the halves one
 * after the other. */
struct kslot {
    int kg, tig, half;
};
[[maybe_unused]] __device__ inline kslot kslot_of(int t)
{
    const int kap = (t % 16) / 2;
    return {2 * (t / 16) + t % 2, kap % 4, kap / 4};
}
/* m16n8k8 TF32 A operand: the float index of row m (of nfrag fragments) at k slot ks */
[[maybe_unused]] __device__ inline int a_pos(kslot ks, int m, int nfrag)
{
    return ((ks.kg * nfrag + m / 16) * 32 + (m % 8) * 4 + ks.tig) * 4 + (m % 16) / 8 + 2 * ks.half;
}
/* The walks' m16n8k16 FP16 MMA: lane L = t % 2 takes the stage's k indices of its parity in one
 * MMA, as its column c16 = 8 (t / 16) + (t % 16) / 2; a register holds the columns 2 j, 2 j + 1. */
struct hslot {
    int L, c16;
};
[[maybe_unused]] __device__ inline hslot hslot_of(int t) { return {t % 2, 8 * (t / 16) + (t % 16) / 2}; }
/* the A operand's half index of row m (of nfrag fragments) */
[[maybe_unused]] __device__ inline int ah_pos(hslot hs, int m, int nfrag)
{
    return ((hs.L * nfrag + m / 16) * 32 + (m % 8) * 4 + (hs.c16 % 8) / 2) * 8 +
           ((m % 16) / 8 + 2 * (hs.c16 / 8)) * 2 + hs.c16 % 2;
}
/* the squares' TF32 and the reference's FP64 B operands, [kg][kNf][lane][2]: the index of
 * column c at k slot ks */
[[maybe_unused]] __device__ inline int b_pos(kslot ks, int c)
{
    return ((ks.kg * kNf + c / 8) * 32 + (c % 8) * 4 + ks.tig) * 2 + ks.half;
}
/* the walks' FP16 B operand's half index of column c (of kNf fragments) */
[[maybe_unused]] __device__ inline int bh_pos(hslot hs, int c)
{
    return ((hs.L * kNf + c / 8) * 32 + (c % 8) * 4 + (hs.c16 % 8) / 2) * 4 + (hs.c16 / 8) * 2 + hs.c16 % 2;
}

/* a scale exponent; none recorded (no nonzero value): 0 */
[[maybe_unused]] __device__ inline int exp_or0(int e) { return e < -2000 ? 0 : e; }

template <typename T, int G> __global__ void proj_pack(gk_gemm<T> g, int64_t kpad)
{
#if PROJ_TC
    using C = wcfg<G>;
    constexpr int VG = G;
    const int64_t nvec = (int64_t)g.r * g.mb, ng = (nvec + VG - 1) / VG, pad = kpad - g.k;
    const int64_t x = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (x >= ng * VG * kpad)
        return;
    const int64_t lp = x % kpad, s = (x / kpad) % VG, grp = x / (kpad * VG), u = grp * VG + s;
    const int64_t l = lp - pad;
    __half w[WR] = {};
    float sq[2] = {};
    double hi = 0.0;
    if (u < nvec && l >= 0) {
        const double *v = g.Pvec + (u * g.k + l) * kWalkNV;
        const int *e = g.Pexp + u * kExpKinds;
        for (int r = 0; r < WR; r++)
            w[r] = __float2half_rn((float)ldexp(v[r == 0 ? 0 : 2 + r], kHalfExp - exp_or0(e[r])));
        sq[0] = nvcuda::wmma::__float_to_tf32((float)ldexp(v[1], -exp_or0(e[WR])));
        const double hs = ldexp(v[2], -exp_or0(e[WR + 1]));
        sq[1] = nvcuda::wmma::__float_to_tf32((float)(hs * hs));
        hi = v[2];
    }
    char *stage = g.Ppack + (grp * kpad * VG * kPackBytes) + (lp / KS) * C::kPackStage;
    __half *pw = (__half *)stage;
    float *psq = (float *)(stage + C::kPackWalk);
    double *phi = (double *)(stage + C::kPackWalk + C::kPackSq);
    const kslot ks = kslot_of((int)(lp % KS));
    const hslot hs = hslot_of((int)(lp % KS));
    for (int r = 0; r < WR; r++)
        pw[ah_pos(hs, (int)s * WR + r, C::kWf)] = w[r];
    for (int q = 0; q < 2; q++)
        psq[a_pos(ks, (int)s * 2 + q, C::kSf)] = sq[q];
    phi[((ks.kg * 2 + ks.half) * C::kHf + s / 8) * 32 + (s % 8) * 4 + ks.tig] = hi;
#else
    (void)g;
    (void)kpad;
    __trap();
#endif
}


/* Shared memory of proj_walk: two stages of the packed operands and two of op(B)'s tile
 * converted (scaled TF32 squares and double, each [kg][kNf][lane][2], and scaled FP16, [L][kNf]
 * [lane][4], in the B operands' order); at the end (reused) the fragments' values. */
constexpr int kConvOne = kKg * kNf * 32 * 2; /* elements of one converted kind */
constexpr size_t kConv = (size_t)kConvOne * (2 + 4 + 8);
template <int G> constexpr size_t walk_smem()
{
    const size_t pipe = 2 * (wcfg<G>::kPackStage + kConv), end = 4 * 2 * wcfg<G>::kWalkRows * CT;
    return pipe > end ? pipe : end;
}

/* TI: MMAs per compensated addition of the reference: 2 (runs of 8 products, at most 36 times
 * the products' energy by Cauchy-Schwarz) up to k = 2048, where that term can weigh; beyond, 8
 * (runs of 32, 528 times), which the data's own walk outweighs (gk_proj chooses by k) */
template <typename T, int TI, int G>
__global__ void __launch_bounds__(wcfg<G>::kWalkWarps * 32, 1) proj_walk(gk_gemm<T> g, int64_t kpad)
{
    static_assert(TI == 2 || TI == 8, "runs of 8 or 32 products");
#if PROJ_TC
    using C = wcfg<G>;
    constexpr int VG = G, kWalkWarps = C::kWalkWarps, kWalkRows = C::kWalkRows, kSqRows = C::kSqRows;
    constexpr int kWf = C::kWf, kSf = C::kSf, kHf = C::kHf, kPackStage = C::kPackStage, kNB = C::kNB;
    constexpr int kNw = C::kNw;
    extern __shared__ __align__(128) unsigned char wsm[];
    __shared__ int cexp[CT];
    __shared__ double cscale[CT];
    const int warp = threadIdx.x >> 5, tl = threadIdx.x & 31;
    const int64_t j0 = (int64_t)blockIdx.x * CT, grp = blockIdx.y;
    const int64_t nvec = (int64_t)g.r * g.mb, pad = kpad - g.k;
    if (threadIdx.x < CT) {
        const int64_t j = j0 + threadIdx.x;
        /* op(B)'s column maximum (top-p lists; with block lists the block's envelope bounds it) */
        double mx = 0.0;
        if (j < g.n)
            mx = g.block_lists ? g.tEb.val[(j / g.bs) * GK_PMAX] : g.tB.val[j * GK_PMAX];
        cexp[threadIdx.x] = mx > 0.0 && isfinite(mx) ? ilogb(mx) : 0;
        cscale[threadIdx.x] = ldexp(1.0, -cexp[threadIdx.x]);
    }
    const unsigned char *src = (const unsigned char *)g.Ppack + grp * kpad * VG * kPackBytes;
    auto issue = [&](int64_t st) { /* the packed stage st, one contiguous copy */
        unsigned char *dst = wsm + (st & 1) * kPackStage;
        const unsigned char *s = src + st * kPackStage;
#pragma unroll
        for (int i = 0; i < kPackStage / (16 * kWalkWarps * 32); i++) {
            const int x = (threadIdx.x + i * kWalkWarps * 32) * 16;
            __pipeline_memcpy_async(dst + x, s + x, 16);
        }
        __pipeline_commit();
    };
    auto conv = [&](int64_t st) { return wsm + 2 * kPackStage + (st & 1) * kConv; };
    /* this thread's kNB elements of op(B) per stage and their places in the converted tile. op(B)
     * = B: a warp reads 32 consecutive k of a column. op(B) = B^T: a warp reads 4 consecutive
     * columns at 8 k indices t = 16 h + 2 kappa + p (kappa = lane / 4; h, p, the column group by
     * warp and element), so that its conversion stores, which follow the k slots (b_pos, bh_pos),
     * fall in distinct banks, not 16 to a bank as with 32 columns of one k */
    static_assert(kWalkWarps * kNB == 32, "a warp and element per (column group, h, p)");
    const bool bn = g.tb == 'N';
    const int64_t bstep = bn ? KS : KS * g.ldb;
    int64_t bidx[kNB];
    int bt[kNB], slot[kNB], hslot_b[kNB], bcol[kNB];
    bool jok[kNB];
#pragma unroll
    for (int i = 0; i < kNB; i++) {
        const int x = threadIdx.x + i * kWalkWarps * 32, y = warp + i * kWalkWarps;
        const int t = bn ? x % KS : 16 * (y & 1) + 2 * (tl / 4) + ((y >> 1) & 1);
        const int cc = bn ? x / KS : 4 * (y >> 2) + tl % 4;
        const int64_t j = j0 + cc;
        jok[i] = j < g.n;
        bidx[i] = bn ? (t - pad) + j * g.ldb : j + (t - pad) * g.ldb;
        bt[i] = t;
        bcol[i] = cc;
        slot[i] = b_pos(kslot_of(t), cc);
        hslot_b[i] = bh_pos(hslot_of(t), cc);
    }
    auto load_b = [&](int64_t st, T (&v)[kNB]) {
#pragma unroll
        for (int i = 0; i < kNB; i++)
            v[i] = jok[i] && st * KS + bt[i] >= pad ? g.B[bidx[i] + st * bstep] : T(0);
    };
    auto store_b = [&](int64_t st, const T (&v)[kNB]) {
        double *Bd = (double *)conv(st);
        float *Bq = (float *)(Bd + kConvOne);
        __half *Bh = (__half *)(Bq + kConvOne);
#pragma unroll
        for (int i = 0; i < kNB; i++) {
            const double b = (double)v[i];
            const float bs = (float)(b * cscale[bcol[i]]);
            Bh[hslot_b[i]] = __float2half_rn(bs * (float)(1 << kHalfExp));
            Bq[slot[i]] = nvcuda::wmma::__float_to_tf32(bs * bs);
            Bd[slot[i]] = b;
        }
    };

    float acc[2][kNw][4] = {}, es[kNw][4] = {}, el[kNw][4] = {}, sqa[4] = {};
    blasft_csum ref[2] = {{0.0, 0.0}, {0.0, 0.0}}; /* the reference, compensated */
    const int64_t nst = kpad / KS;
    /* the first stage holds the data's first k1 = KC - pad indices (pad < KS zeros in front):
     * the trapezoid rule weighs its sample (k1 + KC) / (2 KC) */
    const float wt0 = (float)(2 * KC - pad) / (2.0f * KC);
    /* this warp's walk row fragment wf and first column fragment nw0; its squares and reference
     * fragments (sf, nf1), or one of them (sq_warp) */
    const int wf = warp / C::kWpf, nw0 = (warp % C::kWpf) * kNw;
    const int task = C::kDual ? warp : warp % (kWalkWarps / 2), sf = task / kNf, nf1 = task % kNf;
    const bool sq_warp = C::kDual || warp < kWalkWarps / 2, ref_warp = C::kDual || !sq_warp;
    T nb[kNB];
    __syncthreads(); /* cscale */
    issue(0);
    load_b(0, nb);
    store_b(0, nb);
    /* one stage; the first and the last apart (FIRST, !MORE), so that a middle stage is one
     * basic block in which the compiler interleaves the walks, energies and reference */
    auto stage = [&](int64_t st, bool first, bool more) {
        __pipeline_wait_prior(0);
        /* stage st copied and converted by all; stage st - 1's buffers free */
        __syncthreads();
        if (more) {
            issue(st + 1);
            load_b(st + 1, nb);
        }
        const unsigned char *pk = wsm + (st & 1) * kPackStage;
        const double *Bd = (const double *)conv(st);
        const float *Bq = (const float *)(Bd + kConvOne);
        const __half *Bh = (const __half *)(Bq + kConvOne);
        /* walks: one FP16 MMA per lane L of the 2-lane order and column fragment */
#pragma unroll
        for (int L = 0; L < 2; L++) {
            const uint4 a = *(const uint4 *)(pk + ((L * kWf + wf) * 32 + tl) * 16);
#pragma unroll
            for (int nf = 0; nf < kNw; nf++)
                mma_f16(acc[L][nf], a, *(const uint2 *)(Bh + ((L * kNf + nw0 + nf) * 32 + tl) * 4));
        }
        /* the energies' samples; the first stage's weight apart, so that the others take one
         * addition and three FMAs per element */
        if (first)
#pragma unroll
            for (int nf = 0; nf < kNw; nf++)
#pragma unroll
                for (int i = 0; i < 4; i++) {
                    const float x0 = acc[0][nf][i], x1 = acc[1][nf][i], sm = x0 + x1;
                    es[nf][i] = wt0 * sm * sm;
                    el[nf][i] = wt0 * (x0 * x0 + x1 * x1);
                }
        else
#pragma unroll
            for (int nf = 0; nf < kNw; nf++)
#pragma unroll
                for (int i = 0; i < 4; i++) {
                    const float x0 = acc[0][nf][i], x1 = acc[1][nf][i], sm = x0 + x1;
                    es[nf][i] = fmaf(sm, sm, es[nf][i]);
                    el[nf][i] = fmaf(x0, x0, fmaf(x1, x1, el[nf][i]));
                }
        /* squares */
        if (sq_warp)
#pragma unroll
            for (int kg = 0; kg < kKg; kg++)
                mma_tf32(sqa, *(const uint4 *)(pk + C::kPackWalk + ((kg * kSf + sf) * 32 + tl) * 16),
                         *(const uint2 *)(Bq + ((kg * kNf + nf1) * 32 + tl) * 2));
        /* the reference: runs of TI MMAs (4 products each) summed, then added compensated */
        if (ref_warp) {
            const double *Ah = (const double *)(pk + C::kPackWalk + C::kPackSq);
            /* two chains (the halves h), joined per run: shorter dependences, and partial sums
             * of at most half a run each, within the run's bound */
            double c[2][2] = {};
#pragma unroll
            for (int kg = 0; kg < kKg; kg++) {
                const double2 b = *(const double2 *)(Bd + ((kg * kNf + nf1) * 32 + tl) * 2);
#pragma unroll
                for (int h = 0; h < 2; h++)
                    mma_f64(c[h], Ah[((kg * 2 + h) * kHf + sf) * 32 + tl], h ? b.y : b.x);
                if ((kg * 2 + 2) % TI == 0) {
#pragma unroll
                    for (int i = 0; i < 2; i++) {
                        blasft_csum_add(&ref[i], c[0][i] + c[1][i]);
                        c[0][i] = c[1][i] = 0.0;
                    }
                }
            }
        }
        if (more)
            store_b(st + 1, nb);
    };
    if (nst == 1) {
        stage(0, true, false);
    } else {
        stage(0, true, true);
        for (int64_t st = 1; st + 1 < nst; st++)
            stage(st, false, true);
        stage(nst - 1, false, false);
    }
    __syncthreads(); /* the buffers are reused below */

    /* the end: fragments to shared memory, one kind at a time, then one thread per (vector,
     * column). An m16n8 accumulator's element i sits at row tl / 4 + 8 (i / 2), column
     * 2 (tl % 4) + i % 2 of its fragment; an m8n8's at row tl / 4, column 2 (tl % 4) + i. */
    float *E0 = (float *)wsm, *E1 = E0 + kWalkRows * CT; /* [row][CT] */
    constexpr int kPer = VG * CT / (kWalkWarps * 32);
    double seq[kPer], lane[kPer], ends[kPer], last[kPer];
    auto unscale = [&](int64_t u, int r, int cc) { /* the walks' operands' scales, squared */
        return ldexp(1.0, 2 * (exp_or0(g.Pexp[u * kExpKinds + r]) + cexp[cc] - 2 * kHalfExp));
    };
    const double ck = 1.0 / (BLASFT_PROJ_GPU_K * BLASFT_PROJ_GPU_C);
    auto coef = [&](int64_t u, int r) {
        const int64_t I = u / g.r;
        return r == 0 ? g.w2[0][u % g.r][I == g.mb - 1] : ck;
    };
    /* two kinds of walk accumulators to E0 and E1, then each thread's live (vector, column) pairs */
    auto store_two = [&](const float (&x)[kNw][4], const float (&y)[kNw][4]) {
#pragma unroll
        for (int nf = 0; nf < kNw; nf++)
#pragma unroll
            for (int i = 0; i < 4; i++) {
                const int at = (wf * 16 + tl / 4 + 8 * (i / 2)) * CT + (nw0 + nf) * 8 + 2 * (tl % 4) + i % 2;
                E0[at] = x[nf][i];
                E1[at] = y[nf][i];
            }
        __syncthreads();
    };
    auto each_pair = [&](auto fn) {
        for (int p = 0; p < kPer; p++) {
            const int x = threadIdx.x + p * kWalkWarps * 32, s = x / CT, cc = x % CT;
            const int64_t u = grp * VG + s;
            if (u < nvec)
                fn(p, s, cc, u);
        }
        __syncthreads();
    };
    for (int p = 0; p < kPer; p++)
        seq[p] = lane[p] = ends[p] = last[p] = 0.0;
    store_two(acc[0], acc[1]);
    each_pair([&](int p, int s, int cc, int64_t u) {
        for (int r = 0; r < WR; r++) {
            const double x0 = E0[(s * WR + r) * CT + cc], x1 = E1[(s * WR + r) * CT + cc];
            const double sc = coef(u, r) * unscale(u, r, cc);
            /* the trapezoid rule's last half sample */
            seq[p] -= sc * KC * 0.5 * (x0 + x1) * (x0 + x1);
            lane[p] -= sc * (KC / 2) * 0.5 * (x0 * x0 + x1 * x1);
            ends[p] += sc * (x0 * x0 + x1 * x1);
            last[p] += sc * (x0 + x1) * (x0 + x1);
        }
    });
    store_two(es, el);
    each_pair([&](int p, int s, int cc, int64_t u) {
        for (int r = 0; r < WR; r++) {
            const double sc = coef(u, r) * unscale(u, r, cc);
            seq[p] += sc * KC * (double)E0[(s * WR + r) * CT + cc];
            lane[p] += sc * (KC / 2) * (double)E1[(s * WR + r) * CT + cc];
        }
    });
    /* squares and the reference */
    float *Q = (float *)wsm;                  /* [kSqRows][CT] */
    double *H = (double *)(Q + kSqRows * CT); /* [VG][CT] */
    double *Lo = H + VG * CT;
    if (sq_warp)
#pragma unroll
        for (int i = 0; i < 4; i++)
            Q[(sf * 16 + tl / 4 + 8 * (i / 2)) * CT + nf1 * 8 + 2 * (tl % 4) + i % 2] = sqa[i];
    if (ref_warp)
#pragma unroll
        for (int i = 0; i < 2; i++) {
            const int at = (sf * 8 + tl / 4) * CT + nf1 * 8 + 2 * (tl % 4) + i;
            H[at] = ref[i].s;
            Lo[at] = ref[i].c;
        }
    __syncthreads();
    const double al = (double)alpha_of(g), be = (double)beta_of(g);
    for (int p = 0; p < kPer; p++) {
        const int x = threadIdx.x + p * kWalkWarps * 32, s = x / CT, cc = x % CT;
        const int64_t u = grp * VG + s, j = j0 + cc;
        if (u >= nvec || j >= g.n)
            continue;
        const int64_t I = u / g.r;
        const int r = (int)(u % g.r), ragged = I == g.mb - 1;
        const int *ex = g.Pexp + u * kExpKinds;
        const double prod = ldexp((double)Q[(s * 2) * CT + cc], exp_or0(ex[WR]) + 2 * cexp[cc]);
        const double enc = ldexp((double)Q[(s * 2 + 1) * CT + cc], 2 * (exp_or0(ex[WR + 1]) + cexp[cc]));
        /* two lanes: their energies plus L (L - 1) = 2 times their final partial sums squared */
        double vd = fmax(seq[p], lane[p] + 2.0 * ends[p]) + prod + 4.0 * last[p];
        /* a block of too few rows (blasft_proj_min_rows): NORM's order-free bound terms(k)
         * ||b_j||^2 sum_i w_i^2 ||a_i||^2, both factors bounded through the maxima (k max^2) */
        if (g.m - I * g.bs < blasft_proj_min_rows(BLASFT_PROJ_GPU_K)) {
            const double xx = (double)g.k * ldexp(1.0, 2 * cexp[cc] + 2);
            const double pe = (double)g.k * ldexp(1.0, exp_or0(ex[WR]) + 1);
            vd = fmax(vd, blasft_norm_terms((double)g.k, 1) * xx * pe);
        }
        const int64_t e = u + j * nvec;
        double bo = 0.0, osq = 0.0;
        if (g.Pold && be != 0.0) {
            bo = be * g.Pold[e];
            osq = g.wmax2[0][r][ragged] * g.Ccs_sq[I + j * g.mb];
        }
        const double ad = al * (H[s * CT + cc] + Lo[s * CT + cc]), ref = ad + bo;
        g.Pref[e] = ref;
        g.Ccs_eps[e] = blasft_proj_eps(gk_el<T>::t, (double)g.k, fabs(al), fabs(be), vd, osq,
                                       (TI == 8 ? 528.0 : 36.0) * enc, 0.0,
                                       fabs(ref) + fabs(ad) + 2.0 * fabs(bo)) +
                       proj_underflow_eps(g, r, ragged);
    }
#else
    __trap(); /* gk_proj launches it only where it was compiled for sm_80 or later */
#endif
}

/* Whether the tensor-core kernels run on the current device (compiled for sm_80 or later), with
 * their shared-memory limits raised there: once per device context, as the runtime keeps those
 * per context (a device reset drops them); concurrent first calls repeat the same idempotent
 * settings. */
bool walk_available()
{
    /* per device: 0 not asked yet, else 2 (1 + the context's id) + 1 if available */
    static std::atomic<uint64_t> known[64];
    int dev = 0;
    if (cudaGetDevice(&dev) != cudaSuccess)
        return false;
    const uint64_t asked = 2 * (1 + blasft_gpu_context_id());
    std::atomic<uint64_t> *slot = dev >= 0 && dev < 64 ? &known[dev] : nullptr;
    if (slot) {
        const uint64_t v = slot->load(std::memory_order_acquire);
        if ((v & ~(uint64_t)1) == asked)
            return v & 1;
    }
    cudaFuncAttributes fa;
    bool ok = cudaFuncGetAttributes(&fa, proj_walk<double, 8, 32>) == cudaSuccess && fa.ptxVersion >= 80 &&
              fa.binaryVersion >= 80;
    /* prep: two checksums of BS 1024 need more than the default 48 KB */
    const int prep_max = (int)prep_walk_smem(1024, 2);
    const auto smem = [](const void *f, size_t bytes) {
        return cudaFuncSetAttribute(f, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)bytes) ==
               cudaSuccess;
    };
    const auto walks = [&](auto f2, auto f8, size_t bytes) {
        return smem((const void *)f2, bytes) && smem((const void *)f8, bytes);
    };
    ok = ok && walks(proj_walk<double, 2, 32>, proj_walk<double, 8, 32>, walk_smem<32>()) &&
         walks(proj_walk<float, 2, 32>, proj_walk<float, 8, 32>, walk_smem<32>()) &&
         walks(proj_walk<double, 2, 16>, proj_walk<double, 8, 16>, walk_smem<16>()) &&
         walks(proj_walk<float, 2, 16>, proj_walk<float, 8, 16>, walk_smem<16>()) &&
         cudaFuncSetAttribute(proj_prep_walk<double>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                              prep_max) == cudaSuccess &&
         cudaFuncSetAttribute(proj_prep_walk<float>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                              prep_max) == cudaSuccess;
    if (slot)
        slot->store(asked + (ok ? 1 : 0), std::memory_order_release);
    return ok;
}

inline unsigned int cdiv(int64_t a, int64_t b) { return (unsigned int)((a + b - 1) / b); }

} // namespace

template <typename T> void gk_proj(const gk_gemm<T> &g, cudaStream_t st)
{
    if (g.m == 0 || g.n == 0 || g.k == 0)
        return;
    const int64_t nvec = (int64_t)g.r * g.mb;
    if (g.Ppack && g.Pexp && walk_available()) {
        /* INT_MIN-like: no exponent recorded yet */
        cudaMemsetAsync(g.Pexp, 0x80, sizeof(int) * GK_PROJ_EXP_KINDS * nvec, st);
        /* about four groups of kPrepL k indices per CUDA block: its setup (signs, operand) is
         * worth about one */
        /* the kernel strides over y: at most CUDA's 65535 (k of 2^24 and more) */
        const unsigned int gy = (unsigned int)std::min<int64_t>(cdiv(cdiv(g.k, kPrepL), 4), 65535);
        proj_prep_walk<T><<<dim3((unsigned int)g.mb, gy), kPrepT,
                            prep_walk_smem(g.bs, g.r), st>>>(g);
        const int64_t kpad = walk_kpad(g.k);
        /* groups of 32 vectors, or one of 16 where there are no more */
        const auto walk = [&](auto cfg) {
            constexpr int G = decltype(cfg)::VG;
            const int64_t ng = (nvec + G - 1) / G;
            proj_pack<T, G><<<cdiv(ng * G * kpad, 256), 256, 0, st>>>(g, kpad);
            const dim3 grid(cdiv(g.n, CT), (unsigned int)ng);
            if (g.k > 2048)
                proj_walk<T, 8, G><<<grid, wcfg<G>::kWalkWarps * 32, walk_smem<G>(), st>>>(g, kpad);
            else
                proj_walk<T, 2, G><<<grid, wcfg<G>::kWalkWarps * 32, walk_smem<G>(), st>>>(g, kpad);
        };
        if (nvec <= 16)
            walk(wcfg<16>{});
        else
            walk(wcfg<32>{});
    } else {
        proj_prep<T><<<dim3((unsigned int)g.mb, cdiv(g.k, kPrepK)), kThreads, prep_smem(g.bs, g.r), st>>>(g);
        proj_scan<T><<<dim3(cdiv(g.n, kCols), cdiv(nvec, kVecs)), kCols * kVecs, 0, st>>>(g);
    }
}

bool gk_proj_fits(int64_t nvec, int64_t k)
{
    /* the grids' y extents: the walk's groups of 32 vectors, the scan's vectors and k chunks */
    if (walk_available())
        return (nvec + 31) / 32 <= 65535;
    return cdiv(k, kPrepK) <= 65535 && cdiv(nvec, kVecs) <= 65535;
}

int64_t gk_proj_pack_bytes(int64_t nvec, int64_t k)
{
    /* groups of 32 (a group of 16 takes less) */
    return (nvec + 31) / 32 * 32 * walk_kpad(k) * kPackBytes;
}

template void gk_proj<float>(const gk_gemm<float> &, cudaStream_t);
template void gk_proj<double>(const gk_gemm<double> &, cudaStream_t);
