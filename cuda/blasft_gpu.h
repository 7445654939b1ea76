/* The GPU ABFT GEMM engine (issue 4): protected GEMM of device-resident operands around cuBLAS.
 *
 * C <- alpha * op(A) * op(B) + beta * C, column-major, op(A) m x k, op(B) k x n, all operands in
 * device memory, types S, D, C and Z (complex: checksums with real weights, every part encoded
 * on its own, one threshold per checksum element applied to every part, as the host engine).
 * Checksums, thresholds (PEA "max p"), check, location, correction and block recomputation follow shared/design/method.md and use the per-element arithmetic of
 * src/abft/abft_arith.h, the same the host engine uses.
 *
 * Loading and initialisation: nothing of CUDA or cuBLAS runs before the first call of a function
 * here. The CUDA runtime is linked statically (it finds the driver with dlopen on its first call),
 * cuBLAS is dlopen'ed (gpu_cublas.h): the library loads and works on machines with neither.
 *
 * Streams: all work is enqueued on the context's stream and on a helper stream forked from it
 * and joined back with events (high priority by default; BLASFT_GPU_HELPER_PRIORITY=low|default
 * changes it); a call returns without waiting for the GPU. The outcome counters are copied in the
 * caller's stream order and delivered to blasft_get_stats / the event callback by a host function
 * on the helper stream once the caller's stream has passed the check, so the caller's stream never
 * waits for the host thread (under graph capture the host function is a node of the captured
 * graph that nothing captured later waits for). After cudaDeviceSynchronize (or destroying the
 * context) they are up to date. Events come from the CUDA callback thread, not from the caller's
 * thread.
 *
 * Thresholds: PEA "max p"; with BLASFT_THRESHOLD=proj the column checksums of S and D get PROJ's
 * (cuda/gpu_proj.cu, with a compensated double reference) and the row checksums, which locate,
 * keep PEA's (sea and norm configurations get PEA here). With PEA the
 * reference checksums are computed by cuBLAS in the data type, so the GPU threshold adds the
 * rounding of that reference and of our encodings to the host engine's model (for D the two
 * thresholds agree within 1 %, for S the GPU's is 1.3-2.2x the host's; measured by
 * tests/gpu/test_gpu_kernels.c).
 *
 * Thread safety: a context is used by one thread at a time (one per thread or per stream). */
#ifndef BLASFT_GPU_H
#define BLASFT_GPU_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" { /* the project's C headers have no guards of their own */
#endif
#include "blas_ft.h"
#include "gemm.h"

typedef struct blasft_gpu_ctx blasft_gpu_ctx;

/* 1 if a CUDA device and cuBLAS are usable (initialises CUDA on the first call), else 0; 0 in
 * the child of a fork made after that first call (CUDA does not carry over a fork). */
int blasft_gpu_available(void);

/* 1 in the child of a fork made after this library started CUDA (with one warning, the first
 * time), else 0. */
int blasft_gpu_forked_child(void);

/* The process-unique id of the current device's CUDA context (making the device's primary
 * context current if none is); it changes when the application resets the device
 * (cudaDeviceReset), which frees everything made on it. 0 where the driver cannot tell. */
uint64_t blasft_gpu_context_id(void);

/* A context bound to `stream` (a cudaStream_t; NULL: the legacy default stream) on the current
 * device: two cuBLAS handles, a helper stream, events, pinned counters, the workspace (empty until
 * the first GEMM or blasft_gpu_reserve). NULL if no GPU is usable. */
blasft_gpu_ctx *blasft_gpu_ctx_create(void *stream);
/* Waits for the device (not for the context's stream, which the application may have destroyed
 * already), then frees everything. */
void blasft_gpu_ctx_destroy(blasft_gpu_ctx *ctx);
/* 1 if the device has been reset since ctx was made (called with ctx's device current): its
 * streams, handles and memory are gone, and the engine's entry points refuse it (-2). Such a
 * context is given up with blasft_gpu_ctx_forget, which frees its host memory only (a
 * cudaFree of its old addresses could free the application's new allocations). */
