/* BLASFT_PROMOTE on the GPU (blasft_gpu_params.promote), type S: the GEMM computed in double and
 * rounded once, against the double-double reference: every element within half a float ulp of
 * the exact value (plus the double GEMM's rounding), on awkward shapes, every transpose pair,
 * padded leading dimensions, alpha/beta in host and device memory, beta = 0 over a C of NaN;
 * clean runs flag nothing; float-bit flips planted in the double copy that the engine checks
 * (bits 0 to 31, one or two faults, one and two checksums) are detected and the result restored
 * to the same accuracy; events name type S; detect mode, PROJ thresholds and every block's row
 * side on the promoted path; a small buffer for the copies (promote_mem), which makes the GEMM run
 * in tiles of C and chunks of k: the tiles cover C once, the call counts once, results and planted
 * faults as above with events at the caller's coordinates; the automatic choice (promote = 2)
 * against the device's FP64 rate and the shape. Type C is covered in test_gpu_complex.c. Exits 77
 * without a GPU. */
#include "abft/abft_inject.h"
#include "gpu_debug.h"
#include "gpu_harness.h"

#include <cuda_runtime_api.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static blasft_gpu_ctx *ctx;

/* The promoted result's bound: half a float ulp of the exact value (the one rounding) plus the
 * double GEMM's own error, taken as the harness's float bound scaled to double. */
static double bound_of(const gh_data *d, int64_t e)
{
    const double r = fabs(d->ref[e]);
    const double half_ulp = r > 0.0 ? ldexp(1.0, ilogb(r) - 24) : 0.0;
    return fmax(half_ulp, ldexp(1.0, -150)) + d->bound[e] * ldexp(1.0, -29);
}

static int64_t bad_elements(const gh_data *d, const double *out, int64_t *first)
{
    int64_t bad = 0;
    for (int64_t e = 0; e < d->c.m * d->c.n; e++)
        if (!(fabs(out[e] - d->ref[e]) <= bound_of(d, e))) {
            if (!bad)
                *first = e;
            bad++;
        }
    return bad;
}

/* Float-bit flips of the exact values, written into the checked C (the double copy). */
typedef struct plant {
    int n;
    int64_t i[2], j[2];
    int bit[2];
    const gh_data *d;
    double *pinned;
} plant;

static void plant_hook(void *stream, void *user)
{
    plant *p = user;
    for (int q = 0; q < p->n; q++)
        gh_plant_checked(ctx, stream, BLASFT_TYPE_D, p->i[q], p->j[q], 0,
                         blasft_flip_float_bit_of(p->d->ref[p->i[q] + p->j[q] * p->d->c.m], p->bit[q]),
                         p->pinned + q);
}

static int events_seen, events_not_s;
static int64_t event_row, event_col; /* the last event's element */
static void on_event(const blasft_event *ev, void *user)
{
    (void)user;
    events_seen++;
    events_not_s += ev->type != 'S';
    event_row = ev->row;
    event_col = ev->col;
}

static const char *desc(const gh_case *c, const blasft_gpu_params *p)
{
    static char buf[200];
    snprintf(buf, sizeof buf, "S%c%c m=%lld n=%lld k=%lld ld=%lld/%lld/%lld a=%g b=%g dev=%d bs=%d r=%d%s",
             c->ta, c->tb, (long long)c->m, (long long)c->n, (long long)c->k, (long long)c->lda,
             (long long)c->ldb, (long long)c->ldc, c->alpha, c->beta, c->device_scalars,
             p->block_size, p->checksums, c->c_vector ? " c_vector" : "");
    return buf;
}

static gh_case make_case(char ta, char tb, int64_t m, int64_t n, int64_t k, int pad, double alpha,
                         double beta, int dev)
{
    gh_case c;
    memset(&c, 0, sizeof c);
    c.t = BLASFT_TYPE_S;
    c.ta = ta; c.tb = tb; c.m = m; c.n = n; c.k = k;
    const int64_t ar = ta == 'N' ? m : k, br = tb == 'N' ? k : n;
    c.lda = (ar > 1 ? ar : 1) + pad;
    c.ldb = (br > 1 ? br : 1) + 2 * pad;
    c.ldc = (m > 1 ? m : 1) + pad;
    c.alpha = alpha; c.beta = beta; /* exact in float: the reference uses them as given */
    c.device_scalars = dev;
    return c;
}

static blasft_gpu_params promoted_params(int bs, int r)
{
    blasft_gpu_params p;
    gh_params(&p, bs, r);
    p.rows_on_demand = 1;
    p.promote = 1;
    return p;
}

/* One run; C downloaded into out. */
static blasft_stats run(gh_data *d, const blasft_gpu_params *p, plant *pl, double *out)
{
    blasft_gpu_gemm g = gh_desc(d);
    if (pl) {
        pl->d = d;
        blasft_gpu_set_fault_hook(ctx, plant_hook, pl);
    }
    blasft_stats st = gh_run_counted(ctx, &g, p, desc(&d->c, p));
    blasft_gpu_set_fault_hook(ctx, NULL, NULL);
    gh_download_c(d, out);
    return st;
}

