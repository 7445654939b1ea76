/* The GPU side of the threshold campaign (docs/thresholds.md, "PROJ on the GPU"). Two modes:
 *
 *   gpu_campaign fp SECONDS METHOD SEED NLIST [auto]
 *     Fault-free protected GEMMs for SECONDS (auto: S promoted where BLASFT_PROMOTE=auto would), rotating the series (T_full, T_pos, heavy-tailed,
 *     cancelling, T_orth with kappa 2, 1024, 65536), S and D, n from NLIST (square, e.g.
 *     "256,1024,4096,16384"; "MxNxK" items too), BS 32-256, one and two checksums, alpha/beta
 *     variants and transposes. Every checksum element is compared: the count of first-tier
 *     flags, the largest syndrome / threshold and the distribution of q = threshold / |syndrome|
 *     (the syndrome of PROJ's double reference is the GEMM's whole rounding error on the
 *     checksum). One JSON line per (type, series) and a total.
 *
 *   gpu_campaign flips TYPE [MxNx]K BS NFLIPS METHOD SEED [promote|auto] [full|pos|orthKAPPA]
 *     m = n = 256 unless given, data uniform in [-1, 1] (full, the default; pos: [0, 1); orth:
 *     T_orth of that kappa), alpha 1, beta 0: one bit of a random element of C flipped after
 *     the GEMM (NFLIPS GEMMs, the bit cycling over every position). A flip is detected when the
 *     first tier flags (the engine then corrects, recomputes or counts a false alarm). Per bit
 *     and per significance class of docs/campaign-host.md (err_abs: the element's own rounding
 *     error against the exact product; err_prob: its PEA sigma), the exact product computed for
 *     the flipped elements only. promote: S computed in double; auto: where
 *     BLASFT_PROMOTE=auto would.
 *
 * METHOD: pea or proj. Data come from pools generated on the host once (windows at random
 * offsets serve as fresh matrices). */
#include "abft/abft_arith.h"
#include "datagen.h"
#include "gpu_debug.h"
#include "gpu_harness.h"
#include "hpref.h"

