/* GPU ABFT kernels' launchers (gpu_encode.cu: operands; gpu_check.cu: C and the fault path); the
 * orchestration is gpu_gemm.cu.
 *
 * Layout of the checksums (method.md 1, the border of the extended matrix, in our buffers):
 *   AcsT  k x (R*mb), ld k:  AcsT(l, I*R+w) = sum_{i in block I} w_w(i) op(A)(i,l)  (op(A)'s
 *         column checksums, stored transposed so every checksum row is contiguous)
 *   Bcs   k x (R*nb), ld k:  Bcs(l, J*R+w)  = sum_{j in block J} w_w(j) op(B)(l,j)
 *   Ccs   (R*mb) x n, ld R*mb: column checksums of C;  Crs  m x (R*nb), ld m: row checksums.
 * w = 0 is the unweighted checksum, w = 1 the weighted one (scheme p.weights). */
#ifndef BLASFT_GPU_KERNELS_H
#define BLASFT_GPU_KERNELS_H

#include <cuda_runtime.h>
#include <stdint.h>

extern "C" {
#include "abft/abft_arith.h"
}

/* Element types: real (float, double) and complex (float2, double2: cuComplex and
 * cuDoubleComplex, parts re, im). Checksums of complex data use real weights, so every part is
 * encoded on its own; buffers of double checksums hold the parts interleaved (P per element). */
template <typename T> struct gk_el {
    using real = T;
    static constexpr int P = 1;
    static constexpr int t = sizeof(T) == 4 ? BLASFT_T_FLOAT : BLASFT_T_DOUBLE; /* mantissa bits */
};
template <> struct gk_el<float2> {
    using real = float;
    static constexpr int P = 2;
    static constexpr int t = BLASFT_T_FLOAT;
};
template <> struct gk_el<double2> {
    using real = double;
    static constexpr int P = 2;
    static constexpr int t = BLASFT_T_DOUBLE;
};

/* Device buffers are laid out at 256-byte boundaries: gk_align rounds a size up to one; gk_carve
 * hands out the offsets of buffers placed one after another from o on (the workspace's layout in
 * gpu_gemm.cu, a prepared operand's in gpu_prep.cu). */
inline size_t gk_align(size_t x) { return (x + 255) & ~(size_t)255; }
struct gk_carve {
    size_t o;
    size_t take(size_t bytes)
    {
        const size_t at = o;
        o += gk_align(bytes);
        return at;
    }
};

/* The GPU keeps at most this many entries of "PEA max p" per vector. */
#define GK_PMAX 8
/* Events recorded per GEMM; more are counted but not described. */
#define GK_MAX_RECORDS 16

enum { GK_REC_CORRECTED = 0, GK_REC_RECOMPUTED, GK_REC_DETECTED, GK_REC_UNCORRECTABLE };

typedef struct gk_record {
    int kind;
    int64_t block_row, block_col, row, col;
    int64_t matrix; /* its index in the caller's batch (checked as a whole), else -1 */
    double syndrome, threshold;
} gk_record;

/* Outcome counters of one GEMM, in device memory; copied to pinned memory at the end. */
typedef struct gk_counters {
    unsigned long long detected, corrected, recomputed, uncorrectable, encoder_faults;
    unsigned long long false_alarms; /* recomputed blocks equal to the GEMM's within rounding */
    unsigned long long row_checks; /* row checksum elements compared on demand (times P) */
    unsigned int tile_count; /* flagged tiles listed in tile_list */
    unsigned int recompute_count, recompute_done; /* blocks listed in gk_gemm::rlist; CUDA
                                                     blocks of the recomputation finished */
    unsigned int nrec;
    gk_record rec[GK_MAX_RECORDS];
} gk_counters;

/* A flagged block to compute again (gk_correct): action 1 recompute (C takes the new values),
 * 2 compare and report as detected (detect mode), 3 compare and report as uncorrectable unless
 * nothing is apart; apart: elements further from their recomputation than rounding. */
typedef struct gk_recompute {
    int tile, action;
    unsigned long long n_det;
    double syndrome, threshold;
    unsigned int apart;
} gk_recompute;

/* Top-p list of a set of vectors: vector v's entries at [v*GK_PMAX, v*GK_PMAX + p), values
 * descending, position -1 for an empty entry. */
typedef struct gk_topp {
    double *val;
    int *pos;
} gk_topp;

enum { GK_AUX_NONE = 0, GK_AUX_MAX, GK_AUX_SQ };

/* Optional side output of an encoding pass, per (block b, index l): out[l*ld_l + b*ld_b]. */
typedef struct gk_aux {
    int kind;
    double *out;
    int64_t ld_l, ld_b;
} gk_aux;

