#include "cache.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Declared host-changed byte ranges kept per entry; more are merged with their nearest
 * neighbour (a superset: more is uploaded, and where the device also wrote, the host wins over
 * a larger area). */
#define MAX_RANGES 16
#define BUCKETS 1024
/* Bytes of a change-hash chunk (hash.c; a chunk's dense bytes are at most this): the upload
 * statistics of a check that copied only changed chunks count this per chunk. */
#define CHUNK_BYTES ((size_t)256 << 10)

typedef struct range {
    size_t lo, hi; /* byte offsets from the key's host address, hi exclusive */
} range;

struct blasft_cache_entry {
    blasft_cache_key key;
    size_t row_bytes, span;  /* bytes per column; host bytes from the first to the last byte */
    size_t data_bytes;
    void *data;
    void *enc[BLASFT_CACHE_SLOTS];
    size_t enc_bytes[BLASFT_CACHE_SLOTS];
    bool enc_valid[BLASFT_CACHE_SLOTS];
    bool loaded;             /* the device copy holds some version of the data */
    bool device_changed;
    bool host_all_changed;   /* declared (or detected) changed everywhere */
    int nranges;
    range ranges[MAX_RANGES];
    bool declared_unchanged; /* one use without the check */
    bool needs_check;        /* the memory was used through another entry since this one's last
                                use: declarations of "unchanged" do not cover it */
    bool hash_valid;         /* dig describes the host data as last synchronised */
    blasft_hash128 *dig;     /* per chunk of the change hash (hash.h); mode hash only */
    size_t nchunks;
    bool last_check_same;    /* the last check found no change: the next one may be deferred */
    int pins;                /* users holding a ref */
    bool busy;               /* a thread synchronises it or writes it: others wait */
    bool detached;           /* not findable any more; freed at its last release */
    bool mapped;
    blasft_cache_entry *bucket_next;
    blasft_cache_entry *lru_prev, *lru_next; /* mapped entries, most recent first */
};

struct blasft_cache {
    blasft_devmem *dev;
    blasft_cache_opts opts;
    pthread_mutex_t lock;
    pthread_cond_t idle; /* an entry stopped being busy */
    blasft_cache_entry *bucket[BUCKETS];
    blasft_cache_entry *lru_head, *lru_tail;
    size_t used;
    blasft_cache_stats st;
    blasft_cache *registry_next;
};

/* Every live cache, for the public declarations (blasft_cache_mark_*). */
static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static blasft_cache *registry;

static size_t type_bytes(blasft_type t) { return (size_t)blasft_type_size(t); }

static size_t bucket_of(const blasft_cache_key *k)
{
    uint64_t x = (uint64_t)(uintptr_t)k->host;
    x ^= x >> 29;
    x *= 0xbf58476d1ce4e5b9ull;
    return (size_t)(x >> 40) % BUCKETS;
}

static bool key_equal(const blasft_cache_key *a, const blasft_cache_key *b)
{
    return a->host == b->host && a->type == b->type && a->rows == b->rows && a->cols == b->cols &&
           a->ld == b->ld;
}

/* ---- map and LRU (cache lock held) ---- */

static void lru_unlink(blasft_cache *c, blasft_cache_entry *e)
{
    if (e->lru_prev)
        e->lru_prev->lru_next = e->lru_next;
    else
        c->lru_head = e->lru_next;
    if (e->lru_next)
        e->lru_next->lru_prev = e->lru_prev;
    else
        c->lru_tail = e->lru_prev;
    e->lru_prev = e->lru_next = NULL;
}

static void lru_push_front(blasft_cache *c, blasft_cache_entry *e)
{
    e->lru_prev = NULL;
    e->lru_next = c->lru_head;
    if (c->lru_head)
        c->lru_head->lru_prev = e;
    c->lru_head = e;
    if (!c->lru_tail)
        c->lru_tail = e;
}

static blasft_cache_entry *map_find(blasft_cache *c, const blasft_cache_key *k)
{
    for (blasft_cache_entry *e = c->bucket[bucket_of(k)]; e; e = e->bucket_next)
        if (key_equal(&e->key, k))
            return e;
    return NULL;
}

static void map_insert(blasft_cache *c, blasft_cache_entry *e)
{
    size_t b = bucket_of(&e->key);
    e->bucket_next = c->bucket[b];
    c->bucket[b] = e;
    e->mapped = true;
    lru_push_front(c, e);
    c->st.entries++;
}

