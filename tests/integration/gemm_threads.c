/* 16 threads calling GEMMs concurrently (each its own random shapes, types and interfaces, each
 * result checked), then a fork after which parent and child both call GEMM again; the parent
 * checks the child's exit status. Linked like gemm_app: system BLAS, LD_PRELOAD or -lblas_ft. */
#include "gemm_run.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

enum { THREADS = 16, GEMMS_PER_THREAD = 40 };

typedef struct worker {
    uint64_t seed;
    long wrong;
} worker;

/* A random case: sizes up to 70 (around a small block size), any type, order and transpose. */
static gemm_case random_case(uint64_t *s, enum gemm_api api)
{
    static const char transes[] = {'N', 'T', 'C'};
    gemm_case g = {.type = (enum gemm_type)(gc_rand_next(s) % 4),
                   .order = api == API_FORTRAN ? ORDER_COL : (enum gemm_order)(gc_rand_next(s) % 2),
                   .transa = transes[gc_rand_next(s) % 3], .transb = transes[gc_rand_next(s) % 3],
                   .m = (int)(gc_rand_next(s) % 71), .n = (int)(gc_rand_next(s) % 71),
                   .k = (int)(gc_rand_next(s) % 71)};
    g.alpha[0] = gc_rand_uniform(s);
    g.alpha[1] = g.type >= TYPE_C ? gc_rand_uniform(s) : 0;
    g.beta[0] = gc_rand_uniform(s);
    g.beta[1] = g.type >= TYPE_C ? gc_rand_uniform(s) : 0;
    int ar = g.transa == 'N' ? g.m : g.k, ac = g.transa == 'N' ? g.k : g.m;
    int br = g.transb == 'N' ? g.k : g.n, bc = g.transb == 'N' ? g.n : g.k;
    int col = g.order == ORDER_COL;
    g.lda = (col ? ar : ac) + (int)(gc_rand_next(s) % 3);
    g.ldb = (col ? br : bc) + (int)(gc_rand_next(s) % 3);
    g.ldc = (col ? g.m : g.n) + (int)(gc_rand_next(s) % 3);
    g.lda += g.lda < 1;
    g.ldb += g.ldb < 1;
    g.ldc += g.ldc < 1;
    return g;
}

static long run_some(uint64_t *s, int count)
{
    long wrong = 0;
    for (int i = 0; i < count; i++) {
        enum gemm_api api = (enum gemm_api)(gc_rand_next(s) % 2);
        gemm_case g = random_case(s, api);
        wrong += gr_run_checked(api, &g, s, 0) != 0;
    }
    return wrong;
}

static void *worker_main(void *arg)
{
    worker *w = arg;
    w->wrong = run_some(&w->seed, GEMMS_PER_THREAD);
    return NULL;
}

int main(int argc, char **argv)
{
    uint64_t seed = argc > 1 ? strtoull(argv[1], NULL, 0) : 77u;
    worker w[THREADS];
    pthread_t tid[THREADS];
    for (int i = 0; i < THREADS; i++) {
        w[i] = (worker){.seed = seed * 1000003u + (uint64_t)i + 1};
        if (pthread_create(&tid[i], NULL, worker_main, &w[i]) != 0) {
            perror("pthread_create");
            return 2;
        }
    }
    long wrong = 0;
    for (int i = 0; i < THREADS; i++) {
        pthread_join(tid[i], NULL);
        wrong += w[i].wrong;
    }
    printf("threads: %d x %d GEMMs, %ld wrong\n", THREADS, GEMMS_PER_THREAD, wrong);
    fflush(stdout);

    pid_t child = fork();
    if (child < 0) {
        perror("fork");
        return 2;
    }
    uint64_t s = seed ^ (child == 0 ? 0xc41dull : 0x9a7e47ull);
    long after = run_some(&s, 20);
    if (child == 0) {
        printf("fork child: 20 GEMMs, %ld wrong\n", after);
        exit(after ? 1 : 0); /* exit, not _exit: the child writes its own report */
    }
    int status = 0;
    if (waitpid(child, &status, 0) != child) {
        perror("waitpid");
        return 2;
    }
    int child_ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    printf("fork parent: 20 GEMMs, %ld wrong; child %s\n", after,
           child_ok ? "exited 0" : "FAILED");
    return wrong || after || !child_ok ? 1 : 0;
}
