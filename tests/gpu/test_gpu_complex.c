/* Types C and Z through the GPU engine: the whole protected GEMM against a double-double
 * reference (every transpose pair with 'C', awkward shapes, padded leading dimensions, complex
 * alpha/beta in host and device memory, 1 and 2 checksums), the reference checksums, recomputed
 * checksums and thresholds of every part against the host engine's diagnostic record
 * (blasft_abft_run), planted faults in either part (corrected, recomputed element, block
 * recomputed with and without the old C), and the host-dispatch entry. Exits 77 without a GPU. */
#include "abft/abft_engine.h"
#include "abft/abft_inject.h"
#include "config.h"
#include "gpu_debug.h"
#include "gpu_harness.h"
#include "hpref.h"

#include <cuda_runtime_api.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static blasft_gpu_ctx *ctx;

typedef struct zcase {
    blasft_type t; /* C or Z */
    char ta, tb;
    int64_t m, n, k, lda, ldb, ldc;
    double alpha[2], beta[2];
    int dev;
} zcase;

/* Host data in double (re, im interleaved; exactly the typed values), typed and device copies,
 * the reference and an error bound per element (gamma_(2k+4) of the type, doubled, on the sum of
 * |products| in the |re| + |im| norm). */
typedef struct zdata {
    zcase c;
    double *A, *B, *C0, *ref, *bound;
    void *hA, *hB, *hC0, *dA, *dB, *dC, *dal, *dbe;
    size_t ts; /* bytes per complex element */
} zdata;

static uint64_t rng_state;
static double rnd(void)
{
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(rng_state >> 11) * ldexp(1.0, -52) - 1.0; /* [-1, 1) */
}

/* x as the type's parts: float for C, double for Z */
static void *typed(const double *x, int64_t parts, blasft_type t)
{
    return gh_typed_copy(x, parts, t == BLASFT_TYPE_C);
}

/* op(X)(row, col) of a stored matrix, parts into re/im */
static void op_el(const double *X, int64_t ld, char tr, int64_t r, int64_t c, double *re, double *im)
{
    int64_t at = tr == 'N' ? r + c * ld : c + r * ld;
    *re = X[2 * at];
    *im = tr == 'C' ? -X[2 * at + 1] : X[2 * at + 1];
}

static void zmake(zdata *d, const zcase *c, uint64_t seed)
{
    memset(d, 0, sizeof *d);
    d->c = *c;
    d->ts = c->t == BLASFT_TYPE_C ? 8 : 16;
    rng_state = seed * 0x9e3779b97f4a7c15ull + 1;
    int64_t ar = c->ta == 'N' ? c->m : c->k, ac = c->ta == 'N' ? c->k : c->m;
    int64_t br = c->tb == 'N' ? c->k : c->n, bc = c->tb == 'N' ? c->n : c->k;
    int64_t na = c->lda * ac, nb = c->ldb * bc, nc = c->ldc * c->n;
    d->A = malloc(16 * (size_t)(na + 1));
    d->B = malloc(16 * (size_t)(nb + 1));
    d->C0 = malloc(16 * (size_t)(nc + 1));
    /* padding holds NaN: reading it would show */
    for (int64_t j = 0; j < ac; j++)
        for (int64_t i = 0; i < c->lda; i++)
            for (int q = 0; q < 2; q++)
                d->A[2 * (i + j * c->lda) + q] = i < ar ? rnd() : NAN;
    for (int64_t j = 0; j < bc; j++)
        for (int64_t i = 0; i < c->ldb; i++)
            for (int q = 0; q < 2; q++)
                d->B[2 * (i + j * c->ldb) + q] = i < br ? rnd() : NAN;
    for (int64_t j = 0; j < c->n; j++)
        for (int64_t i = 0; i < c->ldc; i++)
            for (int q = 0; q < 2; q++)
                d->C0[2 * (i + j * c->ldc) + q] = i < c->m ? rnd() : NAN;
    if (c->t == BLASFT_TYPE_C) {
        for (int64_t i = 0; i < 2 * na; i++) d->A[i] = (float)d->A[i];
        for (int64_t i = 0; i < 2 * nb; i++) d->B[i] = (float)d->B[i];
        for (int64_t i = 0; i < 2 * nc; i++) d->C0[i] = (float)d->C0[i];
    }
    d->hA = typed(d->A, 2 * na, c->t);
    d->hB = typed(d->B, 2 * nb, c->t);
    d->hC0 = typed(d->C0, 2 * nc, c->t);
    d->dA = gh_upload(d->hA, d->ts * na);
    d->dB = gh_upload(d->hB, d->ts * nb);
    d->dC = gh_upload(d->hC0, d->ts * nc);
    void *hal = typed(c->alpha, 2, c->t), *hbe = typed(c->beta, 2, c->t);
    d->dal = gh_upload(hal, d->ts);
    d->dbe = gh_upload(hbe, d->ts);
    free(hal);
    free(hbe);
    double u = c->t == BLASFT_TYPE_C ? ldexp(1.0, -24) : ldexp(1.0, -53);
    d->ref = malloc(16 * (size_t)(c->m * c->n + 1));
    d->bound = malloc(8 * (size_t)(c->m * c->n + 1));
    for (int64_t j = 0; j < c->n; j++)
        for (int64_t i = 0; i < c->m; i++) {
            hp_dd sr = hp_from(0.0), si = hp_from(0.0);
            double mag = 0.0;
            for (int64_t l = 0; l < c->k; l++) {
                double ar_, ai, br_, bi;
                op_el(d->A, c->lda, c->ta, i, l, &ar_, &ai);
                op_el(d->B, c->ldb, c->tb, l, j, &br_, &bi);
                sr = hp_add_prod(hp_add_prod(sr, ar_, br_), -ai, bi);
                si = hp_add_prod(hp_add_prod(si, ar_, bi), ai, br_);
                mag += (fabs(ar_) + fabs(ai)) * (fabs(br_) + fabs(bi));
            }
            /* alpha * s + beta * c0 */
            hp_dd xr = hp_add(hp_mul_d(sr, c->alpha[0]), hp_mul_d(si, -c->alpha[1]));
            hp_dd xi = hp_add(hp_mul_d(si, c->alpha[0]), hp_mul_d(sr, c->alpha[1]));
            double cr = d->C0[2 * (i + j * c->ldc)], ci = d->C0[2 * (i + j * c->ldc) + 1];
            xr = hp_add(xr, hp_add(hp_mul_d(hp_from(cr), c->beta[0]), hp_mul_d(hp_from(ci), -c->beta[1])));
            xi = hp_add(xi, hp_add(hp_mul_d(hp_from(ci), c->beta[0]), hp_mul_d(hp_from(cr), c->beta[1])));
            d->ref[2 * (i + j * c->m)] = hp_to_double(xr);
            d->ref[2 * (i + j * c->m) + 1] = hp_to_double(xi);
            double aa = fabs(c->alpha[0]) + fabs(c->alpha[1]), bb = fabs(c->beta[0]) + fabs(c->beta[1]);
            d->bound[i + j * c->m] =
                2.0 * (double)(2 * c->k + 4) * u * (aa * mag + bb * (fabs(cr) + fabs(ci))) + 1e-300;
        }
}

