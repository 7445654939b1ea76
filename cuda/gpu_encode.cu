/* GPU ABFT kernels, operand side: checksum encoding (of A, B and C) and the "PEA max p" top-p
 * lists, alone or fused in one pass, with their launchers. Every formula comes from
 * src/abft/abft_arith.h, shared with the host engine. */
#include "gpu_sum_steps.cuh"

namespace {

/* One warp per (block b, index l); lanes 2q and 2q+1 both sum positions q, q+16, ... */
template <typename T, typename O>
__global__ void __launch_bounds__(kThreads)
encode_contig(const T *X, int64_t ld, int64_t S, int64_t L, int bs, int r, int wscheme, O *out,
              int64_t out_l, int64_t out_v, gk_aux aux, int64_t nblk, gk_counters *cnt, int conj)
{
    int64_t gw = (int64_t)blockIdx.x * (kThreads / 32) + threadIdx.x / 32;
    if (gw >= nblk * L)
        return; /* whole warp leaves together */
    int lane = threadIdx.x & 31;
    int64_t b = gw % nblk, l = gw / nblk;
    int64_t s0 = b * bs;
    int len = (int)(S - s0 < bs ? S - s0 : bs);
    const T *col = X + s0 + l * ld;
    blasft_csum acc[2][2] = {{{0.0, 0.0}, {0.0, 0.0}}, {{0.0, 0.0}, {0.0, 0.0}}};
    double ax = 0.0;
    int s = lane >> 1;
    /* four loads in flight before their use */
    for (; s + 48 < len; s += 64) {
        T x0 = col[s], x1 = col[s + 16], x2 = col[s + 32], x3 = col[s + 48];
        take(acc, ax, aux.kind, x0, r, wscheme, s, bs);
        take(acc, ax, aux.kind, x1, r, wscheme, s + 16, bs);
        take(acc, ax, aux.kind, x2, r, wscheme, s + 32, bs);
        take(acc, ax, aux.kind, x3, r, wscheme, s + 48, bs);
    }
    for (; s < len; s += 16)
        take(acc, ax, aux.kind, col[s], r, wscheme, s, bs);
    if (aux.kind) {
        for (int off = 2; off < 32; off <<= 1)
            ax = aux_join(aux.kind, ax, __shfl_xor_sync(0xffffffffu, ax, off));
        if (lane == 0)
            aux.out[l * aux.ld_l + b * aux.ld_b] = ax;
    }
    for (int w = 0; w < r; w++)
        finish_pair<T, O>(acc, w, true, lane == 0, conj, out, l * out_l + (b * r + w) * out_v, cnt);
}

/* The contiguous case for many indices l: a CUDA block takes one block b and 32 indices l,
 * streams the block's rows through a 32 x 32 shared-memory tile (coalesced 32-element column
 * loads), and every thread sums 8 rows of one column per tile (4 row quarters x 32 columns x a
 * lane pair); the quarters are joined in a fixed order and the pair compared at the end. */
/* 3 CUDA blocks per SM (at most 85 registers; it took 106 and ran 2 per SM, 22 % of the warps
 * active: 69 us against 59.5 us now for D n = 4096, ncu on an H200) */
template <typename T, typename O>
__global__ void __launch_bounds__(kThreads, 3)
encode_tiled(const T *X, int64_t ld, int64_t S, int64_t L, int bs, int r, int wscheme, O *out,
             int64_t out_l, int64_t out_v, gk_aux aux, gk_counters *cnt, T *copy, int64_t ldcopy)
{
    __shared__ double sub[32][33];
    __shared__ blasft_csum part[4][64][2];
    __shared__ double apart[4][64];
    const int tid = threadIdx.x, lane = tid & 31;
    const int64_t b = blockIdx.x, l0 = (int64_t)blockIdx.y * 32, s0 = b * bs;
    const int len = (int)(S - s0 < bs ? S - s0 : bs);
    const int q = tid >> 6, cc = (tid >> 1) & 31;
    blasft_csum acc[2] = {{0.0, 0.0}, {0.0, 0.0}};
    double ax = 0.0;
    /* two register buffers hold the next two tiles' loads while this tile is summed (8 loads of
     * each thread in flight across the barriers); the sums' order is unchanged */
    auto load = [&](T (&x)[4], int ps) {
#pragma unroll
        for (int u = 0; u < 4; u++) {
            int c = (tid >> 5) + 8 * u;
            x[u] = ps + lane < len && l0 + c < L ? X[(s0 + ps + lane) + (l0 + c) * ld] : (T)0;
        }
    };
    auto step = [&](T (&x)[4], int ps) {
#pragma unroll
        for (int u = 0; u < 4; u++) {
            sub[(tid >> 5) + 8 * u][lane] = (double)x[u];
            /* the copy (an old C kept for recomputation) from the same read */
            const int c = (tid >> 5) + 8 * u;
            if (copy && ps + lane < len && l0 + c < L)
                copy[(s0 + ps + lane) + (l0 + c) * ldcopy] = x[u];
        }
        __syncthreads();
        if (ps + 64 < len)
            load(x, ps + 64);
#pragma unroll
        for (int i = 0; i < 8; i++) {
            int row = q * 8 + i;
            double v = sub[cc][row];
            blasft_csum_add(&acc[0], v);
            if (r > 1)
                blasft_csum_add(&acc[1], weight_of(1, wscheme, ps + row, bs) * v);
            if (ps + row < len)
                ax = aux_step(aux.kind, ax, v);
        }
        __syncthreads();
    };
    T xa[4], xb[4];
    load(xa, 0);
    if (32 < len)
        load(xb, 32);
    for (int ps = 0; ps < len; ps += 64) {
        step(xa, ps);
        if (ps + 32 < len)
            step(xb, ps + 32);
    }
    part[q][tid & 63][0] = acc[0];
    part[q][tid & 63][1] = acc[1];
    apart[q][tid & 63] = ax;
    __syncthreads();
    if (q == 0) {
        blasft_csum tot[2] = {part[0][tid][0], part[0][tid][1]};
        double at = apart[0][tid];
        for (int qq = 1; qq < 4; qq++) {
            csum_merge(&tot[0], part[qq][tid][0]);
            csum_merge(&tot[1], part[qq][tid][1]);
            at = aux_join(aux.kind, at, apart[qq][tid]);
        }
        const int64_t l = l0 + cc;
        for (int w = 0; w < r; w++) {
            bool bad;
            double v = pair_reduce(tot[w], false, &bad);
            if ((tid & 1) == 0 && l < L) {
                if (bad) {
                    atomicAdd(&cnt->encoder_faults, 1ull);
                    v = nan("");
                }
                out[l * out_l + (b * r + w) * out_v] = (O)v;
            }
        }
        if (aux.kind && (tid & 1) == 0 && l < L)
            aux.out[l * aux.ld_l + b * aux.ld_b] = at;
    }
}

/* Two lane pairs per index l (coalesced along l): the first pair sums the block's first half of
 * positions s sequentially, the second pair the second half; the first pair then adds the second
 * half's sums (a fixed order) and the pair is compared. Half the sequential loads per thread of
 * one pair summing all positions, twice the threads: the pass was latency-bound (66 us for D
 * n = 4096, 45 % of the DRAM bandwidth, ncu on an H200). */
template <typename T, typename O>
__global__ void __launch_bounds__(kThreads)
encode_strided(const T *X, int64_t ld, int64_t S, int64_t L, int bs, int r, int wscheme, O *out,
               int64_t out_l, int64_t out_v, gk_aux aux, gk_counters *cnt, int conj)
{
    const int64_t l = (int64_t)blockIdx.x * (kThreads / 4) + threadIdx.x / 4;
    const int half = (threadIdx.x >> 1) & 1;
    /* blocks along y in strides of gridDim.y, which CUDA limits to 65535 (S of 2^24 and more
     * at BS 256); every thread of a warp takes the same b, so the shuffles below stay uniform */
    for (int64_t b = blockIdx.y; b * bs < S; b += gridDim.y) {
        const int64_t s0 = b * bs;
        int len = (int)(S - s0 < bs ? S - s0 : bs);
        const int mid = (len + 1) / 2, s_end = half ? len : mid;
        bool live = l < L;
        blasft_csum acc[2][2] = {{{0.0, 0.0}, {0.0, 0.0}}, {{0.0, 0.0}, {0.0, 0.0}}};
        double ax = 0.0;
        if (live) {
            const T *p = X + l + s0 * ld;
            int s = half ? mid : 0;
            /* eight loads in flight before their use (the sums' order is the sequential one) */
            for (; s + 8 <= s_end; s += 8) {
                T x[8];
#pragma unroll
                for (int u = 0; u < 8; u++)
                    x[u] = p[(s + u) * ld];
#pragma unroll
                for (int u = 0; u < 8; u++)
                    take(acc, ax, aux.kind, x[u], r, wscheme, s + u, bs);
            }
            for (; s < s_end; s++)
                take(acc, ax, aux.kind, p[s * ld], r, wscheme, s, bs);
        }
        /* the second half's sums to the first pair (lane ^ 2), added after its own */
#pragma unroll
        for (int w = 0; w < 2; w++)
#pragma unroll
            for (int q = 0; q < 2; q++) {
                blasft_csum o;
                o.s = __shfl_xor_sync(0xffffffffu, acc[w][q].s, 2);
                o.c = __shfl_xor_sync(0xffffffffu, acc[w][q].c, 2);
                if (!half)
                    csum_merge(&acc[w][q], o);
            }
        ax = aux_join(aux.kind, ax, __shfl_xor_sync(0xffffffffu, ax, 2));
        const bool writer = live && (threadIdx.x & 3) == 0;
        if (aux.kind && writer)
            aux.out[l * aux.ld_l + b * aux.ld_b] = ax;
        for (int w = 0; w < r; w++)
            finish_pair<T, O>(acc, w, false, writer, conj, out, l * out_l + (b * r + w) * out_v, cnt);
    }
}

/* Encoding and top-p lists of op(A) = A in one read (contiguous case: element (s, l) is
 * X[s + l*ld]; sums along s, the top-p lists of the S vectors s along l). One CUDA block per block
 * b of at most 256 positions s and chunk of indices l, one warp per 32-position strip, l in slices
 * of 16: a lane holds its vector's 16 values of the slice in registers and adds them to its
 * running top-p list in order of l (the chunk's partial list, merged afterwards by topp_merge);
 * the slice also goes through the warp's tile, where lane pair 2c, 2c+1 sums index c over the
 * strip (both copies, the strip's upper and lower 16 positions as two chains) and takes its
 * envelope max; the strips are joined in warp order after one barrier per slice. The checksums'
 * values are those of a compensated sum in this order, each pair compared bit for bit. */
template <typename T> __host__ __device__ constexpr size_t rows_region()
{
    return sizeof(T) * kSlice * 33 > (sizeof(blasft_csum) * 2 * 2 + sizeof(double)) * kSlice
               ? sizeof(T) * kSlice * 33
               : (sizeof(blasft_csum) * 2 * 2 + sizeof(double)) * kSlice;
}

template <typename T, int R, int P>
__global__ void __launch_bounds__(kThreads, 3)
encode_topp_rows(const T *X, int64_t ld, int64_t S, int64_t L, int bs, int wscheme, T *out,
                 int64_t out_l, int64_t out_v, gk_aux aux, int64_t chunk, int p, gk_topp part,
                 gk_counters *cnt)
{
    extern __shared__ double smem[];
    const int wp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const size_t region = rows_region<T>();
    T(*tile)[33] = (T(*)[33])((char *)smem + region * wp);
    blasft_csum(*cpart)[2][R] = (blasft_csum(*)[2][R])((char *)smem + region * wp);
    double *cenv = (double *)((char *)smem + region * wp + sizeof(blasft_csum) * kSlice * 2 * R);
    const int64_t b = blockIdx.x, s0 = b * bs, l_lo = (int64_t)blockIdx.y * chunk;
    const int64_t l_hi = l_lo + chunk < L ? l_lo + chunk : L;
    const int len = (int)(S - s0 < bs ? S - s0 : bs);
    const int row = wp * 32 + lane, strips = (len + 31) >> 5;
    const bool live = wp < strips, vec = live && row < len;
    const T *rp = X + (s0 + row);
    reg_topp<P> t;
    for (int64_t q0 = l_lo; q0 < l_hi; q0 += kSlice) {
        if (live) {
            T v[kSlice];
#pragma unroll
            for (int c = 0; c < kSlice; c++)
                v[c] = row < len && q0 + c < l_hi ? rp[(q0 + c) * ld] : (T)0;
#pragma unroll
            for (int c = 0; c < kSlice; c++) {
                tile[c][lane] = v[c];
                if (vec && q0 + c < l_hi)
                    t.add(fabs((double)v[c]), q0 + c);
            }
            __syncwarp();
            const int c = lane >> 1;
            blasft_csum colp[R];
            double ax;
            strip_column_sums<T, R>(tile, c, wp, wscheme, bs, colp, &ax);
            __syncwarp();
#pragma unroll
            for (int w = 0; w < R; w++)
                cpart[c][lane & 1][w] = colp[w];
            if ((lane & 1) == 0)
                cenv[c] = ax;
        }
        __syncthreads();
        /* thread t < 32 R: copy t & 1 of index (t >> 1) & 15's checksum t >> 5 */
        if (threadIdx.x < 32 * R) {
            const int tt = threadIdx.x, cp = tt & 1, c = (tt >> 1) & 15, w = tt >> 5;
            blasft_csum a = ((const blasft_csum(*)[2][R])smem)[c][cp][w];
            double at = ((const double *)((const char *)smem + sizeof(blasft_csum) * kSlice * 2 * R))[c];
            for (int st = 1; st < strips; st++) {
                const char *rg = (const char *)smem + region * st;
                csum_merge(&a, ((const blasft_csum(*)[2][R])rg)[c][cp][w]);
                at = fmax(at, ((const double *)(rg + sizeof(blasft_csum) * kSlice * 2 * R))[c]);
            }
            double v = blasft_csum_value(&a);
            const double twin = __shfl_xor_sync(0xffffffffu, v, 1);
            const int64_t l = q0 + c;
            if (cp == 0 && l < l_hi) {
                if (!(v == twin) && !(v != v && twin != twin)) {
                    atomicAdd(&cnt->encoder_faults, 1ull);
                    v = nan("");
                }
                out[l * out_l + (b * R + w) * out_v] = (T)v;
                if (w == 0 && aux.kind == GK_AUX_MAX)
                    aux.out[l * aux.ld_l + b * aux.ld_b] = at;
            }
        }
        __syncthreads();
    }
    if (vec)
#pragma unroll
        for (int i = 0; i < P; i++)
            if (i < p) {
                part.val[((int64_t)blockIdx.y * GK_PMAX + i) * S + s0 + row] = t.v[i];
                part.pos[((int64_t)blockIdx.y * GK_PMAX + i) * S + s0 + row] = (int)t.at[i];
            }
}

/* Encoding and top-p lists of op(B) = B in one read (strided case: element (s, l) is
 * X[l + s*ld]; sums along s, the top-p lists of the S vectors s along l). One CUDA block per block
 * b of at most 256 positions s and chunk of at most 256 indices l, one warp per 32 indices (a lane
 * per index l: coalesced loads), s in slices of 16. A lane adds its index's 16 values to its sums
 * and envelope; through the warp's tile it adds its neighbour's (the second copy) and lane pair
 * 2c, 2c+1 builds the top-p lists of vector c over the strip's first and second 16 indices; the
 * pair's lists, then the strips', are merged in order of l (one barrier per slice) and stored as
 * the chunk's partial list (merged by topp_merge). Each checksum is computed by two lanes in the
 * same order and compared bit for bit. */
template <typename T, int P> __host__ __device__ constexpr size_t cols_smem(int warps)
{
    return (size_t)warps * (sizeof(T) * kSlice * 33 + (sizeof(double) + sizeof(int)) * kSlice * P);
}

template <typename T, int R, int P>
__global__ void __launch_bounds__(kThreads)
encode_topp_cols(const T *X, int64_t ld, int64_t S, int64_t L, int bs, int wscheme, T *out,
                 int64_t out_l, int64_t out_v, gk_aux aux, int64_t chunk, int p, gk_topp part,
                 gk_counters *cnt)
{
    extern __shared__ double smem[];
    const int warps = blockDim.x >> 5, wp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    T(*tile)[33] = (T(*)[33])((char *)smem + sizeof(T) * kSlice * 33 * wp);
    double(*lv)[kSlice][P] = (double(*)[kSlice][P])((char *)smem + sizeof(T) * kSlice * 33 * warps);
    int(*lp)[kSlice][P] = (int(*)[kSlice][P])((char *)(lv + warps));
    const int64_t b = blockIdx.x, s0 = b * bs, l_lo = (int64_t)blockIdx.y * chunk;
    const int64_t l_hi = l_lo + chunk < L ? l_lo + chunk : L;
    const int len = (int)(S - s0 < bs ? S - s0 : bs);
    const int64_t l = l_lo + wp * 32 + lane;
    const bool live = l < l_hi;
    const int c = lane >> 1, h = lane & 1;
    blasft_csum own[R], nbr[R];
#pragma unroll
    for (int w = 0; w < R; w++)
        own[w] = nbr[w] = blasft_csum{0.0, 0.0};
    double ax = 0.0;
    for (int q0 = 0; q0 < len; q0 += kSlice) {
        T v[kSlice];
#pragma unroll
        for (int q = 0; q < kSlice; q++)
            v[q] = live && q0 + q < len ? X[l + (s0 + q0 + q) * ld] : (T)0;
#pragma unroll
        for (int q = 0; q < kSlice; q++)
            tile[q][lane] = v[q];
        __syncwarp();
        lane_row_sums<T, R>(v, tile, lane, q0, wscheme, bs, own, nbr, &ax);
        reg_topp<P> t;
#pragma unroll
        for (int q = 0; q < kSlice; q++) {
            /* vector c of the slice, indices 16h + q of the strip, in order of l */
            const int64_t lq = l_lo + wp * 32 + 16 * h + q;
            if (q0 + c < len && lq < l_hi)
                t.add(fabs((double)tile[c][16 * h + q]), lq);
        }
        /* lane 2c takes its partner's list after its own (the partner's indices come later) */
#pragma unroll
        for (int i = 0; i < P; i++) {
            const double pv = __shfl_down_sync(0xffffffffu, t.v[i], 1);
            const int pa = __shfl_down_sync(0xffffffffu, (int)t.at[i], 1);
            if (h == 0 && pa >= 0)
                t.add(pv, pa);
        }
        if (h == 0)
#pragma unroll
            for (int i = 0; i < P; i++) {
                lv[wp][c][i] = t.v[i];
                lp[wp][c][i] = (int)t.at[i];
            }
        __syncthreads();
        /* thread c < 16: vector c's list over the chunk, strips in order of l */
        if (threadIdx.x < kSlice && q0 + (int)threadIdx.x < len) {
            const int cc = threadIdx.x;
            reg_topp<P> u;
            for (int st = 0; st < warps; st++)
#pragma unroll
                for (int i = 0; i < P; i++)
                    if (lp[st][cc][i] >= 0)
                        u.add(lv[st][cc][i], lp[st][cc][i]);
#pragma unroll
            for (int i = 0; i < P; i++)
                if (i < p) {
                    part.val[((int64_t)blockIdx.y * GK_PMAX + i) * S + s0 + q0 + cc] = u.v[i];
                    part.pos[((int64_t)blockIdx.y * GK_PMAX + i) * S + s0 + q0 + cc] = (int)u.at[i];
                }
        }
        __syncthreads();
    }
#pragma unroll
    for (int w = 0; w < R; w++) {
        double v = blasft_csum_value(&own[w]);
        const double twin = __shfl_xor_sync(0xffffffffu, blasft_csum_value(&nbr[w]), 1);
        if (live) {
            if (!(v == twin) && !(v != v && twin != twin)) {
                atomicAdd(&cnt->encoder_faults, 1ull);
                v = nan("");
            }
            out[l * out_l + (b * R + w) * out_v] = (T)v;
        }
    }
    if (live && aux.kind == GK_AUX_MAX)
        aux.out[l * aux.ld_l + b * aux.ld_b] = ax;
}

/* One warp per contiguous vector (large V) ... */
template <typename T, int P>
__global__ void __launch_bounds__(kThreads)
topp_contig_warp(const T *X, int64_t ld, int64_t L, int64_t V, int p, gk_topp out)
{
    int64_t v = (int64_t)blockIdx.x * (kThreads / 32) + threadIdx.x / 32;
    if (v >= V)
        return;
    const int lane = threadIdx.x & 31;
    reg_topp<P> t;
    const T *x = X + v * ld;
    int64_t l = lane;
    for (; l + 96 < L; l += 128) {
        double x0 = mag(x[l]), x1 = mag(x[l + 32]);
        double x2 = mag(x[l + 64]), x3 = mag(x[l + 96]);
        t.add(x0, l);
        t.add(x1, l + 32);
        t.add(x2, l + 64);
        t.add(x3, l + 96);
    }
    for (; l < L; l += 32)
        t.add(mag(x[l]), l);
    reg_topp<P> r;
    warp_topp<P>(t, r, p);
    if (lane == 0)
        reg_store<P>(out, v, r, p);
}

/* ... one CUDA block per contiguous vector (few long vectors). */
template <typename T, int P>
__global__ void __launch_bounds__(kThreads)
topp_contig_block(const T *X, int64_t ld, int64_t L, int p, gk_topp out)
{
    block_topp<T, P>(X + (int64_t)blockIdx.x * ld, L, p, out, blockIdx.x);
}

/* Strided vectors: one thread per (vector, chunk of l); the chunks' lists are merged after.
 * Partial entry i of chunk c, vector v at (c * GK_PMAX + i) * V + v (coalesced). */
template <typename T, int P>
__global__ void __launch_bounds__(kThreads)
topp_strided(const T *X, int64_t ld, int64_t L, int64_t V, int p, int64_t chunk, gk_topp part)
{
    int64_t v = (int64_t)blockIdx.x * kThreads + threadIdx.x;
    if (v >= V)
        return;
    int64_t c = blockIdx.y, l0 = c * chunk, l1 = l0 + chunk < L ? l0 + chunk : L;
    reg_topp<P> t;
    int64_t l = l0;
    for (; l + 4 <= l1; l += 4) {
        double x0 = mag(X[v + l * ld]), x1 = mag(X[v + (l + 1) * ld]);
        double x2 = mag(X[v + (l + 2) * ld]), x3 = mag(X[v + (l + 3) * ld]);
        t.add(x0, l);
        t.add(x1, l + 1);
        t.add(x2, l + 2);
        t.add(x3, l + 3);
    }
    for (; l < l1; l++)
        t.add(mag(X[v + l * ld]), l);
#pragma unroll
    for (int i = 0; i < P; i++)
        if (i < p) {
            part.val[(c * GK_PMAX + i) * V + v] = t.v[i];
            part.pos[(c * GK_PMAX + i) * V + v] = (int)t.at[i];
        }
}

template <int P>
__device__ void merge_one(gk_topp part, int64_t nchunk, int64_t V, int p, gk_topp out, int64_t v)
{
    reg_topp<P> t;
    /* the loads of 8 chunks first, then their insertions in chunk order: one memory round trip
     * per 8 chunks instead of one per entry */
    constexpr int G = 8;
    for (int64_t c0 = 0; c0 < nchunk; c0 += G) {
        double val[G][P];
        int pos[G][P];
#pragma unroll
        for (int g = 0; g < G; g++)
#pragma unroll
            for (int i = 0; i < P; i++) {
                int64_t e = ((c0 + g) * GK_PMAX + i) * V + v;
                bool live = c0 + g < nchunk && i < p;
                val[g][i] = live ? part.val[e] : 0.0;
                pos[g][i] = live ? part.pos[e] : -1;
            }
#pragma unroll
        for (int g = 0; g < G; g++)
#pragma unroll
            for (int i = 0; i < P; i++)
                if (pos[g][i] >= 0)
                    t.add(val[g][i], pos[g][i]);
    }
    reg_store<P>(out, v, t, p);
}

template <int P>
__global__ void __launch_bounds__(kThreads)
topp_merge(gk_topp part, int64_t nchunk, int64_t V, int p, gk_topp out)
{
    const int64_t v = (int64_t)blockIdx.x * kThreads + threadIdx.x;
    if (v < V)
        merge_one<P>(part, nchunk, V, p, out, v);
}

/* topp_merge in its first mblocks CUDA blocks; in one more block per vector, the lists of the
 * pass's own outputs (gk_own_lists): V1 envelopes, then V2 checksum vectors, each L long. With
 * mblocks 0, those lists alone (gk_topp_pair). */
template <typename T, int P>
__global__ void __launch_bounds__(kThreads)
topp_merge_own(gk_topp part, int64_t nchunk, int64_t V, int p, gk_topp out, unsigned int mblocks,
               const double *env, int64_t V1, gk_topp out1, const T *cs, gk_topp out2, int64_t L)
{
    if (blockIdx.x < mblocks) {
        const int64_t v = (int64_t)blockIdx.x * kThreads + threadIdx.x;
        if (v < V)
            merge_one<P>(part, nchunk, V, p, out, v);
        return;
    }
    const int64_t v = blockIdx.x - mblocks;
    if (v < V1)
        block_topp<double, P>(env + v * L, L, p, out1, v);
    else
        block_topp<T, P>(cs + (v - V1) * L, L, p, out2, v - V1);
}

} // namespace

