/* srv_pool.c — worker threads, one ring of lanes each, round-robin quanta.  See srv_pool.h. */
#include "srv_pool.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>
#include <string.h>

typedef struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    srv_lane *ring;              /* head of the circular doubly linked ring, NULL when idle */
    atomic_uint pushes;          /* units pushed so far (read without the lock while spinning) */
    int stop;
    unsigned long turns;
    pthread_t th;
    struct srv_pool *pool;
    int index;
} worker;

struct srv_pool {
    int n, quantum, spin_us;
    worker *w;
};

static void ring_add(worker *w, srv_lane *l)
{
    if (!w->ring) {
        l->rnext = l->rprev = l;
        w->ring = l;
    } else {
        srv_lane *h = w->ring;
        l->rprev = h->rprev;
        l->rnext = h;
        h->rprev->rnext = l;
        h->rprev = l;
    }
    l->in_ring = 1;
}

static void ring_remove(worker *w, srv_lane *l)
{
    if (l->rnext == l) {
        w->ring = NULL;
    } else {
        l->rprev->rnext = l->rnext;
        l->rnext->rprev = l->rprev;
        if (w->ring == l) w->ring = l->rnext;
    }
    l->rnext = l->rprev = NULL;
    l->in_ring = 0;
}

static void *worker_main(void *arg)
{
    worker *w = arg;
    const int quantum = w->pool->quantum;
    /* Workers are throughput threads: SCHED_BATCH lets the I/O thread (and ZeroMQ's) preempt them at
     * once when a message arrives, even when the workers keep every core busy.  Best effort. */
    struct sched_param sp = {0};
    pthread_setschedparam(pthread_self(), SCHED_BATCH, &sp);
    pthread_mutex_lock(&w->mu);
    for (;;) {
        if (!w->ring && !w->stop && w->pool->spin_us > 0) {
            /* Idle: poll a while before sleeping.  A sleeping thread's core may halt, and waking it
             * costs tens of microseconds on a VM; requests that come back to back (a client stepping
             * a few worlds at a time) find the worker awake.  sched_yield lets any other runnable
             * thread of this core go first. */
            unsigned seen = atomic_load_explicit(&w->pushes, memory_order_relaxed);
            pthread_mutex_unlock(&w->mu);
            struct timespec t0, t;
            clock_gettime(CLOCK_MONOTONIC, &t0);
            long budget_ns = 1000L * w->pool->spin_us;
            for (;;) {
                if (atomic_load_explicit(&w->pushes, memory_order_acquire) != seen) break;
                clock_gettime(CLOCK_MONOTONIC, &t);
                if ((t.tv_sec - t0.tv_sec) * 1000000000L + (t.tv_nsec - t0.tv_nsec) > budget_ns) break;
                sched_yield();
            }
            pthread_mutex_lock(&w->mu);
        }
        while (!w->ring && !w->stop) pthread_cond_wait(&w->cv, &w->mu);
        if (!w->ring) break;                          /* stop and nothing left */
        srv_lane *l = w->ring;
        srv_unit *u = l->head;
        w->turns++;
        pthread_mutex_unlock(&w->mu);

        int done = u->run(u, w->index, quantum);

        pthread_mutex_lock(&w->mu);
        if (done) {
            l->head = u->next;
            if (!l->head) l->tail = NULL;
        }
        /* round-robin: the lane goes to the back of the ring (or leaves it when empty) */
        if (!l->head) ring_remove(w, l);
        else if (w->ring == l) w->ring = l->rnext;
        if (done) {
            pthread_mutex_unlock(&w->mu);
            u->finish(u, w->index);                   /* may free u; the lane is not touched after */
            pthread_mutex_lock(&w->mu);
        }
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

srv_pool *srv_pool_new(int nthreads, int quantum, int spin_us)
{
    if (nthreads < 1) nthreads = 1;
    srv_pool *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    p->n = nthreads;
    p->quantum = quantum > 0 ? quantum : 32;
    p->spin_us = spin_us > 0 ? spin_us : 0;
    p->w = calloc((size_t)nthreads, sizeof *p->w);
    if (!p->w) {
        free(p);
        return NULL;
    }
    /* env_step keeps its per-call scratch (up to 1 MiB) on the caller's stack: give workers 8 MiB
     * whatever the process's default (RLIMIT_STACK may be small or unlimited in containers) */
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 8u << 20);
    for (int i = 0; i < nthreads; i++) {
        worker *w = &p->w[i];
        pthread_mutex_init(&w->mu, NULL);
        pthread_cond_init(&w->cv, NULL);
        w->pool = p;
        w->index = i;
        if (pthread_create(&w->th, &attr, worker_main, w)) {
            pthread_attr_destroy(&attr);
            p->n = i;
            srv_pool_destroy(&p);
            return NULL;
        }
    }
    pthread_attr_destroy(&attr);
    return p;
}

void srv_pool_destroy(srv_pool **pp)
{
    if (!pp || !*pp) return;
    srv_pool *p = *pp;
    for (int i = 0; i < p->n; i++) {
        pthread_mutex_lock(&p->w[i].mu);
        p->w[i].stop = 1;
        pthread_cond_signal(&p->w[i].cv);
        pthread_mutex_unlock(&p->w[i].mu);
    }
    for (int i = 0; i < p->n; i++) {
        pthread_join(p->w[i].th, NULL);
        pthread_mutex_destroy(&p->w[i].mu);
        pthread_cond_destroy(&p->w[i].cv);
    }
    free(p->w);
    free(p);
    *pp = NULL;
}

int srv_pool_threads(const srv_pool *p) { return p->n; }

void srv_pool_push(srv_pool *p, int wi, srv_lane *lane, srv_unit *u)
{
    worker *w = &p->w[wi];
    u->next = NULL;
    pthread_mutex_lock(&w->mu);
    if (lane->tail) lane->tail->next = u;
    else lane->head = u;
    lane->tail = u;
    int wake = !w->ring;
    if (!lane->in_ring) ring_add(w, lane);
    atomic_fetch_add_explicit(&w->pushes, 1, memory_order_release);
    pthread_mutex_unlock(&w->mu);
    if (wake) pthread_cond_signal(&w->cv);
}

unsigned long srv_pool_turns(srv_pool *p, int wi)
{
    pthread_mutex_lock(&p->w[wi].mu);
    unsigned long t = p->w[wi].turns;
    pthread_mutex_unlock(&p->w[wi].mu);
    return t;
}
