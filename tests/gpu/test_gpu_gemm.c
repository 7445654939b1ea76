/* The protected GPU GEMM against the double-double reference: awkward shapes, transposes, leading
 * dimensions, alpha/beta in host and device memory, S and D, 1 and 2 checksums; no false alarms
 * on clean data; planted faults of every class detected and corrected (or the block recomputed).
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
/* the context whose checked C plant_checked_hook writes into */
static blasft_gpu_ctx *ctx_of_hook;

/* Faults planted after the main GEMM: C(i,j) = value. */
#define MAX_FAULTS 8
typedef struct plant {
    int n;
    int64_t i[MAX_FAULTS], j[MAX_FAULTS];
    double value[MAX_FAULTS];
    const gh_data *d;
    void *pinned; /* the typed values, in pinned memory for the async copies */
} plant;

static void plant_hook(void *stream, void *user)
{
    plant *p = user;
    size_t ts = p->d->c.t == BLASFT_TYPE_S ? 4 : 8;
    for (int q = 0; q < p->n; q++) {
        char *dst = (char *)p->d->dC + ts * (p->i[q] + p->j[q] * p->d->c.ldc);
        if (p->d->c.t == BLASFT_TYPE_S)
            ((float *)p->pinned)[q] = (float)p->value[q];
        else
            ((double *)p->pinned)[q] = p->value[q];
        cudaMemcpyAsync(dst, (char *)p->pinned + ts * q, ts, cudaMemcpyHostToDevice,
                        (cudaStream_t)stream);
    }
}

/* prepared operands for run() (NULL: none) */
static const void *run_prep_a, *run_prep_b;

static void run(gh_data *d, const blasft_gpu_params *p, plant *pl, blasft_stats *delta,
                double *out)
{
    blasft_gpu_gemm g = gh_desc(d);
    g.prep_a = run_prep_a;
    g.prep_b = run_prep_b;
    if (pl) {
        pl->d = d;
        blasft_gpu_set_fault_hook(ctx, plant_hook, pl);
    }
    *delta = gh_run_counted(ctx, &g, p, "run");
    blasft_gpu_set_fault_hook(ctx, NULL, NULL);
    gh_download_c(d, out);
}

static const char *desc(const gh_case *c, const blasft_gpu_params *p)
{
    static char buf[256];
    snprintf(buf, sizeof buf, "%c%c%c m=%lld n=%lld k=%lld ld=%lld/%lld/%lld a=%g b=%g dev=%d bs=%d r=%d lists=%s",
             c->t == BLASFT_TYPE_S ? 'S' : 'D', c->ta, c->tb, (long long)c->m, (long long)c->n,
             (long long)c->k, (long long)c->lda, (long long)c->ldb, (long long)c->ldc, c->alpha,
             c->beta, c->device_scalars, p->block_size, p->checksums,
             p->pea_block_lists ? "block" : "vector");
    snprintf(buf + strlen(buf), sizeof buf - strlen(buf), " rows=%s%s",
             p->rows_on_demand ? "flagged" : "all", c->c_vector ? " c_vector" : "");
    return buf;
}

/* 1: make_case's old C is a vector repeated over the columns (blasft_gpu_gemm.c_vector) */
static int vector_c;

static gh_case make_case(blasft_type t, char ta, char tb, int64_t m, int64_t n, int64_t k, int pad,
                         double alpha, double beta, int dev)
{
    gh_case c;
    memset(&c, 0, sizeof c);
    c.c_vector = vector_c;
    c.t = t; c.ta = ta; c.tb = tb; c.m = m; c.n = n; c.k = k;
    int64_t ar = ta == 'N' ? m : k, br = tb == 'N' ? k : n;
    c.lda = (ar > 1 ? ar : 1) + pad;
    c.ldb = (br > 1 ? br : 1) + 2 * pad;
    c.ldc = (m > 1 ? m : 1) + pad;
    c.alpha = alpha; c.beta = beta; c.device_scalars = dev;
    return c;
}

static void clean_sweep(void)
{
    static const int64_t shapes[][3] = {{1, 1, 1}, {7, 5, 3}, {131, 67, 257}, {256, 256, 256},
                                        {300, 129, 64}, {33, 200, 1}, {64, 1, 97}};
    static const char trans[][2] = {{'N', 'N'}, {'N', 'T'}, {'T', 'N'}, {'T', 'T'}};
    uint64_t seed = 1;
    for (int t = 0; t < 2; t++)
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
            for (int tr = 0; tr < 4; tr++) {
                int variant = (int)(s + tr) % 4;
                double alpha = variant == 0 ? 1.0 : variant == 1 ? -0.75 : variant == 2 ? 2.5 : 1.0;
                double beta = variant == 0 ? 0.0 : variant == 1 ? 0.5 : variant == 2 ? 0.0 : 1.0;
                gh_case c = make_case(t ? BLASFT_TYPE_D : BLASFT_TYPE_S, trans[tr][0], trans[tr][1],
                                      shapes[s][0], shapes[s][1], shapes[s][2], (int)(s % 3) * 3,
                                      alpha, beta, variant == 3);
                blasft_gpu_params p;
                gh_params(&p, (s + tr) % 2 ? 32 : 128, 1 + tr % 2);
                if (s == 3 && tr == 0)
                    p.block_size = 50; /* not a power of two */
                p.pea_block_lists = (int)(s + t) % 2;
                p.rows_on_demand = (int)(tr + t) % 2;
                /* every schedule (overlapped / serial encoding and reference GEMMs, the lists
                 * after the main GEMM) in turn */
                blasft_gpu_set_schedule(ctx, (int)(s + 2 * tr + t) % 5);
                gh_data d;
                gh_make(&d, &c, seed++);
                double *out = malloc(8 * (size_t)(c.m * c.n + 1));
                blasft_stats st;
                run(&d, &p, NULL, &st, out);
                int64_t fi = -1, fj = -1, bad = gh_bad_elements(&d, out, &fi, &fj);
                GH_CHECK(bad == 0, "%s: %lld wrong elements, first (%lld,%lld) %g vs %g", desc(&c, &p),
                         (long long)bad, (long long)fi, (long long)fj,
                         bad ? out[fi + fj * c.m] : 0.0, bad ? d.ref[fi + fj * c.m] : 0.0);
                GH_CHECK(st.protected_gemms == 1 && st.errors_detected == 0 &&
                             st.errors_corrected == 0 && st.blocks_recomputed == 0 &&
                             st.encoder_faults == 0,
                         "%s: clean run: protected %llu detected %llu corrected %llu recomputed %llu "
                         "encoder %llu",
                         desc(&c, &p), (unsigned long long)st.protected_gemms,
                         (unsigned long long)st.errors_detected,
                         (unsigned long long)st.errors_corrected,
                         (unsigned long long)st.blocks_recomputed,
                         (unsigned long long)st.encoder_faults);
                int64_t mb = (c.m + p.block_size - 1) / p.block_size;
                int64_t nb = (c.n + p.block_size - 1) / p.block_size;
                /* on demand (not with block lists) a clean run compares the column checksums only */
                const int rows_later = p.rows_on_demand && !p.pea_block_lists;
                GH_CHECK(st.checks == (uint64_t)(p.checksums * (mb * c.n + (rows_later ? 0 : c.m * nb))),
                         "%s: checks %llu", desc(&c, &p), (unsigned long long)st.checks);
                free(out);
                gh_free(&d);
            }
}

/* beta = 0 in device memory over a C full of NaN: the engine learns beta only on the GPU, so
 * it encodes the old C; nothing of it may reach the result or the thresholds (a NaN threshold
 * would flag every checksum: false alarms and recomputed blocks). */
static void nan_c_beta_on_device(void)
{
    uint64_t seed = 500;
    for (int t = 0; t < 2; t++)
        for (int rows = 0; rows < 2; rows++) {
            gh_case c = make_case(t ? BLASFT_TYPE_D : BLASFT_TYPE_S, 'N', 'T', 131, 67, 257, 2, 1.5,
                                  0.0, 1);
            blasft_gpu_params p;
            gh_params(&p, 37, 1 + rows);
            p.rows_on_demand = rows;
            gh_data d;
            gh_make(&d, &c, seed++);
            cudaMemset(d.dC, 0xff, (t ? 8 : 4) * (size_t)(c.ldc * c.n)); /* NaN bit patterns */
            double *out = malloc(8 * (size_t)(c.m * c.n));
            blasft_stats st;
            run(&d, &p, NULL, &st, out);
            int64_t fi = -1, fj = -1, bad = gh_bad_elements(&d, out, &fi, &fj);
            GH_CHECK(bad == 0 && st.errors_detected == 0 && st.blocks_recomputed == 0 &&
                         st.false_alarms == 0,
                     "%s: C of NaN, beta 0 on the device: %lld wrong, detected %llu, recomputed %llu, "
                     "false alarms %llu",
                     desc(&c, &p), (long long)bad, (unsigned long long)st.errors_detected,
                     (unsigned long long)st.blocks_recomputed, (unsigned long long)st.false_alarms);
            /* one planted error: located and corrected, the row side (on demand or not)
             * ignoring the NaN old C too */
            gh_reset_c(&d);
            cudaMemset(d.dC, 0xff, (t ? 8 : 4) * (size_t)(c.ldc * c.n));
            plant pl;
            memset(&pl, 0, sizeof pl);
            pl.n = 1;
            pl.i[0] = 40;
            pl.j[0] = 20;
            pl.value[0] = d.ref[40 + 20 * c.m] + 1000.0;
            cudaMallocHost(&pl.pinned, 8);
            run(&d, &p, &pl, &st, out);
            bad = gh_bad_elements(&d, out, &fi, &fj);
            GH_CHECK(bad == 0 && st.errors_corrected == 1 && st.blocks_recomputed == 0,
                     "%s: C of NaN, beta 0 on the device, one fault: %lld wrong, corrected %llu, "
                     "recomputed %llu",
                     desc(&c, &p), (long long)bad, (unsigned long long)st.errors_corrected,
                     (unsigned long long)st.blocks_recomputed);
            cudaFreeHost(pl.pinned);
            free(out);
            gh_free(&d);
        }
}

typedef struct fault_case {
    const char *name;
    int r;
    int n;
    int64_t i[4], j[4];
    int kind; /* 0: ref + delta, 1: ref * 2^40, 2: NaN, 3: Inf */
    double beta;
    int dev;
    blasft_mode mode;
    blasft_on_error on_error;
    /* expectations */
    int corrected, recomputed, uncorrectable_min, c_right;
} fault_case;

static double *fetch_buf(const gh_case *c, const blasft_gpu_params *p, blasft_gpu_buf b, int typed);

