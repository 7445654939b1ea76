/* Configuration from BLASFT_* environment variables (the table in README.md). */
#ifndef BLASFT_CONFIG_H
#define BLASFT_CONFIG_H

#include "blas_ft.h"

/* Looks up one variable; getenv in the library, a table in the tests. */
typedef const char *(*blasft_env_lookup)(const char *name, void *ctx);

/* Fills *cfg from the variables; a malformed value is named on stderr with its accepted values
 * and the default is used. Returns the number of malformed values. */
int blasft_config_parse(blasft_config *cfg, blasft_env_lookup lookup, void *ctx);

/* Names on stderr each BLASFT_ variable of env ("NAME=value" strings, NULL-terminated) that
 * blasft_config_parse does not read, with the closest one it reads where one is near; returns
 * their number. */
int blasft_config_unknown(const char *const *env);

/* The process's effective configuration, parsed from the environment on first use; unknown
 * BLASFT_ variables are named then. */
const blasft_config *blasft_cfg(void);

const char *blasft_mode_name(blasft_mode m);
const char *blasft_device_name(blasft_device d);
const char *blasft_threshold_name(blasft_threshold t);
const char *blasft_weights_name(blasft_weights w);
const char *blasft_on_error_name(blasft_on_error e);
const char *blasft_log_level_name(blasft_log_level l);
const char *blasft_cache_mode_name(blasft_cache_mode m);
const char *blasft_off_on_name(int on);
const char *blasft_gpu_pea_lists_name(int lists);
const char *blasft_gpu_row_checks_name(int rows);
const char *blasft_gpu_graphs_name(int graphs);
const char *blasft_gpu_batched_name(int batched);
const char *blasft_gpu_helper_priority_name(int priority);
const char *blasft_promote_name(blasft_promote p);

#endif
