/* An unmodified cublasLt program, run with LD_PRELOAD=libblas_ft.so (suite 'cublas'):
 * cublasLtMatmul on fresh random data against a host reference within the rounding bound, for
 * the configurations the interposer protects (float and double, real and complex, transposes,
 * lda > m, C in place or apart from D, scalars in host or device memory, a bias vector, strided
 * batches) and for those it passes on (counted unprotected: ReLU epilogue, TF32 compute, a bias
 * over C in place with beta != 0); the counters of protected and unprotected GEMMs; planted
 * faults detected and corrected.
 * Half and bfloat16 (the second half of the file): A and B both CUDA_R_16F or both CUDA_R_16BF,
 * C and D of that type or both CUDA_R_32F, CUBLAS_COMPUTE_32F with float scalars, column order,
 * one GEMM or a strided batch (CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT 2 to 40 on all four layouts,
 * CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET one matrix's storage, or with a gap after each
 * matrix, NaN in A's and B's, or 0 for A: one A for the batch); transposes N and T, shapes 1x1x1
 * to 300x200x1000, lda, ldb, ldc above the rows (NaN in A's and B's padding: a read of it shows in
 * D), data uniform in [-1, 1], uniform in [0, 1] or small integers (nothing near half's overflow);
 * epilogue DEFAULT or BIAS (a vector of m elements in D's type, its data type left default, the
 * same for every matrix of a batch); C in place or apart from D (another ld and stride, D's old
 * content NaN); scalars in host memory and (DEFAULT only) device memory. Expected protected: +batch
 * protected GEMMs (1 for one GEMM), none unprotected, exactly batch ceil(m / BS) n checks (BS:
 * BLASFT_BLOCK_SIZE, else 256), nothing detected. The oracle (long double on the exact 16-bit
 * values, half_test.h's conversions: cuda_fp16.h is C++ only, as in test_cublas_lowp.c), matrix
 * by matrix: v = alpha op(A) op(B) + beta C + bias (bias(i) on row i), every element within
 * |d - v| <= u |v| + (k + 4) 2^-22 (|alpha| sum_l |a_il b_lj| + |beta c| + |bias|) + tiny, u =
 * 2^-11 (half D), 2^-8 (bfloat16 D), 2^-24 (float D), tiny = 2^-24 for a half D, else 1e-38; D's
 * padding rows and the gaps between its matrices unchanged bit for bit.
 * Counted unprotected (batch GEMMs, no checks) and within the looser bound, 32 u (|alpha| sum |ab|
 * + |beta c| + |bias|) more (cuBLAS's own split-K sums may be rounded to D's type):
 * CUBLAS_COMPUTE_16F on half data (scale type 16F, half scalars; also within test_cublas_lowp's
 * half-accumulation bound, (k + 2) 2^-10 (...) + k 2^-24, where that is larger; one GEMM and a
 * batch), the ReLU-bias epilogue, a bias over C in place with beta != 0, a bias with device
 * scalars, a batch with a bias. Planted faults: the top exponent bit (14) of a half and a bfloat16
 * D, bit 30 of a float D after half and bfloat16 inputs, at D's element whose results in the
 * planted matrices are largest against their bound, in one GEMM or in the first 3 of 5, 4 of 4
 * and 16 of 20 matrices of a batch: injected once per planted matrix, detected and corrected (or
 * its block recomputed) at least as many times, none uncorrectable, D within the bound.
 * Every case runs on a stream of its own, created and destroyed around it, so the interposer
 * evicts contexts whose streams are gone (8 per thread are kept).
 * --expect-off: run under BLASFT_MODE=off, every GEMM must pass through unprotected (no checks;
 * half and bfloat16 results within the looser bound).
 * LT_TRACE=1 names each case on stderr; a crash prints a backtrace (the device machine has no
 * debugger). Exits 77 without a GPU. No cmocka (the device machine has none). */
#include <cublasLt.h>
#include <cuda_runtime.h>

#include "half_test.h"
#include "interpose_test.h"

#include <dlfcn.h>
#include <execinfo.h>
#include <math.h>
#include <signal.h>
#include <unistd.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum { PLAIN, BIAS, RELU_BIAS } epi_t;

typedef struct lcase {
    int dbl, cplx;
    cublasOperation_t ta, tb;
    int m, n, k, pad, batch;
    double alpha, beta;
    int c_apart;  /* C and D different matrices (D's ld differs from C's) */
    int device;   /* alpha and beta in device memory */
    epi_t epi;
    int tf32;     /* compute type 32F_FAST_TF32 */
    int expect;   /* protected under the default settings */
} lcase;

/* Host operands and D's reference with its rounding bound; parts interleaved for complex. */
typedef struct ldata {
    int P, lda, ldb, ldc, ldd;
    size_t na, nb, nc, nd;
    double *A, *B, *C, *bias, *ref, *bound;
} ldata;

