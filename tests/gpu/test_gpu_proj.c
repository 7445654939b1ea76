/* PROJ on the GPU (cuda/gpu_proj.cu) against independent oracles, on fresh random data of four
 * series (T_full, T_pos, heavy-tailed, cancelling), awkward shapes, transposes, leading
 * dimensions, alpha/beta (beta = 0 over a C full of NaN), S and D, one and two checksums:
 *  - the result against the double-double reference, and no flag on fault-free data;
 *  - the double reference checksums against their double-double value;
 *  - every threshold against the one computed from the exact partial-sum energies of its block
 *    (sequential and 2-lane accumulation): the projections estimate the deviation part, so a few
 *    may fall a little below it, none far below, and the median must stay tight;
 *  - a planted error 16 times the threshold (far below the worst-case rounding bound) detected
 *    and corrected, and exponent and sign flips too; for FP64 with rows on demand, the row
 *    lists that the correction builds in place of PEA's pass over op(A).
 * Exits 77 where there is no GPU. */
#include "abft/abft_arith.h"
#include "gpu_debug.h"
#include "gpu_harness.h"
#include "hpref.h"

#include <cuda_runtime_api.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static blasft_gpu_ctx *ctx;

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static const char *series_name(int s)
{
    return s == DG_FULL ? "full" : s == DG_POS ? "pos" : s == DG_HEAVY ? "heavy" : "cancel";
}

/* ratios threshold / oracle threshold over all cases, and q = threshold / |syndrome| */
static double *ratios, *qs;
static double ref_err_max; /* largest |reference - exact| / exact-energy threshold */
static int64_t nratio, nq;

/* Plants value at (i, j) of C after the main GEMM. */
/* Plants values at up to two elements of C after the main GEMM. */
typedef struct plant {
    const gh_data *d;
    int n;
    int64_t i[2], j[2];
    double value[2];
    void *pinned; /* 16 bytes */
} plant;

static void plant_hook(void *stream, void *user)
{
    plant *p = user;
    const size_t ts = p->d->c.t == BLASFT_TYPE_S ? 4 : 8;
    for (int q = 0; q < p->n; q++) {
        char *h = (char *)p->pinned + ts * q;
        if (p->d->c.t == BLASFT_TYPE_S)
            *(float *)h = (float)p->value[q];
        else
            *(double *)h = p->value[q];
        cudaMemcpyAsync((char *)p->d->dC + ts * (p->i[q] + p->j[q] * p->d->c.ldc), h, ts,
                        cudaMemcpyHostToDevice, (cudaStream_t)stream);
    }
}

/* Where PEA's pass over op(A) is left out (PROJ, FP64, rows on demand; gpu_gemm.cu), the row
 * lists of block I, built by the correction, against the shared insertion rule. */
enum { kListLen = 8 }; /* entries per top-p list (gpu_debug.h: m x 8) */
static int64_t list_rows; /* rows whose lists were compared */
static void check_row_lists(const gh_data *d, const blasft_gpu_params *p, int64_t I, const char *what)
{
    const gh_case *c = &d->c;
    if (c->t != BLASFT_TYPE_D || !p->rows_on_demand || p->pea_block_lists)
        return;
    double *val = malloc(8 * (size_t)(c->m * kListLen + 1));
    int *pos = malloc(4 * (size_t)(c->m * kListLen + 1));
    GH_CHECK(blasft_gpu_debug_fetch(ctx, c->t, c->m, c->n, c->k, p, BLASFT_GPU_BUF_TA_VAL, val) == c->m * kListLen &&
                 blasft_gpu_debug_fetch(ctx, c->t, c->m, c->n, c->k, p, BLASFT_GPU_BUF_TA_POS, pos) == c->m * kListLen,
             "%s: row lists not readable", what);
    int64_t bad = 0;
    for (int64_t i = I * p->block_size; i < c->m && i < (I + 1) * p->block_size; i++) {
        double v[kListLen];
        int64_t at[kListLen];
        int cnt = 0;
        for (int64_t l = 0; l < c->k; l++) {
            cnt = blasft_topp_insert(v, at, cnt, p->pea_p, fabs(gh_opa(d, i, l)), l);
        }
        for (int q = 0; q < cnt; q++)
            bad += val[i * kListLen + q] != v[q] || pos[i * kListLen + q] != at[q];
        list_rows++;
    }
    GH_CHECK(bad == 0, "%s: %lld row-list entries of block %lld differ", what, (long long)bad, (long long)I);
    free(val);
    free(pos);
}

