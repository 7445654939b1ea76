/* The 16-bit formats for the cuBLAS tests of half and bfloat16 GEMMs (test_cublas_lowp.c,
 * test_cublas_lowp_batched.c, test_cublaslt_entry.c): half (5 exponent bits, 10 mantissa bits),
 * bfloat16 (8, 7) and float, converted exactly on the host (cuda_fp16.h and cuda_bf16.h are C++
 * only); then what the cuBLAS tests of such GEMMs share: the types' and compute types' names, the
 * data's scale, the oracle's bound and sample, the scalars and the handle's math mode; last, what
 * test_cublas_lowp.c and test_cublas_lowp_batched.c share besides: their data and oracle's
 * elements, the sections' rotations, the run's counters, the common part of a case's verdict,
 * the captured sections' graph, the stress section and main. */
#ifndef BLASFT_HALF_TEST_H
#define BLASFT_HALF_TEST_H

#include <cublas_api.h>

#include "interpose_test.h"

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef enum { T_F16, T_BF16, T_F32 } etype;

static inline int mant_bits(etype t) { return t == T_F16 ? 10 : t == T_BF16 ? 7 : 23; }
static inline int exp_bits(etype t) { return t == T_F16 ? 5 : 8; }
static inline size_t esize(etype t) { return t == T_F32 ? 4 : 2; }
static inline double unit_out(etype t)
{
    return t == T_F16 ? 0x1p-11 : t == T_BF16 ? 0x1p-8 : 0x1p-24;
}
static inline double tiny_out(etype t) { return t == T_F16 ? 0x1p-24 : 1e-38; }

/* the value of the 16-bit word h of type t, exactly */
static inline double dec16(uint16_t h, etype t)
{
    const int p = mant_bits(t), eb = exp_bits(t), bias = (1 << (eb - 1)) - 1;
    const int ef = (h >> p) & ((1 << eb) - 1), f = h & ((1 << p) - 1);
    double v;
    if (ef == (1 << eb) - 1)
        v = f ? NAN : INFINITY;
    else if (ef == 0)
        v = ldexp(f, 1 - bias - p); /* subnormal */
    else
        v = ldexp(f + (1 << p), ef - bias - p);
    return (h & 0x8000) ? -v : v;
}

/* x rounded to the nearest value of the 16-bit type t (ties to even), as its word; NaN as the
 * positive quiet NaN */
static inline uint16_t enc16(double x, etype t)
{
    const int p = mant_bits(t), eb = exp_bits(t), bias = (1 << (eb - 1)) - 1;
    const unsigned inf = ((1u << eb) - 1) << p, sign = signbit(x) ? 0x8000u : 0;
    if (isnan(x))
        return (uint16_t)(inf | (1u << (p - 1)));
    const double a = fabs(x);
    if (a >= ldexp(2.0 - ldexp(1.0, -p - 1), bias)) /* rounds past the largest finite value */
        return (uint16_t)(sign | inf);
    if (a == 0)
        return (uint16_t)sign;
    int ex;
    (void)frexp(a, &ex); /* a in [2^(ex - 1), 2^ex) */
    const int E = ex - 1 < 1 - bias ? 1 - bias : ex - 1;
    /* a / 2^(E - p): exact; one rounding to an integer in [0, 2^(p + 1)]; a carry out of the
     * mantissa goes into the exponent field */
    const unsigned q = (unsigned)nearbyint(ldexp(a, p - E));
    return (uint16_t)(sign | (((unsigned)(E + bias - 1) << p) + q));
}

static inline double load(const void *buf, size_t i, etype t)
{
    if (t == T_F32) {
        float f;
        memcpy(&f, (const char *)buf + 4 * i, 4);
        return f;
    }
    uint16_t h;
    memcpy(&h, (const char *)buf + 2 * i, 2);
    return dec16(h, t);
}

/* x rounded to type t into element i of buf */
static inline void store(void *buf, size_t i, double x, etype t)
{
    if (t == T_F32) {
        const float f = (float)x;
        memcpy((char *)buf + 4 * i, &f, 4);
    } else {
        const uint16_t h = enc16(x, t);
        memcpy((char *)buf + 2 * i, &h, 2);
    }
}

/* ---- the cuBLAS side ---- */

