/* The device cache on the host backend: the hostChanged / deviceChanged cases of method.md 4,
 * declarations, the kept encoded result, LRU eviction under a small budget, device memory
 * running out, mode off, and concurrent callers on shared and distinct buffers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "blas_ft_cache.h"
#include "datagen.h"
#include "test_support.h"

#include <pthread.h>
#include <stdlib.h>

static uint64_t encodes;
static const blasft_cache_codec codec = {&encodes, test_codec_bytes, test_codec_encode};

typedef struct fixture {
    blasft_devmem *dev;
    blasft_cache *c;
} fixture;

static fixture make(blasft_cache_mode mode, size_t budget)
{
    fixture f;
    f.dev = blasft_devmem_host_create(-1);
    blasft_cache_opts o = {mode, budget, 1, &codec};
    f.c = blasft_cache_create(f.dev, &o);
    assert_non_null(f.c);
    return f;
}

static void done(fixture *f)
{
    blasft_cache_destroy(f->c);
    blasft_devmem_host_stats hs;
    blasft_devmem_host_stats_get(f->dev, &hs);
    assert_int_equal(hs.held, 0); /* everything freed */
    f->dev->ops->destroy(f->dev);
}

static double *matrix(int64_t ld, int64_t cols, uint64_t seed)
{
    double *a = malloc(sizeof(double) * (size_t)(ld * cols));
    dg_rng r;
    dg_seed(&r, seed);
    for (int64_t i = 0; i < ld * cols; i++)
        a[i] = dg_normal(&r);
    return a;
}

/* acquires for reading with both encodings, asserts the copy and encodings are current */
static unsigned use(fixture *f, const blasft_cache_key *k)
{
    blasft_cache_ref r;
    assert_int_equal(blasft_cache_acquire(f->c, k, BLASFT_CACHE_ENC(0) | BLASFT_CACHE_ENC(1), &r), 0);
    assert_true(test_same_as_host(k, r.data));
    assert_true(test_encoding_current(k, 0, r.enc[0]));
    assert_true(test_encoding_current(k, 1, r.enc[1]));
    unsigned did = r.did;
    blasft_cache_release(f->c, &r, 0);
    return did;
}

/* ENC_IF_SAME: an acquire that uploads makes no separate encoding (slot left invalid, enc NULL);
 * the next unchanged use makes it, the one after reuses it; a change invalidates it again; a plain
 * ENC(s) still encodes after an upload. */
static void test_encode_if_same(void **state)
{
    (void)state;
    fixture f = make(BLASFT_CACHE_HASH, 1 << 20);
    double *a = matrix(11, 9, 7);
    blasft_cache_key k = {a, BLASFT_TYPE_D, 7, 9, 11};
    const unsigned fl = BLASFT_CACHE_ENC(0) | BLASFT_CACHE_ENC_IF_SAME;
    blasft_cache_ref r;
    uint64_t before = encodes;
    assert_int_equal(blasft_cache_acquire(f.c, &k, fl, &r), 0); /* first use: uploaded */
    assert_true(r.did & BLASFT_CACHE_DID_UPLOAD);
    assert_null(r.enc[0]);
    assert_int_equal(encodes, before);
    assert_true(test_same_as_host(&k, r.data));
    blasft_cache_release(f.c, &r, 0);
    assert_int_equal(blasft_cache_acquire(f.c, &k, fl, &r), 0); /* unchanged: encoded now */
    assert_false(r.did & BLASFT_CACHE_DID_UPLOAD);
    assert_non_null(r.enc[0]);
    assert_true(test_encoding_current(&k, 0, r.enc[0]));
    assert_int_equal(encodes, before + 1);
    blasft_cache_release(f.c, &r, 0);
    assert_int_equal(blasft_cache_acquire(f.c, &k, fl, &r), 0); /* and kept */
    assert_true(test_encoding_current(&k, 0, r.enc[0]));
    assert_int_equal(encodes, before + 1);
    blasft_cache_release(f.c, &r, 0);
    a[3] += 1.0; /* changed: uploaded, no encoding, the stale one not handed out */
    assert_int_equal(blasft_cache_acquire(f.c, &k, fl, &r), 0);
    assert_true(r.did & BLASFT_CACHE_DID_UPLOAD);
    assert_null(r.enc[0]);
    assert_int_equal(encodes, before + 1);
    blasft_cache_release(f.c, &r, 0);
    a[4] -= 1.0; /* changed, plain ENC(0): encoded at once */
    assert_int_equal(blasft_cache_acquire(f.c, &k, BLASFT_CACHE_ENC(0), &r), 0);
    assert_true(r.did & BLASFT_CACHE_DID_UPLOAD);
    assert_true(test_encoding_current(&k, 0, r.enc[0]));
    assert_int_equal(encodes, before + 2);
    blasft_cache_release(f.c, &r, 0);
    free(a);
    done(&f);
}

