/* Orchestration of the GPU ABFT GEMM (method.md 4): context-independent work (encoding A and B,
 * "PEA max p" preprocessing) and the reference checksum GEMMs on a helper stream forked from the
 * caller's stream, the main cuBLAS GEMM on the caller's stream, then one check over C; joined by
 * events, no host synchronisation, outcomes delivered by a host function in stream order. */
#include "blasft_gpu.h"
#include "gpu_debug.h"
#include "gpu_cublas.h"
#include "gpu_kernels.h"
#include "gpu_prep.h"
#include "gpu_promote.h"

extern "C" {
#include "abft/abft_arith.h"
#include "config.h"
#include "log.h"
#include "report.h"
}

#include <atomic>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <mutex>

namespace {

/* Calls that may be in flight on one context before enqueueing waits for the oldest. */
constexpr int kSlots = 64;

struct report_slot {
    gk_counters c;             /* pinned: the device counters land here */
    uint64_t checks;
    char type;
    const char *routine;
    blasft_on_error on_error;
    std::atomic<int> busy;
};

} // namespace

struct blasft_gpu_ctx {
    cudaStream_t s0, s1;
    cublasHandle_t h0, h1;
    cudaEvent_t ev_fork, ev_cold, ev_ref, ev_done;
    char *ws;         /* header (counters, block flags) then the per-call buffers */
    size_t ws_bytes;
    int64_t flag_cap; /* block flags in the header */
    void *old_c;
    size_t old_bytes;
    void *promo; /* BLASFT_PROMOTE: double copies of A, B, C and the scalars (promoted_gemm) */
    size_t promo_bytes;
    void *checked_c; /* the C the running protected GEMM checks (gpu_debug.h) */
    blasft_type checked_type;
    int64_t checked_ldc;
    report_slot *slots; /* pinned, kSlots */
    int next_slot;
    int skip; /* benchmark breakdown only: BLASFT_GPU_SKIP_* stages left out (results invalid) */
    int sched; /* BLASFT_GPU_SCHED_*: where the context-independent work runs; -1 automatic */
    int pmode[2]; /* pointer mode last set on h0, h1 (-1 unknown): set only when it changes */
    blasft_gpu_hook hook; /* tests only: plants faults after the main GEMM */
    cudaEvent_t trace[BLASFT_GPU_TRACE_POINTS]; /* benchmark timeline; created by set_trace */
    int tracing;
    void *hook_user;
};