int blasft_gpu_ctx_stale(const blasft_gpu_ctx *ctx);
void blasft_gpu_ctx_forget(blasft_gpu_ctx *ctx);
/* Gives ctx up wherever it is called from (a thread's end): destroyed on `device` (made current
 * for it, the caller's device current again on return), with its stream too if own_stream;
 * forgotten where that device was reset since, or in a child forked after CUDA started. */
void blasft_gpu_ctx_release(blasft_gpu_ctx *ctx, int device, int own_stream);
/* 1 in the child of a fork made after this library started CUDA (no warning), else 0. */
int blasft_gpu_forked(void);
void blasft_gpu_ctx_set_stream(blasft_gpu_ctx *ctx, void *stream);

/* Protection parameters of the GPU engine (from blasft_config, see blasft_gpu_params_from_cfg). */
typedef struct blasft_gpu_params {
    int block_size;         /* BS, 2..1024 */
    int checksums;          /* 1: unweighted (single localization), 2: + weighted (extended) */
    int weights;            /* BLASFT_W_* of the second checksum */
    double omega;           /* PEA threshold factor */
    int pea_p;              /* p of "PEA max p"; the GPU keeps at most 8 (fewer kept is a looser,
                               still valid bound) */
    int pea_block_lists;    /* 0: top-p lists per row of op(A) / column of op(B) (method.md);
                               1: per block of BS rows / columns (the block envelope's lists, which
                               the thresholds need anyway): a looser but valid y that saves one
                               read of A and of B (BLASFT_GPU_PEA_LISTS=block) */
    int rows_on_demand;     /* 1: the row side of the check (op(B)'s encoding, the reference
                               op(A) x encoding, C's row sums) only for the blocks whose column
                               checksums flagged (BLASFT_GPU_ROW_CHECKS=flagged, the default; not
                               with pea_block_lists, whose column thresholds need every block of
                               op(B)); 0: for every block (=all) */
    int proj;               /* 1: PROJ thresholds for the column checksums of S and D
                               (BLASFT_THRESHOLD=proj; cuda/gpu_proj.cu), the rest PEA */
    int promote;            /* 1: S and C GEMMs computed as D and Z GEMMs of promoted copies,
                               checked in double and rounded once into C (BLASFT_PROMOTE=on;
                               gpu_promoted_gemm.cu); 2: only where FP64 is fast (=auto); 0: never
                               (=off) */
    uint64_t promote_mem;   /* bytes of the promoted copies (BLASFT_GPU_PROMOTE_MEM), a fixed
                               buffer: larger GEMMs run in tiles of C and chunks of k that fit;
                               0: 1 GiB. A context that cannot allocate it computes S and C
                               natively protected from then on (one warning) */
    blasft_mode mode;       /* correct or detect (off: plain cuBLAS) */
    blasft_on_error on_error; /* what to do with a block that cannot be corrected */
    int graphs;             /* 1: a call repeated with the same arguments is captured once into
                               a CUDA graph of the context's and replayed, and a small one whose
                               operands keep moving by the graph of its shape on copies
                               (BLASFT_GPU_GRAPHS=on, the default; cuda/graph_cache.h); 2: only
                               the first (=exact); 0: every call enqueued (=off) */
    int batched;            /* 1: a batch of matrices up to m n k = 2^30 is computed by one cuBLAS
                               batched GEMM and checked by one pass (blasft_gpu_gemm_batched,
                               BLASFT_GPU_BATCHED=fused, the default); 0: one protected GEMM per
                               matrix (=each) */
} blasft_gpu_params;

void blasft_gpu_params_from_cfg(blasft_gpu_params *p, const blasft_config *cfg);

/* 1 if an m x n x k GEMM of type t runs promoted with parameters p (S and C, see promote), else 0;
 * such a GEMM ignores prepared operands (they are made from the single-precision data). */
int blasft_gpu_promotes(blasft_type t, int64_t m, int64_t n, int64_t k, const blasft_gpu_params *p);

/* One protected GEMM of device-resident operands. alpha and beta point to host memory
 * (scalars_on_device = 0) or device memory (1), of the GEMM's type. */
