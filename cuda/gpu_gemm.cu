/* Orchestration of the GPU ABFT GEMM (method.md 4): context-independent work (encoding A and B,
 * "PEA max p" preprocessing) and the reference checksum GEMMs on a helper stream forked from the
 * caller's stream, the main cuBLAS GEMM on the caller's stream, then one check over C; joined by
 * events, no host synchronisation, outcomes delivered by a host function in stream order. The
 * promoted GEMM's tiles are gpu_promoted_gemm.cu, the engine's own graphs gpu_graphs.cu. */
#include "cuda_errors.h"
#include "gpu_engine.h"
#include "gpu_prep.h"

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
#include <pthread.h>
#include <type_traits>

namespace gpu_engine {

const blasft_cublas_api *cb;

/* A device the application has filled (a framework's memory cache) refuses every GEMM's
 * memory: one warning, not an error per call; each call still tries, as memory may come back. */
void out_of_memory(const char *what)
{
    static int warned;
    blasft_log_once(&warned, BLASFT_LOG_WARN,
                    "GPU: out of device memory (first at %s): a GEMM that cannot get device memory "
                    "runs on the host, or unprotected where the application called cuBLAS; later "
                    "ones are not logged", what);
    blasft_log(BLASFT_LOG_DEBUG, "GPU: %s: out of device memory", what);
}
/* The runtime keeps one "last error" per thread, which the application reads after its own
 * launches (PyTorch after every kernel): a failure of the library's own calls is taken from it
 * here, so that the application never sees an error it did not cause. */
bool cuda_ok(cudaError_t e, const char *what)
{
    if (e == cudaSuccess)
        return true;
    cudaGetLastError();
    if (e == cudaErrorMemoryAllocation)
        out_of_memory(what);
    else
        blasft_log(BLASFT_LOG_ERROR, "GPU: %s failed: %s", what, cudaGetErrorString(e));
    return false;
}
bool blas_ok(cublasStatus_t s, const char *what)
{
    if (s == CUBLAS_STATUS_SUCCESS)
        return true;
    if (s == CUBLAS_STATUS_ALLOC_FAILED)
        out_of_memory(what);
    else
        blasft_log(BLASFT_LOG_ERROR, "GPU: %s failed: cuBLAS status %d", what, (int)s);
    return false;
}

/* The error pending when the engine was entered: the application's, left for it to read. The
 * engine's launches are judged by what is pending after them, against that. */
thread_local cudaError_t err_at_entry = cudaSuccess;
void engine_entered() { err_at_entry = blasft_err_pending(); }
int whole_call_entered(blasft_gpu_ctx *ctx, bool *capturing)
{
    engine_entered();
    if (blasft_gpu_ctx_stale(ctx))
        return -2;
    cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
    if (cudaStreamIsCapturing(ctx->s0, &cs) != cudaSuccess)
        return -1;
    const bool cap = cs != cudaStreamCaptureStatusNone;
    if (capturing)
        *capturing = cap;
    return cap && !capturing ? -1 : 0;
}
void *device_ptr_at(const void *const *arr, int64_t i, cudaStream_t s)
{
    const void *p = nullptr;
    if (!cuda_ok(cudaMemcpyAsync(&p, arr + i, sizeof p, cudaMemcpyDeviceToHost, s),
                 "cudaMemcpyAsync") ||
        !cuda_ok(cudaStreamSynchronize(s), "cudaStreamSynchronize"))
        return nullptr;
    return const_cast<void *>(p);
}
bool launches_ok()
{
    const cudaError_t e = cudaPeekAtLastError(); /* for the log: blasft_launched_ok takes it */
    return blasft_launched_ok(err_at_entry) || cuda_ok(e, "kernel launch");
}


/* The per-call buffers, carved from the workspace after the header. */
struct layout {
    size_t AcsT, Bcs, Ccs_ref, Crs_ref, Ccs_rec, Crs_rec, Ccs_eps, Crs_eps;
    size_t tA_v, tA_p, tB_v, tB_p, tAc_v, tAc_p, tBc_v, tBc_p, sc_v, sc_p, list, end;
    size_t EnvA, EnvB, tEa_v, tEa_p, tEb_v, tEb_p, Ccs_sq, Crs_sq, rlist;
    size_t Pvec, Pref, Pold, Pexp, Ppack; /* PROJ (real data): 0 when not planned */
};

/* the reference GEMMs' calls along k (protected_gemm), where kRefPartMin <= k <= kRefPartMax
 * and m n >= kRefPartMn */
constexpr int64_t kRefParts = 2, kRefPartMin = 2, kRefPartMax = 512, kRefPartMn = (int64_t)1 << 20;

/* The workspace's header: the counters, the constant one of every type in device memory (the
 * reference GEMMs' later parts add to the first with beta = 1, which cuBLAS in device pointer
 * mode reads from there), the block flags. */
struct one_consts {
    double2 d; /* D (d.x) and Z */
    float2 f;  /* S (f.x) and C */
};
size_t ones_offset() { return gk_align(sizeof(gk_counters)); }
size_t flags_offset() { return ones_offset() + gk_align(sizeof(one_consts)); }
size_t header_bytes(int64_t flag_cap) { return flags_offset() + gk_align(flag_cap * 4); }
/* the constant one of type T in the header at w */
template <typename T> const T *device_one(const char *w)
{
    const one_consts *o = (const one_consts *)(w + ones_offset());
    if constexpr (std::is_same<T, float>::value || std::is_same<T, float2>::value)
        return (const T *)&o->f;
    else
        return (const T *)&o->d;
}

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
    L.Pvec = L.Pref = L.Pold = L.Pexp = L.Ppack = 0;
    if (proj && P == 1) {
        L.Pvec = c.take(8 * GK_PROJ_NV * k * r * mb);
        L.Pref = c.take(8 * r * mb * n);
        L.Pold = c.take(8 * r * mb * n);
        L.Pexp = c.take(4 * GK_PROJ_EXP_KINDS * r * mb);
        L.Ppack = c.take((size_t)gk_proj_pack_bytes(r * mb, k));
    }
    L.end = c.o;
    return L;
}

/* Frees buf to make room for a larger one. Growing frees memory the streams may still use: the
 * one synchronisation, off the hot path; none where there is no buffer yet, which nothing can
 * use (a context made while its stream is captured must not synchronise it). False where the
 * streams failed (buf kept). */
template <typename T> bool drop_buf(blasft_gpu_ctx *ctx, T *&buf)
{
    if (!buf)
        return true;
    if (!cuda_ok(cudaStreamSynchronize(ctx->s0), "cudaStreamSynchronize") ||
        !cuda_ok(cudaStreamSynchronize(ctx->s1), "cudaStreamSynchronize"))
        return false;
    if (ctx->graphs) /* they bake the buffers' addresses */
        blasft_graph_clear(ctx->graphs);
    cudaFree(buf);
    buf = nullptr;
    return true;
}

int ensure_ws(blasft_gpu_ctx *ctx, size_t ts, int P, int64_t m, int64_t n, int64_t k, int bs, int r,
              bool proj)
{
    int64_t mb = (m + bs - 1) / bs, nb = (n + bs - 1) / bs;
    int64_t flag_cap = mb * nb > ctx->flag_cap ? mb * nb : ctx->flag_cap;
    size_t need = plan(ts, P, m, n, k, bs, r, flag_cap, proj).end;
    if (need <= ctx->ws_bytes && flag_cap == ctx->flag_cap)
        return 0;
    if (!drop_buf(ctx, ctx->ws))
        return -2;
    ctx->ws_bytes = 0;
    if (!cuda_ok(cudaMalloc((void **)&ctx->ws, need), "cudaMalloc(workspace)"))
        return -2;
    /* on the report stream, not the legacy one, which would wait for (or, while another thread
     * captures one, break) the application's blocking streams, nor the helper stream, which an
     * application's capture may have joined (a half GEMM captured before on this context) */
    const one_consts ones = {make_double2(1.0, 0.0), make_float2(1.0f, 0.0f)};
    if (!cuda_ok(cudaMemsetAsync(ctx->ws, 0, header_bytes(flag_cap), ctx->sr), "cudaMemsetAsync") ||
        !cuda_ok(cudaMemcpyAsync(ctx->ws + ones_offset(), &ones, sizeof ones,
                                 cudaMemcpyHostToDevice, ctx->sr),
                 "cudaMemcpyAsync(constants)") ||
        !cuda_ok(cudaStreamSynchronize(ctx->sr), "cudaStreamSynchronize"))
        return -2;
    ctx->ws_bytes = need;
    ctx->flag_cap = flag_cap;
    return 0;
}

/* A buffer of the context grown to `bytes` (never shrunk; the old one dropped as drop_buf says).
 * Returns 0, or -2 where a CUDA call failed (logged as `what`); with `what` NULL a failed
 * cudaMalloc returns -3 unlogged. */