static void faults(void)
{
    static const fault_case fc[] = {
        {"single, 1 checksum", 1, 1, {5}, {9}, 0, 0.0, 0, BLASFT_MODE_CORRECT, BLASFT_ON_ERROR_RECOMPUTE, 1, 0, 0, 1},
        {"single, 2 checksums", 2, 1, {40}, {3}, 0, 0.0, 0, BLASFT_MODE_CORRECT, BLASFT_ON_ERROR_RECOMPUTE, 1, 0, 0, 1},
        {"exponent flip", 1, 1, {63}, {64}, 1, 0.0, 0, BLASFT_MODE_CORRECT, BLASFT_ON_ERROR_RECOMPUTE, 1, 0, 0, 1},
        {"NaN, 2 checksums", 2, 1, {0}, {95}, 2, 0.5, 0, BLASFT_MODE_CORRECT, BLASFT_ON_ERROR_RECOMPUTE, 1, 0, 0, 1},
        {"Inf, beta on device", 1, 1, {70}, {70}, 3, 0.5, 1, BLASFT_MODE_CORRECT, BLASFT_ON_ERROR_RECOMPUTE, 1, 0, 0, 1},
        {"two in a block, 1 checksum", 1, 2, {2, 10}, {4, 20}, 0, 0.0, 0, BLASFT_MODE_CORRECT, BLASFT_ON_ERROR_RECOMPUTE, 0, 1, 0, 1},
        {"two in a block, old C kept", 1, 2, {2, 10}, {4, 20}, 0, 0.75, 0, BLASFT_MODE_CORRECT, BLASFT_ON_ERROR_RECOMPUTE, 0, 1, 0, 1},
        {"two in a block, extended", 2, 2, {2, 10}, {4, 20}, 0, 0.0, 0, BLASFT_MODE_CORRECT, BLASFT_ON_ERROR_RECOMPUTE, 2, 0, 0, 1},
        {"two in one row, extended", 2, 2, {7, 7}, {1, 30}, 0, 0.0, 0, BLASFT_MODE_CORRECT, BLASFT_ON_ERROR_RECOMPUTE, 0, 1, 0, 1},
        {"four blocks", 1, 4, {1, 40, 70, 90}, {1, 40, 70, 5}, 0, 0.0, 0, BLASFT_MODE_CORRECT, BLASFT_ON_ERROR_RECOMPUTE, 4, 0, 0, 1},
        {"detect only", 1, 1, {5}, {9}, 0, 0.0, 0, BLASFT_MODE_DETECT, BLASFT_ON_ERROR_RECOMPUTE, 0, 0, 1, 0},
        {"report uncorrectable", 1, 2, {2, 10}, {4, 20}, 0, 0.0, 0, BLASFT_MODE_CORRECT, BLASFT_ON_ERROR_REPORT, 0, 0, 1, 0},
    };
    uint64_t seed = 1000;
    for (int od = 0; od < 2; od++)
    for (int t = 0; t < 2; t++)
        for (size_t f = 0; f < sizeof fc / sizeof fc[0]; f++) {
            const fault_case *x = &fc[f];
            gh_case c = make_case(t ? BLASFT_TYPE_D : BLASFT_TYPE_S, f % 2 ? 'T' : 'N',
                                  f % 3 ? 'N' : 'T', 100, 96, 77, 1, 1.25, x->beta, x->dev);
            blasft_gpu_params p;
            gh_params(&p, 32, x->r);
            p.mode = x->mode;
            p.on_error = x->on_error;
            /* S with block lists, D with vector lists; then both with the row side on demand */
            p.pea_block_lists = t == 0 && !od;
            p.rows_on_demand = od;
            blasft_gpu_set_schedule(ctx, (int)(f + t) % 5);
            gh_data d;
            gh_make(&d, &c, seed++);
            plant pl;
            memset(&pl, 0, sizeof pl);
            cudaMallocHost(&pl.pinned, 8 * MAX_FAULTS);
            pl.n = x->n;
            for (int q = 0; q < x->n; q++) {
                double r = d.ref[x->i[q] + x->j[q] * c.m];
                pl.i[q] = x->i[q];
                pl.j[q] = x->j[q];
                pl.value[q] = x->kind == 0   ? r + 0.01 * (fabs(r) + 1.0) * (q + 1)
                              : x->kind == 1 ? r * ldexp(1.0, 40) + 1.0
                              : x->kind == 2 ? NAN
                                             : INFINITY;
            }
            double *out = malloc(8 * (size_t)(c.m * c.n));
            blasft_stats st;
            run(&d, &p, &pl, &st, out);
            const char *ty = od ? (t ? "D rows on demand" : "S rows on demand") : t ? "D" : "S";
            if (vector_c)
                ty = od ? (t ? "D rows on demand, C a vector" : "S rows on demand, C a vector")
                        : t ? "D, C a vector" : "S, C a vector";
            /* planted elements: corrected ones carry the checksum's rounding error, a few times
             * the element's own; the others must be untouched by the correction */
            int planted_right = 0, planted_kept = 0;
            for (int q = 0; q < x->n; q++) {
                int64_t e = x->i[q] + x->j[q] * c.m;
                const double typed = t ? pl.value[q] : (double)(float)pl.value[q];
                planted_right += fabs(out[e] - d.ref[e]) <= 64.0 * d.bound[e];
                planted_kept += out[e] == typed || (out[e] != out[e] && typed != typed);
                out[e] = d.ref[e];
            }
            int64_t bad = gh_bad_elements(&d, out, NULL, NULL);
            GH_CHECK(bad == 0, "%s %s: %lld elements besides the planted ones wrong", ty, x->name,
                     (long long)bad);
            if (x->c_right)
                GH_CHECK(planted_right == x->n, "%s %s: %d of %d planted errors corrected", ty,
                         x->name, planted_right, x->n);
            else
                GH_CHECK(planted_kept == x->n, "%s %s: %d of %d planted errors left as they were",
                         ty, x->name, planted_kept, x->n);
            GH_CHECK(st.errors_detected >= 1, "%s %s: nothing detected", ty, x->name);
            GH_CHECK(st.errors_corrected == (uint64_t)x->corrected &&
                         st.blocks_recomputed == (uint64_t)x->recomputed &&
                         st.uncorrectable >= (uint64_t)x->uncorrectable_min,
                     "%s %s: corrected %llu (want %d) recomputed %llu (want %d) uncorrectable %llu",
                     ty, x->name, (unsigned long long)st.errors_corrected, x->corrected,
                     (unsigned long long)st.blocks_recomputed, x->recomputed,
                     (unsigned long long)st.uncorrectable);
            /* the column thresholds, which the correction reads, are all still in place after
             * the fault path (the data are random: none is 0) */
            int64_t ne = 0;
            const int64_t lost = gh_thresholds_lost(ctx, c.t, c.m, c.n, c.k, &p, &ne);
            GH_CHECK(lost == 0,
                     "%s %s: %lld of %lld column thresholds 0 or not finite after the fault path "
                     "(-1: not fetched)",
                     ty, x->name, (long long)lost, (long long)ne);
            cudaFreeHost(pl.pinned);
            free(out);
            gh_free(&d);
        }
}

/* Buffer b of the last protected GEMM in double (typed: of the GEMM's type). */
static double wt(int w, int i, int bs) { return w == 0 ? 1.0 : blasft_weight(BLASFT_W_LINEAR, i, bs); }

static double *fetch_buf(const gh_case *c, const blasft_gpu_params *p, blasft_gpu_buf b, int typed)
{
    size_t cap = 8 * (size_t)(c->k * (c->m + c->n) * 2 + c->m * c->n * 2 + 64);
    void *raw = malloc(cap);
    int64_t n = blasft_gpu_debug_fetch(ctx, c->t, c->m, c->n, c->k, p, b, raw);
    GH_CHECK(n >= 0, "fetch of buffer %d failed", (int)b);
    double *out = malloc(8 * (size_t)(n > 0 ? n : 1));
    for (int64_t i = 0; i < n; i++)
        out[i] = typed && c->t == BLASFT_TYPE_S ? (double)((float *)raw)[i] : ((double *)raw)[i];
    free(raw);
    return out;
}

/* The row side on demand against the eager one: the same GEMM and planted fault run with every
 * block's row side and with the flagged blocks' only. For the flagged block the row buffers must
 * agree (op(B)'s checksums and C's row sums to a few units of rounding, the references far within
 * the threshold, the thresholds themselves), the outcome must be the same correction, and the
 * checks counted the column checksums plus the flagged block's rows. */
static void rows_on_demand_agrees(void)
{
    static const struct {
        char ta, tb;
        int64_t m, n, k;
        int bs, r;
        double beta;
        int dev;
    } cs[] = {
        {'N', 'N', 300, 200, 129, 64, 1, 0.0, 0},
        {'T', 'N', 257, 131, 67, 32, 2, 0.5, 1},
        {'N', 'T', 128, 300, 1, 128, 2, 0.0, 0},
        {'T', 'T', 97, 61, 300, 50, 1, 1.0, 0},
        {'N', 'N', 520, 515, 260, 256, 2, 0.0, 0},
        {'T', 'N', 600, 700, 50, 300, 2, 0.0, 0}, /* BS > 256: the two-pass check */
    };
    uint64_t seed = 3000;
    for (int t = 0; t < 2; t++)
        for (size_t x = 0; x < sizeof cs / sizeof cs[0]; x++, seed++) {
            gh_case c = make_case(t ? BLASFT_TYPE_D : BLASFT_TYPE_S, cs[x].ta, cs[x].tb, cs[x].m,
                                  cs[x].n, cs[x].k, 2, -1.5, cs[x].beta, cs[x].dev);
            const int bs = cs[x].bs, r = cs[x].r;
            const int64_t m = c.m, n = c.n, k = c.k, mb = (m + bs - 1) / bs, nb = (n + bs - 1) / bs;
            const int64_t fi = m * 2 / 3, fj = n / 2, I = fi / bs, J = fj / bs;
            const int rows_t = (int)(m - I * bs < bs ? m - I * bs : bs);
            const double u = t ? ldexp(1.0, -53) : ldexp(1.0, -24);
            double *buf[2][4], *hA = NULL, *hB = NULL, *hC = NULL, *hC0 = NULL;
            blasft_stats st[2];
            const char *ty = t ? "D" : "S";
            for (int od = 0; od < 2; od++) {
                blasft_gpu_params p;
                gh_params(&p, bs, r);
                p.rows_on_demand = od;
                gh_data d;
                gh_make(&d, &c, seed);
                plant pl;
                memset(&pl, 0, sizeof pl);
                cudaMallocHost(&pl.pinned, 8 * MAX_FAULTS);
                pl.n = 1;
                pl.i[0] = fi;
                pl.j[0] = fj;
                const double ref = d.ref[fi + fj * m];
                pl.value[0] = ref + 0.01 * (fabs(ref) + 1.0);
                double *out = malloc(8 * (size_t)(m * n));
                run(&d, &p, &pl, &st[od], out);
                GH_CHECK(fabs(out[fi + fj * m] - ref) <= 64.0 * d.bound[fi + fj * m],
                         "%s case %zu rows %s: planted error not corrected", ty, x,
                         od ? "flagged" : "all");
                out[fi + fj * m] = ref;
                GH_CHECK(gh_bad_elements(&d, out, NULL, NULL) == 0,
                         "%s case %zu rows %s: elements besides the planted one wrong", ty, x,
                         od ? "flagged" : "all");
                buf[od][0] = fetch_buf(&c, &p, BLASFT_GPU_BUF_BCS, 1);
                buf[od][1] = fetch_buf(&c, &p, BLASFT_GPU_BUF_CRS_REF, 1);
                buf[od][2] = fetch_buf(&c, &p, BLASFT_GPU_BUF_CRS_REC, 0);
                buf[od][3] = fetch_buf(&c, &p, BLASFT_GPU_BUF_CRS_EPS, 0);
                if (od == 0) { /* op(A), op(B) and C (as checked) for the rounding bounds */
                    hA = malloc(8 * (size_t)(m * k > 0 ? m * k : 1));
                    hB = malloc(8 * (size_t)(k * n > 0 ? k * n : 1));
                    for (int64_t i = 0; i < m; i++)
                        for (int64_t l = 0; l < k; l++)
                            hA[i + l * m] = c.ta == 'N' ? d.A[i + l * c.lda] : d.A[l + i * c.lda];
                    for (int64_t l = 0; l < k; l++)
                        for (int64_t j = 0; j < n; j++)
                            hB[l + j * k] = c.tb == 'N' ? d.B[l + j * c.ldb] : d.B[j + l * c.ldb];
                    hC = out;
                    hC[fi + fj * m] = pl.value[0];
                    hC0 = malloc(8 * (size_t)(c.ldc * n));
                    memcpy(hC0, d.C0, 8 * (size_t)(c.ldc * n));
                    out = NULL;
                }
                cudaFreeHost(pl.pinned);
                free(out);
                gh_free(&d);
            }
            GH_CHECK(st[0].errors_corrected == 1 && st[1].errors_corrected == 1 &&
                         st[0].blocks_recomputed == 0 && st[1].blocks_recomputed == 0 &&
                         st[1].encoder_faults == 0,
                     "%s case %zu: corrected %llu / %llu, recomputed %llu / %llu", ty, x,
                     (unsigned long long)st[0].errors_corrected,
                     (unsigned long long)st[1].errors_corrected,
                     (unsigned long long)st[0].blocks_recomputed,
                     (unsigned long long)st[1].blocks_recomputed);
            GH_CHECK(st[0].checks == (uint64_t)(r * (mb * n + m * nb)) &&
                         st[1].checks == (uint64_t)(r * (mb * n + rows_t)),
                     "%s case %zu: checks %llu (all) / %llu (flagged)", ty, x,
                     (unsigned long long)st[0].checks, (unsigned long long)st[1].checks);
            /* our sums are compensated, but each weighted term is rounded once: a difference up to
             * 2^-50 of the sum of |terms| is rounding, not a different value */
            int64_t bad_b = 0, bad_ref = 0, bad_rec = 0, bad_eps = 0;
            double worst_ref = 0.0; /* largest |reference difference| / its rounding bound */
            for (int w = 0; w < r; w++) {
                for (int64_t l = 0; l < k; l++) {
                    const double a = buf[0][0][l + (J * r + w) * k], b = buf[1][0][l + (J * r + w) * k];
                    double mag = 0.0;
                    for (int64_t j = J * bs; j < n && j < (J + 1) * bs; j++)
                        mag += fabs(wt(w, (int)(j - J * bs), bs) * hB[l + j * k]);
                    bad_b += !(fabs(a - b) <= 2.0 * u * fabs(a) + ldexp(mag, -50));
                }
                for (int64_t i = I * bs; i < I * bs + rows_t; i++) {
                    const int64_t e = i + (J * r + w) * m;
                    const double eps = buf[0][3][e];
                    /* the eager reference is a cuBLAS GEMM in the data type, the one on demand is
                     * accumulated in double: each within gamma_(k+2) |alpha| sum_l |a_il Bcs_l|
                     * (+ the rounding of the beta term) of the exact value */
                    double mass = 0.0;
                    for (int64_t l = 0; l < k; l++)
                        mass += fabs(hA[i + l * m] * buf[0][0][l + (J * r + w) * k]);
                    /* the old C's part: eager, its checksum rounded to the type before beta;
                     * on demand, in double from the kept old C */
                    double omag = 0.0;
                    for (int64_t j = J * bs; j < n && j < (J + 1) * bs && c.beta != 0.0; j++)
                        omag += fabs(wt(w, (int)(j - J * bs), bs) * hC0[i + j * c.ldc]);
                    const double tol = 2.0 * (double)(k + 2) * u * 1.5 * mass + 4.0 * u * fabs(buf[0][1][e]) +
                                       2.0 * u * fabs(c.beta) * omag;
                    const double dr = fabs(buf[0][1][e] - buf[1][1][e]) / tol;
                    worst_ref = dr > worst_ref || dr != dr ? dr : worst_ref;
                    bad_ref += !(dr <= 1.0);
                    double cmag = 0.0;
                    for (int64_t j = J * bs; j < n && j < (J + 1) * bs; j++)
                        cmag += fabs(wt(w, (int)(j - J * bs), bs) * hC[i + j * m]);
                    bad_rec += !(fabs(buf[0][2][e] - buf[1][2][e]) <=
                                 4.0 * ldexp(1.0, -53) * fabs(buf[0][2][e]) + ldexp(cmag, -50));
                    bad_eps += !(fabs(eps - buf[1][3][e]) <= 1e-6 * eps);
                }
            }
            GH_CHECK(bad_b == 0 && bad_ref == 0 && bad_rec == 0 && bad_eps == 0,
                     "%s case %zu: block (%lld,%lld) differs on demand: %lld checksums of B, %lld "
                     "references (largest difference %.3g of their rounding bound), %lld row sums, "
                     "%lld thresholds",
                     ty, x, (long long)I, (long long)J, (long long)bad_b, (long long)bad_ref, worst_ref,
                     (long long)bad_rec, (long long)bad_eps);
            for (int od = 0; od < 2; od++)
                for (int q = 0; q < 4; q++)
                    free(buf[od][q]);
            free(hA);
            free(hB);
            free(hC);
            free(hC0);
        }
}

