/* The engine's own CUDA graphs of repeated calls (BLASFT_GPU_GRAPHS): the key of a call, its
 * capture on the context's own stream, the replay, and the relocated replay of a small call whose
 * operands moved. The cache (keys, lookup, the capture rule) is graph_cache.c. */
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
/* The same for half and bfloat16 products (per call: a batch's matrices together), whose
 * tensor-core GEMM is about twelve times FP64's: up to 2048^3 their enqueueing (45-60 us of the
 * caller's thread) is as long as the GPU's time per call (H200: 2048^3 plain 26 us, protected
 * 71 us). */
constexpr double kLowpGraphMaxMnk = 0x1p33;

/* Relocated replays. A graph bakes its operands' addresses, but a stream of small calls often
 * repeats a shape on operands that move: tiles of one matrix, a solver's panels, a framework's
 * fresh activations. Such a call is copied into compact buffers of the context (A, B, and C
 * where beta may be nonzero), replayed there by the graph of its shape, and C copied back: two
 * small launches beside the graph's one, where a direct enqueue costs 70-100 us of the caller's
 * thread. Only where the copies move at most kRelocMaxBytes (in and out), a few microseconds of
 * the stream: with copies of up to 16 MiB cuSOLVER's QR (n = 4096, float64) took 27 % longer
 * than with direct enqueueing (docs/cublas-interpose.md, "Relocated replays"). */
constexpr size_t kRelocMaxBytes = size_t(4) << 20;
constexpr size_t kRelocAlign = 256;

/* One matrix to copy, in words of the kernel's type. */
struct reloc_matrix {
    const void *src;
    void *dst;
    int64_t rows, cols, lds, ldd;
};
/* A, B, C and device scalars */
constexpr int kRelocMatrices = 5;
struct reloc_copies {
    reloc_matrix m[kRelocMatrices];
};

/* Copies blockIdx.z's matrix: columns across blockIdx.y, rows across the threads (coalesced). */
template <typename W> __global__ void gk_relocate(reloc_copies x)
{
    const reloc_matrix &t = x.m[blockIdx.z];
    for (int64_t col = blockIdx.y; col < t.cols; col += gridDim.y) {
        const W *src = (const W *)t.src + col * t.lds;
        W *dst = (W *)t.dst + col * t.ldd;
        for (int64_t row = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; row < t.rows;
             row += (int64_t)gridDim.x * blockDim.x)
            dst[row] = src[row];
    }
}

/* Where a call's operands go in the relocation buffer, in the caller's element type. */
struct reloc_plan {
    int64_t ar, ac, br, bc;      /* op's stored shapes: A ar x ac, B br x bc */
    size_t a, b, c, alpha, beta, end; /* offsets (the scalars' where they are in device memory) */
    size_t word;                 /* the copies' word: 4 or 8 bytes (it divides the type's size) */
    bool copy_c;                 /* beta may be nonzero: C is read */
};

size_t align_up(size_t x) { return (x + kRelocAlign - 1) / kRelocAlign * kRelocAlign; }

/* The plan of a call that may be relocated, or end 0 where it may not: operands the engine gets
 * prepared or as a vector, too large, or not aligned to the copies' word. */
reloc_plan plan_relocation(const blasft_gpu_gemm *g)
{
    reloc_plan r = {};
    if (g->prep_a || g->prep_b || g->c_vector)
        return r;
    const size_t ts = type_size(g->type);
    r.word = ts % 8 == 0 ? 8 : 4;
    uintptr_t at = (uintptr_t)g->a | (uintptr_t)g->b | (uintptr_t)g->c;
    if (g->scalars_on_device)
        at |= (uintptr_t)g->alpha | (uintptr_t)g->beta;
    if (at % r.word)
        return r;
    const bool na = op_of(g->transa) == CUBLAS_OP_N, nb = op_of(g->transb) == CUBLAS_OP_N;
    r.ar = na ? g->m : g->k;
    r.ac = na ? g->k : g->m;
    r.br = nb ? g->k : g->n;
    r.bc = nb ? g->n : g->k;
    r.copy_c = g->scalars_on_device || scalar_nonzero(g->type, g->beta);
    const double moved = (double)ts * ((double)r.ar * r.ac + (double)r.br * r.bc +
                                       (r.copy_c ? 2.0 : 1.0) * g->m * g->n);
    if (moved > (double)kRelocMaxBytes - 5 * kRelocAlign)
        return r;
    r.a = 0;
    r.b = align_up(ts * r.ar * r.ac);
    r.c = r.b + align_up(ts * r.br * r.bc);
    r.alpha = r.c + align_up(ts * g->m * g->n);
    r.beta = r.alpha + kRelocAlign;
    r.end = g->scalars_on_device ? r.beta + kRelocAlign : r.alpha;
    return r;
}

