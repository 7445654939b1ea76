/* Plain against protected strided batches in one process (run with LD_PRELOAD=libblas_ft.so):
 * cublasDgemmStridedBatched and cublasSgemmStridedBatched, m = n = k, alpha 1, beta 0, packed
 * strides, on a stream of its own. Plain calls go straight to cuBLAS through the interposer's
 * benchmark switch (blasft_cublas_bypass(1)); protected ones through libblas_ft
 * (BLASFT_GPU_BATCHED as set: fused by default, or each).
 *
 * usage: bench_cublas_batched [--rounds R] [--calls C] [--types DS] [N:BATCH ...]
 *   default cases 8:10000 32:1000 64:1000 128:256 256:64 512:8 (the last over the fused path's
 *   size limit, m n k <= 2^24: matrix by matrix), types D then S, 5 rounds.
 * Per case and type: warm-up, then R rounds that alternate plain and protected; a round is up to
 * C calls (default 20; fewer where one call takes more than 12 ms, so that a round stays near a
 * quarter of a second), timed by events on the stream; the median of the rounds' time per call
 * is reported, with the host's time per call to enqueue them (wall clock from the first call to
 * the return of the last, before the wait). Once per case the protected result is compared with
 * the plain one: each element within twice the worst-case rounding of both, by norms
 * (2 (k + 2) u ||a_i|| ||b_j|| each).
 * One JSON line per case and type:
 *   {"type":"D","m":64,"batch":1000,"plain_ms":..,"protected_ms":..,"ratio":..,
 *    "plain_host_ms":..,"protected_host_ms":..,"calls_plain":..,"calls_protected":..,
 *    "rounds":..,"checks_per_call":..,"fused_checks_per_call":..,"false_alarms":..,
 *    "errors_detected":..,"max_err_over_bound":..,"mode":"fused","device":"..."}
 * with "warning" where the results differ by more than the bound or a call failed.
 * fused_checks_per_call is what the fused path counts (batch ceil(m / 256) n): checks_per_call
 * equal to it says the fused path ran. */
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <dlfcn.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct {
    uint64_t protected_gemms, unprotected_gemms, checks, errors_detected, errors_corrected,
        blocks_recomputed, uncorrectable, encoder_faults, faults_injected, false_alarms;
} stats_t;

static int (*bypass)(int);
static void (*get_stats)(stats_t *);

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

typedef struct bench {
    cublasHandle_t h;
    cudaStream_t s;
    int dbl, n, batch;
    void *A, *B, *C;
    long long stride; /* n * n */
} bench;

static cublasStatus_t gemm(const bench *b, void *C)
{
    const int n = b->n;
    if (b->dbl) {
        const double one = 1.0, zero = 0.0;
        return cublasDgemmStridedBatched(b->h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, b->A, n,
                                         b->stride, b->B, n, b->stride, &zero, C, n, b->stride,
                                         b->batch);
    }
    const float one = 1.0f, zero = 0.0f;
    return cublasSgemmStridedBatched(b->h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, b->A, n,
                                     b->stride, b->B, n, b->stride, &zero, C, n, b->stride,
                                     b->batch);
}

/* `calls` calls of kind plain (1) or protected (0): GPU ms per call by events, host ms per call
 * to enqueue them into *host_ms; negative if a call failed */
static double round_ms(const bench *b, int plain, int calls, double *host_ms)
{
    cudaEvent_t e0, e1;
    cudaEventCreate(&e0);
    cudaEventCreate(&e1);
    bypass(plain);
    cudaStreamSynchronize(b->s);
    int bad = 0;
    cudaEventRecord(e0, b->s);
    const double t0 = now_s();
    for (int i = 0; i < calls; i++)
        bad += gemm(b, b->C) != CUBLAS_STATUS_SUCCESS;
    const double t1 = now_s();
    cudaEventRecord(e1, b->s);
    cudaEventSynchronize(e1);
    bypass(0);
    float ms = 0;
    cudaEventElapsedTime(&ms, e0, e1);
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
    *host_ms = 1e3 * (t1 - t0) / calls;
    return bad ? -1.0 : (double)ms / calls;
}

/* calls per round for a call of t seconds: 20 at most (or the --calls value), a quarter of a
 * second a round */
static int calls_for(double t, int max_calls)
{
    const double c = 0.25 / (t > 1e-7 ? t : 1e-7);
    return c >= max_calls ? max_calls : c < 1 ? 1 : (int)c;
}

static void fill(void *d, size_t count, int dbl, uint64_t *seed)
{
    const size_t es = dbl ? 8 : 4;
    void *h = malloc(es * count);
    for (size_t i = 0; i < count; i++) {
        *seed = *seed * 6364136223846793005ull + 1442695040888963407ull;
        const double x = (double)(*seed >> 11) * 0x1p-52 - 1.0; /* [-1, 1) */
        if (dbl) ((double *)h)[i] = x;
        else ((float *)h)[i] = (float)x;
    }
    cudaMemcpy(d, h, es * count, cudaMemcpyHostToDevice);
    free(h);
}

