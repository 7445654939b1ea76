/* S and C GEMMs run as D and Z GEMMs of promoted copies, the result rounded once into the
 * caller's C (BLASFT_PROMOTE, docs/promote.md).
 *
 * Why: a checksum over a block of FP32 results carries the FP32 rounding of every element in it,
 * so the native path cannot see an error smaller than that (docs/campaign-host.md: 46.9 % of the
 * significant FP32 mantissa flips, sign flips of cancelled elements missed). Computed in double,
 * the data GEMM's rounding is 2^29 times smaller, and every fault that survives the final
 * rounding to float is far above the double-precision thresholds. On the host the native S path
 * already promotes A and B for its checksum products, so this costs a DGEMM instead of an SGEMM
 * and the passes over C in double. */
#include "abft/abft_internal.h"
#include "abft/abft_keep.h"
#include "abft/abft_kernels.h"

int abft_promotes(const blasft_gemm *g, const blasft_config *cfg)
{
    return (g->type == BLASFT_TYPE_S || g->type == BLASFT_TYPE_C) &&
           cfg->promote != BLASFT_PROMOTE_OFF && g->m > 0 && g->n > 0;
}

static int64_t max1(int64_t v) { return v > 1 ? v : 1; }

/* One matrix moved between the caller's single-precision storage and our packed double copy,
 * columns [lo, hi) at a time; parts interleaved (a complex matrix is a real one with P times the
 * rows). */
typedef struct convert_job {
    void *single;  /* the caller's matrix */
    int64_t ld;    /* its leading dimension, in elements */
    double *dbl;   /* packed: rows x cols elements */
    int64_t rows;
    int P;
    int to_single; /* 0: promote, 1: round back */
} convert_job;

static void run_convert(void *p, int64_t lo, int64_t hi)
{
    const convert_job *j = p;
    const int64_t r = j->rows * j->P, ld = j->ld * j->P;
    if (!j->to_single) {
        abft_k_promote(j->dbl + lo * r, (const float *)j->single + lo * ld, 1, r, hi - lo, ld);
        return;
    }
    for (int64_t c = lo; c < hi; c++) {
        float *dst = (float *)j->single + c * ld;
        const double *src = j->dbl + c * r;
        for (int64_t i = 0; i < r; i++)
            dst[i] = (float)src[i];
    }
}

static void convert(int threads, void *single, int64_t ld, double *dbl, int64_t rows, int64_t cols,
                    int P, int to_single)
{
    if (rows <= 0 || cols <= 0)
        return;
    convert_job j = {single, ld, dbl, rows, P, to_single};
    abft_k_for(threads, run_convert, &j, cols, rows * cols * P);
}

int abft_run_promoted(const blasft_gemm *g, const blasft_config *cfg, blasft_abft_diag *diag,
                      int want_checks)
{
    const int P = g->type == BLASFT_TYPE_C ? 2 : 1;
    const int64_t ar = blasft_gemm_a_rows(g), ac = blasft_gemm_a_cols(g);
    const int64_t br = blasft_gemm_b_rows(g), bcols = blasft_gemm_b_cols(g);
    const int beta_zero = g->beta[0] == 0.0 && g->beta[1] == 0.0;
    const int64_t work = ar * ac + br * bcols + g->m * g->n;
    const int threads =
        work * P >= ABFT_PARALLEL_MIN && abft_k_parallel() ? abft_k_threads() : 1;
    double *ad = abft_keep_get(0, (size_t)(max1(ar) * max1(ac) * P));
    double *bd = abft_keep_get(1, (size_t)(max1(br) * max1(bcols) * P));
    double *cd = abft_keep_get(2, (size_t)(g->m * g->n * P));
    int rc;
    if (!ad || !bd || !cd) {
        /* no room for the copies: the native path still protects, at FP32's resolution */
        rc = abft_run(g, g->type, cfg, diag, want_checks);
        goto out;
    }
    convert(threads, (void *)g->a, g->lda, ad, ar, ac, P, 0);
    convert(threads, (void *)g->b, g->ldb, bd, br, bcols, P, 0);
    if (!beta_zero) /* with beta = 0 the old C is never read (it may hold NaN) */
        convert(threads, g->c, g->ldc, cd, g->m, g->n, P, 0);
    blasft_gemm d = *g;
    d.type = P == 2 ? BLASFT_TYPE_Z : BLASFT_TYPE_D;
    d.a = ad;
    d.lda = max1(ar);
    d.b = bd;
    d.ldb = max1(br);
    d.c = cd;
    d.ldc = g->m;
    rc = abft_run(&d, g->type, cfg, diag, want_checks);
    if (rc == 0) /* checked (and corrected) in double: one rounding into the caller's C */
        convert(threads, g->c, g->ldc, cd, g->m, g->n, P, 1);
out:
    abft_keep_put(0, ad);
    abft_keep_put(1, bd);
    abft_keep_put(2, cd);
    return rc;
}
