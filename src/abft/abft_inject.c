/* BLASFT_INJECT: parser and bit flips (see abft_inject.h for the syntax). */
#include "abft/abft_inject.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const accepted =
    "faults=<n>, bits=sign|exponent|mantissa|any|<i>-<j>, site=output|inner|encoder, seed=<s>, "
    "pattern=random|row|column|block (comma-separated)";

static int parse_u64(const char *v, size_t len, uint64_t *out)
{
    if (len == 0 || len > 20)
        return -1;
    uint64_t r = 0;
    for (size_t i = 0; i < len; i++) {
        if (v[i] < '0' || v[i] > '9')
            return -1;
        r = r * 10 + (uint64_t)(v[i] - '0');
    }
    *out = r;
    return 0;
}

static int is(const char *v, size_t len, const char *word)
{
    return strlen(word) == len && strncmp(v, word, len) == 0;
}

int blasft_inject_parse(const char *s, blasft_inject_spec *out, char *err, size_t errlen)
{
    blasft_inject_spec sp;
    memset(&sp, 0, sizeof sp);
    sp.faults = 1;
    sp.bits = BLASFT_BITS_MANTISSA;
    sp.site = BLASFT_SITE_OUTPUT;
    sp.pattern = BLASFT_PATTERN_RANDOM;
    memset(out, 0, sizeof *out);
    if (!s || !*s)
        return 0;
    const char *p = s;
    while (*p) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        const char *eq = memchr(p, '=', len);
        if (!eq) {
            snprintf(err, errlen, "'%.*s' is not key=value; accepted: %s", (int)len, p, accepted);
            return -1;
        }
        size_t kl = (size_t)(eq - p), vl = len - kl - 1;
        const char *v = eq + 1;
        uint64_t u;
        int bad = 0;
        if (is(p, kl, "faults")) {
            bad = parse_u64(v, vl, &u) || u > 1000000;
            sp.faults = (int)u;
        } else if (is(p, kl, "seed")) {
            bad = parse_u64(v, vl, &sp.seed);
        } else if (is(p, kl, "site")) {
            if (is(v, vl, "output"))
                sp.site = BLASFT_SITE_OUTPUT;
            else if (is(v, vl, "inner"))
                sp.site = BLASFT_SITE_INNER;
            else if (is(v, vl, "encoder"))
                sp.site = BLASFT_SITE_ENCODER;
            else
                bad = 1;
        } else if (is(p, kl, "pattern")) {
            if (is(v, vl, "random"))
                sp.pattern = BLASFT_PATTERN_RANDOM;
            else if (is(v, vl, "row"))
                sp.pattern = BLASFT_PATTERN_ROW;
            else if (is(v, vl, "column"))
                sp.pattern = BLASFT_PATTERN_COLUMN;
            else if (is(v, vl, "block"))
                sp.pattern = BLASFT_PATTERN_BLOCK;
            else
                bad = 1;
        } else if (is(p, kl, "bits")) {
            const char *dash = memchr(v, '-', vl);
            uint64_t lo, hi;
            if (is(v, vl, "sign"))
                sp.bits = BLASFT_BITS_SIGN;
            else if (is(v, vl, "exponent"))
                sp.bits = BLASFT_BITS_EXPONENT;
            else if (is(v, vl, "mantissa"))
                sp.bits = BLASFT_BITS_MANTISSA;
            else if (is(v, vl, "any"))
                sp.bits = BLASFT_BITS_ANY;
            else if (dash && !parse_u64(v, (size_t)(dash - v), &lo) &&
                     !parse_u64(dash + 1, vl - (size_t)(dash - v) - 1, &hi) && lo <= hi && hi < 64) {
                sp.bits = BLASFT_BITS_RANGE;
                sp.bit_lo = (int)lo;
                sp.bit_hi = (int)hi;
            } else
                bad = 1;
        } else {
            snprintf(err, errlen, "unknown key '%.*s'; accepted: %s", (int)kl, p, accepted);
            return -1;
        }
        if (bad) {
            snprintf(err, errlen, "bad value '%.*s' for %.*s; accepted: %s", (int)vl, v, (int)kl, p,
                     accepted);
            return -1;
        }
        p = end ? end + 1 : p + len;
    }
    *out = sp;
    return 0;
}

static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
static char cache_str[512];
static int cache_valid;
static blasft_inject_spec cache_spec;

const blasft_inject_spec *blasft_inject_get(const char *s)
{
    pthread_mutex_lock(&cache_lock);
    if (!cache_valid || strncmp(cache_str, s, sizeof cache_str) != 0) {
        char err[512];
        if (blasft_inject_parse(s, &cache_spec, err, sizeof err) != 0)
            fprintf(stderr, "libblas_ft: BLASFT_INJECT='%s' is not valid: %s; injecting nothing\n",
                    s, err);
        snprintf(cache_str, sizeof cache_str, "%s", s);
        cache_valid = 1;
    }
    pthread_mutex_unlock(&cache_lock);
    return &cache_spec;
}