static void make(ldata *r, const lcase *g)
{
    const int P = g->cplx ? 2 : 1;
    int ar = g->ta == CUBLAS_OP_N ? g->m : g->k, ac = g->ta == CUBLAS_OP_N ? g->k : g->m;
    int br = g->tb == CUBLAS_OP_N ? g->k : g->n, bc = g->tb == CUBLAS_OP_N ? g->n : g->k;
    r->P = P;
    r->lda = ar + g->pad;
    r->ldb = br + g->pad;
    r->ldc = g->m + g->pad;
    r->ldd = g->c_apart ? g->m + g->pad + 3 : r->ldc;
    r->na = (size_t)r->lda * ac, r->nb = (size_t)r->ldb * bc;
    r->nc = (size_t)r->ldc * g->n, r->nd = (size_t)r->ldd * g->n;
    const size_t B = (size_t)g->batch;
    r->A = malloc(8 * P * r->na * B);
    r->B = malloc(8 * P * r->nb * B);
    r->C = malloc(8 * P * r->nc * B);
    r->bias = malloc(8 * (size_t)g->m);
    r->ref = malloc(8 * P * r->nd * B);
    r->bound = malloc(8 * r->nd * B);
    /* float-exact values: both precisions see the same data */
    for (size_t i = 0; i < P * r->na * B; i++) r->A[i] = (float)urand();
    for (size_t i = 0; i < P * r->nb * B; i++) r->B[i] = (float)urand();
    for (size_t i = 0; i < P * r->nc * B; i++) r->C[i] = (float)urand();
    for (int i = 0; i < g->m; i++) r->bias[i] = (float)urand();
    /* TF32 products carry 10 fraction bits of each operand */
    const double u = g->dbl ? 0x1p-53 : g->tf32 ? 0x1p-11 : 0x1p-24;
    const double conj_a = g->ta == CUBLAS_OP_C ? -1.0 : 1.0, conj_b = g->tb == CUBLAS_OP_C ? -1.0 : 1.0;
    for (size_t b = 0; b < B; b++)
        for (int j = 0; j < g->n; j++)
            for (int i = 0; i < g->m; i++) {
                long double sr = 0, si = 0, mag = 0;
                for (int l = 0; l < g->k; l++) {
                    size_t ia = g->ta == CUBLAS_OP_N ? i + (size_t)l * r->lda : l + (size_t)i * r->lda;
                    size_t ib = g->tb == CUBLAS_OP_N ? l + (size_t)j * r->ldb : j + (size_t)l * r->ldb;
                    const double *a = r->A + P * (b * r->na + ia), *x = r->B + P * (b * r->nb + ib);
                    long double axr = a[0], axi = P == 2 ? conj_a * a[1] : 0;
                    long double bxr = x[0], bxi = P == 2 ? conj_b * x[1] : 0;
                    sr += axr * bxr - axi * bxi;
                    si += axr * bxi + axi * bxr;
                    mag += (fabsl(axr) + fabsl(axi)) * (fabsl(bxr) + fabsl(bxi));
                }
                const double *c = r->C + P * (b * r->nc + i + (size_t)j * r->ldc);
                /* real alpha and beta (the complex cases use real scalars too) */
                long double vr = g->alpha * sr + g->beta * c[0], vi = g->alpha * si + (P == 2 ? g->beta * c[1] : 0);
                long double cm = fabs(g->beta) * (fabs(c[0]) + (P == 2 ? fabs(c[1]) : 0));
                if (g->epi != PLAIN) {
                    vr += r->bias[i];
                    cm += fabs(r->bias[i]);
                }
                if (g->epi == RELU_BIAS && vr < 0)
                    vr = 0;
                const size_t o = b * r->nd + i + (size_t)j * r->ldd;
                r->ref[P * o] = (double)vr;
                if (P == 2)
                    r->ref[P * o + 1] = (double)vi;
                /* two roundings more than a GEMM's: the bias, and beta C + bias where both */
                r->bound[o] = 2.0 * (g->k + 5) * u * (double)(fabs(g->alpha) * mag + cm) + 1e-300;
            }
}

static void release(ldata *r)
{
    free(r->A); free(r->B); free(r->C); free(r->bias); free(r->ref); free(r->bound);
}

/* worst |D - ref| / bound over the batch, every part */
static double compare(const ldata *r, const lcase *g, const void *dD)
{
    const size_t es = g->dbl ? 8 : 4, n = (size_t)r->P * r->nd * g->batch;
    void *h = malloc(es * n);
    cudaMemcpy(h, dD, es * n, cudaMemcpyDeviceToHost);
    double worst = 0;
    for (size_t b = 0; b < (size_t)g->batch; b++)
        for (int j = 0; j < g->n; j++)
            for (int i = 0; i < g->m; i++)
                for (int p = 0; p < r->P; p++) {
                    size_t o = b * r->nd + i + (size_t)j * r->ldd;
                    double v = g->dbl ? ((double *)h)[r->P * o + p] : ((float *)h)[r->P * o + p];
                    double q = fabs(v - r->ref[r->P * o + p]) / r->bound[o];
                    if (!(q <= worst))
                        worst = isnan(q) ? INFINITY : q;
                }
    free(h);
    return worst;
}

static const char *name(const lcase *g)
{
    static char s[160];
    snprintf(s, sizeof s, "%s%s %c%c %dx%dx%d pad %d batch %d alpha %g beta %g%s%s%s%s",
             g->cplx ? (g->dbl ? "Z" : "C") : (g->dbl ? "D" : "S"), g->tf32 ? " tf32" : "",
             "NTC"[g->ta], "NTC"[g->tb], g->m, g->n, g->k, g->pad, g->batch, g->alpha, g->beta,
             g->c_apart ? " C apart" : "", g->device ? " device scalars" : "",
             g->epi == BIAS ? " bias" : g->epi == RELU_BIAS ? " relu+bias" : "", "");
    return s;
}

/* One cublasLtMatmul; plant: a fault (bit) planted at (pi, pj) of D, which must be corrected */
/* What one cublasLtMatmul call of these tests needs besides its data: the operation (compute
 * type ct, scale type, transposes, the epilogue with its bias, device pointer mode where
 * `device`), the layouts of A and B (elements tab) and of C and D (tcd) at leading dimensions
 * ld[4], each a strided batch of `count` at strides stride[4] where count > 1, a workspace and a
 * stream of its own. */
typedef struct lt_op {
    cublasLtMatmulDesc_t desc;
    cublasLtMatrixLayout_t la, lb, lc, ld;
    void *ws;
    size_t wsz;
    cudaStream_t st;
} lt_op;

static void lt_op_make(lt_op *o, cublasComputeType_t ct, cudaDataType scale, cublasOperation_t ta,
                       cublasOperation_t tb, epi_t epi, void *bias, int device, cudaDataType tab,
                       cudaDataType tcd, int m, int n, int k, const int ld[4], int count,
                       const int64_t stride[4])
{
    cublasLtMatmulDescCreate(&o->desc, ct, scale);
    const int32_t a = ta, b = tb;
    cublasLtMatmulDescSetAttribute(o->desc, CUBLASLT_MATMUL_DESC_TRANSA, &a, sizeof a);
    cublasLtMatmulDescSetAttribute(o->desc, CUBLASLT_MATMUL_DESC_TRANSB, &b, sizeof b);
    if (epi != PLAIN) { /* the bias's data type left default: D's */
        const uint32_t e = epi == BIAS ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_RELU_BIAS;
        cublasLtMatmulDescSetAttribute(o->desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &e, sizeof e);
        cublasLtMatmulDescSetAttribute(o->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias,
                                       sizeof bias);
    }
    if (device) {
        const int32_t pm = CUBLASLT_POINTER_MODE_DEVICE;
        cublasLtMatmulDescSetAttribute(o->desc, CUBLASLT_MATMUL_DESC_POINTER_MODE, &pm, sizeof pm);
    }
    const int ar = ta == CUBLAS_OP_N ? m : k, ac = ta == CUBLAS_OP_N ? k : m;
    const int br = tb == CUBLAS_OP_N ? k : n, bc = tb == CUBLAS_OP_N ? n : k;
    cublasLtMatrixLayoutCreate(&o->la, tab, ar, ac, ld[0]);
    cublasLtMatrixLayoutCreate(&o->lb, tab, br, bc, ld[1]);
    cublasLtMatrixLayoutCreate(&o->lc, tcd, m, n, ld[2]);
    cublasLtMatrixLayoutCreate(&o->ld, tcd, m, n, ld[3]);
    if (count > 1) {
        const int32_t c = count;
        cublasLtMatrixLayout_t L[4] = {o->la, o->lb, o->lc, o->ld};
        for (int q = 0; q < 4; q++) {
            cublasLtMatrixLayoutSetAttribute(L[q], CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &c, sizeof c);
            cublasLtMatrixLayoutSetAttribute(L[q], CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                                             &stride[q], sizeof stride[q]);
        }
    }
    o->wsz = 32u << 20;
    o->ws = NULL;
    cudaMalloc(&o->ws, o->wsz);
    cudaStreamCreate(&o->st);
}