static void clean_sweep(void)
{
    static const int64_t shapes[][3] = {{1, 1, 1}, {2, 3, 1}, {31, 37, 41}, {100, 77, 300},
                                        {130, 200, 513}, {257, 64, 7}};
    static const char trans[][2] = {{'N', 'N'}, {'T', 'N'}, {'N', 'T'}, {'T', 'T'}};
    static const double ab[][2] = {{1.0, 0.0}, {-1.5, 0.5}, {2.5, -1.0}, {0.75, 1.0}};
    uint64_t seed = 1;
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (int tr = 0; tr < 4; tr++) {
            const int v = (int)(s + tr) % 4, dev = (int)(s + tr) % 3 == 1;
            gh_case c = make_case(trans[tr][0], trans[tr][1], shapes[s][0], shapes[s][1],
                                  shapes[s][2], (int)(s % 3) * 3, ab[v][0], ab[v][1], dev);
            blasft_gpu_params p = promoted_params(tr % 2 ? 32 : 37, 1 + (int)s % 2);
            gh_data d;
            gh_make(&d, &c, seed++);
            if (c.beta == 0.0) { /* beta = 0: C must not be read (NaN would leak) */
                for (int64_t i = 0; i < c.ldc * c.n; i++)
                    ((float *)d.hC0)[i] = NAN;
                gh_reset_c(&d);
            }
            double *out = malloc(8 * (size_t)(c.m * c.n));
            blasft_stats st = run(&d, &p, NULL, out);
            int64_t first = 0, bad = bad_elements(&d, out, &first);
            GH_CHECK(bad == 0, "%s: %lld elements beyond one rounding, first %lld: %.9g vs %.9g",
                     desc(&c, &p), (long long)bad, (long long)first, bad ? out[first] : 0.0,
                     bad ? d.ref[first] : 0.0);
            GH_CHECK(st.protected_gemms == 1 && st.errors_detected == 0 && st.blocks_recomputed == 0 &&
                         st.false_alarms == 0 && st.encoder_faults == 0 && st.checks > 0,
                     "%s: clean run: protected %llu detected %llu recomputed %llu false %llu",
                     desc(&c, &p), (unsigned long long)st.protected_gemms,
                     (unsigned long long)st.errors_detected, (unsigned long long)st.blocks_recomputed,
                     (unsigned long long)st.false_alarms);
            free(out);
            gh_free(&d);
        }
}

/* Every float bit of a planted element, alone and with a second fault in another block. */
static void faults(void)
{
    void *pin = NULL;
    cudaMallocHost(&pin, 16);
    uint64_t seed = 100;
    for (int r = 1; r <= 2; r++)
        for (int bit = 0; bit < 32; bit++) {
            const int two = bit % 4 == 3;
            gh_case c = make_case(bit % 2 ? 'T' : 'N', 'N', 200, 150, 300, 1, 1.0,
                                  bit % 3 ? 0.0 : 0.5, bit % 5 == 0);
            blasft_gpu_params p = promoted_params(32, r);
            gh_data d;
            gh_make(&d, &c, seed++);
            plant pl = {two ? 2 : 1, {17 + bit, 150}, {5 + bit, 90}, {bit, (bit + 11) % 32}, NULL, pin};
            double *out = malloc(8 * (size_t)(c.m * c.n));
            events_seen = events_not_s = 0;
            blasft_stats st = run(&d, &p, &pl, out);
            int64_t first = 0, bad = bad_elements(&d, out, &first);
            GH_CHECK(bad == 0, "%s bit %d (%d faults): %lld elements not restored, first %lld",
                     desc(&c, &p), bit, pl.n, (long long)bad, (long long)first);
            GH_CHECK(st.errors_detected >= (uint64_t)pl.n && st.uncorrectable == 0 &&
                         st.errors_corrected + st.blocks_recomputed >= (uint64_t)pl.n,
                     "%s bit %d (%d faults): detected %llu corrected %llu recomputed %llu "
                     "uncorrectable %llu",
                     desc(&c, &p), bit, pl.n, (unsigned long long)st.errors_detected,
                     (unsigned long long)st.errors_corrected,
                     (unsigned long long)st.blocks_recomputed, (unsigned long long)st.uncorrectable);
            GH_CHECK(events_seen > 0 && events_not_s == 0, "%s bit %d: %d events, %d not of type S",
                     desc(&c, &p), bit, events_seen, events_not_s);
            /* the column thresholds of the double GEMM (one part here), which the correction
             * read, are all still in place afterwards (random data: none is 0) */
            int64_t ne = 0;
            const int64_t lost = gh_thresholds_lost(ctx, BLASFT_TYPE_D, c.m, c.n, c.k, &p, &ne);
            GH_CHECK(lost == 0,
                     "%s bit %d: %lld of %lld column thresholds 0 or not finite after the fault path "
                     "(-1: not fetched)",
                     desc(&c, &p), bit, (long long)lost, (long long)ne);
            free(out);
            gh_free(&d);
        }
    cudaFreeHost(pin);
}

