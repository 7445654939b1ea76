#include "consistency/offload_model.h"

#include "config.h"

#include <unistd.h>

/* Defaults, fitted to the H200 machine's measurements (docs/offload-benchmark.md, "Auto
 * dispatch"): GPU GEMM 50 TFLOP/s (cuBLAS DGEMM n = 8192: 55.8; the engine adds ~5 %), the same
 * for FP32; transfers 30 GB/s effective (pipelined copies through the staging slots, partly
 * overlapped with the GEMM: the fit over n = 1024 .. 16384 gives 21 .. 90 GB/s, low at small n);
 * 0.3 ms per call (launches, synchronisation, the first and last tile). Host: 100 GFLOP/s (FP64)
 * or 200 (FP32) per online core, above what an AVX-512 core sustains in OpenBLAS (the H200
 * machine's 16 cores: 0.59 TFLOP/s DGEMM at n = 8192) and far above the protected host engine
 * (0.2 TFLOP/s there), so that until the first host GEMM is measured a close call stays on the
 * host. */
#define GPU_FLOPS 50e12
#define XFER_BYTES_PER_S 30e9
#define GPU_FIXED_S 0.3e-3
#define HOST_FLOPS_PER_CORE_D 100e9

/* per type: measured host rate (0: none yet); the GPU's measured / predicted (0: none yet) */
static double host_rate[4];
static double gpu_scale;

static double load(double *slot)
{
    double v;
    __atomic_load(slot, &v, __ATOMIC_RELAXED);
    return v;
}

static int is_complex(blasft_type t) { return t == BLASFT_TYPE_C || t == BLASFT_TYPE_Z; }

double blasft_model_flops(const blasft_gemm *g)
{
    return (is_complex(g->type) ? 8.0 : 2.0) * (double)g->m * (double)g->n * (double)g->k;
}

static double host_rate_of(blasft_type t)
{
    double r = load(&host_rate[t]);
    if (r > 0)
        return r;
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    int single = t == BLASFT_TYPE_S || t == BLASFT_TYPE_C;
    return (double)(cores > 0 ? cores : 1) * HOST_FLOPS_PER_CORE_D * (single ? 2 : 1);
}

double blasft_model_host_seconds(const blasft_gemm *g)
{
    return blasft_model_flops(g) / host_rate_of(g->type);
}

static double gpu_raw_seconds(const blasft_gemm *g)
{
    double ts = blasft_type_size(g->type);
    double a = (double)g->m * (double)g->k, b = (double)g->k * (double)g->n,
           c = (double)g->m * (double)g->n;
    int beta = g->beta[0] != 0.0 || g->beta[1] != 0.0;
    double in = ts * (a + b + (beta ? c : 0)), out = ts * c;
    return GPU_FIXED_S + (in + out) / XFER_BYTES_PER_S + blasft_model_flops(g) / GPU_FLOPS;
}

double blasft_model_gpu_seconds(const blasft_gemm *g)
{
    double s = load(&gpu_scale);
    return gpu_raw_seconds(g) * (s > 0 ? s : 1.0);
}

/* moving averages with weight 1/2 for the newest measurement: follows a change (other load on
 * the machine, operands now cached) within a few calls; races between threads lose an update,
 * never corrupt one (each is one aligned double) */
static void update(double *slot, double v)
{
    double old = load(slot), nv = old > 0 ? 0.5 * (old + v) : v;
    __atomic_store(slot, &nv, __ATOMIC_RELAXED);
}

void blasft_model_host_ran(const blasft_gemm *g, double seconds)
{
    double f = blasft_model_flops(g);
    if (f >= BLASFT_MODEL_MIN_TIMED_FLOPS && seconds > 0)
        update(&host_rate[g->type], f / seconds);
}

void blasft_model_gpu_ran(const blasft_gemm *g, double seconds)
{
    double f = blasft_model_flops(g);
    if (f < BLASFT_MODEL_MIN_TIMED_FLOPS || seconds <= 0)
        return;
    double s = seconds / gpu_raw_seconds(g);
    /* bounded: one odd call (first use, page faults) must not lock the model to one side */
    update(&gpu_scale, s < 0.25 ? 0.25 : s > 8 ? 8 : s);
}
