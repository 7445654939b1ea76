/* GPU ABFT kernels, C's side: C's checksums, the thresholds (PEA), the comparison, and the fault
 * path (row checksums on demand, locate, correct, recompute), with their launchers. Every formula
 * comes from src/abft/abft_arith.h, shared with the host engine. */
#include "gpu_sum_steps.cuh"

namespace {

/* y of the PEA bound from two top-p lists (method.md 2, "PEA max p"). */
template <typename T>
__device__ double pea_y(const gk_gemm<T> &g, gk_topp ta, int64_t va, gk_topp tb, int64_t vb)
{
    double av[GK_PMAX], bv[GK_PMAX];
    int64_t ap[GK_PMAX], bp[GK_PMAX];
    int na = 0, nb = 0;
    for (int i = 0; i < g.p; i++) {
        if (ta.pos[va * GK_PMAX + i] >= 0) {
            av[na] = ta.val[va * GK_PMAX + i];
            ap[na++] = ta.pos[va * GK_PMAX + i];
        }
        if (tb.pos[vb * GK_PMAX + i] >= 0) {
            bv[nb] = tb.val[vb * GK_PMAX + i];
            bp[nb++] = tb.pos[vb * GK_PMAX + i];
        }
    }
    int full = g.k <= g.p;
    return blasft_pea_y(av, ap, na, full, bv, bp, nb, full);
}

/* PEA threshold of one checksum element, the host engine's model (abft_threshold.c) with the
 * reference computed by cuBLAS in the data precision instead of double:
 *  - the reference dot product (y_ref from the checksum vector's and the data vector's lists),
 *    plus its own final rounding;
 *  - the recomputed sum of the GEMM's rounded elements: W2 sigma(y_env)^2, y_env from the block's
 *    envelope list;
 *  - the alpha/beta scaling and final additions (eq. 6.4/6.5), with the old C's sum of squares
 *    bounded by max w^2 * sum c_old^2;
 *  - our compensated sums, 2^-53 |checksum|. */
template <typename T>
__device__ double pea_eps(const gk_gemm<T> &g, double y_ref, double y_env, int side, int w, int ragged,
                          double osq, double refsq)
{
    constexpr int t = gk_el<T>::t;
    /* complex data: 2k real products per part (host engine: nn = k P) */
    const double nn = (double)(g.k * gk_el<T>::P), ur = ldexp(1.0, -BLASFT_T_DOUBLE);
    const T alpha = alpha_of(g), beta = beta_of(g);
    double aa = abs1(alpha), bb = abs1(beta);
    int scaled = !is_one(alpha) || !(is_zero(beta) || is_one(beta));
    double w2 = g.w2[side][w][ragged], wmax2 = g.wmax2[side][w][ragged];
    double sr = blasft_pea_sigma(nn, y_ref, t, 0), sd = blasft_pea_sigma(nn, y_env, t, 0);
    /* our encodings are rounded to the data type before cuBLAS multiplies them: one more
     * rounding per product term of the reference, and one of the old C's checksum, bounded by
     * Cauchy-Schwarz |sum w c| <= sqrt(W2 * sum c^2) */
    const double u = ldexp(1.0, -t);
    double vd = sr * sr + sd * sd * w2 + nn * (y_ref * u) * (y_ref * u);
    double c2 = w2 * (nn * y_env) * (nn * y_env);
    double sqb = 2.0 * (aa * aa * c2 + bb * bb * wmax2 * osq);
    /* refsq: the reference's squared modulus (the sum over its parts) */
    double var_add = (blasft_blas_var_add(1.0, t) * sqb + blasft_blas_var_add(1.0, t) * refsq) *
                         (scaled ? 3.0 : 1.0) +
                     ur * ur * 2.0 * refsq + bb * bb * u * u * w2 * osq;
    return blasft_pea_eps(g.omega, aa, vd, var_add) +
           blasft_underflow_eps(blasft_gamma(nn + 2.0, u), u, sqrt((double)g.bs * w2), aa);
}

/* A reference that is not finite (NaN or Inf in the operands or scalars, or a checksum beyond
 * the double range) cannot judge C: such a check does not flag, as the host engine leaves a
 * GEMM with non-finite inputs unprotected. A finite reference against a NaN or Inf in C's
 * checksum flags (a fault, or an overflow that the second tier judges). Except with alpha 0 (in
 * device memory: a host alpha of 0 never gets here): BLAS leaves the product out, cuBLAS
 * multiplies 0 by it, and the flag has the block recomputed without it (scaled_element). */
__device__ __forceinline__ bool over(double ref, double rec, double eps, bool alpha0)
{
    return (alpha0 || isfinite(ref)) && blasft_over(ref - rec, eps);
}

/* Checksum element e's reference (type T) against its recomputed parts: any part over eps flags
 * (the host engine's rule: one threshold for every part). */
template <typename T, typename Rf>
__device__ __forceinline__ bool over_el(const gk_gemm<T> &g, Rf ref, const double *rec, int64_t e,
                                        double eps)
{
    const bool alpha0 = is_zero(alpha_of(g));
    bool f = false;
#pragma unroll
    for (int q = 0; q < gk_el<Rf>::P; q++)
        f = f || over(part_of(ref, q), rec[e * gk_el<Rf>::P + q], eps, alpha0);
    return f;
}
template <typename T> __device__ __forceinline__ double sq_el(T x)
{
    double s = 0.0;
#pragma unroll
    for (int q = 0; q < gk_el<T>::P; q++)
        s += part_of(x, q) * part_of(x, q);
    return s;
}

/* Flags the block (I, J) of a checksum element over its threshold; each block is listed once. */
template <typename T> __device__ __forceinline__ void flag_block(const gk_gemm<T> &g, int64_t I, int64_t J)
{
    if (atomicExch(&g.tile_flag[I + J * g.mb], 1) == 0)
        g.tile_list[atomicAdd(&g.cnt->tile_count, 1u)] = (int)(I + J * g.mb);
}

/* The threshold of checksum element e (side 0: column checksums, index into Ccs_*; side 1: row
 * checksums, index into Crs_*), stored in Ccs_eps / Crs_eps (the correction reads it). */
template <typename T> __device__ double checksum_eps(const gk_gemm<T> &g, int side, int64_t e)
{
    if (side == 0) {
        if (g.Pref)
            return g.Ccs_eps[e]; /* gk_proj's */
        int64_t u = e % (g.r * g.mb), j = e / (g.r * g.mb), bi = u / g.r;
        /* beta = 0 (device pointer mode: known only here): the old C may hold NaN */
        double osq = g.Ccs_sq && !is_zero(beta_of(g)) ? g.Ccs_sq[bi + j * g.mb] : 0.0;
        /* block lists: op(B)'s column j is bounded by its column block's envelope */
        gk_topp tb = g.block_lists ? g.tEb : g.tB;
        int64_t vb = g.block_lists ? j / g.bs : j;
        double eps = pea_eps(g, pea_y(g, g.tAc, u, tb, vb), pea_y(g, g.tEa, bi, tb, vb), 0,
                             (int)(u % g.r), bi == g.mb - 1, osq, sq_el(g.Ccs_ref[e]));
        g.Ccs_eps[e] = eps;
        return eps;
    }
    int64_t i = e % g.m, v = e / g.m, bj = v / g.r;
    double osq = g.Crs_sq && !is_zero(beta_of(g)) ? g.Crs_sq[i + bj * g.m] : 0.0;
    gk_topp ta = g.block_lists ? g.tEa : g.tA;
    int64_t va = g.block_lists ? i / g.bs : i;
    double eps = pea_eps(g, pea_y(g, ta, va, g.tBc, v), pea_y(g, ta, va, g.tEb, bj), 1,
                         (int)(v % g.r), bj == g.nb - 1, osq, sq_el(g.Crs_ref[e]));
    g.Crs_eps[e] = eps;
    return eps;
}

/* Column checksum e against its threshold: with PROJ its reference is gk_proj's double. */
template <typename T> __device__ __forceinline__ bool col_over(const gk_gemm<T> &g, int64_t e, double eps)
{
    if constexpr (gk_el<T>::P == 1)
        if (g.Pref)
            return over(g.Pref[e], g.Ccs_rec[e], eps, is_zero(alpha_of(g)));
    return over_el(g, g.Ccs_ref[e], g.Ccs_rec, e, eps);
}

/* One thread per checksum element, both sides (rows on demand: the column side): threshold and
 * comparison, for the check passes that do not compare themselves. */
template <typename T> __global__ void __launch_bounds__(kThreads) compare_kernel(gk_gemm<T> g)
{
    pdl_release();
    pdl_wait();
    int64_t e = (int64_t)blockIdx.x * kThreads + threadIdx.x;
    int64_t ncol = g.r * g.mb * g.n, nrow = g.m * g.r * g.nb;
    if (e < ncol) {
        if (col_over(g, e, checksum_eps(g, 0, e)))
            flag_block(g, e % (g.r * g.mb) / g.r, e / (g.r * g.mb) / g.bs);
    } else if (!g.rows_on_demand && e < ncol + nrow) {
        e -= ncol;
        if (over_el(g, g.Crs_ref[e], g.Crs_rec, e, checksum_eps(g, 1, e)))
            flag_block(g, e % g.m / g.bs, e / g.m / g.r);
    }
}

template <typename T> __device__ __forceinline__ T opA(const gk_gemm<T> &g, int64_t i, int64_t l)
{
    return g.ta == 'N' ? g.A[i + l * g.lda] : g.A[l + i * g.lda];
}
template <typename T> __device__ __forceinline__ T opB(const gk_gemm<T> &g, int64_t l, int64_t j)
{
    return g.tb == 'N' ? g.B[l + j * g.ldb] : g.B[j + l * g.ldb];
}

/* C(i, j) = alpha * op(A)(i,:) op(B)(:,j) + beta * Cold(i,j) computed again, the dot product in
 * double ('C': the stored element's conjugate). alpha's binary exponent is moved into the
 * products (alpha = m 2^e with 1 <= |m| < 2; each term a b is formed as a (b 2^e) or (a 2^e) b,
 * the product times m): exact where nothing leaves the range, so the same value as alpha times
 * the dot product, but a tiny alpha over huge data (or a huge alpha over tiny data) no longer
 * overflows (underflows) in the partial sums while the result is in range. The power of two goes
 * to the larger factor of a term where it scales down and to the smaller where it scales up, so
 * that it neither drops a subnormal factor's bits nor overflows a large one. */
struct dot_scale {
    double pow; /* 2^e */
    double xr, xi; /* alpha's mantissa part m = alpha / 2^e */
};

template <typename T> __device__ dot_scale alpha_split(const gk_gemm<T> &g)
{
    const T alpha = alpha_of(g);
    const double xr = part_of(alpha, 0), xi = im_of(alpha);
    const double top = fmax(fabs(xr), fabs(xi));
    int e = 1;
    if (top > 0.0 && isfinite(top))
        frexp(top, &e);
    e -= 1; /* the mantissa part in [1, 2): scaled terms no larger than alpha times them */
    return dot_scale{ldexp(1.0, e), ldexp(xr, -e), ldexp(xi, -e)};
}

/* Term l of C(i, j)'s dot product, scaled by sc, in double into (dr, di), and |a_il| |b_lj|
 * (moduli as |re| + |im|, scaled alike) into ms, for the worst-case rounding bound. */
template <typename T>
__device__ __forceinline__ void dot_term(const gk_gemm<T> &g, const dot_scale &sc, int64_t i,
                                         int64_t j, int64_t l, double &dr, double &di, double &ms)
{
    const double sa = g.ta == 'C' ? -1.0 : 1.0, sb = g.tb == 'C' ? -1.0 : 1.0;
    T a = opA(g, i, l), b = opB(g, l, j);
    double ar = part_of(a, 0), ai = sa * im_of(a), br = part_of(b, 0), bi = sb * im_of(b);
    const double ma = fabs(ar) + fabs(ai), mb = fabs(br) + fabs(bi);
    if ((sc.pow < 1.0) == (ma >= mb)) {
        ar *= sc.pow;
        ai *= sc.pow;
    } else {
        br *= sc.pow;
        bi *= sc.pow;
    }
    ms = fma(fabs(ar) + fabs(ai), fabs(br) + fabs(bi), ms);
    dr = fma(ar, br, dr);
    if (gk_el<T>::P == 2) {
        dr = fma(-ai, bi, dr);
        di = fma(ar, bi, fma(ai, br, di));
    }
}

/* alpha (dr + i di) + beta Cold(i, j), the dot product scaled by sc; alpha 0 leaves the product
 * out, as BLAS does (A and B may hold NaN; a device alpha of 0 reaches the checks, which cuBLAS
 * may have multiplied by it). *amass (if given): |alpha| sum |a b| from the scaled ms. */
template <typename T>
__device__ T scaled_element(const gk_gemm<T> &g, const dot_scale &sc, int64_t i, int64_t j,
                            double dr, double di, double ms, double *amass)
{
    const T alpha = alpha_of(g), beta = beta_of(g);
    double cr = 0.0, ci = 0.0;
    if (!is_zero(alpha)) {
        cr = sc.xr * dr - sc.xi * di;
        ci = sc.xr * di + sc.xi * dr;
    }
    if (amass)
        *amass = (fabs(sc.xr) + fabs(sc.xi)) * ms;
    if (!is_zero(beta)) {
        const T o = g.Cold[i + j * g.ldcold];
        double yr = part_of(beta, 0), yi = im_of(beta);
        cr += yr * part_of(o, 0) - yi * im_of(o);
        ci += yr * im_of(o) + yi * part_of(o, 0);
    }
    return make_el<T>(cr, ci);
}

/* C(i, j) recomputed in double; *amass (if given): |alpha| sum_l |a_il| |b_lj|. Four independent
 * chains (terms l mod 4), so that a thread has four loads of each operand in flight: a block's
 * recomputation, one element per thread at a time, is bound by their latency. */
template <typename T>
__device__ T recompute_element(const gk_gemm<T> &g, int64_t i, int64_t j, double *amass = nullptr)
{
    const dot_scale sc = alpha_split(g);
    double dr[4] = {0.0, 0.0, 0.0, 0.0}, di[4] = {0.0, 0.0, 0.0, 0.0}, ms[4] = {0.0, 0.0, 0.0, 0.0};
    int64_t l = 0;
    for (; l + 4 <= g.k; l += 4) {
#pragma unroll
        for (int c = 0; c < 4; c++)
            dot_term(g, sc, i, j, l + c, dr[c], di[c], ms[c]);
    }
    for (; l < g.k; l++)
        dot_term(g, sc, i, j, l, dr[0], di[0], ms[0]);
    return scaled_element(g, sc, i, j, (dr[0] + dr[1]) + (dr[2] + dr[3]),
                          (di[0] + di[1]) + (di[2] + di[3]), (ms[0] + ms[1]) + (ms[2] + ms[3]), amass);
}

/* The same by the whole CUDA block (k split over the threads, reduced in red): the result and
 * *amass are valid in thread 0; every thread must call it. */
template <typename T>
__device__ T block_recompute(const gk_gemm<T> &g, int64_t i, int64_t j, double *amass,
                             double (*red)[3])
{
    const dot_scale sc = alpha_split(g);
    double dr = 0.0, di = 0.0, ms = 0.0;
    for (int64_t l = threadIdx.x; l < g.k; l += blockDim.x)
        dot_term(g, sc, i, j, l, dr, di, ms);
    for (int off = 16; off > 0; off >>= 1) {
        dr += __shfl_xor_sync(0xffffffffu, dr, off);
        di += __shfl_xor_sync(0xffffffffu, di, off);
        ms += __shfl_xor_sync(0xffffffffu, ms, off);
    }
    if ((threadIdx.x & 31) == 0) {
        red[threadIdx.x >> 5][0] = dr;
        red[threadIdx.x >> 5][1] = di;
        red[threadIdx.x >> 5][2] = ms;
    }
    __syncthreads();
    T v = T{};
    if (threadIdx.x == 0) {
        dr = di = ms = 0.0;
        for (int w = 0; w < (int)(blockDim.x >> 5); w++) {
            dr += red[w][0];
            di += red[w][1];
            ms += red[w][2];
        }
        v = scaled_element(g, sc, i, j, dr, di, ms, amass);
    }
    __syncthreads(); /* red is reused by the next call */
    return v;
}

/* Whether the GEMM's element c and its recomputation v (amass: |alpha| sum |a b|) agree within the
 * worst-case rounding of the two, 2 (gamma_{kP+2} amass + 2u (|beta c_old| + |v|)), in every
 * part, beyond the range as blasft_parts_agree says: a recomputation that is not finite (NaN or
 * Inf operands, or an overflow in its own order) cannot judge C's value, which stands; a NaN or
 * Inf in C against a finite recomputation is apart unless it is an overflow in rounding. */
template <typename T>
__device__ bool within_rounding(const gk_gemm<T> &g, int64_t i, int64_t j, T c, T v, double amass)
{
    constexpr int tt = gk_el<T>::t;
    const double u = ldexp(1.0, -tt), nn = (double)(g.k * gk_el<T>::P + 2);
    const double gam = blasft_gamma(nn, u), aa = abs1(alpha_of(g)), bb = abs1(beta_of(g));
    const double co = g.Cold && bb != 0.0 ? abs1(g.Cold[i + j * g.ldcold]) : 0.0;
    bool same = true;
#pragma unroll
    for (int p = 0; p < gk_el<T>::P; p++) {
        const double bound =
            2.0 * blasft_element_rounding(gam, u, aa, amass, bb, co, fabs(part_of(v, p)));
        same = same && blasft_parts_agree(part_of(c, p), part_of(v, p), bound, blasft_largest(u));
    }
    return same;
}

/* Flagged checks of one block: rows (side 1) and columns (side 0) with their unweighted and
 * weighted syndromes and unweighted threshold. */
struct flagged {
    int idx;
    double su[2], sw[2], eps; /* per part (real types: part 0) */
    int loc; /* located position on the other side, -1 if none */
    int best; /* the part with the larger unweighted syndrome: it locates (host rule) */
    __device__ double syn() const { return su[best]; }
};

/* The unweighted and weighted syndromes of a checksum pair (e0 unweighted, e1 weighted) and
 * whether any part of either is over its threshold. */
template <typename T, typename Rf>
__device__ __forceinline__ bool syndromes(const gk_gemm<T> &g, const Rf *ref, const double *rec,
                                          const double *eps, int64_t e0, int64_t e1, flagged *f)
{
    constexpr int P = gk_el<T>::P;
    bool fl = over_el(g, ref[e0], rec, e0, eps[e0]);
    f->best = 0;
    for (int q = 0; q < 2; q++) {
        f->su[q] = q < P ? part_of(ref[e0], q) - rec[e0 * P + q] : 0.0;
        f->sw[q] = 0.0;
    }
    if (P == 2 && fabs(f->su[1]) > fabs(f->su[0]))
        f->best = 1;
    if (g.r > 1) {
        fl = fl || over_el(g, ref[e1], rec, e1, eps[e1]);
        for (int q = 0; q < P; q++)
            f->sw[q] = part_of(ref[e1], q) - rec[e1 * P + q];
    }
    f->eps = eps[e0];
    return fl;
}

/* Adds the syndromes to element (i, j), or recomputes it where a part's error is too large
 * against its value (exponent flips, Inf, NaN). */
template <typename T> __device__ void correct_element(const gk_gemm<T> &g, int64_t i, int64_t j, const flagged &f)
{
    T *c = &g.C[i + j * g.ldc];
    bool recompute = false;
    for (int q = 0; q < gk_el<T>::P; q++)
        recompute = recompute || blasft_correct_by_recompute(part_of(*c, q), f.su[q], f.eps);
    if (recompute)
        *c = recompute_element(g, i, j);
    else
        *c = make_el<T>(part_of(*c, 0) + f.su[0], im_of(*c) + f.su[1]);
}

constexpr int kMaxFlagged = 64; /* more flagged checks in one block: recompute it */

/* One CUDA block per flagged tile: collect, locate (single or extended), correct or recompute. */
template <typename T>
__global__ void __launch_bounds__(kThreads) correct_kernel(gk_gemm<T> g)
{
    pdl_release();
    pdl_wait();
    __shared__ flagged rows[kMaxFlagged], cols[kMaxFlagged];
    /* action: 0 nothing more, 1 recompute the block, 2 / 3 compare the block with its
     * recomputation and report it as detected (detect mode) / uncorrectable unless it agrees */
    __shared__ int nr, nc, action;
    /* located elements to verify (action 4): side 1 rows[idx], side 0 cols[idx] */
    __shared__ int nfix, fixed, fix_idx[2 * kMaxFlagged];
    __shared__ char fix_side[2 * kMaxFlagged];
    __shared__ double red[kThreads / 32][3];
    /* located element q: a flagged row (its column is loc) or column (its row is loc) */
    auto located = [&](int q) -> const flagged & { return fix_side[q] ? rows[fix_idx[q]] : cols[fix_idx[q]]; };
    if (blockIdx.x == 0 && threadIdx.x < 2 && g.prep_cnt[threadIdx.x]) {
        /* a prepared operand's encoder faults, counted once (shared buffers: atomically) */
        const unsigned long long f = atomicExch(&g.prep_cnt[threadIdx.x]->encoder_faults, 0ull);
        if (f)
            atomicAdd(&g.cnt->encoder_faults, f);
    }
    unsigned int ntiles = g.cnt->tile_count;
    for (unsigned int t = blockIdx.x; t < ntiles; t += gridDim.x) {
        int tile = g.tile_list[t];
        int64_t I = tile % g.mb, J = tile / g.mb;
        int64_t i0 = I * g.bs, j0 = J * g.bs;
        int rows_t = (int)(g.m - i0 < g.bs ? g.m - i0 : g.bs);
        int cols_t = (int)(g.n - j0 < g.bs ? g.n - j0 : g.bs);
        if (threadIdx.x == 0) {
            nr = nc = 0;
            action = 0;
        }
        __syncthreads();
        for (int ii = threadIdx.x; ii < rows_t; ii += blockDim.x) {
            int64_t e0 = (i0 + ii) + (J * g.r) * g.m;
            flagged f;
            if (syndromes(g, g.Crs_ref, g.Crs_rec, g.Crs_eps, e0, e0 + g.m, &f)) {
                f.idx = ii;
                f.loc = -1;
                int at = atomicAdd(&nr, 1);
                if (at < kMaxFlagged)
                    rows[at] = f;
            }
        }
        for (int jj = threadIdx.x; jj < cols_t; jj += blockDim.x) {
            int64_t e0 = I * g.r + (j0 + jj) * (g.r * g.mb);
            flagged f;
            bool over_c;
            if constexpr (gk_el<T>::P == 1)
                over_c = g.Pref ? syndromes(g, g.Pref, g.Ccs_rec, g.Ccs_eps, e0, e0 + 1, &f)
                                : syndromes(g, g.Ccs_ref, g.Ccs_rec, g.Ccs_eps, e0, e0 + 1, &f);
            else
                over_c = syndromes(g, g.Ccs_ref, g.Ccs_rec, g.Ccs_eps, e0, e0 + 1, &f);
            if (over_c) {
                f.idx = jj;
                f.loc = -1;
                int at = atomicAdd(&nc, 1);
                if (at < kMaxFlagged)
                    cols[at] = f;
            }
        }
        __syncthreads();
        if (threadIdx.x == 0) {
            int n_r = nr, n_c = nc;
            /* the block can be computed again where the old C is known (kept, or beta = 0); a
             * block that will be recomputed, reported or left uncorrectable counts once that
             * second computation has been compared with it (below) */
            const bool can_compare = g.Cold || is_zero(beta_of(g));
            const bool will_recompute = g.correct && g.recompute && can_compare;
            const unsigned long long n_det = (unsigned long long)(n_r > n_c ? n_r : n_c);
            /* PROJ flags errors near its threshold, where the syndromes' ratio can name the
             * wrong element and two errors in a line look like one: where the block can be
             * computed again, nothing is located, the recomputation (recompute_blocks) is the
             * exact second tier that decides */
            bool ok = n_r <= kMaxFlagged && n_c <= kMaxFlagged && (n_r > 0 || n_c > 0) &&
                      !(g.Pref && can_compare);
            if (ok && g.r == 1) {
                /* single localization: one row and one column */
                ok = n_r == 1 && n_c == 1;
                if (ok) {
                    rows[0].loc = cols[0].idx;
                    cols[0].loc = rows[0].idx;
                }
            } else if (ok) {
                bool single = n_r == 1 && n_c == 1;
                /* extended localization: every flagged vector locates its element, and the
                 * two sides agree where both flagged (F2) or only one side saw it (F1) */
                for (int a = 0; a < n_r && ok; a++) {
                    rows[a].loc = blasft_locate(g.wscheme, rows[a].su[rows[a].best],
                                                rows[a].sw[rows[a].best], cols_t, g.bs);
                    ok = rows[a].loc >= 0;
                }
                for (int b = 0; b < n_c && ok; b++) {
                    cols[b].loc = blasft_locate(g.wscheme, cols[b].su[cols[b].best],
                                                cols[b].sw[cols[b].best], rows_t, g.bs);
                    ok = cols[b].loc >= 0;
                }
                for (int a = 0; a < n_r && ok; a++)
                    for (int b = 0; b < n_c && ok; b++) {
                        bool same_col = cols[b].idx == rows[a].loc;
                        bool same_row = rows[a].idx == cols[b].loc;
                        if (same_col != same_row)
                            ok = false; /* not 1-to-1 */
                        else if (same_col)
                            for (int q = 0; q < gk_el<T>::P; q++)
                                if (!(fabs(rows[a].su[q] - cols[b].su[q]) <= rows[a].eps + cols[b].eps))
                                    ok = false; /* the two syndromes of one element disagree */
                    }
                if (!ok && single) {
                    /* the pair of syndromes did not locate (NaN, Inf): one row and one column
                     * still name the element */
                    ok = true;
                    rows[0].loc = cols[0].idx;
                    cols[0].loc = rows[0].idx;
                }
            }
            if (!g.correct && can_compare) {
                action = 2;
            } else if (!g.correct) {
                atomicAdd(&g.cnt->detected, n_det);
                atomicAdd(&g.cnt->uncorrectable, n_det);
                gk_add_record(g.cnt, GK_REC_DETECTED, I, J, -1, -1,
                              n_r ? rows[0].syn() : cols[0].syn(), n_r ? rows[0].eps : cols[0].eps);
            } else if (ok) {
                /* the located elements: every flagged row's, then those of the columns no row
                 * accounted for */
                nfix = fixed = 0;
                for (int a = 0; a < n_r; a++) {
                    fix_side[nfix] = 1;
                    fix_idx[nfix++] = a;
                }
                for (int b = 0; b < n_c; b++) {
                    bool done = false;
                    for (int a = 0; a < n_r; a++)
                        done = done || rows[a].idx == cols[b].loc;
                    if (!done) {
                        fix_side[nfix] = 0;
                        fix_idx[nfix++] = b;
                    }
                }
                if (can_compare) {
                    /* each computed again (by the whole CUDA block, below) and corrected only
                     * where it is apart from that beyond rounding; a block whose located
                     * elements all agree was flagged by rounding (structured data) */
                    action = 4;
                } else {
                    atomicAdd(&g.cnt->detected, n_det);
                    for (int q = 0; q < nfix; q++) {
                        const flagged &f = located(q);
                        const int64_t i = i0 + (fix_side[q] ? f.idx : f.loc);
                        const int64_t j = j0 + (fix_side[q] ? f.loc : f.idx);
                        correct_element(g, i, j, f);
                        atomicAdd(&g.cnt->corrected, 1ull);
                        gk_add_record(g.cnt, GK_REC_CORRECTED, I, J, i, j, f.syn(), f.eps);
                    }
                }
            } else if (will_recompute) {
                action = 1; /* counted after the comparison below */
            } else if (can_compare) {
                action = 3;
            } else {
                atomicAdd(&g.cnt->detected, n_det);
                atomicAdd(&g.cnt->uncorrectable, n_det);
                gk_add_record(g.cnt, GK_REC_UNCORRECTABLE, I, J, -1, -1,
                              n_r ? rows[0].syn() : cols[0].syn(), n_r ? rows[0].eps : cols[0].eps);
            }
            g.tile_flag[tile] = 0; /* clean for the next GEMM */
        }
        __syncthreads();
        if (action == 4) {
            for (int q = 0; q < nfix; q++) {
                const flagged &f = located(q);
                const int64_t i = i0 + (fix_side[q] ? f.idx : f.loc);
                const int64_t j = j0 + (fix_side[q] ? f.loc : f.idx);
                double amass = 0.0;
                const T v = block_recompute(g, i, j, &amass, red);
                if (threadIdx.x == 0) {
                    T *c = &g.C[i + j * g.ldc];
                    if (!within_rounding(g, i, j, *c, v, amass)) {
                        *c = v;
                        fixed++;
                        atomicAdd(&g.cnt->corrected, 1ull);
                        gk_add_record(g.cnt, GK_REC_CORRECTED, I, J, i, j, f.syn(), f.eps);
                    }
                }
            }
            if (threadIdx.x == 0) {
                if (fixed)
                    atomicAdd(&g.cnt->detected, (unsigned long long)fixed);
                else
                    atomicAdd(&g.cnt->false_alarms, 1ull);
            }
        }
        if (action >= 1 && action <= 3 && threadIdx.x == 0) {
            /* computed again by recompute_blocks, spread over many CUDA blocks */
            const int n_r = nr, n_c = nc;
            const unsigned int q = atomicAdd(&g.cnt->recompute_count, 1u);
            gk_recompute *rc = &g.rlist[q];
            rc->tile = tile;
            rc->action = action;
            rc->n_det = (unsigned long long)(n_r > n_c ? n_r : n_c);
            /* PROJ: the column checksum's (the tight one) where one flagged */
            const bool col = n_c && (g.Pref || !n_r);
            rc->syndrome = col ? cols[0].syn() : rows[0].syn();
            rc->threshold = col ? cols[0].eps : rows[0].eps;
            rc->apart = 0;
        }
        __syncthreads();
    }
}

/* The blocks correct_kernel listed, computed again element by element (dot products in double),
 * each element by one thread, the elements of all listed blocks spread over every CUDA block of
 * the grid (one CUDA block per C block took tens of ms for a D 256 x 256 x 512 block). A
 * recomputation further from the GEMM's element than the worst-case rounding of the two,
 * 2 (gamma_{kP+2} |alpha| sum |a b| + 2u (|beta c_old| + |c|)), is a fault; a block with none
 * was flagged by rounding its elements share (structured data: constant or repeated rows and
 * columns), not by a fault. The last CUDA block to finish counts the outcomes. */
template <typename T>
__global__ void __launch_bounds__(kThreads) recompute_blocks(gk_gemm<T> g)
{
    pdl_release();
    pdl_wait();
    const unsigned int n = g.cnt->recompute_count;
    if (n == 0)
        return; /* the usual case: nothing to compute again */
    for (unsigned int q = 0; q < n; q++) {
        gk_recompute *rc = &g.rlist[q];
        const int64_t I = rc->tile % g.mb, J = rc->tile / g.mb, i0 = I * g.bs, j0 = J * g.bs;
        const int64_t rows_t = g.m - i0 < g.bs ? g.m - i0 : g.bs;
        const int64_t cols_t = g.n - j0 < g.bs ? g.n - j0 : g.bs;
        for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < rows_t * cols_t;
             e += (int64_t)gridDim.x * blockDim.x) {
            const int64_t i = i0 + e % rows_t, j = j0 + e / rows_t;
            double amass;
            const T v = recompute_element(g, i, j, &amass);
            bool apart = !within_rounding(g, i, j, g.C[i + j * g.ldc], v, amass);
            if constexpr (gk_el<T>::P == 1)
                if (g.Pref && !apart && blasft_squares_in_range(amass))
                    /* PROJ flags errors far below the worst-case bound: apart where the
                     * difference is half the flagged column checksum's threshold (one element's
                     * rounding is far below it: the threshold bounds a block's); where the
                     * threshold's squares left the range, the worst-case bound alone decides */
                    apart = fabs((double)g.C[i + j * g.ldc] - (double)v) >= 0.5 * rc->threshold;
            if (apart)
                atomicAdd(&rc->apart, 1u);
            /* detect, report, abort: C stays as it is; a recomputation that is not finite
             * cannot judge the element (blasft_parts_agree), which then stays too */
            if (rc->action == 1 && (apart || is_finite_el(v)))
                g.C[i + j * g.ldc] = v;
        }
    }
    /* the last CUDA block to finish sees every apart count */
    __shared__ bool last;
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0)
        last = atomicAdd(&g.cnt->recompute_done, 1u) == gridDim.x - 1;
    __syncthreads();
    if (!last || threadIdx.x != 0)
        return;
    __threadfence();
    for (unsigned int q = 0; q < n; q++) {
        const gk_recompute *rc = &g.rlist[q];
        const unsigned int apart = atomicAdd((unsigned int *)&rc->apart, 0u);
        const int64_t I = rc->tile % g.mb, J = rc->tile / g.mb;
        if (apart == 0) {
            atomicAdd(&g.cnt->false_alarms, 1ull);
        } else if (rc->action == 1) {
            atomicAdd(&g.cnt->detected, rc->n_det);
            atomicAdd(&g.cnt->recomputed, 1ull);
            gk_add_record(g.cnt, GK_REC_RECOMPUTED, I, J, -1, -1, rc->syndrome, rc->threshold);
        } else {
            atomicAdd(&g.cnt->detected, rc->n_det);
            atomicAdd(&g.cnt->uncorrectable, rc->n_det);
            gk_add_record(g.cnt, rc->action == 2 ? GK_REC_DETECTED : GK_REC_UNCORRECTABLE, I, J,
                          -1, -1, rc->syndrome, rc->threshold);
        }
    }
}

