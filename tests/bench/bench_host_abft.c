/* Host ABFT overhead: protected GEMM (blasft_abft_run, fault-free) against the plain host BLAS
 * GEMM on the same operands, in one process, S/D/C/Z side by side. Each configuration is timed
 * as the best of --reps alternating runs (plain, protected, plain, ...), so both see the same
 * machine state; the ratio is protected / plain (times in milliseconds). Not a test: run it by hand, see
 * docs/host-overhead.md.
 *
 *   bench_host_abft [--types sdcz] [--sizes 256,512,1024,2048] [--skinny 1] [--reps 5]
 *                   [--bs 128] [--checksums 1] [--threshold pea|sea] [--clock wall|cpu]
 *
 * Other settings from the BLASFT_* variables (BLASFT_PROMOTE: S and C in double or not).
 * Threads: OpenBLAS reads OPENBLAS_NUM_THREADS; the engine runs its redundant passes on two
 * threads when the host BLAS uses two or more (abft_k_parallel). */
#include "abft/abft_engine.h"
#include "config.h"
#include "datagen.h"
#include "gemm.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct shape {
    int64_t m, n, k;
    char ta, tb;
} shape;

/* wall clock, or with --clock cpu the calling thread's CPU time: on a machine shared with other
 * jobs that still compares single-threaded runs fairly (all work then runs in this thread) */
static clockid_t bench_clock = CLOCK_MONOTONIC;