/* Prepared operands (blasft_gpu_prepare): a GEMM that reads them gets the same column references
 * and thresholds bit for bit as one that prepares its operands itself (so AcsT and every list in
 * them are the engine's), a right and clean result, a planted fault corrected; operands prepared
 * from other data flag (the engine does read them) and the result is still right. */
static void prepared_operands(void)
{
    uint64_t seed = 5000;
    for (int t = 0; t < 2; t++)
        for (int r = 1; r <= 2; r++, seed += 2) {
            gh_case c = make_case(t ? BLASFT_TYPE_D : BLASFT_TYPE_S, 'N', 'N', 300, 200, 150, 1, 1.25,
                                  r == 2 ? 0.5 : 0.0, 0);
            const int64_t m = c.m, n = c.n, k = c.k;
            blasft_gpu_params p;
            gh_params(&p, 64, r);
            p.rows_on_demand = 1;
            const char *ty = t ? "D" : "S";
            gh_data d, other;
            gh_make(&d, &c, seed);
            gh_make(&other, &c, seed + 1);
            double *out = malloc(8 * (size_t)(m * n));
            blasft_stats st;
            run_prep_a = run_prep_b = NULL;
            run(&d, &p, NULL, &st, out);
            double *ref0 = fetch_buf(&c, &p, BLASFT_GPU_BUF_CCS_REF, 1);
            double *eps0 = fetch_buf(&c, &p, BLASFT_GPU_BUF_CCS_EPS, 0);
            const size_t na = blasft_gpu_prep_bytes(0, c.t, m, k, &p), nb = blasft_gpu_prep_bytes(1, c.t, k, n, &p);
            GH_CHECK(na > 0 && nb > 0 && blasft_gpu_prep_bytes(2, c.t, m, k, &p) == 0,
                     "%s: prep bytes %zu %zu", ty, na, nb);
            void *pa = NULL, *pb = NULL, *pa_other = NULL;
            GH_CHECK(cudaMalloc(&pa, na) == cudaSuccess && cudaMalloc(&pb, nb) == cudaSuccess &&
                         cudaMalloc(&pa_other, na) == cudaSuccess,
                     "%s: cudaMalloc of the prepared operands", ty);
            GH_CHECK(blasft_gpu_prepare(NULL, 0, c.t, m, k, d.dA, c.lda, &p, pa) == 0 &&
                         blasft_gpu_prepare(NULL, 1, c.t, k, n, d.dB, c.ldb, &p, pb) == 0 &&
                         blasft_gpu_prepare(NULL, 0, c.t, m, k, other.dA, c.lda, &p, pa_other) == 0,
                     "%s: blasft_gpu_prepare failed", ty);
            GH_CHECK(blasft_gpu_prepare(NULL, 0, c.t, m, k, d.dA, m - 1, &p, pa) == -1,
                     "%s: ld < rows accepted", ty);
            gh_sync();
            /* with both prepared: the same references and thresholds, clean */
            run_prep_a = pa;
            run_prep_b = pb;
            gh_reset_c(&d);
            run(&d, &p, NULL, &st, out);
            double *ref1 = fetch_buf(&c, &p, BLASFT_GPU_BUF_CCS_REF, 1);
            double *eps1 = fetch_buf(&c, &p, BLASFT_GPU_BUF_CCS_EPS, 0);
            const int64_t mb = (m + 63) / 64, ncs = r * mb * n;
            int64_t diff = 0;
            for (int64_t e = 0; e < ncs; e++)
                diff += memcmp(&ref0[e], &ref1[e], 8) != 0 || memcmp(&eps0[e], &eps1[e], 8) != 0;
            GH_CHECK(diff == 0, "%s R=%d: %lld column references or thresholds differ with prepared "
                     "operands", ty, r, (long long)diff);
            GH_CHECK(gh_bad_elements(&d, out, NULL, NULL) == 0 && st.errors_detected == 0 &&
                         st.false_alarms == 0 && st.encoder_faults == 0,
                     "%s R=%d prepared: wrong elements or flagged (detected %llu)", ty, r,
                     (unsigned long long)st.errors_detected);
            /* a planted fault, corrected */
            plant pl;
            memset(&pl, 0, sizeof pl);
            cudaMallocHost(&pl.pinned, 8 * MAX_FAULTS);
            pl.n = 1;
            pl.i[0] = 123;
            pl.j[0] = 77;
            pl.value[0] = d.ref[123 + 77 * m] + 0.5;
            gh_reset_c(&d);
            run(&d, &p, &pl, &st, out);
            GH_CHECK(gh_bad_elements(&d, out, NULL, NULL) == 0 && st.errors_corrected == 1,
                     "%s R=%d prepared: planted fault not corrected (corrected %llu)", ty, r,
                     (unsigned long long)st.errors_corrected);
            /* op(A) prepared from other data: flagged, and still right */
            run_prep_a = pa_other;
            gh_reset_c(&d);
            run(&d, &p, NULL, &st, out);
            GH_CHECK(st.errors_detected + st.false_alarms > 0 && gh_bad_elements(&d, out, NULL, NULL) == 0,
                     "%s R=%d: operands prepared from other data went unnoticed (detected %llu, "
                     "false alarms %llu)",
                     ty, r, (unsigned long long)st.errors_detected, (unsigned long long)st.false_alarms);
            run_prep_a = run_prep_b = NULL;
            cudaFreeHost(pl.pinned);
            cudaFree(pa);
            cudaFree(pb);
            cudaFree(pa_other);
            free(ref0); free(ref1); free(eps0); free(eps1);
            free(out);
            gh_free(&d);
            gh_free(&other);
        }
}

static void edge_shapes(void)
{
    /* m = 0: nothing happens; k = 0: C = beta C, unprotected */
    gh_case c = make_case(BLASFT_TYPE_D, 'N', 'N', 9, 8, 0, 0, 1.0, 0.5, 0);
    blasft_gpu_params p;
    gh_params(&p, 32, 1);
    gh_data d;
    gh_make(&d, &c, 77);
    double *out = malloc(8 * 72);
    blasft_stats st;
    run(&d, &p, NULL, &st, out);
    GH_CHECK(gh_bad_elements(&d, out, NULL, NULL) == 0, "k = 0: C != beta C");
    GH_CHECK(st.unprotected_gemms == 1, "k = 0 counted %llu unprotected",
             (unsigned long long)st.unprotected_gemms);
    blasft_gpu_gemm g = gh_desc(&d);
    g.m = 0;
    GH_CHECK(blasft_gpu_gemm_run(ctx, &g, &p) == 0, "m = 0 must be a no-op");
    g = gh_desc(&d);
    g.lda = 3; /* < m */
    GH_CHECK(blasft_gpu_gemm_run(ctx, &g, &p) == -1, "lda < m must be refused");
    free(out);
    gh_free(&d);
}

/* The entry for the host dispatch: host operands, GPU protected GEMM, result back in place. */
static void host_entry(void)
{
    for (int t = 0; t < 2; t++) {
        gh_case c = make_case(t ? BLASFT_TYPE_D : BLASFT_TYPE_S, 'T', 'N', 150, 77, 91, 2, 0.5, -1.0, 0);
        gh_data d;
        gh_make(&d, &c, 4242 + t);
        size_t ts = t ? 8 : 4;
        void *hc = malloc(ts * (size_t)(c.ldc * c.n));
        memcpy(hc, d.hC0, ts * (size_t)(c.ldc * c.n));
        blasft_gemm g;
        memset(&g, 0, sizeof g);
        g.type = c.t;
        g.transa = c.ta;
        g.transb = c.tb;
        g.m = c.m; g.n = c.n; g.k = c.k;
        g.a = d.hA; g.lda = c.lda;
        g.b = d.hB; g.ldb = c.ldb;
        g.c = hc; g.ldc = c.ldc;
        g.alpha[0] = c.alpha;
        g.beta[0] = c.beta;
        g.routine = "test_host_entry";
        blasft_config cfg;
        blasft_get_config(&cfg);
        cfg.mode = BLASFT_MODE_CORRECT;
        cfg.block_size = 32;
        int rc = blasft_gpu_run_host_gemm(&g, &cfg);
        GH_CHECK(rc == 0, "blasft_gpu_run_host_gemm returned %d", rc);
        double *out = malloc(8 * (size_t)(c.m * c.n));
        for (int64_t j = 0; j < c.n; j++)
            for (int64_t i = 0; i < c.m; i++)
                out[i + j * c.m] = t ? ((double *)hc)[i + j * c.ldc] : ((float *)hc)[i + j * c.ldc];
        GH_CHECK(gh_bad_elements(&d, out, NULL, NULL) == 0, "%c host entry: wrong result", t ? 'D' : 'S');
        /* rows between m and ldc must be left alone */
        double pad = t ? ((double *)hc)[c.m] : ((float *)hc)[c.m];
        GH_CHECK(pad != pad, "%c host entry wrote past m", t ? 'D' : 'S');
        free(out);
        free(hc);
        gh_free(&d);
    }
}

/* Structured data: A and B constant (values with full mantissas), so every element of C carries
 * the same rounding and the checksums' syndromes add up linearly: blocks flagged by rounding are
 * computed again and compared with the GEMM's, and end as false alarms, not errors (with
 * on_error=abort the program goes on); C equals k a b within the worst-case rounding. S and D,
 * 1 and 2 checksums, BS 64 and 128; recompute, report, abort, detect mode. */
/* C = A B of n x n device matrices (ld n), FP64 (is_double) or FP32, alpha 1, beta 0 */
static blasft_gpu_gemm square_nn(int is_double, int64_t n, void *dA, void *dB, void *dC,
                                 const char *routine)
{
    static const double one = 1.0, zero = 0.0;
    static const float onef = 1.0f, zerof = 0.0f;
    blasft_gpu_gemm g;
    memset(&g, 0, sizeof g);
    g.type = is_double ? BLASFT_TYPE_D : BLASFT_TYPE_S;
    g.transa = g.transb = 'N';
    g.m = g.n = g.k = n;
    g.alpha = is_double ? (const void *)&one : (const void *)&onef;
    g.beta = is_double ? (const void *)&zero : (const void *)&zerof;
    g.a = dA;
    g.lda = n;
    g.b = dB;
    g.ldb = n;
    g.c = dC;
    g.ldc = n;
    g.routine = routine;
    return g;
}

