#include "config.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

/* Defaults, one place: README.md's table repeats them. */
static const blasft_config config_defaults = {
    .block_size = 128,
    /* the GPU's own default: measured best or within 1 % of the best at n >= 4096 for S, D, C
     * and Z (docs/gpu-benchmark.md, "Default block size") */
    .gpu_block_size = 256,
    .omega = 3.0,
    .mode = BLASFT_MODE_CORRECT,
    .device = BLASFT_DEVICE_AUTO,
    .checksums = 1,
    .weights = BLASFT_WEIGHTS_LINEAR,
    .threshold = BLASFT_THRESHOLD_PEA,
    .pea_p = 2,
    .on_error = BLASFT_ON_ERROR_RECOMPUTE,
    .min_flops = -1.0,
    .log_level = BLASFT_LOG_WARN,
    .cublas = 1,
    /* the CUDA backend is the offload's only path: repeated operands cost a hash instead of a
     * copy (DGEMM n = 8192 from host memory, H200: 31 ms against 45 ms; docs/offload-benchmark.md) */
    .cache = BLASFT_CACHE_HASH,
    .device_mem = 0,
    .staging = 256u << 20,
    .hash_threads = 0, /* filled in: the online cores */
    .gpu_row_checks = 0, /* flagged: docs/gpu-benchmark.md, "Row side on demand" */
    .promote = BLASFT_PROMOTE_AUTO,
    /* a fixed buffer (issue 4's memory rule): the GPU's promoted GEMMs run in tiles that fit it;
     * 1 GiB keeps the re-conversions of tiled operands within a few per cent at n <= 16384
     * (docs/promote.md) */
    .gpu_promote_mem = (uint64_t)1 << 30,
    /* a repeated call replayed from a graph: a third to a quarter of the caller's host time per
     * small protected GEMM (docs/cublas-benchmark.md, "The engine's own graphs") */
    .gpu_graphs = 1,
    /* a batch of GEMMs (m n k up to 2^30) as one cuBLAS batched call checked by two kernels,
     * instead of a protected GEMM of the engine per matrix (docs/cublas-interpose.md, "Batched
     * GEMMs") */
    .gpu_batched = 1,
};

#define MAX_STAGING ((uint64_t)512 << 20)

static const char *const mode_names[] = {"correct", "detect", "off", NULL};
static const char *const device_names[] = {"auto", "gpu", "host", NULL};
static const char *const threshold_names[] = {"pea", "sea", "norm", "proj", NULL};
static const char *const weights_names[] = {"normal", "average", "periodic", "exponential",
                                            "linear", "mdr", NULL};
static const char *const on_error_names[] = {"recompute", "report", "abort", NULL};
static const char *const log_names[] = {"off", "error", "warn", "info", "debug", NULL};
static const char *const cache_names[] = {"off", "hash", "declared", NULL};
static const char *const off_on_names[] = {"off", "on", NULL};
/* BLASFT_GPU_GRAPHS: the index is blasft_gpu_params.graphs */
static const char *const gpu_graphs_names[] = {"off", "on", "exact", NULL};
/* BLASFT_GPU_BATCHED: the index is blasft_config.gpu_batched */
static const char *const gpu_batched_names[] = {"each", "fused", NULL};
static const char *const gpu_lists_names[] = {"vector", "block", NULL};
static const char *const gpu_rows_names[] = {"flagged", "all", NULL};
static const char *const gpu_priority_names[] = {"high", "low", "default", NULL};
static const char *const promote_names[] = {"auto", "on", "off", NULL};

const char *blasft_mode_name(blasft_mode m) { return mode_names[m]; }
const char *blasft_device_name(blasft_device d) { return device_names[d]; }
const char *blasft_threshold_name(blasft_threshold t) { return threshold_names[t]; }
const char *blasft_weights_name(blasft_weights w) { return weights_names[w]; }
const char *blasft_on_error_name(blasft_on_error e) { return on_error_names[e]; }
const char *blasft_log_level_name(blasft_log_level l) { return log_names[l]; }
const char *blasft_cache_mode_name(blasft_cache_mode m) { return cache_names[m]; }
const char *blasft_off_on_name(int on) { return off_on_names[on != 0]; }
const char *blasft_gpu_pea_lists_name(int lists) { return gpu_lists_names[lists]; }
const char *blasft_gpu_row_checks_name(int rows) { return gpu_rows_names[rows]; }
const char *blasft_gpu_graphs_name(int graphs) { return gpu_graphs_names[graphs]; }
const char *blasft_gpu_batched_name(int batched) { return gpu_batched_names[batched != 0]; }
const char *blasft_gpu_helper_priority_name(int priority) { return gpu_priority_names[priority]; }
const char *blasft_promote_name(blasft_promote p) { return promote_names[p]; }

