/* A small persistent pool of host threads for the consistency layer's data passes (the change
 * hash, and the pack/unpack between the caller's memory and the pinned staging buffers). Starting
 * threads per pass would cost more than a pass over a few MiB takes; the workers are started on
 * first use and live until the process ends (recreated lazily in a forked child).
 *
 * One pass at a time runs on the workers; a caller that finds them busy (another thread's pass)
 * does its items alone, so concurrent callers never wait for each other here. */
#ifndef BLASFT_CONSISTENCY_POOL_H
#define BLASFT_CONSISTENCY_POOL_H

#include <stddef.h>

typedef void blasft_pool_fn(void *arg, size_t item);

/* Calls fn(arg, i) for every i in [0, items), on the calling thread and up to threads - 1
 * workers (threads <= 0: BLASFT_HASH_THREADS, the online cores by default), items claimed one at
 * a time in increasing order. Returns when every call has returned. */
void blasft_pool_for(size_t items, blasft_pool_fn *fn, void *arg, int threads);

#endif
