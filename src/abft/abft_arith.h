/* Per-element ABFT arithmetic, written once for the host (gcc, C17) and the GPU (nvcc, C++):
 * checksum weights, PEA/SEA thresholds, the alpha/beta combination, error location from a
 * weighted/unweighted syndrome pair and the correction rule. Equation numbers refer to the thesis
 * (shared/seeds/halder-abft-blas-gpgpu-thesis-de.txt), summarised in shared/design/method.md.
 * Kept to the common subset of C17 and C++: no designated initializers, _Complex, restrict, VLAs. */
#ifndef BLASFT_ABFT_ARITH_H
#define BLASFT_ABFT_ARITH_H

#include <math.h>
#include <stdint.h>

#if defined(__CUDACC__)
#define BLASFT_HD __host__ __device__
#else
#define BLASFT_HD
#endif

/* Same numbering as blasft_weights in blas_ft.h; repeated as plain ints so device code needs no
 * host header. */
#define BLASFT_W_NORMAL 0
#define BLASFT_W_AVERAGE 1
#define BLASFT_W_PERIODIC 2
#define BLASFT_W_EXPONENTIAL 3
#define BLASFT_W_LINEAR 4
#define BLASFT_W_MDR 5

/* Mantissa bits t (including the hidden bit) of the data; the unit roundoff is 2^-t. */
#define BLASFT_T_FLOAT 24
#define BLASFT_T_DOUBLE 53

/* Exponential weights 2^(i+1) (Tab. 6.2) overflow double beyond i = 1022 and make the weighted
 * checksum's rounding error swamp early positions; above this block size the exponent step is
 * shrunk to EXP_SPAN/bs so the largest weight stays 2^EXP_SPAN (still strictly increasing, so
 * still locating). For bs <= EXP_SPAN the weights are the thesis's exactly. */
#define BLASFT_EXP_SPAN 62

static inline BLASFT_HD double blasft_exp_step(int bs)
{
    return bs <= BLASFT_EXP_SPAN ? 1.0 : (double)BLASFT_EXP_SPAN / (double)bs;
}

/* Weight of position i (0-based) inside a block of size bs (Tab. 6.2). */
static inline BLASFT_HD double blasft_weight(int scheme, int i, int bs)
{
    switch (scheme) {
    case BLASFT_W_AVERAGE: return 1.0 / (double)bs;
    case BLASFT_W_PERIODIC: return (i & 1) ? -1.0 : 1.0;
    case BLASFT_W_EXPONENTIAL: return exp2((double)(i + 1) * blasft_exp_step(bs));
    case BLASFT_W_LINEAR: return (double)(i + 1);
    case BLASFT_W_MDR: return (double)(i + 1) / (double)bs;
    default: return 1.0;
    }
}

/* Whether the ratio weighted/unweighted syndrome identifies the position: only for weights that
 * differ at every position (normal/average are constant, periodic only gives the parity). */
static inline BLASFT_HD int blasft_weights_locate(int scheme)
{
    return scheme == BLASFT_W_EXPONENTIAL || scheme == BLASFT_W_LINEAR || scheme == BLASFT_W_MDR;
}

/* Position (0..len-1) of a single error inside a block vector from its syndromes: s_w / s_u is the
 * error's weight. Returns -1 when the ratio is not within a quarter weight step of a position
 * (several errors, or noise dominating a small syndrome): the consistency check of 6.4.3. */
static inline BLASFT_HD int blasft_locate(int scheme, double s_u, double s_w, int len, int bs)
{
    if (!blasft_weights_locate(scheme) || !(s_u != 0.0) || !isfinite(s_u) || !isfinite(s_w))
        return -1;
    double r = s_w / s_u, x;
    if (scheme == BLASFT_W_LINEAR)
        x = r - 1.0;
    else if (scheme == BLASFT_W_MDR)
        x = r * (double)bs - 1.0;
    else {
        if (!(r > 0.0))
            return -1;
        x = log2(r) / blasft_exp_step(bs) - 1.0;
    }
    double pos = nearbyint(x);
    if (!(fabs(x - pos) <= 0.25) || pos < 0.0 || pos >= (double)len)
        return -1;
    return (int)pos;
}