/* count elements of device memory d (double if is_double, else float) into out as doubles */
static void download_doubles(double *out, const void *d, int64_t count, int is_double)
{
    if (is_double) {
        cudaMemcpy(out, d, 8 * (size_t)count, cudaMemcpyDeviceToHost);
        return;
    }
    float *f = malloc(4 * (size_t)count);
    cudaMemcpy(f, d, 4 * (size_t)count, cudaMemcpyDeviceToHost);
    for (int64_t e = 0; e < count; e++)
        out[e] = f[e];
    free(f);
}

/* C = alpha A B^T + beta C of column-major device matrices, A m x k (ld m), B n x k (ld n), C
 * m x n (ld m), FP64 (is_double) or FP32; scalars in device memory where dev */
static blasft_gpu_gemm small_nt(int is_double, int64_t m, int64_t n, int64_t k, const void *alpha,
                                const void *beta, int dev, void *dA, void *dB, void *dC,
                                const char *routine)
{
    blasft_gpu_gemm g;
    memset(&g, 0, sizeof g);
    g.type = is_double ? BLASFT_TYPE_D : BLASFT_TYPE_S;
    g.transa = 'N';
    g.transb = 'T';
    g.m = m; g.n = n; g.k = k;
    g.alpha = alpha;
    g.beta = beta;
    g.scalars_on_device = dev;
    g.a = dA; g.lda = m;
    g.b = dB; g.ldb = n;
    g.c = dC; g.ldc = m;
    g.routine = routine;
    return g;
}

/* g protected with BS bs, one checksum, rows on demand, PEA or PROJ, S promoted or not: the
 * counters' change */
static blasft_stats run_small(const blasft_gpu_gemm *g, int bs, int proj, int promoted,
                              const char *what)
{
    blasft_gpu_params p;
    gh_params(&p, bs, 1);
    p.proj = proj;
    p.promote = promoted;
    p.rows_on_demand = 1;
    return gh_run_counted(ctx, g, &p, what);
}

/* sum_l a(i, l) b(j, l) of small_nt's operands as the device sees them (FP32 data rounded through
 * float), in long double; *mass (if given): sum_l |a(i, l) b(j, l)| */
static long double nt_dot(const double *a, const double *b, int64_t m, int64_t n, int64_t k,
                          int64_t i, int64_t j, int is_double, long double *mass)
{
    long double s = 0, ms = 0;
    for (int64_t l = 0; l < k; l++) {
        const double x = is_double ? a[i + l * m] : (double)(float)a[i + l * m];
        const double y = is_double ? b[j + l * n] : (double)(float)b[j + l * n];
        s += (long double)x * y;
        ms += fabsl((long double)x * y);
    }
    if (mass)
        *mass = ms;
    return s;
}

/* plain cuBLAS's C for g (m x n, ld m) on the old C hc0 (its type's values, uploaded again into
 * g's C), as doubles in a new array */
static double *plain_small(const blasft_gpu_gemm *g, const void *hc0, int is_double)
{
    const int64_t count = g->m * g->n;
    double *pc = malloc(8 * (size_t)count);
    cudaMemcpy(g->c, hc0, (is_double ? 8 : 4) * (size_t)count, cudaMemcpyHostToDevice);
    GH_CHECK(blasft_gpu_gemm_plain(ctx, g) == 0, "%s: plain GEMM failed", g->routine);
    download_doubles(pc, g->c, count, is_double);
    return pc;
}

/* Nearly constant operands (x <- x/2 + shift repeated, the offload benchmark's "fresh" data after
 * eight rewrites: random parts 2^-8 of the shift): their rounding errors are correlated, so single
 * elements can be located at their threshold without a fault. A located element is corrected only
 * where its computation again is apart beyond rounding: no error may be reported and C must stay
 * within rounding of the reference; blocks flagged this way count as false alarms. */
static void near_constant(void)
{
    const int64_t n = 512;
    for (int t = 0; t < 2; t++) {
        const size_t ts = t ? 8 : 4;
        double *a = malloc(8 * (size_t)(n * n)), *b = malloc(8 * (size_t)(n * n));
        void *ha = malloc(ts * (size_t)(n * n)), *hb = malloc(ts * (size_t)(n * n));
        double *hc = malloc(8 * (size_t)(n * n));
        dg_rng rng;
        dg_seed(&rng, 77 + (uint64_t)t);
        for (int64_t e = 0; e < n * n; e++) {
            a[e] = dg_range(&rng, -1.0, 1.0);
            b[e] = dg_range(&rng, -1.0, 1.0);
        }
        void *dA, *dB, *dC;
        cudaMalloc(&dA, ts * (size_t)(n * n));
        cudaMalloc(&dB, ts * (size_t)(n * n));
        cudaMalloc(&dC, ts * (size_t)(n * n));
        uint64_t flagged = 0;
        for (int call = 0; call < 14; call++) {
            for (int64_t e = 0; e < n * n; e++) {
                a[e] = a[e] * 0.5 + 1e-3 * (call + 2);
                b[e] = b[e] * 0.5 - 1e-3 * (call + 2);
                if (!t) { /* the values the GEMM sees */
                    a[e] = ((float *)ha)[e] = (float)a[e];
                    b[e] = ((float *)hb)[e] = (float)b[e];
                } else {
                    ((double *)ha)[e] = a[e];
                    ((double *)hb)[e] = b[e];
                }
            }
            if (call < 6)
                continue;
            cudaMemcpy(dA, ha, ts * (size_t)(n * n), cudaMemcpyHostToDevice);
            cudaMemcpy(dB, hb, ts * (size_t)(n * n), cudaMemcpyHostToDevice);
            blasft_gpu_gemm g = square_nn(t, n, dA, dB, dC, "near_constant");
            blasft_gpu_params p;
            gh_params(&p, 256, 1);
            p.rows_on_demand = call % 2;
            blasft_stats dl = gh_run_counted(ctx, &g, &p, "near-constant run");
            flagged += dl.false_alarms;
            download_doubles(hc, dC, n * n, t);
            const double u = t ? 0x1p-53 : 0x1p-24;
            int64_t bad = 0;
            for (int64_t j = 0; j < n; j += 7) /* a sample of columns against double dots */
                for (int64_t i = 0; i < n; i++) {
                    double s = 0.0, mass = 0.0;
                    for (int64_t l = 0; l < n; l++) {
                        s += a[i + l * n] * b[l + j * n];
                        mass += fabs(a[i + l * n] * b[l + j * n]);
                    }
                    bad += !(fabs(hc[i + j * n] - s) <= 2.0 * (n + 2) * u * mass);
                }
            GH_CHECK(bad == 0 && dl.errors_detected == 0 && dl.errors_corrected == 0 &&
                         dl.blocks_recomputed == 0 && dl.uncorrectable == 0,
                     "near-constant %c call %d rows %s: %lld elements off, detected %llu corrected "
                     "%llu recomputed %llu (false alarms %llu)",
                     t ? 'D' : 'S', call, p.rows_on_demand ? "flagged" : "all", (long long)bad,
                     (unsigned long long)dl.errors_detected, (unsigned long long)dl.errors_corrected,
                     (unsigned long long)dl.blocks_recomputed, (unsigned long long)dl.false_alarms);
        }
        printf("near-constant %c: %llu blocks flagged by rounding, false alarms\n", t ? 'D' : 'S',
               (unsigned long long)flagged);
        cudaFree(dA);
        cudaFree(dB);
        cudaFree(dC);
        free(a); free(b); free(ha); free(hb); free(hc);
    }
}

/* FP64 data of extreme magnitude (2^-280 .. 2^450 per operand): the thresholds' sums of squares
 * leave the double range there (an infinite threshold from about 2^270 on, a zero one from about
 * 2^-250 down). Such a block must still be decided by the worst-case bounds: a planted error
 * detected and fixed, a clean GEMM's result left within rounding and nothing reported as an
 * error (blocks flagged this way count as false alarms). PEA and PROJ, both row modes. */
static void extreme_magnitudes(void)
{
    const int64_t n = 256;
    static const int scales[] = {-280, -200, 0, 300, 450};
    double *a = malloc(8 * (size_t)(n * n)), *b = malloc(8 * (size_t)(n * n));
    double *hc = malloc(8 * (size_t)(n * n)), *ref = malloc(8 * (size_t)(n * n));
    double *mass = malloc(8 * (size_t)(n * n));
    void *dA, *dB, *dC, *pinned;
    cudaMalloc(&dA, 8 * (size_t)(n * n));
    cudaMalloc(&dB, 8 * (size_t)(n * n));
    cudaMalloc(&dC, 8 * (size_t)(n * n));
    cudaMallocHost(&pinned, 8);
    for (size_t sc = 0; sc < sizeof scales / sizeof scales[0]; sc++) {
        dg_rng rng;
        dg_seed(&rng, 500 + (uint64_t)sc);
        for (int64_t e = 0; e < n * n; e++) {
            a[e] = ldexp(dg_range(&rng, -1.0, 1.0), scales[sc]);
            b[e] = ldexp(dg_range(&rng, -1.0, 1.0), scales[sc]);
        }
        for (int64_t j = 0; j < n; j++)
            for (int64_t i = 0; i < n; i++) {
                hp_dd s = hp_from(0.0);
                double m = 0;
                for (int64_t l = 0; l < n; l++) {
                    s = hp_add_prod(s, a[i + l * n], b[l + j * n]);
                    m += fabs(a[i + l * n] * b[l + j * n]);
                }
                ref[i + j * n] = hp_to_double(s);
                mass[i + j * n] = m;
            }
        cudaMemcpy(dA, a, 8 * (size_t)(n * n), cudaMemcpyHostToDevice);
        cudaMemcpy(dB, b, 8 * (size_t)(n * n), cudaMemcpyHostToDevice);
        for (int v = 0; v < 8; v++) {
            const int proj = v & 1, od = (v >> 1) & 1, planted = v >> 2;
            blasft_gpu_gemm g = square_nn(1, n, dA, dB, dC, "extreme_magnitudes");
            blasft_gpu_params p;
            gh_params(&p, 64, 1);
            p.proj = proj;
            p.rows_on_demand = od;
            /* the planted error: C(37, 101) off by 1 % of its magnitude */
            const int64_t pe = 37 + 101 * n;
            plant pl;
            memset(&pl, 0, sizeof pl);
            pl.n = 1;
            pl.i[0] = 37;
            pl.j[0] = 101;
            pl.value[0] = ref[pe] + 0.01 * mass[pe];
            pl.pinned = pinned;
            gh_data d; /* plant_hook reads the type, ldc and device C from it */
            memset(&d, 0, sizeof d);
            d.c.t = BLASFT_TYPE_D;
            d.c.ldc = n;
            d.dC = dC;
            pl.d = &d;
            if (planted)
                blasft_gpu_set_fault_hook(ctx, plant_hook, &pl);
            blasft_stats dl = gh_run_counted(ctx, &g, &p, "range-end run");
            blasft_gpu_set_fault_hook(ctx, NULL, NULL);
            download_doubles(hc, dC, n * n, 1);
            int64_t bad = 0;
            for (int64_t e = 0; e < n * n; e++)
                bad += !(fabs(hc[e] - ref[e]) <= 2.0 * (n + 2) * 0x1p-53 * mass[e]);
            const char *what = planted ? "planted" : "clean";
            GH_CHECK(bad == 0, "extreme magnitudes 2^%d %s %s rows %s: %lld elements off", scales[sc],
                     proj ? "proj" : "pea", what, od ? "flagged" : "all", (long long)bad);
            if (planted)
                GH_CHECK(dl.errors_detected >= 1 && dl.errors_corrected + dl.blocks_recomputed >= 1,
                         "extreme magnitudes 2^%d %s planted rows %s: detected %llu corrected %llu "
                         "recomputed %llu",
                         scales[sc], proj ? "proj" : "pea", od ? "flagged" : "all",
                         (unsigned long long)dl.errors_detected, (unsigned long long)dl.errors_corrected,
                         (unsigned long long)dl.blocks_recomputed);
            else
                GH_CHECK(dl.errors_detected == 0 && dl.errors_corrected == 0 &&
                             dl.blocks_recomputed == 0 && dl.uncorrectable == 0,
                         "extreme magnitudes 2^%d %s clean rows %s: detected %llu corrected %llu "
                         "recomputed %llu uncorrectable %llu (false alarms %llu)",
                         scales[sc], proj ? "proj" : "pea", od ? "flagged" : "all",
                         (unsigned long long)dl.errors_detected, (unsigned long long)dl.errors_corrected,
                         (unsigned long long)dl.blocks_recomputed, (unsigned long long)dl.uncorrectable,
                         (unsigned long long)dl.false_alarms);
            if (!planted && (scales[sc] == 0 || scales[sc] == -200))
                GH_CHECK(dl.false_alarms == 0, "extreme magnitudes 2^%d %s clean rows %s: %llu false alarms",
                         scales[sc], proj ? "proj" : "pea", od ? "flagged" : "all",
                         (unsigned long long)dl.false_alarms);
        }
    }
    cudaFree(dA);
    cudaFree(dB);
    cudaFree(dC);
    cudaFreeHost(pinned);
    free(a); free(b); free(hc); free(ref); free(mass);
}

