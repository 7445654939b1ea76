/* The threaded chunk-wise transfers (chunkcopy.h, devmem upload_chunks/download_chunks of the
 * host backend) against a plain element-by-element copy, for awkward shapes (partial words of
 * S with odd rows, 16-byte Z-like rows, ld > rows, one column, no columns, regions of many
 * chunks), several thread counts; chunk digests against blasft_hash2d; only changed chunks
 * copied; and the cache's deferred check (speculative use, verify, redo after a change). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "consistency/chunkcopy.h"
#include "consistency/pool.h"
#include "datagen.h"
#include "test_support.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static void fill(unsigned char *p, size_t n, uint64_t seed)
{
    dg_rng r;
    dg_seed(&r, seed);
    for (size_t i = 0; i < n; i++)
        p[i] = (unsigned char)dg_next(&r);
}

/* the dense copy, element by element: the oracle */
static void plain_pack(unsigned char *dst, const unsigned char *src, size_t rb, size_t cols,
                       size_t ldb)
{
    for (size_t j = 0; j < cols; j++)
        for (size_t i = 0; i < rb; i++)
            dst[j * rb + i] = src[j * ldb + i];
}

typedef struct shape {
    size_t rb, cols, ldb;
} shape;

static const shape shapes[] = {
    {4, 1, 4},            /* one S element */
    {12, 7, 20},          /* S, 3 rows, ld 5 */
    {8 * 97, 13, 8 * 101},
    {4 * 70001, 3, 4 * 70003},      /* S columns over a chunk, partial words */
    {16 * 3, 40000, 16 * 5},        /* Z-like rows, many columns: chunks across columns */
    {8 * 4096, 130, 8 * 4099},      /* D, 16 chunks, ld > rows */
    {8 * 5, 0, 8 * 5},              /* no columns */
    {4 * 1, 300000, 4 * 1},         /* S, one row: every column a partial word */
};

static void test_pack_unpack_match_plain(void **state)
{
    (void)state;
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
        const shape *sh = &shapes[s];
        size_t host_bytes = sh->ldb * (sh->cols ? sh->cols : 1), dense = sh->rb * sh->cols;
        unsigned char *src = malloc(host_bytes), *want = malloc(dense + 1),
                      *got = malloc(dense + 1), *back = malloc(host_bytes);
        fill(src, host_bytes, 100 + s);
        plain_pack(want, src, sh->rb, sh->cols, sh->ldb);
        size_t chunks = blasft_hash_chunk_count(sh->rb, sh->cols);
        blasft_hash128 *dig = malloc(sizeof *dig * (chunks + 1));
        const int threads[] = {1, 3, 16};
        for (int t = 0; t < 3; t++) {
            memset(got, 0x5a, dense + 1);
            blasft_chunk_pass p = {src, sh->rb, sh->cols, sh->ldb, got, 0, NULL, dig, NULL, 0,
                                   threads[t]};
            assert_int_equal(blasft_chunks_up(&p, chunks), chunks);
            assert_memory_equal(got, want, dense);
            assert_int_equal(got[dense], 0x5a); /* nothing past the dense copy */
            /* the chunk digests add up to the region's hash */
            blasft_hash128 h = blasft_hash_combine(dig, chunks, sh->rb, sh->cols);
            assert_true(blasft_hash_equal(h, blasft_hash2d(src, sh->rb, sh->cols, sh->ldb, 1)));
            /* unpack into a buffer with other bytes in the padding: those stay */
            fill(back, host_bytes, 999);
            unsigned char *pad = malloc(host_bytes);
            memcpy(pad, back, host_bytes);
            blasft_hash128 *dd = malloc(sizeof *dd * (chunks + 1));
            blasft_chunk_pass q = {back, sh->rb, sh->cols, sh->ldb, got, 0, NULL, dd, NULL, 0,
                                   threads[t]};
            blasft_chunks_down(&q, chunks);
            for (size_t j = 0; j < sh->cols; j++)
                for (size_t i = 0; i < sh->ldb; i++)
                    assert_int_equal(back[j * sh->ldb + i],
                                     i < sh->rb ? src[j * sh->ldb + i] : pad[j * sh->ldb + i]);
            for (size_t c = 0; c < chunks; c++)
                assert_true(blasft_hash_equal(dd[c], dig[c]));
            free(dd);
            free(pad);
        }
        /* a range that starts and ends inside columns */
        if (dense > 10) {
            size_t lo = dense / 3 + 1, hi = dense - dense / 5;
            memset(got, 0, dense);
            blasft_pack_range(got, src, sh->rb, sh->ldb, lo, hi);
            assert_memory_equal(got, want + lo, hi - lo);
        }
        free(dig);
        free(src);
        free(want);
        free(got);
        free(back);
    }
}

