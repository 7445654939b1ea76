/* Randomized property test of the cache: thousands of sequences of GEMM-like uses (read A and B
 * with their encodings, write C, download it or leave it on the device for later) interleaved
 * with host writes of every kind: element stores, memcpy, read(2) from a file, and writes
 * through a second mapping of the same memfd; truthful declarations now and then. After every
 * acquire the device copy and its encodings must equal the current host data (zero stale), and
 * every result in C must be the product of the data the host held at the call. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "blas_ft_cache.h"
#include "datagen.h"
#include "test_support.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#define SEQUENCES 3000
#define STEPS 24
#define SLOTS 4          /* matrices per sequence, in one memfd */
#define SLOT_BYTES 4096  /* each within its own 4 KiB of the mapping */

typedef struct world {
    unsigned char *view, *alias; /* two mappings of one memfd */
    int file;                    /* random bytes to read(2) from */
    size_t map_bytes;
} world;

typedef struct mat {
    blasft_cache_key k;
    bool written;  /* host wrote it since its last use */
    bool promised; /* declared unchanged until its next use: a write now must be declared */
} mat;

static uint64_t encode_count;
static const blasft_cache_codec codec = {&encode_count, test_codec_bytes, test_codec_encode};

/* byte extent of a key */
static size_t span(const blasft_cache_key *k)
{
    size_t ts = (size_t)blasft_type_size(k->type);
    return k->cols ? ((size_t)(k->cols - 1) * (size_t)k->ld + (size_t)k->rows) * ts : 0;
}

/* one host write of a random kind into [p, p + n) of the view; returns the kind */
static int host_write(world *w, dg_rng *r, unsigned char *p, size_t n, blasft_cache_mode mode,
                      bool must_declare)
{
    int kind = (int)dg_below(r, 5);
    size_t off = (size_t)(p - w->view);
    switch (kind) {
    case 0: /* element stores (doubles, possibly unaligned to the type: bytes) */
        for (size_t i = 0; i < n; i++)
            p[i] = (unsigned char)dg_next(r);
        break;
    case 1: { /* memcpy from other data */
        unsigned char tmp[SLOT_BYTES];
        for (size_t i = 0; i < n; i++)
            tmp[i] = (unsigned char)dg_next(r);
        memcpy(p, tmp, n);
        break;
    }
    case 2: { /* read(2) from a file: the kernel writes the buffer */
        off_t at = (off_t)dg_below(r, 1 << 16);
        assert_int_equal(pread(w->file, p, n, at), (ssize_t)n);
        break;
    }
    case 3: /* through the second mapping of the same memory */
        for (size_t i = 0; i < n; i++)
            w->alias[off + i] ^= (unsigned char)(1 + dg_below(r, 255));
        break;
    default: /* the same values again: no change */
        memcpy(p, w->alias + off, n);
        break;
    }
    /* in declared mode the program declares every write; otherwise sometimes */
    if (mode == BLASFT_CACHE_DECLARED || must_declare || dg_below(r, 3) == 0)
        blasft_cache_mark_changed(p, n);
    return kind;
}

/* C (m x n, D) = A (m x k) * B (k x n) with leading dimensions, on raw column-major data */
static void gemm(int64_t m, int64_t n, int64_t k, const double *a, int64_t lda, const double *b,
                 int64_t ldb, double *c, int64_t ldc, bool accumulate)
{
    for (int64_t j = 0; j < n; j++)
        for (int64_t i = 0; i < m; i++) {
            double s = accumulate ? c[j * ldc + i] : 0.0;
            for (int64_t l = 0; l < k; l++)
                s += a[l * lda + i] * b[j * ldb + l];
            c[j * ldc + i] = s;
        }
}

/* host data of a key into a packed copy */
static void pack(const blasft_cache_key *k, double *out)
{
    for (int64_t j = 0; j < k->cols; j++)
        memcpy(out + j * k->rows, (const double *)k->host + j * k->ld, sizeof(double) * (size_t)k->rows);
}