/* element types as cuBLAS names them: A and B half or bfloat16, C of their type or float */
static const char *const type_names[] = {"16F", "16BF", "32F"};
static const cudaDataType cuda_types[] = {CUDA_R_16F, CUDA_R_16BF, CUDA_R_32F};

/* GemmEx's compute types (SgemmEx: 32F implied; Hgemm: 16F) */
typedef enum { CT_32F, CT_32F_PEDANTIC, CT_16F, CT_16F_PEDANTIC } compute;
static const cublasComputeType_t compute_types[] = {CUBLAS_COMPUTE_32F, CUBLAS_COMPUTE_32F_PEDANTIC,
                                                    CUBLAS_COMPUTE_16F, CUBLAS_COMPUTE_16F_PEDANTIC};
static const char *const compute_names[] = {"32F", "32F_PEDANTIC", "16F", "16F_PEDANTIC"};

static inline int is_half_compute(compute ct) { return ct == CT_16F || ct == CT_16F_PEDANTIC; }

/* The mixed series (2) under a half C is scaled by 2^-s, s split between A (*scale_a) and B
 * (*scale_b), so that |alpha| k max|a| max|b| + |beta| max|C| stays below 2^14; else 1. */
static inline void lowp_scales(int series, etype out, int k, double *scale_a, double *scale_b)
{
    int s = 0;
    if (series == 2 && out == T_F16) {
        s = (int)ceil(log2(1.25 * k + 2.0)) - 2;
        s = s > 0 ? s : 0;
    }
    *scale_a = ldexp(1.0, -(s + 1) / 2);
    *scale_b = ldexp(1.0, -s / 2);
}

/* The oracle's bound on |c - v| for a result v = alpha sum_l a_il b_lj + beta c of type out over k
 * products: av = |v|, mag = |alpha| sum_l |a_il b_lj| + |beta c|. FP32 accumulation: u |v| +
 * (k + 4) 2^-22 mag + tiny, and 32 u mag more where `loose` and C is 16-bit (cuBLAS's own split-K
 * partial sums may be rounded to C's type); half accumulation (half_acc): u |v| + (k + 2) 2^-10
 * mag + tiny + k 2^-24 (half's subnormals). */
static inline double lowp_bound(etype out, int k, double av, double mag, int half_acc, int loose)
{
    const double u = unit_out(out);
    if (half_acc)
        return u * av + (double)(k + 2) * 0x1p-10 * mag + tiny_out(out) + (double)k * 0x1p-24;
    double bound = u * av + (double)(k + 4) * 0x1p-22 * mag + tiny_out(out);
    if (loose && out != T_F32)
        bound += 32.0 * u * mag;
    return bound;
}

/* The oracle's sample: every element up to ORACLE_FULL multiply-adds, above them a grid of
 * GRID x GRID over C and SAMPLES random elements; grid_pos: the g-th of GRID positions in 0 ..
 * dim - 1 */
enum { ORACLE_FULL = 1 << 27, SAMPLES = 2000, GRID = 5 };
static inline int grid_pos(int dim, int g) { return (int)((int64_t)(dim - 1) * g / (GRID - 1)); }

/* the scalars as the call takes them: float, or half where the compute type is */
typedef struct scalars {
    float f[2];
    uint16_t h[2];
    void *dev; /* alpha and beta in device memory (NULL: host) */
    const void *alpha, *beta;
} scalars;

/* alpha and beta in half (half) or float, in device memory where dev (the handle's pointer mode
 * then device: unset_scalars sets it back) */
static inline void set_scalars(scalars *s, cublasHandle_t h, double alpha, double beta, int half,
                               int dev)
{
    s->f[0] = (float)alpha, s->f[1] = (float)beta;
    s->h[0] = enc16(alpha, T_F16), s->h[1] = enc16(beta, T_F16);
    const size_t es = half ? 2 : 4;
    const char *host = half ? (const char *)s->h : (const char *)s->f;
    s->dev = NULL;
    s->alpha = host, s->beta = host + es;
    if (dev && (s->dev = upload(host, 2 * es))) {
        s->alpha = s->dev, s->beta = (const char *)s->dev + es;
        cublasSetPointerMode_v2(h, CUBLAS_POINTER_MODE_DEVICE);
    }
}

