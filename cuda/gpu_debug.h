/* Test access to the GPU engine's internals: the buffers of the last protected GEMM and a hook
 * that runs on the stream right after the main cuBLAS GEMM (to plant faults before the check). */
#ifndef BLASFT_GPU_DEBUG_H
#define BLASFT_GPU_DEBUG_H

#include "blasft_gpu.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    BLASFT_GPU_BUF_ACST = 0, /* T,  k x (R*mb) */
    BLASFT_GPU_BUF_BCS,      /* T,  k x (R*nb) */
    BLASFT_GPU_BUF_CCS_REF,  /* T,  (R*mb) x n */
    BLASFT_GPU_BUF_CRS_REF,  /* T,  m x (R*nb) */
    BLASFT_GPU_BUF_CCS_REC,  /* double, (R*mb) x n */
    BLASFT_GPU_BUF_CRS_REC,  /* double, m x (R*nb) */
    BLASFT_GPU_BUF_CCS_EPS,  /* double */
    BLASFT_GPU_BUF_CRS_EPS,  /* double */
    BLASFT_GPU_BUF_TA_VAL,   /* double, m x 8: top-p of op(A)'s rows */
    BLASFT_GPU_BUF_TA_POS,   /* int */
    BLASFT_GPU_BUF_TB_VAL,   /* double, n x 8: top-p of op(B)'s columns */
    BLASFT_GPU_BUF_TB_POS,   /* int */
    BLASFT_GPU_BUF_PROJ_REF, /* double, (R*mb) x n: PROJ's column references (p->proj, S and D) */
    BLASFT_GPU_BUF_TAC_VAL,  /* double, (R*mb) x 8: top-p of op(A)'s checksum vectors (ACST's columns) */
    BLASFT_GPU_BUF_TAC_POS,  /* int */
    BLASFT_GPU_BUF_TEA_VAL,  /* double, mb x 8: top-p of op(A)'s block envelopes along k */
    BLASFT_GPU_BUF_TEA_POS,  /* int */
} blasft_gpu_buf;

/* The type and shape the last protected GEMM checked: the caller's, or where it was promoted
 * the double type, and where it ran in tiles or chunks of k the last one's. -1: none ran. */
int blasft_gpu_debug_last_run(blasft_gpu_ctx *ctx, blasft_type *t, int64_t *m, int64_t *n,
                              int64_t *k);

/* Copies buffer `which` of the last protected GEMM (shape and parameters given again) to host
 * memory `out` (synchronises). Returns the number of elements, or -1, also where the type, shape,
 * block size, checksums or PROJ differ from what that GEMM checked (blasft_gpu_debug_last_run). */
int64_t blasft_gpu_debug_fetch(blasft_gpu_ctx *ctx, blasft_type t, int64_t m, int64_t n,
                               int64_t k, const blasft_gpu_params *p, blasft_gpu_buf which,
                               void *out);

/* fn(stream, user) is called when the protected GEMM has enqueued its main GEMM; NULL removes. */
typedef void (*blasft_gpu_hook)(void *stream, void *user);
void blasft_gpu_set_fault_hook(blasft_gpu_ctx *ctx, blasft_gpu_hook fn, void *user);
/* 1: calls with a fault hook are captured into the engine's own graphs too (BLASFT_GPU_GRAPHS),
 * the hook's launches with them, so that every replay plants the same faults; 0 (the default):
 * such calls are enqueued directly. */
void blasft_gpu_set_graph_hook(blasft_gpu_ctx *ctx, int captured);
/* The context's own graphs so far: captured, replays of them, held now; the priority of the
 * stream they were last captured on (INT_MIN: none yet). */
void blasft_gpu_debug_graphs(blasft_gpu_ctx *ctx, uint64_t *captures, uint64_t *replays,
                             int *cached, int *priority);
/* Inside a hook: the C that the running protected GEMM checks, its type and leading dimension:
 * the caller's C, or where an S or C GEMM is promoted (blasft_gpu_params.promote) its double
 * copy (type D or Z, packed). */
