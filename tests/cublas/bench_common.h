/* What the two cuBLAS benchmarks share, header-only: included once by bench_cublas_lowp.c and
 * by bench_cublas_batched.c (each bench is one translation unit; everything here is static, and
 * nothing else includes it). It holds libblas_ft's symbols found with dlsym (the benchmark
 * bypass, the counters, the fault plant) and the counters themselves; the clock, the median of
 * the rounds, a round's events and host clock around the bench's own calls, calls per round;
 * JSON numbers; the splitmix64 random numbers behind --seed; for --fp the data series' names,
 * the fault-free counts (fp_count, fp_add, the flag part of their line), the shapes and the step
 * that orders the combinations; and main's common parts: the mode and count options and their
 * checks, the device's name for the JSON "device" field, the cuBLAS handle on its own stream.
 * What differs between the benches (types, pools, calls, their JSON lines) stays in each. */
#ifndef BENCH_COMMON_H
#define BENCH_COMMON_H

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <dlfcn.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* libblas_ft's counters (blasft_get_stats) */
typedef struct {
    uint64_t protected_gemms, unprotected_gemms, checks, errors_detected, errors_corrected,
        blocks_recomputed, uncorrectable, encoder_faults, faults_injected, false_alarms;
} stats_t;

static int (*bypass)(int);
static void (*get_stats)(stats_t *);
static int (*plant_fault)(int, int64_t, int64_t, int);

/* libblas_ft's symbols from the preloaded library; 0, or 1 with a line on stderr where it is not
 * preloaded (plant_fault may stay NULL: only --bits needs it) */
static inline int bench_find_symbols(void)
{
    union { void *p; int (*f)(int); } bp = {.p = dlsym(RTLD_DEFAULT, "blasft_cublas_bypass")};
    union { void *p; void (*f)(stats_t *); } gs = {.p = dlsym(RTLD_DEFAULT, "blasft_get_stats")};
    union { void *p; int (*f)(int, int64_t, int64_t, int); } pf = {
        .p = dlsym(RTLD_DEFAULT, "blasft_cublas_plant_fault")};
    bypass = bp.f;
    get_stats = gs.f;
    plant_fault = pf.f;
    if (!bypass || !get_stats) {
        fprintf(stderr, "libblas_ft is not preloaded (LD_PRELOAD): no blasft_cublas_bypass\n");
        return 1;
    }
    return 0;
}

/* libblas_ft's counters once this process's work is done: they arrive by a host function on
 * the interposer's report stream, which a sync of the caller's stream does not wait for */
static inline stats_t stats_after(void)
{
    stats_t st;
    cudaDeviceSynchronize();
    get_stats(&st);
    return st;
}

static inline double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static inline int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static inline double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* ---- a timed round: round_begin, the bench's `calls` calls on s, round_end ---- */

typedef struct bench_round {
    cudaEvent_t e0, e1;
    double t0;
} bench_round;

/* calls of kind plain (1) or protected (0) from here on, timed by events on s and the host clock */
static inline void round_begin(bench_round *r, cudaStream_t s, int plain)
{
    cudaEventCreate(&r->e0);
    cudaEventCreate(&r->e1);
    bypass(plain);
    cudaStreamSynchronize(s);
    cudaEventRecord(r->e0, s);
    r->t0 = now_s();
}

/* GPU ms per call by events, host ms per call to enqueue them into *host_ms; negative if a call
 * failed (bad: the failed calls) */
static inline double round_end(bench_round *r, cudaStream_t s, int calls, int bad, double *host_ms)
{
    const double t1 = now_s();
    cudaEventRecord(r->e1, s);
    cudaEventSynchronize(r->e1);
    bypass(0);
    float ms = 0;
    cudaEventElapsedTime(&ms, r->e0, r->e1);
    cudaEventDestroy(r->e0);
    cudaEventDestroy(r->e1);
    *host_ms = 1e3 * (t1 - r->t0) / calls;
    return bad ? -1.0 : (double)ms / calls;
}