/* Levenshtein distance of a (length la) and b, for the suggestion; names are short. */
static size_t edit_distance(const char *a, size_t la, const char *b)
{
    size_t lb = strlen(b), row[64];
    if (la >= 64 || lb >= 64)
        return SIZE_MAX;
    for (size_t j = 0; j <= lb; j++)
        row[j] = j;
    for (size_t i = 1; i <= la; i++) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            const size_t up = row[j];
            const size_t sub = diag + (a[i - 1] != b[j - 1]);
            const size_t del = up + 1, ins = row[j - 1] + 1;
            row[j] = sub < del ? (sub < ins ? sub : ins) : (del < ins ? del : ins);
            diag = up;
        }
    }
    return row[lb];
}

/* The names blasft_config_parse asks for (it asks for every variable whatever is set): the
 * variables the library reads, without a second list to keep in step with the parser. */
typedef struct {
    const char *names[64];
    int n;
} name_list;

static const char *record_name(const char *name, void *ctx)
{
    name_list *l = ctx;
    if (l->n < 63)
        l->names[l->n++] = name;
    return NULL;
}

/* A BLASFT_ variable of the environment that the parser does not ask for is named in a warning:
 * misspelt, it would otherwise be ignored without a word. */
int blasft_config_unknown(const char *const *env)
{
    name_list reads = {{NULL}, 0};
    blasft_config scratch;
    blasft_config_parse(&scratch, record_name, &reads);
    reads.names[reads.n] = NULL;
    int unknown = 0;
    for (; env && *env; env++) {
        const char *e = *env, *eq = strchr(e, '=');
        const size_t len = eq ? (size_t)(eq - e) : strlen(e);
        if (strncmp(e, "BLASFT_", 7) != 0)
            continue;
        const char *best = NULL;
        size_t best_d = SIZE_MAX;
        int known = 0;
        for (const char *const *k = reads.names; *k && !known; k++) {
            known = strlen(*k) == len && strncmp(*k, e, len) == 0;
            const size_t d = edit_distance(e, len, *k);
            if (d < best_d)
                best_d = d, best = *k;
        }
        if (known)
            continue;
        unknown++;
        /* near: a typo or two, more for longer names (not LOG for FOO) */
        if (best && best_d <= 1 + (len - 7) / 4)
            fprintf(stderr, "libblas_ft: %.*s is not a libblas_ft variable and is ignored; did you "
                    "mean %s?\n", (int)len, e, best);
        else
            fprintf(stderr, "libblas_ft: %.*s is not a libblas_ft variable and is ignored "
                    "(README.md lists them)\n", (int)len, e);
    }
    return unknown;
}

static void complain(const char *var, const char *value, const char *accepted, const char *dflt)
{
    fprintf(stderr, "libblas_ft: %s='%s' is not valid: expected %s; using the default %s\n", var,
            value, accepted, dflt);
}

/* Returns the index of value in names (case-insensitive), or -1. */
static int parse_choice(const char *var, const char *value, const char *const *names, int dflt,
                        int *bad)
{
    for (int i = 0; names[i]; i++)
        if (strcasecmp(value, names[i]) == 0)
            return i;
    char accepted[256] = "one of";
    for (int i = 0; names[i]; i++) {
        strncat(accepted, i ? ", " : " ", sizeof accepted - strlen(accepted) - 1);
        strncat(accepted, names[i], sizeof accepted - strlen(accepted) - 1);
    }
    complain(var, value, accepted, names[dflt]);
    ++*bad;
    return dflt;
}

static long parse_int(const char *var, const char *value, long lo, long hi, long dflt, int *bad)
{
    char *end;
    errno = 0;
    long v = strtol(value, &end, 10);
    while (*end == ' ' || *end == '\t')
        end++;
    if (errno || end == value || *end || v < lo || v > hi) {
        char accepted[96], d[32];
        snprintf(accepted, sizeof accepted, "an integer from %ld to %ld", lo, hi);
        snprintf(d, sizeof d, "%ld", dflt);
        complain(var, value, accepted, d);
        ++*bad;
        return dflt;
    }
    return v;
}

