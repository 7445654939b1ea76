/* The GPU engine's internals shared by its host files: gpu_gemm.cu (contexts, one protected
 * GEMM), gpu_promoted_gemm.cu (BLASFT_PROMOTE's tiled run) and gpu_graphs.cu (the engine's own
 * graphs). Not an API: the library exports only blasft_gpu.h's functions (hidden visibility). */
#ifndef BLASFT_GPU_ENGINE_H
#define BLASFT_GPU_ENGINE_H

#include "blasft_gpu.h"
#include "gpu_cublas.h"
#include "gpu_debug.h"
#include "gpu_kernels.h"
#include "graph_cache.h"

#include <atomic>

namespace gpu_engine {

/* Calls that may be in flight on one context before enqueueing waits for the oldest. */
constexpr int kSlots = 64;

/* What a protected GEMM's report says besides its counters (set when it is enqueued). */
struct report_meta {
    uint64_t checks;
    const char *routine;
    blasft_on_error on_error;
    int64_t row0, col0, bs; /* the part's place in the caller's C (promoted tiles), its BS */
    int gemms;              /* protected GEMMs the part completes: 1, or 0 for all but a call's last */
    int64_t matrix;         /* the GEMM's index in the caller's batch, -1 none (records of a
                               batch checked as a whole carry their own) */
    char type;
};

struct report_slot {
    gk_counters c; /* pinned: the device counters land here */
    report_meta m;
    std::atomic<int> busy;
    bool graph; /* owned by an application's captured graph (take_slot): the call is captured */
};

/* The checked run that debug fetches may read (blasft_gpu_debug_fetch): its type, shape and
 * layout parameters. */
struct run_shape {
    bool valid, proj;
    blasft_type t;
    int64_t m, n, k;
    int bs, r;
};

/* The part of the caller's GEMM that protected_gemm runs: all of it, or one tile (and k chunk)
 * of a promoted GEMM (promoted_gemm). Events and reports are placed and counted by it. */
struct call_part {
    int64_t row0, col0;
    int last_k; /* the tile's last (or only) chunk of k */
    int gemms;  /* 1 where the part completes the caller's GEMM */
};
constexpr call_part kWholeCall = {0, 0, 1, 1};

} // namespace gpu_engine

