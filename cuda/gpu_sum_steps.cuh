/* The per-element steps of the encoding and top-p passes: a checksum's compensated sums with their
 * side result, a lane's sums over a slice, top-p lists in registers and per CUDA block. The operand
 * passes (gpu_encode.cu), C's passes and the row side on demand (gpu_check.cu) take the same
 * steps, so that a checksum or list made on demand equals the eager one. */
#ifndef BLASFT_GPU_SUM_STEPS_CUH
#define BLASFT_GPU_SUM_STEPS_CUH

#include "gpu_device.cuh"

namespace {

/* Stores checksum idx (P parts): in the data type, or in double with the parts interleaved. */
template <typename T, typename O>
__device__ __forceinline__ void store_out(O *out, int64_t idx, const double *v)
{
    if (gk_el<T>::P == 2 && gk_el<O>::P == 1)
        for (int q = 0; q < gk_el<T>::P; q++)
            out[idx * gk_el<T>::P + q] = make_el<O>(v[q], 0.0);
    else
        out[idx] = make_el<O>(v[0], v[1]);
}

/* The side result of an encoding pass: the block's envelope max|x| or its sum of squares. */
__device__ __forceinline__ double aux_step(int kind, double a, double x)
{
    return kind == GK_AUX_MAX ? fmax(a, fabs(x)) : kind == GK_AUX_SQ ? fma(x, x, a) : a;
}
__device__ __forceinline__ double aux_join(int kind, double a, double b)
{
    return kind == GK_AUX_MAX ? fmax(a, b) : a + b;
}

/* One element at position pos of its block into the sums acc[checksum][part] and the side
 * result (every part: envelope max(|re|, |im|), sum of squares |x|^2). */
template <typename T>
__device__ __forceinline__ void take(blasft_csum (&acc)[2][2], double &ax, int aux_kind, T x,
                                     int r, int wscheme, int pos, int bs)
{
    const double wt = r > 1 ? weight_of(1, wscheme, pos, bs) : 0.0;
#pragma unroll
    for (int q = 0; q < gk_el<T>::P; q++) {
        double v = part_of(x, q);
        blasft_csum_add(&acc[0][q], v);
        if (r > 1)
            blasft_csum_add(&acc[1][q], wt * v);
        ax = aux_step(aux_kind, ax, v);
    }
}

/* Checksum w's parts from the lane pairs; NaN and an encoder fault where a pair disagreed. */
template <typename T, typename O>
__device__ __forceinline__ void finish_pair(blasft_csum (&acc)[2][2], int w, bool reduce,
                                            bool writer, int conj, O *out, int64_t idx,
                                            gk_counters *cnt)
{
    double v[2] = {0.0, 0.0};
    bool bad = false;
#pragma unroll
    for (int q = 0; q < gk_el<T>::P; q++) {
        bool b;
        v[q] = pair_reduce(acc[w][q], reduce, &b);
        bad = bad || b;
    }
    if (writer) {
        if (bad) {
            atomicAdd(&cnt->encoder_faults, 1ull);
            v[0] = v[1] = nan("");
        }
        if (conj)
            v[1] = -v[1];
        store_out<T, O>(out, idx, v);
    }
}

/* A top-p list in registers (P a compile-time bound, the first p entries used): values
 * descending, -1 marks an empty entry. Insertion keeps the p largest and, among equal values, the
 * first inserted: the rule of blasft_topp_insert (abft_arith.h), unrolled so that nothing is
 * indexed at run time (the tests compare the lists with that function's). */
template <int P> struct reg_topp {
    double v[P];
    int64_t at[P];
    __device__ __forceinline__ reg_topp()
    {
#pragma unroll
        for (int i = 0; i < P; i++) {
            v[i] = -1.0;
            at[i] = -1;
        }
    }
    __device__ __forceinline__ void add(double x, int64_t pos)
    {
        if (!(x > v[P - 1]))
            return;
        bool placed = false;
#pragma unroll
        for (int i = P - 1; i >= 1; i--) {
            if (!placed) {
                if (x > v[i - 1]) {
                    v[i] = v[i - 1];
                    at[i] = at[i - 1];
                } else {
                    v[i] = x;
                    at[i] = pos;
                    placed = true;
                }
            }
        }
        if (!placed) {
            v[0] = x;
            at[0] = pos;
        }
    }
    /* drops the head (the warp merge's winner) */
    __device__ __forceinline__ void pop()
    {
#pragma unroll
        for (int i = 0; i + 1 < P; i++) {
            v[i] = v[i + 1];
            at[i] = at[i + 1];
        }
        v[P - 1] = -1.0;
        at[P - 1] = -1;
    }
};

/* Reduces the lanes' lists to the warp's p largest with p rounds of a warp arg-max (ties: the
 * lower lane, which holds the lower position where lanes stride over the vector). Every lane
 * ends with the result in out. */
template <int P> __device__ __forceinline__ void warp_topp(reg_topp<P> &t, reg_topp<P> &out, int p)
{
    const int lane = threadIdx.x & 31;
#pragma unroll
    for (int round = 0; round < P; round++) {
        double cv = t.v[0];
        long long cp = t.at[0];
        int who = lane;
        for (int off = 16; off > 0; off >>= 1) {
            double ov = __shfl_xor_sync(0xffffffffu, cv, off);
            long long op = __shfl_xor_sync(0xffffffffu, cp, off);
            int ow = __shfl_xor_sync(0xffffffffu, who, off);
            if (ov > cv || (ov == cv && ow < who)) {
                cv = ov;
                cp = op;
                who = ow;
            }
        }
        if (who == lane)
            t.pop();
        if (round < p) {
            out.v[round] = cv;
            out.at[round] = cp;
        }
    }
}

template <int P>
__device__ __forceinline__ void reg_store(gk_topp out, int64_t e, const reg_topp<P> &t, int p)
{
#pragma unroll
    for (int i = 0; i < P; i++)
        if (i < p) {
            out.val[e * GK_PMAX + i] = t.v[i] < 0.0 ? 0.0 : t.v[i];
            out.pos[e * GK_PMAX + i] = t.v[i] < 0.0 ? -1 : (int)t.at[i];
        }
}

/* A lane's sums along its row of the slice: its own values (registers) into own, its neighbour's
 * (lane ^ 1, from the warp's tile) into nbr, the second copy of the neighbour's sums; q0 is the
 * slice's first position in the block; *ax (if given) takes max |own value|. */
template <typename T, int R>
__device__ __forceinline__ void lane_row_sums(const T (&v)[kSlice], const T (*tile)[33], int lane,
                                              int q0, int wscheme, int bs, blasft_csum (&own)[R],
                                              blasft_csum (&nbr)[R], double *ax)
{
    double mx = ax ? *ax : 0.0;
#pragma unroll
    for (int q = 0; q < kSlice; q++) {
        const double x = (double)v[q], y = (double)tile[q][lane ^ 1];
        blasft_csum_add(&own[0], x);
        blasft_csum_add(&nbr[0], y);
        if (R > 1) {
            const double wc = weight_of(1, wscheme, q0 + q, bs);
            blasft_csum_add(&own[R - 1], __dmul_rn(wc, x));
            blasft_csum_add(&nbr[R - 1], __dmul_rn(wc, y));
        }
        if (ax)
            mx = fmax(mx, fabs(x));
    }
    if (ax)
        *ax = mx;
}

/* Lane pair 2c, 2c+1 of a warp: column c of the warp's slice tile (kSlice columns x 32 rows)
 * summed over the strip's rows, both lanes the same (the two copies), the upper and lower 16 rows
 * as two chains joined in that order; wp is the strip (its rows start at wp * 32 in the block);
 * *ax (if given) takes max |x| over the column. */
template <typename T, int R>
__device__ __forceinline__ void strip_column_sums(const T (*tile)[33], int c, int wp, int wscheme,
                                                  int bs, blasft_csum (&col)[R], double *ax)
{
    blasft_csum lower[R];
#pragma unroll
    for (int w = 0; w < R; w++)
        col[w] = lower[w] = blasft_csum{0.0, 0.0};
    double mx = 0.0;
#pragma unroll
    for (int q = 0; q < kSlice; q++) {
        const double u0 = (double)tile[c][q], u1 = (double)tile[c][q + 16];
        blasft_csum_add(&col[0], u0);
        blasft_csum_add(&lower[0], u1);
        if (R > 1) {
            blasft_csum_add(&col[R - 1], __dmul_rn(weight_of(1, wscheme, wp * 32 + q, bs), u0));
            blasft_csum_add(&lower[R - 1], __dmul_rn(weight_of(1, wscheme, wp * 32 + q + 16, bs), u1));
        }
        if (ax)
            mx = fmax(mx, fmax(fabs(u0), fabs(u1)));
    }
#pragma unroll
    for (int w = 0; w < R; w++)
        csum_merge(&col[w], lower[w]);
    if (ax)
        *ax = mx;
}

/* The top-p list of the contiguous vector x (length L) by a whole CUDA block of kThreads: warps'
 * lists merged by thread 0 into list v of out; ends with a barrier (the block may call it again). */
template <typename T, int P>
__device__ void block_topp(const T *x, int64_t L, int p, gk_topp out, int64_t v)
{
    __shared__ double sv[kThreads / 32][P];
    __shared__ long long sp[kThreads / 32][P];
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    reg_topp<P> t;
    int64_t l = threadIdx.x;
    for (; l + 3 * kThreads < L; l += 4 * kThreads) {
        double x0 = mag(x[l]), x1 = mag(x[l + kThreads]);
        double x2 = mag(x[l + 2 * kThreads]), x3 = mag(x[l + 3 * kThreads]);
        t.add(x0, l);
        t.add(x1, l + kThreads);
        t.add(x2, l + 2 * kThreads);
        t.add(x3, l + 3 * kThreads);
    }
    for (; l < L; l += kThreads)
        t.add(mag(x[l]), l);
    reg_topp<P> r;
    warp_topp<P>(t, r, p);
    if (lane == 0) {
#pragma unroll
        for (int i = 0; i < P; i++) {
            sv[warp][i] = r.v[i];
            sp[warp][i] = r.at[i];
        }
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        /* equal values may keep another position than the host's sequential rule; the values
         * (all that the bound uses besides matching positions) are the same */
        reg_topp<P> f;
        for (int w = 0; w < kThreads / 32; w++)
#pragma unroll
            for (int i = 0; i < P; i++)
                if (i < p && sv[w][i] >= 0.0)
                    f.add(sv[w][i], sp[w][i]);
        reg_store<P>(out, v, f, p);
    }
    __syncthreads();
}

} // namespace

#endif
