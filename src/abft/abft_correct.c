/* Check, locate, correct (thesis 6.3.6, 6.4.3/6.4.4; method.md 3). Per block of C:
 *  - one checksum (or weights that cannot locate): single localization, exactly one flagged row
 *    and one flagged column -> that element;
 *  - two checksums with locating weights: extended localization, each flagged column locates its
 *    row from the weighted/unweighted syndrome ratio and each flagged row its column; an element
 *    found by both sides with agreeing syndromes is class F2, by one side F1; a flagged line that
 *    nothing explains, or two sides that disagree, is F0 and the block is recomputed.
 * A block whose only flagged line locates nothing has that line recomputed (recompute_line).
 * Every correction is verified by recomputing the block's checksums; a block that still fails is
 * recomputed on the host BLAS, then its reference checksums are recomputed (a fault on our side),
 * and what still fails is uncorrectable. Before anything is reported, aborted on, or called
 * uncorrectable, and where a block that nothing located passes once recomputed, a second opinion
 * free of the thresholds' independence assumption decides (second_opinion): the GEMM's block
 * against its recomputation, and the syndromes against their worst case; structured data
 * (constant or repeated rows and columns) flags blocks through rounding that all elements share,
 * and those blocks count as false alarms. */
#include "abft/abft_internal.h"
#include "abft/abft_kernels.h"
#include "log.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct outcome {
    uint64_t detected, corrected, recomputed, lines, uncorrectable, false_alarms;
} outcome;

/* Largest |syndrome| over the parts of element e and whether it is over the threshold. A flagged
 * element is confirmed against a refined (compensated) reference before it counts. */
static int flag_once(const abft_ctx *x, int row_side, int64_t e, double *syn, double *thr);
static double element_worst_at(const abft_ctx *x, int64_t i, int64_t j, double abs_c,
                               double *magnitude);
static int flag_of(abft_ctx *x, int row_side, int64_t e, double *syn, double *thr)
{
    int f = flag_once(x, row_side, e, syn, thr);
    if (f && !(row_side ? x->exr : x->exc)[e] && x->cfg->threshold != BLASFT_THRESHOLD_SEA) {
        abft_refine_reference(x, row_side, e);
        f = flag_once(x, row_side, e, syn, thr);
    }
    return f;
}

static int flag_once(const abft_ctx *x, int row_side, int64_t e, double *syn, double *thr)
{
    const double *ref = (row_side ? x->refr : x->refc) + e * x->P;
    const double *rec = (row_side ? x->recr : x->recc) + e * x->P;
    double t = row_side ? abft_threshold_row(x, e) : abft_threshold_col(x, e), s = 0;
    int flagged = 0;
    for (int part = 0; part < x->P; part++) {
        double d = fabs(ref[part] - rec[part]);
        if (blasft_over(d, t))
            flagged = 1;
        if (!(d <= s))
            s = d;
    }
    if (syn)
        *syn = s;
    if (thr)
        *thr = t;
    return flagged;
}

typedef struct blockview {
    int64_t bi, bj, i0, j0, il, jl;
    int fc[1024], fr[1024];   /* flagged column j0+q / row i0+q */
    int lc[1024], lr[1024];   /* located row of a flagged column / column of a flagged row, -1 */
    int nfc, nfr;
    double maxsyn, maxthr;
} blockview;

static int64_t lookup_ci(const abft_ctx *x, const blockview *b, int r, int64_t q)
{
    return abft_ci(x, b->bi, r, b->j0 + q);
}
static int64_t lookup_ri(const abft_ctx *x, const blockview *b, int r, int64_t q)
{
    return abft_ri(x, b->i0 + q, b->bj, r);
}

/* Position from the syndrome pair of the part with the larger unweighted syndrome. */
static int locate(const abft_ctx *x, int row_side, int64_t eu, int64_t ew, int len)
{
    const double *ru = (row_side ? x->refr : x->refc) + eu * x->P;
    const double *cu = (row_side ? x->recr : x->recc) + eu * x->P;
    const double *rw = (row_side ? x->refr : x->refc) + ew * x->P;
    const double *cw = (row_side ? x->recr : x->recc) + ew * x->P;
    int best = 0;
    for (int part = 1; part < x->P; part++)
        if (fabs(ru[part] - cu[part]) > fabs(ru[best] - cu[best]))
            best = part;
    return blasft_locate(x->scheme, ru[best] - cu[best], rw[best] - cw[best], len, x->bs);
}

static int scan_block(abft_ctx *x, blockview *b)
{
    b->nfc = b->nfr = 0;
    b->maxsyn = b->maxthr = 0;
    int extended = x->R == 2 && blasft_weights_locate(x->scheme);
    for (int64_t q = 0; q < b->jl; q++) {
        int f = 0;
        for (int r = 0; r < x->R; r++) {
            double s, t;
            if (flag_of(x, 0, lookup_ci(x, b, r, q), &s, &t)) {
                f = 1;
                if (!(s <= b->maxsyn)) {
                    b->maxsyn = s;
                    b->maxthr = t;
                }
            }
        }
        b->fc[q] = f;
        b->nfc += f;
        b->lc[q] = f && extended ? locate(x, 0, lookup_ci(x, b, 0, q), lookup_ci(x, b, 1, q), (int)b->il) : -1;
    }
    for (int64_t q = 0; q < b->il; q++) {
        int f = 0;
        for (int r = 0; r < x->R; r++) {
            double s, t;
            if (flag_of(x, 1, lookup_ri(x, b, r, q), &s, &t)) {
                f = 1;
                if (!(s <= b->maxsyn)) {
                    b->maxsyn = s;
                    b->maxthr = t;
                }
            }
        }
        b->fr[q] = f;
        b->nfr += f;
        b->lr[q] = f && extended ? locate(x, 1, lookup_ri(x, b, 0, q), lookup_ri(x, b, 1, q), (int)b->jl) : -1;
    }
    return b->nfc + b->nfr;
}

typedef struct cand {
    int i, j;      /* offsets in the block */
    int by_col;    /* syndrome taken from the column checksum */
    int cls;       /* extended localization's class: 2 located by both sides (F2), 1 by one
                      side (F1); 0 single localization */
} cand;

/* Candidate elements (with their class F1/F2 under extended localization); returns their number,
 * or -1 for F0 (recompute the block). single: use
 * single localization (one flagged row and one flagged column). */