static inline void unset_scalars(scalars *s, cublasHandle_t h)
{
    if (s->dev)
        cublasSetPointerMode_v2(h, CUBLAS_POINTER_MODE_HOST);
    cudaFree(s->dev);
    s->dev = NULL;
}

/* the handle's math mode: CUBLAS_DEFAULT_MATH, or with
 * CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION where math */
static inline void set_math(cublasHandle_t h, int math)
{
    cublasSetMathMode(h, math ? (cublasMath_t)(CUBLAS_DEFAULT_MATH |
                                               CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION)
                              : CUBLAS_DEFAULT_MATH);
}

/* ---- what test_cublas_lowp.c and test_cublas_lowp_batched.c share besides ---- */

/* A new buffer of `len` elements of type t, NaN everywhere (a read of padding or a gap shows in
 * C) but in `count` matrices of rows x cols (leading dimension ld) `stride` elements apart, whose
 * elements are drawn from the series with r (lowp_value, times scale), column by column */
static void *lowp_operand(size_t len, etype t, int count, size_t stride, int rows, int cols,
                          int ld, rng_t *r, int series, double scale)
{
    void *buf = malloc(esize(t) * len);
    for (size_t i = 0; i < len; i++) store(buf, i, NAN, t);
    for (int g = 0; g < count; g++)
        for (int j = 0; j < cols; j++)
            for (int i = 0; i < rows; i++)
                store(buf, (size_t)g * stride + (size_t)i + (size_t)j * (size_t)ld,
                      lowp_value(r, series, scale), t);
    return buf;
}

/* The oracle's element alpha sum_l a_l b_l + beta c0 over k products, each exact, summed in long
 * double, into *v, and |alpha| sum_l |a_l b_l| + |beta c0| (what its bound grows with:
 * lowp_bound) into *mag; beta = 0: c0 is not used (C is not read then, it may be NaN) */
static inline void lowp_element(const double *a, const double *b, size_t k, double alpha,
                                double beta, double c0, double *v, double *mag)
{
    long double s = 0, t = 0;
    for (size_t l = 0; l < k; l++) {
        const long double x = (long double)a[l] * b[l]; /* exact */
        s += x;
        t += fabsl(x);
    }
    long double sv = (long double)alpha * s, w = fabsl((long double)alpha) * t;
    if (beta != 0) {
        sv += (long double)beta * c0;
        w += fabsl((long double)beta * c0);
    }
    *v = (double)sv;
    *mag = (double)w;
}

#define OPN CUBLAS_OP_N
#define OPT CUBLAS_OP_T
#define OPC CUBLAS_OP_C

/* What the sections rotate through: the transpose pairs NN NT TN TT, and C (as T) on either
 * side; leading dimensions above the rows; scalars (alpha, beta, C NaN) */
static const cublasOperation_t pairs[6][2] = {{OPN, OPN}, {OPN, OPT}, {OPT, OPN},
                                              {OPT, OPT}, {OPC, OPN}, {OPN, OPC}};
static const int pads[] = {0, 1, 5};
static const double scal[4][3] = {{1.0, 0.0, 0}, {0.5, -2.0, 0}, {-1.25, 1.0, 0}, {-1.25, 0.0, 1}};
/* every transpose (the stress sections draw them) */
static const cublasOperation_t ops[3] = {OPN, OPT, OPC};

/* The bit a planted fault flips where it must be corrected: the highest of C's exponent (30 of
 * float, 14 of half and bfloat16) */
static inline int high_bit(etype out) { return out == T_F32 ? 30 : 14; }

/* What a run counts: its cases, the library's checks in them and the false alarms in its
 * fault-free calls (allowed: printed at the end) */
static uint64_t cases_run, abft_checks, false_alarms_seen;

/* The start of a case's verdict (judge), on its results: status; the worst error against the
 * oracle's bound but the planted elements' (at: where, with the value, reference and bound
 * there); the elements outside the oracle's sample finite; `outside` (what of C's buffer is not
 * results) unchanged. what: the case, as the messages name it. */
static void judge_results(const char *what, cublasStatus_t st, double worst, const char *at,
                          size_t nonfinite, size_t outside_bad, const char *outside)
{
    CHECK(st == CUBLAS_STATUS_SUCCESS, "%s: status %d", what, (int)st);
    CHECK(worst <= 1.0, "%s: error %.3g x bound (%s)", what, worst, at);
    CHECK(nonfinite == 0, "%s: %zu elements outside the oracle's sample not finite", what,
          nonfinite);
    CHECK(outside_bad == 0, "%s: %zu elements of %s changed", what, outside_bad, outside);
}

