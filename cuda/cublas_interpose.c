/* The cuBLAS interposer's machinery: the real cuBLAS, the thread-local re-entry guard, the
 * per-thread cache of GPU engine contexts (one per device and stream), and the decision whether
 * a call runs protected. See cublas_interpose.h and docs/cublas-interpose.md. */
#include "cublas_interpose.h"

#include "abft/abft_inject.h"
#include "blasft_gpu.h"
#include "config.h"
#include "cuda_errors.h"
#include "gpu_cublas.h"
#include "gpu_debug.h"
#include "graph_hold.h"
#include "log.h"

#include <cuda_runtime_api.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stddef.h>

/* BLASFT_CUBLAS=off passes every cuBLAS call through untouched. */
static int interposer_enabled(void) { return blasft_cfg()->cublas; }

/* A benchmark switch (blasft_cublas_bypass): while set, calls go straight to cuBLAS unrecorded,
 * so plain and protected calls can be interleaved in one process. */
static int bypass;

BLASFT_API int blasft_cublas_bypass(int on);

/* Sets the bypass (nonzero: on); returns the previous setting. */
int blasft_cublas_bypass(int on)
{
    return __atomic_exchange_n(&bypass, on != 0, __ATOMIC_RELAXED);
}

/* ---- the real cuBLAS: the instance gpu_cublas.c found for the engine ---- */

static blasft_cublas_real real;
static const blasft_cublas_real *real_ok;
static pthread_once_t real_once = PTHREAD_ONCE_INIT;

static void resolve_real(void)
{
    if (!blasft_cublas_sym("cublasCreate_v2")) {
        blasft_log(BLASFT_LOG_ERROR, "cuBLAS interposer: no real cuBLAS found");
        return;
    }
    union { void *p; __typeof__(real.get_stream) f; } gs = {.p = blasft_cublas_sym("cublasGetStream_v2")};
    union { void *p; __typeof__(real.get_pointer_mode) f; } gp = {
        .p = blasft_cublas_sym("cublasGetPointerMode_v2")};
    union { void *p; __typeof__(real.get_math_mode) f; } gm = {
        .p = blasft_cublas_sym("cublasGetMathMode")};
    real.get_stream = gs.f;
    real.get_pointer_mode = gp.f;
    real.get_math_mode = gm.f;
    static const struct { size_t off; const char *name; } syms[] = {
#define SYM(field, sym) {offsetof(blasft_cublas_real, field), #sym},
        BLASFT_CUBLAS_GEMMS(SYM)
#undef SYM
    };
    for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++)
        *(void **)((char *)&real + syms[i].off) = blasft_cublas_sym(syms[i].name);
    if (!real.get_stream || !real.get_pointer_mode || !real.get_math_mode)
        blasft_log(BLASFT_LOG_WARN, "cuBLAS interposer: cuBLAS lacks its handle queries: calls "
                                    "pass through unprotected");
    real_ok = &real;
}

const blasft_cublas_real *blasft_cublas_real_api(void)
{
    pthread_once(&real_once, resolve_real);
    return real_ok;
}

/* Protection needs the handle queries and a usable engine; the engine's cuBLAS is the same
 * instance as the functions above (one finder, gpu_cublas.c). */
static int engine_ok;
static pthread_once_t engine_once = PTHREAD_ONCE_INIT;

static void check_engine(void)
{
    const blasft_cublas_real *r = blasft_cublas_real_api();
    engine_ok = r && r->get_stream && r->get_pointer_mode && r->get_math_mode &&
                blasft_gpu_available();
}

/* ---- re-entry guard ---- */

static __thread int guard;

int blasft_cublas_untouched(void)
{
    return guard > 0 || !interposer_enabled() || __atomic_load_n(&bypass, __ATOMIC_RELAXED);
}

void blasft_cublas_pass_begin(void) { guard++; }

void blasft_cublas_pass_end(blasft_cublas_call *c)
{
    guard--;
    if (c->nested)
        return;
    blasft_call_record(c->stat, BLASFT_WHERE_GPU, c->t0 ? blasft_now_ns() - c->t0 + 1 : 0);
    if (c->counted)
        blasft_stat_add(BLASFT_STAT_UNPROTECTED_GEMMS, (uint64_t)c->batch);
}

/* ---- engine contexts: one per thread, device and stream (a context is single-threaded) ---- */

