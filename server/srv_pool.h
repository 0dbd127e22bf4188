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
 * Helping (work stealing): a worker with nothing queued of its own helps the others.  A unit that can share its
 * work sets `steal`; while its own worker runs it (and only then), an idle worker may call steal to run a few of
 * its rows.  Before its worker moves on to another unit (another lane's turn, or the unit's finish) it waits for
 * the helpers inside steal to return, so everything done on a unit's rows still happens between that unit's start
 * and its finish: a lane's order, and which worker's units may touch which worlds, are as without helping.  A
 * helper takes one steal call at a time and looks at its own queue between calls, so its own owners wait at
 * most one steal call for it.
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
    /* Optional (NULL: the unit is not shared): runs at most budget worlds of the unit's work that no one has
     * taken yet on `helper`, an idle worker other than the unit's own; returns how many it ran (0: nothing
     * left to take).  Called only while the unit's worker is inside run, possibly by several helpers at once
     * and concurrently with run, which must therefore take its work through the same shared cursor. */
    int (*steal)(srv_unit *u, int helper, int budget);
};

typedef struct srv_lane {
    srv_unit *head, *tail;
    struct srv_lane *rnext, *rprev;                   /* ring of lanes with work (the pool's) */
    int in_ring;
    /* the pool's record of the head unit's wait (srv_pool_waits): the worker's turns when it became the head,
     * the other lanes in the ring then, and whether its first turn is still to come */
    unsigned long head_turn;
    int head_others, head_waiting;
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
/* The round-robin bound, as counted on `worker` so far: a unit that becomes the head of its lane (pushed on an
 * empty lane, or its predecessor finished) waits for at most one turn of each other lane in the ring at that
 * moment before its own first turn (the turn in progress, begun earlier, is not counted).  *max_waited: the
 * most turns of other lanes a head unit waited for; *max_excess: the most by which that exceeded the other
 * lanes it found (<= 0 while the bound holds); *heads: the head units that have had their first turn. */
void srv_pool_waits(srv_pool *p, int worker, unsigned long *max_waited, long *max_excess, unsigned long *heads);
/* The size of the next piece of shared work with `left` worlds left, at most `want`, on a pool of `threads`
 * workers: at most 1 / (2 T) of what is left (rounded up) while others may help, so that the workers finish
 * within about one world of each other; `want` alone on one thread. */
int srv_pool_piece(int left, int want, int threads);
/* Worlds `worker` ran as a helper (the sum of its steal calls' results). */
unsigned long srv_pool_helped(const srv_pool *p, int worker);
/* Called by a running unit that has much work left: wakes one sleeping idle worker, if any, to help. */
void srv_pool_help_wanted(srv_pool *p);

#endif
