/* srv_pool.c — worker threads, one ring of lanes each, round-robin quanta, idle workers helping.  See srv_pool.h.
 *
 * Helping without locks: the owner publishes the unit it runs in `running` (seq_cst) before run, and clears it
 * when it moves past the unit (to the unit's finish or another lane's turn), then waits for `helpers` to drop
 * to 0; a helper increments the victim's `helpers` (seq_cst) before it
 * reads `running`, and decrements it after its steal call.  In the single total order of these operations
 * either the helper's increment comes before the owner's clearing read of `helpers` (the owner waits for it),
 * or the helper reads `running` after the clearing and finds NULL or a later unit, whose own end waits for it:
 * a unit is never used by a helper after its worker has moved past it.  The increment and decrement also carry
 * the world data across: what a helper wrote is visible to the owner after its wait, and what the owner wrote
 * before publishing a unit is visible to the unit's helpers. */
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
    int sleeping;                /* waiting on cv with nothing to do (under mu) */
    unsigned long turns;
    int nlanes;                  /* lanes in the ring */
    unsigned long max_waited, heads; /* srv_pool_waits (under mu) */
    long max_excess;
    _Atomic(srv_unit *) running; /* the shareable unit this worker is running, or NULL (see the file comment) */
    atomic_int helpers;          /* other workers inside running's steal */
    atomic_ulong helped;         /* worlds this worker ran for others */
    pthread_t th;
    struct srv_pool *pool;
    int index;
} worker;

struct srv_pool {
    int n, quantum, spin_us;
    atomic_int sleepers;         /* workers asleep with nothing to do */
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
    w->nlanes++;
}

/* l's head unit is new (pushed on the empty lane, or its predecessor finished): its wait starts now, with the
 * other lanes of the ring ahead of it (l is in the ring). */
static void head_arrives(worker *w, srv_lane *l)
{
    l->head_turn = w->turns;
    l->head_others = w->nlanes - 1;
    l->head_waiting = 1;
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
    w->nlanes--;
}

/* One steal call on the first other worker whose running unit has work left; worlds run (0: none found). */
static int help_once(worker *w)
{
    srv_pool *p = w->pool;
    for (int d = 1; d < p->n; d++) {
        worker *v = &p->w[(w->index + d) % p->n];
        if (!atomic_load_explicit(&v->running, memory_order_relaxed)) continue; /* a hint; checked below */
        atomic_fetch_add(&v->helpers, 1);
        srv_unit *u = atomic_load(&v->running);
        const int got = u ? u->steal(u, w->index, p->quantum) : 0;
        atomic_fetch_sub(&v->helpers, 1);
        if (got > 0) {
            atomic_fetch_add_explicit(&w->helped, (unsigned long)got, memory_order_relaxed);
            return got;
        }
    }
    return 0;
}

static double seconds_since(const struct timespec *t0)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)(t.tv_sec - t0->tv_sec) + 1e-9 * (double)(t.tv_nsec - t0->tv_nsec);
}

