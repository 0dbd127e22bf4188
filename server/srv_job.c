/* srv_job.c — jobs on the worker pool; the only code of server/ that calls envs/.  See srv_job.h. */
#include "srv_job.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "srv_log.h"

/* A worker turns to the next lane once a turn has taken this long, even within its quantum of worlds: a
 * session whose worlds are costly (decimation 50, thousands of solver sweeps) holds a worker for about
 * one world-step, not one quantum of them. */
#define SLICE_S 0.002
/* make: worlds created per chunk (a world takes microseconds) */
#define MAKE_CHUNK 256

/* Rows [row0, row1) of a job, all on one worker; `at`: the unit's rows before this run. */
typedef struct srv_job_run {
    int row0, row1, at;
} run_t;

/* A unit's rows, its runs in order, are taken in pieces through one cursor (`next`, counting the unit's rows
 * taken so far) by its worker (unit_run) and by idle workers helping (unit_steal, srv_pool.h). */
struct srv_job_unit {
    srv_unit u;                 /* first: the pool hands this pointer back */
    srv_job *j;
    int worker;
    int r_begin, r_end;         /* this worker's runs in j->runs */
    int rows;                   /* their rows */
    atomic_int next;            /* rows taken so far */
    int chunk;                  /* rows per env call: grows from 1 while a call takes under half a slice */
};

struct srv_jobs {
    int nthreads;
    srv_pool *pool;
    srv_lane *control_lanes;    /* make and close, one lane per worker */
    int next_control;
    float **scratch;            /* per worker: misaligned actions are copied here, a quantum at a time */
    int efd;                    /* eventfd: readable while done jobs wait */
    pthread_mutex_t mu;         /* the done queue */
    srv_job *done_head, *done_tail;
    atomic_int done_pending;    /* the done queue is not empty (read without the lock while spinning) */
    srv_metrics *metrics;       /* work counters and worker busy time, or NULL (not owned) */
};

void srv_jobs_set_metrics(srv_jobs *js, srv_metrics *m) { js->metrics = m; }

/* ------------------------------------------------------------------------------------------------ */
/* jobs */

void srv_job_init(srv_job *j, srv_job_kind kind)
{
    memset(j, 0, sizeof *j);
    j->kind = kind;
    atomic_init(&j->remaining, 0);
    atomic_init(&j->nrefused, 0);
    atomic_init(&j->cancel, 0);
    atomic_init(&j->skipped, 0);
}

int srv_job_cut(srv_job *j) { return atomic_load(&j->skipped) > 0; }

int srv_jobs_task(const char *name) { return env_registry_find(name); }

/* env steps of the probe of a task's physics step (its defaults, zero actions, from a reset) */
#define PHYSICS_PROBE_STEPS 20

int srv_jobs_default_cost(int task, env_cost *out, double *physics_step_s)
{
    const env_spec *sp = env_registry_spec(task);
    char err[256];
    env_t *e = sp ? env_new(sp->name, 1, NULL, 0, 1, ENV_AUTORESET_NEXT_STEP, err, sizeof err) : NULL;
    if (!e) return -1;
    env_get_cost(e, out);
    *physics_step_s = env_physics_step_s(e, PHYSICS_PROBE_STEPS);
    env_destroy(&e);
    return 0;
}

/* Measured once per process: servers started in one process (tests) share the figures. */
static env_solver_timing solver_timing;
static void time_solvers_once(void) { env_time_solvers(&solver_timing); }

void srv_jobs_time_solvers(env_solver_timing *t)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, time_solvers_once);
    *t = solver_timing;
}

double srv_jobs_world_step_s(const env_cost *c, const env_solver_timing *t, double physics_step_s)
{
    return env_world_step_s(c, t, physics_step_s);
}

void srv_job_cancel(srv_job *j) { atomic_store_explicit(&j->cancel, 1, memory_order_relaxed); }
int srv_job_cancelled(const srv_job *j) { return atomic_load_explicit(&j->cancel, memory_order_relaxed); }

