#include "gpu_cublas.h"

#include "log.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>

static blasft_cublas_api api;
static const blasft_cublas_api *api_ok;
static void *lib; /* the dlopen handle of the cuBLAS instance, or NULL */
static pthread_once_t once = PTHREAD_ONCE_INIT;

/* The base address of the object containing addr (NULL if none). */
static const void *object_of(const void *addr)
{
    Dl_info di;
    return addr && dladdr(addr, &di) ? di.dli_fbase : NULL;
}

static const void *self_object(void) { return object_of((const void *)&object_of); }

static void *find_cublas(void)
{
    static const char *const sonames[] = {"libcublas.so.13", "libcublas.so.12", "libcublas.so"};
    /* the global scope's cuBLAS: the application's when it links cuBLAS itself */
    void *probe = dlsym(RTLD_NEXT, "cublasGetStream_v2");
    Dl_info di;
    if (probe && dladdr(probe, &di) && di.dli_fbase != self_object() && di.dli_fname) {
        void *h = dlopen(di.dli_fname, RTLD_NOW | RTLD_NOLOAD);
        if (h)
            return h;
    }
    /* loaded, but not in the global scope (a dependency of a library opened RTLD_LOCAL) */
    for (size_t i = 0; i < sizeof sonames / sizeof sonames[0]; i++) {
        void *h = dlopen(sonames[i], RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
        if (h)
            return h;
    }
    for (size_t i = 0; i < sizeof sonames / sizeof sonames[0]; i++) {
        void *h = dlopen(sonames[i], RTLD_NOW | RTLD_LOCAL);
        if (h)
            return h;
    }
    return NULL;
}

static void *lookup(const char *name)
{
    void *p = lib ? dlsym(lib, name) : NULL;
    if (p && object_of(p) == self_object()) {
        blasft_log(BLASFT_LOG_ERROR, "cuBLAS: %s resolved to libblas_ft itself", name);
        return NULL;
    }
    return p;
}

/* dlsym returns void *; going through a union keeps -Wpedantic quiet about object-to-function
 * pointer casts. */
#define RESOLVE(field, sym)                                                                        \
    do {                                                                                           \
        union { void *p; __typeof__(api.field) f; } u_;                                            \
        u_.p = lookup(sym);                                                                        \
        if (!u_.p) {                                                                               \
            blasft_log(BLASFT_LOG_WARN, "cuBLAS lacks %s: GPU path disabled", sym);                \
            return;                                                                                \
        }                                                                                          \
        api.field = u_.f;                                                                          \
    } while (0)

static void load(void)
{
    lib = find_cublas();
    if (!lib) {
        blasft_log(BLASFT_LOG_WARN, "no cuBLAS found (%s): GPU path disabled", dlerror());
        return;
    }
    RESOLVE(create, "cublasCreate_v2");
    RESOLVE(destroy, "cublasDestroy_v2");
    RESOLVE(set_stream, "cublasSetStream_v2");
    RESOLVE(set_pointer_mode, "cublasSetPointerMode_v2");
    RESOLVE(sgemm, "cublasSgemm_v2");
    RESOLVE(dgemm, "cublasDgemm_v2");
    RESOLVE(cgemm, "cublasCgemm_v2");
    RESOLVE(zgemm, "cublasZgemm_v2");
    api_ok = &api;
}

const blasft_cublas_api *blasft_cublas(void)
{
    pthread_once(&once, load);
    return api_ok;
}

void *blasft_cublas_sym(const char *name)
{
    pthread_once(&once, load);
    return lookup(name);
}