static double now(void)
{
    struct timespec t;
    clock_gettime(bench_clock, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void usage(void)
{
    fprintf(stderr, "usage: bench_host_abft [--types sdcz] [--sizes 256,512,...] [--skinny 0|1]\n"
                    "       [--reps R] [--bs BS] [--checksums 1|2] [--threshold pea|sea]\n"
                    "       [--clock wall|cpu]\n");
    exit(2);
}

/* Best-of-reps times of the plain and the protected GEMM; -1 if protection refused to run. */
static int time_one(const blasft_config *cfg, blasft_type t, const shape *s, int reps,
                    double *plain, double *prot)
{
    dg_rng r;
    dg_seed(&r, 42);
    dg_params pa = {.series = DG_FULL, .exponent = 0, .role = DG_LEFT}, pb = pa;
    pb.role = DG_RIGHT;
    int64_t ar = s->ta == 'N' ? s->m : s->k, ac = s->ta == 'N' ? s->k : s->m;
    int64_t br = s->tb == 'N' ? s->k : s->n, bc = s->tb == 'N' ? s->n : s->k;
    size_t es = (size_t)blasft_type_size(t);
    void *a = malloc((size_t)(ar * ac) * es), *b = malloc((size_t)(br * bc) * es);
    void *c = calloc((size_t)(s->m * s->n), es);
    if (!a || !b || !c) {
        fprintf(stderr, "bench_host_abft: out of memory\n");
        exit(1);
    }
    if (dg_fill(&r, (dg_type)t, &pa, ar, ac, a, ar) ||
        dg_fill(&r, (dg_type)t, &pb, br, bc, b, br)) {
        fprintf(stderr, "bench_host_abft: data generation failed\n");
        exit(1);
    }
    blasft_gemm g;
    memset(&g, 0, sizeof g);
    g.type = t;
    g.transa = s->ta;
    g.transb = s->tb;
    g.m = s->m;
    g.n = s->n;
    g.k = s->k;
    g.a = a;
    g.lda = ar;
    g.b = b;
    g.ldb = br;
    g.c = c;
    g.ldc = s->m;
    g.alpha[0] = 1.0;
    g.routine = "bench";
    *plain = *prot = 1e30;
    int rc = 0;
    /* one warm-up of each, so page faults and thread start-up are not timed */
    blasft_host_gemm(&g);
    rc |= blasft_abft_run(&g, cfg, NULL, 0);
    for (int rep = 0; rep < reps && rc == 0; rep++) {
        double t0 = now();
        blasft_host_gemm(&g);
        double t1 = now();
        blasft_abft_diag d;
        rc |= blasft_abft_run(&g, cfg, &d, 0);
        double t2 = now();
        if (d.detected) {
            fprintf(stderr, "bench_host_abft: fault-free run flagged %llu elements\n",
                    (unsigned long long)d.detected);
            rc = -1;
        }
        if (t1 - t0 < *plain)
            *plain = t1 - t0;
        if (t2 - t1 < *prot)
            *prot = t2 - t1;
    }
    free(a);
    free(b);
    free(c);
    return rc;
}

static int parse_list(const char *v, int64_t *out, int max)
{
    int n = 0;
    for (const char *p = v; *p && n < max;) {
        out[n++] = strtoll(p, (char **)&p, 10);
        if (*p == ',')
            p++;
        else if (*p)
            usage();
    }
    return n;
}

int main(int argc, char **argv)
{
    const char *types = "sdcz";
    int64_t sizes[16] = {256, 512, 1024, 2048};
    int nsizes = 4, skinny = 1, reps = 5;
    blasft_config cfg = *blasft_cfg();
    cfg.block_size = 128;
    cfg.checksums = 1;
    cfg.mode = BLASFT_MODE_CORRECT;
    cfg.log_level = BLASFT_LOG_OFF;
    cfg.inject[0] = '\0';
    for (int i = 1; i + 1 < argc + 1; i += 2) {
        if (i + 1 >= argc)
            usage();
        const char *k = argv[i], *v = argv[i + 1];
        if (!strcmp(k, "--types"))
            types = v;
        else if (!strcmp(k, "--sizes"))
            nsizes = parse_list(v, sizes, 16);
        else if (!strcmp(k, "--skinny"))
            skinny = atoi(v);
        else if (!strcmp(k, "--reps"))
            reps = atoi(v) > 0 ? atoi(v) : 1;
        else if (!strcmp(k, "--bs"))
            cfg.block_size = atoi(v);
        else if (!strcmp(k, "--checksums"))
            cfg.checksums = atoi(v);
        else if (!strcmp(k, "--clock"))
            bench_clock = !strcmp(v, "cpu") ? CLOCK_THREAD_CPUTIME_ID : CLOCK_MONOTONIC;
        else if (!strcmp(k, "--threshold"))
            cfg.threshold = !strcmp(v, "sea") ? BLASFT_THRESHOLD_SEA : BLASFT_THRESHOLD_PEA;
        else
            usage();
    }
    shape shapes[32];
    int ns = 0;
    for (int i = 0; i < nsizes; i++)
        shapes[ns++] = (shape){sizes[i], sizes[i], sizes[i], 'N', 'N'};
    if (skinny) {
        /* tall-skinny and short-wide products, small k, and transposed operands */
        shapes[ns++] = (shape){4096, 64, 1024, 'N', 'N'};
        shapes[ns++] = (shape){64, 4096, 1024, 'N', 'N'};
        shapes[ns++] = (shape){2048, 2048, 64, 'N', 'N'};
        shapes[ns++] = (shape){1024, 1024, 1024, 'T', 'T'};
        shapes[ns++] = (shape){1000, 999, 1001, 'N', 'T'};
    }
    const char *thr = getenv("OPENBLAS_NUM_THREADS");
    printf("# block size %d, checksums %d, threshold %s, omega %g, promote %s (S and C), "
           "OPENBLAS_NUM_THREADS=%s, best of %d, %s time\n",
           cfg.block_size, cfg.checksums, blasft_threshold_name(cfg.threshold), cfg.omega,
           blasft_promote_name(cfg.promote),
           thr ? thr : "(unset)", reps, bench_clock == CLOCK_MONOTONIC ? "wall" : "thread CPU");
    printf("| m | n | k | op |");
    for (const char *tc = types; *tc; tc++)
        printf(" %c plain ms | %c protected ms | %c ratio |", *tc - 32, *tc - 32, *tc - 32);
    printf("\n|---|---|---|---|");
    for (const char *tc = types; *tc; tc++)
        printf("---|---|---|");
    printf("\n");
    int status = 0;
    for (int i = 0; i < ns; i++) {
        const shape *s = &shapes[i];
        printf("| %lld | %lld | %lld | %c%c |", (long long)s->m, (long long)s->n, (long long)s->k,
               s->ta, s->tb);
        fflush(stdout);
        for (const char *tc = types; *tc; tc++) {
            const char *lt = "sdcz", *at = strchr(lt, *tc);
            if (!at) {
                printf(" - | - | - |");
                continue;
            }
            double plain, prot;
            if (time_one(&cfg, (blasft_type)(at - lt), s, reps, &plain, &prot) != 0) {
                printf(" %.4g | failed | - |", plain * 1e3);
                status = 1;
            } else
                printf(" %.4g | %.4g | %.2f |", plain * 1e3, prot * 1e3, prot / plain);
            fflush(stdout);
        }
        printf("\n");
    }
    return status;
}
