/* Plain against protected strided batches in one process (run with LD_PRELOAD=libblas_ft.so):
 * cublasDgemmStridedBatched and cublasSgemmStridedBatched, and for complex data (--types with Z,
 * C) cublasZgemmStridedBatched and cublasCgemmStridedBatched, m = n = k, alpha 1 ((1, 0)),
 * beta 0, packed strides, on a stream of its own. Plain calls go straight to cuBLAS through the
 * interposer's benchmark switch (blasft_cublas_bypass(1)); protected ones through libblas_ft
 * (BLASFT_GPU_BATCHED as set: fused by default, or each).
 *
 * usage: bench_cublas_batched [--rounds R] [--calls C] [--types DSZC] [N:BATCH ...]
 *   default cases 8:10000 32:1000 64:1000 128:256 256:64 512:16 2048:2 (the last over the fused
 *   path's size limit, m n k <= 2^30: matrix by matrix), types D then S (--types: any of D, S, Z,
 *   C, lower case too, run in the order given), 5 rounds.
 * Per case and type: warm-up, then R rounds that alternate plain and protected; a round is up to
 * C calls (default 20; fewer where one call takes more than 12 ms, so that a round stays near a
 * quarter of a second), timed by events on the stream; the median of the rounds' time per call
 * is reported, with the host's time per call to enqueue them (wall clock from the first call to
 * the return of the last, before the wait). Once per case the protected result is compared with
 * the plain one: each element within twice the worst-case rounding of both, by norms
 * (2 (k + 2) u ||a_i|| ||b_j|| each; complex: each part within 2 (2k + 2) u ||a_i|| ||b_j||, the
 * norms of complex vectors, u = 2^-24 for C and 2^-53 for Z; both parts random uniform [-1, 1]).
 * One JSON line per case and type ("type":"Z" or "C" for complex):
 *   {"type":"D","m":64,"batch":1000,"plain_ms":..,"protected_ms":..,"ratio":..,
 *    "plain_host_ms":..,"protected_host_ms":..,"calls_plain":..,"calls_protected":..,
 *    "rounds":..,"checks_per_call":..,"fused_checks_per_call":..,"false_alarms":..,
 *    "errors_detected":..,"max_err_over_bound":..,"mode":"fused","device":"..."}
 * with "warning" where the results differ by more than the bound or a call failed.
 * fused_checks_per_call is what the fused path counts (batch ceil(m / 256) n): checks_per_call
 * equal to it says the fused path ran.
 *
 * bench_cublas_batched --fp SECONDS [--types DSZC] [--seed S]
 *   False positives: fault-free protected strided batched calls of the types asked (default D and
 *   S; run in the order D, S, Z, C) for about SECONDS in all, shared by the (series, type)
 *   pairs. Series: uniform [-1, 1], uniform01 [0, 1], normal (sum of 4 uniforms), heavy (random
 *   sign times 2^U[-12, 12]), cancel (op(B)'s columns alternate in sign along k over a positive
 *   A, magnitudes within 2^-12 of each other: C small against its terms). Each call the next of every (m, n, k) from {1, 3, 8, 17, 32, 64, 100,
 *   128, 255, 256, 300} with m n k <= 2^24, x NN/NT/TN/TT, x (alpha, beta) in (1, 0),
 *   (-0.75, 0), (1.5, 1), (0.5, -2), in an order that changes all of them from call to call;
 *   batch for about 1e5 checks (10000 at most). Operands are fresh per call: random offsets into
 *   a pool of 2^25 numbers per series and type filled once (A from its first half, B from its
 *   second, overlapping where a batch would not fit; C copied from it where beta != 0). The
 *   counters are read after every call (no oracle: that is the tests' job); a call whose
 *   false_alarms or errors_detected moved is described on stderr ("mode":"fp-flag", enough to
 *   repeat it).
 *   Complex data (Z, C): the same pools read as 2^24 complex elements (2^23 a half), real and
 *   imaginary parts each one of the series' numbers; cancel made complex: A's half positive in
 *   both parts, B's half alternating in sign by complex element (both parts of one element the
 *   same sign), so that of a_l b_l one part is small in itself and the other alternates along k:
 *   both parts of C small against sum |a||b|. Transposes N, T and C (conjugate) for each operand
 *   (NN NT NC TN TT TC CN CT CC), (alpha, beta) in ((1, 0), 0), ((-0.75, 0.5), 0),
 *   ((1.5, -1), (1, 0)), ((0.5, 0.25), (-2, 1)); the same shapes and batches (a batch's old C,
 *   larger than the complex pool for the largest, is copied from it in pieces that wrap around
 *   its end). fp-flag lines of complex calls give alpha and beta as [re, im].
 *   One line per (type, series), and one "all":
 *   {"mode":"fp","type":"D","series":"heavy","calls":..,"gemms":..,"checks":..,
 *    "first_tier_flags":..,"false_alarms":..,"errors_detected":..,"flagged_calls":..,
 *    "upper95_per_check":..,"not_fused_calls":..,"failed_calls":..,"seconds":..,
 *    "mode_batched":"fused","device":".."}
 *   checks: the counters' checks; first_tier_flags = false_alarms + errors_detected (a matrix
 *   over its thresholds counts one false alarm where the second tier found nothing apart, else
 *   its elements apart as errors_detected); upper95_per_check: 3 / checks with no flag (the 95 %
 *   upper bound of a flag's rate per check, rule of three), else null; not_fused_calls: calls
 *   whose checks are not the fused path's batch ceil(m / 256) n.
 *
 * bench_cublas_batched --bits TRIALS [--shape MxNxK] [--types DSZC] [--seed S]
 *   Detection per flipped bit: for D bits 0-63 and S bits 0-31 (Z: bits 0-63 of the real part's
 *   double, C: bits 0-31 of the real part's float; each part uniform [-1, 1]; with Z or C asked,
 *   16 matrices of A and of B must fit 2^23 complex elements), TRIALS calls each of a strided
 *   batch of 16 matrices (NN, alpha 1, beta 0, uniform [-1, 1] from the pool, fresh per call;
 *   shape default 64x64x64) with blasft_cublas_plant_fault(16, row, col, bit), row and col
 *   random per call: one flip per matrix, after the GEMM, before the check. Then the same call
 *   plain (bypass) into another C. One line per (type, bit), and a "bits-total" per type:
 *   {"mode":"bits","type":"D","bit":..,"flips":..,"detected":..,"corrected_right":..,
 *    "undetected_max_rel":..,"false_alarms":..,"failed_calls":..,"trials":..,"seconds":..,
 *    "mode_batched":"fused","shape":"64x64x64","device":".."}
 *   flips: the counters' faults_injected; detected: sum over calls of min(16, errors_detected);
 *   corrected_right: matrices whose whole C agrees with plain cuBLAS, element by element the
 *   same bits, within 2 ulp, or within 2 gamma_{k+2} sum_l |a_il b_lj| (a corrected element is
 *   the exact value rounded, and BLASFT_GPU_BATCHED=each may sum in another order); a flip too
 *   small to matter counts as right too (complex: both parts, each within 2 ulp or
 *   2 gamma_{2k+2} sum_l |a_il| |b_lj|, moduli). undetected_max_rel: the largest
 *   |c_flipped - c| / |c| at the flipped element in calls with undetected flips (the counters do
 *   not say which matrices: the corrected ones are at rounding level, so the largest are the
 *   undetected; complex: |c_flipped - c| / |c| with complex moduli), "inf" for a NaN or c = 0, null with no undetected flip; false_alarms: flagged matrices the
 *   second tier found right (a flip under its rounding bound). Run with BLASFT_GPU_BATCHED=each
 *   for the engine's per-matrix checks (PEA thresholds). */
