/* Fault-injection campaign for the host ABFT engine (issue 3, item 9; method.md section 5).
 *
 * For one data set (series, parameter, n) and each type and block size asked for:
 *  - one fault-free protected GEMM through blasft_abft_run with every checksum comparison
 *    recorded; each checksum element's true value comes from the double-double reference, giving
 *    its true rounding errors and q = threshold / error (reference, recomputed, and their
 *    difference, the syndrome); any flagged element is a false positive;
 *  - `inject` protected GEMMs, each with one bit flip planted by the faultblas module in the data
 *    GEMM (output or inner site): what was flipped, whether it was detected, what the engine did,
 *    and the significance of the error against three rounding-error bounds of the element.
 * Everything is written as JSON lines on stdout; scripts/campaign.py aggregates them. */
#include "abft/abft_arith.h"
#include "abft/abft_engine.h"
#include "config.h"
#include "datagen.h"
#include "faultblas.h"
#include "hpref.h"

#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifndef CAMPAIGN_FAULTBLAS
#define CAMPAIGN_FAULTBLAS "libcampaign_faultblas.so"
#endif

typedef struct opts {
    dg_series series;
    double param; /* i of pos/full, kappa of orth, decades of heavy, cancel decades of cancel */
    int64_t n, m, k; /* C is m x n, the inner dimension k (m, k default to n) */
    double beta;      /* != 0: C_old uniform in [-1, 1] times the typical |alpha A B| */
    char types[8];
    int bs[16], nbs;
    int inject;
    int sites; /* bit 0 output, bit 1 inner */
    int bit_lo, bit_hi; /* -1: whole word */
    uint64_t seed;
    double alpha;
    int checksums, weights, threshold, pea_p;
    int promote; /* -1: the library's default */
    double omega;
    const char *faultblas;
    int truth;  /* 0: no true values (no q, only flags and syndrome/threshold): the fast count of
                 * false positives */
    int strict; /* exit 1 on a false positive, a leaked NaN, a fault that did not fire, a missed
                 * sign/exponent flip, or a correction that made the element worse */
} opts;

static void usage(void)
{
    fprintf(stderr,
            "usage: campaign --series pos|full|orth|heavy|cauchy|cancel [--param P] [--n N]\n"
            "       [--m M] [--k K] [--beta B]\n"
            "       [--types sd] [--bs 32,64,128,256] [--inject K] [--site output|inner|both]\n"
            "       [--bits lo-hi] [--seed S] [--alpha A] [--checksums 1|2]\n"
            "       [--weights normal|average|periodic|exponential|linear|mdr] [--threshold pea|sea|norm|proj]\n"
            "       [--omega W] [--pea-p P] [--promote auto|on|off] [--faultblas PATH] [--strict 0|1]\n"
            "       [--truth 0|1]\n"
            "param: the exponent i of pos/full (range 10^i), kappa of orth, decades of heavy,\n"
            "cancel decades of cancel. Bits default to the whole word (all 32 or 64).\n");
    exit(2);
}

static const char *const weight_names[] = {"normal", "average", "periodic", "exponential", "linear", "mdr"};