/* Runs g with pl planted; checks that something was detected and that every planted element is
 * back within half its planted error of the exact value (the worst-case bound of
 * gh_bad_elements would hide an error this small). */
static void run_planted(gh_data *d, const blasft_gpu_gemm *g, const blasft_gpu_params *p,
                        plant *pl, const double *clean, const char *what, const char *name)
{
    const gh_case *c = &d->c;
    gh_reset_c(d);
    if (c->beta == 0.0)
        cudaMemset(d->dC, 0xff, (c->t == BLASFT_TYPE_S ? 4 : 8) * (size_t)(c->ldc * c->n));
    blasft_gpu_set_fault_hook(ctx, plant_hook, pl);
    blasft_stats st = gh_run_counted(ctx, g, p, what);
    blasft_gpu_set_fault_hook(ctx, NULL, NULL);
    double *out = malloc(8 * (size_t)(c->m * c->n));
    gh_download_c(d, out);
    int64_t fi = -1, fj = -1, bad = gh_bad_elements(d, out, &fi, &fj);
    GH_CHECK(bad == 0, "%s: planted %s: %lld wrong elements after the check", what, name, (long long)bad);
    for (int q = 0; q < pl->n; q++) {
        const int64_t e = pl->i[q] + pl->j[q] * c->m;
        const double v = c->t == BLASFT_TYPE_S ? (double)(float)pl->value[q] : pl->value[q];
        const double planted = fabs(v - clean[e]), left = fabs(out[e] - d->ref[e]);
        GH_CHECK(left < 0.5 * planted, "%s: planted %s at (%lld, %lld): %.3g of %.3g left", what,
                 name, (long long)pl->i[q], (long long)pl->j[q], left, planted);
    }
    GH_CHECK(st.errors_detected + st.blocks_recomputed >= 1 && st.uncorrectable == 0,
             "%s: planted %s not detected (detected %llu, recomputed %llu, false alarms %llu)", what,
             name, (unsigned long long)st.errors_detected, (unsigned long long)st.blocks_recomputed,
             (unsigned long long)st.false_alarms);
    free(out);
}

