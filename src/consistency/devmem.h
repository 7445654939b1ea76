/* The device-memory backend of the consistency layer: what the cache needs from a device.
 * Two implementations: devmem_host.c (separate host buffers and explicit copies, behaving like
 * a device; used by the tests on machines without a GPU) and cuda/offload_backend.c (CUDA).
 * All copies are 2-D: `height` columns of `width` bytes, column j at base + j * pitch. */
#ifndef BLASFT_CONSISTENCY_DEVMEM_H
#define BLASFT_CONSISTENCY_DEVMEM_H

#include <stddef.h>

typedef struct blasft_devmem blasft_devmem;

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
