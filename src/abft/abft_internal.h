/* State shared by the host engine's files for one protected GEMM. Checksum arrays are laid out as
 * the border of the extended matrix (Abb. 6.4), column-major, parts (re, im) interleaved:
 *   column checksums: (R*nbr) x n, entry (bi*R + r, j)
 *   row checksums:    m x (R*nbc), entry (i, bj*R + r)
 * so the checksum products are plain host GEMMs writing straight into them. */
#ifndef BLASFT_ABFT_INTERNAL_H
#define BLASFT_ABFT_INTERNAL_H

#include "abft/abft_arith.h"
#include "abft/abft_engine.h"
#include "gemm.h"

#include <stdint.h>

typedef struct abft_ctx {
    const blasft_gemm *g;
    const blasft_config *cfg;
    blasft_type user_type; /* the caller's type: events and injected bit positions (g->type
                              differs where an S/C GEMM runs as D/Z: abft_promote.c) */
    int P;          /* parts per element: 1 real, 2 complex */
    int t;          /* mantissa bits of the data */
    int R;          /* checksums per block vector */
    int bs, scheme;
    int64_t m, n, k, nbr, nbc;
    int beta_zero;  /* beta == 0: the old C is never read */
    int parallel;   /* redundant passes may run on two threads (abft_k_parallel, size) */
    int threads;    /* threads for the redundant passes (abft_k_threads where parallel, else 1) */
    const double *w[2]; /* weights by position in a block (abft_weights.h); w[0] is the
                           unweighted checksum's ones */
    int weighted[2];    /* whether w[r] has an entry other than 1 */
    double underflow[2]; /* blasft_underflow_eps of checksum r (its |weights| over a full block) */

    double *ac, *bc;         /* encodings of op(A) ((R*nbr) x k) and op(B) (k x (R*nbc)) */
    double *ad, *bd;         /* A, B as stored, promoted to double (S, C only; else NULL) */
    double *refc, *refr;     /* reference checksums */
    double *oldc, *oldr;     /* checksums of the old C (beta != 0) */
    double *osqc, *osqr, *oabsc, *oabsr; /* sum (w c)^2 and sum |w c| of the old C */
    double *recc, *recr;     /* checksums recomputed from the new C */
    double *sqc, *sqr, *absc, *absr;     /* same sums of the new C */
    double *vdc, *vdr;       /* threshold base per element: PEA variance of d / SEA bound of d */
    double *c2c, *c2r;       /* PEA: bound of sum (w d)^2 from the operands, d = op(A) op(B): the
                                threshold must never grow with the (possibly faulty) new C */
    double *na2, *nb2;       /* NORM: squared norms of op(A)'s rows and op(B)'s columns */
    double *encc, *encr;     /* PROJ: sum_k (s_k x_k)^2 of the encoded vector s against the data
                                vector x: the energy of the encoding's own rounding */
    int64_t slice;           /* PROJ: the data GEMM runs in slices of this many k (0: one call) */
    uint8_t *exc, *exr;      /* reference refined to compensated accuracy (flagged once) */
    void *arrays;            /* the one allocation the arrays above are carved from
                                (refc ... c2r, scratch, oldc ... oabsr, exc, exr) */
    void *cold;              /* copy of the old C, m x n packed (beta != 0) */
    double *scratch;         /* redundant checksum pass */
    uint64_t encoder_faults;
    uint64_t injected;       /* faults planted at site encoder (BLASFT_INJECT) */
} abft_ctx;

/* Elements (of A, B and C together) below which a second thread costs more than it saves. */
#define ABFT_PARALLEL_MIN ((int64_t)1 << 15)

static inline int64_t abft_nc(const abft_ctx *x) { return x->R * x->nbr * x->n; } /* col cs count */
static inline int64_t abft_nr(const abft_ctx *x) { return x->m * x->R * x->nbc; } /* row cs count */
static inline int64_t abft_ci(const abft_ctx *x, int64_t bi, int r, int64_t j)
{
    return bi * x->R + r + x->R * x->nbr * j;
}
static inline int64_t abft_ri(const abft_ctx *x, int64_t i, int64_t bj, int r)
{
    return i + x->m * (bj * x->R + r);
}
static inline int64_t abft_len(int64_t total, int64_t b, int bs)
{
    int64_t rest = total - b * bs;
    return rest < bs ? rest : bs;
}