static void *worker_main(void *arg)
{
    worker *w = arg;
    srv_pool *p = w->pool;
    const int quantum = p->quantum, share = p->n > 1;
    /* Workers are throughput threads: SCHED_BATCH lets the I/O thread (and ZeroMQ's) preempt them at
     * once when a message arrives, even when the workers keep every core busy.  Best effort. */
    struct sched_param sp = {0};
    pthread_setschedparam(pthread_self(), SCHED_BATCH, &sp);
    pthread_mutex_lock(&w->mu);
    for (;;) {
        if (!w->ring && !w->stop) {
            /* Idle: help the others one steal call at a time while they have work to share and none of our
             * own arrives; then poll a while (spin_us) before sleeping.  A sleeping thread's core may halt,
             * and waking it costs tens of microseconds on a VM; requests that come back to back (a client
             * stepping a few worlds at a time) find the worker awake.  sched_yield lets any other runnable
             * thread of this core go first. */
            const unsigned seen = atomic_load_explicit(&w->pushes, memory_order_relaxed);
            pthread_mutex_unlock(&w->mu);
            int helped = 0;
            while (share && atomic_load_explicit(&w->pushes, memory_order_acquire) == seen && help_once(w) > 0)
                helped = 1;
            if (!helped && p->spin_us > 0) {
                struct timespec t0;
                clock_gettime(CLOCK_MONOTONIC, &t0);
                while (atomic_load_explicit(&w->pushes, memory_order_acquire) == seen) {
                    if (share && help_once(w) > 0) {
                        helped = 1;
                        break;
                    }
                    if (seconds_since(&t0) * 1e6 > p->spin_us) break;
                    sched_yield();
                }
            }
            pthread_mutex_lock(&w->mu);
            if (helped) continue; /* our own queue first, then help again */
            if (!w->ring && !w->stop) {
                /* woken by a push, by srv_pool_help_wanted, or spuriously: look again either way */
                w->sleeping = 1;
                atomic_fetch_add(&p->sleepers, 1);
                pthread_cond_wait(&w->cv, &w->mu);
                atomic_fetch_sub(&p->sleepers, 1);
                w->sleeping = 0;
                continue;
            }
        }
        if (!w->ring) break;                          /* stop and nothing left */
        srv_lane *l = w->ring;
        srv_unit *u = l->head;
        if (l->head_waiting) {
            /* the head unit's first turn: the turns begun since it became the head were other lanes' */
            const unsigned long waited = w->turns - l->head_turn;
            const long excess = (long)waited - l->head_others;
            if (waited > w->max_waited) w->max_waited = waited;
            if (!w->heads || excess > w->max_excess) w->max_excess = excess;
            w->heads++;
            l->head_waiting = 0;
        }
        w->turns++;
        pthread_mutex_unlock(&w->mu);

        const int shared = share && u->steal;
        if (shared) atomic_store(&w->running, u);
        int done = u->run(u, w->index, quantum);

        pthread_mutex_lock(&w->mu);
        if (done) {
            l->head = u->next;
            if (!l->head) l->tail = NULL;
            else head_arrives(w, l);
        }
        /* round-robin: the lane goes to the back of the ring (or leaves it when empty) */
        if (!l->head) ring_remove(w, l);
        else if (w->ring == l) w->ring = l->rnext;
        if (shared && (done || w->ring != l)) {
            /* moving past u: no helper may start on it from here; wait for those inside its steal (each runs
             * at most a quantum of worlds).  When u's lane is alone in the ring, u's next turn follows at once
             * (the lock is held until it is taken) and its helpers carry on. */
            pthread_mutex_unlock(&w->mu);
            atomic_store(&w->running, NULL);
            while (atomic_load(&w->helpers) > 0) sched_yield();
            pthread_mutex_lock(&w->mu);
        }
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
    atomic_init(&p->sleepers, 0);
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
        atomic_init(&w->running, NULL);
        atomic_init(&w->helpers, 0);
        atomic_init(&w->helped, 0);
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
    if (lane->head == u) head_arrives(w, lane);
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

void srv_pool_waits(srv_pool *p, int wi, unsigned long *max_waited, long *max_excess, unsigned long *heads)
{
    pthread_mutex_lock(&p->w[wi].mu);
    *max_waited = p->w[wi].max_waited;
    *max_excess = p->w[wi].max_excess;
    *heads = p->w[wi].heads;
    pthread_mutex_unlock(&p->w[wi].mu);
}

int srv_pool_piece(int left, int want, int threads)
{
    const int fair = threads > 1 ? (left + 2 * threads - 1) / (2 * threads) : left;
    return want < fair ? want : fair;
}

unsigned long srv_pool_helped(const srv_pool *p, int wi) { return atomic_load(&p->w[wi].helped); }

void srv_pool_help_wanted(srv_pool *p)
{
    if (!atomic_load_explicit(&p->sleepers, memory_order_relaxed)) return;
    for (int i = 0; i < p->n; i++) {
        worker *v = &p->w[i];
        pthread_mutex_lock(&v->mu);
        const int asleep = v->sleeping && !v->ring;
        if (asleep) {
            v->sleeping = 0; /* one wake-up per sleep */
            pthread_cond_signal(&v->cv);
        }
        pthread_mutex_unlock(&v->mu);
        if (asleep) return;
    }
}
