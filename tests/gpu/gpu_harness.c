#include "gpu_harness.h"

#include "gpu_debug.h"

#include "abft/abft_arith.h"

#include "config.h"

#include "hpref.h"

#include <cuda_runtime_api.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int gh_checks, gh_failures;

static void die_cuda(cudaError_t e, const char *what)
{
    if (e != cudaSuccess) {
        fprintf(stderr, "CUDA %s: %s\n", what, cudaGetErrorString(e));
        exit(1);
    }
}

int gh_gpu_present(void)
{
    int n = 0;
    return cudaGetDeviceCount(&n) == cudaSuccess && n > 0 && blasft_gpu_available();
}

void gh_params(blasft_gpu_params *p, int bs, int r)
{
    p->block_size = bs;
    p->checksums = r;
    p->weights = BLASFT_WEIGHTS_LINEAR;
    p->omega = 3.0;
    p->pea_p = 2;
    p->pea_block_lists = 0;
    /* every block's row side (the buffers the kernel tests compare with the host engine); the
     * tests of the default, rows on demand, set 1 */
    p->rows_on_demand = 0;
    p->proj = 0;
    p->promote = 0;
    p->promote_mem = 0;
    p->mode = BLASFT_MODE_CORRECT;
    p->on_error = BLASFT_ON_ERROR_RECOMPUTE;
    p->graphs = 1; /* the library's default: repeated calls replayed from the engine's graphs */
}

int gh_plant_checked(blasft_gpu_ctx *ctx, void *stream, blasft_type want, int64_t i, int64_t j,
                     int q, double v, double *pin)
{
    blasft_type t;
    double *at = blasft_gpu_debug_checked_element(ctx, i, j, &t);
    GH_CHECK(t == want, "the engine checks a C of type %d, not %d", (int)t, (int)want);
    if (t != want)
        return -1;
    /* a promoted GEMM runs in tiles (and chunks of k): the element goes into its tile's result */
    if (!at)
        return 0;
    *pin = v;
    die_cuda(cudaMemcpyAsync(at + q, pin, 8, cudaMemcpyHostToDevice, (cudaStream_t)stream), "plant");
    return 1;
}

int64_t gh_thresholds_lost(blasft_gpu_ctx *ctx, blasft_type t, int64_t m, int64_t n, int64_t k,
                           const blasft_gpu_params *p, int64_t *count)
{
    const int64_t ne = p->checksums * ((m + p->block_size - 1) / p->block_size) * n;
    double *eps = malloc(8 * (size_t)(ne > 0 ? ne : 1));
    const int64_t got = blasft_gpu_debug_fetch(ctx, t, m, n, k, p, BLASFT_GPU_BUF_CCS_EPS, eps);
    int64_t lost = got == ne ? 0 : -1;
    for (int64_t e = 0; e < got && lost >= 0; e++)
        lost += !(eps[e] > 0.0 && isfinite(eps[e]));
    free(eps);
    *count = ne;
    return lost;
}

blasft_gpu_ctx *gh_start(void)
{
    if (!gh_gpu_present()) {
        puts("no GPU: skipped");
        exit(77);
    }
    blasft_gpu_ctx *ctx = blasft_gpu_ctx_create(NULL);
    if (!ctx) {
        fputs("could not create a GPU context\n", stderr);
        exit(1);
    }
    return ctx;
}

int gh_finish(blasft_gpu_ctx *ctx)
{
    blasft_gpu_ctx_destroy(ctx);
    printf("%d checks, %d failures\n", gh_checks, gh_failures);
    return gh_failures ? 1 : 0;
}

void gh_sync(void) { die_cuda(cudaDeviceSynchronize(), "sync"); }

blasft_stats gh_stats_delta(const blasft_stats *before)
{
    blasft_stats now, d;
    blasft_get_stats(&now);
    d.protected_gemms = now.protected_gemms - before->protected_gemms;
    d.unprotected_gemms = now.unprotected_gemms - before->unprotected_gemms;
    d.checks = now.checks - before->checks;
    d.errors_detected = now.errors_detected - before->errors_detected;
    d.errors_corrected = now.errors_corrected - before->errors_corrected;
    d.blocks_recomputed = now.blocks_recomputed - before->blocks_recomputed;
    d.uncorrectable = now.uncorrectable - before->uncorrectable;
    d.encoder_faults = now.encoder_faults - before->encoder_faults;
    d.faults_injected = now.faults_injected - before->faults_injected;
    d.false_alarms = now.false_alarms - before->false_alarms;
    return d;
}