void srv_job_clear(srv_job *j)
{
    free(j->seeds);
    free(j->reply);
    free(j->runs);
    free(j->units);
    env_destroy(&j->env);
    srv_job_init(j, j->kind);
}

/* ------------------------------------------------------------------------------------------------ */
/* the workers' side */

void srv_jobs_wake(srv_jobs *d)
{
    uint64_t one = 1;
    ssize_t w = write(d->efd, &one, sizeof one);
    (void)w;
}

static void done_push(srv_jobs *d, srv_job *j)
{
    pthread_mutex_lock(&d->mu);
    int was_empty = !d->done_head;
    j->next = NULL;
    if (d->done_tail) d->done_tail->next = j;
    else d->done_head = j;
    d->done_tail = j;
    atomic_store_explicit(&d->done_pending, 1, memory_order_release);
    pthread_mutex_unlock(&d->mu);
    if (was_empty) srv_jobs_wake(d);
}

/* A terrain task's rows r .. r + k - 1 after their reset or step: info.terrain_level and info.terrain_kind, the
 * tiles of the episodes obs describes. */
static void job_terrain(srv_job *j, int r, int k, int first, const int32_t *ids)
{
    uint8_t *R = j->reply;
    int32_t *level = (int32_t *)(void *)(R + j->lay.terrain_level) + r;
    int32_t *kind = (int32_t *)(void *)(R + j->lay.terrain_kind) + r;
    srv_session *s = j->sess;
    env_terrain_tiles(s->env, first, k, ids, level, kind);
    /* the session's level sums move only where a world's level moved (at its resets), by one atomic add per kind */
    int64_t dsum[ENV_MAX_TERRAIN_KINDS] = {0}, dn[ENV_MAX_TERRAIN_KINDS] = {0};
    int moved = 0;
    for (int i = 0; i < k; i++) {
        const int w = ids ? ids[i] : first + i, was = (int)s->tile_level[w] - 1, now = level[i], kd = kind[i];
        if (now == was || now < 0 || kd < 0 || kd >= ENV_MAX_TERRAIN_KINDS) continue;
        dsum[kd] += now - (was < 0 ? 0 : was);
        dn[kd] += was < 0;
        s->tile_level[w] = (uint16_t)(now + 1);
        moved = 1;
    }
    if (!moved) return;
    srv_metrics *met = j->jobs->metrics;
    for (int kd = 0; kd < ENV_MAX_TERRAIN_KINDS; kd++) {
        if (!dsum[kd] && !dn[kd]) continue;
        atomic_fetch_add_explicit(&s->level_sum[kd], dsum[kd], memory_order_relaxed);
        atomic_fetch_add_explicit(&s->level_worlds[kd], dn[kd], memory_order_relaxed);
        if (met && s->metric_kind[kd] >= 0) srv_metrics_terrain(met, s->metric_kind[kd], dsum[kd], dn[kd]);
    }
}

