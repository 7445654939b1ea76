#include "offload_backend.h"

#include <cuda_runtime_api.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

typedef struct cuda_devmem {
    blasft_devmem base;
    pthread_mutex_t lock; /* one transfer at a time through the staging buffers */
    unsigned char *stage[2];
    size_t half;
    cudaStream_t stream[2];
    cudaEvent_t done[2]; /* the DMA out of / into stage[i] finished */
} cuda_devmem;

static int cu_alloc(blasft_devmem *d, size_t bytes, void **dptr)
{
    (void)d;
    return cudaMalloc(dptr, bytes ? bytes : 1) == cudaSuccess ? 0 : -1;
}

static void cu_free(blasft_devmem *d, void *dptr)
{
    (void)d;
    cudaFree(dptr);
}

/* One tile: rows [r0, r0 + w) bytes of columns [j0, j0 + nc). */
typedef struct tile {
    size_t r0, w, j0, nc;
} tile;

/* The next tile of a width x height copy that fits in half bytes, after t (t->nc == 0: first). */
static int next_tile(tile *t, size_t width, size_t height, size_t half)
{
    size_t w = width < half ? width : half;
    if (t->nc == 0) {
        *t = (tile){0, w, 0, 0};
    } else if (t->r0 + t->w < width) { /* next row segment of the same columns */
        t->r0 += t->w;
        t->w = width - t->r0 < w ? width - t->r0 : w;
        return 1;
    } else {
        t->j0 += t->nc;
        t->r0 = 0;
        t->w = w;
    }
    if (t->j0 >= height)
        return 0;
    size_t per = half / w;
    t->nc = height - t->j0 < per ? height - t->j0 : per;
    return 1;
}

static void pack(unsigned char *dst, const unsigned char *src, size_t spitch, const tile *t)
{
    for (size_t j = 0; j < t->nc; j++)
        memcpy(dst + j * t->w, src + (t->j0 + j) * spitch + t->r0, t->w);
}

static void unpack(unsigned char *dst, size_t dpitch, const unsigned char *src, const tile *t)
{
    for (size_t j = 0; j < t->nc; j++)
        memcpy(dst + (t->j0 + j) * dpitch + t->r0, src + j * t->w, t->w);
}

static int cu_upload(blasft_devmem *d, void *dst, size_t dpitch, const void *src, size_t spitch,
                     size_t width, size_t height)
{
    cuda_devmem *c = (cuda_devmem *)d;
    if (width == 0 || height == 0)
        return 0;
    int rc = 0, i = 0;
    tile t = {0, 0, 0, 0};
    pthread_mutex_lock(&c->lock);
    while (rc == 0 && next_tile(&t, width, height, c->half)) {
        /* the half is free once its previous DMA finished */
        if (cudaEventSynchronize(c->done[i]) != cudaSuccess) {
            rc = -1;
            break;
        }
        pack(c->stage[i], src, spitch, &t);
        if (cudaMemcpy2DAsync((unsigned char *)dst + t.j0 * dpitch + t.r0, dpitch, c->stage[i],
                              t.w, t.w, t.nc, cudaMemcpyHostToDevice, c->stream[i]) != cudaSuccess ||
            cudaEventRecord(c->done[i], c->stream[i]) != cudaSuccess)
            rc = -1;
        i ^= 1;
    }
    if (cudaEventSynchronize(c->done[0]) != cudaSuccess ||
        cudaEventSynchronize(c->done[1]) != cudaSuccess)
        rc = -1;
    pthread_mutex_unlock(&c->lock);
    return rc;
}

static int cu_download(blasft_devmem *d, void *dst, size_t dpitch, const void *src,
                       size_t spitch, size_t width, size_t height)
{
    cuda_devmem *c = (cuda_devmem *)d;
    if (width == 0 || height == 0)
        return 0;
    int rc = 0, i = 0;
    tile t = {0, 0, 0, 0}, pending[2];
    int have[2] = {0, 0};
    pthread_mutex_lock(&c->lock);
    /* DMA of tile n+1 runs while the host unpacks tile n */
    for (;;) {
        int more = rc == 0 && next_tile(&t, width, height, c->half);
        if (more) {
            if (have[i]) { /* this half still holds an earlier tile: unpack it first */
                if (cudaEventSynchronize(c->done[i]) != cudaSuccess)
                    rc = -1;
                else
                    unpack(dst, dpitch, c->stage[i], &pending[i]);
                have[i] = 0;
            }
            if (cudaMemcpy2DAsync(c->stage[i], t.w, (const unsigned char *)src + t.j0 * spitch + t.r0,
                                  spitch, t.w, t.nc, cudaMemcpyDeviceToHost, c->stream[i]) != cudaSuccess ||
                cudaEventRecord(c->done[i], c->stream[i]) != cudaSuccess)
                rc = -1;
            pending[i] = t;
            have[i] = 1;
            i ^= 1;
            continue;
        }
        for (int k = 0; k < 2; k++, i ^= 1)
            if (have[i]) {
                if (cudaEventSynchronize(c->done[i]) != cudaSuccess)
                    rc = -1;
                else
                    unpack(dst, dpitch, c->stage[i], &pending[i]);
                have[i] = 0;
            }
        break;
    }
    pthread_mutex_unlock(&c->lock);
    return rc;
}

static size_t cu_default_budget(blasft_devmem *d)
{
    (void)d;
    size_t free_b = 0, total = 0;
    if (cudaMemGetInfo(&free_b, &total) != cudaSuccess)
        return 0;
    /* the rest is for the engine's workspace, the result's old copy and other programs */
    return free_b / 10 * 6;
}

static void cu_destroy(blasft_devmem *d)
{
    cuda_devmem *c = (cuda_devmem *)d;
    for (int i = 0; i < 2; i++) {
        if (c->done[i])
            cudaEventDestroy(c->done[i]);
        if (c->stream[i])
            cudaStreamDestroy(c->stream[i]);
    }
    cudaFreeHost(c->stage[0]); /* one allocation for both halves */
    pthread_mutex_destroy(&c->lock);
    free(c);
}

static const blasft_devmem_ops cuda_ops = {
    "cuda", cu_alloc, cu_free, cu_upload, cu_download, cu_default_budget, cu_destroy,
};

blasft_devmem *blasft_offload_backend_create(size_t staging_bytes)
{
    cuda_devmem *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->base.ops = &cuda_ops;
    pthread_mutex_init(&c->lock, NULL);
    c->half = staging_bytes / 2 / 4096 * 4096;
    void *p = NULL;
    if (c->half == 0 || cudaHostAlloc(&p, 2 * c->half, cudaHostAllocDefault) != cudaSuccess) {
        pthread_mutex_destroy(&c->lock);
        free(c);
        return NULL;
    }
    c->stage[0] = p;
    c->stage[1] = c->stage[0] + c->half;
    for (int i = 0; i < 2; i++)
        if (cudaStreamCreateWithFlags(&c->stream[i], cudaStreamNonBlocking) != cudaSuccess ||
            cudaEventCreateWithFlags(&c->done[i], cudaEventDisableTiming) != cudaSuccess) {
            cu_destroy(&c->base);
            return NULL;
        }
    return &c->base;
}
