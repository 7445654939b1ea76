/* cublasLtMatmul, exported (issue 5's interposer, extended): cuBLASLt's GEMM, which PyTorch's
 * addmm with a bias vector (nn.Linear, F.linear) calls instead of cublas?gemm. The call's
 * descriptors are read through the application's own cublasLt; a plain GEMM on IEEE float or
 * double data (real or complex), or on half or bfloat16 operands with FP32 compute (one GEMM),
 * with or without a bias vector, becomes one blasft_cublas_call
 * that cuda/cublas_interpose.c runs protected on the call's stream. Every other configuration
 * goes to the real cublasLtMatmul unchanged and is counted unprotected. Built only with CUDA. */
#include "cublas_interpose.h"
#include "gpu_cublas.h"

#include <cublasLt.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

typedef cublasStatus_t lt_matmul_fn(cublasLtHandle_t, cublasLtMatmulDesc_t, const void *,
                                    const void *, cublasLtMatrixLayout_t, const void *,
                                    cublasLtMatrixLayout_t, const void *, const void *,
                                    cublasLtMatrixLayout_t, void *, cublasLtMatrixLayout_t,
                                    const cublasLtMatmulAlgo_t *, void *, size_t, cudaStream_t);
typedef cublasStatus_t desc_get_fn(cublasLtMatmulDesc_t, cublasLtMatmulDescAttributes_t, void *,
                                   size_t, size_t *);
typedef cublasStatus_t layout_get_fn(cublasLtMatrixLayout_t, cublasLtMatrixLayoutAttribute_t,
                                     void *, size_t, size_t *);

static struct {
    lt_matmul_fn *matmul;
    desc_get_fn *desc_get;
    layout_get_fn *layout_get;
} lt;
static pthread_once_t lt_once = PTHREAD_ONCE_INIT;

static void resolve_lt(void)
{
    union { void *p; lt_matmul_fn *f; } m = {.p = blasft_cublaslt_sym("cublasLtMatmul")};
    union { void *p; desc_get_fn *f; } d = {.p = blasft_cublaslt_sym("cublasLtMatmulDescGetAttribute")};
    union { void *p; layout_get_fn *f; } l = {
        .p = blasft_cublaslt_sym("cublasLtMatrixLayoutGetAttribute")};
    lt.matmul = m.f;
    lt.desc_get = d.f;
    lt.layout_get = l.f;
}

/* An attribute of up to 8 bytes as a signed integer (4-byte values sign-extended: BIAS_DATA_TYPE's
 * default is -1). Returns 0, or -1 where the library does not answer. */
static int widen(uint64_t x, size_t written, int64_t *v)
{
    if (written == 4)
        *v = (int32_t)(uint32_t)x;
    else if (written == 1)
        *v = (int8_t)(uint8_t)x;
    else if (written == 8)
        *v = (int64_t)x;
    else
        return -1;
    return 0;
}
/* An attribute's value through getter GET of object type O and attribute type A. cublasLt
 * wants the attribute's exact size: it is asked first with no buffer. */
#define ATTR_READER(name, O, A, GET)                                                               \
    static int name(O obj, A a, int64_t *v)                                                        \
    {                                                                                              \
        uint64_t x = 0;                                                                            \
        size_t w = 0, w2 = 0;                                                                      \
        if (lt.GET(obj, a, NULL, 0, &w) != CUBLAS_STATUS_SUCCESS || w > sizeof x ||               \
            lt.GET(obj, a, &x, w, &w2) != CUBLAS_STATUS_SUCCESS)                                   \
            return -1;                                                                             \
        return widen(x, w, v);                                                                     \
    }
ATTR_READER(desc_attr, cublasLtMatmulDesc_t, cublasLtMatmulDescAttributes_t, desc_get)
ATTR_READER(layout_attr, cublasLtMatrixLayout_t, cublasLtMatrixLayoutAttribute_t, layout_get)

/* An attribute that must keep its default (0 or NULL) for the call to be a plain GEMM; one the
 * library does not know cannot have been set. */
static int desc_default(cublasLtMatmulDesc_t d, cublasLtMatmulDescAttributes_t a)
{
    int64_t v = 0;
    return desc_attr(d, a, &v) != 0 || v == 0;
}

typedef struct layout {
    int64_t type, order, rows, cols, ld, batch, stride, plane, mode;
} layout;

static int read_layout(cublasLtMatrixLayout_t l, layout *o)
{
    memset(o, 0, sizeof *o);
    if (!l || layout_attr(l, CUBLASLT_MATRIX_LAYOUT_TYPE, &o->type) ||
        layout_attr(l, CUBLASLT_MATRIX_LAYOUT_ORDER, &o->order) ||
        layout_attr(l, CUBLASLT_MATRIX_LAYOUT_ROWS, &o->rows) ||
        layout_attr(l, CUBLASLT_MATRIX_LAYOUT_COLS, &o->cols) ||
        layout_attr(l, CUBLASLT_MATRIX_LAYOUT_LD, &o->ld) ||
        layout_attr(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &o->batch) ||
        layout_attr(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &o->stride))
        return -1;
    /* newer attributes: unknown to an older library means unset */
    if (layout_attr(l, CUBLASLT_MATRIX_LAYOUT_PLANE_OFFSET, &o->plane))
        o->plane = 0;
    if (layout_attr(l, (cublasLtMatrixLayoutAttribute_t)8 /* BATCH_MODE */, &o->mode))
        o->mode = 0;
    return 0;
}

