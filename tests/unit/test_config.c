/* Parsing of the BLASFT_* environment: defaults, every accepted value, malformed values. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "config.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

typedef struct { const char *name, *value; } env_pair;

static const char *table_lookup(const char *name, void *ctx)
{
    for (const env_pair *p = ctx; p->name; p++)
        if (strcmp(p->name, name) == 0)
            return p->value;
    return NULL;
}

static int parse(blasft_config *cfg, const env_pair *env)
{
    return blasft_config_parse(cfg, table_lookup, (void *)env);
}

static void test_defaults(void **state)
{
    (void)state;
    env_pair env[] = {{NULL, NULL}};
    blasft_config c;
    assert_int_equal(parse(&c, env), 0);
    assert_int_equal(c.block_size, 128);
    assert_int_equal(c.gpu_block_size, 256);
    assert_true(c.omega == 3.0);
    assert_int_equal(c.mode, BLASFT_MODE_CORRECT);
    assert_int_equal(c.device, BLASFT_DEVICE_AUTO);
    assert_int_equal(c.on_error, BLASFT_ON_ERROR_RECOMPUTE);
    assert_int_equal(c.log_level, BLASFT_LOG_WARN);
    assert_string_equal(c.report, "");
    assert_int_equal(c.gpu_batched, 1);
}

static void test_valid_values(void **state)
{
    (void)state;
    env_pair env[] = {{"BLASFT_BLOCK_SIZE", "37"}, {"BLASFT_OMEGA", "4.5"},
                      {"BLASFT_MODE", "Detect"},   {"BLASFT_DEVICE", "host"},
                      {"BLASFT_CHECKSUMS", "2"},   {"BLASFT_WEIGHTS", "mdr"},
                      {"BLASFT_THRESHOLD", "sea"}, {"BLASFT_PEA_P", "5"},
                      {"BLASFT_ON_ERROR", "abort"}, {"BLASFT_MIN_FLOPS", "1e9"},
                      {"BLASFT_LOG", "debug"},     {"BLASFT_REPORT", "/tmp/x.json"},
                      {"BLASFT_GPU_PEA_LISTS", "block"}, {"BLASFT_GPU_HELPER_PRIORITY", "low"},
                      {"BLASFT_CUBLAS", "OFF"},      {"BLASFT_OFFLOAD_TRACE", "on"},
                      {"BLASFT_GPU_ROW_CHECKS", "All"}, {"BLASFT_PROMOTE", "Off"},
                      {"BLASFT_GPU_GRAPHS", "Off"}, {"BLASFT_GPU_BATCHED", "Each"},
                      {NULL, NULL}};
    blasft_config c;
    assert_int_equal(parse(&c, env), 0);
    assert_int_equal(c.block_size, 37);
    assert_int_equal(c.gpu_block_size, 37);
    assert_true(c.omega == 4.5);
    assert_int_equal(c.mode, BLASFT_MODE_DETECT);
    assert_int_equal(c.device, BLASFT_DEVICE_HOST);
    assert_int_equal(c.checksums, 2);
    assert_int_equal(c.weights, BLASFT_WEIGHTS_MDR);
    assert_int_equal(c.threshold, BLASFT_THRESHOLD_SEA);
    assert_int_equal(c.pea_p, 5);
    assert_int_equal(c.on_error, BLASFT_ON_ERROR_ABORT);
    assert_true(c.min_flops == 1e9);
    assert_int_equal(c.log_level, BLASFT_LOG_DEBUG);
    assert_string_equal(c.report, "/tmp/x.json");
    assert_int_equal(c.gpu_pea_lists, 1);
    assert_int_equal(c.gpu_row_checks, 1);
    assert_int_equal(c.gpu_helper_priority, 1);
    assert_int_equal(c.cublas, 0);
    assert_int_equal(c.offload_trace, 1);
    assert_int_equal(c.promote, BLASFT_PROMOTE_OFF);
    assert_int_equal(c.gpu_graphs, 0);
    assert_int_equal(c.gpu_batched, 0);
}

static void test_malformed_values_fall_back(void **state)
{
    (void)state;
    env_pair env[] = {{"BLASFT_BLOCK_SIZE", "1"},   {"BLASFT_OMEGA", "abc"},
                      {"BLASFT_MODE", "fix"},       {"BLASFT_DEVICE", "tpu"},
                      {"BLASFT_CHECKSUMS", "3"},    {"BLASFT_PEA_P", "2x"},
                      {"BLASFT_MIN_FLOPS", "-5"},   {"BLASFT_LOG", "loud"},
                      {"BLASFT_GPU_PEA_LISTS", "all"}, {"BLASFT_GPU_HELPER_PRIORITY", "9"},
                      {"BLASFT_OFFLOAD_TRACE", "1"}, {"BLASFT_GPU_ROW_CHECKS", "some"},
                      {"BLASFT_PROMOTE", "double"}, {"BLASFT_GPU_PROMOTE_MEM", "-1G"},
                      {"BLASFT_GPU_GRAPHS", "yes"}, {"BLASFT_GPU_BATCHED", "batched"},
                      {NULL, NULL}};
    blasft_config c, d;
    assert_int_equal(parse(&c, env), 16);
    env_pair none[] = {{NULL, NULL}};
    parse(&d, none);
    assert_int_equal(c.block_size, d.block_size);
    assert_true(c.omega == d.omega);
    assert_int_equal(c.mode, d.mode);
    assert_int_equal(c.device, d.device);
    assert_int_equal(c.checksums, d.checksums);
    assert_int_equal(c.pea_p, d.pea_p);
    assert_true(c.min_flops == d.min_flops);
    assert_int_equal(c.log_level, d.log_level);
    assert_int_equal(c.gpu_pea_lists, d.gpu_pea_lists);
    assert_int_equal(c.gpu_row_checks, d.gpu_row_checks);
    assert_int_equal(c.gpu_helper_priority, d.gpu_helper_priority);
    assert_int_equal(c.offload_trace, d.offload_trace);
    assert_int_equal(c.promote, d.promote);
    assert_int_equal(d.promote, BLASFT_PROMOTE_AUTO);
    assert_true(c.gpu_promote_mem == d.gpu_promote_mem);
    assert_true(d.gpu_promote_mem == (uint64_t)1 << 30);
    assert_int_equal(c.gpu_graphs, d.gpu_graphs);
    assert_int_equal(d.gpu_graphs, 1);
    assert_int_equal(c.gpu_batched, d.gpu_batched);
    assert_int_equal(d.gpu_batched, 1);
}

/* BLASFT_GPU_GRAPHS: every accepted value, by its index (blasft_gpu_params.graphs) */
static void test_gpu_graphs_values(void **state)
{
    (void)state;
    static const struct {
        const char *value;
        int graphs, bad;
    } cases[] = {{"off", 0, 0}, {"on", 1, 0}, {"exact", 2, 0}, {"relocated", 1, 1}, {"2", 1, 1}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        env_pair env[] = {{"BLASFT_GPU_GRAPHS", cases[i].value}, {NULL, NULL}};
        blasft_config c;
        assert_int_equal(parse(&c, env), cases[i].bad);
        assert_int_equal(c.gpu_graphs, cases[i].graphs);
        /* the exit report's name of it */
        assert_string_equal(blasft_gpu_graphs_name(c.gpu_graphs),
                            cases[i].bad ? "on" : cases[i].value);
    }
}

