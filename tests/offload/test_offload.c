/* GPU tests of the consistency layer's offload path (issue 6): blasft_offload_gemm with the CUDA
 * backend against a double-double reference computed on the host from the data the host held at
 * the call. One binary, one part per process (the cache is the process's, its settings come from
 * the environment on first use, so each part sets its own variables before its first GEMM):
 *   shapes    every type, transposition, layout family (0, 1, primes, ragged, ld > rows,
 *             row-major, columns longer than a staging half), each shape run again unchanged
 *             (served from the cache) and after a one-element host store; the dispatch
 *             (blasft_gemm_run with BLASFT_DEVICE=gpu) runs on the GPU through the cache
 *   property  random sequences of GEMMs over a memfd with two mappings, interleaved with host
 *             writes (element stores, memcpy, read(2), second mapping, same values); zero stale
 *   declared  the same in BLASFT_CACHE=declared with every write declared
 *   evict     more operands than a 2 MiB budget holds: evictions happen, results stay right
 *   tiles     GEMMs whose operands are larger than a 1 MiB budget, split along m, n or k: right
 *             results, the budget kept, one protected GEMM counted per call
 *   threads   concurrent callers on shared and own operands, shared ones rewritten between phases
 *   speculate the deferred check: GEMM started on the cached copies, redone after a change
 *   fork      GEMMs in a child forked while another thread offloads: right, no hang
 *   devices   the caller's current device changed to another GPU: right, and left as it was
 *   reset     cudaDeviceReset between GEMMs: right, on the GPU again, the application's memory intact
 *   capture   GEMMs while another thread captures a CUDA graph: right, and the graph too
 *   partial   C's copy back failing part-way (planted): the result exact all the same
 * No cmocka (the device machine has none); exits 77 without a GPU. */
#include "blas_ft.h"
#include "blas_ft_cache.h"
#include "blasft_gpu.h"
#include "config.h"
#include "consistency/cache.h"
#include "datagen.h"
#include "hpref.h"
#include "offload.h"
#include "offload_backend.h"
#include "app_probe.h"

#include <cuda_runtime_api.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

static int checks, failures;
#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        __atomic_fetch_add(&checks, 1, __ATOMIC_RELAXED);                                          \
        if (!(cond)) {                                                                             \
            if (__atomic_fetch_add(&failures, 1, __ATOMIC_RELAXED) < 40) {                         \
                fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                               \
                fprintf(stderr, __VA_ARGS__);                                                      \
                fputc('\n', stderr);                                                               \
            }                                                                                      \
        }                                                                                          \
    } while (0)

/* ---- typed element access ---------------------------------------------------------------- */

static void get(blasft_type t, const void *p, int64_t idx, double *re, double *im)
{
    switch (t) {
    case BLASFT_TYPE_S: *re = ((const float *)p)[idx]; *im = 0; break;
    case BLASFT_TYPE_D: *re = ((const double *)p)[idx]; *im = 0; break;
    case BLASFT_TYPE_C: *re = ((const float *)p)[2 * idx]; *im = ((const float *)p)[2 * idx + 1]; break;
    default: *re = ((const double *)p)[2 * idx]; *im = ((const double *)p)[2 * idx + 1]; break;
    }
}

static void put(blasft_type t, void *p, int64_t idx, double re, double im)
{
    switch (t) {
    case BLASFT_TYPE_S: ((float *)p)[idx] = (float)re; break;
    case BLASFT_TYPE_D: ((double *)p)[idx] = re; break;
    case BLASFT_TYPE_C: ((float *)p)[2 * idx] = (float)re; ((float *)p)[2 * idx + 1] = (float)im; break;
    default: ((double *)p)[2 * idx] = re; ((double *)p)[2 * idx + 1] = im; break;
    }
}

/* A problem as the caller stores it: layout 'C' column-major or 'R' row-major (cblas), op()s,
 * shapes and leading dimensions of that layout. */
typedef struct problem {
    blasft_type t;
    char layout, ta, tb;
    int64_t m, n, k, lda, ldb, ldc;
    double alpha[2], beta[2];
    void *a, *b, *c;
} problem;

/* element (i, j) of a matrix stored in p's layout */
static int64_t at(const problem *p, int64_t i, int64_t j, int64_t ld)
{
    return p->layout == 'C' ? i + j * ld : i * ld + j;
}

static void op_elem(const problem *p, const void *x, char tr, int64_t ld, int64_t i, int64_t j,
                    double *re, double *im)
{
    if (tr == 'N')
        get(p->t, x, at(p, i, j, ld), re, im);
    else
        get(p->t, x, at(p, j, i, ld), re, im);
    if (tr == 'C')
        *im = -*im;
}

/* reference C and a bound per element (m x n, ld m), from the host data now */
static void reference(const problem *p, double *ref_re, double *ref_im, double *bound)
{
    int cplx = blasft_type_is_complex(p->t);
    double u = (p->t == BLASFT_TYPE_S || p->t == BLASFT_TYPE_C) ? ldexp(1.0, -24) : ldexp(1.0, -53);
    for (int64_t j = 0; j < p->n; j++)
        for (int64_t i = 0; i < p->m; i++) {
            hp_dd sr = hp_from(0), si = hp_from(0);
            double mag = 0;
            for (int64_t l = 0; l < p->k; l++) {
                double ar, ai, br, bi;
                op_elem(p, p->a, p->ta, p->lda, i, l, &ar, &ai);
                op_elem(p, p->b, p->tb, p->ldb, l, j, &br, &bi);
                sr = hp_add_prod(sr, ar, br);
                sr = hp_add_prod(sr, -ai, bi);
                si = hp_add_prod(si, ar, bi);
                si = hp_add_prod(si, ai, br);
                mag += hypot(ar, ai) * hypot(br, bi);
            }
            /* alpha * s + beta * c, complex */
            double cr = 0, ci = 0;
            int beta_zero = p->beta[0] == 0 && p->beta[1] == 0;
            if (!beta_zero)
                get(p->t, p->c, at(p, i, j, p->ldc), &cr, &ci);
            hp_dd rr = hp_add(hp_mul_d(sr, p->alpha[0]), hp_neg(hp_mul_d(si, p->alpha[1])));
            hp_dd ri = hp_add(hp_mul_d(si, p->alpha[0]), hp_mul_d(sr, p->alpha[1]));
            if (!beta_zero) {
                rr = hp_add(rr, hp_add_prod(hp_from(0), cr, p->beta[0]));
                rr = hp_add(rr, hp_add_prod(hp_from(0), -ci, p->beta[1]));
                ri = hp_add(ri, hp_add_prod(hp_from(0), cr, p->beta[1]));
                ri = hp_add(ri, hp_add_prod(hp_from(0), ci, p->beta[0]));
            }
            int64_t e = i + j * p->m;
            ref_re[e] = hp_to_double(rr);
            ref_im[e] = hp_to_double(ri);
            bound[e] = (cplx ? 4.0 : 2.0) * (double)(p->k + 3) * u *
                           (hypot(p->alpha[0], p->alpha[1]) * mag +
                            (beta_zero ? 0 : hypot(p->beta[0], p->beta[1]) * hypot(cr, ci))) +
                       1e-300;
        }
}

/* the column-major descriptor of p (a row-major C = op(A) op(B) is C^T = op(B)^T op(A)^T) */
static blasft_gemm descriptor(const problem *p)
{
    blasft_gemm g;
    memset(&g, 0, sizeof g);
    g.type = p->t;
    memcpy(g.alpha, p->alpha, sizeof g.alpha);
    memcpy(g.beta, p->beta, sizeof g.beta);
    g.routine = "test_offload";
    if (p->layout == 'C') {
        g.transa = p->ta; g.transb = p->tb;
        g.m = p->m; g.n = p->n; g.k = p->k;
        g.a = p->a; g.lda = p->lda; g.b = p->b; g.ldb = p->ldb;
    } else {
        g.transa = p->tb; g.transb = p->ta;
        g.m = p->n; g.n = p->m; g.k = p->k;
        g.a = p->b; g.lda = p->ldb; g.b = p->a; g.ldb = p->lda;
    }
    g.c = p->c; g.ldc = p->ldc;
    return g;
}

/* stored rows x cols of op(X) that is r x c in p's layout */
static void stored(const problem *p, char tr, int64_t r, int64_t c, int64_t *sr, int64_t *sc)
{
    int64_t rr = tr == 'N' ? r : c, cc = tr == 'N' ? c : r;
    *sr = p->layout == 'C' ? rr : cc; /* leading-dimension side first */
    *sc = p->layout == 'C' ? cc : rr;
}