/* encode_tiled's grid: blocks along s, 32 indices l per CUDA block; worth it from 64 */
static bool tiled_fits(int64_t nblk, int64_t L)
{
    return L >= 64 && nblk <= 65535 && (L + 31) / 32 <= 65535;
}

template <typename T, typename O>
void gk_encode(const T *X, int64_t ld, int contiguous, int64_t S, int64_t L, int bs, int r,
               int wscheme, O *out, int64_t out_l, int64_t out_v, gk_aux aux, gk_counters *cnt,
               cudaStream_t st, int conj)
{
    int64_t nblk = (S + bs - 1) / bs;
    if (nblk == 0 || L == 0)
        return;
    bool tiled = contiguous && tiled_fits(nblk, L);
    /* the tiled kernel is for real data (the throughput the targets are about); complex data
     * takes the warp-per-vector kernel */
    if constexpr (gk_el<T>::P == 1) {
        if (tiled) {
            encode_tiled<T, O><<<dim3((unsigned int)nblk, (unsigned int)((L + 31) / 32)), kThreads,
                                 0, st>>>(X, ld, S, L, bs, r, wscheme, out, out_l, out_v, aux, cnt,
                                          nullptr, 0);
            return;
        }
    }
    if (contiguous)
        encode_contig<T, O><<<blocks_for(nblk * L, kThreads / 32), kThreads, 0, st>>>(
            X, ld, S, L, bs, r, wscheme, out, out_l, out_v, aux, nblk, cnt, conj);
    else
        encode_strided<T, O><<<dim3(blocks_for(L, kThreads / 4), (unsigned int)(nblk < 65535 ? nblk : 65535)),
                               kThreads, 0, st>>>(X, ld, S, L, bs, r, wscheme, out, out_l, out_v,
                                                  aux, cnt, conj);
}

