/* test_pool.c — the worker pool (srv_pool) and the slicing of a session's worlds over it (srv_session):
 * every unit runs to completion exactly once, with one finish; a unit larger than a quantum takes
 * several turns; owners take turns; a lane is FIFO; the workers are distinct threads that run at the
 * same time (a barrier of all of them completes); destroying the pool with units queued runs them all
 * first; slices cover the worlds exactly once, contiguously, each on the worker world_worker names. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "srv_pool.h"
#include "srv_session.h"

/* ---- a unit that logs its turns ---- */

typedef struct {
    srv_unit u;
    int owner, left;
    int *log;
    atomic_int *pos;
    atomic_int *finished;
} tunit;

static int trun(srv_unit *u, int worker, int budget)
{
    tunit *t = (tunit *)u;
    int k = t->left < budget ? t->left : budget;
    t->left -= k;
    t->log[atomic_fetch_add(t->pos, 1)] = t->owner;
    usleep(200);
    return t->left == 0;
}

static void tfinish(srv_unit *u, int worker) { atomic_fetch_add(((tunit *)u)->finished, 1); }

/* A unit that holds its worker until the test opens it: units pushed meanwhile are all queued before the
 * worker looks at its ring again, whatever the test thread's scheduling. */
typedef struct {
    srv_unit u;
    atomic_int open, finished;
} gunit;

static int grun(srv_unit *u, int worker, int budget)
{
    gunit *g = (gunit *)u;
    while (!atomic_load(&g->open)) usleep(100);
    return 1;
}

static void gfinish(srv_unit *u, int worker) { atomic_store(&((gunit *)u)->finished, 1); }

Test(pool, owners_take_turns)
{
    srv_pool *p = srv_pool_new(1, 4, 50);
    srv_lane lanes[4] = {{0}};
    int log[256];
    atomic_int pos = 0, finished = 0;
    /* owner 0: one unit of 40 worlds (10 turns); owners 1 and 2: one unit of 4 worlds (1 turn) each,
     * queued right after: they must not wait for owner 0's ten turns.  The gate (its own lane, at the head
     * of the ring) keeps the worker until all three are queued, so the order of turns is the scheduler's,
     * not the test thread's luck between its pushes. */
    gunit gate = {0};
    gate.u.run = grun;
    gate.u.finish = gfinish;
    srv_pool_push(p, 0, &lanes[3], &gate.u);
    tunit big = {{0}, 0, 40, log, &pos, &finished};
    tunit s1 = {{0}, 1, 4, log, &pos, &finished}, s2 = {{0}, 2, 4, log, &pos, &finished};
    big.u.run = s1.u.run = s2.u.run = trun;
    big.u.finish = s1.u.finish = s2.u.finish = tfinish;
    srv_pool_push(p, 0, &lanes[0], &big.u);
    srv_pool_push(p, 0, &lanes[1], &s1.u);
    srv_pool_push(p, 0, &lanes[2], &s2.u);
    atomic_store(&gate.open, 1);
    while (atomic_load(&finished) < 3) usleep(1000);
    cr_assert(atomic_load(&gate.finished));
    int n = atomic_load(&pos);
    cr_assert_eq(n, 12);
    int at1 = -1, at2 = -1;
    for (int i = 0; i < n; i++) {
        if (log[i] == 1) at1 = i;
        if (log[i] == 2) at2 = i;
    }
    /* round-robin from the gate's lane: big, s1, s2, then big's nine other turns */
    cr_assert(at1 == 1 && at2 == 2 && log[0] == 0, "small owners ran at turns %d and %d", at1, at2);
    /* the pool's own count of the waits: s2 waited for big's and s1's first turns, and the gate's too when it was
     * queued before the gate's turn began (the test thread may push first); no unit waited beyond the lanes
     * queued ahead of it */
    unsigned long waited, heads;
    long excess;
    srv_pool_waits(p, 0, &waited, &excess, &heads);
    cr_assert(waited >= 2 && waited <= 3 && excess == 0 && heads == 4, "waits: at most %lu turns, %ld beyond, %lu heads", waited,
              excess, heads);
    srv_pool_destroy(&p);
}