enum { CACHE_SLOTS = 8 };
typedef struct ctx_slot {
    blasft_gpu_ctx *ctx;
    uint64_t ctx_id; /* the device's CUDA context then (blasft_gpu_context_id) */
    int device;
    cudaStream_t stream;
    uint64_t used;
    /* the shape last reserved for (the workspace only grows): a loop of equal GEMMs skips the
     * engine's layout computation */
    blasft_type rtype;
    int64_t rm, rn, rk;
    int rkeep;
    graph_hold *hold; /* made when a protected GEMM is captured with it (graph_hold.h) */
} ctx_slot;
static __thread ctx_slot cache[CACHE_SLOTS];
static __thread uint64_t cache_tick;

/* Frees slot s's context: destroyed where its device's context is the one it was made in (the
 * device waited for, not its stream, which may be gone), forgotten (host memory only) where the
 * application has reset that device since. One that a graph may still replay is released only
 * once its graphs are gone (graph_hold.h). The current device is the same again on return. */
static void release_slot(ctx_slot *s)
{
    if (s->hold)
        graph_hold_retire(s->hold, 0);
    else
        blasft_gpu_ctx_release(s->ctx, s->device, 0);
    s->ctx = NULL;
    s->hold = NULL;
}

/* The contexts of a thread that ends are released (an application that starts a thread per
 * task would otherwise leave handles and workspace behind for each): a key whose destructor
 * runs at the thread's end, while its thread-local slots are still there. */
static pthread_key_t slots_key;
static pthread_once_t slots_key_once = PTHREAD_ONCE_INIT;
static int slots_key_ok;

static void slots_end(void *unused)
{
    (void)unused;
    for (int i = 0; i < CACHE_SLOTS; i++)
        if (cache[i].ctx)
            release_slot(&cache[i]);
}

static void slots_key_init(void) { slots_key_ok = pthread_key_create(&slots_key, slots_end) == 0; }

static ctx_slot *context_for(int device, cudaStream_t stream, int capturing)
{
    /* after a reset of the device (cudaDeviceReset), its contexts' streams, handles and memory
     * are gone, and their addresses may be the application's allocations now: given up */
    const uint64_t cid = blasft_gpu_context_id();
    for (int i = 0; i < CACHE_SLOTS; i++)
        if (cache[i].ctx && cache[i].device == device && cache[i].ctx_id != cid) {
            if (cache[i].hold)
                graph_hold_retire(cache[i].hold, 1);
            else
                blasft_gpu_ctx_forget(cache[i].ctx);
            cache[i].ctx = NULL;
            cache[i].hold = NULL;
        }
    if (!capturing)
        graph_hold_reap();
    ctx_slot *lru = &cache[0];
    for (int i = 0; i < CACHE_SLOTS; i++) {
        ctx_slot *s = &cache[i];
        if (s->ctx && s->device == device && s->stream == stream) {
            s->used = ++cache_tick;
            if (capturing || !s->hold)
                return s;
            if (!graph_hold_live(s->hold)) { /* its graphs are gone: the context is free again */
                graph_hold_drop(s->hold);
                s->hold = NULL;
                return s;
            }
            /* a graph may replay this context's workspace: outside the capture the stream gets
             * a context of its own (which may grow), the graphs keep theirs */
            lru = s;
            break;
        }
        if (!s->ctx || (lru->ctx && s->used < lru->used))
            lru = s;
    }
    /* evicting synchronises: never while the application captures; creating only allocates
     * (cudaMalloc, cudaHostAlloc, handles: no synchronisation, nothing captured), so a free slot
     * takes a new context even then */
    if (capturing && lru->ctx)
        return NULL;
    pthread_once(&slots_key_once, slots_key_init);
    if (!slots_key_ok || pthread_setspecific(slots_key, cache) != 0)
        return NULL; /* a context that could not be released at the thread's end */
    if (lru->ctx)
        release_slot(lru);
    *lru = (ctx_slot){.ctx = blasft_gpu_ctx_create((void *)stream), .ctx_id = cid,
                      .device = device, .stream = stream, .used = ++cache_tick};
    return lru->ctx ? lru : NULL;
}

BLASFT_API void blasft_cublas_graph_counts(uint64_t *captures, uint64_t *replays);

/* The engine's own graphs (BLASFT_GPU_GRAPHS) made and replayed so far on the calling thread's
 * contexts. Test hook. */
void blasft_cublas_graph_counts(uint64_t *captures, uint64_t *replays)
{
    *captures = *replays = 0;
    for (int i = 0; i < CACHE_SLOTS; i++) {
        if (!cache[i].ctx)
            continue;
        uint64_t c, r;
        int cached, priority;
        blasft_gpu_debug_graphs(cache[i].ctx, &c, &r, &cached, &priority);
        *captures += c;
        *replays += r;
    }
}