static void map_remove(blasft_cache *c, blasft_cache_entry *e)
{
    if (!e->mapped)
        return;
    blasft_cache_entry **p = &c->bucket[bucket_of(&e->key)];
    while (*p != e)
        p = &(*p)->bucket_next;
    *p = e->bucket_next;
    lru_unlink(c, e);
    e->mapped = false;
    c->st.entries--;
}

static void entry_free(blasft_cache *c, blasft_cache_entry *e)
{
    c->dev->ops->free(c->dev, e->data);
    c->used -= e->data_bytes;
    for (int s = 0; s < BLASFT_CACHE_SLOTS; s++)
        if (e->enc[s]) {
            c->dev->ops->free(c->dev, e->enc[s]);
            c->used -= e->enc_bytes[s];
        }
    free(e->dig);
    free(e);
}

/* ---- 2-D copies of the whole region or byte ranges of it ---- */

static const char *host_at(const blasft_cache_entry *e, size_t off)
{
    return (const char *)e->key.host + off;
}

static size_t ld_bytes(const blasft_cache_entry *e) { return (size_t)e->key.ld * type_bytes(e->key.type); }

/* The whole region; with dig, each chunk's digest of what was uploaded (hashed in the same pass
 * where the backend can). */
static int upload_all(blasft_cache *c, blasft_cache_entry *e, blasft_hash128 *dig)
{
    const blasft_devmem_ops *o = c->dev->ops;
    if (o->upload_chunks) {
        size_t copied;
        return o->upload_chunks(c->dev, e->data, e->key.host, e->row_bytes, (size_t)e->key.cols,
                                ld_bytes(e), NULL, dig, &copied, NULL);
    }
    int rc = o->upload(c->dev, e->data, e->row_bytes, e->key.host, ld_bytes(e), e->row_bytes,
                       (size_t)e->key.cols);
    if (rc == 0 && dig)
        blasft_hash2d_chunks(e->key.host, e->row_bytes, (size_t)e->key.cols, ld_bytes(e),
                             c->opts.hash_threads, dig);
    return rc;
}

/* Applies fn to the parts of host byte range [lo, hi) that lie inside the region, as 2-D pieces:
 * a partial first column, whole columns in one piece, a partial last column. */
typedef int piece_fn(blasft_cache *c, blasft_cache_entry *e, size_t col, size_t row_off,
                     size_t width, size_t ncols);

static int for_pieces(blasft_cache *c, blasft_cache_entry *e, size_t lo, size_t hi, piece_fn *fn)
{
    size_t ldb = ld_bytes(e), rb = e->row_bytes, cols = (size_t)e->key.cols;
    size_t j = lo / ldb;
    while (j < cols && j * ldb < hi) {
        size_t cs = j * ldb, ce = cs + rb;
        size_t a = lo > cs ? lo : cs, b = hi < ce ? hi : ce;
        if (a == cs && b == ce) { /* a run of whole columns */
            size_t n = 1;
            while (j + n < cols && (j + n) * ldb + rb <= hi)
                n++;
            if (fn(c, e, j, 0, rb, n))
                return -1;
            j += n;
            continue;
        }
        if (a < b && fn(c, e, j, a - cs, b - a, 1))
            return -1;
        j++;
    }
    return 0;
}

static int upload_piece(blasft_cache *c, blasft_cache_entry *e, size_t col, size_t row_off,
                        size_t width, size_t ncols)
{
    __atomic_fetch_add(&c->st.upload_bytes, width * ncols, __ATOMIC_RELAXED);
    return c->dev->ops->upload(c->dev, (char *)e->data + col * e->row_bytes + row_off,
                               e->row_bytes, host_at(e, col * ld_bytes(e) + row_off),
                               ld_bytes(e), width, ncols);
}

static int download_piece(blasft_cache *c, blasft_cache_entry *e, size_t col, size_t row_off,
                          size_t width, size_t ncols)
{
    __atomic_fetch_add(&c->st.download_bytes, width * ncols, __ATOMIC_RELAXED);
    return c->dev->ops->download(c->dev, (char *)host_at(e, col * ld_bytes(e) + row_off),
                                 ld_bytes(e), (char *)e->data + col * e->row_bytes + row_off,
                                 e->row_bytes, width, ncols);
}