Test(pool, a_lane_runs_in_order)
{
    srv_pool *p = srv_pool_new(2, 1, 0);
    srv_lane lane = {0};
    int log[64];
    atomic_int pos = 0, finished = 0;
    tunit u[8];
    for (int i = 0; i < 8; i++) {
        u[i] = (tunit){{0}, i, 2, log, &pos, &finished};
        u[i].u.run = trun;
        u[i].u.finish = tfinish;
        srv_pool_push(p, 1, &lane, &u[i].u);
    }
    while (atomic_load(&finished) < 8) usleep(1000);
    for (int i = 0; i < 16; i++) cr_assert_eq(log[i], i / 2, "FIFO within a lane");
    srv_pool_destroy(&p);
}

/* ---- a unit that counts its calls ---- */

typedef struct {
    srv_unit u;
    int worlds;                 /* work left, in worlds */
    int worker;                 /* the worker it was pushed to */
    atomic_int runs, finishes, wrong_worker, ran_after_finish;
} cunit;

static int crun(srv_unit *u, int worker, int budget)
{
    cunit *c = (cunit *)u;
    atomic_fetch_add(&c->runs, 1);
    if (worker != c->worker) atomic_fetch_add(&c->wrong_worker, 1);
    if (atomic_load(&c->finishes)) atomic_fetch_add(&c->ran_after_finish, 1);
    c->worlds -= c->worlds < budget ? c->worlds : budget;
    return c->worlds == 0;
}

static void cfinish(srv_unit *u, int worker)
{
    cunit *c = (cunit *)u;
    if (worker != c->worker) atomic_fetch_add(&c->wrong_worker, 1);
    atomic_fetch_add(&c->finishes, 1);
}

/* Pushes n units of worlds[i % 5] worlds over the workers and lanes; destroys the pool at once when
 * `destroy_now` (the queued units must still all run), else waits for the finishes. */
static void run_many(int threads, int quantum, int n, int destroy_now)
{
    static const int worlds[5] = {1, 7, 16, 17, 40};
    srv_pool *p = srv_pool_new(threads, quantum, 20);
    cr_assert(p);
    cr_assert_eq(srv_pool_threads(p), threads);
    const int nlanes = 3 * threads;
    srv_lane *lanes = calloc((size_t)nlanes, sizeof *lanes);
    cunit *u = calloc((size_t)n, sizeof *u);
    for (int i = 0; i < n; i++) {
        int lane = (i * 7) % nlanes;              /* lane l belongs to worker l % threads */
        u[i].worlds = worlds[i % 5];
        u[i].worker = lane % threads;
        u[i].u.run = crun;
        u[i].u.finish = cfinish;
        srv_pool_push(p, u[i].worker, &lanes[lane], &u[i].u);
    }
    if (!destroy_now) {
        for (int i = 0; i < n; i++)
            while (!atomic_load(&u[i].finishes)) usleep(200);
    }
    srv_pool_destroy(&p);
    cr_assert_null(p);
    for (int i = 0; i < n; i++) {
        int turns = (worlds[i % 5] + quantum - 1) / quantum;
        cr_assert_eq(atomic_load(&u[i].finishes), 1, "unit %d finished once", i);
        cr_assert_eq(atomic_load(&u[i].runs), turns, "unit %d: %d worlds in quanta of %d", i, worlds[i % 5], quantum);
        cr_assert_eq(u[i].worlds, 0);
        cr_assert_eq(atomic_load(&u[i].wrong_worker), 0, "unit %d ran on its own worker", i);
        cr_assert_eq(atomic_load(&u[i].ran_after_finish), 0);
    }
    free(u);
    free(lanes);
}

Test(pool, every_unit_runs_to_completion_once) { run_many(3, 8, 300, 0); }

Test(pool, destroy_runs_the_queued_units_first) { run_many(2, 4, 500, 1); }

Test(pool, turns_are_counted_per_worker)
{
    srv_pool *p = srv_pool_new(2, 5, 0);
    srv_lane lane = {0};
    cunit u = {0};
    u.worlds = 23;                               /* 5 turns of 5 */
    u.worker = 1;
    u.u.run = crun;
    u.u.finish = cfinish;
    srv_pool_push(p, 1, &lane, &u.u);
    while (!atomic_load(&u.finishes)) usleep(200);
    cr_assert_eq(srv_pool_turns(p, 1), 5);
    cr_assert_eq(srv_pool_turns(p, 0), 0);
    srv_pool_destroy(&p);
}