namespace {

const blasft_cublas_api *cb;

bool cuda_ok(cudaError_t e, const char *what)
{
    if (e == cudaSuccess)
        return true;
    blasft_log(BLASFT_LOG_ERROR, "GPU: %s failed: %s", what, cudaGetErrorString(e));
    return false;
}
bool blas_ok(cublasStatus_t s, const char *what)
{
    if (s == CUBLAS_STATUS_SUCCESS)
        return true;
    blasft_log(BLASFT_LOG_ERROR, "GPU: %s failed: cuBLAS status %d", what, (int)s);
    return false;
}


/* The per-call buffers, carved from the workspace after the header. */
struct layout {
    size_t AcsT, Bcs, Ccs_ref, Crs_ref, Ccs_rec, Crs_rec, Ccs_eps, Crs_eps;
    size_t tA_v, tA_p, tB_v, tB_p, tAc_v, tAc_p, tBc_v, tBc_p, sc_v, sc_p, list, end;
    size_t EnvA, EnvB, tEa_v, tEa_p, tEb_v, tEb_p, Ccs_sq, Crs_sq, rlist;
    size_t Pvec, Pref, Pold; /* PROJ (real data): 0 when not planned */
};

size_t header_bytes(int64_t flag_cap) { return gk_align(sizeof(gk_counters)) + gk_align(flag_cap * 4); }

/* ts: the element's bytes; complex types (ts 8 for C, 16 for Z, told apart by the caller through
 * P) hold their recomputed checksums as P doubles each */
layout plan(size_t ts, int P, int64_t m, int64_t n, int64_t k, int bs, int r, int64_t flag_cap,
            bool proj)
{
    int64_t mb = (m + bs - 1) / bs, nb = (n + bs - 1) / bs;
    int64_t sc = 0;
    for (int64_t V : {m, n, (int64_t)r * mb, (int64_t)r * nb, mb, nb}) {
        int64_t x = gk_topp_scratch(V, k);
        sc = x > sc ? x : sc;
    }
    layout L;
    gk_carve c{header_bytes(flag_cap)};
    L.AcsT = c.take(ts * k * r * mb);
    L.Bcs = c.take(ts * k * r * nb);
    L.Ccs_ref = c.take(ts * r * mb * n);
    L.Crs_ref = c.take(ts * m * r * nb);
    L.Ccs_rec = c.take(8 * P * r * mb * n);
    L.Crs_rec = c.take(8 * P * m * r * nb);
    L.Ccs_eps = c.take(8 * r * mb * n);
    L.Crs_eps = c.take(8 * m * r * nb);
    L.tA_v = c.take(8 * m * GK_PMAX);
    L.tA_p = c.take(4 * m * GK_PMAX);
    L.tB_v = c.take(8 * n * GK_PMAX);
    L.tB_p = c.take(4 * n * GK_PMAX);
    L.tAc_v = c.take(8 * r * mb * GK_PMAX);
    L.tAc_p = c.take(4 * r * mb * GK_PMAX);
    L.tBc_v = c.take(8 * r * nb * GK_PMAX);
    L.tBc_p = c.take(4 * r * nb * GK_PMAX);
    L.sc_v = c.take(8 * sc);
    L.sc_p = c.take(4 * sc);
    L.list = c.take(4 * mb * nb);
    L.EnvA = c.take(8 * k * mb);
    L.EnvB = c.take(8 * k * nb);
    L.tEa_v = c.take(8 * mb * GK_PMAX);
    L.tEa_p = c.take(4 * mb * GK_PMAX);
    L.tEb_v = c.take(8 * nb * GK_PMAX);
    L.tEb_p = c.take(4 * nb * GK_PMAX);
    L.Ccs_sq = c.take(8 * mb * n);
    L.Crs_sq = c.take(8 * m * nb);
    L.rlist = c.take(sizeof(gk_recompute) * mb * nb);
    L.Pvec = L.Pref = L.Pold = 0;
    if (proj && P == 1) {
        L.Pvec = c.take(8 * GK_PROJ_NV * k * r * mb);
        L.Pref = c.take(8 * r * mb * n);
        L.Pold = c.take(8 * r * mb * n);
    }
    L.end = c.o;
    return L;
}

int ensure_ws(blasft_gpu_ctx *ctx, size_t ts, int P, int64_t m, int64_t n, int64_t k, int bs, int r,
              bool proj)
{
    int64_t mb = (m + bs - 1) / bs, nb = (n + bs - 1) / bs;
    int64_t flag_cap = mb * nb > ctx->flag_cap ? mb * nb : ctx->flag_cap;
    size_t need = plan(ts, P, m, n, k, bs, r, flag_cap, proj).end;
    if (need <= ctx->ws_bytes && flag_cap == ctx->flag_cap)
        return 0;
    /* growing frees memory the stream may still use: the one synchronisation, off the hot path */
    if (!cuda_ok(cudaStreamSynchronize(ctx->s0), "cudaStreamSynchronize") ||
        !cuda_ok(cudaStreamSynchronize(ctx->s1), "cudaStreamSynchronize"))
        return -2;
    if (ctx->ws)
        cudaFree(ctx->ws);
    ctx->ws = nullptr;
    ctx->ws_bytes = 0;
    if (!cuda_ok(cudaMalloc((void **)&ctx->ws, need), "cudaMalloc(workspace)"))
        return -2;
    if (!cuda_ok(cudaMemset(ctx->ws, 0, header_bytes(flag_cap)), "cudaMemset"))
        return -2;
    ctx->ws_bytes = need;
    ctx->flag_cap = flag_cap;
    return 0;
}

/* A buffer of the context grown to `bytes` (never shrunk). Growing frees memory that either
 * stream may still use: the one synchronisation, off the hot path. */
int ensure_buf(blasft_gpu_ctx *ctx, void **buf, size_t *have, size_t bytes, const char *what)
{
    if (bytes <= *have)
        return 0;
    if (!cuda_ok(cudaStreamSynchronize(ctx->s0), "cudaStreamSynchronize") ||
        !cuda_ok(cudaStreamSynchronize(ctx->s1), "cudaStreamSynchronize"))
        return -2;
    if (*buf)
        cudaFree(*buf);
    *buf = nullptr;
    *have = 0;
    if (!cuda_ok(cudaMalloc(buf, bytes), what))
        return -2;
    *have = bytes;
    return 0;
}

int ensure_old(blasft_gpu_ctx *ctx, size_t bytes)
{
    return ensure_buf(ctx, &ctx->old_c, &ctx->old_bytes, bytes, "cudaMalloc(old C)");
}

void CUDART_CB deliver(void *arg)
{
    report_slot *s = (report_slot *)arg;
    const gk_counters &c = s->c;
    blasft_stat_add(BLASFT_STAT_PROTECTED_GEMMS, 1);
    blasft_stat_add(BLASFT_STAT_CHECKS, s->checks + c.row_checks);
    blasft_stat_add(BLASFT_STAT_ERRORS_DETECTED, c.detected);
    blasft_stat_add(BLASFT_STAT_ERRORS_CORRECTED, c.corrected);
    blasft_stat_add(BLASFT_STAT_BLOCKS_RECOMPUTED, c.recomputed);
    blasft_stat_add(BLASFT_STAT_UNCORRECTABLE, c.uncorrectable);
    blasft_stat_add(BLASFT_STAT_ENCODER_FAULTS, c.encoder_faults);
    blasft_stat_add(BLASFT_STAT_FALSE_ALARMS, c.false_alarms);
    unsigned int nrec = c.nrec < GK_MAX_RECORDS ? c.nrec : GK_MAX_RECORDS;
    for (unsigned int i = 0; i < nrec; i++) {
        const gk_record &r = c.rec[i];
        blasft_event ev;
        memset(&ev, 0, sizeof ev);
        static const blasft_event_kind kinds[] = {BLASFT_EVENT_CORRECTED, BLASFT_EVENT_RECOMPUTED,
                                                  BLASFT_EVENT_DETECTED, BLASFT_EVENT_UNCORRECTABLE};
        static const char *const actions[] = {"corrected", "recomputed", "reported", "reported"};
        ev.kind = kinds[r.kind];
        ev.routine = s->routine;
        ev.type = s->type;
        ev.block_row = r.block_row;
        ev.block_col = r.block_col;
        ev.row = r.row;
        ev.col = r.col;
        ev.syndrome = r.syndrome < 0 ? -r.syndrome : r.syndrome;
        ev.threshold = r.threshold;
        ev.action = actions[r.kind];
        blasft_event_emit(&ev);
    }
    bool abort_now = s->on_error == BLASFT_ON_ERROR_ABORT && c.uncorrectable > 0;
    s->busy.store(0, std::memory_order_release);
    if (abort_now) {
        blasft_log(BLASFT_LOG_ERROR, "GPU %s: uncorrectable error, aborting (BLASFT_ON_ERROR=abort)",
                   s->routine);
        abort();
    }
}

cublasOperation_t op_of(char t)
{
    return t == 'N' || t == 'n' ? CUBLAS_OP_N : t == 'C' || t == 'c' ? CUBLAS_OP_C : CUBLAS_OP_T;
}

/* Types: element size, parts, the event letter. */
size_t type_size(blasft_type t)
{
    return t == BLASFT_TYPE_S ? 4 : t == BLASFT_TYPE_Z ? 16 : 8;
}
int type_parts(blasft_type t) { return t == BLASFT_TYPE_C || t == BLASFT_TYPE_Z ? 2 : 1; }
bool is_zero_h(float x) { return x == 0.0f; }
bool is_zero_h(double x) { return x == 0.0; }
bool is_zero_h(float2 x) { return x.x == 0.0f && x.y == 0.0f; }
bool is_zero_h(double2 x) { return x.x == 0.0 && x.y == 0.0; }
/* a beta in host memory that is not zero: the old C enters */
bool beta_nonzero(blasft_type t, const void *beta)
{
    switch (t) {
    case BLASFT_TYPE_S: return !is_zero_h(*(const float *)beta);
    case BLASFT_TYPE_D: return !is_zero_h(*(const double *)beta);
    case BLASFT_TYPE_C: return !is_zero_h(*(const float2 *)beta);
    default: return !is_zero_h(*(const double2 *)beta);
    }
}

template <typename T>
cublasStatus_t xgemm(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int64_t m,
                     int64_t n, int64_t k, const T *alpha, const T *A, int64_t lda, const T *B,
                     int64_t ldb, const T *beta, T *C, int64_t ldc);
template <>
cublasStatus_t xgemm<float>(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb,
                            int64_t m, int64_t n, int64_t k, const float *alpha, const float *A,
                            int64_t lda, const float *B, int64_t ldb, const float *beta, float *C,
                            int64_t ldc)
{
    return cb->sgemm(h, ta, tb, (int)m, (int)n, (int)k, alpha, A, (int)lda, B, (int)ldb, beta, C,
                     (int)ldc);
}
template <>
cublasStatus_t xgemm<double>(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb,
                             int64_t m, int64_t n, int64_t k, const double *alpha,
                             const double *A, int64_t lda, const double *B, int64_t ldb,
                             const double *beta, double *C, int64_t ldc)
{
    return cb->dgemm(h, ta, tb, (int)m, (int)n, (int)k, alpha, A, (int)lda, B, (int)ldb, beta, C,
                     (int)ldc);
}
template <>
cublasStatus_t xgemm<float2>(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb,
                             int64_t m, int64_t n, int64_t k, const float2 *alpha, const float2 *A,
                             int64_t lda, const float2 *B, int64_t ldb, const float2 *beta,
                             float2 *C, int64_t ldc)
{
    return cb->cgemm(h, ta, tb, (int)m, (int)n, (int)k, alpha, A, (int)lda, B, (int)ldb, beta, C,
                     (int)ldc);
}
template <>
cublasStatus_t xgemm<double2>(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb,
                              int64_t m, int64_t n, int64_t k, const double2 *alpha,
                              const double2 *A, int64_t lda, const double2 *B, int64_t ldb,
                              const double2 *beta, double2 *C, int64_t ldc)
{
    return cb->zgemm(h, ta, tb, (int)m, (int)n, (int)k, alpha, A, (int)lda, B, (int)ldb, beta, C,
                     (int)ldc);
}

/* The handles are the engine's own, so the mode last set is still the handle's mode: setting it
 * only on a change saves two library calls per GEMM. */
int set_mode(blasft_gpu_ctx *ctx, int on_device)
{
    cublasPointerMode_t pm = on_device ? CUBLAS_POINTER_MODE_DEVICE : CUBLAS_POINTER_MODE_HOST;
    cublasHandle_t h[2] = {ctx->h0, ctx->h1};
    for (int i = 0; i < 2; i++) {
        if (ctx->pmode[i] == on_device)
            continue;
        ctx->pmode[i] = -1;
        if (!blas_ok(cb->set_pointer_mode(h[i], pm), "cublasSetPointerMode"))
            return -2;
        ctx->pmode[i] = on_device;
    }
    return 0;
}

/* Where the context-independent work runs when the caller did not choose (see
 * docs/gpu-benchmark.md, "Schedule"): measured per size on an H200. */
int auto_schedule(size_t ts, int P, int64_t m, int64_t n, int64_t k)
{
    /* Overlapped was best up to n = 8192 in both types (serial: D 4096 1.19 vs 1.12, S 1.17 vs
     * 1.06). For real FP64 at n = 16384 the serial one measured 1.00-1.01 against 1.03: the card
     * runs into its power cap there, and the overlapped memory traffic on top of the GEMM's
     * costs clock. */
    const double mnk = (double)m * (double)n * (double)k;
    if (ts == 8 && P == 1 && mnk >= 0x1p41)
        return BLASFT_GPU_SCHED_SERIAL;
    return BLASFT_GPU_SCHED_OVERLAP;
}

template <typename T> int plain(blasft_gpu_ctx *ctx, const blasft_gpu_gemm *g)
{
    if (set_mode(ctx, g->scalars_on_device))
        return -2;
    return blas_ok(xgemm<T>(ctx->h0, op_of(g->transa), op_of(g->transb), g->m, g->n, g->k,
                            (const T *)g->alpha, (const T *)g->a, g->lda, (const T *)g->b, g->ldb,
                            (const T *)g->beta, (T *)g->c, g->ldc),
                   "cublas gemm")
               ? 0
               : -2;
}

/* caller: the type the caller asked for (events and reports name it; it differs from T's where
 * promoted_gemm runs an S or C GEMM as D or Z) */
template <typename T>
int protected_gemm(blasft_gpu_ctx *ctx, const blasft_gpu_gemm *g, const blasft_gpu_params *p,
                   blasft_type caller)
{
    const int64_t m = g->m, n = g->n, k = g->k;
    const int bs = p->block_size, r = p->checksums;
    const int pp = p->pea_p < GK_PMAX ? p->pea_p : GK_PMAX;
    const bool on_dev = g->scalars_on_device != 0;
    constexpr int P = gk_el<T>::P;
    T beta_h;
    memset(&beta_h, 0, sizeof beta_h);
    if (!on_dev)
        beta_h = *(const T *)g->beta;
    const bool need_cold = on_dev || !is_zero_h(beta_h);
    const bool keep_old = need_cold && p->mode == BLASFT_MODE_CORRECT &&
                          p->on_error == BLASFT_ON_ERROR_RECOMPUTE;
    /* 'N', 'T', and for complex data 'C' (for real data 'C' is 'T') */
    auto norm = [](char t) {
        cublasOperation_t o = op_of(t);
        return o == CUBLAS_OP_N ? 'N' : o == CUBLAS_OP_C && P == 2 ? 'C' : 'T';
    };
    const char ta = norm(g->transa), tb = norm(g->transb);
    const bool proj = p->proj && P == 1;
    int rc = ensure_ws(ctx, sizeof(T), P, m, n, k, bs, r, proj);
    if (rc)
        return rc;
    if (keep_old && (rc = ensure_old(ctx, sizeof(T) * m * n)))
        return rc;
    if (set_mode(ctx, on_dev))
        return -2;

    /* a free report slot; if every one is still in flight, wait for the oldest */
    report_slot *slot = &ctx->slots[ctx->next_slot];
    ctx->next_slot = (ctx->next_slot + 1) % kSlots;
    if (slot->busy.load(std::memory_order_acquire)) {
        if (!cuda_ok(cudaStreamSynchronize(ctx->s0), "cudaStreamSynchronize"))
            return -2;
    }

    const int64_t mb = (m + bs - 1) / bs, nb = (n + bs - 1) / bs;
    layout L = plan(sizeof(T), P, m, n, k, bs, r, ctx->flag_cap, proj);
    char *w = ctx->ws;
    gk_gemm<T> kg;
    memset(&kg, 0, sizeof kg);
    kg.m = m; kg.n = n; kg.k = k; kg.mb = mb; kg.nb = nb;
    kg.ta = ta; kg.tb = tb;
    kg.A = (const T *)g->a; kg.lda = g->lda;
    kg.B = (const T *)g->b; kg.ldb = g->ldb;
    kg.C = (T *)g->c; kg.ldc = g->ldc;
    if (on_dev) {
        kg.alpha_p = (const T *)g->alpha;
        kg.beta_p = (const T *)g->beta;
    } else {
        kg.alpha_v = *(const T *)g->alpha;
        kg.beta_v = beta_h;
    }
    kg.Cold = keep_old ? (const T *)ctx->old_c : nullptr;
    kg.ldcold = m;
    kg.bs = bs; kg.r = r; kg.wscheme = p->weights; kg.p = pp; kg.omega = p->omega;
    kg.block_lists = p->pea_block_lists != 0;
    kg.correct = p->mode == BLASFT_MODE_CORRECT;
    kg.recompute = p->on_error == BLASFT_ON_ERROR_RECOMPUTE;
    kg.AcsT = (T *)(w + L.AcsT); kg.Bcs = (T *)(w + L.Bcs);
    kg.Ccs_ref = (T *)(w + L.Ccs_ref); kg.Crs_ref = (T *)(w + L.Crs_ref);
    kg.Ccs_rec = (double *)(w + L.Ccs_rec); kg.Crs_rec = (double *)(w + L.Crs_rec);
    kg.Ccs_eps = (double *)(w + L.Ccs_eps); kg.Crs_eps = (double *)(w + L.Crs_eps);
    kg.tA = {(double *)(w + L.tA_v), (int *)(w + L.tA_p)};
    kg.tB = {(double *)(w + L.tB_v), (int *)(w + L.tB_p)};
    kg.tAc = {(double *)(w + L.tAc_v), (int *)(w + L.tAc_p)};
    kg.tBc = {(double *)(w + L.tBc_v), (int *)(w + L.tBc_p)};
    gk_topp scratch = {(double *)(w + L.sc_v), (int *)(w + L.sc_p)};
    kg.tEa = {(double *)(w + L.tEa_v), (int *)(w + L.tEa_p)};
    kg.tEb = {(double *)(w + L.tEb_v), (int *)(w + L.tEb_p)};
    double *envA = (double *)(w + L.EnvA), *envB = (double *)(w + L.EnvB);
    kg.envB = envB;
    /* the row side only for blocks whose column checksums flagged (see blasft_gpu.h) */
    const bool lazy = p->rows_on_demand && !kg.block_lists;
    kg.rows_on_demand = lazy;
    /* prepared operands (blasft_gpu_prepare): their buffers stand in for this call's passes */
    const bool prep_a = g->prep_a && ta == 'N', prep_b = g->prep_b && tb == 'N' && lazy;
    if (prep_a) {
        char *q = (char *)g->prep_a;
        const gk_prep_layout Q = gk_prep_plan(0, sizeof(T), m, k, bs, r);
        kg.AcsT = (T *)(q + Q.acs);
        envA = (double *)(q + Q.env);
        kg.tA = {(double *)(q + Q.ta_v), (int *)(q + Q.ta_p)};
        kg.tEa = {(double *)(q + Q.tea_v), (int *)(q + Q.tea_p)};
        kg.tAc = {(double *)(q + Q.tac_v), (int *)(q + Q.tac_p)};
        kg.prep_cnt[0] = (gk_counters *)(q + Q.cnt);
    }
    if (prep_b) {
        char *q = (char *)g->prep_b;
        const gk_prep_layout Q = gk_prep_plan(1, sizeof(T), k, n, bs, r);
        kg.tB = {(double *)(q + Q.tb_v), (int *)(q + Q.tb_p)};
        kg.prep_cnt[1] = (gk_counters *)(q + Q.cnt);
    }
    kg.Ccs_sq = need_cold ? (double *)(w + L.Ccs_sq) : nullptr;
    if (proj) {
        kg.Pvec = (double *)(w + L.Pvec);
        kg.Pref = (double *)(w + L.Pref);
        kg.Pold = need_cold ? (double *)(w + L.Pold) : nullptr;
        kg.pseed = blasft_proj_next_seed();
    }
    kg.Crs_sq = need_cold ? (double *)(w + L.Crs_sq) : nullptr;
    /* weight sums for the thresholds: full blocks and the last (possibly ragged) block */
    for (int side = 0; side < 2; side++)
        for (int cw = 0; cw < r; cw++)
            for (int last = 0; last < 2; last++) {
                int64_t dim = side == 0 ? m : n;
                int64_t len = last ? dim - (dim - 1) / bs * bs : bs;
                double sum = 0.0, mx = 0.0;
                for (int64_t i = 0; i < len; i++) {
                    double wt = cw == 0 ? 1.0 : blasft_weight(p->weights, (int)i, bs);
                    sum += wt * wt;
                    mx = wt * wt > mx ? wt * wt : mx;
                }
                kg.w2[side][cw][last] = sum;
                kg.wmax2[side][cw][last] = mx;
            }
    kg.cnt = (gk_counters *)w;
    kg.tile_flag = (int *)(w + gk_align(sizeof(gk_counters)));
    kg.tile_list = (int *)(w + L.list);
    kg.rlist = (gk_recompute *)(w + L.rlist);

    cudaStream_t s0 = ctx->s0, s1 = ctx->s1;
    const int ws = p->weights;
    const int skip = ctx->skip;
    const int sched = ctx->sched >= 0 ? ctx->sched : auto_schedule(sizeof(T), P, m, n, k);
    /* pre: encoding and top-p lists; ref: the reference GEMMs. On the helper stream they overlap
     * the main GEMM (and are time-sliced into it); on the caller's stream they run before it,
     * alone on the GPU at full bandwidth. */
    const bool pre_serial = (sched & BLASFT_GPU_SCHED_PRE_SERIAL) != 0;
    const bool ref_serial = (sched & BLASFT_GPU_SCHED_REF_SERIAL) != 0;
    cudaStream_t sp = pre_serial ? s0 : s1;
    cublasHandle_t hr = ref_serial ? ctx->h0 : ctx->h1;
    /* benchmark timeline (gpu_debug.h): where each stage ends, on the stream it ran on */
    auto mark = [&](int point, cudaStream_t st) {
        if (ctx->tracing)
            cudaEventRecord(ctx->trace[point], st);
    };
    mark(0, s0);
    cudaMemsetAsync(kg.cnt, 0, sizeof(gk_counters), s0);

    /* fork: context-independent work on s1 */
    if (!pre_serial) {
        cudaEventRecord(ctx->ev_fork, s0);
        cudaStreamWaitEvent(s1, ctx->ev_fork, 0);
    }
    /* an operand stored as used (op = N): its encoding and top-p lists in one read; else (or
     * where the fused pass does not apply) the separate passes */
    const bool fuse = !(skip & (BLASFT_GPU_SKIP_ENCODE | BLASFT_GPU_SKIP_TOPP)) && !kg.block_lists;
    auto encode = [&](int is_b, const T *X, int64_t ld, char t, int64_t S, T *out, double *env,
                      gk_topp lists) {
        const gk_aux aux{GK_AUX_MAX, env, 1, k};
        /* op(A)'s blocks run down A's columns, op(B)'s across B's */
        const int contiguous = is_b ? t != 'N' : t == 'N';
        const bool fused = fuse && t == 'N' &&
                           gk_encode_topp<T>(X, ld, contiguous, S, k, bs, r, ws, out, 1, k, aux, pp,
                                             lists, scratch, kg.cnt, sp);
        if (!(skip & BLASFT_GPU_SKIP_ENCODE) && !fused)
            gk_encode<T, T>(X, ld, contiguous, S, k, bs, r, ws, out, 1, k, aux, kg.cnt, sp, t == 'C');
        return fused;
    };
    const bool fused_a = prep_a || encode(0, kg.A, g->lda, ta, m, kg.AcsT, envA, kg.tA);
    mark(1, sp);
    /* rows on demand: op(B) is encoded where a block flags (gk_correct); its top-p lists, which
     * the column checksums' thresholds use, are made here */
    const bool fused_b = !lazy && encode(1, kg.B, g->ldb, tb, n, kg.Bcs, envB, kg.tB);
    mark(2, sp);
    if (!(skip & BLASFT_GPU_SKIP_TOPP)) {
        if (!prep_a)
            gk_topp_run<double>(envA, k, 1, k, mb, pp, kg.tEa, scratch, sp);
        if (!lazy)
            gk_topp_run<double>(envB, k, 1, k, nb, pp, kg.tEb, scratch, sp);
        if (!kg.block_lists) {
            if (!fused_a)
                gk_topp_run<T>(kg.A, g->lda, ta != 'N', k, m, pp, kg.tA, scratch, sp);
            if (!fused_b && !prep_b)
                gk_topp_run<T>(kg.B, g->ldb, tb == 'N', k, n, pp, kg.tB, scratch, sp);
        }
        if (!prep_a)
            gk_topp_run<T>(kg.AcsT, k, 1, k, r * mb, pp, kg.tAc, scratch, sp);
        if (!lazy)
            gk_topp_run<T>(kg.Bcs, k, 1, k, r * nb, pp, kg.tBc, scratch, sp);
        mark(3, sp);
    }

    /* the old C's checksums (and copy) must be taken before the GEMM overwrites C */
    if (need_cold) {
        gk_encode<T, T>(kg.C, g->ldc, 1, m, n, bs, r, ws, kg.Ccs_ref, r * mb, 1,
                        gk_aux{GK_AUX_SQ, kg.Ccs_sq, mb, 1}, kg.cnt, s0);
        gk_encode<T, T>(kg.C, g->ldc, 0, n, m, bs, r, ws, kg.Crs_ref, 1, m,
                        gk_aux{GK_AUX_SQ, kg.Crs_sq, 1, m}, kg.cnt, s0);
        /* PROJ's reference is double: the old C's column checksums once more, unrounded */
        if constexpr (P == 1)
            if (kg.Pold)
                gk_encode<T, double>(kg.C, g->ldc, 1, m, n, bs, r, ws, kg.Pold, r * mb, 1,
                                     gk_aux{GK_AUX_NONE, nullptr, 0, 0}, kg.cnt, s0);
        if (keep_old)
            cudaMemcpy2DAsync(ctx->old_c, sizeof(T) * m, g->c, sizeof(T) * g->ldc, sizeof(T) * m, n,
                              cudaMemcpyDeviceToDevice, s0);
    }
    /* the reference GEMMs need the encodings and the old C's checksums on their stream */
    if (!ref_serial && (need_cold || pre_serial)) {
        cudaEventRecord(ctx->ev_cold, s0);
        cudaStreamWaitEvent(s1, ctx->ev_cold, 0);
    } else if (ref_serial && !pre_serial) {
        cudaEventRecord(ctx->ev_cold, s1);
        cudaStreamWaitEvent(s0, ctx->ev_cold, 0);
    }

    /* reference checksums: alpha * (encoded product) + beta * (checksums of the old C) */
    static const T zero = T{};
    const T *beta_ref = need_cold ? (const T *)g->beta : &zero;
    auto ref_gemms = [&]() {
        /* PROJ's thresholds and double references of the column checksums, on the same stream */
        if constexpr (P == 1)
            if (proj && !(skip & BLASFT_GPU_SKIP_REFGEMM))
                gk_proj<T>(kg, ref_serial ? s0 : s1);
        return (skip & BLASFT_GPU_SKIP_REFGEMM) ||
               (blas_ok(xgemm<T>(hr, CUBLAS_OP_T, op_of(tb), r * mb, n, k, (const T *)g->alpha,
                                 kg.AcsT, k, kg.B, g->ldb, beta_ref, kg.Ccs_ref, r * mb),
                        "cublas gemm (column checksums)") &&
                (lazy ||
                 blas_ok(xgemm<T>(hr, op_of(ta), CUBLAS_OP_N, m, r * nb, k, (const T *)g->alpha,
                                  kg.A, g->lda, kg.Bcs, k, beta_ref, kg.Crs_ref, m),
                         "cublas gemm (row checksums)")));
    };
    if (ref_serial && !ref_gemms())
        return -2;
    if (ref_serial)
        mark(5, s0);

    if (!blas_ok(xgemm<T>(ctx->h0, op_of(ta), op_of(tb), m, n, k, (const T *)g->alpha, kg.A,
                          g->lda, kg.B, g->ldb, (const T *)g->beta, kg.C, g->ldc),
                 "cublas gemm"))
        return -2;
    mark(4, s0);
    if (ctx->hook) {
        ctx->checked_c = g->c;
        ctx->checked_type = g->type;
        ctx->checked_ldc = g->ldc;
        ctx->hook((void *)s0, ctx->hook_user);
    }

    if (!ref_serial) {
        if (!ref_gemms())
            return -2;
        mark(5, s1);
        cudaEventRecord(ctx->ev_ref, s1);
        cudaStreamWaitEvent(s0, ctx->ev_ref, 0);
    }

    /* the check: checksums of the new C compared with the references, then locate / correct */
    if (!(skip & BLASFT_GPU_SKIP_CHECKSUM_C))
        gk_check_sums<T>(kg, !(skip & BLASFT_GPU_SKIP_COMPARE), s0);
    mark(6, s0);
    if (!(skip & BLASFT_GPU_SKIP_COMPARE))
        gk_correct<T>(kg, s0);
    mark(7, s0);

    slot->busy.store(1, std::memory_order_relaxed);
    /* every part, as the host counts; on demand, the row checks are added as they are made */
    slot->checks = (uint64_t)(r * mb * n + (lazy ? 0 : m * r * nb)) * P;
    slot->type = "SDCZ"[caller == BLASFT_TYPE_S ? 0 : caller == BLASFT_TYPE_D ? 1
                        : caller == BLASFT_TYPE_C ? 2 : 3];
    slot->routine = g->routine ? g->routine : "gpu_gemm";
    slot->on_error = p->on_error;
    /* the counters are copied in the caller's stream order (the next GEMM resets them); the host
     * function that delivers them runs on the helper stream, so the caller's stream never waits
     * for the host thread. Under graph capture the helper stream must be joined back, so there
     * the host function stays on the caller's stream. */
    cudaMemcpyAsync(&slot->c, kg.cnt, sizeof(gk_counters), cudaMemcpyDeviceToHost, s0);
    cudaStreamCaptureStatus capturing = cudaStreamCaptureStatusNone;
    cudaStreamIsCapturing(s0, &capturing);
    cudaStream_t rs = s0;
    if (capturing == cudaStreamCaptureStatusNone) {
        cudaEventRecord(ctx->ev_done, s0);
        cudaStreamWaitEvent(s1, ctx->ev_done, 0);
        rs = s1;
    }
    if (skip & BLASFT_GPU_SKIP_REPORT)
        slot->busy.store(0, std::memory_order_relaxed);
    else if (!cuda_ok(cudaLaunchHostFunc(rs, deliver, slot), "cudaLaunchHostFunc"))
        return -2;
    return cuda_ok(cudaGetLastError(), "kernel launch") ? 0 : -2;
}

int64_t max1(int64_t v) { return v > 1 ? v : 1; }

/* The type the engine computes in, and the bytes of the promoted copies (0 without promotion). */
blasft_type engine_type(blasft_type t, const blasft_gpu_params *p)
{
    if (!p->promote)
        return t;
    return t == BLASFT_TYPE_S ? BLASFT_TYPE_D : t == BLASFT_TYPE_C ? BLASFT_TYPE_Z : t;
}

struct promo_layout {
    int64_t ar, ac, br, bc; /* op(A) and op(B) as stored */
    size_t a, b, c, s, end;
};

promo_layout promo_plan(blasft_type t, char transa, char transb, int64_t m, int64_t n, int64_t k)
{
    const size_t P = (size_t)type_parts(t);
    promo_layout L;
    L.ar = op_of(transa) == CUBLAS_OP_N ? m : k;
    L.ac = op_of(transa) == CUBLAS_OP_N ? k : m;
    L.br = op_of(transb) == CUBLAS_OP_N ? k : n;
    L.bc = op_of(transb) == CUBLAS_OP_N ? n : k;
    gk_carve c{0};
    L.a = c.take(8 * P * (size_t)(m * k));
    L.b = c.take(8 * P * (size_t)(k * n));
    L.c = c.take(8 * P * (size_t)(m * n));
    L.s = c.take(8 * 4);
    L.end = c.o;
    return L;
}

size_t promo_bytes(blasft_type t, int64_t m, int64_t n, int64_t k, const blasft_gpu_params *p)
{
    return engine_type(t, p) == t ? 0 : promo_plan(t, 'N', 'N', m, n, k).end;
}

/* The descriptor of the GEMM of type e (D or Z) that stands in for a promoted S or C one. */
blasft_gpu_gemm promoted_desc(const blasft_gpu_gemm *g, blasft_type e, const promo_layout &L, char *w)
{
    blasft_gpu_gemm d = *g;
    d.type = e;
    d.a = w + L.a;
    d.lda = max1(L.ar);
    d.b = w + L.b;
    d.ldb = max1(L.br);
    d.c = w + L.c;
    d.ldc = max1(g->m);
    d.prep_a = d.prep_b = nullptr; /* prepared from the single-precision data: not these */
    return d;
}

/* BLASFT_PROMOTE on the GPU: an S or C GEMM computed as a D or Z GEMM of promoted copies in the
 * context's buffer, checked (and corrected) in double by protected_gemm and rounded once into the
 * caller's C, all on the caller's stream (docs/promote.md). The copies take 8 P (mk + kn + mn)
 * bytes beyond the D/Z workspace, so this is asked for (BLASFT_PROMOTE=on), not automatic. */
template <typename Td>
int promoted_gemm(blasft_gpu_ctx *ctx, const blasft_gpu_gemm *g, const blasft_gpu_params *p)
{
    constexpr int P = gk_el<Td>::P;
    const promo_layout L = promo_plan(g->type, g->transa, g->transb, g->m, g->n, g->k);
    int rc = ensure_buf(ctx, &ctx->promo, &ctx->promo_bytes, L.end, "cudaMalloc(promoted copies)");
    if (rc)
        return rc;
    char *w = (char *)ctx->promo;
    blasft_gpu_gemm d = promoted_desc(g, engine_type(g->type, p), L, w);
    const cudaStream_t s0 = ctx->s0;
    gk_promote((const float *)g->a, P * g->lda, P * L.ar, L.ac, (double *)d.a, s0);
    gk_promote((const float *)g->b, P * g->ldb, P * L.br, L.bc, (double *)d.b, s0);
    double hs[4] = {0.0, 0.0, 0.0, 0.0};
    if (g->scalars_on_device) {
        double *ds = (double *)(w + L.s);
        gk_promote_scalars((const float *)g->alpha, (const float *)g->beta, P, ds, s0);
        d.alpha = ds;
        d.beta = ds + P;
    } else {
        for (int i = 0; i < P; i++) {
            hs[i] = ((const float *)g->alpha)[i];
            hs[P + i] = ((const float *)g->beta)[i];
        }
        d.alpha = hs;
        d.beta = hs + P;
    }
    /* with beta = 0 in host memory the old C is never read (it may hold NaN); with device
     * scalars the engine skips it where beta turns out 0 */
    if (g->scalars_on_device || beta_nonzero(g->type, g->beta))
        gk_promote((const float *)g->c, P * g->ldc, P * g->m, g->n, (double *)d.c, s0);
    if ((rc = protected_gemm<Td>(ctx, &d, p, g->type)))
        return rc;
    gk_round((const double *)d.c, P * g->m, g->n, (float *)g->c, P * g->ldc, s0);
    return cuda_ok(cudaGetLastError(), "kernel launch") ? 0 : -2;
}

int check_args(const blasft_gpu_gemm *g, const blasft_gpu_params *p)
{
    if (g->type != BLASFT_TYPE_S && g->type != BLASFT_TYPE_D && g->type != BLASFT_TYPE_C &&
        g->type != BLASFT_TYPE_Z)
        return -1;
    if (g->m < 0 || g->n < 0 || g->k < 0 || g->m > INT_MAX || g->n > INT_MAX || g->k > INT_MAX)
        return -1;
    int64_t ar = op_of(g->transa) == CUBLAS_OP_N ? g->m : g->k;
    int64_t br = op_of(g->transb) == CUBLAS_OP_N ? g->k : g->n;
    if (g->lda < (ar > 1 ? ar : 1) || g->ldb < (br > 1 ? br : 1) ||
        g->ldc < (g->m > 1 ? g->m : 1))
        return -1;
    if (p && (p->block_size < 2 || p->block_size > 1024 || p->checksums < 1 || p->checksums > 2))
        return -1;
    return 0;
}

std::once_flag avail_once;
int avail;

} // namespace

