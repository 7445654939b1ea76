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
#include "abft/abft_kernels.h"

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

/* The values, positions and counts in one zeroed allocation (a tiny GEMM made six of these
 * sets per call, three allocations each). */
static int topl_init(topl *l, int64_t lists, int p, int64_t len)
{
    l->p = p;
    l->len = len;
    const size_t nv = (size_t)(lists * p + 1);
    char *m = calloc(1, nv * (sizeof *l->v + sizeof *l->pos) +
                            (size_t)(lists + 1) * sizeof *l->cnt);
    if (!m) {
        l->v = NULL;
        l->pos = NULL;
        l->cnt = NULL;
        return -1;
    }
    l->v = (double *)m;
    l->pos = (int64_t *)(m + nv * sizeof *l->v);
    l->cnt = (int *)(m + nv * (sizeof *l->v + sizeof *l->pos));
    return 0;
}

static void topl_free(topl *l) { free(l->v); }

static inline void topl_add(topl *l, int64_t list, double v, int64_t at)
{
    /* most values are below a full list's smallest entry: decide that without the call */
    if (l->cnt[list] == l->p && !(v > l->v[list * l->p + l->p - 1]))
        return;
    l->cnt[list] = blasft_topp_insert(l->v + list * l->p, l->pos + list * l->p, l->cnt[list], l->p,
                                      v, at);
}

static double topl_y(const topl *a, int64_t la, const topl *b, int64_t lb)
{
    return blasft_pea_y(a->v + la * a->p, a->pos + la * a->p, a->cnt[la], a->len <= a->p,
                        b->v + lb * b->p, b->pos + lb * b->p, b->cnt[lb], b->len <= b->p);
}

static double sqr_parts(const double *v, int P);

/* Magnitude bounding every real product of a part: max(|re|, |im|). */
static double mag2(double re, double im) { return fmax(fabs(re), fabs(im)); }

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

/* Adds value a at position kk to list `list` and refreshes lmin, the value a later entry must
 * exceed to be inserted (-1 while the list is not full: everything enters). */
static void topl_add_min(topl *l, double *lmin, int64_t list, double a, int64_t kk)
{
    topl_add(l, list, a, kk);
    lmin[list] = l->cnt[list] == l->p ? l->v[list * l->p + l->p - 1] : -1.0;
}

/* Real data, p <= ABFT_K_TOPP_MAX: the same lists of the blocks [b0, b1) of one operand, every
 * list of a block at once (abft_k_topp, vectorized; same lists as the walk below). Blocks are
 * independent, so slices of them may run side by side. */
static int scan_blocks(const abft_ctx *x, const void *base, int64_t ld, int by_col, int64_t nvec,
                       topl *per_vec, topl *per_blk, int64_t b0, int64_t b1)
{
    const int single = x->g->type == BLASFT_TYPE_S || x->g->type == BLASFT_TYPE_C;
    const int esz = blasft_type_size(x->g->type), p = per_vec->p;
    const int64_t k = x->k, bs = x->bs;
    double *env = malloc((size_t)(k + 1) * sizeof *env);
    /* abft_k_topp's work for the longest block here (a small matrix's is shorter than bs) */
    const int64_t longest = nvec - b0 * bs < bs ? nvec - b0 * bs : bs;
    void *work = malloc((size_t)((longest + 3) / 4 * p * 64 + 32));
    int rc = env && work ? 0 : -1;
    for (int64_t b = b0; rc == 0 && b < b1; b++) {
        int64_t v0 = b * bs, len = abft_len(nvec, b, x->bs);
        const char *src = (const char *)base + (by_col ? v0 * ld : v0) * esz;
        if (by_col)
            memset(env, 0, (size_t)(k + 1) * sizeof *env);
        rc = abft_k_topp(src, single, by_col, ld, len, k, p, per_vec->v + v0 * p,
                         per_vec->pos + v0 * p, per_vec->cnt + v0, env, work);
        for (int64_t kk = 0; rc == 0 && kk < k; kk++)
            topl_add(per_blk, b, env[kk], kk);
    }
    free(env);
    free(work);
    return rc;
}

/* Top-p lists of one operand: per vector (a row i of op(A) or a column j of op(B); nvec of them,
 * blocks of bs) over positions kk < k, and per block of vectors the same of the envelope
 * max_{vector in block} |value at kk|. by_col: vector v's entries are the stored column v (stride
 * 1 along kk); else they are the stored row v (stride ld), and the matrix is walked column by
 * column so memory is read contiguously. The magnitudes are computed and compared with each
 * list's entry threshold in vectorized chunks; only a chunk with a value to insert takes the
 * (ordered) insertion path. Each list receives its positions in ascending order either way, so
 * the lists are exactly those of a plain scalar walk. (Complex data and long lists.) */