/* Other settings on the promoted path: detect mode reports a planted fault and leaves it (as
 * the native path does), PROJ thresholds on the double copy flag nothing on clean data and keep
 * the one rounding, and the row side computed for every block does the same. */
static void settings(void)
{
    void *pin = NULL;
    cudaMallocHost(&pin, 8);
    gh_case c = make_case('N', 'T', 160, 130, 400, 2, -1.5, 0.5, 0);
    for (int v = 0; v < 3; v++) {
        blasft_gpu_params p = promoted_params(32, 1 + v % 2);
        if (v == 0)
            p.mode = BLASFT_MODE_DETECT;
        else if (v == 1)
            p.proj = 1;
        else
            p.rows_on_demand = 0;
        gh_data d;
        gh_make(&d, &c, 40 + (uint64_t)v);
        plant pl = {1, {70, 0}, {100, 0}, {30, 0}, NULL, pin}; /* an exponent bit */
        double *out = malloc(8 * (size_t)(c.m * c.n));
        blasft_stats st = run(&d, &p, v == 0 ? &pl : NULL, out);
        int64_t first = 0, bad = bad_elements(&d, out, &first);
        if (v == 0) {
            const int64_t e = 70 + 100 * c.m;
            GH_CHECK(st.errors_detected >= 1 && st.errors_corrected == 0 && st.uncorrectable >= 1,
                     "detect mode: detected %llu corrected %llu uncorrectable %llu",
                     (unsigned long long)st.errors_detected, (unsigned long long)st.errors_corrected,
                     (unsigned long long)st.uncorrectable);
            GH_CHECK(bad == 1 && first == e &&
                         out[e] == (float)blasft_flip_float_bit_of(d.ref[e], 30),
                     "detect mode: %lld elements off (first %lld), the planted one %.9g", (long long)bad,
                     (long long)first, out[e]);
        } else {
            GH_CHECK(bad == 0 && st.errors_detected == 0 && st.blocks_recomputed == 0 &&
                         st.false_alarms == 0,
                     "%s: %lld elements beyond one rounding, detected %llu recomputed %llu",
                     v == 1 ? "proj" : "all rows", (long long)bad,
                     (unsigned long long)st.errors_detected, (unsigned long long)st.blocks_recomputed);
        }
        free(out);
        gh_free(&d);
    }
    cudaFreeHost(pin);
}

/* The workspace that reserve makes is the one a promoted call needs: no growth (no
 * synchronisation) afterwards, as a graph capture requires. */
static void reserve_covers(void)
{
    gh_case c = make_case('N', 'T', 300, 200, 100, 0, 1.0, 0.5, 1);
    blasft_gpu_params p = promoted_params(64, 2);
    blasft_gpu_ctx *fresh = blasft_gpu_ctx_create(NULL);
    gh_data d;
    gh_make(&d, &c, 7);
    blasft_gpu_gemm g = gh_desc(&d);
    GH_CHECK(blasft_gpu_gemm_would_sync(fresh, &g, &p, 1) == 1, "fresh context: no growth needed?");
    GH_CHECK(blasft_gpu_reserve(fresh, BLASFT_TYPE_S, c.m, c.n, c.k, &p, 1) == 0, "reserve failed");
    GH_CHECK(blasft_gpu_gemm_would_sync(fresh, &g, &p, 1) == 0, "reserved context still grows");
    GH_CHECK(blasft_gpu_workspace_bytes(fresh) >=
                 blasft_gpu_workspace_need(BLASFT_TYPE_S, c.m, c.n, c.k, &p),
             "workspace %zu below the need %zu", blasft_gpu_workspace_bytes(fresh),
             blasft_gpu_workspace_need(BLASFT_TYPE_S, c.m, c.n, c.k, &p));
    blasft_gpu_ctx_destroy(fresh);
    gh_free(&d);
}

/* The parts a promoted GEMM ran in, as a hook sees them: the tiles of their last chunk of k must
 * cover C exactly once. */
typedef struct parts_seen {
    int parts, finals, outside;
    int64_t m, n, covered;
    plant *pl; /* also planted, or NULL */
} parts_seen;

static blasft_gpu_ctx *hook_ctx; /* the context parts_hook asks (NULL: the shared one) */