static void lt_op_free(lt_op *o)
{
    cublasLtMatrixLayoutDestroy(o->la);
    cublasLtMatrixLayoutDestroy(o->lb);
    cublasLtMatrixLayoutDestroy(o->lc);
    cublasLtMatrixLayoutDestroy(o->ld);
    cublasLtMatmulDescDestroy(o->desc);
    cudaStreamDestroy(o->st);
    cudaFree(o->ws);
}

static void one(cublasLtHandle_t lh, lcase g, int expect_off, int plant_bit, int pi, int pj)
{
    if (getenv("LT_TRACE"))
        fprintf(stderr, "case %s\n", name(&g));
    ldata r;
    make(&r, &g);
    const int P = r.P, B = g.batch;
    void *dA = to_device(r.A, P * r.na * B, g.dbl), *dB = to_device(r.B, P * r.nb * B, g.dbl);
    void *dC = to_device(r.C, P * r.nc * B, g.dbl), *dbias = to_device(r.bias, g.m, g.dbl);
    void *dD = dC;
    if (g.c_apart) {
        double *junk = malloc(8 * P * r.nd * B);
        for (size_t i = 0; i < P * r.nd * B; i++)
            junk[i] = NAN; /* D's old content must not matter */
        dD = to_device(junk, P * r.nd * B, g.dbl);
        free(junk);
    }
    const cudaDataType dt = g.cplx ? (g.dbl ? CUDA_C_64F : CUDA_C_32F) : (g.dbl ? CUDA_R_64F : CUDA_R_32F);
    const cublasComputeType_t ct = g.dbl ? CUBLAS_COMPUTE_64F
                                         : g.tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
    const int lds[4] = {r.lda, r.ldb, r.ldc, r.ldd};
    const int64_t strides[4] = {(int64_t)r.na, (int64_t)r.nb, (int64_t)r.nc, (int64_t)r.nd};
    lt_op op;
    lt_op_make(&op, ct, dt, g.ta, g.tb, g.epi, dbias, g.device, dt, dt, g.m, g.n, g.k, lds, B,
               strides);
    /* scalars: real values in the scale type (complex: imaginary part 0) */
    double sd[4] = {g.alpha, 0.0, g.beta, 0.0};
    float sf[4] = {(float)g.alpha, 0.0f, (float)g.beta, 0.0f};
    const size_t ss = (size_t)(g.dbl ? 8 : 4) * P;
    char hs[32];
    for (int q = 0; q < 2; q++)
        memcpy(hs + q * ss, g.dbl ? (const void *)&sd[2 * q] : (const void *)&sf[2 * q], ss);
    const void *alpha = hs, *beta = hs + ss;
    void *dscal = NULL;
    if (g.device) {
        cudaMalloc(&dscal, 2 * ss);
        cudaMemcpy(dscal, hs, 2 * ss, cudaMemcpyHostToDevice);
        alpha = dscal;
        beta = (const char *)dscal + ss;
    }
    if (plant_bit >= 0)
        plant_fault(1, pi, pj, plant_bit);
    stats_t s0 = stats_now();
    cublasStatus_t rc = cublasLtMatmul(lh, op.desc, alpha, dA, op.la, dB, op.lb, beta, dC, op.lc,
                                       dD, op.ld, NULL, op.ws, op.wsz, op.st);
    cudaStreamSynchronize(op.st);
    stats_t s1 = stats_now();
    const double q = compare(&r, &g, dD);
    const int prot = g.expect && !expect_off ? B : 0;
    CHECK(rc == CUBLAS_STATUS_SUCCESS, "%s: status %d", name(&g), (int)rc);
    CHECK(q <= 1.0, "%s: error %.3g x bound", name(&g), q);
    CHECK(s1.protected_gemms - s0.protected_gemms == (uint64_t)prot, "%s: %llu protected, expected %d",
          name(&g), (unsigned long long)(s1.protected_gemms - s0.protected_gemms), prot);
    CHECK(s1.unprotected_gemms - s0.unprotected_gemms == (uint64_t)(B - prot),
          "%s: %llu unprotected, expected %d", name(&g),
          (unsigned long long)(s1.unprotected_gemms - s0.unprotected_gemms), B - prot);
    if (plant_bit >= 0 && prot) {
        CHECK(s1.faults_injected - s0.faults_injected == 1, "%s: fault not planted", name(&g));
        CHECK(s1.errors_detected > s0.errors_detected &&
                  s1.errors_corrected + s1.blocks_recomputed > s0.errors_corrected + s0.blocks_recomputed,
              "%s: planted fault (bit %d) detected %llu, corrected %llu, recomputed %llu", name(&g),
              plant_bit, (unsigned long long)(s1.errors_detected - s0.errors_detected),
              (unsigned long long)(s1.errors_corrected - s0.errors_corrected),
              (unsigned long long)(s1.blocks_recomputed - s0.blocks_recomputed));
    } else {
        CHECK(s1.errors_detected == s0.errors_detected, "%s: false positive", name(&g));
    }
    if (plant_bit >= 0 && !prot)
        plant_fault(0, 0, 0, 0); /* disarm what no protected GEMM took */
    lt_op_free(&op);
    cudaFree(dA); cudaFree(dB); cudaFree(dC); cudaFree(dbias); cudaFree(dscal);
    if (dD != dC)
        cudaFree(dD);
    release(&r);
}

/* ---- half and bfloat16 data ---- */

/* element types: A and B half or bfloat16, C and D of their type or float (half_test.h's
 * type_names, cuda_types) */

static int block_size = 256;
static int lowp_run;        /* half and bfloat16 cases run */
static double lowp_worst;   /* their worst error against the bound */

