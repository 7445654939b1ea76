#include "hash.h"

#include "config.h"
#include "pool.h"

#include <pthread.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

/* A chunk is hashed on its own (lanes seeded by its index) and the chunk digests are added, so the
 * work splits over threads and the result depends only on the data and its shape. 256 KiB keeps
 * the per-chunk overhead (16 finalisation mixes) under 0.1 %. */
#define CHUNK_WORDS ((size_t)1 << 15)
/* 32 independent lanes: enough independent multiplication chains to keep a core's multiplier
 * (or four 8-lane vector multipliers, below) busy while each chain waits for its last result */
#define LANES 32
/* Below this many bytes the region is hashed on the calling thread. */
#define PARALLEL_MIN_BYTES ((size_t)1 << 20)

static const uint64_t lane_mult = 0x9e3779b97f4a7c15ull; /* odd: multiplication is a bijection */

/* The MurmurHash3 64-bit finaliser (a published bijection with full avalanche). */
static inline uint64_t fmix64(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    x ^= x >> 33;
    return x;
}

static inline uint64_t rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

/* One absorbed word: xor, odd multiply, rotate. Each is a bijection of s for a fixed w, so two
 * inputs that differ in one word leave different states; the rotation brings the high bits that
 * the multiplication cannot spread down to where the next multiplication spreads them (without it
 * flipping the sign bit of two doubles in the same lane would cancel). */
static inline uint64_t absorb(uint64_t s, uint64_t w) { return rotl((s ^ w) * lane_mult, 29); }

static uint64_t process_seed[2];
static pthread_once_t seed_once = PTHREAD_ONCE_INIT;

typedef struct region {
    const unsigned char *base; /* byte b of the region's layout at base + b - bias */
    size_t bias;
    size_t row_bytes, cols, ld_bytes;
    size_t words_per_col; /* ceil(row_bytes / 8): a column's partial last word is zero-padded */
    size_t words;         /* logical words in all */
} region;

/* The region of a rows-of-row_bytes x cols layout with columns ld_bytes apart, whose byte b is at
 * base + b - bias. */
static region region_of(const void *base, size_t bias, size_t row_bytes, size_t cols,
                        size_t ld_bytes)
{
    region r = {base, bias, row_bytes, cols, ld_bytes, (row_bytes + 7) / 8, 0};
    r.words = r.words_per_col * cols;
    return r;
}

static inline uint64_t load_word(const unsigned char *p)
{
    uint64_t w;
    memcpy(&w, p, 8);
    return w;
}

/* Whole blocks of LANES words, lane j absorbing word j of each block: the hot loop. (Not
 * auto-vectorised: without AVX-512 a 64-bit vector multiply is emulated and 4x slower.) */
#if defined(__GNUC__) && !defined(__clang__)
__attribute__((optimize("no-tree-vectorize")))
#endif
static void absorb_blocks_scalar(uint64_t lane[LANES], const unsigned char *src, size_t blocks)
{
    for (size_t b = 0; b < blocks; b++, src += 8 * LANES)
        for (int j = 0; j < LANES; j++)
            lane[j] = absorb(lane[j], load_word(src + 8 * j));
}

#if defined(__x86_64__) && defined(__GNUC__)
/* The same arithmetic on 8 lanes per AVX-512 register (vpxorq, vpmullq, vprolq): the same
 * digest, bit for bit (tested against the scalar loop). */
typedef uint64_t u64x8 __attribute__((vector_size(64), aligned(8)));

__attribute__((target("avx512f,avx512dq"))) static void
absorb_blocks_avx512(uint64_t lane[LANES], const unsigned char *src, size_t blocks)
{
    u64x8 v[LANES / 8], w;
    const u64x8 k = {lane_mult, lane_mult, lane_mult, lane_mult,
                     lane_mult, lane_mult, lane_mult, lane_mult};
    memcpy(v, lane, sizeof v);
    for (size_t b = 0; b < blocks; b++, src += 8 * LANES)
        for (int q = 0; q < LANES / 8; q++) {
            memcpy(&w, src + 64 * q, 64);
            u64x8 x = (v[q] ^ w) * k;
            v[q] = (x << 29) | (x >> 35);
        }
    memcpy(lane, v, sizeof v);
}
#endif

