/* Diagnostics to stderr or BLASFT_LOG_FILE, filtered by BLASFT_LOG. */
#ifndef BLASFT_LOG_H
#define BLASFT_LOG_H

#include "blas_ft.h"

void blasft_log(blasft_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Logs once per process for each distinct *flag (a static int at the call site). */
#define blasft_log_once(flag, level, ...)                                                     \
    do {                                                                                      \
        if (!__atomic_exchange_n((flag), 1, __ATOMIC_RELAXED))                                \
            blasft_log((level), __VA_ARGS__);                                                 \
    } while (0)

#endif
