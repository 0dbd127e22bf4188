/* srv_pool.h — the worker threads and their fair scheduler.
 *
 * Each worker has its own queue of lanes.  A lane is a FIFO of work units that belong to one owner
 * (a session, or the server's control work) on that worker; units of one lane run in order, which is
 * what keeps the operations on a world in request order.  A worker takes the unit at the head of the
 * lane at the head of its ring, runs one quantum of it (at most `quantum` worlds), then moves that
 * lane to the tail of the ring: round-robin over owners, so a session with a 4096-world step cannot
 * keep a 1-world session waiting for more than one quantum per other active owner.  A unit may end its
 * turn early (srv_job.c ends a turn after ~2 ms, or after one world of a costly session), so a turn
 * is at most about max(2 ms, one world-step).
 *
 * Ownership: the pool never frees units or lanes.  A unit is handed back through its finish callback
 * after it has left its lane; lanes belong to their owner, which must not free one while it still
 * holds units (the server frees a session's lanes only when none of its jobs is in flight).
 */
#ifndef HERD_SRV_POOL_H
#define HERD_SRV_POOL_H

typedef struct srv_unit srv_unit;
struct srv_unit {
    srv_unit *next;                                   /* lane FIFO link (the pool's) */
    /* Runs at most budget worlds of work on `worker`; returns 1 when the unit is complete. */
    int (*run)(srv_unit *u, int worker, int budget);
    /* Called once, on the worker, after a complete unit has left its lane (may free u). */
    void (*finish)(srv_unit *u, int worker);
};

typedef struct srv_lane {
    srv_unit *head, *tail;
    struct srv_lane *rnext, *rprev;                   /* ring of lanes with work (the pool's) */
    int in_ring;
} srv_lane;

typedef struct srv_pool srv_pool;

/* Starts nthreads workers; quantum = worlds per turn; an idle worker polls for new work spin_us
 * microseconds (yielding the CPU) before it sleeps (0 = sleep at once).  NULL on failure. */
srv_pool *srv_pool_new(int nthreads, int quantum, int spin_us);
/* Lets the workers finish every queued unit, then joins them and frees the pool. */
void srv_pool_destroy(srv_pool **p);
int srv_pool_threads(const srv_pool *p);
/* Appends u to lane (which must only ever be used with this worker) and wakes the worker. */
void srv_pool_push(srv_pool *p, int worker, srv_lane *lane, srv_unit *u);
/* Units run so far (for tests). */
unsigned long srv_pool_turns(srv_pool *p, int worker);

#endif