static void test_host_changed_cases(void **state)
{
    (void)state;
    fixture f = make(BLASFT_CACHE_HASH, 1 << 20);
    double *a = matrix(11, 9, 1);
    blasft_cache_key k = {a, BLASFT_TYPE_D, 7, 9, 11};
    assert_true(use(&f, &k) & BLASFT_CACHE_DID_UPLOAD);          /* first use */
    unsigned d = use(&f, &k);                                     /* neither changed */
    assert_int_equal(d, BLASFT_CACHE_DID_CHECK);
    a[3 * 11 + 2] += 1.0;                                          /* undeclared host write */
    assert_true(use(&f, &k) & BLASFT_CACHE_DID_UPLOAD);
    a[9] = -7;                                                     /* padding row: not the key's */
    assert_int_equal(use(&f, &k), BLASFT_CACHE_DID_CHECK);
    a[2 * 11 + 1] = 42.0;                                          /* declared: no check */
    blasft_cache_mark_changed(&a[2 * 11 + 1], sizeof(double));
    assert_int_equal(use(&f, &k), BLASFT_CACHE_DID_UPLOAD | BLASFT_CACHE_DID_ENCODE);
    blasft_cache_mark_unchanged(a, sizeof(double) * 11 * 9);      /* declared unchanged */
    assert_int_equal(use(&f, &k), 0);
    assert_int_equal(use(&f, &k), BLASFT_CACHE_DID_CHECK);         /* one use only */
    /* a declaration over part of the entry does not skip its check */
    blasft_cache_mark_unchanged(a, sizeof(double) * 11);
    assert_int_equal(use(&f, &k), BLASFT_CACHE_DID_CHECK);
    /* same memory, another shape: its own entry, both current */
    blasft_cache_key k2 = {a, BLASFT_TYPE_D, 11, 9, 11};
    assert_true(use(&f, &k2) & BLASFT_CACHE_DID_UPLOAD);
    a[0] = 1e300;
    assert_true(use(&f, &k) & BLASFT_CACHE_DID_UPLOAD);
    assert_true(use(&f, &k2) & BLASFT_CACHE_DID_UPLOAD);
    done(&f);
    free(a);
}

