/* The checksum weights per scheme and block size: see abft_weights.h. */
#include "abft/abft_weights.h"

#include "abft/abft_arith.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

typedef struct entry {
    abft_weights v;
    struct entry *next;
} entry;

/* Tables made so far (a process uses one or two), newest first; read without the lock. */
static _Atomic(entry *) tables;
static pthread_mutex_t make_lock = PTHREAD_MUTEX_INITIALIZER;

static const abft_weights *find(entry *e, int scheme, int bs)
{
    for (; e; e = e->next)
        if (e->v.scheme == scheme && e->v.bs == bs)
            return &e->v;
    return NULL;
}

const abft_weights *abft_weights_get(int scheme, int bs)
{
    const abft_weights *w = find(atomic_load_explicit(&tables, memory_order_acquire), scheme, bs);
    if (w)
        return w;
    pthread_mutex_lock(&make_lock);
    entry *head = atomic_load_explicit(&tables, memory_order_acquire);
    if (!(w = find(head, scheme, bs))) {
        entry *e = calloc(1, sizeof *e);
        if (e) {
            e->v.scheme = scheme;
            e->v.bs = bs;
            for (int i = 0; i < bs; i++) {
                e->v.ones[i] = 1.0;
                e->v.w[i] = blasft_weight(scheme, i, bs);
                e->v.abs_sum += fabs(e->v.w[i]);
                e->v.weighted |= e->v.w[i] != 1.0;
            }
            e->next = head;
            atomic_store_explicit(&tables, e, memory_order_release);
            w = &e->v;
        }
    }
    pthread_mutex_unlock(&make_lock);
    return w;
}