static int candidates(const blockview *b, cand *out, int single)
{
    int n = 0;
    if (single) {
        if (b->nfc != 1 || b->nfr != 1)
            return -1;
        int i = 0, j = 0;
        while (!b->fr[i])
            i++;
        while (!b->fc[j])
            j++;
        out[0].i = i;
        out[0].j = j;
        out[0].by_col = 1;
        out[0].cls = 0;
        return 1;
    }
    for (int j = 0; j < b->jl; j++) {
        if (!b->fc[j])
            continue;
        int i = b->lc[j];
        if (i >= 0) {
            /* the row side must not place row i's error elsewhere */
            if (b->fr[i] && b->lr[i] >= 0 && b->lr[i] != j)
                return -1;
            out[n].i = i;
            out[n].j = j;
            out[n].by_col = 1;
            out[n].cls = b->fr[i] && b->lr[i] == j ? 2 : 1;
            n++;
        }
    }
    for (int i = 0; i < b->il; i++) {
        if (!b->fr[i])
            continue;
        int j = b->lr[i];
        if (j >= 0) {
            if (b->fc[j] && b->lc[j] >= 0 && b->lc[j] != i)
                return -1;
            if (b->fc[j] && b->lc[j] == i)
                continue; /* F2: already listed by its column */
            out[n].i = i;
            out[n].j = j;
            out[n].by_col = 0;
            out[n].cls = 1;
            n++;
        } else {
            /* a flagged row that locates nothing must be explained by a column's location */
            int explained = 0;
            for (int q = 0; q < n; q++)
                explained |= out[q].by_col && out[q].i == i;
            if (!explained)
                return -1;
        }
    }
    for (int j = 0; j < b->jl; j++)
        if (b->fc[j] && b->lc[j] < 0) {
            int explained = 0;
            for (int q = 0; q < n; q++)
                explained |= out[q].j == j;
            if (!explained)
                return -1;
        }
    return n;
}

/* Extended localization's consistency (method.md 3): an element located by both its column and
 * its row (F2) carries one error, so the two unweighted syndromes must agree within the sum of
 * their thresholds, in every part, plus the double rounding of the recomputed checksums that
 * carry the error (a few units of 2^-53 of its size: an exponent flip makes it huge). */
static int f2_syndromes_agree(const abft_ctx *x, const blockview *b, int i, int j)
{
    const int64_t ec = lookup_ci(x, b, 0, j), er = lookup_ri(x, b, 0, i);
    const double tol = abft_threshold_col(x, ec) + abft_threshold_row(x, er);
    for (int part = 0; part < x->P; part++) {
        double sc = x->refc[ec * x->P + part] - x->recc[ec * x->P + part];
        double sr = x->refr[er * x->P + part] - x->recr[er * x->P + part];
        if (!isfinite(sc) || !isfinite(sr))
            continue; /* a NaN or Inf element: nothing to compare; verify() judges the repair */
        if (!(fabs(sc - sr) <= tol + ldexp(fabs(sc) + fabs(sr), -50)))
            return 0;
    }
    return 1;
}

static int find_candidates(const abft_ctx *x, const blockview *b, cand *out)
{
    int extended = x->R == 2 && blasft_weights_locate(x->scheme);
    int n;
    if (extended && b->nfc == 1 && b->nfr == 1) {
        /* one flagged row and one flagged column: the error sits where they cross, as single
         * localization has it. The syndromes' ratio places it too, but for an error near its
         * threshold the weighted syndrome is mostly rounding and the ratio can name an innocent
         * element (host campaign, two checksums: 62 of 38,548 detected errors ended in a block
         * recomputation that way); and a NaN/Inf syndrome pair locates nothing. Where both
         * ratios agree with the crossing it is F2, else single localization's element. */
        n = candidates(b, out, 1);
        if (b->lc[out[0].j] == out[0].i && b->lr[out[0].i] == out[0].j)
            out[0].cls = 2;
    } else {
        n = candidates(b, out, !extended);
    }
    for (int q = 0; extended && q < n; q++)
        if (out[q].by_col && b->fr[out[q].i] && b->lr[out[q].i] == out[q].j &&
            !f2_syndromes_agree(x, b, out[q].i, out[q].j))
            return -1; /* more than one error behind this element's lines: recompute */
    return n;
}

/* Exact products into a compensated sum. */
static void add_prod(blasft_csum *s, double a, double b)
{
    double p = a * b;
    blasft_csum_add(s, p);
    blasft_csum_add(s, fma(a, b, -p));
}

/* C(i,j) = alpha op(A)(i,:) op(B)(:,j) + beta C_old(i,j) in compensated arithmetic (v[part]). */
static void exact_element(const abft_ctx *x, int64_t i, int64_t j, double v[2])
{
    const blasft_gemm *g = x->g;
    blasft_csum re, im;
    memset(&re, 0, sizeof re);
    memset(&im, 0, sizeof im);
    for (int64_t kk = 0; kk < x->k; kk++) {
        double ar = abft_opa(x, i, kk, 0), br = abft_opb(x, kk, j, 0);
        add_prod(&re, ar, br);
        if (x->P == 2) {
            double ai = abft_opa(x, i, kk, 1), bim = abft_opb(x, kk, j, 1);
            add_prod(&re, -ai, bim);
            add_prod(&im, ar, bim);
            add_prod(&im, ai, br);
        }
    }
    double dr = blasft_csum_value(&re), di = blasft_csum_value(&im);
    double cr = g->alpha[0] * dr - g->alpha[1] * di, ci = g->alpha[0] * di + g->alpha[1] * dr;
    if (!x->beta_zero) {
        double orr = abft_ld(x->cold, g->type, i + x->m * j, 0);
        double oi = x->P == 2 ? abft_ld(x->cold, g->type, i + x->m * j, 1) : 0.0;
        cr += g->beta[0] * orr - g->beta[1] * oi;
        ci += g->beta[0] * oi + g->beta[1] * orr;
    }
    v[0] = cr;
    v[1] = ci;
}

/* Recomputes C(i,j) in compensated arithmetic and stores it (rounded to the data type). */
static void recompute_element(const abft_ctx *x, int64_t i, int64_t j)
{
    double v[2];
    exact_element(x, i, j, v);
    for (int part = 0; part < x->P; part++)
        abft_st(x->g->c, x->g->type, i + j * x->g->ldc, part, v[part]);
}

/* PROJ's second tier for one real element: the exact value (compensated) and the element's own
 * bound from its exact partial-sum energy, the same model as the checksum's first tier (largest
 * over 1, 2, 4, 8 lanes per slice of the data GEMM, the slices' joins; abft_threshold.c) without
 * any estimate: (u^2/3) (that energy + sum_t (a_t b_t)^2 + 4 c^2) times alpha^2, the old C's
 * scaling, plus the compensated sum's own error. */