blasft_stats gh_run_counted(blasft_gpu_ctx *ctx, const blasft_gpu_gemm *g,
                            const blasft_gpu_params *p, const char *what)
{
    blasft_stats before;
    gh_sync();
    blasft_get_stats(&before);
    int rc = blasft_gpu_gemm_run(ctx, g, p);
    GH_CHECK(rc == 0, "%s: blasft_gpu_gemm_run returned %d", what, rc);
    gh_sync();
    return gh_stats_delta(&before);
}

void *gh_typed_copy(const double *x, int64_t count, int single)
{
    size_t ts = single ? 4 : 8;
    void *y = malloc(ts * (size_t)(count > 0 ? count : 1));
    for (int64_t i = 0; i < count; i++) {
        if (single)
            ((float *)y)[i] = (float)x[i];
        else
            ((double *)y)[i] = x[i];
    }
    return y;
}

void *gh_upload(const void *h, size_t bytes)
{
    void *d = NULL;
    die_cuda(cudaMalloc(&d, bytes ? bytes : 8), "cudaMalloc");
    if (bytes)
        die_cuda(cudaMemcpy(d, h, bytes, cudaMemcpyHostToDevice), "upload");
    return d;
}

double gh_opa(const gh_data *d, int64_t i, int64_t l)
{
    return d->c.ta == 'N' ? d->A[i + l * d->c.lda] : d->A[l + i * d->c.lda];
}
double gh_opb(const gh_data *d, int64_t l, int64_t j)
{
    return d->c.tb == 'N' ? d->B[l + j * d->c.ldb] : d->B[j + l * d->c.ldb];
}

void gh_make(gh_data *d, const gh_case *c, uint64_t seed) { gh_make_series(d, c, seed, DG_FULL); }

void gh_make_series(gh_data *d, const gh_case *c, uint64_t seed, int series)
{
    memset(d, 0, sizeof *d);
    d->c = *c;
    dg_rng rng;
    dg_seed(&rng, seed);
    dg_params dp;
    memset(&dp, 0, sizeof dp);
    dp.series = (dg_series)series;
    int64_t ar = c->ta == 'N' ? c->m : c->k, ac = c->ta == 'N' ? c->k : c->m;
    int64_t br = c->tb == 'N' ? c->k : c->n, bc = c->tb == 'N' ? c->n : c->k;
    int64_t na = c->lda * ac, nb = c->ldb * bc, nc = c->ldc * c->n;
    d->A = malloc(8 * (size_t)(na + 1));
    d->B = malloc(8 * (size_t)(nb + 1));
    d->C0 = malloc(8 * (size_t)(nc + 1));
    /* padding rows hold NaN: reading them would show */
    for (int64_t i = 0; i < na; i++) d->A[i] = NAN;
    for (int64_t i = 0; i < nb; i++) d->B[i] = NAN;
    for (int64_t i = 0; i < nc; i++) d->C0[i] = NAN;
    dp.role = DG_LEFT; /* cancelling pairs: along k for op = N */
    if (ar && ac) dg_fill(&rng, DG_D, &dp, ar, ac, d->A, c->lda);
    dp.role = DG_RIGHT;
    if (br && bc) dg_fill(&rng, DG_D, &dp, br, bc, d->B, c->ldb);
    if (c->m && c->n) dg_fill(&rng, DG_D, &dp, c->m, c->n, d->C0, c->ldc);
    /* round to the type once, so host doubles and device data are the same numbers */
    if (c->t == BLASFT_TYPE_S) {
        for (int64_t i = 0; i < na; i++) d->A[i] = (float)d->A[i];
        for (int64_t i = 0; i < nb; i++) d->B[i] = (float)d->B[i];
        for (int64_t i = 0; i < nc; i++) d->C0[i] = (float)d->C0[i];
    }
    if (c->c_vector)
        for (int64_t j = 1; j < c->n; j++)
            memcpy(d->C0 + j * c->ldc, d->C0, 8 * (size_t)c->m);
    size_t ts = c->t == BLASFT_TYPE_S ? 4 : 8;
    d->hA = gh_typed_copy(d->A, na, c->t == BLASFT_TYPE_S);
    d->hB = gh_typed_copy(d->B, nb, c->t == BLASFT_TYPE_S);
    d->hC0 = gh_typed_copy(d->C0, nc, c->t == BLASFT_TYPE_S);
    d->dA = gh_upload(d->hA, ts * na);
    d->dB = gh_upload(d->hB, ts * nb);
    d->dC = gh_upload(d->hC0, ts * nc);
    if (c->c_vector) {
        d->dV = gh_upload(d->hC0, ts * (size_t)c->m);
        gh_reset_c(d);
    }
    float af = (float)c->alpha, bf = (float)c->beta;
    d->dalpha = gh_upload(c->t == BLASFT_TYPE_S ? (void *)&af : (void *)&c->alpha, ts);
    d->dbeta = gh_upload(c->t == BLASFT_TYPE_S ? (void *)&bf : (void *)&c->beta, ts);
    /* reference */
    double u = c->t == BLASFT_TYPE_S ? ldexp(1.0, -24) : ldexp(1.0, -53);
    d->ref = malloc(8 * (size_t)(c->m * c->n + 1));
    d->bound = malloc(8 * (size_t)(c->m * c->n + 1));
    for (int64_t j = 0; j < c->n; j++)
        for (int64_t i = 0; i < c->m; i++) {
            hp_dd s = hp_from(0.0);
            double mag = 0.0;
            for (int64_t l = 0; l < c->k; l++) {
                s = hp_add_prod(s, gh_opa(d, i, l), gh_opb(d, l, j));
                mag += fabs(gh_opa(d, i, l) * gh_opb(d, l, j));
            }
            s = hp_mul_d(s, c->alpha);
            double cold = c->beta != 0.0 ? d->C0[i + j * c->ldc] : 0.0;
            s = hp_add(s, hp_mul_d(hp_from(cold), c->beta));
            d->ref[i + j * c->m] = hp_to_double(s);
            d->bound[i + j * c->m] =
                2.0 * (double)(c->k + 3) * u * (fabs(c->alpha) * mag + fabs(c->beta * cold)) + 1e-300;
        }
}