typedef struct hcase {
    etype in, out; /* A's and B's type; C's and D's (in, or T_F32) */
    int c16;       /* CUBLAS_COMPUTE_16F, scale type CUDA_R_16F, half scalars (half data) */
    cublasOperation_t ta, tb;
    int m, n, k, pad;
    double alpha, beta; /* exact in half */
    int c_apart;  /* C and D different matrices (D's ld differs from C's, its old content NaN) */
    int device;   /* alpha and beta in device memory */
    epi_t epi;
    int series;   /* 0 uniform [-1, 1], 1 uniform [0, 1], 2 integers in [-3, 3] */
    int expect;   /* protected under the default settings */
} hcase;

/* A strided batch of hcase's GEMM: `batch` matrices (0 or 1: one GEMM, no batch attributes set);
 * strides: 0 one matrix's storage apart, 1 a gap after each matrix (A 5, B 3, C 7, D apart 2
 * elements: NaN in A's and B's, C's and D's left as they were), 2 as 0 but A's stride 0 (one A for
 * every matrix). The bias (one vector, CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE left 0) is added to
 * every matrix. */
typedef struct hbatch {
    int batch, strides;
} hbatch;
static const hbatch one_gemm = {1, 0};

/* Host operands as uploaded (16-bit words or floats) and D's reference with its bound, matrix b's
 * m x n (ld m) from b m n on. */
typedef struct hdata {
    int batch; /* matrices */
    int lda, ldb, ldc, ldd;
    size_t na, nb, nc, nd;     /* elements of one matrix's storage */
    size_t sa, sb, sc, sd;     /* strides (elements) */
    size_t la, lb, lc, ldlen;  /* elements of each buffer */
    void *A, *B, *C, *bias, *D0; /* D0: D's content before the call */
    double *ref, *bound;
} hdata;

static double hvalue(int series)
{
    const double u = urand(); /* [-1, 1) */
    return series == 0 ? u : series == 1 ? (u + 1.0) / 2.0 : floor((u + 1.0) * 3.5) - 3.0;
}

/* loose: the bound of a GEMM that cuBLAS computes (passed through) */
static void hmake(hdata *r, const hcase *g, const hbatch *bt, int loose)
{
    const int ar = g->ta == CUBLAS_OP_N ? g->m : g->k, ac = g->ta == CUBLAS_OP_N ? g->k : g->m;
    const int br = g->tb == CUBLAS_OP_N ? g->k : g->n, bc = g->tb == CUBLAS_OP_N ? g->n : g->k;
    const int gap = bt->strides == 1;
    r->batch = bt->batch > 1 ? bt->batch : 1;
    r->lda = ar + g->pad;
    r->ldb = br + g->pad;
    r->ldc = g->m + g->pad;
    r->ldd = g->c_apart ? g->m + g->pad + 3 : r->ldc;
    /* cublasLt itself (13.x, H200, BLASFT_MODE=off) faulted on a batch with A's stride 0 and D
     * apart at an odd ld (compute-sanitizer: a misaligned 4-byte store of D in an align2
     * kernel): those D get 16-byte columns */
    if (g->c_apart && bt->strides == 2)
        r->ldd = (r->ldd + 7) / 8 * 8;
    r->na = (size_t)r->lda * (size_t)ac, r->nb = (size_t)r->ldb * (size_t)bc;
    r->nc = (size_t)r->ldc * (size_t)g->n, r->nd = (size_t)r->ldd * (size_t)g->n;
    r->sa = bt->strides == 2 ? 0 : r->na + (gap ? 5 : 0);
    r->sb = r->nb + (gap ? 3 : 0);
    r->sc = r->nc + (gap ? 7 : 0);
    r->sd = g->c_apart ? r->nd + (gap ? 2 : 0) : r->sc;
    const size_t B1 = (size_t)r->batch - 1;
    r->la = B1 * r->sa + r->na, r->lb = B1 * r->sb + r->nb;
    r->lc = B1 * r->sc + r->nc, r->ldlen = B1 * r->sd + r->nd;
    const size_t ei = esize(g->in), eo = esize(g->out), m = (size_t)g->m, n = (size_t)g->n,
                 k = (size_t)g->k, mn = m * n;
    r->A = malloc(ei * r->la);
    r->B = malloc(ei * r->lb);
    r->C = malloc(eo * r->lc);
    r->bias = malloc(eo * m);
    r->D0 = malloc(eo * r->ldlen);
    r->ref = malloc(sizeof(double) * mn * (size_t)r->batch);
    r->bound = malloc(sizeof(double) * mn * (size_t)r->batch);
    /* NaN in A's and B's padding and gaps: a read of it shows in D */
    for (size_t i = 0; i < r->la; i++) store(r->A, i, NAN, g->in);
    for (size_t i = 0; i < r->lb; i++) store(r->B, i, NAN, g->in);
    for (size_t b = 0; b < (r->sa ? (size_t)r->batch : 1); b++)
        for (int j = 0; j < ac; j++)
            for (int i = 0; i < ar; i++)
                store(r->A, b * r->sa + (size_t)i + (size_t)j * (size_t)r->lda, hvalue(g->series),
                      g->in);
    for (size_t b = 0; b < (size_t)r->batch; b++)
        for (int j = 0; j < bc; j++)
            for (int i = 0; i < br; i++)
                store(r->B, b * r->sb + (size_t)i + (size_t)j * (size_t)r->ldb, hvalue(g->series),
                      g->in);
    for (size_t i = 0; i < r->lc; i++) store(r->C, i, hvalue(g->series), g->out);
    for (size_t i = 0; i < m; i++) store(r->bias, i, hvalue(g->series), g->out);
    if (g->c_apart) /* D's old content must not matter */
        for (size_t i = 0; i < r->ldlen; i++) store(r->D0, i, NAN, g->out);
    else
        memcpy(r->D0, r->C, eo * r->lc);
    /* op(A) as rows of k, op(B) as columns of k: products of two 16-bit values are exact */
    double *At = malloc(sizeof(double) * m * k), *Bt = malloc(sizeof(double) * n * k);
    const size_t lda = (size_t)r->lda, ldb = (size_t)r->ldb;
    const double u = unit_out(g->out), tiny = tiny_out(g->out);
    for (size_t b = 0; b < (size_t)r->batch; b++) {
        for (size_t i = 0; i < m; i++)
            for (size_t l = 0; l < k; l++)
                At[i * k + l] = load(r->A, b * r->sa + (g->ta == CUBLAS_OP_N ? i + l * lda
                                                                             : l + i * lda), g->in);
        for (size_t j = 0; j < n; j++)
            for (size_t l = 0; l < k; l++)
                Bt[j * k + l] = load(r->B, b * r->sb + (g->tb == CUBLAS_OP_N ? l + j * ldb
                                                                             : j + l * ldb), g->in);
        for (size_t j = 0; j < n; j++)
            for (size_t i = 0; i < m; i++) {
                const double *a = At + i * k, *x = Bt + j * k;
                long double s = 0, t = 0;
                for (size_t l = 0; l < k; l++) {
                    const double p = a[l] * x[l];
                    s += p;
                    t += fabs(p);
                }
                long double v = (long double)g->alpha * s, w = fabsl((long double)g->alpha) * t;
                if (g->beta != 0) { /* beta = 0: C is not read */
                    const double c0 = load(r->C, b * r->sc + i + j * (size_t)r->ldc, g->out);
                    v += (long double)g->beta * c0;
                    w += fabsl((long double)g->beta * c0);
                }
                if (g->epi != PLAIN) {
                    const double bi = load(r->bias, i, g->out);
                    v += bi;
                    w += fabs(bi);
                }
                const double av = fabs((double)v), mag = (double)w;
                double bound = u * av + (double)(g->k + 4) * 0x1p-22 * mag + tiny;
                if (loose)
                    bound += 32.0 * u * mag;
                if (g->c16) { /* half accumulation (and its subnormals) */
                    const double hb = u * av + (double)(g->k + 2) * 0x1p-10 * mag + tiny +
                                      (double)g->k * 0x1p-24;
                    bound = hb > bound ? hb : bound;
                }
                if (g->epi == RELU_BIAS && v < 0) /* max(0, .) moves nothing further apart */
                    v = 0;
                r->ref[b * mn + i + j * m] = (double)v;
                r->bound[b * mn + i + j * m] = bound;
            }
    }
    free(At);
    free(Bt);
}