static void parse(int argc, char **argv, opts *o)
{
    *o = (opts){.series = DG_FULL, .param = 0, .n = 256, .m = 0, .k = 0, .beta = 0, .types = "sd", .nbs = 0, .inject = 0,
                .sites = 3, .bit_lo = -1, .bit_hi = -1, .seed = 1, .alpha = 1.0, .checksums = -1, .truth = 1,
                .weights = -1, .threshold = -1, .pea_p = -1, .omega = -1, .faultblas = CAMPAIGN_FAULTBLAS, .promote = -1};
    for (int i = 1; i < argc; i++) {
        const char *k = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v)
            usage();
        i++;
        if (!strcmp(k, "--series")) {
            int s = dg_series_from_name(v);
            if (s < 0)
                usage();
            o->series = (dg_series)s;
        } else if (!strcmp(k, "--param"))
            o->param = atof(v);
        else if (!strcmp(k, "--n"))
            o->n = atoll(v);
        else if (!strcmp(k, "--m"))
            o->m = atoll(v);
        else if (!strcmp(k, "--k"))
            o->k = atoll(v);
        else if (!strcmp(k, "--beta"))
            o->beta = atof(v);
        else if (!strcmp(k, "--types"))
            snprintf(o->types, sizeof o->types, "%s", v);
        else if (!strcmp(k, "--bs")) {
            char buf[256];
            snprintf(buf, sizeof buf, "%s", v);
            for (char *t = strtok(buf, ","); t && o->nbs < 16; t = strtok(NULL, ","))
                o->bs[o->nbs++] = atoi(t);
        } else if (!strcmp(k, "--inject"))
            o->inject = atoi(v);
        else if (!strcmp(k, "--site"))
            o->sites = !strcmp(v, "output") ? 1 : !strcmp(v, "inner") ? 2 : 3;
        else if (!strcmp(k, "--bits")) {
            if (sscanf(v, "%d-%d", &o->bit_lo, &o->bit_hi) != 2 || o->bit_lo < 0 || o->bit_hi < o->bit_lo)
                usage();
        } else if (!strcmp(k, "--seed"))
            o->seed = strtoull(v, NULL, 10);
        else if (!strcmp(k, "--alpha"))
            o->alpha = atof(v);
        else if (!strcmp(k, "--checksums"))
            o->checksums = atoi(v);
        else if (!strcmp(k, "--weights")) {
            for (int w = 0; w < 6; w++)
                if (!strcmp(v, weight_names[w]))
                    o->weights = w;
            if (o->weights < 0)
                usage();
        } else if (!strcmp(k, "--threshold"))
            o->threshold = !strcmp(v, "sea")    ? BLASFT_THRESHOLD_SEA
                           : !strcmp(v, "norm") ? BLASFT_THRESHOLD_NORM
                           : !strcmp(v, "proj") ? BLASFT_THRESHOLD_PROJ
                                                : BLASFT_THRESHOLD_PEA;
        else if (!strcmp(k, "--omega"))
            o->omega = atof(v);
        else if (!strcmp(k, "--pea-p"))
            o->pea_p = atoi(v);
        else if (!strcmp(k, "--promote")) {
            o->promote = !strcmp(v, "auto") ? BLASFT_PROMOTE_AUTO
                         : !strcmp(v, "on") ? BLASFT_PROMOTE_ON
                         : !strcmp(v, "off") ? BLASFT_PROMOTE_OFF : -1;
            if (o->promote < 0)
                usage();
        } else if (!strcmp(k, "--faultblas"))
            o->faultblas = v;
        else if (!strcmp(k, "--truth"))
            o->truth = atoi(v);
        else if (!strcmp(k, "--strict"))
            o->strict = atoi(v);
        else
            usage();
    }
    if (o->nbs == 0)
        o->bs[o->nbs++] = 128;
    if (o->m == 0)
        o->m = o->n;
    if (o->k == 0)
        o->k = o->n;
    if (o->n < 1 || o->m < 1 || o->k < 1)
        usage();
}

static const char *no_env(const char *name, void *ctx)
{
    (void)name;
    (void)ctx;
    return NULL;
}

/* ---- the problem ---------------------------------------------------------------------------- */

typedef struct problem {
    blasft_type type;
    int single, t; /* float?, mantissa bits */
    int64_t m, n, k;
    void *a, *b, *c, *cff; /* A (m x k), B (k x n), C (m x n), fault-free C */
    void *cold;            /* C before the GEMM (beta != 0) */
    double alpha, beta;
} problem;

static double elem(const problem *p, const void *base, int64_t idx)
{
    return p->single ? ((const float *)base)[idx] : ((const double *)base)[idx];
}

static void fill_nan(const problem *p, void *c)
{
    if (p->beta != 0.0) {
        memcpy(c, p->cold, (size_t)(p->m * p->n) * (p->single ? 4 : 8));
        return;
    }
    /* beta = 0: C is never read, so a C full of NaN must not leak into the result */
    for (int64_t i = 0; i < p->m * p->n; i++) {
        if (p->single)
            ((float *)c)[i] = NAN;
        else
            ((double *)c)[i] = NAN;
    }
}

static blasft_gemm gemm_of(const problem *p)
{
    blasft_gemm g = {.type = p->type, .transa = 'N', .transb = 'N', .m = p->m, .n = p->n, .k = p->k,
                     .a = p->a, .lda = p->m, .b = p->b, .ldb = p->k, .c = p->c, .ldc = p->m,
                     .alpha = {p->alpha, 0}, .beta = {p->beta, 0}, .routine = "campaign"};
    return g;
}

