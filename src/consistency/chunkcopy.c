#include "chunkcopy.h"

#include "pool.h"

#include <stdint.h>
#include <string.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

/* Large copies with non-temporal stores: the destination (pinned staging on the way up, the
 * caller's matrix on the way down) is not read again by this CPU soon, and streaming stores
 * spare the read of every destination line that a normal store costs (a quarter of the memory
 * traffic of a pack or unpack pass). Callers end their pass with store_fence(). */
static void copy_stream(void *dst, const void *src, size_t n)
{
#if defined(__SSE2__)
    if (n >= 4096) {
        unsigned char *d = dst;
        const unsigned char *s = src;
        size_t head = (16 - ((uintptr_t)d & 15)) & 15;
        memcpy(d, s, head);
        d += head;
        s += head;
        n -= head;
        for (; n >= 64; n -= 64, d += 64, s += 64) {
            __m128i a = _mm_loadu_si128((const __m128i *)s);
            __m128i b = _mm_loadu_si128((const __m128i *)(s + 16));
            __m128i c = _mm_loadu_si128((const __m128i *)(s + 32));
            __m128i e = _mm_loadu_si128((const __m128i *)(s + 48));
            _mm_stream_si128((__m128i *)d, a);
            _mm_stream_si128((__m128i *)(d + 16), b);
            _mm_stream_si128((__m128i *)(d + 32), c);
            _mm_stream_si128((__m128i *)(d + 48), e);
        }
        memcpy(d, s, n);
        return;
    }
#endif
    memcpy(dst, src, n);
}

/* Streaming stores are weakly ordered: fenced before the pass reports its chunk done. */
static void store_fence(void)
{
#if defined(__SSE2__)
    _mm_sfence();
#endif
}

void blasft_pack_range(void *buf, const void *host, size_t row_bytes, size_t ld_bytes, size_t lo,
                       size_t hi)
{
    unsigned char *d = buf;
    const unsigned char *s = host;
    while (lo < hi) {
        size_t col = lo / row_bytes, r = lo % row_bytes;
        size_t n = row_bytes - r < hi - lo ? row_bytes - r : hi - lo;
        copy_stream(d, s + col * ld_bytes + r, n);
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
        copy_stream(d + col * ld_bytes + r, s, n);
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
    store_fence();
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
    /* hashed from the dense bytes, which the copy just brought into this core's cache (the
     * streamed destination is not there) */
    if (p->dig)
        p->dig[c] = blasft_hash_chunk_dense(p->buf, p->buf_lo, p->row_bytes, p->cols, c);
    blasft_unpack_range(p->host, p->row_bytes, p->ld_bytes, p->buf + (lo - p->buf_lo), lo, hi);
    store_fence();
}

void blasft_chunks_down(const blasft_chunk_pass *p, size_t count)
{
    blasft_pool_for(count, down_one, (void *)p, p->threads);
}