static void zfree(zdata *d)
{
    free(d->A); free(d->B); free(d->C0); free(d->ref); free(d->bound);
    free(d->hA); free(d->hB); free(d->hC0);
    cudaFree(d->dA); cudaFree(d->dB); cudaFree(d->dC); cudaFree(d->dal); cudaFree(d->dbe);
}

/* 1: the descriptors' op letters in lower case (cuBLAS and the engine accept both) */
static int lower_ops;

static blasft_gpu_gemm zdesc(const zdata *d, void *hal, void *hbe)
{
    blasft_gpu_gemm g;
    memset(&g, 0, sizeof g);
    g.type = d->c.t;
    g.transa = lower_ops ? (char)(d->c.ta | 0x20) : d->c.ta;
    g.transb = lower_ops ? (char)(d->c.tb | 0x20) : d->c.tb;
    g.m = d->c.m; g.n = d->c.n; g.k = d->c.k;
    g.a = d->dA; g.lda = d->c.lda;
    g.b = d->dB; g.ldb = d->c.ldb;
    g.c = d->dC; g.ldc = d->c.ldc;
    g.scalars_on_device = d->c.dev;
    g.alpha = d->c.dev ? d->dal : hal;
    g.beta = d->c.dev ? d->dbe : hbe;
    g.routine = "test_gpu_complex";
    return g;
}

/* C downloaded into out (m x n complex, parts interleaved, double). */
static void zdownload(const zdata *d, double *out)
{
    int64_t nc = d->c.ldc * d->c.n;
    void *h = malloc(d->ts * (size_t)(nc + 1));
    cudaMemcpy(h, d->dC, d->ts * nc, cudaMemcpyDeviceToHost);
    for (int64_t j = 0; j < d->c.n; j++)
        for (int64_t i = 0; i < d->c.m; i++)
            for (int q = 0; q < 2; q++) {
                int64_t at = 2 * (i + j * d->c.ldc) + q;
                out[2 * (i + j * d->c.m) + q] =
                    d->c.t == BLASFT_TYPE_C ? ((float *)h)[at] : ((double *)h)[at];
            }
    free(h);
}

static int64_t zbad(const zdata *d, const double *out, double slack)
{
    int64_t bad = 0;
    for (int64_t e = 0; e < d->c.m * d->c.n; e++)
        for (int q = 0; q < 2; q++)
            bad += !(fabs(out[2 * e + q] - d->ref[2 * e + q]) <= slack * d->bound[e]);
    return bad;
}