void *blasft_gpu_debug_checked_c(blasft_gpu_ctx *ctx, blasft_type *type, int64_t *ldc);
/* Inside a hook: where that C lies in the caller's. A promoted GEMM is checked tile by tile of C
 * and chunk by chunk of k (gpu_promoted_gemm.cu, plan_promotion): the caller's (i, j) is the
 * checked C's (i - row0, j - col0) for row0 <= i < row0 + rows, col0 <= j < col0 + cols; last_k: the tile's
 * last chunk, whose result is rounded into the caller's C. Otherwise the whole C, last_k 1. */
void blasft_gpu_debug_checked_part(blasft_gpu_ctx *ctx, int64_t *row0, int64_t *col0,
                                   int64_t *rows, int64_t *cols, int *last_k);
/* Inside a hook: the address of the caller's element (i, j) in the checked C (its type in *type),
 * or NULL where the running part does not hold it or is not its tile's last chunk of k: where a
 * fault planted now stays in the result. */
void *blasft_gpu_debug_checked_element(blasft_gpu_ctx *ctx, int64_t i, int64_t j,
                                       blasft_type *type);

/* Benchmark breakdown only: leaves stages out (the results are then not protected), to time
 * each stage by difference inside the overlapped pipeline. */
enum {
    BLASFT_GPU_SKIP_ENCODE = 1,      /* encoding of A and B (and their envelopes) */
    BLASFT_GPU_SKIP_TOPP = 2,        /* "PEA max p" preprocessing */
    BLASFT_GPU_SKIP_REFGEMM = 4,     /* the two reference checksum GEMMs */
    BLASFT_GPU_SKIP_CHECKSUM_C = 8,  /* checksums of the new C */
    BLASFT_GPU_SKIP_COMPARE = 16,    /* thresholds, compare, locate, correct */
    BLASFT_GPU_SKIP_REPORT = 32,     /* the host function that delivers counters */
};
void blasft_gpu_set_skip(blasft_gpu_ctx *ctx, int stages);

/* Benchmark timeline: with tracing on, every protected GEMM records events where its stages end
 * (0 start, 1 encode A, 2 encode B, 3 top-p lists, 4 main GEMM, 5 reference GEMMs, 6 check sums
 * of C compared with the references, 7 correction: the end); trace_read synchronises and gives
 * each point's time in ms from point 0 for the last GEMM (stages left out keep an earlier GEMM's
 * time: trace without skips). */
#define BLASFT_GPU_TRACE_POINTS 8
int blasft_gpu_set_trace(blasft_gpu_ctx *ctx, int on);
int blasft_gpu_trace_read(blasft_gpu_ctx *ctx, float *ms);

/* Where the context-independent work runs (benchmark and tests; the default is the automatic
 * rule): encoding and top-p lists (PRE) and the reference GEMMs (REF) each either overlapped with
 * the main GEMM on the helper stream or before it on the caller's stream. LISTS_AFTER (with
 * OVERLAP; the automatic rule's for small calls): the top-p lists after the main GEMM on the
 * caller's stream, off the helper stream's path to the reference GEMMs. */
enum {
    BLASFT_GPU_SCHED_AUTO = -1,
    BLASFT_GPU_SCHED_OVERLAP = 0,
    BLASFT_GPU_SCHED_PRE_SERIAL = 1,
    BLASFT_GPU_SCHED_REF_SERIAL = 2,
    BLASFT_GPU_SCHED_SERIAL = 3,
    BLASFT_GPU_SCHED_LISTS_AFTER = 4,
};
void blasft_gpu_set_schedule(blasft_gpu_ctx *ctx, int schedule);

/* The smallest m n at which the reference GEMMs run in parts along k (for 2 <= k <= 512;
 * gpu_gemm.cu); tests and the benchmark lower it to reach that path with small GEMMs. 0: the
 * default, 2^20. */
void blasft_gpu_set_ref_parts_mn(blasft_gpu_ctx *ctx, int64_t mn);

#ifdef __cplusplus
}
#endif
#endif