/* The call on the relocation buffer at `base` (0 for the key: the offsets): compact operands,
 * leading dimensions their rows. */
blasft_gpu_gemm relocated(const blasft_gpu_gemm *g, const reloc_plan &r, uintptr_t base)
{
    blasft_gpu_gemm x = *g;
    x.a = (const void *)(base + r.a);
    x.b = (const void *)(base + r.b);
    x.c = (void *)(base + r.c);
    x.lda = r.ar > 1 ? r.ar : 1;
    x.ldb = r.br > 1 ? r.br : 1;
    x.ldc = g->m > 1 ? g->m : 1;
    if (g->scalars_on_device) {
        x.alpha = (const void *)(base + r.alpha);
        x.beta = (const void *)(base + r.beta);
    }
    return x;
}

reloc_matrix words(const void *src, void *dst, int64_t rows, int64_t cols, int64_t lds,
                   int64_t ldd, size_t ts, size_t word)
{
    const int64_t f = (int64_t)(ts / word);
    return {src, dst, rows * f, cols, lds * f, ldd * f};
}

/* Enqueues the copies of n <= kRelocMatrices matrices on s in one launch (false where it
 * failed). */
bool relocate(cudaStream_t s, size_t word, const reloc_matrix *x, int n)
{
    reloc_copies c = {};
    int64_t rows = 0, cols = 0;
    for (int i = 0; i < n; i++) {
        c.m[i] = x[i];
        rows = x[i].rows > rows ? x[i].rows : rows;
        cols = x[i].cols > cols ? x[i].cols : cols;
    }
    const int threads = 128;
    const int64_t bx = (rows + threads - 1) / threads;
    const dim3 grid((unsigned)(bx < 16 ? bx : 16), (unsigned)(cols < 4096 ? cols : 4096),
                    (unsigned)n);
    if (word == 8)
        gk_relocate<unsigned long long><<<grid, threads, 0, s>>>(c);
    else
        gk_relocate<unsigned int><<<grid, threads, 0, s>>>(c);
    return launches_ok();
}

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
    int32_t relocated; /* the relocated replay's key: a, b, c are offsets in the buffer */
    char transa, transb;
};
static_assert(sizeof(graph_key) <= BLASFT_GRAPH_KEY_BYTES, "graph key too large");
/* a field added to these must be added to the key */
static_assert(sizeof(blasft_gpu_gemm) == 136 && sizeof(blasft_gpu_params) == 72,
              "blasft_gpu_gemm or blasft_gpu_params changed: update graph_key");

/* What a graph's launches must restore on the host: its report, where its counters are (NULL,
 * the workspace's header: an S/D/C/Z call's graph; else a half call's, in the half path's
 * buffer), and the run debug fetches read. */
