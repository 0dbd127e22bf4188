/* srv_job.h — the work of one request, run by the worker pool: the only module of server/ that calls envs/.
 *
 * A reset, step or poses job's rows (the worlds of the request, in request order) are grouped into runs of
 * consecutive rows owned by one worker (srv_session.h slices) and become one unit per such worker,
 * queued on the session's lane of that worker (srv_pool.h): workers call env_reset / env_step and write
 * observations, rewards and flags straight into the reply buffer, which was laid out beforehand
 * (proto_encode_*_reply).  make (env_new_begin + env_new_worlds) and close (env_destroy) are one unit each
 * on a control lane.  A turn of a unit ends after its quantum of worlds or a slice of time (2 ms),
 * whichever comes first (a make creates worlds for one slice per turn), so a costly session does not hold
 * a worker for long; srv_job_cancel makes the rest of a job be skipped.
 * When a job's last unit is complete the job goes on the done queue and srv_jobs_fd becomes readable;
 * the I/O thread takes it back with srv_jobs_take_done.
 *
 * Threads: every function here is for the I/O thread; the units run on workers and touch only their
 * job, their slice of the session's worlds and the done queue.
 * Ownership: srv_jobs owns the pool, the control lanes and the workers' scratch.  A job is a value the
 * caller embeds and owns (srv_job_init / srv_job_clear); while queued it belongs to the workers, and
 * srv_jobs_take_done hands it back.  The job owns `seeds`, `reply`, and a made `env` until the caller
 * moves it into a session.
 */
#ifndef HERD_SRV_JOB_H
#define HERD_SRV_JOB_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "env.h"
#include "proto.h"
#include "srv_metrics.h"
#include "srv_pool.h"
#include "srv_session.h"

/* POSES reads world state (env_poses) as a rows job run by the workers that own those worlds, so it never
 * reads a world while it is written.  Ordered (default), its units go on the worlds' lanes and run after the
 * session's earlier steps; `latest`, on the session's second lane of each worker, which takes turns with the
 * first quantum by quantum: each world is read whole, between two of its steps, without waiting for a big
 * step in flight to finish. */
typedef enum { SRV_JOB_RESET, SRV_JOB_STEP, SRV_JOB_MAKE, SRV_JOB_CLOSE, SRV_JOB_POSES } srv_job_kind;

/* How a make job failed (srv_job.make_err). */
typedef enum { SRV_MAKE_OK = 0, SRV_MAKE_BAD_CONFIG, SRV_MAKE_NO_MEMORY, SRV_MAKE_CANCELLED, SRV_MAKE_TOO_COSTLY } srv_make_err;

typedef struct srv_job_unit srv_job_unit;
typedef struct srv_jobs srv_jobs;

struct srv_job {
    srv_job_kind kind;
    srv_session *sess;          /* reset / step / close; NULL for make */
    /* reset / step: the caller fills these before srv_jobs_submit */
    int n;                      /* rows */
    const int32_t *ids;         /* world of each row, or NULL: rows are worlds 0 .. n-1 */
    uint64_t *seeds;            /* reset: one per row (owned), or NULL */
    const uint8_t *actions;     /* step: n x act_dim float32, any alignment (not owned) */
    uint8_t *reply;             /* the reply laid out by proto_encode_{reset,step}_reply (owned) */
    size_t reply_len;
    proto_step_layout lay;
    int refused;                /* step, after completion: worlds the env refused (ended, autoreset disabled) */
    int latest;                 /* poses: on the session's second lanes (see above) */
    int max_chunk;              /* worlds per env call at most (0: the quantum); 1 for costly sessions, so that a
                                 * turn lasts about one world-step whatever the world-step costs */
    /* make: the request (not owned; must outlive the job); the bound on one world-step's estimate (0: none; a
     * configuration over it fails with SRV_MAKE_TOO_COSTLY before any world exists), with what it needs; after
     * completion: */
    const proto_request *make;
    double max_world_step_s, physics_step_s;
    const env_solver_timing *timing;
    env_t *env;                 /* the new env (owned until moved into a session), or NULL and: */
    const env_spec *spec;       /* its spec (lives as long as env) */
    srv_make_err make_err;
    char err[256];              /* the env's message */
    double config[ENV_MAX_CONFIG];   /* the env's configuration values, in spec order */
    env_cost cost;              /* its memory and step work (env_get_cost, once its first world exists) */
    int made;                   /* worlds created so far (the make runs a slice at a time) */
    /* the pool's side (private) */
    srv_jobs *jobs;
    srv_job_unit *units;        /* reset / step: one per worker involved */
    int nunits;
    srv_unit control_unit;      /* make / close */
    struct srv_job_run *runs;
    atomic_int remaining;
    atomic_int nrefused;
    atomic_int cancel;          /* srv_job_cancel: units not yet run are skipped */
    atomic_int skipped;         /* units that skipped rows (the job was cut short) */
    srv_job *next;              /* link for whoever holds the job: the done queue, or a deferred list */
};

