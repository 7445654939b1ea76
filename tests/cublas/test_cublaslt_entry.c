/* An unmodified cublasLt program, run with LD_PRELOAD=libblas_ft.so (suite 'cublas'):
 * cublasLtMatmul on fresh random data against a host reference within the rounding bound, for
 * the configurations the interposer protects (float and double, real and complex, transposes,
 * lda > m, C in place or apart from D, scalars in host or device memory, a bias vector, strided
 * batches) and for those it passes on (counted unprotected: ReLU epilogue, TF32 compute, a bias
 * over C in place with beta != 0); the counters of protected and unprotected GEMMs; planted
 * faults detected and corrected.
 * Every case runs on a stream of its own, created and destroyed around it, so the interposer
 * evicts contexts whose streams are gone (8 per thread are kept).
 * --expect-off: run under BLASFT_MODE=off, every GEMM must pass through unprotected.
 * LT_TRACE=1 names each case on stderr; a crash prints a backtrace (the device machine has no
 * debugger). Exits 77 without a GPU. No cmocka (the device machine has none). */
#include <cublasLt.h>
#include <cuda_runtime.h>

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
    cublasLtMatmulDesc_t desc;
    cublasLtMatmulDescCreate(&desc, ct, dt);
    int32_t ta = g.ta, tb = g.tb;
    cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta);
    cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb);
    if (g.epi != PLAIN) {
        uint32_t e = g.epi == BIAS ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_RELU_BIAS;
        cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &e, sizeof e);
        cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &dbias, sizeof dbias);
    }
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
        int32_t pm = CUBLASLT_POINTER_MODE_DEVICE;
        cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_POINTER_MODE, &pm, sizeof pm);
        cudaMalloc(&dscal, 2 * ss);
        cudaMemcpy(dscal, hs, 2 * ss, cudaMemcpyHostToDevice);
        alpha = dscal;
        beta = (const char *)dscal + ss;
    }
    int ar = g.ta == CUBLAS_OP_N ? g.m : g.k, ac = g.ta == CUBLAS_OP_N ? g.k : g.m;
    int br = g.tb == CUBLAS_OP_N ? g.k : g.n, bc = g.tb == CUBLAS_OP_N ? g.n : g.k;
    cublasLtMatrixLayout_t la, lb, lc, ld;
    cublasLtMatrixLayoutCreate(&la, dt, ar, ac, r.lda);
    cublasLtMatrixLayoutCreate(&lb, dt, br, bc, r.ldb);
    cublasLtMatrixLayoutCreate(&lc, dt, g.m, g.n, r.ldc);
    cublasLtMatrixLayoutCreate(&ld, dt, g.m, g.n, r.ldd);
    if (B > 1) {
        int32_t bt = B;
        int64_t s[4] = {(int64_t)r.na, (int64_t)r.nb, (int64_t)r.nc, (int64_t)r.nd};
        cublasLtMatrixLayout_t L[4] = {la, lb, lc, ld};
        for (int q = 0; q < 4; q++) {
            cublasLtMatrixLayoutSetAttribute(L[q], CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &bt, sizeof bt);
            cublasLtMatrixLayoutSetAttribute(L[q], CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &s[q],
                                             sizeof s[q]);
        }
    }
    void *ws = NULL;
    const size_t wsz = 32u << 20;
    cudaMalloc(&ws, wsz);
    cudaStream_t st;
    cudaStreamCreate(&st);
    if (plant_bit >= 0)
        plant_fault(1, pi, pj, plant_bit);
    stats_t s0 = stats_now();
    cublasStatus_t rc = cublasLtMatmul(lh, desc, alpha, dA, la, dB, lb, beta, dC, lc, dD, ld, NULL,
                                       ws, wsz, st);
    cudaStreamSynchronize(st);
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
    cublasLtMatrixLayoutDestroy(la);
    cublasLtMatrixLayoutDestroy(lb);
    cublasLtMatrixLayoutDestroy(lc);
    cublasLtMatrixLayoutDestroy(ld);
    cublasLtMatmulDescDestroy(desc);
    cudaStreamDestroy(st);
    cudaFree(ws);
    cudaFree(dA); cudaFree(dB); cudaFree(dC); cudaFree(dbias); cudaFree(dscal);
    if (dD != dC)
        cudaFree(dD);
    release(&r);
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
    cublasLtDestroy(lh);
    printf("%d checks, %d failures\n", checks, failures);
    return failures ? 1 : 0;
}