template <typename T> __global__ void repeat_kernel(T *x, int64_t len, int64_t count)
{
    const int64_t total = len * count;
    for (int64_t e = len + (int64_t)blockIdx.x * kThreads + threadIdx.x; e < total;
         e += (int64_t)gridDim.x * kThreads)
        x[e] = x[e % len];
}

template <typename T> void gk_repeat(T *x, int64_t len, int64_t count, cudaStream_t st)
{
    if (len <= 0 || count <= 1)
        return;
    const int64_t blocks = (len * (count - 1) + kThreads - 1) / kThreads;
    repeat_kernel<T><<<(unsigned int)(blocks < 4096 ? blocks : 4096), kThreads, 0, st>>>(x, len,
                                                                                         count);
}

template <typename T>
bool gk_encode_copy(const T *X, int64_t ld, int64_t S, int64_t L, int bs, int r, int wscheme,
                    T *out, int64_t out_l, int64_t out_v, gk_aux aux, gk_counters *cnt, T *copy,
                    int64_t ldcopy, cudaStream_t st)
{
    const int64_t nblk = (S + bs - 1) / bs;
    if constexpr (gk_el<T>::P == 1) {
        if (nblk > 0 && tiled_fits(nblk, L)) {
            encode_tiled<T, T><<<dim3((unsigned int)nblk, (unsigned int)((L + 31) / 32)), kThreads,
                                 0, st>>>(X, ld, S, L, bs, r, wscheme, out, out_l, out_v, aux, cnt,
                                          copy, ldcopy);
            return true;
        }
    }
    return false;
}