static int cmp_range(const void *a, const void *b)
{
    const range *x = a, *y = b;
    return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* Downloads the region except the ranges (sorted, disjoint): host writes there win. */
static int download_except(blasft_cache *c, blasft_cache_entry *e, const range *r, int n)
{
    size_t at = 0;
    for (int i = 0; i <= n; i++) {
        size_t end = i < n ? r[i].lo : e->span;
        if (end > at && for_pieces(c, e, at, end, download_piece))
            return -1;
        if (i < n && r[i].hi > at)
            at = r[i].hi;
    }
    return 0;
}

/* Adds [lo, hi) to the entry's declared ranges, coalescing (cache lock held). */
static void add_range(blasft_cache_entry *e, size_t lo, size_t hi)
{
    if (e->host_all_changed)
        return;
    e->ranges[e->nranges++] = (range){lo, hi};
    qsort(e->ranges, (size_t)e->nranges, sizeof(range), cmp_range);
    int w = 0;
    for (int i = 1; i < e->nranges; i++) {
        if (e->ranges[i].lo <= e->ranges[w].hi) {
            if (e->ranges[i].hi > e->ranges[w].hi)
                e->ranges[w].hi = e->ranges[i].hi;
        } else {
            e->ranges[++w] = e->ranges[i];
        }
    }
    e->nranges = w + 1;
    if (e->nranges == MAX_RANGES) { /* merge the closest neighbours to keep a free slot */
        int best = 0;
        for (int i = 1; i + 1 < e->nranges; i++)
            if (e->ranges[i + 1].lo - e->ranges[i].hi < e->ranges[best + 1].lo - e->ranges[best].hi)
                best = i;
        e->ranges[best].hi = e->ranges[best + 1].hi;
        memmove(&e->ranges[best + 1], &e->ranges[best + 2],
                sizeof(range) * (size_t)(e->nranges - best - 2));
        e->nranges--;
    }
    if (e->nranges == 1 && e->ranges[0].lo == 0 && e->ranges[0].hi >= e->span) {
        e->host_all_changed = true;
        e->nranges = 0;
    }
}

/* ---- budget ---- */

/* Makes room for bytes more (cache lock held): evicts unused entries, least recently used first,
 * writing back device changes. 0, or -1 if it cannot. */
static int make_room(blasft_cache *c, size_t bytes)
{
    if (bytes > c->opts.budget)
        return -1;
    blasft_cache_entry *e = c->lru_tail;
    while (c->used + bytes > c->opts.budget && e) {
        blasft_cache_entry *prev = e->lru_prev;
        if (e->pins == 0 && !e->busy) {
            if (e->device_changed) {
                range r[MAX_RANGES];
                memcpy(r, e->ranges, sizeof r);
                if (!e->host_all_changed && download_except(c, e, r, e->nranges) != 0) {
                    e = prev;
                    continue; /* keep what cannot be written back */
                }
                c->st.write_backs++;
            }
            map_remove(c, e);
            entry_free(c, e);
            c->st.evictions++;
        }
        e = prev;
    }
    return c->used + bytes <= c->opts.budget ? 0 : -1;
}

/* Device memory for bytes (cache lock held), evicting for budget and for a device that is full
 * before the budget is. */
static int dev_alloc(blasft_cache *c, size_t bytes, void **p)
{
    if (make_room(c, bytes))
        return -1;
    while (c->dev->ops->alloc(c->dev, bytes, p) != 0) {
        /* the device is fuller than the budget says: shrink the cache until it fits */
        size_t before = c->used;
        if (before == 0 || make_room(c, c->opts.budget - before + bytes) || c->used == before)
            return -1;
    }
    c->used += bytes;
    return 0;
}

/* ---- public ---- */

blasft_cache *blasft_cache_create(blasft_devmem *dev, const blasft_cache_opts *opts)
{
    blasft_cache *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->dev = dev;
    c->opts = *opts;
    if (c->opts.budget == 0)
        c->opts.budget = dev->ops->default_budget(dev);
    pthread_mutex_init(&c->lock, NULL);
    pthread_cond_init(&c->idle, NULL);
    pthread_mutex_lock(&registry_lock);
    c->registry_next = registry;
    registry = c;
    pthread_mutex_unlock(&registry_lock);
    return c;
}

void blasft_cache_destroy(blasft_cache *c)
{
    if (!c)
        return;
    pthread_mutex_lock(&registry_lock);
    blasft_cache **p = &registry;
    while (*p != c)
        p = &(*p)->registry_next;
    *p = c->registry_next;
    pthread_mutex_unlock(&registry_lock);
    pthread_mutex_lock(&c->lock);
    while (c->lru_head) {
        blasft_cache_entry *e = c->lru_head;
        if (e->device_changed && !e->host_all_changed)
            download_except(c, e, e->ranges, e->nranges);
        map_remove(c, e);
        entry_free(c, e);
    }
    pthread_mutex_unlock(&c->lock);
    pthread_cond_destroy(&c->idle);
    pthread_mutex_destroy(&c->lock);
    free(c);
}

blasft_cache_mode blasft_cache_get_mode(const blasft_cache *c) { return c->opts.mode; }

static void hash_into(blasft_cache *c, const blasft_cache_entry *e, blasft_hash128 *dig)
{
    blasft_hash2d_chunks(e->key.host, e->row_bytes, (size_t)e->key.cols, ld_bytes(e),
                         c->opts.hash_threads, dig);
}

static bool digests_equal(const blasft_hash128 *a, const blasft_hash128 *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!blasft_hash_equal(a[i], b[i]))
            return false;
    return true;
}