#include <cuda_runtime_api.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void ck(cudaError_t e, const char *w)
{
    if (e != cudaSuccess) {
        fprintf(stderr, "CUDA %s: %s\n", w, cudaGetErrorString(e));
        exit(1);
    }
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static uint64_t mix(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}
static double unit(uint64_t seed, uint64_t i) /* uniform [0, 1) */
{
    return (double)(mix(seed + (i + 1) * 0x9e3779b97f4a7c15ULL) >> 11) * 0x1.0p-53;
}

/* Pools: full [-1, 1), pos [0, 1), heavy (random sign, 10^u, u in [-3, 3)), and the cancelling
 * pair pools (x, -x(1 + d)) for op(A) and (y, y(1 + d)) for op(B), d = +-10^-u, u in [0, 6). */
enum { P_FULL, P_POS, P_HEAVY, P_CANCEL_A, P_CANCEL_B, NPOOL };
typedef struct gen_job {
    double *x;
    size_t lo, hi;
    int kind;
    uint64_t seed;
} gen_job;

static void *gen_run(void *arg)
{
    gen_job *j = arg;
    for (size_t i = j->lo; i < j->hi; i++) {
        const double u = unit(j->seed, i), v = unit(j->seed ^ 0x5555, i);
        switch (j->kind) {
        case P_FULL: j->x[i] = 2.0 * u - 1.0; break;
        case P_POS: j->x[i] = u; break;
        case P_HEAVY: j->x[i] = (v < 0.5 ? -1.0 : 1.0) * pow(10.0, 6.0 * u - 3.0); break;
        default: {
            /* pairs (2t, 2t + 1) share x; the second is scaled by -(1 + d) or (1 + d) */
            const size_t t = i & ~(size_t)1;
            const double x = 2.0 * unit(j->seed, t) - 1.0;
            const double d = (unit(j->seed ^ 0x7777, t) < 0.5 ? -1.0 : 1.0) *
                             pow(10.0, -6.0 * unit(j->seed ^ 0x9999, t));
            j->x[i] = (i & 1) ? (j->kind == P_CANCEL_A ? -x * (1.0 + d) : x * (1.0 + d)) : x;
        }
        }
    }
    return NULL;
}

static double *gen_pool(size_t len, int kind, uint64_t seed)
{
    enum { NT = 16 };
    double *x = malloc(8 * len);
    pthread_t th[NT];
    gen_job jobs[NT];
    for (int t = 0; t < NT; t++) {
        jobs[t] = (gen_job){x, len * t / NT, len * (t + 1) / NT, kind, seed};
        pthread_create(&th[t], NULL, gen_run, &jobs[t]);
    }
    for (int t = 0; t < NT; t++)
        pthread_join(th[t], NULL);
    return x;
}

/* A pool on the device in both types (float: the double values rounded once). */
typedef struct dpool {
    double *d;
    float *s;
    size_t len;
} dpool;

static dpool upload_pool(const double *x, size_t len)
{
    dpool p = {NULL, NULL, len};
    float *f = malloc(4 * len);
    for (size_t i = 0; i < len; i++)
        f[i] = (float)x[i];
    ck(cudaMalloc((void **)&p.d, 8 * len), "cudaMalloc pool");
    ck(cudaMalloc((void **)&p.s, 4 * len), "cudaMalloc pool");
    ck(cudaMemcpy(p.d, x, 8 * len, cudaMemcpyHostToDevice), "upload");
    ck(cudaMemcpy(p.s, f, 4 * len, cudaMemcpyHostToDevice), "upload");
    free(f);
    return p;
}

static const void *window(const dpool *p, int single, size_t need, uint64_t r)
{
    size_t off = need < p->len ? (size_t)(r % (p->len - need + 1)) & ~(size_t)1 : 0;
    return single ? (const void *)(p->s + off) : (const void *)(p->d + off);
}

/* The harness's parameters (linear weights, PEA omega 3 and p 2, correct and recompute) with
 * the row side on demand, the engine's default. */
static blasft_gpu_params params(int bs, int r, int proj)
{
    blasft_gpu_params p;
    gh_params(&p, bs, r);
    p.rows_on_demand = 1;
    p.proj = proj;
    return p;
}

static uint64_t flags_of(const blasft_stats *a, const blasft_stats *b)
{
    return (b->errors_detected - a->errors_detected) + (b->blocks_recomputed - a->blocks_recomputed) +
           (b->false_alarms - a->false_alarms) + (b->uncorrectable - a->uncorrectable);
}

enum { QBINS = 24 };
typedef struct tally {
    uint64_t gemms, checks, flags, q[QBINS];
    double worst, qmin;
} tally;

static void tally_json(const char *type, const char *series, const char *method, const tally *t)
{
    /* q_min is infinite where no syndrome was measured (PEA): JSON null, not a bare inf */
    char qmin[32];
    if (isfinite(t->qmin))
        snprintf(qmin, sizeof qmin, "%.3f", t->qmin);
    else
        snprintf(qmin, sizeof qmin, "null");
    printf("{\"mode\":\"fp\",\"method\":\"%s\",\"type\":\"%s\",\"series\":\"%s\",\"gemms\":%llu,"
           "\"checks\":%llu,\"flags\":%llu,\"worst_ratio\":%.4f,\"q_min\":%s,\"q_log2_hist\":[",
           method, type, series, (unsigned long long)t->gemms, (unsigned long long)t->checks,
           (unsigned long long)t->flags, t->worst, qmin);
    for (int b = 0; b < QBINS; b++)
        printf("%s%llu", b ? "," : "", (unsigned long long)t->q[b]);
    printf("]}\n");
}

static void tally_add(tally *t, const tally *x)
{
    t->gemms += x->gemms;
    t->checks += x->checks;
    t->flags += x->flags;
    for (int b = 0; b < QBINS; b++)
        t->q[b] += x->q[b];
    t->worst = fmax(t->worst, x->worst);
    t->qmin = fmin(t->qmin, x->qmin);
}

static const char *const series_names[] = {"full", "pos", "heavy", "cancel", "orth2", "orth1024",
                                           "orth65536"};
enum { NSERIES = 7 };

/* A GEMM of the campaign, for diagnose. */
typedef struct diag_case {
    int single;
    char ta, tb;
    int64_t m, n, k;
    const void *A;
    int64_t lda;
    const void *B;
    int64_t ldb;
    const void *C0; /* the old C (ld m) */
    double alpha, beta;
    int bs, r;
    int checked_double; /* an S GEMM checked in double (promoted): the oracle's rounding too */
} diag_case;

/* syndrome / threshold above which a check is diagnosed (CAMPAIGN_DIAG, default 0.9) */
static double diag_at = 0.9;

static double *fetch(const void *d, int single, int64_t count)
{
    double *h = malloc(8 * (size_t)count);
    if (single) {
        float *f = malloc(4 * (size_t)count);
        ck(cudaMemcpy(f, d, 4 * (size_t)count, cudaMemcpyDeviceToHost), "diag fetch");
        for (int64_t i = 0; i < count; i++)
            h[i] = f[i];
        free(f);
    } else {
        ck(cudaMemcpy(h, d, 8 * (size_t)count, cudaMemcpyDeviceToHost), "diag fetch");
    }
    return h;
}

/* One check near or over its threshold: the exact energies of its block (sequential and 2-lane,
 * as the model), the threshold they give, the exact reference, and how the GEMM's real error
 * and PROJ's estimate compare with them. One JSON line. */
static void diagnose(const diag_case *c, int64_t e, double eps, double ref, double rec,
                     const char *series)
{
    const int64_t nv = (int64_t)c->r * ((c->m + c->bs - 1) / c->bs);
    const int64_t u = e % nv, j = e / nv, I = u / c->r, i0 = I * c->bs;
    const int w_is = (int)(u % c->r);
    const int64_t len = c->m - i0 < c->bs ? c->m - i0 : c->bs;
    const int64_t ar = c->ta == 'N' ? c->m : c->k, ac = c->ta == 'N' ? c->k : c->m;
    const int64_t br = c->tb == 'N' ? c->k : c->n, bc = c->tb == 'N' ? c->n : c->k;
    double *A = fetch(c->A, c->single, c->lda * (ac - 1) + ar);
    double *B = fetch(c->B, c->single, c->ldb * (bc - 1) + br);
    double *C0 = fetch(c->C0, c->single, c->m * c->n);
    const gh_proj_gemm og = {c->single && !c->checked_double, c->ta, c->tb, c->m, c->k, A, B, C0, c->lda, c->ldb, c->m,
                             c->alpha, c->beta, c->bs, BLASFT_W_LINEAR};
    double exact, oeps, parts[4];
    gh_proj_oracle(&og, I, w_is, j, &exact, &oeps, parts);
    printf("{\"mode\":\"diag\",\"type\":\"%c\",\"series\":\"%s\",\"ta\":\"%c\",\"tb\":\"%c\","
           "\"m\":%lld,\"n\":%lld,\"k\":%lld,\"bs\":%d,\"r\":%d,\"alpha\":%g,\"beta\":%g,"
           "\"block\":%lld,\"w\":%d,\"j\":%lld,\"len\":%lld,\"ratio\":%.4f,"
           "\"eps_over_exact_eps\":%.4f,\"syn_over_exact_eps\":%.4f,\"ref_minus_exact\":%.3g,"
           "\"syn\":%.3g,\"rec_minus_exact\":%.3g,\"eps\":%.3g,\"rec_err_over_seq_sigma\":%.3f,"
           "\"e_seq\":%.4g,\"e_lane\":%.4g,\"prod\":%.4g,\"last\":%.4g}\n",
           c->single ? 'S' : 'D', series, c->ta, c->tb, (long long)c->m, (long long)c->n,
           (long long)c->k, c->bs, c->r, c->alpha, c->beta, (long long)I, w_is, (long long)j,
           (long long)len, fabs(ref - rec) / eps, eps / oeps, fabs(ref - rec) / oeps,
           ref - exact, ref - rec, rec - exact, eps,
           /* the C side's error in units of the sequential walk's rounding sigma (u^2/3 model) */
           (rec - exact) / (fabs(c->alpha) * ldexp(1.0, og.single ? -24 : -53) * sqrt(parts[0] / 3.0)),
           parts[0], parts[1], parts[2], parts[3]);
    fflush(stdout);
    free(A);
    free(B);
    free(C0);
}

/* The type the engine checked the GEMM just run in: double where it was promoted. Where it ran in
 * tiles or chunks of k, its buffers hold the last part's only: then its own type, for which
 * blasft_gpu_debug_fetch refuses (-1), so nothing is read from another layout. */
static blasft_type checked_type(blasft_gpu_ctx *ctx, const blasft_gpu_gemm *g)
{
    blasft_type t;
    int64_t m, n, k;
    if (blasft_gpu_debug_last_run(ctx, &t, &m, &n, &k) || m != g->m || n != g->n || k != g->k)
        return g->type;
    return t;
}

/* The column checks of the GEMM just run, in the checked C's type ct (double where promoted):
 * thresholds, references (PROJ's double ones, or PEA's in ct, widened to double) and the
 * recomputed sums, ne each. 0 where a fetch failed. */
static int fetch_col_checks(blasft_gpu_ctx *ctx, blasft_type ct, int64_t m, int64_t n, int64_t k,
                            const blasft_gpu_params *p, int64_t ne, double *eps, double *ref,
                            double *rec)
{
    const blasft_gpu_buf rb = p->proj ? BLASFT_GPU_BUF_PROJ_REF : BLASFT_GPU_BUF_CCS_REF;
    if (blasft_gpu_debug_fetch(ctx, ct, m, n, k, p, BLASFT_GPU_BUF_CCS_EPS, eps) != ne ||
        blasft_gpu_debug_fetch(ctx, ct, m, n, k, p, rb, ref) != ne ||
        blasft_gpu_debug_fetch(ctx, ct, m, n, k, p, BLASFT_GPU_BUF_CCS_REC, rec) != ne)
        return 0;
    if (!p->proj && ct == BLASFT_TYPE_S) /* widen in place, from the end */
        for (int64_t e = ne - 1; e >= 0; e--)
            ref[e] = ((const float *)ref)[e];
    return 1;
}

/* A flagged GEMM's worst column check, with the exact checksum of the oracle beside it. */
static void diagnose_flag(blasft_gpu_ctx *ctx, const blasft_gpu_params *p, const diag_case *dc,
                          blasft_type ct, const char *series)
{
    const int64_t ne = dc->r * ((dc->m + dc->bs - 1) / dc->bs) * dc->n;
    double *eps = malloc(8 * (size_t)ne), *ref = malloc(8 * (size_t)ne), *rec = malloc(8 * (size_t)ne);
    if (fetch_col_checks(ctx, ct, dc->m, dc->n, dc->k, p, ne, eps, ref, rec)) {
        int64_t we = -1;
        double wr = -1.0;
        for (int64_t e = 0; e < ne; e++) {
            /* a zero threshold under a nonzero syndrome, or a NaN, is the worst */
            const double syn = fabs(ref[e] - rec[e]);
            const double ratio = syn == 0.0 ? 0.0 : syn != syn ? INFINITY : syn / eps[e];
            if (ratio > wr)
                wr = ratio, we = e;
        }
        if (we < 0)
            we = 0;
        diagnose(dc, we, eps[we], ref[we], rec[we], series);
    } else {
        printf("{\"mode\":\"diag\",\"fetch\":\"failed\"}\n");
    }
    free(eps);
    free(ref);
    free(rec);
}

static int mode_fp(double seconds, int proj, uint64_t seed, const char *nlist, int promote)
{
    if (getenv("CAMPAIGN_DIAG"))
        diag_at = atof(getenv("CAMPAIGN_DIAG"));
    int64_t shapes[32][3], nshape = 0, most = 0;
    char buf[512];
    snprintf(buf, sizeof buf, "%s", nlist);
    for (char *t = strtok(buf, ","); t && nshape < 32; t = strtok(NULL, ",")) {
        long long m, n, k;
        if (sscanf(t, "%lldx%lldx%lld", &m, &n, &k) != 3)
            m = n = k = atoll(t);
        shapes[nshape][0] = m, shapes[nshape][1] = n, shapes[nshape][2] = k;
        most = m * k > most ? m * k : most;
        most = k * n > most ? k * n : most;
        most = m * n > most ? m * n : most;
        nshape++;
    }
    /* pools: the largest operand plus room for random offsets */
    const size_t plen = (size_t)most + ((size_t)1 << 22);
    dpool pools[NPOOL];
    for (int k = 0; k < NPOOL; k++) {
        double *x = gen_pool(plen, k, seed * 131 + (uint64_t)k);
        pools[k] = upload_pool(x, plen);
        free(x);
    }
    /* T_orth: A and B of n = 1024, kappa 2, 1024, 65536, made once (dg_fill, 8 reflections) */
    enum { NO = 1024 };
    dpool orth[3][2];
    for (int q = 0; q < 3; q++)
        for (int s = 0; s < 2; s++) {
            dg_rng rng;
            dg_seed(&rng, seed * 977 + (uint64_t)(q * 2 + s));
            dg_params dp;
            memset(&dp, 0, sizeof dp);
            dp.series = DG_ORTH;
            dp.kappa = q == 0 ? 2.0 : q == 1 ? 1024.0 : 65536.0;
            dp.reflections = 8;
            double *x = malloc(8 * (size_t)NO * NO);
            dg_fill(&rng, DG_D, &dp, NO, NO, x, NO);
            orth[q][s] = upload_pool(x, (size_t)NO * NO);
            free(x);
        }
    blasft_gpu_ctx *ctx = blasft_gpu_ctx_create(NULL);
    if (!ctx)
        return 77;
    void *C = NULL;
    size_t cmax = 0;
    tally tl[2][NSERIES];
    memset(tl, 0, sizeof tl);
    for (int t = 0; t < 2; t++)
        for (int s = 0; s < NSERIES; s++)
            tl[t][s].qmin = INFINITY;
    static const int bss[] = {32, 64, 128, 256};
    static const double ab[][2] = {{1.0, 0.0}, {-0.75, 0.5}, {2.5, -1.0}, {1.0, 1.0}};
    double *eps = NULL, *ref = NULL, *rec = NULL;
    size_t ecap = 0;
    const double t0 = now_s();
    /* CAMPAIGN_FROM=it: the sequence from iteration it on (to repeat a flagged GEMM) */
    const uint64_t from = getenv("CAMPAIGN_FROM") ? strtoull(getenv("CAMPAIGN_FROM"), NULL, 10) : 0;
    for (uint64_t it = from; now_s() - t0 < seconds; it++) {
        const uint64_t r = mix(seed * 0x1000003 + it);
        const int single = (int)(it & 1), series = (int)((it >> 1) % NSERIES);
        const int bs = bss[(r >> 8) % 4], R = 1 + (int)((r >> 12) & 1);
        const double *sc = ab[(r >> 16) % 4];
        int64_t m, n, k;
        char ta = 'N', tb = 'N';
        const void *A, *B;
        int64_t lda, ldb;
        if (series >= 4) {
            m = n = k = NO;
            A = single ? (const void *)orth[series - 4][0].s : (const void *)orth[series - 4][0].d;
            B = single ? (const void *)orth[series - 4][1].s : (const void *)orth[series - 4][1].d;
            lda = ldb = NO;
            ta = (r >> 20) & 1 ? 'T' : 'N';
            tb = (r >> 21) & 1 ? 'T' : 'N';
        } else {
            const int64_t *sh = shapes[(r >> 24) % (uint64_t)nshape];
            m = sh[0], n = sh[1], k = sh[2];
            if (series == 3) { /* pairs along k: op(A) = A^T of a k x m array, op(B) = B */
                ta = 'T';
                lda = k + (k & 1);
                ldb = k + (k & 1);
                A = window(&pools[P_CANCEL_A], single, (size_t)(lda * m), r >> 28);
                B = window(&pools[P_CANCEL_B], single, (size_t)(ldb * n), mix(r));
            } else {
                ta = (r >> 20) & 1 ? 'T' : 'N';
                tb = (r >> 21) & 1 ? 'T' : 'N';
                lda = ta == 'N' ? m : k;
                ldb = tb == 'N' ? k : n;
                const int pk = series == 0 ? P_FULL : series == 1 ? P_POS : P_HEAVY;
                A = window(&pools[pk], single, (size_t)(m * k), r >> 28);
                B = window(&pools[pk], single, (size_t)(k * n), mix(r));
            }
        }
        const size_t ts = single ? 4 : 8;
        if ((size_t)(m * n) * ts > cmax) {
            cudaFree(C);
            cmax = (size_t)(m * n) * ts;
            ck(cudaMalloc(&C, cmax), "cudaMalloc C");
        }
        /* the old C: a pool window (full data) */
        const void *C0 = window(&pools[P_FULL], single, (size_t)(m * n), mix(r + 1));
        ck(cudaMemcpy(C, C0, ts * m * n, cudaMemcpyDeviceToDevice), "old C");
        float af = (float)sc[0], bf = (float)sc[1];
        blasft_gpu_gemm g;
        memset(&g, 0, sizeof g);
        g.type = single ? BLASFT_TYPE_S : BLASFT_TYPE_D;
        g.transa = ta;
        g.transb = tb;
        g.m = m, g.n = n, g.k = k;
        g.alpha = single ? (const void *)&af : (const void *)&sc[0];
        g.beta = single ? (const void *)&bf : (const void *)&sc[1];
        g.a = A, g.lda = lda, g.b = B, g.ldb = ldb, g.c = C, g.ldc = m;
        g.routine = "campaign";
        blasft_gpu_params p = params(bs, R, proj);
        p.promote = promote; /* 2: BLASFT_PROMOTE=auto's choice for S */
        blasft_stats s0, s1;
        ck(cudaDeviceSynchronize(), "sync");
        blasft_get_stats(&s0);
        if (blasft_gpu_gemm_run(ctx, &g, &p) != 0) {
            fprintf(stderr, "gemm failed\n");
            return 1;
        }
        ck(cudaDeviceSynchronize(), "sync");
        blasft_get_stats(&s1);
        const int64_t mb = (m + bs - 1) / bs, ne = R * mb * n;
        tally *T = &tl[single][series];
        T->gemms++;
        T->checks += (uint64_t)ne;
        T->flags += flags_of(&s0, &s1);
        const blasft_type ct = checked_type(ctx, &g);
        const diag_case dc = {single, ta, tb, m, n, k, A, lda, B, ldb, C0, sc[0], sc[1], bs, R,
                              single && ct == BLASFT_TYPE_D};
        if (flags_of(&s0, &s1)) { /* which GEMM, and what the engine made of it */
            printf("{\"mode\":\"flag\",\"it\":%llu,\"type\":\"%c\",\"series\":\"%s\",\"ta\":\"%c\","
                   "\"tb\":\"%c\",\"m\":%lld,\"n\":%lld,\"k\":%lld,\"bs\":%d,\"r\":%d,\"alpha\":%g,"
                   "\"beta\":%g,\"detected\":%llu,\"corrected\":%llu,\"recomputed\":%llu,"
                   "\"false_alarms\":%llu,\"uncorrectable\":%llu}\n",
                   (unsigned long long)it, single ? 'S' : 'D', series_names[series], ta, tb,
                   (long long)m, (long long)n, (long long)k, bs, R, sc[0], sc[1],
                   (unsigned long long)(s1.errors_detected - s0.errors_detected),
                   (unsigned long long)(s1.errors_corrected - s0.errors_corrected),
                   (unsigned long long)(s1.blocks_recomputed - s0.blocks_recomputed),
                   (unsigned long long)(s1.false_alarms - s0.false_alarms),
                   (unsigned long long)(s1.uncorrectable - s0.uncorrectable));
            if (!proj)
                diagnose_flag(ctx, &p, &dc, ct, series_names[series]);
        }
        if (proj) { /* the syndromes against PROJ's double references */
            if ((size_t)ne > ecap) {
                ecap = (size_t)ne;
                eps = realloc(eps, 8 * ecap);
                ref = realloc(ref, 8 * ecap);
                rec = realloc(rec, 8 * ecap);
            }
            if (!fetch_col_checks(ctx, ct, m, n, k, &p, ne, eps, ref, rec)) {
                fprintf(stderr, "fetch failed\n");
                return 1;
            }
            int64_t we = -1;
            double wr = 0;
            for (int64_t e = 0; e < ne; e++) {
                const double syn = fabs(ref[e] - rec[e]);
                T->worst = fmax(T->worst, syn / eps[e]);
                if (syn / eps[e] > wr)
                    wr = syn / eps[e], we = e;
                if (syn > 0) {
                    const double q = eps[e] / syn;
                    T->qmin = fmin(T->qmin, q);
                    int b = q >= 1 ? (int)floor(log2(q)) : 0;
                    T->q[b < QBINS ? b : QBINS - 1]++;
                }
            }
            if (wr > diag_at)
                diagnose(&dc, we, eps[we], ref[we], rec[we], series_names[series]);
        }
    }
    tally all;
    memset(&all, 0, sizeof all);
    all.qmin = INFINITY;
    for (int t = 0; t < 2; t++)
        for (int s = 0; s < NSERIES; s++) {
            if (tl[t][s].gemms)
                tally_json(t ? "S" : "D", series_names[s], proj ? "proj" : "pea", &tl[t][s]);
            tally_add(&all, &tl[t][s]);
        }
    tally_json("SD", "all", proj ? "proj" : "pea", &all);
    printf("{\"mode\":\"fp\",\"seconds\":%.1f,\"shapes\":\"%s\",\"promote\":%d}\n", now_s() - t0,
           nlist, promote);
    blasft_gpu_ctx_destroy(ctx);
    return 0;
}

/* flips: the bit to flip goes in through the hook (after the main GEMM, before the check) */
typedef struct flip {
    blasft_gpu_ctx *ctx;
    int64_t idx, m; /* the element idx of the caller's m-row C */
    int bit, single;
    void *pinned; /* the flipped value, as the checked C holds it */
} flip;

/* into the C that the engine checks: the caller's, or a promoted GEMM's double copy (the flipped
 * float then goes in as a double: BLASFT_INJECT's model of a promoted GEMM's fault) */
static void flip_hook(void *stream, void *user)
{
    flip *f = user;
    blasft_type t;
    int64_t ldc;
    char *c = blasft_gpu_debug_checked_c(f->ctx, &t, &ldc);
    if (f->single && t == BLASFT_TYPE_D) { /* promoted: into the tile that holds the element */
        gh_plant_checked(f->ctx, stream, BLASFT_TYPE_D, f->idx % f->m, f->idx / f->m, 0,
                         *(const float *)f->pinned, (double *)f->pinned + 1);
        return;
    }
    const size_t ts = f->single ? 4 : 8;
    cudaMemcpyAsync(c + ts * f->idx, f->pinned, ts, cudaMemcpyHostToDevice, (cudaStream_t)stream);
}

/* x (of the type) with bit `bit` flipped, stored typed at out; returns it as a double. */
static double flip_bit(double x, int single, int bit, void *out)
{
    uint64_t u = 0;
    const size_t ts = single ? 4 : 8;
    float f = (float)x;
    memcpy(&u, single ? (const void *)&f : (const void *)&x, ts);
    u ^= (uint64_t)1 << bit;
    memcpy(out, &u, ts); /* little-endian: the low 4 bytes are the float */
    memcpy(single ? (void *)&f : (void *)&x, &u, ts);
    return single ? (double)f : x;
}

/* The data of the flips mode: the pools' full and pos values, or T_orth (dg_fill, 8 reflections
 * per factor, as the fp mode's). kappa 0: pos; < 0: full. */
static double *flips_data(int64_t rows, int64_t cols, double kappa, uint64_t seed)
{
    if (kappa <= 0)
        return gen_pool((size_t)(rows * cols), kappa == 0 ? P_POS : P_FULL, seed);
    dg_rng rng;
    dg_seed(&rng, seed);
    dg_params dp;
    memset(&dp, 0, sizeof dp);
    dp.series = DG_ORTH;
    dp.kappa = kappa;
    dp.reflections = 8;
    double *x = malloc(8 * (size_t)(rows * cols));
    dg_fill(&rng, DG_D, &dp, rows, cols, x, rows);
    return x;
}

/* The exact product of C(i, j) = A(i, :) B(:, j) (double-double) and its PEA sigma
 * (eq. 6.7 without omega: the err_prob class's bound). */
static void exact_element(const double *A, const double *B, int64_t m, int64_t k, int64_t i,
                          int64_t j, int t, double *exact, double *sig)
{
    hp_dd s = hp_from(0.0);
    double y = 0;
    for (int64_t l = 0; l < k; l++) {
        s = hp_add_prod(s, A[i + l * m], B[l + j * k]);
        y = fmax(y, fabs(A[i + l * m] * B[l + j * k]));
    }
    *exact = hp_to_double(s);
    const double kk = (double)k;
    *sig = sqrt(kk * (kk + 1) * (kk + 0.5) / 24.0) * y * ldexp(1.0, -t);
}

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int mode_flips(int single, int64_t m, int64_t n, int64_t k, int bs, int nflips, int proj,
                      int promote, double kappa, uint64_t seed)
{
    const size_t ts = single ? 4 : 8;
    const int bits = single ? 32 : 64, t = single ? BLASFT_T_FLOAT : BLASFT_T_DOUBLE;
    double *A = flips_data(m, k, kappa, seed * 3 + 1);
    double *B = flips_data(k, n, kappa, seed * 3 + 2);
    if (single)
        for (int64_t i = 0; i < m * k || i < k * n; i++) {
            if (i < m * k) A[i] = (float)A[i];
            if (i < k * n) B[i] = (float)B[i];
        }
    dpool pa = upload_pool(A, (size_t)(m * k)), pb = upload_pool(B, (size_t)(k * n));
    blasft_gpu_ctx *ctx = blasft_gpu_ctx_create(NULL);
    if (!ctx)
        return 77;
    void *C, *pinned;
    ck(cudaMalloc(&C, ts * m * n), "cudaMalloc");
    ck(cudaMallocHost(&pinned, 16), "pinned");
    float one_f = 1.0f, zero_f = 0.0f;
    double one_d = 1.0, zero_d = 0.0;
    blasft_gpu_gemm g;
    memset(&g, 0, sizeof g);
    g.type = single ? BLASFT_TYPE_S : BLASFT_TYPE_D;
    g.transa = g.transb = 'N';
    g.m = m, g.n = n, g.k = k;
    g.alpha = single ? (const void *)&one_f : (const void *)&one_d;
    g.beta = single ? (const void *)&zero_f : (const void *)&zero_d;
    g.a = single ? (const void *)pa.s : (const void *)pa.d;
    g.b = single ? (const void *)pb.s : (const void *)pb.d;
    g.lda = m, g.ldb = k, g.c = C, g.ldc = m;
    blasft_gpu_params p = params(bs, 1, proj);
    p.promote = promote;
    /* the fault-free result (its elements' rounding errors define err_abs) */
    double *cff = malloc(8 * (size_t)(m * n));
    void *h = malloc(ts * m * n);
    blasft_stats s0, s1;
    blasft_get_stats(&s0);
    if (blasft_gpu_gemm_run(ctx, &g, &p) != 0)
        return 1;
    ck(cudaMemcpy(h, C, ts * m * n, cudaMemcpyDeviceToHost), "download");
    blasft_get_stats(&s1);
    const uint64_t ff_flags = flags_of(&s0, &s1);
    for (int64_t i = 0; i < m * n; i++)
        cff[i] = single ? ((float *)h)[i] : ((double *)h)[i];
    int det_bit[64] = {0}, n_bit[64] = {0};
    int abs_n = 0, abs_d = 0, prob_n = 0, prob_d = 0, se_n = 0, se_d = 0;
    /* PROJ: the fault-free syndromes against its double reference (the true error of each
     * column check), for two what-ifs per flip: PROJ's thresholds scaled by 1 (which must agree
     * with the engine's flags), 1/2, 1/4 and 1/8; and an oracle threshold ORACLE_Z times the
     * syndromes' RMS over this GEMM, one that knows the noise exactly and allows a 1e-12
     * false-alarm rate per check if the noise is Gaussian */
    enum { NWHAT = 5 };
    static const double ORACLE_Z = 7.13;
    const int64_t mb = (m + bs - 1) / bs, ne = mb * n;
    double *eps = NULL, *syn = NULL, rms = 0, eps_med = 0;
    int what_d[NWHAT] = {0};
    if (proj) {
        const blasft_type ct = checked_type(ctx, &g);
        double *ref = malloc(8 * (size_t)ne);
        eps = malloc(8 * (size_t)ne), syn = malloc(8 * (size_t)ne);
        if (!fetch_col_checks(ctx, ct, m, n, k, &p, ne, eps, ref, syn))
            return 1;
        double *ratio = malloc(8 * (size_t)ne);
        for (int64_t e = 0; e < ne; e++) {
            syn[e] = ref[e] - syn[e];
            rms += syn[e] * syn[e];
        }
        rms = sqrt(rms / (double)ne);
        for (int64_t e = 0; e < ne; e++)
            ratio[e] = eps[e] / rms;
        qsort(ratio, (size_t)ne, sizeof *ratio, cmp_double);
        eps_med = ratio[ne / 2];
        free(ref);
        free(ratio);
    }
    flip f = {ctx, 0, m, 0, single, pinned};
    for (int q = 0; q < nflips; q++) {
        const uint64_t r = mix(seed * 0x9e37 + (uint64_t)q);
        f.idx = (int64_t)(r % (uint64_t)(m * n));
        f.bit = q % bits;
        const double flipped = flip_bit(cff[f.idx], single, f.bit, pinned);
        blasft_gpu_set_fault_hook(ctx, flip_hook, &f);
        ck(cudaDeviceSynchronize(), "sync");
        blasft_get_stats(&s0);
        if (blasft_gpu_gemm_run(ctx, &g, &p) != 0)
            return 1;
        ck(cudaDeviceSynchronize(), "sync");
        blasft_get_stats(&s1);
        blasft_gpu_set_fault_hook(ctx, NULL, NULL);
        const int det = flags_of(&s0, &s1) > 0;
        n_bit[f.bit]++;
        det_bit[f.bit] += det;
        const double effect = fabs(flipped - cff[f.idx]);
        const int mant = f.bit < t - 1;
        if (!mant) {
            se_n++;
            se_d += det;
            continue;
        }
        double exact, sig;
        exact_element(A, B, m, k, f.idx % m, f.idx / m, t, &exact, &sig);
        if (effect > fabs(cff[f.idx] - exact)) {
            abs_n++;
            abs_d += det;
        }
        if (effect > sig) {
            prob_n++;
            prob_d += det;
            if (proj) { /* the flip adds (flipped - fault-free) to C and so to the recomputed sum */
                const int64_t e = (f.idx % m) / bs + mb * (f.idx / m);
                const double fs = fabs(syn[e] - (flipped - cff[f.idx]));
                for (int w = 0; w < NWHAT - 1; w++)
                    what_d[w] += fs > ldexp(eps[e], -w);
                what_d[NWHAT - 1] += fs > ORACLE_Z * rms;
            }
        }
    }
    char series[32];
    if (kappa > 0)
        snprintf(series, sizeof series, "orth%g", kappa);
    else
        snprintf(series, sizeof series, "%s", kappa == 0 ? "pos" : "full");
    printf("{\"mode\":\"flips\",\"method\":\"%s\",\"promote\":%d,\"type\":\"%c\",\"series\":\"%s\","
           "\"m\":%lld,\"n\":%lld,\"k\":%lld,\"bs\":%d,\"flips\":%d,\"fault_free_flags\":%llu,\"err_abs\":[%d,%d],\"err_prob\":[%d,%d],"
           "\"sign_exponent\":[%d,%d],\"per_bit\":[",
           proj ? "proj" : "pea", promote, single ? 'S' : 'D', series, (long long)m, (long long)n, (long long)k, bs,
           nflips, (unsigned long long)ff_flags, abs_d, abs_n, prob_d, prob_n, se_d, se_n);
    for (int b = 0; b < bits; b++)
        printf("%s[%d,%d]", b ? "," : "", det_bit[b], n_bit[b]);
    printf("]");
    if (proj) /* err_prob-significant flips detected by the what-ifs, of err_prob[1] */
        printf(",\"syn_rms\":%.4g,\"median_threshold_over_rms\":%.3f,\"err_prob_f_one\":%d,"
               "\"err_prob_f_half\":%d,\"err_prob_f_quarter\":%d,\"err_prob_f_eighth\":%d,"
               "\"err_prob_oracle\":%d,\"oracle_z\":%.2f",
               rms, eps_med, what_d[0], what_d[1], what_d[2], what_d[3], what_d[4], ORACLE_Z);
    printf("}\n");
    free(eps);
    free(syn);
    fflush(stdout);
    blasft_gpu_ctx_destroy(ctx);
    free(A);
    free(B);
    free(cff);
    free(h);
    return 0;
}

int main(int argc, char **argv)
{
    if (!blasft_gpu_available()) {
        fputs("no GPU\n", stderr);
        return 77;
    }
    if (argc >= 6 && !strcmp(argv[1], "fp"))
        return mode_fp(atof(argv[2]), !strcmp(argv[3], "proj"), strtoull(argv[4], NULL, 10), argv[5],
                       argc >= 7 && !strcmp(argv[6], "auto") ? 2 : 0);
    if (argc >= 8 && !strcmp(argv[1], "flips")) {
        long long m = 256, n = 256, k;
        if (sscanf(argv[3], "%lldx%lldx%lld", &m, &n, &k) != 3)
            k = atoll(argv[3]);
        int promote = 0, bad = m < 1 || n < 1 || k < 1;
        double kappa = -1; /* full */
        for (int a = 8; a < argc; a++) {
            if (!strcmp(argv[a], "promote") || !strcmp(argv[a], "auto"))
                promote = argv[a][0] == 'p' ? 1 : 2;
            else if (!strcmp(argv[a], "pos"))
                kappa = 0;
            else if (!strncmp(argv[a], "orth", 4) && atof(argv[a] + 4) >= 1)
                kappa = atof(argv[a] + 4);
            else if (strcmp(argv[a], "full"))
                bad = 1;
        }
        if (!bad)
            return mode_flips(argv[2][0] == 'S', m, n, k, atoi(argv[4]), atoi(argv[5]),
                              !strcmp(argv[6], "proj"), promote, kappa, strtoull(argv[7], NULL, 10));
    }
    fprintf(stderr, "usage: %s fp SECONDS pea|proj SEED NLIST [auto]\n"
                    "       %s flips S|D [MxNx]K BS NFLIPS pea|proj SEED [promote|auto] "
                    "[full|pos|orthKAPPA]\n",
            argv[0], argv[0]);
    return 2;
}
