#include "offload.h"

#include "abft/abft_engine.h"
#include "blasft_gpu.h"
#include "consistency/cache.h"
#include "cuda_errors.h"
#include "log.h"
#include "offload_backend.h"
#include "report.h"

#include <cuda_runtime_api.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>


static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return 1e3 * (double)t.tv_sec + 1e-6 * (double)t.tv_nsec;
}

static blasft_devmem *backend;
static blasft_cache *cache;
static pthread_once_t offload_once = PTHREAD_ONCE_INIT;
/* The device of the cache, the staging buffers and every thread's streams: the one current when
 * the process's first offloaded GEMM started them; its CUDA context then (blasft_gpu_context_id),
 * and how many times they were made again after the application reset that device. */
static int offload_device;
static uint64_t offload_ctx_id;
static unsigned offload_generation;
static pthread_mutex_t rebuild_lock = PTHREAD_MUTEX_INITIALIZER;

/* The cache's codec: an entry's encodings are the GPU engine's prepared operands (slot 0: the
 * matrix as op(A) = A, slot 1: as op(B) = B), made with the process configuration's parameters
 * on the calling thread's own stream. A call whose parameters differ asks for none. */
static blasft_gpu_params codec_params;
static cudaStream_t prep_stream_of_thread(void);

static size_t codec_bytes(void *ctx, int slot, blasft_type t, int64_t rows, int64_t cols)
{
    (void)ctx;
    return blasft_gpu_prep_bytes(slot, t, rows, cols, &codec_params);
}

static int codec_encode(void *ctx, int slot, blasft_type t, int64_t rows, int64_t cols,
                        const void *data, void *enc)
{
    (void)ctx;
    cudaStream_t st = prep_stream_of_thread();
    /* synchronised: another thread may share the entry (and read the buffer) once this returns */
    return st && blasft_gpu_prepare(st, slot, t, rows, cols, data, rows > 1 ? rows : 1,
                                    &codec_params, enc) == 0 &&
                   cudaStreamSynchronize(st) == cudaSuccess
               ? 0
               : -1;
}

static const blasft_cache_codec gpu_codec = {NULL, codec_bytes, codec_encode};

static int same_prep_params(const blasft_gpu_params *p)
{
    return p->block_size == codec_params.block_size && p->checksums == codec_params.checksums &&
           p->weights == codec_params.weights && p->pea_p == codec_params.pea_p;
}

/* The staging buffers and the cache on the current device (offload_device). */
static void make_cache(void)
{
    const blasft_config *s = blasft_cfg();
    backend = blasft_offload_backend_create(s->staging);
    if (!backend)
        return;
    blasft_gpu_params_from_cfg(&codec_params, s);
    blasft_cache_opts o = {s->cache, s->device_mem, s->hash_threads, &gpu_codec};
    cache = blasft_cache_create(backend, &o);
    __atomic_store_n(&offload_ctx_id, blasft_gpu_context_id(), __ATOMIC_RELEASE);
}

static void offload_init(void)
{
    if (!blasft_gpu_available() || cudaGetDevice(&offload_device) != cudaSuccess)
        return;
    make_cache();
}

/* With offload_device current: after the application reset it (cudaDeviceReset), the cache's
 * copies, the staging buffers and every thread's streams are gone, and their addresses may be
 * the application's allocations now. They are given up without a CUDA call and made again; the
 * host holds every result already (each call copies C back before it returns). */
static void remake_after_reset(void)
{
    const uint64_t cid = blasft_gpu_context_id();
    if (cid == __atomic_load_n(&offload_ctx_id, __ATOMIC_ACQUIRE))
        return;
    pthread_mutex_lock(&rebuild_lock);
    if (cid != offload_ctx_id && cache) {
        blasft_offload_backend_forget(backend);
        blasft_cache_destroy(cache);
        backend->ops->destroy(backend);
        cache = NULL;
        backend = NULL;
        __atomic_fetch_add(&offload_generation, 1, __ATOMIC_RELEASE);
        make_cache();
        blasft_log(BLASFT_LOG_INFO, "offload: the device was reset; its cache starts empty");
    }
    pthread_mutex_unlock(&rebuild_lock);
}

