/* Where a host-memory GEMM runs in BLASFT_DEVICE=auto (issue 6): on the GPU when the model
 * predicts it finishes sooner there than on the host (docs/offload-benchmark.md, "Auto dispatch").
 *
 *   host:  t = flops / R_host(type)
 *   GPU:   t = g_scale * (T0 + bytes_in / R_up + flops / R_gpu(type) + bytes_out / R_down)
 * flops = 2mnk (x4 for complex); bytes_in = A + B (+ C when beta != 0), bytes_out = C, all as
 * the sub-matrices' element bytes. Defaults are documented in offload_model.c; R_host is replaced
 * by what host GEMMs of this process measure (their wall time), g_scale by measured / predicted
 * of the process's offloaded GEMMs. The default R_host is set high on purpose: until measured, a
 * close call stays on the host. */
#ifndef BLASFT_OFFLOAD_MODEL_H
#define BLASFT_OFFLOAD_MODEL_H

#include "gemm.h"

/* Predicted seconds of g on the host and on the GPU. */
double blasft_model_host_seconds(const blasft_gemm *g);
double blasft_model_gpu_seconds(const blasft_gemm *g);
/* Measurements of GEMMs that ran (wall seconds), fed back into the model. */
void blasft_model_host_ran(const blasft_gemm *g, double seconds);
void blasft_model_gpu_ran(const blasft_gemm *g, double seconds);
/* Smallest flop count worth timing (shorter calls are dominated by noise and fixed costs). */
double blasft_model_flops(const blasft_gemm *g);
#define BLASFT_MODEL_MIN_TIMED_FLOPS 1e7

#endif