static void parts_hook(void *stream, void *user)
{
    parts_seen *ps = user;
    int64_t r0, c0, rows, cols;
    int last_k;
    blasft_gpu_debug_checked_part(hook_ctx ? hook_ctx : ctx, &r0, &c0, &rows, &cols, &last_k);
    ps->parts++;
    ps->outside += r0 < 0 || c0 < 0 || rows < 1 || cols < 1 || r0 + rows > ps->m ||
                   c0 + cols > ps->n;
    if (last_k) {
        ps->finals++;
        ps->covered += rows * cols;
    }
    if (ps->pl)
        plant_hook(stream, ps->pl);
}

/* A buffer of 2 MiB for the copies: 96 x 160 tiles in chunks of 768 for the first shape
 * (plan_promotion), 320 x 256 tiles with k whole for the last, every transpose pair, beta 0 over NaN and not, scalars in host and device
 * memory; clean runs and planted float-bit flips in tiles other than the first. */
static void tiles(void)
{
    void *pin = NULL;
    cudaMallocHost(&pin, 16);
    static const char trans[][2] = {{'N', 'N'}, {'T', 'N'}, {'N', 'T'}, {'T', 'T'}};
    /* the last: k in one chunk, 2 x 2 tiles, so panels of op(A) and op(B) are prepared once and
     * reused (where their op is N) */
    static const int64_t shapes[][3] = {{300, 260, 1500}, {517, 83, 2049}, {70, 600, 900},
                                        {600, 500, 200}};
    uint64_t seed = 500;
    /* cv 1: again where beta != 0, with the old C a vector repeated over the columns (the
     * first chunk of k reads the vector, later ones the engine's copy of the tile) */
    for (int cv = 0; cv < 2; cv++)
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (int tr = 0; tr < 4; tr++)
            for (int faulty = 0; faulty < 2; faulty++) {
                const int v = (int)(s + tr + faulty);
                gh_case c = make_case(trans[tr][0], trans[tr][1], shapes[s][0], shapes[s][1],
                                      shapes[s][2], v % 3, v % 2 ? -1.5 : 1.0, v % 3 ? 0.5 : 0.0,
                                      v % 4 == 1);
                if (cv && c.beta == 0.0)
                    continue;
                c.c_vector = cv;
                blasft_gpu_params p = promoted_params(32, 1 + v % 2);
                p.promote_mem = (uint64_t)2 << 20;
                gh_data d;
                gh_make(&d, &c, seed++);
                if (c.beta == 0.0) {
                    for (int64_t i = 0; i < c.ldc * c.n; i++)
                        ((float *)d.hC0)[i] = NAN;
                    gh_reset_c(&d);
                }
                /* one fault in the last tile, one (of two) in a middle one */
                const int bit = faulty ? 12 + 3 * tr + (int)s : 0;
                plant pl = {1 + (tr % 2), {c.m - 2, c.m / 2}, {c.n - 3, c.n / 3}, {bit, bit + 7},
                            &d, pin};
                parts_seen ps = {0, 0, 0, c.m, c.n, 0, faulty ? &pl : NULL};
                blasft_gpu_gemm g = gh_desc(&d);
                blasft_gpu_set_fault_hook(ctx, parts_hook, &ps);
                events_seen = events_not_s = 0;
                event_row = event_col = -1;
                blasft_stats st = gh_run_counted(ctx, &g, &p, desc(&c, &p));
                blasft_gpu_set_fault_hook(ctx, NULL, NULL);
                double *out = malloc(8 * (size_t)(c.m * c.n));
                gh_download_c(&d, out);
                int64_t first = 0, bad = bad_elements(&d, out, &first);
                GH_CHECK(ps.parts >= 4 && ps.outside == 0 && ps.covered == c.m * c.n,
                         "%s tiles: %d parts, %d of them last chunks, %d outside C, %lld of %lld "
                         "elements covered",
                         desc(&c, &p), ps.parts, ps.finals, ps.outside, (long long)ps.covered,
                         (long long)(c.m * c.n));
                GH_CHECK(bad == 0, "%s tiles (faults %d): %lld elements beyond one rounding, first %lld",
                         desc(&c, &p), faulty ? pl.n : 0, (long long)bad, (long long)first);
                GH_CHECK(st.protected_gemms == 1, "%s tiles: counted as %llu protected GEMMs",
                         desc(&c, &p), (unsigned long long)st.protected_gemms);
                if (!faulty) {
                    GH_CHECK(st.errors_detected == 0 && st.blocks_recomputed == 0 &&
                                 st.false_alarms == 0,
                             "%s tiles, clean: detected %llu recomputed %llu", desc(&c, &p),
                             (unsigned long long)st.errors_detected,
                             (unsigned long long)st.blocks_recomputed);
                } else {
                    GH_CHECK(st.errors_detected >= (uint64_t)pl.n && st.uncorrectable == 0 &&
                                 st.errors_corrected + st.blocks_recomputed >= (uint64_t)pl.n &&
                                 events_not_s == 0,
                             "%s tiles, bit %d x %d: detected %llu corrected %llu recomputed %llu",
                             desc(&c, &p), bit, pl.n, (unsigned long long)st.errors_detected,
                             (unsigned long long)st.errors_corrected,
                             (unsigned long long)st.blocks_recomputed);
                    /* a located single fault's event names the caller's element */
                    if (pl.n == 1 && st.errors_corrected == 1)
                        GH_CHECK(event_row == pl.i[0] && event_col == pl.j[0],
                                 "%s tiles: event at (%lld, %lld), fault at (%lld, %lld)",
                                 desc(&c, &p), (long long)event_row, (long long)event_col,
                                 (long long)pl.i[0], (long long)pl.j[0]);
                }
                free(out);
                gh_free(&d);
            }
    /* reserve covers a tiled plan too */
    gh_case c = make_case('T', 'N', 300, 260, 1500, 0, 1.0, 0.5, 1);
    blasft_gpu_params p = promoted_params(64, 1);
    p.promote_mem = (uint64_t)2 << 20;
    blasft_gpu_ctx *fresh = blasft_gpu_ctx_create(NULL);
    gh_data d;
    gh_make(&d, &c, 9);
    blasft_gpu_gemm g = gh_desc(&d);
    GH_CHECK(blasft_gpu_reserve(fresh, BLASFT_TYPE_S, c.m, c.n, c.k, &p, 1) == 0, "reserve failed");
    GH_CHECK(blasft_gpu_gemm_would_sync(fresh, &g, &p, 1) == 0, "tiled: reserved context still grows");
    blasft_gpu_ctx_destroy(fresh);
    gh_free(&d);
    cudaFreeHost(pin);
}

