/* The consistency layer's device cache (method.md section 4, thesis 6.3.4): device copies of host
 * sub-matrices keyed by host address, shape, ld and type, each with opaque encodings (checksums
 * and threshold preprocessing, made by a codec hook), LRU eviction under a byte budget, and the
 * synchronisation cases of the hostChanged / deviceChanged flags:
 *   neither        -> nothing (after the change check, see below);
 *   host only      -> upload what changed (declared ranges, or everything) and re-encode;
 *   device only    -> the device copy is current; blasft_cache_sync_host downloads it;
 *   both           -> download all but the host-changed ranges, then upload those ranges and
 *                     re-encode (host writes win where both sides wrote).
 * A cached copy is used only when the host data is known to be unchanged: in mode hash every
 * reuse hashes the host sub-matrix (hash.h) unless the program declared it changed or unchanged
 * since its last use; in mode declared only declarations count; mode off keeps nothing.
 *
 * Thread safety: every function may be called from any thread. Readers of one entry share it;
 * a writer (BLASFT_CACHE_WRITE) has it alone; a writer or an upload that finds the entry still
 * in use by others gets a fresh entry and the old one is freed when its last user releases it,
 * so a device copy never changes under a GEMM that reads it. */
#ifndef BLASFT_CONSISTENCY_CACHE_H
#define BLASFT_CONSISTENCY_CACHE_H

#include "config.h"
#include "devmem.h"
#include "gemm.h"
#include "hash.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct blasft_cache blasft_cache;
typedef struct blasft_cache_entry blasft_cache_entry;

/* The host sub-matrix: rows x cols elements of type, column j at host + j * ld elements. */
typedef struct blasft_cache_key {
    const void *host;
    blasft_type type;
    int64_t rows, cols, ld;
} blasft_cache_key;

/* Encoding slots per entry, e.g. the checksums of a matrix used as left operand (column
 * checksums) and as right operand (row checksums). */
#define BLASFT_CACHE_SLOTS 2

/* The hook that makes an entry's encodings on the device (the GPU engine's encoder and threshold
 * preprocessing; the tests' host codec). */
typedef struct blasft_cache_codec {
    void *ctx;
    /* Device bytes of slot s for a rows x cols matrix; 0: the slot is not used. */
    size_t (*bytes)(void *ctx, int slot, blasft_type t, int64_t rows, int64_t cols);
    /* Fills enc from the device copy data (column-major, ld = rows). 0, or -1 on failure. */
    int (*encode)(void *ctx, int slot, blasft_type t, int64_t rows, int64_t cols,
                  const void *data, void *enc);
} blasft_cache_codec;

typedef struct blasft_cache_opts {
    blasft_cache_mode mode;
    size_t budget;         /* device bytes for data and encodings; 0: the backend's default */
    int hash_threads;      /* <= 0: blasft_hash_default_threads() */
    const blasft_cache_codec *codec; /* NULL: no encodings */
} blasft_cache_opts;

/* The cache takes no ownership of dev or codec (both must outlive it). NULL if out of memory. */
blasft_cache *blasft_cache_create(blasft_devmem *dev, const blasft_cache_opts *opts);
/* Writes back device-changed copies, frees everything. No entry may be in use. */
void blasft_cache_destroy(blasft_cache *c);
blasft_cache_mode blasft_cache_get_mode(const blasft_cache *c);

/* acquire flags */
#define BLASFT_CACHE_ENC(slot) (1u << (slot)) /* the encoding of slot must be valid */
#define BLASFT_CACHE_WRITE 0x100u   /* the caller writes the device copy (a GEMM's C) */
#define BLASFT_CACHE_NO_LOAD 0x200u /* with WRITE: the old content is not needed (beta = 0) */
/* For a reader: when the copy only needs its change check and the last check of it found no
 * change, return at once (DID_DEFERRED) with the entry held alone; the caller may start reading
 * the copy and must call blasft_cache_verify before it trusts what it computed. */
#define BLASFT_CACHE_DEFER_CHECK 0x400u
/* Return -3 at once instead of waiting when another thread holds the entry alone (a caller
 * that holds entries alone itself must not wait for others: see cuda/offload_gemm.c). */
#define BLASFT_CACHE_TRY 0x800u
/* With ENC(s): make a missing encoding only when this acquire found the copy current (no
 * upload); after an upload the slot is left invalid and ref.enc[s] is NULL (the caller then
 * encodes as part of its own work, where that is cheaper than a separate pass; a copy used
 * again unchanged gets its encoding at that next use). */
#define BLASFT_CACHE_ENC_IF_SAME 0x1000u