struct blasft_gpu_ctx {
    uint64_t ctx_id; /* the CUDA context it was made in (blasft_gpu_context_id) */
    cudaStream_t s0, s1;
    /* PROJ's kernels (gk_proj), forked from and joined back to s1, at the lowest priority (that
     * of default streams): queued behind the main GEMM, they fill the SMs its last wave leaves
     * idle instead of cutting into it as the high-priority helper's short passes do (S 8192:
     * 1.006 of plain cuBLAS against 1.036, docs/thresholds.md) */
    cudaStream_t s2;
    /* the reports' host functions, after each GEMM's end on s0: on a stream of their own, since
     * on s1 the next GEMM's passes queued behind the host's round trip */
    cudaStream_t sr;
    cublasHandle_t h0, h1;
    cudaEvent_t ev_fork, ev_cold, ev_ref, ev_done, ev_pre, ev_proj, ev_enc;
    char *ws;         /* header (counters, block flags) then the per-call buffers */
    size_t ws_bytes;
    int64_t flag_cap; /* block flags in the header */
    void *old_c;
    size_t old_bytes;
    void *promo; /* BLASFT_PROMOTE: double copies of A, B, C and the scalars (promoted_gemm) */
    size_t promo_bytes;
    bool no_promo; /* the buffer of the copies could not be allocated: S and C run natively */
    /* compact copies of a small call's A, B and C, so that one graph serves a shape whatever
     * its operands' addresses (gpu_graphs.cu, relocated replays) */
    void *reloc;
    size_t reloc_bytes;
    bool no_reloc; /* the buffer could not be allocated: calls are no longer relocated */
    void *batch_ws; /* batches checked together (gpu_batched.cu): counters, flags, old C */
    size_t batch_bytes;
    void *batch_promo; /* their double copies where an S batch is promoted */
    size_t batch_promo_bytes;
    void *lowp_ws; /* half and bfloat16 GEMMs' checks (gpu_lowp.cu) */
    size_t lowp_bytes;
    void *checked_c; /* the C the running protected GEMM checks (gpu_debug.h) */
    blasft_type checked_type;
    int64_t checked_ldc, checked_rows, checked_cols;
    gpu_engine::call_part part; /* what the running protected_gemm is of the caller's GEMM */
    /* the last protected_gemm's checked type, shape and layout parameters: blasft_gpu_debug_fetch
     * reads its buffers only with these (a promoted GEMM checks a double copy, a tiled one its
     * last tile; anything else would read another layout's bytes) */
    gpu_engine::run_shape last_run;
    gpu_engine::report_slot *slots; /* pinned, kSlots */
    int next_slot;
    /* the engine's own graphs (graph_cache.h): made on demand; captured on sc, a stream of the
     * context's own, with the report left out of the graph (deferred) and enqueued after each
     * launch, so that the counters go to a free slot and the host function stays off s0 */
    blasft_graph_cache *graphs;
    cudaStream_t sc;
    int sc_priority; /* sc's: that of the caller's stream it stands for (the graphs keep it) */
    bool deferring;
    int deferred_n;       /* protected GEMMs run while deferring: a graph holds exactly one */
    gpu_engine::report_meta deferred; /* its report */
    const void *deferred_counters;    /* and its device counters (NULL: the workspace's header) */
    bool graph_with_hook; /* tests: a fault hook is captured into the graph too */
    int skip; /* benchmark breakdown only: BLASFT_GPU_SKIP_* stages left out (results invalid) */
    int sched; /* BLASFT_GPU_SCHED_*: where the context-independent work runs; -1 automatic */
    int64_t ref_parts_mn; /* the reference GEMMs in parts from m n = this on (0: kRefPartMn) */
    int pmode[2]; /* pointer mode last set on h0, h1 (-1 unknown): set only when it changes */
    blasft_gpu_hook hook; /* tests only: plants faults after the main GEMM */
    cudaEvent_t trace[BLASFT_GPU_TRACE_POINTS]; /* benchmark timeline; created by set_trace */
    int tracing;
    int64_t matrix; /* the caller's batch index of the GEMMs enqueued now (blasft_gpu_set_matrix) */
    void *hook_user;
};

