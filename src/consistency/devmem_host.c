/* The host-memory "device": every buffer is its own malloc'ed block and the only way in or out
 * is an explicit copy, so a cache bug that would read stale device data shows up here as it
 * would on a GPU. */
#include "devmem.h"

#include "chunkcopy.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

typedef struct host_devmem {
    blasft_devmem base;
    pthread_mutex_t lock;
    long long fail_after;
    blasft_devmem_host_stats st;
} host_devmem;

/* Each block carries its size in front so that free can account for it. */
typedef struct block_header {
    size_t bytes;
    size_t pad; /* keeps the data 16-byte aligned */
} block_header;

static int host_alloc(blasft_devmem *d, size_t bytes, void **dptr)
{
    host_devmem *h = (host_devmem *)d;
    pthread_mutex_lock(&h->lock);
    int over = h->fail_after >= 0 && (long long)(h->st.held + bytes) > h->fail_after;
    if (!over)
        h->st.held += bytes;
    pthread_mutex_unlock(&h->lock);
    if (over)
        return -1;
    block_header *b = malloc(sizeof *b + (bytes ? bytes : 1));
    if (!b) {
        pthread_mutex_lock(&h->lock);
        h->st.held -= bytes;
        pthread_mutex_unlock(&h->lock);
        return -1;
    }
    b->bytes = bytes;
    /* garbage, not zeros: a read of never-uploaded data must not look plausible */
    memset(b + 1, 0xa5, bytes);
    *dptr = b + 1;
    return 0;
}

static void host_free(blasft_devmem *d, void *dptr)
{
    if (!dptr)
        return;
    host_devmem *h = (host_devmem *)d;
    block_header *b = (block_header *)dptr - 1;
    pthread_mutex_lock(&h->lock);
    h->st.held -= b->bytes;
    pthread_mutex_unlock(&h->lock);
    free(b);
}

static void copy2d(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
                   size_t height)
{
    for (size_t j = 0; j < height; j++)
        memcpy((char *)dst + j * dpitch, (const char *)src + j * spitch, width);
}

static int host_upload(blasft_devmem *d, void *dst, size_t dpitch, const void *src, size_t spitch,
                       size_t width, size_t height)
{
    host_devmem *h = (host_devmem *)d;
    copy2d(dst, dpitch, src, spitch, width, height);
    pthread_mutex_lock(&h->lock);
    h->st.uploads++;
    h->st.upload_bytes += width * height;
    pthread_mutex_unlock(&h->lock);
    return 0;
}

static int host_download(blasft_devmem *d, void *dst, size_t dpitch, const void *src,
                         size_t spitch, size_t width, size_t height)
{
    host_devmem *h = (host_devmem *)d;
    copy2d(dst, dpitch, src, spitch, width, height);
    pthread_mutex_lock(&h->lock);
    h->st.downloads++;
    h->st.download_bytes += width * height;
    pthread_mutex_unlock(&h->lock);
    return 0;
}

static int host_upload_chunks(blasft_devmem *d, void *dst, const void *host, size_t row_bytes,
                              size_t cols, size_t ld_bytes, const blasft_hash128 *old,
                              blasft_hash128 *dig, size_t *copied,
                              const blasft_devmem_hook *before_write)
{
    host_devmem *h = (host_devmem *)d;
    size_t chunks = blasft_hash_chunk_count(row_bytes, cols);
    bool *flags = calloc(chunks ? chunks : 1, sizeof *flags);
    /* the digests go to a buffer of their own when old is dig: old is compared after all are
     * computed */
    blasft_hash128 *now = dig && dig != old ? dig
                          : old             ? malloc(sizeof *now * (chunks ? chunks : 1))
                                            : NULL;
    if (!flags || (old && !now)) {
        free(flags);
        if (now != dig)
            free(now);
        return -1;
    }
    *copied = 0;
    int any = 1;
    if (old) {
        /* the copy is written in place: what changed is found first, so the hook runs before any
         * write (the CUDA backend pipelines the two: it writes through staging) */
        blasft_hash2d_chunks(host, row_bytes, cols, ld_bytes, 0, now);
        any = 0;
        for (size_t c = 0; c < chunks && !any; c++)
            any = !blasft_hash_equal(now[c], old[c]);
    }
    if (any) {
        if (before_write)
            before_write->fn(before_write->arg);
        blasft_chunk_pass p = {(void *)host, row_bytes, cols, ld_bytes, dst, 0, old, NULL, flags,
                               0, 0};
        if (!old) { /* nothing to compare with: copy all, hashing on the way */
            p.dig = now;
            *copied = blasft_chunks_up(&p, chunks);
        } else { /* copy what differs from old (the digests are known) */
            blasft_chunk_pass q = p;
            q.old = NULL;
            q.copied = NULL;
            for (size_t c = 0; c < chunks; c++)
                if (!blasft_hash_equal(now[c], old[c])) {
                    q.first = c;
                    *copied += blasft_chunks_up(&q, 1);
                    flags[c] = true;
                }
        }
    }
    if (dig && now != dig)
        memcpy(dig, now, sizeof *now * chunks);
    size_t bytes = 0;
    for (size_t c = 0; c < chunks; c++)
        if (flags[c]) {
            size_t lo, hi;
            blasft_hash_chunk_span(row_bytes, cols, c, &lo, &hi);
            bytes += hi - lo;
        }
    free(flags);
    if (now != dig)
        free(now);
    pthread_mutex_lock(&h->lock);
    h->st.uploads += *copied > 0;
    h->st.upload_bytes += bytes;
    pthread_mutex_unlock(&h->lock);
    return 0;
}

static int host_download_chunks(blasft_devmem *d, void *host, size_t ld_bytes, const void *src,
                                size_t row_bytes, size_t cols, blasft_hash128 *dig,
                                const blasft_devmem_fence *fence, size_t *done)
{
    (void)fence; /* everything here is done when it returns */
    (void)done;  /* nor does it fail */
    host_devmem *h = (host_devmem *)d;
    blasft_chunk_pass p = {host, row_bytes, cols, ld_bytes, (unsigned char *)src, 0, NULL, dig,
                           NULL, 0, 0};
    blasft_chunks_down(&p, blasft_hash_chunk_count(row_bytes, cols));
    pthread_mutex_lock(&h->lock);
    h->st.downloads++;
    h->st.download_bytes += row_bytes * cols;
    pthread_mutex_unlock(&h->lock);
    return 0;
}

static size_t host_default_budget(blasft_devmem *d)
{
    (void)d;
    return (size_t)1 << 30;
}

static void host_destroy(blasft_devmem *d)
{
    host_devmem *h = (host_devmem *)d;
    pthread_mutex_destroy(&h->lock);
    free(h);
}

static const blasft_devmem_ops host_ops = {
    "host", host_alloc, host_free, host_upload, host_download, host_upload_chunks,
    host_download_chunks, host_default_budget, host_destroy,
};

blasft_devmem *blasft_devmem_host_create(long long fail_alloc_after)
{
    host_devmem *h = calloc(1, sizeof *h);
    if (!h)
        return NULL;
    h->base.ops = &host_ops;
    pthread_mutex_init(&h->lock, NULL);
    h->fail_after = fail_alloc_after;
    return &h->base;
}

void blasft_devmem_host_stats_get(blasft_devmem *d, blasft_devmem_host_stats *out)
{
    host_devmem *h = (host_devmem *)d;
    pthread_mutex_lock(&h->lock);
    *out = h->st;
    pthread_mutex_unlock(&h->lock);
}