/* a GEMM-like writer: device writes C, kept encoded; download; next use as operand is free */
static void test_device_changed_and_kept_result(void **state)
{
    (void)state;
    fixture f = make(BLASFT_CACHE_HASH, 1 << 20);
    double *c = matrix(6, 5, 2);
    blasft_cache_key k = {c, BLASFT_TYPE_D, 6, 5, 6};
    blasft_cache_ref r;
    assert_int_equal(blasft_cache_acquire(f.c, &k, BLASFT_CACHE_WRITE | BLASFT_CACHE_NO_LOAD, &r), 0);
    double *dc = r.data;
    for (int i = 0; i < 30; i++)
        dc[i] = i * 0.5; /* "the GEMM" */
    /* its check recomputed the checksums: the encoding of slot 0 is written with the result */
    uint64_t enc0[5];
    test_encoding_of(0, BLASFT_TYPE_D, 6, 5, dc, 6, enc0);
    blasft_cache_ref r0;
    r.enc_written = 0;
    blasft_cache_release(f.c, &r, BLASFT_CACHE_DEVICE_WROTE);
    /* device only: the device copy is current, the host is stale until synchronised */
    assert_true(c[0] != 0.0 || c[1] != 0.5);
    assert_int_equal(blasft_cache_acquire(f.c, &k, 0, &r0), 0);
    assert_ptr_equal(r0.data, dc);
    assert_int_equal(r0.did, 0);
    blasft_cache_release(f.c, &r0, 0);
    assert_int_equal(blasft_cache_sync_host(f.c, &k), 0);
    for (int i = 0; i < 30; i++)
        assert_true(c[i] == i * 0.5);
    assert_int_equal(use(&f, &k), BLASFT_CACHE_DID_CHECK | BLASFT_CACHE_DID_ENCODE);

    /* writer keeps its encoding: the next use as operand encodes nothing, uploads nothing */
    assert_int_equal(blasft_cache_acquire(f.c, &k, BLASFT_CACHE_WRITE | BLASFT_CACHE_NO_LOAD |
                                                       BLASFT_CACHE_ENC(0), &r), 0);
    dc = r.data;
    for (int i = 0; i < 30; i++)
        dc[i] = 3.0 - i;
    test_encoding_of(0, BLASFT_TYPE_D, 6, 5, dc, 6, r.enc[0]);
    r.enc_written = 1u << 0;
    assert_int_equal(blasft_cache_download(f.c, &r), 0);
    blasft_cache_release(f.c, &r, BLASFT_CACHE_DEVICE_WROTE);
    uint64_t before = encodes;
    assert_int_equal(blasft_cache_acquire(f.c, &k, BLASFT_CACHE_ENC(0), &r), 0);
    assert_int_equal(r.did, BLASFT_CACHE_DID_CHECK);
    assert_true(test_same_as_host(&k, r.data));
    assert_true(test_encoding_current(&k, 0, r.enc[0]));
    assert_int_equal(encodes, before);
    blasft_cache_release(f.c, &r, 0);
    (void)enc0;

    /* both changed: device writes, host writes a declared range, host wins there */
    blasft_cache_mark_device_changed(f.c, &k);
    assert_int_equal(blasft_cache_acquire(f.c, &k, BLASFT_CACHE_WRITE, &r), 0);
    dc = r.data;
    for (int i = 0; i < 30; i++)
        dc[i] = 100 + i;
    blasft_cache_release(f.c, &r, BLASFT_CACHE_DEVICE_WROTE);
    c[7] = -1, c[8] = -2;
    blasft_cache_mark_changed(&c[7], 2 * sizeof(double));
    assert_int_equal(blasft_cache_acquire(f.c, &k, BLASFT_CACHE_ENC(1), &r), 0);
    assert_true(r.did & BLASFT_CACHE_DID_DOWNLOAD);
    assert_true(r.did & BLASFT_CACHE_DID_PARTIAL);
    for (int i = 0; i < 30; i++) {
        double want = i == 7 ? -1 : i == 8 ? -2 : 100 + i;
        assert_true(c[i] == want);
        assert_true(((double *)r.data)[i] == want);
    }
    assert_true(test_encoding_current(&k, 1, r.enc[1]));
    blasft_cache_release(f.c, &r, 0);
    done(&f);
    free(c);
}

/* a writer while readers hold the copy gets its own; the readers' copy does not change */
static void test_writer_does_not_disturb_readers(void **state)
{
    (void)state;
    fixture f = make(BLASFT_CACHE_HASH, 1 << 20);
    double *a = matrix(4, 4, 3);
    blasft_cache_key k = {a, BLASFT_TYPE_D, 4, 4, 4};
    blasft_cache_ref rd, rw, rd2;
    assert_int_equal(blasft_cache_acquire(f.c, &k, 0, &rd), 0);
    double first = ((double *)rd.data)[0];
    assert_int_equal(blasft_cache_acquire(f.c, &k, BLASFT_CACHE_WRITE | BLASFT_CACHE_NO_LOAD, &rw), 0);
    assert_ptr_not_equal(rw.data, rd.data);
    ((double *)rw.data)[0] = first + 1;
    assert_int_equal(blasft_cache_download(f.c, &rw), 0);
    blasft_cache_release(f.c, &rw, BLASFT_CACHE_DEVICE_WROTE);
    assert_true(((double *)rd.data)[0] == first);
    assert_true(a[0] == first + 1);
    /* a host change while a reader holds the copy: the next reader gets a fresh copy too */
    a[5] = 9;
    assert_int_equal(blasft_cache_acquire(f.c, &k, 0, &rd2), 0);
    assert_true(test_same_as_host(&k, rd2.data));
    blasft_cache_release(f.c, &rd, 0);
    blasft_cache_release(f.c, &rd2, 0);
    blasft_cache_stats st;
    blasft_cache_get_stats(f.c, &st);
    assert_int_equal(st.entries, 1);
    done(&f);
    free(a);
}