/* planted after the main GEMM: part q of C(i, j) = value */
typedef struct zplant {
    int n;
    int64_t i[4], j[4];
    int q[4];
    double v[4];
    const zdata *d;
    void *pinned;
} zplant;

static void plant_hook(void *stream, void *user)
{
    zplant *p = user;
    size_t es = p->d->ts / 2;
    for (int f = 0; f < p->n; f++) {
        char *dst = (char *)p->d->dC + p->d->ts * (p->i[f] + p->j[f] * p->d->c.ldc) + es * p->q[f];
        if (es == 4)
            ((float *)p->pinned)[f] = (float)p->v[f];
        else
            ((double *)p->pinned)[f] = p->v[f];
        cudaMemcpyAsync(dst, (char *)p->pinned + es * f, es, cudaMemcpyHostToDevice,
                        (cudaStream_t)stream);
    }
}

static const char *name(const zcase *c, const blasft_gpu_params *p)
{
    static char buf[200];
    snprintf(buf, sizeof buf, "%c%c%c m=%lld n=%lld k=%lld a=(%g,%g) b=(%g,%g) dev=%d bs=%d r=%d rows=%s",
             c->t == BLASFT_TYPE_C ? 'C' : 'Z', c->ta, c->tb, (long long)c->m, (long long)c->n,
             (long long)c->k, c->alpha[0], c->alpha[1], c->beta[0], c->beta[1], c->dev,
             p->block_size, p->checksums, p->rows_on_demand ? "flagged" : "all");
    return buf;
}

static zcase mk(blasft_type t, char ta, char tb, int64_t m, int64_t n, int64_t k, int pad,
                double ar, double ai, double br, double bi, int dev)
{
    zcase c;
    memset(&c, 0, sizeof c);
    c.t = t; c.ta = ta; c.tb = tb; c.m = m; c.n = n; c.k = k;
    int64_t a_r = ta == 'N' ? m : k, b_r = tb == 'N' ? k : n;
    c.lda = (a_r > 1 ? a_r : 1) + pad;
    c.ldb = (b_r > 1 ? b_r : 1) + 2 * pad;
    c.ldc = (m > 1 ? m : 1) + pad;
    c.alpha[0] = ar; c.alpha[1] = ai; c.beta[0] = br; c.beta[1] = bi;
    c.dev = dev;
    return c;
}

/* One run with a fault hook (or none); returns the stats delta and leaves C in out. */
static blasft_stats zrun_hooked(zdata *d, const blasft_gpu_params *p, blasft_gpu_hook hook,
                                void *user, double *out)
{
    blasft_stats before;
    cudaDeviceSynchronize();
    blasft_get_stats(&before);
    void *hal = typed(d->c.alpha, 2, d->c.t), *hbe = typed(d->c.beta, 2, d->c.t);
    blasft_gpu_gemm g = zdesc(d, hal, hbe);
    blasft_gpu_set_fault_hook(ctx, hook, user);
    int rc = blasft_gpu_gemm_run(ctx, &g, p);
    blasft_gpu_set_fault_hook(ctx, NULL, NULL);
    GH_CHECK(rc == 0, "%s: run returned %d", name(&d->c, p), rc);
    cudaDeviceSynchronize();
    free(hal);
    free(hbe);
    zdownload(d, out);
    return gh_stats_delta(&before);
}

static blasft_stats zrun(zdata *d, const blasft_gpu_params *p, zplant *pl, double *out)
{
    if (pl)
        pl->d = d;
    return zrun_hooked(d, p, pl ? plant_hook : NULL, pl, out);
}

