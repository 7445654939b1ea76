/* The protected GEMM on the host: encode, GEMM (with optional fault injection), check and
 * correct, statistics. The user's buffers are never extended: all checksums live in ours. */
#include "abft/abft_inject.h"
#include "abft/abft_internal.h"
#include "abft/abft_keep.h"
#include "abft/abft_kernels.h"
#include "abft/abft_weights.h"
#include "log.h"
#include "report.h"

#include <stdlib.h>
#include <string.h>

static blasft_abft_plant_fn plant_hook;
static void *plant_user;

void blasft_abft_set_plant_hook(blasft_abft_plant_fn fn, void *user)
{
    plant_hook = fn;
    plant_user = user;
}

void abft_emit(const abft_ctx *x, blasft_event_kind kind, int64_t bi, int64_t bj, int64_t row,
               int64_t col, double syndrome, double threshold, const char *action)
{
    blasft_event ev;
    memset(&ev, 0, sizeof ev);
    ev.kind = kind;
    ev.routine = x->g->routine ? x->g->routine : "gemm";
    ev.type = blasft_type_letter(x->user_type);
    ev.block_row = bi;
    ev.block_col = bj;
    ev.row = row;
    ev.col = col;
    ev.syndrome = syndrome;
    ev.threshold = threshold;
    ev.action = action;
    ev.matrix = -1; /* the host has no batched GEMM */
    blasft_event_emit(&ev);
}

static void ctx_free(abft_ctx *x)
{
    abft_keep_put(0, x->ad);
    abft_keep_put(1, x->bd);
    x->ad = x->bd = NULL;
    double **arrays[] = {&x->ac, &x->bc, &x->na2, &x->nb2, &x->encc, &x->encr};
    for (size_t i = 0; i < sizeof arrays / sizeof arrays[0]; i++) {
        free(*arrays[i]);
        *arrays[i] = NULL;
    }
    free(x->cold);
    x->cold = NULL;
    free(x->arrays); /* and with it every array alloc_arrays carved from it */
    x->arrays = NULL;
}

/* The check's arrays, zeroed, carved from one allocation (x->arrays): one each made a tiny GEMM
 * pay for about twenty allocations. The old C's sums only where beta != 0. */
static int alloc_arrays(abft_ctx *x)
{
    const int64_t nc = abft_nc(x), nr = abft_nr(x), P = x->P;
    const struct {
        double **p;
        int64_t n;
    } want[] = {{&x->refc, nc * P}, {&x->refr, nr * P}, {&x->recc, nc * P}, {&x->recr, nr * P},
                {&x->sqc, nc},      {&x->sqr, nr},      {&x->absc, nc},     {&x->absr, nr},
                {&x->vdc, nc},      {&x->vdr, nr},      {&x->c2c, nc},      {&x->c2r, nr},
                {&x->scratch, (nc + nr) * P},
                /* the old C's (from here on): beta != 0 only */
                {&x->oldc, nc * P}, {&x->oldr, nr * P}, {&x->osqc, nc},     {&x->osqr, nr},
                {&x->oabsc, nc},    {&x->oabsr, nr}};
    const size_t old_c_sums = 6, all = sizeof want / sizeof want[0];
    const size_t count = x->beta_zero ? all - old_c_sums : all;
    size_t doubles = 0;
    for (size_t i = 0; i < count; i++)
        doubles += (size_t)(want[i].n > 0 ? want[i].n : 1);
    char *block = calloc(1, doubles * sizeof(double) + (size_t)(nc + 1) + (size_t)(nr + 1));
    if (!block)
        return -1;
    x->arrays = block;
    double *d = (double *)block;
    for (size_t i = 0; i < count; i++) {
        *want[i].p = d;
        d += want[i].n > 0 ? want[i].n : 1;
    }
    x->exc = (uint8_t *)d;
    x->exr = x->exc + nc + 1;
    return 0;
}

static int ctx_init(abft_ctx *x, const blasft_gemm *g, blasft_type user_type,
                    const blasft_config *cfg)
{
    memset(x, 0, sizeof *x);
    x->g = g;
    x->user_type = user_type;
    x->cfg = cfg;
    x->P = blasft_type_is_complex(g->type) ? 2 : 1;
    x->t = g->type == BLASFT_TYPE_S || g->type == BLASFT_TYPE_C ? BLASFT_T_FLOAT : BLASFT_T_DOUBLE;
    x->R = cfg->checksums == 2 ? 2 : 1;
    x->bs = cfg->block_size < 2 ? 2 : cfg->block_size > 1024 ? 1024 : cfg->block_size;
    x->scheme = (int)cfg->weights;
    x->m = g->m;
    x->n = g->n;
    x->k = g->k;
    x->nbr = (g->m + x->bs - 1) / x->bs;
    x->nbc = (g->n + x->bs - 1) / x->bs;
    x->beta_zero = g->beta[0] == 0.0 && g->beta[1] == 0.0;
    x->parallel = g->m * g->n + g->m * g->k + g->k * g->n >= ABFT_PARALLEL_MIN && abft_k_parallel();
    x->threads = x->parallel ? abft_k_threads() : 1;
    const abft_weights *wt = abft_weights_get(x->scheme, x->bs);
    if (!wt)
        return -1;
    x->w[0] = wt->ones;
    x->w[1] = wt->w;
    x->weighted[0] = 0;
    x->weighted[1] = wt->weighted;
    const double wabs[2] = {(double)x->bs, wt->abs_sum};
    const double u = ldexp(1.0, -x->t), gam = blasft_gamma((double)(x->k * x->P + 2), u);
    const double aa = fabs(g->alpha[0]) + fabs(g->alpha[1]);
    for (int r = 0; r < 2; r++)
        x->underflow[r] = blasft_underflow_eps(gam, u, wabs[r], aa);
    if (alloc_arrays(x))
        return -1;
    if (!x->beta_zero && !(x->cold = malloc((size_t)(x->m * x->n * blasft_type_size(g->type)))))
        return -1;
    return 0;
}