/* ---- the workers are distinct threads running at once ---- */

typedef struct {
    srv_unit u;
    pthread_barrier_t *barrier;
    pthread_t self;
    atomic_int *finished;
} bunit;

static int brun(srv_unit *u, int worker, int budget)
{
    bunit *b = (bunit *)u;
    b->self = pthread_self();
    pthread_barrier_wait(b->barrier);            /* returns only when every worker is here */
    return 1;
}

static void bfinish(srv_unit *u, int worker) { atomic_fetch_add(((bunit *)u)->finished, 1); }

Test(pool, the_workers_run_concurrently_on_their_own_threads, .timeout = 20)
{
    enum { T = 4 };
    srv_pool *p = srv_pool_new(T, 16, 0);
    cr_assert_eq(srv_pool_threads(p), T);
    pthread_barrier_t barrier;
    pthread_barrier_init(&barrier, NULL, T);
    srv_lane lanes[T] = {{0}};
    bunit u[T];
    atomic_int finished = 0;
    for (int t = 0; t < T; t++) {
        u[t] = (bunit){{0}, &barrier, 0, &finished};
        u[t].u.run = brun;
        u[t].u.finish = bfinish;
        srv_pool_push(p, t, &lanes[t], &u[t].u);
    }
    while (atomic_load(&finished) < T) usleep(500);
    for (int a = 0; a < T; a++) {
        cr_assert(!pthread_equal(u[a].self, pthread_self()), "not the caller's thread");
        for (int b = a + 1; b < T; b++) cr_assert(!pthread_equal(u[a].self, u[b].self), "workers %d and %d", a, b);
    }
    srv_pool_destroy(&p);
    pthread_barrier_destroy(&barrier);
}

/* ---- idle workers help with a shareable unit ---- */

enum { HROWS = 400 };
typedef struct {
    srv_unit u;
    srv_pool *pool;
    int first;                  /* sequence numbers of this unit's rows are recorded at seq[first + row] */
    atomic_int next;            /* rows taken */
    atomic_int done;            /* rows run */
    atomic_int done_at_finish;
    atomic_int *clock;          /* global sequence: order of row completions */
    int *seq, *by;              /* per row: completion order, worker that ran it */
    atomic_int *finished;
    int wait_for_help;          /* run takes no row before a helper took some (or HELP_WAIT_S passed) */
    atomic_int stolen;          /* rows the helpers took */
} hunit;

#define HELP_WAIT_S 20.0        /* a helper that has not come in this long is not coming */

static void hrows(hunit *h, int worker, int a, int b)
{
    for (int r = a; r < b; r++) {
        volatile double x = 0;
        for (int i = 0; i < 20000; i++) x += i * 1e-9;   /* ~10-20 us of work per row */
        h->by[h->first + r] = worker;
        h->seq[h->first + r] = atomic_fetch_add(h->clock, 1);
        atomic_fetch_add(&h->done, 1);
    }
}

static double mono_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int hrun(srv_unit *u, int worker, int budget)
{
    hunit *h = (hunit *)u;
    srv_pool_help_wanted(h->pool);
    /* helping is observed, not hoped for: on a busy machine the helper may get no CPU while the owner runs
     * every row, so the owner waits for a first stolen piece (a helper that never comes fails the test) */
    for (double t0 = mono_s(); h->wait_for_help && !atomic_load(&h->stolen) && mono_s() - t0 < HELP_WAIT_S;) {
        srv_pool_help_wanted(h->pool);
        sched_yield();
    }
    while (budget > 0) {
        int a = atomic_fetch_add(&h->next, 1);
        if (a >= HROWS) break;
        hrows(h, worker, a, a + 1);
        budget--;
    }
    return atomic_load(&h->next) >= HROWS;
}

