/* Linked with -lblas_ft, so libblas_ft loads the host BLAS itself: runs one threaded DGEMM
 * through CBLAS, then prints what the program's environment says of OPENBLAS_THREAD_TIMEOUT
 * afterwards and how much CPU time the whole process used while the main thread slept for
 * 200 ms right after the GEMM (the host BLAS's idle workers, if they spin). */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double cpu_seconds(void)
{
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

int main(void)
{
    enum { N = 384 };
    double *a = malloc(sizeof(double) * N * N), *b = malloc(sizeof(double) * N * N),
           *c = malloc(sizeof(double) * N * N);
    if (!a || !b || !c)
        return 1;
    for (int i = 0; i < N * N; i++) {
        a[i] = (double)(i % 17) - 8;
        b[i] = (double)(i % 13) - 6;
    }
    cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, N, N, N, 1.0, a, N, b, N, 0.0, c, N);
    double c0 = cpu_seconds();
    struct timespec pause = {0, 200000000};
    nanosleep(&pause, NULL);
    double idle = cpu_seconds() - c0;
    /* c(0, 0) = sum_l a(0, l) b(l, 0): small integers, exact in double */
    double want = 0;
    for (int l = 0; l < N; l++)
        want += a[l * N] * b[l];
    const char *env = getenv("OPENBLAS_THREAD_TIMEOUT");
    printf("env %s\nidle_cpu_ms %.1f\nresult %s\n", env ? env : "(unset)", 1e3 * idle,
           c[0] == want ? "ok" : "wrong");
    free(a);
    free(b);
    free(c);
    return 0;
}