static int scan_operand(const abft_ctx *x, const void *base, int64_t ld, int by_col, int64_t nvec,
                        topl *per_vec, topl *per_blk)
{
    const blasft_type t = x->g->type;
    const int P = x->P, single = t == BLASFT_TYPE_S || t == BLASFT_TYPE_C;
    const int esz = blasft_type_size(t);
    const int64_t k = x->k, bs = x->bs, nblk = (nvec + bs - 1) / bs;
    enum { CHUNK = 256 };
    double *lmin = malloc((size_t)(nvec + 1) * sizeof *lmin);
    double *mags = malloc((size_t)(CHUNK > bs ? CHUNK : bs) * sizeof *mags);
    double *env = by_col ? malloc((size_t)(k + 1) * sizeof *env) : NULL;
    if (!lmin || !mags || (by_col && !env)) {
        free(lmin);
        free(mags);
        free(env);
        return -1;
    }
    for (int64_t v = 0; v < nvec; v++)
        lmin[v] = -1.0;
    if (by_col) {
        for (int64_t b = 0; b < nblk; b++) {
            memset(env, 0, (size_t)(k + 1) * sizeof *env);
            int64_t v0 = b * bs, len = abft_len(nvec, b, x->bs);
            for (int64_t v = v0; v < v0 + len; v++)
                for (int64_t k0 = 0; k0 < k; k0 += CHUNK) {
                    int64_t kl = k - k0 < CHUNK ? k - k0 : CHUNK;
                    const char *src = (const char *)base + (k0 + v * ld) * esz;
                    if (abft_k_mags(src, single, P, kl, lmin + v, 0, mags, env + k0, NULL))
                        for (int64_t q = 0; q < kl; q++)
                            if (mags[q] > lmin[v])
                                topl_add_min(per_vec, lmin, v, mags[q], k0 + q);
                }
            for (int64_t kk = 0; kk < k; kk++)
                topl_add(per_blk, b, env[kk], kk);
        }
    } else {
        for (int64_t kk = 0; kk < k; kk++)
            for (int64_t b = 0; b < nblk; b++) {
                int64_t v0 = b * bs, len = abft_len(nvec, b, x->bs);
                double e = 0;
                const char *src = (const char *)base + (v0 + kk * ld) * esz;
                if (abft_k_mags(src, single, P, len, lmin + v0, 1, mags, NULL, &e))
                    for (int64_t q = 0; q < len; q++)
                        if (mags[q] > lmin[v0 + q])
                            topl_add_min(per_vec, lmin, v0 + q, mags[q], kk);
                topl_add(per_blk, b, e, kk);
            }
    }
    free(lmin);
    free(mags);
    free(env);
    return 0;
}

typedef struct scan_job {
    const abft_ctx *x;
    const void *base;
    int64_t ld;
    int by_col;
    int64_t nvec;
    topl *per_vec, *per_blk;
    int rc;
} scan_job;

static void run_scan(void *p)
{
    scan_job *j = p;
    j->rc = scan_operand(j->x, j->base, j->ld, j->by_col, j->nvec, j->per_vec, j->per_blk);
}

/* Both operands' blocks as one range: [0, na) A's, then B's. */
typedef struct scan_all_job {
    scan_job op[2];
    int64_t na;
    int rc;
} scan_all_job;

static void run_scan_blocks(void *p, int64_t lo, int64_t hi)
{
    scan_all_job *j = p;
    for (int o = 0; o < 2; o++) {
        int64_t off = o ? j->na : 0;
        const scan_job *s = &j->op[o];
        int64_t nblk = (s->nvec + s->x->bs - 1) / s->x->bs;
        int64_t b0 = lo - off < 0 ? 0 : lo - off, b1 = hi - off > nblk ? nblk : hi - off;
        if (b0 < b1 && scan_blocks(s->x, s->base, s->ld, s->by_col, s->nvec, s->per_vec,
                                   s->per_blk, b0, b1) != 0)
            __atomic_store_n(&j->rc, -1, __ATOMIC_RELAXED);
    }
}

/* PEA's context-dependent step, O(p^2) per checksum element: column checksums of the columns
 * [lo, hi) (side 0) or row checksums of the rows [lo, hi) (side 1). */
typedef struct pea_step {
    abft_ctx *x;
    const topl *ra, *ea, *sa, *cb, *eb, *sb;
    const double *wsr, *wsc;
    double q, ur, ud, nn;
} pea_step;

static void run_pea_cols(void *p, int64_t lo, int64_t hi)
{
    const pea_step *c = p;
    abft_ctx *x = c->x;
    const int R = x->R;
    for (int64_t j = lo; j < hi; j++)
        for (int64_t bi = 0; bi < x->nbr; bi++) {
            double ye = topl_y(c->ea, bi, c->cb, j), sd = c->q * ye * c->ud;
            for (int r = 0; r < R; r++) {
                double sr = c->q * topl_y(c->sa, bi * R + r, c->cb, j) * c->ur;
                double ws = c->wsr[bi * R + r];
                x->vdc[abft_ci(x, bi, r, j)] = sr * sr + sd * sd * ws;
                x->c2c[abft_ci(x, bi, r, j)] = ws * (c->nn * ye) * (c->nn * ye);
            }
        }
}