static int64_t at_least1(int64_t v) { return v > 1 ? v : 1; }

static int beta_is_zero(const blasft_gemm *g) { return g->beta[0] == 0.0 && g->beta[1] == 0.0; }

/* The GEMM is split into column panels of C (and of op(B)) so that C's first panels travel back
 * while the GPU computes the later ones; each panel is a protected GEMM of its own. Panels are
 * at least PANEL_MIN columns wide (narrower ones lose more in the engine than the overlap
 * gains), at most PANELS of them. */
#define PANELS 4
#define PANEL_MIN 2048

/* Per thread: the engine's context on a stream of this thread's own, the panels' events, and a
 * second stream for the cache's encodings (they run beside the thread's GEMMs). */
typedef struct thread_gpu {
    unsigned generation; /* offload_generation when made */
    blasft_gpu_ctx *ctx;
    cudaStream_t stream, prep_stream;
    cudaEvent_t panel_done[PANELS];
} thread_gpu;

/* A thread's state is given up when the thread ends: an application that starts a thread per
 * task would otherwise leave streams, events, a context, its handles and workspace behind for
 * each. Made before a device reset (or in a forked child), only its host memory is freed. */
static pthread_key_t thread_key;
static pthread_once_t thread_key_once = PTHREAD_ONCE_INIT;
static int thread_key_ok;

static void thread_end(void *p)
{
    thread_gpu *t = p;
    int current = -1;
    if (t->generation != __atomic_load_n(&offload_generation, __ATOMIC_ACQUIRE) ||
        blasft_gpu_forked() || cudaGetDevice(&current) != cudaSuccess ||
        (current != offload_device && cudaSetDevice(offload_device) != cudaSuccess)) {
        blasft_gpu_ctx_forget(t->ctx);
        free(t);
        return;
    }
    blasft_gpu_ctx_release(t->ctx, offload_device, 0); /* waits for the device */
    for (int i = 0; i < PANELS; i++)
        cudaEventDestroy(t->panel_done[i]);
    cudaStreamDestroy(t->stream);
    cudaStreamDestroy(t->prep_stream);
    if (current != offload_device)
        cudaSetDevice(current);
    free(t);
}

static void thread_key_init(void) { thread_key_ok = pthread_key_create(&thread_key, thread_end) == 0; }

static thread_gpu *thread_state(void)
{
    static _Thread_local thread_gpu *tg;
    const unsigned gen = __atomic_load_n(&offload_generation, __ATOMIC_ACQUIRE);
    if (tg && tg->generation == gen)
        return tg;
    pthread_once(&thread_key_once, thread_key_init);
    if (!thread_key_ok)
        return NULL;
    if (tg) { /* made before a device reset: its streams, events and context are gone */
        blasft_gpu_ctx_forget(tg->ctx);
        free(tg);
        tg = NULL;
        pthread_setspecific(thread_key, NULL);
    }
    thread_gpu *t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    t->generation = gen;
    /* the encodings at the highest priority: their blocks go first as the running panel's GEMM
     * frees SMs, so the next panel is not held up until that GEMM ends */
    int lo = 0, hi = 0;
    cudaDeviceGetStreamPriorityRange(&lo, &hi);
    if (cudaStreamCreateWithFlags(&t->stream, cudaStreamNonBlocking) != cudaSuccess ||
        cudaStreamCreateWithPriority(&t->prep_stream, cudaStreamNonBlocking, hi) != cudaSuccess)
        goto fail;
    for (int i = 0; i < PANELS; i++)
        if (cudaEventCreateWithFlags(&t->panel_done[i], cudaEventDisableTiming) != cudaSuccess)
            goto fail;
    if (!(t->ctx = blasft_gpu_ctx_create(t->stream)) || pthread_setspecific(thread_key, t) != 0)
        goto fail;
    return tg = t;
fail:
    if (t->ctx)
        blasft_gpu_ctx_destroy(t->ctx);
    for (int i = 0; i < PANELS; i++)
        if (t->panel_done[i])
            cudaEventDestroy(t->panel_done[i]);
    if (t->stream)
        cudaStreamDestroy(t->stream);
    if (t->prep_stream)
        cudaStreamDestroy(t->prep_stream);
    free(t);
    return NULL;
}