typedef struct blasft_gpu_gemm {
    blasft_type type;   /* BLASFT_TYPE_S, _D, _C (cuComplex) or _Z (cuDoubleComplex) */
    char transa, transb;/* 'N', 'T' or 'C' (conjugate transpose; = 'T' for S, D) */
    int64_t m, n, k;
    const void *alpha;
    const void *a;
    int64_t lda;
    const void *b;
    int64_t ldb;
    const void *beta;
    void *c;
    int64_t ldc;
    int scalars_on_device;
    const char *routine; /* for events; NULL: "gpu_gemm" */
    /* Prepared operands (blasft_gpu_prepare) or NULL: prep_a made as side 0 from a (used where
     * transa is 'N'), prep_b as side 1 from b (used where transb is 'N' and the row side runs
     * on demand); made with the same parameters as this call's and from the same, unchanged
     * data: the engine trusts the caller on both. */
    const void *prep_a, *prep_b;
    /* Or NULL: the old C is this vector of m elements (device memory, C's type, S and D only)
     * in every column, C's content on entry is not read (cublasLt's bias: C = alpha op(A) op(B)
     * + beta c_vector 1^T). The engine writes the repeated vector into C before the GEMM and
     * takes the old C's checksums and its recomputations from the vector, which must stay
     * unchanged until the GEMM's work on the stream is done. */
    const void *c_vector;
} blasft_gpu_gemm;

/* Prepared operands: the context-independent preprocessing of an operand that stays unchanged
 * over several GEMMs, made once and kept with its device copy (the consistency layer's
 * encodings). Side 0: op(A) = X (rows m, cols k), its column checksums, block envelopes and
 * top-p lists; side 1: op(B) = X (rows k, cols n), its column top-p lists. prep_bytes: the
 * buffer's device bytes for parameters p (0 for invalid arguments). prepare: enqueues the work
 * on stream (a cudaStream_t; X column-major with leading dimension ld, all in device memory);
 * 0, -1 for invalid arguments, -2 if a launch failed. The caller synchronises before it lets
 * another stream read the buffer. */
size_t blasft_gpu_prep_bytes(int side, blasft_type t, int64_t rows, int64_t cols,
                             const blasft_gpu_params *p);
int blasft_gpu_prepare(void *stream, int side, blasft_type t, int64_t rows, int64_t cols,
                       const void *x, int64_t ld, const blasft_gpu_params *p, void *prep);

/* Enqueues the protected GEMM on the context's stream; no host synchronisation unless the
 * workspace must grow (then the stream is synchronised once, outside any graph capture: call
 * blasft_gpu_reserve before capturing). With p->graphs a call repeated with the same arguments
 * is replayed from the context's own graph of it (graph_cache.h). Returns 0; -1 for invalid
 * arguments or an unsupported type (nothing enqueued), -2 if a CUDA/cuBLAS call failed. */
int blasft_gpu_gemm_run(blasft_gpu_ctx *ctx, const blasft_gpu_gemm *g, const blasft_gpu_params *p);

/* The index of the GEMMs enqueued from now on in their caller's batch (a batch run matrix by
 * matrix), which their events carry (blasft_event.matrix); -1 (the default): not a batch. */
void blasft_gpu_set_matrix(blasft_gpu_ctx *ctx, int64_t matrix);

/* A batch of GEMMs of one shape: g's a, b and c are the first matrices, the others stride_a,
 * stride_b, stride_c elements on (strides of 0 share a matrix, as cuBLAS allows for A and B);
 * or, where a_arr is set, the matrices' addresses are in device arrays of count pointers each
 * (a_arr, b_arr, c_arr; g's a, b, c unused). Tests: plant(stream, plant_user[i]) is called for
 * the matrices i < nplants after the batch's GEMM, with the engine's checked C set to matrix i
 * (gpu_debug.h). */