static double parse_double(const char *var, const char *value, double lo, double hi, double dflt,
                           const char *dflt_text, int *bad)
{
    char *end;
    errno = 0;
    double v = strtod(value, &end);
    while (*end == ' ' || *end == '\t')
        end++;
    if (errno || end == value || *end || !isfinite(v) || v < lo || v > hi) {
        char accepted[96];
        snprintf(accepted, sizeof accepted, "a number from %g to %g", lo, hi);
        complain(var, value, accepted, dflt_text);
        ++*bad;
        return dflt;
    }
    return v;
}

/* "<integer>[K|M|G|T][i][B]" (binary multiples) within [lo, hi]; returns 0 or -1. */
static int parse_size(const char *value, uint64_t lo, uint64_t hi, uint64_t *out)
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
    if (*end == 'i' || *end == 'I')
        end++;
    if (*end == 'b' || *end == 'B')
        end++;
    while (*end == ' ' || *end == '\t')
        end++;
    if (*end || (shift && v > (UINT64_MAX >> shift)))
        return -1;
    uint64_t bytes = (uint64_t)v << shift;
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

static void copy_path(char *dst, const char *var, const char *value, int *bad)
{
    if (strlen(value) >= BLASFT_PATH_MAX) {
        char accepted[64];
        snprintf(accepted, sizeof accepted, "a value shorter than %d characters", BLASFT_PATH_MAX);
        complain(var, "...", accepted, "(empty)");
        ++*bad;
        dst[0] = '\0';
        return;
    }
    strcpy(dst, value);
}

