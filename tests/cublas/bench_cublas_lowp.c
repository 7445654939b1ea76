/* Plain against protected reduced-precision GEMMs in one process (run with
 * LD_PRELOAD=libblas_ft.so): cublasGemmEx with A and B in CUDA_R_16F or CUDA_R_16BF, C of the
 * same type or CUDA_R_32F, computeType CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT, float alpha and
 * beta in host memory, on a stream of its own; and cublasGemmStridedBatchedEx of such GEMMs
 * (cases N:BATCH and MxNxK:BATCH, and a quarter of the --fp calls). Plain calls go straight to
 * cuBLAS through the interposer's benchmark switch (blasft_cublas_bypass(1)); protected ones
 * through libblas_ft, each adding one protected GEMM and ceil(m / BS) n checks per matrix (BS:
 * BLASFT_BLOCK_SIZE where set, else 256).
 * Types (--types, case matters, run in the order given):
 *   H  fp16 in, fp16 out     h  fp16 in, fp32 out     B  bf16 in, bf16 out     b  bf16 in, fp32 out
 * --seed S changes every random choice: the data (timing cases, the pools) and the offsets,
 * shapes' starting point, sampled elements and planted elements.
 *
 * usage: bench_cublas_lowp [--rounds R] [--calls C] [--types HhBb] [--seed S]
 *                          [N | MxNxK | N:BATCH | MxNxK:BATCH ...]
 *   N and MxNxK: one GEMM per call (cublasGemmEx); N:BATCH and MxNxK:BATCH (the batch after the
 *   shape, as bench_cublas_batched's N:BATCH): a strided batch of BATCH such GEMMs per call
 *   (cublasGemmStridedBatchedEx, packed matrices: strides m k, k n and m n), e.g.
 *   512x512x64:64, 2048x2048x128:32 (attention's scores), 4096:8.
 *   default cases m = n = k = 1024 2048 4096 8192, types H then B, 5 rounds, NN, alpha 1,
 *   beta 0, A and B uniform [-1, 1] rounded to the input type (the same numbers for fp16 and
 *   bf16).
 * Per case and type: warm-up, then R rounds that alternate plain and protected; a round is up to
 * C calls (default 20; fewer where one call takes more than 12 ms, so that a round stays near a
 * quarter of a second), timed by events on the stream; the median of the rounds' time per call
 * is reported, and plain_tflops = 2 m n k batch / plain time (batch 1 for one GEMM). Once per
 * case and type the protected result is compared with the plain one: every element of every
 * matrix (4096 random ones where batch m n > 2^22) within
 *   |p - q| <= 2 u_o max(|p|, |q|) + 2 (k + 4) 2^-22 ||a_i|| ||b_j||
 * (u_o = 2^-11 fp16 out, 2^-8 bf16 out, 2^-24 fp32 out; the norms of A's row i and B's column j
 * from the uploaded numbers, on the host). One JSON line per case and type:
 *   {"type":"H","m":..,"n":..,"k":..,["batch":..,]"plain_ms":..,"protected_ms":..,"ratio":..,
 *    "plain_tflops":..,"plain_host_ms":..,"protected_host_ms":..,"calls_plain":..,
 *    "calls_protected":..,"rounds":..,"checks_per_call":..,"expected_checks_per_call":..,
 *    "protected_gemms_per_call":..,"false_alarms":..,"errors_detected":..,
 *    "max_err_over_bound":..,"compared":..,"device":".."}
 * ("batch" only in a strided batch's line; its times and host times are per call, i.e. per
 * batch) with "warning" where a call failed, the results differ by more than the bound, the
 * counters are not one protected GEMM per matrix and the expected checks (batch ceil(m / BS) n
 * for a batch) per protected call, or a fault-free call was flagged. compared: the elements
 * compared.
 *
 * bench_cublas_lowp --fp SECONDS [--types HhBb] [--seed S]
 *   False positives: fault-free protected calls of the types asked (default all four, run in the
 *   order H, h, B, b) for about SECONDS in all, shared by the (series, type) pairs. Series:
 *   uniform [-1, 1], uniform01 [0, 1], normal (sum of 4 uniforms), heavy (random sign times
 *   2^U[-8, 8], scaled by 2^-4: |a|, |b| <= 2^4, which with k <= 1024 keeps C far from fp16's
 *   65504), cancel (A's half of the pool positive, B's half alternating in sign by index,
 *   magnitudes 2^e (1 + 2^-5 r), e in [-6, 6] constant over blocks of 2^16, r uniform [-1, 1]:
 *   op(B)'s columns alternate in sign along k, so C is small against sum |a| |b|; 2^-5 where
 *   bench_cublas_batched has 2^-12, as fp16 and bf16 keep only 10 and 7 fraction bits). Each
 *   call the next of every (m, n, k) from {1, 3, 17, 64, 128, 255, 256, 300, 1000, 1024} with
 *   m n k <= 2^28 (so k <= 1024), x NN/NT/TN/TT, x (alpha, beta) in (1, 0), (-0.75, 0),
 *   (1.5, 1), (0.5, -2), in an order that changes all of them from call to call. One call in
 *   four (drawn at random) is a cublasGemmStridedBatchedEx instead: its (m, n, k) from
 *   {1, 3, 17, 64, 128, 255, 256, 300} with m n k <= 2^22, the transposes and scalars as above,
 *   in an order of their own; 2 to 64 matrices drawn uniformly (fewer where they would not fit
 *   a pool's half or C's 2^22 elements; at least 46 fit), each stride (A's, B's, C's) either
 *   packed (ld times the columns) or, half the time, 1 to 64 elements more. Operands at random
 *   offsets into a pool of 2^23 numbers per series and input type, generated on the host
 *   from a seed of the series' own and uploaded once per series (A from its first half, B from
 *   its second; the old C, where beta != 0, copied from anywhere in the pool of C's type: the
 *   same numbers as floats for h and b). The counters are read after every call; a call whose
 *   errors_detected moved is described on stderr ("mode":"fp-flag", with the pool's seed and size:
 *   enough to repeat it; A at pool + offa, B at pool + pool / 2 + offb, the old C at offc of the
 *   pool of C's type; "batch" 0 for cublasGemmEx, else the matrices and "stridea", "strideb",
 *   "stridec"). One line per (type, series), and one "all":
 *   {"mode":"fp","type":"H","series":"heavy","calls":..,"checks":..,"expected_checks":..,
 *    "first_tier_flags":..,"false_alarms":..,"errors_detected":..,"flagged_calls":..,
 *    "upper95_per_check":..,"unexpected_checks_calls":..,"not_protected_calls":..,
 *    "failed_calls":..,"gemms":..,"batched_calls":..,"seconds":..,"device":".."}
 *   first_tier_flags = false_alarms + errors_detected; upper95_per_check: 3 / checks with no flag
 *   (rule of three), else null; unexpected_checks_calls: calls whose checks were not
 *   ceil(m / BS) n per matrix; not_protected_calls: calls that did not add exactly one protected
 *   GEMM per matrix; flagged_calls: calls whose errors_detected moved; gemms: the matrices of
 *   all calls; batched_calls: the calls that were strided batches.
 *
 * bench_cublas_lowp --bits TRIALS [--n N] [--types HhBb] [--seed S]
 *   Detection per flipped bit: for each type asked (default all four, run in the order given),
 *   m = n = k = N (default
 *   1024), NN, alpha 1, beta 0, A and B uniform [-1, 1] at random offsets into a pool of the
 *   input type (fresh per call), for every bit of C's type (0-15 for H and B, 0-31 for h and b)
 *   TRIALS calls each with one planted fault, blasft_cublas_plant_fault(1, row, col, bit) at a
 *   random element (after the GEMM, before the check), then the same call plain (bypass) into
 *   another C. One line per (type, bit):
 *   {"mode":"bits","type":"H","bit":..,"field":"mantissa","trials":..,"flips":..,"detected":..,
 *    "corrected":..,"recomputed":..,"false_alarms":..,"restored":..,"identical":..,
 *    "undetected_max_rel":..,"failed_calls":..,"seconds":..,"n":..,"device":".."}
 *   flips: the counters' faults_injected; detected, corrected, recomputed: calls whose
 *   errors_detected, errors_corrected, blocks_recomputed moved; false_alarms: the counter's sum;
 *   restored: calls whose final C(row, col) is within 2 u_o |plain| of the plain result;
 *   identical: the same bits; undetected_max_rel: the largest |c - plain| / |plain| at the
 *   flipped element over undetected calls ("inf" for NaN or plain 0; null with none). And a
 *   "bits-total" line per type: trials, detected, corrected, restored, false_alarms over all
 *   bits, and the share detected over all bits, the exponent bits, the mantissa bits and the
 *   sign bit. */