static size_t elems(const problem *p, char tr, int64_t r, int64_t c, int64_t ld)
{
    int64_t sr, sc;
    stored(p, tr, r, c, &sr, &sc);
    (void)sr;
    return (size_t)(sc > 0 ? sc : 1) * (size_t)ld;
}

/* random values in the matrix, NaN in the padding (so a read or write of it shows) */
static void fill(const problem *p, dg_rng *r, void *x, char tr, int64_t rows, int64_t cols,
                 int64_t ld)
{
    int64_t sr, sc;
    stored(p, tr, rows, cols, &sr, &sc);
    size_t n = elems(p, tr, rows, cols, ld);
    for (size_t e = 0; e < n; e++)
        put(p->t, x, (int64_t)e, NAN, NAN);
    for (int64_t j = 0; j < sc; j++)
        for (int64_t i = 0; i < sr; i++)
            put(p->t, x, i + j * ld, dg_range(r, -1, 1), dg_range(r, -1, 1));
}

/* How run_and_check runs a GEMM: blasft_offload_gemm, or the dispatch, which must choose the GPU
 * or may run it anywhere (a forked child, whose GPU is its parent's). */
enum { VIA_OFFLOAD, VIA_DISPATCH, VIA_DISPATCH_ANYWHERE };
static blasft_where last_where; /* where VIA_DISPATCH_ANYWHERE's GEMM ran */

/* runs p as via says and checks C and its padding */
static int run_and_check(problem *p, int via, const char *what)
{
    size_t ts = (size_t)blasft_type_size(p->t);
    size_t nc = elems(p, 'N', p->m, p->n, p->ldc);
    size_t mn = (size_t)(p->m * p->n + 1);
    double *rr = malloc(8 * mn), *ri = malloc(8 * mn), *bd = malloc(8 * mn);
    unsigned char *c_before = malloc(ts * nc);
    memcpy(c_before, p->c, ts * nc);
    reference(p, rr, ri, bd);
    blasft_gemm g = descriptor(p);
    int rc;
    if (via == VIA_DISPATCH_ANYWHERE)
        rc = (last_where = blasft_gemm_run(&g), 0);
    else if (via == VIA_DISPATCH)
        rc = blasft_gemm_run(&g) == BLASFT_WHERE_GPU ? 0 : -1;
    else
        rc = blasft_offload_gemm(&g, blasft_cfg());
    CHECK(rc == 0, "%s: %c %c%c%c m=%lld n=%lld k=%lld did not run on the GPU", what, "SDCZ"[p->t],
          p->layout, p->ta, p->tb, (long long)p->m, (long long)p->n, (long long)p->k);
    int64_t bad = 0, pad_bad = 0;
    for (int64_t j = 0; j < p->n; j++)
        for (int64_t i = 0; i < p->m; i++) {
            double cr, ci;
            get(p->t, p->c, at(p, i, j, p->ldc), &cr, &ci);
            int64_t e = i + j * p->m;
            if (!(fabs(cr - rr[e]) <= bd[e] && fabs(ci - ri[e]) <= bd[e])) {
                if (!bad)
                    fprintf(stderr, "  %s: C(%lld,%lld) = %g%+gi, want %g%+gi +- %g\n", what,
                            (long long)i, (long long)j, cr, ci, rr[e], ri[e], bd[e]);
                bad++;
            }
        }
    /* padding of C (rows or columns between the shape and ldc) is never written */
    int64_t lr = p->layout == 'C' ? p->m : p->n, lc = p->layout == 'C' ? p->n : p->m;
    for (int64_t j = 0; j < lc; j++)
        for (int64_t i = lr; i < p->ldc; i++) {
            size_t off = ((size_t)j * (size_t)p->ldc + (size_t)i) * ts;
            if (memcmp((unsigned char *)p->c + off, c_before + off, ts) != 0)
                pad_bad++;
        }
    CHECK(bad == 0, "%s: %c %c%c%c m=%lld n=%lld k=%lld ld=%lld/%lld/%lld alpha=%g beta=%g: %lld "
          "wrong elements", what, "SDCZ"[p->t], p->layout, p->ta, p->tb, (long long)p->m,
          (long long)p->n, (long long)p->k, (long long)p->lda, (long long)p->ldb,
          (long long)p->ldc, p->alpha[0], p->beta[0], (long long)bad);
    CHECK(pad_bad == 0, "%s: %lld padding elements of C written", what, (long long)pad_bad);
    free(rr); free(ri); free(bd); free(c_before);
    return bad == 0 && pad_bad == 0;
}

static void cache_stats(blasft_cache_stats *s)
{
    memset(s, 0, sizeof *s);
    CHECK(blasft_offload_cache_stats(s) == 0, "no offload cache");
}

/* ---- shapes ----------------------------------------------------------------------------- */

typedef struct shape {
    int64_t m, n, k, pad; /* pad: extra rows of every ld */
} shape;

/* A GEMM of type t in layout lay ('C' or 'R') with random operands (NaN in the padding of every
 * ld, pad rows more than needed) and random scalars (beta 0 in a third of the cases). */
static problem new_problem(dg_rng *r, blasft_type t, char lay, char ta, char tb, const shape *s)
{
    problem p;
    memset(&p, 0, sizeof p);
    p.t = t;
    p.layout = lay;
    p.ta = ta;
    p.tb = tb;
    p.m = s->m; p.n = s->n; p.k = s->k;
    int64_t ar, ac, br, bc, cr, cc;
    stored(&p, p.ta, p.m, p.k, &ar, &ac);
    stored(&p, p.tb, p.k, p.n, &br, &bc);
    stored(&p, 'N', p.m, p.n, &cr, &cc);
    (void)ac; (void)bc; (void)cc;
    p.lda = (ar > 1 ? ar : 1) + s->pad;
    p.ldb = (br > 1 ? br : 1) + s->pad * 2;
    p.ldc = (cr > 1 ? cr : 1) + s->pad;
    size_t ts = (size_t)blasft_type_size(p.t);
    p.a = malloc(ts * elems(&p, p.ta, p.m, p.k, p.lda));
    p.b = malloc(ts * elems(&p, p.tb, p.k, p.n, p.ldb));
    p.c = malloc(ts * elems(&p, 'N', p.m, p.n, p.ldc));
    fill(&p, r, p.a, p.ta, p.m, p.k, p.lda);
    fill(&p, r, p.b, p.tb, p.k, p.n, p.ldb);
    fill(&p, r, p.c, 'N', p.m, p.n, p.ldc);
    p.alpha[0] = dg_range(r, -2, 2);
    p.alpha[1] = p.t >= 2 ? dg_range(r, -2, 2) : 0;
    int bz = dg_below(r, 3) == 0;
    p.beta[0] = bz ? 0 : dg_range(r, -2, 2);
    p.beta[1] = (bz || p.t < 2) ? 0 : dg_range(r, -2, 2);
    return p;
}

/* S, D, C, Z GEMMs of shape s, the layouts alternating, each run where the library can and
 * checked; returns how many ran on the GPU */
static int each_type_anywhere(dg_rng *r, char ta, char tb, const shape *s, const char *what)
{
    int on_gpu = 0;
    for (int t = 0; t < 4; t++) {
        problem q = new_problem(r, (blasft_type)t, t % 2 ? 'R' : 'C', ta, tb, s);
        run_and_check(&q, VIA_DISPATCH_ANYWHERE, what);
        on_gpu += last_where == BLASFT_WHERE_GPU;
        free(q.a); free(q.b); free(q.c);
    }
    return on_gpu;
}

static void part_chain(void);