static double proj_element(const abft_ctx *x, int64_t i, int64_t j, double v[2])
{
    enum { H = BLASFT_PROJ_LANES_LOG2 + 1, NL = (2 << BLASFT_PROJ_LANES_LOG2) - 1 };
    const blasft_gemm *g = x->g;
    const int64_t S = x->slice > 0 ? x->slice : x->k;
    blasft_csum acc;
    memset(&acc, 0, sizeof acc);
    double lane[NL] = {0}, es[H] = {0}, ep = 0, sabs = 0, full = 0, total = 0;
    /* a later slice is added to C = beta c_old + alpha (prefix): in units of alpha, the join
     * rounds prefix + (beta / alpha) c_old */
    const double off = abft_proj_join_offset(x, i, j);
    for (int64_t kk = 0; kk < x->k; kk++) {
        double a = abft_opa(x, i, kk, 0), b = abft_opb(x, kk, j, 0), p = a * b;
        add_prod(&acc, a, b);
        for (int h = 0; h < H; h++) {
            int li = (1 << h) - 1 + (int)(kk & ((1 << h) - 1));
            lane[li] += p;
            es[h] += lane[li] * lane[li];
        }
        full += p;
        ep += p * p;
        sabs += fabs(p);
        if ((kk + 1) % S == 0 || kk + 1 == x->k) {
            total += blasft_proj_lane_energy(es, lane);
            if (kk + 1 > S)
                total += lane[0] * lane[0] + (full + off) * (full + off);
            memset(lane, 0, sizeof lane);
            memset(es, 0, sizeof es);
        }
    }
    double d = blasft_csum_value(&acc), old = 0;
    v[0] = g->alpha[0] * d;
    v[1] = 0;
    if (!x->beta_zero) {
        old = abft_ld(x->cold, g->type, i + x->m * j, 0);
        v[0] += g->beta[0] * old;
    }
    const double u = ldexp(1.0, -x->t), ur = ldexp(1.0, -BLASFT_T_DOUBLE), nn = (double)x->k;
    const double aa = fabs(g->alpha[0]), bb = fabs(g->beta[0]);
    double var = u * u / 3.0 *
                 (blasft_norm_second_order(nn, u) * aa * aa * (total + ep + 4.0 * full * full) +
                  3.0 * bb * bb * old * old);
    /* compensated dot product: u_d |result| + gamma_2n^2 sum |a b| (Ogita-Rump-Oishi), doubled */
    double gn = 2.0 * nn * ur;
    return blasft_proj_omega(BLASFT_PROJ_FALSE_ALARM) * sqrt(var) +
           2.0 * (ur * fabs(v[0]) + gn * gn * aa * sabs);
}

/* Second tier (NORM, PROJ) for element (i, j) of a flagged line: whether it is further from its
 * exact value than its own rounding bound; if so and `fix`, the exact value replaces it. */
static int confirm_element(abft_ctx *x, const blockview *b, int64_t i, int64_t j, int fix)
{
    const blasft_gemm *g = x->g;
    double v[2], thr, dmax = 0;
    if (x->cfg->threshold == BLASFT_THRESHOLD_PROJ && x->P == 1)
        thr = proj_element(x, i, j, v);
    else {
        thr = abft_threshold_element(x, i, j);
        exact_element(x, i, j, v);
    }
    /* where the threshold's squares leave the floating-point range, the worst-case bound, linear
     * in the data, decides instead */
    double vmax = 0;
    for (int part = 0; part < x->P; part++)
        vmax = fmax(vmax, fabs(v[part]));
    double magnitude;
    const double worst = element_worst_at(x, i, j, vmax, &magnitude);
    if (!(thr < HUGE_VAL) || !blasft_squares_in_range(magnitude))
        thr = 2.0 * worst;
    int bad = 0;
    for (int part = 0; part < x->P; part++) {
        double d = fabs(abft_ld(g->c, g->type, i + j * g->ldc, part) - v[part]);
        bad |= !(d <= thr); /* NaN, Inf: bad */
        if (!(d <= dmax))
            dmax = d;
    }
    if (bad && fix) {
        for (int part = 0; part < x->P; part++)
            abft_st(g->c, g->type, i + j * g->ldc, part, v[part]);
        abft_emit(x, BLASFT_EVENT_CORRECTED, b->bi, b->bj, i, j, dmax, thr, "corrected");
    } else if (bad)
        abft_emit(x, BLASFT_EVENT_DETECTED, b->bi, b->bj, i, j, dmax, thr, "reported");
    return bad;
}

/* NORM's second tier for a flagged block: every element of every flagged column and row is
 * compared with its exact value (bs dot products of length k per line). A tight threshold may
 * flag rounding noise once in 1e12 checks; this decides, so a false alarm costs time and never
 * changes a correct element. Returns the number of elements found wrong. */
static uint64_t confirm_lines(abft_ctx *x, const blockview *b, int fix)
{
    uint64_t found = 0;
    for (int64_t q = 0; q < b->jl; q++)
        if (b->fc[q])
            for (int64_t r = 0; r < b->il; r++)
                found += (uint64_t)confirm_element(x, b, b->i0 + r, b->j0 + q, fix);
    for (int64_t r = 0; r < b->il; r++)
        if (b->fr[r])
            for (int64_t q = 0; q < b->jl; q++)
                if (!b->fc[q]) /* elements of flagged columns were judged above */
                    found += (uint64_t)confirm_element(x, b, b->i0 + r, b->j0 + q, fix);
    return found;
}

static void correct_element(abft_ctx *x, const blockview *b, const cand *c, outcome *o)
{
    const blasft_gemm *g = x->g;
    int64_t i = b->i0 + c->i, j = b->j0 + c->j;
    int64_t e = c->by_col ? lookup_ci(x, b, 0, c->j) : lookup_ri(x, b, 0, c->i);
    const double *ref = (c->by_col ? x->refc : x->refr) + e * x->P;
    const double *rec = (c->by_col ? x->recc : x->recr) + e * x->P;
    double thr = c->by_col ? abft_threshold_col(x, e) : abft_threshold_row(x, e);
    /* The subtraction leaves the locating checksum's rounding (up to about thr) in the element;
     * where the crossing line's threshold is tighter (a narrow C: a row of one to a few
     * elements), that would flag the line again: the element is recomputed exactly instead. */
    const int64_t ex = c->by_col ? lookup_ri(x, b, 0, c->i) : lookup_ci(x, b, 0, c->j);
    int recompute = (c->by_col ? abft_threshold_row(x, ex) : abft_threshold_col(x, ex)) < thr;
    double s[2] = {0, 0}, v[2] = {0, 0}, smax = 0;
    for (int part = 0; part < x->P; part++) {
        s[part] = ref[part] - rec[part];
        v[part] = abft_ld(g->c, g->type, i + j * g->ldc, part);
        recompute |= blasft_correct_by_recompute(v[part], s[part], thr);
        if (!(fabs(s[part]) <= smax))
            smax = fabs(s[part]);
    }
    if (recompute)
        recompute_element(x, i, j);
    else
        for (int part = 0; part < x->P; part++)
            abft_st(g->c, g->type, i + j * g->ldc, part, v[part] + s[part]);
    o->corrected++;
    abft_emit(x, BLASFT_EVENT_CORRECTED, b->bi, b->bj, i, j, smax, thr,
              c->cls == 2 ? "corrected (F2)" : c->cls == 1 ? "corrected (F1)" : "corrected");
}