template <typename T> struct gk_gemm {
    int64_t m, n, k, mb, nb;
    char ta, tb;
    const T *A;
    int64_t lda;
    const T *B;
    int64_t ldb;
    T *C;
    int64_t ldc;
    T alpha_v, beta_v;         /* used when the pointers are NULL (host pointer mode) */
    const T *alpha_p, *beta_p; /* device pointer mode */
    const T *Cold;             /* copy of the old C for recomputation, NULL if beta is known 0 */
    int64_t ldcold;
    int bs, r, wscheme, p;
    double omega;
    int correct;   /* 0: detect only */
    int recompute; /* on_error == recompute */
    T *AcsT, *Bcs, *Ccs_ref, *Crs_ref;
    double *Ccs_rec, *Crs_rec, *Ccs_eps, *Crs_eps; /* rec: P parts per element; eps: one per
                                                      element, applied to every part (host rule) */
    gk_topp tA, tB, tAc, tBc; /* op(A) rows, op(B) columns, AcsT columns, Bcs columns */
    gk_topp tEa, tEb;         /* envelopes: max over a block's rows of op(A) / columns of op(B) */
    int block_lists;          /* 1: bound op(A)'s rows / op(B)'s columns by their blocks' envelopes
                                 (tA, tB not built) */
    double *Ccs_sq, *Crs_sq;  /* sum of squares of the old C per (block, column) / (row, block) */
    /* 1: the check pass computes column checksums only, and gk_correct computes the row side
     * (Bcs, envB with tBc and tEb, Crs_ref, Crs_rec, Crs_eps) for the block columns holding a
     * flagged block, before locating; 0: every checksum in the check pass. Not with block_lists
     * (the column thresholds would need every block's envelope of op(B)) */
    int rows_on_demand;
    /* 1 (rows on demand with Cold): the old C's row checksums and Crs_sq are taken from Cold
     * where a block flags, not encoded before the GEMM */
    int cold_rows;
    /* 1 (PROJ, rows on demand, FP64): no pass over op(A) before the GEMM, as PROJ's column
     * thresholds use none of it; rows_on_demand builds tA for the flagged blocks' rows */
    int a_lists_on_demand;
    double *envB; /* k x nb: max over block J's columns of |op(B)(l, j)| (rows on demand) */
    gk_counters *prep_cnt[2]; /* counters of prepared operands (or NULL): their encoder faults
                                 move to cnt in gk_correct */
    /* sum and max of w^2: [side 0 column checksums / 1 row checksums][checksum w][full block 0,
     * last block 1] */
    double w2[2][2][2], wmax2[2][2][2];
    int *tile_flag, *tile_list;
    gk_recompute *rlist; /* capacity mb * nb */
    gk_counters *cnt;
    /* PROJ (gk_proj, real data; NULL otherwise): the checksum vectors' k-arrays (GK_PROJ_NV per
     * vector and k), the column checksums' reference in double (replaces Ccs_ref in the check and
     * the correction) and the old C's column checksums in double (beta != 0); the thresholds go
     * to Ccs_eps. pseed: this GEMM's projection signs. */
    double *Pvec, *Pref, *Pold;
    uint64_t pseed;
    /* PROJ's tensor-core walks (gk_proj on sm_80 and later; NULL: the scalar scan): scale
     * exponents per vector (GK_PROJ_EXP_KINDS ints) and the packed walk operands
     * (gk_proj_pack_bytes) */
    int *Pexp;
    char *Ppack;
};

/* The GEMM's scalars: in device memory (pointer mode device) or by value. */
template <typename T> __device__ __forceinline__ T alpha_of(const gk_gemm<T> &g)
{
    return g.alpha_p ? *g.alpha_p : g.alpha_v;
}
template <typename T> __device__ __forceinline__ T beta_of(const gk_gemm<T> &g)
{
    return g.beta_p ? *g.beta_p : g.beta_v;
}

/* Partitioned weighted checksums of X along s, for every l: element (s, l) is X[s + l*ld]
 * (contiguous) or X[l + s*ld] (strided); S elements along s, L along l; the checksum of block b,
 * weight w, index l goes to out[l*out_l + (b*r + w)*out_v] (O: T or double; complex T with O =
 * double: parts interleaved, index*2 + part). conj: the imaginary parts' sums change sign (op =
 * conjugate transpose; exact). The aux side output of complex data: envelope max(|re|, |im|),
 * sum of squares |x|^2. Each checksum is computed by two
 * neighbouring lanes and compared by a warp shuffle; a mismatch counts an encoder fault and
 * stores NaN (so every check that uses it flags and its blocks are recomputed). */
template <typename T, typename O>
void gk_encode(const T *X, int64_t ld, int contiguous, int64_t S, int64_t L, int bs, int r,
               int wscheme, O *out, int64_t out_l, int64_t out_v, gk_aux aux, gk_counters *cnt,
               cudaStream_t st, int conj = 0);

/* gk_encode of contiguous real data (element (s, l) is X[s + l*ld]) that also copies X into
 * copy (leading dimension ldcopy) from the same read. Returns false, launching nothing, where
 * its kernel does not apply (complex data, L < 64, grids too large): then encode and copy apart. */
