/* Host-memory DGEMM / SGEMM timing for the offload benchmark (scripts/bench_offload.sh): a plain program
 * that calls the Fortran dgemm_ of whatever BLAS the loader gives it (linked against OpenBLAS;
 * LD_PRELOAD=libblas_ft.so or libnvblas.so puts those in front), so every contender is measured
 * the same way: wall time of one dgemm_ call from host operands to the host result.
 *
 *   bench_offload <label> <n> <reps> fresh|repeat [d|s]
 * fresh: A and B are rewritten (every element) before each call, outside the timed region;
 * repeat: A and B stay unchanged between calls. C is overwritten (beta = 0) every time.
 * One warm-up call first (library start, CUDA initialisation, workspaces). Prints one JSON line
 * with the median and the minimum, and checks 64 sampled elements of C against dot products
 * computed here (so a misconfigured library cannot report a fast wrong result). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void sgemm_(const char *ta, const char *tb, const int *m, const int *n, const int *k,
            const float *alpha, const float *a, const int *lda, const float *b, const int *ldb,
            const float *beta, float *c, const int *ldc, size_t lta, size_t ltb);
void dgemm_(const char *ta, const char *tb, const int *m, const int *n, const int *k,
            const double *alpha, const double *a, const int *lda, const double *b, const int *ldb,
            const double *beta, double *c, const int *ldc, size_t lta, size_t ltb);

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static uint64_t rng = 0x9e3779b97f4a7c15u;
static double uniform(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (double)(rng >> 11) * 0x1p-53 * 2.0 - 1.0;
}

/* New values for every element, drawn like the first ones: a contraction such as x/2 + shift
 * would make the operands nearly constant after a dozen calls, structured data on which the
 * checksums' rounding adds up coherently and the timings stop being those of ordinary data. */
static void rewrite(double *x, size_t count)
{
    for (size_t i = 0; i < count; i++)
        x[i] = uniform();
}


static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    if (argc != 5 && argc != 6) {
        fprintf(stderr, "usage: %s label n reps fresh|repeat [d|s]\n", argv[0]);
        return 2;
    }
    int single = argc == 6 && argv[5][0] == 's';
    const char *label = argv[1];
    int n = atoi(argv[2]), reps = atoi(argv[3]);
    int fresh = strcmp(argv[4], "fresh") == 0;
    size_t nn = (size_t)n * (size_t)n;
    double *a = aligned_alloc(4096, nn * 8), *b = aligned_alloc(4096, nn * 8),
           *c = aligned_alloc(4096, nn * 8);
    /* FP32: the same values rounded, in buffers of their own (what sgemm_ sees) */
    float *as = single ? aligned_alloc(4096, nn * 4) : NULL, *bs = single ? aligned_alloc(4096, nn * 4) : NULL,
          *cs = single ? aligned_alloc(4096, nn * 4) : NULL;
    for (size_t i = 0; i < nn; i++)
        c[i] = 0;
    double alpha = 1.0, beta = 0.0;
    float alpha_s = 1.0f, beta_s = 0.0f;
    double *t = malloc(sizeof(double) * (size_t)(reps > 0 ? reps : 1));
    int bad = 0;
    for (int r = -1; r < reps; r++) {
        if (fresh || r == -1) {
            rewrite(a, nn);
            rewrite(b, nn);
            if (single) { /* the reference below uses the rounded values */
                for (size_t i = 0; i < nn; i++) {
                    as[i] = (float)a[i];
                    bs[i] = (float)b[i];
                    a[i] = as[i];
                    b[i] = bs[i];
                }
            }
        }
        double t0 = now();
        if (single)
            sgemm_("N", "N", &n, &n, &n, &alpha_s, as, &n, bs, &n, &beta_s, cs, &n, 1, 1);
        else
            dgemm_("N", "N", &n, &n, &n, &alpha, a, &n, b, &n, &beta, c, &n, 1, 1);
        double t1 = now();
        if (r >= 0)
            t[r] = t1 - t0;
        for (int s = 0; s < 64; s++) { /* sampled check of this call's result */
            size_t i = (size_t)(rng % (uint64_t)n), j = (size_t)((rng >> 20) % (uint64_t)n);
            uniform();
            double ref = 0, mag = 0;
            for (int l = 0; l < n; l++) {
                ref += a[i + (size_t)l * n] * b[l + j * (size_t)n];
                mag += fabs(a[i + (size_t)l * n] * b[l + j * (size_t)n]);
            }
            double got = single ? cs[i + j * (size_t)n] : c[i + j * (size_t)n];
            if (!(fabs(got - ref) <= (single ? 1e-5 : 1e-12) * mag + 1e-300))
                bad++;
        }
    }
    qsort(t, (size_t)reps, sizeof *t, cmp);
    double med = reps % 2 ? t[reps / 2] : 0.5 * (t[reps / 2 - 1] + t[reps / 2]);
    printf("{\"label\": \"%s\", \"type\": \"%s\", \"n\": %d, \"operands\": \"%s\", \"reps\": %d, \"median_ms\": %.4f, "
           "\"min_ms\": %.4f, \"gflops_median\": %.1f, \"wrong_samples\": %d}\n",
           label, single ? "s" : "d", n, fresh ? "fresh" : "repeat", reps, 1e3 * med, 1e3 * t[0],
           2.0 * (double)n * n * n / med * 1e-9, bad);
    free(t);
    free(as);
    free(bs);
    free(cs);
    free(a);
    free(b);
    free(c);
    return bad ? 1 : 0;
}
