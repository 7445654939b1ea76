#include "hostblas.h"

#include "bundled_names.h"
#include "config.h"
#include "foreign.h"
#include "gemm.h"
#include "log.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Tried in order when BLASFT_HOST_BLAS is unset (or cannot be used). */
static const char *const default_host_libraries[] = {
    "libopenblas.so.0", "libopenblas.so", "libblas.so.3", "libblas.so", NULL,
};

static void *host_handle;
static char host_path[BLASFT_PATH_MAX];
static pthread_once_t host_once = PTHREAD_ONCE_INIT;
static const char *host_spin = "not loaded";

/* OpenBLAS's idle workers spin (yielding) for about 2^28 cycles, roughly 0.1 s, after each
 * threaded call before they sleep. The engine's passes run on its own threads right after the
 * GEMM and before the next one, and on a 16-core host those spinners took the cores from them:
 * with OpenBLAS told to sleep at once (OPENBLAS_THREAD_TIMEOUT=4, its minimum) the protected
 * DGEMM n = 1024 went from 9.6 to 5.4 ms there, the GEMM itself no slower (docs/host-overhead.md).
 * OpenBLAS reads the variable once, when it is loaded, so it can only be given to a host BLAS
 * that this library loads itself; the user's own setting (either name) always wins, and the
 * variable is removed again right after the load so the program's environment is unchanged. */
static int user_set_spin(void)
{
    return getenv("OPENBLAS_THREAD_TIMEOUT") || getenv("GOTO_THREAD_TIMEOUT");
}

static void *open_host(const char *name)
{
    void *loaded = dlopen(name, RTLD_NOW | RTLD_NOLOAD);
    if (loaded) {
        host_spin = "already loaded";
        return loaded;
    }
    if (blasft_cfg()->mode == BLASFT_MODE_OFF) {
        host_spin = "unchanged (mode off)";
        return dlopen(name, RTLD_NOW | RTLD_LOCAL);
    }
    if (user_set_spin()) {
        host_spin = "the user's";
        return dlopen(name, RTLD_NOW | RTLD_LOCAL);
    }
    setenv("OPENBLAS_THREAD_TIMEOUT", "4", 0);
    void *h = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    unsetenv("OPENBLAS_THREAD_TIMEOUT");
    host_spin = "short";
    return h;
}

/* Base address of libblas_ft itself, to refuse any symbol that resolves back into it. */
static void *self_base(void)
{
    Dl_info info;
    if (dladdr((void *)&self_base, &info) && info.dli_fbase)
        return info.dli_fbase;
    return NULL;
}

int blasft_inside_self(const void *addr)
{
    Dl_info info;
    return addr && dladdr(addr, &info) && info.dli_fbase == self_base();
}

/* Opens one candidate; accepts it only if its dgemm_ is a real one outside libblas_ft (a
 * libblas.so.3 alternative may point back at libblas_ft). */
static void *try_open(const char *name)
{
    void *h = open_host(name);
    if (!h)
        return NULL;
    void *probe = dlsym(h, "dgemm_");
    if (!probe || blasft_inside_self(probe)) {
        dlclose(h);
        return NULL;
    }
    return h;
}

/* BLASFT_HOST_BLAS=none: no host library; GEMMs use a bundled one (blasft_host_gemm). */
static int host_none(void) { return strcmp(blasft_cfg()->host_blas, "none") == 0; }

static void host_load(void)
{
    const char *wanted = blasft_cfg()->host_blas;
    if (host_none())
        return;
    if (wanted[0]) {
        host_handle = try_open(wanted);
        if (host_handle) {
            snprintf(host_path, sizeof host_path, "%s", wanted);
            return;
        }
        fprintf(stderr,
                "libblas_ft: BLASFT_HOST_BLAS='%s' cannot be used: expected the path or soname of "
                "a loadable BLAS library (with dgemm_) other than libblas_ft; using the default "
                "OpenBLAS\n",
                wanted);
    }
    for (int i = 0; default_host_libraries[i]; i++) {
        host_handle = try_open(default_host_libraries[i]);
        if (host_handle) {
            snprintf(host_path, sizeof host_path, "%s", default_host_libraries[i]);
            return;
        }
    }
}

const char *blasft_host_path(void) { return host_path; }

const char *blasft_host_spin(void) { return host_path[0] ? host_spin : "not loaded"; }

void *blasft_host_sym_optional(const char *name)
{
    pthread_once(&host_once, host_load);
    if (!host_handle)
        return NULL;
    void *p = dlsym(host_handle, name);
    return blasft_inside_self(p) ? NULL : p;
}