/* chunk spans tile the dense copy exactly, in order */
static void test_chunk_spans(void **state)
{
    (void)state;
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
        const shape *sh = &shapes[s];
        size_t chunks = blasft_hash_chunk_count(sh->rb, sh->cols), at = 0;
        for (size_t c = 0; c < chunks; c++) {
            size_t lo, hi;
            blasft_hash_chunk_span(sh->rb, sh->cols, c, &lo, &hi);
            assert_int_equal(lo, at);
            assert_true(hi > lo && hi - lo <= ((size_t)256 << 10));
            at = hi;
        }
        assert_int_equal(at, sh->rb * sh->cols);
    }
}

static int hook_calls;
static void count_hook(void *arg)
{
    (void)arg;
    hook_calls++;
}

/* upload_chunks with old digests copies exactly the chunks that changed, the hook before the
 * first write and only when something is written */
static void test_only_changed_chunks_copied(void **state)
{
    (void)state;
    blasft_devmem *dev = blasft_devmem_host_create(-1);
    const size_t rb = 8 * 5000, cols = 300, ldb = 8 * 5003; /* D, about 46 chunks */
    unsigned char *host = malloc(ldb * cols);
    fill(host, ldb * cols, 7);
    void *d;
    assert_int_equal(dev->ops->alloc(dev, rb * cols, &d), 0);
    size_t chunks = blasft_hash_chunk_count(rb, cols), copied;
    blasft_hash128 *dig = malloc(sizeof *dig * chunks);
    blasft_devmem_hook hook = {count_hook, NULL};
    hook_calls = 0;
    assert_int_equal(dev->ops->upload_chunks(dev, d, host, rb, cols, ldb, NULL, dig, &copied, &hook), 0);
    assert_int_equal(copied, chunks);
    assert_int_equal(hook_calls, 1);
    blasft_cache_key k = {host, BLASFT_TYPE_D, 5000, 300, 5003};
    assert_true(test_same_as_host(&k, d));
    /* unchanged: nothing copied, no hook */
    assert_int_equal(dev->ops->upload_chunks(dev, d, host, rb, cols, ldb, dig, dig, &copied, &hook), 0);
    assert_int_equal(copied, 0);
    assert_int_equal(hook_calls, 1);
    /* two elements in different chunks, one in the padding (not part of the region) */
    ((double *)host)[3 + 7 * 5003] = 12345.678; /* random bytes: assigned, not added to */
    ((double *)host)[4999 + 250 * 5003] = -0.0;
    ((double *)host)[5001 + 100 * 5003] = 1e300;
    blasft_devmem_host_stats before, after;
    blasft_devmem_host_stats_get(dev, &before);
    assert_int_equal(dev->ops->upload_chunks(dev, d, host, rb, cols, ldb, dig, dig, &copied, &hook), 0);
    blasft_devmem_host_stats_get(dev, &after);
    assert_int_equal(copied, 2);
    assert_int_equal(hook_calls, 2);
    assert_true(after.upload_bytes - before.upload_bytes <= 2 * ((size_t)256 << 10));
    assert_true(test_same_as_host(&k, d));
    dev->ops->free(dev, d);
    dev->ops->destroy(dev);
    free(dig);
    free(host);
}

/* the cache's deferred check: after a check that found no change the next reader may start at
 * once; verify says whether what it computed stands, and after a change the copy is current */