/* The old C back into C (beta != 0; with beta = 0 no caller reads C's old content). */
static void restore_old_c(abft_ctx *x)
{
    if (x->beta_zero)
        return;
    const int sz = blasft_type_size(x->g->type);
    for (int64_t j = 0; j < x->n; j++)
        memcpy((char *)x->g->c + j * x->g->ldc * sz, (const char *)x->cold + j * x->m * sz,
               (size_t)(x->m * sz));
}

/* g as one call, or (slice > 0 and k > slice) as calls over slices of k accumulated into C: the
 * first with g's beta, the others with beta = 1, so the order of the accumulation is known (PROJ's
 * slice model; the data GEMM and the reference checksum GEMMs alike). */
void abft_sliced_gemm(const blasft_gemm *g, int64_t slice)
{
    if (!(slice > 0 && g->k > slice)) {
        blasft_host_gemm(g);
        return;
    }
    const int sz = blasft_type_size(g->type);
    blasft_gemm d = *g;
    for (int64_t p = 0; p < g->k; p += slice) {
        d.k = g->k - p < slice ? g->k - p : slice;
        d.a = (const char *)g->a + (g->transa == 'N' ? p * g->lda : p) * sz;
        d.b = (const char *)g->b + (g->transb == 'N' ? p : p * g->ldb) * sz;
        if (p > 0) {
            d.beta[0] = 1.0;
            d.beta[1] = 0.0;
        }
        blasft_host_gemm(&d);
    }
}

static void data_gemm(const abft_ctx *x) { abft_sliced_gemm(x->g, x->slice); }

/* The GEMM itself; with injection at site inner the K loop is split at a random k1 and the flips
 * land in the partial result, so the rest of the accumulation carries them like a real fault. */
static uint64_t run_gemm(abft_ctx *x)
{
    const blasft_gemm *g = x->g;
    const blasft_inject_spec *spec = x->cfg->inject[0] ? blasft_inject_get(x->cfg->inject) : NULL;
    if (!spec || spec->faults <= 0 || spec->site == BLASFT_SITE_ENCODER) {
        data_gemm(x);
        return 0;
    }
    uint64_t st = blasft_inject_next_stream(spec);
    if (spec->site == BLASFT_SITE_INNER && g->k >= 2) {
        const int sz = blasft_type_size(g->type);
        int64_t k1 = 1 + (int64_t)(((st >> 11) ^ (st << 7)) % (uint64_t)(g->k - 1));
        blasft_gemm d = *g;
        d.k = k1;
        blasft_host_gemm(&d);
        int n = blasft_inject_flip_as(spec, &st, x->user_type, g->type, g->c, g->ldc, g->m, g->n,
                                      x->bs);
        d.k = g->k - k1;
        d.a = (const char *)g->a + (g->transa == 'N' ? k1 * g->lda : k1) * sz;
        d.b = (const char *)g->b + (g->transb == 'N' ? k1 : k1 * g->ldb) * sz;
        d.beta[0] = 1.0;
        d.beta[1] = 0.0;
        blasft_host_gemm(&d);
        return (uint64_t)n;
    }
    data_gemm(x);
    return (uint64_t)blasft_inject_flip_as(spec, &st, x->user_type, g->type, g->c, g->ldc, g->m,
                                           g->n, x->bs);
}

/* C = beta C, computed in double and rounded once to the type (complex beta times complex C). */
static void scale_c(const blasft_gemm *g)
{
    const int P = blasft_type_is_complex(g->type) ? 2 : 1;
    const double br = g->beta[0], bi = P == 2 ? g->beta[1] : 0.0;
    if (br == 1.0 && bi == 0.0)
        return;
    for (int64_t j = 0; j < g->n; j++)
        for (int64_t i = 0; i < g->m; i++) {
            const int64_t e = i + j * g->ldc;
            double re = 0.0, im = 0.0;
            if (br != 0.0 || bi != 0.0) {
                const double cr = abft_ld(g->c, g->type, e, 0);
                const double ci = P == 2 ? abft_ld(g->c, g->type, e, 1) : 0.0;
                re = P == 2 ? br * cr - bi * ci : br * cr;
                im = br * ci + bi * cr;
            }
            abft_st(g->c, g->type, e, 0, re);
            if (P == 2)
                abft_st(g->c, g->type, e, 1, im);
        }
}