/* Recomputes C(i0:i0+il, j0:j0+jl) on the host BLAS from the operands and the saved old C. */
static void recompute_rect(abft_ctx *x, int64_t i0, int64_t il, int64_t j0, int64_t jl)
{
    const blasft_gemm *g = x->g;
    const int sz = blasft_type_size(g->type);
    if (!x->beta_zero)
        for (int64_t j = 0; j < jl; j++)
            memcpy((char *)g->c + (i0 + (j0 + j) * g->ldc) * sz,
                   (const char *)x->cold + (i0 + (j0 + j) * x->m) * sz, (size_t)(il * sz));
    blasft_gemm d = *g;
    d.m = il;
    d.n = jl;
    d.a = (const char *)g->a + (g->transa == 'N' ? i0 : i0 * g->lda) * sz;
    d.b = (const char *)g->b + (g->transb == 'N' ? j0 * g->ldb : j0) * sz;
    d.c = (char *)g->c + (i0 + j0 * g->ldc) * sz;
    blasft_host_gemm(&d);
}

static void recompute_block(abft_ctx *x, const blockview *b)
{
    recompute_rect(x, b->i0, b->il, b->j0, b->jl);
}

/* The block of C as the GEMM left it (before any correction), ld il. */
static void *save_block(const abft_ctx *x, const blockview *b)
{
    const blasft_gemm *g = x->g;
    const size_t sz = (size_t)blasft_type_size(g->type);
    char *s = malloc(sz * (size_t)(b->il * b->jl));
    if (s)
        for (int64_t j = 0; j < b->jl; j++)
            memcpy(s + sz * (size_t)(j * b->il), (const char *)g->c + sz * (size_t)(b->i0 + (b->j0 + j) * g->ldc),
                   sz * (size_t)b->il);
    return s;
}

static void restore_block(abft_ctx *x, const blockview *b, const void *saved)
{
    const blasft_gemm *g = x->g;
    const size_t sz = (size_t)blasft_type_size(g->type);
    for (int64_t j = 0; j < b->jl; j++)
        memcpy((char *)g->c + sz * (size_t)(b->i0 + (b->j0 + j) * g->ldc),
               (const char *)saved + sz * (size_t)(j * b->il), sz * (size_t)b->il);
}

/* A Euclidean norm without overflow or underflow of its squares: scale * sqrt(ssq), with scale the
 * largest |v| so far (the second opinion must hold for data of any magnitude). */
typedef struct norm2 {
    double scale, ssq;
} norm2;

static void norm2_add(norm2 *s, double v)
{
    const double a = fabs(v);
    if (a > s->scale) {
        const double r = s->scale / a;
        s->ssq = 1.0 + s->ssq * r * r;
        s->scale = a;
    } else if (a > 0) {
        const double r = a / s->scale;
        s->ssq += r * r;
    } else if (a != a) {
        s->scale = a; /* NaN: the norm is NaN */
    }
}

static double norm2_value(const norm2 *s) { return s->scale * sqrt(s->ssq); }

/* second_opinion's test of one syndrome against its worst case. A checksum beyond the double
 * range (the weighted sums of results near the largest double overflow while the elements stay
 * finite) cannot judge the block: the comparison of every element with its recomputation, which
 * second_opinion makes too, decides alone (a NaN or Inf in C fails that one). */
static int syndrome_within(double ref, double rec, double lim)
{
    return !isfinite(ref) || !isfinite(rec) || fabs(ref - rec) <= lim;
}

/* A second opinion on a flagged block, without the thresholds' assumption of independent
 * roundings (structured data, constant or repeated rows and columns, gives the elements of a block
 * the same rounding, and the checksums' syndromes then add up linearly and flag blocks that hold
 * no error). Two worst-case tests, valid for any summation order, FMA or not
 * (|sum a b| <= ||a|| ||b||, E(i, j) = gamma_{kP+2} |alpha| ||op(A)_i|| ||op(B)_j|| + 2u (|beta
 * c_old| + |c|)):
 *  - *apart: the elements of `saved` (the block as the GEMM left it, ld il) further than 2 E from
 *    a second computation on the host BLAS (made here into C when `recompute`, else C holds one);
 *  - the return value: every checksum syndrome of the block (x's current recomputed checksums)
 *    within sum |w| E plus the reference's own worst-case rounding (syndrome_within).
 * C is restored from `saved` where the settings keep the GEMM's values (report, abort, detect).
 * Returns -1 without memory. */
