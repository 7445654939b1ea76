/* Settings of the consistency layer, from its own BLASFT_* variables (read here, not in
 * src/config.c, with the same conventions: a malformed value is named on stderr with the accepted
 * values and the default is used). README rows: docs/consistency.md. */
#ifndef BLASFT_CONSISTENCY_CACHE_CONFIG_H
#define BLASFT_CONSISTENCY_CACHE_CONFIG_H

#include "config.h"

#include <stddef.h>

typedef enum {
    BLASFT_CACHE_OFF = 0,  /* no device copies are kept: every use uploads */
    BLASFT_CACHE_HASH,     /* kept; every reuse is verified by a hash of the host data, unless the
                              program declared the buffer changed or unchanged since its last use */
    BLASFT_CACHE_DECLARED, /* kept; reused without a check unless the program declared the buffer
                              changed (blasft_cache_mark_changed): only for relinked programs that
                              declare every host write to their operands */
} blasft_cache_mode;

typedef struct blasft_cache_settings {
    blasft_cache_mode mode;  /* BLASFT_CACHE: off | hash | declared */
    size_t device_mem;       /* BLASFT_DEVICE_MEM: bytes of device memory for cached copies and
                                their encodings; 0 = auto (the backend's choice) */
    size_t staging;          /* BLASFT_STAGING: bytes of pinned host staging memory */
    int hash_threads;        /* BLASFT_HASH_THREADS: threads of the change check */
} blasft_cache_settings;

const char *blasft_cache_mode_name(blasft_cache_mode m);

/* Fills *s from the variables; returns the number of malformed values. */
int blasft_cache_settings_parse(blasft_cache_settings *s, blasft_env_lookup lookup, void *ctx);

/* The process's settings, parsed from the environment on first use. */
const blasft_cache_settings *blasft_cache_settings_get(void);

#endif