/* Scalars at the edges, as the host engine's test_edge_scalars: k = 0 with alpha NaN (C = beta C,
 * whatever alpha is); alpha 0 over operands whose products overflow, beta 0, an old C of NaN (C
 * all +0: neither the products nor the old C may be read); alpha the type's smallest subnormal
 * (a result of subnormals, where rounding is absolute); alpha 0 over an op(A) holding NaN, beta
 * 0.5 (C = beta C: BLAS does not read A; a program may scale C this way with A unset). S native,
 * S promoted and D; PEA and PROJ; scalars on host and device. A fault-free call reports nothing,
 * not even a false alarm, unless plain cuBLAS's own result is not finite or alpha 0 is in device
 * memory (the checks' references then hold 0 times NaN; the recomputation leaves it out). */
static void edge_scalars(void)
{
    const int64_t m = 40, n = 33;
    for (int t = 0; t < 3; t++) {
        const int dbl = t == 2, promoted = t == 1;
        const size_t ts = dbl ? 8 : 4;
        for (int v = 0; v < 4; v++)
            for (int w = 0; w < 4; w++) {
                const int proj = w & 1, dev = w >> 1;
                const int64_t k = v == 0 ? 0 : 20;
                const double tiny = dbl ? 0x1p-1074 : 0x1p-149;
                const double alpha = v == 0 ? NAN : v == 1 || v == 3 ? 0.0 : tiny;
                const double beta = v == 0 || v == 3 ? 0.5 : 0.0;
                const double scale_a = v == 1 ? 1e30 : 1.0, scale_b = v == 1 ? 2e30 : 1.0;
                dg_rng rng;
                dg_seed(&rng, 900 + (uint64_t)(t * 12 + v * 4 + w));
                const int64_t ka = k > 1 ? k : 1;
                double *a = malloc(8 * (size_t)(m * ka)), *b = malloc(8 * (size_t)(n * ka));
                double *c0 = malloc(8 * (size_t)(m * n)), *hc = malloc(8 * (size_t)(m * n));
                for (int64_t e = 0; e < m * ka; e++)
                    a[e] = scale_a * dg_range(&rng, -1.0, 1.0);
                if (v == 3) /* NaN in op(A)'s rows 3 and 17 */
                    for (int64_t l = 0; l < k; l += 3) {
                        a[3 + l * m] = NAN;
                        a[17 + l * m] = NAN;
                    }
                for (int64_t e = 0; e < n * ka; e++) /* op(B) = B^T: n x k, ld n */
                    b[e] = scale_b * dg_range(&rng, -1.0, 1.0);
                for (int64_t e = 0; e < m * n; e++)
                    c0[e] = v == 1 ? NAN : dg_range(&rng, -1.0, 1.0);
                void *ha = gh_typed_copy(a, m * ka, !dbl), *hb = gh_typed_copy(b, n * ka, !dbl);
                void *hc0 = gh_typed_copy(c0, m * n, !dbl);
                void *dA = gh_upload(ha, ts * (size_t)(m * ka)), *dB = gh_upload(hb, ts * (size_t)(n * ka));
                void *dC = gh_upload(hc0, ts * (size_t)(m * n));
                const float af = (float)alpha, bf = (float)beta;
                const void *hal = dbl ? (const void *)&alpha : (const void *)&af;
                const void *hbe = dbl ? (const void *)&beta : (const void *)&bf;
                void *dal = gh_upload(hal, ts), *dbe = gh_upload(hbe, ts);
                blasft_gpu_gemm g = small_nt(dbl, m, n, k, dev ? dal : hal, dev ? dbe : hbe, dev, dA,
                                             dB, dC, "edge_scalars");
                blasft_stats dl = run_small(&g, 16, proj, promoted, "edge-scalar run");
                download_doubles(hc, dC, m * n, dbl);
                const double u = dbl ? 0x1p-53 : 0x1p-24;
                int64_t bad = 0;
                for (int64_t j = 0; j < n; j++)
                    for (int64_t i = 0; i < m; i++) {
                        const double got = hc[i + j * m];
                        if (v == 0 || v == 3) { /* beta C in the type (c0 holds the typed values) */
                            const double want = beta * (dbl ? c0[i + j * m] : (double)(float)c0[i + j * m]);
                            bad += !(fabs(got - want) <= u * fabs(want));
                        } else if (v == 1) { /* +0 as BLAS; -0 where cuBLAS multiplies by a
                                                * device alpha of 0, as plain cuBLAS does */
                            bad += !(got == 0.0 && (dev || !signbit(got)));
                        } else {
                            const long double s = nt_dot(a, b, m, n, k, i, j, dbl, NULL);
                            bad += !(fabsl(got - tiny * s) <= (k + 2) * 2 * tiny);
                        }
                    }
                /* plain cuBLAS on the same data: with alpha on the device it multiplies by it,
                 * so 0 times overflowed products is NaN there, which the engine finds against
                 * its references and recomputes into the zeros BLAS defines (reported) */
                int64_t plain_nonfinite = 0;
                {
                    double *pc = plain_small(&g, hc0, dbl);
                    for (int64_t e = 0; e < m * n; e++)
                        plain_nonfinite += !isfinite(pc[e]);
                    free(pc);
                }
                const char *what = v == 0   ? "k = 0, alpha NaN"
                                   : v == 1 ? "alpha 0 over overflowing products"
                                   : v == 2 ? "alpha subnormal"
                                            : "alpha 0 over NaN in A";
                const char *tn = t == 0 ? "S" : t == 1 ? "S promoted" : "D";
                GH_CHECK(bad == 0, "edge scalars %s %s %s scalars on %s: %lld elements wrong", tn, what,
                         proj ? "proj" : "pea", dev ? "device" : "host", (long long)bad);
                GH_CHECK(dl.uncorrectable == 0 &&
                             (plain_nonfinite > 0 || (v == 3 && dev) ||
                              dl.errors_detected + dl.errors_corrected +
                                                             dl.blocks_recomputed + dl.false_alarms ==
                                                         0),
                         "edge scalars %s %s %s scalars on %s: detected %llu corrected %llu recomputed "
                         "%llu uncorrectable %llu false alarms %llu",
                         tn, what, proj ? "proj" : "pea", dev ? "device" : "host",
                         (unsigned long long)dl.errors_detected, (unsigned long long)dl.errors_corrected,
                         (unsigned long long)dl.blocks_recomputed, (unsigned long long)dl.uncorrectable,
                         (unsigned long long)dl.false_alarms);
                cudaFree(dA); cudaFree(dB); cudaFree(dC); cudaFree(dal); cudaFree(dbe);
                free(ha); free(hb); free(hc0);
                free(a); free(b); free(c0); free(hc);
            }
    }
}

/* Magnitudes at the ends of the range, as the host engine's test_underflow_before_alpha and
 * test_checksums_overflow: v 0, alpha the smallest subnormal over op(B) of 2^500 (S: 2^60) and
 * beta 1e-300 (1e-30) over an old C of 2^500 (2^60) whose first 20 rows are 0; v 1, alpha 1e300
 * (1e30) over subnormal op(B); v 2, alpha 1e308 (3e38) over a column of op(A) and a row of op(B)
 * in the sign pattern + + - -, k 1, so that elements near the largest number make checksums that
 * overflow. C must be BLAS's and nothing may be reported as an error: the underflowed products'
 * rounding grows with |alpha|, and an overflowed checksum cannot judge its block (false alarms,
 * the second tier's recomputation, are allowed). Then the order of the arithmetic, where plain
 * cuBLAS itself may leave the range while the results are in it: v 3, alpha 1e-300 (1e-30) over
 * op(A) near half the largest number, k 31 (products and their sums beyond the range, alpha
 * times them not); v 4, alpha 1e308 (3e38) over op(A) of +-1..3 and op(B) within +-0.25, k 1
 * (every result at most 0.75 alpha, but alpha op(A) beyond the range). Each element must be
 * BLAS's (the engine corrected cuBLAS's overflow: detections allowed) or plain cuBLAS's (the
 * checks could not see it: references from cuBLAS overflow the same way); nothing
 * uncorrectable. v 5, alpha -0.26 over subnormal op(A) and op(B) near half the largest number,
 * k 31: the recomputation must not scale the subnormal factors down (it did, and wrote values
 * 3e-8 off into C). S native, S promoted and D; PEA and PROJ. */
static void range_ends(void)
{
    const int64_t m = 40, n = 33;
    for (int t = 0; t < 3; t++) {
        const int dbl = t == 2, promoted = t == 1;
        const size_t ts = dbl ? 8 : 4;
        for (int v = 0; v < 6; v++)
            for (int proj = 0; proj < 2; proj++) {
                const int64_t k = v == 2 || v == 4 ? 1 : v == 3 || v == 5 ? 31 : 129;
                const double tiny = dbl ? 0x1p-1074 : 0x1p-149, big = dbl ? 0x1p500 : 0x1p60;
                const double alpha = v == 0   ? tiny
                                     : v == 1 ? (dbl ? 1e300 : 1e30)
                                     : v == 3 ? (dbl ? 1e-300 : 1e-30)
                                     : v == 2 || v == 4 ? (dbl ? 1e308 : 3e38)
                                              : -0.26;
                const double beta = v == 0 ? (dbl ? 1e-300 : 1e-30) : v == 2 ? -0.35 : v == 5 ? -0.67 : 0.0;
                const double half_max = dbl ? 0x1p1023 : 0x1p127;
                dg_rng rng;
                dg_seed(&rng, 950 + (uint64_t)(t * 12 + v * 2 + proj));
                double *a = malloc(8 * (size_t)(m * k)), *b = malloc(8 * (size_t)(n * k));
                double *c0 = malloc(8 * (size_t)(m * n)), *hc = malloc(8 * (size_t)(m * n));
                for (int64_t e = 0; e < m * k; e++) {
                    const double r = dg_range(&rng, 0.0, 1.0), sg = e % 3 ? 1.0 : -1.0;
                    a[e] = v == 2   ? (e % 4 < 2 ? 0.9 : -0.9)
                           : v == 3 ? sg * (0.5 + 0.5 * r) * half_max
                           : v == 4 ? sg * (double)(1 + (int)(r * 3))
                           : v == 5 ? sg * (double)(1 + (int)(r * 1000)) * tiny * (e % 4 ? 1.0 : 1e6)
                                    : 2.0 * r - 1.0;
                }
                for (int64_t e = 0; e < n * k; e++) { /* op(B) = B^T: n x k, ld n */
                    const double r = dg_range(&rng, 0.0, 1.0);
                    b[e] = v == 0   ? (double)((int)(r * 5) - 2) * big
                           : v == 1 ? (double)((int)(r * 2001) - 1000) * tiny
                           : v == 2 ? (e % 4 < 2 ? 1.0 : -1.0)
                           : v == 3 ? 2.0 * r - 1.0
                           : v == 4 ? 0.5 * r - 0.25
                                    : (e % 2 ? 1.0 : -1.0) * (0.25 + 0.75 * r) * half_max;
                }
                for (int64_t e = 0; e < m * n; e++) {
                    const double r = dg_range(&rng, 0.0, 1.0);
                    c0[e] = v == 0 ? (e % m < 20 ? 0.0 : (double)((int)(r * 5) - 2) * big) : v == 5 ? 0.0 : r - 0.5;
                }
                void *ha = gh_typed_copy(a, m * k, !dbl), *hb = gh_typed_copy(b, n * k, !dbl);
                void *hc0 = gh_typed_copy(c0, m * n, !dbl);
                void *dA = gh_upload(ha, ts * (size_t)(m * k)), *dB = gh_upload(hb, ts * (size_t)(n * k));
                void *dC = gh_upload(hc0, ts * (size_t)(m * n));
                const float af = (float)alpha, bf = (float)beta;
                blasft_gpu_gemm g = small_nt(dbl, m, n, k, dbl ? (const void *)&alpha : (const void *)&af,
                                             dbl ? (const void *)&beta : (const void *)&bf, 0, dA, dB,
                                             dC, "range_ends");
                blasft_stats dl = run_small(&g, 32, proj, promoted, "range-end run");
                download_doubles(hc, dC, m * n, dbl);
                /* plain cuBLAS's C, where its order decides (v 3 on) */
                double *pc = v >= 3 ? plain_small(&g, hc0, dbl) : NULL;
                const double u = dbl ? 0x1p-53 : 0x1p-24, fmin = dbl ? 0x1p-1022 : 0x1p-126;
                const double al = dbl ? alpha : (double)af, be = dbl ? beta : (double)bf;
                int64_t bad = 0;
                for (int64_t j = 0; j < n; j++)
                    for (int64_t i = 0; i < m; i++) {
                        long double mass;
                        const long double s = nt_dot(a, b, m, n, k, i, j, dbl, &mass);
                        const double cold = dbl ? c0[i + j * m] : (double)(float)c0[i + j * m];
                        const long double old = be == 0.0 ? 0.0L : (long double)be * cold;
                        const long double want = (long double)al * s + old;
                        const long double tol = (k + 4) * u * (fabsl((long double)al) * mass + fabsl(old)) +
                                                (k + 4) * u * fmin * (1.0L + fabsl((long double)al));
                        const int as_blas = isfinite(hc[i + j * m]) && fabsl(hc[i + j * m] - want) <= tol;
                        const int as_plain = pc && (hc[i + j * m] == pc[i + j * m] ||
                                                    (isnan(hc[i + j * m]) && isnan(pc[i + j * m])));
                        bad += !as_blas && !as_plain;
                    }
                free(pc);
                static const char *whats[] = {"alpha subnormal over 2^500", "alpha 1e300 over subnormals",
                                              "results near the largest number",
                                              "alpha 1e-300 over products beyond the range",
                                              "alpha 1e308 over op(A) of +-1..3",
                                              "alpha -0.26 over subnormal op(A) and huge op(B)"};
                const char *what = whats[v];
                const char *tn = t == 0 ? "S" : t == 1 ? "S promoted" : "D";
                GH_CHECK(bad == 0, "range ends %s %s %s: %lld elements wrong", tn, what,
                         proj ? "proj" : "pea", (long long)bad);
                GH_CHECK(dl.uncorrectable == 0 && (v >= 3 || dl.errors_detected + dl.errors_corrected == 0),
                         "range ends %s %s %s: detected %llu corrected %llu uncorrectable %llu "
                         "(recomputed %llu, false alarms %llu)",
                         tn, what, proj ? "proj" : "pea", (unsigned long long)dl.errors_detected,
                         (unsigned long long)dl.errors_corrected, (unsigned long long)dl.uncorrectable,
                         (unsigned long long)dl.blocks_recomputed, (unsigned long long)dl.false_alarms);
                cudaFree(dA); cudaFree(dB); cudaFree(dC);
                free(ha); free(hb); free(hc0);
                free(a); free(b); free(c0); free(hc);
            }
    }
}