/* Chunks along l so that about `want` threads (strided: one per vector and chunk) or warps
 * (contiguous) cover the memory latency; chunks not shorter than 64 (strided) or 256
 * (contiguous) elements. */
static int64_t chunks_for(int64_t V, int64_t L, int64_t want, int64_t min_len)
{
    int64_t c = (want + V - 1) / (V > 0 ? V : 1);
    int64_t most = (L + min_len - 1) / min_len;
    c = c < most ? c : most;
    return c < 1 ? 1 : (c > 1024 ? 1024 : c);
}
static int64_t strided_chunks(int64_t V, int64_t L) { return chunks_for(V, L, 128 * 1024, 128); }

/* encode_topp_rows's chunks along l: the strided top-p pass's, or for a small operand (S L <=
 * 2^20, whose call is a chain of short kernels) chunks of one slice each, up to 64 of them: more
 * CUDA blocks, each a short one (D 256: two blocks of eight slices each before, and a replayed
 * call took 0.048 ms instead of 0.031 on the H100) */
static int64_t rows_chunks(int64_t S, int64_t L)
{
    const int64_t c = strided_chunks(S, L);
    if (S * L > ((int64_t)1 << 20))
        return c;
    const int64_t slices = (L + kSlice - 1) / kSlice < 64 ? (L + kSlice - 1) / kSlice : 64;
    return slices > c ? slices : c;
}