static void clean_sweep(void)
{
    static const int64_t shapes[][3] = {{1, 1, 1}, {7, 5, 3}, {131, 67, 257}, {97, 64, 33}, {40, 1, 70}};
    static const char trans[][2] = {{'N', 'N'}, {'C', 'N'}, {'N', 'C'}, {'T', 'C'}, {'C', 'T'}};
    uint64_t seed = 11;
    for (int t = 0; t < 2; t++)
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
            for (int tr = 0; tr < 5; tr++) {
                int v = (int)(s + tr) % 4;
                zcase c = mk(t ? BLASFT_TYPE_Z : BLASFT_TYPE_C, trans[tr][0], trans[tr][1],
                             shapes[s][0], shapes[s][1], shapes[s][2], (int)(s % 3) * 2,
                             v == 1 ? -0.75 : 1.0, v == 2 ? 0.5 : 0.0, v == 1 ? 0.5 : v == 3 ? 1.0 : 0.0,
                             v == 1 ? -0.25 : 0.0, v == 3);
                blasft_gpu_params p;
                gh_params(&p, (s + tr) % 2 ? 32 : 50, 1 + tr % 2);
                p.rows_on_demand = (int)(s + t) % 2;
                zdata d;
                zmake(&d, &c, seed++);
                double *out = malloc(16 * (size_t)(c.m * c.n + 1));
                blasft_stats st = zrun(&d, &p, NULL, out);
                int64_t mb = (c.m + p.block_size - 1) / p.block_size, nb = (c.n + p.block_size - 1) / p.block_size;
                /* rows on demand: a clean run compares the column checksums only */
                const int64_t row_checks = p.rows_on_demand ? 0 : c.m * nb;
                GH_CHECK(zbad(&d, out, 1.0) == 0, "%s: %lld parts off the reference", name(&c, &p),
                         (long long)zbad(&d, out, 1.0));
                GH_CHECK(st.protected_gemms == 1 && st.errors_detected == 0 && st.encoder_faults == 0 &&
                             st.checks == (uint64_t)(2 * p.checksums * (mb * c.n + row_checks)),
                         "%s: clean run: protected %llu detected %llu encoder %llu checks %llu",
                         name(&c, &p), (unsigned long long)st.protected_gemms,
                         (unsigned long long)st.errors_detected, (unsigned long long)st.encoder_faults,
                         (unsigned long long)st.checks);
                free(out);
                zfree(&d);
            }
}

/* BLASFT_PROMOTE (blasft_gpu_params.promote): type C computed as Z and rounded once. Every part
 * within half a float ulp of the exact value (plus the double GEMM's rounding); clean runs flag
 * nothing; a float-bit flip planted in the double copy that the engine checks is detected and
 * the part restored. Type S: test_gpu_promote.c. */
typedef struct zflip {
    int64_t i, j;
    int q, bit;
    const zdata *d;
    double *pinned;
} zflip;

static void zflip_hook(void *stream, void *user)
{
    zflip *f = user;
    gh_plant_checked(ctx, stream, BLASFT_TYPE_Z, f->i, f->j, f->q,
                     blasft_flip_float_bit_of(f->d->ref[2 * (f->i + f->j * f->d->c.m) + f->q], f->bit),
                     f->pinned);
}

static int64_t promoted_bad(const zdata *d, const double *out)
{
    int64_t bad = 0;
    for (int64_t e = 0; e < d->c.m * d->c.n; e++)
        for (int q = 0; q < 2; q++) {
            const double r = fabs(d->ref[2 * e + q]);
            const double half_ulp = fmax(r > 0.0 ? ldexp(1.0, ilogb(r) - 24) : 0.0, ldexp(1.0, -150));
            bad += !(fabs(out[2 * e + q] - d->ref[2 * e + q]) <= half_ulp + d->bound[e] * ldexp(1.0, -29));
        }
    return bad;
}

static void promoted(void)
{
    static const int64_t shapes[][3] = {{1, 1, 1}, {7, 5, 3}, {131, 67, 257}, {40, 1, 70}, {96, 80, 200}};
    static const char trans[][2] = {{'N', 'N'}, {'C', 'N'}, {'N', 'C'}, {'T', 'C'}, {'C', 'T'}};
    double *pin = NULL;
    cudaMallocHost((void **)&pin, 8);
    uint64_t seed = 900;
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (int tr = 0; tr < 5; tr++) {
            const int v = (int)(s + tr) % 4;
            zcase c = mk(BLASFT_TYPE_C, trans[tr][0], trans[tr][1], shapes[s][0], shapes[s][1],
                         shapes[s][2], (int)(s % 3) * 2, v == 1 ? -0.75 : 1.0, v == 2 ? 0.5 : 0.0,
                         v == 1 ? 0.5 : v == 3 ? 1.0 : 0.0, v == 1 ? -0.25 : 0.0, v == 3);
            blasft_gpu_params p;
            gh_params(&p, (s + tr) % 2 ? 32 : 50, 1 + tr % 2);
            p.rows_on_demand = 1;
            p.promote = 1;
            zdata d;
            zmake(&d, &c, seed++);
            double *out = malloc(16 * (size_t)(c.m * c.n + 1));
            blasft_stats st = zrun_hooked(&d, &p, NULL, NULL, out);
            GH_CHECK(promoted_bad(&d, out) == 0, "promoted %s: %lld parts beyond one rounding",
                     name(&c, &p), (long long)promoted_bad(&d, out));
            GH_CHECK(st.protected_gemms == 1 && st.errors_detected == 0 && st.blocks_recomputed == 0,
                     "promoted %s: clean run: detected %llu recomputed %llu", name(&c, &p),
                     (unsigned long long)st.errors_detected, (unsigned long long)st.blocks_recomputed);
            /* a float bit of one part flipped: every bit position across the sweep (the old C
             * again first: the clean run overwrote it) */
            cudaMemcpy(d.dC, d.hC0, d.ts * (size_t)(c.ldc * c.n), cudaMemcpyHostToDevice);
            zflip f = {(int64_t)(s * 13) % c.m, (int64_t)(tr * 7) % c.n, tr % 2,
                       (int)(s * 5 + (size_t)tr * 3) % 32, &d, pin};
            st = zrun_hooked(&d, &p, zflip_hook, &f, out);
            GH_CHECK(promoted_bad(&d, out) == 0, "promoted %s, bit %d of part %d: %lld parts not restored",
                     name(&c, &p), f.bit, f.q, (long long)promoted_bad(&d, out));
            GH_CHECK(st.errors_detected >= 1 && st.uncorrectable == 0,
                     "promoted %s, bit %d of part %d: detected %llu uncorrectable %llu", name(&c, &p),
                     f.bit, f.q, (unsigned long long)st.errors_detected,
                     (unsigned long long)st.uncorrectable);
            free(out);
            zfree(&d);
        }
    cudaFreeHost(pin);
}