static void part_shapes(void)
{
    static const shape shapes[] = {
        {1, 1, 1, 0}, {1, 1, 1, 3}, {7, 13, 11, 0}, {13, 7, 1, 2}, {1, 97, 31, 0},
        {97, 1, 31, 5}, {97, 89, 101, 0}, {257, 129, 100, 3}, {64, 64, 64, 0},
        {255, 257, 33, 1}, {31, 17, 0, 0}, {300, 700, 5, 0} /* B, C over one half: tiles */,
        {70000, 1, 2, 0} /* a column over one half: row segments */,
    };
    static const char trs[] = {'N', 'T', 'C'};
    dg_rng r;
    dg_seed(&r, 0x0ff10ad);
    int runs = 0, encodes_seen = 0;
    for (int t = 0; t < 4; t++)
        for (size_t si = 0; si < sizeof shapes / sizeof *shapes; si++)
            for (int lay = 0; lay < 2; lay++)
                for (int x = 0; x < 3; x++)
                    for (int y = 0; y < 3; y++) {
                        /* every combination on the small shapes, a rotation on the large ones */
                        const shape *s = &shapes[si];
                        if (s->m * s->n * s->k > 100000 && (x + y + lay + t) % 3 != 0)
                            continue;
                        if (t < 2 && (x == 2 || y == 2) && (x + y) % 2) /* 'C' = 'T' for reals */
                            continue;
                        problem p = new_problem(&r, (blasft_type)t, lay ? 'R' : 'C', trs[x],
                                                trs[y], s);
                        int64_t ar, ac, br, bc;
                        stored(&p, p.ta, p.m, p.k, &ar, &ac);
                        stored(&p, p.tb, p.k, p.n, &br, &bc);
                        /* fresh; again with A, B unchanged (C is the last result); after one
                         * element store into A and B; the last through the dispatch */
                        blasft_cache_stats before, after;
                        blasft_stats s0, s1;
                        blasft_get_stats(&s0);
                        run_and_check(&p, VIA_OFFLOAD, "fresh");
                        cache_stats(&before);
                        run_and_check(&p, VIA_OFFLOAD, "repeat");
                        cache_stats(&after);
                        /* (an operand's encoding is made at its first unchanged use) */
                        blasft_cache_stats again;
                        run_and_check(&p, VIA_OFFLOAD, "repeat again");
                        cache_stats(&again);
                        if (p.k > 0 && p.m > 0 && p.n > 0)
                            CHECK(after.reuses >= before.reuses + 2,
                                  "repeat: A and B not served from the cache (%llu -> %llu)",
                                  (unsigned long long)before.reuses,
                                  (unsigned long long)after.reuses);
                        /* unchanged operands keep their encodings (prepared operands) */
                        CHECK(again.encodes == after.encodes,
                              "repeat: operands encoded again (%llu -> %llu)",
                              (unsigned long long)after.encodes, (unsigned long long)again.encodes);
                        encodes_seen += again.encodes > 0;
                        if (p.k > 0) {
                            int64_t i = (int64_t)dg_below(&r, (uint64_t)ar);
                            int64_t j = (int64_t)dg_below(&r, (uint64_t)ac);
                            put(p.t, p.a, i + j * p.lda, 0.5, -0.25);
                            i = (int64_t)dg_below(&r, (uint64_t)br);
                            j = (int64_t)dg_below(&r, (uint64_t)bc);
                            put(p.t, p.b, i + j * p.ldb, -3.0, 1.0);
                        }
                        run_and_check(&p, VIA_DISPATCH, "changed, dispatch");
                        /* clean data: nothing flagged in the three calls (an encoding kept
                         * after its operand changed would flag its blocks) */
                        cudaDeviceSynchronize(); /* the counters arrive by a host function */
                        blasft_get_stats(&s1);
                        CHECK(s1.errors_detected == s0.errors_detected &&
                                  s1.false_alarms == s0.false_alarms &&
                                  s1.encoder_faults == s0.encoder_faults,
                              "%c %c%c%c m=%lld n=%lld k=%lld: clean calls flagged: detected %llu, "
                              "false alarms %llu, encoder faults %llu",
                              "SDCZ"[p.t], p.layout, p.ta, p.tb, (long long)p.m, (long long)p.n,
                              (long long)p.k,
                              (unsigned long long)(s1.errors_detected - s0.errors_detected),
                              (unsigned long long)(s1.false_alarms - s0.false_alarms),
                              (unsigned long long)(s1.encoder_faults - s0.encoder_faults));
                        runs += 4;
                        free(p.a); free(p.b); free(p.c);
                    }
    CHECK(encodes_seen > 0, "no operand was ever prepared by the cache's codec");
    part_chain();
    printf("shapes: %d GEMMs\n", runs);
}

/* The result kept encoded (thesis figure 6.2): C of a call (beta = 0) used as A of the next
 * costs no encoding, its slots having been prepared on the device before it came back (B is
 * encoded at its first unchanged use, the second call); the next result is right and nothing
 * is flagged. Every type. */
static void part_chain(void)
{
    dg_rng r;
    dg_seed(&r, 0xc4a1);
    for (int t = 0; t < 4; t++) {
        const shape s = {160, 160, 160, 0};
        problem p = new_problem(&r, (blasft_type)t, 'C', 'N', 'N', &s);
        p.beta[0] = p.beta[1] = 0.0;
        run_and_check(&p, VIA_OFFLOAD, "chain, first");
        run_and_check(&p, VIA_OFFLOAD, "chain, first again"); /* B unchanged: encoded at this use */
        problem q = p;
        q.a = p.c;
        q.lda = p.ldc;
        size_t ts = (size_t)blasft_type_size(p.t);
        q.c = malloc(ts * elems(&q, 'N', q.m, q.n, q.ldc));
        fill(&q, &r, q.c, 'N', q.m, q.n, q.ldc);
        blasft_cache_stats before, after;
        blasft_stats s0, s1;
        cudaDeviceSynchronize();
        cache_stats(&before);
        blasft_get_stats(&s0);
        run_and_check(&q, VIA_OFFLOAD, "chain, the result as A");
        cudaDeviceSynchronize(); /* the counters arrive by a host function */
        cache_stats(&after);
        blasft_get_stats(&s1);
        CHECK(after.encodes == before.encodes && after.reuses >= before.reuses + 2,
              "%c chain: the result used as A was encoded again or not reused (encodes %llu -> "
              "%llu, reuses %llu -> %llu)",
              "SDCZ"[t], (unsigned long long)before.encodes, (unsigned long long)after.encodes,
              (unsigned long long)before.reuses, (unsigned long long)after.reuses);
        CHECK(s1.errors_detected == s0.errors_detected && s1.false_alarms == s0.false_alarms,
              "%c chain: clean call flagged (detected %llu, false alarms %llu)", "SDCZ"[t],
              (unsigned long long)(s1.errors_detected - s0.errors_detected),
              (unsigned long long)(s1.false_alarms - s0.false_alarms));
        free(q.c);
        free(p.a);
        free(p.b);
        free(p.c);
    }
}

/* ---- property ---------------------------------------------------------------------------- */

#define PSLOTS 4
#define PSLOT_BYTES 8192

typedef struct world {
    unsigned char *view, *alias; /* two mappings of one memfd */
    int file;                    /* random bytes for read(2) */
} world;

static void world_open(world *w)
{
    int fd = memfd_create("offload_property", 0);
    size_t bytes = PSLOTS * PSLOT_BYTES;
    CHECK(fd >= 0 && ftruncate(fd, (off_t)bytes) == 0, "memfd");
    w->view = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    w->alias = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    CHECK(w->view != MAP_FAILED && w->alias != MAP_FAILED, "mmap");
    close(fd);
    char name[] = "/tmp/offload_propXXXXXX";
    w->file = mkstemp(name);
    unlink(name);
    dg_rng r;
    dg_seed(&r, 77);
    unsigned char buf[1 << 16];
    for (size_t i = 0; i < sizeof buf; i++)
        buf[i] = (unsigned char)dg_next(&r);
    CHECK(write(w->file, buf, sizeof buf) == (ssize_t)sizeof buf, "write");
    CHECK(write(w->file, buf, PSLOT_BYTES) == PSLOT_BYTES, "write");
}

/* a write of n bytes of whole elements at p, of a random kind; the values written are finite
 * (they are doubles or floats drawn here; read(2) and the alias copy such values from a pool) */
static int host_write(world *w, dg_rng *r, blasft_type t, unsigned char *p, size_t n, int declare,
                      int fresh)
{
    /* fresh: the memory may hold another type's bytes, so "the same values" is not an option */
    int kind = (int)dg_below(r, fresh ? 4 : 5);
    size_t ts = (size_t)blasft_type_size(t), off = (size_t)(p - w->view);
    unsigned char tmp[PSLOT_BYTES];
    for (size_t e = 0; e < n / ts; e++)
        put(t, tmp, (int64_t)e, dg_range(r, -1, 1), dg_range(r, -1, 1));
    switch (kind) {
    case 0: /* element stores */
        for (size_t e = 0; e < n / ts; e++) {
            double re, im;
            get(t, tmp, (int64_t)e, &re, &im);
            put(t, p, (int64_t)e, re, im);
        }
        break;
    case 1:
        memcpy(p, tmp, n);
        break;
    case 2: { /* read(2): the kernel writes the buffer (the file holds finite values now) */
        CHECK(pwrite(w->file, tmp, n, 0) == (ssize_t)n, "pwrite");
        CHECK(pread(w->file, p, n, 0) == (ssize_t)n, "pread");
        break;
    }
    case 3: /* through the second mapping */
        memcpy(w->alias + off, tmp, n);
        break;
    default: /* the same values again */
        memmove(p, w->alias + off, n);
        break;
    }
    if (declare)
        blasft_cache_mark_changed(p, n);
    return kind;
}

