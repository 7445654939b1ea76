/* The one description of a GEMM that travels through every layer: column-major,
 * C <- alpha * op(A) * op(B) + beta * C with op(A) m x k, op(B) k x n, C m x n. */
#ifndef BLASFT_GEMM_H
#define BLASFT_GEMM_H

#include "report.h"

#include <stdbool.h>
#include <stdint.h>

typedef enum { BLASFT_TYPE_S = 0, BLASFT_TYPE_D, BLASFT_TYPE_C, BLASFT_TYPE_Z } blasft_type;

/* 'N', 'T' or 'C' (upper case; 'C' on real types means the same as 'T'). */
typedef char blasft_trans;

typedef struct blasft_gemm {
    blasft_type type;
    blasft_trans transa, transb;
    int64_t m, n, k;
    const void *a;
    int64_t lda;
    const void *b;
    int64_t ldb;
    void *c;
    int64_t ldc;
    double alpha[2]; /* real, imaginary (imaginary 0 for S/D) */
    double beta[2];
    const char *routine; /* the exported entry point that was called, for the report */
} blasft_gemm;

static inline int blasft_type_size(blasft_type t)
{
    static const int size[] = {4, 8, 8, 16};
    return size[t];
}

static inline bool blasft_type_is_complex(blasft_type t)
{
    return t == BLASFT_TYPE_C || t == BLASFT_TYPE_Z;
}

static inline char blasft_type_letter(blasft_type t) { return "SDCZ"[t]; }

/* Rows and columns of A and B as stored (before op). */
static inline int64_t blasft_gemm_a_rows(const blasft_gemm *g) { return g->transa == 'N' ? g->m : g->k; }
static inline int64_t blasft_gemm_a_cols(const blasft_gemm *g) { return g->transa == 'N' ? g->k : g->m; }
static inline int64_t blasft_gemm_b_rows(const blasft_gemm *g) { return g->transb == 'N' ? g->k : g->n; }
static inline int64_t blasft_gemm_b_cols(const blasft_gemm *g) { return g->transb == 'N' ? g->n : g->k; }

/* Parameter number (Fortran ?GEMM numbering, 1-based) of the first invalid argument, 0 if valid.
 * The order of the checks is the reference BLAS's. */
int blasft_gemm_check(const blasft_gemm *g);

/* Runs the GEMM: host BLAS, host ABFT or (later) the GPU, as configured; returns where it ran.
 * g must be valid (blasft_gemm_check). */
blasft_where blasft_gemm_run(const blasft_gemm *g);

/* The plain host BLAS GEMM for g (column-major Fortran call), no protection. */
void blasft_host_gemm(const blasft_gemm *g);

#endif
