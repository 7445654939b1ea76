/* The cuBLAS interposer's machinery: the real cuBLAS, the thread-local re-entry guard, the
 * per-thread cache of GPU engine contexts (one per device and stream), and the decision whether
 * a call runs protected. See cublas_interpose.h and docs/cublas-interpose.md. */
#include "cublas_interpose.h"

#include "blasft_gpu.h"
#include "config.h"
#include "gpu_cublas.h"
#include "gpu_debug.h"
#include "log.h"

#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* BLASFT_CUBLAS=off passes every cuBLAS call through untouched. */
static int interposer_enabled(void) { return blasft_cfg()->cublas; }

/* ---- the real cuBLAS ---- */

static blasft_cublas_real real;
static const blasft_cublas_real *real_ok;
static pthread_once_t real_once = PTHREAD_ONCE_INIT;

static const void *object_base(const void *addr)
{
    Dl_info di;
    return addr && dladdr(addr, &di) ? di.dli_fbase : NULL;
}

/* The cuBLAS instance the application uses, as a dlopen handle of that very object. */
static void *find_cublas(void)
{
    static const char *const sonames[] = {"libcublas.so.13", "libcublas.so.12", "libcublas.so"};
    const void *self = object_base((const void *)&find_cublas);
    /* cublasGetStream_v2 is not ours, so the next definition in the global scope is cuBLAS's */
    void *probe = dlsym(RTLD_NEXT, "cublasGetStream_v2");
    Dl_info di;
    if (probe && dladdr(probe, &di) && di.dli_fbase != self && di.dli_fname) {
        void *h = dlopen(di.dli_fname, RTLD_NOW | RTLD_NOLOAD);
        if (h)
            return h;
    }
    for (size_t i = 0; i < sizeof sonames / sizeof sonames[0]; i++) {
        void *h = dlopen(sonames[i], RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
        if (h)
            return h;
    }
    for (size_t i = 0; i < sizeof sonames / sizeof sonames[0]; i++) {
        void *h = dlopen(sonames[i], RTLD_NOW | RTLD_LOCAL);
        if (h)
            return h;
    }
    return NULL;
}

/* A symbol of h, refused if it resolves into libblas_ft itself. */
static void *real_sym(void *h, const char *name)
{
    void *p = dlsym(h, name);
    if (p && object_base(p) == object_base((const void *)&real_sym)) {
        blasft_log(BLASFT_LOG_ERROR, "cuBLAS interposer: %s resolved to libblas_ft itself", name);
        return NULL;
    }
    return p;
}

static void resolve_real(void)
{
    void *h = find_cublas();
    if (!h) {
        blasft_log(BLASFT_LOG_ERROR, "cuBLAS interposer: no real cuBLAS found");
        return;
    }
    union { void *p; __typeof__(real.get_stream) f; } gs = {.p = real_sym(h, "cublasGetStream_v2")};
    union { void *p; __typeof__(real.get_pointer_mode) f; } gp = {
        .p = real_sym(h, "cublasGetPointerMode_v2")};
    union { void *p; __typeof__(real.get_math_mode) f; } gm = {.p = real_sym(h, "cublasGetMathMode")};
    real.get_stream = gs.f;
    real.get_pointer_mode = gp.f;
    real.get_math_mode = gm.f;
    real.sgemm_v2 = real_sym(h, "cublasSgemm_v2");
    real.dgemm_v2 = real_sym(h, "cublasDgemm_v2");
    real.sgemm_v2_64 = real_sym(h, "cublasSgemm_v2_64");
    real.dgemm_v2_64 = real_sym(h, "cublasDgemm_v2_64");
    real.gemm_ex = real_sym(h, "cublasGemmEx");
    real.gemm_ex_64 = real_sym(h, "cublasGemmEx_64");
    real.sgemm_strided = real_sym(h, "cublasSgemmStridedBatched");
    real.dgemm_strided = real_sym(h, "cublasDgemmStridedBatched");
    real.sgemm_strided_64 = real_sym(h, "cublasSgemmStridedBatched_64");
    real.dgemm_strided_64 = real_sym(h, "cublasDgemmStridedBatched_64");
    real.gemm_strided_ex = real_sym(h, "cublasGemmStridedBatchedEx");
    real.gemm_strided_ex_64 = real_sym(h, "cublasGemmStridedBatchedEx_64");
    real.sgemm_legacy = real_sym(h, "cublasSgemm");
    real.dgemm_legacy = real_sym(h, "cublasDgemm");
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

/* The engine calls cuBLAS through its own table (gpu_cublas.c); protection is only sound if that
 * table is the application's instance, whose handles and streams we are given. */
static int engine_ok;
static pthread_once_t engine_once = PTHREAD_ONCE_INIT;

static void check_engine(void)
{
    const blasft_cublas_real *r = blasft_cublas_real_api();
    if (!r || !r->get_stream || !r->get_pointer_mode || !r->get_math_mode || !blasft_gpu_available())
        return;
    const blasft_cublas_api *e = blasft_cublas();
    if (!e || object_base((const void *)e->sgemm) != object_base(r->sgemm_v2)) {
        blasft_log(BLASFT_LOG_WARN, "cuBLAS interposer: the GPU engine loaded another cuBLAS "
                                    "than the application's: calls pass through unprotected");
        return;
    }
    engine_ok = 1;
}

/* ---- re-entry guard ---- */

static __thread int guard;

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
    int device;
    cudaStream_t stream;
    uint64_t used;
} ctx_slot;
/* Contexts of a thread that ends are not destroyed: the streams they belong to may be gone. */
static __thread ctx_slot cache[CACHE_SLOTS];
static __thread uint64_t cache_tick;

static blasft_gpu_ctx *context_for(int device, cudaStream_t stream, int capturing)
{
    ctx_slot *lru = &cache[0];
    for (int i = 0; i < CACHE_SLOTS; i++) {
        ctx_slot *s = &cache[i];
        if (s->ctx && s->device == device && s->stream == stream) {
            s->used = ++cache_tick;
            return s->ctx;
        }
        if (!s->ctx || (lru->ctx && s->used < lru->used))
            lru = s;
    }
    /* creating allocates and evicting synchronises: never while the application captures */
    if (capturing)
        return NULL;
    if (lru->ctx)
        blasft_gpu_ctx_destroy(lru->ctx);
    lru->ctx = blasft_gpu_ctx_create((void *)stream);
    lru->device = device;
    lru->stream = stream;
    lru->used = ++cache_tick;
    return lru->ctx;
}

/* ---- planted faults (tests): a bit of C flipped after the main GEMM, before the check ---- */

enum { PLANT_MAX = 16 };
typedef struct plant {
    void *elem;           /* device address of the element */
    int size, bit;
    unsigned char *pinned; /* the element's bytes on their way through the host */
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
    int bit = p->size == 4 && p->bit > 31 ? 31 : p->bit;
    p->pinned[bit / 8] ^= (unsigned char)(1u << (bit % 8));
    blasft_stat_add(BLASFT_STAT_FAULTS_INJECTED, 1);
}

static void plant_hook(void *stream, void *user)
{
    plant *p = user;
    cudaStream_t s = stream;
    cudaMemcpyAsync(p->pinned, p->elem, (size_t)p->size, cudaMemcpyDeviceToHost, s);
    cudaLaunchHostFunc(s, flip_bit, p);
    cudaMemcpyAsync(p->elem, p->pinned, (size_t)p->size, cudaMemcpyHostToDevice, s);
}

/* The next armed plant for a GEMM whose C is given, or NULL. */
static plant *take_plant(void *c, int64_t m, int64_t n, int64_t ldc, int size)
{
    if (!__atomic_load_n(&plants_armed, __ATOMIC_RELAXED))
        return NULL;
    pthread_mutex_lock(&plant_lock);
    plant *p = NULL;
    if (plants_armed > 0) {
        p = &plants[--plants_armed];
        int64_t r = plant_row < m ? plant_row : m - 1, col = plant_col < n ? plant_col : n - 1;
        p->elem = (char *)c + (size_t)size * (size_t)(r + col * ldc);
        p->size = size;
    }
    pthread_mutex_unlock(&plant_lock);
    return p;
}

/* ---- the decision ---- */

static int64_t max1(int64_t x) { return x > 1 ? x : 1; }

static int valid_op(cublasOperation_t t)
{
    return t == CUBLAS_OP_N || t == CUBLAS_OP_T || t == CUBLAS_OP_C;
}

/* The checks cuBLAS makes; an invalid call goes to the real cuBLAS for its status code. */
static int valid_call(const blasft_cublas_call *c)
{
    int64_t ar = c->transa == CUBLAS_OP_N ? c->m : c->k;
    int64_t br = c->transb == CUBLAS_OP_N ? c->k : c->n;
    return c->handle && valid_op(c->transa) && valid_op(c->transb) && c->m >= 0 && c->n >= 0 &&
           c->k >= 0 && c->batch >= 0 && c->lda >= max1(ar) && c->ldb >= max1(br) &&
           c->ldc >= max1(c->m) && c->alpha && c->beta;
}

static char op_letter(cublasOperation_t t) { return t == CUBLAS_OP_N ? 'N' : 'T'; }

/* Logs once per reason why calls pass through unprotected (info level: they are counted). */
#define PASS_ONCE(flag, ...) blasft_log_once(&(flag), BLASFT_LOG_INFO, __VA_ARGS__)
static int once_math, once_capture_ctx, once_capture_ws, once_reserve, once_large;

int blasft_cublas_protect(blasft_cublas_call *c, cublasStatus_t *status)
{
    c->nested = guard > 0;
    c->counted = 0;
    c->t0 = 0;
    if (c->nested)
        return 0;
    if (!interposer_enabled()) {
        c->nested = 1; /* switched off: not even recorded */
        return 0;
    }
    c->t0 = blasft_timing_enabled() ? blasft_now_ns() : 0;
    if (!valid_call(c) || c->m == 0 || c->n == 0 || c->batch == 0)
        return 0;
    c->counted = 1;
    const blasft_config *cfg = blasft_cfg();
    if (!c->protectable || cfg->mode == BLASFT_MODE_OFF || c->k == 0)
        return 0;
    if (c->m > INT32_MAX || c->n > INT32_MAX || c->k > INT32_MAX || c->lda > INT32_MAX ||
        c->ldb > INT32_MAX || c->ldc > INT32_MAX) {
        PASS_ONCE(once_large, "cuBLAS interposer: dimensions over 2^31-1 pass through unprotected");
        return 0;
    }
    pthread_once(&engine_once, check_engine);
    if (!engine_ok)
        return 0;
    const blasft_cublas_real *r = blasft_cublas_real_api();
    cublasMath_t math;
    cublasPointerMode_t pm;
    cudaStream_t stream;
    if (r->get_math_mode(c->handle, &math) != CUBLAS_STATUS_SUCCESS ||
        r->get_pointer_mode(c->handle, &pm) != CUBLAS_STATUS_SUCCESS ||
        r->get_stream(c->handle, &stream) != CUBLAS_STATUS_SUCCESS)
        return 0; /* the real call reports the handle's problem */
    /* thresholds model IEEE products in the data type: TF32, emulation and reduced-precision
     * tensor-op modes are not covered yet */
    cublasMath_t base = (cublasMath_t)(math & ~CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION);
    if (base != CUBLAS_DEFAULT_MATH && base != CUBLAS_PEDANTIC_MATH) {
        PASS_ONCE(once_math, "cuBLAS interposer: handle math mode %d passes through unprotected",
                  (int)math);
        return 0;
    }
    int device = 0;
    enum cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
    if (cudaGetDevice(&device) != cudaSuccess || cudaStreamIsCapturing(stream, &cs) != cudaSuccess)
        return 0;
    const int capturing = cs != cudaStreamCaptureStatusNone;
    blasft_gpu_ctx *ctx = context_for(device, stream, capturing);
    if (!ctx) {
        if (capturing)
            PASS_ONCE(once_capture_ctx, "cuBLAS interposer: first GEMM on a stream while it is "
                      "captured passes through unprotected (run one before capturing)");
        return 0;
    }
    blasft_gpu_params p;
    blasft_gpu_params_from_cfg(&p, cfg);
    const int on_dev = pm == CUBLAS_POINTER_MODE_DEVICE;
    const size_t ts = (size_t)blasft_type_size(c->type);
    blasft_gpu_gemm g = {.type = c->type, .transa = op_letter(c->transa),
                         .transb = op_letter(c->transb), .m = c->m, .n = c->n, .k = c->k,
                         .alpha = c->alpha, .a = c->a, .lda = c->lda, .b = c->b, .ldb = c->ldb,
                         .beta = c->beta, .c = c->c, .ldc = c->ldc, .scalars_on_device = on_dev,
                         .routine = c->stat->name};
    if (capturing) {
        if (blasft_gpu_gemm_would_sync(ctx, &g, &p, c->batch)) {
            PASS_ONCE(once_capture_ws, "cuBLAS interposer: a GEMM captured on a stream whose "
                      "workspace is too small passes through unprotected (run it once before)");
            return 0;
        }
    } else {
        int beta_zero = !on_dev && (c->type == BLASFT_TYPE_S ? *(const float *)c->beta == 0.0f
                                                             : *(const double *)c->beta == 0.0);
        int keep_old = !beta_zero && p.mode == BLASFT_MODE_CORRECT &&
                       p.on_error == BLASFT_ON_ERROR_RECOMPUTE;
        if (blasft_gpu_reserve(ctx, c->type, c->m, c->n, c->k, &p, keep_old)) {
            PASS_ONCE(once_reserve, "cuBLAS interposer: no GPU workspace for a %lldx%lldx%lld "
                      "GEMM: passes through unprotected", (long long)c->m, (long long)c->n,
                      (long long)c->k);
            return 0;
        }
    }
    int rc = 0;
    int64_t i = 0;
    guard++; /* the engine has its own table; this keeps any cuBLAS-internal call away too */
    for (; i < c->batch && !rc; i++) {
        g.a = (const char *)c->a + ts * (size_t)(i * c->stride_a);
        g.b = (const char *)c->b + ts * (size_t)(i * c->stride_b);
        g.c = (char *)c->c + ts * (size_t)(i * c->stride_c);
        plant *pl = take_plant(g.c, c->m, c->n, c->ldc, (int)ts);
        blasft_gpu_set_fault_hook(ctx, pl ? plant_hook : NULL, pl);
        rc = blasft_gpu_gemm_run(ctx, &g, &p);
    }
    blasft_gpu_set_fault_hook(ctx, NULL, NULL);
    guard--;
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