static void part_property(int declared, int sequences)
{
    world w;
    world_open(&w);
    dg_rng r;
    dg_seed(&r, declared ? 0xdec1a4ed : 0x9e0be47);
    long gemms = 0, writes[5] = {0};
    for (int sq = 0; sq < sequences; sq++) {
        blasft_type t = dg_below(&r, 2) ? BLASFT_TYPE_D : BLASFT_TYPE_S;
        size_t ts = (size_t)blasft_type_size(t);
        /* every slot holds a matrix of up to 24 x 24 of the sequence's type, ld up to 28 */
        int64_t rows[PSLOTS], cols[PSLOTS], ld[PSLOTS];
        for (int s = 0; s < PSLOTS; s++) {
            rows[s] = 1 + (int64_t)dg_below(&r, 24);
            cols[s] = 1 + (int64_t)dg_below(&r, 24);
            ld[s] = rows[s] + (int64_t)dg_below(&r, 5);
            unsigned char *p = w.view + s * PSLOT_BYTES;
            size_t n = (size_t)(ld[s] * cols[s]) * ts;
            host_write(&w, &r, t, p, n, declared, 1);
        }
        for (int step = 0; step < 12; step++) {
            if (dg_below(&r, 2)) { /* a host write into part of a slot */
                int s = (int)dg_below(&r, PSLOTS);
                size_t n = (size_t)(ld[s] * cols[s]) * ts / ts;
                size_t from = dg_below(&r, n), len = 1 + dg_below(&r, n - from);
                writes[host_write(&w, &r, t, w.view + s * PSLOT_BYTES + from * ts, len * ts,
                                  declared, 0)]++;
            }
            /* a GEMM on three distinct slots: C = alpha op(A) op(B) + beta C, shapes from the
             * slots (A as m x k or k x m, etc.), reshaping a slot when they do not agree */
            int sa = (int)dg_below(&r, PSLOTS), sb = (sa + 1 + (int)dg_below(&r, PSLOTS - 1)) % PSLOTS;
            int sc = 0;
            while (sc == sa || sc == sb)
                sc++;
            problem p;
            memset(&p, 0, sizeof p);
            p.t = t;
            p.layout = 'C';
            p.ta = dg_below(&r, 2) ? 'N' : 'T';
            p.tb = dg_below(&r, 2) ? 'N' : 'T';
            p.m = p.ta == 'N' ? rows[sa] : cols[sa];
            p.k = p.ta == 'N' ? cols[sa] : rows[sa];
            p.lda = ld[sa];
            /* B must have k on its inner side: keep its other side, rewrite it if it changes */
            int64_t bn = p.tb == 'N' ? cols[sb] : rows[sb];
            int64_t br = p.tb == 'N' ? p.k : bn, bc = p.tb == 'N' ? bn : p.k;
            if (br != rows[sb] || bc != cols[sb]) {
                rows[sb] = br;
                cols[sb] = bc;
                ld[sb] = br + (int64_t)dg_below(&r, 3);
                host_write(&w, &r, t, w.view + sb * PSLOT_BYTES, (size_t)(ld[sb] * bc) * ts,
                           declared, 1);
            }
            p.n = bn;
            p.ldb = ld[sb];
            if (rows[sc] != p.m || cols[sc] != p.n) {
                rows[sc] = p.m;
                cols[sc] = p.n;
                ld[sc] = p.m + (int64_t)dg_below(&r, 3);
                host_write(&w, &r, t, w.view + sc * PSLOT_BYTES, (size_t)(ld[sc] * p.n) * ts,
                           declared, 1);
            }
            p.ldc = ld[sc];
            p.a = w.view + sa * PSLOT_BYTES;
            p.b = w.view + sb * PSLOT_BYTES;
            p.c = w.view + sc * PSLOT_BYTES;
            /* results reused as operands stay of order one: no overflow over a sequence */
            p.alpha[0] = dg_range(&r, -1, 1) / (double)(p.k > 0 ? p.k : 1);
            p.beta[0] = dg_below(&r, 3) ? dg_range(&r, -1, 1) : 0;
            if (!run_and_check(&p, VIA_OFFLOAD, declared ? "property/declared" : "property/hash"))
                fprintf(stderr, "  in sequence %d step %d\n", sq, step);
            gemms++;
        }
    }
    blasft_cache_stats s;
    cache_stats(&s);
    printf("property (%s): %d sequences, %ld GEMMs; writes by kind stores %ld memcpy %ld read(2) "
           "%ld alias %ld same %ld; cache: %llu acquires, %llu reuses, %llu checks (%llu "
           "mismatches), %llu uploads (%llu partial), %llu evictions\n",
           declared ? "declared" : "hash", sequences, gemms, writes[0], writes[1], writes[2],
           writes[3], writes[4], (unsigned long long)s.acquires, (unsigned long long)s.reuses,
           (unsigned long long)s.checks, (unsigned long long)s.check_mismatches,
           (unsigned long long)s.uploads, (unsigned long long)s.partial_uploads,
           (unsigned long long)s.evictions);
    CHECK(s.reuses > 0, "the property run never reused a copy");
    if (!declared)
        CHECK(s.check_mismatches > 0, "no host write was ever caught by the check");
}

/* ---- eviction under a small budget ------------------------------------------------------ */

static void part_evict(void)
{
    enum { NM = 8, N = 200 }; /* 8 x 312.5 KiB: more than the 2 MiB budget holds */
    dg_rng r;
    dg_seed(&r, 0xe71c7);
    problem base;
    memset(&base, 0, sizeof base);
    base.t = BLASFT_TYPE_D;
    base.layout = 'C';
    base.ta = base.tb = 'N';
    base.m = base.n = base.k = N;
    base.lda = base.ldb = base.ldc = N;
    void *mats[NM];
    for (int i = 0; i < NM; i++) {
        mats[i] = malloc(8 * N * N);
        fill(&base, &r, mats[i], 'N', N, N, N);
    }
    for (int round = 0; round < 40; round++) {
        problem p = base;
        int a = (int)dg_below(&r, NM), b = (int)dg_below(&r, NM), c = (int)dg_below(&r, NM);
        while (c == a || c == b)
            c = (c + 1) % NM;
        p.a = mats[a];
        p.b = mats[b];
        p.c = mats[c];
        p.alpha[0] = 1.0 / N;
        p.beta[0] = dg_below(&r, 2) ? 0.5 : 0;
        run_and_check(&p, VIA_OFFLOAD, "evict");
        if (dg_below(&r, 4) == 0) /* and now and then a host write */
            ((double *)mats[dg_below(&r, NM)])[dg_below(&r, N * N)] = 0.125;
    }
    blasft_cache_stats s;
    cache_stats(&s);
    printf("evict: 40 GEMMs over %d matrices of %d KiB under 2 MiB: %llu evictions, %llu "
           "write-backs, %llu reuses, %zu bytes held in %zu entries\n", NM, N * N * 8 / 1024,
           (unsigned long long)s.evictions, (unsigned long long)s.write_backs,
           (unsigned long long)s.reuses, s.used_bytes, s.entries);
    CHECK(s.evictions > 0, "no eviction under a 2 MiB budget");
    CHECK(s.used_bytes <= 2u << 20, "cache holds %zu bytes over its 2 MiB budget", s.used_bytes);
    for (int i = 0; i < NM; i++)
        free(mats[i]);
}

/* ---- GEMMs larger than the budget: tiles ------------------------------------------------- */