struct graph_meta {
    report_meta report;
    run_shape run;
    const void *counters;
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

/* Captures a call (run() enqueues it, returning 0 or an error) into a graph on the context's own
 * stream sc (h0 moved there meanwhile), under `key` (bytes of it); the entry, or NULL where the
 * capture failed (nothing of it ran). sc has the priority of the caller's stream, which the
 * graph's nodes of that stream keep (the graphs are instantiated with their nodes' priorities, so
 * that the helper streams' stay theirs). m, n, k, relocated: for the log. */
template <typename Run>
blasft_graph_entry *capture_call(blasft_gpu_ctx *ctx, int priority, uint64_t hash, const void *key,
                                 size_t bytes, Run run, int64_t m, int64_t n, int64_t k,
                                 bool relocated)
{
    if (ctx->sc && ctx->sc_priority != priority) {
        cudaStreamDestroy(ctx->sc);
        ctx->sc = nullptr;
    }
    if (!ctx->sc) {
        if (!cuda_ok(cudaStreamCreateWithPriority(&ctx->sc, cudaStreamNonBlocking, priority),
                     "stream"))
            return nullptr;
        ctx->sc_priority = priority;
    }
    const cudaStream_t s0 = ctx->s0;
    if (!blas_ok(cb->set_stream(ctx->h0, ctx->sc), "cublasSetStream"))
        return nullptr;
    ctx->s0 = ctx->sc;
    ctx->deferring = true;
    ctx->deferred_n = 0;
    ctx->deferred_counters = nullptr;
    cudaGraph_t graph = nullptr;
    int rc = -2;
    /* relaxed: the capture must not refuse calls of the application's other threads */
    if (cuda_ok(cudaStreamBeginCapture(ctx->sc, cudaStreamCaptureModeRelaxed),
                "cudaStreamBeginCapture")) {
        rc = run();
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
                   "graph (%d): enqueued directly", (long long)m, (long long)n, (long long)k, rc);
        return nullptr;
    }
    blasft_log(BLASFT_LOG_DEBUG, "GPU: a %lldx%lldx%lld GEMM captured into a graph%s",
               (long long)m, (long long)n, (long long)k, relocated ? " (relocated)" : "");
    blasft_graph_entry *e = blasft_graph_insert(ctx->graphs, hash, key, bytes, exec);
    graph_meta *meta = (graph_meta *)e->meta;
    meta->report = ctx->deferred;
    meta->run = ctx->last_run;
    meta->counters = ctx->deferred_counters;
    return e;
}

/* The S/D/C/Z call g captured under key */
blasft_graph_entry *capture_gemm(blasft_gpu_ctx *ctx, const blasft_gpu_gemm *g,
                                 const blasft_gpu_params *p, uint64_t hash, const graph_key &key)
{
    return capture_call(
        ctx, key.priority, hash, &key, sizeof key, [&] { return run_engine(ctx, g, p); }, g->m,
        g->n, g->k, key.relocated != 0);
}

} // namespace

namespace {

/* Graphs on, and nothing a graph could not keep: a fault hook not meant to be captured (tests),
 * the benchmark's timeline. The benchmark's stages left out (skip) are in the key: its breakdown
 * of a replayed call. */
bool graphs_allowed(const blasft_gpu_ctx *ctx, const blasft_gpu_params *p)
{
    return p->graphs && (!ctx->hook || ctx->graph_with_hook) && !ctx->tracing;
}

} // namespace

bool graph_eligible(const blasft_gpu_ctx *ctx, const blasft_gpu_gemm *g, const blasft_gpu_params *p)
{
    return graphs_allowed(ctx, p) &&
           (double)g->m * (double)g->n * (double)g->k <= kGraphMaxMnk;
}