int ensure_buf(blasft_gpu_ctx *ctx, void **buf, size_t *have, size_t bytes, const char *what)
{
    if (bytes <= *have)
        return 0;
    if (!drop_buf(ctx, *buf))
        return -2;
    *have = 0;
    const cudaError_t e = cudaMalloc(buf, bytes);
    if (e != cudaSuccess) {
        *buf = nullptr;
        if (!what) {
            cudaGetLastError(); /* the library's own failure (cuda_ok) */
            return -3;
        }
        cuda_ok(e, what);
        return -2;
    }
    *have = bytes;
    return 0;
}

/* The buffer of the promoted copies grown to `bytes`: 0; 1 where the device has no memory for it
 * (then this context computes S and C natively protected from now on: one warning), -2 on a
 * failed synchronisation. */
int ensure_promo(blasft_gpu_ctx *ctx, size_t bytes)
{
    const int rc = ensure_buf(ctx, &ctx->promo, &ctx->promo_bytes, bytes, nullptr);
    if (rc != -3)
        return rc;
    ctx->no_promo = true; /* not sticky: the native path goes on */
    static int once;
    blasft_log_once(&once, BLASFT_LOG_WARN,
                    "GPU: no device memory for %zu bytes of promoted copies "
                    "(BLASFT_GPU_PROMOTE_MEM): S and C GEMMs of this context run natively "
                    "protected", bytes);
    return 1;
}

int ensure_old(blasft_gpu_ctx *ctx, size_t bytes)
{
    return ensure_buf(ctx, &ctx->old_c, &ctx->old_bytes, bytes, "cudaMalloc(old C)");
}

void CUDART_CB deliver(void *arg)
{
    report_slot *s = (report_slot *)arg;
    const gk_counters &c = s->c;
    const report_meta &m = s->m;
    blasft_stat_add(BLASFT_STAT_PROTECTED_GEMMS, (uint64_t)m.gemms);
    blasft_stat_add(BLASFT_STAT_CHECKS, m.checks + c.row_checks);
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
        ev.routine = m.routine;
        ev.type = m.type;
        /* a tile's positions in the caller's C (tiles start at multiples of BS) */
        ev.block_row = r.block_row < 0 ? r.block_row : r.block_row + m.row0 / m.bs;
        ev.block_col = r.block_col < 0 ? r.block_col : r.block_col + m.col0 / m.bs;
        ev.row = r.row < 0 ? r.row : r.row + m.row0;
        ev.col = r.col < 0 ? r.col : r.col + m.col0;
        ev.syndrome = r.syndrome < 0 ? -r.syndrome : r.syndrome;
        ev.threshold = r.threshold;
        ev.action = actions[r.kind];
        ev.matrix = r.matrix >= 0 ? r.matrix : m.matrix;
        blasft_event_emit(&ev);
    }
    bool abort_now = m.on_error == BLASFT_ON_ERROR_ABORT && c.uncorrectable > 0;
    const char *routine = m.routine;
    s->busy.store(0, std::memory_order_release);
    if (abort_now) {
        blasft_log(BLASFT_LOG_ERROR, "GPU %s: uncorrectable error, aborting (BLASFT_ON_ERROR=abort)",
                   routine);
        abort();
    }
}

/* Report slots of calls captured into an application's graph: each owned by that graph for as
 * long as it lives (a CUDA user object's destructor gives it back once the graph and its
 * instances are gone), so that no later call or capture shares it and none waits for it; pinned,
 * process-wide (no context's: a graph may outlive the context that captured it), kept in a free
 * list (the destructor may not call CUDA). */
struct graph_slot {
    report_slot slot;
    graph_slot *next;
};
std::mutex graph_slots_lock;
graph_slot *graph_slots_free;

void CUDART_CB graph_slot_gone(void *p)
{
    graph_slot *gs = (graph_slot *)p;
    std::lock_guard<std::mutex> hold(graph_slots_lock);
    gs->next = graph_slots_free;
    graph_slots_free = gs;
}

/* A slot for a call being captured on s, retained by the graph being captured; NULL where the
 * graph could not be read, nothing could be allocated, or the graph could not retain it. */
report_slot *graph_slot_take(cudaStream_t s)
{
    cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
    cudaGraph_t graph = nullptr;
#if CUDART_VERSION >= 13000
    if (!cuda_ok(cudaStreamGetCaptureInfo(s, &cs, nullptr, &graph, nullptr, nullptr, nullptr),
                 "cudaStreamGetCaptureInfo"))
#else
    if (!cuda_ok(cudaStreamGetCaptureInfo_v2(s, &cs, nullptr, &graph, nullptr, nullptr),
                 "cudaStreamGetCaptureInfo"))
#endif
        return nullptr;
    if (cs != cudaStreamCaptureStatusActive || !graph)
        return nullptr;
    graph_slot *gs = nullptr;
    {
        std::lock_guard<std::mutex> hold(graph_slots_lock);
        if ((gs = graph_slots_free))
            graph_slots_free = gs->next;
    }
    if (!gs) {
        /* kSlots at a time (one pinned allocation each would cost a graph of many GEMMs a
         * page and an allocation per GEMM), never freed; an allocation is refused while the
         * calling thread captures in the global or thread-local mode: relaxed for it (the
         * interposer's calls already are) */
        cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
        cudaThreadExchangeStreamCaptureMode(&mode);
        const cudaError_t e = cudaHostAlloc((void **)&gs, sizeof *gs * kSlots, cudaHostAllocDefault);
        cudaThreadExchangeStreamCaptureMode(&mode);
        if (!cuda_ok(e, "cudaHostAlloc(report slots)"))
            return nullptr;
        for (int i = 0; i < kSlots; i++) {
            new (&gs[i].slot.busy) std::atomic<int>(0);
            gs[i].slot.graph = true;
        }
        for (int i = 1; i < kSlots; i++)
            graph_slot_gone(&gs[i]);
    }
    cudaUserObject_t obj;
    if (!cuda_ok(cudaUserObjectCreate(&obj, gs, graph_slot_gone, 1,
                                      cudaUserObjectNoDestructorSync),
                 "cudaUserObjectCreate")) {
        graph_slot_gone(gs);
        return nullptr;
    }
    if (!cuda_ok(cudaGraphRetainUserObject(graph, obj, 1, cudaGraphUserObjectMove),
                 "cudaGraphRetainUserObject")) {
        cudaUserObjectRelease(obj, 1); /* its destructor gives the slot back */
        return nullptr;
    }
    return &gs->slot;
}

/* A free report slot: under an application's graph capture one the graph owns (graph_slot_take);
 * else the context's next, and if every one is still in flight the oldest once the stream has
 * passed it. NULL where that failed. */
report_slot *take_slot(blasft_gpu_ctx *ctx)
{
    cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
    if (cudaStreamIsCapturing(ctx->s0, &cs) == cudaSuccess && cs != cudaStreamCaptureStatusNone)
        return graph_slot_take(ctx->s0);
    report_slot *slot = &ctx->slots[ctx->next_slot];
    ctx->next_slot = (ctx->next_slot + 1) % kSlots;
    if (slot->busy.load(std::memory_order_acquire) &&
        !cuda_ok(cudaStreamSynchronize(ctx->sr), "cudaStreamSynchronize"))
        return nullptr;
    return slot;
}

/* Under graph capture: the report's host function added to the graph after the counters' copy
 * as a node that nothing captured later waits for. On the caller's stream it would hold up the
 * rest of the graph for the host's round trip at every replay (a forked stream must be joined
 * back before the capture ends); a node added to the graph directly may stay unjoined
 * (cudaStreamGetCaptureInfo), and the graph's launch still completes only after it. false where
 * it could not be added (then it goes on the stream). */
bool report_node(cudaStream_t s0, report_slot *slot)
{
    cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
    cudaGraph_t graph = nullptr;
    const cudaGraphNode_t *deps = nullptr;
    size_t ndeps = 0;
#if CUDART_VERSION >= 13000
    cudaError_t e = cudaStreamGetCaptureInfo(s0, &cs, nullptr, &graph, &deps, nullptr, &ndeps);
#else
    cudaError_t e = cudaStreamGetCaptureInfo_v2(s0, &cs, nullptr, &graph, &deps, &ndeps);
#endif
    if (e == cudaSuccess && (cs != cudaStreamCaptureStatusActive || !graph))
        return false;
    cudaHostNodeParams hp = {deliver, slot};
    cudaGraphNode_t node;
    if (e == cudaSuccess)
        e = cudaGraphAddHostNode(&node, graph, deps, ndeps, &hp);
    if (e != cudaSuccess)
        cudaGetLastError(); /* the library's own (e.g. a lossy query of edge data), not kept */
    return e == cudaSuccess;
}

/* The report of the protected GEMM just enqueued on s0 (its counters in the workspace's header).
 * The counters are copied in the caller's stream order (the next GEMM resets them); the host
 * function that delivers them runs on the report stream, so neither the caller's stream nor the
 * next GEMM's helper passes wait for the host thread; under graph capture it is a node of the
 * graph that nothing waits for (report_node), else on the caller's stream. */
