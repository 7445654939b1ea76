#include "offload.h"

#include "blasft_gpu.h"
#include "consistency/cache.h"
#include "log.h"
#include "offload_backend.h"

#include <cuda_runtime_api.h>
#include <pthread.h>

static blasft_devmem *backend;
static blasft_cache *cache;
static pthread_once_t offload_once = PTHREAD_ONCE_INIT;

static void offload_init(void)
{
    if (!blasft_gpu_available())
        return;
    const blasft_config *s = blasft_cfg();
    backend = blasft_offload_backend_create(s->staging);
    if (!backend)
        return;
    blasft_cache_opts o = {s->cache, s->device_mem, s->hash_threads, NULL};
    cache = blasft_cache_create(backend, &o);
}

static int64_t at_least1(int64_t v) { return v > 1 ? v : 1; }

static int beta_is_zero(const blasft_gemm *g) { return g->beta[0] == 0.0 && g->beta[1] == 0.0; }

int blasft_offload_gemm(const blasft_gemm *g, const blasft_config *cfg)
{
    pthread_once(&offload_once, offload_init);
    if (!cache)
        return -1;
    static _Thread_local blasft_gpu_ctx *ctx;
    if (!ctx && !(ctx = blasft_gpu_ctx_create(NULL)))
        return -1;
    blasft_cache_key ka = {g->a, g->type, blasft_gemm_a_rows(g), blasft_gemm_a_cols(g), g->lda};
    blasft_cache_key kb = {g->b, g->type, blasft_gemm_b_rows(g), blasft_gemm_b_cols(g), g->ldb};
    blasft_cache_key kc = {g->c, g->type, g->m, g->n, g->ldc};
    blasft_cache_ref ra, rb, rc;
    unsigned cflags = BLASFT_CACHE_WRITE | (beta_is_zero(g) ? BLASFT_CACHE_NO_LOAD : 0);
    if (blasft_cache_acquire(cache, &ka, 0, &ra) != 0)
        return -1;
    if (blasft_cache_acquire(cache, &kb, 0, &rb) != 0) {
        blasft_cache_release(cache, &ra, 0);
        return -1;
    }
    if (blasft_cache_acquire(cache, &kc, cflags, &rc) != 0) {
        blasft_cache_release(cache, &ra, 0);
        blasft_cache_release(cache, &rb, 0);
        return -1;
    }
    /* the scalars in the GEMM's type: real part first, so one buffer serves every type */
    float sf[2][2] = {{(float)g->alpha[0], (float)g->alpha[1]}, {(float)g->beta[0], (float)g->beta[1]}};
    int single = g->type == BLASFT_TYPE_S || g->type == BLASFT_TYPE_C;
    blasft_gpu_gemm dg = {
        .type = g->type, .transa = g->transa, .transb = g->transb,
        .m = g->m, .n = g->n, .k = g->k,
        .alpha = single ? (const void *)sf[0] : (const void *)g->alpha,
        .a = ra.data, .lda = at_least1(ka.rows),
        .b = rb.data, .ldb = at_least1(kb.rows),
        .beta = single ? (const void *)sf[1] : (const void *)g->beta,
        .c = rc.data, .ldc = at_least1(g->m),
        .scalars_on_device = 0, .routine = g->routine,
    };
    blasft_gpu_params p;
    blasft_gpu_params_from_cfg(&p, cfg);
    int rc_run = blasft_gpu_gemm_run(ctx, &dg, &p);
    /* the engine returns without waiting; the copy back needs the result */
    if (rc_run == 0 && cudaDeviceSynchronize() != cudaSuccess)
        rc_run = -2;
    if (rc_run == 0 && blasft_cache_download(cache, &rc) != 0)
        rc_run = -2;
    blasft_cache_release(cache, &ra, 0);
    blasft_cache_release(cache, &rb, 0);
    /* on failure the device C is unknown: drop it as written but not downloaded would write it
     * back, so it is released as unchanged and the host C (untouched) stays the truth */
    blasft_cache_release(cache, &rc, rc_run == 0 ? BLASFT_CACHE_DEVICE_WROTE : 0);
    if (rc_run != 0) {
        blasft_cache_mark_host_changed(cache, g->c, (size_t)((g->n - 1) * g->ldc + g->m) *
                                                        (size_t)blasft_type_size(g->type));
        static int warned;
        blasft_log_once(&warned, BLASFT_LOG_WARN, "an offloaded GEMM failed on the GPU and runs "
                                                  "on the host");
        return -1;
    }
    return 0;
}

int blasft_offload_cache_stats(blasft_cache_stats *out)
{
    if (!cache)
        return -1;
    blasft_cache_get_stats(cache, out);
    return 0;
}