int blasft_abft_run(const blasft_gemm *g, const blasft_config *cfg, blasft_abft_diag *diag,
                    int want_checks)
{
    /* no product (k = 0 or alpha = 0): C = beta C as the reference BLAS specifies it (alpha, even
     * NaN or Inf, unused; beta 0 gives exact zeros without reading C; beta 1 leaves C), which
     * some host BLAS builds do not follow for k = 0. Nothing is there for checksums to guard, and
     * alpha must not enter thresholds. Counted unprotected (no check ran), as the GPU engine and
     * the cuBLAS interposer count it, so that a call's count does not depend on where it ran. */
    if (g->m > 0 && g->n > 0 && (g->k == 0 || (g->alpha[0] == 0.0 && g->alpha[1] == 0.0))) {
        if (diag)
            memset(diag, 0, sizeof *diag);
        scale_c(g);
        blasft_stat_add(BLASFT_STAT_UNPROTECTED_GEMMS, 1);
        return 0;
    }
    if (abft_promotes(g, cfg))
        return abft_run_promoted(g, cfg, diag, want_checks);
    return abft_run(g, g->type, cfg, diag, want_checks);
}

int abft_run(const blasft_gemm *g, blasft_type user_type, const blasft_config *cfg,
             blasft_abft_diag *diag, int want_checks)
{
    blasft_abft_diag local;
    if (!diag)
        diag = &local;
    memset(diag, 0, sizeof *diag);
    if (g->m == 0 || g->n == 0) {
        diag->protected_run = 1;
        blasft_stat_add(BLASFT_STAT_PROTECTED_GEMMS, 1);
        return 0;
    }
    abft_ctx *x = malloc(sizeof *x);
    if (!x)
        return -1;
    int rc = -1;
    if (ctx_init(x, g, user_type, cfg) != 0 || abft_encode_operands(x) != 0)
        goto out;
    if (!x->beta_zero) {
        /* packed, so beta*C_old stays available for block and element recomputation */
        abft_save_old_c(x);
        if (abft_c_checksums(x, x->cold, x->m, 1, 0, x->nbr, 0, x->nbc) != 0)
            goto out; /* Inf/NaN in the old C: cannot be checked */
    }
    if (abft_threshold_prepare(x) != 0 || abft_reference(x, 0, x->nbr, 0, x->nbc) != 0)
        goto out;
    diag->faults_injected = run_gemm(x) + x->injected;
    if (plant_hook)
        plant_hook(g, plant_user);
    /* C is written. Where the check cannot run (out of memory before it changed anything), C
     * gets its old content back and the caller computes the plain GEMM, which is then exact;
     * an unchecked C must not pass for a protected one. */
    if (abft_c_checksums(x, g->c, g->ldc, 0, 0, x->nbr, 0, x->nbc) != 0 ||
        abft_check_and_correct(x, diag, want_checks) != 0) {
        restore_old_c(x);
        const uint64_t injected = diag->faults_injected;
        blasft_abft_diag_free(diag);
        memset(diag, 0, sizeof *diag);
        diag->faults_injected = injected;
        static int warned;
        blasft_log_once(&warned, BLASFT_LOG_WARN, "out of memory for a GEMM's check: it runs "
                                                  "unprotected");
        goto out;
    }
    rc = 0;
    diag->protected_run = 1;
out:
    diag->encoder_faults = x->encoder_faults;
    if (rc == 0) {
        blasft_stat_add(BLASFT_STAT_PROTECTED_GEMMS, 1);
        blasft_stat_add(BLASFT_STAT_CHECKS, diag->checks);
        blasft_stat_add(BLASFT_STAT_ERRORS_DETECTED, diag->detected);
        blasft_stat_add(BLASFT_STAT_ERRORS_CORRECTED, diag->corrected);
        /* the report has no line counter: a recomputed line counts as a (smaller) block */
        blasft_stat_add(BLASFT_STAT_BLOCKS_RECOMPUTED,
                        diag->blocks_recomputed + diag->lines_recomputed);
        blasft_stat_add(BLASFT_STAT_UNCORRECTABLE, diag->uncorrectable);
        blasft_stat_add(BLASFT_STAT_FAULTS_INJECTED, diag->faults_injected);
        blasft_stat_add(BLASFT_STAT_FALSE_ALARMS, diag->false_alarms);
    }
    blasft_stat_add(BLASFT_STAT_ENCODER_FAULTS, diag->encoder_faults);
    ctx_free(x);
    free(x);
    if (diag == &local)
        blasft_abft_diag_free(diag);
    return rc;
}

void blasft_abft_diag_free(blasft_abft_diag *diag)
{
    free(diag->checks_list);
    diag->checks_list = NULL;
    diag->count = 0;
}