/* The data type of a GEMM the engine protects with its S, D, C, Z paths: A, B, C, D and the
 * scales all float or all double (real or complex) with a compute type of that precision (no
 * TF32, 16-bit or emulated compute); half and bfloat16 operands: describe's lp. */
static int lt_type(const layout *a, const layout *b, const layout *c, const layout *d,
                   int64_t comp, int64_t scale, blasft_type *t)
{
    if (a->type != b->type || a->type != c->type || a->type != d->type || a->type != scale)
        return 0;
    const int c32 = comp == CUBLAS_COMPUTE_32F || comp == CUBLAS_COMPUTE_32F_PEDANTIC;
    const int c64 = comp == CUBLAS_COMPUTE_64F || comp == CUBLAS_COMPUTE_64F_PEDANTIC;
    if (a->type == CUDA_R_32F && c32)
        *t = BLASFT_TYPE_S;
    else if (a->type == CUDA_R_64F && c64)
        *t = BLASFT_TYPE_D;
    else if (a->type == CUDA_C_32F && c32)
        *t = BLASFT_TYPE_C;
    else if (a->type == CUDA_C_64F && c64)
        *t = BLASFT_TYPE_Z;
    else
        return 0;
    return 1;
}

/* The call as a blasft_cublas_call: c->protectable stays 0 (counted unprotected) for anything
 * but a plain column-major GEMM with the default epilogue or a bias; c->m stays 0 (not counted
 * as a GEMM: the real call reports the problem) where the descriptors cannot be read or do not
 * fit together. */
