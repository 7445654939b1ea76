/* Benchmark: protected GPU GEMM vs plain cuBLAS, side by side in one process, device-resident
 * data, no faults. One JSON object per (type, shape, block size) on stdout.
 * Usage: bench_gpu_gemm TYPES SHAPES BLOCKS CHECKSUMS REPS
 * BENCH_SKIPS="0,1,2,..." adds runs with stages left out (gpu_debug.h), for the breakdown.
 * BENCH_SCHED="-1,0,1,3" runs every listed schedule (gpu_debug.h; -1, the default, is automatic).
 * BENCH_TRACE=N prints N stage timelines per configuration (trace_ms: gpu_debug.h's points).
 * BENCH_THRESHOLD=proj: PROJ thresholds for the column checksums (default pea).
 * BENCH_TRANS=NT (op of A, op of B; N or T each, default NN): transposed operands, stored so.
 * BENCH_PROMOTE=1: S and C computed as D and Z and rounded once (blasft_gpu_params.promote),
 *   still timed against plain cuBLAS in the caller's type; =auto: the automatic choice;
 *   BENCH_PROMOTE_MEM_MB: the buffer of the promoted copies in MiB (default 1024).
 * BENCH_STREAM=1: also REPS calls of each back to back between two events, with no
 *   synchronisation in between (a framework's loop), ms per call (stream_plain_ms,
 *   stream_protected_ms), and the host's time per call to enqueue them (stream_host_plain_ms,
 *   stream_host_protected_ms: where it reaches the stream's time, the host bounds the loop);
 *   the interleaved timing synchronises after every call.
 * BENCH_MOVING=N (with BENCH_STREAM): the stream loop's calls take their operands from N places
 *   in turn (A, B and C each 64 elements further on per place; tiles of one matrix, a solver's
 *   panels), so that no two calls in a row have the same addresses.
 * BLASFT_GPU_GRAPHS=off: every call enqueued (default on, as the library's: from the second
 *   repetition of a GEMM up to m n k = 2^31 the engine replays its own graph of it; exact: no
 *   relocated replays of moving operands).
 *   TYPES "S,D"; SHAPES "1024,2048" (square) or "MxNxK" items; BLOCKS "32,64,128,256". */
#include "blasft_gpu.h"
#include "gpu_debug.h"

#include <cuda_runtime_api.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void ck(cudaError_t e, const char *w)
{
    if (e != cudaSuccess) {
        fprintf(stderr, "CUDA %s: %s\n", w, cudaGetErrorString(e));
        exit(1);
    }
}

/* Uniform [-1, 1) data from xorshift64*, generated once per size on the host. */
static void *random_device(size_t count, int is_float, uint64_t seed)
{
    size_t ts = is_float ? 4 : 8, chunk = (size_t)1 << 24;
    void *d, *h = malloc(ts * chunk);
    ck(cudaMalloc(&d, ts * count), "cudaMalloc");
    uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
    for (size_t off = 0; off < count; off += chunk) {
        size_t len = count - off < chunk ? count - off : chunk;
        for (size_t i = 0; i < len; i++) {
            x ^= x >> 12; x ^= x << 25; x ^= x >> 27;
            double v = (double)((x * 0x2545F4914F6CDD1Dull) >> 11) * 0x1.0p-52 - 1.0;
            if (is_float)
                ((float *)h)[i] = (float)v;
            else
                ((double *)h)[i] = v;
        }
        ck(cudaMemcpy((char *)d + ts * off, h, ts * len, cudaMemcpyHostToDevice), "upload");
    }
    free(h);
    return d;
}

static int cmp(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return x < y ? -1 : x > y;
}

static float median(float *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp);
    return n % 2 ? v[n / 2] : 0.5f * (v[n / 2 - 1] + v[n / 2]);
}