/* Error-free sum (Knuth's TwoSum) and a Neumaier-compensated accumulator: the checksum side adds
 * almost no rounding error of its own, so the threshold is spent on the GEMM's. */
typedef struct blasft_csum {
    double s, c;
} blasft_csum;

static inline BLASFT_HD void blasft_csum_add(blasft_csum *a, double x)
{
    double t = a->s + x;
    double bp = t - a->s;
    a->c += (a->s - (t - bp)) + (x - bp);
    a->s = t;
}

static inline BLASFT_HD double blasft_csum_value(const blasft_csum *a) { return a->s + a->c; }

/* gamma_n = n u / (1 - n u), Higham's worst-case factor for n roundings. */
static inline BLASFT_HD double blasft_gamma(double n, double u) { return n * u / (1.0 - n * u); }

/* The smallest normal number of the type whose unit roundoff is u */
static inline BLASFT_HD double blasft_smallest_normal(double u)
{
    return u > 0x1p-30 ? 0x1p-126 : 0x1p-1022; /* float or double */
}

/* The largest finite number of the type whose unit roundoff is u */
static inline BLASFT_HD double blasft_largest(double u)
{
    return u > 0x1p-30 ? 0x1.fffffep+127 : 0x1.fffffffffffffp+1023; /* float or double */
}

/* Whether one part c of a GEMM's element and a second computation v of it agree, bound being the
 * worst-case rounding of the two (2 blasft_element_rounding) and largest the type's largest
 * finite number. Beyond the range the order of the arithmetic decides the outcome, not a fault:
 *  - an Inf in c where v is within rounding of the largest number (of the same sign) is an
 *    overflow in rounding, as legitimate as v;
 *  - a v that is not finite overflowed in the second computation's own order (its partial sums
 *    are not the GEMM's: cuBLAS may scale an operand by alpha first and stay in range) or comes
 *    from NaN or Inf operands: it cannot judge c, which stands.
 * Otherwise a NaN or Inf in c against a finite v is apart (a fault, or a BLAS's overflow where
 * the value is finite: then v is the better value). */
static inline BLASFT_HD int blasft_parts_agree(double c, double v, double bound, double largest)
{
    if (fabs(c - v) <= bound || !isfinite(v))
        return 1;
    return isinf(c) && signbit(c) == signbit(v) && fabs(v) + bound >= largest;
}

/* Gradual underflow's absolute error in one element or checksum: u times the smallest normal
 * number per rounding (gam times it). A product or partial sum that underflows is scaled by alpha
 * afterwards (OpenBLAS and cuBLAS multiply the accumulated dot product by alpha), so the error
 * grows with |alpha|: alpha 1e300 over subnormal products gives results of normal magnitude that
 * carry it. */
static inline BLASFT_HD double blasft_underflow_rounding(double gam, double u, double abs_alpha)
{
    return gam * blasft_smallest_normal(u) * (1.0 + abs_alpha);
}

/* Worst-case rounding of one computed element c of alpha op(A) op(B) + beta C_old, in any
 * summation order, with or without FMA: gam alpha_mass + 2u (|beta| |c_old| + |c|), with
 * gam = gamma_{kP+2} and alpha_mass = |alpha| mass, mass >= sum |a b| (or a bound of it, such as
 * ||a|| ||b||), formed by the caller in whatever order keeps it in range (a tiny alpha times
 * huge products), plus gradual underflow's absolute error (blasft_underflow_rounding): without
 * it, results in the subnormal range (a subnormal alpha, or subnormal data) would be apart from
 * their recomputation by one unit of the last place. The host's and the GPU's second opinions
 * compare a recomputed element with the GEMM's against it. */
