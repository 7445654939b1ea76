/* What the interposer's test programs share (test_cublas_entry.c, test_cublaslt_entry.c,
 * test_cublas_batched.c, test_cublas_lowp.c, test_cublas_lowp_batched.c): the check counter,
 * libblas_ft's counters, events and fault planting found in the process (it must be preloaded),
 * the block size, seeds, random data and its upload, an element's error against its bound and
 * a run's time. Header-only: each program is one translation unit. */
#ifndef BLASFT_INTERPOSE_TEST_H
#define BLASFT_INTERPOSE_TEST_H

#include <cuda_runtime.h>

#include "blas_ft.h" /* the event's type; the library's functions are found by dlsym */

#include <dlfcn.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

static int checks, failures;
#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        checks++;                                                                                  \
        if (!(cond)) {                                                                             \
            failures++;                                                                            \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                                   \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fputc('\n', stderr);                                                                   \
        }                                                                                          \
    } while (0)

/* libblas_ft's own API, found in the process */
typedef struct {
    uint64_t protected_gemms, unprotected_gemms, checks, errors_detected, errors_corrected,
        blocks_recomputed, uncorrectable, encoder_faults, faults_injected, false_alarms;
} stats_t;
static void (*get_stats)(stats_t *);
static int (*plant_fault)(int, int64_t, int64_t, int);
static void (*set_event_callback)(blasft_event_callback, void *);
/* the engine's own graphs made and replayed on the calling thread's contexts */
static void (*graph_counts)(uint64_t *captures, uint64_t *replays);

/* 0 once all four are found, else -1 (named on stderr) */
static int find_blasft(void)
{
    union { void *p; void (*f)(stats_t *); } gs = {.p = dlsym(RTLD_DEFAULT, "blasft_get_stats")};
    union { void *p; int (*f)(int, int64_t, int64_t, int); } pf = {
        .p = dlsym(RTLD_DEFAULT, "blasft_cublas_plant_fault")};
    union { void *p; void (*f)(blasft_event_callback, void *); } ec = {
        .p = dlsym(RTLD_DEFAULT, "blasft_set_event_callback")};
    union { void *p; void (*f)(uint64_t *, uint64_t *); } gc = {
        .p = dlsym(RTLD_DEFAULT, "blasft_cublas_graph_counts")};
    get_stats = gs.f;
    plant_fault = pf.f;
    set_event_callback = ec.f;
    graph_counts = gc.f;
    if (get_stats && plant_fault && set_event_callback && graph_counts)
        return 0;
    fprintf(stderr, "libblas_ft is not preloaded (LD_PRELOAD)\n");
    return -1;
}

/* The common start: --expect-off (every GEMM must pass through, BLASFT_MODE=off) into
 * *expect_off. Returns 0 to go on, else the exit status: 77 without a GPU, 1 without libblas_ft
 * preloaded. */
static int test_start(int argc, char **argv, int *expect_off)
{
    *expect_off = argc > 1 && strcmp(argv[1], "--expect-off") == 0;
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess || count < 1) {
        fprintf(stderr, "no GPU: skipped\n");
        return 77;
    }
    return find_blasft() ? 1 : 0;
}

/* The change of counter f over an outcome's call: its counters s0 before, s1 after */
#define DELTA(o, f) ((o)->s1.f - (o)->s0.f)

static stats_t stats_now(void)
{
    stats_t s;
    cudaDeviceSynchronize(); /* the counters arrive by stream host functions */
    get_stats(&s);
    return s;
}

/* The engine's graphs made and replayed so far on the calling thread's contexts */
typedef struct graph_mark {
    uint64_t made, replays;
} graph_mark;

static graph_mark graphs_now(void)
{
    graph_mark g;
    graph_counts(&g.made, &g.replays);
    return g;
}

/* The engine's own graphs over a call made `calls` times on the same buffers, one of them with a
 * planted fault (enqueued directly): where it is protected and BLASFT_GPU_GRAPHS is not off, one
 * made at its second sighting at least and every later call but the planted one replayed
 * (calls - 3); else none. before: graphs_now before the calls (this reads it again after). */