/* The check's pass over C: column and row checksums of one BS x BS block in a single read.
 * 32 x 32 sub-tiles go through shared memory. Threads 0-127 sum rows (row checksums), threads
 * 128-255 columns (column checksums): worker w = tid % 128 takes line (w / 2) % 32 with parity
 * w % 2 and half h = w / 64 (16 of the 32 elements). Row sums stay in registers over the block's
 * columns, column sums in shared memory over its rows, per half and parity; the halves are joined
 * in a fixed order at the end and the two parities compared (every checksum computed twice); a
 * mismatch counts an encoder fault and stores NaN. */
constexpr int kSub = 32;

__host__ __device__ constexpr size_t fused_state(int bs, int r) { return (size_t)2 * 2 * bs * r; }

template <typename T>
__global__ void __launch_bounds__(kThreads)
check_sums_fused(const T *C, int64_t ldc, int64_t m, int64_t n, int bs, int r, int wscheme,
                 double *Ccs, double *Crs, int64_t mb, gk_counters *cnt)
{
    extern __shared__ double smem[];
    double(*sub)[kSub + 1] = (double(*)[kSub + 1])smem;
    /* colst[((h * 2 + par) * bs + column) * r + w]; rowst likewise for the strip's 32 rows */
    blasft_csum *colst = (blasft_csum *)(smem + kSub * (kSub + 1));
    blasft_csum *rowst = colst + fused_state(bs, r);
    const int64_t I = blockIdx.x, J = blockIdx.y, i0 = I * bs, j0 = J * bs;
    const int rows_t = (int)(m - i0 < bs ? m - i0 : bs), cols_t = (int)(n - j0 < bs ? n - j0 : bs);
    const int tid = threadIdx.x, lane = tid & 31;
    const int wk = tid & 127, line = (wk >> 1) & 31, par = wk & 1, h = wk >> 6;
    const bool rows_side = tid < 128;
    for (int e = tid; e < (int)fused_state(bs, r); e += kThreads)
        colst[e] = blasft_csum{0.0, 0.0};
    __syncthreads();
    /* Tiles in a fixed order t = strip * nq + column tile. Two register buffers hold the next
     * two tiles' loads while this tile is summed (8 loads of each thread in flight across the
     * barriers, not 4: the pass is latency-bound at 2 blocks per SM); the sums' order is
     * unchanged, so the values are the same bit for bit. */
    const int nq = (cols_t + kSub - 1) / kSub, ntiles = ((rows_t + kSub - 1) / kSub) * nq;
    auto load = [&](T (&x)[4], int t) {
        const int ps = (t / nq) * kSub, qs = (t % nq) * kSub;
#pragma unroll
        for (int u = 0; u < 4; u++) {
            int cc = (tid >> 5) + 8 * u, i = ps + lane, j = qs + cc;
            x[u] = t < ntiles && i < rows_t && j < cols_t ? C[(i0 + i) + (j0 + j) * ldc] : (T)0;
        }
    };
    blasft_csum racc[2] = {{0.0, 0.0}, {0.0, 0.0}};
    /* tile t from buffer x; x is refilled with tile t + 2 once the tile is in shared memory */
    auto step = [&](T (&x)[4], int t) {
        const int ps = (t / nq) * kSub, qs = (t % nq) * kSub;
        if (qs == 0)
            racc[0] = racc[1] = blasft_csum{0.0, 0.0};
#pragma unroll
        for (int u = 0; u < 4; u++)
            sub[(tid >> 5) + 8 * u][lane] = (double)x[u];
        __syncthreads();
        load(x, t + 2);
        if (rows_side) {
#pragma unroll 4
            for (int c = h * 16; c < h * 16 + 16; c++) {
                double v = sub[c][line];
                blasft_csum_add(&racc[0], v);
                if (r > 1)
                    blasft_csum_add(&racc[1], weight_of(1, wscheme, qs + c, bs) * v);
            }
        } else if (qs + line < cols_t) {
            blasft_csum *st = &colst[((h * 2 + par) * bs + qs + line) * r];
            blasft_csum a0 = st[0], a1 = r > 1 ? st[1] : st[0];
#pragma unroll 4
            for (int q = h * 16; q < h * 16 + 16; q++) {
                double v = sub[line][q];
                blasft_csum_add(&a0, v);
                if (r > 1)
                    blasft_csum_add(&a1, weight_of(1, wscheme, ps + q, bs) * v);
            }
            st[0] = a0;
            if (r > 1)
                st[1] = a1;
        }
        __syncthreads();
        if (qs + kSub < cols_t)
            return;
        /* the strip's last tile: join the row halves (half 1 leaves its sums, half 0 adds them
         * in), compare the parities, store */
        if (rows_side && h == 1)
            for (int w = 0; w < r; w++)
                rowst[(par * kSub + line) * r + w] = racc[w];
        __syncthreads();
        if (rows_side && h == 0) {
            for (int w = 0; w < r; w++) {
                csum_merge(&racc[w], rowst[(par * kSub + line) * r + w]);
                bool bad;
                double v = pair_reduce(racc[w], false, &bad);
                if (par == 0 && ps + line < rows_t) {
                    if (bad) {
                        atomicAdd(&cnt->encoder_faults, 1ull);
                        v = nan("");
                    }
                    Crs[(i0 + ps + line) + (J * r + w) * m] = v;
                }
            }
        }
        __syncthreads();
    };
    T xa[4], xb[4];
    load(xa, 0);
    load(xb, 1);
    for (int t = 0; t < ntiles; t += 2) {
        step(xa, t);
        if (t + 1 < ntiles)
            step(xb, t + 1);
    }
    for (int e = tid; e < cols_t * r; e += kThreads) {
        int c = e / r, w = e % r;
        double v[2];
        for (int pp = 0; pp < 2; pp++) {
            blasft_csum a = colst[((0 * 2 + pp) * bs + c) * r + w];
            csum_merge(&a, colst[((1 * 2 + pp) * bs + c) * r + w]);
            v[pp] = blasft_csum_value(&a);
        }
        if (!(v[0] == v[1]) && !(v[0] != v[0] && v[1] != v[1])) {
            atomicAdd(&cnt->encoder_faults, 1ull);
            v[0] = nan("");
        }
        Ccs[(I * r + w) + (j0 + c) * (r * mb)] = v[0];
    }
}

