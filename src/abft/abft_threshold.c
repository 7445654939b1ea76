/* Thresholds per checksum element, split as in thesis 6.3.5 into context-independent
 * preprocessing per operand vector (top-p magnitudes for PEA, Euclidean norms for SEA) and a
 * context-dependent step per element (O(p^2)).
 *
 * A checksum element's syndrome has two rounding sources:
 *  - the reference: a dot product of length k (2k real products per part for complex data) of an
 *    encoded checksum vector with a data vector, computed in double (t = 53): the thesis's PEA
 *    term with y >= |s_k b_k| (eq. 6.6);
 *  - the recomputed sum of the BLAS's rounded C elements, each a dot product in the data precision:
 *    sum_i w_i^2 sigma_i^2 <= W2 * sigma(y_env)^2, y_env from the envelope max_{i in block} |a_ik|
 *    (so one top-p list per block covers every element of the block).
 * The alpha/beta scaling and final addition add (1/8) 2^-2t c^2 per element (eq. 6.4/6.5), and our
 * compensated sums at most 2^-53 |checksum|. */
#include "abft/abft_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct topl {
    int p;
    double *v;
    int64_t *pos;
    int *cnt;
    int64_t len; /* vector length: a list with len <= p holds every entry */
} topl;

static int topl_init(topl *l, int64_t lists, int p, int64_t len)
{
    l->p = p;
    l->len = len;
    l->v = calloc((size_t)(lists * p + 1), sizeof *l->v);
    l->pos = calloc((size_t)(lists * p + 1), sizeof *l->pos);
    l->cnt = calloc((size_t)(lists + 1), sizeof *l->cnt);
    return l->v && l->pos && l->cnt ? 0 : -1;
}

static void topl_free(topl *l)
{
    free(l->v);
    free(l->pos);
    free(l->cnt);
}

static void topl_add(topl *l, int64_t list, double v, int64_t at)
{
    l->cnt[list] = blasft_topp_insert(l->v + list * l->p, l->pos + list * l->p, l->cnt[list], l->p,
                                      v, at);
}

static double topl_y(const topl *a, int64_t la, const topl *b, int64_t lb)
{
    return blasft_pea_y(a->v + la * a->p, a->pos + la * a->p, a->cnt[la], a->len <= a->p,
                        b->v + lb * b->p, b->pos + lb * b->p, b->cnt[lb], b->len <= b->p);
}

/* Magnitude bounding every real product of a part: max(|re|, |im|). */
static double mag2(double re, double im) { return fmax(fabs(re), fabs(im)); }

static double opa_mag(const abft_ctx *x, int64_t i, int64_t kk)
{
    return x->P == 1 ? fabs(abft_opa(x, i, kk, 0)) : mag2(abft_opa(x, i, kk, 0), abft_opa(x, i, kk, 1));
}
static double opb_mag(const abft_ctx *x, int64_t kk, int64_t j)
{
    return x->P == 1 ? fabs(abft_opb(x, kk, j, 0)) : mag2(abft_opb(x, kk, j, 0), abft_opb(x, kk, j, 1));
}
static double opa_sq(const abft_ctx *x, int64_t i, int64_t kk)
{
    double s = 0;
    for (int part = 0; part < x->P; part++)
        s += abft_opa(x, i, kk, part) * abft_opa(x, i, kk, part);
    return s;
}
static double opb_sq(const abft_ctx *x, int64_t kk, int64_t j)
{
    double s = 0;
    for (int part = 0; part < x->P; part++)
        s += abft_opb(x, kk, j, part) * abft_opb(x, kk, j, part);
    return s;
}

static double w2(const abft_ctx *x, int r, int64_t len)
{
    double s = 0;
    for (int64_t i = 0; i < len; i++)
        s += x->w[r][i] * x->w[r][i];
    return s;
}

