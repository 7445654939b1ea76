/* The recording half of the fake host BLAS (the routines are generated/fake_host.c). */
#include "fake_host.h"

#include <stdio.h>

FAKE_EXPORT fake_call fake_last_call;

void fake_record_begin(const char *routine, int nargs)
{
    memset(fake_last_call.routine, 0, sizeof fake_last_call.routine);
    snprintf(fake_last_call.routine, sizeof fake_last_call.routine, "%s", routine);
    fake_last_call.nargs = nargs;
    memset(fake_last_call.value, 0, sizeof fake_last_call.value);
    memset(fake_last_call.pointee, 0, sizeof fake_last_call.pointee);
    fake_last_call.calls++;
}

void fake_record_pointer(int i, const void *p, size_t pointee_bytes)
{
    fake_last_call.value[i] = (uint64_t)(uintptr_t)p;
    if (p)
        memcpy(fake_last_call.pointee[i], p, pointee_bytes);
}

void fake_record_value(int i, uint64_t value) { fake_last_call.value[i] = value; }