void gh_free(gh_data *d)
{
    free(d->A); free(d->B); free(d->C0);
    free(d->hA); free(d->hB); free(d->hC0);
    free(d->ref); free(d->bound);
    cudaFree(d->dA); cudaFree(d->dB); cudaFree(d->dC);
    cudaFree(d->dalpha); cudaFree(d->dbeta);
    cudaFree(d->dV);
}

void gh_reset_c(gh_data *d)
{
    size_t ts = d->c.t == BLASFT_TYPE_S ? 4 : 8;
    if (d->c.c_vector)
        die_cuda(cudaMemset(d->dC, 0xff, ts * d->c.ldc * d->c.n), "reset");
    else
        die_cuda(cudaMemcpy(d->dC, d->hC0, ts * d->c.ldc * d->c.n, cudaMemcpyHostToDevice),
                 "reset");
}

blasft_gpu_gemm gh_desc(const gh_data *d)
{
    static float af, bf;
    blasft_gpu_gemm g;
    memset(&g, 0, sizeof g);
    g.type = d->c.t;
    g.transa = d->c.ta;
    g.transb = d->c.tb;
    g.m = d->c.m; g.n = d->c.n; g.k = d->c.k;
    g.a = d->dA; g.lda = d->c.lda;
    g.b = d->dB; g.ldb = d->c.ldb;
    g.c = d->dC; g.ldc = d->c.ldc;
    g.scalars_on_device = d->c.device_scalars;
    if (d->c.device_scalars) {
        g.alpha = d->dalpha;
        g.beta = d->dbeta;
    } else if (d->c.t == BLASFT_TYPE_S) {
        af = (float)d->c.alpha;
        bf = (float)d->c.beta;
        g.alpha = &af;
        g.beta = &bf;
    } else {
        g.alpha = &d->c.alpha;
        g.beta = &d->c.beta;
    }
    g.routine = "test_gpu";
    g.c_vector = d->dV;
    return g;
}

void gh_download_c(const gh_data *d, double *out)
{
    size_t ts = d->c.t == BLASFT_TYPE_S ? 4 : 8;
    int64_t nc = d->c.ldc * d->c.n;
    void *h = malloc(ts * (size_t)(nc + 1));
    die_cuda(cudaMemcpy(h, d->dC, ts * nc, cudaMemcpyDeviceToHost), "download");
    for (int64_t j = 0; j < d->c.n; j++)
        for (int64_t i = 0; i < d->c.m; i++)
            out[i + j * d->c.m] = d->c.t == BLASFT_TYPE_S ? ((float *)h)[i + j * d->c.ldc]
                                                          : ((double *)h)[i + j * d->c.ldc];
    free(h);
}

