/* The application's own definition of a routine libblas_ft also exports: see foreign.h. */
#include "foreign.h"

#include "hostblas.h"

#include <dlfcn.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>

typedef struct loaded {
    char **paths;
    size_t n, cap;
} loaded;

/* Only the paths are taken here: opening an object from inside dl_iterate_phdr, which holds the
 * loader's list lock, is not allowed. */
static int note_path(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    loaded *l = data;
    if (!info->dlpi_name || !info->dlpi_name[0])
        return 0; /* the program itself: in the global scope, searched before */
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 64;
        char **p = realloc(l->paths, cap * sizeof *p);
        if (!p)
            return 1;
        l->paths = p;
        l->cap = cap;
    }
    if ((l->paths[l->n] = strdup(info->dlpi_name)))
        l->n++;
    return 0;
}

void *blasft_foreign_sym(const char *name)
{
    void *p = dlsym(RTLD_NEXT, name);
    if (p && !blasft_inside_self(p))
        return p;
    loaded l = {NULL, 0, 0};
    dl_iterate_phdr(note_path, &l);
    void *found = NULL;
    for (size_t i = 0; i < l.n; i++) {
        if (!found) {
            void *h = dlopen(l.paths[i], RTLD_LAZY | RTLD_NOLOAD);
            if (h) {
                /* the object and its dependencies, as the object's own calls see them */
                void *q = dlsym(h, name);
                if (q && !blasft_inside_self(q))
                    found = q;
                dlclose(h);
            }
        }
        free(l.paths[i]);
    }
    free(l.paths);
    return found;
}