int64_t gk_topp_scratch(int64_t V, int64_t L) { return rows_chunks(V, L) * V * GK_PMAX; }

template <typename T, int P>
static void topp_launch(const T *X, int64_t ld, int contiguous, int64_t L, int64_t V, int p,
                        gk_topp out, gk_topp scratch, cudaStream_t st)
{
    if (contiguous && V < 2048) {
        topp_contig_block<T, P><<<(unsigned int)V, kThreads, 0, st>>>(X, ld, L, p, out);
        return;
    }
    if (contiguous) {
        topp_contig_warp<T, P><<<blocks_for(V, kThreads / 32), kThreads, 0, st>>>(X, ld, L, V, p, out);
        return;
    }
    int64_t nch = strided_chunks(V, L), chunk = (L + nch - 1) / nch;
    if (chunk == 0)
        chunk = 1;
    topp_strided<T, P><<<dim3(blocks_for(V, kThreads), (unsigned int)nch), kThreads, 0, st>>>(
        X, ld, L, V, p, chunk, scratch);
    topp_merge<P><<<blocks_for(V, kThreads), kThreads, 0, st>>>(scratch, nch, V, p, out);
}

template <typename T, int R, int P>
static bool encode_topp_rows_launch(const T *X, int64_t ld, int64_t S, int64_t L, int bs,
                                    int wscheme, T *out, int64_t out_l, int64_t out_v, gk_aux aux,
                                    int p, gk_topp lists, gk_topp scratch, gk_counters *cnt,
                                    cudaStream_t st, gk_own_lists *own)
{
    /* chunks along l (rows_chunks: the scratch is sized for them), whole slices each */
    int64_t nch = rows_chunks(S, L), chunk = (L + nch - 1) / nch;
    chunk = (chunk + kSlice - 1) / kSlice * kSlice;
    nch = (L + chunk - 1) / chunk;
    const int64_t nblk = (S + bs - 1) / bs;
    const int strips = (bs + 31) / 32 < 8 ? (bs + 31) / 32 : 8, warps = strips > R ? strips : R;
    encode_topp_rows<T, R, P><<<dim3((unsigned int)nblk, (unsigned int)nch), 32 * warps,
                                rows_region<T>() * warps, st>>>(X, ld, S, L, bs, wscheme, out, out_l,
                                                                out_v, aux, chunk, p, scratch, cnt);
    const unsigned int mblocks = blocks_for(S, kThreads);
    /* the own lists where the outputs are packed vectors along l, few of them */
    const int64_t V1 = nblk, V2 = nblk * R;
    if (own && aux.kind == GK_AUX_MAX && aux.ld_l == 1 && aux.ld_b == L &&
        out_l == 1 && out_v == L && V1 < 2048 && V2 < 2048) {
        topp_merge_own<T, P><<<mblocks + (unsigned int)(V1 + V2), kThreads, 0, st>>>(
            scratch, nch, S, p, lists, mblocks, aux.out, V1, own->env, out, own->cs, L);
        own->made = true;
        return true;
    }
    topp_merge<P><<<mblocks, kThreads, 0, st>>>(scratch, nch, S, p, lists);
    return true;
}