/* The check's pass over C for blocks of at most 256 rows: one CUDA block per BS x BS block of C
 * (without the row side, per part of its columns: grid.z parts), one warp per 32-row strip, the
 * block's columns in slices of 16. A lane holds its row's 16 values of the slice in registers (16
 * independent loads in flight) and adds them to its row sums; the slice also goes through the
 * warp's own shared-memory tile, from which the lane adds its neighbour's row (the row sums'
 * second copy) and lane pair 2c, 2c+1 sums column c over the strip (both copies). The strips'
 * column sums are joined in warp order after one barrier per slice. Every checksum is computed by
 * two lanes in the same order (the weighted products never contracted into an FMA, which would
 * round one copy differently) and compared bit for bit; a mismatch counts an encoder fault and
 * stores NaN. With compare, each checksum's threshold is then computed and the checksum compared
 * with its reference, so no second pass is needed. With the row side it is bound by the FP64 pipe
 * (four compensated sums per element); without it (rows on demand, the default) by how many loads
 * are in flight, hence the column parts (gk_check_sums). docs/gpu-benchmark.md has times. */

template <typename T> __host__ __device__ constexpr size_t sliced_smem(int warps)
{
    /* per warp: the slice tile (kSlice x 33 of T), reused for the strip's column partials */
    return (size_t)warps * (sizeof(T) * kSlice * 33 > sizeof(blasft_csum) * kSlice * 2 * 2
                                ? sizeof(T) * kSlice * 33
                                : sizeof(blasft_csum) * kSlice * 2 * 2);
}