typedef struct blasft_gpu_batch {
    blasft_gpu_gemm g;
    int64_t count;
    int64_t stride_a, stride_b, stride_c;
    const void *const *a_arr, *const *b_arr;
    void *const *c_arr;
    int nplants;
    void (*plant)(void *stream, void *user);
    void *const *plant_user;
} blasft_gpu_batch;

/* 1 if blasft_gpu_gemm_batched takes the batch with parameters p: p->batched, at least two
 * matrices of type S, D, C or Z, each of m n k <= 2^30 with k <= 4096, alpha not a host zero,
 * strided C matrices apart; else 0 (run the matrices one by one). */
int blasft_gpu_batch_fused(const blasft_gpu_batch *b, const blasft_gpu_params *p);

/* Enqueues the batch on the context's stream: one cuBLAS batched GEMM, the column checksums of
 * every matrix checked against NORM thresholds in one pass, flagged matrices computed again and
 * corrected (cuda/gpu_batched.cu). The old C of every matrix is copied first where beta may be
 * nonzero. An S (C) batch is promoted where one S (C) GEMM of its shape would be (p->promote):
 * computed as a D (Z) batch of double copies, checked in double and rounded once into C.
 * Under graph capture it is captured so where the context's batch buffers need not grow (empty
 * ones are allocated) and the report slots it takes (one per chunk where promoted) are free.
 * Returns 0; -1 where it does not take the batch (blasft_gpu_batch_fused; captured otherwise, or
 * with a planted fault by arrays; its buffers cannot be allocated: nothing enqueued), -2 if a
 * CUDA/cuBLAS call failed. */
int blasft_gpu_gemm_batched(blasft_gpu_ctx *ctx, const blasft_gpu_batch *b,
                            const blasft_gpu_params *p);

/* Half and bfloat16 GEMMs (cuda/gpu_lowp.cu): A and B of one of those types, C of theirs or
 * float, FP32 accumulation, float scalars (cublasGemmEx with compute type 32F). */
typedef enum { BLASFT_LOWP_F16 = 0, BLASFT_LOWP_BF16, BLASFT_LOWP_F32 } blasft_lowp_type;
typedef struct blasft_gpu_lowp {
    blasft_gpu_gemm g;            /* its type unused; alpha, beta: floats */
    blasft_lowp_type ab, c;       /* A's and B's type, C's */
    int compute;                  /* cublasComputeType_t: CUBLAS_COMPUTE_32F or _32F_PEDANTIC,
                                     passed on to cuBLAS (this header needs no cuBLAS) */
    int algo;                     /* cublasGemmAlgo_t: the caller's, passed on */
    int math;                     /* cublasMath_t: the handle's, CUBLAS_DEFAULT_MATH or
                                     CUBLAS_PEDANTIC_MATH, passed on */
    /* cublasLt: the old C read from c_in (ld ldc_in, C's type) where it is not C (NULL); a bias
     * vector of m elements of C's type added to every column (NULL: none; host scalars only):
     * C = alpha op(A) op(B) + beta c_in + bias 1^T */
    const void *c_in;
    int64_t ldc_in;
    const void *bias;
    /* A batch of `count` such GEMMs (0 or 1: one) with the same shape and scalars: matrix b's
     * A, B and C stride_a, stride_b and stride_c elements after matrix b - 1's (c_in's
     * stride_c_in), or, where a_arr is given, at the device addresses a_arr[b], b_arr[b] and
     * c_arr[b] (cublasGemmBatchedEx; with c_in or a bias such a call is not taken) */
    int64_t count, stride_a, stride_b, stride_c, stride_c_in;
    const void *const *a_arr, *const *b_arr;
    void *const *c_arr;
    /* tests: called after the GEMM, before the check, on the context's stream, with
     * plant_users[b] for each of the batch's first nplants matrices (C then the FP32 result
     * of matrix b that is checked) */
    void (*plant)(void *stream, void *user);
    void *const *plant_users;
    int nplants;
} blasft_gpu_lowp;

/* 1 if blasft_gpu_gemm_lowp takes the GEMM: the types and compute type above, 1 <= m, n, k and
 * every dimension and leading dimension within int, alpha not a host zero, the cuBLAS found has
 * cublasGemmEx (batches: cublasGemmStridedBatchedEx or cublasGemmBatchedEx; no bias); else 0 (it
 * passes through unprotected). */