static int prepare_pea(abft_ctx *x)
{
    const int R = x->R, P = x->P, p = x->cfg->pea_p > 0 ? x->cfg->pea_p : 1;
    const double nn = (double)(x->k * P);
    topl ra, ea, sa, cb, eb, sb;
    memset(&ra, 0, sizeof ra); sb = eb = cb = sa = ea = ra;
    int ok = topl_init(&ra, x->m, p, x->k) == 0 && topl_init(&ea, x->nbr, p, x->k) == 0 &&
             topl_init(&sa, R * x->nbr, p, x->k) == 0 && topl_init(&cb, x->n, p, x->k) == 0 &&
             topl_init(&eb, x->nbc, p, x->k) == 0 && topl_init(&sb, R * x->nbc, p, x->k) == 0;
    double *env = malloc((size_t)(x->k + 1) * sizeof *env);
    if (ok && env) {
        for (int64_t bi = 0; bi < x->nbr; bi++) {
            memset(env, 0, (size_t)(x->k + 1) * sizeof *env);
            int64_t i0 = bi * x->bs, len = abft_len(x->m, bi, x->bs);
            for (int64_t i = i0; i < i0 + len; i++)
                for (int64_t kk = 0; kk < x->k; kk++) {
                    double v = opa_mag(x, i, kk);
                    topl_add(&ra, i, v, kk);
                    env[kk] = fmax(env[kk], v);
                }
            for (int64_t kk = 0; kk < x->k; kk++)
                topl_add(&ea, bi, env[kk], kk);
        }
        for (int64_t bj = 0; bj < x->nbc; bj++) {
            memset(env, 0, (size_t)(x->k + 1) * sizeof *env);
            int64_t j0 = bj * x->bs, len = abft_len(x->n, bj, x->bs);
            for (int64_t j = j0; j < j0 + len; j++)
                for (int64_t kk = 0; kk < x->k; kk++) {
                    double v = opb_mag(x, kk, j);
                    topl_add(&cb, j, v, kk);
                    env[kk] = fmax(env[kk], v);
                }
            for (int64_t kk = 0; kk < x->k; kk++)
                topl_add(&eb, bj, env[kk], kk);
        }
        for (int64_t kk = 0; kk < x->k; kk++) {
            for (int64_t s = 0; s < R * x->nbr; s++) {
                const double *v = x->ac + (s + R * x->nbr * kk) * P;
                topl_add(&sa, s, P == 1 ? fabs(v[0]) : mag2(v[0], v[1]), kk);
            }
            for (int64_t s = 0; s < R * x->nbc; s++) {
                const double *v = x->bc + (kk + x->k * s) * P;
                topl_add(&sb, s, P == 1 ? fabs(v[0]) : mag2(v[0], v[1]), kk);
            }
        }
        /* context-dependent step */
        for (int64_t j = 0; j < x->n; j++)
            for (int64_t bi = 0; bi < x->nbr; bi++)
                for (int r = 0; r < R; r++) {
                    double sr = blasft_pea_sigma(nn, topl_y(&sa, bi * R + r, &cb, j), BLASFT_T_DOUBLE, 0);
                    double ye = topl_y(&ea, bi, &cb, j), wsum = w2(x, r, abft_len(x->m, bi, x->bs));
                    double sd = blasft_pea_sigma(nn, ye, x->t, 0);
                    x->vdc[abft_ci(x, bi, r, j)] = sr * sr + sd * sd * wsum;
                    x->c2c[abft_ci(x, bi, r, j)] = wsum * (nn * ye) * (nn * ye);
                }
        for (int64_t bj = 0; bj < x->nbc; bj++)
            for (int r = 0; r < R; r++) {
                double wsum = w2(x, r, abft_len(x->n, bj, x->bs));
                for (int64_t i = 0; i < x->m; i++) {
                    double sr = blasft_pea_sigma(nn, topl_y(&ra, i, &sb, bj * R + r), BLASFT_T_DOUBLE, 0);
                    double ye = topl_y(&ra, i, &eb, bj);
                    double sd = blasft_pea_sigma(nn, ye, x->t, 0);
                    x->vdr[abft_ri(x, i, bj, r)] = sr * sr + sd * sd * wsum;
                    x->c2r[abft_ri(x, i, bj, r)] = wsum * (nn * ye) * (nn * ye);
                }
            }
    }
    free(env);
    topl_free(&ra); topl_free(&ea); topl_free(&sa);
    topl_free(&cb); topl_free(&eb); topl_free(&sb);
    return ok && env ? 0 : -1;
}