/* Element idx (in elements) part `part` of a matrix of type t, as double. */
static inline double abft_ld(const void *base, blasft_type t, int64_t idx, int part)
{
    switch (t) {
    case BLASFT_TYPE_S: return ((const float *)base)[idx];
    case BLASFT_TYPE_D: return ((const double *)base)[idx];
    case BLASFT_TYPE_C: return ((const float *)base)[2 * idx + part];
    default: return ((const double *)base)[2 * idx + part];
    }
}
static inline void abft_st(void *base, blasft_type t, int64_t idx, int part, double v)
{
    switch (t) {
    case BLASFT_TYPE_S: ((float *)base)[idx] = (float)v; break;
    case BLASFT_TYPE_D: ((double *)base)[idx] = v; break;
    case BLASFT_TYPE_C: ((float *)base)[2 * idx + part] = (float)v; break;
    default: ((double *)base)[2 * idx + part] = v; break;
    }
}
static inline double abft_opa(const abft_ctx *x, int64_t i, int64_t kk, int part)
{
    const blasft_gemm *g = x->g;
    double v = abft_ld(g->a, g->type, g->transa == 'N' ? i + kk * g->lda : kk + i * g->lda, part);
    return part && g->transa == 'C' ? -v : v;
}
static inline double abft_opb(const abft_ctx *x, int64_t kk, int64_t j, int part)
{
    const blasft_gemm *g = x->g;
    double v = abft_ld(g->b, g->type, g->transb == 'N' ? kk + j * g->ldb : j + kk * g->ldb, part);
    return part && g->transb == 'C' ? -v : v;
}

/* abft_encode.c */
int abft_encode_operands(abft_ctx *x);              /* ac, bc (redundant); -1 if not finite */
int abft_reference(abft_ctx *x, int64_t bi0, int64_t bi1, int64_t bj0, int64_t bj1);
void abft_sliced_gemm(const blasft_gemm *g, int64_t slice); /* in slices of k (0: one call) */

/* PROJ with the data GEMM in slices and beta != 0: from the second slice on each slice is added
 * to C = beta c_old + alpha (prefix of the products), so the join's rounding is of alpha (prefix
 * + (beta / alpha) c_old(i, j)); this returns that offset (0 when nothing is sliced, beta = 0 or
 * alpha = 0, where no join adds a product). Real types only (PROJ's). */
static inline int abft_proj_beta_joins(const abft_ctx *x)
{
    return !x->beta_zero && x->slice > 0 && x->k > x->slice && x->g->alpha[0] != 0.0;
}

static inline double abft_proj_join_offset(const abft_ctx *x, int64_t i, int64_t j)
{
    const blasft_gemm *g = x->g;
    if (!abft_proj_beta_joins(x))
        return 0.0;
    return g->beta[0] / g->alpha[0] * abft_ld(x->cold, g->type, i + x->m * j, 0);
}
/* The old C (beta != 0) into x->cold, with its sums of squares and magnitudes (osqc ... oabsr). */
void abft_save_old_c(abft_ctx *x);
/* Checksums of C (or the old C copy) over blocks [bi0,bi1) x [bj0,bj1), computed twice and
 * compared; old != 0 writes the old-C arrays. Returns 0, or -1 if any value is not finite. */
int abft_c_checksums(abft_ctx *x, const void *c, int64_t ldc, int old, int64_t bi0, int64_t bi1,
                     int64_t bj0, int64_t bj1);

/* Recomputes one reference checksum element as a compensated dot product (exact products), so a
 * flagged element is judged without the checksum GEMM's own rounding error (row_side 0: column
 * checksum element e). */
void abft_refine_reference(abft_ctx *x, int row_side, int64_t e);

/* abft_threshold.c: fills vdc/vdr (context-independent preprocessing + per-element step). */
int abft_threshold_prepare(abft_ctx *x);
/* Threshold of a checksum element once the new C's sums are known. */
double abft_threshold_col(const abft_ctx *x, int64_t e);
double abft_threshold_row(const abft_ctx *x, int64_t e);
/* NORM's second tier: bound of |computed - exact| of element (i, j) alone (same model). */
double abft_threshold_element(const abft_ctx *x, int64_t i, int64_t j);

/* abft_correct.c: check all blocks, locate, correct, recompute, report. */
int abft_check_and_correct(abft_ctx *x, blasft_abft_diag *diag, int want_checks);

/* abft_engine.c */
/* blasft_abft_run for g as it is (no promotion); user_type is the caller's type (see abft_ctx). */
int abft_run(const blasft_gemm *g, blasft_type user_type, const blasft_config *cfg,
             blasft_abft_diag *diag, int want_checks);
void abft_emit(const abft_ctx *x, blasft_event_kind kind, int64_t bi, int64_t bj, int64_t row,
               int64_t col, double syndrome, double threshold, const char *action);

/* abft_promote.c: whether g (S or C) runs as a D or Z GEMM of promoted copies, and that run
 * (blasft_abft_run's contract; the caller's C is written only when it returns 0). */
int abft_promotes(const blasft_gemm *g, const blasft_config *cfg);
int abft_run_promoted(const blasft_gemm *g, const blasft_config *cfg, blasft_abft_diag *diag,
                      int want_checks);

#endif
