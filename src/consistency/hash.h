/* Change detection for the consistency layer: a 128-bit hash of exactly the bytes of a
 * column-major sub-matrix (cols columns of row_bytes bytes, column j at base + j * ld_bytes),
 * computed in parallel on the host cores. Bytes between row_bytes and ld_bytes are not read.
 *
 * Not cryptographic and not a universal family; what it guarantees (docs/consistency.md):
 *  - every step that absorbs an 8-byte word is a bijection of the lane state, and the lanes are
 *    folded into the digest by chains of bijections, so a change confined to one lane of one
 *    chunk (in particular any change of one aligned 8-byte word, one S/D/C element) is never
 *    missed; everything else collides with a probability of about 2^-128 per comparison;
 *  - the lanes start from a per-process random seed, so no data pattern collides reproducibly;
 *  - the digest does not depend on the thread count (chunks are fixed by the shape). */
#ifndef BLASFT_CONSISTENCY_HASH_H
#define BLASFT_CONSISTENCY_HASH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct blasft_hash128 {
    uint64_t lo, hi;
} blasft_hash128;

static inline bool blasft_hash_equal(blasft_hash128 a, blasft_hash128 b)
{
    return a.lo == b.lo && a.hi == b.hi;
}

/* threads <= 0: the default (blasft_hash_default_threads). Regions below about 1 MiB run on the
 * calling thread only (starting threads costs more than it saves). */
blasft_hash128 blasft_hash2d(const void *base, size_t row_bytes, size_t cols, size_t ld_bytes,
                             int threads);

/* The hash is the sum of independent chunk digests (chunks of 256 KiB of the region's word
 * stream, fixed by the shape), so passes that move the data anyway (pack into staging, unpack of
 * a result) can hash it chunk by chunk on the way: */
/* Chunks of a region of cols columns of row_bytes bytes. */
size_t blasft_hash_chunk_count(size_t row_bytes, size_t cols);
/* Byte range [*lo, *hi) of chunk in the region's dense copy (column-major, ld = row_bytes). */
void blasft_hash_chunk_span(size_t row_bytes, size_t cols, size_t chunk, size_t *lo, size_t *hi);
/* The digest of one chunk. */
blasft_hash128 blasft_hash_chunk(const void *base, size_t row_bytes, size_t cols, size_t ld_bytes,
                                 size_t chunk);
/* The digest of one chunk from the region's dense copy (ld = row_bytes) held in buf, whose first
 * byte is the dense copy's byte buf_lo (the chunk's span must lie in buf): equal to the digest of
 * the same data in the strided region. */
blasft_hash128 blasft_hash_chunk_dense(const void *buf, size_t buf_lo, size_t row_bytes,
                                       size_t cols, size_t chunk);
/* Every chunk's digest into out[0 .. chunk_count), in parallel. */
void blasft_hash2d_chunks(const void *base, size_t row_bytes, size_t cols, size_t ld_bytes,
                          int threads, blasft_hash128 *out);
/* The region's hash from all its chunk digests: equals blasft_hash2d of the same data. */
blasft_hash128 blasft_hash_combine(const blasft_hash128 *digests, size_t chunks, size_t row_bytes,
                                   size_t cols);

/* Selects the vector (AVX-512) or the scalar inner loop (both compute the same digest); the
 * vector one is chosen at start where the CPU has it. Returns 1 if the vector loop is in use.
 * For tests and benchmarks; not thread-safe against running hashes. */
int blasft_hash_use_simd(int on);

/* The process's hash thread count: BLASFT_HASH_THREADS if set (1..256), else the online cores. */
int blasft_hash_default_threads(void);

#endif
