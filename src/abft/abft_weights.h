/* The checksum weights of one scheme and block size, computed once per process: every protected
 * GEMM used to compute them again, and to clear and scan them, a fixed cost that was a good part
 * of a tiny GEMM's (docs/host-overhead.md, "Tiny GEMMs"). */
#ifndef BLASFT_ABFT_WEIGHTS_H
#define BLASFT_ABFT_WEIGHTS_H

typedef struct abft_weights {
    int scheme, bs;
    double ones[1024]; /* the unweighted checksum's: 1 for i < bs */
    double w[1024];   /* blasft_weight(scheme, i, bs) for i < bs */
    double abs_sum;   /* sum of |w[i]| over a full block */
    int weighted;     /* some w[i] != 1 */
} abft_weights;

/* The weights of (scheme, bs), bs <= 1024, 0 beyond bs (as some passes read a whole vector
 * width); never freed, never changed once returned. NULL without memory. */
const abft_weights *abft_weights_get(int scheme, int bs);

#endif
