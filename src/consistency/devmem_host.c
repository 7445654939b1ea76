/* The host-memory "device": every buffer is its own malloc'ed block and the only way in or out
 * is an explicit copy, so a cache bug that would read stale device data shows up here as it
 * would on a GPU. */
#include "devmem.h"

#include <pthread.h>
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
    "host", host_alloc, host_free, host_upload, host_download, host_default_budget, host_destroy,
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