void *blasft_host_sym(const char *name)
{
    void *p = blasft_host_sym_optional(name);
    if (p)
        return p;
    if (!host_handle && host_none())
        fprintf(stderr, "libblas_ft: fatal: BLASFT_HOST_BLAS=none, and the process has no bundled "
                        "BLAS routine for '%s'\n", name);
    else if (!host_handle)
        fprintf(stderr,
                "libblas_ft: fatal: no host BLAS could be loaded (tried BLASFT_HOST_BLAS and "
                "libopenblas.so.0, libopenblas.so, libblas.so.3, libblas.so); install OpenBLAS "
                "(Debian: libopenblas0) or set BLASFT_HOST_BLAS\n");
    else
        fprintf(stderr, "libblas_ft: fatal: the host BLAS '%s' has no routine '%s'\n", host_path,
                name);
    abort();
}

/* ---- the GEMM every product of the engines is computed with ---- */

/* Per type: the host BLAS's ?gemm_, or where no host BLAS could be loaded (or
 * BLASFT_HOST_BLAS=none) the application's own bundled one (docs/bundled-blas.md), the first of
 * these found: scipy's ILP64 and LP64 names and the suffix 64_. gfortran passes the two string
 * lengths last. */
typedef struct host_gemm {
    void *fn;
    int ilp64;
} host_gemm;
static host_gemm host_gemms[4];
static pthread_once_t host_gemms_once = PTHREAD_ONCE_INIT;
static const char *const host_gemm_names[] = {"sgemm_", "dgemm_", "cgemm_", "zgemm_"};
#define BUNDLED_GEMMS(prefix, fsuffix, csuffix, INT)                                             \
    {{#prefix "sgemm" #fsuffix, #prefix "dgemm" #fsuffix, #prefix "cgemm" #fsuffix,               \
      #prefix "zgemm" #fsuffix},                                                                  \
     sizeof(INT) == 8, #prefix "openblas_get_num_threads" #csuffix},
static const struct {
    const char *name[4];
    int ilp64;
    const char *threads; /* the family's openblas_get_num_threads */
} bundled_gemms[] = {BLASFT_BUNDLED_FAMILIES(BUNDLED_GEMMS)};
static void *host_threads; /* the thread count of the library the GEMMs come from */

static void find_host_gemms(void)
{
    host_threads = blasft_host_sym_optional("openblas_get_num_threads");
    for (int t = 0; t < 4; t++) {
        host_gemms[t].fn = blasft_host_sym_optional(host_gemm_names[t]);
        for (size_t f = 0; !host_gemms[t].fn && f < sizeof bundled_gemms / sizeof bundled_gemms[0];
             f++)
            if ((host_gemms[t].fn = blasft_foreign_sym(bundled_gemms[f].name[t]))) {
                host_gemms[t].ilp64 = bundled_gemms[f].ilp64;
                if (t == BLASFT_TYPE_D && !host_threads)
                    host_threads = blasft_foreign_sym(bundled_gemms[f].threads);
            }
    }
}

void *blasft_host_threads_fn(void)
{
    pthread_once(&host_gemms_once, find_host_gemms);
    return host_threads;
}

int blasft_host_gemm_ready(int type)
{
    pthread_once(&host_gemms_once, find_host_gemms);
    return type >= 0 && type < 4 && host_gemms[type].fn != NULL;
}

typedef void gemm_fn(const char *, const char *, const int *, const int *, const int *,
                     const void *, const void *, const int *, const void *, const int *,
                     const void *, void *, const int *, size_t, size_t);
typedef void gemm64_fn(const char *, const char *, const int64_t *, const int64_t *,
                       const int64_t *, const void *, const void *, const int64_t *, const void *,
                       const int64_t *, const void *, void *, const int64_t *, size_t, size_t);

void blasft_host_gemm(const blasft_gemm *g)
{
    if (!blasft_host_gemm_ready(g->type))
        blasft_host_sym(host_gemm_names[g->type]); /* names what is missing and aborts */
    const host_gemm *h = &host_gemms[g->type];
    float salpha[2] = {(float)g->alpha[0], (float)g->alpha[1]};
    float sbeta[2] = {(float)g->beta[0], (float)g->beta[1]};
    int single = g->type == BLASFT_TYPE_S || g->type == BLASFT_TYPE_C;
    const void *alpha = single ? (const void *)salpha : (const void *)g->alpha;
    const void *beta = single ? (const void *)sbeta : (const void *)g->beta;
    if (h->ilp64) {
        ((gemm64_fn *)h->fn)(&g->transa, &g->transb, &g->m, &g->n, &g->k, alpha, g->a, &g->lda,
                             g->b, &g->ldb, beta, g->c, &g->ldc, 1, 1);
        return;
    }
    int m = (int)g->m, n = (int)g->n, k = (int)g->k;
    int lda = (int)g->lda, ldb = (int)g->ldb, ldc = (int)g->ldc;
    ((gemm_fn *)h->fn)(&g->transa, &g->transb, &m, &n, &k, alpha, g->a, &lda, g->b, &ldb, beta,
                       g->c, &ldc, 1, 1);
}