static void test_deferred_check(void **state)
{
    (void)state;
    blasft_devmem *dev = blasft_devmem_host_create(-1);
    blasft_cache_opts o = {BLASFT_CACHE_HASH, 64 << 20, 2, NULL};
    blasft_cache *c = blasft_cache_create(dev, &o);
    const int64_t rows = 3001, cols = 257, ld = 3004; /* D, several chunks */
    double *a = malloc(8 * (size_t)(ld * cols));
    fill((unsigned char *)a, 8 * (size_t)(ld * cols), 3);
    blasft_cache_key k = {a, BLASFT_TYPE_D, rows, cols, ld};
    blasft_cache_ref r;
    blasft_devmem_hook hook = {count_hook, NULL};
    /* first use uploads, second checks (no change): neither is deferred */
    for (int i = 0; i < 2; i++) {
        assert_int_equal(blasft_cache_acquire(c, &k, BLASFT_CACHE_DEFER_CHECK, &r), 0);
        assert_false(r.did & BLASFT_CACHE_DID_DEFERRED);
        assert_int_equal(blasft_cache_verify(c, &r, &hook), 0); /* no-op */
        blasft_cache_release(c, &r, 0);
    }
    /* now deferred; verify finds it unchanged, the hook never runs */
    hook_calls = 0;
    assert_int_equal(blasft_cache_acquire(c, &k, BLASFT_CACHE_DEFER_CHECK, &r), 0);
    assert_int_equal(r.did, BLASFT_CACHE_DID_DEFERRED);
    assert_true(test_same_as_host(&k, r.data));
    assert_int_equal(blasft_cache_verify(c, &r, &hook), 0);
    assert_int_equal(hook_calls, 0);
    assert_true(r.did & BLASFT_CACHE_DID_CHECK);
    blasft_cache_release(c, &r, 0);
    /* a change: the speculative reader still sees the old copy until verify, which reports the
     * change (redo), calls the hook first, and leaves the copy current */
    assert_int_equal(blasft_cache_acquire(c, &k, BLASFT_CACHE_DEFER_CHECK, &r), 0);
    assert_true(r.did & BLASFT_CACHE_DID_DEFERRED);
    a[1234 + 100 * ld] = 42.0;
    assert_false(test_same_as_host(&k, r.data));
    blasft_cache_stats s0, s1;
    blasft_cache_get_stats(c, &s0);
    assert_int_equal(blasft_cache_verify(c, &r, &hook), 1);
    blasft_cache_get_stats(c, &s1);
    assert_int_equal(hook_calls, 1);
    assert_true(test_same_as_host(&k, r.data));
    assert_int_equal(s1.check_mismatches, s0.check_mismatches + 1);
    assert_true(s1.upload_bytes - s0.upload_bytes <= ((size_t)256 << 10)); /* one chunk */
    blasft_cache_release(c, &r, 0);
    /* after a change the next use is checked before use again (no deferral) */
    assert_int_equal(blasft_cache_acquire(c, &k, BLASFT_CACHE_DEFER_CHECK, &r), 0);
    assert_false(r.did & BLASFT_CACHE_DID_DEFERRED);
    assert_true(test_same_as_host(&k, r.data));
    blasft_cache_release(c, &r, 0);
    /* a deferred hold released without verify leaves the entry usable by others */
    assert_int_equal(blasft_cache_acquire(c, &k, BLASFT_CACHE_DEFER_CHECK, &r), 0);
    assert_true(r.did & BLASFT_CACHE_DID_DEFERRED);
    blasft_cache_release(c, &r, 0);
    a[7] = -1.0;
    assert_int_equal(blasft_cache_acquire(c, &k, 0, &r), 0);
    assert_true(r.did & BLASFT_CACHE_DID_UPLOAD);
    assert_true(test_same_as_host(&k, r.data));
    blasft_cache_release(c, &r, 0);
    blasft_cache_destroy(c);
    dev->ops->destroy(dev);
    free(a);
}

/* two threads' passes at once: each gets all its items done exactly once */
typedef struct count_job {
    unsigned *hits;
} count_job;
static void hit(void *arg, size_t i)
{
    __atomic_fetch_add(&((count_job *)arg)->hits[i], 1, __ATOMIC_RELAXED);
}
static void *pool_user(void *arg)
{
    (void)arg;
    for (int round = 0; round < 200; round++) {
        size_t n = 1 + (size_t)round * 7;
        unsigned *h = calloc(n, sizeof *h);
        count_job j = {h};
        blasft_pool_for(n, hit, &j, 1 + round % 9);
        for (size_t i = 0; i < n; i++)
            if (h[i] != 1)
                return (void *)1;
        free(h);
    }
    return NULL;
}
static void test_pool_concurrent_callers(void **state)
{
    (void)state;
    pthread_t t[4];
    for (int i = 0; i < 4; i++)
        pthread_create(&t[i], NULL, pool_user, NULL);
    for (int i = 0; i < 4; i++) {
        void *rv;
        pthread_join(t[i], &rv);
        assert_null(rv);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pack_unpack_match_plain),
        cmocka_unit_test(test_chunk_spans),
        cmocka_unit_test(test_only_changed_chunks_copied),
        cmocka_unit_test(test_deferred_check),
        cmocka_unit_test(test_pool_concurrent_callers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