/* Where the fused operand passes apply (real data, BS <= 256, R <= 2, aux NONE or MAX), launch(R,
 * P) with the instantiation for r checksums and lists of capacity P >= p; false where they do
 * not, or where launch declines. */
template <typename T, typename F>
static bool fused_dispatch(int64_t S, int64_t L, int bs, int r, int p, gk_aux aux, F launch)
{
    if constexpr (gk_el<T>::P == 2) {
        return false; /* complex data: the separate passes */
    } else {
        if (bs > 256 || S == 0 || L == 0 || (S + bs - 1) / bs > 2147483647 || r > 2 ||
            (aux.kind != GK_AUX_NONE && aux.kind != GK_AUX_MAX))
            return false;
        auto with_r = [&](auto rr) { return with_capacity(p, [&](auto P) { return launch(rr, P); }); };
        return r > 1 ? with_r(std::integral_constant<int, 2>{}) : with_r(std::integral_constant<int, 1>{});
    }
}

template <typename T, int R, int P>
static bool encode_topp_cols_launch(const T *X, int64_t ld, int64_t S, int64_t L, int bs,
                                    int wscheme, T *out, int64_t out_l, int64_t out_v, gk_aux aux,
                                    int p, gk_topp lists, gk_topp scratch, gk_counters *cnt,
                                    cudaStream_t st)
{
    /* chunks of at most 256 indices l (a warp per 32), no more of them than the scratch holds
     * (the strided top-p pass's count): otherwise the separate passes */
    const int64_t most = strided_chunks(S, L);
    int64_t chunk = (L + most - 1) / most;
    chunk = (chunk + 31) / 32 * 32;
    if (chunk > 256)
        return false;
    const int64_t nch = (L + chunk - 1) / chunk, nblk = (S + bs - 1) / bs;
    const int warps = (int)(chunk / 32);
    encode_topp_cols<T, R, P><<<dim3((unsigned int)nblk, (unsigned int)nch), 32 * warps,
                                cols_smem<T, P>(warps), st>>>(X, ld, S, L, bs, wscheme, out, out_l,
                                                              out_v, aux, chunk, p, scratch, cnt);
    topp_merge<P><<<blocks_for(S, kThreads), kThreads, 0, st>>>(scratch, nch, S, p, lists);
    return true;
}