/* A new entry with device memory for its data (cache lock held); NULL if it does not fit. */
static blasft_cache_entry *entry_new(blasft_cache *c, const blasft_cache_key *k)
{
    blasft_cache_entry *e = calloc(1, sizeof *e);
    if (!e)
        return NULL;
    e->key = *k;
    e->row_bytes = (size_t)k->rows * type_bytes(k->type);
    e->span = k->cols > 0 ? (size_t)(k->cols - 1) * ld_bytes(e) + e->row_bytes : 0;
    e->data_bytes = e->row_bytes * (size_t)k->cols;
    if (dev_alloc(c, e->data_bytes ? e->data_bytes : 1, &e->data)) {
        free(e);
        c->st.over_budget++;
        return NULL;
    }
    if (!e->data_bytes) /* counted as 1 byte above */
        e->data_bytes = 1;
    if (c->opts.mode == BLASFT_CACHE_HASH) {
        e->nchunks = blasft_hash_chunk_count(e->row_bytes, (size_t)k->cols);
        e->dig = malloc(sizeof *e->dig * (e->nchunks ? e->nchunks : 1));
        if (!e->dig) {
            entry_free(c, e);
            return NULL;
        }
    }
    return e;
}

/* Drops a reference (cache lock held). */
static void unpin(blasft_cache *c, blasft_cache_entry *e)
{
    if (--e->pins == 0 && e->detached)
        entry_free(c, e);
}

static void detach(blasft_cache *c, blasft_cache_entry *e)
{
    map_remove(c, e);
    e->detached = true;
    c->st.detached++;
}

