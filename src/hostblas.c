#include "hostblas.h"

#include "config.h"
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

static void host_load(void)
{
    const char *wanted = blasft_cfg()->host_blas;
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
    if (!host_handle)
        fprintf(stderr,
                "libblas_ft: fatal: no host BLAS could be loaded (tried BLASFT_HOST_BLAS and "
                "libopenblas.so.0, libopenblas.so, libblas.so.3, libblas.so); install OpenBLAS "
                "(Debian: libopenblas0) or set BLASFT_HOST_BLAS\n");
    else
        fprintf(stderr, "libblas_ft: fatal: the host BLAS '%s' has no routine '%s'\n", host_path,
                name);
    abort();
}