template <typename T>
bool gk_encode_copy(const T *X, int64_t ld, int64_t S, int64_t L, int bs, int r, int wscheme,
                    T *out, int64_t out_l, int64_t out_v, gk_aux aux, gk_counters *cnt, T *copy,
                    int64_t ldcopy, cudaStream_t st);

/* x[len, count * len) = count - 1 more copies of x[0, len): checksums of a matrix whose columns
 * are all equal, made from its first column. */
template <typename T> void gk_repeat(T *x, int64_t len, int64_t count, cudaStream_t st);

/* Top-p of |x| (complex: max(|re|, |im|), which bounds every real product of a part) of V vectors of length L: vector v's element l is X[l + v*ld] (contiguous) or
 * X[v + l*ld] (strided, uses part/part_pos as scratch of gk_topp_scratch elements). */
template <typename T>
void gk_topp_run(const T *X, int64_t ld, int contiguous, int64_t L, int64_t V, int p, gk_topp out,
                 gk_topp scratch, cudaStream_t st);
int64_t gk_topp_scratch(int64_t V, int64_t L);

/* gk_topp_run of two sets of packed contiguous vectors of length L in one launch: V1 of env
 * (doubles) into out1, V2 of X into out2 (vector v at v * L). For few vectors only (under 2048 in
 * each set, as gk_topp_run's one CUDA block per vector); false, launching nothing, elsewhere. */
template <typename T>
bool gk_topp_pair(const double *env, const T *X, int64_t L, int64_t V1, int64_t V2, int p,
                  gk_topp out1, gk_topp out2, cudaStream_t st);

/* The top-p lists of a fused pass's own outputs (its envelopes and its checksums, as gk_topp_run
 * would make them), asked for by passing this struct and made where made is set: in the same
 * launch as the pass's last kernel, where the pass runs down contiguous vectors (op(A) = A), its
 * outputs are packed vectors along l and few (gk_topp_pair's conditions). */
struct gk_own_lists {
    gk_topp env, cs;
    bool made;
};

/* gk_encode and gk_topp_run of the S vectors along l in one read of X, for real data, BS <= 256,
 * R <= 2 and aux NONE or MAX: contiguous, element (s, l) is X[s + l*ld] (op(A) = A: its column
 * checksums, envelope and row lists); strided, X[l + s*ld] (op(B) = B: row checksums, envelope,
 * column lists; only where the top-p scratch allows chunks of at most 256 indices l). Returns
 * false, launching nothing, where it does not apply. */
template <typename T>
bool gk_encode_topp(const T *X, int64_t ld, int contiguous, int64_t S, int64_t L, int bs, int r,
                    int wscheme, T *out, int64_t out_l, int64_t out_v, gk_aux aux, int p,
                    gk_topp lists, gk_topp scratch, gk_counters *cnt, cudaStream_t st,
                    gk_own_lists *own = nullptr);

/* The recomputed checksums of C (both sides) in one pass: Ccs_rec (R*mb) x n, Crs_rec
 * m x (R*nb), in double (complex: parts interleaved), each computed redundantly by two lanes.
 * With compare, every element's threshold is computed (Ccs_eps, Crs_eps; the references and
 * top-p lists must be ready) and the element compared with its reference; the blocks over it are
 * listed for gk_correct. */
template <typename T> void gk_check_sums(const gk_gemm<T> &g, int compare, cudaStream_t st);

/* The comparison of gk_check_sums left out (compare 0): every element's threshold and its
 * comparison, once the references are ready; the blocks over it are listed for gk_correct. */
template <typename T> void gk_compare_sums(const gk_gemm<T> &g, cudaStream_t st);

/* Doubles per checksum vector and k index in gk_gemm::Pvec: mean, products, the compensated
 * encoding (hi, lo), BLASFT_PROJ_K projections. */
#define GK_PROJ_NV 12

#define GK_PROJ_EXP_KINDS 10
/* Bytes of gk_gemm::Ppack for nvec checksum vectors along k. */
int64_t gk_proj_pack_bytes(int64_t nvec, int64_t k);
/* Whether gk_proj's launches fit CUDA's grid limits for nvec checksum vectors along k (about
 * m >= 2^28 or, without the sm_80 kernels, k >= 2^21 do not): elsewhere PEA's thresholds serve. */
bool gk_proj_fits(int64_t nvec, int64_t k);

/* PROJ thresholds and double references of the column checksums (cuda/gpu_proj.cu): needs A, B,
 * and with beta != 0 Pold and Ccs_sq; writes Pvec, Pref, Ccs_eps. Real types only. */
template <typename T> void gk_proj(const gk_gemm<T> &g, cudaStream_t st);

/* Location, correction and recomputation of the flagged blocks (with rows_on_demand, first the
 * row side of their block columns). */
template <typename T> void gk_correct(const gk_gemm<T> &g, cudaStream_t st);

#endif