int64_t gh_bad_elements(const gh_data *d, const double *out, int64_t *fi, int64_t *fj)
{
    int64_t bad = 0;
    for (int64_t j = 0; j < d->c.n; j++)
        for (int64_t i = 0; i < d->c.m; i++) {
            int64_t e = i + j * d->c.m;
            if (!(fabs(out[e] - d->ref[e]) <= d->bound[e])) {
                if (!bad && fi) {
                    *fi = i;
                    *fj = j;
                }
                bad++;
            }
        }
    return bad;
}

static const char *no_env(const char *name, void *c)
{
    (void)name;
    (void)c;
    return NULL;
}

void gh_host_cfg(blasft_config *cfg, const blasft_gpu_params *p)
{
    blasft_config_parse(cfg, no_env, NULL);
    cfg->block_size = p->block_size;
    cfg->checksums = p->checksums;
    cfg->weights = BLASFT_WEIGHTS_LINEAR;
    cfg->pea_p = p->pea_p;
    cfg->omega = p->omega;
    cfg->threshold = BLASFT_THRESHOLD_PEA;
    /* the host engine computes S and C in double by default (BLASFT_PROMOTE=auto): the oracle of
     * the GPU's native S and C kernels must not */
    cfg->promote = p->promote ? BLASFT_PROMOTE_ON : BLASFT_PROMOTE_OFF;
}

static double proj_opa(const gh_proj_gemm *g, int64_t i, int64_t l)
{
    return g->ta == 'N' ? g->A[i + l * g->lda] : g->A[l + i * g->lda];
}
static double proj_opb(const gh_proj_gemm *g, int64_t l, int64_t j)
{
    return g->tb == 'N' ? g->B[l + j * g->ldb] : g->B[j + l * g->ldb];
}

void gh_proj_oracle(const gh_proj_gemm *g, int64_t I, int r, int64_t j, double *ref, double *eps,
                    double *parts)
{
    const int bs = g->bs;
    const int64_t i0 = I * bs, len = g->m - i0 < bs ? g->m - i0 : bs, k = g->k;
    hp_dd sum = hp_from(0.0);
    double e_seq = 0, e_lane = 0, ends = 0, prod = 0, last = 0, osq = 0, enc = 0;
    double *s = calloc((size_t)len * 3, sizeof *s); /* per row: sequential, lane 0, lane 1 */
    for (int64_t l = 0; l < k; l++) {
        const double b = proj_opb(g, l, j);
        double cs = 0;
        for (int64_t i = 0; i < len; i++) {
            const double w = r == 0 ? 1.0 : blasft_weight(g->weights, (int)i, bs);
            const double a = proj_opa(g, i0 + i, l);
            s[3 * i] += a * b;
            s[3 * i + 1 + (l & 1)] += a * b;
            e_seq += w * w * s[3 * i] * s[3 * i];
            e_lane += w * w * s[3 * i + 1 + (l & 1)] * s[3 * i + 1 + (l & 1)];
            prod += (w * a * b) * (w * a * b);
            cs += w * a;
        }
        enc += (cs * b) * (cs * b);
    }
    for (int64_t i = 0; i < len; i++) {
        const double w = r == 0 ? 1.0 : blasft_weight(g->weights, (int)i, bs);
        ends += w * w * (s[3 * i + 1] * s[3 * i + 1] + s[3 * i + 2] * s[3 * i + 2]);
        last += w * w * s[3 * i] * s[3 * i];
        hp_dd e = hp_from(0.0);
        for (int64_t l = 0; l < k; l++)
            e = hp_add_prod(e, proj_opa(g, i0 + i, l), proj_opb(g, l, j));
        e = hp_mul_d(e, g->alpha);
        if (g->beta != 0.0) {
            const double co = g->C0[(i0 + i) + j * g->ldc];
            e = hp_add(e, hp_mul_d(hp_from(co), g->beta));
            osq += (w * co) * (w * co);
        }
        sum = hp_add(sum, hp_mul_d(e, w));
    }
    free(s);
    const double vd = fmax(e_seq, e_lane + 2.0 * ends) + prod + 4.0 * last;
    *ref = hp_to_double(sum);
    *eps = blasft_proj_eps(g->single ? BLASFT_T_FLOAT : BLASFT_T_DOUBLE, (double)k, fabs(g->alpha),
                           fabs(g->beta), vd, osq, enc, 0.0, fabs(*ref));
    if (parts) {
        parts[0] = e_seq;
        parts[1] = e_lane + 2.0 * ends;
        parts[2] = prod;
        parts[3] = last;
    }
}
