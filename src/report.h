/* Counters, per-routine call statistics, error events and the JSON exit report (BLASFT_REPORT). */
#ifndef BLASFT_REPORT_H
#define BLASFT_REPORT_H

#include "blas_ft.h"

#include <stdint.h>

typedef enum { BLASFT_WHERE_HOST = 0, BLASFT_WHERE_GPU, BLASFT_WHERE_COUNT } blasft_where;

/* One per exported routine, a static object at the wrapper; registered on its first call. */
typedef struct blasft_call_stat {
    const char *name;
    uint64_t count[BLASFT_WHERE_COUNT];
    uint64_t nanoseconds[BLASFT_WHERE_COUNT];
    int registered;
    struct blasft_call_stat *next;
} blasft_call_stat;

/* Nonzero when calls are timed (an exit report was asked for). */
int blasft_timing_enabled(void);
uint64_t blasft_now_ns(void);

/* Records one call of s that ran at `where` and took ns nanoseconds (0 if not timed). */
void blasft_call_record(blasft_call_stat *s, blasft_where where, uint64_t ns);

/* ABFT counters (blasft_stats fields), updated atomically. */
typedef enum {
    BLASFT_STAT_PROTECTED_GEMMS = 0,
    BLASFT_STAT_UNPROTECTED_GEMMS,
    BLASFT_STAT_CHECKS,
    BLASFT_STAT_ERRORS_DETECTED,
    BLASFT_STAT_ERRORS_CORRECTED,
    BLASFT_STAT_BLOCKS_RECOMPUTED,
    BLASFT_STAT_UNCORRECTABLE,
    BLASFT_STAT_ENCODER_FAULTS,
    BLASFT_STAT_FAULTS_INJECTED,
    BLASFT_STAT_FALSE_ALARMS,
    BLASFT_STAT_COUNT
} blasft_stat_id;

void blasft_stat_add(blasft_stat_id id, uint64_t n);

/* Delivers an event: to the callback, the log (info level) and the exit report's event list. */
void blasft_event_emit(const blasft_event *ev);

/* A GEMM whose result is lost: a device failed while C was copied back, part of C already new,
 * and beta != 0, so that C cannot be computed again. Reported as an uncorrectable error (event,
 * counter, an error naming why); with on_error abort the process aborts. */
void blasft_report_lost_result(const char *routine, char type, blasft_on_error on_error);

#endif
