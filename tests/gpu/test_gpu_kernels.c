/* Every GPU kernel against an independent oracle on the same inputs: the encodings against
 * double-double sums, the top-p lists against the shared insertion rule run on the host, and the
 * reference checksums, recomputed checksums and thresholds against the host ABFT engine's
 * diagnostic record (blasft_abft_run). Exits 77 where there is no GPU. */
#include "abft/abft_arith.h"
#include "abft/abft_engine.h"
#include "config.h"
#include "gpu_debug.h"
#include "gpu_harness.h"
#include "hpref.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static blasft_gpu_ctx *ctx;
static int pea_p_override; /* BLASFT_PEA_P of the next cases; 0: the harness's */

static double wt(int w, int i, int bs) { return w == 0 ? 1.0 : blasft_weight(BLASFT_W_LINEAR, i, bs); }

static double *fetch(blasft_type t, const gh_case *c, const blasft_gpu_params *p, blasft_gpu_buf b,
                     int is_type)
{
    size_t cap = 8 * (size_t)(c->m * 8 + c->n * 8 + c->k * (c->m + c->n) * 2 + c->m * c->n * 2 + 64);
    void *raw = malloc(cap);
    int64_t n = blasft_gpu_debug_fetch(ctx, t, c->m, c->n, c->k, p, b, raw);
    GH_CHECK(n >= 0, "fetch of buffer %d failed", (int)b);
    double *out = malloc(8 * (size_t)(n > 0 ? n : 1));
    for (int64_t i = 0; i < n; i++)
        out[i] = is_type == 2 ? (double)((int *)raw)[i]
                 : is_type && t == BLASFT_TYPE_S ? (double)((float *)raw)[i]
                                                 : ((double *)raw)[i];
    free(raw);
    return out;
}