static cudaStream_t prep_stream_of_thread(void)
{
    thread_gpu *t = thread_state();
    return t ? t->prep_stream : NULL;
}

static int key_cmp(const blasft_cache_key *a, const blasft_cache_key *b)
{
    if (a->host != b->host)
        return (uintptr_t)a->host < (uintptr_t)b->host ? -1 : 1;
    if (a->type != b->type)
        return a->type < b->type ? -1 : 1;
    if (a->rows != b->rows)
        return a->rows < b->rows ? -1 : 1;
    if (a->cols != b->cols)
        return a->cols < b->cols ? -1 : 1;
    return a->ld < b->ld ? -1 : a->ld > b->ld;
}

typedef struct operand {
    blasft_cache_key key;
    unsigned flags;
    blasft_cache_ref ref;
    int held;
} operand;

/* One offloaded call: A and C whole, op(B) and C in column panels. op(B)'s panel j is an entry
 * of its own (B's columns j0..j1 for N, its rows for T/C), so that panel j+1 is checked and
 * uploaded on the host while the GPU computes panel j. */
typedef struct call {
    const blasft_gemm *g;
    thread_gpu *tg;
    blasft_gpu_gemm dg; /* the whole GEMM on the device copies (b: unused) */
    blasft_gpu_params p;
    int panels;
    operand a, c, b[PANELS];
    size_t bounds[PANELS]; /* C's dense bytes final after panel j */
    float sf[2][2];        /* FP32 scalars */
} call;

static int panel_count(const blasft_gemm *g)
{
    int64_t p = g->n / PANEL_MIN;
    return p < 1 ? 1 : p > PANELS ? PANELS : (int)p;
}

static void panel_cols(const call *K, int j, int64_t *j0, int64_t *j1)
{
    *j0 = K->g->n * j / K->panels;
    *j1 = K->g->n * (j + 1) / K->panels;
}

static blasft_cache_key b_panel_key(const call *K, int j)
{
    const blasft_gemm *g = K->g;
    size_t ts = (size_t)blasft_type_size(g->type);
    int64_t j0, j1;
    panel_cols(K, j, &j0, &j1);
    if (g->transb == 'N')
        return (blasft_cache_key){(const unsigned char *)g->b + ts * (size_t)(j0 * g->ldb),
                                  g->type, g->k, j1 - j0, g->ldb};
    return (blasft_cache_key){(const unsigned char *)g->b + ts * (size_t)j0, g->type, j1 - j0,
                              g->k, g->ldb};
}

/* Enqueues panel j's protected GEMM and its event; 0 or the engine's error. */
static int enqueue_panel(call *K, int j)
{
    const blasft_gpu_gemm *g = &K->dg;
    size_t ts = (size_t)blasft_type_size(g->type);
    int64_t j0, j1;
    panel_cols(K, j, &j0, &j1);
    blasft_gpu_gemm pg = *g;
    pg.n = j1 - j0;
    pg.b = K->b[j].ref.data;
    pg.ldb = at_least1(K->b[j].key.rows);
    pg.c = (unsigned char *)g->c + ts * (size_t)(j0 * g->ldc);
    pg.prep_a = K->a.ref.enc[0]; /* NULL where not asked for */
    pg.prep_b = K->b[j].ref.enc[1];
    int rc = blasft_gpu_gemm_run(K->tg->ctx, &pg, &K->p);
    if (rc != 0)
        return rc;
    if (cudaEventRecord(K->tg->panel_done[j], K->tg->stream) != cudaSuccess)
        return -2;
    K->bounds[j] = ts * (size_t)(j1 * g->ldc);
    /* one call, one protected GEMM in the report, however many panels it took */
    if (j > 0 && g->k > 0 && K->p.mode != BLASFT_MODE_OFF)
        blasft_stat_add(BLASFT_STAT_PROTECTED_GEMMS, (uint64_t)-1);
    return 0;
}

