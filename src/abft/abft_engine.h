/* Internal API of the host ABFT engine (issue 3): one protected GEMM, with an optional diagnostic
 * record of every checksum comparison for the campaign tool (threshold quality q = eps / true
 * rounding error is computed there against an MPFR reference).
 *
 * Layout (method.md, thesis Abb. 6.4): C (m x n) is split into BS x BS blocks, ragged at the
 * bottom/right edge. Per row block I and column j there are R = cfg->checksums "column checksums"
 * sum_{i in I} w_r(i) C(i,j) (r = 0 unweighted, r = 1 weighted with cfg->weights), per row i and
 * column block J R "row checksums" sum_{j in J} w_r(j) C(i,j). They live in our own buffers, the
 * border of the extended matrix: never inside the user's C. */
#ifndef BLASFT_ABFT_ENGINE_H
#define BLASFT_ABFT_ENGINE_H

#include "blas_ft.h"
#include "gemm.h"

#include <stddef.h>
#include <stdint.h>

/* One checksum element as first compared (before any correction). */
typedef struct blasft_abft_check {
    uint8_t side;     /* 0: column checksum (row block over rows, one per column j), 1: row checksum */
    uint8_t weighted; /* 0: unweighted, 1: weighted (cfg->weights) */
    uint8_t part;     /* 0: real part, 1: imaginary part (complex types only) */
    uint8_t flagged;  /* blasft_over: |reference - recomputed| > threshold, NaN, or no finite threshold */
    int64_t block_row, block_col; /* block of C */
    int64_t index;    /* column j of C (side 0) or row i of C (side 1), 0-based */
    double reference; /* alpha * (checksum product) + beta * (checksum of old C) */
    double recomputed;/* checksum recomputed from the C the GEMM produced (compensated sum) */
    double threshold; /* PEA, SEA or NORM threshold of this element */
} blasft_abft_check;

/* Outcome of one protected GEMM, plus (when asked for) every first comparison. */
typedef struct blasft_abft_diag {
    int protected_run;        /* 1 if the checks ran; 0: unprotected (non-finite input, ...) */
    uint64_t checks;          /* checksum elements compared (first pass) */
    uint64_t detected;        /* elements flagged in the first pass */
    uint64_t corrected;       /* elements of C corrected in place */
    uint64_t blocks_recomputed;
    uint64_t lines_recomputed;  /* one row or column of a block recomputed: the only flagged line */
    uint64_t uncorrectable;   /* left as they were (detect mode, on_error=report) */
    uint64_t encoder_faults;  /* redundant checksum computations that disagreed */
    uint64_t faults_injected;
    uint64_t false_alarms;    /* flagged blocks found correct: NORM/PROJ by exact line recomputation,
                                 PEA/SEA by recomputing the block (abft_correct.c) */
    blasft_abft_check *checks_list; /* malloc'ed, count entries; NULL unless want_checks */
    size_t count;
} blasft_abft_diag;

/* Runs g protected as cfg says (mode correct or detect; on_error; thresholds; injection from
 * cfg->inject). diag may be NULL; with diag and want_checks every first comparison is recorded
 * (free with blasft_abft_diag_free). Statistics and events are emitted as in normal operation.
 * Returns 0, or -1 if protection could not run: then the caller runs the plain GEMM (non-finite
 * values in A, B or, with beta != 0, the old C; out of memory), and C is as it was (with beta = 0
 * it may hold values that the plain GEMM overwrites without reading). */
int blasft_abft_run(const blasft_gemm *g, const blasft_config *cfg, blasft_abft_diag *diag,
                    int want_checks);

void blasft_abft_diag_free(blasft_abft_diag *diag);

/* Test hook: called with the GEMM right after the multiplication and before the check, so a
 * test can plant errors of every class by hand (NULL removes it; not thread-safe, tests only). */
typedef void (*blasft_abft_plant_fn)(const blasft_gemm *g, void *user);
void blasft_abft_set_plant_hook(blasft_abft_plant_fn fn, void *user);

#endif