static void one(const gh_case *c, int bs, int r, int block_lists, uint64_t seed)
{
    blasft_gpu_params p;
    gh_params(&p, bs, r);
    p.pea_block_lists = block_lists;
    if (pea_p_override)
        p.pea_p = pea_p_override;
    gh_data d;
    gh_make(&d, c, seed);
    const char *ty = c->t == BLASFT_TYPE_S ? "S" : "D";
    double u = c->t == BLASFT_TYPE_S ? ldexp(1.0, -24) : ldexp(1.0, -53);
    blasft_gpu_gemm g = gh_desc(&d);
    GH_CHECK(blasft_gpu_gemm_run(ctx, &g, &p) == 0, "gpu run");
    gh_sync();
    const int64_t m = c->m, n = c->n, k = c->k, mb = (m + bs - 1) / bs, nb = (n + bs - 1) / bs;

    /* encodings against double-double sums */
    double *acs = fetch(c->t, c, &p, BLASFT_GPU_BUF_ACST, 1), *bcs = fetch(c->t, c, &p, BLASFT_GPU_BUF_BCS, 1);
    int64_t bad = 0;
    for (int64_t I = 0; I < mb; I++)
        for (int w = 0; w < r; w++)
            for (int64_t l = 0; l < k; l++) {
                hp_dd s = hp_from(0.0);
                double mag = 0.0;
                for (int64_t i = I * bs; i < m && i < (I + 1) * bs; i++) {
                    s = hp_add_prod(s, wt(w, (int)(i - I * bs), bs), gh_opa(&d, i, l));
                    mag += fabs(wt(w, (int)(i - I * bs), bs) * gh_opa(&d, i, l));
                }
                double gv = acs[l + (I * r + w) * k], hv = hp_to_double(s);
                bad += !(fabs(gv - hv) <= u * fabs(hv) + ldexp(mag, -50));
            }
    GH_CHECK(bad == 0, "%s: %lld column-checksum encodings of A off", ty, (long long)bad);
    bad = 0;
    for (int64_t J = 0; J < nb; J++)
        for (int w = 0; w < r; w++)
            for (int64_t l = 0; l < k; l++) {
                hp_dd s = hp_from(0.0);
                double mag = 0.0;
                for (int64_t j = J * bs; j < n && j < (J + 1) * bs; j++) {
                    s = hp_add_prod(s, wt(w, (int)(j - J * bs), bs), gh_opb(&d, l, j));
                    mag += fabs(wt(w, (int)(j - J * bs), bs) * gh_opb(&d, l, j));
                }
                double gv = bcs[l + (J * r + w) * k], hv = hp_to_double(s);
                bad += !(fabs(gv - hv) <= u * fabs(hv) + ldexp(mag, -50));
            }
    GH_CHECK(bad == 0, "%s: %lld row-checksum encodings of B off", ty, (long long)bad);

    /* top-p lists against the shared insertion rule */
    double *tav = fetch(c->t, c, &p, BLASFT_GPU_BUF_TA_VAL, 0), *tap = fetch(c->t, c, &p, BLASFT_GPU_BUF_TA_POS, 2);
    double *tbv = fetch(c->t, c, &p, BLASFT_GPU_BUF_TB_VAL, 0), *tbp = fetch(c->t, c, &p, BLASFT_GPU_BUF_TB_POS, 2);
    bad = 0;
    for (int side = 0; side < 2 && !block_lists; side++)
        for (int64_t v = 0; v < (side ? n : m); v++) {
            double vals[8];
            int64_t pos[8];
            int cnt = 0;
            for (int64_t l = 0; l < k; l++)
                cnt = blasft_topp_insert(vals, pos, cnt, p.pea_p,
                                         fabs(side ? gh_opb(&d, l, v) : gh_opa(&d, v, l)), l);
            for (int q = 0; q < cnt; q++) {
                double gv = side ? tbv[v * 8 + q] : tav[v * 8 + q];
                double gp = side ? tbp[v * 8 + q] : tap[v * 8 + q];
                bad += gv != vals[q] || (int64_t)gp != pos[q];
            }
        }
    GH_CHECK(bad == 0, "%s: %lld top-p entries differ", ty, (long long)bad);

    /* op(A)'s checksum and envelope lists (small calls make them with the encoding's last
     * launch): the values of the insertion rule over the fetched checksums and the host's
     * envelopes; a position may differ where values tie, so each must hold its value */
    double *tcv = fetch(c->t, c, &p, BLASFT_GPU_BUF_TAC_VAL, 0), *tcp = fetch(c->t, c, &p, BLASFT_GPU_BUF_TAC_POS, 2);
    double *tev = fetch(c->t, c, &p, BLASFT_GPU_BUF_TEA_VAL, 0), *tep = fetch(c->t, c, &p, BLASFT_GPU_BUF_TEA_POS, 2);
    double *env = malloc(8 * (size_t)(k * mb));
    for (int64_t I = 0; I < mb; I++)
        for (int64_t l = 0; l < k; l++) {
            double e = 0.0;
            for (int64_t i = I * bs; i < m && i < (I + 1) * bs; i++)
                e = fmax(e, fabs(gh_opa(&d, i, l)));
            env[l + I * k] = e;
        }
    bad = 0;
    for (int side = 0; side < 2; side++)
        for (int64_t v = 0; v < (side ? mb : r * mb); v++) {
            const double *x = side ? env + v * k : acs + v * k;
            const double *gv = side ? tev : tcv, *gp = side ? tep : tcp;
            double vals[8];
            int64_t pos[8];
            int cnt = 0;
            for (int64_t l = 0; l < k; l++)
                cnt = blasft_topp_insert(vals, pos, cnt, p.pea_p, fabs(x[l]), l);
            for (int q = 0; q < cnt; q++) {
                const int64_t at = (int64_t)gp[v * 8 + q];
                bad += gv[v * 8 + q] != vals[q] || at < 0 || at >= k || fabs(x[at]) != vals[q];
            }
        }
    GH_CHECK(bad == 0, "%s: %lld entries of op(A)'s checksum or envelope lists differ", ty,
             (long long)bad);
    free(tcv);
    free(tcp);
    free(tev);
    free(tep);
    free(env);

    /* reference, recomputed checksums and thresholds against the host engine */
    double *cref = fetch(c->t, c, &p, BLASFT_GPU_BUF_CCS_REF, 1), *rref = fetch(c->t, c, &p, BLASFT_GPU_BUF_CRS_REF, 1);
    double *crec = fetch(c->t, c, &p, BLASFT_GPU_BUF_CCS_REC, 0), *rrec = fetch(c->t, c, &p, BLASFT_GPU_BUF_CRS_REC, 0);
    double *ceps = fetch(c->t, c, &p, BLASFT_GPU_BUF_CCS_EPS, 0), *reps = fetch(c->t, c, &p, BLASFT_GPU_BUF_CRS_EPS, 0);
    /* the recomputed checksums of C against double-double sums of the C the GPU produced: our
     * side of the check must add almost no rounding of its own (one rounding of the result, and
     * one per weighted term) */
    double *cgpu = malloc(sizeof(double) * (size_t)(m * n > 0 ? m * n : 1));
    gh_download_c(&d, cgpu);
    int64_t bad_sum = 0;
    for (int side = 0; side < 2; side++)
        for (int64_t B = 0; B < (side ? nb : mb); B++)
            for (int w = 0; w < r; w++)
                for (int64_t x = 0; x < (side ? m : n); x++) {
                    hp_dd s = hp_from(0.0);
                    double mag = 0.0;
                    for (int64_t e = B * bs; e < (side ? n : m) && e < (B + 1) * bs; e++) {
                        double cv = side ? cgpu[x + e * m] : cgpu[e + x * m];
                        s = hp_add_prod(s, wt(w, (int)(e - B * bs), bs), cv);
                        mag += fabs(wt(w, (int)(e - B * bs), bs) * cv);
                    }
                    double gv = side ? rrec[x + (B * r + w) * m] : crec[(B * r + w) + x * (r * mb)];
                    double hv = hp_to_double(s);
                    bad_sum += !(fabs(gv - hv) <= ldexp(fabs(hv), -52) + (w ? ldexp(mag, -52) : ldexp(mag, -80)));
                }
    GH_CHECK(bad_sum == 0, "%s: %lld recomputed checksums of C off the double-double sums", ty,
             (long long)bad_sum);
    free(cgpu);
    blasft_config cfg;
    gh_host_cfg(&cfg, &p);
    blasft_gemm hg;
    memset(&hg, 0, sizeof hg);
    hg.type = c->t;
    hg.transa = c->ta;
    hg.transb = c->tb;
    hg.m = m; hg.n = n; hg.k = k;
    hg.a = d.hA; hg.lda = c->lda;
    hg.b = d.hB; hg.ldb = c->ldb;
    size_t ts = c->t == BLASFT_TYPE_S ? 4 : 8;
    void *hc = malloc(ts * (size_t)(c->ldc * n));
    memcpy(hc, d.hC0, ts * (size_t)(c->ldc * n));
    hg.c = hc; hg.ldc = c->ldc;
    hg.alpha[0] = c->alpha;
    hg.beta[0] = c->beta;
    hg.routine = "test_gpu_kernels";
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
        double gref = h->side == 0 ? cref[at] : rref[at];
        double grec = h->side == 0 ? crec[at] : rrec[at];
        double geps = h->side == 0 ? ceps[at] : reps[at];
        bad_ref += !(fabs(gref - h->reference) <= geps + h->threshold);
        bad_rec += !(fabs(grec - h->recomputed) <= geps + h->threshold);
        flagged += h->flagged || !(fabs(gref - grec) <= geps);
        double q = geps / h->threshold;
        rmin = q < rmin ? q : rmin;
        rmax = q > rmax ? q : rmax;
    }
    GH_CHECK(diag.count == (size_t)(r * (mb * n + m * nb)), "%s: host made %zu checks", ty, diag.count);
    GH_CHECK(bad_ref == 0, "%s: %lld reference checksums differ from the host's", ty, (long long)bad_ref);
    GH_CHECK(bad_rec == 0, "%s: %lld recomputed checksums differ from the host's", ty, (long long)bad_rec);
    GH_CHECK(flagged == 0, "%s: %lld false alarms on clean data", ty, (long long)flagged);
    /* the GPU's threshold covers the host's model and, in D, is the same model; in S its
     * reference is a float dot product instead of a double one, so it may be larger */
    GH_CHECK(rmin >= 0.9 && rmax <= (c->t == BLASFT_TYPE_D && !block_lists ? 3.0 : 4096.0),
             "%s: threshold ratio GPU/host in [%g, %g]", ty, rmin, rmax);
    printf("%s %c%c m=%lld n=%lld k=%lld bs=%d r=%d beta=%g lists=%s: threshold ratio GPU/host %.3g .. %.3g\n",
           ty, c->ta, c->tb, (long long)m, (long long)n, (long long)k, bs, r, c->beta,
           block_lists ? "block" : "vector", rmin, rmax);
    blasft_abft_diag_free(&diag);
    free(hc);
    free(acs); free(bcs); free(tav); free(tap); free(tbv); free(tbp);
    free(cref); free(rref); free(crec); free(rrec); free(ceps); free(reps);
    gh_free(&d);
}

