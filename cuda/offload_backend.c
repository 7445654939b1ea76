#include "offload_backend.h"

#include "consistency/chunkcopy.h"

#include <cuda_runtime_api.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* The staging memory is cut into slots of at most this many bytes: small enough that the first
 * DMA starts soon and the last unpack is short, large enough that a pack pass keeps 16 threads
 * busy (64 chunks of the change hash) and per-copy costs stay small. */
#define TILE_MAX ((size_t)16 << 20)
#define MAX_SLOTS 32
/* A tile holds at most this many hash chunks (a chunk's dense span is at least half its 256 KiB
 * of words: rows of 4 bytes pad to 8). */
#define TILE_CHUNKS 160

typedef struct cuda_devmem {
    blasft_devmem base;
    pthread_mutex_t lock; /* one transfer at a time through the staging buffers */
    unsigned char *stage; /* nslots slots of tile bytes, one pinned allocation */
    size_t tile;
    int nslots;
    cudaStream_t stream[2];
    cudaEvent_t done[MAX_SLOTS]; /* the DMA out of / into slot i finished */
    int gone; /* its device was reset: no CUDA object or pinned byte of it may be touched */
} cuda_devmem;

static unsigned char *slot(cuda_devmem *c, int i) { return c->stage + (size_t)i * c->tile; }

static int cu_alloc(blasft_devmem *d, size_t bytes, void **dptr)
{
    (void)d;
    return cudaMalloc(dptr, bytes ? bytes : 1) == cudaSuccess ? 0 : -1;
}