static int second_opinion(abft_ctx *x, blockview *b, const void *saved, int recompute, int64_t *apart)
{
    const blasft_gemm *g = x->g;
    const int64_t il = b->il, jl = b->jl, k = x->k, R = x->R;
    double *na = malloc(sizeof(double) * (size_t)((1 + R) * (il + jl)));
    if (!na)
        return -1;
    /* rowe[w il + r], cole[w jl + q]: the lines' sums of |w| E */
    double *nb = na + il, *rowe = nb + jl, *cole = rowe + R * il;
    memset(rowe, 0, sizeof(double) * (size_t)(R * (il + jl)));
    for (int64_t r = 0; r < il; r++) {
        norm2 s = {0, 1};
        for (int64_t l = 0; l < k; l++)
            for (int part = 0; part < x->P; part++)
                norm2_add(&s, abft_opa(x, b->i0 + r, l, part));
        na[r] = norm2_value(&s);
    }
    for (int64_t q = 0; q < jl; q++) {
        norm2 s = {0, 1};
        for (int64_t l = 0; l < k; l++)
            for (int part = 0; part < x->P; part++)
                norm2_add(&s, abft_opb(x, l, b->j0 + q, part));
        nb[q] = norm2_value(&s);
    }
    if (recompute)
        recompute_block(x, b);
    const double u = ldexp(1.0, -x->t), nn = (double)(k * x->P + 2);
    const double gam = blasft_gamma(nn, u);
    const double aa = fabs(g->alpha[0]) + fabs(g->alpha[1]), bb = fabs(g->beta[0]) + fabs(g->beta[1]);
    *apart = 0;
    for (int64_t q = 0; q < jl; q++)
        for (int64_t r = 0; r < il; r++) {
            const int64_t i = b->i0 + r, j = b->j0 + q;
            double co = 0, cv = 0;
            if (!x->beta_zero)
                for (int part = 0; part < x->P; part++)
                    co += fabs(abft_ld(x->cold, g->type, i + x->m * j, part));
            const double mass = na[r] * nb[q];
            int same = 1;
            for (int part = 0; part < x->P; part++) {
                double v0 = abft_ld(saved, g->type, r + q * il, part);
                double v1 = abft_ld(g->c, g->type, i + j * g->ldc, part);
                /* beyond the range: blasft_parts_agree (an overflow to the same Inf agrees) */
                const double lim =
                    2.0 * blasft_element_rounding(gam, u, aa, aa * mass, bb, co, fabs(v1));
                same &= v0 == v1 || blasft_parts_agree(v0, v1, lim, blasft_largest(u));
                cv += fabs(v1);
            }
            *apart += !same;
            /* E(i, j) */
            const double e = blasft_element_rounding(gam, u, aa, aa * mass, bb, co, cv);
            for (int w = 0; w < R; w++) {
                cole[w * jl + q] += fabs(x->w[w][r]) * e;
                rowe[w * il + r] += fabs(x->w[w][q]) * e;
            }
        }
    /* worst-case syndromes: column q of checksum w: sum_i |w_i| E(i, q) + gamma |alpha| ||s|| ||b||
     * with ||s|| <= sum_i |w_i| ||a_i||; rows alike */
    int ok = 1;
    for (int w = 0; w < R && ok; w++) {
        double sa = 0, sb = 0;
        for (int64_t r = 0; r < il; r++)
            sa += fabs(x->w[w][r]) * na[r];
        for (int64_t q = 0; q < jl; q++)
            sb += fabs(x->w[w][q]) * nb[q];
        for (int64_t q = 0; q < jl && ok; q++) {
            const int64_t e = lookup_ci(x, b, w, q);
            double lim = 2.0 * (cole[w * jl + q] + gam * (aa * (sa * nb[q])) +
                                blasft_underflow_rounding(gam, u, aa));
            for (int part = 0; part < x->P; part++)
                ok &= syndrome_within(x->refc[e * x->P + part], x->recc[e * x->P + part], lim);
        }
        for (int64_t r = 0; r < il && ok; r++) {
            const int64_t e = lookup_ri(x, b, w, r);
            double lim = 2.0 * (rowe[w * il + r] + gam * (aa * (na[r] * sb)) +
                                blasft_underflow_rounding(gam, u, aa));
            for (int part = 0; part < x->P; part++)
                ok &= syndrome_within(x->refr[e * x->P + part], x->recr[e * x->P + part], lim);
        }
    }
    free(na);
    if (x->cfg->on_error != BLASFT_ON_ERROR_RECOMPUTE || x->cfg->mode == BLASFT_MODE_DETECT)
        restore_block(x, b, saved);
    return ok;
}

/* A flagged block that second_opinion found correct: not an error, counted apart. */
static void false_alarm(abft_ctx *x, const blockview *b, outcome *o, uint64_t det,
                        uint64_t corrected0, void *saved)
{
    free(saved);
    o->detected -= det;
    o->corrected = corrected0; /* any tentative correction was overwritten or undone */
    o->false_alarms++;
    blasft_log(BLASFT_LOG_DEBUG,
               "%s: block (%lld, %lld) over threshold (|syndrome| %g, threshold %g) but equal to its "
               "recomputation within rounding: not an error",
               x->g->routine ? x->g->routine : "gemm", (long long)b->bi, (long long)b->bj, b->maxsyn,
               b->maxthr);
}

/* Ends the handling of a flagged block as a false alarm when second_opinion finds the GEMM's
 * block equal to its recomputation and the syndromes within their worst case; undoes the counts of
 * the recomputations made on the way. Returns 1 if it did (and freed saved). */
static int settle_as_rounding(abft_ctx *x, blockview *b, outcome *o, uint64_t det, uint64_t corrected0,
                              void *saved, int recompute, uint64_t undo_recomputed, uint64_t undo_lines)
{
    int64_t apart = -1;
    if (!saved || second_opinion(x, b, saved, recompute, &apart) != 1 || apart != 0)
        return 0;
    o->recomputed -= undo_recomputed;
    o->lines -= undo_lines;
    false_alarm(x, b, o, det, corrected0, saved);
    return 1;
}

/* Exactly one flagged line in the block (one column, no row, or the reverse) and nothing that
 * locates along it: a single error large enough to cross one threshold but not the other (the
 * two sides have different thresholds and rounding noise; the campaign's 119 such cases were all
 * within a few thresholds). One checksum cannot place it along the line, but it lies on that
 * line: recompute the line's bs elements instead of the block's bs^2. Returns whether it did;
 * *row / *col is the line's row or column (the other -1). */
static int recompute_line(abft_ctx *x, const blockview *b, int64_t *row, int64_t *col)
{
    if (b->nfc + b->nfr != 1)
        return 0;
    int q = 0;
    *row = *col = -1;
    if (b->nfc == 1) {
        while (!b->fc[q])
            q++;
        *col = b->j0 + q;
        recompute_rect(x, b->i0, b->il, *col, 1);
    } else {
        while (!b->fr[q])
            q++;
        *row = b->i0 + q;
        recompute_rect(x, *row, 1, b->j0, b->jl);
    }
    return 1;
}

/* The worst-case rounding of a computed C(i, j) whose part has magnitude abs_c, in any summation
 * order: gamma_{kP+2} |alpha| sum |a b| + 2u (|beta c_old| + |c|) (blasft_element_rounding). */
/* The sum and the largest of |a b| over C(i, j)'s dot product (|re| + |im| per complex operand). */
static double element_mass(const abft_ctx *x, int64_t i, int64_t j, double *largest)
{
    double sab = 0, top = 0;
    for (int64_t kk = 0; kk < x->k; kk++) {
        double a = 0, bv = 0;
        for (int part = 0; part < x->P; part++) {
            a += fabs(abft_opa(x, i, kk, part));
            bv += fabs(abft_opb(x, kk, j, part));
        }
        sab += a * bv;
        top = a * bv > top ? a * bv : top;
    }
    *largest = top;
    return sab;
}

/* sum of |c_old| over the parts of C(i, j) (0 where beta is 0) */
static double element_cold(const abft_ctx *x, int64_t i, int64_t j)
{
    double co = 0;
    if (!x->beta_zero)
        for (int part = 0; part < x->P; part++)
            co += fabs(abft_ld(x->cold, x->g->type, i + x->m * j, part));
    return co;
}