/* More blocks along one side than CUDA's 65535 grid rows (2^24 + 1 rows or columns at BS 256):
 * op(A) transposed, whose encoding is strided along m; and the old C's row checksums in detect
 * mode (no copy kept), strided along n. The GEMM runs protected, C right, nothing flagged. PROJ
 * too for the first (its launches fit at this m). */
static void tall_shapes(void)
{
    const int64_t big = ((int64_t)1 << 24) + 1;
    static const struct {
        char ta;
        int wide, proj;
        double beta;
        blasft_mode mode;
    } cs[] = {{'T', 0, 0, 0.0, BLASFT_MODE_CORRECT},
              {'T', 0, 1, 0.0, BLASFT_MODE_CORRECT},
              {'N', 1, 0, 0.5, BLASFT_MODE_DETECT}};
    for (size_t q = 0; q < sizeof cs / sizeof cs[0]; q++) {
        const int64_t m = cs[q].wide ? 2 : big, n = cs[q].wide ? big : 2;
        gh_case c = make_case(BLASFT_TYPE_D, cs[q].ta, 'N', m, n, 3, 0, 1.0, cs[q].beta, 0);
        blasft_gpu_params p;
        gh_params(&p, 256, 1);
        p.rows_on_demand = 1;
        p.proj = cs[q].proj;
        p.mode = cs[q].mode;
        gh_data d;
        gh_make(&d, &c, 900 + (uint64_t)q);
        double *out = malloc(8 * (size_t)(m * n));
        blasft_stats st;
        run(&d, &p, NULL, &st, out);
        const int64_t bad = gh_bad_elements(&d, out, NULL, NULL);
        GH_CHECK(bad == 0 && st.protected_gemms == 1 && st.errors_detected == 0 &&
                     st.false_alarms == 0 && st.blocks_recomputed == 0,
                 "tall %s: %lld elements wrong, protected %llu detected %llu false alarms %llu "
                 "recomputed %llu",
                 desc(&c, &p), (long long)bad, (unsigned long long)st.protected_gemms,
                 (unsigned long long)st.errors_detected, (unsigned long long)st.false_alarms,
                 (unsigned long long)st.blocks_recomputed);
        free(out);
        gh_free(&d);
    }
}

static void structured(void)
{
    const int64_t n = 512;
    static const blasft_on_error oe[] = {BLASFT_ON_ERROR_RECOMPUTE, BLASFT_ON_ERROR_REPORT,
                                         BLASFT_ON_ERROR_ABORT, BLASFT_ON_ERROR_REPORT};
    for (int t = 0; t < 2; t++)
        for (int r = 1; r <= 2; r++)
            for (int q = 0; q < 4; q++) {
            const size_t ts = t ? 8 : 4;
            const double av = 0.1 + 0.05 * r, bv = 0.3 + 0.1 * t;
            void *hA = malloc(ts * (size_t)(n * n)), *hB = malloc(ts * (size_t)(n * n));
            double *hC = malloc(8 * (size_t)(n * n));
            for (int64_t e = 0; e < n * n; e++) {
                if (t) {
                    ((double *)hA)[e] = av;
                    ((double *)hB)[e] = bv;
                } else {
                    ((float *)hA)[e] = (float)av;
                    ((float *)hB)[e] = (float)bv;
                }
            }
            void *dA, *dB, *dC;
            cudaMalloc(&dA, ts * (size_t)(n * n));
            cudaMalloc(&dB, ts * (size_t)(n * n));
            cudaMalloc(&dC, ts * (size_t)(n * n));
            cudaMemcpy(dA, hA, ts * (size_t)(n * n), cudaMemcpyHostToDevice);
            cudaMemcpy(dB, hB, ts * (size_t)(n * n), cudaMemcpyHostToDevice);
            blasft_gpu_gemm g = square_nn(t, n, dA, dB, dC, "structured");
            blasft_gpu_params p;
            gh_params(&p, r == 1 ? 128 : 64, r);
            p.on_error = oe[q];
            p.mode = q == 3 ? BLASFT_MODE_DETECT : BLASFT_MODE_CORRECT;
            blasft_stats dl = gh_run_counted(ctx, &g, &p, "structured run");
            /* the stored operands, as the GEMM saw them */
            const double a = t ? av : (double)(float)av, b = t ? bv : (double)(float)bv;
            const double u = t ? 0x1p-53 : 0x1p-24, want = (double)n * a * b;
            int64_t bad = 0;
            download_doubles(hC, dC, n * n, t);
            for (int64_t e = 0; e < n * n; e++)
                bad += !(fabs(hC[e] - want) <= 2.0 * (n + 2) * u * want);
            GH_CHECK(bad == 0, "structured %c r %d case %d: %lld elements off", t ? 'D' : 'S', r, q,
                     (long long)bad);
            GH_CHECK(dl.errors_detected == 0 && dl.blocks_recomputed == 0 && dl.uncorrectable == 0 &&
                         dl.errors_corrected == 0,
                     "structured %c r %d case %d: detected %llu corrected %llu recomputed %llu "
                     "uncorrectable %llu (false alarms %llu)", t ? 'D' : 'S', r, q,
                     (unsigned long long)dl.errors_detected,
                     (unsigned long long)dl.errors_corrected, (unsigned long long)dl.blocks_recomputed,
                     (unsigned long long)dl.uncorrectable, (unsigned long long)dl.false_alarms);
            printf("structured %c r %d case %d: %llu blocks flagged by rounding, false alarms\n",
                   t ? 'D' : 'S', r, q, (unsigned long long)dl.false_alarms);
            cudaFree(dA);
            cudaFree(dB);
            cudaFree(dC);
            free(hA);
            free(hB);
            free(hC);
        }
}

/* Capture in a CUDA graph (workspace reserved first), replay, compare. */
static void graph_capture(int schedule)
{
    cudaStream_t st;
    cudaStreamCreate(&st);
    blasft_gpu_ctx *gc = blasft_gpu_ctx_create(st);
    blasft_gpu_set_schedule(gc, schedule);
    gh_case c = make_case(BLASFT_TYPE_D, 'N', 'T', 200, 130, 64, 1, 1.0, 0.25, 0);
    blasft_gpu_params p;
    gh_params(&p, 64, 2);
    gh_data d;
    gh_make(&d, &c, 99);
    GH_CHECK(blasft_gpu_reserve(gc, c.t, c.m, c.n, c.k, &p, 1) == 0, "reserve");
    blasft_gpu_gemm g = gh_desc(&d);
    cudaGraph_t graph = NULL;
    cudaGraphExec_t exec = NULL;
    blasft_stats before;
    gh_sync();
    blasft_get_stats(&before);
    int ok = cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal) == cudaSuccess;
    int rc = blasft_gpu_gemm_run(gc, &g, &p);
    ok = ok && cudaStreamEndCapture(st, &graph) == cudaSuccess;
    GH_CHECK(ok && rc == 0, "capture failed (rc %d, %s)", rc, cudaGetErrorString(cudaGetLastError()));
    if (ok && rc == 0) {
        GH_CHECK(cudaGraphInstantiate(&exec, graph, 0) == cudaSuccess, "instantiate");
        for (int rep = 0; rep < 2; rep++) {
            gh_reset_c(&d);
            GH_CHECK(cudaGraphLaunch(exec, st) == cudaSuccess, "graph launch");
            cudaStreamSynchronize(st);
            double *out = malloc(8 * (size_t)(c.m * c.n));
            gh_download_c(&d, out);
            GH_CHECK(gh_bad_elements(&d, out, NULL, NULL) == 0, "graph replay %d: wrong result", rep);
            free(out);
        }
        blasft_stats st2 = gh_stats_delta(&before);
        GH_CHECK(st2.protected_gemms == 2 && st2.errors_detected == 0,
                 "graph replays counted %llu protected, %llu detected",
                 (unsigned long long)st2.protected_gemms, (unsigned long long)st2.errors_detected);
        cudaGraphExecDestroy(exec);
        cudaGraphDestroy(graph);
    }
    blasft_gpu_ctx_destroy(gc);
    cudaStreamDestroy(st);
    gh_free(&d);
}

/* The engine's own graphs (BLASFT_GPU_GRAPHS, cuda/graph_cache.h): a call repeated with the same
 * arguments is captured the second time it is seen and replayed from then on. */
typedef struct graph_count {
    uint64_t captures, replays;
    int cached, priority;
} graph_count;

static graph_count graphs_of(blasft_gpu_ctx *gc)
{
    graph_count n;
    blasft_gpu_debug_graphs(gc, &n.captures, &n.replays, &n.cached, &n.priority);
    return n;
}

/* src's data (and device scalars) into dst's buffers, from src's host copies (dst's device
 * buffers may hold another data set's by now): the same case, so the same sizes */
static void load_data(gh_data *dst, const gh_data *src)
{
    const gh_case *c = &dst->c;
    const int single = c->t == BLASFT_TYPE_S;
    const size_t ts = single ? 4 : 8;
    const int64_t ac = c->ta == 'N' ? c->k : c->m, bc = c->tb == 'N' ? c->n : c->k;
    cudaMemcpy(dst->dA, src->hA, ts * (size_t)(c->lda * ac), cudaMemcpyHostToDevice);
    cudaMemcpy(dst->dB, src->hB, ts * (size_t)(c->ldb * bc), cudaMemcpyHostToDevice);
    cudaMemcpy(dst->dC, src->hC0, ts * (size_t)(c->ldc * c->n), cudaMemcpyHostToDevice);
    const float af = (float)src->c.alpha, bf = (float)src->c.beta;
    cudaMemcpy(dst->dalpha, single ? (const void *)&af : (const void *)&src->c.alpha, ts,
               cudaMemcpyHostToDevice);
    cudaMemcpy(dst->dbeta, single ? (const void *)&bf : (const void *)&src->c.beta, ts,
               cudaMemcpyHostToDevice);
}

