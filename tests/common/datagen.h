/* Seeded test-data generators for the thesis's series (Halder, ch. 7.1.2) and a few harder ones.
 * Everything is column-major with a leading dimension; rows m..ld-1 of each column are never
 * written, so a caller can fill them with NaN to catch code that reads past m. The same seed
 * always gives the same data on every machine (own PRNG, no rand(), no libm randomness). */
#ifndef BLASFT_TEST_DATAGEN_H
#define BLASFT_TEST_DATAGEN_H

#include <stdint.h>

/* xoshiro256** (Blackman/Vigna), seeded through splitmix64 so that any 64-bit seed works. */
typedef struct dg_rng {
    uint64_t s[4];
} dg_rng;

void dg_seed(dg_rng *r, uint64_t seed);
uint64_t dg_next(dg_rng *r);
/* Uniform in [0, 1) with 53 random bits. */
double dg_uniform(dg_rng *r);
/* Uniform in [lo, hi). */
double dg_range(dg_rng *r, double lo, double hi);
/* Standard normal (polar Box-Muller; the spare value is dropped to keep the stream simple). */
double dg_normal(dg_rng *r);
/* Uniform integer in [0, n); n > 0. */
uint64_t dg_below(dg_rng *r, uint64_t n);

/* Element types, in the order S, D, C, Z of the library's blasft_type. */
typedef enum { DG_S = 0, DG_D, DG_C, DG_Z } dg_type;

typedef enum {
    DG_POS,    /* T_pos: uniform in [0, 10^exponent] */
    DG_FULL,   /* T_full: uniform in [-10^exponent, 10^exponent] */
    DG_ORTH,   /* T_orth: 10^exponent * U * D_kappa * V^T, U and V random orthogonal */
    DG_HEAVY,  /* random sign, magnitude 10^(exponent + u), u uniform in [-decades/2, decades/2] */
    DG_CAUCHY, /* 10^exponent * standard Cauchy: unbounded tails */
    DG_CANCEL, /* products along the inner dimension nearly cancel in pairs (see role) */
} dg_series;

/* Which side of a product the matrix is, for DG_CANCEL: the left operand (m x k, inner
 * dimension along its columns) gets pairs x, -x(1+d) in adjacent columns, the right operand
 * (k x n, inner dimension along its rows) gets pairs y, y(1+d') in adjacent rows, so that every
 * dot product of a left row with a right column is a sum of nearly cancelling pairs. */
typedef enum { DG_LEFT = 0, DG_RIGHT } dg_role;

typedef struct dg_params {
    dg_series series;
    int exponent;      /* i of T_pos/T_full, alpha of T_orth, centre decade of heavy/cauchy/cancel */
    double kappa;      /* T_orth: diagonal of D from 1/kappa to kappa (both attained); >= 1 */
    double decades;    /* DG_HEAVY: width of the magnitude range in decades (default 12 if 0) */
    double cancel_decades; /* DG_CANCEL: d = +-10^-u, u uniform in [0, this] (default 6 if 0) */
    dg_role role;      /* DG_CANCEL only */
    int reflections;   /* DG_ORTH: Householder reflections per factor; 0 = dimension - 1 (dense,
                        * close to Haar); small values are cheaper but leave D visible */
} dg_params;

/* Fills the m x n matrix a (leading dimension ld >= max(1, m)) of type t.
 * Complex types: T_pos/T_full/heavy/cauchy/cancel draw real and imaginary parts independently;
 * T_orth uses U * (D_kappa * diag(e^{i phi})) * V^T with random phases, which keeps the singular
 * values of the real case. Float data are generated in double and rounded once.
 * Returns 0, or -1 on invalid arguments (then nothing was written). */
int dg_fill(dg_rng *r, dg_type t, const dg_params *p, int64_t m, int64_t n, void *a, int64_t ld);

/* The T_orth construction on its own, in double: a (m x n, ld) = scale * U * diag(d) * V^T with
 * d of length min(m, n) given by the caller. Used by dg_fill and by tests that need to know d. */
int dg_orth_from_diag(dg_rng *r, int64_t m, int64_t n, const double *d, double scale,
                      int reflections, double *a, int64_t ld);

/* Name of a series for reports ("pos", "full", "orth", "heavy", "cauchy", "cancel"), and the
 * inverse (-1 if unknown). */
const char *dg_series_name(dg_series s);
int dg_series_from_name(const char *name);

#endif