int enqueue_report(blasft_gpu_ctx *ctx, report_slot *slot, const report_meta &m,
                   const void *counters)
{
    const cudaStream_t s0 = ctx->s0;
    slot->busy.store(1, std::memory_order_relaxed);
    slot->m = m;
    cudaMemcpyAsync(&slot->c, counters ? counters : ctx->ws, sizeof(gk_counters),
                    cudaMemcpyDeviceToHost, s0);
    /* the stream is being captured where take_slot gave a graph's slot */
    cudaStream_t rs = s0;
    if (!slot->graph) {
        cudaEventRecord(ctx->ev_done, s0);
        cudaStreamWaitEvent(ctx->sr, ctx->ev_done, 0);
        rs = ctx->sr;
    }
    if (ctx->skip & BLASFT_GPU_SKIP_REPORT)
        slot->busy.store(0, std::memory_order_relaxed);
    else if ((!slot->graph || !report_node(s0, slot)) &&
             !cuda_ok(cudaLaunchHostFunc(rs, deliver, slot), "cudaLaunchHostFunc"))
        return -2;
    return launches_ok() ? 0 : -2;
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
/* A scalar of type T from host memory. A caller's complex scalar need not have float2's or
 * double2's alignment (C's double complex, a double[2] have 8 bytes): the compiler loads a
 * double2 with an instruction that faults on anything less than 16, hence the copy. */
template <typename T> T host_scalar(const void *x)
{
    T v;
    memcpy(&v, x, sizeof v);
    return v;
}

/* a scalar in host memory that is not zero (beta: the old C enters; alpha: the product does) */
bool scalar_nonzero(blasft_type t, const void *x)
{
    switch (t) {
    case BLASFT_TYPE_S: return !is_zero_h(host_scalar<float>(x));
    case BLASFT_TYPE_D: return !is_zero_h(host_scalar<double>(x));
    case BLASFT_TYPE_C: return !is_zero_h(host_scalar<float2>(x));
    default: return !is_zero_h(host_scalar<double2>(x));
    }
}

template <typename T> T one_of();
template <> float one_of<float>() { return 1.0f; }
template <> double one_of<double>() { return 1.0; }
template <> float2 one_of<float2>() { return float2{1.0f, 0.0f}; }
template <> double2 one_of<double2>() { return double2{1.0, 0.0}; }

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
    /* A small call's time is its chain of short kernels, longest on the helper stream (encoding,
     * lists, reference GEMMs), while its main GEMM takes a few microseconds: there the lists go
     * after the GEMM on the caller's stream, beside the reference GEMMs (H100, replayed calls
     * back to back: D 256 to 1024 x 256 x 1024 10-13 % less time per call; 512 x 512 x 2048 the
     * same, 1024^3 12 % more; docs/cublas-benchmark.md, "Small calls"). */
    if (mnk <= 0x1p28)
        return BLASFT_GPU_SCHED_LISTS_AFTER;
    return BLASFT_GPU_SCHED_OVERLAP;
}

