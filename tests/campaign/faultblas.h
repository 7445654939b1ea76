/* A host BLAS for the campaign that plants one bit flip in the data GEMM it is told about.
 *
 * The campaign points BLASFT_HOST_BLAS at this module; the ABFT engine then calls sgemm_/dgemm_
 * here, for the product itself and for its checksum products. Every routine not defined here is
 * found in OpenBLAS, which this module links (dlsym on its handle searches its dependencies).
 * Injecting below the engine, in the "hardware" it protects, keeps the campaign independent of
 * the engine's own BLASFT_INJECT code and tells us exactly what was flipped. */
#ifndef BLASFT_CAMPAIGN_FAULTBLAS_H
#define BLASFT_CAMPAIGN_FAULTBLAS_H

#include <stdint.h>

enum { FAULT_SITE_OUTPUT = 0, FAULT_SITE_INNER = 1 };

typedef struct campaign_fault {
    /* set by the campaign */
    int armed;          /* the next GEMM whose C is `target` gets the fault, then disarmed */
    const void *target; /* the caller's C; NULL: the first double GEMM of shape match_m x match_n
                         * (an S GEMM the engine runs in double, BLASFT_PROMOTE: the checksum
                         * products have other shapes as long as BS > 2) */
    int64_t match_m, match_n;
    int as_single;      /* flip `bit` of the double's value as a float, adding the difference */
    int site;           /* FAULT_SITE_OUTPUT: flip in C after the product; FAULT_SITE_INNER: flip
                         * in the partial sum after k1 of k steps, then the rest is accumulated */
    int bit;            /* bit of the IEEE representation, 0 = least significant */
    uint64_t seed;      /* chooses the element and k1 */
    int skip;           /* matching GEMMs to let pass first: the engine may run the data GEMM as
                         * several calls along k (PROJ), and an output fault belongs in the last */
    /* filled in when it fired */
    int fired;
    int64_t row, col, k1;
    double before, after; /* the value that was flipped (C element or partial sum), as double */
} campaign_fault;

/* The module's one plan (exported; the campaign finds it with dlsym). */
campaign_fault *campaign_fault_plan(void);

#endif