/* element_worst, and where magnitude is given, |alpha| sum |a b| + |beta| |c_old| of C(i, j), the
 * magnitude its rounding scales with, from the same pass over the element's operands. */
static double element_worst_at(const abft_ctx *x, int64_t i, int64_t j, double abs_c,
                               double *magnitude)
{
    const blasft_gemm *g = x->g;
    double top;
    const double sab = element_mass(x, i, j, &top), co = element_cold(x, i, j);
    const double u = ldexp(1.0, -x->t), gam = blasft_gamma((double)(x->k * x->P + 2), u);
    const double aa = fabs(g->alpha[0]) + fabs(g->alpha[1]), bb = fabs(g->beta[0]) + fabs(g->beta[1]);
    if (magnitude)
        *magnitude = aa * sab + bb * co;
    return blasft_element_rounding(gam, u, aa, aa * sab, bb, co, abs_c);
}

static double element_worst(const abft_ctx *x, int64_t i, int64_t j, double abs_c)
{
    return element_worst_at(x, i, j, abs_c, NULL);
}

/* PEA's threshold for the element C(i, j) itself (omega sigma of its own dot product, y its largest
 * |alpha a b|, plus the final addition's rounding of a part of magnitude abs_c): a difference
 * beyond it is a fault at the element level, as a checksum's beyond its threshold is one at the
 * block level. */
static double element_pea_eps(const abft_ctx *x, int64_t i, int64_t j, double abs_c)
{
    const blasft_gemm *g = x->g;
    double y;
    element_mass(x, i, j, &y);
    const double aa = fabs(g->alpha[0]) + fabs(g->alpha[1]);
    const double sig = blasft_pea_sigma((double)(x->k * x->P), y, x->t, 1);
    return blasft_pea_eps(x->cfg->omega, aa, sig * sig, blasft_blas_var_add(abs_c, x->t));
}

/* Whether C(i, j) is further from its compensated recomputation than a correct computation in
 * any summation order can be: element_worst plus the recomputation's own 4 u_d |value| (per
 * part). NaN and Inf are wrong. */
static int element_wrong(const abft_ctx *x, int64_t i, int64_t j)
{
    const blasft_gemm *g = x->g;
    double v[2];
    exact_element(x, i, j, v);
    const double ud = ldexp(1.0, -BLASFT_T_DOUBLE);
    for (int part = 0; part < x->P; part++) {
        double c = abft_ld(g->c, g->type, i + j * g->ldc, part);
        double bound = element_worst(x, i, j, fabs(v[part])) + 4.0 * ud * fabs(v[part]);
        if (!(fabs(c - v[part]) <= bound)) /* NaN, Inf: wrong */
            return 1;
    }
    return 0;
}

/* After recompute_line: the line's values as the GEMM left them (saved, the block with ld il)
 * against its recomputation (now in C). 1: one element carries most of the difference (at least
 * half of the line's sum of |old - new|) and at least half of the line's unweighted threshold (a
 * single element's rounding stays far below a checksum's threshold), or more than its own PEA
 * threshold or twice its worst-case rounding: the fault, located at
 * (*fi, *fj); 0: otherwise every element within twice its worst-case rounding (the flag was the
 * rounding the line's elements share: structured data); 2: neither (or no saved block). */
static int line_verdict(const abft_ctx *x, const blockview *b, const void *saved, int64_t row,
                        int64_t col, int64_t *fi, int64_t *fj)
{
    if (!saved)
        return 2;
    const blasft_gemm *g = x->g;
    const int64_t len = col >= 0 ? b->il : b->jl;
    double total = 0, top = -1;
    int64_t at = -1;
    int beyond = 0, top_beyond = 0;
    double top_mag = 0;
    for (int64_t e = 0; e < len; e++) {
        const int64_t i = col >= 0 ? b->i0 + e : row, j = col >= 0 ? col : b->j0 + e;
        double d = 0, mag = 0;
        for (int part = 0; part < x->P; part++) {
            double old = abft_ld(saved, g->type, (i - b->i0) + (j - b->j0) * b->il, part);
            double now = abft_ld(g->c, g->type, i + j * g->ldc, part);
            double dp = fabs(old - now);
            d = dp > d || dp != dp ? dp : d; /* NaN: apart */
            mag += fabs(now);
        }
        const int out = !(d <= 2.0 * element_worst(x, i, j, mag));
        beyond += out;
        total += d;
        if (d > top || d != d) {
            top = d;
            at = e;
            top_beyond = out;
            top_mag = mag;
        }
    }
    if (at >= 0 && !top_beyond) {
        const int64_t i = col >= 0 ? b->i0 + at : row, j = col >= 0 ? col : b->j0 + at;
        top_beyond = top > element_pea_eps(x, i, j, top_mag);
    }
    const double thr = col >= 0 ? abft_threshold_col(x, abft_ci(x, b->bi, 0, col))
                                : abft_threshold_row(x, abft_ri(x, row, b->bj, 0));
    /* the fault: an element with most of the difference that is at half the unweighted threshold,
     * or beyond its own element's PEA threshold or any correct computation's rounding (a fault
     * that only the weighted checksum saw, its weight lifting it over that threshold) */
    if (top != top || (top >= 0.5 * total && (top >= 0.5 * thr || top_beyond))) {
        *fi = col >= 0 ? b->i0 + at : row;
        *fj = col >= 0 ? col : b->j0 + at;
        return 1;
    }
    return beyond == 0 ? 0 : 2;
}

/* Whether the block's checksums, taken again from C, pass. Where they cannot be taken (out of
 * memory) the correction is not verified and the caller goes on to recompute the block (before,
 * the stale checksums were scanned as if taken again). */
static int verify(abft_ctx *x, blockview *b)
{
    return abft_c_checksums(x, x->g->c, x->g->ldc, 0, b->bi, b->bi + 1, b->bj, b->bj + 1) == 0 &&
           scan_block(x, b) == 0;
}

static int verify(abft_ctx *x, blockview *b);

static void handle_unverified(abft_ctx *x, blockview *b, outcome *o, void *saved,
                              const cand *cands, int nc, uint64_t det, uint64_t corrected0);

