/* The report's entry for a GEMM whose result was lost (blasft_report_lost_result, used where a
 * GPU fails while C is copied back with beta != 0): one uncorrectable event naming the routine
 * and type, the counter, and the action as on_error says (abort is left out: it ends the test). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "report.h"

#include <string.h>

static blasft_event seen;
static int nseen;

static void keep(const blasft_event *ev, void *user)
{
    (void)user;
    seen = *ev;
    nseen++;
}

static void test_lost_result_reported(void **state)
{
    (void)state;
    blasft_stats before, after;
    blasft_get_stats(&before);
    blasft_set_event_callback(keep, NULL);
    blasft_report_lost_result("zgemm_", 'Z', BLASFT_ON_ERROR_REPORT);
    blasft_report_lost_result(NULL, 'S', BLASFT_ON_ERROR_RECOMPUTE);
    blasft_set_event_callback(NULL, NULL);
    blasft_get_stats(&after);
    assert_int_equal(nseen, 2);
    assert_int_equal(after.uncorrectable - before.uncorrectable, 2);
    assert_int_equal(seen.kind, BLASFT_EVENT_UNCORRECTABLE);
    assert_int_equal(seen.type, 'S');
    assert_string_equal(seen.routine, "gemm");
    assert_string_equal(seen.action, "reported");
    assert_int_equal(seen.row, -1);
    assert_int_equal(seen.matrix, -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_lost_result_reported)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
