/* The cache of the engine's own CUDA graphs (graph_cache.h). */
#include "graph_cache.h"

#include "consistency/hash.h"

#include <string.h>

/* captures that may fail before a context stops capturing (a call the capture cannot take) */
enum { kGraphFailures = 4 };
/* A full cache replaces a graph only if it has not been used in this many calls, and only by a
 * key seen since that graph's last use. A capture costs the host about 120 us, two direct
 * enqueues (docs/cublas-benchmark.md, "The engine's own graphs"), so keys cycled through more
 * than the cache holds must not evict each other (each would be captured and evicted before its
 * next use): the graphs kept then serve their calls, the others are enqueued directly. In a cycle
 * longer than this (a solver's hundreds of GEMMs per call) every graph is idle before its next
 * use, but each was used after the missing keys' previous sightings, so they do not replace it.
 * A program that moved on lets its old graphs go: they were not used since. */
enum { kIdleCalls = 4 * BLASFT_GRAPH_ENTRIES };

void blasft_graph_tick(blasft_graph_cache *c) { c->clock++; }

uint64_t blasft_graph_hash(const void *key, size_t bytes)
{
    const blasft_hash128 h = blasft_hash2d(key, bytes, 1, bytes, 1);
    return h.lo ^ h.hi;
}

blasft_graph_entry *blasft_graph_find(blasft_graph_cache *c, uint64_t hash, const void *key,
                                      size_t bytes)
{
    for (int i = 0; i < BLASFT_GRAPH_ENTRIES; i++) {
        blasft_graph_entry *e = &c->e[i];
        if (e->exec && e->hash == hash && !memcmp(e->key, key, bytes)) {
            e->used = c->clock;
            return e;
        }
    }
    return NULL;
}

/* the slot of hash among the keys seen, or -1 */
static int seen_at(const blasft_graph_cache *c, uint64_t hash)
{
    for (int i = 0; i < BLASFT_GRAPH_SEEN; i++)
        if (c->seen[i].hash == hash)
            return i;
    return -1;
}

/* a free entry, else the least recently used */
static blasft_graph_entry *lru(blasft_graph_cache *c)
{
    blasft_graph_entry *e = &c->e[0];
    for (int i = 0; i < BLASFT_GRAPH_ENTRIES; i++) {
        if (!c->e[i].exec)
            return &c->e[i];
        if (c->e[i].used < e->used)
            e = &c->e[i];
    }
    return e;
}

int blasft_graph_seen(const blasft_graph_cache *c, uint64_t hash) { return seen_at(c, hash) >= 0; }

/* The capture rule for a key seen before, last at `last`. */
static int admit_seen(blasft_graph_cache *c, uint64_t last)
{
    if (c->failures >= kGraphFailures)
        return 0;
    const blasft_graph_entry *victim = lru(c);
    return !victim->exec || (c->clock - victim->used > kIdleCalls && victim->used < last);
}

/* The sighting of hash (made now where it was not remembered: then NULL is returned). */
static blasft_graph_sighting *sight(blasft_graph_cache *c, uint64_t hash, int fresh)
{
    const int i = seen_at(c, hash);
    if (i < 0) { /* remembered in the order seen, the oldest forgotten */
        blasft_graph_sighting *s = &c->seen[c->seen_next];
        s->hash = hash;
        s->at = c->clock;
        s->fresh = (uint64_t)fresh;
        c->seen_next = (c->seen_next + 1) % BLASFT_GRAPH_SEEN;
        return NULL;
    }
    return &c->seen[i];
}

int blasft_graph_admit(blasft_graph_cache *c, uint64_t hash)
{
    blasft_graph_sighting *s = sight(c, hash, 0);
    if (!s)
        return 0;
    const uint64_t last = s->at;
    s->at = c->clock;
    return admit_seen(c, last);
}

int blasft_graph_admit_relocated(blasft_graph_cache *c, uint64_t hash, int fresh)
{
    blasft_graph_sighting *s = sight(c, hash, fresh);
    if (!s)
        return 0;
    const uint64_t last = s->at;
    s->at = c->clock;
    s->fresh += (uint64_t)fresh;
    return s->fresh >= 3 && admit_seen(c, last);
}

blasft_graph_entry *blasft_graph_insert(blasft_graph_cache *c, uint64_t hash, const void *key,
                                        size_t bytes, cudaGraphExec_t exec)
{
    blasft_graph_entry *e = lru(c);
    if (e->exec)
        cudaGraphExecDestroy(e->exec);
    memset(e, 0, sizeof *e);
    e->hash = hash;
    e->used = c->clock;
    e->exec = exec;
    memcpy(e->key, key, bytes);
    c->captures++;
    return e;
}

void blasft_graph_failed(blasft_graph_cache *c, uint64_t hash)
{
    c->failures++;
    const int i = seen_at(c, hash);
    if (i >= 0)
        c->seen[i].hash = 0; /* seen once more before another try */
}

void blasft_graph_drop(blasft_graph_cache *c, blasft_graph_entry *e)
{
    cudaGraphExecDestroy(e->exec);
    e->exec = NULL;
    c->failures++;
}

void blasft_graph_clear(blasft_graph_cache *c)
{
    for (int i = 0; i < BLASFT_GRAPH_ENTRIES; i++)
        if (c->e[i].exec) {
            cudaGraphExecDestroy(c->e[i].exec);
            c->e[i].exec = NULL;
        }
}

int blasft_graph_count(const blasft_graph_cache *c)
{
    int n = 0;
    for (int i = 0; i < BLASFT_GRAPH_ENTRIES; i++)
        n += c->e[i].exec != NULL;
    return n;
}