template <typename T>
bool gk_encode_topp(const T *X, int64_t ld, int contiguous, int64_t S, int64_t L, int bs, int r,
                    int wscheme, T *out, int64_t out_l, int64_t out_v, gk_aux aux, int p,
                    gk_topp lists, gk_topp scratch, gk_counters *cnt, cudaStream_t st,
                    gk_own_lists *own)
{
    return fused_dispatch<T>(S, L, bs, r, p, aux, [&](auto R, auto P) {
        constexpr int RR = decltype(R)::value, PP = decltype(P)::value;
        return contiguous ? encode_topp_rows_launch<T, RR, PP>(X, ld, S, L, bs, wscheme, out, out_l,
                                                               out_v, aux, p, lists, scratch, cnt, st,
                                                               own)
                          : encode_topp_cols_launch<T, RR, PP>(X, ld, S, L, bs, wscheme, out, out_l,
                                                               out_v, aux, p, lists, scratch, cnt, st);
    });
}

template <typename T>
bool gk_topp_pair(const double *env, const T *X, int64_t L, int64_t V1, int64_t V2, int p,
                  gk_topp out1, gk_topp out2, cudaStream_t st)
{
    if (V1 <= 0 || V2 <= 0 || V1 >= 2048 || V2 >= 2048)
        return false;
    const unsigned int grid = (unsigned int)(V1 + V2);
    const gk_topp none = {nullptr, nullptr};
    with_capacity(p, [&](auto P) {
        topp_merge_own<T, decltype(P)::value><<<grid, kThreads, 0, st>>>(none, 0, 0, p, none, 0, env,
                                                                         V1, out1, X, out2, L);
    });
    return true;
}

