#include "pool.h"

#include "config.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#define MAX_WORKERS 255

typedef struct pass {
    blasft_pool_fn *fn;
    void *arg;
    size_t items;
    size_t next;     /* next unclaimed item (atomic) */
    int max_workers; /* workers that may join */
    int joined;      /* workers that joined (pool lock) */
    int inside;      /* workers still working on it (pool lock) */
} pass;

static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t pool_work = PTHREAD_COND_INITIALIZER; /* a pass was posted */
static pthread_cond_t pool_left = PTHREAD_COND_INITIALIZER; /* a worker left a pass */
static pass *current;       /* the posted pass, NULL when none */
static unsigned long posted; /* passes posted so far: a worker joins each one at most once */
static int workers;          /* started */
static bool fork_handler;

static void run_items(pass *p)
{
    for (;;) {
        size_t i = __atomic_fetch_add(&p->next, 1, __ATOMIC_RELAXED);
        if (i >= p->items)
            return;
        p->fn(p->arg, i);
    }
}

static void *worker_main(void *unused)
{
    (void)unused;
    unsigned long seen = 0;
    pthread_mutex_lock(&pool_lock);
    for (;;) {
        while (!current || posted == seen || current->joined >= current->max_workers)
            pthread_cond_wait(&pool_work, &pool_lock);
        seen = posted;
        pass *p = current;
        p->joined++;
        p->inside++;
        pthread_mutex_unlock(&pool_lock);
        run_items(p);
        pthread_mutex_lock(&pool_lock);
        if (--p->inside == 0)
            pthread_cond_broadcast(&pool_left);
    }
    return NULL;
}

/* The child of a fork has none of the parent's workers: it starts its own when it needs them. */
static void after_fork_child(void)
{
    pthread_mutex_init(&pool_lock, NULL);
    pthread_cond_init(&pool_work, NULL);
    pthread_cond_init(&pool_left, NULL);
    current = NULL;
    workers = 0;
}

/* Starts workers up to want (pool lock held); keeps what it has if a start fails. */
static void grow(int want)
{
    if (!fork_handler) {
        pthread_atfork(NULL, NULL, after_fork_child);
        fork_handler = true;
    }
    while (workers < want) {
        pthread_t t;
        pthread_attr_t at;
        pthread_attr_init(&at);
        pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
        int rc = pthread_create(&t, &at, worker_main, NULL);
        pthread_attr_destroy(&at);
        if (rc != 0)
            return;
        workers++;
    }
}

void blasft_pool_for(size_t items, blasft_pool_fn *fn, void *arg, int threads)
{
    if (threads <= 0)
        threads = blasft_cfg()->hash_threads;
    if ((size_t)threads > items)
        threads = (int)items;
    pass p = {fn, arg, items, 0, threads - 1, 0, 0};
    if (threads <= 1) {
        run_items(&p);
        return;
    }
    if (p.max_workers > MAX_WORKERS)
        p.max_workers = MAX_WORKERS;
    pthread_mutex_lock(&pool_lock);
    if (current) { /* the workers serve another caller's pass: do this one alone */
        pthread_mutex_unlock(&pool_lock);
        run_items(&p);
        return;
    }
    grow(p.max_workers);
    current = &p;
    posted++;
    pthread_cond_broadcast(&pool_work);
    pthread_mutex_unlock(&pool_lock);
    run_items(&p);
    pthread_mutex_lock(&pool_lock);
    current = NULL; /* no late joiners: every item is claimed */
    while (p.inside > 0)
        pthread_cond_wait(&pool_left, &pool_lock);
    pthread_mutex_unlock(&pool_lock);
}
