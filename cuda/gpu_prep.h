/* Prepared operands (blasft_gpu_prepare in blasft_gpu.h): where each part lies in the buffer.
 * Side 0, op(A) = X (rows m, cols k): the engine's AcsT, block envelopes and their lists, the row
 * lists of X, the checksums' lists; side 1, op(B) = X (rows k, cols n): the column lists of X
 * (what a GEMM with the row side on demand reads of B on a clean call). Both begin with counters
 * of their own: encoder faults found while preparing reach the report of the next GEMM that
 * uses the buffer. */
#ifndef BLASFT_GPU_PREP_H
#define BLASFT_GPU_PREP_H

#include <stddef.h>
#include <stdint.h>

struct gk_prep_layout {
    size_t cnt;                                 /* gk_counters */
    size_t acs, env, ta_v, ta_p, tea_v, tea_p, tac_v, tac_p, sc_v, sc_p; /* side 0 */
    size_t tb_v, tb_p;                          /* side 1 */
    size_t end;
};

/* ts: bytes of an element (complex: both parts). */
gk_prep_layout gk_prep_plan(int side, size_t ts, int64_t rows, int64_t cols, int bs, int r);

#endif