/* Then on the counters of its call of `gemms` GEMMs (s0 before it, s1 after): the case counted
 * with the library's checks in it; `gemms` protected GEMMs where prot, else as many unprotected;
 * nothing uncorrectable */
static void judge_counters(const char *what, const stats_t *s0, const stats_t *s1, int prot,
                           uint64_t gemms)
{
    const uint64_t protected_ = s1->protected_gemms - s0->protected_gemms,
                   unprotected = s1->unprotected_gemms - s0->unprotected_gemms,
                   uncorrectable = s1->uncorrectable - s0->uncorrectable;
    cases_run++;
    abft_checks += s1->checks - s0->checks;
    CHECK(protected_ == (prot ? gemms : 0) && unprotected == (prot ? 0 : gemms),
          "%s: %llu protected, %llu unprotected (expected %llu, %llu)", what,
          (unsigned long long)protected_, (unsigned long long)unprotected,
          (unsigned long long)(prot ? gemms : 0), (unsigned long long)(prot ? 0 : gemms));
    CHECK(uncorrectable == 0, "%s: %llu uncorrectable", what, (unsigned long long)uncorrectable);
}

/* A fault-free call: exactly `want` checks, nothing detected or corrected; its false alarms
 * counted */
static void judge_fault_free(const char *what, const stats_t *s0, const stats_t *s1,
                             uint64_t want)
{
    const uint64_t nchecks = s1->checks - s0->checks,
                   detected = s1->errors_detected - s0->errors_detected,
                   corrected = s1->errors_corrected - s0->errors_corrected;
    CHECK(nchecks == want, "%s: %llu checks (expected %llu)", what, (unsigned long long)nchecks,
          (unsigned long long)want);
    CHECK(detected == 0 && corrected == 0, "%s: %llu detected, %llu corrected without a fault",
          what, (unsigned long long)detected, (unsigned long long)corrected);
    false_alarms_seen += s1->false_alarms - s0->false_alarms;
}

/* A call with `plant` faults planted: its own `want` checks at least (a correction may check
 * again), every fault injected */
static void judge_planted(const char *what, const stats_t *s0, const stats_t *s1, uint64_t want,
                          int plant)
{
    const uint64_t nchecks = s1->checks - s0->checks,
                   injected = s1->faults_injected - s0->faults_injected;
    CHECK(nchecks >= want, "%s: %llu checks (expected at least %llu)", what,
          (unsigned long long)nchecks, (unsigned long long)want);
    CHECK(injected == (uint64_t)plant, "%s: %llu injected (expected %d)", what,
          (unsigned long long)injected, plant);
}

/* A graph's two replays on stream s, each launch a CHECK (what: the graph, as the messages name
 * it), after everything before them has finished; returns when they have */
static void replay_twice(cudaGraphExec_t exec, cudaStream_t s, const char *what)
{
    cudaDeviceSynchronize();
    for (int i = 0; i < 2; i++)
        CHECK(cudaGraphLaunch(exec, s) == cudaSuccess, "captured %s: launch %d", what, i);
    cudaStreamSynchronize(s);
}

/* A call captured into a graph on a stream of its own and the graph replayed twice (the captured
 * sections): capture_open; the call once uncaptured where the case is warm; capture_begin, the
 * call, capture_end; where that gives a graph, its results made NaN and capture_replays; last
 * capture_close */
typedef struct capture {
    cudaStream_t s;
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    cudaError_t ce;
    stats_t s0, s1, s2; /* the counters before the capture, after it and after the replays */
} capture;

/* the stream, made the handle's */
static void capture_open(capture *g, cublasHandle_t h)
{
    cudaStreamCreateWithFlags(&g->s, cudaStreamNonBlocking);
    cublasSetStream_v2(h, g->s);
    g->graph = NULL;
    g->exec = NULL;
}

/* The capture begun once what ran on the stream has finished (not where !ok: a buffer is
 * missing), `faults` faults (0: none) of bit `bit` planted at (row, col) for the captured call;
 * 1 where that call is to be made now */
