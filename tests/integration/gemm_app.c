/* An ordinary BLAS-using program: GEMMs through CBLAS (row- and column-major) and the Fortran
 * interface, on random data, every transpose, odd and zero shapes, padded leading dimensions,
 * each checked against a naive long double oracle. It knows nothing of libblas_ft: the tests run
 * it linked with the system BLAS, under LD_PRELOAD, and linked with -lblas_ft.
 * Prints one line per routine with its number of calls, then a summary; exits 1 on any error. */
#include "gemm_run.h"

#include <stdio.h>
#include <stdlib.h>

static int max1(int v) { return v > 1 ? v : 1; }

/* The smallest legal leading dimension of a stored rows x cols matrix, plus extra. */
static int lead(enum gemm_order o, int rows, int cols, int extra)
{
    return max1(o == ORDER_COL ? rows : cols) + extra;
}

int main(int argc, char **argv)
{
    /* m, n, k: zeros, ones, primes, sizes around and beyond a 128 block, skinny shapes. */
    static const int shapes[][3] = {{0, 5, 3},   {5, 0, 3},    {5, 3, 0},   {1, 1, 1},
                                    {7, 11, 13}, {31, 29, 37}, {130, 17, 129}, {200, 1, 50},
                                    {1, 150, 17}};
    static const double alphas[][2] = {{1, 0}, {-0.75, 0.5}, {2.5, -1}, {0, 0}};
    static const double betas[][2] = {{0, 0}, {1, 0}, {-1.25, 0.25}, {0.5, 0}};
    static const char transes[] = {'N', 'T', 'C'};
    uint64_t seed = argc > 1 ? strtoull(argv[1], NULL, 0) : 20240601u;
    uint64_t state = seed;
    long calls[2][4] = {{0}}, failed = 0, total = 0;

    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (int api = API_CBLAS; api <= API_FORTRAN; api++)
            for (int order = ORDER_ROW; order <= ORDER_COL; order++) {
                if (api == API_FORTRAN && order == ORDER_ROW)
                    continue;
                for (int type = TYPE_S; type <= TYPE_Z; type++)
                    for (int ta = 0; ta < 3; ta++)
                        for (int tb = 0; tb < 3; tb++) {
                            int cplx = type == TYPE_C || type == TYPE_Z;
                            /* 'C' on real data means 'T': one real case of it is enough. */
                            if (!cplx && (ta == 2 || tb == 2) && !(ta == 2 && tb == 1))
                                continue;
                            gemm_case g = {.type = (enum gemm_type)type,
                                           .order = (enum gemm_order)order,
                                           .transa = transes[ta], .transb = transes[tb],
                                           .m = shapes[s][0], .n = shapes[s][1], .k = shapes[s][2]};
                            size_t pick = (size_t)(gc_rand_next(&state) % 4);
                            g.alpha[0] = alphas[pick][0];
                            g.alpha[1] = cplx ? alphas[pick][1] : 0;
                            pick = (size_t)(gc_rand_next(&state) % 4);
                            g.beta[0] = betas[pick][0];
                            g.beta[1] = cplx ? betas[pick][1] : 0;
                            int extra = (int)(gc_rand_next(&state) % 4); /* lda > m as often as not */
                            int ar = g.transa == 'N' ? g.m : g.k, ac = g.transa == 'N' ? g.k : g.m;
                            int br = g.transb == 'N' ? g.k : g.n, bc = g.transb == 'N' ? g.n : g.k;
                            g.lda = lead(g.order, ar, ac, extra);
                            g.ldb = lead(g.order, br, bc, (extra + 1) % 4);
                            g.ldc = lead(g.order, g.m, g.n, (extra + 2) % 4);
                            long bad = gr_run_checked((enum gemm_api)api, &g, &state, 1);
                            calls[api][type]++;
                            total++;
                            failed += bad != 0;
                        }
            }
    for (int api = API_CBLAS; api <= API_FORTRAN; api++)
        for (int type = TYPE_S; type <= TYPE_Z; type++)
            printf("calls %s %ld\n", gr_routine((enum gemm_api)api, (enum gemm_type)type),
                   calls[api][type]);
    printf("gemm_app: seed %llu: %ld GEMMs checked, %ld wrong\n", (unsigned long long)seed, total,
           failed);
    return failed ? 1 : 0;
}
