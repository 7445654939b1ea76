/* The engine's own CUDA graphs (cuda/gpu_graphs.cu, BLASFT_GPU_GRAPHS). Enqueueing one protected
 * GEMM takes about 25 CUDA and cuBLAS calls, 70-90 us of the caller's thread, which bounds a
 * stream of small protected GEMMs (docs/cublas-benchmark.md). A call repeated with the same
 * arguments (the same operands, shapes, scalars and parameters: a framework's loop) is captured
 * once into a graph and then replayed with one launch; a small call whose operands keep moving
 * is replayed by the graph of its shape on copies (gpu_graphs.cu, relocated replays). This is the
 * cache of such graphs, per engine context: exact keys (the caller's bytes, compared whole), a
 * hash for the lookup, and an admission rule that captures a key only the second time it is seen
 * (a relocated key the third time at new addresses) and, in a full cache, replaces only a graph
 * left unused for a while (least recently used first). */
#ifndef BLASFT_GRAPH_CACHE_H
#define BLASFT_GRAPH_CACHE_H

#include <cuda_runtime_api.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum {
    BLASFT_GRAPH_KEY_BYTES = 448,  /* the largest key (a half or bfloat16 call's) */
    BLASFT_GRAPH_META_BYTES = 128, /* what the caller keeps with a graph (its report) */
    BLASFT_GRAPH_ENTRIES = 64,     /* graphs per context */
    BLASFT_GRAPH_SEEN = 512,       /* keys remembered as seen (hashes, the latest; a small call
                                    * registers two: its own and its relocated key) */
};

typedef struct blasft_graph_entry {
    uint64_t hash, used;
    cudaGraphExec_t exec; /* NULL: a free entry */
    unsigned char key[BLASFT_GRAPH_KEY_BYTES];
    uint64_t meta[BLASFT_GRAPH_META_BYTES / 8];
} blasft_graph_entry;

typedef struct blasft_graph_sighting {
    uint64_t hash, at; /* a key seen, and the lookup clock when it was last seen */
    uint64_t fresh;    /* relocated keys: sightings with operands at addresses not seen before */
} blasft_graph_sighting;

typedef struct blasft_graph_cache {
    blasft_graph_entry e[BLASFT_GRAPH_ENTRIES];
    blasft_graph_sighting seen[BLASFT_GRAPH_SEEN];
    int seen_next;            /* where the next key seen is remembered */
    uint64_t clock;           /* calls looked up so far (blasft_graph_tick): the entries' recency */
    uint64_t captures, hits;  /* graphs made and replays of them, over the cache's life (tests) */
    int failures;             /* captures that failed: at kGraphFailures the cache stops */
} blasft_graph_cache;

uint64_t blasft_graph_hash(const void *key, size_t bytes);
/* One call looked up: the clock of the entries' recency and the keys' sightings. */
void blasft_graph_tick(blasft_graph_cache *c);
/* The entry of this key (bytes <= BLASFT_GRAPH_KEY_BYTES, compared whole), marked as used now,
 * or NULL. The caller counts its replays in `hits`. */
blasft_graph_entry *blasft_graph_find(blasft_graph_cache *c, uint64_t hash, const void *key,
                                      size_t bytes);
/* 1 where a missing key should be captured now: seen before, captures not failing, and room in
 * the cache, or a graph unused for the last 256 calls and not since this key's previous sighting
 * to replace (a graph used in between serves a cycle this key is part of); else 0. The key's
 * sighting is remembered either way. */
int blasft_graph_admit(blasft_graph_cache *c, uint64_t hash);
/* 1 where this key is among those seen (remembered), else 0. */
int blasft_graph_seen(const blasft_graph_cache *c, uint64_t hash);
/* blasft_graph_admit for a relocated key (gpu_graphs.cu), fresh where the call's own key was not
 * seen before: captured only at its third sighting with operands at new addresses, so that a
 * shape seen at a few places that come back (a solver's pair of GEMMs per step, call after call)
 * gets graphs of its own addresses, whose replays need no copies, and only operands that keep
 * moving get the relocated graph. */
int blasft_graph_admit_relocated(blasft_graph_cache *c, uint64_t hash, int fresh);
/* Takes exec into the cache under this key (a free entry, or the least recently used one's,
 * whose graph is destroyed); returns the entry, whose meta the caller fills. */
blasft_graph_entry *blasft_graph_insert(blasft_graph_cache *c, uint64_t hash, const void *key,
                                        size_t bytes, cudaGraphExec_t exec);
/* A capture that failed: the key is tried again only after two more sightings, and after a few
 * failures the cache captures nothing more. */
void blasft_graph_failed(blasft_graph_cache *c, uint64_t hash);
/* Destroys one graph (one that could not be launched) and counts it as a failure. */
void blasft_graph_drop(blasft_graph_cache *c, blasft_graph_entry *e);
/* Destroys every graph (they bake the context's buffers: called before those are freed). A graph
 * still running is freed by CUDA when it completes. */
void blasft_graph_clear(blasft_graph_cache *c);
/* Graphs in the cache now. */
int blasft_graph_count(const blasft_graph_cache *c);

#ifdef __cplusplus
}
#endif
#endif