int blasft_cache_acquire(blasft_cache *c, const blasft_cache_key *key, unsigned flags,
                         blasft_cache_ref *ref)
{
    memset(ref, 0, sizeof *ref);
    const bool write = flags & BLASFT_CACHE_WRITE;
    const bool load = !(write && (flags & BLASFT_CACHE_NO_LOAD));
    const bool caching = c->opts.mode != BLASFT_CACHE_OFF;
    int rc = 0;

    pthread_mutex_lock(&c->lock);
    c->st.acquires++;
    blasft_cache_entry *e;
    for (;;) {
        e = caching ? map_find(c, key) : NULL;
        if (!e || !e->busy)
            break;
        if (flags & BLASFT_CACHE_TRY) {
            pthread_mutex_unlock(&c->lock);
            return -3;
        }
        pthread_cond_wait(&c->idle, &c->lock);
    }
    if (e && write && e->pins > 0) {
        /* readers still use this copy: the writer gets its own, the readers keep theirs;
         * what the host declared about the old copy concerns the new one too */
        detach(c, e); /* freed by its last reader's release */
        e = entry_new(c, key);
        if (e)
            e->host_all_changed = true;
    } else if (!e) {
        e = entry_new(c, key);
    }
    if (!e) {
        pthread_mutex_unlock(&c->lock);
        return -1;
    }
    if (!e->mapped && !e->detached) {
        if (caching)
            map_insert(c, e);
        else
            e->detached = true, ref->did |= BLASFT_CACHE_DID_UNCACHED;
    } else if (e->mapped) {
        lru_unlink(c, e);
        lru_push_front(c, e);
    }
    e->busy = true;
    e->pins++;

    /* what the host declared since the last use, taken now: declarations arriving while this
     * thread works apply to the next use */
    bool all = e->host_all_changed || !e->loaded;
    int nr = e->nranges;
    range r[MAX_RANGES];
    memcpy(r, e->ranges, sizeof r);
    bool skip_check = e->declared_unchanged || c->opts.mode == BLASFT_CACHE_DECLARED;
    bool dev_changed = e->device_changed;
    e->host_all_changed = false;
    e->nranges = 0;
    e->declared_unchanged = false;
    e->needs_check = false;
    /* A declaration "unchanged since the last use" speaks of the memory's last use, through
     * whichever entry: other entries over the same bytes (other shapes) lose theirs, and cannot
     * take one until they are checked themselves (they may be older than this use). */
    uintptr_t elo = (uintptr_t)e->key.host, ehi = elo + e->span;
    for (blasft_cache_entry *o = c->lru_head; o; o = o->lru_next) {
        uintptr_t olo = (uintptr_t)o->key.host;
        if (o != e && olo < ehi && olo + o->span > elo) {
            o->declared_unchanged = false;
            o->needs_check = true;
        }
    }
    pthread_mutex_unlock(&c->lock);

    unsigned did = 0;
    const bool hash_mode = c->opts.mode == BLASFT_CACHE_HASH;
    blasft_hash128 *known = NULL; /* the host data's chunk digests, when the check computed them */
    bool deferred = false, fused = false;
    if (hash_mode && nr > 0 && !dev_changed) {
        /* a declaration says what changed, not that the rest did not: only mode declared trusts
         * that, mode hash uploads everything (the check would fail anyway) */
        all = true;
        nr = 0;
    }
    if (!load) {
        all = false;
        nr = 0;
        dev_changed = false; /* overwritten entirely by the writer */
    } else if (!all && nr == 0 && hash_mode && !(dev_changed && !e->hash_valid) &&
               (!skip_check || !e->hash_valid)) {
        /* (a device copy written by a writer that did not load it is current by definition:
         * there is no host state to compare with until it is downloaded) */
        pthread_mutex_lock(&c->lock);
        bool alone = e->pins == 1; /* busy: nobody can join until this thread is done */
        pthread_mutex_unlock(&c->lock);
        bool in_place = alone && e->hash_valid && !dev_changed && c->dev->ops->upload_chunks;
        if (in_place && (flags & BLASFT_CACHE_DEFER_CHECK) && !write && e->last_check_same) {
            /* the caller starts on the copy and verifies it beside (blasft_cache_verify) */
            deferred = true;
            did |= BLASFT_CACHE_DID_DEFERRED;
        } else if (in_place) {
            /* check and upload in one pass: only chunks whose digest changed are copied */
            size_t copied = 0;
            rc = c->dev->ops->upload_chunks(c->dev, e->data, e->key.host, e->row_bytes,
                                            (size_t)e->key.cols, ld_bytes(e), e->dig, e->dig,
                                            &copied, NULL);
            fused = true;
            did |= BLASFT_CACHE_DID_CHECK | (copied ? BLASFT_CACHE_DID_UPLOAD : 0);
            if (copied)
                for (int s = 0; s < BLASFT_CACHE_SLOTS; s++)
                    e->enc_valid[s] = false;
            e->last_check_same = copied == 0;
            e->hash_valid = e->loaded = rc == 0;
            pthread_mutex_lock(&c->lock);
            c->st.checks++;
            c->st.check_bytes += e->data_bytes;
            c->st.check_mismatches += copied > 0;
            c->st.upload_bytes += copied == e->nchunks ? e->data_bytes : copied * CHUNK_BYTES;
            pthread_mutex_unlock(&c->lock);
        } else {
            known = malloc(sizeof *known * (e->nchunks ? e->nchunks : 1));
            if (!known) {
                rc = -2;
            } else {
                hash_into(c, e, known);
                did |= BLASFT_CACHE_DID_CHECK;
                bool same = e->hash_valid && digests_equal(known, e->dig, e->nchunks);
                e->last_check_same = same;
                if (!same)
                    all = true;
                pthread_mutex_lock(&c->lock);
                c->st.check_mismatches += e->hash_valid && !same;
                c->st.conflicts += e->hash_valid && !same && dev_changed;
                c->st.checks++;
                c->st.check_bytes += e->data_bytes;
                pthread_mutex_unlock(&c->lock);
            }
        }
    }

    if (rc == 0 && !fused && !deferred && (all || nr > 0)) {
        /* the device copy changes: a copy that other threads still read must not */
        pthread_mutex_lock(&c->lock);
        if (e->pins > 1 && e->mapped) {
            blasft_cache_entry *fresh = entry_new(c, key);
            if (!fresh) {
                e->busy = false;
                unpin(c, e);
                pthread_cond_broadcast(&c->idle);
                pthread_mutex_unlock(&c->lock);
                free(known);
                return -1;
            }
            fresh->last_check_same = e->last_check_same;
            e->busy = false;
            detach(c, e);
            unpin(c, e);
            pthread_cond_broadcast(&c->idle);
            e = fresh;
            map_insert(c, e);
            e->busy = true;
            e->pins = 1;
            all = true; /* the fresh copy holds nothing yet */
            dev_changed = false;
        }
        pthread_mutex_unlock(&c->lock);
        if (dev_changed && !all) {
            /* both changed: the device's data outside the host's ranges comes down first */
            rc = download_except(c, e, r, nr);
            did |= BLASFT_CACHE_DID_DOWNLOAD;
        } else if (dev_changed) {
            pthread_mutex_lock(&c->lock);
            c->st.conflicts++;
            pthread_mutex_unlock(&c->lock);
        }
        bool hashed = false;
        if (rc == 0 && all) {
            /* hashed in the upload's pass unless the check already did */
            rc = upload_all(c, e, hash_mode && !known ? e->dig : NULL);
            hashed = hash_mode && !known;
            __atomic_fetch_add(&c->st.upload_bytes, e->row_bytes * (size_t)e->key.cols,
                               __ATOMIC_RELAXED);
            did |= BLASFT_CACHE_DID_UPLOAD;
        } else if (rc == 0) {
            for (int i = 0; i < nr && rc == 0; i++)
                rc = for_pieces(c, e, r[i].lo, r[i].hi, upload_piece);
            did |= BLASFT_CACHE_DID_PARTIAL;
        }
        if (hash_mode && rc == 0 && !hashed) { /* the reference for the next check */
            if (known)
                memcpy(e->dig, known, sizeof *known * e->nchunks);
            else
                hash_into(c, e, e->dig);
            hashed = true;
        }
        for (int s = 0; s < BLASFT_CACHE_SLOTS; s++)
            e->enc_valid[s] = false;
        e->device_changed = false;
        e->loaded = rc == 0;
        e->hash_valid = hashed && rc == 0;
    } else if (!load) {
        for (int s = 0; s < BLASFT_CACHE_SLOTS; s++)
            e->enc_valid[s] = false;
        e->hash_valid = false;
        e->loaded = true;
    }
    free(known);

    for (int s = 0; s < BLASFT_CACHE_SLOTS && rc == 0; s++) {
        if (!(flags & BLASFT_CACHE_ENC(s)) || !c->opts.codec)
            continue;
        const blasft_cache_codec *cd = c->opts.codec;
        size_t nb = cd->bytes(cd->ctx, s, key->type, key->rows, key->cols);
        if (nb == 0)
            continue;
        if (!e->enc[s]) {
            pthread_mutex_lock(&c->lock);
            int a = dev_alloc(c, nb, &e->enc[s]);
            pthread_mutex_unlock(&c->lock);
            if (a) {
                rc = -1;
                break;
            }
            e->enc_bytes[s] = nb;
        }
        if (!e->enc_valid[s] && load &&
            (flags & BLASFT_CACHE_ENC_IF_SAME) &&
            (did & (BLASFT_CACHE_DID_UPLOAD | BLASFT_CACHE_DID_PARTIAL | BLASFT_CACHE_DID_DOWNLOAD))) {
            ref->enc[s] = NULL; /* changed now: no separate encoding (see cache.h) */
            continue;
        }
        if (!e->enc_valid[s] && load) {
            if (cd->encode(cd->ctx, s, key->type, key->rows, key->cols, e->data, e->enc[s])) {
                rc = -2;
                break;
            }
            e->enc_valid[s] = true;
            did |= BLASFT_CACHE_DID_ENCODE;
            pthread_mutex_lock(&c->lock);
            c->st.encodes++;
            pthread_mutex_unlock(&c->lock);
        }
        ref->enc[s] = e->enc[s];
    }

    pthread_mutex_lock(&c->lock);
    if (did & (BLASFT_CACHE_DID_UPLOAD | BLASFT_CACHE_DID_PARTIAL))
        c->st.uploads += !!(did & BLASFT_CACHE_DID_UPLOAD),
        c->st.partial_uploads += !!(did & BLASFT_CACHE_DID_PARTIAL);
    else if (load && rc == 0 && !deferred) /* a deferred check counts when it is verified */
        c->st.reuses++;
    if (rc != 0) {
        /* nothing held; the copy's state is unknown, so it is dropped */
        e->busy = false;
        if (e->mapped)
            detach(c, e);
        else
            e->detached = true;
        unpin(c, e);
        pthread_cond_broadcast(&c->idle);
        pthread_mutex_unlock(&c->lock);
        memset(ref, 0, sizeof *ref);
        return rc;
    }
    if (!write && !deferred) { /* readers share; a writer (or a reader whose check is deferred)
                                  keeps it to itself until release (verify) */
        e->busy = false;
        pthread_cond_broadcast(&c->idle);
    }
    pthread_mutex_unlock(&c->lock);
    ref->entry = e;
    ref->data = e->data;
    ref->ld = key->rows > 1 ? key->rows : 1;
    ref->did |= did;
    ref->writer = write;
    ref->pending = deferred;
    return 0;
}