/* ---- JSON helpers --------------------------------------------------------------------------- */

static void jnum(const char *key, double v, int comma)
{
    if (isfinite(v))
        printf("\"%s\":%.17g%s", key, v, comma ? "," : "");
    else
        printf("\"%s\":null%s", key, comma ? "," : "");
}

/* q histogram: bucket e counts floor(log2 q) == e; q == inf (error exactly 0) goes to "exact". */
#define QLO (-20)
#define QHI 60
typedef struct qhist {
    uint64_t b[QHI - QLO + 1], exact, below;
    double min_q;
} qhist;

static void qh_add(qhist *h, double thr, double err)
{
    if (err == 0.0) {
        h->exact++;
        return;
    }
    double q = thr / err;
    if (q < h->min_q)
        h->min_q = q;
    int e = (int)floor(log2(q));
    if (e < QLO) {
        h->below++;
        return;
    }
    h->b[(e > QHI ? QHI : e) - QLO]++;
}

static void qh_print(const char *key, const qhist *h)
{
    printf("\"%s\":{\"exact\":%llu,\"below\":%llu,", key, (unsigned long long)h->exact,
           (unsigned long long)h->below);
    jnum("min_q", h->min_q, 1);
    printf("\"log2\":{");
    int first = 1;
    for (int e = QLO; e <= QHI; e++)
        if (h->b[e - QLO]) {
            printf("%s\"%d\":%llu", first ? "" : ",", e, (unsigned long long)h->b[e - QLO]);
            first = 0;
        }
    printf("}}");
}

static void header(const opts *o, const problem *p, int bs, const blasft_config *cfg, const char *kind)
{
    printf("{\"kind\":\"%s\",\"series\":\"%s\",\"param\":%g,\"n\":%lld,\"m\":%lld,\"k\":%lld,"
           "\"type\":\"%c\",\"bs\":%d,"
           "\"checksums\":%d,\"weights\":\"%s\",\"threshold\":\"%s\",\"omega\":%g,\"pea_p\":%d,"
           "\"alpha\":%g,\"beta\":%g,\"seed\":%llu,\"promoted\":%d,",
           kind, dg_series_name(o->series), o->param, (long long)p->n, (long long)p->m, (long long)p->k,
           blasft_type_letter(p->type), bs,
           cfg->checksums, weight_names[cfg->weights], blasft_threshold_name(cfg->threshold),
           cfg->omega, cfg->pea_p, p->alpha, p->beta, (unsigned long long)o->seed,
           p->single && cfg->promote != BLASFT_PROMOTE_OFF);
}

/* ---- true checksum values ------------------------------------------------------------------- */

typedef struct truth {
    int R, bs;
    int64_t nbr, nbc;
    hp_dd *acs;  /* exact column checksums of A: (bi*R + r) + R*nbr*kk */
    hp_dd *brs;  /* exact row checksums of B: kk + k*(bj*R + r) */
    hp_dd *occ, *ocr; /* beta != 0: exact checksums of C_old, as the engine's column/row layout */
} truth;

static double weight(const blasft_config *cfg, int r, int pos, int bs)
{
    return r == 0 ? 1.0 : blasft_weight((int)cfg->weights, pos, bs);
}

static int64_t blen(int64_t total, int64_t b, int bs)
{
    return total - b * bs < bs ? total - b * bs : bs;
}

