/* The CUDA device-memory backend of the consistency layer (src/consistency/devmem.h): cudaMalloc'ed
 * copies, transfers through persistent pinned staging buffers of bounded size (the caller's memory
 * is never pinned), split in two halves so that the host-side copy of one tile overlaps the DMA
 * of the other (cudaMemcpy2DAsync on two streams). Compiled with -Dcuda=enabled; used by
 * blasft_offload_gemm when BLASFT_CACHE is not off; tested by tests/offload (docs/consistency.md). */
#ifndef BLASFT_OFFLOAD_BACKEND_H
#define BLASFT_OFFLOAD_BACKEND_H

#include "consistency/devmem.h"

#include <stddef.h>

/* staging_bytes: pinned bytes in all (BLASFT_STAGING). NULL if CUDA or the pinned allocation
 * fails. */
blasft_devmem *blasft_offload_backend_create(size_t staging_bytes);

/* For a backend whose device was reset (cudaDeviceReset took its memory, streams, events and
 * pinned buffers): from now on transfers fail, frees do nothing (the old addresses may be the
 * application's allocations), and destroy frees the host side only. */
void blasft_offload_backend_forget(blasft_devmem *d);

/* Test hook: the next whole-region download (download_chunks) of any CUDA backend that has a
 * tile number `tile` (0-based) fails just before that tile would reach the host, as a device
 * failure there would; -1 cancels. Returns the setting before (-1 once it fired). */
int blasft_offload_backend_fail_download_at(int tile);

#endif