int blasft_cache_download_fenced(blasft_cache *c, blasft_cache_ref *ref,
                                 const blasft_devmem_fence *fence, size_t *done)
{
    if (done)
        *done = SIZE_MAX;
    blasft_cache_entry *e = ref->entry;
    pthread_mutex_lock(&c->lock);
    bool all = e->host_all_changed;
    int nr = e->nranges;
    range r[MAX_RANGES];
    memcpy(r, e->ranges, sizeof r);
    pthread_mutex_unlock(&c->lock);
    const bool hash_mode = c->opts.mode == BLASFT_CACHE_HASH;
    const blasft_devmem_ops *o = c->dev->ops;
    int rc = 0;
    bool hashed = false;
    if (!all && nr == 0 && o->download_chunks) {
        /* the whole copy, its hash taken in the unpack pass */
        rc = o->download_chunks(c->dev, (void *)e->key.host, ld_bytes(e), e->data, e->row_bytes,
                                (size_t)e->key.cols, hash_mode ? e->dig : NULL, fence, done);
        hashed = hash_mode;
        __atomic_fetch_add(&c->st.download_bytes, e->row_bytes * (size_t)e->key.cols,
                           __ATOMIC_RELAXED);
    } else if (!all) {
        rc = download_except(c, e, r, nr);
    }
    pthread_mutex_lock(&c->lock);
    c->st.downloads += !all;
    pthread_mutex_unlock(&c->lock);
    if (rc)
        return -2;
    if (hash_mode && !hashed)
        hash_into(c, e, e->dig);
    pthread_mutex_lock(&c->lock);
    e->device_changed = false;
    e->hash_valid = hash_mode;
    /* a result is rewritten by every call that produces it: no prediction for its checks */
    e->last_check_same = false;
    pthread_mutex_unlock(&c->lock);
    ref->downloaded = true;
    return 0;
}