/* what an acquire did (ref.did) */
#define BLASFT_CACHE_DID_CHECK 0x1u       /* hashed the host data */
#define BLASFT_CACHE_DID_UPLOAD 0x2u      /* uploaded all of it */
#define BLASFT_CACHE_DID_PARTIAL 0x4u     /* uploaded declared changed ranges only */
#define BLASFT_CACHE_DID_ENCODE 0x8u      /* made at least one encoding */
#define BLASFT_CACHE_DID_DOWNLOAD 0x10u   /* downloaded device changes first (both changed) */
#define BLASFT_CACHE_DID_UNCACHED 0x20u   /* a private copy that is freed on release (mode off) */
#define BLASFT_CACHE_DID_DEFERRED 0x40u   /* the check is left to blasft_cache_verify */

typedef struct blasft_cache_ref {
    blasft_cache_entry *entry;
    void *data;                     /* the device copy, column-major, ld = rows (at least 1) */
    int64_t ld;
    void *enc[BLASFT_CACHE_SLOTS];  /* device encodings (NULL where not used) */
    unsigned did;
    /* Set by a writer before release: the slots whose encoding it rewrote for the new content
     * (a result C kept encoded: its check recomputed its checksums). */
    unsigned enc_written;
    bool writer;     /* acquired with BLASFT_CACHE_WRITE (internal) */
    bool downloaded; /* blasft_cache_download ran: the host has what the writer wrote */
    bool pending;    /* acquired with a deferred check not yet verified (internal) */
} blasft_cache_ref;

/* A device copy equal to the host sub-matrix now (unless NO_LOAD), with the asked encodings.
 * 0; -1 if it does not fit in the budget or device memory even after eviction (nothing held: the
 * caller goes without the cache); -2 if a copy or an encoding failed (nothing held); -3 with
 * BLASFT_CACHE_TRY when it would have to wait (nothing held). */
int blasft_cache_acquire(blasft_cache *c, const blasft_cache_key *key, unsigned flags,
                         blasft_cache_ref *ref);

/* For a writer: copies the device copy to the host now (host-changed ranges declared since the
 * acquire are kept, see above) and records its hash; 0 or -2. */
int blasft_cache_download(blasft_cache *c, blasft_cache_ref *ref);

/* The same, ordered after the device work named by fence (devmem.h), and with the hash of the
 * host result taken in the unpack pass where the backend can. On failure *done (may be NULL) is
 * the number of dense bytes from the start of the copy that reached the host in full (the rest
 * of the host copy is as it was), or SIZE_MAX where that is not known. */
int blasft_cache_download_fenced(blasft_cache *c, blasft_cache_ref *ref,
                                 const blasft_devmem_fence *fence, size_t *done);

/* For a reader acquired with DID_DEFERRED: the change check now. 0: the copy was current (what
 * was computed from it stands); 1: the host data had changed, the copy is now updated (the
 * changed chunks uploaded, encodings remade) and what was computed from the old copy must be
 * redone; -2: a copy failed (redo without the cache). before_write (may be NULL) runs before the
 * first write of the device copy: the caller waits there for its kernels that read the old one.
 * Afterwards other readers may share the entry. No-op (0) for a ref without a deferred check. */
int blasft_cache_verify(blasft_cache *c, blasft_cache_ref *ref,
                        const blasft_devmem_hook *before_write);

/* release flags */
#define BLASFT_CACHE_DEVICE_WROTE 0x1u /* the device copy was written (deviceChanged, unless it
                                          was downloaded with blasft_cache_download) */

void blasft_cache_release(blasft_cache *c, blasft_cache_ref *ref, unsigned how);

/* deviceChanged -> host: downloads the entry of key if its device copy changed. 0 (also when
 * there is no such entry), or -2. */
int blasft_cache_sync_host(blasft_cache *c, const blasft_cache_key *key);

/* Declarations about host memory [ptr, ptr + bytes) (the public blasft_cache_mark_* apply them to
 * every cache): changed -> entries overlapping it are uploaded at their next use without a check
 * (mode declared: only the declared ranges, the rest is trusted unchanged; mode hash: all of it);
 * unchanged since its last use and until its next -> the next use of every entry lying inside
 * the range skips the check (one use). */
void blasft_cache_mark_host_changed(blasft_cache *c, const void *ptr, size_t bytes);
void blasft_cache_mark_host_unchanged(blasft_cache *c, const void *ptr, size_t bytes);
/* Device code other than ours wrote the device copy of key (deviceChanged). */
void blasft_cache_mark_device_changed(blasft_cache *c, const blasft_cache_key *key);

typedef struct blasft_cache_stats {
    uint64_t acquires, reuses;          /* reuses: no upload at all */
    uint64_t checks, check_bytes, check_mismatches;
    uint64_t uploads, partial_uploads, upload_bytes;
    uint64_t downloads, download_bytes;
    uint64_t encodes, evictions, write_backs, detached, conflicts, over_budget;
    size_t used_bytes, entries;
    size_t budget_bytes; /* the byte budget in effect */
} blasft_cache_stats;

void blasft_cache_get_stats(blasft_cache *c, blasft_cache_stats *out);

/* Applies a public declaration (blas_ft_cache.h) to every live cache. */
void blasft_cache_registry_mark(const void *ptr, size_t bytes, bool changed);

#endif