/* Rows r .. r + k - 1 of a reset / step job (all owned by `worker`). */
static void job_rows(srv_job *j, int worker, int r, int k)
{
    srv_session *s = j->sess;
    const int od = s->obs_dim, ad = s->act_dim, nt = s->nterms;
    uint8_t *R = j->reply;
    const proto_step_layout *L = &j->lay;
    const int32_t *ids = j->ids ? j->ids + r : NULL;
    const int first = j->ids ? 0 : r;
    float *obs = L->obs ? (float *)(void *)(R + L->obs) + (size_t)r * od : NULL;
    srv_metrics *met = j->jobs->metrics;
    double t0 = met ? srv_now_s() : 0;
    if (j->kind == SRV_JOB_POSES) {
        const size_t nb = (size_t)L->nbody;
        env_contacts c = {
            .max = L->max_contacts,
            .count = (int32_t *)(void *)(R + L->contact_count) + r,
            .pos = (float *)(void *)(R + L->contact_pos) + (size_t)r * (size_t)L->max_contacts * 3,
            .normal = (float *)(void *)(R + L->contact_normal) + (size_t)r * (size_t)L->max_contacts * 3,
            .impulse = (float *)(void *)(R + L->contact_impulse) + (size_t)r * (size_t)L->max_contacts,
        };
        if (L->contact_state) {     /* diagnostics (minor 6): the open contacts too, and every optional row */
            const size_t mc = (size_t)L->max_contacts;
            c.open = 1;
            c.state = R + L->contact_state + (size_t)r * mc;
            c.friction = (float *)(void *)(R + L->contact_friction) + (size_t)r * mc * 3;
            c.body = (int32_t *)(void *)(R + L->contact_body) + (size_t)r * mc;
            c.fallback = R + L->diag_fallback + r;
            c.limit = (float *)(void *)(R + L->diag_limit) + (size_t)r * nb;
        }
        env_poses(s->env, first, k, ids, (float *)(void *)(R + L->body_pos) + (size_t)r * nb * 3,
                  (float *)(void *)(R + L->body_quat) + (size_t)r * nb * 4, L->max_contacts > 0 ? &c : NULL);
        if (met) srv_metrics_worker_busy(met, worker, srv_now_s() - t0);
        return;
    }
    /* the critic's observation, when the session asked for it: read after the reset or step, from the state obs
     * describes */
    float *critic = L->critic_obs ? (float *)(void *)(R + L->critic_obs) + (size_t)r * (size_t)s->critic_dim : NULL;
    if (j->kind == SRV_JOB_RESET) {
        env_reset(s->env, first, k, ids, j->seeds ? j->seeds + r : NULL, obs);
        if (critic) env_critic_obs(s->env, first, k, ids, critic);
        if (L->terrain_level) job_terrain(j, r, k, first, ids);
        if (met) srv_metrics_worker_busy(met, worker, srv_now_s() - t0);
        return;
    }
    const float *act;
    if (((uintptr_t)j->actions & 3) == 0) {
        act = (const float *)(const void *)j->actions + (size_t)r * ad;
    } else {
        memcpy(j->jobs->scratch[worker], j->actions + (size_t)r * ad * 4, (size_t)k * ad * 4);
        act = j->jobs->scratch[worker];
    }
    uint8_t *term = R + L->terminated + r, *trunc = R + L->truncated + r;
    env_info info = {
        .final_obs = L->final_obs ? (float *)(void *)(R + L->final_obs) + (size_t)r * od : NULL,
        .physics_reset = R + L->physics_reset + r,
        .episode_done = R + L->episode_done + r,
        .episode_return = (float *)(void *)(R + L->episode_return) + r,
        .episode_length = (int32_t *)(void *)(R + L->episode_length) + r,
        .episode_terms = (float *)(void *)(R + L->episode_terms) + (size_t)r * nt,
        .reward_terms = L->reward_terms ? (float *)(void *)(R + L->reward_terms) + (size_t)r * nt : NULL,
        .autoreset = L->autoreset ? R + L->autoreset + r : NULL,
    };
    env_counters work = {0};
    if (met) info.counters = &work;
    int refused = env_step(s->env, first, k, ids, act, obs, (float *)(void *)(R + L->reward) + r, term, trunc, &info);
    if (refused) atomic_fetch_add(&j->nrefused, refused);
    if (critic) env_critic_obs(s->env, first, k, ids, critic);
    if (L->terrain_level) job_terrain(j, r, k, first, ids);
    if (met) {
        srv_metrics_env_steps(met, work.world_steps, work.physics_resets, work.solver_iterations, work.solver_capped,
                              work.solver_fallbacks, work.solver_ccp_answers, work.joint_limits_active);
        srv_metrics_worker_busy(met, worker, srv_now_s() - t0);
    }
    if (L->final_mask)
        for (int i = 0; i < k; i++) R[L->final_mask + r + i] = (uint8_t)(term[i] | trunc[i]);
}