/* before_write of a deferred check that found a change: the speculative GEMM must stop reading
 * the old copy first */
static void wait_stream(void *arg)
{
    cudaStreamSynchronize(((thread_gpu *)arg)->stream);
}

static void release_all(call *K, unsigned c_how)
{
    for (int j = 0; j < K->panels; j++)
        if (K->b[j].held)
            blasft_cache_release(cache, &K->b[j].ref, 0);
    if (K->a.held)
        blasft_cache_release(cache, &K->a.ref, 0);
    if (K->c.held)
        blasft_cache_release(cache, &K->c.ref, c_how);
}

/* Runs g on the host: protected (1), else plain (0). */
static int host_part(const blasft_gemm *g, const blasft_config *cfg)
{
    if (blasft_abft_run(g, cfg, NULL, 0) == 0)
        return 1;
    blasft_host_gemm(g);
    return 0;
}

/* C's copy back failed after `done` dense bytes of C (column-major, m rows) had reached the host:
 * those hold the result, the rest the caller's C. Where nothing was written, or beta = 0, the
 * caller's rerun of the whole GEMM is exact (-1). Otherwise the rest is computed here on the
 * host, as if the GEMM had run there (0). Where what was written is not known, beta != 0 leaves
 * no way to the result: reported as an uncorrectable error (0). */
static int finish_on_host(const blasft_gemm *g, const blasft_config *cfg, size_t done)
{
    const size_t ts = (size_t)blasft_type_size(g->type), col = ts * (size_t)g->m;
    const int beta_zero = g->beta[0] == 0.0 && g->beta[1] == 0.0;
    if (done == 0 || beta_zero)
        return -1;
    if (done == SIZE_MAX || done % ts) {
        blasft_report_lost_result(g->routine, blasft_type_letter(g->type), cfg->on_error);
        return 0;
    }
    const int64_t j0 = (int64_t)(done / col), r0 = (int64_t)((done % col) / ts);
    const size_t a_row = g->transa == 'N' ? ts : ts * (size_t)g->lda;
    const size_t b_col = g->transb == 'N' ? ts * (size_t)g->ldb : ts;
    const size_t c_col = ts * (size_t)g->ldc;
    int64_t j = j0;
    if (r0 > 0) { /* the rest of column j0 */
        blasft_gemm t = *g;
        t.m = g->m - r0;
        t.n = 1;
        t.a = (const char *)g->a + (size_t)r0 * a_row;
        t.b = (const char *)g->b + (size_t)j0 * b_col;
        t.c = (char *)g->c + (size_t)j0 * c_col + (size_t)r0 * ts;
        host_part(&t, cfg);
        j++;
    }
    if (j < g->n) { /* the columns not copied at all */
        blasft_gemm t = *g;
        t.n = g->n - j;
        t.b = (const char *)g->b + (size_t)j * b_col;
        t.c = (char *)g->c + (size_t)j * c_col;
        host_part(&t, cfg);
    }
    return 0;
}