/* A case of type t (0 S, 1 D) and transpose pair tr; leading dimensions padded by pa, pb, pc. */
static gh_case kcase(int t, int tr, int64_t m, int64_t n, int64_t k, int pa, int pb, int pc,
                     double alpha, double beta)
{
    static const char trans[][2] = {{'N', 'N'}, {'N', 'T'}, {'T', 'N'}, {'T', 'T'}};
    gh_case c;
    memset(&c, 0, sizeof c);
    c.t = t ? BLASFT_TYPE_D : BLASFT_TYPE_S;
    c.ta = trans[tr][0];
    c.tb = trans[tr][1];
    c.m = m;
    c.n = n;
    c.k = k;
    c.lda = (c.ta == 'N' ? m : k) + pa;
    c.ldb = (c.tb == 'N' ? k : n) + pb;
    c.ldc = m + pc;
    c.alpha = alpha;
    c.beta = beta;
    return c;
}

int main(void)
{
    ctx = gh_start();
    uint64_t seed = 500;
    for (int t = 0; t < 2; t++)
        for (int tr = 0; tr < 4; tr++) {
            gh_case c = kcase(t, tr, tr % 2 ? 70 : 97, tr % 2 ? 45 : 64, tr < 2 ? 33 : 130, 1, 2, 3,
                              tr == 2 ? -1.5 : 1.0, tr % 2 ? 0.5 : 0.0);
            one(&c, tr < 2 ? 32 : 16, 1 + (tr + t) % 2, 0, seed++);
            if (tr % 2 == 0)
                one(&c, 32, 1 + t, 1, seed++); /* block lists: thresholds still cover the host's */
        }
    /* blocks of several 32-row tiles, odd and even tile counts, ragged last blocks (BS 96: 3
     * tiles, last block 35 rows: 2; BS 128: 2 of 4, last 99: 4): the tiled encode's and the check
     * pass's two-deep prefetch over every parity of the tile sequence */
    for (int t = 0; t < 2; t++)
        for (int tr = 0; tr < 4; tr++) {
            gh_case c = kcase(t, tr, 227, 203, 150, 1, 3, 2, tr == 1 ? 0.75 : 1.0, tr >= 2 ? 0.5 : 0.0);
            one(&c, tr % 2 ? 128 : 96, 1 + (tr + t) % 2, 0, seed++);
        }
    /* longer vectors: top-p partial lists of many chunks of k merged in groups (k = 1000, p = 3
     * and 8), the strided encode's two halves of a block (BS 64, the last block ragged), R 1
     * and 2 */
    for (int t = 0; t < 2; t++)
        for (int tr = 0; tr < 4; tr++) {
            gh_case c = kcase(t, tr, 300, 500, 1000, 5, 1, 1, tr == 3 ? -2.0 : 1.0, tr % 2 ? 0.25 : 0.0);
            pea_p_override = tr < 2 ? 3 : 8;
            one(&c, 64, tr == 2 ? 2 : 1, 0, seed++);
            pea_p_override = 0;
        }
    /* the check pass's block sizes and ragged edges: BS 256 (four warp groups along the columns,
     * two along the rows; last block 88 x 18), BS 512 (its partials over 48 KiB of shared
     * memory), BS 20 and 2 (blocks narrower than a warp tile), R 1 and 2 */
    {
        static const int bss[] = {256, 512, 20, 2, 256};
        for (int e = 0; e < 5; e++) {
            int t = e % 2, tr = e % 4;
            gh_case c = kcase(t, tr, e == 1 ? 700 : 600, e == 1 ? 1100 : 530, e < 2 ? 70 : 45, 2, 1, 7,
                              1.0, e % 2 ? 0.5 : 0.0);
            one(&c, bss[e], e == 4 ? 2 : 1, 0, seed++);
        }
    }
    return gh_finish(ctx);
}