static int capture_begin(capture *g, int ok, const char *what, int faults, int64_t row,
                         int64_t col, int bit)
{
    cudaStreamSynchronize(g->s);
    g->s0 = stats_now();
    g->ce = ok ? cudaStreamBeginCapture(g->s, cudaStreamCaptureModeGlobal)
               : cudaErrorMemoryAllocation;
    if (g->ce == cudaSuccess && faults)
        CHECK(plant_fault(faults, row, col, bit) == 0, "captured %s: plant_fault", what);
    return g->ce == cudaSuccess;
}

/* The capture ended (what was planted disarmed: a wrong path goes no further), the captured
 * call's status st and the capture's checked; 1 where the graph is ready to replay */
static int capture_end(capture *g, cublasStatus_t st, const char *what, int warm)
{
    if (g->ce == cudaSuccess) {
        plant_fault(0, 0, 0, 0);
        g->ce = cudaStreamEndCapture(g->s, &g->graph);
    }
    g->s1 = stats_now();
    CHECK(st == CUBLAS_STATUS_SUCCESS && g->ce == cudaSuccess,
          "captured %s (warm %d): status %d, %s", what, warm, (int)st, cudaGetErrorString(g->ce));
    return st == CUBLAS_STATUS_SUCCESS && g->ce == cudaSuccess &&
           cudaGraphInstantiate(&g->exec, g->graph, 0) == cudaSuccess;
}

/* the graph's two replays (replay_twice), then the counters */
static void capture_replays(capture *g, const char *what)
{
    replay_twice(g->exec, g->s, what);
    g->s2 = stats_now();
}

/* the graph and the stream gone, the handle back on the default stream */
static void capture_close(capture *g, cublasHandle_t h)
{
    if (g->exec)
        cudaGraphExecDestroy(g->exec);
    if (g->graph)
        cudaGraphDestroy(g->graph);
    cublasSetStream_v2(h, NULL);
    cudaStreamDestroy(g->s);
}

/* The stress section: `rounds` fault-free cases, the r-th drawn (urand, mixed with the run's
 * seed) and run by round(h, r); then what they counted, `what` naming them */
static void lowp_stress(cublasHandle_t h, int rounds, uint64_t seed, const char *what,
                        void (*round)(cublasHandle_t, int))
{
    const uint64_t before = cases_run, checks_before = abft_checks, fa_before = false_alarms_seen;
    seed_urand(seed);
    for (int r = 0; r < rounds; r++)
        round(h, r);
    printf("stress: %llu random %s, %llu checks of the library, %llu false alarms\n",
           (unsigned long long)(cases_run - before), what,
           (unsigned long long)(abft_checks - checks_before),
           (unsigned long long)(false_alarms_seen - fa_before));
}

/* A test's main: the start (test_start: --expect-off into *expect_off); BLASFT_BLOCK_SIZE into
 * *block_size and LOWP_SEED, where set, into *seed (the data); a handle; a line naming the run
 * (name) and what it expects; `sections` run with the handle and timed; the summary. Returns the
 * exit status. */
static int lowp_main(int argc, char **argv, const char *name, int *expect_off, int *block_size,
                     uint64_t *seed, void (*sections)(cublasHandle_t))
{
    const int start = test_start(argc, argv, expect_off);
    if (start)
        return start;
    *block_size = env_block_size();
    const char *v = getenv("LOWP_SEED");
    if (v && *v)
        *seed = strtoull(v, NULL, 0);
    cublasHandle_t h;
    if (cublasCreate_v2(&h) != CUBLAS_STATUS_SUCCESS) {
        fprintf(stderr, "cublasCreate failed\n");
        return 1;
    }
    printf("%s: block size %d, %s, seed %llu\n", name, *block_size,
           *expect_off ? "expecting pass-through" : "expecting protection",
           (unsigned long long)*seed);
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    sections(h);
    const double seconds = seconds_since(&t0);
    cublasDestroy_v2(h);
    printf("%llu cases, %llu checks of the library in them, %llu false alarms in fault-free "
           "calls, %.1f s; %d checks, %d failures\n",
           (unsigned long long)cases_run, (unsigned long long)abft_checks,
           (unsigned long long)false_alarms_seen, seconds, checks, failures);
    return failures ? 1 : 0;
}

#endif