/* One call whose operands fit the cache's budget together. */
static int offload_call(const blasft_gemm *g, const blasft_config *cfg)
{
    /* BLASFT_OFFLOAD_TRACE=on: one line per call on stderr with the phases' wall times */
    const int trace_on = cfg->offload_trace;
    double t_start = trace_on ? now_ms() : 0, t_acq = 0, t_ver = 0;
    thread_gpu *tg = thread_state();
    if (!tg)
        return -1;
    call K;
    memset(&K, 0, sizeof K);
    K.g = g;
    K.tg = tg;
    K.panels = panel_count(g);
    K.a.key = (blasft_cache_key){g->a, g->type, blasft_gemm_a_rows(g), blasft_gemm_a_cols(g), g->lda};
    K.c.key = (blasft_cache_key){g->c, g->type, g->m, g->n, g->ldc};
    K.c.flags = BLASFT_CACHE_WRITE | (beta_is_zero(g) ? BLASFT_CACHE_NO_LOAD : 0);
    /* prepared operands kept with the copies where the engine can use them (op = N; op(B)'s only
     * with the row side on demand) and the parameters are the codec's */
    blasft_gpu_params_from_cfg(&K.p, cfg);
    const int prep = same_prep_params(&K.p) && g->k > 0 && cfg->mode != BLASFT_MODE_OFF &&
                     !blasft_gpu_promotes(g->type, g->m, g->n, g->k, &K.p) &&
                     blasft_cache_get_mode(cache) != BLASFT_CACHE_OFF; /* off: nothing is kept */
    /* ...from the second use of a copy on (IF_SAME): an operand that changed is encoded by its
     * GEMM, beside the GEMM, which is cheaper than a separate pass first (measured:
     * docs/offload-benchmark.md, top) */
    const unsigned a_enc =
        prep && g->transa == 'N' ? BLASFT_CACHE_ENC(0) | BLASFT_CACHE_ENC_IF_SAME : 0;
    const unsigned b_enc = prep && g->transb == 'N' && K.p.rows_on_demand && !K.p.pea_block_lists
                               ? BLASFT_CACHE_ENC(1) | BLASFT_CACHE_ENC_IF_SAME
                               : 0;
    /* the result kept encoded (thesis figure 6.2): C's slots are prepared on the device from the
     * final C while it travels back, so C as a later operand costs no encoding; with beta = 0
     * only (a writer that loads the old C would be encoded for nothing at the acquire) */
    const int c_enc = prep && beta_is_zero(g);
    if (c_enc)
        K.c.flags |= BLASFT_CACHE_ENC(0) | BLASFT_CACHE_ENC(1);
    int a_alone = key_cmp(&K.a.key, &K.c.key) != 0;
    for (int j = 0; j < K.panels; j++) {
        K.b[j].key = b_panel_key(&K, j);
        a_alone = a_alone && key_cmp(&K.a.key, &K.b[j].key) != 0;
        /* B stored as C (overlap that BLAS forbids): the uncached path, not a wait on itself */
        if (key_cmp(&K.b[j].key, &K.c.key) == 0)
            return -1;
    }
    /* Speculation: with C not read (beta = 0), A may be used before its change check, which then
     * runs on the host threads beside the GEMM (a change found means a redo); only as an entry
     * of its own (an entry whose check is deferred is held alone). B's panels are checked before
     * their GEMMs, beside the GEMM of the panel before. */
    if (beta_is_zero(g) && a_alone)
        K.a.flags = BLASFT_CACHE_DEFER_CHECK;
    K.a.flags |= a_enc;
    /* A and C in one global order (a thread that holds an entry alone while it waits for the
     * next can then never wait for a thread that waits for it); B's panels later without
     * waiting: if one is held by another thread, A's check is finished first (A no longer held
     * alone) and then the panel is waited for, while only C is held alone, as a writer holds it */
    operand *first = key_cmp(&K.a.key, &K.c.key) <= 0 ? &K.a : &K.c;
    operand *second = first == &K.a ? &K.c : &K.a;
    int rc_run = 0;
    if (blasft_cache_acquire(cache, &first->key, first->flags, &first->ref) != 0)
        return -1;
    first->held = 1;
    if (blasft_cache_acquire(cache, &second->key, second->flags, &second->ref) != 0) {
        release_all(&K, 0);
        return -1;
    }
    second->held = 1;
    /* the scalars in the GEMM's type: real part first, so one buffer serves every type */
    K.sf[0][0] = (float)g->alpha[0]; K.sf[0][1] = (float)g->alpha[1];
    K.sf[1][0] = (float)g->beta[0]; K.sf[1][1] = (float)g->beta[1];
    int single = g->type == BLASFT_TYPE_S || g->type == BLASFT_TYPE_C;
    K.dg = (blasft_gpu_gemm){
        .type = g->type, .transa = g->transa, .transb = g->transb,
        .m = g->m, .n = g->n, .k = g->k,
        .alpha = single ? (const void *)K.sf[0] : (const void *)g->alpha,
        .a = K.a.ref.data, .lda = at_least1(K.a.key.rows),
        .b = NULL, .ldb = 1,
        .beta = single ? (const void *)K.sf[1] : (const void *)g->beta,
        .c = K.c.ref.data, .ldc = at_least1(g->m),
        .scalars_on_device = 0, .routine = g->routine,
    };
    blasft_devmem_hook wait = {wait_stream, tg};
    int redo = 0;
    for (int j = 0; j < K.panels && rc_run == 0; j++) {
        operand *b = &K.b[j];
        int r = blasft_cache_acquire(cache, &b->key, BLASFT_CACHE_TRY | b_enc, &b->ref);
        if (r == -3) {
            int v = blasft_cache_verify(cache, &K.a.ref, &wait);
            if (v < 0)
                rc_run = -2;
            redo |= v > 0;
            r = rc_run ? -2 : blasft_cache_acquire(cache, &b->key, b_enc, &b->ref);
        }
        if (r != 0) {
            rc_run = r == -1 ? -1 : -2;
            break;
        }
        b->held = 1;
        if (!redo) /* (after a redo is known the panels wait for all of B) */
            rc_run = enqueue_panel(&K, j);
    }
    if (trace_on)
        t_acq = now_ms();
    /* A's deferred check runs here, on the host threads, while the GPU computes */
    if (rc_run == 0) {
        int v = blasft_cache_verify(cache, &K.a.ref, &wait);
        if (v < 0)
            rc_run = -2;
        redo |= v > 0;
    }
    /* computed from a stale copy of A: again, on the updated copy */
    for (int j = 0; j < K.panels && rc_run == 0 && redo; j++)
        rc_run = enqueue_panel(&K, j);
    if (trace_on)
        t_ver = now_ms();
    /* after the last panel's event: the copy back of the earlier panels is not held up */
    if (rc_run == 0 && c_enc && K.c.ref.enc[0] && K.c.ref.enc[1] &&
        blasft_gpu_prepare(tg->stream, 0, g->type, g->m, g->n, K.c.ref.data, at_least1(g->m),
                           &codec_params, K.c.ref.enc[0]) == 0 &&
        blasft_gpu_prepare(tg->stream, 1, g->type, g->m, g->n, K.c.ref.data, at_least1(g->m),
                           &codec_params, K.c.ref.enc[1]) == 0)
        K.c.ref.enc_written = 3u;
    blasft_devmem_fence fence = {K.panels, K.bounds, (void *const *)tg->panel_done};
    size_t c_done = 0; /* C's copy back failed after these dense bytes of it reached the host */
    if (rc_run == 0 && blasft_cache_download_fenced(cache, &K.c.ref, &fence, &c_done) != 0)
        rc_run = -3;
    if (cudaStreamSynchronize(tg->stream) != cudaSuccess && rc_run == 0)
        rc_run = -2;
    /* on failure the device C is unknown: released as unchanged, the host C (untouched unless
     * the copy back itself failed) stays the truth */
    if (trace_on)
        fprintf(stderr, "[offload] %c m=%lld n=%lld k=%lld panels=%d A did %#x B0 did %#x: "
                "acquire+enqueue %.2f verify A %.2f%s download+sync %.2f total %.2f ms\n",
                "SDCZ"[g->type], (long long)g->m, (long long)g->n, (long long)g->k, K.panels,
                K.a.ref.did, K.b[0].ref.did, t_acq - t_start, t_ver - t_acq,
                redo ? " (redo)" : "", now_ms() - t_ver, now_ms() - t_start);
    release_all(&K, rc_run == 0 ? BLASFT_CACHE_DEVICE_WROTE : 0);
    if (rc_run == -1) /* an operand over the budget: the caller takes the uncached path */
        return -1;
    if (rc_run != 0) {
        blasft_cache_mark_host_changed(cache, g->c, (size_t)((g->n - 1) * g->ldc + g->m) *
                                                        (size_t)blasft_type_size(g->type));
        static int warned;
        blasft_log_once(&warned, BLASFT_LOG_WARN, "an offloaded GEMM failed on the GPU and runs "
                                                  "on the host");
        return rc_run == -3 ? finish_on_host(g, cfg, c_done) : -1;
    }
    return 0;
}