/* The debug fetch reads a promoted GEMM's buffers only as what the engine checked: the double
 * copy of the whole shape; asked for the caller's S type, or for the caller's shape after a run in
 * tiles (whose buffers hold the last tile's), it refuses instead of reading another layout. */
static void debug_fetch_layout(void)
{
    for (int tiled = 0; tiled < 2; tiled++) {
        gh_case c = make_case('N', 'T', tiled ? 300 : 200, tiled ? 260 : 150, tiled ? 1500 : 300,
                              0, 1.0, 0.0, 0);
        blasft_gpu_params p = promoted_params(32, 1);
        if (tiled)
            p.promote_mem = (uint64_t)2 << 20;
        gh_data d;
        gh_make(&d, &c, 77 + (uint64_t)tiled);
        double *out = malloc(8 * (size_t)(c.m * c.n));
        run(&d, &p, NULL, out);
        blasft_type t = BLASFT_TYPE_S;
        int64_t m = 0, n = 0, k = 0;
        const int got = blasft_gpu_debug_last_run(ctx, &t, &m, &n, &k);
        const int whole = m == c.m && n == c.n && k == c.k;
        GH_CHECK(got == 0 && t == BLASFT_TYPE_D && whole == !tiled,
                 "%s: last run %d, type %d, %lld x %lld x %lld", tiled ? "tiled" : "whole", got,
                 (int)t, (long long)m, (long long)n, (long long)k);
        const int64_t ne = ((c.m + 31) / 32) * c.n;
        double *eps = malloc(8 * (size_t)ne);
        GH_CHECK(blasft_gpu_debug_fetch(ctx, BLASFT_TYPE_S, c.m, c.n, c.k, &p, BLASFT_GPU_BUF_CCS_EPS,
                                        eps) == -1,
                 "%s: a promoted GEMM's buffers fetched as S", tiled ? "tiled" : "whole");
        const int64_t as_d =
            blasft_gpu_debug_fetch(ctx, BLASFT_TYPE_D, c.m, c.n, c.k, &p, BLASFT_GPU_BUF_CCS_EPS, eps);
        if (tiled) {
            GH_CHECK(as_d == -1, "tiled: the last tile's buffers fetched as the whole GEMM's");
        } else {
            int64_t lost = 0;
            for (int64_t e = 0; e < (as_d > 0 ? as_d : 0); e++)
                lost += !(eps[e] > 0.0 && eps[e] < HUGE_VAL);
            GH_CHECK(as_d == ne && lost == 0, "whole: fetched %lld of %lld thresholds, %lld not positive",
                     (long long)as_d, (long long)ne, (long long)lost);
        }
        free(eps);
        free(out);
        gh_free(&d);
    }
}

/* promote = 2 (BLASFT_PROMOTE=auto): every S and C GEMM promoted where the device runs FP64 at
 * half the FP32 rate or better, whatever its shape (the native checksums miss FP32 faults at small
 * shapes too); never D or Z, nor an empty GEMM; such a GEMM gives the promoted accuracy. */