static void truth_build(truth *tr, const problem *p, const blasft_config *cfg)
{
    const int64_t m = p->m, n = p->n, k = p->k;
    tr->R = cfg->checksums;
    tr->bs = cfg->block_size;
    tr->nbr = (m + tr->bs - 1) / tr->bs;
    tr->nbc = (n + tr->bs - 1) / tr->bs;
    int64_t rows = tr->R * tr->nbr;
    tr->acs = calloc((size_t)(rows * k), sizeof *tr->acs);
    tr->brs = calloc((size_t)(tr->R * tr->nbc * k), sizeof *tr->brs);
    for (int64_t kk = 0; kk < k; kk++)
        for (int r = 0; r < tr->R; r++) {
            for (int64_t b = 0; b < tr->nbr; b++) {
                hp_dd sa = {0, 0};
                for (int64_t q = 0; q < blen(m, b, tr->bs); q++)
                    sa = hp_add_prod(sa, weight(cfg, r, (int)q, tr->bs), elem(p, p->a, (b * tr->bs + q) + kk * m));
                tr->acs[(b * tr->R + r) + rows * kk] = sa;
            }
            for (int64_t b = 0; b < tr->nbc; b++) {
                hp_dd sb = {0, 0};
                for (int64_t q = 0; q < blen(n, b, tr->bs); q++)
                    sb = hp_add_prod(sb, weight(cfg, r, (int)q, tr->bs), elem(p, p->b, kk + (b * tr->bs + q) * k));
                tr->brs[kk + k * (b * tr->R + r)] = sb;
            }
        }
    tr->occ = tr->ocr = NULL;
    if (p->beta != 0.0) {
        /* beta C_old's share of every checksum, exactly: column (b, r, j), row (i, b, r) */
        tr->occ = calloc((size_t)(rows * n), sizeof *tr->occ);
        tr->ocr = calloc((size_t)(m * tr->R * tr->nbc), sizeof *tr->ocr);
        for (int64_t j = 0; j < n; j++)
            for (int64_t i = 0; i < m; i++)
                for (int r = 0; r < tr->R; r++) {
                    double v = elem(p, p->cold, i + j * m);
                    hp_dd *cc = &tr->occ[(i / tr->bs) * tr->R + r + rows * j];
                    hp_dd *cr = &tr->ocr[i + m * ((j / tr->bs) * tr->R + r)];
                    *cc = hp_add_prod(*cc, weight(cfg, r, (int)(i % tr->bs), tr->bs), v);
                    *cr = hp_add_prod(*cr, weight(cfg, r, (int)(j % tr->bs), tr->bs), v);
                }
    }
}

static void truth_free(truth *tr)
{
    free(tr->acs);
    free(tr->brs);
    free(tr->occ);
    free(tr->ocr);
}

/* True alpha * (checksum of A B) + beta * (checksum of C_old) of a recorded element. */
static hp_dd truth_of(const truth *tr, const problem *p, const blasft_abft_check *c)
{
    int64_t m = p->m, k = p->k, rows = tr->R * tr->nbr;
    hp_dd v, o = {0, 0};
    if (c->side == 0) { /* column checksum: sum_kk acs(block_row, r, kk) * B(kk, j) */
        const hp_dd *row = tr->acs + (c->block_row * tr->R + c->weighted);
        v = p->single ? hp_dot_sdd(k, (const float *)p->b + c->index * k, 1, row, rows)
                      : hp_dot_dd(k, (const double *)p->b + c->index * k, 1, row, rows);
        if (tr->occ)
            o = tr->occ[c->block_row * tr->R + c->weighted + rows * c->index];
    } else { /* row checksum: sum_kk A(i, kk) * brs(kk, block_col, r) */
        const hp_dd *col = tr->brs + k * (c->block_col * tr->R + c->weighted);
        v = p->single ? hp_dot_sdd(k, (const float *)p->a + c->index, m, col, 1)
                      : hp_dot_dd(k, (const double *)p->a + c->index, m, col, 1);
        if (tr->ocr)
            o = tr->ocr[c->index + m * (c->block_col * tr->R + c->weighted)];
    }
    return hp_add(hp_mul_d(v, p->alpha), hp_mul_d(o, p->beta));
}

/* ---- one element of C: exact value and the three rounding-error bounds ------------------- */

typedef struct elem_ref {
    hp_dd exact;
    double err_abs;  /* |fault-free computed - exact| */
    double err_erw;  /* expected rounding error from the squared partial sums (thesis eq. 5.18) */
    double err_prob; /* PEA sigma of the element (eq. 6.7 with y = max |a_k b_k|) */
} elem_ref;