static const char *no_env(const char *n, void *c)
{
    (void)n;
    (void)c;
    return NULL;
}

/* The GPU's reference and recomputed checksums and thresholds against the host engine's. */
static void against_host(blasft_type t, char ta, char tb, int bs, int r, double beta, uint64_t seed)
{
    zcase c = mk(t, ta, tb, 97, 70, 45, 1, 1.0, 0.0, beta, beta ? 0.25 : 0.0, 0);
    blasft_gpu_params p;
    gh_params(&p, bs, r);
    zdata d;
    zmake(&d, &c, seed);
    double *out = malloc(16 * (size_t)(c.m * c.n + 1));
    zrun(&d, &p, NULL, out);
    const int64_t m = c.m, n = c.n, mb = (m + bs - 1) / bs, nb = (n + bs - 1) / bs;
    const int64_t ncs = r * mb * n, nrs = m * r * nb;
    size_t es = d.ts / 2;
    void *cref = malloc(d.ts * ncs), *rref = malloc(d.ts * nrs);
    double *crec = malloc(16 * ncs), *rrec = malloc(16 * nrs), *ceps = malloc(8 * ncs), *reps = malloc(8 * nrs);
    int ok = blasft_gpu_debug_fetch(ctx, t, m, n, c.k, &p, BLASFT_GPU_BUF_CCS_REF, cref) == ncs &&
             blasft_gpu_debug_fetch(ctx, t, m, n, c.k, &p, BLASFT_GPU_BUF_CRS_REF, rref) == nrs &&
             blasft_gpu_debug_fetch(ctx, t, m, n, c.k, &p, BLASFT_GPU_BUF_CCS_REC, crec) == 2 * ncs &&
             blasft_gpu_debug_fetch(ctx, t, m, n, c.k, &p, BLASFT_GPU_BUF_CRS_REC, rrec) == 2 * nrs &&
             blasft_gpu_debug_fetch(ctx, t, m, n, c.k, &p, BLASFT_GPU_BUF_CCS_EPS, ceps) == ncs &&
             blasft_gpu_debug_fetch(ctx, t, m, n, c.k, &p, BLASFT_GPU_BUF_CRS_EPS, reps) == nrs;
    GH_CHECK(ok, "debug fetch failed");
    blasft_config cfg;
    gh_host_cfg(&cfg, &p);
    blasft_gemm hg;
    memset(&hg, 0, sizeof hg);
    hg.type = t;
    hg.transa = ta;
    hg.transb = tb;
    hg.m = m; hg.n = n; hg.k = c.k;
    hg.a = d.hA; hg.lda = c.lda;
    hg.b = d.hB; hg.ldb = c.ldb;
    void *hc = malloc(d.ts * (size_t)(c.ldc * n));
    memcpy(hc, d.hC0, d.ts * (size_t)(c.ldc * n));
    hg.c = hc; hg.ldc = c.ldc;
    hg.alpha[0] = c.alpha[0]; hg.alpha[1] = c.alpha[1];
    hg.beta[0] = c.beta[0]; hg.beta[1] = c.beta[1];
    hg.routine = "test_gpu_complex";
    blasft_abft_diag diag;
    memset(&diag, 0, sizeof diag);
    int rc = blasft_abft_run(&hg, &cfg, &diag, 1);
    GH_CHECK(rc == 0 && diag.checks_list, "host engine did not run (%d)", rc);
    int64_t bad_ref = 0, bad_rec = 0, flagged = 0;
    double rmin = INFINITY, rmax = 0.0;
    for (size_t e = 0; rc == 0 && e < diag.count; e++) {
        const blasft_abft_check *h = &diag.checks_list[e];
        int64_t at = h->side == 0 ? (h->block_row * r + h->weighted) + h->index * (r * mb)
                                  : h->index + (h->block_col * r + h->weighted) * m;
        const void *refb = h->side == 0 ? cref : rref;
        double gref = es == 4 ? ((const float *)refb)[2 * at + h->part] : ((const double *)refb)[2 * at + h->part];
        double grec = (h->side == 0 ? crec : rrec)[2 * at + h->part];
        double geps = (h->side == 0 ? ceps : reps)[at];
        bad_ref += !(fabs(gref - h->reference) <= geps + h->threshold);
        bad_rec += !(fabs(grec - h->recomputed) <= geps + h->threshold);
        flagged += h->flagged || !(fabs(gref - grec) <= geps);
        double q = geps / h->threshold;
        rmin = q < rmin ? q : rmin;
        rmax = q > rmax ? q : rmax;
    }
    const char *ty = t == BLASFT_TYPE_C ? "C" : "Z";
    GH_CHECK(diag.count == (size_t)(2 * (ncs + nrs)), "%s: host made %zu checks", ty, diag.count);
    GH_CHECK(bad_ref == 0, "%s %c%c: %lld reference checksum parts differ from the host's", ty, ta, tb, (long long)bad_ref);
    GH_CHECK(bad_rec == 0, "%s %c%c: %lld recomputed checksum parts differ from the host's", ty, ta, tb, (long long)bad_rec);
    GH_CHECK(flagged == 0, "%s %c%c: %lld false alarms on clean data", ty, ta, tb, (long long)flagged);
    GH_CHECK(rmin >= 0.9 && rmax <= (t == BLASFT_TYPE_Z ? 3.0 : 4096.0),
             "%s %c%c: threshold ratio GPU/host in [%g, %g]", ty, ta, tb, rmin, rmax);
    printf("%s %c%c bs=%d r=%d beta=%g: threshold ratio GPU/host %.3g .. %.3g\n", ty, ta, tb, bs, r,
           beta, rmin, rmax);
    blasft_abft_diag_free(&diag);
    free(hc); free(cref); free(rref); free(crec); free(rrec); free(ceps); free(reps); free(out);
    zfree(&d);
}