static void hrelease(hdata *r)
{
    free(r->A); free(r->B); free(r->C); free(r->bias); free(r->D0); free(r->ref); free(r->bound);
}

/* The worst |D - ref| / bound over the batch (NaN: infinite) at matrix *wb's (*wi, *wj) with D's
 * value there; the elements of D's padding rows and gaps changed into *pad_bad. */
static double hcompare(const hdata *r, const hcase *g, const void *dD, int *wb, int *wi, int *wj,
                       double *wv, size_t *pad_bad)
{
    const size_t eo = esize(g->out), ldd = (size_t)r->ldd, m = (size_t)g->m, mn = m * (size_t)g->n;
    unsigned char *h = malloc(eo * r->ldlen);
    *wb = *wi = *wj = -1;
    *wv = NAN;
    *pad_bad = 0;
    if (cudaMemcpy(h, dD, eo * r->ldlen, cudaMemcpyDeviceToHost) != cudaSuccess) {
        free(h);
        return INFINITY;
    }
    double worst = 0;
    for (size_t p = 0; p < r->ldlen; p++) {
        const size_t b = p / r->sd, off = p % r->sd, i = off % ldd, j = off / ldd;
        if (b >= (size_t)r->batch || off >= r->nd || i >= m) {
            *pad_bad += memcmp(h + eo * p, (const unsigned char *)r->D0 + eo * p, eo) != 0;
            continue;
        }
        const double v = load(h, p, g->out);
        const size_t o = b * mn + i + j * m;
        double q = fabs(v - r->ref[o]) / r->bound[o];
        if (isnan(q))
            q = INFINITY;
        if (q > worst || *wi < 0) {
            worst = q > worst ? q : worst;
            *wb = (int)b, *wi = (int)i, *wj = (int)j, *wv = v;
        }
    }
    free(h);
    return worst;
}

static const char *hname(const hcase *g, const hbatch *bt)
{
    static char s[240];
    static const char *const strides[] = {"", " gaps", " A stride 0"};
    snprintf(s, sizeof s, "%s->%s%s %c%c %dx%dx%d pad %d alpha %g beta %g%s%s%s series %d",
             type_names[g->in], type_names[g->out], g->c16 ? " compute 16F" : "", "NTC"[g->ta],
             "NTC"[g->tb], g->m, g->n, g->k, g->pad, g->alpha, g->beta,
             g->c_apart ? " C apart" : "", g->device ? " device scalars" : "",
             g->epi == BIAS ? " bias" : g->epi == RELU_BIAS ? " relu+bias" : "", g->series);
    if (bt->batch > 1) {
        const size_t len = strlen(s);
        snprintf(s + len, sizeof s - len, " batch %d%s", bt->batch, strides[bt->strides]);
    }
    return s;
}

/* One cublasLtMatmul on half or bfloat16 data (a strided batch where bt says); plant_bit >= 0: a
 * fault of that bit planted in each of the first plant_count matrices, at the element of D whose
 * results there are largest against their bound; each must be corrected */