namespace {

/* Launches e's graph for the call g on ctx's stream and enqueues its report: 0 or -2 as
 * blasft_gpu_gemm_run, or kNoGraph where nothing of the call was enqueued (the graph is then
 * dropped). With r, g's operands are copied into the relocation buffer first and C back after.
 * replay: e was found in the cache (counted), not captured for this call. */
int launch(blasft_gpu_ctx *ctx, blasft_graph_entry *e, const blasft_gpu_gemm *g,
           const reloc_plan *r, bool replay)
{
    report_slot *slot = take_slot(ctx);
    if (!slot)
        return -2;
    const size_t ts = type_size(g->type);
    blasft_gpu_gemm at = {}; /* the call on the buffer */
    if (r) {
        at = relocated(g, *r, (uintptr_t)ctx->reloc);
        reloc_matrix in[kRelocMatrices];
        int n = 0;
        in[n++] = words(g->a, (void *)at.a, r->ar, r->ac, g->lda, at.lda, ts, r->word);
        in[n++] = words(g->b, (void *)at.b, r->br, r->bc, g->ldb, at.ldb, ts, r->word);
        if (r->copy_c)
            in[n++] = words(g->c, at.c, g->m, g->n, g->ldc, at.ldc, ts, r->word);
        if (g->scalars_on_device) {
            in[n++] = words(g->alpha, (void *)at.alpha, 1, 1, 1, 1, ts, r->word);
            in[n++] = words(g->beta, (void *)at.beta, 1, 1, 1, 1, ts, r->word);
        }
        if (!relocate(ctx->s0, r->word, in, n))
            return kNoGraph; /* nothing of the call enqueued: it goes directly */
    }
    if (!cuda_ok(cudaGraphLaunch(e->exec, ctx->s0), "cudaGraphLaunch")) {
        blasft_graph_drop(ctx->graphs, e); /* the call goes directly (the copies in are harmless) */
        return kNoGraph;
    }
    ctx->graphs->hits += replay;
    if (r) {
        const reloc_matrix out = words(at.c, g->c, g->m, g->n, at.ldc, g->ldc, ts, r->word);
        if (!relocate(ctx->s0, r->word, &out, 1))
            return -2;
    }
    const graph_meta *meta = (const graph_meta *)e->meta;
    report_meta rm = meta->report;
    if (!meta->counters) { /* an S/D/C/Z call's graph (a half call's leaves both as a direct one) */
        ctx->last_run = meta->run;
        rm.matrix = ctx->matrix; /* this call's, not the capture's */
    }
    return enqueue_report(ctx, slot, rm, meta->counters);
}

/* The relocation buffer, made at its full size the first time one is needed: growing it would
 * drop every graph of the context (they bake its address), and on a solver's changing shapes
 * that cost more captures than the copies saved. False where the device has no memory for it;
 * then the context stops relocating (not trying a cudaMalloc at every call). */
bool reloc_room(blasft_gpu_ctx *ctx)
{
    if (ctx->no_reloc)
        return false;
    const int rc = ensure_buf(ctx, &ctx->reloc, &ctx->reloc_bytes, kRelocMaxBytes, nullptr);
    ctx->no_reloc = rc == -3;
    return rc == 0;
}

/* The caller's stream's priority (the keys') and the context's cache of graphs (made on
 * demand); false where either cannot be had: the call is enqueued directly. */
bool graphs_ready(blasft_gpu_ctx *ctx, int *priority)
{
    if (cudaStreamGetPriority(ctx->s0, priority) != cudaSuccess) {
        cudaGetLastError();
        return false;
    }
    return ctx->graphs ||
           (ctx->graphs = (blasft_graph_cache *)calloc(1, sizeof *ctx->graphs)) != nullptr;
}

} // namespace

/* The call by the context's graph of it: 0 or -2 as blasft_gpu_gemm_run, or kNoGraph where it
 * is to be enqueued directly (first seen, not capturable, the caller's stream being captured).
 * A graph of the call's own addresses first; else, for a small call, the graph of its shape on
 * the relocation buffer. Where the addresses come back (seen before, graph_cache.h's rule) the
 * call is captured as it is, even beside a relocated graph of its shape, whose copies would cost
 * the stream a few microseconds at every call; a shape whose operands keep moving (the third
 * time at new addresses) is captured relocated. */
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
    if (!graphs_ready(ctx, &priority))
        return kNoGraph;
    graph_key key;
    make_key(&key, ctx, g, p, priority);
    const uint64_t hash = blasft_graph_hash(&key, sizeof key);
    blasft_graph_tick(ctx->graphs);
    blasft_graph_entry *e = blasft_graph_find(ctx->graphs, hash, &key, sizeof key);
    if (e)
        return launch(ctx, e, g, nullptr, true);
    /* the relocated key: the buffer's offsets for addresses, device scalars' too (every graph in
     * the cache was made on the current buffer: growing it drops them) */
    const reloc_plan r = p->graphs == 1 ? plan_relocation(g) : reloc_plan{};
    graph_key rkey;
    uint64_t rhash = 0;
    blasft_graph_entry *moved = nullptr;
    if (r.end) {
        const blasft_gpu_gemm at0 = relocated(g, r, 0);
        make_key(&rkey, ctx, &at0, p, priority);
        rkey.relocated = 1;
        rhash = blasft_graph_hash(&rkey, sizeof rkey);
        moved = blasft_graph_find(ctx->graphs, rhash, &rkey, sizeof rkey);
    }
    /* a capture must not grow a buffer (that synchronises) */
    const bool fresh = !blasft_graph_seen(ctx->graphs, hash);
    if (blasft_graph_admit(ctx->graphs, hash)) {
        if (!blasft_gpu_gemm_would_sync(ctx, g, p, 1) && (e = capture_gemm(ctx, g, p, hash, key)))
            return launch(ctx, e, g, nullptr, false);
        return moved ? launch(ctx, moved, g, &r, true) : kNoGraph;
    }
    if (moved)
        return launch(ctx, moved, g, &r, true);
    if (!r.end || !blasft_graph_admit_relocated(ctx->graphs, rhash, fresh) || !reloc_room(ctx))
        return kNoGraph;
    const blasft_gpu_gemm x = relocated(g, r, (uintptr_t)ctx->reloc);
    if (blasft_gpu_gemm_would_sync(ctx, &x, p, 1) || !(e = capture_gemm(ctx, &x, p, rhash, rkey)))
        return kNoGraph;
    return launch(ctx, e, g, &r, false);
}

