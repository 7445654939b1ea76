/* libblas_ft public C API: version, effective configuration, statistics and error events.
 * Everything else libblas_ft exports is the standard BLAS/CBLAS (and cuBLAS GEMM) interface. */
#ifndef BLAS_FT_H
#define BLAS_FT_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define BLASFT_API __attribute__((visibility("default")))

/* "major.minor.patch" of the loaded library. */
BLASFT_API const char *blasft_version(void);

typedef enum { BLASFT_MODE_CORRECT = 0, BLASFT_MODE_DETECT, BLASFT_MODE_OFF } blasft_mode;
typedef enum { BLASFT_DEVICE_AUTO = 0, BLASFT_DEVICE_GPU, BLASFT_DEVICE_HOST } blasft_device;
typedef enum {
    BLASFT_THRESHOLD_PEA = 0, BLASFT_THRESHOLD_SEA,
    BLASFT_THRESHOLD_NORM, /* Cauchy-Schwarz norms + Hoeffding, two tiers: docs/thresholds.md */
    BLASFT_THRESHOLD_PROJ  /* projected partial-sum energies, two tiers: docs/thresholds.md */
} blasft_threshold;
typedef enum {
    BLASFT_WEIGHTS_NORMAL = 0, BLASFT_WEIGHTS_AVERAGE, BLASFT_WEIGHTS_PERIODIC,
    BLASFT_WEIGHTS_EXPONENTIAL, BLASFT_WEIGHTS_LINEAR, BLASFT_WEIGHTS_MDR
} blasft_weights;
typedef enum { BLASFT_ON_ERROR_RECOMPUTE = 0, BLASFT_ON_ERROR_REPORT, BLASFT_ON_ERROR_ABORT } blasft_on_error;
typedef enum {
    BLASFT_CACHE_OFF = 0,  /* no device copies are kept: every use uploads */
    BLASFT_CACHE_HASH,     /* kept; every reuse is verified by a hash of the host data, unless the
                              program declared the buffer changed or unchanged since its last use */
    BLASFT_CACHE_DECLARED  /* kept; reused without a check unless the program declared the buffer
                              changed (blasft_cache_mark_changed): only for relinked programs that
                              declare every host write to their operands */
} blasft_cache_mode;
/* S and C GEMMs computed as D and Z GEMMs of the promoted operands, the result rounded once:
 * their faults are then checked against double-precision rounding (docs/promote.md). */
typedef enum {
    BLASFT_PROMOTE_AUTO = 0, /* where it costs about what the native protected path costs: the host */
    BLASFT_PROMOTE_ON,       /* the host and the GPU engine (there: double copies of A, B and C
                                kept with the context) */
    BLASFT_PROMOTE_OFF
} blasft_promote;
typedef enum {
    BLASFT_LOG_OFF = 0, BLASFT_LOG_ERROR, BLASFT_LOG_WARN, BLASFT_LOG_INFO, BLASFT_LOG_DEBUG
} blasft_log_level;

#define BLASFT_PATH_MAX 512

/* The effective configuration (environment values after validation, defaults filled in). */
typedef struct blasft_config {
    int block_size;            /* BLASFT_BLOCK_SIZE: the host engine's BS */
    int gpu_block_size;        /* the GPU engine's BS: BLASFT_BLOCK_SIZE where set, else 256 */
    double omega;              /* BLASFT_OMEGA */
    blasft_mode mode;          /* BLASFT_MODE */
    blasft_device device;      /* BLASFT_DEVICE */
    int checksums;             /* BLASFT_CHECKSUMS: 1 or 2 per block vector */
    blasft_weights weights;    /* BLASFT_WEIGHTS: weights of the second checksum */
    blasft_threshold threshold;/* BLASFT_THRESHOLD */
    int pea_p;                 /* BLASFT_PEA_P */
    blasft_on_error on_error;  /* BLASFT_ON_ERROR */
    double min_flops;          /* BLASFT_MIN_FLOPS: smallest GEMM (2mnk) offloaded in auto mode; <0: model */
    blasft_log_level log_level;/* BLASFT_LOG */
    int cublas;                /* BLASFT_CUBLAS: 1 on (protect cuBLAS GEMM calls), 0 off */
    blasft_cache_mode cache;   /* BLASFT_CACHE */
    uint64_t device_mem;       /* BLASFT_DEVICE_MEM: bytes for cached device copies; 0 = auto */
    uint64_t staging;          /* BLASFT_STAGING: bytes of pinned host staging memory */
    int hash_threads;          /* BLASFT_HASH_THREADS: threads of the change check */
    int gpu_pea_lists;         /* BLASFT_GPU_PEA_LISTS: 0 vector (per row/column), 1 block */
    int gpu_row_checks;        /* BLASFT_GPU_ROW_CHECKS: 0 flagged (row side on demand), 1 all */
    int gpu_helper_priority;   /* BLASFT_GPU_HELPER_PRIORITY: 0 high, 1 low, 2 default */
    int offload_trace;         /* BLASFT_OFFLOAD_TRACE: 1 prints each offloaded GEMM's phase times */
    blasft_promote promote;    /* BLASFT_PROMOTE: S and C GEMMs computed as D and Z */
    uint64_t gpu_promote_mem;  /* BLASFT_GPU_PROMOTE_MEM: bytes of the GPU's promoted copies */
    int gpu_graphs;            /* BLASFT_GPU_GRAPHS: 0 off, 1 on, 2 exact (blasft_gpu_params) */
    int gpu_batched;           /* BLASFT_GPU_BATCHED: 1 fused (a batch of GEMMs in one batched
                                  call, checked together), 0 each (one protected GEMM per
                                  matrix) */
    char host_blas[BLASFT_PATH_MAX]; /* BLASFT_HOST_BLAS ("" = OpenBLAS by soname) */
    char log_file[BLASFT_PATH_MAX];  /* BLASFT_LOG_FILE ("" = stderr) */
    char report[BLASFT_PATH_MAX];    /* BLASFT_REPORT ("" = no exit report) */
    char inject[BLASFT_PATH_MAX];    /* BLASFT_INJECT ("" = no fault injection) */
} blasft_config;