/* ---- planted faults (tests): a bit of C flipped after the main GEMM, before the check ---- */

enum { PLANT_MAX = 16 };
typedef struct plant {
    blasft_gpu_ctx *ctx;
    int64_t row, col;     /* the element, clamped into C */
    int size, bit;        /* size: of one real number as the caller stores it (2, 4 or 8) */
    int as_float;         /* the checked C holds the caller's floats as doubles (promotion) */
    int half_kind;        /* a 16-bit C (1 half, 2 bfloat16), checked as floats (gpu_lowp.cu) */
    unsigned char *pinned; /* the number's bytes on their way through the host */
} plant;
static plant plants[PLANT_MAX];
static int plants_armed; /* plants[0 .. armed) waiting, taken from the top */
static int64_t plant_row, plant_col;
static pthread_mutex_t plant_lock = PTHREAD_MUTEX_INITIALIZER;

BLASFT_API int blasft_cublas_plant_fault(int count, int64_t row, int64_t col, int bit);

/* Arms a flip of `bit` of C(row, col) (clamped into C) in each of the next `count` protected
 * GEMMs of the interposer. Test hook: returns 0, or -1 if pinned memory is not available. */
int blasft_cublas_plant_fault(int count, int64_t row, int64_t col, int bit)
{
    if (count < 0 || count > PLANT_MAX || bit < 0 || bit > 63)
        return -1;
    pthread_mutex_lock(&plant_lock);
    int rc = 0;
    /* pinned memory goes with a device reset: then made again */
    static uint64_t pinned_in;
    const uint64_t cid = blasft_gpu_context_id();
    if (cid != pinned_in)
        for (int i = 0; i < PLANT_MAX; i++)
            plants[i].pinned = NULL;
    pinned_in = cid;
    for (int i = 0; i < count && !rc; i++)
        if (!plants[i].pinned && cudaHostAlloc((void **)&plants[i].pinned, 8, 0) != cudaSuccess)
            rc = -1;
    if (!rc) {
        plants_armed = count;
        plant_row = row;
        plant_col = col;
        for (int i = 0; i < count; i++)
            plants[i].bit = bit;
    }
    pthread_mutex_unlock(&plant_lock);
    return rc;
}

static void CUDART_CB flip_bit(void *arg)
{
    plant *p = arg;
    int bit = p->bit < 8 * p->size ? p->bit : 8 * p->size - 1;
    if (p->as_float) { /* the float's bit, as BLASFT_INJECT flips a promoted GEMM's */
        double v;
        memcpy(&v, p->pinned, 8);
        v = blasft_flip_float_bit_of(v, bit);
        memcpy(p->pinned, &v, 8);
    } else if (p->half_kind) { /* the 16-bit number's bit, in its FP32 value */
        float v;
        memcpy(&v, p->pinned, 4);
        v = blasft_flip_half_bit_of(v, bit, p->half_kind == 2);
        memcpy(p->pinned, &v, 4);
    } else {
        p->pinned[bit / 8] ^= (unsigned char)(1u << (bit % 8));
    }
    blasft_stat_add(BLASFT_STAT_FAULTS_INJECTED, 1);
}

/* The element is looked up in the C that the engine checks: the caller's, or the double copy
 * of a promoted S or C GEMM's tile. */
static void plant_hook(void *stream, void *user)
{
    plant *p = user;
    cudaStream_t s = stream;
    blasft_type t;
    /* a promoted GEMM is checked tile by tile (and chunk by chunk of k): the flip goes into the
     * element's tile, after its last chunk */
    char *at = blasft_gpu_debug_checked_element(p->ctx, p->row, p->col, &t);
    if (!at)
        return;
    const size_t part = (size_t)blasft_type_size(t) / (blasft_type_is_complex(t) ? 2 : 1);
    p->as_float = p->size == 4 && part == 8;
    cudaMemcpyAsync(p->pinned, at, part, cudaMemcpyDeviceToHost, s);
    cudaLaunchHostFunc(s, flip_bit, p);
    cudaMemcpyAsync(at, p->pinned, part, cudaMemcpyHostToDevice, s);
}

/* The next armed plant for a GEMM whose C is given (elements of `size` bytes, numbers of
 * `part` bytes), or NULL. */
