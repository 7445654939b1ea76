/* Copies between a host region (cols columns of row_bytes bytes, column j at host + j * ld_bytes)
 * and its dense copy (ld = row_bytes: the device layout, or a staging buffer holding a byte range
 * of it), chunk by chunk of the change hash (hash.h), on the pool's threads, hashing each chunk
 * in the same pass: the data passes the CPU anyway, and a 256 KiB chunk is still in the core's
 * cache when it is hashed after (or before) its copy. Used by both device backends. */
#ifndef BLASFT_CONSISTENCY_CHUNKCOPY_H
#define BLASFT_CONSISTENCY_CHUNKCOPY_H

#include "hash.h"

#include <stdbool.h>
#include <stddef.h>

/* Dense bytes [lo, hi) of the region: host -> buf (buf[0] is dense byte lo), and back. */
void blasft_pack_range(void *buf, const void *host, size_t row_bytes, size_t ld_bytes, size_t lo,
                       size_t hi);
void blasft_unpack_range(void *host, size_t row_bytes, size_t ld_bytes, const void *buf, size_t lo,
                         size_t hi);

typedef struct blasft_chunk_pass {
    void *host;                /* the region (read by up, written by down) */
    size_t row_bytes, cols, ld_bytes;
    unsigned char *buf;        /* dense bytes from buf_lo on */
    size_t buf_lo;
    const blasft_hash128 *old; /* up: chunks whose digest equals old[c] are not copied (NULL: all
                                  are); may be the same array as dig */
    blasft_hash128 *dig;       /* each chunk's digest of the host data (NULL: not hashed) */
    bool *copied;              /* up: copied[c - first] set for the chunks copied (may be NULL) */
    size_t first;              /* chunks [first, first + count) */
    int threads;               /* <= 0: the pool's default */
} blasft_chunk_pass;

/* Host -> buf for chunks [first, first + count): hash (when dig or old), compare with old, pack
 * the changed ones. Returns the number of chunks copied. */
size_t blasft_chunks_up(const blasft_chunk_pass *p, size_t count);
/* buf -> host for chunks [first, first + count), then the digest of the host result into dig. */
void blasft_chunks_down(const blasft_chunk_pass *p, size_t count);

#endif