static inline BLASFT_HD double blasft_element_rounding(double gam, double u, double abs_alpha,
                                                       double alpha_mass, double abs_beta,
                                                       double abs_cold, double abs_c)
{
    /* alpha 0: no product (BLAS), whatever its mass (Inf or NaN operands) */
    return (abs_alpha == 0.0 ? 0.0 : gam * alpha_mass) + 2.0 * u * (abs_beta * abs_cold + abs_c) +
           blasft_underflow_rounding(gam, u, abs_alpha);
}

/* Gradual underflow's share of a checksum's syndrome, added to every method's first-tier
 * threshold: each element of C and the reference may be off by blasft_underflow_rounding
 * absolutely, which no threshold relative to the data covers; sum_abs_w >= the sum of the
 * checksum's |weights|. Without it, results in the subnormal range (a subnormal alpha, tiny data)
 * or of underflowed products scaled up by alpha flag blocks that the second tier then finds
 * correct. For results of normal magnitude it is far below one unit of the threshold's last
 * place. */
static inline BLASFT_HD double blasft_underflow_eps(double gam, double u, double sum_abs_w,
                                                    double abs_alpha)
{
    return (sum_abs_w + 1.0) * blasft_underflow_rounding(gam, u, abs_alpha);
}

/* Whether the statistical thresholds' squares (u^2 times squared sums of magnitude^2) stay normal
 * doubles for an element or checksum of this magnitude (|alpha| sum |a b| + |beta| |c_old|):
 * from 2^-400 to 2^400 they do, with room for the weights and k^3. 0 is in range (an exactly
 * zero element has a zero threshold). Outside, the worst-case bounds, linear in the data,
 * decide. */
static inline BLASFT_HD int blasft_squares_in_range(double magnitude)
{
    return magnitude == 0.0 || (magnitude >= 0x1p-400 && magnitude <= 0x1p400);
}

/* The first tier's test of one checksum: |syndrome| over its threshold. A NaN syndrome flags, and so
 * does a threshold that is not finite: the thresholds' sums of squares overflow for data of
 * magnitude around 2^270 and more, and an infinite threshold must not wave a block through (the
 * second tier's worst-case bounds are linear in the data and decide instead). Every check of such
 * a block flags, even an exactly zero syndrome, so that no pattern of a few flags passes rounding
 * off as one located error. */
static inline BLASFT_HD int blasft_over(double syndrome, double eps)
{
    return !(fabs(syndrome) <= eps) || !(eps < HUGE_VAL);
}

/* PEA: standard deviation bound of the rounding error of a dot product of length n whose summands
 * are all bounded by y, data with t mantissa bits: eq. 5.41 (without FMA, the +2n term) and 6.7
 * (with FMA). */
static inline BLASFT_HD double blasft_pea_sigma(double n, double y, int t, int fma)
{
    double v = n * (n + 1.0) * (n + 0.5) + (fma ? 0.0 : 2.0 * n);
    return sqrt(v / 24.0) * y * ldexp(1.0, -t);
}

/* Variance added by the final rounded addition c = alpha*d + beta*c_old of a black-box GEMM
 * (eq. 6.4/6.5): (1/8) 2^-2t c_new^2. */
static inline BLASFT_HD double blasft_blas_var_add(double c_new, int t)
{
    return 0.125 * ldexp(1.0, -2 * t) * c_new * c_new;
}

/* Threshold eps = omega * sigma (eq. 6.6) of a checksum element c = alpha*d + beta*c_old: var_d is
 * the variance bound of the product part d, var_add that of the scaling and final additions. */
static inline BLASFT_HD double blasft_pea_eps(double omega, double abs_alpha, double var_d,
                                              double var_add)
{
    /* a product part without variance (zero data) adds nothing, even where alpha^2 overflows
     * (Inf times 0 would make the threshold NaN and flag a correct block); a NaN stays NaN */
    return omega * sqrt((var_d == 0.0 ? 0.0 : abs_alpha * abs_alpha * var_d) + var_add);
}