static void cu_free(blasft_devmem *d, void *dptr)
{
    /* after a reset the address may be the application's allocation */
    if (!((cuda_devmem *)d)->gone)
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
    if (((cuda_devmem *)d)->gone)
        return -1;
    cuda_devmem *c = (cuda_devmem *)d;
    if (width == 0 || height == 0)
        return 0;
    int rc = 0, i = 0;
    tile t = {0, 0, 0, 0};
    pthread_mutex_lock(&c->lock);
    while (rc == 0 && next_tile(&t, width, height, c->tile)) {
        /* the slot is free once its previous DMA finished */
        if (cudaEventSynchronize(c->done[i]) != cudaSuccess) {
            rc = -1;
            break;
        }
        pack(slot(c, i), src, spitch, &t);
        if (cudaMemcpy2DAsync((unsigned char *)dst + t.j0 * dpitch + t.r0, dpitch, slot(c, i),
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
    if (((cuda_devmem *)d)->gone)
        return -1;
    cuda_devmem *c = (cuda_devmem *)d;
    if (width == 0 || height == 0)
        return 0;
    int rc = 0, i = 0;
    tile t = {0, 0, 0, 0}, pending[2];
    int have[2] = {0, 0};
    pthread_mutex_lock(&c->lock);
    /* DMA of tile n+1 runs while the host unpacks tile n */
    for (;;) {
        int more = rc == 0 && next_tile(&t, width, height, c->tile);
        if (more) {
            if (have[i]) { /* this half still holds an earlier tile: unpack it first */
                if (cudaEventSynchronize(c->done[i]) != cudaSuccess)
                    rc = -1;
                else
                    unpack(dst, dpitch, slot(c, i), &pending[i]);
                have[i] = 0;
            }
            if (cudaMemcpy2DAsync(slot(c, i), t.w, (const unsigned char *)src + t.j0 * spitch + t.r0,
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
                    unpack(dst, dpitch, slot(c, i), &pending[i]);
                have[i] = 0;
            }
        break;
    }
    pthread_mutex_unlock(&c->lock);
    return rc;
}

/* Chunks [c0, end) of the change hash whose dense bytes [*lo, *hi) fit in one slot. */
static size_t tile_of(const cuda_devmem *c, size_t rb, size_t cols, size_t chunks, size_t c0,
                      size_t *lo, size_t *hi)
{
    size_t l, h;
    blasft_hash_chunk_span(rb, cols, c0, lo, hi);
    size_t end = c0 + 1;
    while (end < chunks && end - c0 < TILE_CHUNKS) {
        blasft_hash_chunk_span(rb, cols, end, &l, &h);
        if (h - *lo > c->tile)
            break;
        *hi = h;
        end++;
    }
    return end;
}

static int sync_slots(cuda_devmem *c)
{
    int rc = 0;
    for (int i = 0; i < c->nslots; i++)
        if (cudaEventSynchronize(c->done[i]) != cudaSuccess)
            rc = -1;
    return rc;
}

/* Host threads pack (and hash) tile t into its slot while the DMA of the tiles before it runs;
 * only chunks whose digest changed are packed and copied. */
static int cu_upload_chunks(blasft_devmem *d, void *dst, const void *host, size_t row_bytes,
                            size_t cols, size_t ld_bytes, const blasft_hash128 *old,
                            blasft_hash128 *dig, size_t *copied,
                            const blasft_devmem_hook *before_write)
{
    if (((cuda_devmem *)d)->gone)
        return -1;
    cuda_devmem *c = (cuda_devmem *)d;
    size_t chunks = blasft_hash_chunk_count(row_bytes, cols);
    int rc = 0;
    bool wrote = false;
    *copied = 0;
    pthread_mutex_lock(&c->lock);
    for (size_t c0 = 0, t = 0; c0 < chunks && rc == 0; t++) {
        int s = (int)(t % (size_t)c->nslots);
        cudaStream_t st = c->stream[t % 2];
        size_t lo, hi;
        size_t end = tile_of(c, row_bytes, cols, chunks, c0, &lo, &hi);
        if (cudaEventSynchronize(c->done[s]) != cudaSuccess) {
            rc = -1;
            break;
        }
        bool cp[TILE_CHUNKS];
        blasft_chunk_pass p = {(void *)host, row_bytes, cols, ld_bytes, slot(c, s), lo, old, dig,
                               cp, c0, 0};
        size_t n = blasft_chunks_up(&p, end - c0);
        *copied += n;
        if (n && !wrote && before_write)
            before_write->fn(before_write->arg);
        wrote = wrote || n;
        /* one DMA per run of changed chunks */
        for (size_t i = 0; i < end - c0 && rc == 0;) {
            if (!cp[i]) {
                i++;
                continue;
            }
            size_t j = i, a, b, x, y;
            while (j + 1 < end - c0 && cp[j + 1])
                j++;
            blasft_hash_chunk_span(row_bytes, cols, c0 + i, &a, &x);
            blasft_hash_chunk_span(row_bytes, cols, c0 + j, &y, &b);
            if (cudaMemcpyAsync((unsigned char *)dst + a, slot(c, s) + (a - lo), b - a,
                                cudaMemcpyHostToDevice, st) != cudaSuccess)
                rc = -1;
            i = j + 1;
        }
        if (cudaEventRecord(c->done[s], st) != cudaSuccess)
            rc = -1;
        c0 = end;
    }
    if (sync_slots(c))
        rc = -1;
    pthread_mutex_unlock(&c->lock);
    return rc;
}

/* The token that orders reads of dense bytes [lo, hi) after the device work (NULL: none). */
static cudaEvent_t fence_for(const blasft_devmem_fence *f, size_t lo, size_t hi)
{
    if (!f || f->n <= 0)
        return NULL;
    for (int i = 0; i < f->n; i++)
        if (f->bounds[i] >= hi)
            return (cudaEvent_t)f->tokens[i];
    return lo < f->bounds[f->n - 1] ? (cudaEvent_t)f->tokens[f->n - 1] : NULL;
}

typedef struct down_tile {
    size_t c0, end, lo, hi;
} down_tile;

/* Test hook: the next download_chunks with a tile number fail_at fails before that tile reaches
 * the host. */
static int fail_at = -1;

int blasft_offload_backend_fail_download_at(int tile)
{
    return __atomic_exchange_n(&fail_at, tile, __ATOMIC_ACQ_REL);
}

/* The DMA of up to nslots tiles runs ahead while host threads unpack (and hash) the oldest. */
static int cu_download_chunks(blasft_devmem *d, void *host, size_t ld_bytes, const void *src,
                              size_t row_bytes, size_t cols, blasft_hash128 *dig,
                              const blasft_devmem_fence *fence, size_t *done)
{
    if (done)
        *done = 0;
    if (((cuda_devmem *)d)->gone)
        return -1;
    cuda_devmem *c = (cuda_devmem *)d;
    size_t chunks = blasft_hash_chunk_count(row_bytes, cols);
    down_tile pend[MAX_SLOTS];
    size_t issued = 0, next_chunk = 0, written = 0;
    int rc = 0;
    const int fail = __atomic_load_n(&fail_at, __ATOMIC_ACQUIRE);
    pthread_mutex_lock(&c->lock);
    for (size_t t = 0;; t++) {
        while (rc == 0 && next_chunk < chunks && issued < t + (size_t)c->nslots) {
            int s = (int)(issued % (size_t)c->nslots);
            cudaStream_t st = c->stream[issued % 2];
            down_tile *q = &pend[s];
            q->c0 = next_chunk;
            q->end = tile_of(c, row_bytes, cols, chunks, next_chunk, &q->lo, &q->hi);
            cudaEvent_t ev = fence_for(fence, q->lo, q->hi);
            if ((ev && cudaStreamWaitEvent(st, ev, 0) != cudaSuccess) ||
                cudaMemcpyAsync(slot(c, s), (const unsigned char *)src + q->lo, q->hi - q->lo,
                                cudaMemcpyDeviceToHost, st) != cudaSuccess ||
                cudaEventRecord(c->done[s], st) != cudaSuccess)
                rc = -1;
            next_chunk = q->end;
            issued++;
        }
        if (t >= issued || rc != 0)
            break;
        int s = (int)(t % (size_t)c->nslots);
        int planted = fail >= 0 && (size_t)fail == t;
        if (planted) /* fired: once */
            planted = __atomic_compare_exchange_n(&fail_at, &(int){fail}, -1, false,
                                                  __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
        if (cudaEventSynchronize(c->done[s]) != cudaSuccess || planted) {
            rc = -1;
            break;
        }
        down_tile *q = &pend[s];
        blasft_chunk_pass p = {host, row_bytes, cols, ld_bytes, slot(c, s), q->lo, NULL, dig, NULL,
                               q->c0, 0};
        blasft_chunks_down(&p, q->end - q->c0);
        written = q->hi; /* the tiles reach the host in order, each a span of whole chunks */
    }
    if (sync_slots(c))
        rc = -1;
    pthread_mutex_unlock(&c->lock);
    if (done)
        *done = written;
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
    if (c->gone) {
        pthread_mutex_destroy(&c->lock);
        free(c);
        return;
    }
    for (int i = 0; i < MAX_SLOTS; i++)
        if (c->done[i])
            cudaEventDestroy(c->done[i]);
    for (int i = 0; i < 2; i++)
        if (c->stream[i])
            cudaStreamDestroy(c->stream[i]);
    cudaFreeHost(c->stage); /* one allocation for every slot */
    pthread_mutex_destroy(&c->lock);
    free(c);
}

static const blasft_devmem_ops cuda_ops = {
    "cuda",         cu_alloc,          cu_free,           cu_upload, cu_download,
    cu_upload_chunks, cu_download_chunks, cu_default_budget, cu_destroy,
};

blasft_devmem *blasft_offload_backend_create(size_t staging_bytes)
{
    cuda_devmem *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->base.ops = &cuda_ops;
    pthread_mutex_init(&c->lock, NULL);
    /* slots of at least one hash chunk's span (256 KiB), at least 4 of them */
    c->tile = staging_bytes / 4 < TILE_MAX ? staging_bytes / 4 / 4096 * 4096 : TILE_MAX;
    if (c->tile < ((size_t)256 << 10))
        c->tile = (size_t)256 << 10;
    c->nslots = (int)(staging_bytes / c->tile);
    if (c->nslots > MAX_SLOTS)
        c->nslots = MAX_SLOTS;
    if (c->nslots < 4)
        c->nslots = 4;
    void *p = NULL;
    if (cudaHostAlloc(&p, (size_t)c->nslots * c->tile, cudaHostAllocDefault) != cudaSuccess) {
        pthread_mutex_destroy(&c->lock);
        free(c);
        return NULL;
    }
    c->stage = p;
    for (int i = 0; i < 2; i++)
        if (cudaStreamCreateWithFlags(&c->stream[i], cudaStreamNonBlocking) != cudaSuccess) {
            cu_destroy(&c->base);
            return NULL;
        }
    for (int i = 0; i < c->nslots; i++)
        if (cudaEventCreateWithFlags(&c->done[i], cudaEventDisableTiming) != cudaSuccess) {
            cu_destroy(&c->base);
            return NULL;
        }
    return &c->base;
}

void blasft_offload_backend_forget(blasft_devmem *d)
{
    cuda_devmem *c = (cuda_devmem *)d;
    pthread_mutex_lock(&c->lock);
    c->gone = 1;
    pthread_mutex_unlock(&c->lock);
}
