/* The error handlers of libblas_ft (LIBBLAS_FT_SO, loaded with dlopen): xerbla_ writes the
 * reference Fortran XERBLA message to stdout and stops with status 0; xerbla_array_ hands a
 * blank-padded CHARACTER*32 name to the program's own xerbla_ (this executable defines one);
 * cblas_xerbla behaves as netlib CBLAS's, checked against the reference library when it is
 * present (REFERENCE_BLAS_SO, default Debian's libblas.so.3); RowMajorStrg and CBLAS_CallFromC
 * are exported. Each handler that ends the process runs in a forked child. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "generated/export_list.h"

typedef void xerbla_fn(const char *, const int *, size_t);
typedef void xerbla_array_fn(const char *, const int *, const int *, size_t);
typedef void cblas_xerbla_fn(int, const char *, const char *, ...);

static void *blas_ft;

static void *symbol(void *lib, const char *name)
{
    void *p = dlsym(lib, name);
    if (!p)
        fail_msg("no symbol %s", name);
    return p;
}

/* ------------------------------------------------------------------ running a handler */

typedef struct {
    int exited, status; /* exited normally, and its status */
    char out[4096], err[4096];
} child_result;

typedef void child_body(const void *arg);

static void read_all(FILE *f, char *buf, size_t size)
{
    rewind(f);
    size_t n = fread(buf, 1, size - 1, f);
    buf[n] = '\0';
}

/* Runs body(arg) in a child with stdout and stderr captured; a body that returns exits 99. */
static child_result run_child(child_body *body, const void *arg)
{
    child_result r;
    FILE *out = tmpfile(), *err = tmpfile();
    assert_non_null(out);
    assert_non_null(err);
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        dup2(fileno(out), 1);
        dup2(fileno(err), 2);
        body(arg);
        fflush(stdout);
        _exit(99);
    }
    int wstatus;
    assert_int_equal(waitpid(pid, &wstatus, 0), pid);
    r.exited = WIFEXITED(wstatus);
    r.status = r.exited ? WEXITSTATUS(wstatus) : -1;
    read_all(out, r.out, sizeof r.out);
    read_all(err, r.err, sizeof r.err);
    fclose(out);
    fclose(err);
    return r;
}

/* ------------------------------------------------------------------ xerbla_ */

typedef struct {
    const char *symbol;
    const char *name; /* not NUL-terminated for the callee: its length is passed */
    size_t len;
    int info;
} xerbla_call;

static void call_xerbla(const void *arg)
{
    const xerbla_call *c = arg;
    char name[64];
    memcpy(name, c->name, c->len);
    name[c->len] = '#'; /* what follows the Fortran string must not be printed */
    ((xerbla_fn *)symbol(blas_ft, c->symbol))(name, &c->info, c->len);
}

static void check_xerbla(const char *sym, const char *name, int info, const char *want)
{
    xerbla_call c = {sym, name, strlen(name), info};
    child_result r = run_child(call_xerbla, &c);
    assert_true(r.exited);
    assert_int_equal(r.status, 0); /* Fortran STOP */
    assert_string_equal(r.out, want);
    assert_string_equal(r.err, "");
}

static void xerbla_message_and_stop(void **state)
{
    (void)state;
    /* expected texts: gfortran's output of the reference FORMAT, I2 giving "**" past 2 places */
    static const char *const syms[] = {"xerbla_", "xerbla"};
    for (int s = 0; s < 2; s++) {
        check_xerbla(syms[s], "DGEMV ", 3,
                     " ** On entry to DGEMV parameter number  3 had an illegal value\n");
        check_xerbla(syms[s], "ZHER2K", 12,
                     " ** On entry to ZHER2K parameter number 12 had an illegal value\n");
        check_xerbla(syms[s], "SGEMM   ", 100,
                     " ** On entry to SGEMM parameter number ** had an illegal value\n");
        check_xerbla(syms[s], "DTRSM", -5,
                     " ** On entry to DTRSM parameter number -5 had an illegal value\n");
        check_xerbla(syms[s], "DTRSM", -10,
                     " ** On entry to DTRSM parameter number ** had an illegal value\n");
        check_xerbla(syms[s], "CBLAS_DGEMM", 0,
                     " ** On entry to CBLAS_DGEMM parameter number  0 had an illegal value\n");
    }
}

/* ------------------------------------------------------------------ xerbla_array_ */

/* This program's own XERBLA: it must take precedence over libblas_ft's (as in the reference
 * testers, which define XERBLA to catch error exits). */
static char seen_name[64];
static size_t seen_len;
static int seen_info, seen_calls;

__attribute__((visibility("default"))) void xerbla_(const char *srname, const int *info,
                                                    size_t len)
{
    seen_len = len;
    memcpy(seen_name, srname, len < sizeof seen_name ? len : sizeof seen_name);
    seen_info = *info;
    seen_calls++;
}

static void xerbla_array_calls_the_programs_xerbla(void **state)
{
    (void)state;
    static const char *const syms[] = {"xerbla_array_", "xerbla_array"};
    for (int s = 0; s < 2; s++) {
        xerbla_array_fn *fn = (xerbla_array_fn *)symbol(blas_ft, syms[s]);
        const char name[] = {'Z', 'H', 'E', 'M', 'M', 'x', 'y'}; /* no terminator */
        int len = 5, info = 7;
        seen_calls = 0;
        fn(name, &len, &info, 1);
        assert_int_equal(seen_calls, 1);
        assert_int_equal(seen_len, 32);
        assert_int_equal(seen_info, 7);
        assert_memory_equal(seen_name, "ZHEMM                           ", 32);

        /* longer than 32: cut to 32 */
        char longname[40];
        for (int i = 0; i < 40; i++)
            longname[i] = (char)('A' + i % 26);
        len = 40;
        info = -3;
        fn(longname, &len, &info, 1);
        assert_int_equal(seen_calls, 2);
        assert_int_equal(seen_len, 32);
        assert_int_equal(seen_info, -3);
        assert_memory_equal(seen_name, longname, 32);

        len = 0;
        fn(longname, &len, &info, 1);
        assert_memory_equal(seen_name, "                                ", 32);
    }
}