static void automatic(void)
{
    int dev = 0, ratio = 0;
    cudaGetDevice(&dev);
    cudaDeviceGetAttribute(&ratio, cudaDevAttrSingleToDoublePrecisionPerfRatio, dev);
    const int fast = ratio >= 1 && ratio <= 2;
    blasft_gpu_params p = promoted_params(256, 1);
    p.promote = 2;
    GH_CHECK(blasft_gpu_promotes(BLASFT_TYPE_S, 1024, 1024, 1024, &p) == fast,
             "auto, 1024^3: promotes %d, FP64 ratio %d", blasft_gpu_promotes(BLASFT_TYPE_S, 1024, 1024, 1024, &p), ratio);
    GH_CHECK(blasft_gpu_promotes(BLASFT_TYPE_C, 2048, 1024, 4096, &p) == fast, "auto, C: not as S");
    GH_CHECK(blasft_gpu_promotes(BLASFT_TYPE_S, 511, 4096, 4096, &p) == fast &&
                 blasft_gpu_promotes(BLASFT_TYPE_S, 4096, 4096, 256, &p) == fast &&
                 blasft_gpu_promotes(BLASFT_TYPE_S, 256, 256, 4096, &p) == fast &&
                 blasft_gpu_promotes(BLASFT_TYPE_C, 1, 7, 3, &p) == fast,
             "auto, a short dimension: not as 1024");
    GH_CHECK(!blasft_gpu_promotes(BLASFT_TYPE_D, 4096, 4096, 4096, &p) &&
                 !blasft_gpu_promotes(BLASFT_TYPE_Z, 64, 64, 64, &p) &&
                 !blasft_gpu_promotes(BLASFT_TYPE_S, 0, 64, 64, &p) &&
                 !blasft_gpu_promotes(BLASFT_TYPE_S, 64, 64, 0, &p),
             "auto promotes type D or Z, or an empty GEMM");
    p.promote = 0;
    GH_CHECK(!blasft_gpu_promotes(BLASFT_TYPE_S, 4096, 4096, 4096, &p), "off promotes");
    p.promote = 1;
    GH_CHECK(blasft_gpu_promotes(BLASFT_TYPE_S, 5, 7, 3, &p), "on does not promote a small GEMM");
    if (!fast)
        return;
    /* 1024^3 in a 16 MiB buffer (the smallest BLASFT_GPU_PROMOTE_MEM): tiles, the automatic choice */
    p.promote = 2;
    p.promote_mem = (uint64_t)16 << 20;
    gh_case c = make_case('N', 'T', 1024, 1024, 1024, 1, 1.0, 0.0, 0);
    gh_data d;
    gh_make(&d, &c, 77);
    parts_seen ps = {0, 0, 0, c.m, c.n, 0, NULL};
    blasft_gpu_gemm g = gh_desc(&d);
    blasft_gpu_set_fault_hook(ctx, parts_hook, &ps);
    blasft_stats st = gh_run_counted(ctx, &g, &p, desc(&c, &p));
    blasft_gpu_set_fault_hook(ctx, NULL, NULL);
    double *out = malloc(8 * (size_t)(c.m * c.n));
    gh_download_c(&d, out);
    int64_t first = 0, bad = bad_elements(&d, out, &first);
    GH_CHECK(bad == 0 && ps.parts > 1 && ps.covered == c.m * c.n && st.protected_gemms == 1 &&
                 st.errors_detected == 0,
             "auto 1024^3, 16 MiB: %lld elements beyond one rounding, %d parts, %llu GEMMs",
             (long long)bad, ps.parts, (unsigned long long)st.protected_gemms);
    free(out);
    gh_free(&d);
    /* the threshold issue's own shape, m = n = 256, k = 4096, in the default buffer: flips of
     * float bits 16 and 8 (which native PEA detects in 0-30 % and none of the time) are found and
     * undone under auto */
    p.promote_mem = 0;
    void *pin = NULL;
    cudaMallocHost(&pin, 16);
    for (int q = 0; q < 2; q++) {
        gh_case s = make_case(q ? 'T' : 'N', 'N', 256, 256, 4096, q, 1.0, 0.0, 0);
        gh_data e;
        gh_make(&e, &s, 78 + (uint64_t)q);
        plant pl = {1, {37 + 100 * q, 0}, {201 - 50 * q, 0}, {q ? 8 : 16, 0}, NULL, pin};
        double *o = malloc(8 * (size_t)(s.m * s.n));
        blasft_stats t = run(&e, &p, &pl, o);
        int64_t f = 0, b = bad_elements(&e, o, &f);
        GH_CHECK(b == 0 && t.errors_detected >= 1 && t.uncorrectable == 0 &&
                     t.errors_corrected + t.blocks_recomputed >= 1,
                 "auto %s, float bit %d: %lld elements not restored, detected %llu corrected %llu",
                 desc(&s, &p), pl.bit[0], (long long)b, (unsigned long long)t.errors_detected,
                 (unsigned long long)t.errors_corrected);
        free(o);
        gh_free(&e);
    }
    cudaFreeHost(pin);
}

/* CUDA calls the bitwise cases rely on: a failure ends the test */
static void ck(cudaError_t e, const char *what)
{
    if (e != cudaSuccess) {
        fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(e));
        exit(1);
    }
}

