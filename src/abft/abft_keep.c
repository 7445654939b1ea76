#include "abft/abft_keep.h"

#include <pthread.h>
#include <stdlib.h>

typedef struct kept {
    double *p[ABFT_KEEP_SLOTS];
    size_t cap[ABFT_KEEP_SLOTS];
    int lent[ABFT_KEEP_SLOTS];
} kept;

static pthread_key_t kept_key;
static int kept_key_ok;
static pthread_once_t kept_once = PTHREAD_ONCE_INIT;

static void kept_free(void *v)
{
    kept *k = v;
    for (int s = 0; s < ABFT_KEEP_SLOTS; s++)
        free(k->p[s]);
    free(k);
}

static void kept_init(void) { kept_key_ok = pthread_key_create(&kept_key, kept_free) == 0; }

/* The calling thread's record, made on first use; NULL if none can be had (then nothing is kept). */
static kept *kept_self(int make)
{
    pthread_once(&kept_once, kept_init);
    if (!kept_key_ok)
        return NULL;
    kept *k = pthread_getspecific(kept_key);
    if (!k && make) {
        k = calloc(1, sizeof *k);
        if (k && pthread_setspecific(kept_key, k) != 0) {
            free(k);
            k = NULL;
        }
    }
    return k;
}

double *abft_keep_get(int slot, size_t count)
{
    size_t bytes = (count > 0 ? count : 1) * sizeof(double);
    kept *k = slot >= 0 && slot < ABFT_KEEP_SLOTS && bytes <= ABFT_KEEP_MAX_BYTES ? kept_self(1)
                                                                                  : NULL;
    if (!k || k->lent[slot])
        return malloc(bytes);
    if (k->cap[slot] < count || !k->p[slot]) {
        free(k->p[slot]);
        k->p[slot] = malloc(bytes);
        k->cap[slot] = k->p[slot] ? count : 0;
        if (!k->p[slot])
            return NULL;
    }
    k->lent[slot] = 1;
    return k->p[slot];
}

void abft_keep_put(int slot, double *p)
{
    if (!p)
        return;
    kept *k = slot >= 0 && slot < ABFT_KEEP_SLOTS ? kept_self(0) : NULL;
    if (k && k->lent[slot] && p == k->p[slot]) {
        k->lent[slot] = 0;
        return;
    }
    free(p);
}