#include "bench_common.h"

/* ---- random numbers (sm64, rng_state, next_u64, below: bench_common.h) ---- */

static uint64_t seed0 = 0x243f6a8885a308d3ull; /* --seed as given: the pools' seeds */
static double u01_of(uint64_t *s) { return (double)(sm64(s) >> 11) * 0x1p-53; } /* [0, 1) */
static double sym1_of(uint64_t *s) { return 2.0 * u01_of(s) - 1.0; }             /* [-1, 1) */

/* ---- fp16 and bf16, by their bits (round to nearest, ties to even) ---- */

static uint16_t to_half(double x)
{
    if (isnan(x))
        return 0x7e00;
    const uint16_t sign = signbit(x) ? 0x8000 : 0;
    const double a = fabs(x);
    if (a >= 65520.0) /* rounds to infinity (65504 is the largest finite) */
        return (uint16_t)(sign | 0x7c00);
    if (a < 0x1p-14) /* subnormal: units of 2^-24 (1024 of them: the smallest normal) */
        return (uint16_t)(sign | (uint16_t)nearbyint(a * 0x1p24));
    int e;
    double q = nearbyint(ldexp(frexp(a, &e), 11)); /* 11 significant bits: [1024, 2048] */
    if (q == 2048.0)
        q = 1024.0, e++;
    if (e - 1 > 15)
        return (uint16_t)(sign | 0x7c00);
    return (uint16_t)(sign | (uint16_t)((e - 1 + 15) << 10) | (uint16_t)((int)q - 1024));
}

static double from_half(uint16_t h)
{
    const int e = (h >> 10) & 31, f = h & 1023;
    const double v = e == 0 ? ldexp(f, -24) : e == 31 ? (f ? NAN : INFINITY) : ldexp(f + 1024, e - 25);
    return h & 0x8000 ? -v : v;
}

static uint16_t to_bf16(double x)
{
    if (isnan(x))
        return 0x7fc0;
    const uint16_t sign = signbit(x) ? 0x8000 : 0;
    const double a = fabs(x);
    if (isinf(a))
        return (uint16_t)(sign | 0x7f80);
    if (a < 0x1p-126) /* subnormal: units of 2^-133 */
        return (uint16_t)(sign | (uint16_t)nearbyint(a * 0x1p133));
    int e;
    double q = nearbyint(ldexp(frexp(a, &e), 8)); /* 8 significant bits: [128, 256] */
    if (q == 256.0)
        q = 128.0, e++;
    if (e - 1 > 127)
        return (uint16_t)(sign | 0x7f80);
    return (uint16_t)(sign | (uint16_t)((e - 1 + 127) << 7) | (uint16_t)((int)q - 128));
}