static void part_tiles(void)
{
    /* under a 1 MiB budget every one of these is over it: split along m, n or k (the last two
     * shapes have a long k, the first a long m, ...), tiles in both layouts, every type */
    static const struct {
        blasft_type t;
        char lay, ta, tb;
        shape s;
    } cases[] = {
        {BLASFT_TYPE_D, 'C', 'N', 'N', {600, 500, 400, 0}},
        {BLASFT_TYPE_S, 'R', 'T', 'N', {700, 300, 350, 2}},
        {BLASFT_TYPE_Z, 'C', 'C', 'T', {260, 240, 300, 1}},
        {BLASFT_TYPE_C, 'C', 'N', 'C', {500, 450, 200, 0}},
        {BLASFT_TYPE_D, 'R', 'N', 'N', {40000, 3, 4, 1}},
        {BLASFT_TYPE_S, 'C', 'N', 'T', {3, 50000, 5, 0}},
        {BLASFT_TYPE_D, 'C', 'T', 'T', {6, 5, 150000, 0}},
        {BLASFT_TYPE_Z, 'R', 'N', 'C', {4, 7, 40000, 3}},
    };
    dg_rng r;
    dg_seed(&r, 0x711e5);
    /* a small GEMM first: the offload path (and its cache) starts with the first call */
    shape small = {8, 8, 8, 0};
    problem w = new_problem(&r, BLASFT_TYPE_D, 'C', 'N', 'N', &small);
    run_and_check(&w, VIA_OFFLOAD, "tiles, first call");
    free(w.a); free(w.b); free(w.c);
    for (size_t e = 0; e < sizeof cases / sizeof *cases; e++) {
        problem p = new_problem(&r, cases[e].t, cases[e].lay, cases[e].ta, cases[e].tb, &cases[e].s);
        if (e % 2) { /* beta != 0 for half of them, whatever the draw */
            p.beta[0] = 0.75;
            p.beta[1] = p.t >= 2 ? -0.5 : 0;
        }
        blasft_cache_stats before, after;
        blasft_stats sb, sa;
        cudaDeviceSynchronize(); /* the reports of the GEMMs before are in */
        cache_stats(&before);
        blasft_get_stats(&sb);
        run_and_check(&p, VIA_OFFLOAD, "tiles");
        /* the engine counts a GEMM when the stream reaches its report (a host function) */
        cudaDeviceSynchronize();
        cache_stats(&after);
        blasft_get_stats(&sa);
        CHECK(after.acquires >= before.acquires + 6, "%s case %zu: %llu acquires, not in tiles",
              "tiles", e, (unsigned long long)(after.acquires - before.acquires));
        CHECK(after.over_budget == before.over_budget, "tiles case %zu: an operand refused", e);
        CHECK(after.used_bytes <= after.budget_bytes, "tiles case %zu: %zu bytes held over %zu", e,
              after.used_bytes, after.budget_bytes);
        CHECK(sa.protected_gemms == sb.protected_gemms + 1,
              "tiles case %zu: one call counted as %llu protected GEMMs", e,
              (unsigned long long)(sa.protected_gemms - sb.protected_gemms));
        run_and_check(&p, VIA_OFFLOAD, "tiles, again");
        run_and_check(&p, VIA_DISPATCH, "tiles, dispatch");
        free(p.a); free(p.b); free(p.c);
    }
    printf("tiles: %zu GEMMs over a 1 MiB budget, each 3 times\n", sizeof cases / sizeof *cases);
}

/* ---- concurrent callers ----------------------------------------------------------------- */

enum { TN = 4, TDIM = 150, TPHASES = 6, TPER = 5 };
static double *shared_a, *shared_b;
static pthread_barrier_t phase_barrier;

static void *caller(void *arg)
{
    int id = (int)(intptr_t)arg;
    dg_rng r;
    dg_seed(&r, 1000 + (uint64_t)id);
    problem p;
    memset(&p, 0, sizeof p);
    p.t = BLASFT_TYPE_D;
    p.layout = 'C';
    p.m = p.n = p.k = TDIM;
    p.lda = p.ldb = p.ldc = TDIM + id;
    double *own = malloc(8 * (size_t)p.lda * TDIM), *c = malloc(8 * (size_t)p.ldc * TDIM);
    fill(&p, &r, own, 'N', TDIM, TDIM, p.lda);
    for (int ph = 0; ph < TPHASES; ph++) {
        pthread_barrier_wait(&phase_barrier);
        if (id == 0) { /* rewrite the shared operands between phases */
            for (int64_t e = 0; e < (int64_t)TDIM * TDIM; e += 7)
                shared_a[e] = dg_range(&r, -1, 1);
            memcpy(shared_b, shared_a, 8 * 100);
        }
        pthread_barrier_wait(&phase_barrier);
        for (int it = 0; it < TPER; it++) {
            fill(&p, &r, c, 'N', TDIM, TDIM, p.ldc);
            problem q = p;
            q.ta = dg_below(&r, 2) ? 'N' : 'T';
            q.tb = dg_below(&r, 2) ? 'N' : 'T';
            q.lda = q.ldb = TDIM;
            q.a = dg_below(&r, 2) ? shared_a : own;
            q.b = shared_b;
            if (q.a == own)
                q.lda = p.lda;
            q.c = c;
            q.alpha[0] = 1;
            q.beta[0] = it % 2 ? 0.5 : 0;
            run_and_check(&q, VIA_OFFLOAD, "threads");
            if (it == 2) /* own operand changed by this thread */
                own[dg_below(&r, TDIM)] = 2.0;
        }
    }
    free(own);
    free(c);
    return NULL;
}

static void part_threads(void)
{
    dg_rng r;
    dg_seed(&r, 5);
    problem p;
    memset(&p, 0, sizeof p);
    p.t = BLASFT_TYPE_D;
    p.layout = 'C';
    shared_a = malloc(8 * TDIM * TDIM);
    shared_b = malloc(8 * TDIM * TDIM);
    fill(&p, &r, shared_a, 'N', TDIM, TDIM, TDIM);
    fill(&p, &r, shared_b, 'N', TDIM, TDIM, TDIM);
    pthread_barrier_init(&phase_barrier, NULL, TN);
    pthread_t th[TN];
    for (int i = 0; i < TN; i++)
        pthread_create(&th[i], NULL, caller, (void *)(intptr_t)i);
    for (int i = 0; i < TN; i++)
        pthread_join(th[i], NULL);
    pthread_barrier_destroy(&phase_barrier);
    blasft_cache_stats s;
    cache_stats(&s);
    printf("threads: %d callers x %d GEMMs: %llu reuses, %llu detached, %llu conflicts\n", TN,
           TPHASES * TPER, (unsigned long long)s.reuses, (unsigned long long)s.detached,
           (unsigned long long)s.conflicts);
    CHECK(s.reuses > 0, "concurrent callers never shared a cached copy");
    free(shared_a);
    free(shared_b);
}

/* ---- speculate ------------------------------------------------------------------------- */

/* Sampled check of a large column-major D GEMM with beta = 0: C(i, j) against a long double dot
 * product for the rows in must_rows and random others, bound 4 k u sum |a b|. */
static int64_t sampled_errors(const blasft_gemm *g, const int64_t *must_rows, int nmust,
                              dg_rng *r)
{
    const double *A = g->a, *B = g->b, *C = g->c;
    int64_t bad = 0;
    for (int s = 0; s < 256; s++) {
        int64_t i = s < nmust ? must_rows[s] : (int64_t)dg_below(r, (uint64_t)g->m);
        int64_t j = (int64_t)dg_below(r, (uint64_t)g->n);
        long double ref = 0, mag = 0;
        for (int64_t l = 0; l < g->k; l++) {
            double a = g->transa == 'N' ? A[i + l * g->lda] : A[l + i * g->lda];
            double b = g->transb == 'N' ? B[l + j * g->ldb] : B[j + l * g->ldb];
            ref += (long double)a * b;
            mag += fabsl((long double)a * b);
        }
        double got = C[i + j * g->ldc];
        if (!(fabsl(got - g->alpha[0] * ref) <= 4.0L * g->k * 0x1p-53L * fabs(g->alpha[0]) * mag))
            bad++;
    }
    return bad;
}

/* The deferred check: repeated unchanged operands start the GEMM before their check (no
 * redo), a one-element change in A or B found by that check makes the GEMM run again on the
 * updated copy (only the changed chunk uploaded), operands shared by A and B are not deferred
 * (no deadlock), and beta != 0 is not speculated. Large enough for several hash chunks, staging
 * tiles and GEMM panels. */