static elem_ref element_ref(const problem *p, int64_t i, int64_t j)
{
    int64_t m = p->m, k = p->k;
    elem_ref e;
    hp_dd s = {0, 0};
    double sq_partial = 0, sq_prod = 0, y = 0;
    for (int64_t kk = 0; kk < k; kk++) {
        double x = elem(p, p->a, i + kk * m), z = elem(p, p->b, kk + j * k);
        s = hp_add_prod(s, x, z);
        double prod = fabs(p->alpha * x * z), part = p->alpha * hp_to_double(s);
        sq_prod += prod * prod;
        if (kk >= 1)
            sq_partial += part * part;
        if (prod > y)
            y = prod;
    }
    e.exact = hp_mul_d(s, p->alpha);
    if (p->beta != 0.0)
        e.exact = hp_add_prod(e.exact, p->beta, elem(p, p->cold, i + j * m));
    e.err_abs = hp_dist(elem(p, p->cff, i + j * m), e.exact);
    /* Var <= (1/8) 2^-2t (sum of squared products + sum of squared partial sums): eq. 5.17/5.18
     * for the additions, the same bound for the rounded products (no FMA assumed). */
    e.err_erw = ldexp(1.0, -p->t) * sqrt(0.125 * (sq_prod + sq_partial));
    e.err_prob = blasft_pea_sigma((double)k, y, p->t, 1);
    return e;
}

/* ---- the runs ----------------------------------------------------------------------------- */

static int clean_run(const opts *o, problem *p, const blasft_config *cfg, truth *tr)
{
    fill_nan(p, p->c);
    blasft_gemm g = gemm_of(p);
    blasft_abft_diag d;
    memset(&d, 0, sizeof d);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int rc = blasft_abft_run(&g, cfg, &d, 1);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    memcpy(p->cff, p->c, (size_t)(p->m * p->n) * (p->single ? 4 : 8));
    header(o, p, cfg->block_size, cfg, "clean");
    if (rc != 0) {
        printf("\"rc\":%d}\n", rc);
        blasft_abft_diag_free(&d);
        return -1;
    }
    if (o->truth)
        truth_build(tr, p, cfg);
    qhist qref = {.min_q = INFINITY}, qrec = qref, qsyn = qref;
    uint64_t flagged = 0, nan_in_c = 0;
    double worst_ratio = 0; /* max |syndrome| / threshold */
    for (size_t e = 0; e < d.count; e++) {
        const blasft_abft_check *c = &d.checks_list[e];
        double syn = fabs(c->reference - c->recomputed);
        if (o->truth) {
            hp_dd tv = truth_of(tr, p, c);
            qh_add(&qref, c->threshold, hp_dist(c->reference, tv));
            qh_add(&qrec, c->threshold, hp_dist(c->recomputed, tv));
            qh_add(&qsyn, c->threshold, syn);
        }
        flagged += c->flagged != 0;
        if (c->threshold > 0 && syn / c->threshold > worst_ratio)
            worst_ratio = syn / c->threshold;
    }
    for (int64_t i = 0; i < p->m * p->n; i++)
        nan_in_c += isnan(elem(p, p->c, i));
    printf("\"rc\":0,\"checks\":%zu,\"flagged\":%llu,\"false_alarms\":%llu,\"detected\":%llu,"
           "\"corrected\":%llu,\"blocks_recomputed\":%llu,\"encoder_faults\":%llu,\"nan_in_c\":%llu,",
           d.count, (unsigned long long)flagged, (unsigned long long)d.false_alarms,
           (unsigned long long)d.detected,
           (unsigned long long)d.corrected, (unsigned long long)d.blocks_recomputed,
           (unsigned long long)d.encoder_faults, (unsigned long long)nan_in_c);
    jnum("worst_syndrome_over_threshold", worst_ratio, 1);
    jnum("seconds", (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec), 1);
    qh_print("q_ref", &qref);
    printf(",");
    qh_print("q_rec", &qrec);
    printf(",");
    qh_print("q_syn", &qsyn);
    printf("}\n");
    blasft_abft_diag_free(&d);
    return (flagged || nan_in_c) ? 1 : 0;
}

static const char *bit_field(const problem *p, int bit)
{
    int width = p->single ? 32 : 64, mant = p->single ? 23 : 52;
    return bit == width - 1 ? "sign" : bit >= mant ? "exponent" : "mantissa";
}