static plant *take_plant(blasft_gpu_ctx *ctx, int64_t m, int64_t n, int part)
{
    if (!__atomic_load_n(&plants_armed, __ATOMIC_RELAXED))
        return NULL;
    pthread_mutex_lock(&plant_lock);
    plant *p = NULL;
    if (plants_armed > 0) {
        p = &plants[--plants_armed];
        p->ctx = ctx;
        p->row = plant_row < m ? plant_row : m - 1;
        p->col = plant_col < n ? plant_col : n - 1;
        p->size = part;
        p->half_kind = 0;
    }
    pthread_mutex_unlock(&plant_lock);
    return p;
}

/* Returns the last `count` plants taken (a call that did not run after all). */
static void untake_plants(int count)
{
    if (count <= 0)
        return;
    pthread_mutex_lock(&plant_lock);
    plants_armed += count;
    pthread_mutex_unlock(&plant_lock);
}

/* ---- the decision ---- */

static int64_t max1(int64_t x) { return x > 1 ? x : 1; }

static int valid_op(cublasOperation_t t)
{
    return t == CUBLAS_OP_N || t == CUBLAS_OP_T || t == CUBLAS_OP_C;
}

/* The checks cuBLAS makes; an invalid call goes to the real cuBLAS for its status code. */
int blasft_cublas_valid(const blasft_cublas_call *c)
{
    int64_t ar = c->transa == CUBLAS_OP_N ? c->m : c->k;
    int64_t br = c->transb == CUBLAS_OP_N ? c->k : c->n;
    return c->handle && valid_op(c->transa) && valid_op(c->transb) && c->m >= 0 && c->n >= 0 &&
           c->k >= 0 && c->batch >= 0 && c->lda >= max1(ar) && c->ldb >= max1(br) &&
           c->ldc >= max1(c->m) && c->alpha && c->beta;
}

/* the engine reads 'C' as 'T' for real types */
static char op_letter(cublasOperation_t t)
{
    return t == CUBLAS_OP_N ? 'N' : t == CUBLAS_OP_C ? 'C' : 'T';
}

int blasft_cublas_host_scalars(cublasHandle_t handle)
{
    const blasft_cublas_real *r = blasft_cublas_real_api();
    cublasPointerMode_t pm = CUBLAS_POINTER_MODE_DEVICE;
    return r && r->get_pointer_mode && handle &&
           r->get_pointer_mode(handle, &pm) == CUBLAS_STATUS_SUCCESS &&
           pm == CUBLAS_POINTER_MODE_HOST;
}

int blasft_cublas_host_zero(blasft_type t, const void *beta)
{
    switch (t) {
    case BLASFT_TYPE_S: return *(const float *)beta == 0.0f;
    case BLASFT_TYPE_D: return *(const double *)beta == 0.0;
    case BLASFT_TYPE_C: return ((const float *)beta)[0] == 0.0f && ((const float *)beta)[1] == 0.0f;
    default: return ((const double *)beta)[0] == 0.0 && ((const double *)beta)[1] == 0.0;
    }
}

/* Logs once per reason why calls pass through unprotected (info level: they are counted). */
#define PASS_ONCE(flag, ...) blasft_log_once(&(flag), BLASFT_LOG_INFO, __VA_ARGS__)
static int once_math, once_capture_ctx, once_capture_ws, once_capture_hold, once_reserve, once_large,
    once_arrays;
/* A type (or variant) without a protected path is no passing condition but can be all of a
 * workload's GEMMs (PyTorch's mixed precision): a warning, once */
static int once_type;

/* Grows the slot's context for c's shape (and an old-C copy where keep_old) and notes that shape
 * as the one last reserved there; 0, or nonzero where the memory could not be had. */
static int reserve_shape(ctx_slot *slot, const blasft_cublas_call *c, const blasft_gpu_params *p,
                         int keep_old)
{
    if (blasft_gpu_reserve(slot->ctx, c->type, c->m, c->n, c->k, p, keep_old))
        return -1;
    slot->rtype = c->type;
    slot->rm = c->m;
    slot->rn = c->n;
    slot->rk = c->k;
    slot->rkeep = keep_old;
    return 0;
}

/* The addresses of a batch given by device arrays of pointers, read back on the host (waits for
 * the stream, which may still be writing them): A's, then B's, then C's; NULL on failure. */
static const void **read_arrays(const blasft_cublas_call *c, cudaStream_t stream)
{
    const size_t b = (size_t)c->batch, bytes = b * sizeof(void *);
    const void **p = malloc(3 * bytes);
    if (!p)
        return NULL;
    if (cudaMemcpyAsync(p, c->a_arr, bytes, cudaMemcpyDefault, stream) != cudaSuccess ||
        cudaMemcpyAsync(p + b, c->b_arr, bytes, cudaMemcpyDefault, stream) != cudaSuccess ||
        cudaMemcpyAsync(p + 2 * b, c->c_arr, bytes, cudaMemcpyDefault, stream) != cudaSuccess ||
        cudaStreamSynchronize(stream) != cudaSuccess) {
        free(p);
        return NULL;
    }
    return p;
}