/* BLASFT_GPU_BATCHED: every accepted value, by its index (blasft_config.gpu_batched) */
static void test_gpu_batched_values(void **state)
{
    (void)state;
    static const struct {
        const char *value;
        int batched, bad;
    } cases[] = {{"each", 0, 0}, {"fused", 1, 0}, {"FUSED", 1, 0}, {"Each", 0, 0},
                 {"on", 1, 1},   {"off", 1, 1},   {"0", 1, 1},     {"fused,each", 1, 1}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        env_pair env[] = {{"BLASFT_GPU_BATCHED", cases[i].value}, {NULL, NULL}};
        blasft_config c;
        assert_int_equal(parse(&c, env), cases[i].bad);
        assert_int_equal(c.gpu_batched, cases[i].batched);
        /* the exit report's name of it */
        assert_string_equal(blasft_gpu_batched_name(c.gpu_batched),
                            cases[i].bad ? "fused" : (cases[i].batched ? "fused" : "each"));
    }
    /* an empty value is unset: the default, nothing named */
    env_pair empty[] = {{"BLASFT_GPU_BATCHED", ""}, {NULL, NULL}};
    blasft_config c;
    assert_int_equal(parse(&c, empty), 0);
    assert_int_equal(c.gpu_batched, 1);
}

static void test_block_size_bounds(void **state)
{
    (void)state;
    blasft_config c;
    env_pair lo[] = {{"BLASFT_BLOCK_SIZE", "2"}, {NULL, NULL}};
    assert_int_equal(parse(&c, lo), 0);
    assert_int_equal(c.block_size, 2);
    assert_int_equal(c.gpu_block_size, 2);
    env_pair hi[] = {{"BLASFT_BLOCK_SIZE", "1024"}, {NULL, NULL}};
    assert_int_equal(parse(&c, hi), 0);
    assert_int_equal(c.block_size, 1024);
    env_pair over[] = {{"BLASFT_BLOCK_SIZE", "1025"}, {NULL, NULL}};
    assert_int_equal(parse(&c, over), 1);
    assert_int_equal(c.block_size, 128);
    assert_int_equal(c.gpu_block_size, 256);
    env_pair same[] = {{"BLASFT_BLOCK_SIZE", "128"}, {NULL, NULL}};
    assert_int_equal(parse(&c, same), 0);
    assert_int_equal(c.gpu_block_size, 128);
}