static int inject_run(const opts *o, problem *p, const blasft_config *cfg, campaign_fault *plan,
                       dg_rng *r, int site)
{
    int width = p->single ? 32 : 64;
    int lo = o->bit_lo < 0 ? 0 : o->bit_lo, hi = o->bit_hi < 0 ? width - 1 : o->bit_hi;
    if (hi >= width)
        hi = width - 1;
    int bit = lo + (int)dg_below(r, (uint64_t)(hi - lo + 1));
    fill_nan(p, p->c);
    memset(plan, 0, sizeof *plan);
    if (p->single && cfg->promote != BLASFT_PROMOTE_OFF) { /* the engine's double copy of C */
        plan->match_m = p->m;
        plan->match_n = p->n;
        plan->as_single = 1;
    } else
        plan->target = p->c;
    plan->site = site;
    plan->bit = bit;
    plan->seed = dg_next(r);
    /* PROJ runs the data GEMM in slices along k: an output fault goes into the last call, an inner
     * one into a random call (then at a random step inside it) */
    int64_t slices = 1, first_k = 0;
    if (cfg->threshold == BLASFT_THRESHOLD_PROJ && BLASFT_PROJ_SLICE > 0 && p->k > BLASFT_PROJ_SLICE)
        slices = (p->k + BLASFT_PROJ_SLICE - 1) / BLASFT_PROJ_SLICE;
    if (slices > 1) {
        plan->skip = site == FAULT_SITE_OUTPUT ? (int)(slices - 1) : (int)dg_below(r, (uint64_t)slices);
        first_k = (int64_t)plan->skip * BLASFT_PROJ_SLICE;
    }
    plan->armed = 1;
    blasft_gemm g = gemm_of(p);
    blasft_abft_diag d;
    memset(&d, 0, sizeof d);
    int rc = blasft_abft_run(&g, cfg, &d, 1);
    plan->armed = 0;
    header(o, p, cfg->block_size, cfg, "inject");
    printf("\"site\":\"%s\",\"bit\":%d,\"field\":\"%s\",\"rc\":%d,\"fired\":%d,",
           site == FAULT_SITE_INNER ? "inner" : "output", bit, bit_field(p, bit), rc, plan->fired);
    if (rc != 0 || !plan->fired) {
        printf("\"outcome\":\"%s\"}\n", rc != 0 ? "unprotected" : "not_fired");
        blasft_abft_diag_free(&d);
        return 1;
    }
    int64_t i = plan->row, j = plan->col, m = p->m, mn = p->m * p->n;
    elem_ref e = element_ref(p, i, j);
    double effect = fabs(plan->after - plan->before);
    if (isnan(plan->after))
        effect = INFINITY;
    double cfin = elem(p, p->c, i + j * m);
    double residual = isfinite(cfin) ? hp_dist(cfin, e.exact) : INFINITY;
    /* every other element must be as the fault-free run left it (up to the rounding of a block
     * recomputed by a differently blocked GEMM): largest change relative to max |C| */
    double cmax = 0, other = 0;
    for (int64_t q = 0; q < mn; q++) {
        double ff = elem(p, p->cff, q);
        if (fabs(ff) > cmax)
            cmax = fabs(ff);
        if (q != i + j * m) {
            double dv = fabs(elem(p, p->c, q) - ff);
            if (!(dv <= other))
                other = dv;
        }
    }
    const char *outcome = d.detected == 0 ? "missed"
                          : d.blocks_recomputed > 0 ? "recomputed"
                          /* a correction that a line's recomputation finished is a correction */
                          : d.corrected > 0 ? "corrected"
                          : d.lines_recomputed > 0 ? "line_recomputed"
                          : "detected_only";
    /* the first comparison of the faulty element's unweighted column and row checksums: how far
     * the fault's syndrome was from the threshold it had to cross */
    double thr[2] = {NAN, NAN}, syn[2] = {NAN, NAN};
    int bs = cfg->block_size;
    for (size_t q = 0; q < d.count; q++) {
        const blasft_abft_check *c = &d.checks_list[q];
        if (c->weighted || c->part)
            continue;
        if (c->side == 0 ? (c->index == j && c->block_row == i / bs)
                         : (c->index == i && c->block_col == j / bs)) {
            thr[c->side] = c->threshold;
            syn[c->side] = fabs(c->reference - c->recomputed);
        }
    }
    printf("\"row\":%lld,\"col\":%lld,\"k1\":%lld,", (long long)i, (long long)j,
           (long long)(first_k + plan->k1));
    jnum("thr_col", thr[0], 1);
    jnum("syn_col", syn[0], 1);
    jnum("thr_row", thr[1], 1);
    jnum("syn_row", syn[1], 1);
    jnum("before", plan->before, 1);
    jnum("after", plan->after, 1);
    jnum("effect", effect, 1);
    jnum("exact", hp_to_double(e.exact), 1);
    jnum("err_abs", e.err_abs, 1);
    jnum("err_erw", e.err_erw, 1);
    jnum("err_prob", e.err_prob, 1);
    jnum("residual", residual, 1);
    jnum("other_rel", cmax > 0 ? other / cmax : other, 1);
    /* the result as the fault-free run left it: the fault was absorbed by later rounding (a flip
     * of a partial sum far below the element's own rounding), masked, not an error */
    const int unchanged = cfin == elem(p, p->cff, i + j * m);
    printf("\"unchanged\":%d,", unchanged);
    printf("\"false_alarms\":%llu,\"detected\":%llu,\"corrected\":%llu,\"blocks_recomputed\":%llu,"
           "\"lines_recomputed\":%llu,\"uncorrectable\":%llu,\"outcome\":\"%s\"}\n",
           (unsigned long long)d.false_alarms, (unsigned long long)d.detected, (unsigned long long)d.corrected,
           (unsigned long long)d.blocks_recomputed, (unsigned long long)d.lines_recomputed,
           (unsigned long long)d.uncorrectable, outcome);
    blasft_abft_diag_free(&d);
    int bad = (d.detected == 0 && !unchanged && strcmp(bit_field(p, bit), "mantissa") != 0) ||
              (d.detected != 0 && !(residual <= effect + e.err_abs));
    return bad;
}

