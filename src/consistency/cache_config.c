#include "cache_config.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#define MIB ((size_t)1 << 20)

/* Defaults, one place; docs/consistency.md repeats them. Caching is off by default until the
 * CUDA backend has run on a GPU. */
#define DEFAULT_MODE BLASFT_CACHE_OFF
#define DEFAULT_STAGING (256 * MIB)
#define MAX_STAGING (512 * MIB)

static const char *const mode_names[] = {"off", "hash", "declared", NULL};

const char *blasft_cache_mode_name(blasft_cache_mode m) { return mode_names[m]; }

static void complain(const char *var, const char *value, const char *accepted, const char *dflt)
{
    fprintf(stderr, "libblas_ft: %s='%s' is not valid: expected %s; using the default %s\n", var,
            value, accepted, dflt);
}

/* "<integer>[K|M|G|T]" (binary multiples) within [lo, hi]; returns 0 or -1. */
static int parse_size(const char *value, size_t lo, size_t hi, size_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(value, &end, 10);
    if (errno || end == value || value[0] == '-')
        return -1;
    unsigned shift = 0;
    switch (*end) {
    case 'k': case 'K': shift = 10; end++; break;
    case 'm': case 'M': shift = 20; end++; break;
    case 'g': case 'G': shift = 30; end++; break;
    case 't': case 'T': shift = 40; end++; break;
    default: break;
    }
    if (*end == 'i' || *end == 'I') /* "MiB" spelled out */
        end++;
    if (*end == 'b' || *end == 'B')
        end++;
    while (*end == ' ' || *end == '\t')
        end++;
    if (*end || (shift && v > (SIZE_MAX >> shift)))
        return -1;
    size_t bytes = (size_t)v << shift;
    if (bytes < lo || bytes > hi)
        return -1;
    *out = bytes;
    return 0;
}

static int online_cores(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n > 256 ? 256 : (int)n;
}

int blasft_cache_settings_parse(blasft_cache_settings *s, blasft_env_lookup lookup, void *ctx)
{
    int bad = 0;
    const char *v;
    *s = (blasft_cache_settings){DEFAULT_MODE, 0, DEFAULT_STAGING, online_cores()};

    if ((v = lookup("BLASFT_CACHE", ctx)) && *v) {
        int found = -1;
        for (int i = 0; mode_names[i]; i++)
            if (strcasecmp(v, mode_names[i]) == 0)
                found = i;
        if (found < 0) {
            complain("BLASFT_CACHE", v, "one of off, hash, declared", mode_names[DEFAULT_MODE]);
            bad++;
        } else {
            s->mode = (blasft_cache_mode)found;
        }
    }
    if ((v = lookup("BLASFT_DEVICE_MEM", ctx)) && *v && strcasecmp(v, "auto") != 0 &&
        parse_size(v, MIB, SIZE_MAX, &s->device_mem) != 0) {
        complain("BLASFT_DEVICE_MEM", v, "auto or a size of at least 1M (bytes, or with K, M, G, T)",
                 "auto");
        bad++;
    }
    if ((v = lookup("BLASFT_STAGING", ctx)) && *v &&
        parse_size(v, MIB, MAX_STAGING, &s->staging) != 0) {
        complain("BLASFT_STAGING", v, "a size from 1M to 512M (bytes, or with K, M, G)", "256M");
        bad++;
    }
    if ((v = lookup("BLASFT_HASH_THREADS", ctx)) && *v) {
        char *end;
        errno = 0;
        long n = strtol(v, &end, 10);
        if (errno || end == v || *end || n < 1 || n > 256) {
            complain("BLASFT_HASH_THREADS", v, "an integer from 1 to 256",
                     "the number of online cores");
            bad++;
        } else {
            s->hash_threads = (int)n;
        }
    }
    return bad;
}

static const char *env_lookup(const char *name, void *ctx)
{
    (void)ctx;
    return getenv(name);
}

static blasft_cache_settings process_settings;
static pthread_once_t settings_once = PTHREAD_ONCE_INIT;

static void settings_init(void) { blasft_cache_settings_parse(&process_settings, env_lookup, NULL); }

const blasft_cache_settings *blasft_cache_settings_get(void)
{
    pthread_once(&settings_once, settings_init);
    return &process_settings;
}
