#include "gemm.h"

#include "abft/abft_engine.h"
#include "config.h"
#include "consistency/offload_model.h"
#include "hostblas.h"
#include "log.h"
#include "report.h"

#include "blasft_build_config.h"
#if BLASFT_HAVE_CUDA
#include "blasft_gpu.h"
#include "offload.h"
#endif

#include <stddef.h>
#include <string.h>
#include <time.h>

static double now_seconds(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int is_trans(blasft_trans t) { return t == 'N' || t == 'T' || t == 'C'; }

static int64_t max1(int64_t v) { return v > 1 ? v : 1; }

int blasft_gemm_check(const blasft_gemm *g)
{
    if (!is_trans(g->transa))
        return 1;
    if (!is_trans(g->transb))
        return 2;
    if (g->m < 0)
        return 3;
    if (g->n < 0)
        return 4;
    if (g->k < 0)
        return 5;
    if (g->lda < max1(blasft_gemm_a_rows(g)))
        return 8;
    if (g->ldb < max1(blasft_gemm_b_rows(g)))
        return 10;
    if (g->ldc < max1(g->m))
        return 13;
    return 0;
}

/* Whether auto mode sends g to the GPU: above BLASFT_MIN_FLOPS when that is set, else when the
 * offload model (consistency/offload_model.h) predicts it finishes sooner there. */
static int auto_wants_gpu(const blasft_gemm *g, const blasft_config *cfg)
{
    if (cfg->min_flops >= 0)
        return blasft_model_flops(g) >= cfg->min_flops;
    return blasft_model_gpu_seconds(g) < blasft_model_host_seconds(g);
}

/* The GPU runs a host-memory GEMM when asked to (BLASFT_DEVICE=gpu) or when auto mode wants it.
 * Returns 0 if the GEMM ran on the GPU. */
static int try_gpu(const blasft_gemm *g, const blasft_config *cfg)
{
#if BLASFT_HAVE_CUDA
    if (cfg->device == BLASFT_DEVICE_HOST)
        return -1;
    if (cfg->device == BLASFT_DEVICE_AUTO && !auto_wants_gpu(g, cfg))
        return -1;
    if (blasft_gpu_forked_child()) /* the host, with its own warning */
        return -1;
    double t0 = now_seconds();
    /* through the consistency layer (its pipelined copies; device copies kept unless
     * BLASFT_CACHE=off), else (when it cannot take this GEMM) the engine's plain copies, else the
     * host */
    if (blasft_offload_gemm(g, cfg) == 0 || blasft_gpu_run_host_gemm(g, cfg) == 0) {
        /* the process's first offloaded call also starts CUDA and the engine (hundreds of ms):
         * not a measure of the next ones */
        static int offloaded;
        if (__atomic_fetch_add(&offloaded, 1, __ATOMIC_RELAXED) > 0)
            blasft_model_gpu_ran(g, now_seconds() - t0);
        return 0;
    }
    static int warned;
    blasft_log_once(&warned, BLASFT_LOG_WARN,
                    "a GEMM could not run on the GPU (no usable device, driver or cuBLAS, out of "
                    "memory, or an unsupported type) and ran on the host; later ones that cannot "
                    "run there do the same without a warning");
    return -1;
#else
    (void)g;
    (void)auto_wants_gpu;
    if (cfg->device == BLASFT_DEVICE_GPU) {
        static int warned;
        blasft_log_once(&warned, BLASFT_LOG_WARN,
                        "BLASFT_DEVICE=gpu, but this libblas_ft was built without CUDA; GEMMs run "
                        "on the host");
    }
    return -1;
#endif
}

/* Set while this thread is inside a GEMM of ours: a host BLAS that calls back into an exported
 * GEMM symbol (netlib CBLAS over Fortran BLAS does) gets the plain host GEMM, never a loop. */
static _Thread_local int gemm_depth;

/* Which of a program's GEMMs ran where, protected or not (BLASFT_LOG=debug), one line each. */
static void log_gemm(const blasft_gemm *g, const char *where)
{
    blasft_log(BLASFT_LOG_DEBUG, "%s %c%c %lldx%lldx%lld: %s", g->routine ? g->routine : "gemm",
               g->transa, g->transb, (long long)g->m, (long long)g->n, (long long)g->k, where);
}

blasft_where blasft_gemm_run(const blasft_gemm *g)
{
    const blasft_config *cfg = blasft_cfg();
    if (gemm_depth > 0 || cfg->mode == BLASFT_MODE_OFF) {
        blasft_host_gemm(g);
        if (gemm_depth == 0) {
            blasft_stat_add(BLASFT_STAT_UNPROTECTED_GEMMS, 1);
            log_gemm(g, "host, unprotected (BLASFT_MODE=off)");
        }
        return BLASFT_WHERE_HOST;
    }
    gemm_depth++;
    if (g->m > 0 && g->n > 0 && try_gpu(g, cfg) == 0) {
        gemm_depth--;
        log_gemm(g, "GPU");
        return BLASFT_WHERE_GPU;
    }
    /* host GEMMs large enough to time feed the auto model's host rate */
    int timed = cfg->device == BLASFT_DEVICE_AUTO &&
                blasft_model_flops(g) >= BLASFT_MODEL_MIN_TIMED_FLOPS;
    double t0 = timed ? now_seconds() : 0;
    blasft_abft_diag d;
    memset(&d, 0, sizeof d);
    const int run = blasft_abft_run(g, cfg, &d, 0);
    if (run != 0) {
        blasft_host_gemm(g);
        blasft_stat_add(BLASFT_STAT_UNPROTECTED_GEMMS, 1);
    }
    if (timed)
        blasft_model_host_ran(g, now_seconds() - t0);
    gemm_depth--;
    /* (no product, k = 0 or alpha = 0: C = beta C, counted unprotected) */
    log_gemm(g, run == 0 && d.protected_run ? "host, protected" : "host, unprotected");
    blasft_abft_diag_free(&d);
    return BLASFT_WHERE_HOST;
}