static int prepare_sea(abft_ctx *x)
{
    const int R = x->R, P = x->P;
    const double nn = (double)(x->k * P), u = ldexp(1.0, -x->t);
    double *na = calloc((size_t)(x->m + 1), sizeof *na), *nb = calloc((size_t)(x->n + 1), sizeof *nb);
    double *ns = calloc((size_t)(R * (x->nbr + x->nbc) + 1), sizeof *ns);
    if (!na || !nb || !ns) {
        free(na); free(nb); free(ns);
        return -1;
    }
    double *nsb = ns + R * x->nbr;
    for (int64_t i = 0; i < x->m; i++) {
        for (int64_t kk = 0; kk < x->k; kk++)
            na[i] += opa_sq(x, i, kk);
        na[i] = sqrt(na[i]);
    }
    for (int64_t j = 0; j < x->n; j++) {
        for (int64_t kk = 0; kk < x->k; kk++)
            nb[j] += opb_sq(x, kk, j);
        nb[j] = sqrt(nb[j]);
    }
    for (int64_t kk = 0; kk < x->k; kk++) {
        for (int64_t s = 0; s < R * x->nbr; s++)
            for (int part = 0; part < P; part++) {
                double v = x->ac[(s + R * x->nbr * kk) * P + part];
                ns[s] += v * v;
            }
        for (int64_t s = 0; s < R * x->nbc; s++)
            for (int part = 0; part < P; part++) {
                double v = x->bc[(kk + x->k * s) * P + part];
                nsb[s] += v * v;
            }
    }
    for (int64_t s = 0; s < R * (x->nbr + x->nbc); s++)
        ns[s] = sqrt(ns[s]);
    for (int64_t bi = 0; bi < x->nbr; bi++) {
        int64_t i0 = bi * x->bs, len = abft_len(x->m, bi, x->bs);
        for (int r = 0; r < R; r++) {
            double suma = 0;
            for (int64_t i = 0; i < len; i++)
                suma += fabs(x->w[r][i]) * na[i0 + i];
            for (int64_t j = 0; j < x->n; j++)
                x->vdc[abft_ci(x, bi, r, j)] =
                    blasft_sea_eps(nn, (double)len, nb[j], suma, ns[bi * R + r], u);
        }
    }
    for (int64_t bj = 0; bj < x->nbc; bj++) {
        int64_t j0 = bj * x->bs, len = abft_len(x->n, bj, x->bs);
        for (int r = 0; r < R; r++) {
            double sumb = 0;
            for (int64_t j = 0; j < len; j++)
                sumb += fabs(x->w[r][j]) * nb[j0 + j];
            for (int64_t i = 0; i < x->m; i++)
                x->vdr[abft_ri(x, i, bj, r)] =
                    blasft_sea_eps(nn, (double)len, na[i], sumb, nsb[bj * R + r], u);
        }
    }
    free(na); free(nb); free(ns);
    return 0;
}

int abft_threshold_prepare(abft_ctx *x)
{
    return x->cfg->threshold == BLASFT_THRESHOLD_SEA ? prepare_sea(x) : prepare_pea(x);
}

static double sqr_parts(const double *v, int P)
{
    double s = 0;
    for (int part = 0; part < P; part++)
        s += v[part] * v[part];
    return s;
}

/* eps from the base vd, the operand bound c2 of sum (w d)^2, the old C's sums (osq, oab) and
 * the reference. Nothing here depends on the new C: a fault must not raise its own threshold. */
static double finish(const abft_ctx *x, double vd, double c2, double osq, double oab,
                     const double *ref, int exact)
{
    const blasft_gemm *g = x->g;
    const double u = ldexp(1.0, -x->t), ur = ldexp(1.0, -BLASFT_T_DOUBLE);
    double aa = fabs(g->alpha[0]) + fabs(g->alpha[1]);
    double bb = fabs(g->beta[0]) + fabs(g->beta[1]);
    /* scaling by alpha and beta rounds unless they are 1 and 0 (or 1) */
    int scaled = !(g->alpha[0] == 1.0 && g->alpha[1] == 0.0) ||
                 !(x->beta_zero || (g->beta[0] == 1.0 && g->beta[1] == 0.0));
    double rr = 2.0 * sqr_parts(ref, x->P); /* our own compensated sums and double products */
    if (x->cfg->threshold == BLASFT_THRESHOLD_SEA)
        /* vd already holds (n+2BS-2) u |b| sum|w||a_i| >= the alpha-scaling's share */
        return aa * vd * (scaled ? 2.0 : 1.0) + 2.0 * u * bb * oab + ur * sqrt(rr);
    if (exact) {
        /* the reference is now (nearly) exact: only the BLAS's rounding of C remains */
        double nn = (double)(x->k * x->P), f = blasft_pea_sigma(nn, 1.0, x->t, 0);
        vd = nn > 0 ? f * f * c2 / (nn * nn) : 0.0;
    }
    /* |c_new|^2 <= 2 (|alpha d|^2 + |beta c_old|^2) per element */
    double sqb = 2.0 * (aa * aa * c2 + bb * bb * osq);
    double var_add = blasft_blas_var_add(1.0, x->t) * sqb * (scaled ? 3.0 : 1.0) + ur * ur * rr;
    return blasft_pea_eps(x->cfg->omega, aa, vd, var_add);
}

double abft_threshold_col(const abft_ctx *x, int64_t e)
{
    return finish(x, x->vdc[e], x->c2c ? x->c2c[e] : 0, x->beta_zero ? 0 : x->osqc[e],
                  x->beta_zero ? 0 : x->oabsc[e], x->refc + e * x->P, x->exc[e]);
}

double abft_threshold_row(const abft_ctx *x, int64_t e)
{
    return finish(x, x->vdr[e], x->c2r ? x->c2r[e] : 0, x->beta_zero ? 0 : x->osqr[e],
                  x->beta_zero ? 0 : x->oabsr[e], x->refr + e * x->P, x->exr[e]);
}
