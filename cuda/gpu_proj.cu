/* PROJ thresholds on the GPU (docs/thresholds.md, "PROJ on the GPU"): the lite variant of the
 * host's PROJ for the column checksums of real data, with the reference computed here in
 * compensated double so that only cuBLAS's own rounding has to be bounded.
 *
 * K and C are the host's (BLASFT_PROJ_K = 8 projections, C = 0.25); the orders modelled are
 * sequential and 2-lane accumulation (the host adds 4 and 8 lanes for OpenBLAS's kernels).
 *
 * Per checksum vector u = (row block I of op(A), checksum w) and k index l (proj_prep):
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
#include "gpu_kernels.h"

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
    for (int x = threadIdx.x; x < R * len; x += blockDim.x) {
        const int r = x / len, i = x % len;
        w[r * bs + i] = r == 0 ? 1.0 : blasft_weight(g.wscheme, i, bs);
        /* the host's seeding: one stream per checksum vector */
        const uint64_t vs = g.pseed + (uint64_t)(I * R + r) * 0x2545f4914f6cdd1dULL;
        unsigned char b = 0;
        for (int q = 0; q < K; q++)
            if (blasft_proj_sign(vs, (uint64_t)(q * 1024 + i)) > 0.0)
                b |= (unsigned char)(1u << q);
        sgn[r * bs + i] = b;
    }
    __syncthreads();
    if (threadIdx.x < R * (K + 1)) {
        const int r = threadIdx.x / (K + 1), q = threadIdx.x % (K + 1);
        double s = 0.0;
        for (int i = 0; i < len; i++) {
            const double wi = w[r * bs + i];
            s += q < K ? ((sgn[r * bs + i] >> q) & 1 ? wi : -wi) : wi * wi;
        }
        if (q < K)
            ssum[r * K + q] = s;
        else
            wsum[r] = s;
    }
    __syncthreads();
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
                const double wi = w[r * bs + i], wa = wi * a;
                lo[r] += fma(wi, a, -wa); /* the product's rounding error, exactly */
                blasft_csum_add(&cs[r], wa);
                mw[r] = fma(wi, wa, mw[r]);
                pr[r] = fma(wa, wa, pr[r]);
                const unsigned char b = sgn[r * bs + i];
#pragma unroll
                for (int q = 0; q < K; q++)
                    sg[r][q] += (b >> q) & 1 ? wa : -wa;
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
                                   0.0, fabs(ref) + fabs(ad) + 2.0 * fabs(bo));
}

inline unsigned int cdiv(int64_t a, int64_t b) { return (unsigned int)((a + b - 1) / b); }

} // namespace

template <typename T> void gk_proj(const gk_gemm<T> &g, cudaStream_t st)
{
    if (g.m == 0 || g.n == 0 || g.k == 0)
        return;
    proj_prep<T><<<dim3((unsigned int)g.mb, cdiv(g.k, kPrepK)), kThreads, prep_smem(g.bs, g.r), st>>>(g);
    proj_scan<T><<<dim3(cdiv(g.n, kCols), cdiv((int64_t)g.r * g.mb, kVecs)), kCols * kVecs, 0, st>>>(g);
}

template void gk_proj<float>(const gk_gemm<float> &, cudaStream_t);
template void gk_proj<double>(const gk_gemm<double> &, cudaStream_t);
