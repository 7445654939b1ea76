#include "gpu_cublas.h"

#include "log.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>

static blasft_cublas_api api;
static const blasft_cublas_api *api_ok;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void *open_cublas(void)
{
    static const char *const names[] = {"libcublas.so.13", "libcublas.so.12", "libcublas.so"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        void *h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
        if (h)
            return h;
    }
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        void *h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
        if (h)
            return h;
    }
    return NULL;
}

/* dlsym returns void *; going through a union keeps -Wpedantic quiet about object-to-function
 * pointer casts. */
#define RESOLVE(field, sym)                                                                        \
    do {                                                                                           \
        union { void *p; __typeof__(api.field) f; } u_;                                            \
        u_.p = dlsym(h, sym);                                                                      \
        if (!u_.p) {                                                                               \
            blasft_log(BLASFT_LOG_WARN, "cuBLAS lacks %s: GPU path disabled", sym);                \
            return;                                                                                \
        }                                                                                          \
        api.field = u_.f;                                                                          \
    } while (0)

static void load(void)
{
    void *h = open_cublas();
    if (!h) {
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