static void part_speculate(void)
{
    dg_rng r;
    dg_seed(&r, 0x5bec);
    const int64_t m = 3001, n = 4500, k = 2500;
    for (int tb = 0; tb < 2; tb++) {
        blasft_gemm g;
        memset(&g, 0, sizeof g);
        g.type = BLASFT_TYPE_D;
        g.transa = 'N';
        g.transb = tb ? 'T' : 'N';
        g.m = m; g.n = n; g.k = k;
        g.lda = m + 3;
        g.ldb = (tb ? n : k) + 1;
        g.ldc = m + 2;
        g.alpha[0] = 1.5;
        g.routine = "test_offload";
        size_t na = (size_t)(g.lda * k), nb = (size_t)(g.ldb * (tb ? k : n)),
               nc = (size_t)(g.ldc * n);
        double *A = malloc(8 * na), *B = malloc(8 * nb), *C = malloc(8 * nc);
        for (size_t e = 0; e < na; e++)
            A[e] = dg_range(&r, -1, 1);
        for (size_t e = 0; e < nb; e++)
            B[e] = dg_range(&r, -1, 1);
        for (size_t e = 0; e < nc; e++)
            C[e] = NAN;
        g.a = A; g.b = B; g.c = C;
        blasft_cache_stats s0, s1;
        for (int step = 0; step < 6; step++) {
            int64_t rows[1] = {0};
            int nrows = 0;
            if (step == 3 || step == 5) { /* one element of A (after 2 unchanged uses) */
                int64_t i = (int64_t)dg_below(&r, (uint64_t)m), l = (int64_t)dg_below(&r, (uint64_t)k);
                A[i + l * g.lda] = 7.0;
                rows[0] = i;
                nrows = 1;
            }
            if (step == 4) { /* one element of B */
                size_t e = (size_t)dg_below(&r, (uint64_t)nb);
                B[e] = -9.0;
            }
            memset(&s0, 0, sizeof s0);
            if (step > 0 || tb > 0) /* (the process cache exists from the first GEMM on) */
                cache_stats(&s0);
            int rc = blasft_offload_gemm(&g, blasft_cfg());
            cache_stats(&s1);
            CHECK(rc == 0, "speculate tb=%d step %d: not run on the GPU", tb, step);
            int64_t bad = sampled_errors(&g, rows, nrows, &r);
            CHECK(bad == 0, "speculate tb=%d step %d: %lld of 256 sampled elements wrong", tb,
                  step, (long long)bad);
            uint64_t mism = s1.check_mismatches - s0.check_mismatches;
            if (step == 2)
                CHECK(mism == 0 && s1.reuses >= s0.reuses + 2,
                      "speculate tb=%d: unchanged operands not reused (%llu mismatches)", tb,
                      (unsigned long long)mism);
            if (step >= 3) {
                CHECK(mism == 1, "speculate tb=%d step %d: %llu check mismatches, want 1", tb,
                      step, (unsigned long long)mism);
                /* a one-element change uploads its chunk, not the operand */
                uint64_t up = s1.upload_bytes - s0.upload_bytes;
                CHECK(up > 0 && up <= ((uint64_t)1 << 20),
                      "speculate tb=%d step %d: %llu bytes uploaded for one element", tb, step,
                      (unsigned long long)up);
            }
        }
        /* A and B the same matrix (C = A A^T): shared entry, not deferred */
        blasft_gemm h = g;
        h.transb = 'T';
        h.n = m;
        h.b = A;
        h.ldb = g.lda;
        for (int step = 0; step < 3; step++) {
            if (step == 2)
                A[5] = -2.0;
            int rc = blasft_offload_gemm(&h, blasft_cfg());
            CHECK(rc == 0, "speculate A A^T step %d: not run on the GPU", step);
            int64_t rows[1] = {5};
            CHECK(sampled_errors(&h, rows, 1, &r) == 0, "speculate A A^T step %d: wrong", step);
        }
        free(A); free(B); free(C);
    }
    printf("speculate: done\n");
}

/* ---- fork ------------------------------------------------------------------------------- */

/* A process that offloaded (CUDA started) and then forks, as Python's multiprocessing does by
 * default: the child has no usable CUDA (its parent's context does not carry over a fork), and
 * while the parent forks, another of its threads may be inside an offloaded GEMM, holding the
 * staging buffers' or the cache's locks. The child's GEMMs must give right results without
 * hanging; the parent's must still run on the GPU. */
static int fork_stop;

static void *fork_background(void *arg)
{
    problem *p = arg;
    while (!__atomic_load_n(&fork_stop, __ATOMIC_ACQUIRE)) {
        blasft_gemm g = descriptor(p);
        blasft_gemm_run(&g);
    }
    return NULL;
}

static void part_fork(void)
{
    dg_rng r;
    dg_seed(&r, 0xf02c);
    const shape s = {300, 257, 129, 1}, big = {700, 700, 700, 0};
    problem p = new_problem(&r, BLASFT_TYPE_D, 'C', 'N', 'T', &s);
    run_and_check(&p, VIA_DISPATCH, "fork: the parent, before");
    problem bg = new_problem(&r, BLASFT_TYPE_D, 'C', 'N', 'N', &big);
    pthread_t th;
    pthread_create(&th, NULL, fork_background, &bg);
    for (int round = 0; round < 4; round++) {
        usleep(round * 3000); /* forks at different points of the background GEMM */
        fflush(NULL);
        FILE *log = tmpfile(); /* the child's stderr */
        CHECK(log != NULL, "tmpfile");
        if (!log)
            break;
        pid_t pid = fork();
        if (pid == 0) {
            alarm(120); /* a hang in the child shows as SIGALRM */
            dup2(fileno(log), 2);
            checks = failures = 0;
            dg_rng cr;
            dg_seed(&cr, 0xc41d + (uint64_t)round);
            const int on_gpu = each_type_anywhere(&cr, 'T', 'N', &s, "fork: the child");
            CHECK(on_gpu == 0, "fork: %d GEMMs of the child on its parent's GPU", on_gpu);
            printf("fork: child %d: %d checks, %d failures, %d of 4 GEMMs on the GPU\n", round,
                   checks, failures, on_gpu);
            fflush(NULL);
            _exit(failures ? 1 : 0);
        }
        CHECK(pid > 0, "fork failed");
        int st = 0;
        CHECK(waitpid(pid, &st, 0) == pid, "waitpid");
        CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "fork: child %d %s %d", round,
              WIFSIGNALED(st) ? "killed by signal" : "exited with", WIFSIGNALED(st) ? WTERMSIG(st)
                                                                                   : WEXITSTATUS(st));
        /* the library's lines in the child: one warning, that says why */
        char line[512];
        int ours = 0, why = 0;
        rewind(log);
        while (fgets(line, sizeof line, log)) {
            fputs(line, stderr);
            if (!strncmp(line, "libblas_ft:", 11)) {
                ours++;
                why += strstr(line, "warning") && strstr(line, "forked") ? 1 : 0;
            }
        }
        fclose(log);
        CHECK(ours == 1 && why == 1, "fork: child %d wrote %d lines of libblas_ft, %d about the fork",
              round, ours, why);
    }
    __atomic_store_n(&fork_stop, 1, __ATOMIC_RELEASE);
    pthread_join(th, NULL);
    fill(&p, &r, p.c, 'N', p.m, p.n, p.ldc);
    run_and_check(&p, VIA_DISPATCH, "fork: the parent, after");
    free(p.a); free(p.b); free(p.c);
    free(bg.a); free(bg.b); free(bg.c);
    printf("fork: done\n");
}

/* ---- devices ---------------------------------------------------------------------------- */

/* An application that selects another GPU for its own work (cudaSetDevice) and then calls a
 * host GEMM: the offload path keeps using the device its cache lives on, and the caller's
 * current device is the same after the call. Needs two GPUs (exits 77 with one). */
static void *devices_thread(void *arg)
{
    problem *p = arg;
    /* a thread whose first CUDA call selects device 1, before any GEMM of its own */
    CHECK(cudaSetDevice(1) == cudaSuccess, "cudaSetDevice(1) in a thread");
    dg_rng r;
    dg_seed(&r, 0xde72);
    for (int i = 0; i < 3; i++) {
        fill(p, &r, p->c, 'N', p->m, p->n, p->ldc);
        run_and_check(p, VIA_DISPATCH, "devices: a thread on device 1");
        int dev = -1;
        CHECK(cudaGetDevice(&dev) == cudaSuccess && dev == 1,
              "devices: the thread's current device is %d after the GEMM, not 1", dev);
    }
    return NULL;
}

static int part_devices(void)
{
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess || count < 2) {
        printf("devices: %d device(s), two needed: skipped\n", count);
        return 77;
    }
    dg_rng r;
    dg_seed(&r, 0xde71);
    const shape s = {300, 257, 129, 1};
    problem p = new_problem(&r, BLASFT_TYPE_D, 'C', 'N', 'T', &s);
    run_and_check(&p, VIA_DISPATCH, "devices: first, on device 0"); /* the cache starts here */
    /* the application's own work on device 1 */
    CHECK(cudaSetDevice(1) == cudaSuccess, "cudaSetDevice(1)");
    unsigned char *own = sentinel_alloc(1 << 20, 0x3c);
    CHECK(own != NULL, "the application's buffer on device 1");
    for (int t = 0; t < 4; t++) {
        problem q = new_problem(&r, (blasft_type)t, t % 2 ? 'R' : 'C', 'N', 'N', &s);
        run_and_check(&q, VIA_DISPATCH, "devices: device 1 current");
        run_and_check(&q, VIA_DISPATCH, "devices: device 1 current, operands cached");
        int dev = -1;
        CHECK(cudaGetDevice(&dev) == cudaSuccess && dev == 1,
              "devices: current device %d after the GEMM, not 1", dev);
        free(q.a); free(q.b); free(q.c);
    }
    const size_t bad = sentinel_free(own, 1 << 20, 0x3c);
    CHECK(bad == 0, "devices: the application's device 1 memory after the GEMMs: %zu bytes "
          "changed or unreadable", bad);
    pthread_t th;
    pthread_create(&th, NULL, devices_thread, &p);
    pthread_join(th, NULL);
    free(p.a); free(p.b); free(p.c);
    printf("devices: done\n");
    return 0;
}