/* ---- data --------------------------------------------------------------------------------- */

static void make_data(const opts *o, double *a, double *b)
{
    dg_rng r;
    dg_seed(&r, o->seed * 1000003ULL + (uint64_t)o->series * 7919ULL + (uint64_t)(o->param * 16));
    dg_params pa = {.series = o->series, .role = DG_LEFT};
    switch (o->series) {
    case DG_POS:
    case DG_FULL: pa.exponent = (int)o->param; break;
    case DG_ORTH: pa.kappa = o->param > 1 ? o->param : 2; break;
    case DG_HEAVY: pa.decades = o->param; break;
    case DG_CANCEL: pa.cancel_decades = o->param; break;
    default: break;
    }
    dg_params pb = pa;
    pb.role = DG_RIGHT;
    if (dg_fill(&r, DG_D, &pa, o->m, o->k, a, o->m) || dg_fill(&r, DG_D, &pb, o->k, o->n, b, o->k)) {
        fprintf(stderr, "campaign: data generation failed\n");
        exit(1);
    }
}

/* C_old for beta != 0: uniform in [-1, 1] times the typical |alpha (A B)_ij| (estimated from the
 * first column), so the old C and the product are of the same order. */
static void make_old_c(const opts *o, const double *a, const double *b, double *c)
{
    dg_rng r;
    dg_seed(&r, o->seed * 2654435761ULL + 17);
    double s2 = 0;
    for (int64_t i = 0; i < o->m; i++) {
        double d = 0;
        for (int64_t kk = 0; kk < o->k; kk++)
            d += a[i + kk * o->m] * b[kk];
        s2 += d * d;
    }
    double scale = fabs(o->alpha) * sqrt(s2 / (double)o->m);
    if (!(scale > 0))
        scale = 1;
    for (int64_t q = 0; q < o->m * o->n; q++)
        c[q] = scale * dg_range(&r, -1.0, 1.0);
}