/* ---- GEMMs whose operands do not fit the budget: tiles ----------------------------------- */

/* Device bytes of one call's operands: A, all of op(B)'s panels and C are held at once. */
static double operand_bytes(const blasft_gemm *g)
{
    return (double)blasft_type_size(g->type) *
           ((double)g->m * (double)g->k + (double)g->k * (double)g->n + (double)g->m * (double)g->n);
}

/* The two halves of g along m (rows of op(A) and C), n (columns of op(B) and C) or k (the second
 * half accumulates onto the first: beta 1). */
static void split(const blasft_gemm *g, char dim, blasft_gemm *t1, blasft_gemm *t2)
{
    const size_t ts = (size_t)blasft_type_size(g->type);
    *t1 = *t2 = *g;
    const unsigned char *a = g->a, *b = g->b;
    unsigned char *c = g->c;
    if (dim == 'm') {
        int64_t h = g->m / 2;
        t1->m = h;
        t2->m = g->m - h;
        t2->a = a + ts * (size_t)(g->transa == 'N' ? h : h * g->lda);
        t2->c = c + ts * (size_t)h;
    } else if (dim == 'n') {
        int64_t h = g->n / 2;
        t1->n = h;
        t2->n = g->n - h;
        t2->b = b + ts * (size_t)(g->transb == 'N' ? h * g->ldb : h);
        t2->c = c + ts * (size_t)(h * g->ldc);
    } else {
        int64_t h = g->k / 2;
        t1->k = h;
        t2->k = g->k - h;
        t2->a = a + ts * (size_t)(g->transa == 'N' ? h * g->lda : h);
        t2->b = b + ts * (size_t)(g->transb == 'N' ? h : h * g->ldb);
        t2->beta[0] = 1.0;
        t2->beta[1] = 0.0;
    }
}