static uint64_t splitmix(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static uint64_t below(uint64_t *s, uint64_t n) { return n ? splitmix(s) % n : 0; }

uint64_t blasft_inject_next_stream(const blasft_inject_spec *spec)
{
    static uint64_t calls;
    uint64_t c = __atomic_fetch_add(&calls, 1, __ATOMIC_RELAXED);
    uint64_t s = spec->seed ^ (c * 0xd1342543de82ef95ULL);
    splitmix(&s);
    return s;
}

void blasft_flip_bit(blasft_type t, void *c, int64_t idx, int part, int bit)
{
    if (t == BLASFT_TYPE_S || t == BLASFT_TYPE_C) {
        uint32_t *w = (uint32_t *)c + (t == BLASFT_TYPE_C ? 2 * idx + part : idx);
        *w ^= (uint32_t)1 << (bit & 31);
    } else {
        uint64_t *w = (uint64_t *)c + (t == BLASFT_TYPE_Z ? 2 * idx + part : idx);
        *w ^= (uint64_t)1 << (bit & 63);
    }
}

double blasft_flip_float_bit_of(double v, int bit)
{
    float f = (float)v, g = f;
    uint32_t u;
    memcpy(&u, &g, 4);
    u ^= (uint32_t)1 << (bit & 31);
    memcpy(&g, &u, 4);
    if (!isfinite(g))
        return g;
    return v + ((double)g - (double)f);
}

/* half's word of f rounded to nearest even (C17 has no half type) */
static uint16_t half_word(float f)
{
    uint32_t x;
    memcpy(&x, &f, 4);
    const uint32_t sign = (x >> 16) & 0x8000u, ax = x & 0x7fffffffu;
    if (ax >= 0x7f800000u) /* Inf, NaN (quiet) */
        return (uint16_t)(sign | 0x7c00u | (ax > 0x7f800000u ? 0x200u : 0u));
    if (ax >= 0x477ff000u) /* 65520 and more round to Inf */
        return (uint16_t)(sign | 0x7c00u);
    if (ax < 0x38800000u) { /* below 2^-14: subnormal steps of 2^-24, exact scaling */
        float a;
        memcpy(&a, &ax, 4);
        return (uint16_t)(sign | (uint32_t)nearbyintf(a * 0x1p24f));
    }
    const uint32_t r = ax - 0x38000000u; /* the exponent's bias 127 to 15 */
    return (uint16_t)(sign | ((r + 0xfffu + ((r >> 13) & 1u)) >> 13));
}

static float half_value(uint16_t h)
{
    const int e = (h >> 10) & 0x1f, m = h & 0x3ff;
    const float v = e == 0 ? ldexpf((float)m, -24)
                    : e == 31 ? (m ? NAN : INFINITY)
                              : ldexpf((float)(m | 0x400), e - 25);
    return (h & 0x8000u) ? -v : v;
}

float blasft_flip_half_bit_of(float v, int bit, int bf16)
{
    float r, g;
    if (bf16) {
        uint32_t u;
        memcpy(&u, &v, 4);
        /* rounded to nearest even (NaN kept as it is) */
        const uint32_t h = isnan(v) ? u >> 16 : (u + 0x7FFFu + ((u >> 16) & 1u)) >> 16;
        const uint32_t rr = h << 16, gg = (h ^ (1u << (bit & 15))) << 16;
        memcpy(&r, &rr, 4);
        memcpy(&g, &gg, 4);
    } else {
        const uint16_t h = half_word(v);
        r = half_value(h);
        g = half_value((uint16_t)(h ^ (1u << (bit & 15))));
    }
    if (!isfinite(g) || !isfinite(r))
        return g;
    return (v - r) + g; /* v - r exact; v + (g - r) would lose a g far below r */
}

static int pick_bit(const blasft_inject_spec *spec, uint64_t *st, blasft_type t)
{
    int single = t == BLASFT_TYPE_S || t == BLASFT_TYPE_C;
    int mant = single ? 23 : 52, width = single ? 32 : 64;
    int lo, hi;
    switch (spec->bits) {
    case BLASFT_BITS_SIGN: lo = hi = width - 1; break;
    case BLASFT_BITS_EXPONENT: lo = mant; hi = width - 2; break;
    case BLASFT_BITS_MANTISSA: lo = 0; hi = mant - 1; break;
    case BLASFT_BITS_ANY: lo = 0; hi = width - 1; break;
    default:
        lo = spec->bit_lo < width ? spec->bit_lo : width - 1;
        hi = spec->bit_hi < width ? spec->bit_hi : width - 1;
        break;
    }
    return lo + (int)below(st, (uint64_t)(hi - lo + 1));
}

static int64_t gcd64(int64_t a, int64_t b)
{
    while (b) {
        int64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

int blasft_inject_flip(const blasft_inject_spec *spec, uint64_t *st, blasft_type t, void *c,
                       int64_t ldc, int64_t m, int64_t n, int bs)
{
    return blasft_inject_flip_as(spec, st, t, t, c, ldc, m, n, bs);
}

/* Flips bit `bit` (a position of type `bits`) of element idx, part `part`, of c stored as t. */
static void flip_as(blasft_type bits, blasft_type t, void *c, int64_t idx, int part, int bit)
{
    int bits_single = bits == BLASFT_TYPE_S || bits == BLASFT_TYPE_C;
    int t_single = t == BLASFT_TYPE_S || t == BLASFT_TYPE_C;
    if (!bits_single || t_single) { /* bits of the stored type itself */
        blasft_flip_bit(t, c, idx, part, bit);
        return;
    }
    double *v = (double *)c + (t == BLASFT_TYPE_Z ? 2 * idx + part : idx);
    *v = blasft_flip_float_bit_of(*v, bit);
}

int blasft_inject_flip_as(const blasft_inject_spec *spec, uint64_t *st, blasft_type bits,
                          blasft_type t, void *c, int64_t ldc, int64_t m, int64_t n, int bs)
{
    int64_t hit_i[64], hit_j[64]; /* the random pattern's first elements, not hit twice */
    if (spec->faults <= 0 || m <= 0 || n <= 0)
        return 0;
    int P = t == BLASFT_TYPE_C || t == BLASFT_TYPE_Z ? 2 : 1;
    /* the anchor: a random element; row/column bursts and block faults stay in its block */
    int64_t i = (int64_t)below(st, (uint64_t)m), j = (int64_t)below(st, (uint64_t)n);
    int64_t bi0 = i / bs * bs, bj0 = j / bs * bs;
    int64_t bi1 = bi0 + bs < m ? bi0 + bs : m, bj1 = bj0 + bs < n ? bj0 + bs : n;
    /* every flip lands on an element of its own (two flips of one bit would cancel): a burst is
     * at most the block's row or column long, the block pattern at most the block's size */
    const int64_t bh = bi1 - bi0, bw = bj1 - bj0, area = bh * bw;
    int64_t count = spec->faults;
    if (spec->pattern == BLASFT_PATTERN_ROW && count > bw)
        count = bw;
    else if (spec->pattern == BLASFT_PATTERN_COLUMN && count > bh)
        count = bh;
    else if (spec->pattern == BLASFT_PATTERN_BLOCK && count > area)
        count = area;
    else if (spec->pattern == BLASFT_PATTERN_RANDOM && count > m * n)
        count = m * n;
    /* the block pattern walks the block with a stride coprime to its size: distinct elements */
    int64_t start = (int64_t)below(st, (uint64_t)area), stride = 1 + (int64_t)below(st, (uint64_t)area);
    while (gcd64(stride, area) != 1)
        stride++;
    int done = 0;
    for (int64_t f = 0; f < count; f++) {
        int64_t fi = i, fj = j;
        switch (spec->pattern) {
        case BLASFT_PATTERN_RANDOM:
            if (f > 0) { /* a fresh element, drawn again where it was hit already */
                int again;
                do {
                    fi = (int64_t)below(st, (uint64_t)m);
                    fj = (int64_t)below(st, (uint64_t)n);
                    again = 0;
                    for (int64_t q = 0; q < f && q < 64 && !again; q++)
                        again = hit_i[q] == fi && hit_j[q] == fj;
                } while (again);
            }
            if (f < 64) {
                hit_i[f] = fi;
                hit_j[f] = fj;
            }
            break;
        case BLASFT_PATTERN_ROW: /* consecutive columns, wrapping inside the block */
            fj = bj0 + (j - bj0 + f) % bw;
            break;
        case BLASFT_PATTERN_COLUMN:
            fi = bi0 + (i - bi0 + f) % bh;
            break;
        case BLASFT_PATTERN_BLOCK: {
            int64_t e = (start + f * stride) % area;
            fi = bi0 + e % bh;
            fj = bj0 + e / bh;
            break;
        }
        }
        int part = P == 2 ? (int)below(st, 2) : 0;
        flip_as(bits, t, c, fi + fj * ldc, part, pick_bit(spec, st, bits));
        done++;
    }
    return done;
}

int blasft_inject_flip_checksums(const blasft_inject_spec *spec, uint64_t *st, blasft_type t,
                                 double *v, int64_t n)
{
    int done = 0;
    /* distinct entries: a walk with a stride coprime to n */
    int64_t start = (int64_t)below(st, (uint64_t)n), stride = 1 + (int64_t)below(st, (uint64_t)n);
    while (n > 0 && gcd64(stride, n) != 1)
        stride++;
    for (int64_t f = 0; f < spec->faults && f < n; f++) {
        /* the bit class of the data type, placed in the double's fields of the same kind */
        int single = t == BLASFT_TYPE_S || t == BLASFT_TYPE_C, bit = pick_bit(spec, st, t);
        if (single)
            bit = bit == 31 ? 63 : bit >= 23 ? 52 + (bit - 23) * 10 / 8 : bit + 29;
        blasft_flip_bit(BLASFT_TYPE_D, v, (start + f * stride) % n, 0, bit);
        done++;
    }
    return done;
}