static void describe(blasft_cublas_call *c, cublasLtMatmulDesc_t desc, const void *alpha,
                     const void *A, cublasLtMatrixLayout_t Ad, const void *B,
                     cublasLtMatrixLayout_t Bd, const void *beta, const void *C,
                     cublasLtMatrixLayout_t Cd, void *D, cublasLtMatrixLayout_t Dd)
{
    layout a, b, cl, d;
    int64_t comp = 0, scale = 0, pmode = 0, ta = 0, tb = 0, tc = 0, fill = CUBLAS_FILL_MODE_FULL,
            epi = CUBLASLT_EPILOGUE_DEFAULT, bias_type = -1, bias_p = 0;
    if (!desc || read_layout(Ad, &a) || read_layout(Bd, &b) || read_layout(Cd, &cl) ||
        read_layout(Dd, &d) || desc_attr(desc, CUBLASLT_MATMUL_DESC_COMPUTE_TYPE, &comp) ||
        desc_attr(desc, CUBLASLT_MATMUL_DESC_SCALE_TYPE, &scale) ||
        desc_attr(desc, CUBLASLT_MATMUL_DESC_POINTER_MODE, &pmode) ||
        desc_attr(desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta) ||
        desc_attr(desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb) ||
        desc_attr(desc, CUBLASLT_MATMUL_DESC_TRANSC, &tc) ||
        desc_attr(desc, CUBLASLT_MATMUL_DESC_FILL_MODE, &fill) ||
        desc_attr(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi) ||
        desc_attr(desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias_p))
        return;
    if (desc_attr(desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bias_type))
        bias_type = -1;
    /* op(A) m x k, op(B) k x n, C and D m x n */
    const int64_t m = d.rows, n = d.cols, k = ta == CUBLAS_OP_N ? a.cols : a.rows;
    const int64_t am = ta == CUBLAS_OP_N ? a.rows : a.cols;
    const int64_t bk = tb == CUBLAS_OP_N ? b.rows : b.cols, bn = tb == CUBLAS_OP_N ? b.cols : b.rows;
    if (am != m || bk != k || bn != n || cl.rows != m || cl.cols != n || d.batch != a.batch ||
        d.batch != b.batch || d.batch != cl.batch)
        return;
    c->transa = (cublasOperation_t)ta;
    c->transb = (cublasOperation_t)tb;
    c->m = m, c->n = n, c->k = k;
    c->alpha = alpha, c->beta = beta;
    c->a = A, c->lda = a.ld, c->stride_a = a.stride;
    c->b = B, c->ldb = b.ld, c->stride_b = b.stride;
    c->c = D, c->ldc = d.ld, c->stride_c = d.stride;
    c->batch = d.batch;
    c->lt_on_device = pmode == CUBLASLT_POINTER_MODE_DEVICE;
    const int c_is_d = C == D && cl.ld == d.ld && cl.stride == d.stride;
    c->c_in = c_is_d ? NULL : C;
    c->ldc_in = cl.ld;
    c->stride_c_in = cl.stride;
    blasft_type t = BLASFT_TYPE_S;
    /* half or bfloat16 A and B, C and D of their type or float, FP32 compute and scales: the
     * engine's path for them (cuda/gpu_lowp.cu), one GEMM or a strided batch */
    const int lp = blasft_cublas_lowp_types((cudaDataType)a.type, (cudaDataType)b.type,
                                            (cudaDataType)d.type, (cublasComputeType_t)comp) &&
                   cl.type == d.type && scale == CUDA_R_32F;
    if (lp) {
        c->lowp = 1;
        c->ab_type = (cudaDataType)a.type;
        c->c_type = (cudaDataType)d.type;
        c->compute = (cublasComputeType_t)comp;
        c->algo = CUBLAS_GEMM_DEFAULT;
    }
    int ok = (lp || lt_type(&a, &b, &cl, &d, comp, scale, &t)) && a.order == CUBLASLT_ORDER_COL &&
             b.order == CUBLASLT_ORDER_COL && cl.order == CUBLASLT_ORDER_COL &&
             d.order == CUBLASLT_ORDER_COL && !a.plane && !b.plane && !cl.plane && !d.plane &&
             !a.mode && !b.mode && !cl.mode && !d.mode && tc == CUBLAS_OP_N &&
             fill == CUBLAS_FILL_MODE_FULL &&
             (pmode == CUBLASLT_POINTER_MODE_HOST || pmode == CUBLASLT_POINTER_MODE_DEVICE) &&
             desc_default(desc, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER) &&
             desc_default(desc, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER) &&
             desc_default(desc, CUBLASLT_MATMUL_DESC_C_SCALE_POINTER) &&
             desc_default(desc, CUBLASLT_MATMUL_DESC_D_SCALE_POINTER) &&
             desc_default(desc, CUBLASLT_MATMUL_DESC_AMAX_D_POINTER) &&
             desc_default(desc, (cublasLtMatmulDescAttributes_t)36 /* D_OUT_SCALE_POINTER */) &&
             desc_default(desc, (cublasLtMatmulDescAttributes_t)38 /* EMULATION_DESCRIPTOR */);
    /* a bias: real data, scalars in host memory, one GEMM, the bias in the data type, and C
     * either another matrix or not read (beta 0), so that D can be prepared in its place */
    if (epi == CUBLASLT_EPILOGUE_BIAS)
        ok = ok && bias_p && (lp || t == BLASFT_TYPE_S || t == BLASFT_TYPE_D) &&
             !c->lt_on_device && d.batch == 1 && (bias_type == -1 || bias_type == d.type) &&
             (!c_is_d || (beta && blasft_cublas_host_zero(lp ? BLASFT_TYPE_S : t, beta)));
    else
        ok = ok && epi == CUBLASLT_EPILOGUE_DEFAULT;
    /* a C apart from D: one GEMM (half and bfloat16: a batch too, the engine reads C), a valid
     * ld, and not D itself in another layout (cublasLt reports what it makes of those) */
    ok = ok && (c_is_d || ((d.batch == 1 || lp) && C != D && cl.ld >= (m > 1 ? m : 1)));
    c->bias = epi == CUBLASLT_EPILOGUE_BIAS ? (const void *)(uintptr_t)bias_p : NULL;
    c->type = t;
    c->protectable = ok;
}

EXPORT cublasStatus_t cublasLtMatmul(cublasLtHandle_t lightHandle, cublasLtMatmulDesc_t computeDesc,
                                     const void *alpha, const void *A, cublasLtMatrixLayout_t Adesc,
                                     const void *B, cublasLtMatrixLayout_t Bdesc, const void *beta,
                                     const void *C, cublasLtMatrixLayout_t Cdesc, void *D,
                                     cublasLtMatrixLayout_t Ddesc, const cublasLtMatmulAlgo_t *algo,
                                     void *workspace, size_t workspaceSizeInBytes,
                                     cudaStream_t stream)
{
    static blasft_call_stat stat = {.name = "cublasLtMatmul"};
    pthread_once(&lt_once, resolve_lt);
    if (!lt.matmul)
        return CUBLAS_STATUS_NOT_INITIALIZED;
    blasft_cublas_call c = {.stat = &stat, .handle = (cublasHandle_t)lightHandle, .lt = 1,
                            .lt_stream = stream, .batch = 1};
    /* cuBLAS's own calls (and the engine's) come here too: those are not read */
    if (!blasft_cublas_untouched() && lt.desc_get && lt.layout_get)
        describe(&c, computeDesc, alpha, A, Adesc, B, Bdesc, beta, C, Cdesc, D, Ddesc);
    /* descriptors that cannot be read or do not fit together leave m = 0: the call is recorded,
     * not counted as a GEMM, and the real one reports the problem */
    cublasStatus_t st;
    if (blasft_cublas_protect(&c, &st))
        return st;
    blasft_cublas_pass_begin();
    st = lt.matmul(lightHandle, computeDesc, alpha, A, Adesc, B, Bdesc, beta, C, Cdesc, D, Ddesc,
                   algo, workspace, workspaceSizeInBytes, stream);
    blasft_cublas_pass_end(&c);
    return st;
}