template <typename T, int R, bool ROWS>
__global__ void __launch_bounds__(kThreads, 3) check_sums_sliced(gk_gemm<T> g, int compare)
{
    pdl_release(); /* the fault path's kernels may be launched: they wait for this grid */
    extern __shared__ double smem[];
    const T *C = g.C;
    const int64_t ldc = g.ldc, m = g.m, n = g.n, mb = g.mb;
    const int bs = g.bs, wscheme = g.wscheme;
    gk_counters *cnt = g.cnt;
    bool flagged = false;
    const int wp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const size_t region = sliced_smem<T>(1);
    T(*tile)[33] = (T(*)[33])((char *)smem + region * wp);
    blasft_csum(*part)[2][R] = (blasft_csum(*)[2][R])((char *)smem + region * wp);
    const int64_t I = blockIdx.x, J = blockIdx.y, i0 = I * bs, j0 = J * bs;
    const int rows_t = (int)(m - i0 < bs ? m - i0 : bs), cols_t = (int)(n - j0 < bs ? n - j0 : bs);
    const int row = wp * 32 + lane, strips = (rows_t + 31) >> 5;
    const bool live = wp < strips; /* warps past the block's last strip only join the barriers */
    const T *col0 = C + (i0 + row) + j0 * ldc;
    /* without the row side, the block's columns [qa, qb) of gridDim.z parts, whole slices each */
    const int zs = ROWS ? 1 : (int)gridDim.z * kSlice; /* columns per slice of all parts */
    const int span = ROWS ? cols_t : (cols_t + zs - 1) / zs * kSlice;
    const int qa = ROWS ? 0 : (int)blockIdx.z * span, qb = qa + span < cols_t ? qa + span : cols_t;
    blasft_csum own[R], nbr[R];
#pragma unroll
    for (int w = 0; w < R; w++)
        own[w] = nbr[w] = blasft_csum{0.0, 0.0};
    for (int q0 = qa; q0 < qb; q0 += kSlice) {
        if (live) {
            T v[kSlice];
#pragma unroll
            for (int c = 0; c < kSlice; c++)
                v[c] = row < rows_t && q0 + c < qb ? col0[(int64_t)(q0 + c) * ldc] : (T)0;
#pragma unroll
            for (int c = 0; c < kSlice; c++)
                tile[c][lane] = v[c];
            __syncwarp();
            /* the row (from registers) and the neighbour's row (from the tile); no envelope */
            if (ROWS)
                lane_row_sums<T, R>(v, tile, lane, q0, wscheme, bs, own, nbr, nullptr);
            /* lanes 2c, 2c+1: column c of the slice over the strip */
            const int c = lane >> 1;
            blasft_csum colp[R];
            strip_column_sums<T, R>(tile, c, wp, wscheme, bs, colp, nullptr);
            __syncwarp();
#pragma unroll
            for (int w = 0; w < R; w++)
                part[c][lane & 1][w] = colp[w];
        }
        __syncthreads();
        /* thread t < 32 R: copy t & 1 of column (t >> 1) & 15's checksum t >> 5, joined over
         * the strips in warp order */
        if (threadIdx.x < 32 * R) {
            const int t = threadIdx.x, cp = t & 1, c = (t >> 1) & 15, w = t >> 5;
            const blasft_csum(*p0)[2][R] = (const blasft_csum(*)[2][R])smem;
            blasft_csum a = p0[c][cp][w];
            for (int s = 1; s < strips; s++)
                csum_merge(&a, ((const blasft_csum(*)[2][R])((const char *)smem + region * s))[c][cp][w]);
            double v = blasft_csum_value(&a);
            const double twin = __shfl_xor_sync(0xffffffffu, v, 1);
            if (cp == 0 && q0 + c < qb) {
                if (!(v == twin) && !(v != v && twin != twin)) {
                    atomicAdd(&cnt->encoder_faults, 1ull);
                    v = nan("");
                }
                g.Ccs_rec[(I * R + w) + (j0 + q0 + c) * (R * mb)] = v;
            }
        }
        __syncthreads();
    }
    /* the column checksums against their thresholds (written above by this block) */
    if (compare)
        for (int x = threadIdx.x; x < (qb - qa) * R; x += blockDim.x) {
            const int64_t e = (I * R + x % R) + (j0 + qa + x / R) * (R * mb);
            const double eps = checksum_eps(g, 0, e); /* every one: the correction reads them */
            flagged = col_over(g, e, eps) || flagged;
        }
    if (ROWS && live) {
#pragma unroll
        for (int w = 0; w < R; w++) {
            double v = blasft_csum_value(&own[w]);
            const double twin = __shfl_xor_sync(0xffffffffu, blasft_csum_value(&nbr[w]), 1);
            if (row < rows_t) {
                if (!(v == twin) && !(v != v && twin != twin)) {
                    atomicAdd(&cnt->encoder_faults, 1ull);
                    v = nan("");
                }
                const int64_t e = (i0 + row) + (J * R + w) * m;
                g.Crs_rec[e] = v;
                if (compare) {
                    const double eps = checksum_eps(g, 1, e);
                    flagged = over((double)g.Crs_ref[e], v, eps, is_zero(alpha_of(g))) || flagged;
                }
            }
        }
    }
    if (__syncthreads_or(flagged) && threadIdx.x == 0)
        flag_block(g, I, J);
}