static void check_graph_counts(const char *what, int protected_, int calls,
                               const graph_mark *before)
{
    const graph_mark now = graphs_now();
    const uint64_t c0 = before->made, r0 = before->replays, c1 = now.made, r1 = now.replays;
    const char *gv = getenv("BLASFT_GPU_GRAPHS");
    if (protected_ && !(gv && strcasecmp(gv, "off") == 0))
        CHECK(c1 - c0 >= 1 && r1 - r0 >= (uint64_t)(calls - 3),
              "replayed %s: %llu graphs made, %llu replays (expected 1, %d)", what,
              (unsigned long long)(c1 - c0), (unsigned long long)(r1 - r0), calls - 3);
    else
        CHECK(c1 == c0 && r1 == r0, "replayed %s: %llu graphs made, %llu replays (expected none)",
              what, (unsigned long long)(c1 - c0), (unsigned long long)(r1 - r0));
}

/* The counters around a capture (s0 before it, s1 after it) and two replays of its graph (s2
 * after them): nothing protected or checked at the capture; in the replays `gemms` protected
 * GEMMs, `nchecks` checks (not `checks`: CHECK counts into that), `faults` detected and as many
 * corrected; `unprot` unprotected in all; nothing uncorrectable */
static void check_replays(const char *what, const stats_t *s0, const stats_t *s1,
                          const stats_t *s2, uint64_t gemms, uint64_t nchecks, uint64_t faults,
                          uint64_t unprot)
{
    CHECK(s1->protected_gemms == s0->protected_gemms && s1->checks == s0->checks &&
              s2->protected_gemms - s1->protected_gemms == gemms &&
              s2->unprotected_gemms - s0->unprotected_gemms == unprot &&
              s2->checks - s1->checks == nchecks &&
              s2->errors_detected - s1->errors_detected == faults &&
              s2->errors_corrected - s1->errors_corrected == faults &&
              s2->uncorrectable == s0->uncorrectable,
          "%s: %llu protected at the capture, %llu in two replays (expected %llu), %llu "
          "unprotected (expected %llu), %llu checks (expected %llu), %llu detected, %llu "
          "corrected (expected %llu), %llu uncorrectable", what,
          (unsigned long long)(s1->protected_gemms - s0->protected_gemms),
          (unsigned long long)(s2->protected_gemms - s1->protected_gemms),
          (unsigned long long)gemms,
          (unsigned long long)(s2->unprotected_gemms - s0->unprotected_gemms),
          (unsigned long long)unprot, (unsigned long long)(s2->checks - s1->checks),
          (unsigned long long)nchecks,
          (unsigned long long)(s2->errors_detected - s1->errors_detected),
          (unsigned long long)(s2->errors_corrected - s1->errors_corrected),
          (unsigned long long)faults,
          (unsigned long long)(s2->uncorrectable - s0->uncorrectable));
}

/* The matrices named by the events of the calls between events_begin and events_end (CUDA's
 * callback thread delivers a GPU GEMM's events; the first 64 kept) */
static pthread_mutex_t events_lock = PTHREAD_MUTEX_INITIALIZER;
static int events_n;
static int64_t events_matrix[64];

static void keep_event(const blasft_event *ev, void *user)
{
    (void)user;
    pthread_mutex_lock(&events_lock);
    if (events_n < 64)
        events_matrix[events_n] = ev->matrix;
    events_n++;
    pthread_mutex_unlock(&events_lock);
}

static void events_begin(void)
{
    pthread_mutex_lock(&events_lock);
    events_n = 0;
    pthread_mutex_unlock(&events_lock);
    set_event_callback(keep_event, NULL);
}

/* 1 where at least one event came, every one names a matrix of a batch of `count` (0 .. count-1;
 * -1 where count is 1) and each of the first `want` matrices is named; else 0, why in why */