static void test_consistency_settings(void **state)
{
    (void)state;
    blasft_config c;
    env_pair none[] = {{NULL, NULL}};
    assert_int_equal(parse(&c, none), 0);
    assert_int_equal(c.cache, BLASFT_CACHE_HASH);
    assert_true(c.device_mem == 0);
    assert_true(c.staging == (uint64_t)256 << 20);
    assert_true(c.hash_threads >= 1);
    int cores = c.hash_threads;
    env_pair good[] = {{"BLASFT_CACHE", "Off"}, {"BLASFT_DEVICE_MEM", "2G"},
                       {"BLASFT_STAGING", "64MiB"}, {"BLASFT_HASH_THREADS", "3"}, {NULL, NULL}};
    assert_int_equal(parse(&c, good), 0);
    assert_int_equal(c.cache, BLASFT_CACHE_OFF);
    assert_true(c.device_mem == (uint64_t)2 << 30);
    assert_true(c.staging == (uint64_t)64 << 20);
    assert_int_equal(c.hash_threads, 3);
    env_pair bad[] = {{"BLASFT_CACHE", "lru"}, {"BLASFT_DEVICE_MEM", "12Q"},
                      {"BLASFT_STAGING", "1G"}, {"BLASFT_HASH_THREADS", "0"}, {NULL, NULL}};
    assert_int_equal(parse(&c, bad), 4);
    assert_int_equal(c.cache, BLASFT_CACHE_HASH);
    assert_true(c.device_mem == 0);
    assert_true(c.staging == (uint64_t)256 << 20);
    assert_int_equal(c.hash_threads, cores);
    env_pair promo[] = {{"BLASFT_GPU_PROMOTE_MEM", "256M"}, {NULL, NULL}};
    assert_int_equal(parse(&c, promo), 0);
    assert_true(c.gpu_promote_mem == (uint64_t)256 << 20);
    env_pair promo_bad[] = {{"BLASFT_GPU_PROMOTE_MEM", "1M"}, {NULL, NULL}};
    assert_int_equal(parse(&c, promo_bad), 1);
    assert_true(c.gpu_promote_mem == (uint64_t)1 << 30);
    env_pair promo_junk[] = {{"BLASFT_GPU_PROMOTE_MEM", "lots"}, {NULL, NULL}};
    assert_int_equal(parse(&c, promo_junk), 1);
    env_pair decl[] = {{"BLASFT_CACHE", "declared"}, {"BLASFT_DEVICE_MEM", "auto"}, {NULL, NULL}};
    assert_int_equal(parse(&c, decl), 0);
    assert_int_equal(c.cache, BLASFT_CACHE_DECLARED);
    assert_true(c.device_mem == 0);
}