static bool finite_all(const double *p, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        if (!(p[i] == p[i]) || p[i] > 1e6 || p[i] < -1e6) /* products stay finite */
            return false;
    return true;
}

static int reported;
/* counts a stale result; the first few are described */
#define STALE(cond, what)                                                                     \
    do {                                                                                      \
        if (cond) {                                                                           \
            ++*stale;                                                                         \
            if (reported++ < 5)                                                               \
                fprintf(stderr, "stale: %s (sequence seed %llx, step %d, mode %d)\n", what,   \
                        (unsigned long long)seed, step, (int)mode);                           \
        }                                                                                     \
    } while (0)

/* bitwise: a NaN result equals itself */
static bool differ(double a, double b) { return memcmp(&a, &b, sizeof a) != 0; }

static void run_sequence(world *w, uint64_t seed, uint64_t *stale, uint64_t *uses,
                         uint64_t *reuses)
{
    dg_rng r;
    dg_seed(&r, seed);
    blasft_cache_mode mode = dg_below(&r, 4) == 0 ? BLASFT_CACHE_DECLARED : BLASFT_CACHE_HASH;
    if (dg_below(&r, 10) == 0)
        mode = BLASFT_CACHE_OFF;
    blasft_devmem *dev = blasft_devmem_host_create(-1);
    /* small budgets force evictions */
    blasft_cache_opts o = {mode, 2048 + dg_below(&r, 12000), 1, &codec};
    blasft_cache *c = blasft_cache_create(dev, &o);
    /* fresh contents */
    for (size_t i = 0; i < w->map_bytes; i++)
        w->view[i] = (unsigned char)(dg_next(&r) & 0x3f); /* small doubles' low bytes */
    int64_t m = 1 + (int64_t)dg_below(&r, 7), n = 1 + (int64_t)dg_below(&r, 7),
            k = (int64_t)dg_below(&r, 7);
    mat mats[SLOTS];
    memset(mats, 0, sizeof mats);
    /* A m x k, B k x n, C m x n, and a D view of the same memory as slot 0 with another shape */
    int64_t rows[SLOTS] = {m, k, m, m}, cols[SLOTS] = {k, n, n, k > 1 ? k - 1 : k};
    for (int s = 0; s < SLOTS; s++) {
        int64_t ld = rows[s] + (int64_t)dg_below(&r, 3);
        if (ld < 1)
            ld = 1;
        unsigned char *base = w->view + (size_t)(s == 3 ? 0 : s) * SLOT_BYTES;
        mats[s] = (mat){{base, BLASFT_TYPE_D, rows[s], cols[s], ld}, false, false};
        /* valid doubles in the whole slot so the GEMM oracle stays finite */
        double *d = (double *)base;
        if (s != 3)
            for (int i = 0; i < SLOT_BYTES / 8; i++)
                d[i] = dg_range(&r, -4, 4);
    }
    bool c_on_device = false; /* C's last result is still only on the device */
    double expect_c[64];
    int step = 0;
    for (; step < STEPS; step++) {
        int what = (int)dg_below(&r, 10);
        if (what < 4) {
            /* a host write into one matrix (or its padding) */
            int s = (int)dg_below(&r, 3);
            mat *x = &mats[s];
            size_t sp = span(&x->k);
            if (sp == 0)
                continue;
            size_t lo = dg_below(&r, sp), len = 1 + dg_below(&r, sp - lo);
            if (c_on_device && s == 2) {
                /* host writes C while its result is only on the device: first synchronise (a
                 * program reads its result before it writes to it) */
                assert_int_equal(blasft_cache_sync_host(c, &x->k), 0);
                c_on_device = false;
            }
            bool promised = false;
            for (int t = 0; t < SLOTS; t++)
                promised |= mats[t].promised;
            host_write(w, &r, (unsigned char *)x->k.host + lo, len, mode, promised);
            /* the doubles may be garbage now: keep them finite for the oracle */
            double *d = (double *)x->k.host;
            for (size_t i = 0; i < (lo + len + 7) / 8 && i < SLOT_BYTES / 8; i++)
                if (!finite_all(&d[i], 1)) {
                    d[i] = 1.0; /* a store like any other: declared where the write was */
                    if (mode == BLASFT_CACHE_DECLARED || promised || dg_below(&r, 2) == 0)
                        blasft_cache_mark_changed(&d[i], sizeof(double));
                }
            for (int t = 0; t < SLOTS; t++)
                if ((unsigned char *)mats[t].k.host < (unsigned char *)x->k.host + lo + len &&
                    (unsigned char *)mats[t].k.host + span(&mats[t].k) > (unsigned char *)x->k.host + lo)
                    mats[t].written = true;
        } else if (what < 5) {
            /* a truthful "unchanged" declaration */
            int s = (int)dg_below(&r, SLOTS);
            if (!mats[s].written) {
                blasft_cache_mark_unchanged(mats[s].k.host, span(&mats[s].k));
                mats[s].promised = true;
            }
        } else {
            /* GEMM-like use: C = A * B (+ C) on the device copies */
            /* sometimes the other view of A's memory, or the last result C as A */
            int sa = dg_below(&r, 4) == 0 ? 3 : (n == k && dg_below(&r, 2) == 0) ? 2 : 0;
            if (c_on_device && (sa == 2 || dg_below(&r, 2) == 0)) {
                assert_int_equal(blasft_cache_sync_host(c, &mats[2].k), 0);
                c_on_device = false;
                for (int64_t j = 0; j < n; j++)
                    for (int64_t i = 0; i < m; i++)
                    STALE(differ(((double *)mats[2].k.host)[j * mats[2].k.ld + i], expect_c[j * m + i]),
                              "C after sync_host");
            }
            blasft_cache_ref ra, rb, rc;
            assert_int_equal(blasft_cache_acquire(c, &mats[sa].k, BLASFT_CACHE_ENC(0), &ra), 0);
            assert_int_equal(blasft_cache_acquire(c, &mats[1].k, BLASFT_CACHE_ENC(1), &rb), 0);
            *uses += 2;
            *reuses += !(ra.did & (BLASFT_CACHE_DID_UPLOAD | BLASFT_CACHE_DID_PARTIAL)) +
                       !(rb.did & (BLASFT_CACHE_DID_UPLOAD | BLASFT_CACHE_DID_PARTIAL));
            STALE(!test_same_as_host(&mats[sa].k, ra.data), "A's device copy");
            STALE(!test_same_as_host(&mats[1].k, rb.data), "B's device copy");
            if (ra.enc[0])
                STALE(!test_encoding_current(&mats[sa].k, 0, ra.enc[0]), "A's encoding");
            if (rb.enc[1])
                STALE(!test_encoding_current(&mats[1].k, 1, rb.enc[1]), "B's encoding");
            mats[sa].written = mats[1].written = false;
            mats[sa].promised = mats[1].promised = false;
            bool acc = dg_below(&r, 2) == 0;
            unsigned fl = BLASFT_CACHE_WRITE | (acc ? 0 : BLASFT_CACHE_NO_LOAD);
            if (c_on_device) { /* C is still current only on the device: use that */
                fl = BLASFT_CACHE_WRITE;
                acc = true;
            }
            bool keep_enc = dg_below(&r, 2) == 0;
            if (keep_enc)
                fl |= BLASFT_CACHE_ENC(0);
            assert_int_equal(blasft_cache_acquire(c, &mats[2].k, fl, &rc), 0);
            double ca[64], cb[64], cc[64];
            if (acc) {
                if (c_on_device)
                    memcpy(cc, expect_c, sizeof cc);
                else
                    pack(&mats[2].k, cc);
                /* the loaded C is the host's (or the device's newer) data */
                STALE(memcmp(rc.data, cc, sizeof(double) * (size_t)(m * n)) != 0, "C loaded");
            }
            mats[2].written = mats[2].promised = false;
            /* oracle from the host data (A, B unchanged since their acquire) */
            int64_t ka = mats[sa].k.cols; /* the other view may have fewer columns */
            pack(&mats[sa].k, ca);
            pack(&mats[1].k, cb);
            gemm(m, n, ka, ca, m, cb, k > 0 ? k : 1, cc, m, acc);
            gemm(m, n, ka, ra.data, ra.ld, rb.data, rb.ld, rc.data, rc.ld, acc);
            memcpy(expect_c, cc, sizeof(double) * (size_t)(m * n));
            STALE(memcmp(rc.data, cc, sizeof(double) * (size_t)(m * n)) != 0, "C computed");
            /* sometimes the "engine" leaves C encoded (its check recomputed the checksums) */
            if (keep_enc) {
                test_encoding_of(0, BLASFT_TYPE_D, m, n, rc.data, rc.ld, rc.enc[0]);
                rc.enc_written = 1u << 0;
            }
            bool download_now = dg_below(&r, 3) != 0;
            if (download_now)
                assert_int_equal(blasft_cache_download(c, &rc), 0);
            blasft_cache_release(c, &ra, 0);
            blasft_cache_release(c, &rb, 0);
            blasft_cache_release(c, &rc, BLASFT_CACHE_DEVICE_WROTE);
            c_on_device = !download_now && mode != BLASFT_CACHE_OFF;
            if (!c_on_device) /* the host has the result */
                for (int64_t j = 0; j < n; j++)
                    for (int64_t i = 0; i < m; i++)
                        STALE(differ(((double *)mats[2].k.host)[j * mats[2].k.ld + i], cc[j * m + i]),
                              "C on the host");
        }
    }
    blasft_cache_destroy(c); /* writes back a result still on the device */
    if (c_on_device)
        for (int64_t j = 0; j < n; j++)
            for (int64_t i = 0; i < m; i++)
                STALE(differ(((double *)mats[2].k.host)[j * mats[2].k.ld + i], expect_c[j * m + i]),
                      "C written back at destroy");
    blasft_devmem_host_stats hs;
    blasft_devmem_host_stats_get(dev, &hs);
    assert_int_equal(hs.held, 0);
    dev->ops->destroy(dev);
}