extern "C" {

int blasft_gpu_available(void)
{
    std::call_once(avail_once, [] {
        int count = 0;
        if (cudaGetDeviceCount(&count) != cudaSuccess || count < 1) {
            blasft_log(BLASFT_LOG_INFO, "no CUDA device: GPU path disabled");
            return;
        }
        cb = blasft_cublas();
        avail = cb != nullptr;
    });
    return avail;
}

void blasft_gpu_params_from_cfg(blasft_gpu_params *p, const blasft_config *cfg)
{
    p->block_size = cfg->gpu_block_size;
    p->checksums = cfg->checksums;
    p->weights = (int)cfg->weights;
    p->omega = cfg->omega;
    p->pea_p = cfg->pea_p;
    p->pea_block_lists = cfg->gpu_pea_lists == 1;
    p->rows_on_demand = cfg->gpu_row_checks == 0;
    p->proj = cfg->threshold == BLASFT_THRESHOLD_PROJ;
    p->promote = cfg->promote == BLASFT_PROMOTE_ON;
    p->mode = cfg->mode;
    p->on_error = cfg->on_error;
}

int blasft_gpu_promotes(blasft_type t, const blasft_gpu_params *p) { return engine_type(t, p) != t; }

blasft_gpu_ctx *blasft_gpu_ctx_create(void *stream)
{
    if (!blasft_gpu_available())
        return nullptr;
    blasft_gpu_ctx *ctx = (blasft_gpu_ctx *)calloc(1, sizeof *ctx);
    if (!ctx)
        return nullptr;
    ctx->s0 = (cudaStream_t)stream;
    ctx->sched = -1;
    ctx->pmode[0] = ctx->pmode[1] = -1;
    /* the helper stream's priority (BLASFT_GPU_HELPER_PRIORITY): high lets the short memory-bound
     * kernels in between the main GEMM's blocks as soon as they are ready */
    int lo = 0, hi = 0, prio = 0;
    cudaDeviceGetStreamPriorityRange(&lo, &hi);
    int wanted = blasft_cfg()->gpu_helper_priority;
    if (wanted == 1)
        prio = lo;
    else if (wanted == 0)
        prio = hi;
    bool ok = cuda_ok(cudaStreamCreateWithPriority(&ctx->s1, cudaStreamNonBlocking, prio), "stream") &&
              cuda_ok(cudaEventCreateWithFlags(&ctx->ev_fork, cudaEventDisableTiming), "event") &&
              cuda_ok(cudaEventCreateWithFlags(&ctx->ev_cold, cudaEventDisableTiming), "event") &&
              cuda_ok(cudaEventCreateWithFlags(&ctx->ev_ref, cudaEventDisableTiming), "event") &&
              cuda_ok(cudaEventCreateWithFlags(&ctx->ev_done, cudaEventDisableTiming), "event") &&
              cuda_ok(cudaHostAlloc((void **)&ctx->slots, sizeof(report_slot) * kSlots,
                                    cudaHostAllocDefault),
                      "cudaHostAlloc") &&
              blas_ok(cb->create(&ctx->h0), "cublasCreate") &&
              blas_ok(cb->create(&ctx->h1), "cublasCreate") &&
              blas_ok(cb->set_stream(ctx->h0, ctx->s0), "cublasSetStream") &&
              blas_ok(cb->set_stream(ctx->h1, ctx->s1), "cublasSetStream");
    if (ctx->slots)
        for (int i = 0; i < kSlots; i++)
            new (&ctx->slots[i].busy) std::atomic<int>(0);
    if (!ok) {
        blasft_gpu_ctx_destroy(ctx);
        return nullptr;
    }
    return ctx;
}

void blasft_gpu_ctx_destroy(blasft_gpu_ctx *ctx)
{
    if (!ctx)
        return;
    if (ctx->s0 || ctx->s1) {
        cudaStreamSynchronize(ctx->s0);
        if (ctx->s1)
            cudaStreamSynchronize(ctx->s1);
    }
    if (ctx->h0)
        cb->destroy(ctx->h0);
    if (ctx->h1)
        cb->destroy(ctx->h1);
    if (ctx->s1)
        cudaStreamDestroy(ctx->s1);
    if (ctx->ev_fork)
        cudaEventDestroy(ctx->ev_fork);
    if (ctx->ev_cold)
        cudaEventDestroy(ctx->ev_cold);
    if (ctx->ev_ref)
        cudaEventDestroy(ctx->ev_ref);
    if (ctx->ev_done)
        cudaEventDestroy(ctx->ev_done);
    for (int i = 0; i < BLASFT_GPU_TRACE_POINTS; i++)
        if (ctx->trace[i])
            cudaEventDestroy(ctx->trace[i]);
    if (ctx->slots)
        cudaFreeHost(ctx->slots);
    if (ctx->ws)
        cudaFree(ctx->ws);
    if (ctx->old_c)
        cudaFree(ctx->old_c);
    if (ctx->promo)
        cudaFree(ctx->promo);
    free(ctx);
}

void blasft_gpu_ctx_set_stream(blasft_gpu_ctx *ctx, void *stream)
{
    ctx->s0 = (cudaStream_t)stream;
    cb->set_stream(ctx->h0, ctx->s0);
}

size_t blasft_gpu_workspace_bytes(const blasft_gpu_ctx *ctx)
{
    return ctx->ws_bytes + ctx->old_bytes + ctx->promo_bytes;
}

size_t blasft_gpu_workspace_need(blasft_type t, int64_t m, int64_t n, int64_t k,
                                 const blasft_gpu_params *p)
{
    const blasft_type e = engine_type(t, p);
    int64_t mb = (m + p->block_size - 1) / p->block_size, nb = (n + p->block_size - 1) / p->block_size;
    return plan(type_size(e), type_parts(e), m, n, k, p->block_size, p->checksums, mb * nb,
                p->proj != 0)
               .end +
           promo_bytes(t, m, n, k, p);
}

int blasft_gpu_reserve(blasft_gpu_ctx *ctx, blasft_type t, int64_t m, int64_t n, int64_t k,
                       const blasft_gpu_params *p, int keep_old_c)
{
    const blasft_type e = engine_type(t, p);
    size_t ts = type_size(e);
    int rc = ensure_ws(ctx, ts, type_parts(e), m, n, k, p->block_size, p->checksums, p->proj != 0);
    if (!rc && keep_old_c)
        rc = ensure_old(ctx, ts * m * n);
    if (!rc)
        rc = ensure_buf(ctx, &ctx->promo, &ctx->promo_bytes, promo_bytes(t, m, n, k, p),
                        "cudaMalloc(promoted copies)");
    return rc;
}

int blasft_gpu_gemm_plain(blasft_gpu_ctx *ctx, const blasft_gpu_gemm *g)
{
    if (check_args(g, nullptr))
        return -1;
    if (g->m == 0 || g->n == 0)
        return 0;
    switch (g->type) {
    case BLASFT_TYPE_S: return plain<float>(ctx, g);
    case BLASFT_TYPE_D: return plain<double>(ctx, g);
    case BLASFT_TYPE_C: return plain<float2>(ctx, g);
    default: return plain<double2>(ctx, g);
    }
}

int blasft_gpu_gemm_run(blasft_gpu_ctx *ctx, const blasft_gpu_gemm *g, const blasft_gpu_params *p)
{
    if (check_args(g, p))
        return -1;
    if (g->m == 0 || g->n == 0)
        return 0;
    if (g->k == 0 || p->mode == BLASFT_MODE_OFF) {
        /* nothing to protect (C = beta C) or protection off */
        blasft_stat_add(BLASFT_STAT_UNPROTECTED_GEMMS, 1);
        return blasft_gpu_gemm_plain(ctx, g);
    }
    if (engine_type(g->type, p) != g->type)
        return g->type == BLASFT_TYPE_S ? promoted_gemm<double>(ctx, g, p)
                                        : promoted_gemm<double2>(ctx, g, p);
    switch (g->type) {
    case BLASFT_TYPE_S: return protected_gemm<float>(ctx, g, p, g->type);
    case BLASFT_TYPE_D: return protected_gemm<double>(ctx, g, p, g->type);
    case BLASFT_TYPE_C: return protected_gemm<float2>(ctx, g, p, g->type);
    default: return protected_gemm<double2>(ctx, g, p, g->type);
    }
}

int blasft_gpu_run_host_gemm(const blasft_gemm *g, const blasft_config *cfg)
{
    if (!blasft_gpu_available())
        return -1;
    static thread_local blasft_gpu_ctx *ctx;
    if (!ctx && !(ctx = blasft_gpu_ctx_create(nullptr)))
        return -1;
    size_t ts = type_size(g->type);
    int64_t ar = blasft_gemm_a_rows(g), ac = blasft_gemm_a_cols(g);
    int64_t br = blasft_gemm_b_rows(g), bc = blasft_gemm_b_cols(g);
    void *dA = nullptr, *dB = nullptr, *dC = nullptr;
    int rc = -1;
    if (cudaMalloc(&dA, ts * (ar > 0 ? ar : 1) * (ac > 0 ? ac : 1)) != cudaSuccess ||
        cudaMalloc(&dB, ts * (br > 0 ? br : 1) * (bc > 0 ? bc : 1)) != cudaSuccess ||
        cudaMalloc(&dC, ts * (g->m > 0 ? g->m : 1) * (g->n > 0 ? g->n : 1)) != cudaSuccess)
        goto out;
    if (cudaMemcpy2D(dA, ts * ar, g->a, ts * g->lda, ts * ar, ac, cudaMemcpyHostToDevice) ||
        cudaMemcpy2D(dB, ts * br, g->b, ts * g->ldb, ts * br, bc, cudaMemcpyHostToDevice) ||
        cudaMemcpy2D(dC, ts * g->m, g->c, ts * g->ldc, ts * g->m, g->n, cudaMemcpyHostToDevice))
        goto out;
    {
        /* the scalars in the GEMM's type: real part first, so one buffer serves every type */
        float sf[2][2] = {{(float)g->alpha[0], (float)g->alpha[1]}, {(float)g->beta[0], (float)g->beta[1]}};
        bool single = g->type == BLASFT_TYPE_S || g->type == BLASFT_TYPE_C;
        blasft_gpu_gemm dg;
        memset(&dg, 0, sizeof dg); /* every field not set below (prepared operands: none) */
        dg.type = g->type;
        dg.transa = g->transa;
        dg.transb = g->transb;
        dg.m = g->m; dg.n = g->n; dg.k = g->k;
        dg.alpha = single ? (const void *)sf[0] : (const void *)g->alpha;
        dg.beta = single ? (const void *)sf[1] : (const void *)g->beta;
        dg.a = dA; dg.lda = ar > 1 ? ar : 1;
        dg.b = dB; dg.ldb = br > 1 ? br : 1;
        dg.c = dC; dg.ldc = g->m > 1 ? g->m : 1;
        dg.scalars_on_device = 0;
        dg.routine = g->routine;
        blasft_gpu_params p;
        blasft_gpu_params_from_cfg(&p, cfg);
        if (blasft_gpu_gemm_run(ctx, &dg, &p) != 0)
            goto out;
        if (cudaMemcpy2DAsync(g->c, ts * g->ldc, dC, ts * g->m, ts * g->m, g->n,
                              cudaMemcpyDeviceToHost, nullptr) != cudaSuccess ||
            cudaStreamSynchronize(nullptr) != cudaSuccess)
            goto out;
        rc = 0;
    }
out:
    cudaFree(dA);
    cudaFree(dB);
    cudaFree(dC);
    return rc;
}

int blasft_gpu_gemm_would_sync(const blasft_gpu_ctx *ctx, const blasft_gpu_gemm *g,
                               const blasft_gpu_params *p, int64_t count)
{
    /* mirrors protected_gemm's growth and slot checks */
    if (check_args(g, p) || g->m == 0 || g->n == 0 || g->k == 0 || p->mode == BLASFT_MODE_OFF ||
        count <= 0)
        return 0;
    if (count > kSlots)
        return 1;
    const blasft_type e = engine_type(g->type, p);
    const size_t ts = type_size(e);
    const int64_t m = g->m, n = g->n, bs = p->block_size;
    const int64_t mb = (m + bs - 1) / bs, nb = (n + bs - 1) / bs;
    if (mb * nb > ctx->flag_cap ||
        plan(ts, type_parts(e), m, n, g->k, (int)bs, p->checksums, ctx->flag_cap,
             p->proj != 0)
                .end >
            ctx->ws_bytes ||
        promo_bytes(g->type, m, n, g->k, p) > ctx->promo_bytes)
        return 1;
    const bool on_dev = g->scalars_on_device != 0;
    const bool need_cold = on_dev || beta_nonzero(g->type, g->beta);
    if (need_cold && p->mode == BLASFT_MODE_CORRECT && p->on_error == BLASFT_ON_ERROR_RECOMPUTE &&
        ts * m * n > ctx->old_bytes)
        return 1;
    for (int64_t i = 0; i < count; i++)
        if (ctx->slots[(ctx->next_slot + i) % kSlots].busy.load(std::memory_order_acquire))
            return 1;
    return 0;
}

void blasft_gpu_set_skip(blasft_gpu_ctx *ctx, int stages) { ctx->skip = stages; }

int blasft_gpu_set_trace(blasft_gpu_ctx *ctx, int on)
{
    if (on && !ctx->trace[0])
        for (int i = 0; i < BLASFT_GPU_TRACE_POINTS; i++)
            if (!cuda_ok(cudaEventCreate(&ctx->trace[i]), "event"))
                return -1;
    ctx->tracing = on && ctx->trace[0];
    return 0;
}

int blasft_gpu_trace_read(blasft_gpu_ctx *ctx, float *ms)
{
    if (!ctx->trace[0] || !cuda_ok(cudaDeviceSynchronize(), "cudaDeviceSynchronize"))
        return -1;
    for (int i = 0; i < BLASFT_GPU_TRACE_POINTS; i++)
        if (cudaEventElapsedTime(&ms[i], ctx->trace[0], ctx->trace[i]) != cudaSuccess)
            ms[i] = -1.0f; /* never recorded */
    return 0;
}

void blasft_gpu_set_schedule(blasft_gpu_ctx *ctx, int schedule)
{
    ctx->sched = schedule >= 0 && schedule <= BLASFT_GPU_SCHED_SERIAL ? schedule : -1;
}

void blasft_gpu_set_fault_hook(blasft_gpu_ctx *ctx, blasft_gpu_hook fn, void *user)
{
    ctx->hook = fn;
    ctx->hook_user = user;
}

void *blasft_gpu_debug_checked_c(blasft_gpu_ctx *ctx, blasft_type *type, int64_t *ldc)
{
    *type = ctx->checked_type;
    *ldc = ctx->checked_ldc;
    return ctx->checked_c;
}

int64_t blasft_gpu_debug_fetch(blasft_gpu_ctx *ctx, blasft_type t, int64_t m, int64_t n,
                               int64_t k, const blasft_gpu_params *p, blasft_gpu_buf which,
                               void *out)
{
    size_t ts = type_size(t);
    const int P = type_parts(t);
    const int bs = p->block_size, r = p->checksums;
    int64_t mb = (m + bs - 1) / bs, nb = (n + bs - 1) / bs;
    layout L = plan(ts, P, m, n, k, bs, r, ctx->flag_cap, p->proj != 0);
    size_t off, es;
    int64_t cnt;
    switch (which) {
    case BLASFT_GPU_BUF_ACST: off = L.AcsT; es = ts; cnt = k * r * mb; break;
    case BLASFT_GPU_BUF_BCS: off = L.Bcs; es = ts; cnt = k * r * nb; break;
    case BLASFT_GPU_BUF_CCS_REF: off = L.Ccs_ref; es = ts; cnt = r * mb * n; break;
    case BLASFT_GPU_BUF_CRS_REF: off = L.Crs_ref; es = ts; cnt = m * r * nb; break;
    case BLASFT_GPU_BUF_CCS_REC: off = L.Ccs_rec; es = 8; cnt = P * r * mb * n; break;
    case BLASFT_GPU_BUF_CRS_REC: off = L.Crs_rec; es = 8; cnt = P * m * r * nb; break;
    case BLASFT_GPU_BUF_CCS_EPS: off = L.Ccs_eps; es = 8; cnt = r * mb * n; break;
    case BLASFT_GPU_BUF_CRS_EPS: off = L.Crs_eps; es = 8; cnt = m * r * nb; break;
    case BLASFT_GPU_BUF_TA_VAL: off = L.tA_v; es = 8; cnt = m * GK_PMAX; break;
    case BLASFT_GPU_BUF_TA_POS: off = L.tA_p; es = 4; cnt = m * GK_PMAX; break;
    case BLASFT_GPU_BUF_TB_VAL: off = L.tB_v; es = 8; cnt = n * GK_PMAX; break;
    case BLASFT_GPU_BUF_TB_POS: off = L.tB_p; es = 4; cnt = n * GK_PMAX; break;
    case BLASFT_GPU_BUF_PROJ_REF: off = L.Pref; es = 8; cnt = L.Pref ? r * mb * n : 0; break;
    default: return -1;
    }
    if (off + es * cnt > ctx->ws_bytes || cudaStreamSynchronize(ctx->s0) != cudaSuccess ||
        cudaMemcpy(out, ctx->ws + off, es * cnt, cudaMemcpyDeviceToHost) != cudaSuccess)
        return -1;
    return cnt;
}

} // extern "C"