/* Row side on demand (gk_gemm::rows_on_demand): one CUDA block per block column J holding a
 * flagged block computes what the check pass leaves out there, as the eager passes would (the
 * same per-element steps, `take` and `finish_pair`): op(B)'s row checksums of J for every l (a
 * lane pair each, compared; 'C': imaginary sums negated), their envelope and the top-p lists of
 * both; then for every flagged block (I, J) the reference row checksums alpha op(A)(I,:) Bcs(:,J)
 * + beta (old C's), accumulated in double, C's row sums over J (a lane pair each, compared) and
 * their thresholds. correct_kernel reads them as it reads the eager ones. */
template <typename T, int P>
__global__ void __launch_bounds__(kThreads) rows_on_demand(gk_gemm<T> g)
{
    pdl_release();
    pdl_wait();
    if (g.cnt->tile_count == 0)
        return; /* the clean case: nothing flagged */
    constexpr int kPairs = kThreads / 2, NP = gk_el<T>::P;
    const int tid = threadIdx.x, pair = tid >> 1, r = g.r, bs = g.bs;
    const bool writer = (tid & 1) == 0;
    for (int64_t J = blockIdx.x; J < g.nb; J += gridDim.x) {
        int any = 0;
        for (int64_t I = tid; I < g.mb; I += kThreads)
            any |= g.tile_flag[I + J * g.mb];
        if (!__syncthreads_or(any))
            continue;
        const int64_t j0 = J * bs;
        const int cols_t = (int)(g.n - j0 < bs ? g.n - j0 : bs);
        for (int64_t l0 = 0; l0 < g.k; l0 += kPairs) {
            const int64_t l = l0 + pair;
            const bool in = l < g.k;
            blasft_csum acc[2][2] = {};
            double env = 0.0;
            if (in)
                for (int q = 0; q < cols_t; q++)
                    take<T>(acc, env, GK_AUX_MAX, opB(g, l, j0 + q), r, g.wscheme, q, bs);
            for (int w = 0; w < r; w++)
                finish_pair<T, T>(acc, w, false, in && writer, g.tb == 'C', g.Bcs,
                                  l + (J * r + w) * g.k, g.cnt);
            if (in && writer)
                g.envB[l + J * g.k] = env;
        }
        __syncthreads();
        for (int w = 0; w < r; w++)
            block_topp<T, P>(g.Bcs + (J * r + w) * g.k, g.k, g.p, g.tBc, J * r + w);
        block_topp<double, P>(g.envB + J * g.k, g.k, g.p, g.tEb, J);
        const T alpha = alpha_of(g), beta = beta_of(g);
        const double sa = g.ta == 'C' ? -1.0 : 1.0;
        for (int64_t I = 0; I < g.mb; I++) {
            if (!g.tile_flag[I + J * g.mb])
                continue;
            const int64_t i0 = I * bs;
            const int rows_t = (int)(g.m - i0 < bs ? g.m - i0 : bs);
            for (int ii = tid; ii < rows_t; ii += kThreads) {
                const int64_t i = i0 + ii;
                double dr[2] = {0.0, 0.0}, di[2] = {0.0, 0.0};
                reg_topp<P> la; /* op(A)'s row list, where no pass made it */
                for (int64_t l = 0; l < g.k; l++) {
                    const T a = opA(g, i, l);
                    if (g.a_lists_on_demand)
                        la.add(mag(a), l);
                    const double ar = part_of(a, 0), ai = sa * im_of(a);
                    for (int w = 0; w < r; w++) {
                        const T b = g.Bcs[l + (J * r + w) * g.k]; /* op(B)'s, conjugate included */
                        const double br = part_of(b, 0), bi = im_of(b);
                        dr[w] = fma(ar, br, dr[w]);
                        if (NP == 2) {
                            dr[w] = fma(-ai, bi, dr[w]);
                            di[w] = fma(ar, bi, fma(ai, br, di[w]));
                        }
                    }
                }
                if (g.a_lists_on_demand)
                    reg_store<P>(g.tA, i, la, g.p);
                /* cold_rows: the old C's row checksums of this block from the kept old C, in
                 * double (compensated), instead of a pass over C before the GEMM */
                blasft_csum oacc[2][2] = {};
                if (g.cold_rows && !is_zero(beta)) {
                    double osq = 0.0;
                    for (int q = 0; q < cols_t; q++)
                        take<T>(oacc, osq, GK_AUX_SQ, g.Cold[i + (j0 + q) * g.ldcold], r,
                                g.wscheme, q, bs);
                    g.Crs_sq[i + J * g.m] = osq;
                }
                for (int w = 0; w < r; w++) {
                    const int64_t e = i + (J * r + w) * g.m;
                    const double xr = part_of(alpha, 0), xi = im_of(alpha);
                    double cr = xr * dr[w] - xi * di[w], ci = xr * di[w] + xi * dr[w];
                    /* beta != 0: Crs_ref holds the old C's row checksums (device pointer mode
                     * encodes the old C before beta is known: skip it where beta is 0, it may be
                     * NaN) */
                    if (g.Crs_sq && !is_zero(beta)) {
                        const double o0 = g.cold_rows ? blasft_csum_value(&oacc[w][0])
                                                      : part_of(g.Crs_ref[e], 0);
                        const double o1 = g.cold_rows ? blasft_csum_value(&oacc[w][1])
                                                      : im_of(g.Crs_ref[e]);
                        const double yr = part_of(beta, 0), yi = im_of(beta);
                        cr += yr * o0 - yi * o1;
                        ci += yr * o1 + yi * o0;
                    }
                    g.Crs_ref[e] = make_el<T>(cr, ci);
                    checksum_eps(g, 1, e);
                }
            }
            for (int base = 0; base < rows_t; base += kPairs) {
                const int ii = base + pair;
                const bool in = ii < rows_t;
                blasft_csum acc[2][2] = {};
                double none = 0.0;
                const T *row = g.C + (i0 + (in ? ii : 0)) + j0 * g.ldc;
                if (in)
                    for (int q = 0; q < cols_t; q++)
                        take<T>(acc, none, GK_AUX_NONE, row[(int64_t)q * g.ldc], r, g.wscheme, q, bs);
                for (int w = 0; w < r; w++)
                    finish_pair<T, double>(acc, w, false, in && writer, 0, g.Crs_rec,
                                           (i0 + (in ? ii : 0)) + (J * r + w) * g.m, g.cnt);
            }
            if (tid == 0)
                atomicAdd(&g.cnt->row_checks, (unsigned long long)rows_t * r * NP);
        }
        __syncthreads(); /* the block column's flags and lists are read above by every thread */
    }
}