static void handle_block(abft_ctx *x, blockview *b, outcome *o)
{
    const blasft_config *cfg = x->cfg;
    if (cfg->threshold == BLASFT_THRESHOLD_NORM || cfg->threshold == BLASFT_THRESHOLD_PROJ) {
        int fix = cfg->mode != BLASFT_MODE_DETECT;
        uint64_t found = confirm_lines(x, b, fix);
        if (found == 0) {
            o->false_alarms++;
            return;
        }
        o->detected += found;
        if (!fix) {
            o->uncorrectable += found;
            return;
        }
        o->corrected += found;
        if (verify(x, b))
            return;
        /* still flagged (a fault on our side, or one the lines did not cover): as below */
    }
    cand *cands = malloc(sizeof(cand) * 2048);
    int nc = cands ? find_candidates(x, b, cands) : -1;
    const uint64_t det = nc > 0 ? (uint64_t)nc : (uint64_t)(b->nfc > b->nfr ? b->nfc : b->nfr);
    o->detected += det;
    const uint64_t corrected0 = o->corrected;
    /* the block as the GEMM left it, for a second computation before anything is called wrong */
    void *saved = save_block(x, b);
    /* many flagged lines (a fault or two flag a few): the pattern of structured data, whose
     * common rounding lets the weighted/unweighted ratio point at innocent elements; there only
     * elements further from their exact value than any correct computation can be are corrected
     * in place, the others are left to the recomputation below. (A few lines: the thresholds'
     * locations stand, as the thesis's method has them.) */
    if (nc > 0 && b->nfc + b->nfr > 4) {
        int w = 0;
        for (int q = 0; q < nc; q++)
            if (element_wrong(x, b->i0 + cands[q].i, b->j0 + cands[q].j))
                cands[w++] = cands[q];
        nc = w;
    }
    if (cfg->mode == BLASFT_MODE_DETECT) {
        if (nc <= 0 && settle_as_rounding(x, b, o, det, corrected0, saved, 1, 0, 0)) {
            free(cands);
            return;
        }
        if (nc > 0)
            for (int q = 0; q < nc; q++)
                abft_emit(x, BLASFT_EVENT_DETECTED, b->bi, b->bj, b->i0 + cands[q].i,
                          b->j0 + cands[q].j, b->maxsyn, b->maxthr, "reported");
        else
            abft_emit(x, BLASFT_EVENT_DETECTED, b->bi, b->bj, -1, -1, b->maxsyn, b->maxthr, "reported");
        o->uncorrectable += nc > 0 ? (uint64_t)nc : 1;
        free(cands);
        free(saved);
        return;
    }
    if (nc > 0) {
        for (int q = 0; q < nc; q++) {
            const int64_t i = b->i0 + cands[q].i, j = b->j0 + cands[q].j;
            if (element_wrong(x, i, j)) {
                correct_element(x, b, &cands[q], o);
            } else {
                /* within the rounding any correct computation may have: a small fault or the
                 * data's rounding; the exact value (compensated) serves both, where subtracting
                 * the syndrome could move an innocent element by the block's common rounding */
                recompute_element(x, i, j);
                o->corrected++;
                abft_emit(x, BLASFT_EVENT_CORRECTED, b->bi, b->bj, i, j, b->maxsyn, b->maxthr,
                          "corrected");
            }
        }
        if (verify(x, b)) {
            free(cands);
            free(saved);
            return;
        }
    }
    handle_unverified(x, b, o, saved, cands, nc, det, corrected0);
    free(cands);
}

/* Whether handle_block located and corrected element (i, j) before its checks still failed. */
static int located_before(const blockview *b, const cand *cands, int nc, int64_t i, int64_t j)
{
    for (int q = 0; q < nc; q++)
        if (b->i0 + cands[q].i == i && b->j0 + cands[q].j == j)
            return 1;
    return 0;
}

/* A flagged block that the located corrections (cands, nc; none where nc <= 0) did not clear:
 * reported, aborted on, or recomputed by line, then whole. saved: the block as the GEMM left it
 * (this frees it). */
static void handle_unverified(abft_ctx *x, blockview *b, outcome *o, void *saved,
                              const cand *cands, int nc, uint64_t det, uint64_t corrected0)
{
    const blasft_config *cfg = x->cfg;
    double syn = b->maxsyn, thr = b->maxthr;
    if (cfg->on_error != BLASFT_ON_ERROR_RECOMPUTE) {
        /* before reporting or aborting: a second computation of the block that agrees with the
         * GEMM's (C is left as the GEMM left it) means rounding, not a fault */
        if (settle_as_rounding(x, b, o, det, corrected0, saved, 1, 0, 0))
            return;
        free(saved);
    }
    if (cfg->on_error == BLASFT_ON_ERROR_REPORT) {
        o->uncorrectable++;
        abft_emit(x, BLASFT_EVENT_UNCORRECTABLE, b->bi, b->bj, -1, -1, syn, thr, "reported");
        return;
    }
    if (cfg->on_error == BLASFT_ON_ERROR_ABORT) {
        abft_emit(x, BLASFT_EVENT_UNCORRECTABLE, b->bi, b->bj, -1, -1, syn, thr, "aborted");
        blasft_log(BLASFT_LOG_ERROR, "uncorrectable error in block (%lld, %lld) of %s: aborting",
                   (long long)b->bi, (long long)b->bj, x->g->routine ? x->g->routine : "gemm");
        abort();
    }
    int64_t row, col;
    int line = 0;
    if (recompute_line(x, b, &row, &col)) {
        int64_t fi = -1, fj = -1;
        const int verdict = line_verdict(x, b, saved, row, col, &fi, &fj);
        if (verify(x, b)) {
            if (verdict == 1) {
                /* one element made the flagged line's difference: located, and corrected by
                 * the line's recomputation. Where the checksums had located and corrected it
                 * already (by a subtraction whose rounding its crossing line still saw, which
                 * correct_element avoids where it can tell), the recomputation finished that
                 * correction of the same error: counted once. */
                if (located_before(b, cands, nc, fi, fj)) {
                    o->lines++;
                    abft_emit(x, BLASFT_EVENT_RECOMPUTED, b->bi, b->bj, row, col, syn, thr,
                              "line recomputed (after its correction)");
                } else {
                    o->corrected++;
                    abft_emit(x, BLASFT_EVENT_CORRECTED, b->bi, b->bj, fi, fj, syn, thr,
                              "corrected (its line recomputed)");
                }
                free(saved);
                return;
            }
            /* the line equal to its recomputation within rounding: not a fault */
            if (verdict == 0 && nc <= 0 && settle_as_rounding(x, b, o, det, corrected0, saved, 0, 0, 0))
                return;
            o->lines++;
            abft_emit(x, BLASFT_EVENT_RECOMPUTED, b->bi, b->bj, row, col, syn, thr, "line recomputed");
            free(saved);
            return;
        }
        line = 1;
        o->lines++;
        abft_emit(x, BLASFT_EVENT_RECOMPUTED, b->bi, b->bj, row, col, syn, thr, "line recomputed");
    }
    recompute_block(x, b);
    if (verify(x, b)) {
        /* nothing located beyond rounding (a single fault flags its row and column and is
         * located, or one line and is cleared by the line's recomputation above), and the
         * recomputation equal to the GEMM's block within rounding: not a fault */
        if (nc <= 0 && settle_as_rounding(x, b, o, det, corrected0, saved, 0, 0, (uint64_t)line))
            return;
        o->recomputed++;
        abft_emit(x, BLASFT_EVENT_RECOMPUTED, b->bi, b->bj, -1, -1, syn, thr, "recomputed");
        free(saved);
        return;
    }
    o->recomputed++;
    abft_emit(x, BLASFT_EVENT_RECOMPUTED, b->bi, b->bj, -1, -1, syn, thr, "recomputed");
    /* the block was recomputed and still disagrees: suspect our reference checksums */
    abft_reference(x, b->bi, b->bi + 1, b->bj, b->bj + 1);
    if (verify(x, b)) {
        /* the compensated reference agrees: unless the recomputation also equals the GEMM's block
         * (then the reference GEMM's own rounding, structured like the data's, made the flags),
         * our first reference was wrong */
        if (settle_as_rounding(x, b, o, det, corrected0, saved, 0, 1, (uint64_t)line))
            return;
        x->encoder_faults++;
        abft_emit(x, BLASFT_EVENT_ENCODER_FAULT, b->bi, b->bj, -1, -1, syn, thr, "recomputed");
        free(saved);
        return;
    }
    /* still over the thresholds: within the worst case of rounding (then the recomputation, now in
     * C, stands: equal to the GEMM's block, or differing where the GEMM's had faults), or not */
    int64_t apart = -1;
    if (saved && second_opinion(x, b, saved, 0, &apart) == 1) {
        if (apart == 0) {
            o->recomputed--;
            o->lines -= (uint64_t)line;
            false_alarm(x, b, o, det, corrected0, saved);
        } else
            free(saved);
        return;
    }
    free(saved);
    o->uncorrectable++;
    abft_emit(x, BLASFT_EVENT_UNCORRECTABLE, b->bi, b->bj, -1, -1, b->maxsyn, b->maxthr, "reported");
}