/* the worst |protected - plain| over twice the worst-case rounding of one result, by norms */
static double compare(const bench *b, const void *Cplain, const void *Cprot)
{
    const size_t es = b->dbl ? 8 : 4, n = (size_t)b->n, per = n * n, all = per * (size_t)b->batch;
    unsigned char *a = malloc(es * all), *bb = malloc(es * all), *p = malloc(es * all),
                  *q = malloc(es * all);
    double *ra = malloc(sizeof(double) * n), *cb = malloc(sizeof(double) * n);
    cudaMemcpy(a, b->A, es * all, cudaMemcpyDeviceToHost);
    cudaMemcpy(bb, b->B, es * all, cudaMemcpyDeviceToHost);
    cudaMemcpy(p, Cplain, es * all, cudaMemcpyDeviceToHost);
    cudaMemcpy(q, Cprot, es * all, cudaMemcpyDeviceToHost);
#define AT(buf, i) (b->dbl ? ((const double *)(buf))[i] : (double)((const float *)(buf))[i])
    const double u = b->dbl ? 0x1p-53 : 0x1p-24;
    double worst = 0;
    for (size_t g = 0; g < (size_t)b->batch; g++) {
        const size_t o = g * per;
        for (size_t i = 0; i < n; i++) { /* rows of A, columns of B */
            double sa = 0, sb = 0;
            for (size_t l = 0; l < n; l++) {
                sa += AT(a, o + i + l * n) * AT(a, o + i + l * n);
                sb += AT(bb, o + l + i * n) * AT(bb, o + l + i * n);
            }
            ra[i] = sqrt(sa), cb[i] = sqrt(sb);
        }
        for (size_t j = 0; j < n; j++)
            for (size_t i = 0; i < n; i++) {
                const double d = fabs(AT(p, o + i + j * n) - AT(q, o + i + j * n));
                const double bound = 2.0 * 2.0 * (double)(n + 2) * u * ra[i] * cb[j] * 1.0000001 + 1e-300;
                double r = d / bound;
                if (isnan(r))
                    r = INFINITY;
                if (r > worst)
                    worst = r;
            }
    }
#undef AT
    free(a); free(bb); free(p); free(q); free(ra); free(cb);
    return worst;
}

static void run_case(cublasHandle_t h, cudaStream_t s, int dbl, int n, int batch, int rounds,
                     int max_calls, const char *mode, const char *device)
{
    bench b = {h, s, dbl, n, batch, NULL, NULL, NULL, (long long)n * n};
    const size_t es = dbl ? 8 : 4, all = (size_t)n * (size_t)n * (size_t)batch;
    void *C2 = NULL;
    if (cudaMalloc(&b.A, es * all) != cudaSuccess || cudaMalloc(&b.B, es * all) != cudaSuccess ||
        cudaMalloc(&b.C, es * all) != cudaSuccess || cudaMalloc(&C2, es * all) != cudaSuccess) {
        printf("{\"type\":\"%c\",\"m\":%d,\"batch\":%d,\"warning\":\"out of device memory\"}\n",
               dbl ? 'D' : 'S', n, batch);
        cudaFree(b.A); cudaFree(b.B); cudaFree(b.C); cudaFree(C2);
        cudaGetLastError();
        return;
    }
    uint64_t seed = 0x5eed0000ull + (uint64_t)n * 7919u + (uint64_t)batch;
    fill(b.A, all, dbl, &seed);
    fill(b.B, all, dbl, &seed);
    cudaMemset(b.C, 0, es * all);
    cudaMemset(C2, 0, es * all);

    /* the check, once: plain into C2, protected into C */
    int bad = 0;
    bypass(1);
    bad += gemm(&b, C2) != CUBLAS_STATUS_SUCCESS;
    bypass(0);
    bad += gemm(&b, b.C) != CUBLAS_STATUS_SUCCESS;
    cudaStreamSynchronize(s);
    const double err = compare(&b, C2, b.C);

    /* warm-up (the engine's graphs are made from the second repeat on), and one call of each
     * kind timed for the round's length */
    double host, t_plain = 0, t_prot = 0;
    for (int i = 0; i < 3; i++) {
        t_plain = round_ms(&b, 1, 1, &host) * 1e-3;
        t_prot = round_ms(&b, 0, 1, &host) * 1e-3;
    }
    const int cp = calls_for(t_plain, max_calls), cq = calls_for(t_prot, max_calls);
    double *pl = malloc(sizeof(double) * (size_t)rounds), *pr = malloc(sizeof(double) * (size_t)rounds);
    double *hp = malloc(sizeof(double) * (size_t)rounds), *hq = malloc(sizeof(double) * (size_t)rounds);
    stats_t s0, s1;
    uint64_t prot_calls = 0;
    cudaDeviceSynchronize();
    get_stats(&s0);
    for (int r = 0; r < rounds; r++) {
        pl[r] = round_ms(&b, 1, cp, &hp[r]);
        pr[r] = round_ms(&b, 0, cq, &hq[r]);
        bad += pl[r] < 0 || pr[r] < 0;
        prot_calls += (uint64_t)cq;
    }
    cudaDeviceSynchronize();
    get_stats(&s1);
    const double plain = median(pl, rounds), prot = median(pr, rounds);
    const double host_p = median(hp, rounds), host_q = median(hq, rounds);
    const uint64_t fused_checks = (uint64_t)batch * (uint64_t)((n + 255) / 256) * (uint64_t)n;
    printf("{\"type\":\"%c\",\"m\":%d,\"batch\":%d,\"plain_ms\":%.6g,\"protected_ms\":%.6g,"
           "\"ratio\":%.4g,\"plain_host_ms\":%.6g,\"protected_host_ms\":%.6g,\"calls_plain\":%d,"
           "\"calls_protected\":%d,\"rounds\":%d,\"checks_per_call\":%.6g,"
           "\"fused_checks_per_call\":%llu,\"false_alarms\":%llu,\"errors_detected\":%llu,"
           "\"max_err_over_bound\":%.3g,\"mode\":\"%s\",\"device\":\"%s\"",
           dbl ? 'D' : 'S', n, batch, plain, prot, prot / plain, host_p, host_q, cp, cq, rounds,
           prot_calls ? (double)(s1.checks - s0.checks) / (double)prot_calls : 0.0,
           (unsigned long long)fused_checks, (unsigned long long)(s1.false_alarms - s0.false_alarms),
           (unsigned long long)(s1.errors_detected - s0.errors_detected), err, mode, device);
    if (bad)
        printf(",\"warning\":\"%d calls failed\"", bad);
    else if (!(err <= 1.0))
        printf(",\"warning\":\"protected differs from plain by %.3g x the rounding bound\"", err);
    printf("}\n");
    fflush(stdout);
    free(pl); free(pr); free(hp); free(hq);
    cudaFree(b.A); cudaFree(b.B); cudaFree(b.C); cudaFree(C2);
}