/* ---- reset ------------------------------------------------------------------------------ */

/* An application that resets the device (cudaDeviceReset: every allocation, stream and event of
 * the process on it is gone, the cache's and the staging buffers' included) and goes on with its
 * own GPU work and host GEMMs: the GEMMs must be right and run on the GPU again, and the
 * application's new device memory must not be touched. */
static void part_reset(void)
{
    dg_rng r;
    dg_seed(&r, 0x4e5e7);
    const shape s = {300, 257, 129, 1};
    for (int round = 0; round < 2; round++) {
        problem p = new_problem(&r, BLASFT_TYPE_D, 'C', 'N', 'T', &s);
        run_and_check(&p, VIA_DISPATCH, "reset: before");
        CHECK(cudaDeviceReset() == cudaSuccess, "cudaDeviceReset");
        /* the application's own buffer, allocated where the library's memory was */
        const size_t nb = (size_t)64 << 20;
        unsigned char *own = sentinel_alloc(nb, 0x5a);
        CHECK(own != NULL, "reset: the application's buffer");
        for (int t = 0; t < 4; t++) {
            problem q = new_problem(&r, (blasft_type)t, t % 2 ? 'R' : 'C', 'N', 'N', &s);
            run_and_check(&q, VIA_DISPATCH, "reset: after");
            fill(&q, &r, q.c, 'N', q.m, q.n, q.ldc);
            run_and_check(&q, VIA_DISPATCH, "reset: after, again");
            free(q.a); free(q.b); free(q.c);
        }
        run_and_check(&p, VIA_DISPATCH, "reset: the operands of before");
        const size_t bad = sentinel_free(own, nb, 0x5a);
        CHECK(bad == 0, "reset: %zu bytes of the application's buffer changed", bad);
        free(p.a); free(p.b); free(p.c);
    }
    printf("reset: done\n");
}

/* ---- capture ---------------------------------------------------------------------------- */

/* One application thread captures a CUDA graph (cudaStreamCaptureModeGlobal, the default, as
 * PyTorch's graphs do) while another calls host GEMMs that go to the GPU: the GEMMs must be
 * right, and the capture must still end in a graph that replays right (app_probe.h). */

/* a host GEMM by the capturing thread itself: offloaded on the library's own streams, not
 * captured */
static void gemm_while_capturing(void *arg)
{
    (void)arg;
    dg_rng r;
    dg_seed(&r, 0xca98);
    const shape sh = {200, 150, 100, 0};
    problem q = new_problem(&r, BLASFT_TYPE_D, 'C', 'T', 'N', &sh);
    run_and_check(&q, VIA_DISPATCH, "capture: by the capturing thread");
    free(q.a); free(q.b); free(q.c);
}

static void part_capture(void)
{
    dg_rng r;
    dg_seed(&r, 0xca97);
    const shape s = {300, 257, 129, 1};
    problem p = new_problem(&r, BLASFT_TYPE_D, 'C', 'N', 'T', &s);
    run_and_check(&p, VIA_DISPATCH, "capture: before"); /* CUDA and the cache started */
    capture_probe probe;
    capture_probe_start(&probe, gemm_while_capturing, NULL);
    const int on_gpu =
        each_type_anywhere(&r, 'N', 'N', &s, "capture: while another thread captures");
    const char *fault = capture_probe_finish(&probe);
    CHECK(!fault, "capture: the other thread's graph failed at %s", fault);
    CHECK(on_gpu == 4, "capture: %d of 4 GEMMs on the GPU while another thread captured", on_gpu);
    fill(&p, &r, p.c, 'N', p.m, p.n, p.ldc);
    run_and_check(&p, VIA_DISPATCH, "capture: after");
    free(p.a); free(p.b); free(p.c);
    printf("capture: done (%d of 4 on the GPU during the capture)\n", on_gpu);
}

/* ---- partial -------------------------------------------------------------------------- */

/* C's copy back fails part-way (a device failure there, planted by the backend's test hook):
 * the tiles that reached the host hold the result, the rest the caller's C. The result must be
 * exact all the same: with beta != 0 the rest is computed on the host, with beta = 0 (or
 * nothing written yet) the whole GEMM again. */
static void part_partial(void)
{
    dg_rng r;
    dg_seed(&r, 0x9a27);
    typedef struct {
        blasft_type t;
        char lay, ta, tb;
        shape s;
        int zero_beta, tile;
    } pcase;
    static const pcase cases[] = {
        {BLASFT_TYPE_D, 'C', 'N', 'N', {700, 600, 300, 0}, 0, 3},
        {BLASFT_TYPE_D, 'C', 'T', 'T', {701, 599, 131, 3}, 0, 5},
        {BLASFT_TYPE_D, 'R', 'N', 'T', {600, 701, 129, 1}, 0, 2},
        {BLASFT_TYPE_Z, 'C', 'C', 'N', {400, 301, 97, 2}, 0, 4},
        {BLASFT_TYPE_S, 'R', 'T', 'N', {900, 800, 64, 0}, 0, 1},
        {BLASFT_TYPE_C, 'C', 'N', 'C', {513, 600, 77, 0}, 0, 2},
        {BLASFT_TYPE_D, 'C', 'N', 'N', {700, 600, 300, 0}, 1, 3},  /* beta 0: all again */
        {BLASFT_TYPE_D, 'C', 'N', 'T', {700, 600, 300, 0}, 0, 0},  /* nothing written yet */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const pcase *c = &cases[i];
        problem p = new_problem(&r, c->t, c->lay, c->ta, c->tb, &c->s);
        if (c->zero_beta)
            p.beta[0] = p.beta[1] = 0.0;
        else if (p.beta[0] == 0.0)
            p.beta[0] = 0.75;
        blasft_offload_backend_fail_download_at(c->tile);
        run_and_check(&p, VIA_DISPATCH_ANYWHERE, "partial copy back");
        const int left = blasft_offload_backend_fail_download_at(-1);
        CHECK(left == -1, "partial: case %zu: the planted failure at tile %d did not fire", i,
              c->tile);
        free(p.a); free(p.b); free(p.c);
    }
    printf("partial: done\n");
}

/* GEMMs in an exit handler that the program registered before CUDA started, as a C++ object of
 * static lifetime whose destructor multiplies matrices is: the CUDA runtime's own teardown has
 * run by then. Each GEMM must still be right, wherever it runs, and the process must exit
 * cleanly. */
static void exit_gemms(void)
{
    const int before = failures;
    dg_rng r;
    dg_seed(&r, 0xe817);
    const shape s = {300, 257, 129, 1};
    const int on_gpu = each_type_anywhere(&r, 'N', 'T', &s, "exit: a GEMM in an exit handler");
    printf("exit handler: %d checks, %d failures (%d of 4 GEMMs on the GPU)\n", checks,
           failures, on_gpu);
    fflush(stdout);
    if (failures > before)
        _exit(1);
}

static void part_exit(void)
{
    dg_rng r;
    dg_seed(&r, 0xe818);
    const shape s = {300, 257, 129, 1};
    problem p = new_problem(&r, BLASFT_TYPE_D, 'C', 'N', 'N', &s);
    run_and_check(&p, VIA_DISPATCH, "exit: before"); /* CUDA, cuBLAS and the cache started */
    free(p.a); free(p.b); free(p.c);
}

/* A host GEMM inside a host function that the application enqueued (cudaLaunchHostFunc): CUDA
 * forbids CUDA calls there, and the caller cannot know that its BLAS uses CUDA. The GEMM must
 * still be right (on the host, or wherever the library can run it) and nothing may hang. */
static void callback_gemms(void *arg)
{
    int *on_gpu = arg;
    dg_rng r;
    dg_seed(&r, 0xcb11);
    const shape s = {300, 257, 129, 1};
    *on_gpu = each_type_anywhere(&r, 'T', 'N', &s, "callback: a GEMM in a host function");
}

