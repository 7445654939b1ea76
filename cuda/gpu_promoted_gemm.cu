/* BLASFT_PROMOTE on the GPU (docs/promote.md): an S or C GEMM computed as D or Z GEMMs of
 * promoted copies, tile by tile in a fixed buffer: the plan and the tiled run. The conversions are
 * gpu_promote.cu; each tile is checked by protected_gemm (gpu_gemm.cu). */
#include "gpu_engine.h"
#include "gpu_prep.h"
#include "gpu_promote.h"

#include <cstring>

namespace gpu_engine {

namespace {

int64_t max1(int64_t v) { return v > 1 ? v : 1; }

/* BLASFT_PROMOTE=auto promotes every S and C GEMM on GPUs where FP64 runs at half the FP32 rate or
 * better (A100, H100, H200). H100 (docs/promote.md): from 1024 on the promoted GEMM costs the
 * native one's time or less; with a dimension under 512 12-39 % more (9-113 us per call), which
 * buys the FP32 detection targets that the native checksums miss at such shapes (PEA: 0-11 of 40
 * flips of bit 16 at m = n = 256, k = 4096; promoted: every bit). */
constexpr uint64_t kPromoteMemDefault = (uint64_t)1 << 30; /* BLASFT_GPU_PROMOTE_MEM's default */

bool fast_fp64()
{
    static std::atomic<int> known[64]; /* per device: 0 not asked yet, 1 slow, 2 fast */
    int dev = 0;
    if (cudaGetDevice(&dev) != cudaSuccess || dev < 0 || dev >= 64)
        return false;
    int v = known[dev].load(std::memory_order_relaxed);
    if (!v) {
        int ratio = 0;
        if (cudaDeviceGetAttribute(&ratio, cudaDevAttrSingleToDoublePrecisionPerfRatio, dev) !=
            cudaSuccess)
            ratio = 0;
        v = ratio >= 1 && ratio <= 2 ? 2 : 1;
        known[dev].store(v, std::memory_order_relaxed);
    }
    return v == 2;
}

} // namespace

blasft_type promoted_type(blasft_type t) { return t == BLASFT_TYPE_S ? BLASFT_TYPE_D : BLASFT_TYPE_Z; }

/* cold: the old C is read (beta != 0, or beta in device memory) */
promo_plan plan_promotion(blasft_type t, char ta, char tb, int64_t m, int64_t n, int64_t k,
                          bool cold, const blasft_gpu_params *p)
{
    promo_plan L;
    memset(&L, 0, sizeof L);
    if ((t != BLASFT_TYPE_S && t != BLASFT_TYPE_C) || !p->promote || m <= 0 || n <= 0 || k <= 0)
        return L;
    if (p->promote == 2 && !fast_fp64())
        return L;
    const size_t P = (size_t)type_parts(t);
    const uint64_t cap = p->promote_mem ? p->promote_mem : kPromoteMemDefault;
    const int64_t bs = p->block_size;
    const bool recompute =
        p->mode == BLASFT_MODE_CORRECT && p->on_error == BLASFT_ON_ERROR_RECOMPUTE;
    auto halve = [](int64_t x, int64_t unit) { return ((x + 1) / 2 + unit - 1) / unit * unit; };
    int64_t tm = m, tn = n, kc = k;
    for (;;) {
        gk_carve c{0};
        L.a = c.take(8 * P * (size_t)(tm * kc));
        L.b = c.take(8 * P * (size_t)(kc * tn));
        L.c = c.take(8 * P * (size_t)(tm * tn));
        L.s = c.take(8 * 3 * P);
        L.v = c.take(8 * P * (size_t)tm);
        L.end = c.o;
        L.keep_old = recompute && (cold || kc < k);
        if (L.end + (L.keep_old ? gk_align(8 * P * (size_t)(tm * tn)) : 0) <= cap)
            break;
        /* tiles of C down to 1024 first (the panels are re-converted once per tile, which costs
         * less than chunks of k: each chunk copies and encodes the tile's old C), then k down to
         * 1024, then either further */
        const int64_t big = tm > tn ? tm : tn;
        if (big > 1024 && big > bs)
            (tm >= tn ? tm : tn) = halve(big, bs);
        else if (kc > 1024)
            kc = halve(kc, 256);
        else if (big > bs)
            (tm >= tn ? tm : tn) = halve(big, bs);
        else if (kc > 256)
            kc = halve(kc, 256);
        else
            return promo_plan{}; /* nothing fits: native */
    }
    L.on = true;
    L.tm = tm;
    L.tn = tn;
    L.kc = kc;
    const blasft_type e = promoted_type(t);
    if (kc == k && op_of(ta) == CUBLAS_OP_N && tn < n) {
        L.pa_each = gk_align(blasft_gpu_prep_bytes(0, e, tm, k, p));
        L.pa = L.end;
        L.end += L.pa_each * (size_t)((m + tm - 1) / tm);
    }
    if (kc == k && op_of(tb) == CUBLAS_OP_N && tm < m && p->rows_on_demand && !p->pea_block_lists) {
        L.pb = L.end;
        L.end += gk_align(blasft_gpu_prep_bytes(1, e, k, tn, p));
    }
    return L;
}

promo_plan plan_for(const blasft_gpu_ctx *ctx, const blasft_gpu_gemm *g, const blasft_gpu_params *p)
{
    if (ctx->no_promo)
        return promo_plan{};
    /* the old C is copied where it is read, unless it is a vector */
    const bool cold = (g->scalars_on_device || scalar_nonzero(g->type, g->beta)) && !g->c_vector;
    const promo_plan L = plan_promotion(g->type, g->transa, g->transb, g->m, g->n, g->k, cold, p);
    /* under graph capture every part needs a report slot of its own (nothing is delivered while
     * capturing): a GEMM of more parts than slots runs natively there */
    cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
    if (L.on && L.parts(g->m, g->n, g->k) > kSlots &&
        cudaStreamIsCapturing(ctx->s0, &cs) == cudaSuccess && cs != cudaStreamCaptureStatusNone)
        return promo_plan{};
    return L;
}

namespace {

/* BLASFT_PROMOTE on the GPU: an S or C GEMM computed as D or Z GEMMs of promoted copies, tile by
 * tile of C and chunk by chunk of k (plan_promotion), each checked (and corrected) in double by
 * protected_gemm, every tile rounded once into the caller's C after its last chunk; all on the
 * caller's stream (docs/promote.md). Loop order: column panels of op(B) outside, so that with k in
 * one chunk op(B)'s panel is converted once and op(A)'s once per column panel. */
template <typename Td>
int promoted_gemm(blasft_gpu_ctx *ctx, const blasft_gpu_gemm *g, const blasft_gpu_params *p,
                  const promo_plan &L)
{
    constexpr int P = gk_el<Td>::P;
    int rc = 0;
    char *w = (char *)ctx->promo; /* ensure_promo made it (blasft_gpu_gemm_run) */
    const cudaStream_t s0 = ctx->s0;
    const int64_t m = g->m, n = g->n, k = g->k;
    const bool an = op_of(g->transa) == CUBLAS_OP_N, bn = op_of(g->transb) == CUBLAS_OP_N;
    const bool cold = g->scalars_on_device || scalar_nonzero(g->type, g->beta);
    const float *ga = (const float *)g->a, *gb = (const float *)g->b;
    float *gc = (float *)g->c;
    const float *gv = (const float *)g->c_vector;
    double *dA = (double *)(w + L.a), *dB = (double *)(w + L.b), *dC = (double *)(w + L.c);
    double *dV = (double *)(w + L.v);
    /* alpha, beta and one, in device memory where the caller's are */
    double hs[6] = {0.0, 0.0, 0.0, 0.0, 0.0, 0.0};
    const double *sc = hs;
    if (g->scalars_on_device) {
        double *ds = (double *)(w + L.s);
        gk_promote_scalars((const float *)g->alpha, (const float *)g->beta, P, ds, s0);
        sc = ds;
    } else {
        for (int i = 0; i < P; i++) {
            hs[i] = ((const float *)g->alpha)[i];
            hs[P + i] = ((const float *)g->beta)[i];
        }
        hs[2 * P] = 1.0;
    }
    blasft_gpu_gemm d = *g;
    d.type = promoted_type(g->type);
    d.a = dA;
    d.b = dB;
    d.c = dC;
    d.alpha = sc; /* the caller's prepared operands are made from its single-precision data */
    /* rows r0.. and columns c0.. of op(X) (X stored as op(X) where op is N, else transposed) into
     * a packed double panel laid out as X is */
    auto panel = [&](const float *x, int64_t ld, bool n_op, int64_t r0, int64_t c0, int64_t rows,
                     int64_t cols, double *dst) {
        if (n_op)
            gk_promote(x + P * (r0 + c0 * ld), P * ld, P * rows, cols, dst, s0);
        else
            gk_promote(x + P * (c0 + r0 * ld), P * ld, P * cols, rows, dst, s0);
    };
    int64_t a_at[2] = {-1, -1}, b_at[2] = {-1, -1}; /* the panels the buffer holds */
    for (int64_t j0 = 0; j0 < n; j0 += L.tn)
        for (int64_t i0 = 0; i0 < m; i0 += L.tm)
            for (int64_t k0 = 0; k0 < k; k0 += L.kc) {
                const int64_t tm = m - i0 < L.tm ? m - i0 : L.tm;
                const int64_t tn = n - j0 < L.tn ? n - j0 : L.tn;
                const int64_t kc = k - k0 < L.kc ? k - k0 : L.kc;
                const bool last_k = k0 + kc >= k;
                if (a_at[0] != i0 || a_at[1] != k0) {
                    panel(ga, g->lda, an, i0, k0, tm, kc, dA);
                    a_at[0] = i0;
                    a_at[1] = k0;
                }
                if (b_at[0] != j0 || b_at[1] != k0) {
                    panel(gb, g->ldb, bn, k0, j0, kc, tn, dB);
                    b_at[0] = j0;
                    b_at[1] = k0;
                }
                /* with beta = 0 in host memory the old C is never read (it may hold NaN); with
                 * device scalars the engine skips it where beta turns out 0 */
                if (k0 == 0 && cold) {
                    if (gv) /* the tile's rows of the vector: the engine repeats them */
                        gk_promote(gv + P * i0, P * tm, P * tm, 1, dV, s0);
                    else
                        gk_promote(gc + P * (i0 + j0 * g->ldc), P * g->ldc, P * tm, tn, dC, s0);
                }
                d.c_vector = k0 == 0 && gv && cold ? dV : nullptr;
                d.m = tm;
                d.n = tn;
                d.k = kc;
                d.lda = max1(an ? tm : kc);
                d.ldb = max1(bn ? kc : tn);
                d.ldc = max1(tm);
                d.beta = k0 == 0 ? sc + P : sc + 2 * P; /* later chunks accumulate */
                /* prepared panels: op(A)'s made in the first column of tiles, op(B)'s with its
                 * conversion; both on this stream, before the GEMMs that read them */
                d.prep_a = d.prep_b = nullptr;
                if (L.pa) {
                    char *pa = w + L.pa + L.pa_each * (size_t)(i0 / L.tm);
                    if (j0 == 0 && blasft_gpu_prepare(s0, 0, d.type, tm, k, dA, tm, p, pa))
                        return -2;
                    d.prep_a = pa;
                }
                if (L.pb) {
                    if (i0 == 0 && blasft_gpu_prepare(s0, 1, d.type, k, tn, dB, k, p, w + L.pb))
                        return -2;
                    d.prep_b = w + L.pb;
                }
                ctx->part = call_part{i0, j0, last_k ? 1 : 0,
                                      last_k && i0 + tm >= m && j0 + tn >= n ? 1 : 0};
                rc = protected_gemm<Td>(ctx, &d, p, g->type);
                ctx->part = kWholeCall;
                if (rc)
                    return rc;
                if (last_k)
                    gk_round(dC, P * tm, tn, gc + P * (i0 + j0 * g->ldc), P * g->ldc, s0);
            }
    return launches_ok() ? 0 : -2;
}

} // namespace

int promoted_gemm_run(blasft_gpu_ctx *ctx, const blasft_gpu_gemm *g, const blasft_gpu_params *p,
                      const promo_plan &L)
{
    return g->type == BLASFT_TYPE_S ? promoted_gemm<double>(ctx, g, p, L)
                                    : promoted_gemm<double2>(ctx, g, p, L);
}

} // namespace gpu_engine