int main(int argc, char **argv)
{
    if (argc < 6) {
        fprintf(stderr, "usage: %s TYPES SHAPES BLOCKS CHECKSUMS REPS\n", argv[0]);
        return 2;
    }
    if (!blasft_gpu_available()) {
        fputs("no GPU\n", stderr);
        return 77;
    }
    int r = atoi(argv[4]), reps = atoi(argv[5]);
    blasft_gpu_ctx *ctx = blasft_gpu_ctx_create(NULL);
    cudaEvent_t e0, e1;
    ck(cudaEventCreate(&e0), "event");
    ck(cudaEventCreate(&e1), "event");
    char types[64], shapes[1024], blocks[256];
    snprintf(types, sizeof types, "%s", argv[1]);
    for (char *ty = strtok(types, ","); ty; ty = strtok(NULL, ",")) {
        /* S, D, C, Z: complex data are two parts per element */
        int is_float = ty[0] == 'S' || ty[0] == 'C', parts = ty[0] == 'C' || ty[0] == 'Z' ? 2 : 1;
        snprintf(shapes, sizeof shapes, "%s", argv[2]);
        char *sp_save = NULL;
        for (char *sh = strtok_r(shapes, ",", &sp_save); sh; sh = strtok_r(NULL, ",", &sp_save)) {
            long long m, n, k;
            if (sscanf(sh, "%lldx%lldx%lld", &m, &n, &k) != 3)
                m = n = k = atoll(sh);
            size_t ts = is_float ? 4 : 8;
            const int moving = getenv("BENCH_MOVING") ? atoi(getenv("BENCH_MOVING")) : 0;
            const size_t shift = 64 * (size_t)parts, more = moving > 1 ? shift * (moving - 1) : 0;
            void *A = random_device((size_t)(m * k * parts) + more, is_float, 1);
            void *B = random_device((size_t)(k * n * parts) + more, is_float, 2);
            void *C = random_device((size_t)(m * n * parts) + more, is_float, 3);
            float one_f[2] = {1.0f, 0.0f}, zero_f[2] = {0.0f, 0.0f};
            double one_d[2] = {1.0, 0.0}, zero_d[2] = {0.0, 0.0};
            blasft_gpu_gemm g;
            memset(&g, 0, sizeof g);
            g.type = parts == 2 ? (is_float ? BLASFT_TYPE_C : BLASFT_TYPE_Z)
                                : (is_float ? BLASFT_TYPE_S : BLASFT_TYPE_D);
            const char *trans = getenv("BENCH_TRANS");
            g.transa = trans && trans[0] == 'T' ? 'T' : 'N';
            g.transb = trans && trans[0] && trans[1] == 'T' ? 'T' : 'N';
            g.m = m; g.n = n; g.k = k;
            g.alpha = is_float ? (void *)one_f : (void *)one_d;
            /* BENCH_BETA: a beta in host memory (the old C read); default 0 */
            const double beta_v = getenv("BENCH_BETA") ? atof(getenv("BENCH_BETA")) : 0.0;
            float beta_f[2] = {(float)beta_v, 0.0f};
            double beta_d[2] = {beta_v, 0.0};
            g.beta = beta_v == 0.0 ? (is_float ? (void *)zero_f : (void *)zero_d)
                                   : (is_float ? (void *)beta_f : (void *)beta_d);
            g.a = A; g.lda = g.transa == 'N' ? m : k;
            g.b = B; g.ldb = g.transb == 'N' ? k : n;
            g.c = C; g.ldc = m;
            g.routine = "bench";
            /* BENCH_CVEC=1: the old C is a vector repeated over the columns (cublasLt's bias),
             * with beta 1 unless BENCH_BETA says otherwise; the plain baseline is the GEMM with
             * beta 0, which is what cublasLt's bias epilogue costs about */
            const int cvec = getenv("BENCH_CVEC") && atoi(getenv("BENCH_CVEC"));
            void *V = cvec ? random_device((size_t)m, is_float, 4) : NULL;
            blasft_gpu_gemm gp = g;
            if (cvec) {
                g.c_vector = V;
                if (!getenv("BENCH_BETA"))
                    g.beta = is_float ? (void *)one_f : (void *)one_d;
                gp.beta = is_float ? (void *)zero_f : (void *)zero_d;
            }
            snprintf(blocks, sizeof blocks, "%s", argv[3]);
            char *bs_save = NULL;
            for (char *bs = strtok_r(blocks, ",", &bs_save); bs; bs = strtok_r(NULL, ",", &bs_save)) {
                blasft_gpu_params p;
                memset(&p, 0, sizeof p);
                p.block_size = atoi(bs);
                p.checksums = r;
                p.weights = BLASFT_WEIGHTS_LINEAR;
                p.omega = 3.0;
                p.pea_p = 2;
                p.pea_block_lists = getenv("BLASFT_GPU_PEA_LISTS") && !strcmp(getenv("BLASFT_GPU_PEA_LISTS"), "block");
                p.rows_on_demand = !(getenv("BLASFT_GPU_ROW_CHECKS") && !strcmp(getenv("BLASFT_GPU_ROW_CHECKS"), "all"));
                p.proj = getenv("BENCH_THRESHOLD") && !strcmp(getenv("BENCH_THRESHOLD"), "proj");
                const char *promote = getenv("BENCH_PROMOTE");
                p.promote = !promote ? 0 : !strcmp(promote, "1") ? 1 : !strcmp(promote, "auto") ? 2 : 0;
                p.promote_mem = getenv("BENCH_PROMOTE_MEM_MB")
                                    ? (uint64_t)atoll(getenv("BENCH_PROMOTE_MEM_MB")) << 20
                                    : 0;
                p.mode = BLASFT_MODE_CORRECT;
                p.on_error = BLASFT_ON_ERROR_RECOMPUTE;
                /* the library's default: repeated calls replayed from the engine's graphs */
                const char *graphs = getenv("BLASFT_GPU_GRAPHS");
                p.graphs = !graphs ? 1 : !strcmp(graphs, "off") ? 0 : !strcmp(graphs, "exact") ? 2 : 1;
                if (blasft_gpu_reserve(ctx, g.type, m, n, k, &p, 0)) {
                    fprintf(stderr, "reserve failed for %s bs %s\n", sh, bs);
                    continue;
                }
                char skips[128];
                snprintf(skips, sizeof skips, "%s", getenv("BENCH_SKIPS") ? getenv("BENCH_SKIPS") : "0");
                char scheds[64];
                snprintf(scheds, sizeof scheds, "%s", getenv("BENCH_SCHED") ? getenv("BENCH_SCHED") : "-1");
                char *sc_save = NULL;
                for (char *sc = strtok_r(scheds, ",", &sc_save); sc; sc = strtok_r(NULL, ",", &sc_save)) {
                int sched = atoi(sc);
                blasft_gpu_set_schedule(ctx, sched);
                /* BENCH_REF_PARTS_MN: where the reference GEMMs go in parts (gpu_debug.h) */
                blasft_gpu_set_ref_parts_mn(
                    ctx, getenv("BENCH_REF_PARTS_MN") ? atoll(getenv("BENCH_REF_PARTS_MN")) : 0);
                char *sk_save = NULL;
                for (char *sk = strtok_r(skips, ",", &sk_save); sk; sk = strtok_r(NULL, ",", &sk_save)) {
                int skip = atoi(sk);
                blasft_gpu_set_skip(ctx, skip);
                float *tp = malloc(sizeof(float) * reps), *tq = malloc(sizeof(float) * reps);
                blasft_stats s0, s1;
                blasft_get_stats(&s0);
                for (int it = -2; it < reps; it++) {
                    /* interleaved, so drift in clocks hits both alike */
                    ck(cudaEventRecord(e0, NULL), "record");
                    if (blasft_gpu_gemm_plain(ctx, &gp))
                        return 1;
                    ck(cudaEventRecord(e1, NULL), "record");
                    ck(cudaEventSynchronize(e1), "sync");
                    float t;
                    ck(cudaEventElapsedTime(&t, e0, e1), "elapsed");
                    if (it >= 0)
                        tp[it] = t;
                    ck(cudaEventRecord(e0, NULL), "record");
                    if (blasft_gpu_gemm_run(ctx, &g, &p))
                        return 1;
                    ck(cudaEventRecord(e1, NULL), "record");
                    ck(cudaEventSynchronize(e1), "sync");
                    ck(cudaEventElapsedTime(&t, e0, e1), "elapsed");
                    if (it >= 0)
                        tq[it] = t;
                }
                float sp = -1.0f, sq = -1.0f;
                double hp = -1.0, hq = -1.0;
                if (getenv("BENCH_STREAM") && atoi(getenv("BENCH_STREAM")))
                    for (int side = 0; side < 2; side++) {
                        ck(cudaEventRecord(e0, NULL), "record");
                        struct timespec h0, h1;
                        clock_gettime(CLOCK_MONOTONIC, &h0);
                        for (int it = 0; it < reps; it++) {
                            blasft_gpu_gemm gm = side ? g : gp;
                            if (moving > 1) {
                                const size_t o = ts * shift * (size_t)(it % moving);
                                gm.a = (const char *)g.a + o;
                                gm.b = (const char *)g.b + o;
                                gm.c = (char *)g.c + o;
                            }
                            if (side ? blasft_gpu_gemm_run(ctx, &gm, &p) : blasft_gpu_gemm_plain(ctx, &gm))
                                return 1;
                        }
                        clock_gettime(CLOCK_MONOTONIC, &h1);
                        *(side ? &hq : &hp) = ((double)(h1.tv_sec - h0.tv_sec) * 1e3 +
                                               (double)(h1.tv_nsec - h0.tv_nsec) * 1e-6) / reps;
                        ck(cudaEventRecord(e1, NULL), "record");
                        ck(cudaEventSynchronize(e1), "sync");
                        float t;
                        ck(cudaEventElapsedTime(&t, e0, e1), "elapsed");
                        *(side ? &sq : &sp) = t / (float)reps;
                    }
                ck(cudaDeviceSynchronize(), "sync");
                blasft_get_stats(&s1);
                float mp = median(tp, reps), mq = median(tq, reps);
                double flops = (parts == 2 ? 8.0 : 2.0) * (double)m * (double)n * (double)k;
                printf("{\"type\":\"%c\",\"trans\":\"%c%c\",\"m\":%lld,\"n\":%lld,\"k\":%lld,\"bs\":%d,"
                       "\"checksums\":%d,\"reps\":%d,\"plain_ms\":%.4f,\"protected_ms\":%.4f,\"ratio\":%.4f,"
                       "\"plain_tflops\":%.2f,\"workspace_bytes\":%zu,\"detected\":%llu,"
                       "\"corrected\":%llu,\"recomputed\":%llu,\"skip\":%d,\"sched\":%d,\"lists\":\"%s\","
                       "\"rows\":\"%s\",\"threshold\":\"%s\",\"promote\":%d,\"promoted\":%d,"
                       "\"promote_mem\":%llu,\"gemms\":%llu,\"beta\":%g,\"cvec\":%d,"
                       "\"stream_plain_ms\":%.4f,\"stream_protected_ms\":%.4f,"
                       "\"stream_host_plain_ms\":%.4f,\"stream_host_protected_ms\":%.4f,"
                       "\"moving\":%d}\n",
                       ty[0], g.transa, g.transb, m, n, k, p.block_size, r, reps, mp, mq, mq / mp,
                       flops / (mp * 1e-3) / 1e12, blasft_gpu_workspace_need(g.type, m, n, k, &p),
                       (unsigned long long)(s1.errors_detected - s0.errors_detected),
                       (unsigned long long)(s1.errors_corrected - s0.errors_corrected),
                       (unsigned long long)(s1.blocks_recomputed - s0.blocks_recomputed), skip, sched,
                       p.pea_block_lists ? "block" : "vector", p.rows_on_demand ? "flagged" : "all",
                       p.proj ? "proj" : "pea", p.promote, blasft_gpu_promotes(g.type, m, n, k, &p),
                       (unsigned long long)p.promote_mem,
                       (unsigned long long)(s1.protected_gemms - s0.protected_gemms),
                       cvec ? (is_float ? (double)*(float *)g.beta : *(double *)g.beta) : beta_v,
                       cvec, sp, sq, hp, hq, moving);
                fflush(stdout);
                /* BENCH_TRACE=N: N more protected GEMMs with the stage timeline (gpu_debug.h) */
                int ntrace = getenv("BENCH_TRACE") ? atoi(getenv("BENCH_TRACE")) : 0;
                for (int it = 0; it < ntrace && blasft_gpu_set_trace(ctx, 1) == 0; it++) {
                    float tr[BLASFT_GPU_TRACE_POINTS];
                    if (blasft_gpu_gemm_plain(ctx, &g) || blasft_gpu_gemm_run(ctx, &g, &p) ||
                        blasft_gpu_trace_read(ctx, tr))
                        return 1;
                    printf("{\"type\":\"%c\",\"m\":%lld,\"bs\":%d,\"sched\":%d,\"trace_ms\":[", ty[0], m,
                           p.block_size, sched);
                    for (int i = 0; i < BLASFT_GPU_TRACE_POINTS; i++)
                        printf("%s%.4f", i ? "," : "", tr[i]);
                    printf("]}\n");
                }
                blasft_gpu_set_trace(ctx, 0);
                free(tp);
                free(tq);
                }
                snprintf(skips, sizeof skips, "%s", getenv("BENCH_SKIPS") ? getenv("BENCH_SKIPS") : "0");
                }
                blasft_gpu_set_skip(ctx, 0);
                blasft_gpu_set_schedule(ctx, BLASFT_GPU_SCHED_AUTO);
            }
            ck(cudaFree(A), "free");
            ck(cudaFree(B), "free");
            ck(cudaFree(C), "free");
            if (V)
                ck(cudaFree(V), "free");
            (void)ts;
        }
    }
    blasft_gpu_ctx_destroy(ctx);
    return 0;
}