/* SEA (Roy-Chowdhury/Banerjee, eq. 4.9; eq. 4.10 is the same with the roles of A and B swapped):
 * n inner dimension, bs block size, norm_b the norm of the other operand's vector, sum_norm_a the
 * sum of the block vectors' norms (times |weight|), norm_s the norm of the encoded checksum
 * vector, eps_mach = 2^-t. */
static inline BLASFT_HD double blasft_sea_eps(double n, double bs, double norm_b,
                                              double sum_norm_a, double norm_s, double eps_mach)
{
    return ((n + 2.0 * bs - 2.0) * norm_b * sum_norm_a + n * norm_s * norm_b) * eps_mach;
}

/* "PEA MAX p" (6.3.5), context-independent part: keeps the p largest |values| of a vector with
 * their positions, vals descending. Call with n_kept = number kept so far; returns the new count. */
static inline BLASFT_HD int blasft_topp_insert(double *vals, int64_t *pos, int n_kept, int p,
                                               double v, int64_t at)
{
    if (n_kept == p && !(v > vals[p - 1]))
        return n_kept;
    int i = n_kept < p ? n_kept++ : p - 1;
    while (i > 0 && vals[i - 1] < v) {
        vals[i] = vals[i - 1];
        pos[i] = pos[i - 1];
        i--;
    }
    vals[i] = v;
    pos[i] = at;
    return n_kept;
}

/* Context-dependent part, O(p^2): y >= |a_k * b_k| for every k, from the two top-p lists (na, nb
 * entries; a vector with fewer than p entries has listed all of them, its unlisted bound is 0). */
static inline BLASFT_HD double blasft_pea_y(const double *av, const int64_t *ap, int na, int full_a,
                                            const double *bv, const int64_t *bp, int nb, int full_b)
{
    if (na == 0 || nb == 0)
        return 0.0;
    double y = 0.0;
    for (int i = 0; i < na; i++)
        for (int j = 0; j < nb; j++)
            if (ap[i] == bp[j] && av[i] * bv[j] > y)
                y = av[i] * bv[j];
    /* a position missing from one list is bounded by that list's smallest entry */
    double amin = full_a ? 0.0 : av[na - 1], bmin = full_b ? 0.0 : bv[nb - 1];
    if (av[0] * bmin > y)
        y = av[0] * bmin;
    if (amin * bv[0] > y)
        y = amin * bv[0];
    return y;
}

/* NORM thresholds (docs/thresholds.md). Under the model of Higham & Mary (2019), every rounding
 * of a dot product of length n contributes delta * v with |delta| <= u mean-independent of the
 * earlier roundings and v an exact partial sum, product or result; by Cauchy-Schwarz every such
 * |v| <= ||a|| ||b||, whatever the summation order. The first-order error is then a martingale
 * with increments bounded by u ||a|| ||b||, and Azuma-Hoeffding gives
 * P(|e| > t) <= 2 exp(-t^2 / (2 sum c^2)) for sum c^2 the sum of the squared increment bounds. */
#define BLASFT_NORM_FALSE_ALARM 1e-12

/* Multiplier t / sqrt(sum c^2) for two-sided false-alarm probability p (7.52 for 1e-12). */
static inline BLASFT_HD double blasft_norm_omega(double p)
{
    return sqrt(2.0 * log(2.0 / p));
}

/* Number of rounding terms, each bounded by u |alpha| ||a|| ||b||, of alpha * (dot product of n
 * real products) + beta * c in a black-box GEMM: n products (none with FMA), n - 1 additions, the
 * scaling by alpha, the final addition and rounding (4 per part), and per panel of at least 32
 * along k a partial result scaled and added into C (blocked or split-K accumulation). */
static inline BLASFT_HD double blasft_norm_terms(double n, int parts)
{
    return n + 4.0 * (double)parts + 2.0 * ceil(n / 32.0);
}

/* Second-order factor: computed partial sums exceed the exact ones by at most gamma_n
 * = n u / (1 - n u) (Higham, Thm 3.1); squared, as it multiplies a sum of squares. */