static void (*absorb_blocks)(uint64_t lane[LANES], const unsigned char *src,
                             size_t blocks) = absorb_blocks_scalar;

static void seed_init(void)
{
    uint64_t s[2];
    if (getrandom(s, sizeof s, GRND_NONBLOCK) != (ssize_t)sizeof s) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        s[0] = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 32);
        s[1] = (uint64_t)getpid() ^ (uint64_t)(uintptr_t)&ts;
    }
    process_seed[0] = fmix64(s[0] | 1);
    process_seed[1] = fmix64(s[1] + 0x632be59bd9b4e019ull);
#if defined(__x86_64__) && defined(__GNUC__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq"))
        absorb_blocks = absorb_blocks_avx512;
#endif
}

int blasft_hash_use_simd(int on)
{
    pthread_once(&seed_once, seed_init);
#if defined(__x86_64__) && defined(__GNUC__)
    if (on && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq")) {
        absorb_blocks = absorb_blocks_avx512;
        return 1;
    }
#endif
    absorb_blocks = absorb_blocks_scalar;
    (void)on;
    return 0;
}

/* Absorbs n logical words starting at logical word p of the region into the lanes. */
static void absorb_span(uint64_t lane[LANES], const region *r, size_t p, size_t n)
{
    while (n > 0) {
        size_t col = p / r->words_per_col, off = p % r->words_per_col;
        size_t take = r->words_per_col - off;
        if (take > n)
            take = n;
        const unsigned char *src = r->base + (col * r->ld_bytes + off * 8 - r->bias);
        /* the column's last word may be partial */
        size_t full = take;
        bool partial = off + take == r->words_per_col && r->row_bytes % 8 != 0;
        if (partial)
            full--;
        size_t i = 0, l = p % LANES;
        for (; i < full && l != 0; i++, l = (l + 1) % LANES)
            lane[l] = absorb(lane[l], load_word(src + 8 * i));
        if (i + LANES <= full) {
            size_t blocks = (full - i) / LANES;
            absorb_blocks(lane, src + 8 * i, blocks);
            i += blocks * LANES;
        }
        for (; i < full; i++, l = (l + 1) % LANES)
            lane[l] = absorb(lane[l], load_word(src + 8 * i));
        l = (p + full) % LANES;
        if (partial) {
            uint64_t w = 0;
            memcpy(&w, src + 8 * full, r->row_bytes % 8);
            lane[l] = absorb(lane[l], w);
        }
        p += take;
        n -= take;
    }
}

static blasft_hash128 hash_chunk(const region *r, size_t chunk)
{
    uint64_t lane[LANES];
    for (int i = 0; i < LANES; i++)
        lane[i] = fmix64(process_seed[0] + (uint64_t)i * 0xd6e8feb86659fd93ull +
                         (uint64_t)chunk * 0xa0761d6478bd642full);
    size_t p = chunk * CHUNK_WORDS, n = r->words - p;
    if (n > CHUNK_WORDS)
        n = CHUNK_WORDS;
    absorb_span(lane, r, p, n);
    /* two folds, each a chain that is a bijection of every single lane given the others */
    uint64_t lo = process_seed[1] ^ chunk, hi = ~process_seed[1] + chunk;
    for (int i = 0; i < LANES; i++)
        lo = fmix64(lo ^ lane[i]);
    for (int i = LANES - 1; i >= 0; i--)
        hi = fmix64(hi + rotl(lane[i], 17));
    return (blasft_hash128){lo, hi};
}

size_t blasft_hash_chunk_count(size_t row_bytes, size_t cols)
{
    return ((row_bytes + 7) / 8 * cols + CHUNK_WORDS - 1) / CHUNK_WORDS;
}

/* The dense copy's byte offset of logical word p (a column's partial last word ends the column). */
static size_t packed_offset(size_t row_bytes, size_t words_per_col, size_t p)
{
    size_t col = p / words_per_col, off = 8 * (p % words_per_col);
    return col * row_bytes + (off < row_bytes ? off : row_bytes);
}