static int hsteal(srv_unit *u, int helper, int budget)
{
    hunit *h = (hunit *)u;
    int a = atomic_fetch_add(&h->next, 2);
    if (a >= HROWS) return 0;
    int b = a + 2 < HROWS ? a + 2 : HROWS;
    hrows(h, helper, a, b);
    atomic_fetch_add(&h->stolen, b - a);
    return b - a;
}

static void hfinish(srv_unit *u, int worker)
{
    hunit *h = (hunit *)u;
    atomic_store(&h->done_at_finish, atomic_load(&h->done));
    atomic_fetch_add(h->finished, 1);
}

/* Two shareable units on one lane of worker 0, with spin_us as given: the other workers (idle, asleep
 * when spin_us = 0) help; every row runs once; the first unit's rows all complete before any of the second's
 * (the lane's order) and before its finish. */
static void run_helped(int threads, int spin_us)
{
    srv_pool *p = srv_pool_new(threads, 4, spin_us);
    usleep(20000);                               /* let the idle workers settle (asleep when spin_us = 0) */
    srv_lane lane = {0};
    static int seq[2 * HROWS], by[2 * HROWS];
    memset(seq, -1, sizeof seq);
    memset(by, -1, sizeof by);
    atomic_int clock = 0, finished = 0;
    hunit h[2];
    for (int k = 0; k < 2; k++) {
        memset(&h[k], 0, sizeof h[k]);
        h[k].pool = p;
        h[k].first = k * HROWS;
        atomic_init(&h[k].next, 0);
        atomic_init(&h[k].done, 0);
        atomic_init(&h[k].done_at_finish, -1);
        h[k].clock = &clock;
        h[k].seq = seq;
        h[k].by = by;
        h[k].finished = &finished;
        h[k].u.run = hrun;
        h[k].u.steal = hsteal;
        h[k].u.finish = hfinish;
        h[k].wait_for_help = k == 0;
        atomic_init(&h[k].stolen, 0);
    }
    srv_pool_push(p, 0, &lane, &h[0].u);
    srv_pool_push(p, 0, &lane, &h[1].u);
    while (atomic_load(&finished) < 2) usleep(500);
    int first_max = -1, second_min = 1 << 30, helped = 0;
    for (int r = 0; r < 2 * HROWS; r++) {
        cr_assert_geq(seq[r], 0, "row %d ran", r);
        if (r < HROWS && seq[r] > first_max) first_max = seq[r];
        if (r >= HROWS && seq[r] < second_min) second_min = seq[r];
        helped += by[r] != 0;
    }
    cr_assert_eq(atomic_load(&clock), 2 * HROWS, "every row ran exactly once");
    for (int k = 0; k < 2; k++) cr_assert_eq(atomic_load(&h[k].done_at_finish), HROWS, "unit %d: all rows before finish", k);
    cr_assert_lt(first_max, second_min, "the lane's order holds with helpers");
    unsigned long sum = 0;
    for (int t = 1; t < threads; t++) sum += srv_pool_helped(p, t);
    cr_assert_eq(srv_pool_helped(p, 0), 0);
    cr_assert_eq(sum, (unsigned long)helped, "srv_pool_helped counts the rows the helpers ran");
    cr_assert_gt(helped, 0, "the idle workers helped (threads %d, spin %d us)", threads, spin_us);
    srv_pool_destroy(&p);
}

Test(pool, idle_workers_help_and_a_lane_keeps_its_order, .timeout = 30) { run_helped(2, 250); }

Test(pool, sleeping_workers_are_woken_to_help, .timeout = 30) { run_helped(3, 0); }

/* A helper turns to its own work between steal calls: once a unit is pushed to the helper's own lane, the
 * helper starts no further steal call before that unit has run.  Observed by counting, not timing: the
 * helper's first steal call holds until the small unit is pushed (so the push lands while a steal is in
 * progress and many rows are left), the owner takes no rows meanwhile, and every steal call that starts
 * after the push and before the small unit ran is counted.  A helper that ignored its own queue would go on
 * stealing the rows left (two per call, about 200 calls). */
static atomic_int g_in_steal, g_pushed, g_small_ran, g_late_steals;