/* An SGEMM for the bitwise cases: A (m x k) and op(B) uniform in device memory, C, a context
 * on `st`, and cuBLAS's own SGEMM of them (ref, on the host): the result of the native protected
 * path on clean data, which a promoted one is not. */
typedef struct sgemm_case {
    float *dA, *dB, *dC, *ref, *out;
    float one, zero;
    blasft_gpu_ctx *ctx;
    blasft_gpu_gemm g;
} sgemm_case;

static void sgemm_make(sgemm_case *f, char tb, int64_t m, int64_t n, int64_t k, cudaStream_t st,
                       uint64_t seed, const char *routine)
{
    const size_t ab = 4 * (size_t)(m * k), bb = 4 * (size_t)(k * n), cb = 4 * (size_t)(m * n);
    float *hA = malloc(ab), *hB = malloc(bb);
    uint64_t x = seed;
    for (int64_t i = 0; i < m * k + k * n; i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        const float v = (float)((double)(x >> 11) * 0x1p-52 - 1.0);
        if (i < m * k)
            hA[i] = v;
        else
            hB[i - m * k] = v;
    }
    ck(cudaMalloc((void **)&f->dA, ab), "malloc");
    ck(cudaMalloc((void **)&f->dB, bb), "malloc");
    ck(cudaMalloc((void **)&f->dC, cb), "malloc");
    ck(cudaMemcpy(f->dA, hA, ab, cudaMemcpyHostToDevice), "copy");
    ck(cudaMemcpy(f->dB, hB, bb, cudaMemcpyHostToDevice), "copy");
    free(hA);
    free(hB);
    f->ref = malloc(cb);
    f->out = malloc(cb);
    f->one = 1.0f;
    f->zero = 0.0f;
    f->ctx = blasft_gpu_ctx_create(st);
    f->g = (blasft_gpu_gemm){.type = BLASFT_TYPE_S, .transa = 'N', .transb = tb, .m = m, .n = n,
                             .k = k, .alpha = &f->one, .a = f->dA, .lda = m, .b = f->dB,
                             .ldb = tb == 'N' ? k : n, .beta = &f->zero, .c = f->dC, .ldc = m,
                             .routine = routine};
    GH_CHECK(blasft_gpu_gemm_plain(f->ctx, &f->g) == 0, "plain SGEMM");
    ck(cudaDeviceSynchronize(), "sync");
    ck(cudaMemcpy(f->ref, f->dC, cb, cudaMemcpyDeviceToHost), "copy");
}

/* elements of C (downloaded) whose bits differ from cuBLAS's SGEMM */
static int64_t sgemm_differing(sgemm_case *f)
{
    const int64_t n = f->g.m * f->g.n;
    ck(cudaMemcpy(f->out, f->dC, 4 * (size_t)n, cudaMemcpyDeviceToHost), "copy");
    int64_t d = 0;
    for (int64_t i = 0; i < n; i++)
        d += memcmp(&f->out[i], &f->ref[i], 4) != 0;
    return d;
}

static void sgemm_free(sgemm_case *f)
{
    blasft_gpu_ctx_destroy(f->ctx);
    cudaFree(f->dA);
    cudaFree(f->dB);
    cudaFree(f->dC);
    free(f->ref);
    free(f->out);
}

/* Where the device has no memory for the promoted copies, the context computes S natively
 * protected (one warning) instead of passing the GEMM through: a 3000^3 SGEMM (216 MB of copies)
 * with all but 128 MB of the device's memory taken. The native protected result of clean data is
 * cuBLAS's SGEMM bit for bit (nothing corrected), which a promoted one is not. */
static void no_memory(void)
{
    const int64_t n = 3000;
    sgemm_case f;
    sgemm_make(&f, 'T', n, n, n, NULL, 12345, "no_memory");
    size_t freeb = 0, total = 0;
    void *hog = NULL;
    ck(cudaMemGetInfo(&freeb, &total), "meminfo");
    const size_t keep = (size_t)128 << 20;
    if (freeb > keep)
        cudaMalloc(&hog, freeb - keep);
    GH_CHECK(hog != NULL, "could not take the device's memory (%zu free)", freeb);
    blasft_gpu_params p = promoted_params(256, 1);
    p.promote_mem = (uint64_t)4 << 30; /* one part: 216 MB */
    blasft_stats s0, s1;
    blasft_get_stats(&s0);
    const int rc = blasft_gpu_gemm_run(f.ctx, &f.g, &p);
    ck(cudaDeviceSynchronize(), "sync");
    blasft_get_stats(&s1);
    int64_t differ = sgemm_differing(&f);
    GH_CHECK(rc == 0 && differ == 0 && s1.protected_gemms - s0.protected_gemms == 1 &&
                 s1.errors_detected == s0.errors_detected,
             "no memory for the copies: rc %d, %lld elements differ from cuBLAS's SGEMM, %llu "
             "protected GEMMs",
             rc, (long long)differ, (unsigned long long)(s1.protected_gemms - s0.protected_gemms));
    /* reserve takes the native path too */
    GH_CHECK(blasft_gpu_reserve(f.ctx, BLASFT_TYPE_S, n, n, n, &p, 0) == 0 &&
                 blasft_gpu_gemm_would_sync(f.ctx, &f.g, &p, 1) == 0,
             "no memory for the copies: reserve or would_sync");
    cudaFree(hog);
    /* the same GEMM with memory: promoted (not bit for bit cuBLAS's SGEMM) on a fresh context */
    blasft_gpu_ctx *c3 = blasft_gpu_ctx_create(NULL);
    GH_CHECK(blasft_gpu_gemm_run(c3, &f.g, &p) == 0, "promoted run");
    ck(cudaDeviceSynchronize(), "sync");
    GH_CHECK(sgemm_differing(&f) > 0,
             "with memory the GEMM was not promoted (all equal to cuBLAS's SGEMM)");
    blasft_gpu_ctx_destroy(c3);
    sgemm_free(&f);
}