/* Copies the effective configuration into *out. Returns 0. */
BLASFT_API int blasft_get_config(blasft_config *out);

/* Process-wide ABFT counters since start (or the last reset). */
typedef struct blasft_stats {
    uint64_t protected_gemms;    /* GEMMs that ran with checksums */
    uint64_t unprotected_gemms;  /* GEMMs that ran without (mode off, unsupported variant) */
    uint64_t checks;             /* checksum elements compared against their threshold */
    uint64_t errors_detected;    /* checksum elements over threshold, after the fact grouped by element */
    uint64_t errors_corrected;   /* elements corrected in place */
    uint64_t blocks_recomputed;  /* blocks recomputed because they could not be corrected */
    uint64_t uncorrectable;      /* errors left as they were (detect mode, on_error=report) */
    uint64_t encoder_faults;     /* redundant checksum computations that disagreed */
    uint64_t faults_injected;    /* bit flips planted by BLASFT_INJECT */
    uint64_t false_alarms;       /* flagged blocks found correct by a second computation (rounding
                                    the thresholds' model did not cover; nothing changed) */
} blasft_stats;

BLASFT_API void blasft_get_stats(blasft_stats *out);
BLASFT_API void blasft_reset_stats(void);

typedef enum {
    BLASFT_EVENT_DETECTED = 0,   /* over threshold, nothing changed (detect mode) */
    BLASFT_EVENT_CORRECTED,      /* one element corrected */
    BLASFT_EVENT_RECOMPUTED,     /* a block (or element) recomputed */
    BLASFT_EVENT_UNCORRECTABLE,  /* could not be corrected, left in place and reported */
    BLASFT_EVENT_ENCODER_FAULT   /* the two redundant checksum computations disagreed */
} blasft_event_kind;

typedef struct blasft_event {
    blasft_event_kind kind;
    const char *routine;    /* e.g. "dgemm_", "cblas_sgemm" */
    char type;              /* 'S', 'D', 'C' or 'Z'; 'H' or 'B' for a cuBLAS GEMM of half or
                               bfloat16 operands */
    int64_t block_row;      /* block coordinates in C (column-major view), -1 if not applicable */
    int64_t block_col;
    int64_t row;            /* element of C (0-based, column-major view), -1 if not located */
    int64_t col;
    double syndrome;        /* |reference - recomputed| checksum difference */
    double threshold;       /* the threshold it was compared with */
    const char *action;     /* "corrected" (with two checksums "corrected (F1)" or "(F2)": placed
                               by one side or by both), "recomputed", "reported", "aborted" */
    int64_t matrix;         /* the matrix's index (0-based) in a batched call of two or more
                               matrices (cuBLAS's batched GEMMs), -1 for a single GEMM */
} blasft_event;

typedef void (*blasft_event_callback)(const blasft_event *event, void *user);

/* Registers cb (NULL removes it). Host GEMMs call it synchronously from the thread that ran the
 * GEMM; GPU GEMMs from CUDA's callback thread, once the stream has passed the GEMM's check. */
BLASFT_API void blasft_set_event_callback(blasft_event_callback cb, void *user);

#ifdef __cplusplus
}
#endif
#endif