static void test_random_sequences(void **state)
{
    (void)state;
    world w;
    w.map_bytes = SLOTS * SLOT_BYTES;
    int fd = memfd_create("blasft-property", 0);
    assert_true(fd >= 0);
    assert_int_equal(ftruncate(fd, (off_t)w.map_bytes), 0);
    w.view = mmap(NULL, w.map_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    w.alias = mmap(NULL, w.map_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    assert_true(w.view != MAP_FAILED && w.alias != MAP_FAILED && w.view != w.alias);
    char path[] = "/tmp/blasft-propXXXXXX";
    w.file = mkstemp(path);
    assert_true(w.file >= 0);
    unlink(path);
    dg_rng r;
    dg_seed(&r, 4242);
    static unsigned char junk[(1 << 16) + SLOT_BYTES];
    for (size_t i = 0; i < sizeof junk; i++)
        junk[i] = (unsigned char)dg_next(&r);
    assert_int_equal(write(w.file, junk, sizeof junk), (ssize_t)sizeof junk);

    uint64_t stale = 0, uses = 0, reuses = 0;
    for (uint64_t s = 0; s < SEQUENCES; s++)
        run_sequence(&w, 0x5eed0000 + s, &stale, &uses, &reuses);
    printf("# %d sequences, %llu operand uses, %llu served from the cache, %llu stale\n",
           SEQUENCES, (unsigned long long)uses, (unsigned long long)reuses,
           (unsigned long long)stale);
    assert_int_equal(stale, 0);
    assert_true(reuses > uses / 10); /* the cache was actually exercised */
    assert_true(reuses < uses);      /* and uploads happened */
    munmap(w.view, w.map_bytes);
    munmap(w.alias, w.map_bytes);
    close(fd);
    close(w.file);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_random_sequences)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
