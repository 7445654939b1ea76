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

/* Base address of libblas_ft itself, to refuse any symbol that resolves back into it. */
static void *self_base(void)
{
    Dl_info info;
    if (dladdr((void *)&self_base, &info) && info.dli_fbase)
        return info.dli_fbase;
    return NULL;
}

static int is_inside_self(void *addr)
{
    Dl_info info;
    return addr && dladdr(addr, &info) && info.dli_fbase == self_base();
}

/* Opens one candidate; accepts it only if its dgemm_ is a real one outside libblas_ft (a
 * libblas.so.3 alternative may point back at libblas_ft). */
static void *try_open(const char *name)
{
    void *h = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (!h)
        return NULL;
    void *probe = dlsym(h, "dgemm_");
    if (!probe || is_inside_self(probe)) {
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

void *blasft_host_sym_optional(const char *name)
{
    pthread_once(&host_once, host_load);
    if (!host_handle)
        return NULL;
    void *p = dlsym(host_handle, name);
    return is_inside_self(p) ? NULL : p;
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