template <typename T> int plain(blasft_gpu_ctx *ctx, const blasft_gpu_gemm *g)
{
    if (set_mode(ctx, g->scalars_on_device))
        return -2;
    if (g->c_vector && blasft_gpu_bias_into(g->type, g->m, g->n, g->c_vector, nullptr, nullptr, 0,
                                            g->c, g->ldc, ctx->s0))
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
/* PROJ's thresholds where asked for, for real data, and where its launches fit (gk_proj_fits);
 * PEA's otherwise */
bool proj_used(const blasft_gpu_params *p, int parts, int64_t m, int64_t k)
{
    return p->proj && parts == 1 &&
           gk_proj_fits((int64_t)p->checksums * ((m + p->block_size - 1) / p->block_size), k);
}

/* The weights' sums for the thresholds (sum w^2, max w^2) per side and checksum: full blocks and
 * the last (possibly ragged) block. */
template <typename T> void weight_sums(gk_gemm<T> &kg, int scheme)
{
    for (int side = 0; side < 2; side++)
        for (int cw = 0; cw < kg.r; cw++)
            for (int last = 0; last < 2; last++) {
                const int64_t dim = side == 0 ? kg.m : kg.n;
                const int64_t len = last ? dim - (dim - 1) / kg.bs * kg.bs : kg.bs;
                double sum = 0.0, mx = 0.0;
                for (int64_t i = 0; i < len; i++) {
                    double wt = cw == 0 ? 1.0 : blasft_weight(scheme, (int)i, kg.bs);
                    sum += wt * wt;
                    mx = wt * wt > mx ? wt * wt : mx;
                }
                kg.w2[side][cw][last] = sum;
                kg.wmax2[side][cw][last] = mx;
            }
}

/* The kernels' view of one call (gk_gemm): shape, operands, scalars and options; the buffers
 * carved from the workspace (plan's layout) or taken from prepared operands; the weights' sums
 * for the thresholds. With it, what the enqueueing needs besides: the envelopes, the top-p
 * scratch, and which passes the call leaves out. */
template <typename T> struct bound_call {
    gk_gemm<T> kg; /* also says which passes are left out: rows_on_demand, a_lists_on_demand */
    double *envA;  /* op(B)'s envelope is kg.envB */
    gk_topp scratch;
    bool prep_a, prep_b; /* prepared operands stand in for this call's passes over them */
};

template <typename T>
bound_call<T> bind_call(blasft_gpu_ctx *ctx, const blasft_gpu_gemm *g, const blasft_gpu_params *p,
                        char ta, char tb, T beta_h, bool need_cold, bool keep_old, bool proj)
{
    const int64_t m = g->m, n = g->n, k = g->k;
    const int bs = p->block_size, r = p->checksums;
    const int pp = p->pea_p < GK_PMAX ? p->pea_p : GK_PMAX;
    const bool on_dev = g->scalars_on_device != 0;
    constexpr int P = gk_el<T>::P;
    const T *cvec = (const T *)g->c_vector;
    bound_call<T> b;
    const int64_t mb = (m + bs - 1) / bs, nb = (n + bs - 1) / bs;
    const layout L = plan(sizeof(T), P, m, n, k, bs, r, ctx->flag_cap, proj);
    char *w = ctx->ws;
    gk_gemm<T> &kg = b.kg;
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
        kg.alpha_v = host_scalar<T>(g->alpha);
        kg.beta_v = beta_h;
    }
    kg.Cold = keep_old ? (const T *)ctx->old_c : need_cold ? cvec : nullptr;
    kg.ldcold = cvec ? 0 : m; /* a vector repeated: leading dimension 0 */
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
    b.scratch = {(double *)(w + L.sc_v), (int *)(w + L.sc_p)};
    kg.tEa = {(double *)(w + L.tEa_v), (int *)(w + L.tEa_p)};
    kg.tEb = {(double *)(w + L.tEb_v), (int *)(w + L.tEb_p)};
    b.envA = (double *)(w + L.EnvA);
    kg.envB = (double *)(w + L.EnvB);
    /* the row side only for blocks whose column checksums flagged (see blasft_gpu.h) */
    const bool lazy = p->rows_on_demand && !kg.block_lists;
    kg.rows_on_demand = lazy;
    kg.cold_rows = lazy && kg.Cold;
    /* prepared operands (blasft_gpu_prepare): their buffers stand in for this call's passes */
    const bool prep_a = b.prep_a = g->prep_a && ta == 'N';
    b.prep_b = g->prep_b && tb == 'N' && lazy;
    if (prep_a) {
        char *q = (char *)g->prep_a;
        const gk_prep_layout Q = gk_prep_plan(0, sizeof(T), m, k, bs, r);
        kg.AcsT = (T *)(q + Q.acs);
        b.envA = (double *)(q + Q.env);
        kg.tA = {(double *)(q + Q.ta_v), (int *)(q + Q.ta_p)};
        kg.tEa = {(double *)(q + Q.tea_v), (int *)(q + Q.tea_p)};
        kg.tAc = {(double *)(q + Q.tac_v), (int *)(q + Q.tac_p)};
        kg.prep_cnt[0] = (gk_counters *)(q + Q.cnt);
    }
    if (b.prep_b) {
        char *q = (char *)g->prep_b;
        const gk_prep_layout Q = gk_prep_plan(1, sizeof(T), k, n, bs, r);
        kg.tB = {(double *)(q + Q.tb_v), (int *)(q + Q.tb_p)};
        kg.prep_cnt[1] = (gk_counters *)(q + Q.cnt);
    }
    /* PROJ's column thresholds use nothing of PEA's pass over op(A), and with rows on demand its
     * row lists can be made where a block flags. For FP64 that pass is left out (H100, BS 256:
     * D 4096 1.13 and D 8192 1.055-1.060 of plain cuBLAS, against 1.15-1.16 and 1.061-1.064 with
     * it); native FP32 keeps it, as without it in front PROJ's kernels start together with
     * cuBLAS's SGEMM and slow it down (S 8192 1.030 against 1.006; docs/thresholds.md) */
    kg.a_lists_on_demand = proj && lazy && !prep_a && sizeof(T) == 8;
    kg.Ccs_sq = need_cold ? (double *)(w + L.Ccs_sq) : nullptr;
    if (proj) {
        kg.Pvec = (double *)(w + L.Pvec);
        kg.Pref = (double *)(w + L.Pref);
        kg.Pold = need_cold ? (double *)(w + L.Pold) : nullptr;
        kg.pseed = blasft_proj_next_seed();
        kg.Pexp = (int *)(w + L.Pexp);
        kg.Ppack = w + L.Ppack;
    }
    kg.Crs_sq = need_cold ? (double *)(w + L.Crs_sq) : nullptr;
    weight_sums(kg, p->weights);
    kg.cnt = (gk_counters *)w;
    kg.tile_flag = (int *)(w + flags_offset());
    kg.tile_list = (int *)(w + L.list);
    kg.rlist = (gk_recompute *)(w + L.rlist);
    return b;
}

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
        beta_h = host_scalar<T>(g->beta);
    const bool need_cold = on_dev || !is_zero_h(beta_h);
    /* the old C as a vector (g->c_vector): read from there, nothing to copy */
    const T *cvec = (const T *)g->c_vector;
    const bool keep_old = need_cold && !cvec && p->mode == BLASFT_MODE_CORRECT &&
                          p->on_error == BLASFT_ON_ERROR_RECOMPUTE;
    /* 'N', 'T', and for complex data 'C' (for real data 'C' is 'T') */
    auto norm = [](char t) {
        cublasOperation_t o = op_of(t);
        return o == CUBLAS_OP_N ? 'N' : o == CUBLAS_OP_C && P == 2 ? 'C' : 'T';
    };
    const char ta = norm(g->transa), tb = norm(g->transb);
    const bool proj = proj_used(p, P, m, k);
    int rc = ensure_ws(ctx, sizeof(T), P, m, n, k, bs, r, proj);
    if (rc)
        return rc;
    ctx->last_run = {true, proj, g->type, m, n, k, bs, r};
    if (keep_old && (rc = ensure_old(ctx, sizeof(T) * m * n)))
        return rc;
    if (set_mode(ctx, on_dev))
        return -2;

    /* a report slot (none while a graph is captured: its launches take one each) */
    report_slot *slot = nullptr;
    if (!ctx->deferring && !(slot = take_slot(ctx)))
        return -2;

    const int64_t mb = (m + bs - 1) / bs, nb = (n + bs - 1) / bs;
    char *w = ctx->ws;
    bound_call<T> bc = bind_call<T>(ctx, g, p, ta, tb, beta_h, need_cold, keep_old, proj);
    gk_gemm<T> &kg = bc.kg;
    double *const envA = bc.envA, *const envB = kg.envB;
    const gk_topp scratch = bc.scratch;
    const bool lazy = kg.rows_on_demand, prep_a = bc.prep_a, prep_b = bc.prep_b,
               a_on_demand = kg.a_lists_on_demand;

    cudaStream_t s0 = ctx->s0, s1 = ctx->s1;
    const int ws = p->weights;
    const int skip = ctx->skip;
    const int sched = ctx->sched >= 0 ? ctx->sched : auto_schedule(sizeof(T), P, m, n, k);
    /* pre: encoding and top-p lists; ref: the reference GEMMs. On the helper stream they overlap
     * the main GEMM (and are time-sliced into it); on the caller's stream they run before it,
     * alone on the GPU at full bandwidth. */
    const bool pre_serial = (sched & BLASFT_GPU_SCHED_PRE_SERIAL) != 0;
    const bool ref_serial = (sched & BLASFT_GPU_SCHED_REF_SERIAL) != 0;
    /* not with PROJ, whose walk on s2 reads op(B)'s lists */
    const bool lists_after =
        (sched & BLASFT_GPU_SCHED_LISTS_AFTER) && !pre_serial && !ref_serial && !proj;
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
                      gk_topp lists, gk_own_lists *own) {
        const gk_aux aux{GK_AUX_MAX, env, 1, k};
        /* op(A)'s blocks run down A's columns, op(B)'s across B's */
        const int contiguous = is_b ? t != 'N' : t == 'N';
        const bool fused = fuse && t == 'N' &&
                           gk_encode_topp<T>(X, ld, contiguous, S, k, bs, r, ws, out, 1, k, aux, pp,
                                             lists, scratch, kg.cnt, sp, own);
        if (!(skip & BLASFT_GPU_SKIP_ENCODE) && !fused)
            gk_encode<T, T>(X, ld, contiguous, S, k, bs, r, ws, out, 1, k, aux, kg.cnt, sp, t == 'C');
        return fused;
    };
    /* small calls: op(A)'s envelope and checksum lists from its encoding's last launch, so that
     * the helper stream's path to the reference GEMMs is no longer */
    gk_own_lists own_a{kg.tEa, kg.tAc, false};
    const bool own_wanted = lists_after && !(skip & BLASFT_GPU_SKIP_TOPP);
    const bool fused_a = prep_a || a_on_demand ||
                         encode(0, kg.A, g->lda, ta, m, kg.AcsT, envA, kg.tA,
                                own_wanted ? &own_a : nullptr);
    mark(1, sp);
    /* rows on demand: op(B) is encoded where a block flags (gk_correct); its top-p lists, which
     * the column checksums' thresholds use, are made here */
    const bool fused_b = !lazy && encode(1, kg.B, g->ldb, tb, n, kg.Bcs, envB, kg.tB, nullptr);
    mark(2, sp);
    /* the top-p lists, which only the comparison and the correction read: those of the operands
     * themselves (kListsData) and those of the encodings' results (kListsEnc) */
    enum { kListsData = 1, kListsEnc = 2 };
    const bool topp = !(skip & BLASFT_GPU_SKIP_TOPP);
    const bool a_enc_lists = topp && !prep_a && !a_on_demand && !own_a.made,
               b_enc_lists = topp && !lazy;
    auto lists = [&](cudaStream_t st, int parts) {
        if (!topp)
            return;
        const bool a_lists = (parts & kListsEnc) && a_enc_lists,
                   b_lists = (parts & kListsEnc) && b_enc_lists;
        /* small calls: op(A)'s envelopes and checksums in one launch where both sets are few
         * vectors (larger calls keep the launches they were measured with) */
        const bool paired = a_lists && lists_after &&
                            gk_topp_pair<T>(envA, kg.AcsT, k, mb, r * mb, pp, kg.tEa, kg.tAc, st);
        if (a_lists && !paired)
            gk_topp_run<double>(envA, k, 1, k, mb, pp, kg.tEa, scratch, st);
        if (b_lists)
            gk_topp_run<double>(envB, k, 1, k, nb, pp, kg.tEb, scratch, st);
        if ((parts & kListsData) && !kg.block_lists) {
            if (!fused_a)
                gk_topp_run<T>(kg.A, g->lda, ta != 'N', k, m, pp, kg.tA, scratch, st);
            if (!fused_b && !prep_b)
                gk_topp_run<T>(kg.B, g->ldb, tb == 'N', k, n, pp, kg.tB, scratch, st);
        }
        if (a_lists && !paired)
            gk_topp_run<T>(kg.AcsT, k, 1, k, r * mb, pp, kg.tAc, scratch, st);
        if (b_lists)
            gk_topp_run<T>(kg.Bcs, k, 1, k, r * nb, pp, kg.tBc, scratch, st);
        mark(3, st);
    };
    if (!lists_after)
        lists(sp, kListsData | kListsEnc);
    else if (a_enc_lists || b_enc_lists)
        cudaEventRecord(ctx->ev_enc, s1);

    /* the old C's checksums (and copy) must be taken before the GEMM overwrites C. Its row
     * checksums wait for a flag where the old C stays at hand (cold_rows). A vector repeated
     * over the columns has the same column checksums in every column: those of column 0,
     * repeated. */
    if (need_cold) {
        const T *oc = cvec ? cvec : kg.C;
        const int64_t ocl = cvec ? 0 : g->ldc, ocn = cvec ? 1 : n;
        const gk_aux sq{GK_AUX_SQ, kg.Ccs_sq, mb, 1};
        /* the copy from the column checksums' read where their kernel allows */
        const bool copied = keep_old && gk_encode_copy<T>(oc, ocl, m, ocn, bs, r, ws, kg.Ccs_ref,
                                                          r * mb, 1, sq, kg.cnt,
                                                          (T *)ctx->old_c, m, s0);
        if (!copied)
            gk_encode<T, T>(oc, ocl, 1, m, ocn, bs, r, ws, kg.Ccs_ref, r * mb, 1, sq, kg.cnt, s0);
        if (!kg.cold_rows)
            gk_encode<T, T>(oc, ocl, 0, n, m, bs, r, ws, kg.Crs_ref, 1, m,
                            gk_aux{GK_AUX_SQ, kg.Crs_sq, 1, m}, kg.cnt, s0);
        /* PROJ's reference is double: the old C's column checksums once more, unrounded */
        if constexpr (P == 1)
            if (kg.Pold)
                gk_encode<T, double>(oc, ocl, 1, m, ocn, bs, r, ws, kg.Pold, r * mb, 1,
                                     gk_aux{GK_AUX_NONE, nullptr, 0, 0}, kg.cnt, s0);
        if (cvec) {
            gk_repeat<T>(kg.Ccs_ref, r * mb, n, s0);
            gk_repeat<double>(kg.Ccs_sq, mb, n, s0);
            if constexpr (P == 1)
                if (kg.Pold)
                    gk_repeat<double>(kg.Pold, r * mb, n, s0);
        }
        if (keep_old && !copied)
            cudaMemcpy2DAsync(ctx->old_c, sizeof(T) * m, g->c, sizeof(T) * g->ldc, sizeof(T) * m, n,
                              cudaMemcpyDeviceToDevice, s0);
    }
    /* the GEMM adds to the repeated vector */
    const blasft_type real_t = sizeof(T) == 4 ? BLASFT_TYPE_S : BLASFT_TYPE_D;
    if (cvec && need_cold &&
        blasft_gpu_bias_into(real_t, m, n, cvec, nullptr, nullptr, 0, kg.C, g->ldc, s0))
        return -2;
    /* the reference GEMMs need the encodings and the old C's checksums on their stream */
    if (!ref_serial && (need_cold || pre_serial)) {
        cudaEventRecord(ctx->ev_cold, s0);
        cudaStreamWaitEvent(s1, ctx->ev_cold, 0);
    } else if (ref_serial && !pre_serial) {
        cudaEventRecord(ctx->ev_cold, s1);
        cudaStreamWaitEvent(s0, ctx->ev_cold, 0);
    }

    /* reference checksums: alpha * (encoded product) + beta * (checksums of the old C); for a
     * short k and a wide C in kRefParts calls along k (beta 1 after the first). Each call's
     * partial sums restart, so on coherent data (products of one sign) the reference's own
     * rounding is about half of one chain's, which for m n >= 2^20 and k = 32-512 (T_pos)
     * reached PEA's allowance for it about once in 1e9 checks (docs/thresholds.md, "The
     * reference in parts along k"). Over a longer k cuBLAS's split-K kernels restart the walks
     * themselves (no flag seen); for a narrow C none flagged either, and there the extra call is
     * host time that the GEMM does not hide (511^3: 5-22 % longer). The thresholds are unchanged.
     * With scalars in device memory the later parts' beta = 1 is the workspace's constant. */
    static const T zero = T{}, one_h = one_of<T>();
    const T *beta_ref = need_cold ? (const T *)g->beta : &zero;
    const T *one = on_dev ? device_one<T>(w) : &one_h;
    const int64_t parts = k >= kRefPartMin && k <= kRefPartMax &&
                                  m * n >= (ctx->ref_parts_mn > 0 ? ctx->ref_parts_mn : kRefPartMn)
                              ? kRefParts
                              : 1;
    /* one reference GEMM in those parts: the column checksums AcsT (k x R mb) by op(B), or the
     * row checksums op(A) by Bcs (k x R nb) */
    auto ref_in_parts = [&](bool col) {
        const int64_t kp = (k + parts - 1) / parts;
        const T *alpha = (const T *)g->alpha;
        for (int64_t k0 = 0; k0 < k; k0 += kp) {
            const int64_t kl = k - k0 < kp ? k - k0 : kp;
            const T *beta_q = k0 ? one : beta_ref;
            const bool ok =
                col ? blas_ok(xgemm<T>(hr, CUBLAS_OP_T, op_of(tb), r * mb, n, kl, alpha,
                                       kg.AcsT + k0, k, kg.B + (tb == 'N' ? k0 : k0 * g->ldb),
                                       g->ldb, beta_q, kg.Ccs_ref, r * mb),
                              "cublas gemm (column checksums)")
                    : blas_ok(xgemm<T>(hr, op_of(ta), CUBLAS_OP_N, m, r * nb, kl, alpha,
                                       kg.A + (ta == 'N' ? k0 * g->lda : k0), g->lda, kg.Bcs + k0,
                                       k, beta_q, kg.Crs_ref, m),
                              "cublas gemm (row checksums)");
            if (!ok)
                return false;
        }
        return true;
    };
    auto ref_gemms = [&]() {
        /* PROJ's thresholds and double references of the column checksums, on s2 after this
         * stream's passes (or serial on the caller's) */
        if constexpr (P == 1)
            if (proj && !(skip & BLASFT_GPU_SKIP_REFGEMM)) {
                if (ref_serial) {
                    gk_proj<T>(kg, s0);
                } else {
                    cudaEventRecord(ctx->ev_pre, s1);
                    cudaStreamWaitEvent(ctx->s2, ctx->ev_pre, 0);
                    gk_proj<T>(kg, ctx->s2);
                    cudaEventRecord(ctx->ev_proj, ctx->s2);
                    cudaStreamWaitEvent(s1, ctx->ev_proj, 0);
                }
            }
        /* with PROJ the column checksums' reference is gk_proj's */
        return (skip & BLASFT_GPU_SKIP_REFGEMM) ||
               ((proj || ref_in_parts(true)) && (lazy || ref_in_parts(false)));
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
        ctx->checked_rows = m;
        ctx->checked_cols = n;
        ctx->hook((void *)s0, ctx->hook_user);
    }
    /* small calls: the operands' lists first, then the encodings' (if any are left) once the
     * helper stream has made those */
    if (lists_after) {
        lists(s0, kListsData);
        if (a_enc_lists || b_enc_lists) {
            cudaStreamWaitEvent(s0, ctx->ev_enc, 0);
            lists(s0, kListsEnc);
        }
    }

    /* the check: checksums of the new C compared with the references, then locate / correct.
     * PROJ's references come late (its walk runs after the GEMM's last wave), so there C's
     * checksums are taken first, filling the SMs the GEMM's tail leaves idle, and compared once
     * the references are ready. */
    const bool sums_c = !(skip & BLASFT_GPU_SKIP_CHECKSUM_C),
               compare = !(skip & BLASFT_GPU_SKIP_COMPARE),
               sums_first = proj && !ref_serial && sums_c;
    if (sums_first)
        gk_check_sums<T>(kg, 0, s0);
    if (!ref_serial) {
        if (!ref_gemms())
            return -2;
        mark(5, s1);
        cudaEventRecord(ctx->ev_ref, s1);
        cudaStreamWaitEvent(s0, ctx->ev_ref, 0);
    }
    if (sums_first && compare)
        gk_compare_sums<T>(kg, s0);
    else if (sums_c && !sums_first)
        gk_check_sums<T>(kg, compare, s0);
    mark(6, s0);
    if (compare)
        gk_correct<T>(kg, s0);
    mark(7, s0);

    /* every part, as the host counts; on demand, the row checks are added as they are made */
    report_meta rm;
    rm.checks = (uint64_t)(r * mb * n + (lazy ? 0 : m * r * nb)) * P;
    rm.type = "SDCZ"[caller == BLASFT_TYPE_S ? 0 : caller == BLASFT_TYPE_D ? 1
                     : caller == BLASFT_TYPE_C ? 2 : 3];
    rm.routine = g->routine ? g->routine : "gpu_gemm";
    rm.on_error = p->on_error;
    rm.row0 = ctx->part.row0;
    rm.col0 = ctx->part.col0;
    rm.bs = bs;
    rm.gemms = ctx->part.gemms;
    rm.matrix = ctx->matrix;
    if (!ctx->deferring)
        return enqueue_report(ctx, slot, rm);
    ctx->deferred = rm;
    ctx->deferred_n++;
    return launches_ok() ? 0 : -2;
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
    /* cuBLAS's legacy calls take int leading dimensions */
    if (g->lda > INT_MAX || g->ldb > INT_MAX || g->ldc > INT_MAX)
        return -1;
    if (p && (p->block_size < 2 || p->block_size > 1024 || p->checksums < 1 || p->checksums > 2))
        return -1;
    if (g->c_vector && g->type != BLASFT_TYPE_S && g->type != BLASFT_TYPE_D)
        return -1;
    return 0;
}

