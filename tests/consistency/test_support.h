/* Helpers of the consistency tests: a host codec whose encodings can be checked against the
 * host data, and byte comparison of a device copy with its host sub-matrix. */
#ifndef BLASFT_TEST_CONSISTENCY_SUPPORT_H
#define BLASFT_TEST_CONSISTENCY_SUPPORT_H

#include "consistency/cache.h"

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

/* slot 0: per column, sum of byte * (position + 1); slot 1: per element row, sum of its bytes
 * over all columns. Computed the same way from host data by test_encoding_of. */
static inline size_t test_codec_bytes(void *ctx, int slot, blasft_type t, int64_t rows, int64_t cols)
{
    (void)ctx;
    (void)t;
    return 8 * (size_t)(slot == 0 ? cols : rows);
}

static inline void test_encoding_of(int slot, blasft_type t, int64_t rows, int64_t cols,
                                    const void *data, int64_t ld, uint64_t *out)
{
    size_t ts = (size_t)blasft_type_size(t);
    const unsigned char *p = data;
    memset(out, 0, 8 * (size_t)(slot == 0 ? cols : rows));
    for (int64_t j = 0; j < cols; j++)
        for (int64_t i = 0; i < rows; i++)
            for (size_t b = 0; b < ts; b++) {
                unsigned v = p[(size_t)j * (size_t)ld * ts + (size_t)i * ts + b];
                if (slot == 0)
                    out[j] += v * ((uint64_t)i * ts + b + 1);
                else
                    out[i] += v;
            }
}

static inline int test_codec_encode(void *ctx, int slot, blasft_type t, int64_t rows,
                                    int64_t cols, const void *data, void *enc)
{
    if (ctx)
        __atomic_fetch_add((uint64_t *)ctx, 1, __ATOMIC_RELAXED);
    test_encoding_of(slot, t, rows, cols, data, rows > 1 ? rows : 1, enc);
    return 0;
}

/* true if the device copy (ld = rows) equals the host sub-matrix byte for byte */
static inline bool test_same_as_host(const blasft_cache_key *k, const void *dev)
{
    size_t ts = (size_t)blasft_type_size(k->type), rb = (size_t)k->rows * ts;
    for (int64_t j = 0; j < k->cols; j++)
        if (memcmp((const char *)dev + (size_t)j * rb,
                   (const char *)k->host + (size_t)j * (size_t)k->ld * ts, rb) != 0)
            return false;
    return true;
}

/* true if the encoding of slot equals the one computed from the host data */
static inline bool test_encoding_current(const blasft_cache_key *k, int slot, const void *enc)
{
    size_t n = (size_t)(slot == 0 ? k->cols : k->rows);
    uint64_t want[n ? n : 1];
    test_encoding_of(slot, k->type, k->rows, k->cols, k->host, k->ld, want);
    return memcmp(want, enc, 8 * n) == 0;
}

#endif