static int hrun_holding(srv_unit *u, int worker, int budget)
{
    hunit *h = (hunit *)u;
    srv_pool_help_wanted(h->pool);
    while (!atomic_load(&g_small_ran)) {                    /* the rows stay for the helper until then */
        srv_pool_help_wanted(h->pool);                      /* (again: the helper may fall asleep meanwhile) */
        sched_yield();
    }
    return hrun(u, worker, budget);
}

static int hsteal_watched(srv_unit *u, int helper, int budget)
{
    if (atomic_load(&g_pushed) && !atomic_load(&g_small_ran)) atomic_fetch_add(&g_late_steals, 1);
    if (!atomic_exchange(&g_in_steal, 1))
        while (!atomic_load(&g_pushed)) sched_yield();      /* the first call: the push happens meanwhile */
    return hsteal(u, helper, budget);
}

static int small_run(srv_unit *u, int worker, int budget)
{
    atomic_store(&g_small_ran, 1);
    return trun(u, worker, budget);
}

Test(pool, a_helper_serves_its_own_lanes_first, .timeout = 60)
{
    srv_pool *p = srv_pool_new(2, 4, 250);
    srv_lane lane0 = {0}, lane1 = {0};
    static int seq[HROWS], by[HROWS];
    atomic_int clock = 0, finished = 0, small_finished = 0;
    hunit h;
    memset(&h, 0, sizeof h);
    h.pool = p;
    atomic_init(&h.next, 0);
    atomic_init(&h.done, 0);
    atomic_init(&h.stolen, 0);
    h.clock = &clock;
    h.seq = seq;
    h.by = by;
    h.finished = &finished;
    h.u.run = hrun_holding;
    h.u.steal = hsteal_watched;
    h.u.finish = hfinish;
    atomic_store(&g_in_steal, 0);
    atomic_store(&g_pushed, 0);
    atomic_store(&g_small_ran, 0);
    atomic_store(&g_late_steals, 0);
    srv_pool_push(p, 0, &lane0, &h.u);
    while (!atomic_load(&g_in_steal)) usleep(100);          /* worker 1 is inside its first steal call */
    int log[4];
    atomic_int pos = 0;
    tunit small = {{0}, 7, 1, log, &pos, &small_finished};
    small.u.run = small_run;
    small.u.finish = tfinish;
    srv_pool_push(p, 1, &lane1, &small.u);
    atomic_store(&g_pushed, 1);
    while (!atomic_load(&small_finished) || !atomic_load(&finished)) usleep(200);
    srv_pool_destroy(&p);
    cr_assert_eq(atomic_load(&h.done_at_finish), HROWS, "every shared row ran");
    cr_assert_eq(atomic_load(&g_late_steals), 0, "the helper started %d steal calls after its own unit was queued",
                 atomic_load(&g_late_steals));
}

Test(pool, zero_threads_means_one)
{
    srv_pool *p = srv_pool_new(0, 0, 0);
    cr_assert(p);
    cr_assert_eq(srv_pool_threads(p), 1);
    srv_pool_destroy(&p);
    srv_pool_destroy(&p);                        /* NULL-safe */
}

/* ---- slices of a session's worlds ---- */

Test(slices, cover_the_worlds_once_each_on_the_named_worker)
{
    static const int sizes[] = {1, 2, 3, 5, 7, 16, 100, 1001, 4096};
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        for (int T = 1; T <= 9; T++) {
            for (int rot = 0; rot < T; rot++) {
                int n = sizes[k];
                srv_session *s = srv_session_new(n, T, rot);
                cr_assert(s);
                cr_assert_eq(srv_session_slice_begin(s, T, 0), 0);
                cr_assert_eq(srv_session_slice_begin(s, T, T), n);
                for (int t = 0; t < T; t++) {
                    int b = srv_session_slice_begin(s, T, t), e = srv_session_slice_begin(s, T, t + 1);
                    cr_assert_leq(b, e, "slices are ordered");
                    cr_assert_leq(e - b, (n + T - 1) / T, "slices are balanced (n %d, T %d)", n, T);
                    for (int w = b; w < e; w++)
                        cr_assert_eq(srv_session_world_worker(s, T, w), (t + rot) % T, "n %d T %d rot %d world %d", n,
                                     T, rot, w);
                }
                srv_session_destroy(&s);
                cr_assert_null(s);
            }
        }
    }
}