/* CUDA blocks that check_sums_sliced aims at without the row side: about 2.6 waves of 3 per SM
 * on an H100's 132 SMs */
constexpr int64_t kCheckBlocks = 1024;
/* where check_sums_sliced serves real data: a block's strips fit one CUDA block, J fits grid.y */
bool sliced_check(int bs, int64_t nb) { return bs <= 256 && nb <= 65535; }

} // namespace

template <typename T> void gk_correct(const gk_gemm<T> &g, cudaStream_t st)
{
    if (g.r * g.mb * g.n + g.m * g.r * g.nb == 0)
        return;
    if (g.rows_on_demand) {
        const unsigned int grid = (unsigned int)(g.nb < 128 ? g.nb : 128);
        with_capacity(g.p, [&](auto P) {
            after_launch(rows_on_demand<T, decltype(P)::value>, grid, st, g);
        });
    }
    after_launch(correct_kernel<T>, 64, st, g);
    after_launch(recompute_blocks<T>, 128, st, g);
}

size_t fused_smem(int bs, int r)
{
    return sizeof(double) * kSub * (kSub + 1) +
           sizeof(blasft_csum) * (fused_state(bs, r) + (size_t)2 * kSub * r);
}

template <typename T> void gk_check_sums(const gk_gemm<T> &g, int compare, cudaStream_t st)
{
    const int64_t m = g.m, n = g.n, mb = g.mb, nb = g.nb;
    const int bs = g.bs, r = g.r;
    if (mb == 0 || nb == 0)
        return;
    if constexpr (gk_el<T>::P == 1) {
        if (sliced_check(bs, nb)) {
            const int strips = (bs + 31) / 32 < 8 ? (bs + 31) / 32 : 8, warps = strips > r ? strips : r;
            /* rows on demand: a block's columns split among CUDA blocks (whole slices, up to
             * kCheckBlocks in all), so that a C of few blocks still has loads in flight on every
             * SM (D 4096 at BS 256: 256 blocks of one part each reached 58-65 % of DRAM
             * bandwidth) */
            const int64_t parts = g.rows_on_demand ? (kCheckBlocks + mb * nb - 1) / (mb * nb) : 1,
                          slices = (bs + kSlice - 1) / kSlice;
            const dim3 grid((unsigned int)mb, (unsigned int)nb,
                            (unsigned int)(parts < slices ? parts : slices));
            const size_t sm = sliced_smem<T>(warps); /* under 48 KiB: no opt-in needed */
            /* rows on demand: the column checksums alone (gk_correct does the rest) */
            if (r > 1 && !g.rows_on_demand)
                check_sums_sliced<T, 2, true><<<grid, 32 * warps, sm, st>>>(g, compare);
            else if (!g.rows_on_demand)
                check_sums_sliced<T, 1, true><<<grid, 32 * warps, sm, st>>>(g, compare);
            else if (r > 1)
                check_sums_sliced<T, 2, false><<<grid, 32 * warps, sm, st>>>(g, compare);
            else
                check_sums_sliced<T, 1, false><<<grid, 32 * warps, sm, st>>>(g, compare);
            return;
        }
    }
    /* both sides in one pass where the block fits (real data); else (complex data, a block too
     * large, or the row side on demand) the column checksums, then the row checksums if wanted */
    const bool one_pass = gk_el<T>::P == 1 && !g.rows_on_demand &&
                          fused_smem(bs, r) <= 48 * 1024 && nb <= 65535;
    if (one_pass) {
        if constexpr (gk_el<T>::P == 1)
            check_sums_fused<T><<<dim3((unsigned int)mb, (unsigned int)nb), kThreads,
                                  fused_smem(bs, r), st>>>(g.C, g.ldc, m, n, bs, r, g.wscheme,
                                                           g.Ccs_rec, g.Crs_rec, mb, g.cnt);
    } else {
        const gk_aux none = {GK_AUX_NONE, nullptr, 0, 0};
        gk_encode<T, double>(g.C, g.ldc, 1, m, n, bs, r, g.wscheme, g.Ccs_rec, r * mb, 1, none,
                             g.cnt, st);
        if (!g.rows_on_demand)
            gk_encode<T, double>(g.C, g.ldc, 0, n, m, bs, r, g.wscheme, g.Crs_rec, 1, m, none,
                                 g.cnt, st);
    }
    if (compare)
        gk_compare_sums<T>(g, st);
}

/* after_launch relaxes the order toward the stream's previous kernel only: an event waited on in
 * between (PROJ's references, gpu_gemm.cu) is waited for in full before this kernel starts */
template <typename T> void gk_compare_sums(const gk_gemm<T> &g, cudaStream_t st)
{
    const int64_t all = g.r * g.mb * g.n + (g.rows_on_demand ? 0 : g.m * g.r * g.nb);
    if (all > 0)
        after_launch(compare_kernel<T>, blocks_for(all, kThreads), st, g);
}

#define INSTANTIATE(T)                                                                             \
    template void gk_check_sums<T>(const gk_gemm<T> &, int, cudaStream_t);                        \
    template void gk_compare_sums<T>(const gk_gemm<T> &, cudaStream_t);                           \
    template void gk_correct<T>(const gk_gemm<T> &, cudaStream_t);
INSTANTIATE(float)
INSTANTIATE(double)
INSTANTIATE(float2)
INSTANTIATE(double2)
