/* The device-memory backend of the consistency layer: what the cache needs from a device.
 * Two implementations: devmem_host.c (separate host buffers and explicit copies, behaving like
 * a device; used by the tests on machines without a GPU) and cuda/offload_backend.c (CUDA).
 * All copies are 2-D: `height` columns of `width` bytes, column j at base + j * pitch. */
#ifndef BLASFT_CONSISTENCY_DEVMEM_H
#define BLASFT_CONSISTENCY_DEVMEM_H

#include "hash.h"

#include <stddef.h>

typedef struct blasft_devmem blasft_devmem;

/* Called once before a transfer first writes the device copy (e.g. to wait until a kernel that
 * still reads the old copy finished). */
typedef struct blasft_devmem_hook {
    void (*fn)(void *arg);
    void *arg;
} blasft_devmem_hook;

/* Device work that produces the copy being downloaded: dense bytes below bounds[i] are final once
 * the backend's token i (CUDA: a cudaEvent_t) completed; bounds increase; bytes at or above the
 * last bound are final already. */
typedef struct blasft_devmem_fence {
    int n;
    const size_t *bounds;
    void *const *tokens;
} blasft_devmem_fence;

typedef struct blasft_devmem_ops {
    const char *name;
    /* 0 and *dptr set, or -1 (out of device memory). */
    int (*alloc)(blasft_devmem *d, size_t bytes, void **dptr);
    void (*free)(blasft_devmem *d, void *dptr);
    /* Host to device and back; 0, or -1 on failure. When they return, the copy is complete and
     * the source may change (the CUDA backend pipelines inside one call, through its staging
     * buffers, and synchronises before returning). */
    int (*upload)(blasft_devmem *d, void *dst, size_t dpitch, const void *src, size_t spitch,
                  size_t width, size_t height);
    int (*download)(blasft_devmem *d, void *dst, size_t dpitch, const void *src, size_t spitch,
                    size_t width, size_t height);
    /* Whole-region transfers chunk by chunk of the change hash (hash.h), pipelined and hashed in
     * the same pass (chunkcopy.h). The region: cols columns of row_bytes bytes, column j at
     * host + j * ld_bytes; the device copy is dense (ld = row_bytes).
     * upload_chunks: each chunk's digest of the host data into dig[c] (dig NULL: no hashing);
     * with old, chunks whose digest equals old[c] are not copied (old may be dig); *copied: the
     * chunks copied; before_write (may be NULL) runs before the first byte of dst is written.
     * download_chunks: the digest of each chunk of the host result into dig (may be NULL);
     * fence (may be NULL) orders the reads after the device work that writes src. On failure
     * *done (may be NULL) is the number of dense bytes, from the region's start, that reached
     * the host in full; the host region beyond them is untouched.
     * Both 0, or -1 on failure; synchronous like upload/download. */
    int (*upload_chunks)(blasft_devmem *d, void *dst, const void *host, size_t row_bytes,
                         size_t cols, size_t ld_bytes, const blasft_hash128 *old,
                         blasft_hash128 *dig, size_t *copied,
                         const blasft_devmem_hook *before_write);
    int (*download_chunks)(blasft_devmem *d, void *host, size_t ld_bytes, const void *src,
                           size_t row_bytes, size_t cols, blasft_hash128 *dig,
                           const blasft_devmem_fence *fence, size_t *done);
    /* Device memory the backend would give the cache when BLASFT_DEVICE_MEM is auto. */
    size_t (*default_budget)(blasft_devmem *d);
    void (*destroy)(blasft_devmem *d);
} blasft_devmem_ops;

struct blasft_devmem {
    const blasft_devmem_ops *ops;
};

/* The host-memory backend. fail_alloc_after >= 0 makes allocations fail once that many bytes are
 * held (a device running out of memory, for tests); -1: never. */
blasft_devmem *blasft_devmem_host_create(long long fail_alloc_after);
/* Bytes held, number of uploads/downloads and bytes moved (for tests). */
typedef struct blasft_devmem_host_stats {
    size_t held, uploads, downloads, upload_bytes, download_bytes;
} blasft_devmem_host_stats;
void blasft_devmem_host_stats_get(blasft_devmem *d, blasft_devmem_host_stats *out);

#endif
