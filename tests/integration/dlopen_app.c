/* A program that loads its BLAS at run time, as plugins, R's dyn.load and language bindings do:
 * dlopen the library, GEMMs through dlsym'd dgemm_ and cblas_zgemm (checked against the naive
 * long double oracle), dlclose, and again. After each dlclose a child is forked that loads the
 * library afresh and runs one more GEMM. Shapes big enough that the ABFT engine works on its
 * thread pool, so the library has threads running when it is closed.
 * usage: dlopen_app LIBRARY ROUNDS; prints a summary, exits 1 on any wrong element or failure. */
#include "gemm_check.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

typedef void dgemm_fn(const char *, const char *, const int *, const int *, const int *,
                      const double *, const double *, const int *, const double *, const int *,
                      const double *, double *, const int *, size_t, size_t);
typedef void zgemm_fn(int, int, int, int, int, int, const void *, const void *, int, const void *,
                      int, const void *, void *, int);

enum { CBLAS_ROW_MAJOR = 101, CBLAS_NO_TRANS = 111, CBLAS_CONJ_TRANS = 113 };

/* One checked GEMM through the routine just looked up; returns the number of wrong elements
 * (or 1 if the library or routine is missing). */
static long one_gemm(const char *lib, int zcase, uint64_t *state, const char *what)
{
    void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "%s: dlopen: %s\n", what, dlerror());
        return 1;
    }
    gemm_case g = zcase ? (gemm_case){TYPE_Z, ORDER_ROW, 'C', 'N', 97, 61, 129, 140, 70, 64,
                                      {0.5, -1}, {0.25, 0.5}}
                        : (gemm_case){TYPE_D, ORDER_COL, 'N', 'T', 600, 500, 300, 611, 503, 601,
                                      {-1.5, 0}, {0.75, 0}};
    const size_t es = gc_elem_size(g.type), na = gc_a_elems(&g), nb = gc_b_elems(&g),
                 nc = gc_c_elems(&g);
    void *a = malloc(na * es), *b = malloc(nb * es), *c0 = malloc(nc * es), *c = malloc(nc * es);
    gc_fill(g.type, a, na, state);
    gc_fill(g.type, b, nb, state);
    gc_fill(g.type, c0, nc, state);
    memcpy(c, c0, nc * es);
    long bad = 1;
    if (zcase) {
        zgemm_fn *f = (zgemm_fn *)dlsym(h, "cblas_zgemm");
        if (f) {
            f(CBLAS_ROW_MAJOR, CBLAS_CONJ_TRANS, CBLAS_NO_TRANS, g.m, g.n, g.k, g.alpha, a, g.lda,
              b, g.ldb, g.beta, c, g.ldc);
            bad = gc_check(&g, a, b, c0, c, what);
        }
    } else {
        dgemm_fn *f = (dgemm_fn *)dlsym(h, "dgemm_");
        if (f) {
            f(&g.transa, &g.transb, &g.m, &g.n, &g.k, g.alpha, a, &g.lda, b, &g.ldb, g.beta, c,
              &g.ldc, 1, 1);
            bad = gc_check(&g, a, b, c0, c, what);
        }
    }
    if (bad == 1 && !dlsym(h, zcase ? "cblas_zgemm" : "dgemm_"))
        fprintf(stderr, "%s: the library has no %s\n", what, zcase ? "cblas_zgemm" : "dgemm_");
    free(a);
    free(b);
    free(c0);
    free(c);
    if (dlclose(h)) {
        fprintf(stderr, "%s: dlclose: %s\n", what, dlerror());
        bad++;
    }
    return bad;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: %s LIBRARY ROUNDS\n", argv[0]);
        return 2;
    }
    const int rounds = atoi(argv[2]);
    uint64_t state = 0x5eed0d1c;
    long bad = 0;
    for (int r = 0; r < rounds; r++) {
        char what[64];
        snprintf(what, sizeof what, "round %d dgemm_", r);
        bad += one_gemm(argv[1], 0, &state, what);
        snprintf(what, sizeof what, "round %d cblas_zgemm", r);
        bad += one_gemm(argv[1], 1, &state, what);
        /* the library is closed now; a child loads it again */
        fflush(NULL);
        const pid_t pid = fork();
        if (pid == 0) {
            uint64_t cs = state ^ 0xc41d;
            /* exit, not _exit: the library's exit handlers run in the child too */
            exit(one_gemm(argv[1], 0, &cs, "child dgemm_") ? 1 : 0);
        }
        int status = 0;
        if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
            WEXITSTATUS(status)) {
            fprintf(stderr, "round %d: the child failed (status %d)\n", r, status);
            bad++;
        }
    }
    printf("dlopen_app: %d rounds, %ld wrong elements or failures\n", rounds, bad);
    return bad ? 1 : 0;
}