/* Zeroes j for a job of this kind. */
void srv_job_init(srv_job *j, srv_job_kind kind);
/* Asks the workers to skip what is left of j (any thread): a reset / step job completes at the next turn
 * of each of its units with the rest of its rows not run; a make stops creating worlds and completes with
 * SRV_MAKE_CANCELLED and no env.  The job still comes back through the done queue. */
void srv_job_cancel(srv_job *j);
int srv_job_cancelled(const srv_job *j);
/* After completion: nonzero when a cancellation skipped some of j's rows (else j ran in full). */
int srv_job_cut(srv_job *j);
/* The registry index of a task (for per-task bookkeeping), -1 if none. */
int srv_jobs_task(const char *name);
/* The costs of registered task `task` with its default configuration (an env of one world is made and
 * destroyed on the calling thread): 0, or -1 (no such task, or out of memory). */
int srv_jobs_default_cost(int task, env_cost *out, double *physics_step_s);
/* The step-time estimate (env.h): the solvers' iteration times, measured once per process (~0.15 s), and one world-step's
 * CPU seconds at the caps for costs c, a task whose physics step besides the solve takes physics_step_s. */
void srv_jobs_time_solvers(env_solver_timing *t);
double srv_jobs_world_step_s(const env_cost *c, const env_solver_timing *t, double physics_step_s);
/* Frees what j owns (seeds, reply, a made env, the units); j can then be discarded or reused. */
void srv_job_clear(srv_job *j);

/* Starts nthreads workers (srv_pool_new), each with scratch for a quantum of any registered task's
 * actions; NULL with a message on failure. */
srv_jobs *srv_jobs_new(int nthreads, int quantum, int spin_us, char *err, size_t errlen);
/* Counts the workers' env steps, physics resets, solver work and busy time into m (NULL: off; not owned). */
void srv_jobs_set_metrics(srv_jobs *js, srv_metrics *m);
/* Lets the workers finish every queued unit and stops them, then frees everything srv_jobs owns.
 * Completed jobs still on the done queue are left to the caller: take them first (after stopping,
 * srv_jobs_take_done still works).  NULL-safe. */
void srv_jobs_destroy(srv_jobs **d);
/* Stops the workers once every queued unit has run (then every submitted job is on the done queue). */
void srv_jobs_stop(srv_jobs *d);
int srv_jobs_threads(const srv_jobs *d);
/* Worlds the workers ran from each other's units (srv_pool_helped summed over the workers). */
unsigned long srv_jobs_helped(const srv_jobs *d);
/* srv_pool_waits over every worker: the most, and the most in excess of the round-robin bound. */
void srv_jobs_waits(srv_jobs *d, unsigned long *max_waited, long *max_excess, unsigned long *heads);
/* A file descriptor that is readable when a job has completed (or srv_jobs_wake was called): poll it,
 * and call srv_jobs_ack when poll reports it, before srv_jobs_take_done. */
int srv_jobs_fd(const srv_jobs *d);
/* Clears srv_jobs_fd's readiness. */
void srv_jobs_ack(srv_jobs *d);
/* Makes srv_jobs_fd readable, to wake the thread polling it.  Async-signal-safe. */
void srv_jobs_wake(srv_jobs *d);
/* Nonzero when completed jobs wait (no system call: for busy polling). */
int srv_jobs_pending(srv_jobs *d);
/* The completed jobs in completion order (linked by next), or NULL. */
srv_job *srv_jobs_take_done(srv_jobs *d);
/* Queues a reset / step job: one unit per worker owning some of its rows.  *most_rows: the largest
 * number of rows one worker got (small jobs complete within microseconds).  0, or -1 out of memory
 * (nothing queued). */
int srv_jobs_submit(srv_jobs *d, srv_job *j, int *most_rows);
/* Queues a make (j->make set) or close (j->sess set, idle) job as one unit on a worker, round-robin. */
void srv_jobs_submit_control(srv_jobs *d, srv_job *j);
/* The scene of a session's env (env_scene: its immutable model, so the I/O thread may read it while workers
 * step the worlds). */
void srv_jobs_scene(const srv_session *s, env_scene_t *out);
/* Destroys the env of a session at once, on the calling thread (shutdown, with the workers stopped). */
void srv_jobs_drop_env(srv_session *s);

/* DISABLED autoreset, with no job of the session in flight: the row of the first of the job's worlds
 * that has ended (or was never reset), -1 if none; *count: how many rows have ended. */
int srv_job_first_ended(const srv_job *j, int *count);
/* How many tasks are registered. */
int srv_jobs_ntasks(void);
/* The registered tasks' specs (at most max); returns how many. */
int srv_jobs_specs(const env_spec **specs, int max);
/* Checks that a make request names a registered task: 0, or PROTO_E_UNKNOWN_ENV with a message
 * listing the available ones. */
int srv_jobs_check_env(const char *name, char *msg, size_t msglen);

#endif
