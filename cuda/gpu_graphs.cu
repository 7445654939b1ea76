/* The engine's own CUDA graphs of repeated calls (BLASFT_GPU_GRAPHS): the key of a call, its
 * capture on the context's own stream, the replay. The cache (keys, lookup, the capture rule) is
 * graph_cache.c. */
#include "gpu_engine.h"

extern "C" {
#include "log.h"
}

#include <cstdlib>
#include <cstring>

namespace gpu_engine {

namespace {

/* The engine's own graphs (graph_cache.h). Only where enqueueing bounds a stream of calls: from
 * about m n k = 2^31 on (1290^3) the GPU's time per call exceeds the 70-90 us of enqueueing, and
 * a large GEMM keeps the launches it was measured with (docs/cublas-benchmark.md). */
constexpr double kGraphMaxMnk = 0x1p31;

/* Everything that decides what protected_gemm and promoted_gemm enqueue for a call, flat so
 * that the whole struct can be compared (memset, then field by field: no padding bytes of the
 * caller's). Host scalars by value; the proj seed is drawn once, at the capture (a projection
 * fixed for a call's replays is still independent of their data). */
struct graph_key {
    const void *a, *b, *c, *alpha_p, *beta_p, *prep_a, *prep_b, *c_vector;
    const char *routine;
    const void *hook, *hook_user; /* tests: a fault hook captured with the call */
    int64_t m, n, k, lda, ldb, ldc, ref_parts_mn;
    double2 alpha, beta;
    double omega;
    uint64_t promote_mem;
    int32_t type, on_dev, bs, r, weights, pea_p, block_lists, rows_on_demand, proj, promote, mode,
        on_error, sched, no_promo, skip, priority;
    char transa, transb;
};
static_assert(sizeof(graph_key) <= BLASFT_GRAPH_KEY_BYTES, "graph key too large");
/* a field added to these must be added to the key */
static_assert(sizeof(blasft_gpu_gemm) == 136 && sizeof(blasft_gpu_params) == 72,
              "blasft_gpu_gemm or blasft_gpu_params changed: update graph_key");

/* What a graph's launches must restore on the host: its report, and the run debug fetches read. */
struct graph_meta {
    report_meta report;
    run_shape run;
};
static_assert(sizeof(graph_meta) <= BLASFT_GRAPH_META_BYTES, "graph meta too large");

void make_key(graph_key *key, const blasft_gpu_ctx *ctx, const blasft_gpu_gemm *g,
              const blasft_gpu_params *p, int priority)
{
    memset(key, 0, sizeof *key);
    key->priority = priority;
    key->a = g->a;
    key->b = g->b;
    key->c = g->c;
    key->prep_a = g->prep_a;
    key->prep_b = g->prep_b;
    key->c_vector = g->c_vector;
    key->routine = g->routine;
    key->hook = (const void *)ctx->hook;
    key->hook_user = ctx->hook_user;
    key->m = g->m;
    key->n = g->n;
    key->k = g->k;
    key->lda = g->lda;
    key->ldb = g->ldb;
    key->ldc = g->ldc;
    key->on_dev = g->scalars_on_device;
    if (g->scalars_on_device) {
        key->alpha_p = g->alpha;
        key->beta_p = g->beta;
    } else { /* aligned_scalars' copies: the type's bytes, the rest 0 */
        memcpy(&key->alpha, g->alpha, type_size(g->type));
        memcpy(&key->beta, g->beta, type_size(g->type));
    }
    key->type = g->type;
    key->transa = g->transa;
    key->transb = g->transb;
    key->bs = p->block_size;
    key->r = p->checksums;
    key->weights = p->weights;
    key->omega = p->omega;
    key->pea_p = p->pea_p;
    key->block_lists = p->pea_block_lists;
    key->rows_on_demand = p->rows_on_demand;
    key->proj = p->proj;
    key->promote = p->promote;
    key->promote_mem = p->promote_mem;
    key->mode = p->mode;
    key->on_error = p->on_error;
    key->sched = ctx->sched;
    key->ref_parts_mn = ctx->ref_parts_mn;
    key->no_promo = ctx->no_promo;
    key->skip = ctx->skip;
}

/* Captures the call into a graph on the context's own stream sc (h0 moved there meanwhile);
 * the entry, or NULL where the capture failed (nothing of it ran). sc has the priority of the
 * caller's stream, which the graph's nodes of that stream keep (the graphs are instantiated with
 * their nodes' priorities, so that the helper streams' stay theirs). */
blasft_graph_entry *capture_call(blasft_gpu_ctx *ctx, const blasft_gpu_gemm *g,
                                 const blasft_gpu_params *p, uint64_t hash, const graph_key &key)
{
    if (ctx->sc && ctx->sc_priority != key.priority) {
        cudaStreamDestroy(ctx->sc);
        ctx->sc = nullptr;
    }
    if (!ctx->sc) {
        if (!cuda_ok(cudaStreamCreateWithPriority(&ctx->sc, cudaStreamNonBlocking, key.priority),
                     "stream"))
            return nullptr;
        ctx->sc_priority = key.priority;
    }
    const cudaStream_t s0 = ctx->s0;
    if (!blas_ok(cb->set_stream(ctx->h0, ctx->sc), "cublasSetStream"))
        return nullptr;
    ctx->s0 = ctx->sc;
    ctx->deferring = true;
    ctx->deferred_n = 0;
    cudaGraph_t graph = nullptr;
    int rc = -2;
    /* relaxed: the capture must not refuse calls of the application's other threads */
    if (cuda_ok(cudaStreamBeginCapture(ctx->sc, cudaStreamCaptureModeRelaxed),
                "cudaStreamBeginCapture")) {
        rc = run_engine(ctx, g, p);
        const cudaError_t e = cudaStreamEndCapture(ctx->sc, &graph);
        if (e != cudaSuccess) {
            cudaGetLastError();
            rc = -2;
        }
    }
    ctx->s0 = s0;
    ctx->deferring = false;
    const bool back = blas_ok(cb->set_stream(ctx->h0, s0), "cublasSetStream");
    cudaGraphExec_t exec = nullptr;
    if (!rc && graph && ctx->deferred_n == 1 &&
        cudaGraphInstantiateWithFlags(&exec, graph, cudaGraphInstantiateFlagUseNodePriority) !=
            cudaSuccess) {
        cudaGetLastError();
        exec = nullptr;
    }
    if (graph)
        cudaGraphDestroy(graph);
    if (!exec || !back) {
        if (exec)
            cudaGraphExecDestroy(exec);
        blasft_graph_failed(ctx->graphs, hash);
        blasft_log(BLASFT_LOG_DEBUG, "GPU: a %lldx%lldx%lld GEMM could not be captured into a "
                   "graph (%d): enqueued directly", (long long)g->m, (long long)g->n,
                   (long long)g->k, rc);
        return nullptr;
    }
    blasft_graph_entry *e = blasft_graph_insert(ctx->graphs, hash, &key, sizeof key, exec);
    graph_meta *meta = (graph_meta *)e->meta;
    meta->report = ctx->deferred;
    meta->run = ctx->last_run;
    return e;
}

} // namespace

bool graph_eligible(const blasft_gpu_ctx *ctx, const blasft_gpu_gemm *g, const blasft_gpu_params *p)
{
    /* the benchmark's stages left out (skip) are in the key: its breakdown of a replayed call */
    return p->graphs && (!ctx->hook || ctx->graph_with_hook) && !ctx->tracing &&
           (double)g->m * (double)g->n * (double)g->k <= kGraphMaxMnk;
}

/* The call by the context's graph of it: 0 or -2 as blasft_gpu_gemm_run, or kNoGraph where it
 * is to be enqueued directly (first seen, not capturable, the caller's stream being captured). */
int run_by_graph(blasft_gpu_ctx *ctx, const blasft_gpu_gemm *g, const blasft_gpu_params *p)
{
    cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
    if (cudaStreamIsCapturing(ctx->s0, &cs) != cudaSuccess) {
        cudaGetLastError(); /* the legacy stream while another thread captures: enqueued */
        return kNoGraph;
    }
    if (cs != cudaStreamCaptureStatusNone)
        return kNoGraph;
    int priority = 0;
    if (cudaStreamGetPriority(ctx->s0, &priority) != cudaSuccess) {
        cudaGetLastError();
        return kNoGraph;
    }
    if (!ctx->graphs && !(ctx->graphs = (blasft_graph_cache *)calloc(1, sizeof *ctx->graphs)))
        return kNoGraph;
    graph_key key;
    make_key(&key, ctx, g, p, priority);
    const uint64_t hash = blasft_graph_hash(&key, sizeof key);
    blasft_graph_entry *e = blasft_graph_find(ctx->graphs, hash, &key, sizeof key);
    if (!e) {
        /* a capture must not grow a buffer (that synchronises) */
        if (!blasft_graph_admit(ctx->graphs, hash) || blasft_gpu_gemm_would_sync(ctx, g, p, 1) ||
            !(e = capture_call(ctx, g, p, hash, key)))
            return kNoGraph;
    }
    report_slot *slot = take_slot(ctx);
    if (!slot)
        return -2;
    if (!cuda_ok(cudaGraphLaunch(e->exec, ctx->s0), "cudaGraphLaunch")) {
        blasft_graph_drop(ctx->graphs, e); /* nothing was enqueued: the call goes directly */
        return kNoGraph;
    }
    const graph_meta *meta = (const graph_meta *)e->meta;
    ctx->last_run = meta->run;
    return enqueue_report(ctx, slot, meta->report);
}

} // namespace gpu_engine