void blasft_hash_chunk_span(size_t row_bytes, size_t cols, size_t chunk, size_t *lo, size_t *hi)
{
    size_t wpc = (row_bytes + 7) / 8, words = wpc * cols;
    size_t p0 = chunk * CHUNK_WORDS, p1 = p0 + CHUNK_WORDS;
    if (p1 > words)
        p1 = words;
    *lo = wpc ? packed_offset(row_bytes, wpc, p0) : 0;
    *hi = wpc ? (p1 == words ? row_bytes * cols : packed_offset(row_bytes, wpc, p1)) : 0;
}

blasft_hash128 blasft_hash_chunk(const void *base, size_t row_bytes, size_t cols, size_t ld_bytes,
                                 size_t chunk)
{
    pthread_once(&seed_once, seed_init);
    region r = region_of(base, 0, row_bytes, cols, ld_bytes);
    return hash_chunk(&r, chunk);
}

blasft_hash128 blasft_hash_chunk_dense(const void *buf, size_t buf_lo, size_t row_bytes,
                                       size_t cols, size_t chunk)
{
    pthread_once(&seed_once, seed_init);
    /* the dense copy is the region with ld = row_bytes (the hash never reads past a row) */
    region r = region_of(buf, buf_lo, row_bytes, cols, row_bytes);
    return hash_chunk(&r, chunk);
}

blasft_hash128 blasft_hash_combine(const blasft_hash128 *digests, size_t chunks, size_t row_bytes,
                                   size_t cols)
{
    blasft_hash128 total = {0, 0};
    for (size_t c = 0; c < chunks; c++) {
        total.lo += digests[c].lo;
        total.hi += digests[c].hi;
    }
    /* the shape, so that regions of different shapes never compare equal by their sums */
    total.lo = fmix64(total.lo ^ fmix64(row_bytes + 0x9fb21c651e98df25ull * cols));
    total.hi = fmix64(total.hi + cols);
    return total;
}

int blasft_hash_default_threads(void) { return blasft_cfg()->hash_threads; }

typedef struct chunk_pass {
    const region *r;
    blasft_hash128 *out;
} chunk_pass;

static void hash_one(void *arg, size_t c)
{
    chunk_pass *p = arg;
    p->out[c] = hash_chunk(p->r, c);
}

void blasft_hash2d_chunks(const void *base, size_t row_bytes, size_t cols, size_t ld_bytes,
                          int threads, blasft_hash128 *out)
{
    pthread_once(&seed_once, seed_init);
    region r = region_of(base, 0, row_bytes, cols, ld_bytes);
    size_t chunks = blasft_hash_chunk_count(row_bytes, cols);
    if (row_bytes * cols < PARALLEL_MIN_BYTES)
        threads = 1;
    chunk_pass p = {&r, out};
    blasft_pool_for(chunks, hash_one, &p, threads);
}

/* Chunk digests of one pool pass, kept on the stack (8 KiB): larger regions are hashed in slices
 * of 128 MiB whose sums are added up. */
#define SLICE_CHUNKS 512

typedef struct sum_pass {
    const region *r;
    size_t first;
    blasft_hash128 *out;
} sum_pass;

static void hash_slice_one(void *arg, size_t i)
{
    sum_pass *p = arg;
    p->out[i] = hash_chunk(p->r, p->first + i);
}

blasft_hash128 blasft_hash2d(const void *base, size_t row_bytes, size_t cols, size_t ld_bytes,
                             int threads)
{
    pthread_once(&seed_once, seed_init);
    region r = region_of(base, 0, row_bytes, cols, ld_bytes);
    size_t chunks = blasft_hash_chunk_count(row_bytes, cols);
    if (row_bytes * cols < PARALLEL_MIN_BYTES)
        threads = 1;
    blasft_hash128 slice[SLICE_CHUNKS];
    blasft_hash128 sum = {0, 0};
    for (size_t first = 0; first < chunks; first += SLICE_CHUNKS) {
        size_t n = chunks - first < SLICE_CHUNKS ? chunks - first : SLICE_CHUNKS;
        sum_pass p = {&r, first, slice};
        blasft_pool_for(n, hash_slice_one, &p, threads);
        for (size_t i = 0; i < n; i++) {
            sum.lo += slice[i].lo;
            sum.hi += slice[i].hi;
        }
    }
    blasft_hash128 one = sum;
    return blasft_hash_combine(&one, 1, row_bytes, cols);
}