int blasft_config_parse(blasft_config *cfg, blasft_env_lookup lookup, void *ctx)
{
    const blasft_config *d = &config_defaults;
    int bad = 0;
    const char *v;
    *cfg = *d;

    if ((v = lookup("BLASFT_BLOCK_SIZE", ctx)) && *v) {
        const int rejected_before = bad;
        cfg->block_size = (int)parse_int("BLASFT_BLOCK_SIZE", v, 2, 1024, d->block_size, &bad);
        /* an explicit choice holds for both engines; a rejected value leaves both defaults */
        if (bad == rejected_before)
            cfg->gpu_block_size = cfg->block_size;
    }
    if ((v = lookup("BLASFT_OMEGA", ctx)) && *v) {
        char dt[32];
        snprintf(dt, sizeof dt, "%g", d->omega);
        cfg->omega = parse_double("BLASFT_OMEGA", v, 1e-3, 1e6, d->omega, dt, &bad);
    }
    if ((v = lookup("BLASFT_MODE", ctx)) && *v)
        cfg->mode = (blasft_mode)parse_choice("BLASFT_MODE", v, mode_names, d->mode, &bad);
    if ((v = lookup("BLASFT_DEVICE", ctx)) && *v)
        cfg->device = (blasft_device)parse_choice("BLASFT_DEVICE", v, device_names, d->device, &bad);
    if ((v = lookup("BLASFT_CHECKSUMS", ctx)) && *v)
        cfg->checksums = (int)parse_int("BLASFT_CHECKSUMS", v, 1, 2, d->checksums, &bad);
    if ((v = lookup("BLASFT_WEIGHTS", ctx)) && *v)
        cfg->weights = (blasft_weights)parse_choice("BLASFT_WEIGHTS", v, weights_names, d->weights, &bad);
    if ((v = lookup("BLASFT_THRESHOLD", ctx)) && *v)
        cfg->threshold =
            (blasft_threshold)parse_choice("BLASFT_THRESHOLD", v, threshold_names, d->threshold, &bad);
    if ((v = lookup("BLASFT_PEA_P", ctx)) && *v)
        cfg->pea_p = (int)parse_int("BLASFT_PEA_P", v, 1, 64, d->pea_p, &bad);
    if ((v = lookup("BLASFT_ON_ERROR", ctx)) && *v)
        cfg->on_error =
            (blasft_on_error)parse_choice("BLASFT_ON_ERROR", v, on_error_names, d->on_error, &bad);
    if ((v = lookup("BLASFT_MIN_FLOPS", ctx)) && *v && strcasecmp(v, "auto") != 0)
        cfg->min_flops = parse_double("BLASFT_MIN_FLOPS", v, 0, 1e30, d->min_flops,
                                      "auto (\"auto\" or a number from 0 to 1e30)", &bad);
    if ((v = lookup("BLASFT_LOG", ctx)) && *v)
        cfg->log_level = (blasft_log_level)parse_choice("BLASFT_LOG", v, log_names, d->log_level, &bad);
    cfg->hash_threads = online_cores();
    if ((v = lookup("BLASFT_CACHE", ctx)) && *v)
        cfg->cache = (blasft_cache_mode)parse_choice("BLASFT_CACHE", v, cache_names, d->cache, &bad);
    if ((v = lookup("BLASFT_DEVICE_MEM", ctx)) && *v && strcasecmp(v, "auto") != 0 &&
        parse_size(v, 1u << 20, UINT64_MAX, &cfg->device_mem) != 0) {
        complain("BLASFT_DEVICE_MEM", v, "auto or a size of at least 1M (bytes, or with K, M, G, T)",
                 "auto");
        bad++;
    }
    if ((v = lookup("BLASFT_STAGING", ctx)) && *v &&
        parse_size(v, 1u << 20, MAX_STAGING, &cfg->staging) != 0) {
        complain("BLASFT_STAGING", v, "a size from 1M to 512M (bytes, or with K, M, G)", "256M");
        bad++;
    }
    if ((v = lookup("BLASFT_HASH_THREADS", ctx)) && *v)
        cfg->hash_threads =
            (int)parse_int("BLASFT_HASH_THREADS", v, 1, 256, cfg->hash_threads, &bad);
    if ((v = lookup("BLASFT_CUBLAS", ctx)) && *v)
        cfg->cublas = parse_choice("BLASFT_CUBLAS", v, off_on_names, d->cublas, &bad);
    if ((v = lookup("BLASFT_GPU_PEA_LISTS", ctx)) && *v)
        cfg->gpu_pea_lists =
            parse_choice("BLASFT_GPU_PEA_LISTS", v, gpu_lists_names, d->gpu_pea_lists, &bad);
    if ((v = lookup("BLASFT_GPU_ROW_CHECKS", ctx)) && *v)
        cfg->gpu_row_checks =
            parse_choice("BLASFT_GPU_ROW_CHECKS", v, gpu_rows_names, d->gpu_row_checks, &bad);
    if ((v = lookup("BLASFT_GPU_HELPER_PRIORITY", ctx)) && *v)
        cfg->gpu_helper_priority = parse_choice("BLASFT_GPU_HELPER_PRIORITY", v, gpu_priority_names,
                                                d->gpu_helper_priority, &bad);
    if ((v = lookup("BLASFT_OFFLOAD_TRACE", ctx)) && *v)
        cfg->offload_trace = parse_choice("BLASFT_OFFLOAD_TRACE", v, off_on_names, d->offload_trace, &bad);
    if ((v = lookup("BLASFT_GPU_GRAPHS", ctx)) && *v)
        cfg->gpu_graphs =
            parse_choice("BLASFT_GPU_GRAPHS", v, gpu_graphs_names, d->gpu_graphs, &bad);
    if ((v = lookup("BLASFT_GPU_BATCHED", ctx)) && *v)
        cfg->gpu_batched =
            parse_choice("BLASFT_GPU_BATCHED", v, gpu_batched_names, d->gpu_batched, &bad);
    if ((v = lookup("BLASFT_PROMOTE", ctx)) && *v)
        cfg->promote = (blasft_promote)parse_choice("BLASFT_PROMOTE", v, promote_names, d->promote, &bad);
    if ((v = lookup("BLASFT_GPU_PROMOTE_MEM", ctx)) && *v &&
        parse_size(v, 16u << 20, UINT64_MAX, &cfg->gpu_promote_mem) != 0) {
        complain("BLASFT_GPU_PROMOTE_MEM", v, "a size of at least 16M (bytes, or with K, M, G, T)",
                 "1G");
        bad++;
    }
    if ((v = lookup("BLASFT_HOST_BLAS", ctx)))
        copy_path(cfg->host_blas, "BLASFT_HOST_BLAS", v, &bad);
    if ((v = lookup("BLASFT_LOG_FILE", ctx)))
        copy_path(cfg->log_file, "BLASFT_LOG_FILE", v, &bad);
    if ((v = lookup("BLASFT_REPORT", ctx)))
        copy_path(cfg->report, "BLASFT_REPORT", v, &bad);
    if ((v = lookup("BLASFT_INJECT", ctx)))
        copy_path(cfg->inject, "BLASFT_INJECT", v, &bad);
    return bad;
}

static const char *env_lookup(const char *name, void *ctx)
{
    (void)ctx;
    return getenv(name);
}

static blasft_config process_config;
static pthread_once_t config_once = PTHREAD_ONCE_INIT;

extern char **environ;

static void config_init(void)
{
    blasft_config_parse(&process_config, env_lookup, NULL);
    blasft_config_unknown((const char *const *)environ);
}

const blasft_config *blasft_cfg(void)
{
    pthread_once(&config_once, config_init);
    return &process_config;
}

int blasft_get_config(blasft_config *out)
{
    *out = *blasft_cfg();
    return 0;
}
