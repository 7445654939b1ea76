/* What an application does on the GPU beside the library, to see that the library leaves it
 * alone. Header-only, for the CUDA test programs.
 *  - A sentinel: device memory the application allocated and filled with one byte value, read
 *    back later (a library that kept addresses from before a device reset would write into it).
 *  - A capture probe: a CUDA graph that another application thread captures while a test runs
 *    GPU work beside it (test_offload capture, test_cublas_entry while_captured): a blocking
 *    stream (the legacy stream waits for it) captured in the default global mode, a memset
 *    before and one after the test's work, the graph replayed and its buffer checked. In global
 *    mode a call that the capture forbids, from any thread, fails and can end the capture with
 *    an error: the probe sees that.
 *  - A full device: the application holds nearly all device memory, as a framework's memory
 *    cache does (device_fill, device_unfill). */
#ifndef BLASFT_APP_PROBE_H
#define BLASFT_APP_PROBE_H

#include <cuda_runtime.h>

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

/* nb bytes of device memory, each v; NULL if that failed */
static unsigned char *sentinel_alloc(size_t nb, unsigned char v)
{
    unsigned char *d = NULL;
    if (cudaMalloc((void **)&d, nb) != cudaSuccess)
        return NULL;
    if (cudaMemset(d, v, nb) != cudaSuccess || cudaDeviceSynchronize() != cudaSuccess) {
        cudaFree(d);
        return NULL;
    }
    return d;
}

/* Frees the sentinel; returns how many of its bytes are no longer v (SIZE_MAX if it could not
 * be read) */
static size_t sentinel_free(unsigned char *d, size_t nb, unsigned char v)
{
    unsigned char *back = malloc(nb);
    size_t bad = SIZE_MAX;
    if (d && back && cudaMemcpy(back, d, nb, cudaMemcpyDeviceToHost) == cudaSuccess) {
        bad = 0;
        for (size_t i = 0; i < nb; i++)
            bad += back[i] != v;
    }
    free(back);
    cudaFree(d);
    return bad;
}

typedef struct capture_probe {
    void (*inside)(void *); /* run by the capturing thread while it captures (may be NULL) */
    void *arg;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int state;         /* 1: capture begun, 2: the test's work done */
    const char *fault; /* after capture_probe_finish: NULL, or what went wrong */
    pthread_t thread;
} capture_probe;

static void capture_probe_step(capture_probe *p, int set, int wait)
{
    pthread_mutex_lock(&p->lock);
    if (set) {
        p->state = set;
        pthread_cond_broadcast(&p->cond);
    }
    while (p->state < wait)
        pthread_cond_wait(&p->cond, &p->lock);
    pthread_mutex_unlock(&p->lock);
}

static void *capture_probe_thread(void *arg)
{
    capture_probe *p = arg;
    const size_t nb = (size_t)1 << 20;
    unsigned char *buf = NULL, *back = malloc(nb);
    cudaStream_t s = NULL;
    cudaGraph_t graph = NULL;
    cudaGraphExec_t exec = NULL;
    if (cudaStreamCreate(&s) != cudaSuccess || cudaMalloc((void **)&buf, nb) != cudaSuccess ||
        cudaMemset(buf, 0, nb) != cudaSuccess || cudaDeviceSynchronize() != cudaSuccess)
        p->fault = "setup";
    else if (cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal) != cudaSuccess ||
             cudaMemsetAsync(buf, 0x11, nb / 2, s) != cudaSuccess)
        p->fault = "capture begun";
    if (p->inside)
        p->inside(p->arg);
    capture_probe_step(p, 1, 2);
    if (!p->fault && cudaMemsetAsync(buf + nb / 2, 0x22, nb / 2, s) != cudaSuccess)
        p->fault = "the second memset";
    if (!p->fault && (cudaStreamEndCapture(s, &graph) != cudaSuccess || !graph))
        p->fault = "the capture's end";
    if (!p->fault && (cudaGraphInstantiate(&exec, graph, 0) != cudaSuccess ||
                      cudaGraphLaunch(exec, s) != cudaSuccess ||
                      cudaStreamSynchronize(s) != cudaSuccess ||
                      cudaMemcpy(back, buf, nb, cudaMemcpyDeviceToHost) != cudaSuccess))
        p->fault = "the replay";
    for (size_t i = 0; !p->fault && i < nb; i++)
        if (back[i] != (i < nb / 2 ? 0x11 : 0x22))
            p->fault = "the replayed graph's buffer";
    cudaGetLastError();
    if (exec)
        cudaGraphExecDestroy(exec);
    if (graph)
        cudaGraphDestroy(graph);
    cudaFree(buf);
    if (s)
        cudaStreamDestroy(s);
    free(back);
    return NULL;
}

/* Starts the capturing thread and returns once its capture has begun (and `inside` ran). */
static void capture_probe_start(capture_probe *p, void (*inside)(void *), void *arg)
{
    p->inside = inside;
    p->arg = arg;
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->cond, NULL);
    p->state = 0;
    p->fault = NULL;
    pthread_create(&p->thread, NULL, capture_probe_thread, p);
    capture_probe_step(p, 0, 1);
}

/* Lets the capture end, replays it; NULL if all went right, else what did not. */
static const char *capture_probe_finish(capture_probe *p)
{
    capture_probe_step(p, 2, 2);
    pthread_join(p->thread, NULL);
    pthread_mutex_destroy(&p->lock);
    pthread_cond_destroy(&p->cond);
    return p->fault;
}

/* Allocates device memory in halving chunks until even 1 MiB fails; returns the number of
 * buffers held (at most max) */
static int device_fill(void **held, int max)
{
    int n = 0;
    size_t chunk = (size_t)256 << 20;
    while (n < max && chunk >= ((size_t)1 << 20)) {
        if (cudaMalloc(&held[n], chunk) == cudaSuccess)
            n++;
        else
            chunk /= 2;
    }
    cudaGetLastError(); /* the last refusal */
    return n;
}

static void device_unfill(void **held, int n)
{
    for (int i = 0; i < n; i++)
        cudaFree(held[i]);
}

#endif