int blasft_cache_download(blasft_cache *c, blasft_cache_ref *ref)
{
    return blasft_cache_download_fenced(c, ref, NULL, NULL);
}

int blasft_cache_verify(blasft_cache *c, blasft_cache_ref *ref,
                        const blasft_devmem_hook *before_write)
{
    blasft_cache_entry *e = ref->entry;
    if (!ref->pending)
        return 0;
    /* the entry is this thread's alone (busy) and read by nobody else (pins was 1 at the
     * acquire), so changed chunks are written in place once the caller's kernel is done */
    size_t copied = 0;
    int rc = c->dev->ops->upload_chunks(c->dev, e->data, e->key.host, e->row_bytes,
                                        (size_t)e->key.cols, ld_bytes(e), e->dig, e->dig, &copied,
                                        before_write);
    const blasft_cache_codec *cd = c->opts.codec;
    if (rc == 0 && copied)
        for (int s = 0; s < BLASFT_CACHE_SLOTS; s++) {
            e->enc_valid[s] = false;
            if (rc == 0 && ref->enc[s] && cd) {
                rc = cd->encode(cd->ctx, s, e->key.type, e->key.rows, e->key.cols, e->data,
                                e->enc[s]);
                e->enc_valid[s] = rc == 0;
            }
        }
    pthread_mutex_lock(&c->lock);
    c->st.checks++;
    c->st.check_bytes += e->data_bytes;
    if (rc == 0 && copied) {
        c->st.check_mismatches++;
        c->st.uploads++;
        c->st.upload_bytes += copied == e->nchunks ? e->data_bytes : copied * CHUNK_BYTES;
    } else if (rc == 0) {
        c->st.reuses++;
    }
    e->last_check_same = rc == 0 && copied == 0;
    if (rc != 0) /* the copy's state is unknown: the next use uploads it all */
        e->loaded = e->hash_valid = false;
    ref->did |= BLASFT_CACHE_DID_CHECK | (copied ? BLASFT_CACHE_DID_UPLOAD : 0);
    ref->pending = false;
    e->busy = false; /* readers may share it now */
    pthread_cond_broadcast(&c->idle);
    pthread_mutex_unlock(&c->lock);
    return rc != 0 ? -2 : copied > 0;
}