static void one_case(const gh_case *c, const blasft_gpu_params *p, int series, uint64_t seed,
                     void *pinned)
{
    char what[200];
    snprintf(what, sizeof what, "%c %c%c %lldx%lldx%lld ld %lld/%lld/%lld a=%g b=%g dev=%d bs=%d r=%d %s",
             c->t == BLASFT_TYPE_S ? 'S' : 'D', c->ta, c->tb, (long long)c->m, (long long)c->n,
             (long long)c->k, (long long)c->lda, (long long)c->ldb, (long long)c->ldc, c->alpha,
             c->beta, c->device_scalars, p->block_size, p->checksums, series_name(series));
    gh_data d;
    gh_make_series(&d, c, seed, series);
    const size_t ts = c->t == BLASFT_TYPE_S ? 4 : 8;
    if (c->beta == 0.0) /* must not leak */
        cudaMemset(d.dC, 0xff, ts * c->ldc * c->n);
    blasft_gpu_gemm g = gh_desc(&d);
    blasft_stats st = gh_run_counted(ctx, &g, p, what);
    double *out = malloc(8 * (size_t)(c->m * c->n + 1));
    gh_download_c(&d, out);
    int64_t fi = -1, fj = -1, bad = gh_bad_elements(&d, out, &fi, &fj);
    GH_CHECK(bad == 0, "%s: %lld wrong elements, first (%lld, %lld)", what, (long long)bad,
             (long long)fi, (long long)fj);
    GH_CHECK(st.errors_detected == 0 && st.blocks_recomputed == 0 && st.false_alarms == 0,
             "%s: fault-free GEMM flagged (detected %llu, recomputed %llu, false alarms %llu)", what,
             (unsigned long long)st.errors_detected, (unsigned long long)st.blocks_recomputed,
             (unsigned long long)st.false_alarms);
    const int64_t mb = (c->m + p->block_size - 1) / p->block_size, R = p->checksums;
    const int64_t ne = R * mb * c->n;
    double *eps = malloc(8 * (size_t)(ne + 1)), *ref = malloc(8 * (size_t)(ne + 1));
    double *rec = malloc(8 * (size_t)(ne + 1));
    GH_CHECK(blasft_gpu_debug_fetch(ctx, c->t, c->m, c->n, c->k, p, BLASFT_GPU_BUF_CCS_EPS, eps) == ne &&
                 blasft_gpu_debug_fetch(ctx, c->t, c->m, c->n, c->k, p, BLASFT_GPU_BUF_PROJ_REF, ref) == ne &&
                 blasft_gpu_debug_fetch(ctx, c->t, c->m, c->n, c->k, p, BLASFT_GPU_BUF_CCS_REC, rec) == ne,
             "%s: buffers not readable", what);
    const gh_proj_gemm og = {c->t == BLASFT_TYPE_S, c->ta, c->tb, c->m, c->k, d.A, d.B, d.C0,
                             c->lda, c->ldb, c->ldc, c->alpha, c->beta, p->block_size, p->weights};
    double eps_max = 0;
    for (int64_t j = 0; j < c->n; j++)
        for (int64_t I = 0; I < mb; I++)
            for (int r = 0; r < R; r++) {
                const int64_t e = (I * R + r) + j * R * mb;
                double oref, oeps;
                gh_proj_oracle(&og, I, r, j, &oref, &oeps, NULL);
                /* the reference: runs of 8 (32) products added compensated (gpu_proj.cu), so
                 * within a few units of its double rounding and far below the threshold, which
                 * carries the runs' rounding */
                const double rerr = fabs(ref[e] - oref);
                GH_CHECK(rerr <= 4.0 * ldexp(1.0, -53) * fabs(oref) + 0.1 * oeps,
                         "%s: reference (%lld, %d, %lld) %.17g, exact %.17g", what, (long long)I, r,
                         (long long)j, ref[e], oref);
                if (oeps > 0) {
                    ref_err_max = fmax(ref_err_max, rerr / oeps);
                    ratios[nratio++] = eps[e] / oeps;
                    GH_CHECK(eps[e] >= 0.5 * oeps, "%s: threshold (%lld, %d, %lld) %.3g is %.3f of the exact energies'",
                             what, (long long)I, r, (long long)j, eps[e], eps[e] / oeps);
                    /* too few rows: NORM's order-free bound, above every order's energy */
                    if (c->m - I * p->block_size < blasft_proj_min_rows(BLASFT_PROJ_GPU_K))
                        GH_CHECK(eps[e] >= oeps, "%s: threshold (%lld, %d, %lld) of a block of %lld rows is %.3f of the exact energies'",
                                 what, (long long)I, r, (long long)j,
                                 (long long)(c->m - I * p->block_size), eps[e] / oeps);
                }
                if (ref[e] != rec[e])
                    qs[nq++] = eps[e] / fabs(ref[e] - rec[e]);
                eps_max = fmax(eps_max, eps[e]);
            }
    /* planted at a random element: an error of 16 times the largest threshold, one of 3 times
     * its own column checksum's (near the threshold), a sign flip and a x65536 change */
    if (c->m > 1 && c->n > 1 && eps_max > 0) {
        plant pl = {&d, 1, {(int64_t)(seed * 7919 % (uint64_t)c->m)}, {(int64_t)(seed * 104729 % (uint64_t)c->n)}, {0}, pinned};
        const double cur = out[pl.i[0] + pl.j[0] * c->m];
        const double own = eps[(pl.i[0] / p->block_size) * R + pl.j[0] * R * mb];
        static const char *const names[4] = {"16 eps", "3 own eps", "sign flip", "x65536"};
        const double value[4] = {cur + 16.0 * eps_max, cur + 3.0 * own, -cur, cur * 65536.0};
        for (int q = 0; q < 4; q++) {
            if (q > 1 && !(fabs(cur) > 16.0 * eps_max))
                continue; /* a flip of an element below the resolution is not a target here */
            pl.value[0] = value[q];
            run_planted(&d, &g, p, &pl, out, what, names[q]);
            if (q == 0)
                check_row_lists(&d, p, pl.i[0] / p->block_size, what);
        }
    }
    /* two errors of 3 thresholds in one column of a block (rows 2 and 6 of it): with two
     * checksums their syndromes' ratio names row 4, which is not wrong, so the whole block must
     * be computed again */
    if (R == 2 && c->n > 0 && (c->m < p->block_size ? c->m : p->block_size) > 6) {
        const int64_t j = (int64_t)(seed % (uint64_t)c->n);
        const double own = eps[j * R * mb];
        plant pl = {&d, 2, {2, 6}, {j, j}, {out[2 + j * c->m] + 3.0 * own, out[6 + j * c->m] + 3.0 * own}, pinned};
        run_planted(&d, &g, p, &pl, out, what, "two in a column");
    }
    free(eps);
    free(ref);
    free(rec);
    free(out);
    gh_free(&d);
}