static void part_callback(void)
{
    dg_rng r;
    dg_seed(&r, 0xcb12);
    const shape s = {300, 257, 129, 1};
    problem p = new_problem(&r, BLASFT_TYPE_D, 'C', 'N', 'N', &s);
    run_and_check(&p, VIA_DISPATCH, "callback: before");
    alarm(120); /* a hang shows as SIGALRM */
    cudaStream_t st;
    int on_gpu = 0;
    CHECK(cudaStreamCreate(&st) == cudaSuccess, "callback: stream");
    CHECK(cudaLaunchHostFunc(st, callback_gemms, &on_gpu) == cudaSuccess &&
              cudaStreamSynchronize(st) == cudaSuccess,
          "callback: the host function ran");
    cudaStreamDestroy(st);
    printf("callback: %d of 4 GEMMs in the host function on the GPU\n", on_gpu);
    fill(&p, &r, p.c, 'N', p.m, p.n, p.ldc);
    run_and_check(&p, VIA_DISPATCH, "callback: after");
    alarm(0);
    free(p.a); free(p.b); free(p.c);
}

/* The application holds nearly all of the device's memory (as a framework's memory cache does):
 * GEMMs must still be right (on the host, or on the GPU in what is left) with one warning, not
 * an error per call, and once the application frees its memory they go to the GPU again. */
static void part_full(void)
{
    dg_rng r;
    dg_seed(&r, 0xf011);
    const shape small = {300, 257, 129, 1}, large = {400, 300, 260, 0};
    problem p = new_problem(&r, BLASFT_TYPE_D, 'C', 'N', 'N', &small);
    run_and_check(&p, VIA_DISPATCH, "full: before"); /* CUDA, cuBLAS and the cache started */
    static void *held[4096];
    const int nh = device_fill(held, 4096);
    size_t free_b = 0, total_b = 0;
    cudaMemGetInfo(&free_b, &total_b);
    printf("full: the application holds %d buffers; %zu of %zu MiB free\n", nh, free_b >> 20,
           total_b >> 20);
    fflush(NULL);
    FILE *log = tmpfile(); /* the library's messages meanwhile */
    const int saved = dup(2);
    CHECK(log && saved >= 0 && dup2(fileno(log), 2) >= 0, "full: stderr to a file");
    int on_gpu = 0, calls = 0;
    for (int round = 0; round < 3; round++) {
        on_gpu += each_type_anywhere(&r, 'N', 'T', round ? &large : &small,
                                     "full: a GEMM on a full device");
        calls += 4;
        /* the last error stays until read: one look covers the round */
        const cudaError_t left = cudaGetLastError();
        CHECK(left == cudaSuccess, "full: the GEMMs left the program's last CUDA error at %s",
              cudaGetErrorName(left));
    }
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    int lines = 0, errors = 0;
    char line[512];
    if (log) {
        rewind(log);
        while (fgets(line, sizeof line, log)) {
            fprintf(stderr, "  (while full) %s", line);
            lines++;
            errors += strstr(line, "libblas_ft: error") != NULL;
        }
        fclose(log);
    }
    printf("full: %d of %d GEMMs on the GPU while it was full; %d lines logged\n", on_gpu, calls,
           lines);
    CHECK(errors == 0 && lines <= 5, "full: %d lines logged for %d GEMMs on a full device, %d of "
          "them errors (want a few warnings, each once)", lines, calls, errors);
    device_unfill(held, nh);
    for (int t = 0; t < 4; t++) {
        problem q = new_problem(&r, (blasft_type)t, t % 2 ? 'R' : 'C', 'T', 'N', &large);
        /* the second with an error of the program's own pending: it stays the program's */
        void *huge = NULL;
        const int pend = t == 1 && cudaMalloc(&huge, (size_t)1 << 50) != cudaSuccess;
        run_and_check(&q, VIA_DISPATCH, "full: after the application freed its memory");
        const cudaError_t left = cudaGetLastError();
        CHECK(left == (pend ? cudaErrorMemoryAllocation : cudaSuccess),
              "full: the program's last CUDA error after the GEMM is %s", cudaGetErrorName(left));
        free(q.a); free(q.b); free(q.c);
    }
    free(p.a); free(p.b); free(p.c);
}

/* Threads that each run a GEMM and end, as an application that starts a thread per task: what
 * the library made for each thread (stream, engine context, handles, workspace) must go with it,
 * so device memory does not shrink with the number of threads. */
static void *thread_end_gemm(void *arg)
{
    problem *p = arg;
    run_and_check(p, VIA_DISPATCH, "thread_end: a thread's GEMM");
    return NULL;
}

static size_t device_free(void)
{
    size_t free_b = 0, total_b = 0;
    cudaDeviceSynchronize();
    cudaMemGetInfo(&free_b, &total_b);
    return free_b;
}

static void part_thread_end(void)
{
    enum { THREADS = 16 };
    dg_rng r;
    dg_seed(&r, 0x7e4d);
    const shape s = {300, 257, 129, 1};
    problem p = new_problem(&r, BLASFT_TYPE_D, 'C', 'N', 'T', &s); /* the same operands: cached */
    size_t free_at[THREADS + 1];
    for (int i = 0; i <= THREADS; i++) {
        pthread_t th;
        pthread_create(&th, NULL, thread_end_gemm, &p);
        pthread_join(th, NULL);
        free_at[i] = device_free(); /* after thread i ended */
    }
    const double lost = ((double)free_at[0] - (double)free_at[THREADS]) / (1 << 20);
    printf("thread_end: device memory free after the first thread %.1f MiB, after %d more %.1f "
           "MiB: %.2f MiB per thread kept\n", free_at[0] / 1048576.0, THREADS,
           free_at[THREADS] / 1048576.0, lost / THREADS);
    CHECK(lost < 8.0, "thread_end: %.1f MiB of device memory kept for %d threads that ended", lost,
          THREADS);
    free(p.a); free(p.b); free(p.c);
}

int main(int argc, char **argv)
{
    const char *part = argc > 1 ? argv[1] : "shapes";
    /* the settings are read on first use: set before anything of the library runs */
    setenv("BLASFT_CACHE", strcmp(part, "declared") ? "hash" : "declared", 1);
    setenv("BLASFT_DEVICE", "gpu", 1);
    if (strcmp(part, "threads") && strcmp(part, "speculate")) /* small tiles: operands in many */
        setenv("BLASFT_STAGING", "1M", 1);
    if (!strcmp(part, "property") || !strcmp(part, "declared") || !strcmp(part, "tiles"))
        setenv("BLASFT_DEVICE_MEM", "1M", 1);
    if (!strcmp(part, "evict"))
        setenv("BLASFT_DEVICE_MEM", "2M", 1);
    if (!strcmp(part, "exit")) /* before anything of CUDA's: it runs after CUDA's teardown */
        atexit(exit_gemms);
    if (!blasft_gpu_available()) {
        printf("no usable GPU: skipped\n");
        return 77;
    }
    if (!strcmp(part, "shapes"))
        part_shapes();
    else if (!strcmp(part, "property"))
        part_property(0, argc > 2 ? atoi(argv[2]) : 1000);
    else if (!strcmp(part, "declared"))
        part_property(1, argc > 2 ? atoi(argv[2]) : 300);
    else if (!strcmp(part, "evict"))
        part_evict();
    else if (!strcmp(part, "tiles"))
        part_tiles();
    else if (!strcmp(part, "threads"))
        part_threads();
    else if (!strcmp(part, "speculate"))
        part_speculate();
    else if (!strcmp(part, "fork"))
        part_fork();
    else if (!strcmp(part, "reset"))
        part_reset();
    else if (!strcmp(part, "capture"))
        part_capture();
    else if (!strcmp(part, "partial"))
        part_partial();
    else if (!strcmp(part, "exit"))
        part_exit();
    else if (!strcmp(part, "callback"))
        part_callback();
    else if (!strcmp(part, "full"))
        part_full();
    else if (!strcmp(part, "thread_end"))
        part_thread_end();
    else if (!strcmp(part, "devices")) {
        if (part_devices() == 77)
            return 77;
    }
    else {
        fprintf(stderr, "usage: %s shapes|property [n]|declared [n]|evict|tiles|threads|speculate|fork|devices|reset|capture|partial|exit|callback|full|thread_end\n", argv[0]);
        return 2;
    }
    printf("%s: %d checks, %d failures\n", part, checks, failures);
    return failures ? 1 : 0;
}