typedef struct fault_case {
    const char *name;
    int r;
    double beta;
    int n;
    int64_t i[4], j[4];
    int q[4];
    double add[4]; /* added to the correct value; NAN: the element becomes NaN; 0 + big: set */
    int corrected, recomputed;
} fault_case;

static void faults(void)
{
    static const fault_case fc[] = {
        {"one error, real part, R=1", 1, 0.0, 1, {10}, {20}, {0}, {0.5}, 1, 0},
        {"one error, imaginary part, R=1", 1, 0.0, 1, {33}, {7}, {1}, {-2.0}, 1, 0},
        {"one error, imaginary part, R=2", 2, 0.0, 1, {40}, {60}, {1}, {0.25}, 1, 0},
        {"exponent-sized error, R=2", 2, 0.5, 1, {5}, {5}, {0}, {1e30}, 1, 0},
        {"NaN, R=1", 1, 0.0, 1, {70}, {3}, {1}, {NAN}, 1, 0},
        {"two in a block, R=1: recomputed", 1, 0.0, 2, {1, 9}, {2, 11}, {0, 1}, {1.0, -1.0}, 0, 1},
        {"two in a block, beta != 0, R=1: recomputed from the old C", 1, 0.5, 2, {1, 9}, {2, 11}, {1, 0}, {1.0, -1.0}, 0, 1},
        {"two in a block, R=2: both corrected", 2, 0.0, 2, {3, 20}, {4, 30}, {0, 1}, {0.75, 2.0}, 2, 0},
    };
    uint64_t seed = 900;
    for (int od = 0; od < 2; od++) /* every block's row side, then the row side on demand */
    for (int t = 0; t < 2; t++)
        for (size_t f = 0; f < sizeof fc / sizeof fc[0]; f++) {
            const fault_case *x = &fc[f];
            zcase c = mk(t ? BLASFT_TYPE_Z : BLASFT_TYPE_C, f % 2 ? 'C' : 'N', f % 3 ? 'T' : 'N',
                         100, 90, 64, 1, 1.0, f % 2 ? 0.5 : 0.0, x->beta, 0.0, (int)f % 4 == 3);
            blasft_gpu_params p;
            gh_params(&p, 32, x->r);
            p.rows_on_demand = od;
            zdata d;
            zmake(&d, &c, seed++);
            zplant pl;
            memset(&pl, 0, sizeof pl);
            pl.n = x->n;
            cudaMallocHost(&pl.pinned, 64);
            for (int e = 0; e < x->n; e++) {
                pl.i[e] = x->i[e];
                pl.j[e] = x->j[e];
                pl.q[e] = x->q[e];
                double cur = d.ref[2 * (x->i[e] + x->j[e] * c.m) + x->q[e]];
                pl.v[e] = isnan(x->add[e]) ? NAN : cur + x->add[e];
            }
            double *out = malloc(16 * (size_t)(c.m * c.n + 1));
            blasft_stats st = zrun(&d, &p, &pl, out);
            /* corrected elements carry the checksums' rounding: a wider bound than the GEMM's */
            int64_t bad = zbad(&d, out, 64.0);
            const char *ty = od ? (t ? "Z rows on demand" : "C rows on demand") : t ? "Z" : "C";
            GH_CHECK(bad == 0, "%s %s: %lld parts wrong after correction", ty, x->name, (long long)bad);
            GH_CHECK(st.errors_detected >= 1, "%s %s: nothing detected", ty, x->name);
            GH_CHECK(st.errors_corrected == (uint64_t)x->corrected &&
                         st.blocks_recomputed == (uint64_t)x->recomputed && st.uncorrectable == 0,
                     "%s %s: corrected %llu (want %d) recomputed %llu (want %d) uncorrectable %llu",
                     ty, x->name, (unsigned long long)st.errors_corrected, x->corrected,
                     (unsigned long long)st.blocks_recomputed, x->recomputed,
                     (unsigned long long)st.uncorrectable);
            free(out);
            cudaFreeHost(pl.pinned);
            zfree(&d);
        }
}

