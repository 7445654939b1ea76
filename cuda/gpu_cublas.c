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

/* A library of the application's: the object that defines `probe` next after libblas_ft in the
 * global scope (a symbol we do not export), reopened by its path; else one already loaded under
 * one of the sonames (not in the global scope: a dependency of a library opened RTLD_LOCAL, as
 * PyTorch loads cuBLAS); else the first soname that loads. */
static void *find_lib(const char *probe_sym, const char *const *sonames, size_t nsonames)
{
    void *probe = dlsym(RTLD_NEXT, probe_sym);
    Dl_info di;
    if (probe && dladdr(probe, &di) && di.dli_fbase != self_object() && di.dli_fname) {
        void *h = dlopen(di.dli_fname, RTLD_NOW | RTLD_NOLOAD);
        if (h)
            return h;
    }
    for (size_t i = 0; i < nsonames; i++) {
        void *h = dlopen(sonames[i], RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
        if (h)
            return h;
    }
    for (size_t i = 0; i < nsonames; i++) {
        void *h = dlopen(sonames[i], RTLD_NOW | RTLD_LOCAL);
        if (h)
            return h;
    }
    return NULL;
}

static void *find_cublas(void)
{
    static const char *const sonames[] = {"libcublas.so.13", "libcublas.so.12", "libcublas.so"};
    return find_lib("cublasGetStream_v2", sonames, sizeof sonames / sizeof sonames[0]);
}

/* name in the library lib_, refused where it resolves into libblas_ft */
static void *lookup_in(void *lib_, const char *name)
{
    void *p = lib_ ? dlsym(lib_, name) : NULL;
    if (p && object_of(p) == self_object()) {
        blasft_log(BLASFT_LOG_ERROR, "cuBLAS: %s resolved to libblas_ft itself", name);
        return NULL;
    }
    return p;
}

static void *lookup(const char *name) { return lookup_in(lib, name); }

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

/* an entry point the engine can do without (left NULL) */
#define RESOLVE_OPTIONAL(field, sym)                                                               \
    do {                                                                                           \
        union { void *p; __typeof__(api.field) f; } u_;                                            \
        u_.p = lookup(sym);                                                                        \
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
    RESOLVE_OPTIONAL(sgemm_strided, "cublasSgemmStridedBatched");
    RESOLVE_OPTIONAL(dgemm_strided, "cublasDgemmStridedBatched");
    RESOLVE_OPTIONAL(sgemm_batched, "cublasSgemmBatched");
    RESOLVE_OPTIONAL(dgemm_batched, "cublasDgemmBatched");
    RESOLVE_OPTIONAL(cgemm_strided, "cublasCgemmStridedBatched");
    RESOLVE_OPTIONAL(zgemm_strided, "cublasZgemmStridedBatched");
    RESOLVE_OPTIONAL(cgemm_batched, "cublasCgemmBatched");
    RESOLVE_OPTIONAL(zgemm_batched, "cublasZgemmBatched");
    RESOLVE_OPTIONAL(gemm_ex, "cublasGemmEx");
    RESOLVE_OPTIONAL(gemm_strided_ex, "cublasGemmStridedBatchedEx");
    RESOLVE_OPTIONAL(gemm_batched_ex, "cublasGemmBatchedEx");
    RESOLVE_OPTIONAL(set_math_mode, "cublasSetMathMode");
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

/* ---- cublasLt: the instance the application uses (a dependency of cuBLAS, so found the same
 * way; cublasLtCreate is not exported by libblas_ft) ---- */

static void *lt_lib;
static pthread_once_t lt_once = PTHREAD_ONCE_INIT;

static void load_lt(void)
{
    static const char *const sonames[] = {"libcublasLt.so.13", "libcublasLt.so.12",
                                          "libcublasLt.so"};
    lt_lib = find_lib("cublasLtCreate", sonames, sizeof sonames / sizeof sonames[0]);
    if (!lt_lib)
        blasft_log(BLASFT_LOG_WARN, "no cublasLt found: its calls cannot be passed on");
}

void *blasft_cublaslt_sym(const char *name)
{
    pthread_once(&lt_once, load_lt);
    return lookup_in(lt_lib, name);
}