static void hone(cublasLtHandle_t lh, hcase g, hbatch bt, int expect_off, int plant_bit,
                 int plant_count)
{
    const char *what = hname(&g, &bt);
    if (getenv("LT_TRACE"))
        fprintf(stderr, "case %s\n", what);
    const int prot = g.expect && !expect_off;
    hdata r;
    hmake(&r, &g, &bt, !prot);
    const int B = r.batch;
    const size_t mn = (size_t)g.m * (size_t)g.n;
    int pi = 0, pj = 0;
    if (plant_bit >= 0) {
        double best = -1;
        for (int j = 0; j < g.n; j++)
            for (int i = 0; i < g.m; i++) {
                double q = INFINITY;
                for (int b = 0; b < plant_count && b < B; b++) {
                    const size_t o = (size_t)b * mn + (size_t)i + (size_t)j * (size_t)g.m;
                    const double qb = fabs(r.ref[o]) / r.bound[o];
                    q = qb < q ? qb : q;
                }
                if (q > best)
                    best = q, pi = i, pj = j;
            }
    }
    const size_t ei = esize(g.in), eo = esize(g.out);
    void *dA = upload(r.A, ei * r.la), *dB = upload(r.B, ei * r.lb);
    void *dC = upload(r.C, eo * r.lc), *dbias = upload(r.bias, eo * (size_t)g.m);
    void *dD = g.c_apart ? upload(r.D0, eo * r.ldlen) : dC;
    const cudaDataType ti = cuda_types[g.in], to = cuda_types[g.out];
    const int lds[4] = {r.lda, r.ldb, r.ldc, r.ldd};
    const int64_t strides[4] = {(int64_t)r.sa, (int64_t)r.sb, (int64_t)r.sc, (int64_t)r.sd};
    lt_op op;
    lt_op_make(&op, g.c16 ? CUBLAS_COMPUTE_16F : CUBLAS_COMPUTE_32F, g.c16 ? CUDA_R_16F : CUDA_R_32F,
               g.ta, g.tb, g.epi, dbias, g.device, ti, to, g.m, g.n, g.k, lds, B, strides);
    /* scalars in the scale type: float, or half with 16-bit compute */
    const float sf[2] = {(float)g.alpha, (float)g.beta};
    const uint16_t sh[2] = {enc16(g.alpha, T_F16), enc16(g.beta, T_F16)};
    const size_t ss = g.c16 ? 2 : 4;
    const char *hs = g.c16 ? (const char *)sh : (const char *)sf;
    const void *alpha = hs, *beta = hs + ss;
    void *dscal = NULL;
    if (g.device) {
        dscal = upload(hs, 2 * ss);
        alpha = dscal;
        beta = (const char *)dscal + ss;
    }
    const int ok = dA && dB && dC && dD && dbias && (!g.device || dscal);
    if (plant_bit >= 0)
        CHECK(plant_fault(plant_count, pi, pj, plant_bit) == 0, "%s: plant_fault(%d, %d, %d, %d)",
              what, plant_count, pi, pj, plant_bit);
    const stats_t s0 = stats_now();
    const cublasStatus_t rc = ok ? cublasLtMatmul(lh, op.desc, alpha, dA, op.la, dB, op.lb, beta,
                                                  dC, op.lc, dD, op.ld, NULL, op.ws, op.wsz, op.st)
                                 : CUBLAS_STATUS_ALLOC_FAILED;
    cudaStreamSynchronize(op.st);
    const stats_t s1 = stats_now();
    if (plant_bit >= 0)
        plant_fault(0, 0, 0, 0); /* what no protected GEMM took goes no further */
    int wb = -1, wi = -1, wj = -1;
    double wv = NAN;
    size_t pad_bad = 0;
    const double q = dD ? hcompare(&r, &g, dD, &wb, &wi, &wj, &wv, &pad_bad) : INFINITY;
    const size_t wo = wi >= 0 ? (size_t)wb * mn + (size_t)wi + (size_t)wj * (size_t)g.m : 0;
    const uint64_t want_prot = prot ? (uint64_t)B : 0, want_unprot = prot ? 0 : (uint64_t)B;
    const uint64_t want_checks =
        prot ? (uint64_t)B * (uint64_t)((g.m + block_size - 1) / block_size) * (uint64_t)g.n : 0;
    if (getenv("LT_TRACE"))
        fprintf(stderr, "  error %.3g x bound, %llu protected, %llu checks, %llu detected\n", q,
                (unsigned long long)(s1.protected_gemms - s0.protected_gemms),
                (unsigned long long)(s1.checks - s0.checks),
                (unsigned long long)(s1.errors_detected - s0.errors_detected));
    lowp_run++;
    if (!(q <= lowp_worst))
        lowp_worst = q;
#define HD(f) ((unsigned long long)(s1.f - s0.f))
    CHECK(rc == CUBLAS_STATUS_SUCCESS, "%s: status %d", what, (int)rc);
    CHECK(q <= 1.0,
          "%s: error %.3g x bound (matrix %d (%d, %d): %.9g, reference %.9g, bound %.3g)", what, q,
          wb, wi, wj, wv, r.ref[wo], r.bound[wo]);
    CHECK(dD && pad_bad == 0, "%s: %zu elements of D's padding or gaps changed", what,
          dD ? pad_bad : 0);
    CHECK(HD(protected_gemms) == want_prot && HD(unprotected_gemms) == want_unprot,
          "%s: %llu protected, %llu unprotected (expected %llu, %llu)", what, HD(protected_gemms),
          HD(unprotected_gemms), (unsigned long long)want_prot, (unsigned long long)want_unprot);
    CHECK(HD(uncorrectable) == 0, "%s: %llu uncorrectable", what, HD(uncorrectable));
    if (plant_bit >= 0 && prot) {
        /* the call's own checks at least (a correction may check again) */
        CHECK(HD(checks) >= want_checks, "%s: %llu checks (expected at least %llu)", what,
              HD(checks), (unsigned long long)want_checks);
        CHECK(HD(faults_injected) == (unsigned long long)plant_count,
              "%s: %llu faults planted (expected %d)", what, HD(faults_injected), plant_count);
        CHECK(HD(errors_detected) >= (unsigned long long)plant_count &&
                  HD(errors_corrected) + HD(blocks_recomputed) >= (unsigned long long)plant_count,
              "%s: %d planted faults (bit %d at (%d, %d)) detected %llu, corrected %llu, "
              "recomputed %llu", what, plant_count, plant_bit, pi, pj, HD(errors_detected),
              HD(errors_corrected), HD(blocks_recomputed));
    } else {
        CHECK(HD(checks) == want_checks, "%s: %llu checks (expected %llu)", what, HD(checks),
              (unsigned long long)want_checks);
        CHECK(HD(errors_detected) == 0 && HD(errors_corrected) == 0,
              "%s: %llu detected, %llu corrected without a fault", what, HD(errors_detected),
              HD(errors_corrected));
        CHECK(HD(faults_injected) == 0, "%s: %llu faults injected", what, HD(faults_injected));
    }
#undef HD
    lt_op_free(&op);
    cudaFree(dA); cudaFree(dB); cudaFree(dC); cudaFree(dbias); cudaFree(dscal);
    if (dD != dC)
        cudaFree(dD);
    hrelease(&r);
}