/* Which dimension to halve so that the largest operand shrinks: A = m k, B = k n, C = m n; 0 when
 * none can be (every dimension 1). */
static char split_dim(const blasft_gemm *g)
{
    const double A = (double)g->m * (double)g->k, B = (double)g->k * (double)g->n,
                 C = (double)g->m * (double)g->n;
    char d;
    if (C >= A && C >= B)
        d = g->m >= g->n ? 'm' : 'n';
    else if (A >= B)
        d = g->m >= g->k ? 'm' : 'k';
    else
        d = g->n >= g->k ? 'n' : 'k';
    const int64_t len = d == 'm' ? g->m : d == 'n' ? g->n : g->k;
    if (len >= 2)
        return d;
    return g->m >= 2 ? 'm' : g->n >= 2 ? 'n' : g->k >= 2 ? 'k' : 0;
}

/* What the tiles of one call did. */
typedef struct tiling {
    int done;      /* tiles run */
    int protected; /* of them protected (GPU or host engine), each counted once by its engine */
} tiling;

/* g in tiles of at most room operand bytes, in order (a k-split's halves one after the other).
 * 0, or -1 while nothing has been written (the caller then runs the whole GEMM another way).
 * Once a tile has run, a later one that cannot run on the GPU runs on the host engine (or, if
 * that refuses it, unprotected on the host BLAS), so that the GEMM completes with each part of C
 * computed exactly once. */