/* The first comparison of every element of the block columns [lo, hi) without touching
 * anything (flag_once: no refinement): dirty[bi + nbr bj] = 1 where one is flagged. */
typedef struct precheck_job {
    const abft_ctx *x;
    uint8_t *dirty;
} precheck_job;

static void run_precheck(void *p, int64_t lo, int64_t hi)
{
    const precheck_job *j = p;
    const abft_ctx *x = j->x;
    for (int64_t bj = lo; bj < hi; bj++) {
        int64_t j0 = bj * x->bs, jl = abft_len(x->n, bj, x->bs);
        for (int64_t bi = 0; bi < x->nbr; bi++) {
            int64_t i0 = bi * x->bs, il = abft_len(x->m, bi, x->bs);
            int f = 0;
            for (int64_t q = 0; q < jl && !f; q++)
                for (int r = 0; r < x->R; r++)
                    f |= flag_once(x, 0, abft_ci(x, bi, r, j0 + q), NULL, NULL);
            for (int64_t q = 0; q < il && !f; q++)
                for (int r = 0; r < x->R; r++)
                    f |= flag_once(x, 1, abft_ri(x, i0 + q, bj, r), NULL, NULL);
            j->dirty[bi + x->nbr * bj] = (uint8_t)f;
        }
    }
}

int abft_check_and_correct(abft_ctx *x, blasft_abft_diag *diag, int want_checks)
{
    const int64_t nc = abft_nc(x), nr = abft_nr(x);
    if (want_checks) {
        diag->checks_list = calloc((size_t)((nc + nr) * x->P + 1), sizeof *diag->checks_list);
        if (!diag->checks_list)
            return -1;
        size_t q = 0;
        for (int side = 0; side < 2; side++)
            for (int64_t e = 0; e < (side ? nr : nc); e++) {
                double t = side ? abft_threshold_row(x, e) : abft_threshold_col(x, e);
                /* invert the index maps */
                int64_t s = side ? e / x->m : e % (x->R * x->nbr);
                int64_t v = side ? e % x->m : e / (x->R * x->nbr);
                for (int part = 0; part < x->P; part++) {
                    blasft_abft_check *c = &diag->checks_list[q++];
                    c->side = (uint8_t)side;
                    c->weighted = (uint8_t)(s % x->R);
                    c->part = (uint8_t)part;
                    c->block_row = side ? v / x->bs : s / x->R;
                    c->block_col = side ? s / x->R : v / x->bs;
                    c->index = v;
                    c->reference = (side ? x->refr : x->refc)[e * x->P + part];
                    c->recomputed = (side ? x->recr : x->recc)[e * x->P + part];
                    c->threshold = t;
                    c->flagged = (uint8_t)blasft_over(c->reference - c->recomputed, t);
                }
            }
        diag->count = q;
    }
    diag->checks += (uint64_t)((nc + nr) * x->P);
    outcome o;
    memset(&o, 0, sizeof o);
    uint8_t *dirty = malloc((size_t)(x->nbr * x->nbc + 1));
    if (!dirty)
        return -1;
    blockview *b = NULL; /* 16 KiB: made for the first flagged block only */
    /* Most blocks are clean: their elements are compared first on the threads, read-only. A
     * block is then scanned as before when it was flagged there, and so is every block after
     * the first such one (handling a block changes the engine's state), so the order and the
     * outcome of everything that is flagged stay those of the plain sequential scan. */
    precheck_job pj = {x, dirty};
    abft_k_for(x->threads, run_precheck, &pj, x->nbc, (nc + nr) * 32);
    int sequential = 0;
    for (int64_t bj = 0; bj < x->nbc; bj++)
        for (int64_t bi = 0; bi < x->nbr; bi++) {
            if (!sequential && !dirty[bi + x->nbr * bj])
                continue;
            /* nothing has been changed before the first flagged block */
            if (!b && !(b = malloc(sizeof *b))) {
                free(dirty);
                return -1;
            }
            sequential = 1;
            b->bi = bi;
            b->bj = bj;
            b->i0 = bi * x->bs;
            b->j0 = bj * x->bs;
            b->il = abft_len(x->m, bi, x->bs);
            b->jl = abft_len(x->n, bj, x->bs);
            if (scan_block(x, b))
                handle_block(x, b, &o);
        }
    free(b);
    free(dirty);
    diag->detected += o.detected;
    diag->corrected += o.corrected;
    diag->blocks_recomputed += o.recomputed;
    diag->lines_recomputed += o.lines;
    diag->uncorrectable += o.uncorrectable;
    diag->false_alarms += o.false_alarms;
    return 0;
}
