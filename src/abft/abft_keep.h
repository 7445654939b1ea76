/* Per-thread buffers kept between GEMMs for the engine's largest per-call arrays (the FP32/C
 * operands promoted to double): a fresh allocation of several MiB comes from new pages, and their
 * page faults were most of the gap between a protected SGEMM's encoding and a DGEMM's
 * (docs/host-overhead.md). */
#ifndef BLASFT_ABFT_KEEP_H
#define BLASFT_ABFT_KEEP_H

#include <stddef.h>

/* Slots of kept buffers per thread: 0 and 1 for A and B, 2 for C (abft_promote.c). */
enum { ABFT_KEEP_SLOTS = 3 };

/* A buffer of count doubles: the calling thread's kept one for `slot` (grown as needed) when it
 * is free and count * 8 bytes are at most ABFT_KEEP_MAX_BYTES, else a plain allocation. NULL when
 * out of memory. Contents are undefined. */
double *abft_keep_get(int slot, size_t count);

/* Gives back a buffer from abft_keep_get (the same thread and slot; NULL is ignored): a kept one
 * stays for the thread's next GEMM, any other is freed. A thread's kept buffers are freed when it
 * exits. */
void abft_keep_put(int slot, double *p);

/* Largest buffer kept per slot (larger ones are allocated and freed per call, where the page
 * faults are a small part of the engine's time): 32 MiB, a square FP32 operand of n = 2048. */
#define ABFT_KEEP_MAX_BYTES ((size_t)32 << 20)

#endif
