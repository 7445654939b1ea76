/* A program whose BLAS is bundled privately under other names, as numpy's wheels bundle theirs: it
 * loads an extension module (bundled_user.c) with dlopen(RTLD_LOCAL), which calls the bundled
 * library's GEMMs (bundled_blas.c) by name. Every one of the 24 names runs on fresh random data,
 * checked against the long double oracle (transposes, row-major, padding, empty and 1 x 1
 * shapes), then two invalid calls and one ILP64 call with a leading dimension above 2^31 - 1.
 * usage: bundled_app USER_LIBRARY; prints what reached the bundled library; exits 1 on any
 * wrong element or failure. A module linked against libblas_ft alone (no bundled library to
 * count calls or to pass invalid ones to): only the 24 valid GEMMs.
 * usage: bundled_app USER_LIBRARY NAME CASE: one invalid call of the double or single GEMM NAME
 * (CASE m: m = -1; lda: column-major, lda = 1 < m = 2; lda-row: row-major, lda = 1 < k = 2),
 * which the BLAS in effect must report through xerbla; if the call returns, prints whether C is
 * unchanged and exits 3. */
#include "gemm_check.h"

#include <dlfcn.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int user_gemm_fn(const char *, const gemm_case *, const void *, const void *,
                         const void *, const void *, void *);
typedef void user_dgemm_64_fn(int64_t, int64_t, int64_t, const double *, const double *, int64_t,
                              const double *, int64_t, const double *, double *, int64_t);

static const char *const names[] = {
    "scipy_sgemm_64_", "scipy_dgemm_64_", "scipy_cgemm_64_", "scipy_zgemm_64_",
    "scipy_cblas_sgemm64_", "scipy_cblas_dgemm64_", "scipy_cblas_cgemm64_", "scipy_cblas_zgemm64_",
    "sgemm_64_", "dgemm_64_", "cgemm_64_", "zgemm_64_",
    "cblas_sgemm64_", "cblas_dgemm64_", "cblas_cgemm64_", "cblas_zgemm64_",
    "scipy_sgemm_", "scipy_dgemm_", "scipy_cgemm_", "scipy_zgemm_",
    "scipy_cblas_sgemm", "scipy_cblas_dgemm", "scipy_cblas_cgemm", "scipy_cblas_zgemm",
};
enum { NAMES = sizeof names / sizeof names[0] };