/* The half and bfloat16 cases (after the float and double ones) */
static void lowp_cases(cublasLtHandle_t lh, int expect_off)
{
    const cublasOperation_t N = CUBLAS_OP_N, T = CUBLAS_OP_T;
    const etype H = T_F16, BF = T_BF16, F = T_F32;
    /* in out c16 ta tb m n k pad alpha beta c_apart device epi series expect */
    const hcase cases[] = {
        /* half -> half */
        {H, H, 0, N, N, 1, 1, 1, 0, 1.0, 0.0, 0, 0, PLAIN, 0, 1},
        {H, H, 0, T, N, 17, 13, 31, 1, 1.5, -0.5, 0, 0, PLAIN, 0, 1},
        {H, H, 0, N, T, 255, 257, 129, 2, -1.0, 1.0, 1, 0, PLAIN, 1, 1},
        {H, H, 0, N, N, 17, 13, 31, 0, 1.25, 0.5, 0, 1, PLAIN, 2, 1},
        {H, H, 0, T, T, 255, 257, 129, 1, 1.0, 0.5, 1, 1, PLAIN, 0, 1},
        /* nn.Linear in half: D = W^T x + bias, C in place, beta 0 */
        {H, H, 0, T, N, 300, 200, 1000, 0, 1.0, 0.0, 0, 0, BIAS, 0, 1},
        {H, H, 0, N, T, 17, 13, 31, 1, 1.5, 0.0, 1, 0, BIAS, 0, 1}, /* C apart, not read */
        {H, H, 0, N, N, 255, 257, 129, 2, -0.5, 0.75, 1, 0, BIAS, 0, 1},
        {H, H, 0, T, N, 1, 1, 1, 0, 2.0, -1.0, 1, 0, BIAS, 2, 1},
        /* half -> float */
        {H, F, 0, N, N, 1, 1, 1, 0, 1.0, 0.5, 0, 0, PLAIN, 0, 1},
        {H, F, 0, T, N, 17, 13, 31, 3, 0.75, -1.0, 1, 1, PLAIN, 0, 1},
        {H, F, 0, N, T, 255, 257, 129, 0, 1.0, 0.0, 0, 0, BIAS, 0, 1},
        {H, F, 0, T, T, 300, 200, 1000, 1, 0.5, -1.0, 1, 0, BIAS, 1, 1},
        {H, F, 0, N, N, 300, 200, 1000, 0, -1.25, 1.0, 0, 1, PLAIN, 0, 1},
        /* bfloat16 -> bfloat16 */
        {BF, BF, 0, N, N, 1, 1, 1, 1, -1.0, 0.0, 0, 0, PLAIN, 1, 1},
        {BF, BF, 0, T, N, 17, 13, 31, 0, 1.0, 0.0, 0, 0, BIAS, 0, 1},
        {BF, BF, 0, N, T, 255, 257, 129, 1, 0.5, 1.0, 1, 1, PLAIN, 0, 1},
        {BF, BF, 0, T, T, 300, 200, 1000, 2, 1.0, 0.5, 1, 0, BIAS, 0, 1},
        {BF, BF, 0, N, N, 17, 13, 31, 0, -1.25, 0.5, 0, 1, PLAIN, 2, 1},
        /* bfloat16 -> float */
        {BF, F, 0, N, N, 17, 13, 31, 1, 1.0, 0.5, 0, 0, PLAIN, 0, 1},
        {BF, F, 0, T, N, 255, 257, 129, 0, 1.0, 0.0, 0, 0, BIAS, 1, 1},
        {BF, F, 0, N, T, 300, 200, 1000, 2, 1.5, 1.0, 1, 0, PLAIN, 1, 1},
        {BF, F, 0, T, T, 1, 1, 1, 0, 1.0, 2.0, 1, 0, BIAS, 2, 1},
        {BF, F, 0, T, N, 17, 13, 31, 0, -0.5, 0.25, 0, 1, PLAIN, 0, 1},
        /* passed on, counted unprotected: half compute (half scalars, host and device) */
        {H, H, 1, N, N, 17, 13, 31, 0, 1.0, 0.5, 0, 0, PLAIN, 2, 0},
        {H, H, 1, T, N, 255, 257, 129, 1, 0.5, -1.0, 0, 0, PLAIN, 0, 0},
        {H, H, 1, N, T, 64, 48, 77, 2, -1.25, 0.0, 1, 1, PLAIN, 1, 0},
        /* the ReLU-bias epilogue */
        {H, H, 0, T, N, 255, 257, 129, 0, 1.0, 0.0, 0, 0, RELU_BIAS, 0, 0},
        {H, F, 0, N, N, 17, 13, 31, 1, 1.0, 0.5, 1, 0, RELU_BIAS, 0, 0},
        /* a bias over C in place with beta != 0 */
        {H, H, 0, N, N, 70, 60, 50, 0, 1.0, 0.5, 0, 0, BIAS, 0, 0},
        {BF, F, 0, T, N, 70, 60, 50, 1, 1.0, -1.0, 0, 0, BIAS, 0, 0},
        /* a bias with device scalars */
        {H, H, 0, T, N, 64, 48, 77, 0, 1.0, 0.0, 0, 1, BIAS, 0, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        hone(lh, cases[i], one_gemm, expect_off, -1, 0);
    /* planted faults: the top exponent bit of a 16-bit D, bit 30 of a float D */
    const hcase pl[] = {
        {H, H, 0, T, N, 255, 257, 129, 0, 1.0, 0.0, 0, 0, BIAS, 0, 1},
        {H, F, 0, N, N, 255, 257, 129, 1, 1.0, 0.5, 1, 0, PLAIN, 0, 1},
        {BF, BF, 0, N, T, 255, 257, 129, 1, 1.0, 0.5, 0, 1, PLAIN, 0, 1},
        {BF, F, 0, T, N, 300, 200, 1000, 0, 1.0, 0.0, 0, 0, BIAS, 0, 1},
    };
    for (size_t i = 0; i < sizeof pl / sizeof pl[0]; i++)
        hone(lh, pl[i], one_gemm, expect_off, pl[i].out == T_F32 ? 30 : 14, 1);
    /* strided batches (batch, strides: 0 packed, 1 gaps, 2 A's stride 0): DEFAULT epilogue, C in
     * place or apart from D (its own ld and stride), protected as batch GEMMs; with a bias or
     * half compute, passed on (batch GEMMs unprotected) */
    const struct { hcase g; hbatch b; } bc[] = {
        {{H, H, 0, N, N, 17, 13, 31, 1, 1.0, 0.5, 0, 0, PLAIN, 0, 1}, {3, 0}},
        {{H, F, 0, T, N, 64, 48, 77, 0, -1.25, 1.0, 1, 0, PLAIN, 1, 1}, {5, 1}},
        {{BF, BF, 0, N, T, 255, 257, 129, 2, 0.5, 0.0, 0, 1, PLAIN, 0, 1}, {2, 1}},
        {{BF, F, 0, T, T, 37, 41, 43, 1, 1.0, -1.0, 1, 1, PLAIN, 2, 1}, {17, 0}},
        {{H, H, 0, T, N, 300, 200, 100, 0, 1.0, 0.0, 1, 0, PLAIN, 0, 1}, {4, 2}},
        {{BF, BF, 0, N, N, 16, 16, 16, 0, 1.5, -0.5, 0, 0, PLAIN, 1, 1}, {40, 0}},
        {{H, F, 0, N, T, 1, 1, 1, 0, 1.0, 0.5, 1, 0, PLAIN, 0, 1}, {2, 0}},
        {{H, H, 0, N, N, 257, 33, 40, 1, -0.5, 2.0, 1, 0, PLAIN, 2, 1}, {3, 2}},
        {{H, H, 0, T, N, 64, 48, 77, 0, 1.0, 0.0, 0, 0, BIAS, 0, 0}, {3, 0}},
        {{BF, F, 0, N, N, 37, 41, 43, 1, 1.0, 0.0, 1, 0, BIAS, 0, 0}, {2, 1}},
        {{H, H, 1, N, N, 17, 13, 31, 0, 1.0, 0.5, 0, 0, PLAIN, 2, 0}, {3, 0}},
    };
    for (size_t i = 0; i < sizeof bc / sizeof bc[0]; i++)
        hone(lh, bc[i].g, bc[i].b, expect_off, -1, 0);
    /* planted faults in the first `count` matrices of a batch (top exponent bit) */
    const struct { hcase g; hbatch b; int count; } bpl[] = {
        {{H, H, 0, T, N, 255, 257, 129, 0, 1.0, 0.5, 0, 0, PLAIN, 0, 1}, {5, 0}, 3},
        {{BF, F, 0, N, N, 64, 48, 77, 1, 1.0, 0.0, 1, 0, PLAIN, 0, 1}, {4, 1}, 4},
        {{BF, BF, 0, N, T, 37, 41, 43, 0, 1.0, 0.5, 1, 1, PLAIN, 1, 1}, {20, 2}, 16},
    };
    for (size_t i = 0; i < sizeof bpl / sizeof bpl[0]; i++)
        hone(lh, bpl[i].g, bpl[i].b, expect_off, bpl[i].g.out == T_F32 ? 30 : 14, bpl[i].count);
    printf("half and bfloat16: %d cases (block size %d), worst error %.3g x bound\n", lowp_run,
           block_size, lowp_worst);
}

static void on_segv(int sig)
{
    void *fr[64];
    int n = backtrace(fr, 64);
    backtrace_symbols_fd(fr, n, 2);
    _exit(128 + sig);
}

int main(int argc, char **argv)
{
    signal(SIGSEGV, on_segv);
    int expect_off = 0;
    const int start = test_start(argc, argv, &expect_off);
    if (start)
        return start;
    cublasLtHandle_t lh;
    if (cublasLtCreate(&lh) != CUBLAS_STATUS_SUCCESS) {
        fprintf(stderr, "cublasLtCreate failed\n");
        return 1;
    }
    const cublasOperation_t N = CUBLAS_OP_N, T = CUBLAS_OP_T, C = CUBLAS_OP_C;
    /* dbl cplx ta tb m n k pad batch alpha beta c_apart device epi tf32 expect */
    const lcase cases[] = {
        {0, 0, N, N, 1, 1, 1, 0, 1, 1.0, 0.0, 0, 0, PLAIN, 0, 1},
        {0, 0, N, N, 37, 53, 29, 0, 1, 1.5, -0.5, 0, 0, PLAIN, 0, 1},
        {1, 0, T, N, 300, 257, 129, 5, 1, -1.0, 1.0, 0, 0, PLAIN, 0, 1},
        {0, 0, N, T, 131, 67, 200, 2, 1, 0.75, 0.0, 1, 0, PLAIN, 0, 1},
        {1, 0, T, T, 97, 130, 61, 1, 1, 1.0, 0.5, 1, 0, PLAIN, 0, 1},
        {0, 0, N, N, 64, 48, 77, 0, 1, 1.25, 0.5, 0, 1, PLAIN, 0, 1},
        {1, 0, T, N, 65, 33, 47, 3, 1, 1.0, 0.25, 1, 1, PLAIN, 0, 1},
        /* nn.Linear: D = x W^T + bias, C in place, beta 0 */
        {0, 0, T, N, 768, 512, 1024, 0, 1, 1.0, 0.0, 0, 0, BIAS, 0, 1},
        {1, 0, T, N, 257, 129, 300, 0, 1, 1.0, 0.0, 0, 0, BIAS, 0, 1},
        {0, 0, N, T, 90, 70, 50, 1, 1, 1.5, 0.0, 1, 0, BIAS, 0, 1}, /* C apart, not read */
        {0, 0, N, N, 100, 70, 90, 2, 1, -0.5, 0.75, 1, 0, BIAS, 0, 1},
        {1, 0, N, T, 45, 91, 33, 1, 1, 2.0, -1.0, 1, 0, BIAS, 0, 1},
        /* strided batches, C in place */
        {0, 0, N, N, 65, 33, 47, 1, 3, 1.0, 0.5, 0, 0, PLAIN, 0, 1},
        {1, 0, T, N, 40, 50, 60, 0, 2, 1.0, 0.0, 0, 0, PLAIN, 0, 1},
        /* complex */
        {0, 1, C, N, 37, 29, 41, 1, 1, 1.0, 0.5, 0, 0, PLAIN, 0, 1},
        {1, 1, N, C, 50, 40, 30, 0, 1, -1.0, 0.0, 1, 0, PLAIN, 0, 1},
        /* passed on, counted unprotected */
        {0, 0, T, N, 128, 96, 64, 0, 1, 1.0, 0.0, 0, 0, RELU_BIAS, 0, 0},
        {0, 0, N, N, 128, 96, 64, 0, 1, 1.0, 0.0, 0, 0, PLAIN, 1, 0},
        {1, 0, N, N, 70, 60, 50, 0, 1, 1.0, 0.5, 0, 0, BIAS, 0, 0},
        {0, 0, N, N, 70, 60, 50, 0, 2, 1.0, 0.5, 1, 0, PLAIN, 0, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        one(lh, cases[i], expect_off, -1, 0, 0);
    /* planted faults: an exponent bit and a high mantissa bit of one element of D */
    const lcase pl[] = {
        {0, 0, T, N, 300, 200, 260, 0, 1, 1.0, 0.0, 0, 0, BIAS, 0, 1},
        {1, 0, T, N, 300, 200, 260, 0, 1, 1.0, 0.0, 0, 0, BIAS, 0, 1},
        {1, 0, N, N, 130, 140, 150, 1, 1, 1.0, 0.5, 1, 0, PLAIN, 0, 1},
        {0, 0, N, T, 130, 140, 150, 1, 1, 1.0, 0.5, 1, 0, BIAS, 0, 1},
    };
    for (size_t i = 0; i < sizeof pl / sizeof pl[0]; i++) {
        one(lh, pl[i], expect_off, pl[i].dbl ? 61 : 29, 10 + (int)i, 20 + (int)i);
        one(lh, pl[i], expect_off, pl[i].dbl ? 50 : 21, 100 + (int)i, 7 * (int)i);
    }
    block_size = env_block_size();
    lowp_cases(lh, expect_off);
    cublasLtDestroy(lh);
    printf("%d checks, %d failures\n", checks, failures);
    return failures ? 1 : 0;
}