static inline BLASFT_HD double blasft_norm_second_order(double n, double u)
{
    double g = n * u < 0.5 ? n * u / (1.0 - n * u) : 1.0;
    return (1.0 + g) * (1.0 + g);
}

/* PROJ thresholds (docs/thresholds.md). The syndrome's first-order rounding error is a sum of
 * delta_t v_t over the BLAS's roundings, v_t a partial sum (times a checksum weight). Under the
 * random-rounding model (each rounding error uniform within half an ulp, mean-independent of
 * the earlier ones: |delta| <= u, sub-Gaussian with variance proxy u^2/3), the syndrome is
 * sub-Gaussian with proxy V = (u^2/3) sum v_t^2 and P(|e| > w sqrt(V)) <= 2 exp(-w^2/2).
 * The energy sum v_t^2 of a checksum element is estimated per block from the exact weighted mean
 * walk plus BLASFT_PROJ_K random-sign projections of the deviation walks, the projected part
 * divided by BLASFT_PROJ_C (a lower-tail allowance for the estimate), and maximised over
 * accumulation with 1, 2, 4 and 8 interleaved lanes along k (BLASFT_PROJ_LANES_LOG2). */
#define BLASFT_PROJ_FALSE_ALARM 1e-12
/* Overridable at build time for measuring cheaper variants (docs/thresholds.md); C must then be
 * re-derived for K from the lower-tail bound there. */
#ifndef BLASFT_PROJ_K
#define BLASFT_PROJ_K 8
#endif
#ifndef BLASFT_PROJ_C
#define BLASFT_PROJ_C 0.25
#endif
#ifndef BLASFT_PROJ_LANES_LOG2
#define BLASFT_PROJ_LANES_LOG2 3
#endif
/* The GPU engine's PROJ walks (cuda/gpu_proj.cu) run on tensor cores, eight rows per checksum
 * vector: the mean walk and BLASFT_PROJ_GPU_K projections. C for that K from the same lower-tail
 * bound (docs/thresholds.md): 2 cosh(sqrt(4 ln(2/p) / (C K)))^(-K/2) = 2.1e-12 per check for
 * K = 7, C = 0.22 (the host's K = 8, C = 0.25: 2.7e-12). K = 3 (C = 0.105) flagged a T_orth block
 * whose walks were nearly of rank one in 6.3e9 fault-free checks on the H100. */
#define BLASFT_PROJ_GPU_K 7
#define BLASFT_PROJ_GPU_C 0.22
/* With PROJ the host engine calls the BLAS in slices of this many k (C += alpha A_p B_p), so the
 * order of the accumulation is known: each slice's partial sums restart at zero (0: one call). */
#ifndef BLASFT_PROJ_SLICE
#define BLASFT_PROJ_SLICE 256
#endif

/* The energy of one slice of an exactly known walk, largest over the lane counts L = 2^h, h = 0
 * .. BLASFT_PROJ_LANES_LOG2: e[h] (the lanes' sum of squared partial sums) + L (L - 1) times the
 * sum of the lanes' final partial sums squared (adding the L lanes rounds L - 1 more times, each
 * partial result at most L times that sum, Cauchy-Schwarz). lane[(1 << h) - 1 + l] is lane l of
 * h. */
static inline BLASFT_HD double blasft_proj_lane_energy(const double *e, const double *lane)
{
    double best = 0;
    for (int h = 0; h <= BLASFT_PROJ_LANES_LOG2; h++) {
        double L = (double)(1 << h), ends = 0;
        for (int l = 0; l < (1 << h); l++)
            ends += lane[(1 << h) - 1 + l] * lane[(1 << h) - 1 + l];
        best = fmax(best, e[h] + L * (L - 1.0) * ends);
    }
    return best;
}

/* Multiplier w of sqrt(V) for two-sided false-alarm probability p: sqrt(2 ln(2/p)) (7.52 for
 * 1e-12). */