/* Every variable the parser reads counts as known: set all at once, none is named. */
typedef struct { const char *asked[64]; int n; } asked_log;

static const char *recording_lookup(const char *name, void *ctx)
{
    asked_log *log = ctx;
    if (log->n < 64)
        log->asked[log->n++] = name;
    return NULL;
}

static int unknown_with_stderr(const char *const *env, char *out, size_t cap);

static void test_parsed_vars_are_known(void **state)
{
    (void)state;
    asked_log log = {{NULL}, 0};
    blasft_config c;
    assert_int_equal(blasft_config_parse(&c, recording_lookup, &log), 0);
    assert_true(log.n > 20 && log.n < 63);
    char vals[64][64];
    const char *env[65];
    for (int i = 0; i < log.n; i++) {
        snprintf(vals[i], sizeof vals[i], "%s=1", log.asked[i]);
        env[i] = vals[i];
    }
    env[log.n] = NULL;
    char err[2048];
    assert_int_equal(unknown_with_stderr(env, err, sizeof err), 0);
    assert_string_equal(err, "");
}

/* blasft_config_unknown's stderr for env, in out (size cap). */
static int unknown_with_stderr(const char *const *env, char *out, size_t cap)
{
    fflush(stderr);
    const int saved = dup(2);
    FILE *tmp = tmpfile();
    assert_non_null(tmp);
    dup2(fileno(tmp), 2);
    const int n = blasft_config_unknown(env);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    rewind(tmp);
    const size_t got = fread(out, 1, cap - 1, tmp);
    out[got] = '\0';
    fclose(tmp);
    return n;
}

/* A BLASFT_ variable the library does not read is named once, with the known name it is near;
 * known ones, other prefixes and names that only begin alike are not. */
static void test_unknown_vars_named(void **state)
{
    (void)state;
    char err[2048];
    const char *const clean[] = {"PATH=/usr/bin", "BLASFT_MODE=detect", "BLASFT_REPORT=",
                                 "XBLASFT_MODE=1", "blasft_mode=on", NULL};
    assert_int_equal(unknown_with_stderr(clean, err, sizeof err), 0);
    assert_string_equal(err, "");
    const char *const typos[] = {"BLASFT_TRESHOLD=proj", "BLASFT_MODE=off", "BLASFT_BLOCKSIZE=64",
                                 "BLASFT_FOO=1", "BLASFT_MODE_X", "HOME=/root", NULL};
    assert_int_equal(unknown_with_stderr(typos, err, sizeof err), 4);
    assert_non_null(strstr(err, "BLASFT_TRESHOLD is not a libblas_ft variable and is ignored; did "
                                "you mean BLASFT_THRESHOLD?"));
    assert_non_null(strstr(err, "BLASFT_BLOCKSIZE is not a libblas_ft variable and is ignored; "
                                "did you mean BLASFT_BLOCK_SIZE?"));
    assert_non_null(strstr(err, "BLASFT_MODE_X is not a libblas_ft variable"));
    /* nothing known is near FOO: no guess */
    const char *foo = strstr(err, "BLASFT_FOO is not");
    const char *guess = foo ? strstr(foo, "did you mean") : NULL;
    assert_non_null(foo);
    assert_true(!guess || guess > strchr(foo, '\n'));
    assert_null(strstr(err, "BLASFT_MODE is not"));
    assert_null(strstr(err, "HOME"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_valid_values),
        cmocka_unit_test(test_malformed_values_fall_back),
        cmocka_unit_test(test_gpu_graphs_values),
        cmocka_unit_test(test_gpu_batched_values),
        cmocka_unit_test(test_block_size_bounds),
        cmocka_unit_test(test_consistency_settings),
        cmocka_unit_test(test_parsed_vars_are_known),
        cmocka_unit_test(test_unknown_vars_named),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