static int events_end(int count, int want, char *why, size_t cap)
{
    cudaDeviceSynchronize();
    set_event_callback(NULL, NULL);
    pthread_mutex_lock(&events_lock);
    const int n = events_n < 64 ? events_n : 64;
    int ok = n > 0;
    snprintf(why, cap, "%d events", events_n);
    uint64_t seen = 0;
    for (int i = 0; i < n && ok; i++) {
        const int64_t g = events_matrix[i];
        if (count > 1 ? g < 0 || g >= count : g != -1) {
            snprintf(why, cap, "event %d names matrix %lld of a batch of %d", i, (long long)g,
                     count);
            ok = 0;
        } else if (g >= 0 && g < 64) {
            seen |= 1ull << g;
        }
    }
    for (int g = 0; ok && count > 1 && g < want && g < 64; g++)
        if (!(seen >> g & 1)) {
            snprintf(why, cap, "no event names matrix %d (%d events)", g, events_n);
            ok = 0;
        }
    pthread_mutex_unlock(&events_lock);
    return ok;
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static double urand(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (double)(rng >> 11) / 9007199254740992.0 * 2.0 - 1.0;
}

/* urand's state mixed with a run's base seed, as a stress section starts (never 0: xorshift
 * would stay there) */
static inline void seed_urand(uint64_t seed)
{
    rng ^= seed * 0x2545f4914f6cdd1dull;
    if (!rng)
        rng = 1;
}

/* BLASFT_BLOCK_SIZE as the library reads it: 256 where unset or malformed */
static inline int env_block_size(void)
{
    const char *v = getenv("BLASFT_BLOCK_SIZE");
    if (v && *v) {
        char *end;
        const long bs = strtol(v, &end, 10);
        if (!*end && bs >= 2 && bs <= 1024)
            return (int)bs;
    }
    return 256;
}

/* Seeded data per case (splitmix64): the batched and half tests */
typedef struct { uint64_t s; } rng_t;

static inline uint64_t next_u64(rng_t *r)
{
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static inline double unit(rng_t *r) { return (double)(next_u64(r) >> 11) * 0x1p-53; } /* [0, 1) */

static inline int below(rng_t *r, int n) { return (int)(next_u64(r) % (uint64_t)n); }

/* bytes from the host to new device memory (NULL where it cannot be had) */
static inline void *upload(const void *host, size_t bytes)
{
    void *d = NULL;
    if (cudaMalloc(&d, bytes ? bytes : 1) != cudaSuccess)
        return NULL;
    cudaMemcpy(d, host, bytes, cudaMemcpyHostToDevice);
    return d;
}

/* A case's seed: the run's base seed (LOWP_SEED, BATCHED_SEED) mixed with three numbers that
 * name the case */
static inline uint64_t seed_of(uint64_t base, uint64_t a, uint64_t b, uint64_t c)
{
    rng_t r = {base ^ (a * 0x100000001b3ull) ^ (b << 20) ^ (c << 40)};
    return next_u64(&r);
}

/* One value of the half and bfloat16 tests' series, not yet rounded to a 16-bit type: 0 uniform
 * in [-1, 1], 1 uniform in [0, 1], 2 mixed magnitudes (a random sign times 2^U, U uniform in
 * [-6, 6], times scale: a power of two) */
static inline double lowp_value(rng_t *r, int series, double scale)
{
    if (series == 0)
        return 2.0 * unit(r) - 1.0;
    if (series == 1)
        return unit(r);
    const double x = exp2(12.0 * unit(r) - 6.0) * scale;
    return (next_u64(r) & 1) ? -x : x;
}

/* the stress loops' draws: a dimension in 1 .. max (uniform or log-uniform, even odds), and in
 * 1 .. 300; an index below n */
static inline int draw_dim_to(int max)
{
    const double u = (urand() + 1.0) / 2.0;
    if (urand() < 0)
        return 1 + (int)(u * max) % max;
    const int d = (int)floor(exp(u * log((double)max)));
    return d < 1 ? 1 : d > max ? max : d;
}

static inline int draw_dim(void) { return draw_dim_to(300); }

static inline int draw(int n) { return (int)(((urand() + 1.0) / 2.0) * n) % n; }

/* |v - ref| / bound, an element's error against its bound; NaN (v NaN or Inf) as Inf: wrong */
static inline double error_ratio(double v, double ref, double bound)
{
    const double q = fabs(v - ref) / bound;
    return isnan(q) ? INFINITY : q;
}

/* The seconds since t0 (CLOCK_MONOTONIC): a run's time for its summary */
static inline double seconds_since(const struct timespec *t0)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)(t.tv_sec - t0->tv_sec) + 1e-9 * (double)(t.tv_nsec - t0->tv_nsec);
}

/* n values to the device as double (dbl) or float */
static void *to_device(const double *x, size_t n, int dbl)
{
    size_t es = dbl ? 8 : 4;
    void *h = malloc(es * (n ? n : 1)), *d = NULL;
    for (size_t i = 0; i < n; i++) {
        if (dbl) ((double *)h)[i] = x[i];
        else ((float *)h)[i] = (float)x[i];
    }
    cudaMalloc(&d, es * (n ? n : 1));
    cudaMemcpy(d, h, es * n, cudaMemcpyHostToDevice);
    free(h);
    return d;
}

#endif
