/* Only the outermost shim call of a thread is counted: a host such as netlib CBLAS calls back
 * into exported Fortran symbols, which must not count the call twice. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "shim/forward.h"

#include <pthread.h>

static uint64_t calls(const blasft_call_stat *s)
{
    return s->count[BLASFT_WHERE_HOST] + s->count[BLASFT_WHERE_GPU];
}

static void nested_call_not_counted(void **state)
{
    (void)state;
    static blasft_call_stat outer = {.name = "cblas_test_outer"};
    static blasft_call_stat inner = {.name = "test_inner_"};
    for (int round = 1; round <= 3; round++) {
        blasft_shim_call a = blasft_shim_enter(&outer);
        blasft_shim_call b = blasft_shim_enter(&inner);
        blasft_shim_leave(&b);
        blasft_shim_call c = blasft_shim_enter(&inner);
        blasft_shim_leave(&c);
        blasft_shim_leave(&a);
        assert_int_equal(calls(&outer), round);
        assert_int_equal(calls(&inner), 0);
        assert_int_equal(blasft_shim_depth, 0);
    }
    /* on its own, the inner routine counts */
    blasft_shim_call d = blasft_shim_enter(&inner);
    blasft_shim_leave(&d);
    assert_int_equal(calls(&inner), 1);
}

static blasft_call_stat shared = {.name = "test_shared_"};

static void *enter_and_leave(void *arg)
{
    (void)arg;
    blasft_shim_call c = blasft_shim_enter(&shared);
    blasft_shim_leave(&c);
    return NULL;
}

/* The depth is per thread: a call on another thread during ours is counted. */
static void depth_is_per_thread(void **state)
{
    (void)state;
    blasft_shim_call a = blasft_shim_enter(&shared);
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, enter_and_leave, NULL), 0);
    assert_int_equal(pthread_join(t, NULL), 0);
    assert_int_equal(calls(&shared), 1);
    blasft_shim_leave(&a);
    assert_int_equal(calls(&shared), 2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(nested_call_not_counted),
        cmocka_unit_test(depth_is_per_thread),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