/* Runs the unit's rows [a, b) (taken from its cursor) on `worker`, run by run. */
static void unit_rows(srv_job_unit *ju, int worker, int a, int b)
{
    srv_job *j = ju->j;
    int lo = ju->r_begin, hi = ju->r_end - 1;     /* the run holding row a: the last with at <= a */
    while (lo < hi) {
        const int mid = (lo + hi + 1) / 2;
        if (j->runs[mid].at <= a) lo = mid;
        else hi = mid - 1;
    }
    for (int ri = lo; a < b; ri++) {
        const run_t *run = &j->runs[ri];
        const int r = run->row0 + (a - run->at);
        const int k = run->row1 - r < b - a ? run->row1 - r : b - a;
        job_rows(j, worker, r, k);
        a += k;
    }
}

/* Takes a piece of the unit's rows (srv_pool_piece, at most `want`): [*a, return value), empty when none are
 * left. */
static int unit_take(srv_job_unit *ju, int want, int *a)
{
    const int left = ju->rows - atomic_load_explicit(&ju->next, memory_order_relaxed);
    if (left <= 0) return *a = ju->rows;
    const int k = srv_pool_piece(left, want, ju->j->jobs->nthreads);
    *a = atomic_fetch_add_explicit(&ju->next, k, memory_order_relaxed);
    return *a + k < ju->rows ? *a + k : ju->rows;
}

static int unit_run(srv_unit *u, int worker, int budget)
{
    srv_job_unit *ju = (srv_job_unit *)u;
    srv_job *j = ju->j;
    if (atomic_load_explicit(&j->cancel, memory_order_relaxed)) {
        /* cancelled: the rest is not run (the reply says so, or there is none) */
        if (atomic_exchange_explicit(&ju->next, ju->rows, memory_order_relaxed) < ju->rows)
            atomic_fetch_add(&j->skipped, 1);
        return 1;
    }
    const double t0 = srv_now_s();
    if (ju->chunk < 1) ju->chunk = 1;
    const int cap = j->max_chunk > 0 ? j->max_chunk : budget;
    /* plenty left for another worker: wake one that sleeps (srv_pool.h, helping) */
    if (ju->rows - atomic_load_explicit(&ju->next, memory_order_relaxed) > 4 * budget)
        srv_pool_help_wanted(j->jobs->pool);
    while (budget > 0) {
        int a;
        const int b = unit_take(ju, ju->chunk < budget ? ju->chunk : budget, &a);
        if (b <= a) break;
        const int k = b - a;
        double t1 = srv_now_s();
        unit_rows(ju, worker, a, b);
        double t2 = srv_now_s();
        budget -= k;
        if (k == ju->chunk && t2 - t1 < 0.5 * SLICE_S && ju->chunk < cap) ju->chunk *= 2;
        else if (t2 - t1 > SLICE_S && ju->chunk > 1) ju->chunk /= 2;
        if (t2 - t0 >= SLICE_S) break;
    }
    /* complete once every row is taken: rows taken by helpers are done when the pool lets the unit finish */
    return atomic_load_explicit(&ju->next, memory_order_relaxed) >= ju->rows;
}

/* A helper's piece of the unit (srv_unit.steal): at most budget rows, or the session's max_chunk. */
static int unit_steal(srv_unit *u, int helper, int budget)
{
    srv_job_unit *ju = (srv_job_unit *)u;
    srv_job *j = ju->j;
    if (atomic_load_explicit(&j->cancel, memory_order_relaxed)) return 0;
    const int want = j->max_chunk > 0 && j->max_chunk < budget ? j->max_chunk : budget;
    int a;
    const int b = unit_take(ju, want, &a);
    if (b <= a) return 0;
    unit_rows(ju, helper, a, b);
    srv_metrics_worker_helped(j->jobs->metrics, helper, (uint64_t)(b - a));
    return b - a;
}

static void unit_finish(srv_unit *u, int worker)
{
    (void)worker;
    srv_job *j = ((srv_job_unit *)u)->j;
    if (atomic_fetch_sub(&j->remaining, 1) == 1) {
        j->refused = atomic_load(&j->nrefused);
        done_push(j->jobs, j);
    }
}

/* One turn of a make: the first configures the env (env_new_begin) and creates world 0, which gives the
 * bytes per world; later turns create the worlds MAKE_CHUNK at a time for at most one slice.  1 when done. */