/* blasft_gpu_run_host_gemm with C and Z: host operands through the GPU engine. */
static void host_entry(void)
{
    for (int t = 0; t < 2; t++) {
        zcase c = mk(t ? BLASFT_TYPE_Z : BLASFT_TYPE_C, 'C', 'N', 61, 47, 29, 3, 0.5, -1.0, 0.25, 0.5, 0);
        zdata d;
        zmake(&d, &c, 4242 + (uint64_t)t);
        blasft_config cfg;
        blasft_config_parse(&cfg, no_env, NULL);
        cfg.block_size = 16;
        blasft_gemm hg;
        memset(&hg, 0, sizeof hg);
        hg.type = c.t;
        hg.transa = c.ta;
        hg.transb = c.tb;
        hg.m = c.m; hg.n = c.n; hg.k = c.k;
        hg.a = d.hA; hg.lda = c.lda;
        hg.b = d.hB; hg.ldb = c.ldb;
        void *hc = malloc(d.ts * (size_t)(c.ldc * c.n));
        memcpy(hc, d.hC0, d.ts * (size_t)(c.ldc * c.n));
        hg.c = hc; hg.ldc = c.ldc;
        hg.alpha[0] = c.alpha[0]; hg.alpha[1] = c.alpha[1];
        hg.beta[0] = c.beta[0]; hg.beta[1] = c.beta[1];
        hg.routine = "test_gpu_complex";
        int rc = blasft_gpu_run_host_gemm(&hg, &cfg);
        GH_CHECK(rc == 0, "host entry %s returned %d", t ? "Z" : "C", rc);
        int64_t bad = 0;
        for (int64_t j = 0; j < c.n; j++)
            for (int64_t i = 0; i < c.m; i++)
                for (int q = 0; q < 2; q++) {
                    int64_t at = 2 * (i + j * c.ldc) + q;
                    double v = t ? ((double *)hc)[at] : ((float *)hc)[at];
                    bad += !(fabs(v - d.ref[2 * (i + j * c.m) + q]) <= d.bound[i + j * c.m]);
                }
        GH_CHECK(bad == 0, "host entry %s: %lld parts off", t ? "Z" : "C", (long long)bad);
        free(hc);
        zfree(&d);
    }
}

/* Scalars in host memory aligned to their parts only (a C double complex or a double[2] has 8
 * bytes, not double2's 16): the engine must read them without faulting (it loaded a Z scalar
 * with a 16-byte-aligned instruction, a crash found by test_gpu_fuzz), and get the right C. C
 * and Z, beta 0 and not, C also promoted. */
static void misaligned_scalars(void)
{
    uint64_t seed = 700;
    for (int v = 0; v < 6; v++) {
        const blasft_type t = v < 4 ? BLASFT_TYPE_Z : BLASFT_TYPE_C;
        const int beta0 = v % 2, promote = v == 5;
        zcase c = mk(t, 'T', 'C', 67, 9, 33, 1, 0.75, -0.5, beta0 ? 0.0 : 0.25, beta0 ? 0.0 : 1.5, 0);
        blasft_gpu_params p;
        gh_params(&p, 32, 1);
        p.promote = promote;
        zdata d;
        zmake(&d, &c, seed++);
        const size_t part = t == BLASFT_TYPE_Z ? 8 : 4;
        unsigned char *buf = malloc(8 * part);
        /* malloc's alignment is at least 16: one and three parts in, both scalars sit off the
         * complex type's alignment */
        void *hal = buf + part, *hbe = buf + 3 * part;
        void *tal = typed(c.alpha, 2, t), *tbe = typed(c.beta, 2, t);
        memcpy(hal, tal, 2 * part);
        memcpy(hbe, tbe, 2 * part);
        blasft_gpu_gemm g = zdesc(&d, hal, hbe);
        const int rc = blasft_gpu_gemm_run(ctx, &g, &p);
        cudaDeviceSynchronize();
        double *out = malloc(16 * (size_t)(c.m * c.n + 1));
        zdownload(&d, out);
        GH_CHECK(rc == 0 && zbad(&d, out, 1.0) == 0, "%s, scalars at %zu-byte offsets: rc %d, %lld parts off",
                 name(&c, &p), part, rc, (long long)zbad(&d, out, 1.0));
        free(out);
        free(buf);
        free(tal);
        free(tbe);
        zfree(&d);
    }
}

