/* An independent GEMM oracle for the integration programs: a naive triple loop in long double
 * over the caller's own storage order, and an elementwise error bound. Knows nothing of
 * libblas_ft, so it can check any BLAS the program happens to be linked with. */
#ifndef GEMM_CHECK_H
#define GEMM_CHECK_H

#include <stddef.h>
#include <stdint.h>

enum gemm_order { ORDER_ROW = 0, ORDER_COL = 1 };
enum gemm_type { TYPE_S = 0, TYPE_D, TYPE_C, TYPE_Z };

/* One GEMM problem in the caller's view: op(A) is m x k, op(B) is k x n, C is m x n, all stored
 * in `order` with the given leading dimensions; trans is 'N', 'T' or 'C'. */
typedef struct gemm_case {
    enum gemm_type type;
    enum gemm_order order;
    char transa, transb;
    int m, n, k, lda, ldb, ldc;
    double alpha[2], beta[2];
} gemm_case;

/* A small xorshift generator, so every thread can have its own reproducible stream. */
uint64_t gc_rand_next(uint64_t *state);
double gc_rand_uniform(uint64_t *state); /* in [-1, 1) */

size_t gc_elem_size(enum gemm_type t);
/* Number of elements to allocate for A, B and C (including the lda/ldb/ldc padding). */
size_t gc_a_elems(const gemm_case *g);
size_t gc_b_elems(const gemm_case *g);
size_t gc_c_elems(const gemm_case *g);

/* Fills n elements of type t with uniform random values. */
void gc_fill(enum gemm_type t, void *x, size_t n, uint64_t *state);

/* Computes alpha*op(A)*op(B) + beta*C0 naively and compares it with C (the BLAS result); C's
 * padding (rows/columns beyond m x n within ldc) must equal C0's. Returns the number of elements
 * that are out of bound (0 = correct) and prints the first few to stderr, prefixed by `what`. */
long gc_check(const gemm_case *g, const void *a, const void *b, const void *c0, const void *c,
              const char *what);

#endif
