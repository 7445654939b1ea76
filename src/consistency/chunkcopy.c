#include "chunkcopy.h"

#include "pool.h"

#include <string.h>

void blasft_pack_range(void *buf, const void *host, size_t row_bytes, size_t ld_bytes, size_t lo,
                       size_t hi)
{
    unsigned char *d = buf;
    const unsigned char *s = host;
    while (lo < hi) {
        size_t col = lo / row_bytes, r = lo % row_bytes;
        size_t n = row_bytes - r < hi - lo ? row_bytes - r : hi - lo;
        memcpy(d, s + col * ld_bytes + r, n);
        d += n;
        lo += n;
    }
}

void blasft_unpack_range(void *host, size_t row_bytes, size_t ld_bytes, const void *buf, size_t lo,
                         size_t hi)
{
    unsigned char *d = host;
    const unsigned char *s = buf;
    while (lo < hi) {
        size_t col = lo / row_bytes, r = lo % row_bytes;
        size_t n = row_bytes - r < hi - lo ? row_bytes - r : hi - lo;
        memcpy(d + col * ld_bytes + r, s, n);
        s += n;
        lo += n;
    }
}

typedef struct up_job {
    const blasft_chunk_pass *p;
    size_t copied; /* atomic */
} up_job;

static void up_one(void *arg, size_t i)
{
    up_job *j = arg;
    const blasft_chunk_pass *p = j->p;
    size_t c = p->first + i, lo, hi;
    if (p->dig || p->old) {
        /* hashed first: the chunk is then in the core's cache for the copy */
        blasft_hash128 h = blasft_hash_chunk(p->host, p->row_bytes, p->cols, p->ld_bytes, c);
        bool same = p->old && blasft_hash_equal(h, p->old[c]);
        if (p->dig)
            p->dig[c] = h;
        if (same) {
            if (p->copied)
                p->copied[i] = false;
            return;
        }
    }
    blasft_hash_chunk_span(p->row_bytes, p->cols, c, &lo, &hi);
    blasft_pack_range(p->buf + (lo - p->buf_lo), p->host, p->row_bytes, p->ld_bytes, lo, hi);
    if (p->copied)
        p->copied[i] = true;
    __atomic_fetch_add(&j->copied, 1, __ATOMIC_RELAXED);
}

size_t blasft_chunks_up(const blasft_chunk_pass *p, size_t count)
{
    up_job j = {p, 0};
    blasft_pool_for(count, up_one, &j, p->threads);
    return j.copied;
}

static void down_one(void *arg, size_t i)
{
    const blasft_chunk_pass *p = arg;
    size_t c = p->first + i, lo, hi;
    blasft_hash_chunk_span(p->row_bytes, p->cols, c, &lo, &hi);
    blasft_unpack_range(p->host, p->row_bytes, p->ld_bytes, p->buf + (lo - p->buf_lo), lo, hi);
    if (p->dig)
        p->dig[c] = blasft_hash_chunk(p->host, p->row_bytes, p->cols, p->ld_bytes, c);
}

void blasft_chunks_down(const blasft_chunk_pass *p, size_t count)
{
    blasft_pool_for(count, down_one, (void *)p, p->threads);
}