void blasft_cache_release(blasft_cache *c, blasft_cache_ref *ref, unsigned how)
{
    blasft_cache_entry *e = ref->entry;
    if (!e)
        return;
    pthread_mutex_lock(&c->lock);
    if (how & BLASFT_CACHE_DEVICE_WROTE) {
        e->device_changed = !ref->downloaded;
        for (int s = 0; s < BLASFT_CACHE_SLOTS; s++)
            e->enc_valid[s] = e->enc[s] && (ref->enc_written & (1u << s));
    }
    if (ref->writer || ref->pending) {
        /* the writer's (or an unverified reader's) exclusive hold ends */
        e->busy = false;
        pthread_cond_broadcast(&c->idle);
    }
    if (e->device_changed && e->detached && e->pins == 1) {
        /* a written private copy (mode off, or replaced) must reach the host before it goes */
        if (!e->host_all_changed)
            download_except(c, e, e->ranges, e->nranges);
        c->st.write_backs++;
    }
    unpin(c, e);
    pthread_mutex_unlock(&c->lock);
    memset(ref, 0, sizeof *ref);
}

int blasft_cache_sync_host(blasft_cache *c, const blasft_cache_key *key)
{
    pthread_mutex_lock(&c->lock);
    blasft_cache_entry *e;
    for (;;) {
        e = map_find(c, key);
        if (!e || !e->busy)
            break;
        pthread_cond_wait(&c->idle, &c->lock);
    }
    if (!e || !e->device_changed) {
        pthread_mutex_unlock(&c->lock);
        return 0;
    }
    e->busy = true;
    e->pins++;
    pthread_mutex_unlock(&c->lock);
    blasft_cache_ref ref = {.entry = e};
    int rc = blasft_cache_download(c, &ref);
    pthread_mutex_lock(&c->lock);
    e->busy = false;
    pthread_cond_broadcast(&c->idle);
    unpin(c, e);
    pthread_mutex_unlock(&c->lock);
    return rc;
}

void blasft_cache_mark_host_changed(blasft_cache *c, const void *ptr, size_t bytes)
{
    uintptr_t lo = (uintptr_t)ptr, hi = lo + bytes;
    pthread_mutex_lock(&c->lock);
    for (blasft_cache_entry *e = c->lru_head; e; e = e->lru_next) {
        uintptr_t elo = (uintptr_t)e->key.host, ehi = elo + e->span;
        if (hi <= elo || lo >= ehi)
            continue;
        e->declared_unchanged = false;
        add_range(e, (lo > elo ? lo : elo) - elo, (hi < ehi ? hi : ehi) - elo);
    }
    pthread_mutex_unlock(&c->lock);
}

void blasft_cache_mark_host_unchanged(blasft_cache *c, const void *ptr, size_t bytes)
{
    uintptr_t lo = (uintptr_t)ptr, hi = lo + bytes;
    pthread_mutex_lock(&c->lock);
    for (blasft_cache_entry *e = c->lru_head; e; e = e->lru_next) {
        uintptr_t elo = (uintptr_t)e->key.host, ehi = elo + e->span;
        /* a declared change since the last use stays: the later declaration cannot undo it */
        if (elo >= lo && ehi <= hi && !e->host_all_changed && e->nranges == 0 && !e->needs_check)
            e->declared_unchanged = true;
    }
    pthread_mutex_unlock(&c->lock);
}

void blasft_cache_mark_device_changed(blasft_cache *c, const blasft_cache_key *key)
{
    pthread_mutex_lock(&c->lock);
    blasft_cache_entry *e = map_find(c, key);
    if (e && e->loaded) {
        e->device_changed = true;
        for (int s = 0; s < BLASFT_CACHE_SLOTS; s++)
            e->enc_valid[s] = false;
    }
    pthread_mutex_unlock(&c->lock);
}

void blasft_cache_get_stats(blasft_cache *c, blasft_cache_stats *out)
{
    pthread_mutex_lock(&c->lock);
    *out = c->st;
    out->used_bytes = c->used;
    out->budget_bytes = c->opts.budget;
    pthread_mutex_unlock(&c->lock);
}

/* The public declarations (blas_ft_cache.h) reach every cache through the registry. */
void blasft_cache_registry_mark(const void *ptr, size_t bytes, bool changed)
{
    pthread_mutex_lock(&registry_lock);
    for (blasft_cache *c = registry; c; c = c->registry_next) {
        if (changed)
            blasft_cache_mark_host_changed(c, ptr, bytes);
        else
            blasft_cache_mark_host_unchanged(c, ptr, bytes);
    }
    pthread_mutex_unlock(&registry_lock);
}
