/* What the generated forwarders (shim/generated/) share: export and alias macros, the CBLAS enum
 * types, the cached lookup of a host routine and the per-thread nesting count that makes only
 * the outermost call of a thread count in the report. */
#ifndef BLASFT_SHIM_FORWARD_H
#define BLASFT_SHIM_FORWARD_H

#include "cblas_enums.h"
#include "hostblas.h"
#include "report.h"

#include <stddef.h>
#include <stdint.h>

#define BLASFT_SHIM_EXPORT __attribute__((visibility("default")))

/* The Fortran name without underscore: the same code under a second exported name. */
#define BLASFT_SHIM_ALIAS(second_name, symbol)                                                    \
    extern __typeof__(symbol) second_name                                                         \
        __attribute__((alias(#symbol), visibility("default")));

/* The host routine `name`, looked up on the first call and kept in *cache. */
static inline void *blasft_shim_host(void **cache, const char *name)
{
    void *fn = __atomic_load_n(cache, __ATOMIC_ACQUIRE);
    if (!fn) {
        fn = blasft_host_sym(name);
        __atomic_store_n(cache, fn, __ATOMIC_RELEASE);
    }
    return fn;
}

/* Calls of this thread into the shim now under way. A host such as netlib CBLAS calls back into
 * our exported Fortran symbols; such nested calls are forwarded but not counted again. */
extern _Thread_local int blasft_shim_depth;

typedef struct {
    blasft_call_stat *stat; /* NULL for a nested call */
    uint64_t t0;            /* start time, 0 when not timed */
} blasft_shim_call;

static inline blasft_shim_call blasft_shim_enter(blasft_call_stat *stat)
{
    blasft_shim_call call = {NULL, 0};
    if (blasft_shim_depth++ == 0) {
        call.stat = stat;
        if (blasft_timing_enabled())
            call.t0 = blasft_now_ns();
    }
    return call;
}

static inline void blasft_shim_leave(const blasft_shim_call *call)
{
    blasft_shim_depth--;
    if (call->stat)
        blasft_call_record(call->stat, BLASFT_WHERE_HOST,
                           call->t0 ? blasft_now_ns() - call->t0 + 1 : 0);
}

#endif