int blasft_cublas_lowp_types(cudaDataType at, cudaDataType bt, cudaDataType ct,
                             cublasComputeType_t comp)
{
    return at == bt && (at == CUDA_R_16F || at == CUDA_R_16BF) && (ct == at || ct == CUDA_R_32F) &&
           (comp == CUBLAS_COMPUTE_32F || comp == CUBLAS_COMPUTE_32F_PEDANTIC);
}

static blasft_lowp_type lowp_of(cudaDataType t)
{
    return t == CUDA_R_16F    ? BLASFT_LOWP_F16
           : t == CUDA_R_16BF ? BLASFT_LOWP_BF16
                              : BLASFT_LOWP_F32;
}

/* Under graph capture: the graph keeps slot's context (and its workspace) for as long as it may
 * be replayed. 0, or nonzero where it cannot (the GEMM then passes through). */
static int hold_for_capture(ctx_slot *slot, int device, cudaStream_t stream)
{
    if ((!slot->hold && !(slot->hold = graph_hold_new(slot->ctx, device))) ||
        graph_hold_capture(slot->hold, stream)) {
        PASS_ONCE(once_capture_hold, "cuBLAS interposer: a GEMM captured on a stream whose "
                  "graph cannot hold its workspace passes through unprotected");
        return -1;
    }
    return 0;
}

/* A half or bfloat16 GEMM, or a batch of them, through the engine's path for them
 * (cuda/gpu_lowp.cu), under capture too; 0 where it does not take it (it passes through), else 1
 * with *status. */
static int protect_lowp(blasft_cublas_call *c, ctx_slot *slot, int device, cudaStream_t stream,
                        int capturing, const blasft_gpu_params *p, int on_dev, cublasMath_t math,
                        cublasStatus_t *status)
{
    blasft_gpu_ctx *ctx = slot->ctx;
    blasft_gpu_lowp l = {
        .g = {.type = BLASFT_TYPE_S, .transa = op_letter(c->transa),
              .transb = op_letter(c->transb), .m = c->m, .n = c->n, .k = c->k,
              .alpha = c->alpha, .a = c->a, .lda = c->lda, .b = c->b, .ldb = c->ldb,
              .beta = c->beta, .c = c->c, .ldc = c->ldc, .scalars_on_device = on_dev,
              .routine = c->stat->name},
        .ab = lowp_of(c->ab_type), .c = lowp_of(c->c_type), .compute = (int)c->compute,
        .algo = (int)c->algo, .math = (int)math, .c_in = c->c_in, .ldc_in = c->ldc_in,
        .bias = c->bias, .count = c->batch, .stride_a = c->stride_a, .stride_b = c->stride_b,
        .stride_c = c->stride_c, .stride_c_in = c->stride_c_in};
    if (c->arrays) {
        l.a_arr = c->a_arr;
        l.b_arr = c->b_arr;
        l.c_arr = c->c_arr;
    }
    if (!blasft_gpu_lowp_supported(&l) || (capturing && hold_for_capture(slot, device, stream)))
        return 0;
    /* planted faults (tests): one per matrix, from the first on; the engine checks an FP32
     * result, a 16-bit C's bit is flipped in its value there */
    void *users[PLANT_MAX];
    int np = 0;
    plant *pl;
    while (np < PLANT_MAX && np < c->batch &&
           (pl = take_plant(ctx, c->m, c->n, l.c == BLASFT_LOWP_F32 ? 4 : 2))) {
        pl->half_kind = l.c == BLASFT_LOWP_F32 ? 0 : l.c == BLASFT_LOWP_F16 ? 1 : 2;
        users[np++] = pl;
    }
    l.plant = plant_hook;
    l.plant_users = users;
    l.nplants = np;
    guard++;
    const int rc = blasft_gpu_gemm_lowp(ctx, &l, p);
    guard--;
    if (rc == -1) {
        untake_plants(np);
        if (capturing)
            PASS_ONCE(once_capture_ws, "cuBLAS interposer: a GEMM captured on a stream whose "
                      "workspace is too small passes through unprotected (run it once before)");
        return 0;
    }
    blasft_call_record(c->stat, BLASFT_WHERE_GPU, c->t0 ? blasft_now_ns() - c->t0 + 1 : 0);
    if (rc)
        blasft_log(BLASFT_LOG_ERROR, "cuBLAS interposer: %s failed in the GPU engine (%d)",
                   c->stat->name, rc);
    *status = rc ? CUBLAS_STATUS_EXECUTION_FAILED : CUBLAS_STATUS_SUCCESS;
    return 1;
}

