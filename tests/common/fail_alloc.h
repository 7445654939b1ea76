/* Allocation failures on demand, for the out-of-memory tests (test_oom, test_cache_oom): this
 * header replaces malloc, calloc and realloc for the whole executable; include it in exactly one
 * file. Armed with fail_alloc_arm(n), the n-th allocation made from this executable's own code
 * (the library is linked in statically; libc, cmocka and OpenBLAS are told apart by the caller's
 * address) returns NULL, once. Not for the sanitizer builds, whose allocator this would fight.
 * FAIL_ALLOC_DEBUG=1 prints each failed allocation's offset in the executable (for addr2line). */
#ifndef BLASFT_FAIL_ALLOC_H
#define BLASFT_FAIL_ALLOC_H

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

extern void *__libc_malloc(size_t n);
extern void *__libc_calloc(size_t n, size_t size);
extern void *__libc_realloc(void *p, size_t n);
extern char __executable_start[], etext[];

static atomic_long fail_countdown; /* > 0: armed; the allocation that takes it to 0 fails */
static atomic_int fail_fired;

/* arms the n-th allocation from here on to fail (n <= 0: disarms) */
static inline void fail_alloc_arm(long n)
{
    atomic_store(&fail_fired, 0);
    atomic_store(&fail_countdown, n);
}

/* disarms; 1 if the armed allocation failed */
static inline int fail_alloc_disarm(void)
{
    atomic_store(&fail_countdown, 0);
    return atomic_load(&fail_fired);
}

static int fail_now(const void *caller)
{
    if (atomic_load(&fail_countdown) <= 0 || (const char *)caller < __executable_start ||
        (const char *)caller >= etext)
        return 0;
    if (atomic_fetch_sub(&fail_countdown, 1) != 1)
        return 0;
    atomic_store(&fail_fired, 1);
    if (getenv("FAIL_ALLOC_DEBUG"))
        fprintf(stderr, "failing allocation from +%#lx\n",
                (unsigned long)((const char *)caller - __executable_start));
    return 1;
}

void *malloc(size_t n) { return fail_now(__builtin_return_address(0)) ? NULL : __libc_malloc(n); }

void *calloc(size_t n, size_t size)
{
    return fail_now(__builtin_return_address(0)) ? NULL : __libc_calloc(n, size);
}

void *realloc(void *p, size_t n)
{
    return fail_now(__builtin_return_address(0)) ? NULL : __libc_realloc(p, n);
}

#endif