static int make_env(srv_job *j)
{
    const proto_request *r = j->make;
    const double t0 = srv_now_s();
    if (!j->env) {
        env_kv kv[PROTO_MAX_CONFIG];
        for (int i = 0; i < r->nconfig; i++) {
            kv[i] = (env_kv){r->config[i].key, r->config[i].value};
            /* a named choice ("solver": "admm"): its value, or BAD_CONFIG naming the allowed names */
            if (r->config_name[i][0] &&
                env_config_choice(r->env, r->config[i].key, r->config_name[i], &kv[i].value, j->err, sizeof j->err)) {
                j->make_err = SRV_MAKE_BAD_CONFIG;
                return 1;
            }
        }
        errno = 0;
        j->env = env_new_begin(r->env, (int)r->num_worlds, kv, r->nconfig, r->seed, r->autoreset, j->err, sizeof j->err);
        if (!j->env) {
            /* env_new reports failures by message only: an allocation that failed left ENOMEM in errno */
            j->make_err = errno == ENOMEM ? SRV_MAKE_NO_MEMORY : SRV_MAKE_BAD_CONFIG;
            return 1;
        }
        j->made = 0;
        env_get_cost(j->env, &j->cost);
        double ws = j->timing ? env_world_step_s(&j->cost, j->timing, j->physics_step_s) : 0;
        if (j->max_world_step_s > 0 && ws > j->max_world_step_s) {
            /* such a session could never be stepped, and each of its turns would hold a worker that long */
            snprintf(j->err, sizeof j->err, "one world-step is estimated at %.4g s at the caps (%d physics steps x "
                     "%ld%s iterations, %d contacts), over the limit of %g s (max_step_seconds): lower decimation, "
                     "solver_max_iter or max_contacts", ws, j->cost.decimation, j->cost.solver_cap,
                     j->cost.fallback >= 0 ? " + fallback" : "", j->cost.max_contacts, j->max_world_step_s);
            env_destroy(&j->env);
            j->make_err = SRV_MAKE_TOO_COSTLY;
            return 1;
        }
    }
    while (j->made < r->num_worlds) {
        if (atomic_load_explicit(&j->cancel, memory_order_relaxed)) {
            env_destroy(&j->env);
            j->make_err = SRV_MAKE_CANCELLED;
            snprintf(j->err, sizeof j->err, "cancelled");
            return 1;
        }
        int n = (int)r->num_worlds - j->made < MAKE_CHUNK ? (int)r->num_worlds - j->made : MAKE_CHUNK;
        if (env_new_worlds(j->env, j->made, n, j->err, sizeof j->err)) {
            env_destroy(&j->env);
            j->make_err = SRV_MAKE_NO_MEMORY;
            return 1;
        }
        if (j->made == 0) env_get_cost(j->env, &j->cost);
        j->made += n;
        if (j->made < r->num_worlds && srv_now_s() - t0 >= SLICE_S) return 0;
    }
    const env_spec *sp = j->spec = env_get_spec(j->env);
    for (int i = 0; i < sp->nconfig; i++) j->config[i] = env_config(j->env, sp->config[i].key);
    return 1;
}

/* The job of a control unit (embedded in it). */
static srv_job *control_job(srv_unit *u) { return (srv_job *)(void *)((char *)u - offsetof(srv_job, control_unit)); }

static int control_run(srv_unit *u, int worker, int budget)
{
    (void)worker;
    (void)budget;
    srv_job *j = control_job(u);
    if (j->kind == SRV_JOB_MAKE) return make_env(j);
    srv_jobs_drop_env(j->sess);
    return 1;
}

static void control_finish(srv_unit *u, int worker)
{
    (void)worker;
    srv_job *j = control_job(u);
    done_push(j->jobs, j);
}

/* ------------------------------------------------------------------------------------------------ */
/* the I/O thread's side */