/* shapes cycled over the names: m, n, k (one with k = 0, one empty, one 1 x 1 x 1) */
static const int shapes[][3] = {{97, 61, 129}, {130, 257, 67}, {1, 1, 1}, {31, 17, 0},
                                {0, 5, 3},     {211, 7, 401},  {64, 64, 64}};

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s USER_LIBRARY\n", argv[0]);
        return 2;
    }
    void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "dlopen: %s\n", dlerror());
        return 1;
    }
    user_gemm_fn *user_gemm = (user_gemm_fn *)dlsym(h, "user_gemm");
    if (argc >= 4 && user_gemm) {
        const int single = strstr(argv[2], "sgemm") != NULL;
        gemm_case bad = {single ? TYPE_S : TYPE_D, strcmp(argv[3], "lda-row") ? ORDER_COL : ORDER_ROW,
                         'N', 'N', 2, 2, 2, 2, 2, 2, {1, 0}, {1, 0}};
        if (!strcmp(argv[3], "m"))
            bad.m = -1;
        else
            bad.lda = 1;
        double d1[4] = {1, 2, 3, 4}, c1[4] = {5, 6, 7, 8}, one = 1;
        float f1[4] = {1, 2, 3, 4}, fc1[4] = {5, 6, 7, 8}, fone = 1;
        void *c = single ? (void *)fc1 : (void *)c1;
        const void *x = single ? (const void *)f1 : (const void *)d1;
        const void *s = single ? (const void *)&fone : (const void *)&one;
        fflush(stdout);
        user_gemm(argv[2], &bad, s, x, x, s, c);
        const int same = single ? fc1[0] == 5 && fc1[3] == 8 : c1[0] == 5 && c1[3] == 8;
        printf("the invalid call returned; C unchanged: %s\n", same ? "yes" : "no");
        return 3;
    }
    user_dgemm_64_fn *user_dgemm_64 = (user_dgemm_64_fn *)dlsym(h, "user_dgemm_64");
    static long no_calls;
    long *calls = (long *)dlsym(h, "bundled_calls"); /* in the module's dependency */
    int *invalid = (int *)dlsym(h, "bundled_invalid");
    const int alone = !calls; /* linked against libblas_ft instead of the bundled fixture */
    if (alone)
        calls = &no_calls;
    if (!user_gemm || !user_dgemm_64 || (!alone && !invalid)) {
        fprintf(stderr, "the fixture lacks its symbols\n");
        return 1;
    }
    uint64_t state = 0xb0d1ed;
    long wrong = 0, failures = 0, nontrivial = 0;
    const long calls0 = *calls;
    for (int i = 0; i < NAMES; i++) {
        const char *name = names[i];
        const int cblas = strstr(name, "cblas") != NULL;
        const char t = strstr(name, "gemm")[-1]; /* the type letter */
        const enum gemm_type type = t == 's' ? TYPE_S : t == 'd' ? TYPE_D : t == 'c' ? TYPE_C : TYPE_Z;
        const int *sh = shapes[i % (sizeof shapes / sizeof shapes[0])];
        static const char tr[] = "NTC";
        gemm_case g = {type, cblas && i % 2 ? ORDER_ROW : ORDER_COL, tr[i % 3], tr[(i / 3) % 3],
                       sh[0], sh[1], sh[2], 0, 0, 0, {0.75, type >= TYPE_C ? -0.5 : 0},
                       {i % 4 == 0 ? 0.0 : -1.25, type >= TYPE_C && i % 4 ? 0.25 : 0}};
        /* leading dimensions with padding, in the case's storage order */
        const int ar = (g.order == ORDER_COL) == (g.transa == 'N') ? g.m : g.k;
        const int br = (g.order == ORDER_COL) == (g.transb == 'N') ? g.k : g.n;
        const int cr = g.order == ORDER_COL ? g.m : g.n;
        g.lda = (ar > 1 ? ar : 1) + i % 3;
        g.ldb = (br > 1 ? br : 1) + 1;
        g.ldc = (cr > 1 ? cr : 1) + 2;
        const size_t es = gc_elem_size(type), na = gc_a_elems(&g), nb = gc_b_elems(&g),
                     nc = gc_c_elems(&g);
        void *a = malloc(na * es + 1), *b = malloc(nb * es + 1), *c0 = malloc(nc * es + 1),
             *c = malloc(nc * es + 1);
        gc_fill(type, a, na, &state);
        gc_fill(type, b, nb, &state);
        gc_fill(type, c0, nc, &state);
        memcpy(c, c0, nc * es);
        /* the scalars in the routine's type: real ones one number each, complex ones a pair */
        float fa[2] = {(float)g.alpha[0], (float)g.alpha[1]}, fb[2] = {(float)g.beta[0], (float)g.beta[1]};
        const int single = type == TYPE_S || type == TYPE_C;
        const void *alpha = single ? (const void *)fa : (const void *)g.alpha;
        const void *beta = single ? (const void *)fb : (const void *)g.beta;
        if (user_gemm(name, &g, alpha, a, b, beta, c)) {
            fprintf(stderr, "%s: unknown to the module\n", name);
            failures++;
        }
        wrong += gc_check(&g, a, b, c0, c, name);
        nontrivial += g.m > 0 && g.n > 0;
        free(a);
        free(b);
        free(c0);
        free(c);
    }
    const long valid_reached = *calls - calls0;
    if (alone) {
        printf("%d names, %ld GEMMs with elements, %ld wrong; linked against libblas_ft alone\n",
               NAMES, nontrivial, wrong);
        return wrong || failures ? 1 : 0;
    }

    /* invalid: m < 0 (parameter 3) and lda < m (parameter 8 of the column-major call); C unchanged */
    double one = 1, a1[4] = {1, 2, 3, 4}, c1[4] = {5, 6, 7, 8};
    gemm_case bad = {TYPE_D, ORDER_COL, 'N', 'N', -1, 2, 2, 2, 2, 2, {1, 0}, {1, 0}};
    *invalid = 0;
    user_gemm("scipy_dgemm_64_", &bad, &one, a1, a1, &one, c1);
    const int invalid_m = *invalid;
    bad.m = 2;
    bad.lda = 1;
    *invalid = 0;
    user_gemm("scipy_cblas_dgemm64_", &bad, &one, a1, a1, &one, c1);
    const int invalid_lda = *invalid;
    if (invalid_m != 3 || invalid_lda != 8 || c1[0] != 5 || c1[3] != 8) {
        fprintf(stderr, "invalid calls: parameters %d and %d reported (expected 3 and 8), C %g %g\n",
                invalid_m, invalid_lda, c1[0], c1[3]);
        failures++;
    }

    /* ILP64: lda = 2^31 + 5 with k = 1 (only A's first column is read): C = 2 a b^T + 0.5 C */
    const int64_t big = ((int64_t)1 << 31) + 5;
    double a3[3] = {1.5, -2, 0.25}, b2[2] = {3, -1}, c6[6] = {1, 2, 3, 4, 5, 6}, two = 2, half = 0.5;
    const long before_big = *calls;
    user_dgemm_64(3, 2, 1, &two, a3, big, b2, 1, &half, c6, 3);
    int big_bad = 0;
    for (int j = 0; j < 2; j++)
        for (int i = 0; i < 3; i++)
            big_bad += fabs(c6[i + 3 * j] - (2 * a3[i] * b2[j] + 0.5 * (1 + i + 3 * j))) > 1e-12;
    const long big_reached = *calls - before_big;
    if (big_bad) {
        fprintf(stderr, "ILP64 call with lda = 2^31 + 5: %d elements wrong\n", big_bad);
        failures++;
    }
    printf("%d names, %ld GEMMs with elements, %ld wrong; valid calls that reached the bundled "
           "BLAS: %ld of %d; invalid calls reported by it: %d %d; the call with lda = 2^31 + 5 "
           "reached it: %ld\n",
           NAMES, nontrivial, wrong, valid_reached, NAMES, invalid_m, invalid_lda, big_reached);
    return wrong || failures ? 1 : 0;
}