/* Relocated replays (cuda/gpu_graphs.cu) of C and Z on a context of their own: the copies go
 * in words of 8 bytes, two per Z element. A shape called on five sets of operands, each at
 * addresses and leading dimensions of its own, is captured at its third call and replayed at
 * the fourth and fifth; every result against the reference; once with lower-case op letters. */
static void moving_operands(void)
{
    blasft_gpu_ctx *const shared = ctx;
    cudaStream_t st;
    cudaStreamCreate(&st);
    ctx = blasft_gpu_ctx_create(st);
    enum { kSets = 5 };
    static const struct {
        blasft_type t;
        char ta, tb;
        int64_t m, n, k;
        double br, bi;
        int dev, lower;
    } cases[] = {
        {BLASFT_TYPE_C, 'C', 'N', 70, 33, 40, 0.5, -0.25, 0, 0},
        {BLASFT_TYPE_Z, 'N', 'T', 33, 70, 65, 0.0, 0.0, 0, 0},
        {BLASFT_TYPE_Z, 'T', 'C', 48, 37, 29, 1.0, 0.5, 1, 0},
        {BLASFT_TYPE_Z, 'N', 'C', 41, 30, 52, 0.25, 0.0, 0, 1},
    };
    double *out = malloc(sizeof(double) * 2 * 70 * 70);
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        blasft_gpu_params p;
        gh_params(&p, 32, 2);
        p.rows_on_demand = 1;
        uint64_t c0 = 0, r0 = 0, c1 = 0, r1 = 0;
        int cached, prio;
        blasft_gpu_debug_graphs(ctx, &c0, &r0, &cached, &prio);
        lower_ops = cases[ci].lower;
        for (int v = 0; v < kSets; v++) {
            zcase c = mk(cases[ci].t, cases[ci].ta, cases[ci].tb, cases[ci].m, cases[ci].n,
                         cases[ci].k, v, 1.5, -0.5, cases[ci].br, cases[ci].bi, cases[ci].dev);
            zdata d;
            zmake(&d, &c, 700 + 10 * ci + v);
            zrun(&d, &p, NULL, out);
            const int64_t bad = zbad(&d, out, 1.0);
            GH_CHECK(bad == 0, "moving operands, %s, set %d: %lld wrong elements",
                     name(&d.c, &p), v, (long long)bad);
            zfree(&d);
        }
        lower_ops = 0;
        blasft_gpu_debug_graphs(ctx, &c1, &r1, &cached, &prio);
        GH_CHECK(c1 - c0 == 1 && r1 - r0 == kSets - 3,
                 "moving operands, case %zu: %llu captured, %llu replayed (1, %d expected)", ci,
                 (unsigned long long)(c1 - c0), (unsigned long long)(r1 - r0), kSets - 3);
    }
    free(out);
    blasft_gpu_ctx_destroy(ctx);
    cudaStreamDestroy(st);
    ctx = shared;
}

int main(void)
{
    ctx = gh_start();
    clean_sweep();
    /* again with the reference GEMMs in parts along k (beta 1 after the first part; with
     * scalars in device memory the workspace's complex one) */
    blasft_gpu_set_ref_parts_mn(ctx, 1);
    clean_sweep();
    blasft_gpu_set_ref_parts_mn(ctx, 0);
    uint64_t seed = 300;
    for (int t = 0; t < 2; t++) {
        blasft_type ty = t ? BLASFT_TYPE_Z : BLASFT_TYPE_C;
        against_host(ty, 'N', 'N', 32, 1, 0.0, seed++);
        against_host(ty, 'C', 'N', 16, 2, 0.5, seed++);
        against_host(ty, 'N', 'C', 32, 2, 0.0, seed++);
        against_host(ty, 'T', 'T', 16, 1, 0.5, seed++);
    }
    faults();
    promoted();
    host_entry();
    misaligned_scalars();
    moving_operands();
    return gh_finish(ctx);
}
