/* Export test. `test_exports ours`: the dynamic symbol table of libblas_ft (LIBBLAS_FT_SO, read
 * with nm -D --defined-only) holds every symbol of shim/blas_symbols.txt and nothing else but the
 * listed patterns (blasft_*, ...). `test_exports reference`: every symbol the reference BLAS
 * (REFERENCE_BLAS_SO, default Debian's libblas.so.3 with netlib CBLAS) exports is in the
 * list; exit 77 (skipped) if that library is absent. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "generated/export_list.h"

#define N_EXPORTED (sizeof exported_symbols / sizeof exported_symbols[0])
#define N_PATTERNS (sizeof exported_patterns / sizeof exported_patterns[0])
#define MAX_SYMBOLS 40000

static const char *reference_path(void)
{
    const char *p = getenv("REFERENCE_BLAS_SO");
    return p && *p ? p : "/usr/lib/x86_64-linux-gnu/blas/libblas.so.3";
}

/* The defined dynamic symbols of `path`, without version suffixes; returns their number. */
static size_t dynamic_symbols(const char *path, char **names, size_t max)
{
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "nm -D --defined-only '%s'", path);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    size_t n = 0;
    char line[1024];
    while (fgets(line, sizeof line, p)) {
        char value[64], type[8], name[512];
        if (sscanf(line, "%63s %7s %511s", value, type, name) != 3)
            continue;
        name[strcspn(name, "@")] = '\0';
        assert_true(n < max);
        names[n++] = strdup(name);
    }
    assert_int_equal(pclose(p), 0);
    return n;
}

static int in_list(const char *name)
{
    for (size_t i = 0; i < N_EXPORTED; i++)
        if (strcmp(exported_symbols[i], name) == 0)
            return 1;
    return 0;
}

static int matches_pattern(const char *name)
{
    for (size_t i = 0; i < N_PATTERNS; i++)
        if (fnmatch(exported_patterns[i], name, 0) == 0)
            return 1;
    return 0;
}

static char *symbols[MAX_SYMBOLS];

static void exports_exactly_the_list(void **state)
{
    (void)state;
    const char *lib = getenv("LIBBLAS_FT_SO");
    assert_non_null(lib);
    size_t n = dynamic_symbols(lib, symbols, MAX_SYMBOLS);
    int bad = 0;
    for (size_t i = 0; i < N_EXPORTED; i++) {
        int found = 0;
        for (size_t j = 0; j < n && !found; j++)
            found = strcmp(symbols[j], exported_symbols[i]) == 0;
        if (!found) {
            printf("missing export: %s\n", exported_symbols[i]);
            bad++;
        }
    }
    int public_api = 0;
    for (size_t j = 0; j < n; j++) {
        if (in_list(symbols[j]))
            continue;
        if (matches_pattern(symbols[j])) {
            public_api += strncmp(symbols[j], "blasft_", 7) == 0;
            continue;
        }
        printf("unexpected export: %s\n", symbols[j]);
        bad++;
    }
    assert_int_equal(bad, 0);
    /* the public C API of blas_ft.h is there too */
    assert_true(public_api >= 5);
    for (size_t j = 0; j < n; j++)
        free(symbols[j]);
}

static void reference_symbols_are_listed(void **state)
{
    (void)state;
    size_t n = dynamic_symbols(reference_path(), symbols, MAX_SYMBOLS);
    assert_true(n > 300); /* BLAS + CBLAS of 3.11: 324 */
    int bad = 0;
    for (size_t j = 0; j < n; j++) {
        if (!in_list(symbols[j])) {
            printf("the reference exports %s, the list lacks it\n", symbols[j]);
            bad++;
        }
        free(symbols[j]);
    }
    assert_int_equal(bad, 0);
}

int main(int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], "reference") == 0) {
        if (access(reference_path(), R_OK) != 0) {
            printf("SKIP: no reference BLAS at %s\n", reference_path());
            return 77;
        }
        const struct CMUnitTest tests[] = {cmocka_unit_test(reference_symbols_are_listed)};
        return cmocka_run_group_tests(tests, NULL, NULL);
    }
    if (argc == 2 && strcmp(argv[1], "ours") == 0) {
        const struct CMUnitTest tests[] = {cmocka_unit_test(exports_exactly_the_list)};
        return cmocka_run_group_tests(tests, NULL, NULL);
    }
    fprintf(stderr, "usage: test_exports ours|reference\n");
    return 2;
}