srv_jobs *srv_jobs_new(int nthreads, int quantum, int spin_us, char *err, size_t errlen)
{
    srv_jobs *d = calloc(1, sizeof *d);
    if (!d) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    d->nthreads = nthreads;
    d->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    pthread_mutex_init(&d->mu, NULL);
    atomic_init(&d->done_pending, 0);
    if (d->efd < 0) {
        snprintf(err, errlen, "cannot create the event fd: %s", strerror(errno));
        goto fail;
    }
    int max_act_dim = 1;
    for (int i = 0; i < env_registry_count(); i++)
        if (env_registry_spec(i)->act_dim > max_act_dim) max_act_dim = env_registry_spec(i)->act_dim;
    d->control_lanes = calloc((size_t)nthreads, sizeof *d->control_lanes);
    d->scratch = calloc((size_t)nthreads, sizeof *d->scratch);
    if (!d->control_lanes || !d->scratch) {
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    size_t sz = ((size_t)quantum * (size_t)max_act_dim * 4 + 63) / 64 * 64;
    for (int i = 0; i < nthreads; i++)
        if (!(d->scratch[i] = aligned_alloc(64, sz))) {
            snprintf(err, errlen, "out of memory");
            goto fail;
        }
    d->pool = srv_pool_new(nthreads, quantum, spin_us);
    if (!d->pool) {
        snprintf(err, errlen, "cannot start %d worker threads", nthreads);
        goto fail;
    }
    return d;
fail:
    srv_jobs_destroy(&d);
    return NULL;
}

void srv_jobs_stop(srv_jobs *d) { srv_pool_destroy(&d->pool); }

void srv_jobs_destroy(srv_jobs **pd)
{
    if (!pd || !*pd) return;
    srv_jobs *d = *pd;
    srv_jobs_stop(d);
    if (d->scratch)
        for (int i = 0; i < d->nthreads; i++) free(d->scratch[i]);
    free(d->scratch);
    free(d->control_lanes);
    if (d->efd >= 0) close(d->efd);
    pthread_mutex_destroy(&d->mu);
    free(d);
    *pd = NULL;
}

int srv_jobs_threads(const srv_jobs *d) { return d->nthreads; }

unsigned long srv_jobs_helped(const srv_jobs *d)
{
    unsigned long n = 0;
    for (int w = 0; d->pool && w < d->nthreads; w++) n += srv_pool_helped(d->pool, w);
    return n;
}

void srv_jobs_waits(srv_jobs *d, unsigned long *max_waited, long *max_excess, unsigned long *heads)
{
    *max_waited = 0, *max_excess = 0, *heads = 0;
    for (int w = 0; d->pool && w < d->nthreads; w++) {
        unsigned long mw, h;
        long mx;
        srv_pool_waits(d->pool, w, &mw, &mx, &h);
        if (mw > *max_waited) *max_waited = mw;
        if (h && (!*heads || mx > *max_excess)) *max_excess = mx;
        *heads += h;
    }
}

int srv_jobs_fd(const srv_jobs *d) { return d->efd; }
int srv_jobs_pending(srv_jobs *d) { return atomic_load_explicit(&d->done_pending, memory_order_acquire); }

void srv_jobs_ack(srv_jobs *d)
{
    uint64_t v;
    ssize_t r = read(d->efd, &v, sizeof v);
    (void)r;
}

srv_job *srv_jobs_take_done(srv_jobs *d)
{
    pthread_mutex_lock(&d->mu);
    srv_job *j = d->done_head;
    d->done_head = d->done_tail = NULL;
    atomic_store_explicit(&d->done_pending, 0, memory_order_relaxed);
    pthread_mutex_unlock(&d->mu);
    return j;
}

int srv_jobs_submit(srv_jobs *d, srv_job *j, int *most_rows)
{
    srv_session *s = j->sess;
    const int T = d->nthreads;
    const int maxr = j->ids ? j->n : T;
    run_t *tmp = malloc((size_t)maxr * sizeof *tmp);
    int *tmpw = malloc((size_t)maxr * sizeof *tmpw);
    int *count = calloc((size_t)T, sizeof *count);
    j->jobs = d;
    j->units = calloc((size_t)T, sizeof *j->units);
    j->runs = malloc((size_t)maxr * sizeof *j->runs);
    int nr = 0, rc = -1;
    if (!tmp || !tmpw || !count || !j->units || !j->runs) goto out;
    /* runs of consecutive rows on one worker, in row order */
    if (!j->ids) {
        for (int t = 0; t < T; t++) {
            int b = srv_session_slice_begin(s, T, t), e = srv_session_slice_begin(s, T, t + 1);
            if (e > b) tmp[nr] = (run_t){b, e, 0}, tmpw[nr++] = (t + s->rot) % T;
        }
    } else {
        for (int i = 0; i < j->n; i++) {
            int w = srv_session_world_worker(s, T, j->ids[i]);
            if (nr && tmpw[nr - 1] == w) {
                tmp[nr - 1].row1 = i + 1;
            } else {
                tmp[nr] = (run_t){i, i + 1, 0};
                tmpw[nr++] = w;
            }
        }
    }
    for (int i = 0; i < nr; i++) count[tmpw[i]]++;
    /* grouped by worker, in row order within a worker: one unit per worker */
    int pos = 0, most = 0;
    for (int w = 0; w < T; w++) {
        if (!count[w]) continue;
        srv_job_unit *ju = &j->units[j->nunits++];
        ju->u.run = unit_run;
        ju->u.finish = unit_finish;
        ju->u.steal = unit_steal;
        ju->j = j;
        ju->worker = w;
        ju->r_begin = pos;
        int rows = 0;
        for (int i = 0; i < nr; i++)
            if (tmpw[i] == w) {
                j->runs[pos] = tmp[i];
                j->runs[pos++].at = rows;
                rows += tmp[i].row1 - tmp[i].row0;
            }
        ju->r_end = pos;
        ju->rows = rows;
        atomic_init(&ju->next, 0);
        if (rows > most) most = rows;
    }
    *most_rows = most;
    atomic_store(&j->remaining, j->nunits);
    const int nu = j->nunits;    /* j may complete (and be queued as done) as soon as its units are pushed */
    srv_job_unit *units = j->units;
    const int lane0 = j->latest ? T : 0;
    for (int k = 0; k < nu; k++)
        srv_pool_push(d->pool, units[k].worker, &s->lanes[lane0 + units[k].worker], &units[k].u);
    rc = 0;
out:
    free(tmp), free(tmpw), free(count);
    return rc;
}

void srv_jobs_submit_control(srv_jobs *d, srv_job *j)
{
    j->jobs = d;
    j->control_unit.run = control_run;
    j->control_unit.finish = control_finish;
    int w = d->next_control++ % d->nthreads;
    srv_pool_push(d->pool, w, &d->control_lanes[w], &j->control_unit);
}

void srv_jobs_drop_env(srv_session *s) { env_destroy(&s->env); }

void srv_jobs_scene(const srv_session *s, env_scene_t *out) { env_scene(s->env, out); }

int srv_job_first_ended(const srv_job *j, int *count)
{
    const env_t *e = j->sess->env;
    int first = -1, n = 0;
    for (int pos = 0; pos < j->n;) {
        int k = env_first_ended(e, pos, j->n - pos, j->ids ? j->ids + pos : NULL);
        if (k < 0) break;
        if (first < 0) first = pos + k;
        n++;
        pos += k + 1;
    }
    *count = n;
    return first;
}

int srv_jobs_ntasks(void) { return env_registry_count(); }

int srv_jobs_specs(const env_spec **specs, int max)
{
    int n = env_registry_count();
    if (n > max) n = max;
    for (int i = 0; i < n; i++) specs[i] = env_registry_spec(i);
    return n;
}

int srv_jobs_check_env(const char *name, char *msg, size_t msglen)
{
    if (env_registry_find(name) >= 0) return 0;
    char list[256] = "";
    for (int i = 0; i < env_registry_count(); i++)
        snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", i ? ", " : "", env_registry_spec(i)->name);
    snprintf(msg, msglen, "unknown env '%.64s%s' (available: %s)", name, strlen(name) > 64 ? "..." : "", list);
    return PROTO_E_UNKNOWN_ENV;
}
