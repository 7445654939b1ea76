/* Prepared operands: an operand's context-independent preprocessing (method.md 4, thesis
 * 6.3.4) made once into a buffer that is kept with the operand's device copy, and read by every
 * protected GEMM that uses the copy unchanged (the consistency layer's encodings). The same
 * launchers as the engine's own passes, so a prepared operand gives the same checksums and lists
 * as one prepared inside the GEMM. */
#include "blasft_gpu.h"
#include "cuda_errors.h"
#include "gpu_kernels.h"
#include "gpu_prep.h"

namespace {

template <typename T>
int prepare(cudaStream_t st, int side, int64_t rows, int64_t cols, const T *x, int64_t ld,
            const blasft_gpu_params *p, char *w)
{
    const int bs = p->block_size, r = p->checksums, ws = p->weights;
    const int pp = p->pea_p < GK_PMAX ? p->pea_p : GK_PMAX;
    const gk_prep_layout Q = gk_prep_plan(side, sizeof(T), rows, cols, bs, r);
    gk_counters *cnt = (gk_counters *)(w + Q.cnt);
    const cudaError_t before = blasft_err_pending();
    if (cudaMemsetAsync(cnt, 0, sizeof(gk_counters), st) != cudaSuccess) {
        blasft_launched_ok(before); /* taken from the application's view */
        return -2;
    }
    if (side == 0) {
        /* op(A) = X: rows m, index k; its column checksums along m, as the GEMM's encode(0) */
        const int64_t m = rows, k = cols, mb = (m + bs - 1) / bs;
        T *acs = (T *)(w + Q.acs);
        double *env = (double *)(w + Q.env);
        const gk_topp ta = {(double *)(w + Q.ta_v), (int *)(w + Q.ta_p)};
        const gk_topp tea = {(double *)(w + Q.tea_v), (int *)(w + Q.tea_p)};
        const gk_topp tac = {(double *)(w + Q.tac_v), (int *)(w + Q.tac_p)};
        const gk_topp scratch = {(double *)(w + Q.sc_v), (int *)(w + Q.sc_p)};
        const gk_aux aux{GK_AUX_MAX, env, 1, k};
        if (!gk_encode_topp<T>(x, ld, 1, m, k, bs, r, ws, acs, 1, k, aux, pp, ta, scratch, cnt, st)) {
            gk_encode<T, T>(x, ld, 1, m, k, bs, r, ws, acs, 1, k, aux, cnt, st, 0);
            gk_topp_run<T>(x, ld, 0, k, m, pp, ta, scratch, st);
        }
        gk_topp_run<double>(env, k, 1, k, mb, pp, tea, scratch, st);
        gk_topp_run<T>(acs, k, 1, k, r * mb, pp, tac, scratch, st);
    } else {
        /* op(B) = X: rows k, columns n; the column lists (contiguous: no scratch) */
        const gk_topp tb = {(double *)(w + Q.tb_v), (int *)(w + Q.tb_p)};
        gk_topp_run<T>(x, ld, 1, rows, cols, pp, tb, gk_topp{nullptr, nullptr}, st);
    }
    return blasft_launched_ok(before) ? 0 : -2;
}

size_t elem_bytes(blasft_type t) { return t == BLASFT_TYPE_S ? 4 : t == BLASFT_TYPE_Z ? 16 : 8; }

} // namespace

gk_prep_layout gk_prep_plan(int side, size_t ts, int64_t rows, int64_t cols, int bs, int r)
{
    gk_prep_layout Q = {};
    gk_carve c{0};
    Q.cnt = c.take(sizeof(gk_counters));
    if (side == 0) {
        const int64_t m = rows, k = cols, mb = (m + bs - 1) / bs;
        Q.acs = c.take(ts * k * r * mb);
        Q.env = c.take(8 * k * mb);
        Q.ta_v = c.take(8 * m * GK_PMAX);
        Q.ta_p = c.take(4 * m * GK_PMAX);
        Q.tea_v = c.take(8 * mb * GK_PMAX);
        Q.tea_p = c.take(4 * mb * GK_PMAX);
        Q.tac_v = c.take(8 * r * mb * GK_PMAX);
        Q.tac_p = c.take(4 * r * mb * GK_PMAX);
        /* the partial lists of the row lists (chunks along k) */
        const int64_t sc = gk_topp_scratch(m, k);
        Q.sc_v = c.take(8 * sc);
        Q.sc_p = c.take(4 * sc);
    } else {
        Q.tb_v = c.take(8 * cols * GK_PMAX);
        Q.tb_p = c.take(4 * cols * GK_PMAX);
    }
    Q.end = c.o;
    return Q;
}

size_t blasft_gpu_prep_bytes(int side, blasft_type t, int64_t rows, int64_t cols,
                             const blasft_gpu_params *p)
{
    if ((side != 0 && side != 1) || rows < 1 || cols < 1 || !p || p->block_size < 2 ||
        p->checksums < 1 || p->checksums > 2)
        return 0;
    return gk_prep_plan(side, elem_bytes(t), rows, cols, p->block_size, p->checksums).end;
}

int blasft_gpu_prepare(void *stream, int side, blasft_type t, int64_t rows, int64_t cols,
                       const void *x, int64_t ld, const blasft_gpu_params *p, void *prep)
{
    if (!blasft_gpu_prep_bytes(side, t, rows, cols, p) || !x || !prep || ld < rows)
        return -1;
    cudaStream_t st = (cudaStream_t)stream;
    char *w = (char *)prep;
    switch (t) {
    case BLASFT_TYPE_S: return prepare<float>(st, side, rows, cols, (const float *)x, ld, p, w);
    case BLASFT_TYPE_D: return prepare<double>(st, side, rows, cols, (const double *)x, ld, p, w);
    case BLASFT_TYPE_C: return prepare<float2>(st, side, rows, cols, (const float2 *)x, ld, p, w);
    case BLASFT_TYPE_Z: return prepare<double2>(st, side, rows, cols, (const double2 *)x, ld, p, w);
    default: return -1;
    }
}