int run_engine(blasft_gpu_ctx *ctx, const blasft_gpu_gemm *g, const blasft_gpu_params *p)
{
    const promo_plan L = plan_for(ctx, g, p);
    const int have = L.on ? ensure_promo(ctx, L.end) : 1;
    if (have < 0)
        return have;
    if (have == 0)
        return promoted_gemm_run(ctx, g, p, L);
    switch (g->type) {
    case BLASFT_TYPE_S: return protected_gemm<float>(ctx, g, p, g->type);
    case BLASFT_TYPE_D: return protected_gemm<double>(ctx, g, p, g->type);
    case BLASFT_TYPE_C: return protected_gemm<float2>(ctx, g, p, g->type);
    default: return protected_gemm<double2>(ctx, g, p, g->type);
    }
}
/* the promoted GEMM's tiles (gpu_promoted_gemm.cu) */
template int protected_gemm<double>(blasft_gpu_ctx *, const blasft_gpu_gemm *,
                                    const blasft_gpu_params *, blasft_type);
template int protected_gemm<double2>(blasft_gpu_ctx *, const blasft_gpu_gemm *,
                                     const blasft_gpu_params *, blasft_type);

std::once_flag avail_once;
int avail;

/* CUDA does not carry over a fork: in the child of a process that started it every call fails
 * (initialization error), and the parent's streams, buffers and locks are not the child's. Set in
 * such a child (by the handler registered when this library starts CUDA), so that its GEMMs go
 * to the host without touching any of that. */