/* Under graph capture each part of a promoted GEMM needs a report slot of its own: a GEMM of more
 * parts than slots (64) runs natively there, on the workspace that reserve made for it. 1200 x
 * 1200 x 200 in a 256 KiB buffer: 64 x 64 tiles, 361 parts. Outside capture it is promoted (not
 * bit for bit cuBLAS's SGEMM); captured and replayed it is the native path (bit for bit). */
static void capture_many_parts(void)
{
    const int64_t m = 1200, n = 1200, k = 200;
    cudaStream_t st;
    ck(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking), "stream");
    sgemm_case f;
    sgemm_make(&f, 'N', m, n, k, st, 777, "capture");
    blasft_gpu_params p = promoted_params(32, 1);
    p.promote_mem = (uint64_t)256 << 10;
    /* outside capture: promoted, 361 parts, one GEMM */
    parts_seen ps = {0, 0, 0, m, n, 0, NULL};
    hook_ctx = f.ctx;
    blasft_gpu_set_fault_hook(f.ctx, parts_hook, &ps);
    blasft_stats s0, s1;
    blasft_get_stats(&s0);
    GH_CHECK(blasft_gpu_gemm_run(f.ctx, &f.g, &p) == 0, "promoted run");
    ck(cudaDeviceSynchronize(), "sync"); /* the reports arrive on the helper stream */
    blasft_get_stats(&s1);
    blasft_gpu_set_fault_hook(f.ctx, NULL, NULL);
    hook_ctx = NULL;
    GH_CHECK(ps.parts > 64 && ps.covered == m * n && s1.protected_gemms - s0.protected_gemms == 1,
             "many parts: %d parts, %llu GEMMs", ps.parts,
             (unsigned long long)(s1.protected_gemms - s0.protected_gemms));
    GH_CHECK(sgemm_differing(&f) > 0, "many parts outside capture: not promoted?");
    /* captured: native */
    GH_CHECK(blasft_gpu_reserve(f.ctx, BLASFT_TYPE_S, m, n, k, &p, 0) == 0, "reserve");
    ck(cudaMemset(f.dC, 0, 4 * (size_t)(m * n)), "memset");
    ck(cudaDeviceSynchronize(), "sync"); /* the reports too: every slot free */
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    ck(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal), "begin capture");
    const int would = blasft_gpu_gemm_would_sync(f.ctx, &f.g, &p, 1);
    const int rc = would ? -9 : blasft_gpu_gemm_run(f.ctx, &f.g, &p);
    ck(cudaStreamEndCapture(st, &graph), "end capture");
    GH_CHECK(would == 0 && rc == 0, "captured: would_sync %d, run %d", would, rc);
    if (would == 0 && rc == 0) {
        ck(cudaGraphInstantiate(&exec, graph, 0), "instantiate");
        blasft_get_stats(&s0);
        ck(cudaGraphLaunch(exec, st), "launch");
        ck(cudaStreamSynchronize(st), "sync");
        blasft_get_stats(&s1);
        const int64_t differ = sgemm_differing(&f);
        GH_CHECK(differ == 0 && s1.protected_gemms - s0.protected_gemms == 1,
                 "captured many parts: %lld elements differ from cuBLAS's SGEMM, %llu GEMMs",
                 (long long)differ, (unsigned long long)(s1.protected_gemms - s0.protected_gemms));
        cudaGraphExecDestroy(exec);
    }
    cudaGraphDestroy(graph);
    sgemm_free(&f);
    cudaStreamDestroy(st);
}

int main(void)
{
    ctx = gh_start();
    blasft_set_event_callback(on_event, NULL);
    clean_sweep();
    faults();
    settings();
    reserve_covers();
    tiles();
    debug_fetch_layout();
    automatic();
    no_memory();
    capture_many_parts();
    return gh_finish(ctx);
}