/* The key of a half or bfloat16 call (gpu_lowp.cu): its GEMM's (the scalars as floats) and what
 * the half path adds. The engine's buffers are in no key: growing one drops every graph. */
struct lowp_graph_key {
    graph_key gemm;
    const void *c_in, *bias, *a_arr, *b_arr, *c_arr;
    int64_t ldc_in, count, stride_a, stride_b, stride_c, stride_c_in;
    int32_t ab, c, compute, algo, math;
};
static_assert(sizeof(lowp_graph_key) <= BLASFT_GRAPH_KEY_BYTES, "lowp graph key too large");
/* a field added to it must be added to the key (the planted faults' are not: such calls are
 * never captured) */
static_assert(sizeof(blasft_gpu_lowp) == 272, "blasft_gpu_lowp changed: update lowp_graph_key");

/* A half or bfloat16 call by the context's graph of it, as run_by_graph (no relocated replays:
 * such calls are captured at their own addresses, which a framework's allocator gives back
 * call after call); `run` enqueues it directly (capturing: no buffer may grow). */
int run_lowp_by_graph(blasft_gpu_ctx *ctx, const blasft_gpu_lowp *l, const blasft_gpu_params *p,
                      lowp_runner run)
{
    const blasft_gpu_gemm &g = l->g;
    const double count = l->count > 1 ? (double)l->count : 1.0;
    if (!graphs_allowed(ctx, p) || l->nplants ||
        count * (double)g.m * (double)g.n * (double)g.k > kLowpGraphMaxMnk)
        return kNoGraph;
    int priority = 0;
    if (!graphs_ready(ctx, &priority))
        return kNoGraph;
    lowp_graph_key key;
    memset(&key, 0, sizeof key);
    blasft_gpu_gemm gs = g;
    gs.type = BLASFT_TYPE_S; /* the scalars' bytes: floats */
    make_key(&key.gemm, ctx, &gs, p, priority);
    key.gemm.type = -1; /* no S/D/C/Z call's: such a key never equals this one's first part */
    key.c_in = l->c_in;
    key.bias = l->bias;
    key.a_arr = l->a_arr;
    key.b_arr = l->b_arr;
    key.c_arr = l->c_arr;
    key.ldc_in = l->ldc_in;
    key.count = l->count;
    key.stride_a = l->stride_a;
    key.stride_b = l->stride_b;
    key.stride_c = l->stride_c;
    key.stride_c_in = l->stride_c_in;
    key.ab = l->ab;
    key.c = l->c;
    key.compute = l->compute;
    key.algo = l->algo;
    key.math = l->math;
    const uint64_t hash = blasft_graph_hash(&key, sizeof key);
    blasft_graph_tick(ctx->graphs);
    blasft_graph_entry *e = blasft_graph_find(ctx->graphs, hash, &key, sizeof key);
    if (e)
        return launch(ctx, e, &gs, nullptr, true);
    if (blasft_graph_admit(ctx->graphs, hash) &&
        (e = capture_call(
             ctx, priority, hash, &key, sizeof key, [&] { return run(ctx, l, p, true); }, g.m,
             g.n, g.k, false)))
        return launch(ctx, e, &gs, nullptr, false);
    return kNoGraph;
}

} // namespace gpu_engine