std::atomic<bool> forked_from_cuda{false};
/* set while CUDA may be starting and once it has: a process whose CUDA found no driver or device
 * has nothing a child could inherit, so its children use the host without a warning */
std::atomic<bool> cuda_started{false};
void note_fork_child()
{
    if (cuda_started.load(std::memory_order_relaxed))
        forked_from_cuda.store(true, std::memory_order_relaxed);
}

} // namespace

using namespace gpu_engine;

extern "C" {

int blasft_gpu_forked_child(void)
{
    if (!forked_from_cuda.load(std::memory_order_relaxed))
        return 0;
    static int warned;
    blasft_log_once(&warned, BLASFT_LOG_WARN, "this process was forked from one in which CUDA had "
                                              "started, and CUDA cannot be used in such a child: "
                                              "its GEMMs run on the host");
    return 1;
}

int blasft_gpu_available(void)
{
    if (forked_from_cuda.load(std::memory_order_relaxed))
        return 0;
    std::call_once(avail_once, [] {
        pthread_atfork(nullptr, nullptr, note_fork_child);
        cuda_started.store(true, std::memory_order_relaxed);
        int count = 0;
        if (cudaGetDeviceCount(&count) != cudaSuccess || count < 1) {
            cuda_started.store(false, std::memory_order_relaxed);
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
    p->promote = cfg->promote == BLASFT_PROMOTE_ON ? 1 : cfg->promote == BLASFT_PROMOTE_AUTO ? 2 : 0;
    p->promote_mem = cfg->gpu_promote_mem;
    p->mode = cfg->mode;
    p->on_error = cfg->on_error;
    p->graphs = cfg->gpu_graphs;
    p->batched = cfg->gpu_batched;
}

int blasft_gpu_promotes(blasft_type t, int64_t m, int64_t n, int64_t k, const blasft_gpu_params *p)
{
    return plan_promotion(t, 'N', 'N', m, n, k, false, p).on;
}

blasft_gpu_ctx *blasft_gpu_ctx_create(void *stream)
{
    if (!blasft_gpu_available())
        return nullptr;
    blasft_gpu_ctx *ctx = (blasft_gpu_ctx *)calloc(1, sizeof *ctx);
    if (!ctx)
        return nullptr;
    ctx->s0 = (cudaStream_t)stream;
    ctx->sched = -1;
    ctx->part = kWholeCall;
    ctx->pmode[0] = ctx->pmode[1] = -1;
    ctx->matrix = -1;
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
              cuda_ok(cudaStreamCreateWithPriority(&ctx->s2, cudaStreamNonBlocking, lo), "stream") &&
              cuda_ok(cudaStreamCreateWithFlags(&ctx->sr, cudaStreamNonBlocking), "stream") &&
              cuda_ok(cudaEventCreateWithFlags(&ctx->ev_fork, cudaEventDisableTiming), "event") &&
              cuda_ok(cudaEventCreateWithFlags(&ctx->ev_cold, cudaEventDisableTiming), "event") &&
              cuda_ok(cudaEventCreateWithFlags(&ctx->ev_ref, cudaEventDisableTiming), "event") &&
              cuda_ok(cudaEventCreateWithFlags(&ctx->ev_done, cudaEventDisableTiming), "event") &&
              cuda_ok(cudaEventCreateWithFlags(&ctx->ev_pre, cudaEventDisableTiming), "event") &&
              cuda_ok(cudaEventCreateWithFlags(&ctx->ev_proj, cudaEventDisableTiming), "event") &&
              cuda_ok(cudaEventCreateWithFlags(&ctx->ev_enc, cudaEventDisableTiming), "event") &&
              cuda_ok(cudaHostAlloc((void **)&ctx->slots, sizeof(report_slot) * kSlots,
                                    cudaHostAllocDefault),
                      "cudaHostAlloc") &&
              blas_ok(cb->create(&ctx->h0), "cublasCreate") &&
              blas_ok(cb->create(&ctx->h1), "cublasCreate") &&
              blas_ok(cb->set_stream(ctx->h0, ctx->s0), "cublasSetStream") &&
              blas_ok(cb->set_stream(ctx->h1, ctx->s1), "cublasSetStream");
    if (ctx->slots)
        for (int i = 0; i < kSlots; i++) {
            new (&ctx->slots[i].busy) std::atomic<int>(0);
            ctx->slots[i].graph = false;
        }
    if (!ok) {
        blasft_gpu_ctx_destroy(ctx);
        return nullptr;
    }
    ctx->ctx_id = blasft_gpu_context_id();
    return ctx;
}

int blasft_gpu_ctx_stale(const blasft_gpu_ctx *ctx)
{
    return ctx->ctx_id != blasft_gpu_context_id();
}

void blasft_gpu_ctx_forget(blasft_gpu_ctx *ctx)
{
    free(ctx->graphs); /* their graphs went with the device's reset */
    free(ctx);
}

int blasft_gpu_forked(void) { return forked_from_cuda.load(std::memory_order_relaxed) ? 1 : 0; }

void blasft_gpu_ctx_release(blasft_gpu_ctx *ctx, int device, int own_stream)
{
    if (!ctx)
        return;
    int current = -1;
    if (blasft_gpu_forked() || cudaGetDevice(&current) != cudaSuccess ||
        (current != device && cudaSetDevice(device) != cudaSuccess)) {
        cudaGetLastError();
        blasft_gpu_ctx_forget(ctx);
        return;
    }
    if (blasft_gpu_ctx_stale(ctx)) {
        blasft_gpu_ctx_forget(ctx);
    } else {
        const cudaStream_t own = own_stream ? ctx->s0 : nullptr;
        blasft_gpu_ctx_destroy(ctx);
        if (own)
            cudaStreamDestroy(own);
    }
    if (current != device)
        cudaSetDevice(current);
}

namespace {
/* The engine's entry points refuse a context whose device was reset since it was made: its
 * streams and handles are gone, and its old addresses may be the application's memory now. */
bool refuse_stale(const blasft_gpu_ctx *ctx)
{
    if (!blasft_gpu_ctx_stale(ctx))
        return false;
    static int warned;
    blasft_log_once(&warned, BLASFT_LOG_ERROR, "GPU: a context made before the device was reset "
                                               "(cudaDeviceReset) was used: make a new one");
    return true;
}
} // namespace

void blasft_gpu_ctx_destroy(blasft_gpu_ctx *ctx)
{
    if (!ctx)
        return;
    /* The caller's stream may be gone by now: the cuBLAS interposer evicts the contexts of
     * streams the application has destroyed in the meantime, and a stream handle cannot be
     * checked. So the device is waited for instead of that stream (cublasDestroy synchronises the
     * device anyway), and the handle bound to it is moved to our own stream first. */
    cudaDeviceSynchronize();
    if (ctx->h0 && ctx->s1)
        cb->set_stream(ctx->h0, ctx->s1);
    if (ctx->h0)
        cb->destroy(ctx->h0);
    if (ctx->h1)
        cb->destroy(ctx->h1);
    if (ctx->s1)
        cudaStreamDestroy(ctx->s1);
    if (ctx->s2)
        cudaStreamDestroy(ctx->s2);
    if (ctx->sr)
        cudaStreamDestroy(ctx->sr);
    if (ctx->graphs) {
        blasft_graph_clear(ctx->graphs);
        free(ctx->graphs);
    }
    if (ctx->sc)
        cudaStreamDestroy(ctx->sc);
    if (ctx->ev_fork)
        cudaEventDestroy(ctx->ev_fork);
    if (ctx->ev_cold)
        cudaEventDestroy(ctx->ev_cold);
    if (ctx->ev_ref)
        cudaEventDestroy(ctx->ev_ref);
    if (ctx->ev_done)
        cudaEventDestroy(ctx->ev_done);
    if (ctx->ev_pre)
        cudaEventDestroy(ctx->ev_pre);
    if (ctx->ev_proj)
        cudaEventDestroy(ctx->ev_proj);
    if (ctx->ev_enc)
        cudaEventDestroy(ctx->ev_enc);
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
    if (ctx->reloc)
        cudaFree(ctx->reloc);
    if (ctx->batch_ws)
        cudaFree(ctx->batch_ws);
    if (ctx->batch_promo)
        cudaFree(ctx->batch_promo);
    if (ctx->lowp_ws)
        cudaFree(ctx->lowp_ws);
    free(ctx);
}

void blasft_gpu_ctx_set_stream(blasft_gpu_ctx *ctx, void *stream)
{
    ctx->s0 = (cudaStream_t)stream;
    cb->set_stream(ctx->h0, ctx->s0);
}

size_t blasft_gpu_workspace_bytes(const blasft_gpu_ctx *ctx)
{
    return ctx->ws_bytes + ctx->old_bytes + ctx->promo_bytes + ctx->reloc_bytes;
}

size_t blasft_gpu_workspace_need(blasft_type t, int64_t m, int64_t n, int64_t k,
                                 const blasft_gpu_params *p)
{
    const promo_plan L = plan_promotion(t, 'N', 'N', m, n, k, false, p);
    const blasft_type e = L.on ? promoted_type(t) : t;
    if (L.on) { /* the engine's workspace for one tile */
        m = L.tm;
        n = L.tn;
        k = L.kc;
    }
    int64_t mb = (m + p->block_size - 1) / p->block_size, nb = (n + p->block_size - 1) / p->block_size;
    return plan(type_size(e), type_parts(e), m, n, k, p->block_size, p->checksums, mb * nb,
                proj_used(p, type_parts(e), m, k))
               .end +
           (L.on ? L.end : 0);
}

int blasft_gpu_reserve(blasft_gpu_ctx *ctx, blasft_type t, int64_t m, int64_t n, int64_t k,
                       const blasft_gpu_params *p, int keep_old_c)
{
    if (refuse_stale(ctx))
        return -2;
    /* op N for both: the plan with the most prepared panels */
    promo_plan L = ctx->no_promo ? promo_plan{}
                                 : plan_promotion(t, 'N', 'N', m, n, k, keep_old_c != 0, p);
    if (L.on) {
        const int have = ensure_promo(ctx, L.end);
        if (have < 0)
            return have;
        if (have > 0)
            L = promo_plan{}; /* native from now on */
    }
    /* the engine's workspace (and old C) for one protected GEMM of type e */
    auto engine = [&](blasft_type e, int64_t mm, int64_t nn, int64_t kk, bool keep) {
        const size_t ts = type_size(e);
        const int rc = ensure_ws(ctx, ts, type_parts(e), mm, nn, kk, p->block_size, p->checksums,
                                 proj_used(p, type_parts(e), mm, kk));
        return !rc && keep ? ensure_old(ctx, ts * mm * nn) : rc;
    };
    if (!L.on)
        return engine(t, m, n, k, keep_old_c != 0);
    /* a GEMM of more parts than report slots runs natively under graph capture (plan_for): its
     * native workspace too */
    if (L.parts(m, n, k) > kSlots) {
        const int rc = engine(t, m, n, k, keep_old_c != 0);
        if (rc)
            return rc;
    }
    return engine(promoted_type(t), L.tm, L.tn, L.kc, L.keep_old);
}

/* Host scalars go on as copies aligned for every type (hs: two elements' room): a caller's
 * complex scalar may have 8 bytes of alignment (C's double complex, a double[2]), and a double2
 * is loaded whole by an instruction that faults on less than 16, here and in cuBLAS
 * (test_gpu_complex, misaligned_scalars). One equal to 0 goes on as +0: a complex (0, -0) is 0
 * to BLAS and to the checks, but cuBLAS read C for such a beta (promoted C GEMMs: the
 * uninitialised copy of C entered and the blocks flagged). Returns g or *gz. */
static const blasft_gpu_gemm *aligned_scalars(const blasft_gpu_gemm *g, blasft_gpu_gemm *gz,
                                              double2 *hs)
{
    if (g->scalars_on_device)
        return g;
    memset(hs, 0, 2 * sizeof *hs);
    if (scalar_nonzero(g->type, g->alpha))
        memcpy(&hs[0], g->alpha, type_size(g->type));
    if (scalar_nonzero(g->type, g->beta))
        memcpy(&hs[1], g->beta, type_size(g->type));
    *gz = *g;
    gz->alpha = &hs[0];
    gz->beta = &hs[1];
    return gz;
}

int blasft_gpu_gemm_plain(blasft_gpu_ctx *ctx, const blasft_gpu_gemm *g)
{
    if (check_args(g, nullptr))
        return -1;
    if (refuse_stale(ctx))
        return -2;
    if (g->m == 0 || g->n == 0)
        return 0;
    double2 hs[2];
    blasft_gpu_gemm gz;
    g = aligned_scalars(g, &gz, hs);
    switch (g->type) {
    case BLASFT_TYPE_S: return plain<float>(ctx, g);
    case BLASFT_TYPE_D: return plain<double>(ctx, g);
    case BLASFT_TYPE_C: return plain<float2>(ctx, g);
    default: return plain<double2>(ctx, g);
    }
}

/* k = 0, or alpha 0 in host memory: C = beta C, and BLAS does not read A and B, which may hold
 * NaN (a program scaling C by a GEMM with alpha 0). cuBLAS computes exactly that with a host
 * alpha of 0; the checks would multiply 0 by the operands' encodings. A device alpha of 0 is not
 * known here: the recomputation leaves the product out there (scaled_element). */
static bool no_product(const blasft_gpu_gemm *g)
{
    return g->k == 0 || (!g->scalars_on_device && !scalar_nonzero(g->type, g->alpha));
}


int blasft_gpu_gemm_run(blasft_gpu_ctx *ctx, const blasft_gpu_gemm *g, const blasft_gpu_params *p)
{
    if (check_args(g, p))
        return -1;
    engine_entered();
    if (refuse_stale(ctx))
        return -2;
    double2 hs[2];
    blasft_gpu_gemm gz;
    g = aligned_scalars(g, &gz, hs);
    if (g->m == 0 || g->n == 0)
        return 0;
    if (no_product(g) || p->mode == BLASFT_MODE_OFF) {
        /* nothing to protect (C = beta C) or protection off */
        blasft_stat_add(BLASFT_STAT_UNPROTECTED_GEMMS, 1);
        return blasft_gpu_gemm_plain(ctx, g);
    }
    if (graph_eligible(ctx, g, p)) {
        const int rc = run_by_graph(ctx, g, p);
        if (rc != kNoGraph)
            return rc;
    }
    return run_engine(ctx, g, p);
}

static int run_host_gemm_in(blasft_gpu_ctx *ctx, const blasft_gemm *g, const blasft_config *cfg)
{
    const cudaStream_t st = ctx->s0; /* the thread's own non-blocking stream */
    size_t ts = type_size(g->type);
    int64_t ar = blasft_gemm_a_rows(g), ac = blasft_gemm_a_cols(g);
    int64_t br = blasft_gemm_b_rows(g), bc = blasft_gemm_b_cols(g);
    void *dA = nullptr, *dB = nullptr, *dC = nullptr;
    int rc = -1;
    if (cudaMalloc(&dA, ts * (ar > 0 ? ar : 1) * (ac > 0 ? ac : 1)) != cudaSuccess ||
        cudaMalloc(&dB, ts * (br > 0 ? br : 1) * (bc > 0 ? bc : 1)) != cudaSuccess ||
        cudaMalloc(&dC, ts * (g->m > 0 ? g->m : 1) * (g->n > 0 ? g->n : 1)) != cudaSuccess)
        goto out;
    if (cudaMemcpy2DAsync(dA, ts * ar, g->a, ts * g->lda, ts * ar, ac, cudaMemcpyHostToDevice, st) ||
        cudaMemcpy2DAsync(dB, ts * br, g->b, ts * g->ldb, ts * br, bc, cudaMemcpyHostToDevice, st) ||
        cudaMemcpy2DAsync(dC, ts * g->m, g->c, ts * g->ldc, ts * g->m, g->n, cudaMemcpyHostToDevice, st))
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
        /* a failure up to here has written nothing of the host C: the caller's rerun is exact */
        if (blasft_gpu_gemm_run(ctx, &dg, &p) != 0 || cudaStreamSynchronize(st) != cudaSuccess)
            goto out;
        if (cudaMemcpy2DAsync(g->c, ts * g->ldc, dC, ts * g->m, ts * g->m, g->n,
                              cudaMemcpyDeviceToHost, st) != cudaSuccess ||
            cudaStreamSynchronize(st) != cudaSuccess) {
            /* part of C may be new already: with beta != 0 a rerun would read it as the old C */
            if (g->beta[0] != 0.0 || g->beta[1] != 0.0) {
                blasft_report_lost_result(g->routine, blasft_type_letter(g->type), cfg->on_error);
                rc = 0;
            }
            goto out;
        }
        rc = 0;
    }
out:
    cudaFree(dA);
    cudaFree(dB);
    cudaFree(dC);
    return rc;
}

/* The plain-copy path's context of a thread, given up when the thread ends (an application
 * that starts a thread per task would otherwise leave a context, its handles and workspace
 * behind for each). */
struct thread_ctx {
    blasft_gpu_ctx *ctx;
    int device;
};
static pthread_key_t thread_ctx_key;
static std::once_flag thread_ctx_once;
static bool thread_ctx_key_ok;

static void thread_ctx_end(void *p)
{
    thread_ctx *t = (thread_ctx *)p;
    blasft_gpu_ctx_release(t->ctx, t->device, 1);
    free(t);
}

/* this thread's record, NULL where it cannot be kept */
static thread_ctx *thread_ctx_of_thread()
{
    std::call_once(thread_ctx_once, [] {
        thread_ctx_key_ok = pthread_key_create(&thread_ctx_key, thread_ctx_end) == 0;
    });
    if (!thread_ctx_key_ok)
        return nullptr;
    thread_ctx *t = (thread_ctx *)pthread_getspecific(thread_ctx_key);
    if (!t && (t = (thread_ctx *)calloc(1, sizeof *t)) &&
        pthread_setspecific(thread_ctx_key, t) != 0) {
        free(t);
        t = nullptr;
    }
    return t;
}

int blasft_gpu_run_host_gemm(const blasft_gemm *g, const blasft_config *cfg)
{
    if (!blasft_gpu_available())
        return -1;
    /* this thread's context, on a non-blocking stream of its own (the legacy stream would wait
     * for the application's blocking streams), lives on the device current at its first use; a
     * caller that made another device current since finds it current again on return */
    thread_ctx *t = thread_ctx_of_thread();
    if (!t)
        return -1;
    blasft_gpu_ctx *&ctx = t->ctx;
    int &ctx_device = t->device;
    int caller_device = -1;
    if (cudaGetDevice(&caller_device) != cudaSuccess)
        return -1;
    const int device = ctx ? ctx_device : caller_device;
    if (device != caller_device && cudaSetDevice(device) != cudaSuccess)
        return -1;
    /* the library's own calls: relaxed towards a capture by another thread (offload_gemm.c),
     * and leaving the application's last error as it was (cuda_errors.h) */
    const cudaError_t pending = blasft_err_pending();
    cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
    cudaThreadExchangeStreamCaptureMode(&mode);
    if (ctx && blasft_gpu_ctx_stale(ctx)) { /* the device was reset: everything of ctx is gone */
        blasft_gpu_ctx_forget(ctx); /* and its stream with it */
        ctx = nullptr;
    }
    if (!ctx) {
        cudaStream_t st = nullptr;
        if (cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking) == cudaSuccess &&
            !(ctx = blasft_gpu_ctx_create(st)))
            cudaStreamDestroy(st);
        ctx_device = device;
    }
    const int rc = ctx ? run_host_gemm_in(ctx, g, cfg) : -1;
    cudaThreadExchangeStreamCaptureMode(&mode);
    if (device != caller_device)
        cudaSetDevice(caller_device);
    blasft_err_restore(pending);
    return rc;
}

int blasft_gpu_gemm_would_sync(const blasft_gpu_ctx *ctx, const blasft_gpu_gemm *g,
                               const blasft_gpu_params *p, int64_t count)
{
    /* mirrors protected_gemm's growth checks (for every part of a promoted GEMM; the report slots
     * of a captured call are its graph's own, take_slot) */
    if (check_args(g, p) || g->m == 0 || g->n == 0 || no_product(g) || p->mode == BLASFT_MODE_OFF ||
        count <= 0)
        return 0;
    const promo_plan L = plan_for(ctx, g, p);
    const blasft_type e = L.on ? promoted_type(g->type) : g->type;
    const int64_t m = L.on ? L.tm : g->m, n = L.on ? L.tn : g->n, k = L.on ? L.kc : g->k;
    const size_t ts = type_size(e);
    const int64_t bs = p->block_size;
    const int64_t mb = (m + bs - 1) / bs, nb = (n + bs - 1) / bs;
    if (mb * nb > ctx->flag_cap ||
        plan(ts, type_parts(e), m, n, k, (int)bs, p->checksums, ctx->flag_cap,
             proj_used(p, type_parts(e), m, k))
                .end >
            ctx->ws_bytes ||
        (L.on && L.end > ctx->promo_bytes))
        return 1;
    const bool need_cold =
        L.on ? L.keep_old
             : (g->scalars_on_device || scalar_nonzero(g->type, g->beta)) && !g->c_vector &&
                   p->mode == BLASFT_MODE_CORRECT && p->on_error == BLASFT_ON_ERROR_RECOMPUTE;
    return need_cold && ts * m * n > ctx->old_bytes ? 1 : 0;
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
    const int bits = BLASFT_GPU_SCHED_SERIAL | BLASFT_GPU_SCHED_LISTS_AFTER;
    ctx->sched = schedule >= 0 && (schedule & ~bits) == 0 ? schedule : -1;
}

void blasft_gpu_set_ref_parts_mn(blasft_gpu_ctx *ctx, int64_t mn)
{
    ctx->ref_parts_mn = mn > 0 ? mn : 0;
}

void blasft_gpu_set_fault_hook(blasft_gpu_ctx *ctx, blasft_gpu_hook fn, void *user)
{
    ctx->hook = fn;
    ctx->hook_user = user;
}

void blasft_gpu_set_graph_hook(blasft_gpu_ctx *ctx, int captured) { ctx->graph_with_hook = captured; }

void blasft_gpu_set_matrix(blasft_gpu_ctx *ctx, int64_t matrix) { ctx->matrix = matrix; }

void blasft_gpu_debug_graphs(blasft_gpu_ctx *ctx, uint64_t *captures, uint64_t *replays,
                             int *cached, int *priority)
{
    const blasft_graph_cache *c = ctx->graphs;
    *captures = c ? c->captures : 0;
    *replays = c ? c->hits : 0;
    *cached = c ? blasft_graph_count(c) : 0;
    int sp = 0;
    *priority = ctx->sc && cudaStreamGetPriority(ctx->sc, &sp) == cudaSuccess ? sp : INT_MIN;
}

void *blasft_gpu_debug_checked_c(blasft_gpu_ctx *ctx, blasft_type *type, int64_t *ldc)
{
    *type = ctx->checked_type;
    *ldc = ctx->checked_ldc;
    return ctx->checked_c;
}

void blasft_gpu_debug_checked_part(blasft_gpu_ctx *ctx, int64_t *row0, int64_t *col0,
                                   int64_t *rows, int64_t *cols, int *last_k)
{
    *row0 = ctx->part.row0;
    *col0 = ctx->part.col0;
    *rows = ctx->checked_rows;
    *cols = ctx->checked_cols;
    *last_k = ctx->part.last_k;
}

void *blasft_gpu_debug_checked_element(blasft_gpu_ctx *ctx, int64_t i, int64_t j,
                                       blasft_type *type)
{
    *type = ctx->checked_type;
    const int64_t r = i - ctx->part.row0, c = j - ctx->part.col0;
    if (!ctx->part.last_k || r < 0 || r >= ctx->checked_rows || c < 0 || c >= ctx->checked_cols)
        return nullptr;
    return (char *)ctx->checked_c +
           type_size(ctx->checked_type) * (size_t)(r + c * ctx->checked_ldc);
}

int blasft_gpu_debug_last_run(blasft_gpu_ctx *ctx, blasft_type *t, int64_t *m, int64_t *n,
                              int64_t *k)
{
    if (!ctx->last_run.valid)
        return -1;
    *t = ctx->last_run.t;
    *m = ctx->last_run.m;
    *n = ctx->last_run.n;
    *k = ctx->last_run.k;
    return 0;
}

int64_t blasft_gpu_debug_fetch(blasft_gpu_ctx *ctx, blasft_type t, int64_t m, int64_t n,
                               int64_t k, const blasft_gpu_params *p, blasft_gpu_buf which,
                               void *out)
{
    size_t ts = type_size(t);
    const int P = type_parts(t);
    const int bs = p->block_size, r = p->checksums;
    const bool proj = proj_used(p, P, m, k);
    const auto &lr = ctx->last_run;
    if (!lr.valid || lr.t != t || lr.m != m || lr.n != n || lr.k != k || lr.bs != bs || lr.r != r ||
        lr.proj != proj)
        return -1;
    int64_t mb = (m + bs - 1) / bs, nb = (n + bs - 1) / bs;
    layout L = plan(ts, P, m, n, k, bs, r, ctx->flag_cap, proj);
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
    case BLASFT_GPU_BUF_TAC_VAL: off = L.tAc_v; es = 8; cnt = r * mb * GK_PMAX; break;
    case BLASFT_GPU_BUF_TAC_POS: off = L.tAc_p; es = 4; cnt = r * mb * GK_PMAX; break;
    case BLASFT_GPU_BUF_TEA_VAL: off = L.tEa_v; es = 8; cnt = mb * GK_PMAX; break;
    case BLASFT_GPU_BUF_TEA_POS: off = L.tEa_p; es = 4; cnt = mb * GK_PMAX; break;
    default: return -1;
    }
    if (off + es * cnt > ctx->ws_bytes || cudaStreamSynchronize(ctx->s0) != cudaSuccess ||
        cudaMemcpy(out, ctx->ws + off, es * cnt, cudaMemcpyDeviceToHost) != cudaSuccess)
        return -1;
    return cnt;
}

} // extern "C"