/* calls per round for a call of t seconds: 20 at most (or the --calls value), a quarter of a
 * second a round */
static inline int calls_for(double t, int max_calls)
{
    const double c = 0.25 / (t > 1e-7 ? t : 1e-7);
    return c >= max_calls ? max_calls : c < 1 ? 1 : (int)c;
}

/* ---- JSON ---- */

/* a number for JSON: non-finite ones as strings */
static inline void print_num(double x)
{
    if (isnan(x))
        printf("\"nan\"");
    else if (isinf(x))
        printf("\"inf\"");
    else
        printf("%.3g", x);
}

/* ---- random numbers (--seed sets rng_state) ---- */

static inline uint64_t sm64(uint64_t *s) /* splitmix64 */
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static uint64_t rng_state = 0x243f6a8885a308d3ull;
static inline uint64_t next_u64(void) { return sm64(&rng_state); }
/* uniform below n (0 for n = 0); the bias, n / 2^64, is negligible for the n of the benches */
static inline uint64_t below(uint64_t n) { return n ? next_u64() % n : 0; }

/* ---- --fp ---- */

/* the fault-free counts of an (type, series) slot or of all; each bench prints its own fields */
typedef struct fp_count {
    uint64_t calls;
    uint64_t gemms;         /* the calls' matrices (bench_cublas_lowp: 1 per cublasGemmEx) */
    uint64_t checks;        /* the counters' checks */
    uint64_t expected;      /* the checks expected (bench_cublas_batched: the fused path's) */
    uint64_t unexpected;    /* calls whose checks were not those expected (batched: not fused) */
    uint64_t not_protected; /* bench_cublas_lowp: calls that did not add one protected GEMM
                             * per matrix */
    uint64_t batched;       /* bench_cublas_lowp: calls that were strided batches */
    uint64_t failed, false_alarms, detected, flagged_calls;
} fp_count;

static inline void fp_add(fp_count *t, const fp_count *c)
{
    t->calls += c->calls, t->gemms += c->gemms, t->checks += c->checks;
    t->expected += c->expected, t->unexpected += c->unexpected;
    t->not_protected += c->not_protected, t->batched += c->batched, t->failed += c->failed;
    t->false_alarms += c->false_alarms, t->detected += c->detected;
    t->flagged_calls += c->flagged_calls;
}

/* the flag part of an --fp line, each field with its comma: first_tier_flags = false_alarms +
 * errors_detected, flagged_calls, upper95_per_check (3 / checks with no flag, rule of three,
 * else null) */
static inline void fp_print_flags(const fp_count *c)
{
    const uint64_t flags = c->false_alarms + c->detected;
    printf("\"first_tier_flags\":%llu,\"false_alarms\":%llu,\"errors_detected\":%llu,"
           "\"flagged_calls\":%llu,",
           (unsigned long long)flags, (unsigned long long)c->false_alarms,
           (unsigned long long)c->detected, (unsigned long long)c->flagged_calls);
    if (!flags && c->checks)
        printf("\"upper95_per_check\":%.3g,", 3.0 / (double)c->checks);
    else
        printf("\"upper95_per_check\":null,");
}

/* every (m, n, k) of sizes^3 with m n k <= limit into shapes (room for nsizes^3), in the order
 * m, n, k of sizes; their count */
static inline int fp_shapes(const int *sizes, int nsizes, double limit, int (*shapes)[3])
{
    int nshapes = 0;
    for (int a = 0; a < nsizes; a++)
        for (int b = 0; b < nsizes; b++)
            for (int c = 0; c < nsizes; c++) {
                const int m = sizes[a], n = sizes[b], k = sizes[c];
                if ((double)m * n * k > limit)
                    continue;
                shapes[nshapes][0] = m, shapes[nshapes][1] = n, shapes[nshapes][2] = k;
                nshapes++;
            }
    return nshapes;
}