#include "bench_common.h"

typedef struct bench {
    cublasHandle_t h;
    cudaStream_t s;
    int dbl, cplx, n, batch; /* D dbl, S 0, Z dbl cplx, C cplx */
    void *A, *B, *C;
    long long stride; /* n * n */
} bench;

/* the type's letter: S, D, C (cuComplex) or Z (cuDoubleComplex) */
static char type_char(int dbl, int cplx)
{
    return "SDCZ"[2 * !!cplx + !!dbl];
}

static cublasStatus_t gemm(const bench *b, void *C)
{
    const int n = b->n;
    if (b->cplx && b->dbl) {
        const cuDoubleComplex one = {1.0, 0.0}, zero = {0.0, 0.0};
        return cublasZgemmStridedBatched(b->h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, b->A, n,
                                         b->stride, b->B, n, b->stride, &zero, C, n, b->stride,
                                         b->batch);
    }
    if (b->cplx) {
        const cuComplex one = {1.0f, 0.0f}, zero = {0.0f, 0.0f};
        return cublasCgemmStridedBatched(b->h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, b->A, n,
                                         b->stride, b->B, n, b->stride, &zero, C, n, b->stride,
                                         b->batch);
    }
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
    bench_round r;
    int bad = 0;
    round_begin(&r, b->s, plain);
    for (int i = 0; i < calls; i++)
        bad += gemm(b, b->C) != CUBLAS_STATUS_SUCCESS;
    return round_end(&r, b->s, calls, bad, host_ms);
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

/* the worst |protected - plain| over twice the worst-case rounding of one result, by norms;
 * complex data part by part against 2 (2k + 2) u ||a_i|| ||b_j|| (moduli: a complex dot product
 * of length k is 2k real products per part, each at most |a_il| |b_lj|) */
static double compare(const bench *b, const void *Cplain, const void *Cprot)
{
    const size_t parts = b->cplx ? 2 : 1, es = (b->dbl ? 8 : 4) * parts, n = (size_t)b->n,
                 per = n * n, all = per * (size_t)b->batch;
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
            for (size_t l = 0; l < n; l++)
                for (size_t t = 0; t < parts; t++) { /* numbers: element e's part t at e parts + t */
                    sa += AT(a, (o + i + l * n) * parts + t) * AT(a, (o + i + l * n) * parts + t);
                    sb += AT(bb, (o + l + i * n) * parts + t) * AT(bb, (o + l + i * n) * parts + t);
                }
            ra[i] = sqrt(sa), cb[i] = sqrt(sb);
        }
        const double terms = b->cplx ? (double)(2 * n + 2) : (double)(n + 2);
        for (size_t j = 0; j < n; j++)
            for (size_t i = 0; i < n; i++)
                for (size_t t = 0; t < parts; t++) {
                    const size_t e = (o + i + j * n) * parts + t;
                    const double d = fabs(AT(p, e) - AT(q, e));
                    const double bound = 2.0 * 2.0 * terms * u * ra[i] * cb[j] * 1.0000001 + 1e-300;
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

static void run_case(cublasHandle_t h, cudaStream_t s, int dbl, int cplx, int n, int batch,
                     int rounds, int max_calls, const char *mode, const char *device)
{
    bench b = {h, s, dbl, cplx, n, batch, NULL, NULL, NULL, (long long)n * n};
    /* complex: both parts filled, `parts` numbers per element */
    const size_t parts = cplx ? 2 : 1, es = (dbl ? 8 : 4) * parts,
                 all = (size_t)n * (size_t)n * (size_t)batch;
    void *C2 = NULL;
    if (cudaMalloc(&b.A, es * all) != cudaSuccess || cudaMalloc(&b.B, es * all) != cudaSuccess ||
        cudaMalloc(&b.C, es * all) != cudaSuccess || cudaMalloc(&C2, es * all) != cudaSuccess) {
        printf("{\"type\":\"%c\",\"m\":%d,\"batch\":%d,\"warning\":\"out of device memory\"}\n",
               type_char(dbl, cplx), n, batch);
        cudaFree(b.A); cudaFree(b.B); cudaFree(b.C); cudaFree(C2);
        cudaGetLastError();
        return;
    }
    uint64_t seed = 0x5eed0000ull + (uint64_t)n * 7919u + (uint64_t)batch;
    fill(b.A, all * parts, dbl, &seed);
    fill(b.B, all * parts, dbl, &seed);
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
    stats_t s0 = stats_after(), s1;
    uint64_t prot_calls = 0;
    for (int r = 0; r < rounds; r++) {
        pl[r] = round_ms(&b, 1, cp, &hp[r]);
        pr[r] = round_ms(&b, 0, cq, &hq[r]);
        bad += pl[r] < 0 || pr[r] < 0;
        prot_calls += (uint64_t)cq;
    }
    s1 = stats_after();
    const double plain = median(pl, rounds), prot = median(pr, rounds);
    const double host_p = median(hp, rounds), host_q = median(hq, rounds);
    const uint64_t fused_checks = (uint64_t)batch * (uint64_t)((n + 255) / 256) * (uint64_t)n;
    printf("{\"type\":\"%c\",\"m\":%d,\"batch\":%d,\"plain_ms\":%.6g,\"protected_ms\":%.6g,"
           "\"ratio\":%.4g,\"plain_host_ms\":%.6g,\"protected_host_ms\":%.6g,\"calls_plain\":%d,"
           "\"calls_protected\":%d,\"rounds\":%d,\"checks_per_call\":%.6g,"
           "\"fused_checks_per_call\":%llu,\"false_alarms\":%llu,\"errors_detected\":%llu,"
           "\"max_err_over_bound\":%.3g,\"mode\":\"%s\",\"device\":\"%s\"",
           type_char(dbl, cplx), n, batch, plain, prot, prot / plain, host_p, host_q, cp, cq, rounds,
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

/* ======== --fp and --bits: fault-free flags and detection per flipped bit ======== */

/* Both modes take each call's operands from random offsets into one large pool per data series
 * and type, filled from the host once: fresh data per call without a host upload per call.
 * The pool's first half gives A, its second half B (the cancelling series needs the two apart);
 * C, where beta != 0, is copied from anywhere in it before the call (a call overwrites C). */
#define POOL ((size_t)1 << 25)
#define HALF (POOL / 2)

/* random numbers from --seed (next_u64, below: bench_common.h) */
static double u01(void) { return (double)(next_u64() >> 11) * 0x1p-53; } /* [0, 1) */
static double sym1(void) { return 2.0 * u01() - 1.0; }                    /* [-1, 1) */

/* The pool of a series on the host, as doubles (the S pool holds the same numbers rounded).
 * cancel: A's half is positive, B's half alternates in sign by the element's index, all of
 * magnitude 2^e (1 + 2^-12 r), e in [-6, 6] constant over blocks of 2^16 elements. B's columns
 * then alternate along k (op(B) = B: k is contiguous; op(B) = B^T: the call gives B an odd ldb),
 * so the k products of a row of A and a column of B alternate in sign with nearly equal
 * magnitudes: C is ~2^-12 / sqrt(k) of its terms (k even). Alternating signs in A too would make
 * the products all positive again, so A stays positive. */
static void series_values(int ser, double *h)
{
    int e = 0;
    for (size_t i = 0; i < POOL; i++) {
        double x;
        switch (ser) {
        case SER_UNIFORM: x = sym1(); break;
        case SER_UNIFORM01: x = u01(); break;
        case SER_NORMAL: /* sum of 4 uniforms, scaled to variance 1 */
            x = (sym1() + sym1() + sym1() + sym1()) * 0.8660254037844386;
            break;
        case SER_HEAVY: x = (next_u64() & 1 ? -1.0 : 1.0) * exp2(24.0 * u01() - 12.0); break;
        default:
            if ((i & 0xffff) == 0)
                e = (int)below(13) - 6;
            x = ldexp(1.0 + 0x1p-12 * sym1(), e);
            if (i >= HALF && (i & 1))
                x = -x;
        }
        h[i] = x;
    }
}

/* The cancelling series for complex data: the same magnitudes, A's half positive in both parts,
 * B's half alternating in sign by the complex element's index (both parts of an element the
 * same sign; number i is part i & 1 of element i >> 1). A product a_l b_l then has one part
 * small in itself (a's and b's parts nearly equal) and the other near +-|a_l| |b_l|, alternating
 * along k: both parts of C small against sum_l |a_il| |b_lj| (op = C swaps the parts' roles). The
 * real layout alternates by number, which for complex elements would only make every element's
 * imaginary part negative. */
static void cancel_to_complex(double *h)
{
    for (size_t i = HALF; i < POOL; i++)
        h[i] = (i >> 1) & 1 ? -fabs(h[i]) : fabs(h[i]);
}

/* h to the device pools given (NULL: that type is not run): D as is, S rounded; hf: scratch.
 * The same numbers serve Z and C, read as POOL / 2 complex elements (real, imaginary). */
static int upload_pool(const double *h, float *hf, void *dpool, void *spool)
{
    if (dpool && cudaMemcpy(dpool, h, 8 * POOL, cudaMemcpyHostToDevice) != cudaSuccess)
        return -1;
    if (spool) {
        for (size_t i = 0; i < POOL; i++)
            hf[i] = (float)h[i];
        if (cudaMemcpy(spool, hf, 4 * POOL, cudaMemcpyHostToDevice) != cudaSuccess)
            return -1;
    }
    return 0;
}

/* one strided batched call; offsets and strides in elements (complex ones for C and Z: the
 * pool then has POOL / 2 elements, its halves POOL / 4); ta, tb: 0 N, 1 T, 2 C (complex only) */
typedef struct call {
    int dbl, m, n, k, batch, ta, tb, lda, ldb, ldc;
    long long sa, sb, sc;
    size_t offa, offb, offc; /* A: into the pool's first half, B: its second, C: anywhere */
    double alpha, beta;
    int cplx;
    double alpha_im, beta_im; /* complex data: the scalars' imaginary parts */
} call;

/* a call's pool in its elements */
static size_t pool_elems(const call *c)
{
    return c->cplx ? POOL / 2 : POOL;
}

/* `batch` matrices of rows x cols (leading dimension ld) placed at a random offset into `room`
 * elements: packed where they fit, else with a smaller stride, overlapping (A and B are only
 * read; the large batches of long thin shapes would not fit otherwise). */
static void place(int batch, int ld, int rows, int cols, size_t room, long long *stride,
                  size_t *off)
{
    const size_t span = (size_t)ld * (size_t)(cols - 1) + (size_t)rows;
    size_t st = (size_t)ld * (size_t)cols;
    if ((size_t)(batch - 1) * st + span > room)
        st = batch > 1 ? (room - span) / (size_t)(batch - 1) : 0;
    *stride = (long long)st;
    *off = (size_t)below(room - ((size_t)(batch - 1) * st + span) + 1);
}

/* leading dimensions, strides and random offsets of a call whose shape, transposes, scalars and
 * batch are set; C packed (ldc = m) */
static void place_call(call *c, int cancel)
{
    c->lda = c->ta ? c->k : c->m;
    c->ldb = c->tb ? c->n : c->k;
    if (cancel && c->tb)
        c->ldb |= 1; /* B^T's rows alternate in sign only with an odd ldb (series_values) */
    const size_t pe = pool_elems(c), half = pe / 2;
    place(c->batch, c->lda, c->lda, c->ta ? c->m : c->k, half, &c->sa, &c->offa);
    place(c->batch, c->ldb, c->ldb, c->tb ? c->k : c->n, half, &c->sb, &c->offb);
    c->ldc = c->m;
    c->sc = (long long)c->m * c->n;
    /* the old C's copy (copy_old_c): from offc on, wrapping at the pool's end where the batch's
     * C is larger than the pool (complex 300 x 300 x 333: 3.0e7 elements against 2^24) */
    const size_t cn = (size_t)c->sc * (size_t)c->batch;
    c->offc = (size_t)below(cn <= pe ? pe - cn + 1 : pe);
}

/* the old C (beta != 0) from the pool into C, in pieces that stay within the pool */
static int copy_old_c(const call *c, const void *pool, void *C, cudaStream_t s)
{
    const size_t es = (c->dbl ? 8u : 4u) * (c->cplx ? 2u : 1u), pe = pool_elems(c);
    const size_t cn = (size_t)c->sc * (size_t)c->batch;
    int bad = 0;
    for (size_t done = 0, off = c->offc; done < cn; off = 0) {
        const size_t piece = cn - done < pe - off ? cn - done : pe - off;
        bad |= cudaMemcpyAsync((char *)C + es * done, (const char *)pool + es * off, es * piece,
                               cudaMemcpyDeviceToDevice, s) != cudaSuccess;
        done += piece;
    }
    return bad;
}

static cublasOperation_t op_of(int t)
{
    return t == 2 ? CUBLAS_OP_C : t ? CUBLAS_OP_T : CUBLAS_OP_N;
}

static cublasStatus_t gemm_call(cublasHandle_t h, const call *c, const void *pool, void *C)
{
    const cublasOperation_t oa = op_of(c->ta), ob = op_of(c->tb);
    const size_t half = pool_elems(c) / 2;
    if (c->cplx && c->dbl) {
        const cuDoubleComplex alpha = {c->alpha, c->alpha_im}, beta = {c->beta, c->beta_im};
        const cuDoubleComplex *A = (const cuDoubleComplex *)pool + c->offa,
                              *B = (const cuDoubleComplex *)pool + half + c->offb;
        return cublasZgemmStridedBatched(h, oa, ob, c->m, c->n, c->k, &alpha, A, c->lda, c->sa, B,
                                         c->ldb, c->sb, &beta, C, c->ldc, c->sc, c->batch);
    }
    if (c->cplx) {
        const cuComplex alpha = {(float)c->alpha, (float)c->alpha_im},
                        beta = {(float)c->beta, (float)c->beta_im};
        const cuComplex *A = (const cuComplex *)pool + c->offa,
                        *B = (const cuComplex *)pool + half + c->offb;
        return cublasCgemmStridedBatched(h, oa, ob, c->m, c->n, c->k, &alpha, A, c->lda, c->sa, B,
                                         c->ldb, c->sb, &beta, C, c->ldc, c->sc, c->batch);
    }
    if (c->dbl) {
        const double *A = (const double *)pool + c->offa, *B = (const double *)pool + HALF + c->offb;
        return cublasDgemmStridedBatched(h, oa, ob, c->m, c->n, c->k, &c->alpha, A, c->lda, c->sa,
                                         B, c->ldb, c->sb, &c->beta, C, c->ldc, c->sc, c->batch);
    }
    const float alpha = (float)c->alpha, beta = (float)c->beta;
    const float *A = (const float *)pool + c->offa, *B = (const float *)pool + HALF + c->offb;
    return cublasSgemmStridedBatched(h, oa, ob, c->m, c->n, c->k, &alpha, A, c->lda, c->sa, B,
                                     c->ldb, c->sb, &beta, C, c->ldc, c->sc, c->batch);
}

typedef struct env {
    cublasHandle_t h;
    cudaStream_t s;
    const char *types, *mode, *device;
} env;

static int want(const char *types, char t)
{
    return strchr(types, t) || strchr(types, t + ('a' - 'A'));
}

/* ---- --fp ---- */

static const int fp_sizes[] = {1, 3, 8, 17, 32, 64, 100, 128, 255, 256, 300};
#define NSIZES ((int)(sizeof fp_sizes / sizeof fp_sizes[0]))
static const double fp_ab[4][2] = {{1, 0}, {-0.75, 0}, {1.5, 1}, {0.5, -2}};
static const char *const trans_name[4] = {"NN", "NT", "TN", "TT"};
/* complex data: (alpha, beta) as (re, im) pairs; transposes N, T, C for each operand (ta 3 + tb) */
static const double fp_ab_c[4][4] = {
    {1, 0, 0, 0}, {-0.75, 0.5, 0, 0}, {1.5, -1, 1, 0}, {0.5, 0.25, -2, 1}};
static const char *const trans_name_c[9] = {"NN", "NT", "NC", "TN", "TT", "TC", "CN", "CT", "CC"};

/* matrices per call: about 1e5 of the fused path's checks (ceil(m / 256) n each), 10000 at most */
static int fp_batch(int m, int n)
{
    const long long per = (long long)((m + 255) / 256) * n;
    const long long b = (100000 + per / 2) / per;
    return b > 10000 ? 10000 : b < 2 ? 2 : (int)b;
}

static void fp_print(const fp_count *c, const char *type, const char *series, double seconds,
                     const env *e)
{
    printf("{\"mode\":\"fp\",\"type\":\"%s\",\"series\":\"%s\",\"calls\":%llu,\"gemms\":%llu,"
           "\"checks\":%llu,",
           type, series, (unsigned long long)c->calls, (unsigned long long)c->gemms,
           (unsigned long long)c->checks);
    fp_print_flags(c);
    printf("\"not_fused_calls\":%llu,\"failed_calls\":%llu,\"seconds\":%.3g,"
           "\"mode_batched\":\"%s\",\"device\":\"%s\"}\n",
           (unsigned long long)c->unexpected, (unsigned long long)c->failed, seconds, e->mode,
           e->device);
    fflush(stdout);
}

/* Fault-free protected calls of each requested type over every series, `seconds` in all, the
 * pools' filling included, shared equally by the (series, type) slots; the counters read after
 * every call, a flagged call described on stderr. */
static int run_fp(const env *e, double seconds)
{
    /* every (m, n, k) of fp_sizes^3 with m n k <= 2^24 (the fused path's limit until 2^30 on; the
     * few larger ones of the list are left out, as in the measurements) */
    int shapes[NSIZES * NSIZES * NSIZES][3];
    const int nshapes = fp_shapes(fp_sizes, NSIZES, 0x1p24, shapes);
    size_t c_elems = 0; /* the largest batch's C */
    for (int i = 0; i < nshapes; i++) {
        const int m = shapes[i][0], n = shapes[i][1];
        const size_t ce = (size_t)m * (size_t)n * (size_t)fp_batch(m, n);
        c_elems = ce > c_elems ? ce : c_elems;
    }
    /* the (shape, transposes, scalars) combinations in an order that changes every one of them
     * from call to call: call i takes combination (start + i step) mod ncombos, step coprime;
     * real data 4 transposes x 4 scalar pairs, complex 9 x 4 */
    const uint64_t ncombos_r = (uint64_t)nshapes * 16, ncombos_c = (uint64_t)nshapes * 36;
    const uint64_t step_r = coprime_step(ncombos_r), step_c = coprime_step(ncombos_c);
    /* D, S, Z, C in this order; D and Z read the double pool, S and C the float one */
    static const char tnames[4] = {'D', 'S', 'Z', 'C'};
    int wanted[4], ntypes = 0;
    for (int t = 0; t < 4; t++)
        ntypes += wanted[t] = want(e->types, tnames[t]);
    const int need_d = wanted[0] || wanted[2], need_s = wanted[1] || wanted[3];
    const int slots = NSERIES * ntypes;
    double *h = malloc(8 * POOL);
    float *hf = need_s ? malloc(4 * POOL) : NULL;
    void *dpool = NULL, *spool = NULL, *C = NULL;
    /* C: the largest batch's, complex elements of two doubles where Z is run */
    if (!h || (need_s && !hf) || (need_d && cudaMalloc(&dpool, 8 * POOL) != cudaSuccess) ||
        (need_s && cudaMalloc(&spool, 4 * POOL) != cudaSuccess) ||
        cudaMalloc(&C, (wanted[2] ? 16 : 8) * c_elems) != cudaSuccess) {
        fprintf(stderr, "--fp: out of host or device memory\n");
        return 1;
    }
    fp_count total = {0};
    const double t0 = now_s();
    int slot = 0;
    for (int ser = 0; ser < NSERIES; ser++) {
        series_values(ser, h);
        int uploaded = -1; /* the pools hold: 0 the real layout, 1 the complex one (cancel) */
        for (int ti = 0; ti < 4; ti++) {
            if (!wanted[ti])
                continue;
            const int dbl = ti == 0 || ti == 2, cplx = ti >= 2;
            const int layout = cplx && ser == SER_CANCEL;
            if (uploaded != layout) {
                if (layout)
                    cancel_to_complex(h);
                if (upload_pool(h, hf, dpool, spool)) {
                    fprintf(stderr, "--fp: pool upload failed\n");
                    return 1;
                }
                uploaded = layout;
            }
            /* the time left shared equally by the slots left (a pool's filling shortens its
             * series' first slot only by its own time) */
            const double ts = now_s(), deadline = ts + (t0 + seconds - ts) / (slots - slot);
            slot++;
            const void *pool = dbl ? dpool : spool;
            const uint64_t ncombos = cplx ? ncombos_c : ncombos_r, step = cplx ? step_c : step_r;
            const int ntrans = cplx ? 9 : 4;
            const uint64_t start = below(ncombos);
            fp_count cnt = {0};
            stats_t s0 = stats_after(), s1;
            while (now_s() < deadline) {
                const uint64_t idx = (start + cnt.calls * step) % ncombos;
                const int *sh = shapes[idx % (uint64_t)nshapes];
                const int tr = (int)(idx / (uint64_t)nshapes % (uint64_t)ntrans),
                          ab = (int)(idx / (uint64_t)nshapes / (uint64_t)ntrans);
                call c = {.dbl = dbl, .m = sh[0], .n = sh[1], .k = sh[2],
                          .batch = fp_batch(sh[0], sh[1]), .ta = tr >> 1, .tb = tr & 1,
                          .alpha = fp_ab[ab][0], .beta = fp_ab[ab][1], .cplx = cplx};
                if (cplx) {
                    c.ta = tr / 3, c.tb = tr % 3;
                    c.alpha = fp_ab_c[ab][0], c.alpha_im = fp_ab_c[ab][1];
                    c.beta = fp_ab_c[ab][2], c.beta_im = fp_ab_c[ab][3];
                }
                place_call(&c, ser == SER_CANCEL);
                int bad = 0;
                if (c.beta != 0 || c.beta_im != 0) /* the old C: fresh from the pool (beta 0: never read) */
                    bad |= copy_old_c(&c, pool, C, e->s);
                bad |= gemm_call(e->h, &c, pool, C) != CUBLAS_STATUS_SUCCESS;
                s1 = stats_after();
                bad |= cudaGetLastError() != cudaSuccess;
                const uint64_t fa = s1.false_alarms - s0.false_alarms,
                               det = s1.errors_detected - s0.errors_detected,
                               chk = s1.checks - s0.checks;
                const uint64_t fused = (uint64_t)c.batch * (uint64_t)((c.m + 255) / 256) * (uint64_t)c.n;
                s0 = s1;
                cnt.calls++;
                cnt.gemms += (uint64_t)c.batch;
                cnt.checks += chk;
                cnt.expected += fused;
                cnt.unexpected += chk != fused; /* the fused path counts exactly this */
                cnt.failed += (uint64_t)bad;
                cnt.false_alarms += fa;
                cnt.detected += det;
                if ((fa || det) && cplx) { /* enough to repeat the call */
                    cnt.flagged_calls++;
                    fprintf(stderr,
                            "{\"mode\":\"fp-flag\",\"type\":\"%c\",\"series\":\"%s\",\"m\":%d,"
                            "\"n\":%d,\"k\":%d,\"trans\":\"%s\",\"alpha\":[%g,%g],\"beta\":[%g,%g],"
                            "\"batch\":%d,\"lda\":%d,\"ldb\":%d,\"sa\":%lld,\"sb\":%lld,"
                            "\"offa\":%zu,\"offb\":%zu,\"offc\":%zu,\"false_alarms\":%llu,"
                            "\"errors_detected\":%llu}\n",
                            type_char(dbl, cplx), series_name[ser], c.m, c.n, c.k,
                            trans_name_c[tr], c.alpha, c.alpha_im, c.beta, c.beta_im, c.batch,
                            c.lda, c.ldb, c.sa, c.sb, c.offa, c.offb, c.offc,
                            (unsigned long long)fa, (unsigned long long)det);
                } else if (fa || det) {
                    cnt.flagged_calls++;
                    fprintf(stderr,
                            "{\"mode\":\"fp-flag\",\"type\":\"%c\",\"series\":\"%s\",\"m\":%d,"
                            "\"n\":%d,\"k\":%d,\"trans\":\"%s\",\"alpha\":%g,\"beta\":%g,"
                            "\"batch\":%d,\"lda\":%d,\"ldb\":%d,\"sa\":%lld,\"sb\":%lld,"
                            "\"offa\":%zu,\"offb\":%zu,\"offc\":%zu,\"false_alarms\":%llu,"
                            "\"errors_detected\":%llu}\n",
                            dbl ? 'D' : 'S', series_name[ser], c.m, c.n, c.k, trans_name[tr],
                            c.alpha, c.beta, c.batch, c.lda, c.ldb, c.sa, c.sb, c.offa, c.offb,
                            c.offc, (unsigned long long)fa, (unsigned long long)det);
                }
            }
            const char tn[2] = {type_char(dbl, cplx), '\0'};
            fp_print(&cnt, tn, series_name[ser], now_s() - ts, e);
            fp_add(&total, &cnt);
        }
    }
    fp_print(&total, "all", "all", now_s() - t0, e);
    free(h);
    free(hf);
    cudaFree(dpool);
    cudaFree(spool);
    cudaFree(C);
    return 0;
}

/* ---- --bits ---- */

static double at(const void *p, int dbl, size_t i)
{
    return dbl ? ((const double *)p)[i] : (double)((const float *)p)[i];
}

/* the spacing of the type's numbers at |q| */
static double ulp_of(double q, int dbl)
{
    const double tiny = dbl ? 0x1p-1074 : 0x1p-149;
    if (q == 0)
        return tiny;
    const double u = ldexp(1.0, ilogb(q) - (dbl ? 52 : 23));
    return u > tiny ? u : tiny;
}

/* Element e of matrix g agrees with plain cuBLAS: the same bits, within 2 ulp, or within twice
 * the worst-case rounding of one result, 2 gamma_{k+2} sum_l |a_il b_lj| (the protected GEMM of
 * BLASFT_GPU_BATCHED=each may sum in another order, and a corrected element is the exact value
 * rounded, not cuBLAS's). ha and hb: the call's A and B on the host, fetched on first need. */
typedef struct bits_ctx {
    const call *c;
    const void *pool;
    const void *hc, *hp; /* protected and plain C on the host */
    void *ha, *hb;
    int have_ab;
} bits_ctx;

static int fetch_ab(bits_ctx *b)
{
    const call *c = b->c;
    const size_t es = (c->dbl ? 8u : 4u) * (c->cplx ? 2u : 1u);
    const size_t na = (size_t)(c->batch - 1) * (size_t)c->sa + (size_t)c->lda * (size_t)c->k;
    const size_t nb = (size_t)(c->batch - 1) * (size_t)c->sb + (size_t)c->ldb * (size_t)c->n;
    if (cudaMemcpy(b->ha, (const char *)b->pool + es * c->offa, es * na,
                   cudaMemcpyDeviceToHost) != cudaSuccess ||
        cudaMemcpy(b->hb, (const char *)b->pool + es * (pool_elems(c) / 2 + c->offb), es * nb,
                   cudaMemcpyDeviceToHost) != cudaSuccess)
        return -1;
    b->have_ab = 1;
    return 0;
}

/* complex data: both parts, each within 2 ulp or 2 gamma_{2k+2} sum_l |a_il| |b_lj| (a part of a
 * complex product's sum is 2k real products, each at most |a_il| |b_lj|) */
static int agrees_complex(bits_ctx *b, int g, int i, int j)
{
    const call *c = b->c;
    const size_t es = c->dbl ? 16 : 8, e = (size_t)g * (size_t)c->sc + (size_t)i + (size_t)j * (size_t)c->ldc;
    if (memcmp((const char *)b->hc + es * e, (const char *)b->hp + es * e, es) == 0)
        return 1;
    double d[2];
    int near = 1;
    for (int t = 0; t < 2; t++) {
        const double p = at(b->hc, c->dbl, 2 * e + (size_t)t), q = at(b->hp, c->dbl, 2 * e + (size_t)t);
        if (!isfinite(p) || !isfinite(q))
            return 0;
        d[t] = fabs(p - q);
        if (d[t] > 2.0 * ulp_of(q, c->dbl))
            near = 0;
    }
    if (near)
        return 1;
    if (!b->have_ab && fetch_ab(b))
        return 0;
    double mass = 0; /* NN, packed: A(i, l) = a[i + l lda], B(l, j) = b[l + j ldb] */
    for (int l = 0; l < c->k; l++) {
        const size_t ia = 2 * ((size_t)g * (size_t)c->sa + (size_t)i + (size_t)l * (size_t)c->lda);
        const size_t ib = 2 * ((size_t)g * (size_t)c->sb + (size_t)l + (size_t)j * (size_t)c->ldb);
        mass += hypot(at(b->ha, c->dbl, ia), at(b->ha, c->dbl, ia + 1)) *
                hypot(at(b->hb, c->dbl, ib), at(b->hb, c->dbl, ib + 1));
    }
    const double u = c->dbl ? 0x1p-53 : 0x1p-24, n = 2.0 * c->k + 2.0;
    const double bound = 2.0 * (n * u / (1.0 - n * u)) * mass;
    for (int t = 0; t < 2; t++) {
        const double q = at(b->hp, c->dbl, 2 * e + (size_t)t);
        if (d[t] > 2.0 * ulp_of(q, c->dbl) && d[t] > bound)
            return 0;
    }
    return 1;
}

static int agrees(bits_ctx *b, int g, int i, int j)
{
    const call *c = b->c;
    if (c->cplx)
        return agrees_complex(b, g, i, j);
    const size_t es = c->dbl ? 8 : 4, e = (size_t)g * (size_t)c->sc + (size_t)i + (size_t)j * (size_t)c->ldc;
    if (memcmp((const char *)b->hc + es * e, (const char *)b->hp + es * e, es) == 0)
        return 1;
    const double p = at(b->hc, c->dbl, e), q = at(b->hp, c->dbl, e);
    if (!isfinite(p) || !isfinite(q))
        return 0;
    const double d = fabs(p - q);
    if (d <= 2.0 * ulp_of(q, c->dbl))
        return 1;
    if (!b->have_ab && fetch_ab(b))
        return 0;
    double mass = 0; /* NN, packed: A(i, l) = a[i + l lda], B(l, j) = b[l + j ldb] */
    for (int l = 0; l < c->k; l++)
        mass += fabs(at(b->ha, c->dbl, (size_t)g * (size_t)c->sa + (size_t)i + (size_t)l * (size_t)c->lda) *
                     at(b->hb, c->dbl, (size_t)g * (size_t)c->sb + (size_t)l + (size_t)j * (size_t)c->ldb));
    const double u = c->dbl ? 0x1p-53 : 0x1p-24, n = (double)c->k + 2.0;
    return d <= 2.0 * (n * u / (1.0 - n * u)) * mass;
}

/* For each requested type and each bit of its numbers: `trials` calls of a strided batch of 16
 * matrices (NN, alpha 1, beta 0, uniform [-1, 1]) with that bit of C(row, col) flipped in every
 * matrix (row, col random per call); detection by the counters, the result against plain cuBLAS
 * computed afterwards through the bypass. */
static int run_bits(const env *e, int trials, int m, int n, int k)
{
    enum { BATCH = 16 };
    /* D, S, Z, C in this order; D and Z read the double pool, S and C the float one (the same
     * uniform numbers, complex elements of two of them: each part uniform [-1, 1]) */
    static const char tnames[4] = {'D', 'S', 'Z', 'C'};
    int wanted[4];
    for (int t = 0; t < 4; t++)
        wanted[t] = want(e->types, tnames[t]);
    const int need_d = wanted[0] || wanted[2], need_s = wanted[1] || wanted[3];
    const int any_cplx = wanted[2] || wanted[3];
    /* the 16 A and B packed (place() keeps them so where they fit), so that the host copies
     * of one call's A and B below are 16 matrices each; complex: in the pool's POOL / 2 elements */
    const double room = any_cplx ? (double)(HALF / 2) : (double)HALF;
    if ((double)m * k * BATCH > room || (double)k * n * BATCH > room) {
        fprintf(stderr, "--bits: 16 matrices of %dx%dx%d do not fit the pool's half (%s)\n",
                m, n, k, any_cplx ? "2^23 complex elements" : "2^24");
        return 2;
    }
    /* host and device buffers for the widest element: 16 bytes where Z is run */
    const size_t ew = wanted[2] ? 16 : 8;
    double *h = malloc(8 * POOL);
    float *hf = need_s ? malloc(4 * POOL) : NULL;
    void *dpool = NULL, *spool = NULL, *C = NULL, *Cp = NULL;
    const size_t c_elems = (size_t)BATCH * (size_t)m * (size_t)n;
    void *hc = malloc(ew * c_elems), *hp = malloc(ew * c_elems);
    void *ha = malloc(ew * BATCH * (size_t)m * (size_t)k), *hb = malloc(ew * BATCH * (size_t)k * (size_t)n);
    if (!h || (need_s && !hf) || !hc || !hp || !ha || !hb ||
        (need_d && cudaMalloc(&dpool, 8 * POOL) != cudaSuccess) ||
        (need_s && cudaMalloc(&spool, 4 * POOL) != cudaSuccess) ||
        cudaMalloc(&C, ew * c_elems) != cudaSuccess || cudaMalloc(&Cp, ew * c_elems) != cudaSuccess) {
        fprintf(stderr, "--bits: out of host or device memory\n");
        return 1;
    }
    series_values(SER_UNIFORM, h);
    if (upload_pool(h, hf, dpool, spool)) {
        fprintf(stderr, "--bits: pool upload failed\n");
        return 1;
    }
    for (int ti = 0; ti < 4; ti++) {
        if (!wanted[ti])
            continue;
        const int dbl = ti == 0 || ti == 2, cplx = ti >= 2;
        const void *pool = dbl ? dpool : spool;
        const int nbits = dbl ? 64 : 32; /* complex: the real part's bits */
        uint64_t all_flips = 0, all_detected = 0, all_right = 0;
        const double tt = now_s();
        for (int bit = 0; bit < nbits; bit++) {
            const double tb = now_s();
            uint64_t flips = 0, detected = 0, right = 0, false_alarms = 0, failed = 0,
                     undetected = 0;
            double worst = -1; /* undetected_max_rel; -1: none undetected */
            stats_t s0 = stats_after(), s1;
            for (int t = 0; t < trials; t++) {
                call c = {.dbl = dbl, .m = m, .n = n, .k = k, .batch = BATCH, .alpha = 1,
                          .cplx = cplx};
                place_call(&c, 0);
                const int row = (int)below((uint64_t)m), col = (int)below((uint64_t)n);
                int bad = plant_fault(BATCH, row, col, bit) != 0;
                bad |= gemm_call(e->h, &c, pool, C) != CUBLAS_STATUS_SUCCESS;
                s1 = stats_after();
                plant_fault(0, 0, 0, 0); /* disarm what the call did not take */
                const uint64_t det = s1.errors_detected - s0.errors_detected;
                flips += s1.faults_injected - s0.faults_injected;
                false_alarms += s1.false_alarms - s0.false_alarms;
                bypass(1);
                bad |= gemm_call(e->h, &c, pool, Cp) != CUBLAS_STATUS_SUCCESS;
                bypass(0);
                /* waits for the plain call too (cudaMemcpy would not: the stream is
                 * non-blocking); the bypass leaves the counters alone */
                s0 = stats_after();
                const size_t bytes = (dbl ? 8u : 4u) * (cplx ? 2u : 1u) * c_elems;
                bad |= cudaMemcpy(hc, C, bytes, cudaMemcpyDeviceToHost) != cudaSuccess;
                bad |= cudaMemcpy(hp, Cp, bytes, cudaMemcpyDeviceToHost) != cudaSuccess;
                bad |= cudaGetLastError() != cudaSuccess;
                failed += (uint64_t)bad;
                const uint64_t d = det < BATCH ? det : BATCH; /* one flip per matrix */
                detected += d;
                bits_ctx b = {.c = &c, .pool = pool, .hc = hc, .hp = hp, .ha = ha, .hb = hb};
                double rel_max = 0; /* over the call's 16 flipped elements */
                for (int g = 0; g < BATCH; g++) {
                    int ok = 1;
                    for (int j = 0; j < n && ok; j++)
                        for (int i = 0; i < m && ok; i++)
                            ok = agrees(&b, g, i, j);
                    right += (uint64_t)ok;
                    const size_t f = (size_t)g * (size_t)c.sc + (size_t)row + (size_t)col * (size_t)m;
                    double rel;
                    if (cplx) { /* |c_flipped - c| / |c|, complex moduli */
                        const double pr = at(hc, dbl, 2 * f), pi = at(hc, dbl, 2 * f + 1);
                        const double qr = at(hp, dbl, 2 * f), qi = at(hp, dbl, 2 * f + 1);
                        rel = pr == qr && pi == qi ? 0.0 : hypot(pr - qr, pi - qi) / hypot(qr, qi);
                    } else {
                        const double p = at(hc, dbl, f), q = at(hp, dbl, f);
                        rel = p == q ? 0.0 : fabs(p - q) / fabs(q); /* q = 0: inf */
                    }
                    if (isnan(rel))
                        rel = INFINITY; /* flipped into NaN */
                    rel_max = rel > rel_max ? rel : rel_max;
                }
                /* the counters do not say which matrices' flips went undetected; corrected
                 * ones sit at rounding level, so the largest deviations are theirs */
                if (d < BATCH) {
                    undetected += BATCH - d;
                    worst = rel_max > worst ? rel_max : worst;
                }
            }
            printf("{\"mode\":\"bits\",\"type\":\"%c\",\"bit\":%d,\"flips\":%llu,\"detected\":%llu,"
                   "\"corrected_right\":%llu,\"undetected_max_rel\":",
                   type_char(dbl, cplx), bit, (unsigned long long)flips,
                   (unsigned long long)detected, (unsigned long long)right);
            if (undetected)
                print_num(worst);
            else
                printf("null");
            printf(",\"false_alarms\":%llu,\"failed_calls\":%llu,\"trials\":%d,\"seconds\":%.3g,"
                   "\"mode_batched\":\"%s\",\"shape\":\"%dx%dx%d\",\"device\":\"%s\"",
                   (unsigned long long)false_alarms, (unsigned long long)failed, trials,
                   now_s() - tb, e->mode, m, n, k, e->device);
            if (flips != (uint64_t)trials * BATCH)
                printf(",\"warning\":\"%llu flips planted, %llu asked\"",
                       (unsigned long long)flips, (unsigned long long)trials * BATCH);
            printf("}\n");
            fflush(stdout);
            all_flips += flips, all_detected += detected, all_right += right;
        }
        printf("{\"mode\":\"bits-total\",\"type\":\"%c\",\"flips\":%llu,\"detected\":%llu,"
               "\"corrected_right\":%llu,\"seconds\":%.3g,\"mode_batched\":\"%s\","
               "\"shape\":\"%dx%dx%d\",\"device\":\"%s\"}\n",
               type_char(dbl, cplx), (unsigned long long)all_flips, (unsigned long long)all_detected,
               (unsigned long long)all_right, now_s() - tt, e->mode, m, n, k, e->device);
        fflush(stdout);
    }
    free(h); free(hf); free(hc); free(hp); free(ha); free(hb);
    cudaFree(dpool); cudaFree(spool); cudaFree(C); cudaFree(Cp);
    return 0;
}

int main(int argc, char **argv)
{
    if (bench_find_symbols())
        return 1;
    int rounds = 5, max_calls = 20, ncases = 0;
    const char *types = "DS";
    int cases[64][2];
    double fp_seconds = 0; /* --fp: > 0 */
    int bits_trials = 0, sm = 64, sn = 64, sk = 64; /* --bits: > 0; --shape */
    for (int i = 1; i < argc; i++) {
        if (bench_mode_arg(argc, argv, &i, &fp_seconds, &bits_trials))
            continue;
        if (strcmp(argv[i], "--shape") == 0 && i + 1 < argc &&
            sscanf(argv[++i], "%dx%dx%d", &sm, &sn, &sk) == 3 && sm > 0 && sn > 0 && sk > 0)
            continue;
        if (strcmp(argv[i], "--seed") == 0 && i + 1 < argc) {
            rng_state = strtoull(argv[++i], NULL, 0);
            continue;
        }
        if (bench_count_arg(argc, argv, &i, &rounds, &max_calls))
            continue;
        if (strcmp(argv[i], "--types") == 0 && i + 1 < argc)
            types = argv[++i];
        else if (ncases < 64 && sscanf(argv[i], "%d:%d", &cases[ncases][0], &cases[ncases][1]) == 2 &&
                 cases[ncases][0] > 0 && cases[ncases][1] > 0)
            ncases++;
        else {
            fprintf(stderr,
                    "usage: %s [--rounds R] [--calls C] [--types DSZC] [N:BATCH ...]\n"
                    "       %s --fp SECONDS [--types DSZC] [--seed S]\n"
                    "       %s --bits TRIALS [--shape MxNxK] [--types DSZC] [--seed S]\n",
                    argv[0], argv[0], argv[0]);
            return 2;
        }
    }
    const int timing = fp_seconds <= 0 && bits_trials <= 0;
    int rc = bench_check_args(fp_seconds, bits_trials, ncases, "N:BATCH", rounds, max_calls);
    if (rc)
        return rc;
    if (!ncases) {
        static const int dflt[][2] = {{8, 10000}, {32, 1000}, {64, 1000},
                                      {128, 256}, {256, 64},  {512, 16}, {2048, 2}};
        for (size_t i = 0; i < sizeof dflt / sizeof dflt[0]; i++)
            cases[ncases][0] = dflt[i][0], cases[ncases][1] = dflt[i][1], ncases++;
    }
    char device[256];
    if ((rc = bench_device(device, sizeof device)))
        return rc;
    const char *mode = getenv("BLASFT_GPU_BATCHED");
    if (!mode || !*mode)
        mode = "fused";
    cublasHandle_t h;
    cudaStream_t s;
    if (bench_handle(&h, &s))
        return 1;
    const env e = {h, s, types, mode, device};
    if (fp_seconds > 0)
        rc = run_fp(&e, fp_seconds);
    if (bits_trials > 0 && !rc)
        rc = run_bits(&e, bits_trials, sm, sn, sk);
    for (int i = 0; timing && i < ncases; i++)
        for (const char *t = types; *t; t++) {
            const char u = (char)(*t & ~0x20); /* upper case */
            if (u == 'D' || u == 'S' || u == 'Z' || u == 'C')
                run_case(h, s, u == 'D' || u == 'Z', u == 'Z' || u == 'C', cases[i][0],
                         cases[i][1], rounds, max_calls, mode, device);
        }
    cublasDestroy_v2(h);
    cudaStreamDestroy(s);
    return rc;
}
