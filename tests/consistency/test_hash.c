/* The change hash: every single-bit change inside the region is seen, nothing outside it counts,
 * structured changes (negation, swaps, shifted data) are seen, the digest does not depend on the
 * thread count, and the settings parser names malformed values. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "consistency/hash.h"
#include "datagen.h"

#include <stdlib.h>
#include <string.h>

static blasft_hash128 h2d(const void *p, size_t rb, size_t cols, size_t ldb, int t)
{
    return blasft_hash2d(p, rb, cols, ldb, t);
}

static void fill(void *p, size_t bytes, uint64_t seed)
{
    dg_rng r;
    dg_seed(&r, seed);
    for (size_t i = 0; i < bytes; i++)
        ((unsigned char *)p)[i] = (unsigned char)dg_next(&r);
}

/* every bit of the region, for shapes with partial words (S, odd rows) and ld > rows */
static void every_bit_flip(void);
static void test_every_bit_flip(void **state)
{
    (void)state;
    int simd = blasft_hash_use_simd(1);
    every_bit_flip();
    if (simd) { /* and the scalar loop */
        blasft_hash_use_simd(0);
        every_bit_flip();
        blasft_hash_use_simd(1);
    }
}

static void every_bit_flip(void)
{
    const size_t shapes[][3] = {{13 * 8, 7, 16 * 8}, {5 * 4, 9, 6 * 4}, {4, 3, 4}, {16, 1, 16},
                                {3 * 16, 5, 3 * 16}, {8 * 70, 3, 8 * 71}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        size_t rb = shapes[s][0], cols = shapes[s][1], ldb = shapes[s][2];
        unsigned char *buf = malloc(ldb * cols);
        fill(buf, ldb * cols, 11 + s);
        blasft_hash128 ref = h2d(buf, rb, cols, ldb, 1);
        for (size_t j = 0; j < cols; j++)
            for (size_t i = 0; i < ldb; i++)
                for (int b = 0; b < 8; b++) {
                    buf[j * ldb + i] ^= (unsigned char)(1u << b);
                    bool inside = i < rb;
                    bool same = blasft_hash_equal(ref, h2d(buf, rb, cols, ldb, 1));
                    if (inside)
                        assert_false(same);
                    else
                        assert_true(same); /* padding between rb and ld is not part of it */
                    buf[j * ldb + i] ^= (unsigned char)(1u << b);
                }
        assert_true(blasft_hash_equal(ref, h2d(buf, rb, cols, ldb, 1)));
        free(buf);
    }
}

/* changes of many elements at once that simple checksums miss */
static void test_structured_changes(void **state)
{
    (void)state;
    const size_t rows = 37, cols = 29, ld = 41;
    double *a = malloc(sizeof(double) * ld * cols);
    dg_rng r;
    dg_seed(&r, 5);
    for (size_t i = 0; i < ld * cols; i++)
        a[i] = dg_normal(&r);
    blasft_hash128 ref = h2d(a, rows * 8, cols, ld * 8, 1);
    /* negate all: every sign bit flips (an even number per lane) */
    for (size_t j = 0; j < cols; j++)
        for (size_t i = 0; i < rows; i++)
            a[j * ld + i] = -a[j * ld + i];
    assert_false(blasft_hash_equal(ref, h2d(a, rows * 8, cols, ld * 8, 1)));
    for (size_t j = 0; j < cols; j++)
        for (size_t i = 0; i < rows; i++)
            a[j * ld + i] = -a[j * ld + i];
    assert_true(blasft_hash_equal(ref, h2d(a, rows * 8, cols, ld * 8, 1)));
    /* swaps of two elements: same lane (8 apart), other lanes, across columns */
    const size_t pairs[][2] = {{0, 8}, {1, 2}, {3, 3 * ld + 3}, {0, 16}, {5, ld + 5}};
    for (size_t p = 0; p < sizeof pairs / sizeof pairs[0]; p++) {
        double *x = &a[pairs[p][0]], *y = &a[pairs[p][1]], t = *x;
        *x = *y, *y = t;
        assert_false(blasft_hash_equal(ref, h2d(a, rows * 8, cols, ld * 8, 1)));
        *y = *x, *x = t;
    }
    /* two elements of one lane changed by the same xor (cancels in a plain xor-fold) */
    uint64_t u, v;
    memcpy(&u, &a[0], 8), memcpy(&v, &a[8], 8);
    u ^= 1ull << 63, v ^= 1ull << 63;
    double su = a[0], sv = a[8];
    memcpy(&a[0], &u, 8), memcpy(&a[8], &v, 8);
    assert_false(blasft_hash_equal(ref, h2d(a, rows * 8, cols, ld * 8, 1)));
    a[0] = su, a[8] = sv;
    /* zeroing, and the data shifted by one element */
    double *z = calloc(ld * cols, sizeof(double));
    assert_false(blasft_hash_equal(ref, h2d(z, rows * 8, cols, ld * 8, 1)));
    assert_false(blasft_hash_equal(ref, h2d(a + 1, rows * 8, cols, ld * 8, 1)));
    free(z);
    free(a);
}