/* the data series (each bench fills them in its own types) */
enum { SER_UNIFORM, SER_UNIFORM01, SER_NORMAL, SER_HEAVY, SER_CANCEL, NSERIES };
static const char *const series_name[NSERIES] = {"uniform", "uniform01", "normal", "heavy",
                                                 "cancel"};

/* a step coprime with n, near 5 n / 8: combination (start + i step) mod n changes every part of
 * the combination from call to call */
static inline uint64_t coprime_step(uint64_t n)
{
    uint64_t step = n * 5 / 8 + 1;
    for (;; step++) {
        uint64_t x = step, y = n; /* Euclid: gcd(step, n) into x */
        while (y) {
            const uint64_t r = x % y;
            x = y, y = r;
        }
        if (x == 1)
            return step;
    }
}

/* ---- main's common parts ---- */

/* --fp SECONDS and --bits TRIALS at argv[*i]: 1 where taken (*i at the value); 0 otherwise, *i
 * moved past a value that is not positive, as the benches have always parsed them */
static inline int bench_mode_arg(int argc, char **argv, int *i, double *fp_seconds,
                                 int *bits_trials)
{
    if (strcmp(argv[*i], "--fp") == 0 && *i + 1 < argc && (*fp_seconds = atof(argv[++*i])) > 0)
        return 1;
    if (strcmp(argv[*i], "--bits") == 0 && *i + 1 < argc && (*bits_trials = atoi(argv[++*i])) > 0)
        return 1;
    return 0;
}

/* --rounds R and --calls C at argv[*i]: 1 where taken (*i at the value), else 0 */
static inline int bench_count_arg(int argc, char **argv, int *i, int *rounds, int *max_calls)
{
    if (strcmp(argv[*i], "--rounds") == 0 && *i + 1 < argc)
        *rounds = atoi(argv[++*i]);
    else if (strcmp(argv[*i], "--calls") == 0 && *i + 1 < argc)
        *max_calls = atoi(argv[++*i]);
    else
        return 0;
    return 1;
}

/* the options together: 0, or main's exit status with a line on stderr. cases: the cases given,
 * named by what (their form) where a mode other than timing is asked */
static inline int bench_check_args(double fp_seconds, int bits_trials, int ncases,
                                   const char *what, int rounds, int max_calls)
{
    const int timing = fp_seconds <= 0 && bits_trials <= 0;
    if (!timing && ncases) {
        fprintf(stderr, "%s cases are for the timing mode, not --fp or --bits\n", what);
        return 2;
    }
    if (bits_trials > 0 && !plant_fault) {
        fprintf(stderr, "--bits: libblas_ft has no blasft_cublas_plant_fault\n");
        return 1;
    }
    if (rounds < 1 || max_calls < 1) {
        fprintf(stderr, "--rounds and --calls take a positive count\n");
        return 2;
    }
    return 0;
}

/* GPU 0's name for the JSON "device" field (no '"' or '\\'); 0, or 77 (meson's skip) with "no GPU"
 * on stderr */
static inline int bench_device(char *device, size_t size)
{
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess || count < 1) {
        fprintf(stderr, "no GPU\n");
        return 77;
    }
    struct cudaDeviceProp prop;
    cudaGetDeviceProperties(&prop, 0);
    size_t o = 0;
    for (const char *c = prop.name; *c && o + 1 < size; c++)
        if (*c != '"' && *c != '\\')
            device[o++] = *c;
    device[o] = '\0';
    return 0;
}

/* a cuBLAS handle on a non-blocking stream of its own; 0, or 1 with a line on stderr */
static inline int bench_handle(cublasHandle_t *h, cudaStream_t *s)
{
    if (cudaStreamCreateWithFlags(s, cudaStreamNonBlocking) != cudaSuccess ||
        cublasCreate_v2(h) != CUBLAS_STATUS_SUCCESS ||
        cublasSetStream_v2(*h, *s) != CUBLAS_STATUS_SUCCESS) {
        fprintf(stderr, "cuBLAS handle or stream failed\n");
        return 1;
    }
    return 0;
}

#endif /* BENCH_COMMON_H */