static void run_pea_rows(void *p, int64_t lo, int64_t hi)
{
    const pea_step *c = p;
    abft_ctx *x = c->x;
    const int R = x->R;
    for (int64_t bj = 0; bj < x->nbc; bj++)
        for (int r = 0; r < R; r++) {
            double ws = c->wsc[bj * R + r];
            for (int64_t i = lo; i < hi; i++) {
                double sr = c->q * topl_y(c->ra, i, c->sb, bj * R + r) * c->ur;
                double ye = topl_y(c->ra, i, c->eb, bj), sd = c->q * ye * c->ud;
                x->vdr[abft_ri(x, i, bj, r)] = sr * sr + sd * sd * ws;
                x->c2r[abft_ri(x, i, bj, r)] = ws * (c->nn * ye) * (c->nn * ye);
            }
        }
}

static int prepare_pea(abft_ctx *x)
{
    const blasft_gemm *g = x->g;
    const int R = x->R, P = x->P, p = x->cfg->pea_p > 0 ? x->cfg->pea_p : 1;
    const double nn = (double)(x->k * P);
    topl ra, ea, sa, cb, eb, sb;
    memset(&ra, 0, sizeof ra); sb = eb = cb = sa = ea = ra;
    int ok = topl_init(&ra, x->m, p, x->k) == 0 && topl_init(&ea, x->nbr, p, x->k) == 0 &&
             topl_init(&sa, R * x->nbr, p, x->k) == 0 && topl_init(&cb, x->n, p, x->k) == 0 &&
             topl_init(&eb, x->nbc, p, x->k) == 0 && topl_init(&sb, R * x->nbc, p, x->k) == 0;
    double *wsum = malloc((size_t)(R * (x->nbr + x->nbc) + 1) * sizeof *wsum);
    if (ok && wsum) {
        scan_job ja = {x, g->a, g->lda, g->transa != 'N', x->m, &ra, &ea, 0};
        scan_job jb = {x, g->b, g->ldb, g->transb == 'N', x->n, &cb, &eb, 0};
        if (P == 1 && p <= ABFT_K_TOPP_MAX) {
            /* every block of both operands is independent: slices of them on the threads */
            scan_all_job j = {{ja, jb}, x->nbr, 0};
            abft_k_for(x->threads, run_scan_blocks, &j, x->nbr + x->nbc,
                       (x->m + x->n) * x->k);
            ok = j.rc == 0;
        } else {
            /* the two operands' lists are independent: on two threads where allowed */
            abft_k_pair(x->parallel, run_scan, &ja, &jb);
            ok = ja.rc == 0 && jb.rc == 0;
        }
    } else
        ok = 0;
    if (ok) {
        for (int64_t kk = 0; kk < x->k; kk++) {
            for (int64_t s = 0; s < R * x->nbr; s++) {
                const double *v = x->ac + (s + R * x->nbr * kk) * P;
                topl_add(&sa, s, P == 1 ? fabs(v[0]) : mag2(v[0], v[1]), kk);
            }
        }
        for (int64_t s = 0; s < R * x->nbc; s++)
            for (int64_t kk = 0; kk < x->k; kk++) {
                const double *v = x->bc + (kk + x->k * s) * P;
                topl_add(&sb, s, P == 1 ? fabs(v[0]) : mag2(v[0], v[1]), kk);
            }
        /* sum of squared weights per block and weight set (the ragged last block differs) */
        double *wsr = wsum, *wsc = wsum + R * x->nbr;
        for (int64_t bi = 0; bi < x->nbr; bi++)
            for (int r = 0; r < R; r++)
                wsr[bi * R + r] = w2(x, r, abft_len(x->m, bi, x->bs));
        for (int64_t bj = 0; bj < x->nbc; bj++)
            for (int r = 0; r < R; r++)
                wsc[bj * R + r] = w2(x, r, abft_len(x->n, bj, x->bs));
        /* blasft_pea_sigma(nn, y, t, 0) is (q * y) * 2^-t with q fixed: the same operations */
        const double q = blasft_pea_sigma(nn, 1.0, 0, 0);
        const double ur = ldexp(1.0, -BLASFT_T_DOUBLE), ud = ldexp(1.0, -x->t);
        /* context-dependent step (each element on its own: slices on the threads) */
        pea_step c = {x, &ra, &ea, &sa, &cb, &eb, &sb, wsr, wsc, q, ur, ud, nn};
        abft_k_for(x->threads, run_pea_cols, &c, x->n, x->n * x->nbr * R * 16);
        abft_k_for(x->threads, run_pea_rows, &c, x->m, x->m * x->nbc * R * 16);
    }
    free(wsum);
    topl_free(&ra); topl_free(&ea); topl_free(&sa);
    topl_free(&cb); topl_free(&eb); topl_free(&sb);
    return ok ? 0 : -1;
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

/* NORM (docs/thresholds.md), context-independent: squared norms of op(A)'s rows, op(B)'s
 * columns and the encoded checksum vectors, O(mk + kn). Context-dependent, O(1) per element
 * after O(m + n) per-block sums: a column checksum element (block I, weight set r, column j)
 * gets vd = ||b_j||^2 sum_{i in I} w_i^2 ||a_i||^2 (the BLAS's rounding of C) and
 * c2 = ||s||^2 ||b_j||^2 (the double checksum product's, s the encoded row). */
static int prepare_norm(abft_ctx *x)
{
    const int R = x->R, P = x->P;
    x->na2 = calloc((size_t)(x->m + 1), sizeof *x->na2);
    x->nb2 = calloc((size_t)(x->n + 1), sizeof *x->nb2);
    double *ns = calloc((size_t)(R * (x->nbr + x->nbc) + 1), sizeof *ns);
    if (!x->na2 || !x->nb2 || !ns) {
        free(ns);
        return -1;
    }
    double *na2 = x->na2, *nb2 = x->nb2, *nsb = ns + R * x->nbr;
    for (int64_t kk = 0; kk < x->k; kk++)
        for (int64_t i = 0; i < x->m; i++)
            na2[i] += opa_sq(x, i, kk);
    for (int64_t j = 0; j < x->n; j++)
        for (int64_t kk = 0; kk < x->k; kk++)
            nb2[j] += opb_sq(x, kk, j);
    for (int64_t kk = 0; kk < x->k; kk++) {
        for (int64_t s = 0; s < R * x->nbr; s++)
            ns[s] += sqr_parts(x->ac + (s + R * x->nbr * kk) * P, P);
        for (int64_t s = 0; s < R * x->nbc; s++)
            nsb[s] += sqr_parts(x->bc + (kk + x->k * s) * P, P);
    }
    for (int64_t bi = 0; bi < x->nbr; bi++) {
        int64_t i0 = bi * x->bs, len = abft_len(x->m, bi, x->bs);
        for (int r = 0; r < R; r++) {
            double sw = 0;
            for (int64_t i = 0; i < len; i++)
                sw += x->w[r][i] * x->w[r][i] * na2[i0 + i];
            for (int64_t j = 0; j < x->n; j++) {
                x->vdc[abft_ci(x, bi, r, j)] = sw * nb2[j];
                x->c2c[abft_ci(x, bi, r, j)] = ns[bi * R + r] * nb2[j];
            }
        }
    }
    for (int64_t bj = 0; bj < x->nbc; bj++) {
        int64_t j0 = bj * x->bs, len = abft_len(x->n, bj, x->bs);
        for (int r = 0; r < R; r++) {
            double sw = 0;
            for (int64_t j = 0; j < len; j++)
                sw += x->w[r][j] * x->w[r][j] * nb2[j0 + j];
            for (int64_t i = 0; i < x->m; i++) {
                x->vdr[abft_ri(x, i, bj, r)] = sw * na2[i];
                x->c2r[abft_ri(x, i, bj, r)] = nsb[bj * R + r] * na2[i];
            }
        }
    }
    free(ns);
    return 0;
}

/* PROJ (docs/thresholds.md). Per checksum vector (block I of op(A)'s rows with weights w, or of
 * op(B)'s columns) the walks of the element partial sums s_it = sum_{kk<=t} a_i,kk x_kk against a
 * data vector x are split exactly into the w^2-weighted mean walk and the deviations from it:
 *   sum_i w_i^2 s_it^2 = W m_t^2 + sum_i w_i^2 (s_it - m_t)^2,  W = sum w_i^2,
 * (the cross term vanishes by the mean's definition). m_t is computed exactly; the deviation
 * energy is estimated by K random-sign projections y_q,t = sum_i r_qi w_i (s_it - m_t), unbiased
 * for it, and divided by C. One scan along k per data vector and checksum vector gives the
 * energy sum_t e_t, the last e_t (alpha, final addition), the products' energy (no FMA) and the
 * reference checksum's own walk (its rounding in double). */
typedef struct proj_vec {
    double W;
    double *mean, *g, *pe, *cs; /* k each; g is k x K (projections of one k adjacent) */
    double *sg;                 /* K x len: the signed weights r_qi w_i */
    int64_t i0, len;            /* the block's data vectors */
    const double *w;
} proj_vec;

typedef struct proj_energy {
    double e, last, prod; /* the BLAS's C: sum of e_t (largest over the lane counts), e_k, products */
    double ref, enc;      /* the double reference's walk (same), the encoding's (s_k x_k)^2 */
    double bjoin;         /* what beta c_old adds to the joins' energy (never negative) */
} proj_energy;

/* Accumulation with L = 2^h lanes (lane t mod L sums every L-th product, the lanes are added at
 * the end): the rounding at step t is of lane (t mod L)'s partial sum, and adding the lanes rounds
 * L - 1 more times, each partial result at most L times the lanes' sum of squares
 * (Cauchy-Schwarz). h = 0 is the sequential sum. The largest over h = 0..LANES_LOG2 is used, per
 * slice of S along k (the engine's calls, data_gemm; S = 0: one slice): each slice's partial sums
 * start at zero, and from the second slice on its result is scaled (alpha, rounding its own sum)
 * and added to C (rounding the partial sum over all k so far). The reference checksum's double
 * GEMM runs in the same slices (abft_reference), and its walk gets the same model. With beta != 0
 * that C also holds beta c_old: off (NULL: none) is the offset (beta / alpha) c_old of the joins'
 * partial sums, its weighted mean off[0] and projections off[1 + q]; what it adds to their energy
 * (bjoin, at least 0: where it cancels, the energy without it stays the bound) is kept apart, so
 * that NORM's cap, which bounds the walk without it, does not cut it. */
static void proj_scan(const proj_vec *v, const double *x, int64_t k, int64_t S, const double *off,
                      proj_energy *o)
{
    enum { K = BLASFT_PROJ_K, H = BLASFT_PROJ_LANES_LOG2 + 1, NL = (2 << BLASFT_PROJ_LANES_LOG2) - 1 };
    const double ck = 1.0 / ((double)K * BLASFT_PROJ_C);
    double y[NL][K], m[NL], r[NL], e[H], er[H], yg[K], mg = 0, ep = 0, en = 0, total = 0;
    double rg = 0, rtotal = 0; /* the reference's partial sum over all k so far, its energy */
    double bjoin = 0;
    memset(y, 0, sizeof y);
    memset(m, 0, sizeof m);
    memset(r, 0, sizeof r);
    memset(e, 0, sizeof e);
    memset(er, 0, sizeof er);
    memset(yg, 0, sizeof yg);
    if (S <= 0)
        S = k;
    for (int64_t t = 0; t < k; t++) {
        const double xv = x[t], mx = v->mean[t] * xv, p = v->cs[t] * xv, *g = v->g + t * K;
        for (int h = 0; h < H; h++) {
            int li = (1 << h) - 1 + (int)(t & ((1 << h) - 1));
            double dev = 0;
            for (int q = 0; q < K; q++) {
                y[li][q] += g[q] * xv;
                dev += y[li][q] * y[li][q];
            }
            m[li] += mx;
            e[h] += v->W * m[li] * m[li] + dev * ck;
        }
        for (int q = 0; q < K; q++)
            yg[q] += g[q] * xv;
        mg += mx;
        for (int h = 0; h < H; h++) {
            int li = (1 << h) - 1 + (int)(t & ((1 << h) - 1));
            r[li] += p;
            er[h] += r[li] * r[li];
        }
        rg += p;
        ep += v->pe[t] * xv * xv;
        en += p * p;
        if ((t + 1) % S == 0 || t + 1 == k) { /* the slice ends: its largest lane energy, joins */
            double best = 0;
            for (int h = 0; h < H; h++) {
                double L = (double)(1 << h), lanes = 0;
                for (int l = 0; l < (1 << h); l++) {
                    int li = (1 << h) - 1 + l;
                    double dev = 0;
                    for (int q = 0; q < K; q++)
                        dev += y[li][q] * y[li][q];
                    lanes += v->W * m[li] * m[li] + dev * ck;
                }
                best = fmax(best, e[h] + L * (L - 1.0) * lanes);
            }
            total += best;
            rtotal += blasft_proj_lane_energy(er, r);
            if (t + 1 > S) {
                double dl = 0, dg = 0;
                for (int q = 0; q < K; q++) {
                    dl += y[0][q] * y[0][q];
                    dg += yg[q] * yg[q];
                }
                double join = v->W * mg * mg + dg * ck;
                total += v->W * m[0] * m[0] + dl * ck + join;
                rtotal += r[0] * r[0] + rg * rg;
                if (off) {
                    double mo = mg + off[0], d2 = 0;
                    for (int q = 0; q < K; q++)
                        d2 += (yg[q] + off[1 + q]) * (yg[q] + off[1 + q]);
                    bjoin += fmax(0.0, v->W * mo * mo + d2 * ck - join);
                }
            }
            memset(y, 0, sizeof y);
            memset(m, 0, sizeof m);
            memset(e, 0, sizeof e);
            memset(r, 0, sizeof r);
            memset(er, 0, sizeof er);
        }
    }
    double dev = 0;
    for (int q = 0; q < K; q++)
        dev += yg[q] * yg[q];
    o->e = total;
    o->last = v->W * mg * mg + dev * ck;
    o->prod = ep;
    o->ref = rtotal + 4.0 * rg * rg;
    o->enc = en;
    o->bjoin = bjoin;
}

/* Builds the checksum vector's mean, projections and product weights from its bs data vectors:
 * at(x, i, kk) is element kk of data vector i0 + i (a row of op(A) or a column of op(B)). */
static void proj_build(const abft_ctx *x, proj_vec *v, int r, int64_t i0, int64_t len,
                       double (*at)(const abft_ctx *, int64_t, int64_t), const double *cs,
                       int64_t cs_stride, uint64_t seed)
{
    enum { K = BLASFT_PROJ_K };
    const int64_t k = x->k;
    const double *w = x->w[r];
    double W = 0, sg[K][1024];
    for (int64_t i = 0; i < len; i++) {
        W += w[i] * w[i];
        for (int q = 0; q < K; q++)
            sg[q][i] = blasft_proj_sign(seed, (uint64_t)(q * 1024 + i)) * w[i];
    }
    v->W = W;
    v->i0 = i0;
    v->len = len;
    v->w = w;
    for (int q = 0; q < K; q++)
        for (int64_t i = 0; i < len; i++)
            v->sg[q * len + i] = sg[q][i];
    for (int64_t kk = 0; kk < k; kk++) {
        double sm = 0, sp = 0, col[1024];
        for (int64_t i = 0; i < len; i++) {
            col[i] = at(x, i0 + i, kk);
            sm += w[i] * w[i] * col[i];
            sp += w[i] * w[i] * col[i] * col[i];
        }
        double mean = W > 0 ? sm / W : 0.0;
        v->mean[kk] = mean;
        v->pe[kk] = sp;
        v->cs[kk] = cs[kk * cs_stride];
        for (int q = 0; q < K; q++) {
            double g = 0;
            for (int64_t i = 0; i < len; i++)
                g += sg[q][i] * (col[i] - mean);
            v->g[kk * K + q] = g;
        }
    }
}

static double proj_opa(const abft_ctx *x, int64_t i, int64_t kk) { return abft_opa(x, i, kk, 0); }
static double proj_opb(const abft_ctx *x, int64_t j, int64_t kk) { return abft_opb(x, kk, j, 0); }

uint64_t blasft_proj_next_seed(void)
{
    static uint64_t counter;
    return __atomic_add_fetch(&counter, 0x632be59bd9b4e019ULL, __ATOMIC_RELAXED);
}

/* Bytes of checksum-vector arrays (mean, products, reference, projections) built at a time: the
 * data vectors are read once per group, so a large operand needs no O(m k K) buffer. */
#define PROJ_GROUP_BYTES ((int64_t)64 << 20)

/* One side's energies: nblk blocks of `total` vectors (R checksum vectors each) against ndata data
 * vectors (load fills a k-array), results into vd/c2/enc at idx(b, r, d). The NORM values already
 * in vd/c2 (per-term bounds) times the term count cap the estimates: both bound the same sum of
 * squares, the NORM one deterministically. */
typedef struct proj_job {
    abft_ctx *x;
    int64_t nblk, total, cs_vstride, cs_kstride, ndata;
    double (*at)(const abft_ctx *, int64_t, int64_t);
    double (*load)(const abft_ctx *, int64_t, int64_t);
    int64_t (*idx)(const abft_ctx *, int64_t, int, int64_t);
    const double *cs;
    double *vd, *c2, *enc;
    uint64_t seed;
    int row_side; /* data vector d is row d of C (row checksums), else column d */
    int rc;
} proj_job;

/* The joins' offset for checksum vector v against data vector d (proj_scan): the mean and the
 * projections of (beta / alpha) c_old over the vector's elements. Returns NULL when there is
 * none. */
static const double *proj_offset(const abft_ctx *x, const proj_vec *v, int64_t d, int row_side,
                                 double *off)
{
    enum { K = BLASFT_PROJ_K };
    if (!abft_proj_beta_joins(x))
        return NULL;
    double o[1024], sm = 0; /* len <= bs <= 1024 */
    for (int64_t i = 0; i < v->len; i++) {
        int64_t e = v->i0 + i;
        o[i] = row_side ? abft_proj_join_offset(x, d, e) : abft_proj_join_offset(x, e, d);
        sm += v->w[i] * v->w[i] * o[i];
    }
    off[0] = v->W > 0 ? sm / v->W : 0.0;
    for (int q = 0; q < K; q++)
        off[1 + q] = 0;
    for (int64_t i = 0; i < v->len; i++)
        for (int q = 0; q < K; q++)
            off[1 + q] += v->sg[q * v->len + i] * (o[i] - off[0]);
    return off;
}

static void proj_side(void *arg)
{
    enum { K = BLASFT_PROJ_K };
    proj_job *j = arg;
    abft_ctx *x = j->x;
    const int R = x->R;
    const int64_t k = x->k, per = (K + 3) * k + K * x->bs, nvec = j->nblk * R;
    const double terms = blasft_norm_terms((double)k, 1);
    int64_t group = PROJ_GROUP_BYTES / (8 * (per > 0 ? per : 1));
    group = group < 1 ? 1 : group > nvec ? nvec : group;
    proj_vec *v = calloc((size_t)(group + 1), sizeof *v);
    double *mem = malloc((size_t)((group * per + 1)) * sizeof *mem);
    double *xv = malloc((size_t)(k + 1) * sizeof *xv);
    j->rc = v && mem && xv ? 0 : -1;
    for (int64_t s0 = 0; j->rc == 0 && s0 < nvec; s0 += group) {
        int64_t s1 = s0 + group < nvec ? s0 + group : nvec;
        for (int64_t s = s0; s < s1; s++) {
            int64_t b = s / R;
            int r = (int)(s % R);
            proj_vec *w = &v[s - s0];
            double *base = mem + (s - s0) * per;
            w->mean = base;
            w->pe = base + k;
            w->cs = base + 2 * k;
            w->g = base + 3 * k;
            w->sg = base + (K + 3) * k;
            proj_build(x, w, r, b * x->bs, abft_len(j->total, b, x->bs), j->at,
                       j->cs + s * j->cs_vstride, j->cs_kstride, j->seed + (uint64_t)s * 0x2545f4914f6cdd1dULL);
        }
        for (int64_t d = 0; d < j->ndata; d++) {
            for (int64_t kk = 0; kk < k; kk++)
                xv[kk] = j->load(x, d, kk);
            for (int64_t s = s0; s < s1; s++) {
                proj_energy o;
                double offv[1 + K];
                proj_scan(&v[s - s0], xv, k, x->slice,
                          proj_offset(x, &v[s - s0], d, j->row_side, offv), &o);
                int64_t e = j->idx(x, s / R, (int)(s % R), d);
                /* partial sums, products (no FMA), the alpha scaling and final additions */
                double ec = o.e + o.prod + 4.0 * o.last;
                double er = o.ref + o.enc;
                /* too few rows for the estimate: NORM's order-free bound alone */
                const int few = v[s - s0].len < blasft_proj_min_rows(K);
                j->vd[e] = (few ? terms * j->vd[e] : fmin(ec, terms * j->vd[e])) + o.bjoin;
                j->c2[e] = few ? terms * j->c2[e] : fmin(er, terms * j->c2[e]);
                j->enc[e] = o.enc;
            }
        }
    }
    free(v);
    free(mem);
    free(xv);
}

static int64_t proj_ci(const abft_ctx *x, int64_t b, int r, int64_t j) { return abft_ci(x, b, r, j); }
static int64_t proj_ri(const abft_ctx *x, int64_t b, int r, int64_t i) { return abft_ri(x, i, b, r); }

/* Complex data keeps NORM's bounds (the projections are for real walks). */
static int prepare_proj(abft_ctx *x)
{
    if (prepare_norm(x) != 0)
        return -1;
    if (x->P != 1)
        return 0;
    x->slice = BLASFT_PROJ_SLICE;
    x->encc = calloc((size_t)(abft_nc(x) + 1), sizeof *x->encc);
    x->encr = calloc((size_t)(abft_nr(x) + 1), sizeof *x->encr);
    if (!x->encc || !x->encr)
        return -1;
    /* column checksums: vectors are op(A)'s rows in row blocks, data vectors op(B)'s columns;
     * row checksums: op(B)'s columns in column blocks against op(A)'s rows. The two sides are
     * independent (two threads where allowed); their seeds are drawn here, in a fixed order. */
    uint64_t seed_c = blasft_proj_next_seed(), seed_r = blasft_proj_next_seed();
    proj_job jc = {x, x->nbr, x->m, 1, x->R * x->nbr, x->n, proj_opa, proj_opb, proj_ci, x->ac,
                   x->vdc, x->c2c, x->encc, seed_c, 0, 0};
    proj_job jr = {x, x->nbc, x->n, x->k, 1, x->m, proj_opb, proj_opa, proj_ri, x->bc,
                   x->vdr, x->c2r, x->encr, seed_r, 1, 0};
    abft_k_pair(x->parallel, proj_side, &jc, &jr);
    return jc.rc == 0 && jr.rc == 0 ? 0 : -1;
}

int abft_threshold_prepare(abft_ctx *x)
{
    switch (x->cfg->threshold) {
    case BLASFT_THRESHOLD_SEA: return prepare_sea(x);
    case BLASFT_THRESHOLD_NORM: return prepare_norm(x);
    case BLASFT_THRESHOLD_PROJ: return prepare_proj(x);
    default: return prepare_pea(x);
    }
}

static double sqr_parts(const double *v, int P)
{
    double s = 0;
    for (int part = 0; part < P; part++)
        s += v[part] * v[part];
    return s;
}

/* NORM's threshold: omega(1e-12) times the square root of the summed squared increment bounds
 * of every rounding the syndrome carries (the BLAS's, the old C's scaling, and while the
 * reference is the double GEMM's product, its own), plus the deterministic errors of our side:
 * the encoded vector rounded once per entry (u_d ||s|| ||b||) and the compensated sums (2 u_d
 * |checksum|). vd, c2 as prepare_norm; osq = sum (w c_old)^2. */
static double finish_norm(const abft_ctx *x, double vd, double c2, double osq, const double *ref,
                          int exact)
{
    const blasft_gemm *g = x->g;
    const double u = ldexp(1.0, -x->t), ur = ldexp(1.0, -BLASFT_T_DOUBLE);
    const double nn = (double)(x->k * x->P), terms = blasft_norm_terms(nn, x->P);
    double aa = fabs(g->alpha[0]) + fabs(g->alpha[1]);
    double bb = fabs(g->beta[0]) + fabs(g->beta[1]);
    double var = u * u * blasft_norm_second_order(nn, u) * (aa * aa * terms * vd + 3.0 * bb * bb * osq);
    if (!exact)
        var += ur * ur * blasft_norm_second_order(nn, ur) * aa * aa * terms * c2;
    double det = ur * aa * sqrt(c2) * 1.0001 + 2.0 * ur * sqrt(sqr_parts(ref, x->P));
    return blasft_norm_omega(BLASFT_NORM_FALSE_ALARM) * sqrt(var) + det;
}

double abft_threshold_element(const abft_ctx *x, int64_t i, int64_t j)
{
    const blasft_gemm *g = x->g;
    const double u = ldexp(1.0, -x->t), ur = ldexp(1.0, -BLASFT_T_DOUBLE);
    const double nn = (double)(x->k * x->P), terms = blasft_norm_terms(nn, x->P);
    double aa = fabs(g->alpha[0]) + fabs(g->alpha[1]);
    double bb = fabs(g->beta[0]) + fabs(g->beta[1]), osq = 0;
    if (!x->beta_zero)
        for (int part = 0; part < x->P; part++) {
            double v = abft_ld(x->cold, g->type, i + x->m * j, part);
            osq += v * v;
        }
    double n2 = x->na2[i] * x->nb2[j];
    double var = u * u * blasft_norm_second_order(nn, u) * (aa * aa * terms * n2 + 3.0 * bb * bb * osq);
    /* the exact value it is compared with is itself a compensated double sum */
    return blasft_norm_omega(BLASFT_NORM_FALSE_ALARM) * sqrt(var) +
           4.0 * ur * (aa * sqrt(n2) + bb * sqrt(osq));
}

/* PROJ's threshold (blasft_proj_eps): the reference's walk counts while it is the double GEMM's
 * product (c2), not once it has been refined to a compensated dot product (exact). */
static double finish_proj(const abft_ctx *x, double vd, double c2, double enc, double osq,
                          const double *ref, int exact)
{
    const blasft_gemm *g = x->g;
    return blasft_proj_eps(x->t, (double)x->k, fabs(g->alpha[0]), fabs(g->beta[0]), vd, osq, enc,
                           exact ? 0.0 : c2, fabs(ref[0]));
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
    if (x->cfg->threshold == BLASFT_THRESHOLD_NORM || x->cfg->threshold == BLASFT_THRESHOLD_PROJ)
        return finish_norm(x, vd, c2, osq, ref, exact);
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
    const double uf = x->underflow[e % x->R];
    if (x->encc)
        return finish_proj(x, x->vdc[e], x->c2c[e], x->encc[e], x->beta_zero ? 0 : x->osqc[e],
                           x->refc + e, x->exc[e]) + uf;
    return finish(x, x->vdc[e], x->c2c ? x->c2c[e] : 0, x->beta_zero ? 0 : x->osqc[e],
                  x->beta_zero ? 0 : x->oabsc[e], x->refc + e * x->P, x->exc[e]) + uf;
}

double abft_threshold_row(const abft_ctx *x, int64_t e)
{
    const double uf = x->underflow[e / x->m % x->R];
    if (x->encr)
        return finish_proj(x, x->vdr[e], x->c2r[e], x->encr[e], x->beta_zero ? 0 : x->osqr[e],
                           x->refr + e, x->exr[e]) + uf;
    return finish(x, x->vdr[e], x->c2r ? x->c2r[e] : 0, x->beta_zero ? 0 : x->osqr[e],
                  x->beta_zero ? 0 : x->oabsr[e], x->refr + e * x->P, x->exr[e]) + uf;
}