/* One call of x's buffers with src's data (and, with host scalars, src's scalars): right
 * against src's reference, counted once as protected, `fixed` errors corrected. */
static void graph_run(blasft_gpu_ctx *gc, gh_data *x, const gh_data *src,
                      const blasft_gpu_params *p, int fixed, const char *what)
{
    load_data(x, src);
    blasft_gpu_gemm g = gh_desc(x);
    if (!src->c.device_scalars && src->c.t == BLASFT_TYPE_D) {
        g.alpha = &src->c.alpha;
        g.beta = &src->c.beta;
    }
    const blasft_stats st = gh_run_counted(gc, &g, p, what);
    double *out = malloc(8 * (size_t)(x->c.m * x->c.n));
    gh_download_c(x, out);
    int64_t bi = -1, bj = -1;
    const int64_t bad = gh_bad_elements(src, out, &bi, &bj);
    GH_CHECK(bad == 0, "%s: %lld wrong elements, first (%lld, %lld)", what, (long long)bad,
             (long long)bi, (long long)bj);
    /* one checksum (r = 1) locates no element: its block is computed again */
    GH_CHECK(st.protected_gemms == 1 &&
                 st.errors_corrected + st.blocks_recomputed == (uint64_t)fixed &&
                 st.errors_detected == (uint64_t)fixed && st.uncorrectable == 0,
             "%s: %llu protected, %llu detected, %llu corrected, %llu recomputed (%d planted)",
             what, (unsigned long long)st.protected_gemms, (unsigned long long)st.errors_detected,
             (unsigned long long)st.errors_corrected, (unsigned long long)st.blocks_recomputed,
             fixed);
    free(out);
}

/* The parameters of a graph test's case: rows on demand, the case's promotion and PROJ. */
static blasft_gpu_params graph_params(int bs, int r, int promote, int proj)
{
    blasft_gpu_params p;
    gh_params(&p, bs, r);
    p.rows_on_demand = 1;
    p.promote = promote;
    p.proj = proj;
    return p;
}

static void own_graphs(void)
{
    cudaStream_t st;
    cudaStreamCreate(&st);
    blasft_gpu_ctx *gc = blasft_gpu_ctx_create(st);
    /* two data sets of one case per line; with host scalars the second has scalars of its own
     * (another key), with device scalars the same addresses hold the other's values */
    struct {
        blasft_type t;
        char ta, tb;
        int64_t m, n, k;
        double alpha[2], beta[2];
        int dev, promote, proj, bs, r;
    } cases[] = {
        {BLASFT_TYPE_D, 'N', 'T', 200, 130, 64, {1.0, 0.5}, {0.25, 0.0}, 0, 0, 0, 64, 2},
        {BLASFT_TYPE_D, 'T', 'N', 97, 131, 300, {-0.5, 2.0}, {0.0, 1.5}, 1, 0, 0, 32, 1},
        {BLASFT_TYPE_S, 'N', 'N', 301, 257, 129, {2.0, 2.0}, {1.0, 1.0}, 0, 1, 0, 64, 2},
        {BLASFT_TYPE_D, 'N', 'N', 256, 256, 256, {1.0, -1.0}, {0.0, 0.5}, 0, 0, 1, 64, 1},
    };
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        char what[96];
        gh_data x[2];
        for (int v = 0; v < 2; v++) {
            gh_case c = make_case(cases[ci].t, cases[ci].ta, cases[ci].tb, cases[ci].m,
                                  cases[ci].n, cases[ci].k, 1, cases[ci].alpha[v],
                                  cases[ci].beta[v], cases[ci].dev);
            gh_make(&x[v], &c, 500 + 10 * ci + v);
        }
        blasft_gpu_params p =
            graph_params(cases[ci].bs, cases[ci].r, cases[ci].promote, cases[ci].proj);
        /* host scalars that differ: two keys, each captured at its second call; device scalars
         * (or the same ones): one key */
        const int keys = cases[ci].dev || (cases[ci].alpha[0] == cases[ci].alpha[1] &&
                                           cases[ci].beta[0] == cases[ci].beta[1])
                             ? 1
                             : 2;
        const graph_count before = graphs_of(gc);
        for (int rep = 0; rep < 6; rep++) {
            snprintf(what, sizeof what, "own graphs, case %zu, call %d", ci, rep);
            graph_run(gc, &x[0], &x[rep % 2], &p, 0, what);
        }
        graph_count after = graphs_of(gc);
        const uint64_t captured = after.captures - before.captures, replayed = after.replays - before.replays;
        GH_CHECK(captured == (uint64_t)keys && replayed == (uint64_t)(keys == 1 ? 4 : 2),
                 "own graphs, case %zu: %llu captured, %llu replayed", ci,
                 (unsigned long long)captured, (unsigned long long)replayed);
        /* switched off: enqueued directly, right */
        p.graphs = 0;
        for (int rep = 0; rep < 2; rep++) {
            snprintf(what, sizeof what, "own graphs off, case %zu, call %d", ci, rep);
            graph_run(gc, &x[0], &x[rep % 2], &p, 0, what);
        }
        const graph_count off = graphs_of(gc);
        GH_CHECK(off.captures == after.captures && off.replays == after.replays,
                 "own graphs off, case %zu: a graph was used", ci);
        p.graphs = 1;
        /* a fault planted after the main GEMM, captured with the call (the copy from pinned
         * memory is replayed with whatever value that holds then): corrected at every replay
         * that plants it, nothing reported at those that write the element's true value, in
         * either order; case 0 under both schedules of small calls (the lists after the main
         * GEMM, the automatic one here, and before it). Not the promoted case, whose result is
         * rounded from a double copy after the hook. */
        void *pinned = NULL; /* the graphs' copies read it: one buffer for the case's graphs */
        cudaMallocHost(&pinned, 8 * MAX_FAULTS);
        for (int pass = 0; pass < (ci == 0 ? 2 : 1) && !cases[ci].promote; pass++) {
            plant pl = {.n = 1, .i = {77}, .j = {19}, .value = {1e3}, .pinned = pinned};
            pl.d = &x[0];
            blasft_gpu_set_schedule(gc, pass ? BLASFT_GPU_SCHED_OVERLAP : BLASFT_GPU_SCHED_AUTO);
            blasft_gpu_set_graph_hook(gc, 1);
            blasft_gpu_set_fault_hook(gc, plant_hook, &pl);
            const graph_count h0 = graphs_of(gc);
            /* calls 0 and 1 (direct, captured) run the hook, which plants 1e3 */
            static const int faulty[8] = {1, 1, 0, 1, 0, 0, 1, 1};
            const double truth = x[0].ref[77 + 19 * x[0].c.m];
            for (int rep = 0; rep < 8; rep++) {
                if (rep >= 2) {
                    const double v = faulty[rep] ? 1e3 : truth;
                    if (x[0].c.t == BLASFT_TYPE_S)
                        *(float *)pl.pinned = (float)v;
                    else
                        *(double *)pl.pinned = v;
                }
                snprintf(what, sizeof what, "own graphs, case %zu%s, call %d with%s a fault", ci,
                         pass ? " (lists before the GEMM)" : "", rep, faulty[rep] ? "" : "out");
                graph_run(gc, &x[0], &x[0], &p, faulty[rep], what);
            }
            const graph_count h1 = graphs_of(gc);
            GH_CHECK(h1.captures == h0.captures + 1 && h1.replays == h0.replays + 6,
                     "own graphs with a fault, case %zu: %llu captured, %llu replayed", ci,
                     (unsigned long long)(h1.captures - h0.captures),
                     (unsigned long long)(h1.replays - h0.replays));
            blasft_gpu_set_fault_hook(gc, NULL, NULL);
            blasft_gpu_set_graph_hook(gc, 0);
            blasft_gpu_set_schedule(gc, BLASFT_GPU_SCHED_AUTO);
        }
        cudaDeviceSynchronize();
        cudaFreeHost(pinned);
        gh_free(&x[0]);
        gh_free(&x[1]);
    }
    /* a larger GEMM grows the workspace: the graphs, which bake its address, are dropped; the
     * small call is right again after, captured anew */
    gh_case small = make_case(BLASFT_TYPE_D, 'N', 'N', 150, 140, 130, 0, 1.0, 0.5, 0);
    gh_case large = make_case(BLASFT_TYPE_D, 'N', 'N', 900, 900, 900, 0, 1.0, 0.0, 0);
    gh_data ds, dl;
    gh_make(&ds, &small, 600);
    gh_make(&dl, &large, 601);
    blasft_gpu_params p;
    gh_params(&p, 64, 1);
    p.rows_on_demand = 1;
    for (int rep = 0; rep < 3; rep++)
        graph_run(gc, &ds, &ds, &p, 0, "own graphs before growth");
    GH_CHECK(graphs_of(gc).cached > 0, "own graphs: none cached before growth");
    graph_run(gc, &dl, &dl, &p, 0, "own graphs, the larger GEMM");
    GH_CHECK(graphs_of(gc).cached == 0, "own graphs: %d kept after the workspace grew",
             graphs_of(gc).cached);
    const graph_count g0 = graphs_of(gc);
    for (int rep = 0; rep < 3; rep++)
        graph_run(gc, &ds, &ds, &p, 0, "own graphs after growth");
    const graph_count g1 = graphs_of(gc);
    /* the key is remembered as seen: captured at its first call after the growth */
    GH_CHECK(g1.captures == g0.captures + 1 && g1.replays == g0.replays + 2,
             "own graphs after growth: %llu captured, %llu replayed",
             (unsigned long long)(g1.captures - g0.captures),
             (unsigned long long)(g1.replays - g0.replays));
    gh_free(&ds);
    gh_free(&dl);
    blasft_gpu_ctx_destroy(gc);
    cudaStreamDestroy(st);

    /* a caller's stream of the highest priority: the graph is captured on a stream of that
     * priority, so that its nodes of the caller's stream keep it */
    int lo = 0, hi = 0;
    cudaDeviceGetStreamPriorityRange(&lo, &hi);
    cudaStream_t hs;
    cudaStreamCreateWithPriority(&hs, cudaStreamNonBlocking, hi);
    blasft_gpu_ctx *hc = blasft_gpu_ctx_create(hs);
    gh_data dh;
    gh_make(&dh, &small, 602);
    for (int rep = 0; rep < 3; rep++)
        graph_run(hc, &dh, &dh, &p, 0, "own graphs on a high-priority stream");
    const graph_count h = graphs_of(hc);
    GH_CHECK(h.captures == 1 && h.replays == 1 && h.priority == hi,
             "own graphs on a stream of priority %d: %llu captured, %llu replayed, captured at "
             "priority %d", hi, (unsigned long long)h.captures, (unsigned long long)h.replays,
             h.priority);
    gh_free(&dh);
    blasft_gpu_ctx_destroy(hc);
    cudaStreamDestroy(hs);
}

/* C(i, j) = value in the C the engine checks (the caller's, or the relocated copy of it), so
 * that a graph replayed on moved operands plants it too (blasft_gpu_debug_checked_c). */
static void plant_checked_hook(void *stream, void *user)
{
    plant *p = user;
    blasft_type t;
    int64_t ldc = 0;
    char *c = blasft_gpu_debug_checked_c(ctx_of_hook, &t, &ldc);
    const size_t ts = t == BLASFT_TYPE_S ? 4 : 8;
    if (t == BLASFT_TYPE_S)
        *(float *)p->pinned = (float)p->value[0];
    else
        *(double *)p->pinned = p->value[0];
    cudaMemcpyAsync(c + ts * (size_t)(p->i[0] + p->j[0] * ldc), p->pinned, ts,
                    cudaMemcpyHostToDevice, (cudaStream_t)stream);
}

/* Relocated replays (gpu_graphs.cu): a shape repeated on operands that move (every call in
 * buffers of its own, with leading dimensions of its own) is captured at its third call on the
 * context's compact copies and replayed there; buffers that come back are then captured as they
 * are (their replays need no copies) and replayed from the third round on. Every result is
 * checked, every call counted once; beta 0 over a caller's C of NaN (the copy of C not made, the
 * previous call's C left in the buffer), device scalars, S in double and natively, PROJ, copies
 * just under the 4 MiB limit and just over it (enqueued directly, captured as called from the
 * second round), and a fault planted in the checked C at every call. */