static int offload_tiles(const blasft_gemm *g, const blasft_config *cfg, double room, tiling *t)
{
    char d = operand_bytes(g) > room ? split_dim(g) : 0;
    if (!d) {
        int rc = offload_call(g, cfg);
        if (rc != 0 && t->done == 0)
            return -1;
        t->done++;
        if (rc == 0 || host_part(g, cfg))
            t->protected++;
        return 0;
    }
    blasft_gemm t1, t2;
    split(g, d, &t1, &t2);
    if (offload_tiles(&t1, cfg, room, t) != 0)
        return -1;
    return offload_tiles(&t2, cfg, room, t);
}

static int offload_on_device(const blasft_gemm *g, const blasft_config *cfg)
{
    blasft_cache_stats st;
    blasft_cache_get_stats(cache, &st);
    if (operand_bytes(g) <= (double)st.budget_bytes)
        return offload_call(g, cfg);
    /* larger than the budget (BLASFT_DEVICE_MEM, or the default share of the device's memory):
     * tiles of at most half of it, so that one tile's operands fit beside what other threads
     * hold */
    tiling t = {0, 0};
    int rc = offload_tiles(g, cfg, 0.5 * (double)st.budget_bytes, &t);
    /* one call, one GEMM in the report, however many tiles it took: protected when every tile
     * was (each protected tile counted itself), else unprotected */
    if (rc == 0 && g->k > 0 && t.protected > 0) {
        int keep = t.protected == t.done ? 1 : 0;
        blasft_stat_add(BLASFT_STAT_PROTECTED_GEMMS, (uint64_t)-(int64_t)(t.protected - keep));
        if (!keep)
            blasft_stat_add(BLASFT_STAT_UNPROTECTED_GEMMS, 1);
    }
    return rc;
}

int blasft_offload_gemm(const blasft_gemm *g, const blasft_config *cfg)
{
    /* a forked child's cache describes its parent's device memory: never used */
    if (!blasft_gpu_available())
        return -1;
    pthread_once(&offload_once, offload_init);
    if (!cache)
        return -1;
    /* the caller may have made another GPU current for its own work: the GEMM runs where its
     * copies live, and the caller's device is current again on return */
    int caller_device = -1;
    const cudaError_t pending = blasft_err_pending(); /* the application's, if any */
    if (cudaGetDevice(&caller_device) != cudaSuccess ||
        (caller_device != offload_device && cudaSetDevice(offload_device) != cudaSuccess)) {
        blasft_err_restore(pending);
        return -1;
    }
    /* this thread's calls are the library's own, on its own streams: they neither join nor
     * disturb a graph that some thread of the application captures (in the default global
     * mode the allocations and synchronisations would be refused, and could end that capture) */
    enum cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
    cudaThreadExchangeStreamCaptureMode(&mode);
    remake_after_reset();
    int rc = cache ? offload_on_device(g, cfg) : -1;
    cudaThreadExchangeStreamCaptureMode(&mode);
    if (caller_device != offload_device)
        cudaSetDevice(caller_device);
    blasft_err_restore(pending);
    return rc;
}

int blasft_offload_cache_stats(blasft_cache_stats *out)
{
    if (!cache)
        return -1;
    blasft_cache_get_stats(cache, out);
    return 0;
}