int main(void)
{
    if (!gh_gpu_present()) {
        fprintf(stderr, "no GPU: skipped\n");
        return 77;
    }
    ctx = blasft_gpu_ctx_create(NULL);
    if (!ctx) {
        fprintf(stderr, "no GPU context: skipped\n");
        return 77;
    }
    void *pinned = NULL;
    cudaMallocHost(&pinned, 16);
    ratios = malloc(8 * (size_t)4000000);
    qs = malloc(8 * (size_t)4000000);
    static const int64_t shapes[][3] = {{1, 1, 1}, {7, 5, 3}, {131, 67, 257}, {200, 96, 512},
                                        {64, 1, 97}, {33, 129, 1000},
                                        /* beyond k = 2048: the reference in runs of 32 products */
                                        {40, 33, 3001}, {70, 45, 4500}};
    static const char trans[][2] = {{'N', 'N'}, {'N', 'T'}, {'T', 'N'}, {'T', 'T'}};
    static const int series[] = {DG_FULL, DG_POS, DG_HEAVY, DG_CANCEL};
    uint64_t seed = 11;
    /* cv 1: again where beta != 0, with the old C a vector repeated over the columns */
    for (int cv = 0; cv < 2; cv++)
    for (int t = 0; t < 2; t++)
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
            for (int v = 0; v < 4; v++) {
                const int tr = (int)(s + v) % 4, pad = (int)(s + v + t) % 3;
                const double alpha = v == 1 ? -0.75 : v == 2 ? 2.5 : 1.0;
                const double beta = v == 0 ? 0.0 : v == 1 ? 0.5 : v == 2 ? -1.0 : 0.0;
                if (cv && beta == 0.0)
                    continue;
                gh_case c;
                memset(&c, 0, sizeof c);
                c.t = t ? BLASFT_TYPE_D : BLASFT_TYPE_S;
                c.ta = trans[tr][0];
                c.tb = trans[tr][1];
                c.m = shapes[s][0];
                c.n = shapes[s][1];
                c.k = shapes[s][2];
                int64_t ar = c.ta == 'N' ? c.m : c.k, br = c.tb == 'N' ? c.k : c.n;
                c.lda = (ar > 1 ? ar : 1) + pad;
                c.ldb = (br > 1 ? br : 1) + 2 * pad;
                c.ldc = (c.m > 1 ? c.m : 1) + pad;
                c.alpha = alpha;
                c.beta = beta;
                c.device_scalars = v == 3;
                c.c_vector = cv;
                blasft_gpu_params p;
                gh_params(&p, v == 0 ? 32 : v == 1 ? 50 : v == 2 ? 128 : 37, 1 + (int)(s + v) % 2);
                p.rows_on_demand = (int)(s + t) % 2;
                p.proj = 1;
                one_case(&c, &p, series[(s + v + t) % 4], seed++, pinned);
            }
    qsort(ratios, (size_t)nratio, 8, cmp_double);
    qsort(qs, (size_t)nq, 8, cmp_double);
    int64_t below = 0;
    for (int64_t i = 0; i < nratio; i++)
        below += ratios[i] < 1.0;
    printf("thresholds / exact-energy thresholds: %lld, min %.3f, median %.3f, max %.3f, below 1: %lld\n",
           (long long)nratio, nratio ? ratios[0] : 0, nratio ? ratios[nratio / 2] : 0,
           nratio ? ratios[nratio - 1] : 0, (long long)below);
    printf("reference error / exact-energy threshold: max %.3g\n", ref_err_max);
    printf("q = threshold / |syndrome|: %lld, min %.3g, median %.3g\n", (long long)nq,
           nq ? qs[0] : 0, nq ? qs[nq / 2] : 0);
    GH_CHECK(below <= nratio / 50, "%lld of %lld thresholds below the exact energies'", (long long)below,
             (long long)nratio);
    GH_CHECK(nratio == 0 || ratios[nratio / 2] <= 4.0, "median threshold %.3f times the exact energies'",
             ratios[nratio / 2]);
    GH_CHECK(nq == 0 || qs[0] > 1.0, "a syndrome over its threshold (q %.3g)", qs[0]);
    GH_CHECK(list_rows > 0, "no row lists of a flagged FP64 block compared");
    printf("row lists compared: %lld rows\n", (long long)list_rows);
    printf("test_gpu_proj: %d checks, %d failures\n", gh_checks, gh_failures);
    cudaFreeHost(pinned);
    free(ratios);
    free(qs);
    blasft_gpu_ctx_destroy(ctx);
    return gh_failures ? 1 : 0;
}