static inline BLASFT_HD double blasft_proj_omega(double p)
{
    return sqrt(2.0 * log(2.0 / p));
}

/* Random sign (+1 or -1) number idx of the projection stream `seed` (splitmix64 finalizer), so
 * host and device draw the same signs from the same seed without shared state. */
static inline BLASFT_HD double blasft_proj_sign(uint64_t seed, uint64_t idx)
{
    uint64_t z = seed + (idx + 1) * 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    return (z >> 63) ? -1.0 : 1.0;
}

/* PROJ's threshold from the energies (host finish_proj and the GPU's scan share it): omega(1e-12)
 * times the square root of the variance proxy (u^2/3) sum v^2 of the roundings the syndrome
 * carries: the BLAS's walk (vd), the old C's scaling (osq = sum (w c_old)^2), the double encoded
 * vector's rounding (enc) and, while the reference is a rounded double GEMM, that GEMM's walk (c2;
 * 0 once it is exact); plus our compensated sums, 2 u_d refmag. t: the data's mantissa bits, nn:
 * the walk's length k, aa and bb: |alpha| and |beta|. */
static inline BLASFT_HD double blasft_proj_eps(int t, double nn, double aa, double bb, double vd,
                                               double osq, double enc, double c2, double refmag)
{
    const double u = ldexp(1.0, -t), ur = ldexp(1.0, -BLASFT_T_DOUBLE);
    double var = u * u / 3.0 * (blasft_norm_second_order(nn, u) * aa * aa * vd + 3.0 * bb * bb * osq);
    var += ur * ur / 3.0 * aa * aa * enc;
    if (c2 != 0.0) /* NaN data: a NaN threshold, which flags */
        var += ur * ur / 3.0 * blasft_norm_second_order(nn, ur) * aa * aa * c2;
    return blasft_proj_omega(BLASFT_PROJ_FALSE_ALARM) * sqrt(var) + 2.0 * ur * refmag;
}

/* Rows a block needs for PROJ's estimate: below them the engines use NORM's order-free bound.
 * A block dominated by one row has deviations proportional to it (they sum to zero), so each
 * random-sign projection vanishes with probability 2^-(rows - 1) and all K of them with
 * 2^-K(rows - 1): at least 40 halvings keeps that under 1e-12. A single row also has no deviation
 * to average the accumulation order over (docs/thresholds.md, "PROJ on the GPU"). */
static inline BLASFT_HD int blasft_proj_min_rows(int k_proj) { return 1 + (40 + k_proj - 1) / k_proj; }

/* Seed of the next GEMM's projection signs (abft_threshold.c; host code only). Fresh per GEMM:
 * a bad draw must not repeat on every call with the same data. */
uint64_t blasft_proj_next_seed(void);

/* Correction rule (method.md 3): subtracting the syndrome keeps the element's precision only when
 * the error is small against the value; an exponent flip, Inf or NaN needs the element recomputed.
 * Nor does subtraction suit an error near the threshold: the syndrome carries its checksum's
 * rounding (up to about the threshold), which would stay in the element, a large part of the
 * error itself; the recomputed (exact) element has none. c is the faulty value, s = reference -
 * recomputed (so c + s is the subtraction result), thr the checksum's threshold. */
#define BLASFT_SUBTRACT_MAX_REL 0.0625
#define BLASFT_SUBTRACT_MIN_THR 8.0
static inline BLASFT_HD int blasft_correct_by_recompute(double c, double s, double thr)
{
    /* nor where the value is outside the thresholds' range (a subnormal alpha, data of 2^500):
     * the syndrome's own rounding is no longer small against it */
    if (!isfinite(c) || !isfinite(s) || !blasft_squares_in_range(fabs(c)) ||
        !blasft_squares_in_range(fabs(c + s)))
        return 1;
    return fabs(s) > BLASFT_SUBTRACT_MAX_REL * fabs(c + s) || !(fabs(s) >= BLASFT_SUBTRACT_MIN_THR * thr);
}

#endif