static double from_bf16(uint16_t h)
{
    const uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* ---- the types ---- */

typedef struct ltype {
    char code; /* H h B b */
    int bf16;  /* inputs bf16 (B, b), else fp16 */
    int c32;   /* C in float (h, b), else the inputs' type */
} ltype;

static int type_of(char code, ltype *t)
{
    if (!strchr("HhBb", code) || !code)
        return 0;
    t->code = code;
    t->bf16 = code == 'B' || code == 'b';
    t->c32 = code == 'h' || code == 'b';
    return 1;
}

static cudaDataType in_type(const ltype *t) { return t->bf16 ? CUDA_R_16BF : CUDA_R_16F; }
static cudaDataType out_type(const ltype *t) { return t->c32 ? CUDA_R_32F : in_type(t); }
static size_t c_size(const ltype *t) { return t->c32 ? 4 : 2; }
static int c_bits(const ltype *t) { return t->c32 ? 32 : 16; }
/* the unit roundoff of C's type */
static double u_out(const ltype *t) { return t->c32 ? 0x1p-24 : t->bf16 ? 0x1p-8 : 0x1p-11; }

static double in_value(const ltype *t, uint16_t v) { return t->bf16 ? from_bf16(v) : from_half(v); }

/* element i of a C of the type on the host */
static double c_value(const ltype *t, const void *c, size_t i)
{
    if (t->c32)
        return ((const float *)c)[i];
    return in_value(t, ((const uint16_t *)c)[i]);
}

/* bit's field in C's type */
static const char *bit_field(const ltype *t, int bit)
{
    const int mant = t->c32 ? 23 : t->bf16 ? 7 : 10;
    return bit == c_bits(t) - 1 ? "sign" : bit >= mant ? "exponent" : "mantissa";
}

/* the engine's block size: BLASFT_BLOCK_SIZE where set (2 to 1024, as the library takes it),
 * else the GPU engine's 256 */
static int block_size(void)
{
    const char *v = getenv("BLASFT_BLOCK_SIZE");
    if (v && *v) {
        char *end;
        const long b = strtol(v, &end, 10);
        while (*end == ' ' || *end == '\t')
            end++;
        if (end != v && !*end && b >= 2 && b <= 1024)
            return (int)b;
    }
    return 256;
}

typedef struct env {
    cublasHandle_t h;
    cudaStream_t s;
    const char *types, *device;
    int bs;
} env;

static uint64_t expected_checks(const env *e, int m, int n)
{
    return (uint64_t)((m + e->bs - 1) / e->bs) * (uint64_t)n;
}

/* ---- one call ---- */

typedef struct call {
    int m, n, k, ta, tb, lda, ldb, ldc;
    int batch;                /* 0: cublasGemmEx; >= 1: cublasGemmStridedBatchedEx of `batch` */
    long long sa, sb, sc;     /* the batch's strides (elements) */
    size_t offa, offb, offc; /* --fp, --bits: A into the pool's first half, B its second, C anywhere */
    double alpha, beta;
} call;

/* the matrices a call multiplies: 1 for cublasGemmEx */
static int matrices(const call *c) { return c->batch > 0 ? c->batch : 1; }

/* the call: cublasGemmEx, or cublasGemmStridedBatchedEx where c->batch >= 1 */
static cublasStatus_t gemm_call(cublasHandle_t h, const ltype *t, const call *c, const void *A,
                                const void *B, void *C)
{
    const float alpha = (float)c->alpha, beta = (float)c->beta;
    const cublasOperation_t ta = c->ta ? CUBLAS_OP_T : CUBLAS_OP_N,
                            tb = c->tb ? CUBLAS_OP_T : CUBLAS_OP_N;
    if (c->batch > 0)
        return cublasGemmStridedBatchedEx(h, ta, tb, c->m, c->n, c->k, &alpha, A, in_type(t),
                                          c->lda, c->sa, B, in_type(t), c->ldb, c->sb, &beta, C,
                                          out_type(t), c->ldc, c->sc, c->batch,
                                          CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    return cublasGemmEx(h, ta, tb, c->m, c->n, c->k, &alpha, A, in_type(t), c->lda, B,
                        in_type(t), c->ldb, &beta, C, out_type(t), c->ldc, CUBLAS_COMPUTE_32F,
                        CUBLAS_GEMM_DEFAULT);
}

/* ---- the data series: count numbers from a seed, rounded to the input type (out16) and to float
 * (outf, where not NULL); half: where B's part of a pool begins (cancel) ---- */

static void series_fill(int ser, uint64_t seed, size_t count, size_t half, int bf16,
                        uint16_t *out16, float *outf)
{
    uint64_t s = seed;
    int e = 0;
    for (size_t i = 0; i < count; i++) {
        double x;
        switch (ser) {
        case SER_UNIFORM: x = sym1_of(&s); break;
        case SER_UNIFORM01: x = u01_of(&s); break;
        case SER_NORMAL: /* sum of 4 uniforms, scaled to variance 1 */
            x = (sym1_of(&s) + sym1_of(&s) + sym1_of(&s) + sym1_of(&s)) * 0.8660254037844386;
            break;
        case SER_HEAVY: /* random sign times 2^U[-8, 8], times 2^-4: within [2^-12, 2^4] */
            x = (sm64(&s) & 1 ? -1.0 : 1.0) * exp2(16.0 * u01_of(&s) - 12.0);
            break;
        default: /* cancel: A's half positive, B's alternating in sign by index */
            if ((i & 0xffff) == 0)
                e = (int)(sm64(&s) % 13) - 6;
            x = ldexp(1.0 + 0x1p-5 * sym1_of(&s), e);
            if (i >= half && (i & 1))
                x = -x;
        }
        out16[i] = bf16 ? to_bf16(x) : to_half(x);
        if (outf)
            outf[i] = (float)x;
    }
}

/* ======== timing ======== */

/* `calls` calls of kind plain (1) or protected (0): GPU ms per call by events, host ms per call
 * to enqueue them into *host_ms; negative if a call failed */
static double round_ms(const env *e, const ltype *t, const call *c, const void *A, const void *B,
                       void *C, int plain, int calls, double *host_ms)
{
    bench_round r;
    int bad = 0;
    round_begin(&r, e->s, plain);
    for (int i = 0; i < calls; i++)
        bad += gemm_call(e->h, t, c, A, B, C) != CUBLAS_STATUS_SUCCESS;
    return round_end(&r, e->s, calls, bad, host_ms);
}

enum { SAMPLES = 4096 };
#define FULL_COMPARE ((size_t)1 << 22) /* batch m n up to this: every element compared */

/* |p - q| over 2 u_o max(|p|, |q|) + 2 (k + 4) 2^-22 ||a_i|| ||b_j|| */
static double err_ratio(const ltype *t, int k, double p, double q, double na, double nb)
{
    const double d = fabs(p - q);
    if (d == 0)
        return 0;
    const double bound = 2.0 * u_out(t) * fmax(fabs(p), fabs(q)) +
                         2.0 * (k + 4.0) * 0x1p-22 * na * nb;
    const double r = d / bound;
    return isnan(r) ? INFINITY : r;
}

/* the worst ratio over every element of the `nb` matrices, or over SAMPLES random ones where
 * nb m n > FULL_COMPARE (those read from the device one by one); ha, hb: the nb matrices of A
 * (m x k) and of B (k x n), each packed, one after the other, as uploaded; C's likewise;
 * *compared: the elements compared; negative if a copy failed */
static double compare(const ltype *t, int m, int n, int k, int nb, const uint16_t *ha,
                      const uint16_t *hb, const void *Cplain, const void *Cprot, size_t *compared)
{
    const size_t es = c_size(t), mm = (size_t)m, nn = (size_t)n, kk = (size_t)k, bb = (size_t)nb;
    double worst = 0;
    if (bb * mm * nn <= FULL_COMPARE) {
        const size_t all = bb * mm * nn;
        void *p = malloc(es * all), *q = malloc(es * all);
        double *ra = calloc(bb * mm, sizeof(double)), *cb = calloc(bb * nn, sizeof(double));
        if (!p || !q || !ra || !cb ||
            cudaMemcpy(p, Cplain, es * all, cudaMemcpyDeviceToHost) != cudaSuccess ||
            cudaMemcpy(q, Cprot, es * all, cudaMemcpyDeviceToHost) != cudaSuccess) {
            free(p); free(q); free(ra); free(cb);
            return -1;
        }
        for (size_t b = 0; b < bb; b++) {
            const uint16_t *a_b = ha + b * mm * kk, *b_b = hb + b * kk * nn;
            double *ra_b = ra + b * mm, *cb_b = cb + b * nn;
            for (size_t l = 0; l < kk; l++)
                for (size_t i = 0; i < mm; i++) {
                    const double a = in_value(t, a_b[i + l * mm]);
                    ra_b[i] += a * a;
                }
            for (size_t j = 0; j < nn; j++)
                for (size_t l = 0; l < kk; l++) {
                    const double v = in_value(t, b_b[l + j * kk]);
                    cb_b[j] += v * v;
                }
            for (size_t j = 0; j < nn; j++)
                for (size_t i = 0; i < mm; i++) {
                    const size_t e = b * mm * nn + i + j * mm;
                    const double r = err_ratio(t, k, c_value(t, p, e), c_value(t, q, e),
                                               sqrt(ra_b[i]), sqrt(cb_b[j]));
                    worst = r > worst ? r : worst;
                }
        }
        *compared = all;
        free(p); free(q); free(ra); free(cb);
        return worst;
    }
    for (int s = 0; s < SAMPLES; s++) {
        /* the matrix drawn only in a batch: a single GEMM's samples as before batches */
        const size_t b = bb > 1 ? (size_t)below(bb) : 0;
        const size_t i = (size_t)below(mm), j = (size_t)below(nn), e = b * mm * nn + i + j * mm;
        const uint16_t *a_b = ha + b * mm * kk, *b_b = hb + b * kk * nn;
        unsigned char p[4], q[4];
        if (cudaMemcpy(p, (const char *)Cplain + es * e, es, cudaMemcpyDeviceToHost) != cudaSuccess ||
            cudaMemcpy(q, (const char *)Cprot + es * e, es, cudaMemcpyDeviceToHost) != cudaSuccess)
            return -1;
        double sa = 0, sb = 0;
        for (size_t l = 0; l < kk; l++) {
            const double a = in_value(t, a_b[i + l * mm]), v = in_value(t, b_b[l + j * kk]);
            sa += a * a, sb += v * v;
        }
        const double r = err_ratio(t, k, c_value(t, p, 0), c_value(t, q, 0), sqrt(sa), sqrt(sb));
        worst = r > worst ? r : worst;
    }
    *compared = SAMPLES;
    return worst;
}

/* a warning's parts, "; " between them */
static void warn(char *w, size_t size, const char *text)
{
    const size_t used = strlen(w);
    if (used + 3 < size)
        snprintf(w + used, size - used, "%s%s", used ? "; " : "", text);
}

/* a timing line's start: {"type":..,"m":..,"n":..,"k":.. and ,"batch":.. for a strided batch */
static void print_case(char type, int m, int n, int k, int batch)
{
    printf("{\"type\":\"%c\",\"m\":%d,\"n\":%d,\"k\":%d", type, m, n, k);
    if (batch > 0)
        printf(",\"batch\":%d", batch);
}

/* one type of a case whose A and B (ha, hb on the host) are uploaded; batch 0: cublasGemmEx,
 * else cublasGemmStridedBatchedEx of `batch` packed matrices */
static void time_type(const env *e, const ltype *t, int m, int n, int k, int batch, const void *A,
                      const void *B, void *C, void *C2, const uint16_t *ha, const uint16_t *hb,
                      int rounds, int max_calls)
{
    const call c = {.m = m, .n = n, .k = k, .lda = m, .ldb = k, .ldc = m, .batch = batch,
                    .sa = (long long)m * k, .sb = (long long)k * n, .sc = (long long)m * n,
                    .alpha = 1, .beta = 0};
    const int nb = matrices(&c);
    const size_t cbytes = c_size(t) * (size_t)m * (size_t)n * (size_t)nb;
    cudaMemsetAsync(C, 0, cbytes, e->s);
    cudaMemsetAsync(C2, 0, cbytes, e->s);
    /* the check, once: plain into C2, protected into C */
    int bad = 0;
    stats_t s0 = stats_after(), s1;
    bypass(1);
    bad += gemm_call(e->h, t, &c, A, B, C2) != CUBLAS_STATUS_SUCCESS;
    bypass(0);
    bad += gemm_call(e->h, t, &c, A, B, C) != CUBLAS_STATUS_SUCCESS;
    cudaStreamSynchronize(e->s);
    size_t compared = 0;
    const double err = compare(t, m, n, k, nb, ha, hb, C2, C, &compared);
    bad += err < 0;

    /* warm-up (the engine's graphs are made from the second repeat on), and one call of each
     * kind timed for the round's length */
    double host, t_plain = 0, t_prot = 0;
    for (int i = 0; i < 3; i++) {
        t_plain = round_ms(e, t, &c, A, B, C, 1, 1, &host) * 1e-3;
        t_prot = round_ms(e, t, &c, A, B, C, 0, 1, &host) * 1e-3;
    }
    const int cp = calls_for(t_plain, max_calls), cq = calls_for(t_prot, max_calls);
    double *pl = malloc(sizeof(double) * (size_t)rounds), *pr = malloc(sizeof(double) * (size_t)rounds);
    double *hp = malloc(sizeof(double) * (size_t)rounds), *hq = malloc(sizeof(double) * (size_t)rounds);
    /* the counters over every protected call of this type: the check's, the warm-up's, the rounds' */
    uint64_t prot_calls = 4;
    for (int r = 0; r < rounds; r++) {
        pl[r] = round_ms(e, t, &c, A, B, C, 1, cp, &hp[r]);
        pr[r] = round_ms(e, t, &c, A, B, C, 0, cq, &hq[r]);
        bad += pl[r] < 0 || pr[r] < 0;
        prot_calls += (uint64_t)cq;
    }
    s1 = stats_after();
    bad += cudaGetLastError() != cudaSuccess;
    const double plain = median(pl, rounds), prot = median(pr, rounds);
    const double host_p = median(hp, rounds), host_q = median(hq, rounds);
    /* a batch: every matrix one protected GEMM with its checks */
    const uint64_t expect = (uint64_t)nb * expected_checks(e, m, n);
    const double checks = (double)(s1.checks - s0.checks) / (double)prot_calls;
    const double pgemms = (double)(s1.protected_gemms - s0.protected_gemms) / (double)prot_calls;
    const uint64_t fa = s1.false_alarms - s0.false_alarms, det = s1.errors_detected - s0.errors_detected;
    print_case(t->code, m, n, k, batch);
    printf(",\"plain_ms\":%.6g,\"protected_ms\":%.6g,"
           "\"ratio\":%.4g,\"plain_tflops\":%.4g,\"plain_host_ms\":%.6g,\"protected_host_ms\":%.6g,"
           "\"calls_plain\":%d,\"calls_protected\":%d,\"rounds\":%d,\"checks_per_call\":%.6g,"
           "\"expected_checks_per_call\":%llu,\"protected_gemms_per_call\":%.4g,"
           "\"false_alarms\":%llu,\"errors_detected\":%llu,\"max_err_over_bound\":",
           plain, prot, prot / plain,
           2.0 * m * (double)n * k * nb / (plain * 1e-3) * 1e-12, host_p, host_q, cp, cq, rounds,
           checks, (unsigned long long)expect, pgemms, (unsigned long long)fa,
           (unsigned long long)det);
    print_num(err);
    printf(",\"compared\":%zu,\"device\":\"%s\"", compared, e->device);
    char w[512] = "", part[160];
    if (bad) {
        snprintf(part, sizeof part, "%d calls or copies failed", bad);
        warn(w, sizeof w, part);
    }
    if (err >= 0 && !(err <= 1.0)) {
        snprintf(part, sizeof part, "protected differs from plain by %.3g x the bound", err);
        warn(w, sizeof w, part);
    }
    if (checks != (double)expect) {
        snprintf(part, sizeof part, "%.6g checks per protected call, %llu expected", checks,
                 (unsigned long long)expect);
        warn(w, sizeof w, part);
    }
    if (pgemms != (double)nb) {
        snprintf(part, sizeof part, "%.4g protected GEMMs per protected call, %d expected", pgemms,
                 nb);
        warn(w, sizeof w, part);
    }
    if (fa || det) {
        snprintf(part, sizeof part, "fault-free calls flagged: %llu false alarms, %llu detected",
                 (unsigned long long)fa, (unsigned long long)det);
        warn(w, sizeof w, part);
    }
    if (*w)
        printf(",\"warning\":\"%s\"", w);
    printf("}\n");
    fflush(stdout);
    free(pl); free(pr); free(hp); free(hq);
}

/* a case: m x n x k, batch 0 (cublasGemmEx) or the matrices of a strided batch */
static void run_case(const env *e, int m, int n, int k, int batch, int rounds, int max_calls)
{
    const size_t mats = batch > 0 ? (size_t)batch : 1; /* A, B and C: mats packed matrices */
    const size_t na = (size_t)m * (size_t)k * mats, nb = (size_t)k * (size_t)n * mats,
                 nc = (size_t)m * (size_t)n * mats;
    uint16_t *ha = malloc(2 * na), *hb = malloc(2 * nb);
    void *A = NULL, *B = NULL, *C = NULL, *C2 = NULL;
    if (!ha || !hb || cudaMalloc(&A, 2 * na) != cudaSuccess || cudaMalloc(&B, 2 * nb) != cudaSuccess ||
        cudaMalloc(&C, 4 * nc) != cudaSuccess || cudaMalloc(&C2, 4 * nc) != cudaSuccess) {
        for (const char *p = e->types; *p; p++) {
            print_case(*p, m, n, k, batch);
            printf(",\"warning\":\"out of host or device memory\",\"device\":\"%s\"}\n", e->device);
        }
        fflush(stdout);
        free(ha); free(hb);
        cudaFree(A); cudaFree(B); cudaFree(C); cudaFree(C2);
        cudaGetLastError();
        return;
    }
    /* the same uniform numbers for both input types, rounded to each */
    const uint64_t seed = seed0 ^ (0x5eed0000ull + (uint64_t)m * 7919u + (uint64_t)n * 104729u +
                                   (uint64_t)k * 1299709u + (uint64_t)batch * 15485863u);
    int filled = -1; /* the input type A and B hold: 0 fp16, 1 bf16 */
    for (const char *p = e->types; *p; p++) {
        ltype t = {0};
        if (!type_of(*p, &t))
            continue;
        if (filled != t.bf16) {
            series_fill(SER_UNIFORM, seed, na, na, t.bf16, ha, NULL);
            series_fill(SER_UNIFORM, seed + 1, nb, nb, t.bf16, hb, NULL);
            if (cudaMemcpy(A, ha, 2 * na, cudaMemcpyHostToDevice) != cudaSuccess ||
                cudaMemcpy(B, hb, 2 * nb, cudaMemcpyHostToDevice) != cudaSuccess) {
                print_case(t.code, m, n, k, batch);
                printf(",\"warning\":\"upload failed\",\"device\":\"%s\"}\n", e->device);
                filled = -1;
                continue;
            }
            filled = t.bf16;
        }
        time_type(e, &t, m, n, k, batch, A, B, C, C2, ha, hb, rounds, max_calls);
    }
    free(ha); free(hb);
    cudaFree(A); cudaFree(B); cudaFree(C); cudaFree(C2);
}

/* ======== --fp and --bits ======== */

/* the elements that nb matrices of rows x cols (leading dimension ld), `stride` apart, span */
static size_t span_of(int ld, int rows, int cols, int nb, long long stride)
{
    return (size_t)(nb - 1) * (size_t)stride + (size_t)ld * (size_t)(cols - 1) + (size_t)rows;
}

/* a random offset for `span` elements within `room` */
static size_t place(size_t span, size_t room) { return (size_t)below(room - span + 1); }

/* a stride for matrices of `elements` (ld times their columns): packed, or (half the time in a
 * batch) 1 to 64 elements apart, so that a stride is not taken for ld times the columns */
static long long batch_stride(size_t elements)
{
    return (long long)elements + (below(2) ? 1 + (long long)below(64) : 0);
}

/* leading dimensions, strides and random offsets of a call whose shape, transposes, scalars and
 * batch are set; C packed (ldc = m); half: the pool's half, pool: its elements; a batch (batch >=
 * 1) takes at most as many matrices as fit A into half, B into half and C into cmax elements and
 * the pool (at least one) */
static void place_call(call *c, int cancel, size_t half, size_t pool, size_t cmax)
{
    c->lda = c->ta ? c->k : c->m;
    c->ldb = c->tb ? c->n : c->k;
    if (cancel && c->tb)
        c->ldb |= 1; /* B^T's rows alternate in sign only with an odd ldb (series_fill) */
    c->ldc = c->m;
    const int ra = c->ta ? c->k : c->m, ca = c->ta ? c->m : c->k;
    const int rb = c->tb ? c->n : c->k, cb = c->tb ? c->k : c->n;
    if (c->batch > 0) {
        c->sa = batch_stride((size_t)c->lda * (size_t)ca);
        c->sb = batch_stride((size_t)c->ldb * (size_t)cb);
        c->sc = batch_stride((size_t)c->m * (size_t)c->n);
        const size_t one_a = span_of(c->lda, ra, ca, 1, 0), one_b = span_of(c->ldb, rb, cb, 1, 0),
                     one_c = (size_t)c->m * (size_t)c->n, room_c = cmax < pool ? cmax : pool;
        size_t fit = 1 + (half - one_a) / (size_t)c->sa;
        const size_t fit_b = 1 + (half - one_b) / (size_t)c->sb,
                     fit_c = 1 + (room_c - one_c) / (size_t)c->sc;
        fit = fit_b < fit ? fit_b : fit;
        fit = fit_c < fit ? fit_c : fit;
        if ((size_t)c->batch > fit)
            c->batch = (int)fit;
    }
    const int nb = matrices(c);
    c->offa = place(span_of(c->lda, ra, ca, nb, c->sa), half);
    c->offb = place(span_of(c->ldb, rb, cb, nb, c->sb), half);
    c->offc = place(span_of(c->ldc, c->m, c->n, nb, c->sc), pool);
}

static int want(const char *types, char t) { return strchr(types, t) != NULL; }

/* ---- --fp ---- */

#define POOL ((size_t)1 << 23)
#define HALF (POOL / 2)

static const int fp_sizes[] = {1, 3, 17, 64, 128, 255, 256, 300, 1000, 1024};
#define NSIZES ((int)(sizeof fp_sizes / sizeof fp_sizes[0]))
/* the strided batches' matrices: every (m, n, k) of these with m n k <= 2^22 */
static const int fp_batch_sizes[] = {1, 3, 17, 64, 128, 255, 256, 300};
#define NBSIZES ((int)(sizeof fp_batch_sizes / sizeof fp_batch_sizes[0]))
#define FP_BATCH_SHARE 4  /* one call in FP_BATCH_SHARE (at random) a strided batch */
#define FP_BATCH_MAX 64   /* of 2 to FP_BATCH_MAX matrices, drawn uniformly (fewer where they
                           * do not fit the pools or C) */
#define FP_C_ELEMENTS ((size_t)1 << 22) /* C's buffer (floats) */
static const double fp_ab[4][2] = {{1, 0}, {-0.75, 0}, {1.5, 1}, {0.5, -2}};
static const char *const trans_name[4] = {"NN", "NT", "TN", "TT"};

static void fp_print(const fp_count *c, const char *type, const char *series, double seconds,
                     const env *e)
{
    printf("{\"mode\":\"fp\",\"type\":\"%s\",\"series\":\"%s\",\"calls\":%llu,\"checks\":%llu,"
           "\"expected_checks\":%llu,",
           type, series, (unsigned long long)c->calls, (unsigned long long)c->checks,
           (unsigned long long)c->expected);
    fp_print_flags(c);
    printf("\"unexpected_checks_calls\":%llu,\"not_protected_calls\":%llu,\"failed_calls\":%llu,"
           "\"gemms\":%llu,\"batched_calls\":%llu,\"seconds\":%.3g,\"device\":\"%s\"}\n",
           (unsigned long long)c->unexpected, (unsigned long long)c->not_protected,
           (unsigned long long)c->failed, (unsigned long long)c->gemms,
           (unsigned long long)c->batched, seconds, e->device);
    fflush(stdout);
}

/* the seed of a series' pools (the same numbers for fp16, bf16 and float) */
static uint64_t pool_seed(int ser)
{
    return seed0 ^ (0x9e3779b97f4a7c15ull * (uint64_t)(ser + 1));
}

/* Fault-free protected calls of each requested type over every series, `seconds` in all, the
 * pools' filling included, shared equally by the (series, type) slots; the counters read after
 * every call, a call with errors detected described on stderr. */
static int run_fp(const env *e, double seconds)
{
    /* every (m, n, k) of fp_sizes^3 with m n k <= 2^28 */
    static int shapes[NSIZES * NSIZES * NSIZES][3];
    const int nshapes = fp_shapes(fp_sizes, NSIZES, 0x1p28, shapes);
    /* the (shape, transposes, scalars) combinations in an order that changes every one of them
     * from call to call: call i takes combination (start + i step) mod ncombos, step coprime */
    const uint64_t ncombos = (uint64_t)nshapes * 16, step = coprime_step(ncombos);
    /* the strided batches' combinations likewise, over their own shapes */
    static int bshapes[NBSIZES * NBSIZES * NBSIZES][3];
    const int nbshapes = fp_shapes(fp_batch_sizes, NBSIZES, 0x1p22, bshapes);
    const uint64_t nbcombos = (uint64_t)nbshapes * 16, bstep = coprime_step(nbcombos);
    static const char tnames[4] = {'H', 'h', 'B', 'b'};
    int wanted[4], ntypes = 0;
    for (int t = 0; t < 4; t++)
        ntypes += wanted[t] = want(e->types, tnames[t]);
    const int need_h = wanted[0] || wanted[1], need_bf = wanted[2] || wanted[3],
              need_f = wanted[1] || wanted[3];
    const int slots = NSERIES * ntypes;
    uint16_t *h16 = malloc(2 * POOL);
    float *hf = need_f ? malloc(4 * POOL) : NULL;
    void *p_h = NULL, *p_bf = NULL, *p_f = NULL, *C = NULL;
    /* C: at most 1024 x 1024 (k <= 256 there), or a batch of FP_C_ELEMENTS, of floats at most */
    if (!h16 || (need_f && !hf) || (need_h && cudaMalloc(&p_h, 2 * POOL) != cudaSuccess) ||
        (need_bf && cudaMalloc(&p_bf, 2 * POOL) != cudaSuccess) ||
        (need_f && cudaMalloc(&p_f, 4 * POOL) != cudaSuccess) ||
        cudaMalloc(&C, 4 * FP_C_ELEMENTS) != cudaSuccess) {
        fprintf(stderr, "--fp: out of host or device memory\n");
        return 1;
    }
    fp_count total = {0};
    const double t0 = now_s();
    int slot = 0;
    for (int ser = 0; ser < NSERIES; ser++) {
        const uint64_t ps = pool_seed(ser);
        int bad_upload = 0;
        if (need_h) {
            series_fill(ser, ps, POOL, HALF, 0, h16, hf);
            bad_upload |= cudaMemcpy(p_h, h16, 2 * POOL, cudaMemcpyHostToDevice) != cudaSuccess;
        }
        if (need_bf) {
            series_fill(ser, ps, POOL, HALF, 1, h16, need_h ? NULL : hf);
            bad_upload |= cudaMemcpy(p_bf, h16, 2 * POOL, cudaMemcpyHostToDevice) != cudaSuccess;
        }
        if (need_f)
            bad_upload |= cudaMemcpy(p_f, hf, 4 * POOL, cudaMemcpyHostToDevice) != cudaSuccess;
        if (bad_upload) {
            fprintf(stderr, "--fp: pool upload failed\n");
            return 1;
        }
        for (int ti = 0; ti < 4; ti++) {
            if (!wanted[ti])
                continue;
            ltype t = {0};
            type_of(tnames[ti], &t);
            /* the time left shared equally by the slots left */
            const double ts = now_s(), deadline = ts + (t0 + seconds - ts) / (slots - slot);
            slot++;
            const uint16_t *pool = t.bf16 ? p_bf : p_h;
            const void *cpool = t.c32 ? p_f : (const void *)pool; /* the old C's numbers */
            const size_t es = c_size(&t);
            const uint64_t start = below(ncombos), bstart = below(nbcombos);
            fp_count cnt = {0};
            stats_t s0 = stats_after(), s1;
            while (now_s() < deadline) {
                /* single GEMMs and strided batches each go through their own combinations */
                const int batched = below(FP_BATCH_SHARE) == 0;
                const uint64_t nth = batched ? cnt.batched : cnt.calls - cnt.batched;
                const uint64_t nsh = (uint64_t)(batched ? nbshapes : nshapes);
                const uint64_t idx = batched ? (bstart + nth * bstep) % nbcombos
                                             : (start + nth * step) % ncombos;
                const int *sh = batched ? bshapes[idx % nsh] : shapes[idx % nsh];
                const int tr = (int)(idx / nsh % 4), ab = (int)(idx / nsh / 4);
                call c = {.m = sh[0], .n = sh[1], .k = sh[2], .ta = tr >> 1, .tb = tr & 1,
                          .batch = batched ? 2 + (int)below(FP_BATCH_MAX - 1) : 0,
                          .alpha = fp_ab[ab][0], .beta = fp_ab[ab][1]};
                place_call(&c, ser == SER_CANCEL, HALF, POOL, FP_C_ELEMENTS);
                const int nb = matrices(&c);
                int bad = 0;
                if (c.beta != 0) /* the old C: fresh from the pool (beta 0: never read) */
                    bad |= cudaMemcpyAsync(C, (const char *)cpool + es * c.offc,
                                           es * span_of(c.ldc, c.m, c.n, nb, c.sc),
                                           cudaMemcpyDeviceToDevice, e->s) != cudaSuccess;
                bad |= gemm_call(e->h, &t, &c, pool + c.offa, pool + HALF + c.offb, C) !=
                       CUBLAS_STATUS_SUCCESS;
                s1 = stats_after();
                bad |= cudaGetLastError() != cudaSuccess;
                const uint64_t fa = s1.false_alarms - s0.false_alarms,
                               det = s1.errors_detected - s0.errors_detected,
                               chk = s1.checks - s0.checks,
                               pg = s1.protected_gemms - s0.protected_gemms;
                /* a batch: every matrix one protected GEMM with its checks */
                const uint64_t expect = (uint64_t)nb * expected_checks(e, c.m, c.n);
                s0 = s1;
                cnt.calls++;
                cnt.batched += (uint64_t)batched;
                cnt.gemms += (uint64_t)nb;
                cnt.checks += chk;
                cnt.expected += expect;
                cnt.unexpected += chk != expect;
                cnt.not_protected += pg != (uint64_t)nb;
                cnt.failed += (uint64_t)bad;
                cnt.false_alarms += fa;
                cnt.detected += det;
                if (det) { /* enough to repeat the call */
                    cnt.flagged_calls++;
                    fprintf(stderr,
                            "{\"mode\":\"fp-flag\",\"type\":\"%c\",\"series\":\"%s\","
                            "\"pool_seed\":\"0x%016llx\",\"pool\":%zu,\"m\":%d,\"n\":%d,\"k\":%d,"
                            "\"trans\":\"%s\",\"alpha\":%g,\"beta\":%g,\"lda\":%d,\"ldb\":%d,"
                            "\"ldc\":%d,\"offa\":%zu,\"offb\":%zu,\"offc\":%zu,\"batch\":%d,"
                            "\"stridea\":%lld,\"strideb\":%lld,\"stridec\":%lld,"
                            "\"false_alarms\":%llu,\"errors_detected\":%llu}\n",
                            t.code, series_name[ser], (unsigned long long)ps, POOL, c.m, c.n, c.k,
                            trans_name[tr], c.alpha, c.beta, c.lda, c.ldb, c.ldc, c.offa,
                            c.offb, c.offc, c.batch, c.sa, c.sb, c.sc, (unsigned long long)fa,
                            (unsigned long long)det);
                }
            }
            const char tn[2] = {t.code, '\0'};
            fp_print(&cnt, tn, series_name[ser], now_s() - ts, e);
            fp_add(&total, &cnt);
        }
    }
    fp_print(&total, "all", "all", now_s() - t0, e);
    free(h16);
    free(hf);
    cudaFree(p_h);
    cudaFree(p_bf);
    cudaFree(p_f);
    cudaFree(C);
    return 0;
}

/* ---- --bits ---- */

/* For each requested type and each bit of C's type: `trials` calls of an N x N x N GEMM (NN,
 * alpha 1, beta 0, uniform [-1, 1] at random offsets into the pool) with that bit of a random
 * C(row, col) flipped; detection by the counters, the element against plain cuBLAS computed
 * afterwards through the bypass. */
static int run_bits(const env *e, int trials, int n)
{
    const size_t nn = (size_t)n * (size_t)n;
    const size_t half = nn * 2 > HALF ? nn * 2 : HALF, pool_n = 2 * half;
    uint16_t *h16 = malloc(2 * pool_n);
    void *pool = NULL, *C = NULL, *Cp = NULL;
    if (!h16 || cudaMalloc(&pool, 2 * pool_n) != cudaSuccess ||
        cudaMalloc(&C, 4 * nn) != cudaSuccess || cudaMalloc(&Cp, 4 * nn) != cudaSuccess) {
        fprintf(stderr, "--bits: out of host or device memory\n");
        return 1;
    }
    int filled = -1; /* the pool's input type: 0 fp16, 1 bf16 */
    for (const char *p = e->types; *p; p++) {
        ltype t = {0};
        if (!type_of(*p, &t))
            continue;
        if (filled != t.bf16) {
            series_fill(SER_UNIFORM, pool_seed(SER_UNIFORM), pool_n, half, t.bf16, h16, NULL);
            if (cudaMemcpy(pool, h16, 2 * pool_n, cudaMemcpyHostToDevice) != cudaSuccess) {
                fprintf(stderr, "--bits: pool upload failed\n");
                return 1;
            }
            filled = t.bf16;
        }
        const uint16_t *pl = pool;
        const size_t es = c_size(&t);
        const int nbits = c_bits(&t);
        /* totals: all bits, exponent bits, mantissa bits, the sign bit */
        uint64_t tr_all[3] = {0}, det_all[3] = {0}, all_det = 0, all_corr = 0, all_rest = 0,
                 all_fa = 0, all_trials = 0;
        const double tt = now_s();
        for (int bit = 0; bit < nbits; bit++) {
            const double tb = now_s();
            uint64_t flips = 0, detected = 0, corrected = 0, recomputed = 0, false_alarms = 0,
                     restored = 0, identical = 0, failed = 0, undetected = 0;
            double worst = 0;
            stats_t s0 = stats_after(), s1;
            for (int tr = 0; tr < trials; tr++) {
                call c = {.m = n, .n = n, .k = n, .alpha = 1, .beta = 0};
                place_call(&c, 0, half, pool_n, nn);
                const int row = (int)below((uint64_t)n), col = (int)below((uint64_t)n);
                int bad = plant_fault(1, row, col, bit) != 0;
                bad |= gemm_call(e->h, &t, &c, pl + c.offa, pl + half + c.offb, C) !=
                       CUBLAS_STATUS_SUCCESS;
                s1 = stats_after();
                plant_fault(0, 0, 0, 0); /* disarm what the call did not take */
                const uint64_t det = s1.errors_detected - s0.errors_detected;
                flips += s1.faults_injected - s0.faults_injected;
                false_alarms += s1.false_alarms - s0.false_alarms;
                corrected += s1.errors_corrected != s0.errors_corrected;
                recomputed += s1.blocks_recomputed != s0.blocks_recomputed;
                detected += det != 0;
                bypass(1);
                bad |= gemm_call(e->h, &t, &c, pl + c.offa, pl + half + c.offb, Cp) !=
                       CUBLAS_STATUS_SUCCESS;
                bypass(0);
                /* waits for the plain call too (the stream is non-blocking); the bypass leaves
                 * the counters alone */
                s0 = stats_after();
                const size_t f = (size_t)row + (size_t)col * (size_t)n;
                unsigned char pc[4] = {0}, qc[4] = {0};
                bad |= cudaMemcpy(pc, (const char *)C + es * f, es, cudaMemcpyDeviceToHost) != cudaSuccess;
                bad |= cudaMemcpy(qc, (const char *)Cp + es * f, es, cudaMemcpyDeviceToHost) != cudaSuccess;
                bad |= cudaGetLastError() != cudaSuccess;
                failed += (uint64_t)bad;
                const double pv = c_value(&t, pc, 0), qv = c_value(&t, qc, 0);
                identical += memcmp(pc, qc, es) == 0;
                restored += isfinite(pv) && isfinite(qv) &&
                            fabs(pv - qv) <= 2.0 * u_out(&t) * fabs(qv);
                if (!det) {
                    undetected++;
                    double rel = pv == qv ? 0.0 : fabs(pv - qv) / fabs(qv); /* qv = 0: inf */
                    if (isnan(rel))
                        rel = INFINITY; /* flipped into NaN */
                    worst = rel > worst ? rel : worst;
                }
            }
            const char *field = bit_field(&t, bit);
            printf("{\"mode\":\"bits\",\"type\":\"%c\",\"bit\":%d,\"field\":\"%s\",\"trials\":%d,"
                   "\"flips\":%llu,\"detected\":%llu,\"corrected\":%llu,\"recomputed\":%llu,"
                   "\"false_alarms\":%llu,\"restored\":%llu,\"identical\":%llu,"
                   "\"undetected_max_rel\":",
                   t.code, bit, field, trials, (unsigned long long)flips,
                   (unsigned long long)detected, (unsigned long long)corrected,
                   (unsigned long long)recomputed, (unsigned long long)false_alarms,
                   (unsigned long long)restored, (unsigned long long)identical);
            if (undetected)
                print_num(worst);
            else
                printf("null");
            printf(",\"failed_calls\":%llu,\"seconds\":%.3g,\"n\":%d,\"device\":\"%s\"",
                   (unsigned long long)failed, now_s() - tb, n, e->device);
            if (flips != (uint64_t)trials)
                printf(",\"warning\":\"%llu flips planted, %d asked\"", (unsigned long long)flips,
                       trials);
            printf("}\n");
            fflush(stdout);
            const int fi = field[0] == 'e' ? 0 : field[0] == 'm' ? 1 : 2;
            tr_all[fi] += (uint64_t)trials, det_all[fi] += detected;
            all_trials += (uint64_t)trials, all_det += detected, all_corr += corrected;
            all_rest += restored, all_fa += false_alarms;
        }
        printf("{\"mode\":\"bits-total\",\"type\":\"%c\",\"trials\":%llu,\"detected\":%llu,"
               "\"corrected\":%llu,\"restored\":%llu,\"false_alarms\":%llu,\"detected_share\":%.4g,"
               "\"exponent_detected_share\":%.4g,\"mantissa_detected_share\":%.4g,"
               "\"sign_detected_share\":%.4g,\"seconds\":%.3g,\"n\":%d,\"device\":\"%s\"}\n",
               t.code, (unsigned long long)all_trials, (unsigned long long)all_det,
               (unsigned long long)all_corr, (unsigned long long)all_rest,
               (unsigned long long)all_fa, (double)all_det / (double)all_trials,
               (double)det_all[0] / (double)tr_all[0], (double)det_all[1] / (double)tr_all[1],
               (double)det_all[2] / (double)tr_all[2], now_s() - tt, n, e->device);
        fflush(stdout);
    }
    free(h16);
    cudaFree(pool);
    cudaFree(C);
    cudaFree(Cp);
    return 0;
}

int main(int argc, char **argv)
{
    if (bench_find_symbols())
        return 1;
    int rounds = 5, max_calls = 20, ncases = 0, bits_n = 1024;
    const char *types = NULL;
    int cases[64][4]; /* m, n, k, batch (0: cublasGemmEx) */
    double fp_seconds = 0; /* --fp: > 0 */
    int bits_trials = 0;   /* --bits: > 0 */
    for (int i = 1; i < argc; i++) {
        int m, n, k, batch;
        char tail;
        if (bench_mode_arg(argc, argv, &i, &fp_seconds, &bits_trials))
            continue;
        if (strcmp(argv[i], "--n") == 0 && i + 1 < argc && (bits_n = atoi(argv[++i])) > 0)
            continue;
        if (strcmp(argv[i], "--seed") == 0 && i + 1 < argc) {
            rng_state = seed0 = strtoull(argv[++i], NULL, 0);
            continue;
        }
        if (bench_count_arg(argc, argv, &i, &rounds, &max_calls))
            continue;
        if (strcmp(argv[i], "--types") == 0 && i + 1 < argc && *argv[i + 1] &&
            strspn(argv[i + 1], "HhBb") == strlen(argv[i + 1]))
            types = argv[++i];
        else if (ncases < 64 &&
                 sscanf(argv[i], "%dx%dx%d:%d%c", &m, &n, &k, &batch, &tail) == 4 && m > 0 &&
                 n > 0 && k > 0 && batch > 0)
            cases[ncases][0] = m, cases[ncases][1] = n, cases[ncases][2] = k,
            cases[ncases][3] = batch, ncases++;
        else if (ncases < 64 && sscanf(argv[i], "%dx%dx%d%c", &m, &n, &k, &tail) == 3 && m > 0 &&
                 n > 0 && k > 0)
            cases[ncases][0] = m, cases[ncases][1] = n, cases[ncases][2] = k,
            cases[ncases][3] = 0, ncases++;
        else if (ncases < 64 && sscanf(argv[i], "%d:%d%c", &m, &batch, &tail) == 2 && m > 0 &&
                 batch > 0)
            cases[ncases][0] = cases[ncases][1] = cases[ncases][2] = m,
            cases[ncases][3] = batch, ncases++;
        else if (ncases < 64 && sscanf(argv[i], "%d%c", &m, &tail) == 1 && m > 0)
            cases[ncases][0] = cases[ncases][1] = cases[ncases][2] = m, cases[ncases][3] = 0,
            ncases++;
        else {
            fprintf(stderr,
                    "usage: %s [--rounds R] [--calls C] [--types HhBb] [--seed S]\n"
                    "          [N | MxNxK | N:BATCH | MxNxK:BATCH ...]\n"
                    "       %s --fp SECONDS [--types HhBb] [--seed S]\n"
                    "       %s --bits TRIALS [--n N] [--types HhBb] [--seed S]\n"
                    "  types: H fp16 in and out, h fp16 in fp32 out, B bf16 in and out, b bf16 in "
                    "fp32 out\n"
                    "  N:BATCH, MxNxK:BATCH: a strided batch of BATCH matrices "
                    "(cublasGemmStridedBatchedEx)\n",
                    argv[0], argv[0], argv[0]);
            return 2;
        }
    }
    const int timing = fp_seconds <= 0 && bits_trials <= 0;
    int rc = bench_check_args(fp_seconds, bits_trials, ncases, "N, MxNxK, N:BATCH or MxNxK:BATCH",
                              rounds, max_calls);
    if (rc)
        return rc;
    if (!types)
        types = timing ? "HB" : "HhBb";
    if (!ncases) {
        static const int dflt[] = {1024, 2048, 4096, 8192};
        for (size_t i = 0; i < sizeof dflt / sizeof dflt[0]; i++)
            cases[ncases][0] = cases[ncases][1] = cases[ncases][2] = dflt[i],
            cases[ncases][3] = 0, ncases++;
    }
    char device[256];
    if ((rc = bench_device(device, sizeof device)))
        return rc;
    cublasHandle_t h;
    cudaStream_t s;
    if (bench_handle(&h, &s))
        return 1;
    const env e = {h, s, types, device, block_size()};
    if (fp_seconds > 0)
        rc = run_fp(&e, fp_seconds);
    if (bits_trials > 0 && !rc)
        rc = run_bits(&e, bits_trials, bits_n);
    for (int i = 0; timing && i < ncases; i++)
        run_case(&e, cases[i][0], cases[i][1], cases[i][2], cases[i][3], rounds, max_calls);
    cublasDestroy_v2(h);
    cudaStreamDestroy(s);
    return rc;
}