namespace gpu_engine {

/* gpu_gemm.cu */
extern const blasft_cublas_api *cb; /* the real cuBLAS (gpu_cublas.h) */
/* false (logged, the thread's last error taken) where a CUDA or cuBLAS call failed */
bool cuda_ok(cudaError_t e, const char *what);
bool blas_ok(cublasStatus_t s, const char *what);
bool launches_ok(); /* the engine's launches since it was entered */
void engine_entered(); /* an entry point's first step: the error pending then is the caller's */
/* The first steps of the entries that check a whole call at once (batches, half GEMMs): the
 * caller's pending error kept; -2 where ctx's device was reset, else 0. Without `capturing`, -1
 * where its stream is being captured (a graph would keep the buffers' addresses, which may grow
 * later); with it, whether it is (the caller then must neither grow a buffer nor wait). */
int whole_call_entered(blasft_gpu_ctx *ctx, bool *capturing = nullptr);
/* Element i of a device array of pointers (a batch's matrices), read back on s (waits for it);
 * NULL on failure. For planted faults (tests). */
void *device_ptr_at(const void *const *arr, int64_t i, cudaStream_t s);
cublasOperation_t op_of(char t);
size_t type_size(blasft_type t);
int type_parts(blasft_type t);
bool scalar_nonzero(blasft_type t, const void *x);
/* Whether `count` strided m x n matrices (leading dimension ld, `stride` elements apart) share no
 * element: each past the last's extent, or (rows stacked within one column's stride) each at
 * least m rows past the last with all of them within ld */
inline bool strided_apart(int64_t m, int64_t n, int64_t ld, int64_t stride, int64_t count)
{
    const int64_t s = stride < 0 ? -stride : stride;
    return count < 2 || s >= ld * (n - 1) + m || (s >= m && (count - 1) * s + m <= ld);
}
/* A buffer of the context grown to `bytes` (never shrunk; growing synchronises the context's
 * streams and drops its graphs): 0, -2 where a CUDA call failed (logged as `what`), -3 where
 * cudaMalloc failed and `what` is NULL (unlogged). */
int ensure_buf(blasft_gpu_ctx *ctx, void **buf, size_t *have, size_t bytes, const char *what);
/* a free report slot (waits for the oldest where all are taken; under an application's graph
 * capture, one the graph owns: never waits), and its report enqueued */
report_slot *take_slot(blasft_gpu_ctx *ctx);
/* counters: the device counters to report (NULL: those in the workspace's header) */
int enqueue_report(blasft_gpu_ctx *ctx, report_slot *slot, const report_meta &m,
                   const void *counters = nullptr);
int set_mode(blasft_gpu_ctx *ctx, int on_device); /* the handles' pointer mode */
/* one protected GEMM (the part ctx->part of the caller's): 0, or -2 on a CUDA/cuBLAS error */
template <typename T>
int protected_gemm(blasft_gpu_ctx *ctx, const blasft_gpu_gemm *g, const blasft_gpu_params *p,
                   blasft_type caller);
/* a call enqueued directly: promoted or not */
int run_engine(blasft_gpu_ctx *ctx, const blasft_gpu_gemm *g, const blasft_gpu_params *p);

/* gpu_promoted_gemm.cu */
/* A promoted GEMM's plan: C in tiles of tm x tn (multiples of BS but at the edges), k in chunks
 * of kc, so that the double copies of one panel of op(A), one of op(B) and one tile of C, and the
 * engine's copy of the old tile where a tile accumulates (beta != 0, or a chunk after the first),
 * fit in BLASFT_GPU_PROMOTE_MEM bytes: a fixed-size buffer (issue 4's memory rule). on = 0: the
 * GEMM runs natively. */
struct promo_plan {
    bool on;
    int64_t tm, tn, kc;
    bool keep_old;          /* the engine keeps each tile's old C (8 P tm tn bytes, its old_c) */
    size_t a, b, c, s, v, end; /* the buffer: panel of op(A), panel of op(B), tile of C,
                                  scalars, a tile's part of the old C as a vector (c_vector) */
    /* prepared panels (blasft_gpu_prepare), where a panel serves several tiles (k in one chunk,
     * op N): every panel of op(A) prepared once (pa_each bytes apart) and reused by each column
     * of tiles; the panel of op(B) prepared once per column of tiles. 0: none. Checksums and
     * lists, O((m + n) k / BS): outside BLASFT_GPU_PROMOTE_MEM's copies. */
    size_t pa, pa_each, pb;
    int64_t parts(int64_t m, int64_t n, int64_t k) const
    {
        return ((m + tm - 1) / tm) * ((n + tn - 1) / tn) * ((k + kc - 1) / kc);
    }
};
blasft_type promoted_type(blasft_type t);
promo_plan plan_promotion(blasft_type t, char ta, char tb, int64_t m, int64_t n, int64_t k,
                          bool cold, const blasft_gpu_params *p);
promo_plan plan_for(const blasft_gpu_ctx *ctx, const blasft_gpu_gemm *g,
                    const blasft_gpu_params *p);
/* the GEMM under plan L (L.on), in ctx->promo (ensure_promo) */
int promoted_gemm_run(blasft_gpu_ctx *ctx, const blasft_gpu_gemm *g, const blasft_gpu_params *p,
                      const promo_plan &L);

/* gpu_graphs.cu */
constexpr int kNoGraph = 1; /* run_by_graph: not taken, enqueue directly */
bool graph_eligible(const blasft_gpu_ctx *ctx, const blasft_gpu_gemm *g,
                    const blasft_gpu_params *p);
/* 0 or -2 as blasft_gpu_gemm_run, or kNoGraph */
int run_by_graph(blasft_gpu_ctx *ctx, const blasft_gpu_gemm *g, const blasft_gpu_params *p);
/* A half or bfloat16 call enqueued directly (gpu_lowp.cu); capturing: its stream is being
 * captured, so no buffer may grow. 0, -1 (not taken) or -2. */
typedef int (*lowp_runner)(blasft_gpu_ctx *ctx, const blasft_gpu_lowp *l,
                           const blasft_gpu_params *p, bool capturing);
/* Such a call by the context's graph of it: 0 or -2 as blasft_gpu_gemm_lowp, or kNoGraph */
int run_lowp_by_graph(blasft_gpu_ctx *ctx, const blasft_gpu_lowp *l, const blasft_gpu_params *p,
                      lowp_runner run);

} // namespace gpu_engine

#endif