static void moving_operands(void)
{
    cudaStream_t st;
    cudaStreamCreate(&st);
    blasft_gpu_ctx *gc = blasft_gpu_ctx_create(st);
    ctx_of_hook = gc;
    enum { kSets = 5, kRounds = 3 };
    struct {
        blasft_type t;
        char ta, tb;
        int64_t m, n, k;
        double alpha, beta;
        int dev, promote, proj, bs, r, direct;
    } cases[] = {
        {BLASFT_TYPE_D, 'N', 'N', 96, 80, 64, 1.0, 0.5, 0, 0, 0, 32, 2, 0},
        {BLASFT_TYPE_D, 'N', 'N', 96, 80, 64, -2.0, 0.0, 0, 0, 0, 32, 2, 0},
        /* device scalars, each set its own: copied into the buffer too */
        {BLASFT_TYPE_D, 'T', 'N', 97, 131, 300, -0.5, 1.5, 1, 0, 0, 32, 1, 0},
        {BLASFT_TYPE_S, 'N', 'T', 130, 67, 129, 2.0, 1.0, 0, 1, 0, 64, 2, 0},
        {BLASFT_TYPE_S, 'T', 'T', 65, 77, 33, 1.0, 0.0, 0, 0, 0, 32, 2, 0},
        {BLASFT_TYPE_D, 'N', 'N', 256, 256, 256, 1.0, -1.0, 0, 0, 1, 64, 1, 0},
        /* 4,147,200 bytes to copy in and out (A, B, C in, C out): 99 % of the limit */
        {BLASFT_TYPE_D, 'N', 'T', 360, 360, 360, 0.5, 0.25, 0, 0, 0, 128, 2, 0},
        /* 4,231,168 bytes (A, B in, C out): over the limit, enqueued directly */
        {BLASFT_TYPE_D, 'N', 'N', 4100, 64, 64, 1.0, 0.0, 0, 0, 0, 64, 2, 1},
    };
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        gh_data x[kSets];
        for (int v = 0; v < kSets; v++) { /* pads 0..4: addresses and leading dimensions differ */
            gh_case c = make_case(cases[ci].t, cases[ci].ta, cases[ci].tb, cases[ci].m,
                                  cases[ci].n, cases[ci].k, v, cases[ci].alpha, cases[ci].beta,
                                  cases[ci].dev);
            gh_make(&x[v], &c, 900 + 10 * ci + v);
            /* beta 0: the caller's C holds NaN, which BLAS does not read */
            if (cases[ci].beta == 0.0)
                memset(x[v].hC0, 0xff, (cases[ci].t == BLASFT_TYPE_S ? 4 : 8) *
                                           (size_t)(x[v].c.ldc * x[v].c.n));
        }
        blasft_gpu_params p =
            graph_params(cases[ci].bs, cases[ci].r, cases[ci].promote, cases[ci].proj);
        const graph_count before = graphs_of(gc);
        char what[112];
        for (int round = 0; round < kRounds; round++)
            for (int v = 0; v < kSets; v++) {
                snprintf(what, sizeof what, "moving operands, case %zu, round %d, set %d", ci,
                         round, v);
                graph_run(gc, &x[v], &x[v], &p, 0, what);
            }
        const graph_count after = graphs_of(gc);
        /* round 1: two calls enqueued directly, the third captured relocated, the others
         * replayed so (over the limit: all enqueued directly); round 2: each set captured as
         * it is; round 3: those replayed */
        const int want_c = cases[ci].direct ? kSets : 1 + kSets,
                  want_r = cases[ci].direct ? kSets : 2 * kSets - 3;
        GH_CHECK(after.captures - before.captures == (uint64_t)want_c &&
                     after.replays - before.replays == (uint64_t)want_r,
                 "moving operands, case %zu: %llu captured, %llu replayed (%d, %d expected)", ci,
                 (unsigned long long)(after.captures - before.captures),
                 (unsigned long long)(after.replays - before.replays), want_c, want_r);
        /* a fault in the checked C at every call, the hook captured with the relocated call:
         * found and fixed at every replay (not the promoted case, whose result is rounded from
         * a double copy after the hook) */
        if (!cases[ci].promote) {
            void *pinned = NULL;
            cudaMallocHost(&pinned, 8);
            plant pl = {.n = 1, .i = {5}, .j = {3}, .value = {1e3}, .pinned = pinned};
            pl.d = &x[0];
            blasft_gpu_set_graph_hook(gc, 1);
            blasft_gpu_set_fault_hook(gc, plant_checked_hook, &pl);
            const graph_count h0 = graphs_of(gc);
            for (int v = 0; v < kSets; v++) {
                snprintf(what, sizeof what, "moving operands, case %zu, set %d with a fault", ci,
                         v);
                graph_run(gc, &x[v], &x[v], &p, 1, what);
            }
            const graph_count h1 = graphs_of(gc);
            GH_CHECK(h1.captures - h0.captures == (cases[ci].direct ? 0u : 1u) &&
                         h1.replays - h0.replays == (cases[ci].direct ? 0u : kSets - 3u),
                     "moving operands with a fault, case %zu: %llu captured, %llu replayed", ci,
                     (unsigned long long)(h1.captures - h0.captures),
                     (unsigned long long)(h1.replays - h0.replays));
            blasft_gpu_set_fault_hook(gc, NULL, NULL);
            blasft_gpu_set_graph_hook(gc, 0);
            cudaDeviceSynchronize();
            cudaFreeHost(pinned);
        }
        /* BLASFT_GPU_GRAPHS=exact: graphs of the calls' own addresses only, so a round on
         * operands never seen before captures and replays nothing */
        if (ci == 0) {
            gh_data y[kSets];
            for (int v = 0; v < kSets; v++) {
                gh_case c = make_case(cases[ci].t, cases[ci].ta, cases[ci].tb, cases[ci].m,
                                      cases[ci].n, cases[ci].k, kSets + v, cases[ci].alpha,
                                      cases[ci].beta, cases[ci].dev);
                gh_make(&y[v], &c, 990 + v);
            }
            p.graphs = 2;
            const graph_count e0 = graphs_of(gc);
            for (int v = 0; v < kSets; v++) {
                snprintf(what, sizeof what, "moving operands, exact graphs only, set %d", v);
                graph_run(gc, &y[v], &y[v], &p, 0, what);
            }
            const graph_count e1 = graphs_of(gc);
            GH_CHECK(e1.captures == e0.captures && e1.replays == e0.replays,
                     "moving operands, exact graphs only: %llu captured, %llu replayed",
                     (unsigned long long)(e1.captures - e0.captures),
                     (unsigned long long)(e1.replays - e0.replays));
            for (int v = 0; v < kSets; v++)
                gh_free(&y[v]);
        }
        for (int v = 0; v < kSets; v++)
            gh_free(&x[v]);
    }
    ctx_of_hook = NULL;
    blasft_gpu_ctx_destroy(gc);
    cudaStreamDestroy(st);
}

/* The graph cache's rule (graph_cache.h): more keys cycled than it holds (80, here by 80 host
 * alphas, powers of two so that each result is the reference scaled exactly) do not evict each
 * other: 64 are captured and replayed, the rest enqueued directly; keys used later replace them
 * once those have been idle for 256 calls; in a cycle longer than that (200 keys) the graphs the
 * cycle uses are kept, not replaced by its other keys at every turn. Every result is checked. */
static void graph_policy(void)
{
    cudaStream_t st;
    cudaStreamCreate(&st);
    blasft_gpu_ctx *gc = blasft_gpu_ctx_create(st);
    gh_case c = make_case(BLASFT_TYPE_D, 'N', 'N', 64, 48, 40, 0, 1.0, 0.0, 0);
    gh_data d;
    gh_make(&d, &c, 700);
    blasft_gpu_params p;
    gh_params(&p, 32, 1);
    p.rows_on_demand = 1;
    double *out = malloc(8 * (size_t)(c.m * c.n));
    int64_t wrong = 0;
    /* calls with alpha 2^e (beta 0): C = 2^e ref */
    const graph_count g0 = graphs_of(gc);
    size_t free0 = 0, free1 = 0, total = 0;
    for (int phase = 0; phase < 3; phase++) {
        static const int keys_of[3] = {80, 8, 200}, cycles_of[3] = {4, 40, 3};
        const int keys = keys_of[phase], cycles = cycles_of[phase];
        const graph_count before = graphs_of(gc);
        for (int cy = 0; cy < cycles; cy++) {
            /* the device memory that 64 graphs hold: after the first cycle (workspace made, no
             * graph yet) against after the second (64 captured) */
            if (!phase && (cy == 1 || cy == 2))
                cudaMemGetInfo(cy == 1 ? &free0 : &free1, &total);
            for (int key = 0; key < keys; key++) {
                const int e2 = phase == 0 ? key - 40 : phase == 1 ? 50 + key : key - 300;
                const double alpha = ldexp(1.0, e2); /* distinct */
                blasft_gpu_gemm g = gh_desc(&d);
                g.alpha = &alpha;
                if (blasft_gpu_gemm_run(gc, &g, &p) != 0)
                    wrong++;
                cudaStreamSynchronize(st);
                gh_download_c(&d, out);
                for (int64_t e = 0; e < c.m * c.n; e++)
                    if (!(fabs(out[e] - alpha * d.ref[e]) <= alpha * d.bound[e]))
                        wrong++;
            }
        }
        const graph_count after = graphs_of(gc);
        const uint64_t cap = after.captures - before.captures, rep = after.replays - before.replays;
        if (phase == 0)
            GH_CHECK(cap == 64 && rep == 128 && after.cached == 64,
                     "graph cache, 80 keys cycled 4 times: %llu captured, %llu replayed, %d held "
                     "(64, 128, 64 expected)", (unsigned long long)cap, (unsigned long long)rep,
                     after.cached);
        else if (phase == 1)
            GH_CHECK(cap == 8 && rep >= 8 * 10 && rep <= 8 * 38,
                     "graph cache, 8 later keys cycled 40 times: %llu captured, %llu replayed "
                     "(8 once the earlier graphs were idle for 256 calls)",
                     (unsigned long long)cap, (unsigned long long)rep);
        else /* a cycle longer than 256 calls: the earlier phases' idle graphs are replaced in the
              * second cycle, and those graphs, each used since any missing key's previous
              * sighting, are kept in the third */
            GH_CHECK(cap == 64 && rep == 64 && after.cached == 64,
                     "graph cache, 200 keys cycled 3 times (a cycle longer than 256 calls): "
                     "%llu captured, %llu replayed, %d held (64, 64, 64 expected)",
                     (unsigned long long)cap, (unsigned long long)rep, after.cached);
    }
    GH_CHECK(wrong == 0, "graph cache: %lld wrong elements or failed calls over %llu replays",
             (long long)wrong, (unsigned long long)(graphs_of(gc).replays - g0.replays));
    const double held_mib = ((double)free0 - (double)free1) / 1048576.0;
    printf("graph cache: 64 graphs of a 64 x 48 x 40 GEMM hold %.1f MiB of device memory\n",
           held_mib);
    GH_CHECK(held_mib < 64.0, "graph cache: 64 graphs hold %.1f MiB", held_mib);
    free(out);
    gh_free(&d);
    blasft_gpu_ctx_destroy(gc);
    cudaStreamDestroy(st);
}

/* --own-graphs: that case only (for compute-sanitizer) */
int main(int argc, char **argv)
{
    ctx = gh_start();
    if (argc > 1 && !strcmp(argv[1], "--own-graphs")) {
        own_graphs();
        moving_operands();
        graph_policy();
        return gh_finish(ctx);
    }
    clean_sweep();
    /* again with the reference GEMMs in parts along k, as for wide C and a short k */
    blasft_gpu_set_ref_parts_mn(ctx, 1);
    clean_sweep();
    faults();
    blasft_gpu_set_ref_parts_mn(ctx, 0);
    nan_c_beta_on_device();
    faults();
    /* the old C as a vector repeated over the columns (cublasLt's bias): the engine reads the
     * vector, never C, and recomputes from it */
    vector_c = 1;
    clean_sweep();
    faults();
    vector_c = 0;
    blasft_gpu_set_schedule(ctx, BLASFT_GPU_SCHED_AUTO);
    rows_on_demand_agrees();
    prepared_operands();
    edge_shapes();
    host_entry();
    structured();
    near_constant();
    extreme_magnitudes();
    edge_scalars();
    range_ends();
    tall_shapes();
    graph_capture(BLASFT_GPU_SCHED_OVERLAP);
    graph_capture(BLASFT_GPU_SCHED_SERIAL);
    graph_capture(BLASFT_GPU_SCHED_LISTS_AFTER);
    own_graphs();
    moving_operands();
    graph_policy();
    return gh_finish(ctx);
}
