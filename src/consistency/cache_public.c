/* The public declarations of blas_ft_cache.h. */
#include "blas_ft_cache.h"

#include "cache.h"

void blasft_cache_mark_changed(const void *ptr, size_t bytes)
{
    blasft_cache_registry_mark(ptr, bytes, true);
}

void blasft_cache_mark_unchanged(const void *ptr, size_t bytes)
{
    blasft_cache_registry_mark(ptr, bytes, false);
}