int main(int argc, char **argv)
{
    union { void *p; int (*f)(int); } bp = {.p = dlsym(RTLD_DEFAULT, "blasft_cublas_bypass")};
    union { void *p; void (*f)(stats_t *); } gs = {.p = dlsym(RTLD_DEFAULT, "blasft_get_stats")};
    bypass = bp.f;
    get_stats = gs.f;
    if (!bypass || !get_stats) {
        fprintf(stderr, "libblas_ft is not preloaded (LD_PRELOAD): no blasft_cublas_bypass\n");
        return 1;
    }
    int rounds = 5, max_calls = 20, ncases = 0;
    const char *types = "DS";
    int cases[64][2];
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--rounds") == 0 && i + 1 < argc)
            rounds = atoi(argv[++i]);
        else if (strcmp(argv[i], "--calls") == 0 && i + 1 < argc)
            max_calls = atoi(argv[++i]);
        else if (strcmp(argv[i], "--types") == 0 && i + 1 < argc)
            types = argv[++i];
        else if (ncases < 64 && sscanf(argv[i], "%d:%d", &cases[ncases][0], &cases[ncases][1]) == 2 &&
                 cases[ncases][0] > 0 && cases[ncases][1] > 0)
            ncases++;
        else {
            fprintf(stderr, "usage: %s [--rounds R] [--calls C] [--types DS] [N:BATCH ...]\n",
                    argv[0]);
            return 2;
        }
    }
    if (rounds < 1 || max_calls < 1) {
        fprintf(stderr, "--rounds and --calls take a positive count\n");
        return 2;
    }
    if (!ncases) {
        static const int dflt[][2] = {{8, 10000}, {32, 1000}, {64, 1000},
                                      {128, 256}, {256, 64},  {512, 8}};
        for (size_t i = 0; i < sizeof dflt / sizeof dflt[0]; i++)
            cases[ncases][0] = dflt[i][0], cases[ncases][1] = dflt[i][1], ncases++;
    }
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess || count < 1) {
        fprintf(stderr, "no GPU\n");
        return 77;
    }
    struct cudaDeviceProp prop;
    cudaGetDeviceProperties(&prop, 0);
    char device[256];
    size_t o = 0;
    for (const char *c = prop.name; *c && o + 1 < sizeof device; c++)
        if (*c != '"' && *c != '\\')
            device[o++] = *c;
    device[o] = '\0';
    const char *mode = getenv("BLASFT_GPU_BATCHED");
    if (!mode || !*mode)
        mode = "fused";
    cublasHandle_t h;
    cudaStream_t s;
    if (cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) != cudaSuccess ||
        cublasCreate_v2(&h) != CUBLAS_STATUS_SUCCESS || cublasSetStream_v2(h, s) != CUBLAS_STATUS_SUCCESS) {
        fprintf(stderr, "cuBLAS handle or stream failed\n");
        return 1;
    }
    for (int i = 0; i < ncases; i++)
        for (const char *t = types; *t; t++)
            if (*t == 'D' || *t == 'S' || *t == 'd' || *t == 's')
                run_case(h, s, *t == 'D' || *t == 'd', cases[i][0], cases[i][1], rounds, max_calls,
                         mode, device);
    cublasDestroy_v2(h);
    cudaStreamDestroy(s);
    return 0;
}