int main(int argc, char **argv)
{
    opts o;
    parse(argc, argv, &o);
    /* The engine's host BLAS is ours: set before anything reads the configuration. */
    setenv("BLASFT_HOST_BLAS", o.faultblas, 1);
    setenv("BLASFT_LOG", "off", 1);
    unsetenv("BLASFT_INJECT");
    unsetenv("BLASFT_REPORT");
    void *fb = dlopen(o.faultblas, RTLD_NOW | RTLD_LOCAL);
    campaign_fault *(*get_plan)(void) = fb ? (campaign_fault * (*)(void)) dlsym(fb, "campaign_fault_plan") : NULL;
    if (!get_plan) {
        fprintf(stderr, "campaign: cannot load %s: %s\n", o.faultblas, dlerror());
        return 1;
    }
    campaign_fault *plan = get_plan();

    const int64_t m = o.m, n = o.n, k = o.k;
    double *ad = malloc((size_t)(m * k) * sizeof *ad), *bd = malloc((size_t)(k * n) * sizeof *bd);
    double *cd = o.beta != 0.0 ? malloc((size_t)(m * n) * sizeof *cd) : NULL;
    make_data(&o, ad, bd);
    if (cd)
        make_old_c(&o, ad, bd, cd);
    int status = 0;
    for (const char *tc = o.types; *tc; tc++) {
        problem p = {.single = (*tc == 's'), .m = m, .n = n, .k = k, .alpha = o.alpha, .beta = o.beta};
        if (*tc != 's' && *tc != 'd')
            continue;
        p.type = p.single ? BLASFT_TYPE_S : BLASFT_TYPE_D;
        p.t = p.single ? BLASFT_T_FLOAT : BLASFT_T_DOUBLE;
        size_t es = p.single ? 4 : 8, cbytes = (size_t)(m * n) * es;
        p.a = malloc((size_t)(m * k) * es), p.b = malloc((size_t)(k * n) * es);
        p.c = malloc(cbytes), p.cff = malloc(cbytes), p.cold = cd ? malloc(cbytes) : NULL;
        for (int64_t q = 0; q < m * k; q++) {
            if (p.single)
                ((float *)p.a)[q] = (float)ad[q];
            else
                ((double *)p.a)[q] = ad[q];
        }
        for (int64_t q = 0; q < k * n; q++) {
            if (p.single)
                ((float *)p.b)[q] = (float)bd[q];
            else
                ((double *)p.b)[q] = bd[q];
        }
        for (int64_t q = 0; cd && q < m * n; q++) {
            if (p.single)
                ((float *)p.cold)[q] = (float)cd[q];
            else
                ((double *)p.cold)[q] = cd[q];
        }
        for (int bi = 0; bi < o.nbs; bi++) {
            blasft_config cfg;
            blasft_config_parse(&cfg, no_env, NULL);
            cfg.block_size = o.bs[bi];
            cfg.mode = BLASFT_MODE_CORRECT;
            cfg.on_error = BLASFT_ON_ERROR_RECOMPUTE;
            cfg.log_level = BLASFT_LOG_OFF;
            snprintf(cfg.host_blas, sizeof cfg.host_blas, "%s", o.faultblas);
            if (o.checksums > 0)
                cfg.checksums = o.checksums;
            if (o.weights >= 0)
                cfg.weights = (blasft_weights)o.weights;
            if (o.threshold >= 0)
                cfg.threshold = (blasft_threshold)o.threshold;
            if (o.omega > 0)
                cfg.omega = o.omega;
            if (o.pea_p > 0)
                cfg.pea_p = o.pea_p;
            if (o.promote >= 0)
                cfg.promote = (blasft_promote)o.promote;
            truth tr;
            memset(&tr, 0, sizeof tr);
            int fp = clean_run(&o, &p, &cfg, &tr);
            if (fp < 0) {
                status = 1;
                continue;
            }
            if (fp && o.strict) {
                fprintf(stderr, "campaign: false positive or NaN leak (bs %d, %c)\n", o.bs[bi], *tc);
                status = 1;
            }
            truth_free(&tr);
            dg_rng r;
            dg_seed(&r, o.seed ^ ((uint64_t)o.bs[bi] << 32) ^ (uint64_t)*tc);
            /* a --bits range above this type's word (e.g. 52-63 with FP32) has nothing to flip */
            const int width = p.single ? 32 : 64;
            if (o.inject > 0 && o.bit_lo >= width)
                fprintf(stderr, "campaign: --bits %d-%d lies outside the %d-bit words of %c: no injections there\n",
                        o.bit_lo, o.bit_hi, width, *tc);
            for (int it = 0; it < o.inject && o.bit_lo < width; it++) {
                int site = o.sites == 1 ? FAULT_SITE_OUTPUT
                           : o.sites == 2 ? FAULT_SITE_INNER
                           : (it & 1) ? FAULT_SITE_INNER : FAULT_SITE_OUTPUT;
                if (inject_run(&o, &p, &cfg, plan, &r, site) && o.strict) {
                    fprintf(stderr, "campaign: injection %d failed the strict checks\n", it);
                    status = 1;
                }
            }
            fflush(stdout);
        }
        free(p.a), free(p.b), free(p.c), free(p.cff), free(p.cold);
    }
    free(ad);
    free(bd);
    free(cd);
    return status;
}