/* ------------------------------------------------------------------ cblas_xerbla */

typedef struct {
    void *lib;
    int row_major, info;
    const char *rout;
} cblas_xerbla_call;

static void call_cblas_xerbla(const void *arg)
{
    const cblas_xerbla_call *c = arg;
    *(int *)symbol(c->lib, "RowMajorStrg") = c->row_major;
    ((cblas_xerbla_fn *)symbol(c->lib, "cblas_xerbla"))(c->info, c->rout, "note %d %s\n", 42,
                                                         "x");
}

static child_result run_cblas_xerbla(void *lib, int row_major, int info, const char *rout)
{
    cblas_xerbla_call c = {lib, row_major, info, rout};
    return run_child(call_cblas_xerbla, &c);
}

static void check_cblas_xerbla(int row_major, int info, const char *rout, int shown)
{
    child_result r = run_cblas_xerbla(blas_ft, row_major, info, rout);
    assert_true(r.exited);
    assert_int_equal(r.status, 255); /* exit(-1) */
    assert_string_equal(r.out, "");
    char want[256];
    if (shown)
        snprintf(want, sizeof want, "Parameter %d to routine %s was incorrect\nnote 42 x\n", shown,
                 rout);
    else
        snprintf(want, sizeof want, "note 42 x\n");
    assert_string_equal(r.err, want);
}

static void cblas_xerbla_fixed_cases(void **state)
{
    (void)state;
    check_cblas_xerbla(0, 4, "cblas_dgemm", 4);
    check_cblas_xerbla(0, 0, "cblas_dgemm", 0);
    check_cblas_xerbla(1, 0, "cblas_dgemm", 0);
    /* row-major: the column-major parameter number is mapped back */
    check_cblas_xerbla(1, 4, "cblas_dgemm", 5);
    check_cblas_xerbla(1, 5, "cblas_sgemm", 4);
    check_cblas_xerbla(1, 9, "cblas_zgemm", 11);
    check_cblas_xerbla(1, 11, "cblas_cgemm", 9);
    check_cblas_xerbla(1, 6, "cblas_dgemm", 6);
    check_cblas_xerbla(1, 4, "cblas_zhemm", 5);
    check_cblas_xerbla(1, 7, "cblas_strsm", 6);
    check_cblas_xerbla(1, 3, "cblas_dgemv", 4);
    check_cblas_xerbla(1, 6, "cblas_cgbmv", 5);
    check_cblas_xerbla(1, 8, "cblas_zgeru", 6);
    check_cblas_xerbla(1, 2, "cblas_dger", 3);
    check_cblas_xerbla(1, 6, "cblas_zher2", 8);
    check_cblas_xerbla(1, 8, "cblas_chpr2", 6);
    check_cblas_xerbla(1, 6, "cblas_zher2k", 6);
    check_cblas_xerbla(1, 3, "cblas_dsymv", 3);
}

/* Every CBLAS routine name and parameter number, in both layouts, against the reference. */
static void cblas_xerbla_matches_reference(void **state)
{
    (void)state;
    const char *path = getenv("REFERENCE_BLAS_SO");
    if (!path || !*path)
        path = "/usr/lib/x86_64-linux-gnu/blas/libblas.so.3";
    void *ref = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!ref)
        skip();
    int compared = 0;
    for (size_t i = 0; i < sizeof exported_symbols / sizeof exported_symbols[0]; i++) {
        const char *rout = exported_symbols[i];
        if (strncmp(rout, "cblas_", 6) != 0 || strcmp(rout, "cblas_xerbla") == 0)
            continue;
        for (int info = 0; info <= 13; info++) {
            child_result ours = run_cblas_xerbla(blas_ft, 1, info, rout);
            child_result theirs = run_cblas_xerbla(ref, 1, info, rout);
            assert_int_equal(ours.status, theirs.status);
            if (strcmp(ours.err, theirs.err) != 0)
                fail_msg("cblas_xerbla(%d, %s) row-major: ours '%s', reference '%s'", info, rout,
                         ours.err, theirs.err);
            compared++;
        }
    }
    assert_true(compared > 1000);
    dlclose(ref);
}

static void cblas_globals_exported(void **state)
{
    (void)state;
    int *row_major = symbol(blas_ft, "RowMajorStrg");
    int *from_c = symbol(blas_ft, "CBLAS_CallFromC");
    assert_ptr_not_equal(row_major, from_c);
    *row_major = 1;
    *from_c = 2;
    assert_int_equal(*(int *)symbol(blas_ft, "RowMajorStrg"), 1);
    assert_int_equal(*(int *)symbol(blas_ft, "CBLAS_CallFromC"), 2);
    *row_major = 0;
    *from_c = 0;
}

int main(void)
{
    const char *lib = getenv("LIBBLAS_FT_SO");
    if (!lib) {
        fprintf(stderr, "test_xerbla: LIBBLAS_FT_SO must be set\n");
        return 1;
    }
    blas_ft = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    if (!blas_ft) {
        fprintf(stderr, "test_xerbla: %s\n", dlerror());
        return 1;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(xerbla_message_and_stop),
        cmocka_unit_test(xerbla_array_calls_the_programs_xerbla),
        cmocka_unit_test(cblas_xerbla_fixed_cases),
        cmocka_unit_test(cblas_xerbla_matches_reference),
        cmocka_unit_test(cblas_globals_exported),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