int blasft_gpu_lowp_supported(const blasft_gpu_lowp *l);

/* Enqueues the GEMM on the context's stream with its checks (gpu_lowp.cu's header): the GEMM's
 * FP32 result (in a buffer of the context's where C is 16-bit, rounded once into C after the
 * checks), op(A)'s block sums multiplied by op(B) in one reference GEMM on the helper stream,
 * the result's block column sums compared with them, flagged block columns computed again
 * element by element and corrected. Under graph capture it is captured so (the graph replays the
 * checks and reports each replay) where the context's buffer need not grow (an empty one is
 * allocated) and its next report slot is free. Returns 0; -1 where it does not take the GEMM
 * (blasft_gpu_lowp_supported; captured, a buffer to grow, a slot in flight or a planted fault in
 * a float C by arrays; no device memory for the checks' buffer: nothing enqueued), -2 if a
 * CUDA/cuBLAS call failed. */
int blasft_gpu_gemm_lowp(blasft_gpu_ctx *ctx, const blasft_gpu_lowp *l, const blasft_gpu_params *p);

/* The plain cuBLAS GEMM through the context's handle (the benchmark's baseline). */
int blasft_gpu_gemm_plain(blasft_gpu_ctx *ctx, const blasft_gpu_gemm *g);

/* Grows the workspace for GEMMs up to m x n x k of type t (and one old-C copy if keep_old_c). */
int blasft_gpu_reserve(blasft_gpu_ctx *ctx, blasft_type t, int64_t m, int64_t n, int64_t k,
                       const blasft_gpu_params *p, int keep_old_c);

/* 1 if enqueueing `count` protected GEMMs of g's shape on ctx now, while its stream is being
 * captured, would make blasft_gpu_gemm_run synchronise a stream (workspace or old-C copy to
 * grow; their report slots are the graph's own), else 0. A caller that is capturing a CUDA graph
 * must not let that happen (added for the cuBLAS interposer, cuda/cublas_interpose.c). */
int blasft_gpu_gemm_would_sync(const blasft_gpu_ctx *ctx, const blasft_gpu_gemm *g,
                               const blasft_gpu_params *p, int64_t count);

/* Bytes of device workspace the context holds now for single S, D, C, Z GEMMs (not the buffers
 * of batches checked together and of half GEMMs, which are separate: 0 says a capture may
 * allocate the workspace without freeing any). */
size_t blasft_gpu_workspace_bytes(const blasft_gpu_ctx *ctx);

/* Bytes of workspace one protected GEMM of this shape needs (without the old-C copy, which
 * takes m*n elements more where beta != 0 and blocks may have to be recomputed). */
size_t blasft_gpu_workspace_need(blasft_type t, int64_t m, int64_t n, int64_t k,
                                 const blasft_gpu_params *p);

/* cublasLt's bias epilogue for the protected path: d (m x n, ld ldd) = bias 1^T + beta c_in,
 * real types S and D, column-major, on `stream` (a cudaStream_t); beta (host memory) NULL or 0:
 * the bias alone, c_in not read. The interposer then runs the GEMM with beta 1 on d. Returns 0,
 * -1 for another type, -2 where the launch failed. */
int blasft_gpu_bias_into(blasft_type t, int64_t m, int64_t n, const void *bias, const void *beta,
                         const void *c_in, int64_t ldc_in, void *d, int64_t ldd, void *stream);

/* For the host dispatch (src/dispatch.c): runs a host-memory GEMM descriptor on the GPU (copies
 * A, B, C to the device, protected GEMM, copies C back, synchronises), with a per-thread context.
 * Returns 0, or -1 if it could not run there (no GPU, unsupported type, out of memory): then C is
 * unchanged and the caller runs it on the host. */
int blasft_gpu_run_host_gemm(const blasft_gemm *g, const blasft_config *cfg);

#ifdef __cplusplus
}
#endif
#endif