/* LRU eviction: a budget of three 8x8 D matrices (512 B each) plus encodings (64+64 B) */
static void test_eviction(void **state)
{
    (void)state;
    fixture f = make(BLASFT_CACHE_HASH, 3 * (512 + 128));
    double *m[5];
    blasft_cache_key k[5];
    for (int i = 0; i < 5; i++) {
        m[i] = matrix(8, 8, 10 + (uint64_t)i);
        k[i] = (blasft_cache_key){m[i], BLASFT_TYPE_D, 8, 8, 8};
    }
    for (int i = 0; i < 3; i++)
        assert_true(use(&f, &k[i]) & BLASFT_CACHE_DID_UPLOAD);
    assert_int_equal(use(&f, &k[0]), BLASFT_CACHE_DID_CHECK); /* 0 most recent: 1 is LRU */
    assert_true(use(&f, &k[3]) & BLASFT_CACHE_DID_UPLOAD);    /* evicts 1 */
    assert_int_equal(use(&f, &k[2]), BLASFT_CACHE_DID_CHECK);
    assert_int_equal(use(&f, &k[0]), BLASFT_CACHE_DID_CHECK);
    assert_true(use(&f, &k[1]) & BLASFT_CACHE_DID_UPLOAD);    /* was evicted; evicts 3 */
    assert_true(use(&f, &k[3]) & BLASFT_CACHE_DID_UPLOAD);
    blasft_cache_stats st;
    blasft_cache_get_stats(f.c, &st);
    assert_int_equal(st.evictions, 3);
    assert_true(st.used_bytes <= 3 * (512 + 128));
    /* a device-changed entry is written back before it is evicted */
    blasft_cache_ref r;
    assert_int_equal(blasft_cache_acquire(f.c, &k[4], BLASFT_CACHE_WRITE | BLASFT_CACHE_NO_LOAD, &r), 0);
    for (int i = 0; i < 64; i++)
        ((double *)r.data)[i] = 1000 + i;
    blasft_cache_release(f.c, &r, BLASFT_CACHE_DEVICE_WROTE);
    for (int i = 0; i < 3; i++)
        use(&f, &k[i]);
    for (int i = 0; i < 64; i++)
        assert_true(m[4][i] == 1000 + i);
    /* all held: nothing fits, the caller goes without the cache */
    blasft_cache_ref h[3];
    for (int i = 0; i < 3; i++)
        assert_int_equal(blasft_cache_acquire(f.c, &k[i], BLASFT_CACHE_ENC(0) | BLASFT_CACHE_ENC(1), &h[i]), 0);
    assert_int_equal(blasft_cache_acquire(f.c, &k[3], 0, &r), -1);
    for (int i = 0; i < 3; i++)
        blasft_cache_release(f.c, &h[i], 0);
    /* larger than the budget */
    double *big = matrix(40, 40, 77);
    blasft_cache_key kb = {big, BLASFT_TYPE_D, 40, 40, 40};
    assert_int_equal(blasft_cache_acquire(f.c, &kb, 0, &r), -1);
    done(&f);
    for (int i = 0; i < 5; i++)
        free(m[i]);
    free(big);
}

/* the backend runs out before the budget does: the cache shrinks and still serves */
static void test_device_full(void **state)
{
    (void)state;
    blasft_devmem *dev = blasft_devmem_host_create(2 * 512 + 10);
    blasft_cache_opts o = {BLASFT_CACHE_HASH, 1 << 20, 1, NULL};
    blasft_cache *c = blasft_cache_create(dev, &o);
    double *m[3];
    for (int i = 0; i < 3; i++) {
        m[i] = matrix(8, 8, 20 + (uint64_t)i);
        blasft_cache_key k = {m[i], BLASFT_TYPE_D, 8, 8, 8};
        blasft_cache_ref r;
        assert_int_equal(blasft_cache_acquire(c, &k, 0, &r), 0);
        assert_true(test_same_as_host(&k, r.data));
        blasft_cache_release(c, &r, 0);
    }
    blasft_cache_destroy(c);
    dev->ops->destroy(dev);
    for (int i = 0; i < 3; i++)
        free(m[i]);
}