/* the same digest on 1, 2, 3 and 7 threads, above the parallel threshold; a change in the last
 * chunk is seen in parallel too */
static void test_threads_agree(void **state)
{
    (void)state;
    const size_t rb = 1000 * 8 + 4, cols = 700, ldb = rb + 12;
    unsigned char *buf = malloc(ldb * cols);
    fill(buf, ldb * cols, 99);
    blasft_hash128 ref = h2d(buf, rb, cols, ldb, 1);
    for (int t = 2; t <= 7; t += t == 3 ? 4 : 1)
        assert_true(blasft_hash_equal(ref, h2d(buf, rb, cols, ldb, t)));
    buf[(cols - 1) * ldb + rb - 1] ^= 0x10;
    assert_false(blasft_hash_equal(ref, h2d(buf, rb, cols, ldb, 3)));
    free(buf);
}

/* empty regions hash to a value without reading memory; different shapes differ */
static void test_empty_and_shapes(void **state)
{
    (void)state;
    double a[64] = {0};
    blasft_hash128 e0 = h2d(NULL, 0, 5, 8, 1), e1 = h2d(NULL, 8, 0, 8, 1);
    assert_false(blasft_hash_equal(e0, e1));
    assert_false(blasft_hash_equal(h2d(a, 16, 4, 16, 1), h2d(a, 32, 2, 32, 1)));
}

/* the vector inner loop (where the CPU has AVX-512) and the scalar one give the same digest,
 * for columns shorter and longer than a block of lanes, unaligned starts, partial words */
static void test_vector_loop_same_digest(void **state)
{
    (void)state;
    const size_t shapes[][3] = {{8 * 31, 40, 8 * 33}, {8 * 32, 40, 8 * 32}, {8 * 97 + 4, 300, 8 * 99},
                                {8 * 4096, 70, 8 * 4097}, {16 * 1000, 90, 16 * 1001}, {4, 5000, 4}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        size_t rb = shapes[s][0], cols = shapes[s][1], ldb = shapes[s][2];
        unsigned char *buf = malloc(ldb * cols + 1);
        fill(buf, ldb * cols + 1, 500 + s);
        int had = blasft_hash_use_simd(1);
        blasft_hash128 v = h2d(buf + 1, rb, cols, ldb, 2); /* +1: unaligned words */
        blasft_hash_use_simd(0);
        blasft_hash128 sc = h2d(buf + 1, rb, cols, ldb, 2);
        assert_true(blasft_hash_equal(v, sc));
        /* and a change deep inside a block is seen by both */
        buf[1 + (cols / 2) * ldb + rb / 2] ^= 0x80;
        assert_false(blasft_hash_equal(sc, h2d(buf + 1, rb, cols, ldb, 2)));
        blasft_hash_use_simd(1);
        assert_false(blasft_hash_equal(v, h2d(buf + 1, rb, cols, ldb, 2)));
        blasft_hash_use_simd(had);
        free(buf);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_bit_flip),  cmocka_unit_test(test_structured_changes),
        cmocka_unit_test(test_threads_agree),   cmocka_unit_test(test_empty_and_shapes),
        cmocka_unit_test(test_vector_loop_same_digest),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