template <typename T>
void gk_topp_run(const T *X, int64_t ld, int contiguous, int64_t L, int64_t V, int p, gk_topp out,
                 gk_topp scratch, cudaStream_t st)
{
    if (V == 0)
        return;
    /* lists of P >= p entries, of which the first p are kept: the p largest */
    with_capacity(p, [&](auto P) {
        topp_launch<T, decltype(P)::value>(X, ld, contiguous, L, V, p, out, scratch, st);
    });
}

#define INSTANTIATE(T)                                                                             \
    template void gk_encode<T, T>(const T *, int64_t, int, int64_t, int64_t, int, int, int, T *,   \
                                  int64_t, int64_t, gk_aux, gk_counters *, cudaStream_t, int);     \
    template void gk_topp_run<T>(const T *, int64_t, int, int64_t, int64_t, int, gk_topp,          \
                                 gk_topp, cudaStream_t);                                           \
    template bool gk_topp_pair<T>(const double *, const T *, int64_t, int64_t, int64_t, int,       \
                                  gk_topp, gk_topp, cudaStream_t);                                 \
    template void gk_repeat<T>(T *, int64_t, int64_t, cudaStream_t);                               \
    template bool gk_encode_copy<T>(const T *, int64_t, int64_t, int64_t, int, int, int, T *,      \
                                    int64_t, int64_t, gk_aux, gk_counters *, T *, int64_t,         \
                                    cudaStream_t);                                                 \
    template bool gk_encode_topp<T>(const T *, int64_t, int, int64_t, int64_t, int, int, int, T *,  \
                                    int64_t, int64_t, gk_aux, int, gk_topp, gk_topp, gk_counters *, \
                                    cudaStream_t, gk_own_lists *);
INSTANTIATE(float)
INSTANTIATE(double)
INSTANTIATE(float2)
INSTANTIATE(double2)
/* C's checksums in double (gk_check_sums, where its own passes do not apply) */
#define INSTANTIATE_TO_DOUBLE(T)                                                                   \
    template void gk_encode<T, double>(const T *, int64_t, int, int64_t, int64_t, int, int, int,   \
                                       double *, int64_t, int64_t, gk_aux, gk_counters *,          \
                                       cudaStream_t, int);
INSTANTIATE_TO_DOUBLE(float)
INSTANTIATE_TO_DOUBLE(float2)
INSTANTIATE_TO_DOUBLE(double2)