/* mode off keeps nothing; mode declared trusts declarations and never hashes */
static void test_modes(void **state)
{
    (void)state;
    double *a = matrix(5, 5, 4);
    blasft_cache_key k = {a, BLASFT_TYPE_D, 5, 5, 5};
    fixture f = make(BLASFT_CACHE_OFF, 1 << 20);
    assert_int_equal(use(&f, &k), BLASFT_CACHE_DID_UPLOAD | BLASFT_CACHE_DID_ENCODE | BLASFT_CACHE_DID_UNCACHED);
    assert_int_equal(use(&f, &k), BLASFT_CACHE_DID_UPLOAD | BLASFT_CACHE_DID_ENCODE | BLASFT_CACHE_DID_UNCACHED);
    blasft_cache_ref r; /* a written private copy reaches the host at release */
    assert_int_equal(blasft_cache_acquire(f.c, &k, BLASFT_CACHE_WRITE, &r), 0);
    ((double *)r.data)[0] = 12345;
    blasft_cache_release(f.c, &r, BLASFT_CACHE_DEVICE_WROTE);
    assert_true(a[0] == 12345);
    done(&f);
    f = make(BLASFT_CACHE_DECLARED, 1 << 20);
    assert_true(use(&f, &k) & BLASFT_CACHE_DID_UPLOAD);
    assert_int_equal(use(&f, &k), 0);
    a[6] = 3;
    blasft_cache_mark_changed(&a[6], sizeof(double)); /* only the declared part goes up */
    assert_int_equal(use(&f, &k), BLASFT_CACHE_DID_PARTIAL | BLASFT_CACHE_DID_ENCODE);
    a[0] = 4, a[24] = 5;
    blasft_cache_mark_changed(a, 5 * 5 * sizeof(double));
    assert_true(use(&f, &k) & BLASFT_CACHE_DID_UPLOAD);
    blasft_cache_stats st;
    blasft_cache_get_stats(f.c, &st);
    assert_int_equal(st.checks, 0);
    done(&f);
    free(a);
}

/* threads: each uses its own matrix (and writes it) and a shared one that thread 0 rewrites
 * between barrier phases; every acquire must see the current host data */
#define THREADS 4
#define PHASES 40
typedef struct worker {
    fixture *f;
    double *shared, *own;
    pthread_barrier_t *bar;
    int id;
    int stale;
} worker;

static void *work(void *arg)
{
    worker *w = arg;
    blasft_cache_key ks = {w->shared, BLASFT_TYPE_D, 30, 20, 33};
    blasft_cache_key ko = {w->own, BLASFT_TYPE_D, 17, 13, 17};
    dg_rng r;
    dg_seed(&r, 1000 + (uint64_t)w->id);
    for (int p = 0; p < PHASES; p++) {
        for (int it = 0; it < 5; it++) {
            blasft_cache_ref a, b;
            if (blasft_cache_acquire(w->f->c, &ks, BLASFT_CACHE_ENC(0), &a) ||
                blasft_cache_acquire(w->f->c, &ko, BLASFT_CACHE_ENC(1), &b)) {
                w->stale++;
                continue;
            }
            w->stale += !test_same_as_host(&ks, a.data) || !test_encoding_current(&ks, 0, a.enc[0]);
            w->stale += !test_same_as_host(&ko, b.data) || !test_encoding_current(&ko, 1, b.enc[1]);
            blasft_cache_release(w->f->c, &a, 0);
            blasft_cache_release(w->f->c, &b, 0);
            w->own[dg_below(&r, 17 * 13)] = dg_normal(&r);
        }
        pthread_barrier_wait(w->bar);
        if (w->id == 0)
            w->shared[dg_below(&r, 33 * 20)] += 1.0;
        pthread_barrier_wait(w->bar);
    }
    return NULL;
}

static void test_concurrent(void **state)
{
    (void)state;
    fixture f = make(BLASFT_CACHE_HASH, 64 << 10);
    double *shared = matrix(33, 20, 5);
    pthread_barrier_t bar;
    pthread_barrier_init(&bar, NULL, THREADS);
    worker w[THREADS];
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++) {
        w[i] = (worker){&f, shared, matrix(17, 13, 50 + (uint64_t)i), &bar, i, 0};
        pthread_create(&t[i], NULL, work, &w[i]);
    }
    for (int i = 0; i < THREADS; i++) {
        pthread_join(t[i], NULL);
        assert_int_equal(w[i].stale, 0);
        free(w[i].own);
    }
    blasft_cache_stats st;
    blasft_cache_get_stats(f.c, &st);
    assert_true(st.reuses > 0);
    pthread_barrier_destroy(&bar);
    done(&f);
    free(shared);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_host_changed_cases),
        cmocka_unit_test(test_encode_if_same),
        cmocka_unit_test(test_device_changed_and_kept_result),
        cmocka_unit_test(test_writer_does_not_disturb_readers),
        cmocka_unit_test(test_eviction),
        cmocka_unit_test(test_device_full),
        cmocka_unit_test(test_modes),
        cmocka_unit_test(test_concurrent),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
