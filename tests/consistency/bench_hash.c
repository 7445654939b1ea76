/* Throughput of the change hash: bench_hash [MiB] [threads...]; prints GB/s per thread count
 * (best of 5 runs over a region that is read from memory, not from cache). */
#include "consistency/hash.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

int main(int argc, char **argv)
{
    size_t mib = argc > 1 ? strtoul(argv[1], NULL, 10) : 512;
    size_t bytes = mib << 20, cols = 8192, rb = bytes / cols / 8 * 8;
    unsigned char *buf = malloc(rb * cols);
    memset(buf, 0x3c, rb * cols);
    for (size_t i = 0; i < rb * cols; i += 4096)
        buf[i] = (unsigned char)i;
    int def[] = {1, 2};
    int nt = argc > 2 ? argc - 2 : 2;
    printf("# %zu MiB region (%zu columns of %zu bytes), best of 5\n", (rb * cols) >> 20, cols, rb);
    uint64_t sink = 0;
    for (int i = 0; i < nt; i++) {
        int t = argc > 2 ? atoi(argv[2 + i]) : def[i];
        double best = 1e30;
        for (int r = 0; r < 5; r++) {
            double t0 = now();
            blasft_hash128 h = blasft_hash2d(buf, rb, cols, rb, t);
            double dt = now() - t0;
            sink += h.lo;
            if (dt < best)
                best = dt;
        }
        printf("threads %d: %.2f GB/s (%.2f ms)\n", t, (double)(rb * cols) / best / 1e9, best * 1e3);
    }
    /* the memory's own read rate on one thread, for comparison: a plain 64-bit xor over it */
    double best = 1e30;
    for (int r = 0; r < 5; r++) {
        double t0 = now();
        uint64_t x = 0;
        const uint64_t *w = (const uint64_t *)buf;
        for (size_t i = 0; i < rb * cols / 8; i++)
            x ^= w[i];
        double dt = now() - t0;
        sink += x;
        if (dt < best)
            best = dt;
    }
    printf("plain read, 1 thread: %.2f GB/s\n", (double)(rb * cols) / best / 1e9);
    free(buf);
    return sink == 42; /* keeps the hash from being optimised away */
}