static int protect(blasft_cublas_call *c, cublasStatus_t *status)
{
    /* nested, or switched off: not even recorded */
    c->nested = blasft_cublas_untouched();
    c->counted = 0;
    c->t0 = 0;
    if (c->nested)
        return 0;
    c->t0 = blasft_timing_enabled() ? blasft_now_ns() : 0;
    if (!blasft_cublas_valid(c) || c->m == 0 || c->n == 0 || c->batch == 0)
        return 0;
    c->counted = 1;
    const blasft_config *cfg = blasft_cfg();
    if (cfg->mode == BLASFT_MODE_OFF || c->k == 0)
        return 0;
    if (!c->protectable) {
        blasft_log_once(&once_type, BLASFT_LOG_WARN,
                        "cuBLAS interposer: %s passes through unprotected: no thresholds or no "
                        "protected path for its data type, compute type or variant (half and "
                        "bfloat16 with 16-bit compute, integer, TF32 or reduced-precision "
                        "compute, the 3M complex algorithms, cublasLt epilogues other than a "
                        "bias, a bias over a batch); such GEMMs are counted as unprotected in "
                        "the report (warned once)",
                        c->stat && c->stat->name ? c->stat->name : "a GEMM");
        return 0;
    }
    if (c->m > INT32_MAX || c->n > INT32_MAX || c->k > INT32_MAX || c->lda > INT32_MAX ||
        c->ldb > INT32_MAX || c->ldc > INT32_MAX) {
        PASS_ONCE(once_large, "cuBLAS interposer: dimensions over 2^31-1 pass through unprotected");
        return 0;
    }
    pthread_once(&engine_once, check_engine);
    /* in a child forked after CUDA started, cuBLAS itself reports the call's failure */
    if (!engine_ok || !blasft_gpu_available())
        return 0;
    const blasft_cublas_real *r = blasft_cublas_real_api();
    cublasMath_t math = CUBLAS_DEFAULT_MATH; /* cublasLt: the compute type says it (the shim) */
    cublasPointerMode_t pm = c->lt_on_device ? CUBLAS_POINTER_MODE_DEVICE : CUBLAS_POINTER_MODE_HOST;
    cudaStream_t stream = c->lt_stream;
    if (!c->lt && (r->get_math_mode(c->handle, &math) != CUBLAS_STATUS_SUCCESS ||
                   r->get_pointer_mode(c->handle, &pm) != CUBLAS_STATUS_SUCCESS ||
                   r->get_stream(c->handle, &stream) != CUBLAS_STATUS_SUCCESS))
        return 0; /* the real call reports the handle's problem */
    /* thresholds model IEEE products in the data type: TF32, emulation and reduced-precision
     * tensor-op modes are not covered yet */
    cublasMath_t base = (cublasMath_t)(math & ~CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION);
    if (base != CUBLAS_DEFAULT_MATH && base != CUBLAS_PEDANTIC_MATH) {
        /* like a type without thresholds (PyTorch's allow_tf32 sets it): a warning */
        blasft_log_once(&once_math, BLASFT_LOG_WARN,
                        "cuBLAS interposer: GEMMs on a handle in math mode %d (TF32, emulated or "
                        "reduced-precision tensor ops: no thresholds) pass through unprotected; "
                        "such GEMMs are counted as unprotected in the report (warned once)",
                        (int)math);
        return 0;
    }
    int device = 0;
    enum cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
    if (cudaGetDevice(&device) != cudaSuccess || cudaStreamIsCapturing(stream, &cs) != cudaSuccess)
        return 0;
    const int capturing = cs != cudaStreamCaptureStatusNone;
    if (c->arrays && (!c->a_arr || !c->b_arr || !c->c_arr))
        return 0;
    ctx_slot *slot = context_for(device, stream, capturing);
    if (!slot) {
        if (capturing)
            PASS_ONCE(once_capture_ctx, "cuBLAS interposer: a GEMM captured on a stream without "
                      "a context (the thread's %d all in use, or none could be made) passes "
                      "through unprotected", CACHE_SLOTS);
        return 0;
    }
    blasft_gpu_ctx *ctx = slot->ctx;
    blasft_gpu_params p;
    blasft_gpu_params_from_cfg(&p, cfg);
    const int on_dev = pm == CUBLAS_POINTER_MODE_DEVICE;
    if (c->lowp)
        return protect_lowp(c, slot, device, stream, capturing, &p, on_dev, base, status);
    const size_t ts = (size_t)blasft_type_size(c->type);
    const int part = blasft_type_is_complex(c->type) ? (int)ts / 2 : (int)ts;
    /* cublasLt's bias (the shim protects one only with host scalars): with beta 0 the engine
     * takes it as the old C repeated over the columns (c_vector), with beta 1; otherwise the
     * GEMM adds with beta 1 to D prepared as bias + beta C */
    static const float one_f = 1.0f;
    static const double one_d = 1.0;
    const int bias_vector = c->bias && c->beta && blasft_cublas_host_zero(c->type, c->beta);
    const void *beta = c->bias ? (c->type == BLASFT_TYPE_S ? (const void *)&one_f : (const void *)&one_d)
                               : c->beta;
    blasft_gpu_gemm g = {.type = c->type, .transa = op_letter(c->transa),
                         .transb = op_letter(c->transb), .m = c->m, .n = c->n, .k = c->k,
                         .alpha = c->alpha, .a = c->a, .lda = c->lda, .b = c->b, .ldb = c->ldb,
                         .beta = beta, .c = c->c, .ldc = c->ldc, .scalars_on_device = on_dev,
                         .routine = c->stat->name, .c_vector = bias_vector ? c->bias : NULL};
    /* the old C is kept where blocks may be recomputed and beta may be nonzero */
    const int keep_old = (on_dev || !blasft_cublas_host_zero(c->type, beta)) && !bias_vector &&
                         p.mode == BLASFT_MODE_CORRECT && p.on_error == BLASFT_ON_ERROR_RECOMPUTE;
    /* a batch of matrices up to 2^30 in m n k: one batched GEMM, one check of them all (under
     * capture where its buffer need not grow) */
    if (c->batch > 1 && !c->c_in && !c->bias) {
        blasft_gpu_batch bt = {.g = g, .count = c->batch, .stride_a = c->stride_a,
                               .stride_b = c->stride_b, .stride_c = c->stride_c};
        if (c->arrays) {
            bt.a_arr = (const void *const *)c->a_arr;
            bt.b_arr = (const void *const *)c->b_arr;
            bt.c_arr = (void *const *)c->c_arr;
        }
        if (blasft_gpu_batch_fused(&bt, &p) &&
            (!capturing || !hold_for_capture(slot, device, stream))) {
            /* planted faults (tests): one per matrix, from the first on */
            void *users[PLANT_MAX];
            int np = 0;
            while (np < PLANT_MAX && np < c->batch && (users[np] = take_plant(ctx, c->m, c->n, part)))
                np++;
            bt.nplants = np;
            bt.plant = plant_hook;
            bt.plant_user = users;
            guard++;
            const int rc = blasft_gpu_gemm_batched(ctx, &bt, &p);
            guard--;
            if (rc == -1) {
                untake_plants(np); /* matrix by matrix below, with the same plants */
            } else {
                blasft_call_record(c->stat, BLASFT_WHERE_GPU,
                                   c->t0 ? blasft_now_ns() - c->t0 + 1 : 0);
                if (rc)
                    blasft_log(BLASFT_LOG_ERROR, "cuBLAS interposer: %s failed in the GPU engine "
                               "(%d)", c->stat->name, rc);
                *status = rc ? CUBLAS_STATUS_EXECUTION_FAILED : CUBLAS_STATUS_SUCCESS;
                return 1;
            }
        }
    }
    /* arrays of pointers outside the batch checked as a whole are read back (read_arrays),
     * which a capture cannot do */
    if (capturing && c->arrays) {
        PASS_ONCE(once_arrays, "cuBLAS interposer: batched GEMMs by arrays of pointers that are "
                  "not checked as a whole pass through unprotected while a stream is captured");
        return 0;
    }
    if (capturing) {
        /* a context with no workspace yet (made for this capture) gets it now: allocations
         * only, nothing to free or wait for */
        if (blasft_gpu_workspace_bytes(ctx) == 0)
            reserve_shape(slot, c, &p, keep_old); /* failing, the check below passes it on */
        if (blasft_gpu_gemm_would_sync(ctx, &g, &p, c->batch)) {
            PASS_ONCE(once_capture_ws, "cuBLAS interposer: a GEMM captured on a stream whose "
                      "workspace is too small passes through unprotected (run it once before)");
            return 0;
        }
        if (hold_for_capture(slot, device, stream))
            return 0;
    } else {
        /* grown here rather than inside the engine so that a failed allocation still lets the
         * call run plain; skipped when this shape was reserved last (the usual loop) */
        if ((slot->rtype != c->type || slot->rm != c->m || slot->rn != c->n || slot->rk != c->k ||
             slot->rkeep < keep_old) &&
            reserve_shape(slot, c, &p, keep_old)) {
            PASS_ONCE(once_reserve, "cuBLAS interposer: no GPU workspace for a "
                      "%lldx%lldx%lld GEMM: passes through unprotected", (long long)c->m,
                      (long long)c->n, (long long)c->k);
            return 0;
        }
    }
    /* cublasLt: D prepared from C (and a bias with beta != 0). Should the engine refuse the call
     * below, the real cublasLtMatmul still computes the right D: it reads C, which this leaves
     * unchanged unless C is D with no bias (then nothing is done). */
    if (c->bias && !bias_vector) {
        if (blasft_gpu_bias_into(c->type, c->m, c->n, c->bias, c->beta,
                                 c->c_in ? c->c_in : c->c, c->c_in ? c->ldc_in : c->ldc, c->c,
                                 c->ldc, stream))
            return 0;
    } else if (c->c_in && (on_dev || !blasft_cublas_host_zero(c->type, c->beta))) {
        if (cudaMemcpy2DAsync(c->c, ts * (size_t)c->ldc, c->c_in, ts * (size_t)c->ldc_in,
                              ts * (size_t)c->m, (size_t)c->n, cudaMemcpyDeviceToDevice,
                              stream) != cudaSuccess)
            return 0;
    }
    const void **ptrs = NULL;
    if (c->arrays && !(ptrs = read_arrays(c, stream)))
        return 0;
    int rc = 0;
    int64_t i = 0;
    guard++; /* the engine has its own table; this keeps any cuBLAS-internal call away too */
    int hooked = 0;
    for (; i < c->batch && !rc; i++) {
        if (ptrs) {
            g.a = ptrs[i];
            g.b = ptrs[c->batch + i];
            g.c = (void *)ptrs[2 * c->batch + i];
        } else {
            g.a = (const char *)c->a + ts * (size_t)(i * c->stride_a);
            g.b = (const char *)c->b + ts * (size_t)(i * c->stride_b);
            g.c = (char *)c->c + ts * (size_t)(i * c->stride_c);
        }
        plant *pl = take_plant(ctx, c->m, c->n, part);
        if (pl || hooked)
            blasft_gpu_set_fault_hook(ctx, pl ? plant_hook : NULL, pl);
        hooked = pl != NULL;
        blasft_gpu_set_matrix(ctx, c->batch > 1 ? i : -1);
        rc = blasft_gpu_gemm_run(ctx, &g, &p);
    }
    blasft_gpu_set_matrix(ctx, -1);
    if (hooked)
        blasft_gpu_set_fault_hook(ctx, NULL, NULL);
    guard--;
    free(ptrs);
    if (rc == -1 && i == 1)
        return 0; /* the engine refused the shape before enqueueing anything */
    blasft_call_record(c->stat, BLASFT_WHERE_GPU, c->t0 ? blasft_now_ns() - c->t0 + 1 : 0);
    if (rc) {
        blasft_log(BLASFT_LOG_ERROR, "cuBLAS interposer: %s failed in the GPU engine (%d)",
                   c->stat->name, rc);
        *status = CUBLAS_STATUS_EXECUTION_FAILED;
    } else {
        *status = CUBLAS_STATUS_SUCCESS;
    }
    return 1;
}

int blasft_cublas_protect(blasft_cublas_call *c, cublasStatus_t *status)
{
    /* the engine's own calls (contexts, workspace, its streams) are relaxed towards a graph that
     * another thread of the application captures: in the default global mode they would be
     * refused and could end that capture */
    const cudaError_t pending = blasft_err_pending(); /* and its last error left as it was */
    enum cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
    cudaThreadExchangeStreamCaptureMode(&mode);
    const int r = protect(c, status);
    cudaThreadExchangeStreamCaptureMode(&mode);
    blasft_err_restore(pending);
    /* which of a program's GEMMs are protected (cuSOLVER's, a framework's), one line each */
    blasft_log(BLASFT_LOG_DEBUG, "cuBLAS interposer: %s %c%c %lldx%lldx%lld batch %lld: %s",
               c->stat->name, op_letter(c->transa), op_letter(c->transb), (long long)c->m,
               (long long)c->n, (long long)c->k, (long long)c->batch,
               r ? "protected" : "passes through");
    return r;
}
